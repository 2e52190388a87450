"""One partition of events as columns, sorted by ``(ts, id)``: the input of every engine.

Example:
    >>> import numpy as np
    >>> s = EventStream.from_columns(ids=[3, 1, 2], ts=[10, 10, 5], types=["B", "A", "A"],
    ...                              attrs={"price": [1.0, 2.0, 3.0]})
    >>> s.ids.tolist(), s.types.tolist(), s.attr("PRICE").tolist()
    ([2, 1, 3], ['A', 'A', 'B'], [3.0, 2.0, 1.0])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from cep.match.errors import StreamError


@dataclass(frozen=True, eq=False)
class EventStream:
    """Events of one partition; position ``pos`` is the index into these arrays.

    Attributes:
        ids: int64 event ids (the tiebreak of equal timestamps).
        ts: int64 timestamps: microseconds since the epoch for TIMESTAMP columns, raw values
            for numeric ones (windows in ``UNITS``).
        types: object array of event type names (``None`` allowed).
        attrs: attribute columns by name; lookups ignore case, as Spark does.
        masks: optional precomputed booleans per alias (``"<alias>"``) or class
            (``"class:<name>"``): Spark's evaluation of pushed-down single-event conditions.
            An engine uses a mask instead of evaluating the same conditions itself.
        segment_starts: None for one partition; else several partitions (*segments*, e.g.
            keys) laid end to end, each sorted by ``(ts, id)``: the first position of each,
            strictly increasing from 0 (``cep.match.run.segments``).
    """

    ids: np.ndarray
    ts: np.ndarray
    types: np.ndarray
    attrs: Mapping[str, np.ndarray] = field(default_factory=dict)
    masks: Mapping[str, np.ndarray] = field(default_factory=dict)
    segment_starts: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.ids)
        for name, column in [("ts", self.ts), ("types", self.types), *self.attrs.items(),
                             *self.masks.items()]:
            if len(column) != n:
                raise StreamError(f"column {name!r}: expected {n} values, found {len(column)}")
        if self.segment_starts is not None:
            starts = np.asarray(self.segment_starts)
            if n and (len(starts) == 0 or starts[0] != 0 or bool((np.diff(starts) <= 0).any())
                      or starts[-1] >= n):
                raise StreamError(f"segment starts must increase strictly from 0 and stay "
                                  f"below {n}")
        if n > 1:
            order_ok = (self.ts[1:] > self.ts[:-1]) | (
                (self.ts[1:] == self.ts[:-1]) & (self.ids[1:] > self.ids[:-1]))
            if self.segment_starts is not None:
                order_ok[np.asarray(self.segment_starts, dtype=np.int64)[1:] - 1] = True
            if not bool(order_ok.all()):
                bad = int(np.argmin(order_ok)) + 1
                raise StreamError(f"events must be sorted by (ts, id) with unique ids; position "
                                  f"{bad} (id {int(self.ids[bad])}) breaks the order")

    @property
    def segmented(self) -> bool:
        """True when the stream holds several segments (``segment_starts`` has 2 or more)."""
        return self.segment_starts is not None and len(self.segment_starts) > 1

    def segment(self, a: int, b: int, starts: np.ndarray | None = None) -> "EventStream":
        """Positions ``a:b`` as a stream of their own: one segment, or the segments that start
        at ``starts`` (positions relative to ``a``)."""
        return EventStream(self.ids[a:b], self.ts[a:b], self.types[a:b],
                           {k: v[a:b] for k, v in self.attrs.items()},
                           {k: v[a:b] for k, v in self.masks.items()}, starts)

    def __len__(self) -> int:
        return len(self.ids)

    def attr(self, name: str) -> np.ndarray:
        """The attribute column ``name`` (case-insensitive); KeyError lists the columns."""
        if name in self.attrs:
            return self.attrs[name]
        lowered = {k.lower(): k for k in self.attrs}
        if name.lower() in lowered:
            return self.attrs[lowered[name.lower()]]
        raise KeyError(f"unknown attribute {name!r}; columns: {', '.join(sorted(self.attrs))}")

    @classmethod
    def from_columns(cls, ids: Sequence[int] | np.ndarray, ts: Sequence[int] | np.ndarray,
                     types: Sequence[Any] | np.ndarray,
                     attrs: Mapping[str, Sequence[Any] | np.ndarray] | None = None,
                     masks: Mapping[str, Sequence[bool] | np.ndarray] | None = None
                     ) -> "EventStream":
        """Build a stream from unsorted columns, sorting by ``(ts, id)``."""
        ids_a = np.asarray(ids, dtype=np.int64)
        ts_a = np.asarray(ts, dtype=np.int64)
        order = np.lexsort((ids_a, ts_a))
        types_a = np.asarray(types, dtype=object)[order]
        attrs_a = {k: _column(v)[order] for k, v in (attrs or {}).items()}
        masks_a = {k: np.asarray(v, dtype=bool)[order] for k, v in (masks or {}).items()}
        return cls(ids_a[order], ts_a[order], types_a, attrs_a, masks_a)


def _column(values: Sequence[Any] | np.ndarray) -> np.ndarray:
    array = np.asarray(values)
    if array.dtype.kind in "US":
        return array.astype(object)
    return array
