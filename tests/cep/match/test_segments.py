"""Segmented streams: one engine call over many keys gives each key's own matches.

For every template and policy, several random partitions laid end to end must give exactly
the matches of ``find_matches`` on each partition alone (same positions after the segment's
offset, same variables, same ``match_id`` order), and the joint call (the segment clock) must
be the path taken whenever the shift is exact.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from match_cases import POLICIES, TEMPLATES, random_stream, streams

from cep.match import CompiledQuery, EventStream, MatchLimits, compile_query, find_matches
from cep.match.run import segments
from cep.match.errors import StreamError
from cep.match.run.segments import find_segment_matches


@lru_cache(maxsize=None)
def compiled(text: str, policy: str) -> CompiledQuery:
    return compile_query(text, policy=policy)


def laid_end_to_end(parts: list[EventStream]) -> EventStream:
    """The partitions as one segmented stream (ids made unique, attributes concatenated)."""
    sizes = [len(p) for p in parts]
    starts = np.cumsum([0] + sizes[:-1])
    id_base = np.repeat(np.cumsum([0] + [int(p.ids.max()) + 1 for p in parts[:-1]]), sizes)
    attrs = {k: np.concatenate([p.attrs[k] for p in parts]) for k in parts[0].attrs}
    return EventStream(np.concatenate([p.ids for p in parts]) + id_base,
                       np.concatenate([p.ts for p in parts]),
                       np.concatenate([p.types for p in parts]), attrs,
                       segment_starts=starts)


def exact_shift_possible(cq: CompiledQuery) -> bool:
    slide = cq.window.slide
    return (cq.normal.window is None and not cq.window.by_events
            and (slide is None or isinstance(slide, int)))


def check(text: str, policy: str, parts: list[EventStream]) -> None:
    cq = compiled(text, policy)
    stream = laid_end_to_end(parts)
    found = find_segment_matches(cq, stream)
    starts = stream.segment_starts
    got = found.matches.to_matches()
    ids = found.match_ids()
    first = np.searchsorted(found.segments, np.arange(len(parts) + 1), side="left")
    assert (np.diff(found.segments) >= 0).all()
    for k, part in enumerate(parts):
        alone = find_matches(cq, part).to_matches()
        mine = got[first[k]:first[k + 1]]
        shifted = [tuple(p - starts[k] for p in m.positions) for m in mine]
        assert shifted == [m.positions for m in alone], f"{text} [{policy}] segment {k}"
        assert [m.variables for m in mine] == [m.variables for m in alone]
        assert ids[first[k]:first[k + 1]].tolist() == list(range(1, len(alone) + 1))
    assert found.joint == exact_shift_possible(cq), f"{text}: joint={found.joint}"


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("text", TEMPLATES)
def test_segments_every_template_equals_one_call_per_segment(text: str, policy: str) -> None:
    parts = [random_stream(seed) for seed in range(5)]
    check(text, policy, parts)


@pytest.mark.parametrize("policy", POLICIES)
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(parts=st.lists(streams(min_size=1, max_size=12), min_size=2, max_size=5),
       text=st.sampled_from(TEMPLATES))
def test_segments_random_partitions(policy: str, parts: list[EventStream], text: str) -> None:
    check(text, policy, parts)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("text", TEMPLATES[::3])
def test_segments_in_chunks_equal_one_call_per_segment(text: str, policy: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # Chunks of ~16 events: several chunks, segments straddling chunk boundaries.
    monkeypatch.setattr(segments, "CHUNK_EVENTS", 16)
    check(text, policy, [random_stream(seed) for seed in range(10, 17)])


def test_segments_conditions_read_the_original_timestamps() -> None:
    # Absolute timestamps in a condition must not see the clock's offsets.
    parts = [EventStream.from_columns(ids=[0, 1], ts=[5, 7], types=["A", "B"]),
             EventStream.from_columns(ids=[0, 1], ts=[1, 3], types=["A", "B"])]
    cq = compile_query("PATTERN A; B WHERE B.ts < 4")
    found = find_segment_matches(cq, laid_end_to_end(parts))
    assert found.joint
    assert found.segments.tolist() == [1]


def test_segments_limits_stay_per_segment() -> None:
    # Two segments of 3 matches each: a per-partition limit of 4 holds for each of them.
    part = EventStream.from_columns(ids=range(4), ts=range(4), types=list("ABBB"))
    cq = compile_query("PATTERN A; B", policy="skip-till-any-match",
                       limits=MatchLimits(max_matches=4))
    found = find_segment_matches(cq, laid_end_to_end([part, part]))
    assert len(found.matches) == 6 and not found.joint
    big = EventStream.from_columns(ids=range(6), ts=range(6), types=list("ABBBBB"))
    with pytest.raises(Exception, match="max_matches=4"):
        find_segment_matches(cq, laid_end_to_end([part, big]))


def test_segments_reject_malformed_starts_and_unsorted_segments() -> None:
    s = EventStream.from_columns(ids=range(3), ts=[0, 1, 2], types=list("ABA"))
    with pytest.raises(StreamError, match="segment starts"):
        EventStream(s.ids, s.ts, s.types, segment_starts=np.array([0, 2, 2]))
    with pytest.raises(StreamError, match="segment starts"):
        EventStream(s.ids, s.ts, s.types, segment_starts=np.array([1]))
    with pytest.raises(StreamError, match="breaks the order"):
        EventStream(s.ids, np.array([0, 2, 1]), s.types, segment_starts=np.array([0, 1]))
    with pytest.raises(StreamError, match="find_segment_matches"):
        find_matches(compile_query("PATTERN A"),
                     EventStream(s.ids, np.array([0, 2, 1]), s.types,
                                 segment_starts=np.array([0, 2])))
