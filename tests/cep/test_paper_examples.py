"""The worked examples of the two seed papers behind ``match_seq`` and ``approx_match_seq``, as
fixed tests through the core (issue 23); ``tests/udfs/test_paper_examples_sql.py`` runs the same
examples through SQL.

Baltus 2021, *Approximating the Temporal Order of Events in Big Data Streams*
(``../shared/seeds/000_ba105111c3328901.txt``; "line N" below is a line of that file):

- section 2.3 (lines 199-205): ``SEQ(A, B)`` over ``A1 B1 C1 B2 A2 A3 C2 B3 A4 D1 C3 B4 A5 B5
  C4 B6`` under strict contiguity, skip-till-any and skip-till-next: the exact engine, and the
  sketch with leaves of ``C = 1`` event (a unit is then one event), over the exact-set twin and
  over the Bloom filters;
- section 4.1 (lines 295-306, Algorithm 1): leaves are count-based windows ``[i*C + 1, (i+1)*C]``;
- section 4.2 (lines 367-373): the relaxed policies at leaf granularity (section 2.3's stream
  with ``C = 2``), and ``AND`` as the disjunction of the permutations (lines 387-392);
- section 4.4.1 (line 592): ``SEQ(A, B, C, D)`` has three pairs, so ``q = 6 L / 2^(h-1)`` probes;
- section 5.1.3 (lines 637-672): the XES excerpt of two traces, read in timestamp order as one
  stream (the thesis's Approach 1), per trace (the exact solution it compares to), and in file
  order with leaves longer than a trace.

Behravesh et al., FAEM, *Optimizing Expressibility and Performance of Kleene Operators on Binary
Tree-based Directed Graph* (``../shared/seeds/001_68e4e077f646287c.txt``), policy
``skip-till-any-match-grouped`` (docs/semantics.md, "Paper vs ours: FAEM's Kleene operators"):

- Fig. 3 (lines 160-172): the buffer ``G & M+`` after each event of ``m1 m2 g3 g4 m5 g6 m7``
  (the final buffer is already in ``tests/cep/match/test_grouped.py``);
- Fig. 2 (lines 156-158, 174): ``A+ & B`` is ``(A+; B) U (B; A+)``, likewise ``*`` and ``[num]``;
- Fig. 4 / Algorithm 3 (lines 181-192, 254): every 3 of the group ``b4 b6 b7 b8 b9``, the
  first two composites in the paper's order, under any-match too and under every join plan;
- the plans of line 321 (Left, Right, Bushy, Inner over ``G; M; D; I``);
- Fig. 5 (line 286): ZStream's composite ``g2 m3 m6 m7 d8`` joined with ``i9``, with the
  paper's own values.

Expected answers are written out from the papers' text (or derived by hand from it where the
paper states a rule and a stream, as the comments say), never computed by the code under test.
"""

from __future__ import annotations

import re
from itertools import permutations
from typing import Sequence

import numpy as np
import pytest

from cep.match import EventStream, compile_query, find_matches
from cep.match.plan.plans import PLAN_KINDS, Join, Unit, build_plan
from cep.oracles import oracle_matches
from cep.sketch import SketchConfig, SketchTree, evaluate_sketch, split_node_ids
from cep.sketch.thesis_solver import thesis_solve

STRICT = "strict-contiguity"
NEXT = "skip-till-next-match"
ANY = "skip-till-any-match"
GROUPED = "skip-till-any-match-grouped"

# Bloom filters of 64 bits and 2 hashes: on these streams no name falsely hits a leaf of
# another name, so the sketch's answer is the twin's, which is the paper's.
BLOOM = {"m": 64, "k": 2}


def kind(label: str) -> str:
    """The event class of a label: ``A1`` -> ``A``, ``m5`` -> ``M``, ``c10`` -> ``C``."""
    return re.sub(r"\d+$", "", label).upper()


