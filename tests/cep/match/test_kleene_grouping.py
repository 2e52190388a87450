"""Kleene closures grouped with their left or right neighbour (``plans.py``, ``any_match.py``).

Hand-derived vectors on one small stream under every tree kind with every grouping, mixed
per-closure groupings against the left-grouped evaluation, the cost model's choice, limits and
the grouping's place in ``explain``. The property tests in ``test_match_oracle.py`` run every
template under every plan kind of ``match_cases.PLANS``, which includes every grouping (late
combination has its own tests in ``test_kleene_late.py``).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from match_cases import GROUPINGS, PLANS, TREES, random_stream

from cep.match import EventStream, MatchLimitError, MatchLimits, compile_query, explain, find_matches
from cep.match.columnar.arrays import assemble
from cep.match.columnar.data import StreamData
from cep.match.plan.units import normal_grouping, units_of
from cep.match.result import Match
from cep.match.run.any_match import AnyMatch
from cep.oracles import oracle_matches

ANY = "skip-till-any-match"
STRICT = "strict-contiguity"

# pos:   0  1  2  3  4  5
# type:  A  B  B  C  B  C
# v:     0  1  3  0  2  0
TYPES = list("ABBCBC")
VALUES = [0, 1, 3, 0, 2, 0]


def small_stream() -> EventStream:
    return EventStream.from_columns(ids=range(6), ts=range(6), types=TYPES, attrs={"v": VALUES})


def positions(text: str, policy: str, plan: str | None) -> set[tuple[int, ...]]:
    cq = compile_query(text, policy=policy)
    return {m.positions for m in find_matches(cq, small_stream(), plan=plan).to_matches()}


# Derived by hand from the stream above (docs/semantics.md): under skip-till-any-match a closure
# is any non-empty increasing choice of B events between its neighbours; under strict
# contiguity the bound events are consecutive positions.
VECTORS = [
    ("PATTERN A; B+; C", ANY, {
        (0, 1, 3), (0, 2, 3), (0, 1, 2, 3),
        (0, 1, 5), (0, 2, 5), (0, 4, 5), (0, 1, 2, 5), (0, 1, 4, 5), (0, 2, 4, 5),
        (0, 1, 2, 4, 5)}),
    ("PATTERN A; B+; C", STRICT, {(0, 1, 2, 3)}),
    # kleene-num: every 2-combination of the B events before each C
    ("PATTERN A; B{2}; C", ANY, {(0, 1, 2, 3), (0, 1, 2, 5), (0, 1, 4, 5), (0, 2, 4, 5)}),
    ("PATTERN A; B{2}; C", STRICT, {(0, 1, 2, 3)}),
    ("PATTERN B+; C", ANY, {
        (1, 3), (2, 3), (1, 2, 3),
        (1, 5), (2, 5), (4, 5), (1, 2, 5), (1, 4, 5), (2, 4, 5), (1, 2, 4, 5)}),
    ("PATTERN B+; C", STRICT, {(2, 3), (1, 2, 3), (4, 5)}),
    # rising v: 1 < 3 (positions 1, 2) and 1 < 2 (positions 1, 4); 3 > 2 fails
    ("PATTERN A; B*; C WHERE B[i].v > B[i-1].v", ANY, {
        (0, 3), (0, 5),
        (0, 1, 3), (0, 2, 3), (0, 1, 2, 3),
        (0, 1, 5), (0, 2, 5), (0, 4, 5), (0, 1, 2, 5), (0, 1, 4, 5)}),
    ("PATTERN A; B*; C WHERE B[i].v > B[i-1].v", STRICT, {(0, 1, 2, 3)}),
    # falling v: only 3 > 2 (positions 2, 4)
    ("PATTERN B+; C WHERE B[i].v < B[i-1].v", ANY, {
        (1, 3), (2, 3), (1, 5), (2, 5), (4, 5), (2, 4, 5)}),
    ("PATTERN B+; C WHERE B[i].v < B[i-1].v", STRICT, {(2, 3), (4, 5)}),
    # an aggregate over earlier iterations (checked on complete closures when grown backwards):
    # (1, 2, 4) has 3 >= 1 and 2 >= avg(1, 3); (2, 4) has 2 < 3
    ("PATTERN A; B+; C WHERE B[i].v >= avg(B[..i-1].v)", ANY, {
        (0, 1, 3), (0, 2, 3), (0, 1, 2, 3),
        (0, 1, 5), (0, 2, 5), (0, 4, 5), (0, 1, 2, 5), (0, 1, 4, 5), (0, 1, 2, 4, 5)}),
]


@pytest.mark.parametrize("plan", (None,) + PLANS)
@pytest.mark.parametrize(("text", "policy", "expected"), VECTORS)
def test_kleene_grouping_hand_derived_vectors(text: str, policy: str, expected: set, plan: str | None) -> None:
    assert positions(text, policy, plan) == expected
    assert {m.positions for m in oracle_matches(text, small_stream(), policy=policy)} == expected


def test_kleene_grouping_names_iterations_in_position_order() -> None:
    cq = compile_query("PATTERN A; B+; C", policy=STRICT)
    for plan in ("left-deep:right", "bushy:left"):
        assert find_matches(cq, small_stream(), plan=plan).to_matches() == [
            Match((0, 1, 2, 3), ("A", "B[1]", "B[2]", "C"))]


def test_kleene_grouping_units() -> None:
    shape = compile_query("PATTERN A; B+; C; D*; E+; F", policy=ANY).alternatives[0].shapes[0]
    assert units_of(shape, "left") == [(0, 1), (2, 4), (5, 5)]
    assert units_of(shape, "right") == [(0, 0), (1, 2), (3, 5)]
    # D right needs E right too (else D would be grouped with a closure grouped left): left
    assert normal_grouping(shape, {1: "right", 3: "right"}) == (None, "right", None, "left", "left", None)
    assert units_of(shape, {1: "right", 3: "right"}) == [(0, 0), (1, 4), (5, 5)]
    # a closure that ends the shape has no right neighbour; a leading one grouped left is a unit
    tail = compile_query("PATTERN B+; C; D+", policy=ANY).alternatives[0].shapes[0]
    assert normal_grouping(tail, "right") == ("right", None, "left")
    assert units_of(tail, "left") == [(0, 0), (1, 2)]
    assert units_of(tail, "right") == [(0, 2)]
    with pytest.raises(ValueError, match="unknown grouping"):
        normal_grouping(tail, "up")


def _shape_matches(cq, shape, data, grouping, kind: str) -> set[Match]:
    matcher = AnyMatch(cq, shape, data, grouping=grouping)
    blocks = matcher.run(matcher.plan(kind))
    return set(assemble([(b.pos, b.variables(shape.kleene)) for b in blocks]).to_matches())


@pytest.mark.parametrize("policy", [ANY, STRICT])
@pytest.mark.parametrize("text", [
    "PATTERN A; B*; C*; D",
    "PATTERN A; B+; C+; D WHERE B[i].v > B[i-1].v AND C[i].v <= C[i-1].v",
    "PATTERN B*; C*; D WHERE D.v >= C.v",
    "PATTERN B*; C+; A; D{1,2}; B WITHIN 8 UNITS",
    "PATTERN A; B+; NOT(D); C+; A WHERE C.v > B.v WITHIN 7 UNITS",
])
def test_kleene_grouping_every_mix_per_closure(text: str, policy: str) -> None:
    # Every closure grouped either way on its own, every tree: per shape the same matches as
    # with every closure grouped left, and their union is the oracle's answer.
    cq = compile_query(text, policy=policy)
    for seed in range(4):
        stream = random_stream(seed * 11 + 3, n=13)
        data = StreamData(stream, cq.normal.window)
        union: set[Match] = set()
        for alt in cq.alternatives:
            for shape in alt.shapes:
                reference = _shape_matches(cq, shape, data, "left", "left-deep")
                union |= reference
                kleene = sorted(shape.kleene)
                for choice in itertools.product(GROUPINGS, repeat=len(kleene)):
                    grouping = dict(zip(kleene, choice))
                    for tree in TREES:
                        got = _shape_matches(cq, shape, data, grouping, tree)
                        assert got == reference, f"{text} [{policy}] {grouping} {tree} seed {seed}"
        assert union == set(oracle_matches(text, stream, policy=policy))


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("text", [
    "PATTERN A; B+; C; D+; A WHERE B[i].v >= B[i-1].v AND D.v > C.v WITHIN 9 UNITS",
    "PATTERN B*; C; D{1,2}; A; NOT(B) WITHIN 7 UNITS",
    "PATTERN A, B+, C; D*, A",
])
def test_kleene_grouping_forced_plans_on_longer_patterns(plan: str, text: str) -> None:
    for seed in range(5):
        stream = random_stream(seed + 40, n=14)
        for policy in (ANY, STRICT):
            expected = set(oracle_matches(text, stream, policy=policy))
            got = find_matches(compile_query(text, policy=policy), stream, plan=plan).to_matches()
            assert set(got) == expected, f"{text} [{policy}, {plan}] seed {seed}"


def _skewed(types_before: str, n_before: int, types_after: str, n_after: int) -> EventStream:
    """A stream: ``n_before`` events cycling through ``types_before``, then ``n_after`` through
    ``types_after``."""
    types = [types_before[k % len(types_before)] for k in range(n_before)]
    types += [types_after[k % len(types_after)] for k in range(n_after)]
    n = len(types)
    return EventStream.from_columns(ids=range(n), ts=range(n), types=types,
                                    attrs={"v": np.arange(n) % 5})


def _matcher(text: str, stream: EventStream, policy: str = ANY) -> AnyMatch:
    cq = compile_query(text, policy=policy)
    return AnyMatch(cq, cq.alternatives[0].shapes[0], StreamData(stream, cq.normal.window))


def test_kleene_grouping_cost_model_picks_the_rarer_neighbour() -> None:
    # Many A, many B, two C at the end: grow B+ backwards from the two C.
    rare_right = _skewed("AB", 400, "BC", 4)
    m = _matcher("PATTERN A; B+; C WITHIN 50 UNITS", rare_right)
    assert m.grouping == (None, "right", None)
    assert m.units == [(0, 0), (1, 2)]
    (choice,) = m.choices
    assert choice.right_rows is not None and choice.left_rows is not None
    assert choice.right_rows * 10 < choice.left_rows
    # Two A at the start, then many B and C: grow B+ forwards from the two A.
    rare_left = _skewed("AB", 4, "BC", 400)
    assert _matcher("PATTERN A; B+; C WITHIN 50 UNITS", rare_left).grouping == (None, "left", None)


def test_kleene_grouping_cost_model_other_rules() -> None:
    stream = _skewed("AB", 400, "BC", 4)
    # a leading closure is anchored on the event after it
    assert _matcher("PATTERN B+; C", stream).grouping == ("right", None)
    # an aggregate over earlier iterations prunes only while growing forwards
    m = _matcher("PATTERN A; B+; C WHERE B[i].v >= avg(B[..i-1].v) WITHIN 50 UNITS", stream)
    assert m.grouping == (None, "left", None)
    assert "only while growing forwards" in m.choices[0].reason
    # a closure at the end has nothing to its right
    assert _matcher("PATTERN A; B+ WITHIN 50 UNITS", stream).grouping == (None, "left")
    # forcing overrides the cost model
    cq = compile_query("PATTERN A; B+; C WITHIN 50 UNITS", policy=ANY)
    forced = AnyMatch(cq, cq.alternatives[0].shapes[0], StreamData(stream, None), grouping="left")
    assert forced.grouping == (None, "left", None) and forced.choices == ()


def test_kleene_grouping_chosen_plan_equals_forced_plans() -> None:
    stream = _skewed("AB", 60, "BC", 6)
    cq = compile_query("PATTERN A; B+; C WHERE B[i].v > B[i-1].v WITHIN 8 UNITS", policy=ANY)
    chosen = find_matches(cq, stream).to_matches()
    assert len(chosen) > 0
    for plan in PLANS:
        assert find_matches(cq, stream, plan=plan).to_matches() == chosen


def test_kleene_grouping_in_explain() -> None:
    stream = _skewed("AB", 400, "BC", 4)
    text = explain(compile_query("PATTERN A; B+; C WITHIN 50 UNITS", policy=ANY), stream)
    assert "grouping B{1,}: right (the event after it leaves fewer partial matches" in text
    assert "units: A | B{1,}< C" in text
    text = explain(compile_query("PATTERN A; B+; C WITHIN 50 UNITS", policy=ANY))
    assert "grouping: every Kleene closure left (no stream to estimate on)" in text
    assert "units: A B{1,}> | C" in text


def test_kleene_grouping_limits_hold_when_growing_backwards() -> None:
    n = 24
    types = ["A"] + ["B"] * (n - 2) + ["C"]
    stream = EventStream.from_columns(ids=range(n), ts=range(n), types=types)
    cq = compile_query("PATTERN A; B+; C", policy=ANY, limits=MatchLimits(max_partial_matches=500))
    for plan in ("left-deep:right", "bushy:right"):
        with pytest.raises(MatchLimitError, match="max_partial_matches=500"):
            find_matches(cq, stream, plan=plan)
    cq = compile_query("PATTERN A; B+; C", policy=STRICT, limits=MatchLimits(max_kleene_iterations=5))
    with pytest.raises(MatchLimitError, match="max_kleene_iterations=5"):
        find_matches(cq, stream, plan="left-deep:right")


def test_kleene_grouping_unknown_plan_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown plan"):
        find_matches(compile_query("PATTERN A; B+; C", policy=ANY), small_stream(), plan="bushy:up")


def test_kleene_grouping_bare_tree_runs_over_the_matchers_units() -> None:
    # B{1,3} has the matches of B+ on this stream (at most three B before a C), and every
    # grouping applies to it (late combination needs a bounded size)
    cq = compile_query("PATTERN A; B{1,3}; C", policy=ANY)
    shape = cq.alternatives[0].shapes[0]
    data = StreamData(small_stream(), None)
    for grouping in GROUPINGS:
        matcher = AnyMatch(cq, shape, data, grouping=grouping)
        plan = matcher.plan("right-deep")
        assert plan.grouping == (None, grouping, None) and list(plan.units) == matcher.units
        bare = matcher.run(plan.tree)
        assert {tuple(r) for b in bare for r in b.pos.tolist()} == VECTORS[0][2]


def test_next_match_bound_events_limit_stops_a_quadratic_run() -> None:
    """``A+; B`` under skip-till-next-match: the run from the k-th A binds n - k + 1 A events
    and the B, so n A events bind n(n+1)/2 + n in all, matches or not (issue 21: 10,000 A
    events took minutes and gigabytes before any limit). The limit counts every binding as it
    is made."""
    n = 30
    stream = EventStream.from_columns(ids=range(n + 1), ts=range(n + 1), types=["A"] * n + ["B"])
    bound = n * (n + 1) // 2 + n  # 495
    roomy = compile_query("PATTERN A+; B", policy="skip-till-next-match",
                          limits=MatchLimits(max_bound_events=bound))
    matches = find_matches(roomy, stream).to_matches()
    assert len(matches) == n and sum(len(m.positions) for m in matches) == bound
    tight = compile_query("PATTERN A+; B", policy="skip-till-next-match",
                          limits=MatchLimits(max_bound_events=bound - 1))
    with pytest.raises(MatchLimitError, match=f"max_bound_events={bound - 1}"):
        find_matches(tight, stream)
