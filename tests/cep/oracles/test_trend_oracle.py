"""Fixed vectors of the trend oracle, computed by hand from docs/trends.md."""

from __future__ import annotations

import numpy as np
import pytest

from cep.match.errors import MatchLimitError
from cep.oracles import oracle_trend_counts, oracle_trend_windows


def test_rising_prices_by_hand() -> None:
    # pos:     0  1  2  3  4
    # price:   3  1  2  5  4      edge j -> k when price[k] > price[j] and j is earlier
    q = "PATTERN s+ WHERE s[i].price > s[i-1].price"
    w = oracle_trend_windows(q, np.arange(5), {"price": np.array([3, 1, 2, 5, 4])}, types=np.array(["s"] * 5))
    (win,) = w.values()
    assert win.start == 0 and win.rows == (0, 1, 2, 3, 4)
    assert win.edges == {(0, 3), (0, 4), (1, 2), (1, 3), (1, 4), (2, 3), (2, 4)}
    assert win.sources == (0, 1) and win.sinks == (3, 4)
    assert win.trends == ((0, 3), (0, 4), (1, 2, 3), (1, 2, 4), (1, 3), (1, 4))
    assert win.count == 6


def test_linear_function_of_the_previous_event() -> None:
    # s[i].v >= 2 * s[i-1].v + 1: 1 -> 3 (3 >= 3), 3 -> 7, 1 -> 7; 2 -> 7? 7 >= 5 yes.
    q = "PATTERN s+ WHERE s[i].v >= 2 * s[i-1].v + 1"
    (win,) = oracle_trend_windows(q, np.arange(4), {"v": np.array([1, 2, 3, 7])}, types=np.array(["s"] * 4)).values()
    assert win.edges == {(0, 2), (0, 3), (1, 3), (2, 3)}
    assert win.trends == ((0, 2, 3), (0, 3), (1, 3))


def test_ties_in_ts_never_link_and_tiebreak_orders_rows() -> None:
    q = "PATTERN s+ WHERE s[i].v > s[i-1].v"
    cols = {"v": np.array([1, 2, 3])}
    (win,) = oracle_trend_windows(q, np.array([4, 4, 5]), cols, types=np.array(["s"] * 3),
                                  tiebreak=np.array([1, 0, 2])).values()
    assert win.rows == (1, 0, 2)
    assert win.edges == {(0, 2), (1, 2)}
    assert win.trends == ((0, 2), (1, 2))


def test_membership_define_filters_and_equivalence() -> None:
    q = "PATTERN c+ DEFINE c AS amount > 0 WHERE c.kind = 'x' AND [acct]"
    cols = {"amount": np.array([5, 0, 5, 5, 5]), "kind": np.array(["x", "x", "y", "x", "x"], dtype=object),
            "acct": np.array(["A", "A", "A", None, "A"], dtype=object)}
    (win,) = oracle_trend_windows(q, np.arange(5), cols).values()
    # 1 fails DEFINE, 2 fails the filter; 3 has a NULL account, equal to nothing.
    assert win.rows == (0, 3, 4)
    assert win.edges == {(0, 4)}
    assert win.trends == ((0, 4), (3,))


def test_sliding_windows_by_hand() -> None:
    # WITHIN 4 SLIDE 2: windows [-2, 2), [0, 4), [2, 6), [4, 8); ts 1, 3, 5.
    q = "PATTERN s+ WHERE s[i].v < s[i-1].v WITHIN 4 UNITS SLIDE 2 UNITS"
    w = oracle_trend_windows(q, np.array([1, 3, 5]), {"v": np.array([9, 8, 7])}, types=np.array(["s"] * 3))
    assert {start: win.rows for start, win in w.items()} == {-2: (0,), 0: (0, 1), 2: (1, 2), 4: (2,)}
    assert {start: win.trends for start, win in w.items()} == {-2: ((0,),), 0: ((0, 1),), 2: ((1, 2),), 4: ((2,),)}
    assert oracle_trend_counts(q, np.array([1, 3, 5]), {"v": np.array([9, 8, 7])},
                               types=np.array(["s"] * 3)) == {-2: 1, 0: 1, 2: 1, 4: 1}


def test_count_without_listing_and_the_path_limit() -> None:
    q = "PATTERN s+"
    ts = np.arange(12)
    (win,) = oracle_trend_windows(q, ts, {}, types=np.array(["s"] * 12), listing=False).values()
    assert win.trends is None and win.count == 2 ** 10
    with pytest.raises(MatchLimitError, match="max_paths=100"):
        oracle_trend_windows(q, ts, {}, types=np.array(["s"] * 12), max_paths=100)