def event_stream(labels: Sequence[str], ts: Sequence[int] | None = None,
                 types: Sequence[str] | None = None, **attrs: Sequence[float]) -> EventStream:
    """Events with id = index into ``labels``; ``ts`` defaults to the index, ``types`` to the
    labels' classes. ``from_columns`` orders them by ``(ts, id)``."""
    return EventStream.from_columns(
        ids=range(len(labels)), ts=list(ts) if ts is not None else list(range(len(labels))),
        types=list(types) if types is not None else [kind(x) for x in labels],
        attrs={k: np.asarray(v) for k, v in attrs.items()})


def exact(text: str, labels: Sequence[str], policy: str, *, ts: Sequence[int] | None = None,
          types: Sequence[str] | None = None, plan: str | None = None,
          **attrs: Sequence[float]) -> list[tuple[str, ...]]:
    """The exact engine's matches as label tuples, in ``match_id`` order (the oracle agrees)."""
    stream = event_stream(labels, ts, types, **attrs)
    found = find_matches(compile_query(text, policy=policy), stream, plan=plan).to_matches()
    oracle = oracle_matches(text, stream, policy=policy)
    assert [(m.positions, m.variables) for m in found] == \
        [(m.positions, m.variables) for m in oracle], text
    return [tuple(labels[int(stream.ids[p])] for p in m.positions) for m in found]


def sketch_tree(labels: Sequence[str], C: int, types: Sequence[str] | None = None,
                merge: str = "aligned") -> SketchTree:
    """The sketch of one stream in the given order (ts = index, so positions are the labels')."""
    names = list(types) if types is not None else [kind(x) for x in labels]
    return SketchTree.build(names, range(len(labels)), SketchConfig(C=C, merge=merge, **BLOOM))


def event_matches(text: str, tree: SketchTree, labels: Sequence[str], policy: str,
                  membership: str) -> list[tuple[str, ...]]:
    """Sketch matches at ``C = 1`` as the labels of the leaves bound per slot (leaf = event)."""
    assert tree.config.C == 1
    out = []
    for m in evaluate_sketch(text, tree, policy=policy, membership=membership).rows():
        level, index = split_node_ids(np.array(m.node_ids))
        assert level.tolist() == [0] * len(m.node_ids)
        assert (m.pos_start, m.pos_end) == (min(index), max(index))
        out.append(tuple(labels[i] for i in index.tolist()))
    return out


def leaf_matches(text: str, tree: SketchTree, policy: str,
                 membership: str = "twin") -> list[tuple[int, int, tuple[int, ...]]]:
    """Sketch matches at level 0 as ``(pos_start, pos_end, leaf index per slot)``."""
    out = []
    for m in evaluate_sketch(text, tree, policy=policy, membership=membership).rows():
        level, index = split_node_ids(np.array(m.node_ids))
        assert level.tolist() == [0] * len(m.node_ids)
        out.append((m.pos_start, m.pos_end, tuple(index.tolist())))
    return out


# =============================================================================================
# Baltus 2021, section 2.3 (lines 199-205)
# =============================================================================================

THESIS = "A1 B1 C1 B2 A2 A3 C2 B3 A4 D1 C3 B4 A5 B5 C4 B6".split()

# Line 203.
THESIS_STRICT = [("A1", "B1"), ("A5", "B5")]
# Line 205.
THESIS_NEXT = [("A1", "B1"), ("A2", "B3"), ("A3", "B3"), ("A4", "B4"), ("A5", "B5")]
# Line 204 prints "(A1, B1), (A1, B2), (A1, B3), (A1, B4), (A1, B5), (A1, B6), (A2, B3),
# (A2, B4), (A2, B5) ... (A5, B6)"; the elided middle is every later B of every A.
THESIS_ANY = [("A1", "B1"), ("A1", "B2"), ("A1", "B3"), ("A1", "B4"), ("A1", "B5"), ("A1", "B6"),
              ("A2", "B3"), ("A2", "B4"), ("A2", "B5"), ("A2", "B6"),
              ("A3", "B3"), ("A3", "B4"), ("A3", "B5"), ("A3", "B6"),
              ("A4", "B4"), ("A4", "B5"), ("A4", "B6"),
              ("A5", "B5"), ("A5", "B6")]
