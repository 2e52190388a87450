"""The levels of a sketch tree as batches of columns: leaves made from events, parents made
from complete groups of children (OR of their filters, kept while at most half full), and the
append-only buffers successive tree values share (:mod:`cep.sketch.tree` holds the tree).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


import numpy as np


from cep.sketch.config import SketchConfig
from cep.sketch.errors import SketchInputError


DENSE_CELLS = 1 << 22
"""Distinct (node, name) pairs are found on a dense boolean matrix up to this many cells."""
LEAF_CHUNK_BITS = 1 << 24
"""Leaf filters are set on boolean matrices of at most this many cells at a time."""


def read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + c) for s, c in zip(starts, counts)])`` without a loop."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    before = np.cumsum(counts) - counts
    return np.repeat(np.asarray(starts, dtype=np.int64) - before, counts) + np.arange(total)


def distinct_pairs(node: np.ndarray, code: np.ndarray, n_nodes: int, n_names: int
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``(node, code)`` pairs, sorted by node then code."""
    if len(node) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32)
    if n_nodes * n_names <= max(DENSE_CELLS, 8 * len(node)):
        dense = np.zeros((n_nodes, n_names), dtype=np.bool_)
        dense[node, code] = True
        rows, codes = np.nonzero(dense)
        return rows.astype(np.int64), codes.astype(np.int32)
    key = np.unique(node.astype(np.int64) * n_names + code)
    return key // n_names, (key % n_names).astype(np.int32)


class Store:
    """Append-only column buffers shared by successive tree values.

    ``claimed`` is the length of the newest tree using the buffers: a tree of that length may
    write beyond it (and claims the new rows); any other tree copies first.
    """

    __slots__ = ("columns", "claimed")

    def __init__(self, columns: dict[str, np.ndarray], claimed: int) -> None:
        self.columns = columns
        self.claimed = claimed


def extend(store: Store | None, n: int, new: dict[str, np.ndarray]) -> tuple[Store, int]:
    """The store holding rows ``[:n]`` of ``store`` followed by ``new`` (in place if allowed)."""
    add = len(next(iter(new.values())))
    total = n + add
    if store is not None:
        capacity = len(next(iter(store.columns.values())))
        if store.claimed == n and total <= capacity:
            for name, values in new.items():
                store.columns[name][n:total] = values
            store.claimed = total
            return store, total
    if n == 0:
        # A first batch: its freshly made arrays become the buffers (no copy).
        return Store({name: np.ascontiguousarray(values) for name, values in new.items()},
                      total), total
    capacity = max(total, 2 * n)
    columns = {}
    for name, values in new.items():
        buffer = np.empty((capacity,) + values.shape[1:], dtype=values.dtype)
        buffer[:n] = store.columns[name][:n]  # type: ignore[union-attr]
        buffer[n:total] = values
        columns[name] = buffer
    return Store(columns, total), total


@dataclass
class Level:
    """Nodes of one level, in index order, with their twin pairs (an internal batch)."""

    level: int
    index: np.ndarray
    pos_start: np.ndarray
    pos_end: np.ndarray
    ts_start: np.ndarray
    ts_end: np.ndarray
    n_events: np.ndarray
    bits: np.ndarray
    pair_node: np.ndarray
    pair_code: np.ndarray
    old_row: np.ndarray
    has_parent: np.ndarray

    def __len__(self) -> int:
        return len(self.index)

    @staticmethod
    def concat(first: Level, second: Level) -> Level:
        if not len(first):
            return second
        return Level(
            first.level,
            *(np.concatenate((getattr(first, name), getattr(second, name)))
              for name in ("index", "pos_start", "pos_end", "ts_start", "ts_end", "n_events",
                           "bits")),
            pair_node=np.concatenate((first.pair_node, second.pair_node + len(first))),
            pair_code=np.concatenate((first.pair_code, second.pair_code)),
            old_row=np.concatenate((first.old_row, second.old_row)),
            has_parent=np.concatenate((first.has_parent, second.has_parent)))


def timestamps(ts: Sequence[int] | np.ndarray, n: int) -> np.ndarray:
    """``ts`` as a non-decreasing int64 array of ``n`` entries, or SketchInputError."""
    array = np.asarray(ts)
    if array.ndim != 1:
        raise SketchInputError(f"ts: expected a 1-d array, found {array.ndim}-d")
    if len(array) != n:
        raise SketchInputError(f"ts: expected {n} timestamps (one per name), found {len(array)}")
    if array.dtype.kind == "M":
        array = array.astype("datetime64[us]").view(np.int64)
    elif n and array.dtype.kind not in "iu":
        raise SketchInputError(f"ts: expected integer microseconds, found {array.dtype} values")
    elif array.dtype.kind == "u" and n and int(array.max()) > np.iinfo(np.int64).max:
        raise SketchInputError("ts: values beyond int64")
    array = array.astype(np.int64, copy=False)
    back = np.flatnonzero(array[1:] < array[:-1])
    if len(back):
        i = int(back[0]) + 1
        raise SketchInputError(f"ts: event {i} of the batch has ts {int(array[i])}, before "
                               f"event {i - 1} (ts {int(array[i - 1])}); events must be in "
                               "(ts, id) order")
    return array


