"""The partition as the matcher reads it: columns as (values, NULL mask), buffers per alias.

:class:`StreamData` is the only mutable state of a ``find_matches`` call besides the partial
matches: a cache of converted columns and of the *buffers* (sorted positions whose event can
fill an alias: class membership plus the alias's single-event conditions, or the mask Spark
computed for it), all restricted to ``WINDOW [a, b]``.

Attribute names resolve like the oracle: ``ts`` is the timestamp column, ``type`` the type
column (both case-insensitive, before any attribute of that name), everything else an
attribute column of the stream (case-insensitive).

Example:
    >>> from cep.match.columnar.stream import EventStream
    >>> s = EventStream.from_columns(ids=range(4), ts=[0, 5, 5, 9], types=list("ABAB"),
    ...                              attrs={"v": [1.0, None, 3.0, 4.0]})
    >>> d = StreamData(s, None)
    >>> d.value("V")[1].tolist(), d.class_positions("A").tolist()
    ([False, True, False, False], [0, 2])
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from cep.lang.ast import WindowBounds
from cep.match.columnar.stream import EventStream
from cep.match.compile.expr import Value, column_value, take
from cep.match.errors import StreamError


class StreamData:
    """Converted columns, class memberships and buffers of one partition (a per-call cache).

    Args:
        stream: the partition.
        window: the query's ``WINDOW [a, b]`` restriction, or None.
        event_ts: the timestamps conditions read (``t(a)``, ``a.ts``) when ``stream.ts`` is a
            segmented clock (``segments.py``); None: ``stream.ts`` itself.

    Attributes:
        lo, hi: the first and one past the last position ``WINDOW`` keeps.
    """

    def __init__(self, stream: EventStream, window: WindowBounds | None,
                 event_ts: np.ndarray | None = None) -> None:
        self.stream = stream
        self.n = len(stream)
        # The clock windows measure; conditions read ``event_ts`` (equal unless segmented).
        self.ts = np.asarray(stream.ts, dtype=np.int64)
        self.event_ts = self.ts if event_ts is None else np.asarray(event_ts, dtype=np.int64)
        self.lo, self.hi = _restriction(self.ts, window)
        self._values: dict[str, Value] = {}
        self._classes: dict[str, np.ndarray] = {}
        self.buffers: dict[str, np.ndarray] = {}

    def narrowed(self, lo: int, hi: int) -> StreamData:
        """The same partition read only on ``[lo, hi)`` (inside the current restriction),
        sharing the converted columns; positions stay the partition's."""
        part = StreamData.__new__(StreamData)
        part.stream, part.n, part.ts, part.event_ts = self.stream, self.n, self.ts, self.event_ts
        part.lo = max(self.lo, lo)
        part.hi = max(part.lo, min(self.hi, hi))
        part._values, part._classes, part.buffers = self._values, {}, {}
        return part

    # -- columns ----------------------------------------------------------------------------
    def value(self, attr: str) -> Value:
        """Column ``attr`` as (values, NULL mask) over the whole partition (cached)."""
        key = attr.lower()
        cached = self._values.get(key)
        if cached is not None:
            return cached
        if key == "ts":
            raw = self.event_ts
        elif key == "type":
            raw = np.asarray(self.stream.types, dtype=object)
        else:
            try:
                raw = self.stream.attr(attr)
            except KeyError as err:
                raise StreamError(str(err.args[0])) from None
        values, nulls = column_value(np.asarray(raw))
        full = (values, np.zeros(self.n, dtype=bool) if nulls is None else nulls)
        self._values[key] = full
        return full

    def at(self, attr: str, positions: np.ndarray) -> Value:
        """Column ``attr`` at ``positions`` (any shape)."""
        return take(self.value(attr), positions)

    # -- classes and buffers ----------------------------------------------------------------
    def class_positions(self, cls: str) -> np.ndarray:
        """Sorted positions inside the window whose type column equals ``cls``."""
        cached = self._classes.get(cls)
        if cached is None:
            types = self.stream.types[self.lo:self.hi]
            cached = np.flatnonzero(types == cls).astype(np.int64) + self.lo
            self._classes[cls] = cached
        return cached

    def buffer(self, alias: str, build: Callable[[], np.ndarray]) -> np.ndarray:
        """The buffer of ``alias``: sorted positions that can fill it (built once per call)."""
        cached = self.buffers.get(alias)
        if cached is None:
            cached = self.buffers[alias] = build()
        return cached

    def mask_positions(self, mask: np.ndarray) -> np.ndarray:
        """Positions inside the window where a precomputed boolean mask is true."""
        return np.flatnonzero(np.asarray(mask[self.lo:self.hi], dtype=bool)).astype(np.int64) + self.lo


def _restriction(ts: np.ndarray, window: WindowBounds | None) -> tuple[int, int]:
    n = len(ts)
    if window is None:
        return 0, n
    if window.kind == "POSITION":
        lo = max(0, int(window.start))
        hi = min(n, int(window.end) + 1)
        return lo, max(lo, hi)
    lo_ts, hi_ts = window.microseconds()  # type: ignore[misc]
    lo = int(np.searchsorted(ts, lo_ts, side="left"))
    hi = int(np.searchsorted(ts, hi_ts, side="right"))
    return lo, max(lo, hi)
