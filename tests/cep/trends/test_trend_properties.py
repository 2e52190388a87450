"""The trend core against the brute-force oracle on random small partitions (hypothesis).

For every comparator, linear functions with negative scales, ``[attr]``, strings, NULLs, NaN,
ties in ts, filters and sliding windows: the windows, the edges, the start and end events, the
path counts and the extracted trends equal the oracle's; the parallel and the dynamic
constructions build equal graphs; the stored arrays round-trip.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from hypothesis import given

from cep.oracles.trend_oracle import oracle_trend_windows
from cep.trends import (
    TrendGraph,
    build_graph,
    build_graph_dynamic,
    count_by_window,
    endpoints,
    enumerate_edges,
    extract_trends,
    window_graph,
)
from cep.trends.answer import window_counts, window_trends
from cep.trends.count import path_counts

from .trend_cases import SETTINGS, Case, cases


def _core(case: Case) -> TrendGraph:
    return window_graph(case.query, case.ts, case.columns, types=case.types, tiebreak=case.tiebreak)


def _oracle(case: Case):  # noqa: ANN202
    return oracle_trend_windows(case.query, case.ts, case.columns, types=case.types, tiebreak=case.tiebreak)


@SETTINGS
@given(cases())
def test_windows_edges_and_endpoints_equal_the_oracle(case: Case) -> None:
    graph = _core(case)
    oracle = _oracle(case)
    starts = graph.window_starts.tolist()
    slices = graph.window_slices().tolist()
    rows = {starts[w]: tuple(graph.row[slices[w]:slices[w + 1]].tolist()) for w in range(graph.n_windows)}
    assert rows == {w: win.rows for w, win in oracle.items()}
    src, dst = enumerate_edges(graph)
    edges = defaultdict(set)
    for j, k in zip(src.tolist(), dst.tolist()):
        assert graph.window[j] == graph.window[k] and graph.ts[j] < graph.ts[k]
        edges[starts[graph.window[j]]].add((int(graph.row[j]), int(graph.row[k])))
    assert {w: e for w, e in edges.items() if e} == {w: set(win.edges) for w, win in oracle.items() if win.edges}
    is_start, is_end = endpoints(graph)
    for w, win in oracle.items():
        in_window = graph.window == starts.index(w)
        assert sorted(graph.row[in_window & is_start].tolist()) == sorted(win.sources)
        assert sorted(graph.row[in_window & is_end].tolist()) == sorted(win.sinks)


@SETTINGS
@given(cases())
def test_counts_and_trends_equal_the_oracle(case: Case) -> None:
    oracle = _oracle(case)
    expected_trends = {(w, t) for w, win in oracle.items() for t in win.trends}
    counts = window_counts(case.query, case.ts, case.columns, types=case.types, tiebreak=case.tiebreak)
    assert counts == {w: win.count for w, win in oracle.items()}
    found = window_trends(case.query, case.ts, case.columns, types=case.types, tiebreak=case.tiebreak)
    assert len(found) == sum(counts.values())
    assert {(w, tuple(rows.tolist())) for w, rows in found} == expected_trends


@SETTINGS
@given(cases())
def test_dynamic_construction_equals_parallel(case: Case) -> None:
    graph = _core(case)
    cols = {"a": case.columns["a"], "b": case.columns["b"], "x": case.columns["x"],
            "s": case.columns["s"], "t": case.columns["t"]}
    sub = {k: v[graph.row] for k, v in cols.items()}
    starts = graph.window_starts[graph.window]
    parallel = build_graph(case.query, graph.ts, sub, window=starts, row=graph.row)
    dynamic = build_graph_dynamic(case.query, graph.ts, sub, window=starts, row=graph.row)
    assert parallel == graph
    assert dynamic == parallel


@SETTINGS
@given(cases())
def test_arrays_round_trip(case: Case) -> None:
    graph = _core(case)
    arrays = graph.to_arrays()
    back = TrendGraph.from_arrays(arrays)
    assert back == graph
    assert count_by_window(back) == count_by_window(graph)


@SETTINGS
@given(cases(max_events=12, max_predicates=2, windows=False))
def test_path_counts_match_the_extracted_trends(case: Case) -> None:
    graph = _core(case)
    f = path_counts(graph)
    trends = extract_trends(graph)
    ending = defaultdict(int)
    for t in trends:
        ending[int(t[-1])] += 1
    _, is_end = endpoints(graph)
    for k in np.flatnonzero(is_end).tolist():
        assert f[k] == ending[k]
    assert sum(count_by_window(graph).values()) == len(trends)
