"""Per-row views of partial matches and sorted position sets: the small vectorised steps the
skip-till-next-match engine (:mod:`cep.match.run.next_match`) repeats per component.

Example:
    >>> import numpy as np
    >>> union([np.array([1, 4]), np.array([2, 4])]).tolist()
    [1, 2, 4]
    >>> member(np.array([1, 4]), np.array([4, 5])).tolist()
    [True, False]
    >>> first_per_group(np.array([3, 3, 5, 7, 7])).tolist()
    [0, 2, 3]
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from cep.match.columnar.bindings import View
from cep.match.compile.program import Negation

__all__ = ["after_first", "append_to_view", "distinct", "first_of", "first_per_group", "member",
           "union"]


def union(parts: Sequence[np.ndarray]) -> np.ndarray:
    parts = [p for p in parts if len(p)]
    if not parts:
        return np.zeros(0, dtype=np.int64)
    if len(parts) == 1:
        return parts[0]
    return np.unique(np.concatenate(parts))


def member(buffer: np.ndarray, pos: np.ndarray) -> np.ndarray:
    if not len(buffer):
        return np.zeros(len(pos), dtype=bool)
    k = np.searchsorted(buffer, pos, side="left")
    return buffer[np.minimum(k, len(buffer) - 1)] == pos


def append_to_view(view: View, alias: str, pos: np.ndarray) -> None:
    counts = view.count[alias]
    matrix = view.pos[alias]
    need = int(counts.max()) + 1 if len(counts) else 1
    if need > matrix.shape[1]:
        grown = np.zeros((view.n, need), dtype=np.int64)
        grown[:, :matrix.shape[1]] = matrix
        matrix = grown
    else:
        matrix = matrix.copy()
    matrix[np.arange(view.n), counts] = pos
    view.pos[alias] = matrix
    view.count[alias] = counts + 1


def first_of(view: View, aliases: Sequence[str]) -> np.ndarray:
    first = np.full(view.n, np.iinfo(np.int64).max, dtype=np.int64)
    for a in aliases:
        has = view.count[a] >= 1
        first = np.where(has, np.minimum(first, view.pos[a][:, 0]), first)
    return first


def after_first(view: View, slots: Sequence, neg: Negation, aliases: Sequence[str]) -> np.ndarray:
    after = np.full(view.n, -1, dtype=np.int64)
    for slot in slots:
        if slot.component < neg.component:
            continue
        for a in slot.aliases:
            has = view.count[a] >= 1
            after = np.where(has & (after < 0), view.pos[a][:, 0], after)
    return after


def distinct(values: np.ndarray) -> list[int]:
    """Sorted distinct values of a small int array (cheaper than np.unique for a few runs)."""
    if len(values) <= 64:
        return sorted(set(values.tolist()))
    return np.unique(values).tolist()


def first_per_group(groups: np.ndarray) -> np.ndarray:
    """Indexes of the first element of each run of equal values (``groups`` sorted)."""
    if not len(groups):
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.concatenate(([True], groups[1:] != groups[:-1])))

