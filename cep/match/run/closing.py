"""When a match of a pattern that ends in NOT may be reported: once its window has closed.

A trailing ``NOT(X)`` says that no X follows the last bound event before the window of the
match's first event closes (docs/semantics.md, "Windows"). The end of the input is not that
close: an offer sent three days before the newest event, with ``NOT(answer) WITHIN 20 DAYS``,
may still be answered. So such a match is reported only when its window has closed:

- ``WITHIN n EVENTS``: the partition (key) holds at least ``n`` events from the match's first
  event on, so every position the window covers is known;
- ``WITHIN w`` in time or raw units: the newest event time of the whole input, over every key,
  is at least ``ts(first) + w``. Only the caller knows that time (in Spark SQL, the JVM shim
  computes it once before the tasks run: ``udfs.facts``).

A match whose window is still open is withheld; a later call over more events reports it.
For one key, the open matches are the last ones in ``match_id`` order (their first events are
the latest), so the reported ones keep their ``match_id`` 1, 2, ...

Example:
    >>> from cep.match import EventStream, compile_query, find_matches
    >>> s = EventStream.from_columns(ids=range(4), ts=[0, 1, 6, 8], types=list("ABAB"), attrs={})
    >>> cq = compile_query("PATTERN A; B; NOT(C) WITHIN 5 UNITS")
    >>> found = find_matches(cq, s)
    >>> found.to_matches()
    [Match(positions=(0, 1), variables=('A', 'B')), Match(positions=(2, 3), variables=('A', 'B'))]
    >>> open_windows(cq, found, s, np.zeros(2, dtype=np.int64), newest=8).tolist()
    [False, True]
"""

from __future__ import annotations

import numpy as np

from cep.lang.ast import Not, PatternNode, Seq, Timed
from cep.match.columnar.arrays import MatchArrays
from cep.match.columnar.stream import EventStream
from cep.match.compile.program import CompiledQuery


def ends_in_not(node: PatternNode) -> bool:
    """True when the pattern's last element is a NOT (so its matches wait for the window).

    Example:
        >>> from cep.lang import parse_pattern
        >>> ends_in_not(parse_pattern("PATTERN a; NOT(b) WITHIN 3 EVENTS").pattern)
        True
        >>> ends_in_not(parse_pattern("PATTERN a; NOT(b); c").pattern)
        False
    """
    if isinstance(node, Not):
        return True
    if isinstance(node, Seq):
        return ends_in_not(node.parts[-1])
    if isinstance(node, Timed):
        return ends_in_not(node.part)
    return False


def needs_newest(compiled: CompiledQuery) -> bool:
    """True when reporting a match needs the input's newest event time (a time window)."""
    return ends_in_not(compiled.query.pattern) and not compiled.window.by_events


def open_windows(compiled: CompiledQuery, matches: MatchArrays, stream: EventStream,
                 segments: np.ndarray, newest: int | float | None = None) -> np.ndarray:
    """Which matches still have an open window (a boolean per match; all False unless the
    pattern ends in NOT).

    Args:
        compiled: the compiled query.
        matches: matches found in ``stream``.
        stream: the (segmented) stream.
        segments: the segment of each match (zeros for an unsegmented stream).
        newest: the newest event time of the whole input, in the stream's unit; needed for a
            time window (:func:`needs_newest`).

    Raises:
        ValueError: a time window and no ``newest``.
    """
    out = np.zeros(len(matches), dtype=bool)
    width = compiled.window.width
    if not len(matches) or width is None or not ends_in_not(compiled.query.pattern):
        return out
    if compiled.window.by_events:
        bounds = stream.segment_starts
        ends = (np.append(np.asarray(bounds, dtype=np.int64)[1:], len(stream))
                if bounds is not None else np.full(1, len(stream), dtype=np.int64))
        return (ends[segments] - matches.starts) < width
    if newest is None:
        raise ValueError("a pattern ending in NOT with a time window needs the newest event time")
    return (newest - stream.ts[matches.starts]) < width


def closed_only(matches: MatchArrays, keep: np.ndarray) -> MatchArrays:
    """The matches where ``keep`` is True, in their order.

    Example:
        >>> m = MatchArrays(np.array([0, 2]), np.array([1, 3]), np.array([0, 2, 4]),
        ...                 np.array([0, 1, 2, 3]), np.array(list("abab"), dtype=object))
        >>> closed_only(m, np.array([False, True])).to_matches()
        [Match(positions=(2, 3), variables=('a', 'b'))]
    """
    if keep.all():
        return matches
    lengths = np.diff(matches.offsets)[keep]
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    owner = np.repeat(keep, np.diff(matches.offsets))
    return MatchArrays(matches.starts[keep], matches.ends[keep], offsets,
                       matches.positions[owner], matches.variables[owner])
