"""Standing patterns in the core (cep/match/run/standing.py): a key's stream cut into any
steps gives the matches of one pass over all of it, with the same match_id, and the timeouts
of the definition in docs/standing.md, checked against the brute-force oracle."""

from __future__ import annotations

import random

import numpy as np
import pytest

from cep.match import EventStream, find_matches
from cep.match.compile.standing import compile_standing
from cep.match.errors import StandingPatternError, UnsupportedPatternError
from cep.match.run.carried import Carried, CarriedStateError
from cep.match.run.standing import advance, resolves_at
from cep.oracles.match_oracle import oracle_matches

# (pattern, its proper prefixes written out by hand, shortest first: the oracle's own reading
# of "the first k components"; None where a prefix would end in NOT and is not one)
CASES = [
    ("PATTERN A; B WITHIN 5 UNITS", ["PATTERN A WITHIN 5 UNITS"]),
    ("PATTERN A; B; C WITHIN 6 UNITS", ["PATTERN A WITHIN 6 UNITS", "PATTERN A; B WITHIN 6 UNITS"]),
    ("PATTERN A, B, C WITHIN 4 EVENTS", ["PATTERN A WITHIN 4 EVENTS", "PATTERN A, B WITHIN 4 EVENTS"]),
    ("PATTERN A a; B+ b[]; C c WHERE c.v > a.v WITHIN 8 UNITS",
     ["PATTERN A a WITHIN 8 UNITS", "PATTERN A a; B+ b[] WITHIN 8 UNITS"]),
    ("PATTERN A; !B; C WITHIN 5 UNITS", ["PATTERN A WITHIN 5 UNITS", None]),
    ("PATTERN A; (B | C); D WITHIN 6 UNITS", ["PATTERN A WITHIN 6 UNITS",
                                              "PATTERN A; (B | C) WITHIN 6 UNITS"]),
    ("PATTERN A a; B b WHERE b.v = a.v WITHIN 3 EVENTS", ["PATTERN A a WITHIN 3 EVENTS"]),
    ("PATTERN (B+ b[] & A); C WITHIN 6 UNITS", ["PATTERN (B+ b[] & A) WITHIN 6 UNITS"]),
]
POLICIES = ["skip-till-next-match", "skip-till-any-match", "strict-contiguity",
            "skip-till-any-match-grouped"]


def _stream(rng: random.Random, n: int) -> EventStream:
    """Events of classes A-D with ties in time and a small attribute."""
    ts, now = [], 0
    for _ in range(n):
        now += rng.choice((0, 1, 1, 2, 3))
        ts.append(now)
    return EventStream.from_columns(ids=range(100, 100 + n), ts=ts,
                                    types=[rng.choice("AABBBCCD") for _ in range(n)],
                                    attrs={"v": [rng.randint(0, 3) for _ in range(n)]})


def _slice(s: EventStream, lo: int, hi: int) -> EventStream:
    return EventStream(s.ids[lo:hi], s.ts[lo:hi], s.types[lo:hi],
                       {k: v[lo:hi] for k, v in s.attrs.items()}, {})


def _stepped(program, whole: EventStream, cuts: list[int]):
    """The matches and timeouts of stepping through ``whole`` cut at ``cuts``, then one last
    step whose watermark closes every window: each as event ids."""
    matches, timeouts = [], []
    carried_lo, open_from, emitted = 0, 0, 0
    bounds = [*cuts, len(whole)]
    for k, hi in enumerate([*bounds, len(whole)]):
        final = k == len(bounds)
        part = _slice(whole, carried_lo, hi)
        watermark = (10 ** 9 if final else int(whole.ts[hi - 1]) if hi else None)
        step = advance(program, part, open_from=open_from, emitted=emitted, watermark=watermark)
        for m, mid in zip(step.matches.to_matches(), step.match_ids.tolist()):
            matches.append((mid, tuple(int(part.ids[p]) for p in m.positions), m.variables))
        for t in step.timeouts:
            timeouts.append((int(part.ids[t.start]), tuple(int(part.ids[p]) for p in t.positions),
                             t.variables, t.components, t.closed_at))
        emitted += len(step.matches)
        carried_lo += step.keep_from
        open_from = step.resolved - step.keep_from
    return matches, timeouts


