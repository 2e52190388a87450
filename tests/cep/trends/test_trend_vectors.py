"""Fixed vectors of the trend core: the seed queries, exact exponential counts, limits, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cep.oracles.trend_oracle import oracle_trend_windows
from cep.trends import (
    CorruptTrendGraphError,
    TrendGraph,
    TrendInputError,
    TrendLimitError,
    UnsupportedTrendPatternError,
    build_graph,
    build_graph_dynamic,
    compile_trend,
    count_trends,
    extract_trends,
    window_counts,
    window_graph,
    window_trends,
)

Q1 = "PATTERN check+ c[] WHERE c.type = 'not covered' AND c[i].src = c[i-1].dest WITHIN 1 WEEK SLIDE 1 DAY"
Q2 = "PATTERN stock+ s[] WHERE [id] AND s[i].price > 1.05 * s[i-1].price WITHIN 60 MINUTES SLIDE 10 MINUTES"


def _minutes(values: list[int]) -> np.ndarray:
    return np.datetime64("2024-03-01T09:00") + np.array(values, dtype="timedelta64[m]")


def test_check_kiting_q1() -> None:
    # Accounts pass the same money around: A->B, B->C, C->A, A->B again; plus a covered check.
    day = np.timedelta64(1, "D")
    ts = np.datetime64("2024-03-04") + np.array([0, 1, 2, 3, 9], dtype="timedelta64[D]") + 0 * day
    cols = {"src": np.array(["A", "B", "C", "A", "B"], dtype=object),
            "dest": np.array(["B", "C", "A", "B", "C"], dtype=object)}
    types = np.array(["not covered", "not covered", "not covered", "not covered", "covered"], dtype=object)
    query = "PATTERN check+ c[] DEFINE check AS amount > 0 WHERE c.type = 'not covered' AND " \
            "c[i].src = c[i-1].dest WITHIN 1 WEEK SLIDE 1 DAY"
    cols["amount"] = np.array([5, 5, 5, 5, 5])
    counts = window_counts(query, ts, cols, types=types)
    oracle = oracle_trend_windows(query, ts, cols, types=types)
    assert counts == {w: win.count for w, win in oracle.items()}
    # The windows holding all four unpaid checks see the full cycle 0 -> 1 -> 2 -> 3.
    full = [w for w, win in oracle.items() if win.rows == (0, 1, 2, 3)]
    assert full and all(oracle[w].trends == ((0, 1, 2, 3),) for w in full)
    found = {(w, tuple(r.tolist())) for w, r in window_trends(query, ts, cols, types=types)}
    assert found == {(w, t) for w, win in oracle.items() for t in win.trends}


def test_rising_prices_per_id_q2() -> None:
    # [id] together with the price predicate (a public implementation crashes on this combination).
    ids = np.array(["IBM", "MSFT", "IBM", "IBM", "MSFT", "IBM", "MSFT", "IBM"], dtype=object)
    price = np.array([100.0, 50.0, 106.0, 104.0, 53.0, 112.0, np.nan, 118.0])
    ts = _minutes([0, 1, 5, 7, 9, 20, 25, 58])
    types = np.array(["stock"] * 8, dtype=object)
    cols = {"id": ids, "price": price}
    q = compile_trend(Q2, columns=["ts", "type", "id", "price"])
    counts = window_counts(q, ts, cols, types=types)
    oracle = oracle_trend_windows(Q2, ts, cols, types=types)
    assert counts == {w: win.count for w, win in oracle.items()}
    assert len(counts) == 11  # windows of 60 minutes every 10 minutes from 08:10 to 09:50
    whole = oracle[int(_minutes([0])[0].astype("datetime64[us]").astype(np.int64))]
    # IBM 100, 106, 104, 112, 118: 104 > 1.05 * 100 fails, so 104 starts trends of its own;
    # MSFT 50 -> 53 (53 > 52.5); the MSFT tick with a NaN price links to nothing.
    assert set(whole.trends) == {(0, 2, 5, 7), (0, 2, 7), (0, 5, 7), (0, 7), (3, 5, 7), (3, 7), (1, 4), (6,)}
    found = {(w, tuple(r.tolist())) for w, r in window_trends(Q2, ts, cols, types=types)}
    assert found == {(w, t) for w, win in oracle.items() for t in win.trends}


def test_counts_are_exact_beyond_64_bits_without_enumerating() -> None:
    # No predicate: every earlier event links to every later one; 200 distinct timestamps give
    # 2**198 trends (any subset of the middle events between the first and the last).
    n = 200
    g = build_graph("PATTERN e+", np.arange(n), {})
    assert count_trends(g) == 2 ** (n - 2)
    # Ties: groups of sizes g1..gT give g1 * gT * prod(1 + g_t) over the middle groups.
    ts = np.repeat(np.arange(60), 3)
    assert count_trends(build_graph("PATTERN e+", ts, {})) == 3 * 3 * 4 ** 58
    # Rising values through a general Fenwick path: every increasing run.
    values = np.array([5, 1, 4, 2, 3, 9, 7, 8, 6, 10] * 3)
    g = build_graph("PATTERN e+ WHERE e[i].v > e[i-1].v", np.arange(30), {"v": values})
    oracle = oracle_trend_windows("PATTERN e+ WHERE e[i].v > e[i-1].v", np.arange(30), {"v": values},
                                  types=np.array(["e"] * 30))
    assert count_trends(g) == oracle[0].count


def test_an_isolated_event_is_a_trend_of_length_one() -> None:
    g = build_graph("PATTERN e+ WHERE e[i].v = e[i-1].v", np.arange(3), {"v": np.array([1, 2, 1])})
    assert [t.tolist() for t in extract_trends(g)] == [[0, 2], [1]]


def test_equal_timestamps_never_link() -> None:
    g = build_graph("PATTERN e+ WHERE e[i].v >= e[i-1].v", np.array([5, 5, 5]), {"v": np.array([1, 2, 3])})
    assert [t.tolist() for t in extract_trends(g)] == [[0], [1], [2]]


def test_the_limit_is_checked_before_anything_is_enumerated(monkeypatch: pytest.MonkeyPatch) -> None:
    import cep.trends.extract as extract

    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("edges must not be enumerated")

    monkeypatch.setattr(extract, "enumerate_edges", boom)
    g = build_graph("PATTERN e+", np.arange(40), {})
    with pytest.raises(TrendLimitError) as info:
        extract_trends(g, max_trends=10)
    message = str(info.value)
    assert info.value.code == "CEP-TREND-020"
    assert message.startswith(f"CEP-TREND-020: the events hold {2 ** 38} complete trends")
    assert "max_trends=10" in message and "output => 'count'" in message


def test_window_trends_name_rows_and_windows() -> None:
    ts = np.array([7, 1, 4, 12])  # any input order
    cols = {"v": np.array([3, 1, 2, 4])}
    types = np.array(["e", "e", "x", "e"], dtype=object)
    found = window_trends("PATTERN e+ WHERE e[i].v > e[i-1].v WITHIN 10 UNITS", ts, cols, types=types)
    assert [(w, r.tolist()) for w, r in found] == [(0, [1, 0]), (10, [3])]


def test_string_attributes_compare_with_equality_only() -> None:
    cols = {"s": np.array(["a", "b", "a"], dtype=object), "n": np.array([1, 2, 3])}
    g = build_graph("PATTERN e+ WHERE e[i].s <> e[i-1].s", np.arange(3), cols)
    assert count_trends(g) == 1  # 0 -> 1 -> 2
    for text, column in [("PATTERN e+ WHERE e[i].s > e[i-1].s", 18), ("PATTERN e+ WHERE e[i].s = e[i-1].n", 18),
                         ("PATTERN e+ WHERE  e[i].s = e[i-1].s + 1", 19)]:
        with pytest.raises(UnsupportedTrendPatternError) as info:
            build_graph(text, np.arange(3), cols)
        assert (info.value.code, info.value.line, info.value.column) == ("CEP-TREND-006", 1, column)
        assert info.value.message.startswith("expected a string attribute to be compared with = or <> to a string "
                                             "attribute of the previous event; ")


def test_nulls_and_nan_fail_every_comparison() -> None:
    cols = {"v": np.array([1.0, np.nan, 2.0, np.nan]), "k": np.array([None, None, "a", "a"], dtype=object)}
    for query in ["PATTERN e+ WHERE e[i].v > e[i-1].v", "PATTERN e+ WHERE e[i].v <> e[i-1].v",
                  "PATTERN e+ WHERE [k]", "PATTERN e+ WHERE [k] AND e[i].v >= e[i-1].v - 5"]:
        types = np.array(["e"] * 4, dtype=object)
        expected = oracle_trend_windows(query, np.arange(4), cols, types=types)[0].trends
        got = [tuple(t.tolist()) for t in extract_trends(build_graph(query, np.arange(4), cols))]
        assert got == list(expected), query
    # [k]: NULL equals nothing, so events 0 and 1 are alone; 2 -> 3 share 'a'.
    assert [t.tolist() for t in extract_trends(build_graph("PATTERN e+ WHERE [k]", np.arange(4), cols))] == \
        [[0], [1], [2, 3]]


def test_column_of_nulls_only() -> None:
    cols = {"s": np.array([None, None], dtype=object), "t": np.array(["x", "y"], dtype=object)}
    g = build_graph("PATTERN e+ WHERE e[i].s = e[i-1].t", np.arange(2), cols)
    assert count_trends(g) == 2


def test_input_errors() -> None:
    with pytest.raises(TrendInputError, match="no column 'v'"):
        build_graph("PATTERN e+ WHERE e[i].v > e[i-1].v", np.arange(2), {"w": np.arange(2)})
    with pytest.raises(TrendInputError, match="shape"):
        build_graph("PATTERN e+ WHERE e[i].v > e[i-1].v", np.arange(2), {"v": np.arange(3)})
    with pytest.raises(TrendInputError, match="mixes values of types"):
        build_graph("PATTERN e+ WHERE e[i].v > e[i-1].v", np.arange(2), {"v": np.array([1, "a"], dtype=object)})
    with pytest.raises(TrendInputError, match="timestamp is NULL"):
        build_graph("PATTERN e+", np.array([1.0, np.nan]), {})
    with pytest.raises(TrendInputError, match="pass types="):
        window_graph("PATTERN e+", np.arange(2), {})
    assert TrendInputError("x").code == "CEP-TREND-010"


def test_corrupt_arrays_are_rejected() -> None:
    g = build_graph("PATTERN e+ WHERE e[i].v > e[i-1].v", np.arange(3), {"v": np.array([1, 2, 3])})
    arrays = g.to_arrays()
    assert TrendGraph.from_arrays(arrays) == g
    broken = dict(arrays)
    broken["format.version"] = np.array([99])
    with pytest.raises(CorruptTrendGraphError, match="version"):
        TrendGraph.from_arrays(broken)
    broken = dict(arrays)
    del broken["to_edges.0.lo"]
    with pytest.raises(CorruptTrendGraphError, match="to_edges.0.lo"):
        TrendGraph.from_arrays(broken)
    broken = dict(arrays)
    broken["from_edges.0.vertex"] = broken["from_edges.0.vertex"] + 100
    with pytest.raises(CorruptTrendGraphError, match="out of range"):
        TrendGraph.from_arrays(broken)
    assert CorruptTrendGraphError("x").code == "CEP-TREND-030"


def test_attribute_vertices_are_composite_ranges() -> None:
    g = build_graph("PATTERN e+ WHERE e[i].v >= e[i-1].v AND e[i].v <> e[i-1].v AND e[i].w = e[i-1].w",
                    np.arange(3), {"v": np.array([2.0, 1.0, 2.0]), "w": np.array([5, 6, 5])})
    ge, ne, eq = (ix.vertices() for ix in g.indexes)
    # '>=': (-inf, 1), [1, 2), [2, +inf)
    assert ge["lo"].tolist() == [0.0, 1.0, 2.0] and ge["lo_bounded"].tolist() == [False, True, True]
    assert ge["lo_closed"].tolist() == [False, True, True] and ge["hi_closed"].tolist() == [False, False, False]
    # '<>': (-inf, 1), [1], (1, 2), [2], (2, +inf)
    assert ne["lo_closed"].tolist() == [False, True, False, True, False]
    assert ne["hi_bounded"].tolist() == [True, True, True, True, False]
    assert g.indexes[1].to_lo.tolist() == [0, 0, 0] and g.indexes[1].to_hi.tolist() == [3, 1, 3]
    # '=': single values 5 and 6.
    assert eq["lo"].tolist() == [5, 6] and eq["lo_closed"].tolist() == [True, True]


def test_dynamic_construction_splits_vertices_for_every_comparator() -> None:
    rng = np.random.default_rng(7)
    for op in ["=", "<>", "<", "<=", ">", ">="]:
        v = rng.integers(-5, 5, size=60).astype(float)
        v[rng.random(60) < 0.1] = np.nan
        ts = rng.integers(0, 20, size=60)
        win = (ts // 5) * 5
        query = f"PATTERN e+ WHERE e[i].v {op} 0.5 * e[i-1].w - 1"
        cols = {"v": v, "w": rng.integers(-5, 5, size=60)}
        assert build_graph_dynamic(query, ts, cols, window=win) == build_graph(query, ts, cols, window=win), op


def test_empty_input() -> None:
    g = build_graph("PATTERN e+ WHERE e[i].v > e[i-1].v", np.zeros(0, dtype=np.int64), {"v": np.zeros(0)})
    assert (g.n_events, count_trends(g), extract_trends(g)) == (0, 0, [])
    assert TrendGraph.from_arrays(g.to_arrays()) == g
    assert math.isclose(0, 0)


def test_a_predicate_on_the_type_column() -> None:
    ts = np.arange(4)
    types = np.array(["e", "e", "e", "e"], dtype=object)
    cols = {"kind": np.array(["a", "b", "a", "a"], dtype=object)}
    q = "PATTERN e+ WHERE e[i].type = e[i-1].type AND e[i].kind <> e[i-1].kind"
    assert window_counts(q, ts, cols, types=types) == {0: 2}  # 0 -> 1 -> 2 and 0 -> 1 -> 3
    assert window_counts(q, ts, cols, types=types) == \
        {w: win.count for w, win in oracle_trend_windows(q, ts, cols, types=types).items()}
