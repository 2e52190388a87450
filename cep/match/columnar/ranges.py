"""Candidate ranges: which events of a sorted buffer may follow (or precede) a partial match.

Order, the link (``next``: the very next position; ``followed``: any later one), the window and
the NOTs without conditions narrow the candidates of the next component to one contiguous slice
of its buffer per row, found with ``searchsorted``. Both the evaluation of a plan
(:mod:`cep.match.run.any_match`) and the cost model that samples the partition to choose one
(:mod:`cep.match.plan.estimator`) count pairs this way, so they agree on what a pair is.

Example:
    >>> import numpy as np
    >>> from cep.match.columnar.data import StreamData
    >>> from cep.match.compile.program import WindowSpec
    >>> from cep.match.columnar.stream import EventStream
    >>> s = EventStream.from_columns(ids=range(6), ts=range(6), types=list("ABABAB"))
    >>> r = Ranges(WindowSpec(True, 3, None), StreamData(s, None), (), lambda alias: np.array([], dtype=np.int64))
    >>> bs, starts = np.array([1, 3, 5]), np.array([0, 2])
    >>> [x.tolist() for x in r.after(bs, starts, starts, "followed", ())]
    [[0, 1], [1, 2]]
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from cep.lang.ast import NEXT
from cep.match.columnar.data import StreamData
from cep.match.columnar.joins import next_after, prev_before
from cep.match.compile.program import WindowSpec

# "No next negated event": beyond every position, and small enough not to overflow int64 sums.
NONE = np.iinfo(np.int64).max // 4


class Ranges:
    """The candidate ranges of one shape on one partition.

    Args:
        window: WITHIN / SLIDE of the query.
        data: the partition.
        equivalences: the ``[attr]`` attributes (they make a NOT's range depend on the match).
        buffer: alias -> its sorted buffer (for the negated aliases).
    """

    def __init__(self, window: WindowSpec, data: StreamData, equivalences: Sequence[str],
                 buffer: Callable[[str], np.ndarray]) -> None:
        self.window = window
        self.data = data
        self.equivalences = tuple(equivalences)
        self.buffer = buffer

    def after(self, starts: np.ndarray, first: np.ndarray, end: np.ndarray, link: str,
              gaps: Sequence) -> tuple[np.ndarray, np.ndarray]:
        """Per row, the index range of ``starts`` (sorted) that may follow ``end``."""
        lo = np.searchsorted(starts, end, side="right")
        if link == NEXT:
            hi = np.searchsorted(starts, end + 1, side="right")
            return lo, hi
        width = self.window.width
        if width is None:
            hi = np.full(len(end), len(starts), dtype=np.int64)
        elif self.window.by_events:
            hi = np.searchsorted(starts, first + width, side="left")
        else:
            hi = np.searchsorted(self.data.ts[starts], self.data.ts[first] + width, side="left")
        for gap in gaps:
            if gap.simple and not self.equivalences:
                for neg_alias in gap.negation.aliases:
                    nxt = next_after(self.buffer(neg_alias), end, NONE)
                    hi = np.minimum(hi, np.searchsorted(starts, nxt, side="right"))
        return lo, hi

    def before(self, buf: np.ndarray, start: np.ndarray, end: np.ndarray, link: str,
               gaps: Sequence) -> tuple[np.ndarray, np.ndarray]:
        """Per row, the index range of ``buf`` (sorted) that may precede ``start`` in a row
        ending at ``end`` (the mirror of :meth:`after`)."""
        hi = np.searchsorted(buf, start, side="left")
        if link == NEXT:
            lo = np.searchsorted(buf, start - 1, side="left")
            return lo, hi
        width = self.window.width
        if width is None:
            lo = np.zeros(len(start), dtype=np.int64)
        elif self.window.by_events:
            lo = np.searchsorted(buf, end - width, side="right")
        else:
            lo = np.searchsorted(self.data.ts[buf], self.data.ts[end] - width, side="right")
        for gap in gaps:
            if gap.simple and not self.equivalences:
                # Not before the last negated event before the row's first one.
                for neg_alias in gap.negation.aliases:
                    prv = prev_before(self.buffer(neg_alias), start, -1)
                    lo = np.maximum(lo, np.searchsorted(buf, prv, side="left"))
        return lo, hi