def _whole(program, whole: EventStream):
    """One pass over all of it: every match, except (``EVENTS`` windows) those whose start is
    still open because the stream ends inside its window."""
    window = program.compiled.window
    last = len(whole) - int(np.ceil(window.width)) if window.by_events else len(whole)
    found = find_matches(program.compiled, whole).to_matches()
    return [(k + 1, tuple(int(whole.ids[p]) for p in m.positions), m.variables)
            for k, m in enumerate(found) if m.positions[0] <= last]


def _oracle_timeouts(pattern: str, prefixes: list[str | None], policy: str,
                     whole: EventStream):
    """Docs/standing.md's definition read literally, with the oracle for every match."""
    program = compile_standing(pattern, policy=policy)
    window = program.compiled.window
    full = {m.positions[0] for m in oracle_matches(pattern, whole, policy=policy)}
    by_prefix = [None if text is None else oracle_matches(text, whole, policy=policy)
                 for text in prefixes]
    out = []
    for p in range(len(whole)):
        if p in full:
            continue
        for k in range(len(prefixes), 0, -1):
            found = by_prefix[k - 1]
            first = next((m for m in found or () if m.positions[0] == p), None)
            if first is None:
                continue
            width = int(np.ceil(window.width))
            if window.by_events and p + width - 1 >= len(whole):
                break  # never closed: the stream ends inside the window
            closed = (int(whole.ts[p + width - 1]) if window.by_events
                      else int(whole.ts[p]) + window.width)
            out.append((int(whole.ids[p]), tuple(int(whole.ids[q]) for q in first.positions),
                        first.variables, k, closed))
            break
    return out


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("pattern,prefixes", CASES, ids=[c[0] for c in CASES])
def test_any_split_gives_the_one_pass_matches_and_the_oracle_timeouts(
        pattern: str, prefixes: list[str | None], policy: str) -> None:
    try:
        program = compile_standing(pattern, policy=policy)
    except UnsupportedPatternError as err:  # FAEM's grouped policy has no ',' and no NOT
        assert policy == "skip-till-any-match-grouped", err
        pytest.skip(str(err).splitlines()[0])
    rng = random.Random(hash((pattern, policy)) % 10_000)
    for trial in range(30):
        whole = _stream(rng, rng.randint(0, 16))
        cuts = sorted(rng.sample(range(len(whole) + 1), rng.randint(0, min(4, len(whole) + 1))))
        matches, timeouts = _stepped(program, whole, cuts)
        assert matches == _whole(program, whole), (trial, cuts)
        once, once_timeouts = _stepped(program, whole, [])
        assert (matches, timeouts) == (once, once_timeouts), (trial, cuts)
        expected = _oracle_timeouts(pattern, prefixes, policy, whole)
        assert timeouts == expected, (trial, cuts, whole.types.tolist(), whole.ts.tolist())


def test_a_pattern_without_within_cannot_stand() -> None:
    with pytest.raises(StandingPatternError, match="CEP-MATCH-005: .*needs a WITHIN window"):
        compile_standing("PATTERN A; B")
    with pytest.raises(StandingPatternError, match="CEP-MATCH-005: .*WINDOW bounds"):
        compile_standing("PATTERN A; B WITHIN 3 EVENTS WINDOW [0, 5]")


