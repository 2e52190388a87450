"""Plan switching within a partition: one join plan per span of start positions.

FAEM (Behravesh et al., seed 001, Introduction and Conclusion) credits part of its speed to
"dynamically switching to an optimal plan" as the event populations change, which NFA engines
cannot do. Our cost model (``shape_planner.py``) samples the first events of whatever data it
is given; with one plan per partition, a partition whose mix changes after its first
``SAMPLE_EVENTS`` keeps a plan chosen for the beginning. Under a ``WITHIN`` window a match
spans less than the window, so the partition can be cut into spans of ``every`` start
positions: the span ``[a, b)`` owns the matches whose first single event lies in it, and
needs only the events from one window before ``a`` (a closure that precedes its first single
event, grouped policy only) to one window after ``b``. Each span is planned on its own sample
(its own buffer sizes, pair fractions and selectivities), and the union of the owned matches
is the partition's answer.

Example:
    >>> import numpy as np
    >>> from cep.match.columnar.data import StreamData
    >>> from cep.match.compile.program import WindowSpec
    >>> from cep.match.columnar.stream import EventStream
    >>> s = EventStream.from_columns(ids=range(10), ts=range(10), types=list("ABABABABAB"))
    >>> [(p.a, p.b, p.data.lo, p.data.hi) for p in spans(StreamData(s, None),
    ...  WindowSpec(True, 3, None), every=4, before=False)]
    [(0, 4, 0, 7), (4, 8, 4, 10), (8, 10, 8, 10)]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cep.match.columnar.data import StreamData
from cep.match.compile.program import WindowSpec

__all__ = ["SWITCH_EVENTS", "Span", "owned", "spans"]

SWITCH_EVENTS = 65_536
"""Start positions per span: the planner re-samples once per this many events."""


@dataclass(frozen=True)
class Span:
    """Start positions ``[a, b)`` and the data their matches can read."""

    a: int
    b: int
    data: StreamData


def spans(data: StreamData, window: WindowSpec, every: int | None,
          before: bool) -> list[Span]:
    """The spans of ``data`` (one, the whole partition, when there is no window or it is
    short); ``before``: the data reaches one window back too (a closure may precede the first
    single event)."""
    if every is None or window.width is None or data.hi - data.lo <= every:
        return [Span(data.lo, data.hi, data)]
    width = window.width
    out = []
    for a in range(data.lo, data.hi, every):
        b = min(a + every, data.hi)
        if window.by_events:
            lo = a - int(np.ceil(width)) if before else a
            hi = b + int(np.ceil(width))
        else:
            lo = int(np.searchsorted(data.ts, data.ts[a] - width, side="right")) if before \
                else a
            hi = int(np.searchsorted(data.ts, data.ts[b - 1] + width, side="left"))
        out.append(Span(a, b, data.narrowed(lo, hi)))
    return out


def owned(pos: np.ndarray, column: int, span: Span) -> np.ndarray:
    """The rows of ``pos`` whose ``column`` (the first single event) lies in ``span``."""
    first = pos[:, column]
    return pos[(first >= span.a) & (first < span.b)]
