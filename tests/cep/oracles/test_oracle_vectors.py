"""Fixed, hand-computed vectors for the exact-matching oracle (docs/semantics.md).

Each expected answer is written out by hand, with the derivation in a comment; positions are
0-based ranks in (ts, id) order. Where ids differ from positions the test says so.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pytest

from cep.lang import parse_pattern
from cep.match.columnar.stream import EventStream
from cep.match.errors import MatchLimitError
from cep.oracles import oracle_matches

ANY = "skip-till-any-match"
NEXT = "skip-till-next-match"
STRICT = "strict-contiguity"


def stream(types: str | Sequence[str], ts: Sequence[int] | None = None,
           ids: Sequence[int] | None = None, **attrs: Sequence[Any]) -> EventStream:
    """Events with the given types (space separated); ts and id default to the position."""
    kinds = types.split() if isinstance(types, str) else list(types)
    n = len(kinds)
    columns = {k: np.array(v, dtype=object) if any(x is None for x in v) else np.array(v)
               for k, v in attrs.items()}
    return EventStream.from_columns(ids=list(ids) if ids is not None else list(range(n)),
                                    ts=list(ts) if ts is not None else list(range(n)),
                                    types=kinds, attrs=columns)


def positions(query: Any, s: EventStream, policy: str | None = None) -> list[tuple[int, ...]]:
    return [m.positions for m in oracle_matches(query, s, policy=policy)]


def variables(query: Any, s: EventStream, policy: str | None = None) -> list[tuple[tuple[str, int], ...]]:
    return [tuple(zip(m.variables, m.positions)) for m in oracle_matches(query, s, policy=policy)]


# ---------------------------------------------------------------------------------------------
# The thesis example: A1 B1 C1 B2 A2 A3 C2 B3 A4 D1 C3 B4 A5 B5 C4 B6, ts = id = position
# ---------------------------------------------------------------------------------------------

THESIS = stream("A B C B A A C B A D C B A B C B")
A1, B1, C1, B2, A2, A3, C2, B3, A4, D1, C3, B4, A5, B5, C4, B6 = range(16)


def ids_of(query: str, policy: str) -> list[tuple[int, ...]]:
    return [tuple(int(THESIS.ids[p]) for p in m.positions)
            for m in oracle_matches(query, THESIS, policy=policy)]


def test_thesis_strict_contiguity() -> None:
    # Only A directly followed by B: A1 B1 (0, 1) and A5 B5 (12, 13).
    assert ids_of("PATTERN SEQ(A, B)", STRICT) == [(A1, B1), (A5, B5)]


def test_thesis_skip_till_next() -> None:
    # Each A takes the first B after it.
    assert ids_of("PATTERN SEQ(A, B)", NEXT) == [(A1, B1), (A2, B3), (A3, B3), (A4, B4), (A5, B5)]


def test_thesis_skip_till_any() -> None:
    # Every A before every B: A1 x6, A2 x4, A3 x4, A4 x3, A5 x2 = 19 pairs.
    expected = [
        (A1, B1), (A1, B2), (A1, B3), (A1, B4), (A1, B5), (A1, B6),
        (A2, B3), (A2, B4), (A2, B5), (A2, B6),
        (A3, B3), (A3, B4), (A3, B5), (A3, B6),
        (A4, B4), (A4, B5), (A4, B6),
        (A5, B5), (A5, B6),
    ]
    got = ids_of("PATTERN SEQ(A, B)", ANY)
    assert len(got) == 19
    assert got == sorted(expected, key=lambda m: (m[0], m[1]))


# ---------------------------------------------------------------------------------------------
# OR, NOT
# ---------------------------------------------------------------------------------------------

OR_STREAM = stream("A C B D E A B E C E")  # 0 A, 1 C, 2 B, 3 D, 4 E, 5 A, 6 B, 7 E, 8 C, 9 E
OR_QUERY = "PATTERN SEQ(A, OR(B, C), NOT(D), E)"


def test_or_inside_seq_skip_till_next() -> None:
    # Run A0: OR(B, C) takes the first B or C, C1; every E after it (4, 7, 9) has D3 between
    # C1 and it, so no E can fill the last component: the run fails.
    # Run A5: B6, then E7 with nothing between: (5, 6, 7) bound as A, B, E.
    assert variables(OR_QUERY, OR_STREAM, NEXT) == [(("A", 5), ("B", 6), ("E", 7))]


def test_or_inside_seq_skip_till_any() -> None:
    # A0: (C1|B2, E*) all have D3 between; (B6, E7), (B6, E9), (C8, E9) are clean.
    # A5: the same three: (B6, E7), (B6, E9), (C8, E9).
    assert positions(OR_QUERY, OR_STREAM, ANY) == [
        (0, 6, 7), (0, 6, 9), (0, 8, 9), (5, 6, 7), (5, 6, 9), (5, 8, 9)]
    assert variables(OR_QUERY, OR_STREAM, ANY)[2] == (("A", 0), ("C", 8), ("E", 9))


def test_not_between_components() -> None:
    # a0 b1 d2 a3 b4 b5 d6 b7: a0-b1 clean; a0 with b4, b5, b7 has d2 between;
    # a3-b4, a3-b5 clean; a3-b7 has d6 between.
    s = stream("a b d a b b d b")
    assert positions("PATTERN a; NOT(d); b", s, ANY) == [(0, 1), (3, 4), (3, 5)]


def test_not_with_condition_on_negated_alias() -> None:
    # Same stream; v: a0=5, d2=1, a3=0, d6=9. A d violates only when d.v > a.v:
    # d2 (1) never does for a0 (5); d6 (9) does for both a0 and a3.
    # a0: b1, b4, b5 ok; b7 blocked by d6. a3: b4, b5 ok; b7 blocked by d6.
    s = stream("a b d a b b d b", v=[5, 0, 1, 0, 0, 0, 9, 0])
    assert positions("PATTERN a; NOT(d); b WHERE d.v > a.v", s, ANY) == [
        (0, 1), (0, 4), (0, 5), (3, 4), (3, 5)]


def test_not_of_an_or() -> None:
    # a0 b1 D2 b3 a4 E5 b6 a7 b8: NOT(D | E) blocks a0-b3, a0-b6, a0-b8 (D2) and a4-b6,
    # a4-b8 (E5); left: a0-b1 and a7-b8.
    s = stream("a b D b a E b a b")
    assert positions("PATTERN a; NOT(D | E); b", s, ANY) == [(0, 1), (7, 8)]


def test_not_at_the_end_with_within() -> None:
    # ts: a0@0 b1@1 d2@6 a3@7 b4@8 d5@11 b6@13, WITHIN 5 UNITS.
    # (a0, b1): window ok (1 < 5); the window of a0 closes before ts 5, d2@6 is later: match.
    # (a0, b4): 8 >= 5, no. (a3, b4): 1 < 5 but d5@11 is 4 after a3: violated.
    # (a3, b6): 6 >= 5, no.
    s = stream("a b d a b d b", ts=[0, 1, 6, 7, 8, 11, 13])
    query = "PATTERN a; b; NOT(d) WITHIN 5 UNITS"
    assert positions(query, s, ANY) == [(0, 1)]
    assert positions(query, s, NEXT) == [(0, 1)]


def test_trailing_not_ignores_events_outside_window_bounds() -> None:
    # a0 b1 x2 d3: d3 (ts 3 < 10 after a0) violates the trailing NOT, unless WINDOW [0, 2]
    # leaves it out (nothing outside the WINDOW can be a negated event).
    s = stream("a b x d")
    assert positions("PATTERN a; b; NOT(d) WITHIN 10 UNITS", s, ANY) == []
    assert positions("PATTERN a; b; NOT(d) WITHIN 10 UNITS WINDOW [0, 2]", s, ANY) == [(0, 1)]


# ---------------------------------------------------------------------------------------------
# Kleene
# ---------------------------------------------------------------------------------------------

KLEENE_STREAM = stream("a b b c a b x c")  # 0 a, 1 b, 2 b, 3 c, 4 a, 5 b, 6 x, 7 c


def test_kleene_plus_skip_till_any() -> None:
    # a0 ... c3: non-empty subsets of {b1, b2}: 3. a0 ... c7: subsets of {b1, b2, b5}: 7.
    # a4 ... c7: {b5}: 1. Total 11.
    expected = [(0, 1, 3), (0, 1, 2, 3), (0, 2, 3),
                (0, 1, 7), (0, 1, 2, 7), (0, 1, 2, 5, 7), (0, 1, 5, 7), (0, 2, 7), (0, 2, 5, 7),
                (0, 5, 7), (4, 5, 7)]
    got = positions("PATTERN a; b+; c", KLEENE_STREAM, ANY)
    assert sorted(got) == sorted(expected) and len(got) == 11


def test_kleene_plus_skip_till_next() -> None:
    # Run a0: b1, b2 appended; c3 can fill c: closes. Run a4: b5; x6 skipped; c7 closes.
    assert variables("PATTERN a; b+; c", KLEENE_STREAM, NEXT) == [
        (("a", 0), ("b[1]", 1), ("b[2]", 2), ("c", 3)),
        (("a", 4), ("b[1]", 5), ("c", 7)),
    ]


def test_kleene_plus_strict_contiguity() -> None:
    # Everything adjacent: a0 b1 b2 c3 only (a4 b5 is followed by x6, not c).
    assert positions("PATTERN a; b+; c", KLEENE_STREAM, STRICT) == [(0, 1, 2, 3)]


def test_kleene_exactly_two() -> None:
    # a0 b1 b2 b3 c4. any: the 3 pairs of {1, 2, 3}. next: the first two (b1, b2); b3 is
    # then skipped while looking for c; c4 closes.
    s = stream("a b b b c")
    assert positions("PATTERN a; b{2}; c", s, ANY) == [(0, 1, 2, 4), (0, 1, 3, 4), (0, 2, 3, 4)]
    assert positions("PATTERN a; b{2}; c", s, NEXT) == [(0, 1, 2, 4)]


def test_kleene_one_or_two() -> None:
    # any: subsets of {1, 2, 3} of size 1 or 2: 3 + 3 = 6. next: b1, then b2 (r < 2, c not
    # possible at 2), r = 2 = max: complete; b3 skipped; c4.
    s = stream("a b b b c")
    assert sorted(positions("PATTERN a; b{1,2}; c", s, ANY)) == sorted(
        [(0, 1, 4), (0, 2, 4), (0, 3, 4), (0, 1, 2, 4), (0, 1, 3, 4), (0, 2, 3, 4)])
    assert positions("PATTERN a; b{1,2}; c", s, NEXT) == [(0, 1, 2, 4)]


def test_kleene_star() -> None:
    # a0 b1 c2 b3 c4. any: with c2, b from {} or {b1}; with c4, subsets of {b1, b3}: 2 + 4.
    # next: b1 appended (c cannot fill at 1), c2 closes: (a, b[1], c).
    s = stream("a b c b c")
    assert sorted(positions("PATTERN a; b*; c", s, ANY)) == sorted(
        [(0, 2), (0, 1, 2), (0, 4), (0, 1, 4), (0, 3, 4), (0, 1, 3, 4)])
    assert variables("PATTERN a; b*; c", s, NEXT) == [(("a", 0), ("b[1]", 1), ("c", 2))]


def test_first_kleene_component_starts_a_run_per_event() -> None:
    # b0 b1 c2: the run of b0 takes b0, b1 and closes at c2; b1 starts its own run.
    s = stream("b b c")
    assert positions("PATTERN b+; c", s, NEXT) == [(0, 1, 2), (1, 2)]


def test_iteration_predicate() -> None:
    # v of b1..b4 = 1, 3, 2, 4. any: strictly increasing subsequences: 4 singletons,
    # pairs (1,3) (1,2) (1,4) (3,4) (2,4), triples (1,3,4) (1,2,4): 11.
    # next: b1; b2 (3 > 1); b3 (2 > 3? no) skipped; b4 (4 > 3); c5 closes.
    s = stream("a b b b b c", v=[0, 1, 3, 2, 4, 0])
    q = "PATTERN a; b+; c WHERE b[i].v > b[i-1].v"
    assert len(positions(q, s, ANY)) == 11
    assert (0, 1, 3, 4, 5) in positions(q, s, ANY) and (0, 2, 3, 5) not in positions(q, s, ANY)
    assert positions(q, s, NEXT) == [(0, 1, 2, 4, 5)]


def test_aggregate_over_earlier_iterations() -> None:
    # v of b1..b4 = 2, 1, 4, 3. next: b1 (nothing before it); b2: 1 > avg(2)? no, skipped;
    # b3: 4 > avg(2) = 2, appended; b4: 3 > avg(2, 4) = 3? no, skipped; c5 closes.
    s = stream("a b b b b c", v=[0, 2, 1, 4, 3, 0])
    assert positions("PATTERN a; b+; c WHERE b[i].v > avg(b[..i-1].v)", s, NEXT) == [(0, 1, 3, 5)]


def test_aggregate_over_all_iterations() -> None:
    # Same stream, sum(b.v) <= 5 under any: singletons 4; pairs 2+1, 2+3, 1+4, 1+3: 4;
    # every triple sums to at least 6. Total 8.
    s = stream("a b b b b c", v=[0, 2, 1, 4, 3, 0])
    got = positions("PATTERN a; b+; c WHERE sum(b.v) <= 5", s, ANY)
    assert sorted(got) == sorted([(0, 1, 5), (0, 2, 5), (0, 3, 5), (0, 4, 5),
                                  (0, 1, 2, 5), (0, 1, 4, 5), (0, 2, 3, 5), (0, 2, 4, 5)])


def test_unindexed_kleene_reference_means_every_iteration() -> None:
    # a0 v=2; b1 3, b2 1, b3 4. b.v > a.v must hold for every iteration: b from {b1, b3}.
    s = stream("a b b b c", v=[2, 3, 1, 4, 0])
    q = "PATTERN a; b+; c WHERE b.v > a.v"
    assert positions(q, s, ANY) == [(0, 1, 3, 4), (0, 1, 4), (0, 3, 4)]
    assert positions(q, s, NEXT) == [(0, 1, 3, 4)]


def test_fixed_index_beyond_the_iterations_is_unsatisfied() -> None:
    # b[2] exists only with two iterations: only (a0, b1, b2, c3).
    s = stream("a b b c", v=[0, 1, 5, 0])
    assert positions("PATTERN a; b+; c WHERE b[2].v > 0", s, ANY) == [(0, 1, 2, 3)]


# ---------------------------------------------------------------------------------------------
# AND
# ---------------------------------------------------------------------------------------------


def test_and_with_kleene_count() -> None:
    # G0 v=10, M1 5, D2, M3 9, M4 8, M5 1, M6 2; every Microsoft: 10 > 1.12 * v (v < 8.93).
    # Order G; M{3}; D: only M1 lies before the only Del: none.
    # Order G; D; M{3}: D2 then three of {M4, M5, M6} (M3 fails: 10.08): (0, 2, 4, 5, 6).
    # next, same: order 2 skips M3 and takes M4 M5 M6; order 1 never sees a Del after 3 Ms.
    s = stream("Google Microsoft Del Microsoft Microsoft Microsoft Microsoft",
               value=[10, 5, 0, 9, 8, 1, 2])
    q = "PATTERN Google; (Microsoft[3] & Del) WHERE Google.value > 1.12 * Microsoft.value"
    expected = [(("Google", 0), ("Del", 2), ("Microsoft[1]", 4), ("Microsoft[2]", 5),
                 ("Microsoft[3]", 6))]
    assert variables(q, s, ANY) == expected
    assert variables(q, s, NEXT) == expected


def test_and_both_orders() -> None:
    # x0 a1 b2 a3: AND(a, b) = a;b or b;a: (a1, b2) and (b2, a3).
    s = stream("x a b a")
    assert positions("PATTERN AND(a, b)", s, ANY) == [(1, 2), (2, 3)]


# ---------------------------------------------------------------------------------------------
# Windows
# ---------------------------------------------------------------------------------------------


def test_time_window_with_tied_timestamps() -> None:
    # (id, ts, type): (0, 0s, A) (1, 1s, B) (2, 1s, A) (5, 1s, B) (3, 2s, B) (4, 3s, B).
    # Order by (ts, id): pos 0 id0 A@0; pos 1 id1 B@1; pos 2 id2 A@1; pos 3 id5 B@1;
    # pos 4 id3 B@2; pos 5 id4 B@3. WITHIN 2 SECONDS is half-open (< 2s).
    # A@pos0: B pos1 (1s), pos3 (1s); pos4 is 2s: out. A@pos2: B pos3 (0s), pos4 (1s); pos5 2s.
    # B@pos1 has the same ts as A@pos2 but comes first: not after it.
    s = stream("A B A B B B", ts=[0, 10**6, 10**6, 10**6, 2 * 10**6, 3 * 10**6],
               ids=[0, 1, 2, 5, 3, 4])
    got = oracle_matches("PATTERN A; B WITHIN 2 SECONDS", s, policy=ANY)
    assert [tuple(int(s.ids[p]) for p in m.positions) for m in got] == [(0, 1), (0, 5), (2, 5), (2, 3)]


def test_events_window() -> None:
    # A0 B1 C2 B3 A4 C5 C6 B7, WITHIN 3 EVENTS: pos difference < 3. A0-B1 only.
    s = stream("A B C B A C C B")
    assert positions("PATTERN A; B WITHIN 3 EVENTS", s, ANY) == [(0, 1)]
    assert positions("PATTERN A; B WITHIN 3 EVENTS", s, NEXT) == [(0, 1)]


def test_units_window() -> None:
    # A@0 B@4 A@10 B@14 B@15, WITHIN 5 UNITS: A@0-B@4 (4), A@10-B@14 (4); A@10-B@15 is 5: out.
    s = stream("A B A B B", ts=[0, 4, 10, 14, 15])
    assert positions("PATTERN A; B WITHIN 5 UNITS", s, ANY) == [(0, 1), (2, 3)]


def test_slide_window_instances() -> None:
    # A@3 A@7 B@9 B@13 B@16; instances [0,10) [5,15) [10,20) ...
    # (A@3, B@9): in [0, 10). (A@3, B@13): 10 apart. (A@7, B@9), (A@7, B@13): in [5, 15).
    # (A@7, B@16): 9 apart (< 10) but no instance holds both: [5, 15) ends first.
    s = stream("A A B B B", ts=[3, 7, 9, 13, 16])
    assert positions("PATTERN A; B WITHIN 10 UNITS SLIDE 5 UNITS", s, ANY) == [(0, 2), (1, 2), (1, 3)]
    assert (1, 4) in positions("PATTERN A; B WITHIN 10 UNITS", s, ANY)


def test_window_bounds_by_position() -> None:
    # A0 A1 B2 A3 B4 B5, WINDOW [1, 4] keeps A1 B2 A3 B4: (1,2) (1,4) (3,4).
    s = stream("A A B A B B")
    assert positions("PATTERN A; B WINDOW [1, 4]", s, ANY) == [(1, 2), (1, 4), (3, 4)]


def test_window_bounds_by_timestamp() -> None:
    # ts 0s 1s 2s 3s 4s; WINDOW from 1s to 3s (inclusive) keeps A@1s, B@2s, B@3s.
    s = stream("A A B B B", ts=[k * 10**6 for k in range(5)])
    q = "PATTERN A; B WINDOW ['1970-01-01 00:00:01', '1970-01-01 00:00:03']"
    assert positions(q, s, ANY) == [(1, 2), (1, 3)]


# ---------------------------------------------------------------------------------------------
# Equivalences, join variables, DEFINE
# ---------------------------------------------------------------------------------------------


def test_equivalence_attribute() -> None:
    # k: A0 1, B1 2, A2 2, B3 1, C4 1, C5 2. Triples A<B<C with one k: only A0 B3 C4.
    s = stream("A B A B C C", k=[1, 2, 2, 1, 1, 2])
    assert positions("PATTERN A; B; C WHERE [k]", s, ANY) == [(0, 3, 4)]


def test_equivalence_with_not() -> None:
    # k: A0 1, D1 2, B2 1, D3 1, B4 1. D1 has another k: does not block A0-B2. D3 blocks A0-B4.
    s = stream("A D B D B", k=[1, 2, 1, 1, 1])
    assert positions("PATTERN A; NOT(D); B WHERE [k]", s, ANY) == [(0, 2)]


def test_join_variable() -> None:
    # ip: A0 1, B1 -, C2 2, A3 2, C4 1, C5 2. Only B1 is a B, so A is A0 with $x = 1:
    # C4 is the only C with ip 1.
    s = stream("A B C A C C", ip=[1, None, 2, 2, 1, 2])
    assert positions("PATTERN A; B; C WHERE A.ip = $x AND C.ip = $x", s, ANY) == [(0, 1, 4)]


def test_join_variable_on_kleene_iterations() -> None:
    # ip: A0 1, B1 1, B2 2, B3 1: every iteration must give $x the value A gives it.
    s = stream("A B B B", ip=[1, 1, 2, 1])
    assert positions("PATTERN A; B+ WHERE A.ip = $x AND B.ip = $x", s, ANY) == [
        (0, 1), (0, 1, 3), (0, 3)]


def test_define_classes_seed_query() -> None:
    # ts in minutes; status, ip:
    # 0: 0m denied 1 | 1: 1m denied 1 | 2: 2m denied 1 | 3: 3m success 2 | 4: 4m success 1
    # 5: 10m denied 2 | 6: 11m denied 2 | 7: 20m denied 2 | 8: 21m success 2
    # F F F contiguous (',') within 5 minutes of F1, then followed by an S with the same ip.
    # Run 0: F2=1, F3=2 (2m), S: 3 has ip 2, 4 has ip 1: (0, 1, 2, 4).
    # Runs 1, 2: an S directly follows too early. Run 5: F3=7 is 10 minutes after F1: the
    # link is ',' so the run fails. Runs 6, 7: no third F in a row.
    minute = 60 * 10**6
    s = stream(["login"] * 9, ts=[m * minute for m in (0, 1, 2, 3, 4, 10, 11, 20, 21)],
               status=["denied"] * 3 + ["success"] * 2 + ["denied"] * 3 + ["success"],
               ip=[1, 1, 1, 2, 1, 2, 2, 2, 2])
    q = ("PATTERN F, F, F @(t(F3) - t(F1) < 5 MINUTES) ; S "
         "DEFINE F AS status = 'denied', S AS status = 'success' WHERE [ip]")
    expected = [(("F1", 0), ("F2", 1), ("F3", 2), ("S", 4))]
    assert variables(q, s) == expected
    assert variables(q, s, ANY) == expected


def test_join_variable_inside_define() -> None:
    # DEFINE F AS status = 'denied' AND ip = $x, WHERE S.ip = $x.
    # 0 x denied ip1 | 1 S ip2 | 2 S ip1 | 3 x denied ip2 | 4 S ip2.
    # (F0, S1): F gives $x = 1, S gives 2: no. (F0, S2): 1 = 1. (F0, S4): no. (F3, S4): 2 = 2.
    query = parse_pattern("PATTERN F; S DEFINE F AS status = 'denied' AND ip = $x WHERE S.ip = $x")
    s = stream("x S S x S", status=["denied", "ok", "ok", "denied", "ok"], ip=[1, 2, 1, 2, 2])
    assert positions(query, s, ANY) == [(0, 2), (3, 4)]
    assert positions(query, s, NEXT) == [(0, 2), (3, 4)]


# ---------------------------------------------------------------------------------------------
# Contiguity, unbound aliases, NULLs
# ---------------------------------------------------------------------------------------------


def test_contiguous_pattern() -> None:
    # a0 b1 b2 c3 a4 b5 x6 c7 a8 c9 with 'a, b+, c' (all links next).
    # any: only a0 b1 b2 c3 (b's right after a, c right after the last b).
    # next: run a0 gives the same; run a4: b5, x6 ends the contiguous b's and cannot be c:
    # fails; run a8: c9 cannot be the first b and the link is next: fails.
    s = stream("a b b c a b x c a c")
    assert positions("PATTERN a, b+, c", s, ANY) == [(0, 1, 2, 3)]
    assert positions("PATTERN a, b+, c", s, NEXT) == [(0, 1, 2, 3)]


def test_strict_contiguity_keyword() -> None:
    # A0 B1 C2 A3 B4 X5 C6: only A0 B1 C2 are adjacent.
    s = stream("A B C A B X C")
    assert positions("PATTERN A; B; C WHERE strict-contiguity", s) == [(0, 1, 2)]


def test_condition_on_unbound_branch_is_ignored() -> None:
    # Alternatives A;B and A;C;D. B.v > 0 applies to the first, D.v > 0 to the second.
    # A0, B1 v=1, C2, D3 v=-1, B4 v=-1, D5 v=2: (0, 1) and (0, 2, 5).
    s = stream("A B C D B D", v=[0, 1, 0, -1, -1, 2])
    q = "PATTERN A; (B | (C; D)) WHERE B.v > 0 AND D.v > 0"
    assert positions(q, s, ANY) == [(0, 1), (0, 2, 5)]


def test_null_attribute_makes_condition_unsatisfied() -> None:
    # v: A0 1, A1 NULL, B2 5, B3 NULL. A.v < B.v is TRUE only for (A0, B2); NULL elsewhere.
    # NOT (A.v >= B.v) is the same: NOT NULL is NULL. A.v IS NULL: (A1, B2), (A1, B3).
    s = stream("A A B B", v=[1, None, 5, None])
    assert positions("PATTERN A; B WHERE A.v < B.v", s, ANY) == [(0, 2)]
    assert positions("PATTERN A; B WHERE NOT (A.v >= B.v)", s, ANY) == [(0, 2)]
    assert positions("PATTERN A; B WHERE A.v IS NULL", s, ANY) == [(1, 2), (1, 3)]


def test_nan_in_a_float_column_is_null() -> None:
    s = stream("A B B", v=[1.0, float("nan"), 2.0])
    assert positions("PATTERN A; B WHERE A.v < B.v OR B.v IS NULL", s, ANY) == [(0, 1), (0, 2)]
    assert positions("PATTERN A; B WHERE B.v <> 7", s, ANY) == [(0, 2)]


def test_timestamp_references() -> None:
    # t(b) - t(a) and b.ts - a.ts are the same number: ts 0, 3, 7.
    s = stream("a b b", ts=[0, 3, 7])
    assert positions("PATTERN a; b WHERE t(b) - t(a) < 5", s, ANY) == [(0, 1)]
    assert positions("PATTERN a; b WHERE b.ts - a.ts >= 5", s, ANY) == [(0, 2)]


# ---------------------------------------------------------------------------------------------
# The candidate limit
# ---------------------------------------------------------------------------------------------


def test_match_limit_error() -> None:
    # 2^12 - 1 subsets of the b's: far more than 100 candidates.
    s = stream("a " + "b " * 12 + "c")
    with pytest.raises(MatchLimitError) as err:
        oracle_matches("PATTERN a; b+; c", s, policy=ANY, max_candidates=100)
    assert "max_candidates=100" in str(err.value) and err.value.code == "CEP-MATCH-001"
    assert len(oracle_matches("PATTERN a; b+; c", s, policy=ANY)) == 2**12 - 1


def test_match_limit_error_skip_till_next() -> None:
    s = stream("a b " * 10)
    with pytest.raises(MatchLimitError):
        oracle_matches("PATTERN a; b", s, policy=NEXT, max_candidates=5)


def test_limit_is_exact() -> None:
    # 'PATTERN A; B' on A B: exactly one candidate; a limit of 1 is enough.
    s = stream("A B")
    assert positions("PATTERN A; B", s, ANY) == [(0, 1)]
    assert len(oracle_matches("PATTERN A; B", s, policy=ANY, max_candidates=1)) == 1
