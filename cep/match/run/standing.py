"""One key's standing pattern advanced over its new events: each match and timeout once.

A standing pattern (docs/standing.md) is matched step after step, each step over the events a
key carried from the steps before and its new ones. All mutable state is passed in and handed
back (the carried events, where the open starts begin, how many matches were reported), so a
step is a pure function of its inputs and the job that calls it (``jobs/state/match.py``)
stores that state between runs.

Definitions, for a start position ``p`` (an event of the key, in ``(ts, id)`` order):

- ``p`` is **resolved** once no event still to come can change what starts there. ``WITHIN w``
  binds events with ``ts - ts[p] < w``, so with a time window ``p`` is resolved once the
  watermark (the newest event time seen, minus the allowed lateness) reaches ``ts[p] + w``;
  with ``WITHIN n EVENTS`` once the key holds the event ``n - 1`` places after ``p``.
- A step reports the matches whose start it resolves, numbered on from the key's earlier
  matches: ``match_id`` is then the number ``match_seq`` gives the same match over the whole
  history (matches are numbered in start order), and a match keeps it from the run that
  reports it on. A match whose start is not resolved waits, even when it is complete, so that
  no later match can take a smaller number.
- A **timeout** is a resolved start from which the pattern has no match but a prefix of its
  top-level sequence has one (:mod:`cep.match.compile.standing`): ``A; B WITHIN 20 DAYS``
  reports each ``A`` with no ``B`` in its 20 days. It names the longest such prefix (the
  components reached), the events of its first match from ``p`` (in match order), and when the
  window closed: ``ts[p] + w``, or the time of the event that closed an ``EVENTS`` window.

Example:
    >>> from cep.match.columnar.stream import EventStream
    >>> from cep.match.compile.standing import compile_standing
    >>> program = compile_standing("PATTERN A; B WITHIN 10 UNITS")
    >>> s = EventStream.from_columns(ids=[1, 2, 3, 4], ts=[0, 4, 7, 30], types=list("ABAC"))
    >>> step = advance(program, s, open_from=0, emitted=0, watermark=30)
    >>> [m.positions for m in step.matches.to_matches()], step.match_ids.tolist()
    ([(0, 1)], [1])
    >>> [(t.start, t.positions, t.components, t.closed_at) for t in step.timeouts]
    [(2, (2,), 1, 17)]
    >>> step.resolved, step.keep_from
    (3, 3)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from cep.match.columnar.arrays import MatchArrays
from cep.match.columnar.stream import EventStream
from cep.match.compile.standing import StandingProgram
from cep.match.run.closing import closed_only
from cep.match.run.engine import find_matches


@dataclass(frozen=True)
class Timeout:
    """A resolved start with no match but a matching prefix.

    Attributes:
        start: the start position.
        positions: the bound positions of the prefix's first match from ``start``.
        variables: their variables (``a``, ``b[2]``), as ``match_seq`` names them.
        components: how many components of the top-level sequence the prefix holds.
        closed_at: when the window closed (the stream's time unit).
    """

    start: int
    positions: tuple[int, ...]
    variables: tuple[str, ...]
    components: int
    closed_at: int | float


@dataclass(frozen=True)
class StandingStep:
    """What one step found and what the next one needs.

    Attributes:
        matches: the matches whose start this step resolved, in ``match_id`` order.
        match_ids: their ``match_id`` (numbered on from ``emitted``).
        timeouts: the timeouts of the starts this step resolved, in start order.
        resolved: positions ``0 .. resolved - 1`` are resolved after the step.
        keep_from: the first position the next step still needs (carry ``stream[keep_from:]``
            and pass ``open_from = resolved - keep_from``).
    """

    matches: MatchArrays
    match_ids: np.ndarray
    timeouts: tuple[Timeout, ...]
    resolved: int
    keep_from: int


def advance(program: StandingProgram, stream: EventStream, *, open_from: int, emitted: int,
            watermark: int | float | None) -> StandingStep:
    """One step of a key's standing pattern (module docstring).

    Args:
        program: from :func:`cep.match.compile.standing.compile_standing`.
        stream: the key's carried events, then its new ones, sorted by ``(ts, id)``.
        open_from: the first position whose start no earlier step resolved (the carried
            events before it are there for the windows that reach back over them).
        emitted: how many matches of this key earlier steps reported.
        watermark: the newest event time seen minus the lateness; None when no time is known
            yet (a time window then resolves nothing).

    Raises:
        MatchLimitError, StreamError: as :func:`cep.match.find_matches`.
    """
    window = program.compiled.window
    resolved = _resolved(window.by_events, window.width, stream.ts, open_from, watermark)
    found = find_matches(program.compiled, stream)
    now = (found.starts >= open_from) & (found.starts < resolved)
    matches = closed_only(found, now) if len(found) else found
    ids = np.arange(emitted + 1, emitted + 1 + len(matches), dtype=np.int64)
    matched = set(found.starts[now].tolist())
    waiting = [p for p in range(open_from, resolved) if p not in matched]
    timeouts = _timeouts(program, stream, waiting, window.by_events, window.width)
    keep_from = _keep_from(window.by_events, window.width, stream.ts, resolved, watermark,
                           open_from)
    return StandingStep(matches, ids, timeouts, resolved, keep_from)


def resolves_at(program: StandingProgram, stream: EventStream, step: StandingStep
                ) -> int | float | None:
    """The lowest watermark at which a step with no new events would resolve a start again.

    A key whose next step brings no event and whose watermark stays below this reports
    nothing and keeps what it carries, so a job may leave it out of the step. None: only new
    events can resolve its next start (an ``EVENTS`` window), or no start is open.

    Example:
        >>> from cep.match.compile.standing import compile_standing
        >>> program = compile_standing("PATTERN A; B WITHIN 10 UNITS")
        >>> s = EventStream.from_columns(ids=[1, 2], ts=[0, 6], types=list("AC"))
        >>> step = advance(program, s, open_from=0, emitted=0, watermark=12)
        >>> step.resolved, resolves_at(program, s, step)
        (1, 16)
    """
    window = program.compiled.window
    if window.width is None or window.by_events or step.resolved >= len(stream):
        return None
    return stream.ts[step.resolved].item() + window.width


def _events_width(width: int | float) -> int:
    """How many events from a start an ``EVENTS`` window can hold (``pos - p < width``)."""
    return max(int(math.ceil(width)), 1)


def _resolved(by_events: bool, width: int | float | None, ts: np.ndarray, open_from: int,
              watermark: int | float | None) -> int:
    """The number of leading positions resolved: each one whose window has closed."""
    n = len(ts)
    if width is None:  # compile_standing refuses it; nothing would ever close
        return open_from
    if by_events:
        return max(open_from, n - _events_width(width) + 1)
    if watermark is None:
        return open_from
    return max(open_from, int(np.searchsorted(ts, watermark - width, side="right")))


def _closed_at(by_events: bool, width: int | float, ts: np.ndarray, start: int) -> int | float:
    if by_events:
        return int(ts[start + _events_width(width) - 1])
    return ts[start].item() + width


def _timeouts(program: StandingProgram, stream: EventStream, waiting: list[int],
              by_events: bool, width: int | float | None) -> tuple[Timeout, ...]:
    """The timeouts of the resolved starts without a match: the longest prefix from each."""
    if not waiting or width is None:
        return ()
    best: dict[int, Timeout] = {}
    wanted = set(waiting)
    for prefix in reversed(program.prefixes):  # longest first: the first found is the answer
        if not wanted:
            break
        found = find_matches(prefix.compiled, stream)
        for k in range(len(found)):
            start = int(found.starts[k])
            if start not in wanted:
                continue
            lo, hi = int(found.offsets[k]), int(found.offsets[k + 1])
            best[start] = Timeout(start, tuple(int(p) for p in found.positions[lo:hi]),
                                  tuple(str(v) for v in found.variables[lo:hi]),
                                  prefix.components,
                                  _closed_at(by_events, width, stream.ts, start))
            wanted.discard(start)
    return tuple(best[p] for p in waiting if p in best)


def _keep_from(by_events: bool, width: int | float | None, ts: np.ndarray, resolved: int,
               watermark: int | float | None, open_from: int) -> int:
    """The first position a later step may need: every open start, and the events within one
    window before the first of them (a window that reaches back over them)."""
    n = len(ts)
    if width is None:
        return min(open_from, resolved)
    if by_events:
        return max(0, resolved - _events_width(width) + 1)
    if resolved < n:
        anchor = ts[resolved]
    elif watermark is not None:
        anchor = watermark  # later events are no older than the watermark
    else:
        return resolved
    return int(np.searchsorted(ts, anchor - width, side="right"))