THESIS_ANSWERS = [(STRICT, THESIS_STRICT), (NEXT, THESIS_NEXT), (ANY, THESIS_ANY)]


@pytest.mark.parametrize(("policy", "expected"), THESIS_ANSWERS, ids=[p for p, _ in THESIS_ANSWERS])
def test_thesis_2_3_seq_a_b_exact_engine(policy: str, expected: list) -> None:
    assert exact("PATTERN SEQ(A, B)", THESIS, policy) == expected


@pytest.mark.parametrize(("policy", "expected"), THESIS_ANSWERS, ids=[p for p, _ in THESIS_ANSWERS])
@pytest.mark.parametrize("membership", ["twin", "bloom"])
@pytest.mark.parametrize("merge", ["aligned", "neighbours"])
def test_thesis_2_3_seq_a_b_sketch_with_one_event_per_leaf(policy: str, expected: list,
                                                            membership: str, merge: str) -> None:
    # With C = 1 every leaf is one event, so the relaxed semantics of section 4.2 are the
    # policies of section 2.3 and the sketch gives the printed answers.
    # Skip-till-next: section 4.3.2 (line 429) says a complex query continues "starting from the
    # node that contains B", which would give (A1,B1) (A2,B3) (A4,B4) (A5,B5) without (A3,B3);
    # we follow section 2.3's printed answer (docs/sketch.md, "Paper vs ours": complex queries).
    # Both merge rules (ours, and the thesis's Algorithm 2) give the same leaves.
    tree = sketch_tree(THESIS, C=1, merge=merge)
    assert tree.n_levels > 1  # the query walks down from merged nodes to the leaves
    assert event_matches("PATTERN SEQ(A, B)", tree, THESIS, policy, membership) == expected
    assert evaluate_sketch("PATTERN SEQ(A, B)", tree, policy=policy, membership=membership,
                           mode="exists") is True


# =============================================================================================
# Baltus 2021, section 4.1 (lines 295-306) and Algorithm 1 (lines 319-340)
# =============================================================================================

def test_thesis_4_1_leaves_are_count_windows_of_c_events() -> None:
    # Line 304: leaf bf_i holds the interval [i*C + 1, (i+1)*C], i.e. [1, C], [C+1, 2C],
    # [2C+1, 3C] ...; positions here are 0-based, so leaf i holds i*C .. i*C + C - 1.
    # Line 306: its time interval runs from its first event's timestamp to its last's.
    # Algorithm 1 (line 7) makes a leaf only when count % C == 0: the 16th event of the
    # section 2.3 stream with C = 3 waits in the open leaf.
    ts = [10 * i for i in range(len(THESIS))]
    tree = SketchTree.build([kind(x) for x in THESIS], ts, SketchConfig(C=3, **BLOOM))
    leaves = np.flatnonzero(tree.level == 0)
    order = leaves[np.argsort(tree.index[leaves])]
    one_based = [(int(tree.pos_start[r]) + 1, int(tree.pos_end[r]) + 1) for r in order]
    assert one_based == [(1, 3), (4, 6), (7, 9), (10, 12), (13, 15)]
    assert [(int(tree.ts_start[r]), int(tree.ts_end[r])) for r in order] == \
        [(0, 20), (30, 50), (60, 80), (90, 110), (120, 140)]
    assert [tuple(tree.twin_names(int(r))) for r in order[:2]] == [("A", "B", "C"), ("A", "B")]
    assert (tree.open_leaf.pos_start, tree.open_leaf.names) == (15, ("B",))


# =============================================================================================
# Baltus 2021, section 4.2: relaxed policies (lines 367-373) and AND (lines 387-392)
# =============================================================================================

# Section 2.3's stream with C = 2: leaves 0..7 hold
#   {A1 B1} {C1 B2} {A2 A3} {C2 B3} {A4 D1} {C3 B4} {A5 B5} {C4 B6}.


