"""The path-counting DP: every strategy (prefix sums, monotone runs, Fenwick trees, explicit
edges) gives the same counts, and the counts equal the oracle's on larger random windows."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import cep.trends.count as count
from cep.oracles.trend_oracle import oracle_trend_windows
from cep.trends import build_graph, count_by_window, endpoints
from cep.trends.links import links, range_coordinates

from .trend_cases import SETTINGS

RANGE_OPS = ["<", "<=", ">", ">="]


@st.composite
def ranged(draw: st.DrawFn) -> tuple[str, np.ndarray, dict[str, np.ndarray], np.ndarray]:
    n = draw(st.integers(1, 40))
    ts = np.array(draw(st.lists(st.integers(0, 25), min_size=n, max_size=n)), dtype=np.int64)
    v = np.array(draw(st.lists(st.integers(-6, 6), min_size=n, max_size=n)), dtype=np.int64)
    k = np.array(draw(st.lists(st.sampled_from(["p", "q", "r"]), min_size=n, max_size=n)), dtype=object)
    op = draw(st.sampled_from(RANGE_OPS + ["<>"]))
    f = draw(st.sampled_from(["e[i-1].v", "2 * e[i-1].v - 1", "-e[i-1].v", "e[i-1].v / 2"]))
    text = f"PATTERN e+ WHERE e[i].v {op} {f}"
    if draw(st.booleans()):
        text += " AND [k]"
    window = np.array(draw(st.lists(st.sampled_from([0, 10]), min_size=n, max_size=n)), dtype=np.int64)
    return text, ts, {"v": v, "k": k}, window


def _all_strategies(graph) -> list[list[int]]:  # noqa: ANN001
    ln = links(graph)
    out = [count.path_counts(graph, ln), count._run_edges(graph, ln)]
    if len(ln.ranges) == 1 and ln.ranges[0].shape != "points-and-gaps":
        dep, qry = range_coordinates(ln.ranges[0])
        out.append(count._run_fenwick(ln, dep, qry))
    return out


@SETTINGS
@given(ranged())
def test_every_dp_strategy_agrees(case: tuple) -> None:
    text, ts, cols, window = case
    graph = build_graph(text, ts, cols, window=window)
    results = _all_strategies(graph)
    assert all(r == results[0] for r in results[1:])


@SETTINGS
@given(ranged())
def test_counts_equal_the_oracle_on_larger_windows(case: tuple) -> None:
    text, ts, cols, window = case
    graph = build_graph(text, ts, cols)
    oracle = oracle_trend_windows(text, ts, cols, types=np.array(["e"] * len(ts)), listing=False)
    assert count_by_window(graph) == {w: win.count for w, win in oracle.items()}


@pytest.mark.parametrize("query, expected", [
    ("PATTERN e+ WHERE e[i].ts > e[i-1].ts + 2", 1),  # time gaps: coordinates grow with time
    ("PATTERN e+ WHERE e[i].d < e[i-1].d", 1),  # a value that only falls
    ("PATTERN e+ WHERE e[i].v > e[i-1].v", 0),  # anything
])
def test_monotone_coordinates_take_the_constant_time_path(query: str, expected: int) -> None:
    ts = np.array([0, 1, 1, 3, 4, 7, 8, 9, 12])
    cols = {"d": -ts * 2, "v": np.array([3, 1, 4, 1, 5, 9, 2, 6, 5])}
    graph = build_graph(query, ts, cols)
    ln = links(graph)
    dep, _ = range_coordinates(ln.ranges[0])
    assert (count._monotone(ln.key_out, dep) != 0) == bool(expected)
    assert count.path_counts(graph) == count._run_edges(graph, ln)
    oracle = oracle_trend_windows(query, ts, cols, types=np.array(["e"] * len(ts)))
    assert count_by_window(graph) == {w: win.count for w, win in oracle.items()}


def test_two_range_predicates_use_the_edges() -> None:
    rng = np.random.default_rng(3)
    n = 30
    ts = rng.integers(0, 15, n)
    cols = {"a": rng.integers(0, 6, n), "b": rng.integers(0, 6, n)}
    query = "PATTERN e+ WHERE e[i].a > e[i-1].a AND e[i].b <= e[i-1].b AND e[i].a <> e[i-1].b"
    graph = build_graph(query, ts, cols)
    oracle = oracle_trend_windows(query, ts, cols, types=np.array(["e"] * n))
    assert count_by_window(graph) == {0: oracle[0].count}
    starts, ends = endpoints(graph)
    assert sorted(graph.row[starts].tolist()) == sorted(oracle[0].sources)
    assert sorted(graph.row[ends].tolist()) == sorted(oracle[0].sinks)
