"""The brute-force sketch oracle (cep/oracles/sketch_oracle.py) on hand-derived vectors.

The stream used by most vectors (C = 2, ts = 10 * pos), its leaves and their name sets::

    pos    0 1 | 2 3 | 4 5 | 6 7 | 8 9
    name   A x | B x | C A | B C | x B
    leaf   L0  | L1  | L2  | L3  | L4
    set   {A,x}|{B,x}|{A,C}|{B,C}|{B,x}

A record is (pos_start of the first unit, pos_end of the last unit, ts_start, ts_end, node id per
slot); leaf ``j`` has node id ``j``. Every expected answer below was derived by hand from
docs/sketch.md section 4.
"""

from __future__ import annotations

import pytest

from cep.oracles.sketch_oracle import (
    OracleUnit,
    leaf_sets,
    oracle_sketch_events,
    oracle_sketch_exists,
    oracle_sketch_matches,
)
from cep.sketch.query import SketchLimitError

ANY = "skip-till-any-match"
NEXT = "skip-till-next-match"
STRICT = "strict-contiguity"

NAMES = ["A", "x", "B", "x", "C", "A", "B", "C", "x", "B"]
TS = [10 * i for i in range(10)]
LEAVES = leaf_sets(NAMES, TS, 2)

# (query, policy, expected records)
VECTORS = [
    # SEQ(A, B, C): runs from L0 (B in L1, C in L2) and L2 (B in L3, no C after L3).
    ("PATTERN SEQ(A, B, C)", NEXT, [(0, 5, 0, 50, (0, 1, 2))]),
    ("PATTERN SEQ(A, B, C)", STRICT, [(0, 5, 0, 50, (0, 1, 2))]),
    ("PATTERN SEQ(A, B, C)", ANY, [(0, 5, 0, 50, (0, 1, 2)), (0, 7, 0, 70, (0, 1, 3))]),
    # SEQ(A, OR(B, C)): the next unit holding B or C.
    ("PATTERN SEQ(A, OR(B, C))", NEXT, [(0, 3, 0, 30, (0, 1)), (4, 7, 40, 70, (2, 3))]),
    ("PATTERN SEQ(A, OR(B, C))", STRICT, [(0, 3, 0, 30, (0, 1)), (4, 7, 40, 70, (2, 3))]),
    ("PATTERN SEQ(A, OR(B, C))", ANY, [(0, 3, 0, 30, (0, 1)), (0, 5, 0, 50, (0, 2)), (0, 7, 0, 70, (0, 3)),
                                       (0, 9, 0, 90, (0, 4)), (4, 7, 40, 70, (2, 3)), (4, 9, 40, 90, (2, 4))]),
    # SEQ(A, AND(B, C)): B and C each in their first unit after A. Strict: B and C over a gapless
    # run of units starting right after A, any order, sharing allowed: after L0, B in L1 and C in
    # L2; after L2, both in L3, or C in L3 and B in L4 (L4 holds no C, so not B in L3, C in L4).
    ("PATTERN SEQ(A, AND(B, C))", NEXT, [(0, 5, 0, 50, (0, 1, 2)), (4, 7, 40, 70, (2, 3, 3))]),
    ("PATTERN SEQ(A, AND(B, C))", STRICT, [(0, 5, 0, 50, (0, 1, 2)), (4, 7, 40, 70, (2, 3, 3)),
                                           (4, 9, 40, 90, (2, 4, 3))]),
    ("PATTERN SEQ(A, AND(B, C))", ANY, [(0, 5, 0, 50, (0, 1, 2)), (0, 7, 0, 70, (0, 1, 3)),
                                        (0, 7, 0, 70, (0, 3, 2)), (0, 7, 0, 70, (0, 3, 3)),
                                        (0, 9, 0, 90, (0, 4, 2)), (0, 9, 0, 90, (0, 4, 3)),
                                        (4, 7, 40, 70, (2, 3, 3)), (4, 9, 40, 90, (2, 4, 3))]),
    # SEQ(A, NOT(B), C): the run from L0 reaches C in L2 across L1, which holds B.
    ("PATTERN SEQ(A, NOT(B), C)", NEXT, [(4, 7, 40, 70, (2, 3))]),
    ("PATTERN SEQ(A, NOT(B), C)", STRICT, [(4, 7, 40, 70, (2, 3))]),
    ("PATTERN SEQ(A, NOT(B), C)", ANY, [(4, 7, 40, 70, (2, 3))]),
    # AND alone: a run starts at every unit holding B or C. Strict: both in one unit (L3), or
    # one in a unit and the other in the next: B L1 + C L2, C L2 + B L3, C L3 + B L4.
    ("PATTERN AND(B, C)", NEXT, [(2, 5, 20, 50, (1, 2)), (4, 7, 40, 70, (3, 2)), (6, 7, 60, 70, (3, 3))]),
    ("PATTERN AND(B, C)", STRICT, [(2, 5, 20, 50, (1, 2)), (4, 7, 40, 70, (3, 2)), (6, 7, 60, 70, (3, 3)),
                                   (6, 9, 60, 90, (4, 3))]),
    ("PATTERN AND(B, C)", ANY, [(2, 5, 20, 50, (1, 2)), (2, 7, 20, 70, (1, 3)), (4, 7, 40, 70, (3, 2)),
                                (4, 9, 40, 90, (4, 2)), (6, 7, 60, 70, (3, 3)), (6, 9, 60, 90, (4, 3))]),
    # WITHIN (half-open): ts_start(last unit) - ts_end(first unit) < w; L0 -> L2 is 40 - 10 = 30.
    ("PATTERN A; B; C WITHIN 30 UNITS", ANY, []),
    ("PATTERN A; B; C WITHIN 31 UNITS", ANY, [(0, 5, 0, 50, (0, 1, 2))]),
    ("PATTERN A; B; C WITHIN 31 MICROSECONDS", ANY, [(0, 5, 0, 50, (0, 1, 2))]),
    # EVENTS: pos_start(last unit) - pos_end(first unit) < W; L0 -> L2 is 4 - 1 = 3.
    ("PATTERN A; B; C WITHIN 3 EVENTS", ANY, []),
    ("PATTERN A; B; C WITHIN 4 EVENTS", ANY, [(0, 5, 0, 50, (0, 1, 2))]),
    # Trailing NOT: no C in a unit after the last one whose ts_start < ts_start(first unit) + 50.
    # (L0, L1): L2 starts at 40 < 50 and holds C. (L2, L3): L4 starts at 80 < 90 and holds no C.
    ("PATTERN A; B; !C WITHIN 50 UNITS", NEXT, [(4, 7, 40, 70, (2, 3))]),
    ("PATTERN A; B; !C WITHIN 50 UNITS", ANY, [(4, 7, 40, 70, (2, 3)), (4, 9, 40, 90, (2, 4))]),
    # WINDOW keeps the units intersecting it: [5, 9] keeps L2 (positions 4..5), [6, 9] does not.
    ("PATTERN A; B WINDOW [5, 9]", ANY, [(4, 7, 40, 70, (2, 3)), (4, 9, 40, 90, (2, 4))]),
    ("PATTERN A; B WINDOW [6, 9]", ANY, []),
    ("PATTERN A; B WINDOW ['1970-01-01 00:00:00.000050', '1970-01-01 00:00:00.000090']", ANY,
     [(4, 7, 40, 70, (2, 3)), (4, 9, 40, 90, (2, 4))]),
]