def test_thesis_4_2_relaxed_strict_contiguity_is_neighbouring_leaves() -> None:
    # Line 371: "the matching events must occur in contiguous leaves"; line 367: matches inside
    # one leaf are not detected. Every leaf with an A has a B in the next leaf, so the relaxed
    # answer is leaves (0,1) (2,3) (4,5) (6,7); the two exact strict matches (A1,B1) and
    # (A5,B5) of line 203 lie inside leaves 0 and 6 and are not found as such.
    tree = sketch_tree(THESIS, C=2)
    for membership in ("twin", "bloom"):
        assert leaf_matches("PATTERN SEQ(A, B)", tree, STRICT, membership) == [
            (0, 3, (0, 1)), (4, 7, (2, 3)), (8, 11, (4, 5)), (12, 15, (6, 7))]


def test_thesis_4_2_relaxed_skip_till_next_and_skip_till_any_on_leaves() -> None:
    # Line 373: irrelevant nodes may occur in between "until the first node containing a
    # matching event is found": each leaf with an A (0, 2, 4, 6) pairs with the first later
    # leaf with a B (1, 3, 5, 7).
    tree = sketch_tree(THESIS, C=2)
    assert leaf_matches("PATTERN SEQ(A, B)", tree, NEXT) == [
        (0, 3, (0, 1)), (4, 7, (2, 3)), (8, 11, (4, 5)), (12, 15, (6, 7))]
    # Line 372, skip-till-any: every leaf with an A (0, 2, 4, 6) with every later leaf with a B
    # (1, 3, 5, 6, 7): 5 + 4 + 3 + 1 intervals.
    assert leaf_matches("PATTERN SEQ(A, B)", tree, ANY) == [
        (0, 3, (0, 1)), (0, 7, (0, 3)), (0, 11, (0, 5)), (0, 13, (0, 6)), (0, 15, (0, 7)),
        (4, 7, (2, 3)), (4, 11, (2, 5)), (4, 13, (2, 6)), (4, 15, (2, 7)),
        (8, 11, (4, 5)), (8, 13, (4, 6)), (8, 15, (4, 7)), (12, 15, (6, 7))]


def test_thesis_4_2_and_of_three_is_the_six_permutations() -> None:
    # Line 390: AND(A, B, C) is SEQ(A,B,C) v SEQ(A,C,B) v SEQ(B,A,C) v SEQ(B,C,A) v SEQ(C,A,B)
    # v SEQ(C,B,A). The exact engine's normal form has exactly these alternatives.
    normal = compile_query("PATTERN AND(A, B, C)", policy=ANY).normal
    orders = [tuple(c.choices[0].cls for c in alt.components) for alt in normal.alternatives]
    assert orders == [("A", "B", "C"), ("A", "C", "B"), ("B", "A", "C"), ("B", "C", "A"),
                      ("C", "A", "B"), ("C", "B", "A")]
    assert sorted(orders) == sorted(permutations("ABC"))


def test_thesis_4_2_and_under_strict_contiguity_on_leaves() -> None:
    # Lines 387-392: AND(A, B) matches (1) when both are in one node, and (2) for SEQ(A, B) or
    # SEQ(B, A) over nodes that are strictly contiguous when the policy requires it. On the
    # C = 2 leaves above the thesis's answer is (1) leaves 0 and 6 alone, and (2) every pair of
    # neighbouring leaves (0,1) (1,2) ... (6,7): one holds an A and the other a B. Our strict
    # AND is the thesis's (docs/sketch.md, "Paper vs ours").
    tree = sketch_tree(THESIS, C=2)
    assert leaf_matches("PATTERN AND(A, B)", tree, STRICT) == [
        (0, 1, (0, 0)), (0, 3, (0, 1)), (2, 5, (2, 1)), (4, 7, (2, 3)), (6, 9, (4, 3)),
        (8, 11, (4, 5)), (10, 13, (6, 5)), (12, 13, (6, 6)), (12, 15, (6, 7))]
    # With one event per leaf it is the adjacent A, B pairs in either order: A1 B1, B2 A2,
    # B3 A4, B4 A5, A5 B5.
    assert leaf_matches("PATTERN AND(A, B)", sketch_tree(THESIS, C=1), STRICT) == [
        (0, 1, (0, 1)), (3, 4, (4, 3)), (7, 8, (8, 7)), (11, 12, (12, 11)), (12, 13, (12, 13))]
    # Under skip-till-next-match, which does not require contiguous nodes: the same-leaf
    # matches plus a B or an A in the next leaf.
    assert leaf_matches("PATTERN AND(A, B)", tree, NEXT) == [
        (0, 1, (0, 0)), (2, 5, (2, 1)), (4, 7, (2, 3)), (6, 9, (4, 3)), (8, 11, (4, 5)),
        (10, 13, (6, 5)), (12, 13, (6, 6))]


