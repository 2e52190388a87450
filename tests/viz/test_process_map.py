"""plot_follows / follows_layout / plot_variants: the documented layout, what is drawn, errors."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.viz.render import png
from viz import VizArgumentError, VizColumnsError, follows_layout, plot_follows, plot_variants


def graph_of(edges: list[tuple[str, str, int]]) -> pd.DataFrame:
    return pd.DataFrame({"source": [e[0] for e in edges], "target": [e[1] for e in edges],
                         "n": [e[2] for e in edges],
                         "median_duration": [60.0 * (k + 1) for k in range(len(edges))]})


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("ABCDEFG"), st.sampled_from("ABCDEFG"),
                          st.integers(1, 50)), min_size=1, max_size=20,
                unique_by=lambda e: (e[0], e[1])),
       st.lists(st.sampled_from("ABCDEFG"), max_size=3))
def test_layers_are_fewest_steps_from_the_starts(edges, firsts) -> None:
    starts = pd.DataFrame({"first_type": firsts}) if firsts else None
    placed = follows_layout(graph_of(edges), starts=starts)
    nodes = {e[0] for e in edges} | {e[1] for e in edges}
    assert set(placed) == nodes
    layer = {v: p.layer for v, p in placed.items()}
    roots = {v for v in nodes if layer[v] == 0}
    if firsts and set(firsts) & nodes:
        assert roots == set(firsts) & nodes
    for v in nodes - roots:
        preds = [layer[s] for s, t, _ in edges if t == v and s != v]
        # Reached from an earlier layer in one step, or the root of a part no path reaches.
        assert (preds and min(preds) + 1 == layer[v]) or all(p >= layer[v] for p in preds), \
            (v, layer, edges)
    for depth in set(layer.values()):
        ranks = sorted(p.rank for v, p in placed.items() if p.layer == depth)
        assert ranks == list(range(len(ranks)))


def test_the_most_frequent_pairs_are_drawn_and_the_rest_counted() -> None:
    edges = [("A", "B", 10), ("B", "C", 9), ("C", "D", 2), ("D", "B", 1), ("A", "C", 5)]
    fig = plot_follows(graph_of(edges), max_edges=3)
    png(fig)
    ax = fig.axes[0]
    assert ax.get_title() == ("directly-follows graph: 3 pairs of 3 activities "
                              "(the 3 most frequent; 2 left out)")
    assert sorted(t.get_text() for t in ax.texts if t.get_text() in "ABCD") == ["A", "B", "C"]
    assert len(ax.patches) == 3
    labels = {t.get_text() for t in ax.texts}
    assert "10\n1min" not in labels and "10\n60s" in labels  # count, then the median time


def test_starts_and_ends_come_from_case_stats() -> None:
    edges = [("A", "B", 3), ("B", "C", 2)]
    cases = pd.DataFrame({"first_type": ["A", "A", "B"], "last_type": ["C", "C", "B"]})
    fig = plot_follows(graph_of(edges), case_stats=cases)
    png(fig)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "\u25b6 start" in texts and "\u25a0 end" in texts
    assert len(fig.axes[0].patches) == 2 + 2 + 2  # the pairs, two starts, two ends


def test_variants_chart_draws_the_top_ranks() -> None:
    variants = pd.DataFrame({"rank": [2, 1, 3], "variant": [["A", "C"], ["A", "B"], ["B"]],
                             "cases": [30, 50, 20], "share": [0.3, 0.5, 0.2],
                             "median_duration": [86400.0, 172800.0, 0.0]})
    fig = plot_variants(variants, top=2)
    png(fig)
    bars = [b.get_width() for b in fig.axes[0].containers[0]]
    assert bars == [50, 30]
    assert [b.get_width() for b in fig.axes[1].containers[0]] == [2.0, 1.0]
    assert fig._suptitle.get_text() == "top 2 variants: 80.0% of the cases"


def test_errors_are_typed() -> None:
    with pytest.raises(VizColumnsError, match="CEP-VIZ-001"):
        plot_follows(pd.DataFrame({"source": ["A"], "target": ["B"]}))
    with pytest.raises(VizArgumentError, match="CEP-VIZ-003"):
        plot_follows(graph_of([("A", "B", 1)]), max_edges=0)
    with pytest.raises(VizColumnsError, match="CEP-VIZ-001"):
        plot_variants(pd.DataFrame({"rank": [1]}))