@pytest.mark.parametrize(("query", "policy", "expected"), VECTORS)
def test_fixed_vectors(query: str, policy: str, expected: list) -> None:
    assert oracle_sketch_matches(query, LEAVES, policy=policy) == expected
    assert oracle_sketch_exists(query, LEAVES, policy=policy) == bool(expected)
    assert oracle_sketch_events(query, NAMES, TS, 2, policy=policy) == expected


def test_leaf_sets_from_events() -> None:
    assert [(u.pos_start, u.pos_end, u.ts_start, u.ts_end, u.node_id, sorted(u.names)) for u in LEAVES] == [
        (0, 1, 0, 10, 0, ["A", "x"]), (2, 3, 20, 30, 1, ["B", "x"]), (4, 5, 40, 50, 2, ["A", "C"]),
        (6, 7, 60, 70, 3, ["B", "C"]), (8, 9, 80, 90, 4, ["B", "x"])]
    # The open leaf holds the remainder; no events, no leaves.
    assert [(u.pos_start, u.pos_end) for u in leaf_sets("ABCDE", range(5), 3)] == [(0, 2), (3, 4)]
    assert leaf_sets([], [], 3) == []


def test_match_inside_one_leaf_is_not_detected() -> None:
    # Events inside one unit have no known order.
    for policy in (ANY, NEXT, STRICT):
        assert oracle_sketch_events("PATTERN A; B", ["A", "B"], [0, 1], 2, policy=policy) == []
        assert oracle_sketch_events("PATTERN A; B", ["A", "B"], [0, 1], 1, policy=policy) == [(0, 1, 0, 1, (0, 1))]


def test_strict_needs_neighbouring_units() -> None:
    names, ts = ["A", "x", "x", "x", "B", "x"], list(range(6))
    assert oracle_sketch_events("PATTERN A; B", names, ts, 2, policy=STRICT) == []
    assert oracle_sketch_events("PATTERN A; B", names, ts, 2, policy=NEXT) == [(0, 5, 0, 5, (0, 2))]
    assert oracle_sketch_events("PATTERN A; B", names, ts, 3, policy=STRICT) == [(0, 5, 0, 5, (0, 1))]


def test_not_of_or_and_consecutive_nots() -> None:
    # Units: {A} {D} {C} {B}: D and C both lie between A and B.
    units = leaf_sets(["A", "D", "C", "B"], range(4), 1)
    assert oracle_sketch_matches("PATTERN A; !(C | E); B", units) == []
    assert oracle_sketch_matches("PATTERN A; !E; !D; B", units) == []
    assert oracle_sketch_matches("PATTERN A; !E; !F; B", units) == [(0, 3, 0, 3, (0, 3))]


def test_given_units_at_a_higher_level() -> None:
    # A level-1 node (id (1 << 48) | 0) covering L0 and L1, then L2 and L3 as leaves.
    node = (1 << 48) | 0
    units = [OracleUnit(frozenset("ABx"), 0, 3, 0, 30, node), LEAVES[2], LEAVES[3], LEAVES[4]]
    assert oracle_sketch_matches("PATTERN A; C", units, policy=ANY) == [
        (0, 5, 0, 50, (node, 2)), (0, 7, 0, 70, (node, 3)), (4, 7, 40, 70, (2, 3))]
    # A and B in the same (coarse) unit cannot follow each other; B must be in a later unit.
    assert oracle_sketch_matches("PATTERN A; B", units, policy=ANY) == [
        (0, 7, 0, 70, (node, 3)), (0, 9, 0, 90, (node, 4)), (4, 7, 40, 70, (2, 3)), (4, 9, 40, 90, (2, 4))]
    assert oracle_sketch_matches("PATTERN A; B", units, policy=STRICT) == [(4, 7, 40, 70, (2, 3))]


def test_limit() -> None:
    with pytest.raises(SketchLimitError, match="max_candidates=3"):
        oracle_sketch_matches("PATTERN A; B", LEAVES, policy=ANY, max_candidates=3)