# =============================================================================================
# Baltus 2021, section 4.4.1 (line 592)
# =============================================================================================

def test_thesis_4_4_1_seq_of_four_probes_every_top_filter_six_times() -> None:
    # Line 592: SEQ(A, B, C, D) has three pairs (A,B) (B,C) (C,D), each probing the filters
    # twice, so q = 6 L / 2^(h-1) instead of L / 2^(h-1). Inputs of section 5.2.1 (line 725)
    # with N = 10^6: L = N / C = 10^4 leaves.
    c = thesis_solve(fpq=1e-4, memory_bits=8 * 2 ** 31, n_events=10 ** 6, window=100,
                     query_length=4)
    assert c.leaves == 10 ** 4
    assert c.probes == 6 * c.leaves / 2 ** (c.height - 1)


# =============================================================================================
# Baltus 2021, section 5.1.3 (lines 637-672): the XES excerpt
# =============================================================================================

# Lines 639-665, in file order (trace of item #1, then trace of item #10), days of January 2021.
XES = ["Order placed for item #1", "Item #1 sent", "Order placed for item #10", "Item #10 sent"]
XES_DAY = [1, 5, 2, 10]
XES_TRACE = [1, 1, 2, 2]
ORDER_1, SENT_1, ORDER_10, SENT_10 = XES
ORDER_THEN_SENT = 'PATTERN "Order placed for item #1"; "Item #1 sent"'
ORDER_THEN_ORDER = 'PATTERN "Order placed for item #1"; "Order placed for item #10"'


def test_thesis_5_1_3_xes_excerpt_in_timestamp_order() -> None:
    # Line 667: "the timestamp of an order for item #1 (2021-01-01) is not temporally followed by
    # item #1 being sent (2021-01-05), but is instead followed by an order for item #10
    # (2021-01-02). We therefore ... order the events according to increasing timestamps."
    # The stream is ordered by (ts, id), which is that pre-processing.
    assert exact(ORDER_THEN_SENT, XES, STRICT, ts=XES_DAY, types=XES) == []
    assert exact(ORDER_THEN_ORDER, XES, STRICT, ts=XES_DAY, types=XES) == [(ORDER_1, ORDER_10)]
    assert exact(ORDER_THEN_SENT, XES, NEXT, ts=XES_DAY, types=XES) == [(ORDER_1, SENT_1)]
    # The same over the sketch of the ordered stream, one event per leaf (Approach 1, line 671).
    in_time = [XES[i] for i in np.argsort(XES_DAY)]
    assert in_time == [ORDER_1, ORDER_10, SENT_1, SENT_10]
    tree = sketch_tree(in_time, C=1, types=in_time)
    for membership in ("twin", "bloom"):
        assert event_matches(ORDER_THEN_SENT, tree, in_time, STRICT, membership) == []
        assert event_matches(ORDER_THEN_ORDER, tree, in_time, STRICT, membership) == \
            [(ORDER_1, ORDER_10)]
        assert event_matches(ORDER_THEN_SENT, tree, in_time, NEXT, membership) == \
            [(ORDER_1, SENT_1)]