def test_a_match_waits_for_every_earlier_start_so_its_id_never_changes() -> None:
    # A(0) B(1) completes at once, but A(-) at ts 0 id 1 ... the earlier start A at ts 0 is
    # still open when the later, shorter match is complete: both come out in start order.
    program = compile_standing("PATTERN A; C WITHIN 10 UNITS", policy="skip-till-any-match")
    s = EventStream.from_columns(ids=[1, 2, 3], ts=[0, 5, 6], types=list("AAC"))
    step = advance(program, s, open_from=0, emitted=0, watermark=6)
    assert len(step.matches) == 0 and step.resolved == 0  # nothing closed yet
    step = advance(program, s, open_from=0, emitted=0, watermark=16)
    assert [m.positions for m in step.matches.to_matches()] == [(0, 2), (1, 2)]
    assert step.match_ids.tolist() == [1, 2]


@pytest.mark.parametrize("policy", POLICIES)
def test_the_carried_state_through_its_bytes_gives_the_same_steps(policy: str) -> None:
    # The job's path: each step starts from the state read back from its blob, and the new
    # events are merged into the carried ones by (ts, id).
    pattern = "PATTERN A a; B+ b[]; C c WHERE c.v > a.v WITHIN 8 UNITS"
    program = compile_standing(pattern, policy=policy)
    rng = random.Random(7)
    for trial in range(25):
        whole = _stream(rng, rng.randint(0, 16))
        cuts = sorted(rng.sample(range(len(whole) + 1), rng.randint(0, min(4, len(whole) + 1))))
        state, got, lo = Carried.empty(("v",)), [], 0
        for k, hi in enumerate([*cuts, len(whole), len(whole)]):
            final = k == len(cuts) + 1
            stream, open_from = Carried.from_bytes(state.to_bytes()).stream_with(
                _slice(whole, lo, hi))
            watermark = 10 ** 9 if final else (int(whole.ts[hi - 1]) if hi else None)
            step = advance(program, stream, open_from=open_from, emitted=state.emitted,
                           watermark=watermark)
            got += [(mid, tuple(int(stream.ids[p]) for p in m.positions), m.variables)
                    for m, mid in zip(step.matches.to_matches(), step.match_ids.tolist())]
            state, lo = state.after(stream, step), hi
        assert got == _whole(program, whole), (trial, cuts)


def test_a_damaged_carried_state_is_a_typed_error() -> None:
    blob = bytearray(Carried.empty(("v",)).to_bytes())
    blob[-2] ^= 1
    with pytest.raises(CarriedStateError, match="CEP-MATCH-004: carried state checksum mismatch"):
        Carried.from_bytes(bytes(blob))
    with pytest.raises(CarriedStateError, match="not a standing pattern's carried state"):
        Carried.from_bytes(b"CEPPRM" + bytes(40))


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("pattern,prefixes", CASES, ids=[c[0] for c in CASES])
def test_below_resolves_at_a_step_without_events_changes_nothing(
        pattern: str, prefixes: list[str | None], policy: str) -> None:
    """What lets the job leave a key out of a run: with no new event and a watermark below
    ``resolves_at`` a step reports nothing and resolves nothing; at it, it resolves a start;
    None (an ``EVENTS`` window, or nothing open) means no watermark resolves anything."""
    try:
        program = compile_standing(pattern, policy=policy)
    except UnsupportedPatternError:
        pytest.skip("not a pattern of this policy")
    rng = random.Random(hash((pattern, policy, "due")) % 10_000)
    for trial in range(30):
        whole = _stream(rng, rng.randint(0, 16))
        mark = int(whole.ts[-1]) if len(whole) else 0
        step = advance(program, whole, open_from=0, emitted=0, watermark=mark)
        due = resolves_at(program, whole, step)
        carried = Carried.empty(("v",)).after(whole, step)
        stream, open_from = carried.stream_with(_slice(whole, 0, 0))
        later = [mark + 1000] if due is None else [int(np.ceil(due)) - 1, int(np.ceil(due))]
        for w in later:
            again = advance(program, stream, open_from=open_from, emitted=carried.emitted,
                            watermark=w)
            moved = again.resolved > open_from or len(again.matches) or again.timeouts
            assert bool(moved) == (due is not None and w >= due), (trial, w, due)
