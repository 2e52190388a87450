"""Node ids of a sketch tree: ``node_id = (level << 48) | index``, and the arithmetic of a
node's children and first leaves (Baltus 2021, section 3.2: a node at level ``l`` covers
``f ** l`` leaves of ``C`` events; neighbour parents, section 3.3, cover overlapping runs).

Example:
    >>> int(node_ids(2, 5)), [int(x) for x in split_node_ids(node_ids(2, 5))]
    (562949953421317, [2, 5])
"""

from __future__ import annotations


import numpy as np


from cep.sketch.config import NEIGHBOURS, SketchConfig


ID_SHIFT = 48
"""``node_id = (level << ID_SHIFT) | index``."""
MAX_INDEX = (1 << ID_SHIFT) - 1


def node_ids(level: np.ndarray | int, index: np.ndarray | int) -> np.ndarray:
    """``(level << 48) | index`` as int64.

    Example:
        >>> node_ids(np.array([0, 2]), np.array([5, 1])).tolist()
        [5, 562949953421313]
    """
    return (np.asarray(level, dtype=np.int64) << ID_SHIFT) | np.asarray(index, dtype=np.int64)


def split_node_ids(ids: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
    """``(level, index)`` of node ids.

    Example:
        >>> [a.tolist() for a in split_node_ids(np.array([5, 562949953421313]))]
        [[0, 2], [5, 1]]
    """
    ids = np.asarray(ids, dtype=np.int64)
    return ids >> ID_SHIFT, ids & MAX_INDEX


def first_leaves(level: np.ndarray | int, index: np.ndarray | int, config: SketchConfig
                 ) -> np.ndarray:
    """The number of the first leaf under each node ``(level, index)``.

    Under ``merge="aligned"`` node ``(L, g)`` starts at leaf ``g * f**L``; under
    ``merge="neighbours"`` a node's index *is* its first leaf (pairs merge wherever they
    stand, so no multiple of ``2**L`` can be assumed).

    Example:
        >>> first_leaves([0, 2], [5, 1], SketchConfig(m=64, k=1, C=4)).tolist()
        [5, 4]
        >>> first_leaves([0, 2], [5, 1], SketchConfig(m=64, k=1, C=4, merge="neighbours")).tolist()
        [5, 1]
    """
    level = np.asarray(level, dtype=np.int64)
    index = np.asarray(index, dtype=np.int64)
    if config.merge == NEIGHBOURS:
        return index.copy()
    return index * np.power(np.int64(config.fanout), level)


def child_index(level: np.ndarray, index: np.ndarray, offset: np.ndarray,
                config: SketchConfig) -> np.ndarray:
    """Index (at ``level - 1``) of child ``offset`` of inner nodes ``(level, index)``
    (arrays broadcast together).

    Example:
        >>> child_index(np.array([2]), np.array([1]), np.array([1]), SketchConfig(m=64, k=1, C=4)).tolist()
        [3]
        >>> cfg = SketchConfig(m=64, k=1, C=4, merge="neighbours")
        >>> child_index(np.array([2]), np.array([1]), np.array([1]), cfg).tolist()
        [3]
        >>> child_index(np.array([3]), np.array([1]), np.array([1]), cfg).tolist()
        [5]
    """
    level = np.asarray(level, dtype=np.int64)
    index = np.asarray(index, dtype=np.int64)
    offset = np.asarray(offset, dtype=np.int64)
    if config.merge == NEIGHBOURS:  # the right child starts 2**(level-1) leaves later
        return index + offset * np.left_shift(np.int64(1), np.maximum(level - 1, 0))
    return index * config.fanout + offset


def child_indices(level: np.ndarray, index: np.ndarray, config: SketchConfig) -> np.ndarray:
    """Indices (at ``level - 1``) of the ``f`` children of inner nodes: int64 ``(n, f)``.

    Example:
        >>> child_indices(np.array([2]), np.array([1]), SketchConfig(m=64, k=1, C=4)).tolist()
        [[2, 3]]
        >>> cfg = SketchConfig(m=64, k=1, C=4, merge="neighbours")
        >>> child_indices(np.array([2]), np.array([1]), cfg).tolist()
        [[1, 3]]
    """
    level = np.asarray(level, dtype=np.int64)[:, None]
    index = np.asarray(index, dtype=np.int64)[:, None]
    return child_index(level, index, np.arange(config.fanout, dtype=np.int64)[None, :], config)
