"""Property-based tests of the exact-matching oracle on small random streams (hypothesis).

The relations between the policies, the window, the output order and the irrelevance of events
of no class of the pattern must hold on every input; they catch enumeration and run bugs that
fixed vectors miss.
"""

from __future__ import annotations

import os
from collections import Counter

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cep.lang import parse_pattern
from cep.match.columnar.stream import EventStream
from cep.match.compile.normal import normalize
from cep.match.result import Match
from cep.oracles import oracle_matches

ANY = "skip-till-any-match"
NEXT = "skip-till-next-match"
STRICT = "strict-contiguity"

# ORACLE_EXAMPLES=2000 runs a longer search (about a minute).
SETTINGS = settings(max_examples=int(os.environ.get("ORACLE_EXAMPLES", "100")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

# Patterns over classes A, B, C, D (no policy keyword: the test passes the policy).
PATTERNS = [
    "PATTERN A; B",
    "PATTERN A; B; C",
    "PATTERN A; B+; C",
    "PATTERN A; B*; C",
    "PATTERN A; NOT(D); B",
    "PATTERN A; OR(B, C); D",
    "PATTERN AND(A, B)",
    "PATTERN A; B{2}",
    "PATTERN A; B{1,2}; C WHERE B[i].v >= B[i-1].v",
    "PATTERN A; B WHERE A.v < B.v",
    "PATTERN A; B+ WHERE B.v > A.v",
    "PATTERN A; B+; C WHERE [v]",
    "PATTERN A; B; C WHERE A.v = $x AND C.v = $x",
    "PATTERN A; B+; D WHERE sum(B.v) < 4",
    "PATTERN A, B; C",
    "PATTERN A; B+, C",
    "PATTERN B+; C",
    "PATTERN A; (B | (C; D))",
    "PATTERN A; NOT(C | D); B+",
]
# Patterns that need a window (they end in NOT).
WINDOWED = [
    "PATTERN A; B; NOT(C)",
    "PATTERN A; B+; NOT(D)",
]
WINDOWS = ["", " WITHIN 3 UNITS", " WITHIN 4 EVENTS", " WITHIN 4 UNITS SLIDE 2 UNITS"]


@st.composite
def streams(draw: st.DrawFn, types: str = "ABCD", max_size: int = 8) -> EventStream:
    """A small stream: few types, timestamps with ties, an attribute with NULLs."""
    n = draw(st.integers(0, max_size))
    kinds = draw(st.lists(st.sampled_from(list(types)), min_size=n, max_size=n))
    steps = draw(st.lists(st.sampled_from([0, 0, 1, 1, 2]), min_size=n, max_size=n))
    ts = list(np.cumsum(steps)) if n else []
    values = draw(st.lists(st.one_of(st.integers(0, 3), st.none()), min_size=n, max_size=n))
    return EventStream.from_columns(ids=list(range(n)), ts=ts, types=kinds,
                                    attrs={"v": np.array(values, dtype=object)})


@st.composite
def queries(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        return draw(st.sampled_from(PATTERNS)) + draw(st.sampled_from(WINDOWS))
    return draw(st.sampled_from(WINDOWED)) + draw(st.sampled_from(WINDOWS[1:]))


def _followed_only(pattern: str) -> bool:
    """True when every link of every alternative is followed-by (under skip-till-any)."""
    norm = normalize(parse_pattern(pattern), ANY)
    return all(c.link == "followed" and (c.kind != "kleene" or c.iter_link == "followed")
               for alt in norm.alternatives for c in alt.components)


FOLLOWED_ONLY = [p for p in PATTERNS + [w + " WITHIN 3 UNITS" for w in WINDOWED] if _followed_only(p)]


def _keys(ms: list[Match]) -> set[tuple[tuple[int, ...], tuple[str, ...]]]:
    return {(m.positions, m.variables) for m in ms}


@SETTINGS
@given(query=queries(), s=streams())
def test_strict_contiguity_is_a_subset_of_skip_till_any(query: str, s: EventStream) -> None:
    assert _keys(oracle_matches(query, s, policy=STRICT)) <= _keys(oracle_matches(query, s, policy=ANY))


@SETTINGS
@given(query=queries(), s=streams())
def test_skip_till_next_is_a_subset_of_skip_till_any(query: str, s: EventStream) -> None:
    assert _keys(oracle_matches(query, s, policy=NEXT)) <= _keys(oracle_matches(query, s, policy=ANY))


@SETTINGS
@given(query=queries(), s=streams())
def test_skip_till_next_gives_one_match_per_start_per_alternative(query: str, s: EventStream) -> None:
    alternatives = len(normalize(parse_pattern(query), NEXT).alternatives)
    starts = Counter(m.start for m in oracle_matches(query, s, policy=NEXT))
    assert all(count <= alternatives for count in starts.values())
    if alternatives == 1:
        assert all(count == 1 for count in starts.values())


@SETTINGS
@given(query=queries(), s=streams(), policy=st.sampled_from([ANY, NEXT, STRICT]))
def test_every_match_satisfies_the_window(query: str, s: EventStream, policy: str) -> None:
    q = parse_pattern(query)
    for m in oracle_matches(q, s, policy=policy):
        assert list(m.positions) == sorted(set(m.positions))
        if q.within is None:
            continue
        if q.within.kind == "EVENTS":
            assert m.end - m.start < q.within.value
        else:
            first, last = int(s.ts[m.start]), int(s.ts[m.end])
            assert last - first < q.within.value
            if q.slide is not None:
                k = first // int(q.slide.value)
                assert last < k * q.slide.value + q.within.value


@SETTINGS
@given(query=queries(), s=streams(), policy=st.sampled_from([ANY, NEXT, STRICT]))
def test_matches_come_in_match_id_order(query: str, s: EventStream, policy: str) -> None:
    ms = oracle_matches(query, s, policy=policy)
    assert len(set(ms)) == len(ms)
    assert ms == sorted(ms, key=lambda m: (m.start, m.end, m.positions, m.variables))


@SETTINGS
@given(query=st.sampled_from(FOLLOWED_ONLY),
       window=st.sampled_from(["", " WITHIN 3 UNITS", " WITHIN 4 UNITS SLIDE 2 UNITS"]),
       s=streams(types="ABCDXY", max_size=9))
def test_events_of_no_class_do_not_change_skip_till_any(query: str, window: str, s: EventStream) -> None:
    # Only followed-by links and time windows: X and Y events can neither be bound nor
    # be negated, so removing them changes nothing (compared by event id).
    full = query if "WITHIN" in query else query + window
    keep = [p for p in range(len(s)) if s.types[p] not in ("X", "Y")]
    reduced = EventStream(s.ids[keep], s.ts[keep], s.types[keep], {k: v[keep] for k, v in s.attrs.items()})

    def by_id(stream: EventStream) -> set[tuple[tuple[int, ...], tuple[str, ...]]]:
        return {(tuple(int(stream.ids[p]) for p in m.positions), m.variables)
                for m in oracle_matches(full, stream, policy=ANY)}

    assert by_id(s) == by_id(reduced)


@settings(max_examples=30, deadline=None)
@given(s=streams(max_size=7))
def test_time_window_in_seconds_equals_units_window_on_scaled_timestamps(s: EventStream) -> None:
    # WITHIN 3 SECONDS on timestamps in microseconds = WITHIN 3 UNITS on the raw numbers.
    scaled = EventStream(s.ids, s.ts * 1_000_000, s.types, s.attrs)
    for pattern in ("PATTERN A; B+; C", "PATTERN A; B; NOT(C)"):
        a = oracle_matches(pattern + " WITHIN 3 UNITS", s, policy=ANY)
        b = oracle_matches(pattern + " WITHIN 3 SECONDS", scaled, policy=ANY)
        assert a == b


# ---------------------------------------------------------------------------------------------
# Independent reference answers for plain sequences (written without the oracle's machinery)
# ---------------------------------------------------------------------------------------------


def _of(s: EventStream, kind: str) -> list[int]:
    return [p for p in range(len(s)) if s.types[p] == kind]


@SETTINGS
@given(s=streams())
def test_plain_sequence_reference_answers(s: EventStream) -> None:
    a, b, c = _of(s, "A"), _of(s, "B"), _of(s, "C")
    # skip-till-any: every increasing triple.
    triples = sorted((x, y, z) for x in a for y in b for z in c if x < y < z)
    got = [m.positions for m in oracle_matches("PATTERN A; B; C", s, policy=ANY)]
    assert sorted(got) == triples
    # strict contiguity: the triples at consecutive positions.
    got = [m.positions for m in oracle_matches("PATTERN A; B; C", s, policy=STRICT)]
    assert sorted(got) == [t for t in triples if t[1] == t[0] + 1 and t[2] == t[1] + 1]
    # skip-till-next: each A takes the first B after it, then the first C after that B.
    expected = []
    for x in a:
        y = next((p for p in b if p > x), None)
        z = next((p for p in c if y is not None and p > y), None)
        if z is not None:
            expected.append((x, y, z))
    assert [m.positions for m in oracle_matches("PATTERN A; B; C", s, policy=NEXT)] == expected


@SETTINGS
@given(s=streams())
def test_kleene_plus_skip_till_next_reference(s: EventStream) -> None:
    # Each A: the first B after it starts the iterations; every later B is appended until the
    # first C after the first B closes the run.
    expected = []
    for x in _of(s, "A"):
        first_b = next((p for p in _of(s, "B") if p > x), None)
        if first_b is None:
            continue
        close = next((p for p in _of(s, "C") if p > first_b), None)
        if close is None:
            continue
        bs = [p for p in _of(s, "B") if first_b <= p < close]
        expected.append((x, *bs, close))
    assert [m.positions for m in oracle_matches("PATTERN A; B+; C", s, policy=NEXT)] == expected


@SETTINGS
@given(s=streams())
def test_not_between_reference(s: EventStream) -> None:
    d = set(_of(s, "D"))
    expected = sorted((x, y) for x in _of(s, "A") for y in _of(s, "B")
                      if x < y and not any(x < p < y for p in d))
    got = [m.positions for m in oracle_matches("PATTERN A; NOT(D); B", s, policy=ANY)]
    assert sorted(got) == expected