def test_thesis_5_1_3_per_trace_the_exact_solution_sees_no_cross_trace_sequence() -> None:
    # Line 637: [25] detects sequences inside one trace only: "if an event A occurred in trace_0
    # and an event B occurred in trace_1, then they would not be able to detect the sequence
    # SEQ(A, B)". Each trace on its own (our key), the order of item #1 is directly followed by
    # its dispatch, and no trace holds both orders.
    for trace in (1, 2):
        mine = [i for i, t in enumerate(XES_TRACE) if t == trace]
        labels = [XES[i] for i in mine]
        days = [XES_DAY[i] for i in mine]
        strict = exact(ORDER_THEN_SENT, labels, STRICT, ts=days, types=labels)
        assert strict == ([(ORDER_1, SENT_1)] if trace == 1 else [])
        assert exact(ORDER_THEN_ORDER, labels, NEXT, ts=days, types=labels) == []


def test_thesis_5_1_3_a_trace_inside_one_leaf_is_not_detected() -> None:
    # Line 637: read as the file is (each trace's events together) with traces shorter than a
    # leaf, "we cannot detect any of the pattern matches [25] can detect". With C = 2 each
    # trace of the excerpt is one leaf: order #1 -> item #1 sent is inside leaf 0.
    tree = sketch_tree(XES, C=2, types=XES)
    for policy in (STRICT, NEXT, ANY):
        assert leaf_matches(ORDER_THEN_SENT, tree, policy, "bloom") == []
        assert leaf_matches(ORDER_THEN_SENT, tree, policy, "twin") == []
    # Between the traces (leaf 0 to leaf 1) the sketch does see a sequence.
    assert leaf_matches(ORDER_THEN_ORDER, tree, STRICT) == [(0, 3, (0, 1))]


# =============================================================================================
# FAEM, Fig. 3 (lines 160-172): AND(G, M+) over m1 m2 g3 g4 m5 g6 m7 within 5 events
# =============================================================================================

FIG3 = "m1 m2 g3 g4 m5 g6 m7".split()
FIG3_QUERY = "PATTERN AND(G, M+) WITHIN 5 EVENTS"

# The parent buffer G & M+ after each event, as the walk-through fills it:
FIG3_BUFFERS = [
    ("m1", set()),                                     # line 160: "G is empty ... no matching"
    ("m2", set()),                                     # line 160: "G is still empty"
    ("g3", {"m1m2g3"}),                                # line 168: "generating m1 m2 g3"
    ("g4", {"m1m2g3", "m1m2g4"}),                      # line 168: "the same scenario ... g4"
    ("m5", {"m1m2g3", "m1m2g4", "g3m5", "g4m5"}),      # line 168: g3m5, "similarly g4m5"
    ("g6", {"m1m2g3", "m1m2g4", "g3m5", "g4m5",        # line 172: m1 out of the window,
            "m2m5g6"}),                                #   "m2 and m5 are matched with g6"
    ("m7", {"m1m2g3", "m1m2g4", "m2m5g6",              # line 172: g3m5 -> g3m5m7,
            "g3m5m7", "g4m5m7", "g6m7"}),              #   g4m5 -> g4m5m7, and g6m7
]


@pytest.mark.parametrize(("last", "buffer"), FIG3_BUFFERS, ids=[e for e, _ in FIG3_BUFFERS])
def test_faem_fig_3_buffer_after_each_event(last: str, buffer: set) -> None:
    # The composites of the stream up to ``last``: a composite grown in place (g3m5 -> g3m5m7)
    # is the new one; the others stay.
    prefix = FIG3[: FIG3.index(last) + 1]
    found = exact(FIG3_QUERY, prefix, GROUPED)
    assert {"".join(m) for m in found} == buffer and len(found) == len(buffer)


# =============================================================================================
# FAEM, Fig. 2 (lines 156-158, 174): a conjunction with a closure is the union of both orders
# =============================================================================================

