"""The DFS stage split into pulled tasks (cep.trends.stealing) extracts exactly extract_trends' trends."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from cep.trends import build_graph, extract_trends, window_graph
from cep.trends.stealing import stealing_trends

from .trend_cases import SETTINGS, Case, cases


@SETTINGS
@given(cases(), st.integers(0, 6), st.sampled_from(["ends", "maximal"]), st.integers(1, 5))
def test_split_tasks_extract_the_same_trends(case: Case, anchors: int, completeness: str, budget: int) -> None:
    graph = window_graph(case.query, case.ts, case.columns, types=case.types, tiebreak=case.tiebreak)
    result = stealing_trends(graph, anchors, workers=0, budget=budget, completeness=completeness)
    assert [t.tolist() for t in result.trends] == [
        t.tolist() for t in extract_trends(graph, completeness=completeness)]


def test_worker_processes_extract_the_same_trends_and_split_busy_tasks() -> None:
    # Rising prices with noise: many overlapping trends per window.
    rng = np.random.default_rng(2)
    n = 400
    price = np.round(100 * np.exp(np.cumsum(rng.normal(0, 0.02, n))), 1)
    window = np.arange(n) // 20
    g = build_graph("PATTERN s+ WHERE s[i].price > s[i-1].price", np.arange(n), {"price": price}, window=window)
    expected = [t.tolist() for t in extract_trends(g)]
    result = stealing_trends(g, anchors=30, workers=2, budget=50)
    assert [t.tolist() for t in result.trends] == expected
    assert result.splits > 0 and result.dfs_tasks > result.splits