def leaf_level(codes: np.ndarray, ts: np.ndarray, first_leaf: int, positions: np.ndarray,
                config: SketchConfig, n_names: int) -> Level:
    """The full leaves of consecutive events (``len(codes)`` is a multiple of ``C``)."""
    c, m = config.C, config.m
    n = len(codes) // c
    index = first_leaf + np.arange(n, dtype=np.int64)
    pair_node, pair_code = distinct_pairs(np.arange(len(codes), dtype=np.int64) // c, codes,
                                           n, n_names)
    bits = np.empty((n, m // 8), dtype=np.uint8)
    step = max(1, LEAF_CHUNK_BITS // m)
    k = positions.shape[1]
    for lo_leaf in range(0, n, step):
        hi_leaf = min(n, lo_leaf + step)
        lo, hi = np.searchsorted(pair_node, [lo_leaf, hi_leaf])
        dense = np.zeros((hi_leaf - lo_leaf, m), dtype=np.bool_)
        dense[np.repeat(pair_node[lo:hi] - lo_leaf, k), positions[pair_code[lo:hi]].reshape(-1)] = True
        bits[lo_leaf:hi_leaf] = np.packbits(dense, axis=1, bitorder="little")
    return Level(0, index, index * c, index * c + (c - 1), ts[::c][:n].copy(),
                  ts[c - 1::c][:n].copy(), np.full(n, c, dtype=np.int64), bits,
                  pair_node, pair_code, np.full(n, -1, dtype=np.int64),
                  np.zeros(n, dtype=np.bool_))


def parents(pool: Level, level: int, config: SketchConfig, n_names: int) -> Level:
    """The nodes of ``level`` whose ``f`` children are all in ``pool`` and whose OR is at most
    half full; marks ``pool.has_parent``."""
    f, m = config.fanout, config.m
    n = len(pool)
    group = pool.index // f
    if n:
        starts = np.flatnonzero(np.concatenate(([True], group[1:] != group[:-1])))
        counts = np.diff(np.append(starts, n))
        complete = starts[counts == f]
    else:
        complete = np.zeros(0, dtype=np.int64)
    child = complete[:, None] + np.arange(f)
    merged = np.bitwise_or.reduce(pool.bits[child], axis=1) if len(complete) else \
        np.zeros((0, m // 8), dtype=np.uint8)
    keep = np.bitwise_count(merged).sum(axis=1, dtype=np.int64) <= m // 2
    child, merged = child[keep], merged[keep]
    return merged_level(pool, level, child, merged, group[child[:, 0]], n_names)


def neighbour_parents(pool: Level, level: int, config: SketchConfig, n_names: int) -> Level:
    """The nodes of ``level`` that the thesis's Algorithm 2 makes from ``pool``; marks
    ``pool.has_parent``.

    Baltus 2021, section 4.1, Algorithm 2: two neighbouring top-level nodes of one level merge
    when the OR of their filters has at most ``m/2`` bits set. Run leaf by leaf, a node is
    tried against its left neighbour when it is made, so along the nodes of one level the
    pairs taken are the greedy left-to-right choice over the pairs that fit: in a run of
    consecutive fitting pairs, the first, third, fifth... Neighbours must be adjacent in the
    stream (a lower top-level node between them keeps them apart). The new node's index is
    its first leaf.
    """
    m = config.m
    n = len(pool)
    if n < 2:
        return merged_level(pool, level, np.zeros((0, 2), dtype=np.int64),
                             np.zeros((0, m // 8), dtype=np.uint8),
                             np.zeros(0, dtype=np.int64), n_names)
    fits = pool.pos_start[1:] == pool.pos_end[:-1] + 1
    step = max(1, LEAF_CHUNK_BITS // m)
    for lo in range(0, n - 1, step):
        hi = min(n - 1, lo + step)
        ones = np.bitwise_count(pool.bits[lo:hi] | pool.bits[lo + 1:hi + 1]).sum(
            axis=1, dtype=np.int64)
        fits[lo:hi] &= ones <= m // 2
    pair = np.arange(n - 1, dtype=np.int64)
    run_start = np.maximum.accumulate(np.where(np.concatenate(([True], ~fits[:-1])), pair, 0))
    left = np.flatnonzero(fits & ((pair - run_start) % 2 == 0))
    child = np.stack((left, left + 1), axis=1)
    merged = pool.bits[left] | pool.bits[left + 1]
    return merged_level(pool, level, child, merged, pool.index[left], n_names)


def merged_level(pool: Level, level: int, child: np.ndarray, merged: np.ndarray,
                  index: np.ndarray, n_names: int) -> Level:
    """The new nodes of ``level``: node ``i`` has the pool rows ``child[i]`` (in position
    order), the filter ``merged[i]`` and the index ``index[i]``; marks ``pool.has_parent``."""
    n = len(pool)
    n_new = len(child)
    pool.has_parent[child.reshape(-1)] = True
    parent_of = np.full(n, -1, dtype=np.int64)
    parent_of[child] = np.arange(n_new, dtype=np.int64)[:, None]
    owner = parent_of[pool.pair_node]
    chosen = owner >= 0
    pair_node, pair_code = distinct_pairs(owner[chosen], pool.pair_code[chosen], n_new, n_names)
    return Level(
        level, index.astype(np.int64), pool.pos_start[child[:, 0]], pool.pos_end[child[:, -1]],
        pool.ts_start[child].min(axis=1) if n_new else np.zeros(0, dtype=np.int64),
        pool.ts_end[child].max(axis=1) if n_new else np.zeros(0, dtype=np.int64),
        pool.n_events[child].sum(axis=1), merged, pair_node, pair_code,
        np.full(n_new, -1, dtype=np.int64), np.zeros(n_new, dtype=np.bool_))