def test_faem_fig_2_conjunction_is_the_union_of_both_orders_on_fig_3s_stream() -> None:
    # (A+ & B) = (A+; B) U (B; A+), with G & M+ on Fig. 3's stream: Algorithm 1 (M+ on the
    # left) gives m1m2g3, m1m2g4, m2m5g6; Algorithm 2 (M+ on the right) gives g3m5m7, g4m5m7,
    # g6m7 (line 174: "union of algorithm 1 and 2 generates results").
    left = ["m1m2g3", "m1m2g4", "m2m5g6"]
    right = ["g3m5m7", "g4m5m7", "g6m7"]
    assert ["".join(m) for m in exact("PATTERN M+; G WITHIN 5 EVENTS", FIG3, GROUPED)] == left
    assert ["".join(m) for m in exact("PATTERN G; M+ WITHIN 5 EVENTS", FIG3, GROUPED)] == right
    both = ["".join(m) for m in exact(FIG3_QUERY, FIG3, GROUPED)]
    assert sorted(both) == sorted(left + right)


def test_faem_fig_2_star_and_num_conjunctions_on_fig_3s_stream() -> None:
    # Line 158: (A* & B) = (A*; B) U (B; A*) and (A[num] & B) = (A[num]; B) U (B; A[num]).
    # M*: every G has M events on both sides, so no G stands alone (Algorithm 1, lines 10-11,
    # inserts a lone G only when its group is empty): the six composites of M+.
    star = ["".join(m) for m in exact("PATTERN AND(G, M*) WITHIN 5 EVENTS", FIG3, GROUPED)]
    assert sorted(star) == sorted(["m1m2g3", "m1m2g4", "m2m5g6", "g3m5m7", "g4m5m7", "g6m7"])
    # M[2]: every 2 of each group; g6's right group holds m7 only, fewer than num, so it is
    # dropped (line 265: "in case of finding less than num matched the composite event is
    # ignored").
    num = ["".join(m) for m in exact("PATTERN AND(G, M[2]) WITHIN 5 EVENTS", FIG3, GROUPED)]
    assert sorted(num) == sorted(["m1m2g3", "m1m2g4", "m2m5g6", "g3m5m7", "g4m5m7"])


# =============================================================================================
# FAEM, Fig. 4 and Algorithm 3 (lines 181-192, 254): Query 3 with Microsoft[3]
# =============================================================================================

# A = Google, B = Microsoft, C = Del, D = Intel (line 181); the events the text names, with
# their subscripts as timestamps. The text gives no values: these make d12 invalidate b3 only
# (Intel.value > Microsoft.value fails for b3), as line 181 says.
FIG4 = "a2 b3 b4 b6 b7 b8 b9 c10 d12".split()
FIG4_TS = [2, 3, 4, 6, 7, 8, 9, 10, 12]
FIG4_VALUE = [1.0, 50.0, 5.0, 6.0, 7.0, 8.0, 9.0, 1.0, 20.0]
FIG4_QUERY = "PATTERN A; B[3]; C; D WHERE D.value > B.value WITHIN 200 UNITS"
# Every 3 of the group b4 b6 b7 b8 b9 between a2 and c10 d12 (line 183: "all possible composite
# events"), in match_id order; the first two are the ones line 191 and line 192 generate first.
FIG4_ANSWER = [
    ("a2", "b4", "b6", "b7", "c10", "d12"), ("a2", "b4", "b6", "b8", "c10", "d12"),
    ("a2", "b4", "b6", "b9", "c10", "d12"), ("a2", "b4", "b7", "b8", "c10", "d12"),
    ("a2", "b4", "b7", "b9", "c10", "d12"), ("a2", "b4", "b8", "b9", "c10", "d12"),
    ("a2", "b6", "b7", "b8", "c10", "d12"), ("a2", "b6", "b7", "b9", "c10", "d12"),
    ("a2", "b6", "b8", "b9", "c10", "d12"), ("a2", "b7", "b8", "b9", "c10", "d12")]


