"""Windows: ``assign_windows`` against the oracle's literal definition, and Spark-style alignment."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cep.oracles.trend_oracle import oracle_trend_windows
from cep.trends import TrendInputError, assign_windows

from .trend_cases import SETTINGS


def _by_window(starts: np.ndarray, rows: np.ndarray) -> dict:
    out = defaultdict(set)
    for w, r in zip(starts.tolist(), rows.tolist()):
        out[w].add(r)
    return dict(out)


@SETTINGS
@given(st.lists(st.integers(-30, 30), max_size=12), st.integers(1, 9), st.integers(1, 9), st.booleans())
def test_integer_windows_equal_the_oracle(ts: list[int], w: int, s: int, tumbling: bool) -> None:
    s = min(s, w)
    t = np.array(ts, dtype=np.int64)
    starts, rows = assign_windows(t, w, None if tumbling else s)
    assert np.all(np.diff(starts) >= 0)
    text = f"PATTERN e+ WITHIN {w} UNITS" + ("" if tumbling else f" SLIDE {s} UNITS")
    oracle = oracle_trend_windows(text, t, {}, types=np.array(["e"] * len(ts)))
    assert _by_window(starts, rows) == {start: set(win.rows) for start, win in oracle.items()}
    # Every event is in ceil(w / s) or floor(w / s) windows.
    per_event = np.bincount(rows, minlength=len(ts))
    step = w if tumbling else s
    assert set(per_event.tolist()) <= {w // step, -(-w // step)}


@SETTINGS
@given(st.lists(st.sampled_from([-2.25, -1.0, 0.0, 0.1, 0.5, 1.75, 3.0, 4.4]), max_size=10),
       st.sampled_from([0.5, 1.0, 1.5, 2.5]), st.sampled_from([0.25, 0.5, 1.0]))
def test_fractional_windows_equal_the_oracle(ts: list[float], w: float, s: float) -> None:
    s = min(s, w)
    t = np.array(ts, dtype=np.float64)
    starts, rows = assign_windows(t, w, s)
    oracle = oracle_trend_windows(f"PATTERN e+ WITHIN {w} UNITS SLIDE {s} UNITS", t, {},
                                  types=np.array(["e"] * len(ts)))
    assert _by_window(starts, rows) == {start: set(win.rows) for start, win in oracle.items()}


def test_time_windows_align_to_the_epoch_like_spark() -> None:
    ts = np.array(["2024-03-04T10:00", "2024-03-05T23:59"], dtype="datetime64[us]")
    day, week = 86_400_000_000, 7 * 86_400_000_000
    starts, rows = assign_windows(ts, week, day)
    as_dates = sorted({np.datetime64(int(s), "us").astype("datetime64[D]").astype(str) for s in starts.tolist()})
    # Windows start every day at 00:00 UTC; 2024-03-04 lies in the windows starting 02-27 .. 03-04.
    assert as_dates[0] == "2024-02-27" and as_dates[-1] == "2024-03-05" and len(as_dates) == 8
    assert np.bincount(rows).tolist() == [7, 7]
    tumbling, _ = assign_windows(ts, week)
    # Tumbling weeks start on Thursdays (1970-01-01 was a Thursday), as Spark's window() does.
    assert {np.datetime64(int(s), "us").astype("datetime64[D]").astype(str) for s in tumbling.tolist()} == {"2024-02-29"}


def test_no_within_is_one_window() -> None:
    starts, rows = assign_windows(np.array([5, 1, 3]), None)
    assert starts.tolist() == [0, 0, 0] and rows.tolist() == [0, 1, 2]


def test_bad_spans() -> None:
    with pytest.raises(TrendInputError, match="must not exceed"):
        assign_windows(np.arange(3), 2, 5)
    with pytest.raises(TrendInputError, match="positive"):
        assign_windows(np.arange(3), 0)
