"""Columnar match results: the engine's output, sorted in ``match_id`` order and deduplicated.

Matches arrive as *blocks*: a 2-D array of bound positions (one row per match, columns in
increasing position order) plus the variable of each column, shared by every row of the block.
:func:`assemble` concatenates blocks, orders them by (start, end, positions, variables) like
:func:`cep.match.result.order_matches`, drops duplicates (alternatives of an AND or an OR can
find the same match twice) and flattens them into ragged arrays.

Example:
    >>> import numpy as np
    >>> m = assemble([(np.array([[4, 7], [1, 2]]), ("a", "b")),
    ...               (np.array([[1, 2]]), ("a", "b"))])
    >>> len(m), m.starts.tolist(), m.offsets.tolist()
    (2, [1, 4], [0, 2, 4])
    >>> m.to_matches()[1]
    Match(positions=(4, 7), variables=('a', 'b'))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from cep.match.result import Match

Block = tuple[np.ndarray, Sequence[str]]


@dataclass(frozen=True, eq=False)
class MatchArrays:
    """Matches of one partition as flat arrays, in ``match_id`` order.

    Attributes:
        starts: int64 position of each match's first bound event.
        ends: int64 position of each match's last bound event.
        offsets: int64, ``len(matches) + 1`` entries; match ``k`` owns
            ``positions[offsets[k]:offsets[k + 1]]`` and the same slice of ``variables``.
        positions: int64 bound positions, increasing within a match.
        variables: object array of the variable bound at each position (``a``, ``b[2]``).
    """

    starts: np.ndarray
    ends: np.ndarray
    offsets: np.ndarray
    positions: np.ndarray
    variables: np.ndarray

    def __len__(self) -> int:
        return len(self.starts)

    def to_matches(self) -> list[Match]:
        """The matches as :class:`Match` values, in ``match_id`` order."""
        pos = self.positions.tolist()
        var = self.variables.tolist()
        bounds = self.offsets.tolist()
        return [Match(tuple(pos[a:b]), tuple(var[a:b])) for a, b in zip(bounds[:-1], bounds[1:])]

    @classmethod
    def empty(cls) -> "MatchArrays":
        """No matches."""
        z = np.zeros(0, dtype=np.int64)
        return cls(z, z, np.zeros(1, dtype=np.int64), z, np.zeros(0, dtype=object))


def assemble(blocks: Iterable[Block]) -> MatchArrays:
    """Order, deduplicate and flatten blocks of matches (see the module docstring)."""
    parts = [(np.asarray(p, dtype=np.int64), tuple(v)) for p, v in blocks if len(p)]
    if not parts:
        return MatchArrays.empty()
    if len(parts) == 1:
        return _single(*parts[0])
    width = max(p.shape[1] for p, _ in parts)
    ranked = sorted({v for _, v in parts})
    rank = {v: k for k, v in enumerate(ranked)}
    total = sum(len(p) for p, _ in parts)
    padded = np.full((total, width), -1, dtype=np.int64)
    widths = np.empty(total, dtype=np.int64)
    var_rank = np.empty(total, dtype=np.int64)
    at = 0
    for p, v in parts:
        n, w = p.shape
        padded[at:at + n, :w] = p
        widths[at:at + n] = w
        var_rank[at:at + n] = rank[v]
        at += n
    ends = padded[np.arange(total), widths - 1]
    keys = [var_rank] + [padded[:, c] for c in range(width - 1, -1, -1)] + [ends, padded[:, 0]]
    order = np.lexsort(keys)
    padded, widths, var_rank, ends = padded[order], widths[order], var_rank[order], ends[order]
    if total > 1:
        same = (var_rank[1:] == var_rank[:-1]) & (padded[1:] == padded[:-1]).all(axis=1)
        keep = np.concatenate(([True], ~same))
        padded, widths, var_rank, ends = padded[keep], widths[keep], var_rank[keep], ends[keep]
    offsets = np.zeros(len(widths) + 1, dtype=np.int64)
    np.cumsum(widths, out=offsets[1:])
    valid = np.arange(width)[None, :] < widths[:, None]
    positions = padded[valid]
    var_table = np.empty((len(ranked), width), dtype=object)
    for k, v in enumerate(ranked):
        var_table[k, :len(v)] = v
    variables = var_table[var_rank][valid]
    return MatchArrays(padded[:, 0].copy(), ends, offsets, positions, variables)


def _single(pos: np.ndarray, variables: tuple[str, ...]) -> MatchArrays:
    """One block: order its rows and drop repeated rows (all share the same variables)."""
    n, w = pos.shape
    order = np.lexsort([pos[:, c] for c in range(w - 1, -1, -1)] + [pos[:, -1], pos[:, 0]])
    pos = pos[order]
    if n > 1:
        keep = np.concatenate(([True], (pos[1:] != pos[:-1]).any(axis=1)))
        pos = pos[keep]
    n = len(pos)
    offsets = np.arange(0, n * w + 1, w, dtype=np.int64)
    row = np.empty(w, dtype=object)
    row[:] = variables
    return MatchArrays(pos[:, 0].copy(), pos[:, -1].copy(), offsets, pos.reshape(-1).copy(),
                       np.tile(row, n))