@pytest.mark.parametrize("policy", [GROUPED, ANY])
def test_faem_fig_4_kleene_num_every_three_under_every_plan(policy: str) -> None:
    # Grouped: Algorithm 3's combinations of the group; any-match: every 3 events that fit,
    # the same set (docs/semantics.md). Plans change the work, never the answer (line 321's
    # plans below, with each grouping of the closure, including late combination).
    assert FIG4_ANSWER[0] == tuple("a2 b4 b6 b7 c10 d12".split())  # line 191
    assert FIG4_ANSWER[1] == tuple("a2 b4 b6 b8 c10 d12".split())  # line 192
    for plan in (None, *PLAN_KINDS):
        assert exact(FIG4_QUERY, FIG4, policy, ts=FIG4_TS, plan=plan, value=FIG4_VALUE) == \
            FIG4_ANSWER, plan


def test_faem_fig_4_the_same_closure_written_plus_is_the_whole_group() -> None:
    # Line 179 and 187: during the process kleene num "is considered as kleene plus": the
    # group before the combination step is a2 b4 b6 b7 b8 b9 c10 d12 (line 189), b3 removed.
    assert exact("PATTERN A; B+; C; D WHERE D.value > B.value WITHIN 200 UNITS", FIG4, GROUPED,
                 ts=FIG4_TS, value=FIG4_VALUE) == \
        [tuple("a2 b4 b6 b7 b8 b9 c10 d12".split())]


def test_faem_line_321_the_four_plans_of_a_pattern_of_length_four() -> None:
    # "For a Pattern of a query with the length of 4 as G; M; D; I, there are several plans
    # ... Left, Right, Bushy and Inner a ((G; M); D); I, (G; (M; (D; I))), ((G; M); (D; I))
    # and (G; ((M; D); I))". Inner starts from the cheapest adjacent pair, here (M; D).
    g, m, d, i = Unit(0), Unit(1), Unit(2), Unit(3)
    assert build_plan("left-deep", 4) == Join(Join(Join(g, m), d), i)
    assert build_plan("right-deep", 4) == Join(g, Join(m, Join(d, i)))
    assert build_plan("bushy", 4) == Join(Join(g, m), Join(d, i))
    assert build_plan("inner", 4, pair_sizes=[9.0, 1.0, 5.0], unit_sizes=[3.0] * 4) == \
        Join(g, Join(Join(m, d), i))


# =============================================================================================
# FAEM, Fig. 5 (line 286): ZStream drops the whole composite, FAEM only the unmatched events
# =============================================================================================

# g^12_2; m^16_3; m^12_6; m^13_7; d^18_8 and i^11_9: superscript value, subscript timestamp.
FIG5 = "g2 m3 m6 m7 d8 i9".split()
FIG5_TS = [2, 3, 6, 7, 8, 9]
FIG5_VALUE = [12.0, 16.0, 12.0, 13.0, 18.0, 11.0]
FIG5_QUERY = "PATTERN G; M*; D; I WHERE I.value > M.value WITHIN 200 UNITS"  # Query 3, line 73


def test_faem_fig_5_unmatched_closure_events_leave_the_composite_not_the_match() -> None:
    # i9 (11) is below every Microsoft value (16, 12, 13): all three leave the closure, and
    # M* may be empty, so the composite g2 d8 i9 remains where ZStream "removes the entire
    # composite event". (tests/cep/match/test_grouped.py changes i to 14 so that one M stays.)
    for policy in (GROUPED, ANY):
        assert exact(FIG5_QUERY, FIG5, policy, ts=FIG5_TS, value=FIG5_VALUE) == \
            [("g2", "d8", "i9")], policy
    # Our skip-till-next-match is ZStream's answer here: its run takes m3 m6 m7 into the closure
    # before i9 is seen (conditions are checked on the run's prefix, docs/semantics.md
    # decision 3), and the run fails at i9.
    assert exact(FIG5_QUERY, FIG5, NEXT, ts=FIG5_TS, value=FIG5_VALUE) == []
