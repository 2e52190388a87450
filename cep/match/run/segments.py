"""Many small partitions in one engine call: a segmented stream and its matches per segment.

A Spark partition often holds thousands of keys (cases, users) with a few dozen events each;
one :func:`~cep.match.find_matches` call per key costs a fixed ~0.3 ms of numpy calls, which
dominates on such data (BENCHMARKS.md). :func:`find_segment_matches` runs the engine once over
all segments laid end to end and returns, per match, the segment it belongs to.

Why this is exact: every match of the engine satisfies its window, ``ts(last) - ts(first) <
W``. The segments are placed on a *clock*: segment ``k``'s timestamps shifted by an offset so
that it starts at least ``W`` after segment ``k - 1`` ends. A tuple spanning two segments then
violates the window, so the engine (whose searches are all bounded by the window) only finds
tuples inside one segment, and inside a segment every difference of timestamps, every
position order and every tie is unchanged. A query without a window gets a window longer than
any segment (it cuts nothing inside a segment). Conditions read the original timestamps
(``t(a)``, ``a.ts`` compare absolute values too), not the clock. With ``SLIDE`` the offsets are
multiples of the slide, so every window instance stays aligned.

The shift is not used (the segments run one by one instead, same result) when it cannot be
exact: an ``EVENTS`` window (positions, not timestamps, would have to be spaced), ``WINDOW
[a, b]`` (positions and timestamps of the restriction are per partition), a fractional slide,
or a clock that would overflow int64. A :class:`MatchLimitError` of the joint call is retried
segment by segment, because limits are per partition (per key).

Example:
    >>> from cep.match.compile.compiler import compile_query
    >>> ids, ts, types = range(6), [0, 5, 9, 0, 1, 2], list("ABBABB")
    >>> s = EventStream(np.arange(6), np.array(ts), np.array(types, dtype=object),
    ...                 segment_starts=np.array([0, 3]))
    >>> found = find_segment_matches(compile_query("PATTERN A; B"), s)
    >>> found.segments.tolist(), [m.positions for m in found.matches.to_matches()]
    ([0, 1], [(0, 1), (3, 4)])
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator

import numpy as np

from cep.match.columnar.arrays import MatchArrays
from cep.match.columnar.stream import EventStream
from cep.match.compile.program import CompiledQuery, WindowSpec
from cep.match.errors import MatchLimitError
from cep.match.run.engine import find_matches

_CLOCK_LIMIT = 1 << 62
# Segments are matched in chunks of about this many events: large enough that the fixed cost
# per engine call vanishes, small enough that sorting a chunk's matches stays cache-friendly
# (measured: 2^14 beat 2^12 and 2^16 on SEQ-3, Kleene and NOT at 10^6 events, BENCHMARKS.md).
CHUNK_EVENTS = 1 << 14


@dataclass(frozen=True, eq=False)
class SegmentMatches:
    """Matches of some consecutive segments of a segmented stream.

    Attributes:
        matches: the matches, positions into the whole stream, ordered by segment and,
            inside one, in ``match_id`` order.
        segments: the segment (0-based, of the whole stream) of each match.
        joint: True when one engine call on the segment clock found them, False when the
            segments ran one by one.
    """

    matches: MatchArrays
    segments: np.ndarray
    joint: bool

    def match_ids(self) -> np.ndarray:
        """``match_id`` of every match: 1, 2, ... inside each segment."""
        first = np.searchsorted(self.segments, self.segments, side="left")
        return np.arange(1, len(self.segments) + 1, dtype=np.int64) - first


def find_segment_matches(compiled: CompiledQuery, stream: EventStream, *,
                         plan: str | None = None) -> SegmentMatches:
    """Every match of ``compiled`` in each segment of ``stream`` (all chunks concatenated).

    Args:
        compiled: from :func:`cep.match.compile_query`.
        stream: the segments laid end to end (``stream.segment_starts``; None: one segment).
        plan: force a plan kind (see :func:`cep.match.find_matches`).

    Raises:
        MatchLimitError: one segment exceeds a limit of ``compiled.limits``.
        StreamError: a column the query reads is missing or malformed.
    """
    pieces = list(iter_segment_matches(compiled, stream, plan=plan))
    if len(pieces) == 1:
        return pieces[0]
    return SegmentMatches(_concat([p.matches for p in pieces], [0] * len(pieces)),
                          np.concatenate([p.segments for p in pieces]).astype(np.int64),
                          all(p.joint for p in pieces))


def iter_segment_matches(compiled: CompiledQuery, stream: EventStream, *,
                         plan: str | None = None) -> Iterator[SegmentMatches]:
    """The matches chunk by chunk (about ``CHUNK_EVENTS`` events of whole segments each), so a
    caller can convert and emit them without holding every match of the stream at once.

    Args and errors as :func:`find_segment_matches`; at least one (maybe empty) result.
    """
    n = len(stream)
    if n == 0 or not stream.segmented:
        single = replace(stream, segment_starts=None)
        found = find_matches(compiled, single, plan=plan) if n else MatchArrays.empty()
        yield SegmentMatches(found, np.zeros(len(found), dtype=np.int64), True)
        return
    starts = np.asarray(stream.segment_starts, dtype=np.int64)
    cuts = _chunks(starts)
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        base = int(starts[a])
        end = int(starts[b]) if b < len(starts) else n
        sub = starts[a:b] - base
        piece = stream if (a, b) == (0, len(starts)) else stream.segment(base, end, sub)
        found = _joint(compiled, piece, sub, plan)
        yield SegmentMatches(_concat([found.matches], [base]), found.segments + a, found.joint)


def _joint(compiled: CompiledQuery, stream: EventStream, starts: np.ndarray, plan: str | None
           ) -> SegmentMatches:
    """One chunk of segments: one call on the segment clock, else one call per segment."""
    ends = np.append(starts[1:], len(stream))
    if len(starts) == 1:
        return _result(find_matches(compiled, replace(stream, segment_starts=None), plan=plan),
                       starts, joint=True)
    shifted = _shift(compiled, stream, starts, ends)
    if shifted is not None:
        joint, clocked = shifted
        try:
            found = find_matches(joint, clocked, plan=plan, event_ts=stream.ts)
        except MatchLimitError:
            found = None
        if found is not None and _within_segments(found, starts):
            return _result(found, starts, joint=True)
    return _one_by_one(compiled, stream, starts, ends, plan)


def _chunks(starts: np.ndarray) -> np.ndarray:
    """Indices into ``starts`` cutting the segments into runs of about ``CHUNK_EVENTS``."""
    chunk_of = starts // CHUNK_EVENTS
    cuts = np.flatnonzero(np.diff(chunk_of)) + 1
    return np.concatenate(([0], cuts, [len(starts)])).astype(np.int64)


def _shift(compiled: CompiledQuery, stream: EventStream, starts: np.ndarray, ends: np.ndarray
           ) -> tuple[CompiledQuery, EventStream] | None:
    """The query and stream on the segment clock, or None when the shift would not be exact."""
    window = compiled.window
    if compiled.normal.window is not None or window.by_events:
        return None
    if window.slide is not None and not isinstance(window.slide, int):
        return None
    ts = np.asarray(stream.ts, dtype=np.int64)
    first_ts = ts[starts]
    last_ts = ts[ends - 1]
    if window.width is None:
        width = int((last_ts - first_ts).max()) + 1
        joint = replace(compiled, window=WindowSpec(False, width, None))
    else:
        width = max(1, int(np.ceil(window.width)))
        joint = compiled
    # Offset step before segment k: enough that it starts `width` after segment k-1 ends.
    gap = np.zeros(len(starts), dtype=np.float64)
    gap[1:] = (last_ts[:-1].astype(np.float64) + width) - first_ts[1:]
    gap = np.maximum(gap, 0.0)
    if window.slide is not None:
        gap = np.ceil(gap / window.slide) * window.slide
    offsets = np.cumsum(gap)
    bound = float(np.abs(ts).max(initial=0)) + float(offsets[-1])
    if bound >= _CLOCK_LIMIT:
        return None
    clock = ts + np.repeat(offsets.astype(np.int64), ends - starts)
    clocked = EventStream(stream.ids, clock, stream.types, stream.attrs, stream.masks)
    return joint, clocked


def _one_by_one(compiled: CompiledQuery, stream: EventStream, starts: np.ndarray,
                ends: np.ndarray, plan: str | None) -> SegmentMatches:
    """The segments as separate partitions, results concatenated (the exact fallback)."""
    parts: list[MatchArrays] = []
    bases: list[int] = []
    for a, b in zip(starts.tolist(), ends.tolist()):
        found = find_matches(compiled, stream.segment(a, b), plan=plan)
        if len(found):
            parts.append(found)
            bases.append(a)
    return _result(_concat(parts, bases), starts, joint=False)


def _concat(parts: list[MatchArrays], bases: list[int]) -> MatchArrays:
    parts, bases = [p for p in parts if len(p)], [b for p, b in zip(parts, bases) if len(p)]
    if not parts:
        return MatchArrays.empty()
    if len(parts) == 1 and bases[0] == 0:
        return parts[0]
    offsets = [np.zeros(1, dtype=np.int64)]
    at = 0
    for p in parts:
        offsets.append(p.offsets[1:] + at)
        at += int(p.offsets[-1])
    return MatchArrays(
        np.concatenate([p.starts + b for p, b in zip(parts, bases)]),
        np.concatenate([p.ends + b for p, b in zip(parts, bases)]),
        np.concatenate(offsets),
        np.concatenate([p.positions + b for p, b in zip(parts, bases)]),
        np.concatenate([p.variables for p in parts]))


def _within_segments(found: MatchArrays, starts: np.ndarray) -> bool:
    # The clock makes a match across segments impossible; should one appear anyway (a bug),
    # the exact fallback answers instead of a wrong result.
    first = np.searchsorted(starts, found.starts, side="right")
    last = np.searchsorted(starts, found.ends, side="right")
    return bool((first == last).all())


def _result(found: MatchArrays, starts: np.ndarray, *, joint: bool) -> SegmentMatches:
    segments = (np.searchsorted(starts, found.starts, side="right") - 1).astype(np.int64)
    return SegmentMatches(found, segments, joint)
