"""plot_trend_graph: renders, its edges are the window's event DAG, typed errors; fed by the graph
job's Delta tables and cet_trends."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from cep.trends import build_graph, compile_trend, enumerate_edges
from delta_tables.graph_state import KIND, window_rows
from tests.viz.render import png
from viz import VizArgumentError, VizColumnsError, plot_trend_graph, trend_edges

PATTERNS = (
    "PATTERN s+ s[] WHERE [id] AND s[i].price > s[i-1].price",  # two predicates, = and >
    "PATTERN s+ s[] WHERE s[i].price <> s[i-1].price",           # two ranges per event
    "PATTERN s+ s[] WHERE s[i].src = s[i-1].dest",
    "PATTERN s+ s[]",                                            # no predicate: every later event
)


def _window(pattern: str, n: int = 30, seed: int = 1) -> tuple[dict[str, pa.Table], object]:
    """The three graph tables of one window, as the graph job writes them, and its graph."""
    rng = np.random.default_rng(seed)
    ts = np.sort(rng.integers(0, 1000, n)).astype(np.int64)  # repeated instants never link
    cols = {"id": rng.choice(["A", "B"], n).astype(object), "price": rng.random(n) * 10,
            "src": rng.integers(0, 6, n), "dest": rng.integers(0, 6, n)}
    graph = build_graph(compile_trend(pattern), ts, cols, tiebreak=np.arange(n))
    rows = window_rows(graph, "k", 0, 1000, np.arange(100, 100 + n))
    tables = {}
    for name, columns in (("event_vertices", ["key", "window_start", "window_end", "event_id", "ts"]),
                          ("from_edges", ["key", "window_start", "predicate", "event", "vertex"]),
                          ("to_edges", ["key", "window_start", "predicate", "event", "lo", "hi"])):
        tables[name] = rows.filter(pc.equal(rows.column("kind"), KIND[name])).select(columns)
    return tables, graph


@pytest.mark.parametrize("pattern", PATTERNS)
def test_edges_are_the_graphs_event_dag(pattern: str) -> None:
    tables, graph = _window(pattern)
    w = trend_edges(tables["event_vertices"], tables["from_edges"], tables["to_edges"])
    src, dst = enumerate_edges(graph)  # the core's own edge enumeration, independent of viz
    assert sorted(zip(w.src.tolist(), w.dst.tolist())) == sorted(zip(src.tolist(), dst.tolist()))
    fig = plot_trend_graph(tables["event_vertices"], tables["from_edges"], tables["to_edges"],
                           timestamps="raw")
    png(fig)
    points, arrows = fig.axes[0].collections[:2]
    assert len(points.get_offsets()) == 30 and len(arrows.U) == len(src)


def test_max_vertices_keeps_the_first_events_and_their_edges() -> None:
    tables, graph = _window(PATTERNS[0])
    w = trend_edges(tables["event_vertices"], tables["from_edges"], tables["to_edges"],
                    max_vertices=12)
    src, dst = enumerate_edges(graph)
    keep = (src < 12) & (dst < 12)
    assert sorted(zip(w.src.tolist(), w.dst.tolist())) == sorted(zip(src[keep].tolist(), dst[keep].tolist()))
    assert w.total_events == 30 and w.event_ids.tolist() == list(range(100, 112))
    fig = plot_trend_graph(tables["event_vertices"], tables["from_edges"], tables["to_edges"],
                           max_vertices=12, timestamps="raw")
    png(fig)
    assert "first 12 of 30 events" in fig.axes[0].get_title()


def test_depth_is_the_longest_path() -> None:
    tables, graph = _window(PATTERNS[3], n=6)
    fig = plot_trend_graph(tables["event_vertices"], tables["from_edges"], tables["to_edges"],
                           timestamps="raw", highlight=[100, 102])
    png(fig)
    ts = tables["event_vertices"].column("ts")[0].as_py()
    # Every earlier event links: depth = the number of distinct earlier instants.
    depth = [len({t for t in ts if t < mine}) for mine in ts]
    assert fig.axes[0].collections[0].get_offsets()[:, 1].tolist() == depth
    assert len(fig.axes[0].collections[3].U) == 1  # the highlighted trend's one edge


def test_bad_input_is_a_typed_error() -> None:
    tables, _ = _window(PATTERNS[0])
    ev, fe, te = tables["event_vertices"], tables["from_edges"], tables["to_edges"]
    with pytest.raises(VizColumnsError, match=r"CEP-VIZ-001: to_edges: expected columns .*"
                                              r"missing \['lo', 'hi'\]"):
        trend_edges(ev, fe, te.drop_columns(["lo", "hi"]))
    with pytest.raises(VizArgumentError, match="no window with key='other'"):
        trend_edges(ev, fe, te, key="other")
    two = pa.concat_tables([ev, ev.set_column(1, "window_start", pa.array([5], pa.int64()))])
    with pytest.raises(VizArgumentError, match=r"2 windows match .* e\.g\. \('k', 0\), \('k', 5\)"):
        trend_edges(two, fe, te)
    with pytest.raises(VizArgumentError, match="highlight: event ids"):
        plot_trend_graph(ev, fe, te, timestamps="raw", highlight=[1])
    with pytest.raises(VizArgumentError, match="timestamps"):
        plot_trend_graph(ev, fe, te, timestamps="seconds")


@pytest.mark.spark
def test_fed_by_the_graph_job_and_cet_trends(spark, settings, generated_checks) -> None:
    from delta_tables.graph_state import load_graph
    from delta_tables.graph_trends import graph_edges
    from jobs.state.graph import run_graph

    # The registered graph of Q1 (a no-op after the docs' example built it in the same warehouse).
    conf = load_graph(settings, "checks_graph")
    run_graph(spark, settings, conf, quiet=True)
    q1 = ("PATTERN check+ c[] WHERE c.type = ''not covered'' AND c[i].src = c[i-1].dest "
          "WITHIN 1 WEEK SLIDE 1 DAY")
    best = spark.sql(f"""
        SELECT bank, unix_micros(window_start) AS window_us, event_ids, length
        FROM cet_trends(pattern => '{q1}', key_col => 'bank', events => TABLE(checks))
        ORDER BY length DESC, bank, window_start LIMIT 1""").first()
    tables = [spark.table(f"checks_graph_{s}") for s in ("event_vertices", "from_edges", "to_edges")]
    fig = plot_trend_graph(*tables, key=best.bank, window_start=best.window_us,
                           highlight=best.event_ids, max_vertices=500)
    png(fig)
    # The edges Spark's join-based extraction finds in the same window (delta_tables.graph_trends).
    expected = {(r.src, r.dst) for r in graph_edges(spark, conf)
                .where(f"key = '{best.bank}' AND window_start = {best.window_us}").collect()}
    w = trend_edges(*tables, key=best.bank, window_start=best.window_us, max_vertices=500)
    assert set(zip(w.src.tolist(), w.dst.tolist())) == expected
    events = spark.sql(f"SELECT size(event_id) AS n FROM checks_graph_event_vertices "
                       f"WHERE key = '{best.bank}' AND window_start = {best.window_us}").first().n
    points, arrows, trend_points, trend_arrows = fig.axes[0].collections[:4]
    assert len(points.get_offsets()) == events and len(arrows.U) == len(expected)
    assert len(trend_points.get_offsets()) == best.length and len(trend_arrows.U) == best.length - 1
    # Along the longest trend the depth rises by one per check.
    assert trend_points.get_offsets()[:, 1].tolist() == list(range(best.length))
