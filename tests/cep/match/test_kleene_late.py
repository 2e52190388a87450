"""Late combination of Kleene closures with a specified size (``late.py``, ``any_match.py``).

Hand-derived vectors on one small stream under every plan kind (late combination forced and
chosen), the index tables of combinations, when late combination applies and how a forced
``late`` falls back, mixes of groupings per closure against the oracle, the cost model's choice,
limits checked before anything is materialised, and ``explain``. The property tests of
``test_match_oracle.py`` run every template under ``match_cases.PLANS``, which forces ``late``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from match_cases import GROUPINGS, PLANS, TREES, random_stream

from cep.match import EventStream, MatchLimitError, MatchLimits, compile_query, explain, find_matches
from cep.match.columnar.arrays import assemble
from cep.match.columnar.data import StreamData
from cep.match.run.any_match import AnyMatch
from cep.match.plan.late import (combination_sums, combination_table, combination_total,
                            expand_combinations, late_blocker)
from cep.match.plan.units import normal_grouping, resolve_grouping, units_of
from cep.match.result import Match
from cep.oracles import oracle_matches

ANY = "skip-till-any-match"
STRICT = "strict-contiguity"

# pos:   0  1  2  3  4  5  6  7
# type:  A  B  B  D  B  C  B  C
# v:     0  1  3  0  2  1  0  2
# w:     0  0  1  0  0  0  0  1
TYPES = list("ABBDBCBC")
V = [0, 1, 3, 0, 2, 1, 0, 2]
W = [0, 0, 1, 0, 0, 0, 0, 1]


def stream() -> EventStream:
    return EventStream.from_columns(ids=range(8), ts=range(8), types=TYPES, attrs={"v": V, "w": W})


def positions(text: str, policy: str = ANY, plan: str | None = None) -> set[tuple[int, ...]]:
    cq = compile_query(text, policy=policy)
    return {m.positions for m in find_matches(cq, stream(), plan=plan).to_matches()}


def with_closure(subsets: list[tuple[int, ...]], end: int) -> set[tuple[int, ...]]:
    """Matches ``(0, *subset, end)``: A at 0, the closure, C at ``end``."""
    return {(0, *s, end) for s in subsets}


def pairs(events: tuple[int, ...]) -> list[tuple[int, ...]]:
    return list(itertools.combinations(events, 2))


def subsets(events: tuple[int, ...], sizes: range) -> list[tuple[int, ...]]:
    return [s for r in sizes for s in itertools.combinations(events, r)]


# Derived by hand from the stream above (docs/semantics.md, skip-till-any-match): the B events
# are 1, 2, 4, 6; before C at 5 lie B 1, 2, 4 and before C at 7 all four.
VECTORS = [
    # kleene-num: every 2-combination of the B events between A and each C
    ("PATTERN A; B{2}; C", with_closure(pairs((1, 2, 4)), 5) | with_closure(pairs((1, 2, 4, 6)), 7)),
    # a filter (into B's buffer): B 6 has v = 0; every size 1..3
    ("PATTERN A; B{1,3}; C WHERE B.v > 0",
     with_closure(subsets((1, 2, 4), range(1, 4)), 5)
     | with_closure(subsets((1, 2, 4), range(1, 4)), 7)),
    # a condition on single iterations and the right neighbour: v >= C.v; C 5 has v 1 (B 1, 2,
    # 4 pass), C 7 has v 2 (B 2 and 4 pass)
    ("PATTERN A; B[2]; C WHERE B.v >= C.v", with_closure(pairs((1, 2, 4)), 5) | {(0, 2, 4, 7)}),
    # two conditions per iteration: v <= C.v and within 6 units of C: for C 5 only B 1 (too
    # few), for C 7 B 4 and 6 (B 1 is 6 units away)
    ("PATTERN A; B{2}; C WHERE B.v <= C.v AND t(C) - t(B) < 6 UNITS", {(0, 4, 6, 7)}),
    # no D between the last B and C: the last B is after D at 3
    ("PATTERN A; B{2}; NOT(D); C", {(0, 1, 4, 5), (0, 2, 4, 5)}
     | with_closure([(1, 4), (1, 6), (2, 4), (2, 6), (4, 6)], 7)),
    # no D between A and the first B: the first B is before D at 3
    ("PATTERN A; NOT(D); B{2}; C", with_closure(pairs((1, 2, 4)), 5)
     | with_closure([(1, 2), (1, 4), (1, 6), (2, 4), (2, 6)], 7)),
    # [w]: every bound event has A's w = 0: B 1, 4, 6 and C 5
    ("PATTERN A; B{2}; C WHERE [w]", {(0, 1, 4, 5)}),
    # the window: only C at 5 is within 6 units of A
    ("PATTERN A; B{2}; C WITHIN 6 UNITS", with_closure(pairs((1, 2, 4)), 5)),
    # a join variable: every B shares A's w (B 1, 4, 6)
    ("PATTERN A; B{2}; C WHERE A.w = $x AND B.w = $x",
     {(0, 1, 4, 5)} | with_closure(pairs((1, 4, 6)), 7)),
    # B? is B{1,1}: one B between A and C
    ("PATTERN A; B?; C", {(0, 5), (0, 7)} | with_closure([(1,), (2,), (4,)], 5)
     | with_closure([(1,), (2,), (4,), (6,)], 7)),
]


@pytest.mark.parametrize("plan", (None,) + PLANS)
@pytest.mark.parametrize(("text", "expected"), VECTORS)
def test_late_hand_derived_vectors(text: str, expected: set, plan: str | None) -> None:
    assert positions(text, plan=plan) == expected
    assert {m.positions for m in oracle_matches(text, stream(), policy=ANY)} == expected


def test_late_names_iterations_in_position_order() -> None:
    cq = compile_query("PATTERN A; B{2}; C WITHIN 6 UNITS", policy=ANY)
    got = find_matches(cq, stream(), plan="bushy:late").to_matches()
    assert got[0] == Match((0, 1, 2, 5), ("A", "B[1]", "B[2]", "C"))


def test_late_combination_tables() -> None:
    for count in range(1, 8):
        for r in range(1, count + 1):
            table = combination_table(count, r)
            assert table.shape == (math.comb(count, r), r)
            assert {tuple(row) for row in table.tolist()} == set(itertools.combinations(range(count), r))
            assert (np.diff(table, axis=1) > 0).all()
            # colex order: sorted by the largest element first, so a smaller count is a prefix
            assert [tuple(reversed(row)) for row in table.tolist()] == \
                sorted(tuple(reversed(row)) for row in table.tolist())
            for smaller in range(r, count):
                assert combination_table(count, r)[:math.comb(smaller, r)].tolist() == \
                    combination_table(smaller, r).tolist()


def test_late_expand_combinations_and_totals() -> None:
    counts = np.array([4, 0, 2, 3])
    offsets = np.array([0, 4, 4, 6])
    flat = np.array([10, 11, 12, 13, 20, 21, 30, 31, 32])
    rows, combos = expand_combinations(counts, offsets, flat, 2)
    got = {(int(row), tuple(c)) for row, c in zip(rows, combos.tolist())}
    expected = {(0, c) for c in itertools.combinations((10, 11, 12, 13), 2)}
    expected |= {(2, (20, 21))} | {(3, c) for c in itertools.combinations((30, 31, 32), 2)}
    assert got == expected and len(rows) == len(expected)
    assert combination_total(counts, 2, 3) == (6 + 4) + 1 + (3 + 1)
    assert combination_sums(counts, 1, 2).tolist() == [10.0, 0.0, 3.0, 6.0]
    # exact beyond int64: the limit check never sees a wrapped-around count
    assert combination_total(np.array([200]), 100, 100) == math.comb(200, 100)


@pytest.mark.parametrize(("text", "policy", "reason"), [
    ("PATTERN A; B{2}; C WHERE B.v > A.v AND C.v > A.v", ANY, None),
    ("PATTERN A; B?; C", ANY, None),
    ("PATTERN A; B+; C", ANY, "no upper bound"),
    ("PATTERN A; B{2,}; C WITHIN 6 UNITS", ANY, "no upper bound"),
    ("PATTERN A; (B | D){2}; C", ANY, "an OR of classes"),
    ("PATTERN A, B{2}, C", ANY, "contiguous"),
    ("PATTERN A; B{2}, C", ANY, "contiguous"),
    ("PATTERN A; B{2}; C", STRICT, "contiguous"),
    ("PATTERN A; B{2}; C WHERE B[i].v > B[i-1].v", ANY, "reads its iterations individually"),
    ("PATTERN A; B{2}; C WHERE B[1].v > 0", ANY, "reads its iterations individually"),
    ("PATTERN A; B{2}; C WHERE avg(B.v) > 1", ANY, "reads its iterations individually"),
    ("PATTERN A; B{1,3}; C WHERE B[i].v >= avg(B[..i-1].v)", ANY, "reads its iterations individually"),
    ("PATTERN B{2}; C", ANY, "a single event on each side"),
    ("PATTERN A; B{2}", ANY, "a single event on each side"),
])
def test_late_applies_only_where_it_can(text: str, policy: str, reason: str | None) -> None:
    shape = compile_query(text, policy=policy).alternatives[0].shapes[0]
    k = min(shape.kleene)
    blocker = late_blocker(shape, k)
    if reason is None:
        assert blocker is None
        assert normal_grouping(shape, "late")[k] == "late"
    else:
        assert blocker is not None and reason in blocker
        grouping, notes = resolve_grouping(shape, "late")
        assert grouping[k] == "left" and f"fell back from late to left: {blocker}" == notes[k]


def test_late_units_and_a_chain_of_closures() -> None:
    shape = compile_query("PATTERN A; B{2}; C; D{1,2}; E; F+", policy=ANY).alternatives[0].shapes[0]
    assert normal_grouping(shape, "late") == (None, "late", None, "late", None, "left")
    assert units_of(shape, "late") == [(0, 0), (2, 2), (4, 5)]
    # mixed: B late, D right (grown backwards from E)
    assert units_of(shape, {1: "late", 3: "right"}) == [(0, 0), (2, 2), (3, 5)]
    # two closures side by side: neither has an event on both sides
    chain = compile_query("PATTERN A; B{2}; D{2}; C", policy=ANY).alternatives[0].shapes[0]
    assert normal_grouping(chain, "late") == (None, "left", "left", None)


@pytest.mark.parametrize("policy", [ANY, STRICT])
@pytest.mark.parametrize("text", [
    "PATTERN A; B{1,2}; C; D{2}; A WHERE D.v > B.v WITHIN 9 UNITS",
    "PATTERN B*; C; D{1,2}; A; B{2}; C WITHIN 9 UNITS",
    "PATTERN A; B{2}; NOT(D); C+; A WHERE C.v > B.v WITHIN 8 UNITS",
    "PATTERN A; B[2]; C; D{0,2}; A WHERE [w]",
])
def test_late_every_mix_per_closure(text: str, policy: str) -> None:
    # Every closure grouped each way on its own, every tree: per shape the same matches as with
    # every closure grouped left, and their union is the oracle's answer.
    cq = compile_query(text, policy=policy)
    for seed in range(4):
        s = random_stream(seed * 13 + 5, n=13)
        data = StreamData(s, cq.normal.window)
        union: set[Match] = set()
        for alt in cq.alternatives:
            for shape in alt.shapes:
                reference = _shape_matches(cq, shape, data, "left", "left-deep")
                union |= reference
                kleene = sorted(shape.kleene)
                for choice in itertools.product(GROUPINGS, repeat=len(kleene)):
                    for tree in TREES:
                        got = _shape_matches(cq, shape, data, dict(zip(kleene, choice)), tree)
                        assert got == reference, f"{text} [{policy}] {choice} {tree} seed {seed}"
        assert union == set(oracle_matches(text, s, policy=policy))


def _shape_matches(cq, shape, data, grouping, kind: str) -> set[Match]:
    matcher = AnyMatch(cq, shape, data, grouping=grouping)
    blocks = matcher.run(matcher.plan(kind))
    return set(assemble([(b.pos, b.variables(shape.kleene)) for b in blocks]).to_matches())


def _blocks(pattern: str, repeats: int) -> EventStream:
    """``pattern`` repeated ``repeats`` times, timestamps = positions, v = position % 5."""
    types = list(pattern) * repeats
    n = len(types)
    return EventStream.from_columns(ids=range(n), ts=range(n), types=types,
                                    attrs={"v": np.arange(n) % 5})


def _matcher(text: str, s: EventStream) -> AnyMatch:
    cq = compile_query(text, policy=ANY)
    return AnyMatch(cq, cq.alternatives[0].shapes[0], StreamData(s, cq.normal.window))


# A dense closure between rare neighbours: every 20 events one A, six B, one C, twelve D.
DENSE_BETWEEN_RARE = "ABBBBBBCDDDDDDDDDDDD"


def test_late_cost_model_picks_late_for_a_dense_closure_between_rare_neighbours() -> None:
    s = _blocks(DENSE_BETWEEN_RARE, 40)
    m = _matcher("PATTERN A; B{2}; C WITHIN 10 UNITS", s)
    assert m.grouping == (None, "late", None)
    (choice,) = m.choices
    # each A reaches one C within the window: 40 pairs of 15 combinations each; round by round
    # also builds the 6 single B after each A (or before each C)
    assert choice.late_rows == pytest.approx(40 * (1 + 15))
    assert choice.round_rows == pytest.approx((40 * (6 + 15) + 600, 40 * (6 + 15) + 600))
    assert "late" in choice.reason
    assert m.units == [(0, 0), (2, 2)]
    cq = compile_query("PATTERN A; B{2}; C WITHIN 10 UNITS", policy=ANY)
    chosen = find_matches(cq, s).to_matches()
    assert len(chosen) == 40 * 15
    for plan in PLANS:
        assert find_matches(cq, s, plan=plan).to_matches() == chosen


def test_late_cost_model_keeps_rounds_for_a_rare_closure_between_dense_neighbours() -> None:
    # A and C alternate, two B every 40 events: the neighbour pairs outnumber the closures.
    pattern = "AC" * 19 + "BB"
    s = _blocks(pattern, 10)
    m = _matcher("PATTERN A; B{2}; C WITHIN 50 UNITS", s)
    (choice,) = m.choices
    assert choice.late_rows is not None and choice.round_rows is not None
    assert choice.grouping in ("left", "right")
    assert "builds fewer rows than combining it late" in choice.reason
    cq = compile_query("PATTERN A; B{2}; C WITHIN 50 UNITS", policy=ANY)
    chosen = find_matches(cq, s).to_matches()
    assert chosen == find_matches(cq, s, plan="left-deep:late").to_matches()


def test_late_cost_model_on_small_partitions_and_other_rules() -> None:
    # below SMALL_PARTITION the late estimate counts the whole partition
    m = _matcher("PATTERN A; B{2}; C WITHIN 10 UNITS", _blocks(DENSE_BETWEEN_RARE, 5))
    assert m.grouping == (None, "late", None)
    # late does not apply: the old rules decide
    m = _matcher("PATTERN A; B{2}; C WHERE B[i].v > B[i-1].v WITHIN 10 UNITS",
                 _blocks(DENSE_BETWEEN_RARE, 40))
    assert m.grouping[1] in ("left", "right") and m.choices[0].late_rows is None
    # a neighbour missing from the sample: no estimate, no late
    m = _matcher("PATTERN A; B{2}; C WITHIN 10 UNITS", _blocks("ABBBD", 40))
    assert m.choices[0].late_rows is None


def test_late_limits_are_checked_before_the_combinations_exist() -> None:
    n = 62
    s = EventStream.from_columns(ids=range(n), ts=range(n), types=["A"] + ["B"] * (n - 2) + ["C"])
    # comb(60, 10) ~ 7.5e10 combinations: raising must not need them in memory
    cq = compile_query("PATTERN A; B{10}; C", policy=ANY)
    with pytest.raises(MatchLimitError, match="combining B late would create 75394027566 partial"):
        find_matches(cq, s, plan="bushy:late")
    cq = compile_query("PATTERN A; B{3}; C", policy=ANY, limits=MatchLimits(max_partial_matches=1000))
    with pytest.raises(MatchLimitError, match="max_partial_matches=1000"):
        find_matches(cq, s, plan="left-deep:late")
    cq = compile_query("PATTERN A; B{1,8}; C", policy=ANY, limits=MatchLimits(max_kleene_iterations=5))
    with pytest.raises(MatchLimitError, match="max_kleene_iterations=5"):
        find_matches(cq, s, plan="left-deep:late")
    # within the limits, exactly comb(60, 3) matches
    cq = compile_query("PATTERN A; B{3}; C", policy=ANY)
    assert len(find_matches(cq, s, plan="left-deep:late")) == math.comb(60, 3)


def test_late_in_explain() -> None:
    s = _blocks(DENSE_BETWEEN_RARE, 40)
    cq = compile_query("PATTERN A; B{2}; C WITHIN 10 UNITS", policy=ANY)
    text = explain(cq, s)
    assert ("grouping B{2,2}: late (combining it late between its neighbours builds no more rows "
            "than growing it left round by round") in text
    assert "estimated rows built: late 640, round by round left 1.44e+03, right 1.44e+03" in text
    assert "units: A | C; combined late: B{2,2} between A and C" in text
    assert "chosen plan: left-deep SEQ(A, [B{2,2}], C)" in text
    forced = explain(cq, s, plan="right-deep:late")
    assert "grouping B{2,2}: late (forced right-deep:late)" in forced
    assert "forced plan: right-deep:late SEQ(A, [B{2,2}], C)" in forced
    # a forced late that does not apply says why it fell back, with or without a stream
    cq = compile_query("PATTERN A; B{2}; C WHERE B[i].v > B[i-1].v", policy=ANY)
    for st in (s, None):
        text = explain(cq, st, plan="bushy:late")
        assert ("grouping B{2,2}: left (forced bushy:late; fell back from late to left: "
                "B[i].v > B[i-1].v reads its iterations individually)") in text
        assert "units: A B{2,2}> | C" in text
    with pytest.raises(ValueError, match="unknown plan"):
        explain(cq, s, plan="bushy:early")


def test_late_forced_on_strict_contiguity_falls_back() -> None:
    s = EventStream.from_columns(ids=range(6), ts=range(6), types=list("ABBCBC"))
    cq = compile_query("PATTERN A; B{2}; C", policy=STRICT)
    for plan in ("left-deep:late", "inner:late"):
        assert [m.positions for m in find_matches(cq, s, plan=plan).to_matches()] == [(0, 1, 2, 3)]
    text = explain(cq, s, plan="bushy:late")
    assert "fell back from late to left: its iterations are contiguous" in text


def _algorithm_3(n: int, r: int, merge_each_round: bool) -> set[tuple[int, ...]]:
    """FAEM's Algorithm 3 (seed 001, "Kleene num") over kleene events ``0..n-1``, as its text
    describes it: the first ``r`` events; then per new event ``i``, (a) every kept composite
    whose last event is ``i-1`` copied with ``i`` in its place (lines 18-24), and (b) every
    ``r-2`` of the first ``i-1`` events followed by ``i-1, i`` (lines 28-32, the second set).
    ``merge_each_round``: the second set joins the buffer (a) reads before the next event
    (the MergeJoinSort into the final buffer); otherwise (a) reads the first set only."""
    first = [tuple(range(r))]
    second: list[tuple[int, ...]] = []
    for i in range(r, n):
        readable = first + second if merge_each_round else first
        first += [c[:-1] + (i,) for c in readable if c[-1] == i - 1]
        second += [c + (i - 1, i) for c in itertools.combinations(range(i - 1), r - 2)]
    return set(first) | set(second)


def test_algorithm_3_against_the_combinations_late_combination_uses() -> None:
    # Fig. 4: five kleene events b4 b6 b7 b8 b9 (0..4), num = 3.
    ours = {tuple(row) for row in combination_table(5, 3).tolist()}
    assert len(ours) == 10
    assert _algorithm_3(5, 3, merge_each_round=True) == ours
    # Read literally (line 20 reads FirstSetBuff only) it misses b4 b7 b9 and b6 b7 b9: the
    # paper's combination step must merge its second set before the next event (docs).
    assert ours - _algorithm_3(5, 3, merge_each_round=False) == {(0, 2, 4), (1, 2, 4)}
    for n, r in [(7, 3), (8, 4), (6, 2), (9, 5)]:
        assert _algorithm_3(n, r, True) == set(itertools.combinations(range(n), r))
