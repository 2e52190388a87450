"""Algorithm 1 step by step (cep.trends.parallel) builds exactly build_graph's graph, for P = 1..5."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cep.errors import CepError
from cep.trends import build_graph, compile_trend, extract_trends, window_graph
from cep.trends.parallel import build_graph_parallel, build_graph_pool, event_vertices, split

from .trend_cases import SETTINGS, Case, cases

Q1 = "PATTERN check+ c[] WHERE c[i].src = c[i-1].dest WITHIN 1 WEEK SLIDE 1 DAY"
Q2 = "PATTERN stock+ s[] WHERE [id] AND s[i].price > 1.05 * s[i-1].price WITHIN 60 MINUTES SLIDE 10 MINUTES"


def _fixed() -> list[tuple[str, np.ndarray, dict[str, np.ndarray], np.ndarray | None]]:
    days = np.datetime64("2024-03-04") + np.array([0, 1, 2, 3, 9, 4], dtype="timedelta64[D]")
    q1 = {"src": np.array(["A", "B", "C", "A", "B", None], dtype=object),
          "dest": np.array(["B", "C", "A", "B", "C", "A"], dtype=object)}
    minutes = np.datetime64("2024-03-01T09:00") + np.array([0, 1, 5, 7, 9, 20, 58], dtype="timedelta64[m]")
    q2 = {"id": np.array(["IBM", "MSFT", "IBM", "IBM", "MSFT", "IBM", "IBM"], dtype=object),
          "price": np.array([100.0, 50.0, 106.0, 104.0, 53.0, 112.0, np.nan])}
    table2 = {"attr": np.array([32, 7, 15, 35, 40, 17])}
    return [
        (Q1, days, q1, None),
        (Q2, minutes, q2, None),
        ("PATTERN e+ WHERE e[i].attr > e[i-1].attr * 2", np.arange(1, 7), table2, None),
        ("PATTERN e+ WHERE e[i].attr <> e[i-1].attr AND e[i].attr >= e[i-1].attr - 20",
         np.array([3, 1, 2, 2, 5, 4]), table2, np.array([0, 0, 1, 1, 1, 2])),
        ("PATTERN e+ WHERE e[i].attr < e[i-1].attr", np.zeros(0, dtype=np.int64), {"attr": np.zeros(0)}, None),
    ]


def _windows(query: str, ts: np.ndarray, cols: dict[str, np.ndarray]):  # noqa: ANN202
    """Events of every window, as the Spark layer hands them to build_graph."""
    types = np.full(len(ts), compile_trend(query).cls, dtype=object)
    g = window_graph(query, ts, cols, types=types)
    return g, {k: v[g.row] for k, v in cols.items()}, g.window_starts[g.window]


@pytest.mark.parametrize("parts", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("case", range(len(_fixed())))
def test_fixed_cases_build_equal_graphs_and_trends(case: int, parts: int) -> None:
    query, ts, cols, window = _fixed()[case]
    expected = build_graph(query, ts, cols, window=window)
    for seed in (0, 7, None):
        got = build_graph_parallel(query, ts, cols, window=window, parts=parts, seed=seed)
        assert got == expected
        assert [t.tolist() for t in extract_trends(got)] == [t.tolist() for t in extract_trends(expected)]
    if window is None and len(ts):
        g, sub, starts = _windows(query, ts, cols)
        assert build_graph_parallel(query, g.ts, sub, window=starts, row=g.row, parts=parts) == g


@SETTINGS
@given(cases(), st.integers(1, 5), st.one_of(st.none(), st.integers(0, 3)), st.randoms(use_true_random=False))
def test_random_cases_build_equal_graphs(case: Case, parts: int, seed: int | None, rnd) -> None:  # noqa: ANN001
    graph = window_graph(case.query, case.ts, case.columns, types=case.types, tiebreak=case.tiebreak)
    cols = {k: v[graph.row] for k, v in case.columns.items()}
    starts = graph.window_starts[graph.window]
    # Shuffle the input so that step 0 has to order the event vertices.
    perm = np.array(rnd.sample(range(graph.n_events), graph.n_events), dtype=np.int64)
    tie = perm  # the shuffled event i is the graph's vertex perm[i]
    got = build_graph_parallel(case.query, graph.ts[perm], {k: v[perm] for k, v in cols.items()},
                               window=starts[perm], row=graph.row[perm], tiebreak=tie, parts=parts, seed=seed)
    assert got == graph


@SETTINGS
@given(cases(windows=False), st.integers(2, 5))
def test_errors_are_those_of_the_whole(case: Case, parts: int) -> None:
    # Columns whose type differs between partitions: some rows strings, others numbers.
    cols = dict(case.columns)
    n = len(case.ts)
    cols["a"] = np.array([("x" if i % 2 else 1) for i in range(n)], dtype=object)
    query = case.query.replace("e[i].s", "e[i].a").replace("[s]", "[a]")
    try:
        build_graph(query, case.ts, cols)
    except CepError as err:
        with pytest.raises(type(err)) as found:
            build_graph_parallel(query, case.ts, cols, parts=parts)
        assert str(found.value) == str(err)
    else:
        assert build_graph_parallel(query, case.ts, cols, parts=parts) == build_graph(query, case.ts, cols)


def test_random_partitions_cover_every_event_once() -> None:
    ev = event_vertices(np.arange(1000))
    parts = split(ev, {"x": np.arange(1000)}, 4, seed=3)
    events = np.concatenate([p.events for p in parts])
    assert sorted(events.tolist()) == list(range(1000))
    assert all(np.all(np.diff(p.events) > 0) for p in parts)
    assert min(len(p.events) for p in parts) > 200  # random, not skewed


def test_process_pool_builds_the_same_graph() -> None:
    rng = np.random.default_rng(5)
    n = 3000
    cols = {"price": 100 * np.exp(np.cumsum(rng.normal(0, 0.01, n))),
            "src": rng.integers(0, 300, n), "dest": rng.integers(0, 300, n)}
    with ProcessPoolExecutor(max_workers=2) as pool:
        for query in ("PATTERN s+ WHERE s[i].price > 1.05 * s[i-1].price",
                      "PATTERN c+ WHERE c[i].src = c[i-1].dest"):
            expected = build_graph(query, np.arange(n), cols)
            assert build_graph_pool(query, np.arange(n), cols, pool=pool, parts=4) == expected
