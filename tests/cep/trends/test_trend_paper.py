"""The worked examples of Mei et al., ICPP 2021 (seed text ``003_6a98738e6bf0c5e8.txt``), fixed.

Literal values from the paper's text, with the lines they come from:

- Table 2 (line 155) and the construction example of section 4.1 (lines 177, 183-185, 231):
  the predicate ``e[i].attr > e[i-1].attr * 2``, the domain ``[0, 100)`` of integers, the
  subranges after each event, the split of ``av3 = [31, 65)`` by ``e6`` into ``[31, 35)`` and
  ``[35, 65)``, the copied to-edges and ``e3 -> {av31, av32, av4, av5, av6}``;
- Fig. 2 (line 97): Q1 over six checks ``c1 .. c6`` has exactly the complete trends
  ``(c1, c2, c6)``, ``(c1, c3, c5, c6)`` and ``(c1, c3, c4)``.

Plus the two readings of "complete" (docs/trends.md, "Paper vs ours"), the basic to-edges of
Fig. 8 and the extraction between intermediate anchors (section 5.2), against brute-force
oracles of the definitions and the plain extraction on random partitions.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from cep.match.errors import MatchLimitError
from cep.oracles.trend_oracle import oracle_complete_trends, oracle_trend_windows
from cep.trends import (
    TrendOptionError,
    anchor_events,
    anchored_trends,
    build_graph,
    build_graph_dynamic,
    compile_trend,
    count_by_window,
    extract_trends,
    window_counts,
    window_graph,
    window_trends,
)
from cep.trends.dynamic import DynamicGraph, DynamicIndex

from .trend_cases import SETTINGS, Case, cases

TABLE2 = [32, 7, 15, 35, 40, 17]  # line 155: e1 .. e6
TABLE2_QUERY = "PATTERN e+ WHERE e[i].attr > e[i-1].attr * 2"  # line 177
DOMAIN = (0, 100)  # line 177: "AS: [0, 100)", integers, delta = 1 (line 161)


def subranges(ix: DynamicIndex) -> list[tuple[int, int]]:
    """The vertices of a ``>`` index in the paper's notation: ``(a, b]`` over the integers of
    ``[0, 100)`` is ``[a + 1, b + 1)``."""
    cuts = [DOMAIN[0]] + [int(b) + 1 for b in ix.bounds] + [DOMAIN[1]]
    return list(zip(cuts[:-1], cuts[1:]))


def vertex_range(ix: DynamicIndex, vertex: int) -> tuple[int, int]:
    return subranges(ix)[ix.order.index(vertex)]


def feed(count: int, to_edges: str) -> DynamicIndex:
    """The index after the first ``count`` events of Table 2, fed one by one."""
    dyn = DynamicGraph(compile_trend(TABLE2_QUERY), 1, to_edges)
    for e, value in enumerate(TABLE2[:count]):
        dyn.add(e, 0, [value], [2 * value])
    return dyn.windows[0][0]


@pytest.mark.parametrize("to_edges", ["range", "basic"])
def test_table2_subranges_after_each_event(to_edges: str) -> None:
    # line 177: e1 splits [0, 100) into av1 [0, 65) and av2 [65, 100); e2 splits [0, 65).
    assert subranges(feed(1, to_edges)) == [(0, 65), (65, 100)]
    assert subranges(feed(2, to_edges)) == [(0, 15), (15, 65), (65, 100)]
    # line 183: after e1 .. e5, "the attribute value set 0 - 100 has been split into six
    # subranges", av3 being "v_ori: 31 - 65" (line 185).
    five = feed(5, to_edges)
    assert subranges(five) == [(0, 15), (15, 31), (31, 65), (65, 71), (71, 81), (81, 100)]
    assert subranges(five)[2] == (31, 65)
    # line 185: e6 (17) needs values > 34, so av3 splits at 35 into [31, 35) and [35, 65).
    six = feed(6, to_edges)
    assert subranges(six) == [(0, 15), (15, 31), (31, 35), (35, 65), (65, 71), (71, 81), (81, 100)]


@pytest.mark.parametrize("to_edges", ["range", "basic"])
def test_table2_from_edges(to_edges: str) -> None:
    one = feed(1, to_edges)  # line 177: "we generate a from-edge av1 -> e1"
    assert [vertex_range(one, v) for v, items in enumerate(one.members) if (0, 32) in items] == [(0, 65)]
    six = feed(6, to_edges)
    held = {vertex_range(six, v): sorted(e for e, _ in items) for v, items in enumerate(six.members)}
    # line 199: "av2 -> e3" is an original from-edge (e3 = 15 lies in av2 = [15, 31); so
    # does e6 = 17).
    assert held[(15, 31)] == [2, 5]
    # line 185: the from-edges of av3 = [31, 65) (e1 = 32, e4 = 35, e5 = 40) are divided by
    # value: e4 and e5 now hang from av32 = [35, 65), e1 stays in av31 = [31, 35).
    assert held[(31, 35)] == [0] and held[(35, 65)] == [3, 4]


def test_table2_basic_to_edges_are_copied_on_a_split() -> None:
    def targets(ix: DynamicIndex, event: int) -> list[tuple[int, int]]:
        return [vertex_range(ix, v) for v in ix.to_vertices(event)]

    assert targets(feed(1, "basic"), 0) == [(65, 100)]  # line 177: "a to-edge e1 -> av2"
    assert targets(feed(2, "basic"), 1) == [(15, 65), (65, 100)]  # "two to-edges for e2"
    five, six = feed(5, "basic"), feed(6, "basic")
    # line 185: e2 -> av3 and e3 -> av3 are copied to av31 and av32 when e6 splits av3.
    for event in (1, 2):
        assert (31, 65) in targets(five, event)
        assert (31, 35) in targets(six, event) and (35, 65) in targets(six, event)
    # line 231: "e3 -> {av31, av32, av4, av5, av6}", contiguous (so one range, section 4.3).
    assert targets(six, 2) == [(31, 35), (35, 65), (65, 71), (71, 81), (81, 100)]
    # line 199: e6 -> av32 is an original edge: e6's to-edges start at av32 (values > 34).
    assert targets(six, 5)[0] == (35, 65)
    assert targets(six, 0) == [(65, 71), (71, 81), (81, 100)]  # e1: values > 64


# Fig. 4's events as a stream (ts = 1 .. 6). The paper does not list Fig. 4's trends; these are
# derived by hand from the edges (e2 -> e3, e4, e5, e6; e3 -> e4, e5; e1 links nothing).
FIG4_ENDS = [[0], [1, 2, 3], [1, 2, 4], [1, 3], [1, 4], [1, 5]]
FIG4_MAXIMAL = [[0], [1, 2, 3], [1, 2, 4], [1, 5]]  # (e2, e4) lies inside (e2, e3, e4), ...


@pytest.mark.parametrize("completeness, expected", [("ends", FIG4_ENDS), ("maximal", FIG4_MAXIMAL)])
def test_fig4_trends_under_both_readings(completeness: str, expected: list[list[int]]) -> None:
    ts, cols = np.arange(1, 7), {"attr": np.array(TABLE2)}
    for build in (build_graph, build_graph_dynamic):
        g = build(TABLE2_QUERY, ts, cols)
        assert [t.tolist() for t in extract_trends(g, completeness=completeness)] == expected
        assert count_by_window(g, completeness) == {0: len(expected)}
    window = oracle_trend_windows(TABLE2_QUERY, ts, cols, types=np.array(["e"] * 6))[0]
    assert [list(t) for t in oracle_complete_trends(window, completeness)] == expected


# Fig. 2 (line 97): c1 is "a check transaction from the source account A to the account B";
# the other checks' accounts are only in the figure, so these are an assignment that gives
# exactly the three trends the text prints.
FIG2 = {"src": ["A", "B", "B", "A", "A", "C"], "dest": ["B", "C", "A", "B", "C", "A"]}
FIG2_TRENDS = [[0, 1, 5], [0, 2, 3], [0, 2, 4, 5]]  # (c1, c2, c6), (c1, c3, c4), (c1, c3, c5, c6)
Q1 = ("PATTERN check+ c[] WHERE c.type = 'not covered' AND c[i].src = c[i-1].dest "
      "WITHIN 1 WEEK SLIDE 1 DAY")  # line 48


@pytest.mark.parametrize("completeness", ["ends", "maximal"])
def test_fig2_check_kiting_trends(completeness: str) -> None:
    ts = np.datetime64("2024-01-01T10:00") + np.arange(6).astype("timedelta64[h]")
    cols = {k: np.array(v, dtype=object) for k, v in FIG2.items()}
    # Q1 reads c.type as the check's coverage: every row is a check (the class holds every
    # row), and the type column is the coverage, as cet_trends reads Q1 without type_col.
    q = Q1.replace(" WHERE ", " DEFINE check AS TRUE WHERE ", 1)
    types = np.array(["not covered"] * 6, dtype=object)
    found = {tuple(rows.tolist()) for _, rows in window_trends(q, ts, cols, types=types,
                                                                completeness=completeness)}
    assert sorted(map(list, found)) == FIG2_TRENDS  # the same in every sliding window
    assert set(window_counts(q, ts, cols, types=types, completeness=completeness).values()) == {3}


def test_the_docs_example_differs_between_the_readings() -> None:
    # docs/trends.md section 5: (0, 6) is complete at both ends yet inside (0, 2, 5, 6).
    q = "PATTERN stock+ s[] WHERE [id] AND s[i].price > 1.05 * s[i-1].price"
    ts = np.array([0, 1, 5, 7, 9, 20, 58])
    cols = {"id": np.array(["IBM", "MSFT", "IBM", "IBM", "MSFT", "IBM", "IBM"], dtype=object),
            "price": np.array([100.0, 50.0, 106.0, 104.0, 53.0, 112.0, 118.0])}
    g = build_graph(q, ts, cols)
    assert [t.tolist() for t in extract_trends(g)] == [
        [0, 2, 5, 6], [0, 2, 6], [0, 5, 6], [0, 6], [1, 4], [3, 5, 6], [3, 6]]
    assert [t.tolist() for t in extract_trends(g, completeness="maximal")] == [
        [0, 2, 5, 6], [1, 4], [3, 5, 6]]


def test_unknown_options_are_typed_errors() -> None:
    g = build_graph(TABLE2_QUERY, np.arange(6), {"attr": np.array(TABLE2)})
    with pytest.raises(TrendOptionError, match="CEP-TREND-011: completeness: expected one of "
                                               "'ends', 'maximal', found 'longest'"):
        extract_trends(g, completeness="longest")
    with pytest.raises(TrendOptionError, match="CEP-TREND-011"):
        count_by_window(g, "subsequence")
    with pytest.raises(TrendOptionError, match="to_edges: expected one of 'range', 'basic'"):
        build_graph_dynamic(TABLE2_QUERY, np.arange(6), {"attr": np.array(TABLE2)}, to_edges="dense")


@SETTINGS
@given(cases())
def test_both_readings_equal_the_brute_force_oracle(case: Case) -> None:
    windows = oracle_trend_windows(case.query, case.ts, case.columns, types=case.types,
                                   tiebreak=case.tiebreak)
    graph = window_graph(case.query, case.ts, case.columns, types=case.types, tiebreak=case.tiebreak)
    starts = graph.window_starts.tolist()
    for completeness in ("ends", "maximal"):
        try:
            expected = {w: oracle_complete_trends(win, completeness, max_trends=300)
                        for w, win in windows.items()}
        except MatchLimitError:
            assume(False)
        found: dict[object, list[tuple[int, ...]]] = {w: [] for w in windows}
        for t in extract_trends(graph, completeness=completeness):
            found[starts[int(graph.window[t[0]])]].append(tuple(graph.row[t].tolist()))
        assert {w: tuple(sorted(v)) for w, v in found.items()} == expected
        assert count_by_window(graph, completeness) == {w: len(v) for w, v in expected.items()}
        if completeness == "ends":  # the oracle's own source-to-sink listing agrees
            assert expected == {w: win.trends for w, win in windows.items()}


@SETTINGS
@given(cases())
def test_basic_to_edges_build_the_range_graph(case: Case) -> None:
    q = compile_trend(case.query)
    graph = window_graph(q, case.ts, case.columns, types=case.types, tiebreak=case.tiebreak)
    cols = {}
    for ix in graph.indexes:
        for name in (ix.predicate.attr, ix.predicate.prev_attr):
            if name.lower() != "ts":
                cols[name] = case.columns[name][graph.row]
    window = graph.window_starts[graph.window]
    basic = build_graph_dynamic(q, graph.ts, cols, window=window, tiebreak=case.tiebreak[graph.row],
                                row=graph.row,
                                to_edges="basic")
    assert basic == graph
    assert [t.tolist() for t in extract_trends(basic)] == [t.tolist() for t in extract_trends(graph)]


def test_anchors_cut_the_table2_trends_into_pieces() -> None:
    # Section 5.2 on Fig. 4's stream. The vertices holding an event are [0, 15) (e2),
    # [15, 31) (e3, e6), [31, 35) (e1) and [35, 65) (e4, e5); two anchors are [15, 31) and
    # [31, 35), so e3 and e6 are cut (e1 is a start anyway).
    g = build_graph(TABLE2_QUERY, np.arange(1, 7), {"attr": np.array(TABLE2)})
    assert anchor_events(g, 2).tolist() == [True, False, True, False, False, True]
    result = anchored_trends(g, anchors=2)
    assert [t.tolist() for t in result.trends] == FIG4_ENDS
    # pieces: (e1); (e2 e3), (e2 e4), (e2 e5), (e2 e6); (e3 e4), (e3 e5); (e6)
    assert (result.anchor_events, result.pieces) == (2, 8)
    assert [t.tolist() for t in anchored_trends(g, 2, completeness="maximal").trends] == FIG4_MAXIMAL


@SETTINGS
@given(cases(), st.integers(0, 6), st.sampled_from(["ends", "maximal"]))
def test_anchored_extraction_equals_extract_trends(case: Case, anchors: int, completeness: str) -> None:
    graph = window_graph(case.query, case.ts, case.columns, types=case.types, tiebreak=case.tiebreak)
    result = anchored_trends(graph, anchors, completeness=completeness)
    assert [t.tolist() for t in result.trends] == [
        t.tolist() for t in extract_trends(graph, completeness=completeness)]
