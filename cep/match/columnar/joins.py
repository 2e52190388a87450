"""Time-ordered, vectorised joins of partial matches (the SEQ operator of ZStream/FAEM plans).

A :class:`Block` is a set of partial matches with one static layout: a 2-D array of bound
positions (rows: partial matches, columns: bound events in increasing position order) and,
per column, the bound slot and alias. A SEQ join of a left block with a right block keeps the
pairs with ``end(left) < start(right)``; because the right rows are sorted by their start,
the candidates of each left row are one contiguous range found with two ``searchsorted``
calls (ZStream, Mei & Madden, SIGMOD 2009: sequence joins over time-ordered buffers). The range is narrowed by the link (``next``: start = end + 1), by the window
(start before ``first(left) + W``) and by the next negated event (a NOT without conditions:
start at or before it). The pairs are then materialised with ``np.repeat`` and offsets, after
the limit on partial matches was checked on their count.

Example:
    >>> import numpy as np
    >>> rows, idx = expand_ranges(np.array([0, 2]), np.array([2, 5]))
    >>> rows.tolist(), idx.tolist()
    ([0, 0, 1, 1, 1], [0, 1, 2, 3, 4])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cep.match.limits import MatchLimits, check_partial


@dataclass(frozen=True, eq=False)
class Block:
    """Partial matches with one layout.

    Attributes:
        first, last: ordinals of the first and last bound slot the block covers.
        layout: per column, ``(slot ordinal, alias)``.
        pos: int64 ``(n, len(layout))`` bound positions, increasing along each row.
    """

    first: int
    last: int
    layout: tuple[tuple[int, str], ...]
    pos: np.ndarray

    def __len__(self) -> int:
        return len(self.pos)

    @property
    def start(self) -> np.ndarray:
        """Position of each row's first bound event."""
        return self.pos[:, 0]

    @property
    def end(self) -> np.ndarray:
        """Position of each row's last bound event."""
        return self.pos[:, -1]

    def rows(self, keep: np.ndarray) -> "Block":
        """The block restricted to rows ``keep`` (a boolean mask or an index array)."""
        return Block(self.first, self.last, self.layout, self.pos[keep])

    def variables(self, kleene: frozenset[int]) -> tuple[str, ...]:
        """Match variables of the columns: the alias, or ``alias[k]`` in Kleene slots."""
        out = []
        counts: dict[tuple[int, str], int] = {}
        for slot, alias in self.layout:
            if slot in kleene:
                k = counts[(slot, alias)] = counts.get((slot, alias), 0) + 1
                out.append(f"{alias}[{k}]")
            else:
                out.append(alias)
        return tuple(out)


def expand_ranges(lo: np.ndarray, hi: np.ndarray, limits: MatchLimits | None = None,
                  where: str = "") -> tuple[np.ndarray, np.ndarray]:
    """For each row ``r``, the indexes ``lo[r] .. hi[r]-1``, flattened.

    Returns ``(rows, idx)``: ``rows[k]`` is the row a pair belongs to and ``idx[k]`` the
    index inside the range. The count is checked against ``limits.max_partial_matches``
    before anything is materialised.
    """
    counts = np.maximum(hi - lo, 0)
    total = int(counts.sum())
    if limits is not None:
        check_partial(limits, total, where)
    rows = np.repeat(np.arange(len(lo), dtype=np.int64), counts)
    starts = np.cumsum(counts) - counts
    idx = np.arange(total, dtype=np.int64) - np.repeat(starts - lo, counts)
    return rows, idx


def next_after(buffer: np.ndarray, positions: np.ndarray, none: int) -> np.ndarray:
    """For each position, the first buffer position after it (``none`` when there is none)."""
    k = np.searchsorted(buffer, positions, side="right")
    out = np.full(len(positions), none, dtype=np.int64)
    has = k < len(buffer)
    out[has] = buffer[k[has]]
    return out


def prev_before(buffer: np.ndarray, positions: np.ndarray, none: int) -> np.ndarray:
    """For each position, the last buffer position before it (``none`` when there is none)."""
    k = np.searchsorted(buffer, positions, side="left") - 1
    out = np.full(len(positions), none, dtype=np.int64)
    has = k >= 0
    out[has] = buffer[k[has]]
    return out


def count_between(buffer: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """How many buffer positions lie strictly between ``left`` and ``right`` (row by row)."""
    return np.maximum(np.searchsorted(buffer, right, side="left")
                      - np.searchsorted(buffer, left, side="right"), 0)
