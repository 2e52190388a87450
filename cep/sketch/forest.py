"""The query trees of many streams as one columnar value, restored and cut without a per-stream call.

A process-mining table holds ~10^5 short streams (cases of ~10 events); answering a sketch
query one stream at a time (:func:`cep.sketch.stored.stored_tree`, then
:func:`cep.sketch.units.cut`, then :func:`cep.sketch.evaluate.evaluate_units`) costs ~0.2 ms of
Python per stream, more than exact matching of the raw events (issue 20). A :class:`Forest`
holds the stored node rows of every stream of a partition together, in post-order within each
stream, and each step runs once over all of them:

* :func:`restore_forest` checks, with whole-column comparisons, everything
  :func:`~cep.sketch.stored.stored_tree` checks for one stream (one configuration, ids that
  match ``(level, idx)``, intervals and counts that match the level, no node twice, top-level
  nodes that cover the full leaves in order, every node under each top, an open leaf that
  fits). It answers ``None`` when a check fails or when the streams do not share one
  configuration: the caller then takes the per-stream path, whose error names the stream and
  the node. The batch path never accepts rows that path refuses (property-tested).
* :func:`cut_forest` is :func:`~cep.sketch.units.cut` over all streams. Post-order makes the
  children of a node computable: under a complete subtree of ``1 + f + ... + f^L`` rows ending
  at the node, child ``j`` ends ``(j + 1)`` child-subtrees after the subtree's first row.

The units of all streams, stream after stream, with their bounds, go to
:func:`cep.sketch.evaluate.evaluate_streams`.

Example:
    >>> from cep.sketch import SketchConfig, SketchTree, compile_sketch_query
    >>> from cep.sketch.evaluate import evaluate_streams
    >>> cfg = SketchConfig(m=64, k=2, C=2)
    >>> trees = [SketchTree.build(list("ABACB"), range(5), cfg),
    ...          SketchTree.build(list("CCA"), range(3), cfg)]
    >>> cols, bits, bounds = stored_columns(trees)
    >>> forest = restore_forest(cols, bits, bounds)
    >>> units, unit_bounds = cut_forest(forest, ("A", "B"))
    >>> q = compile_sketch_query("PATTERN A; B")
    >>> evaluate_streams(q, units, unit_bounds, mode="exists").tolist()
    [True, False]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from cep.sketch.bloom import has_positions
from cep.sketch.config import NEIGHBOURS, SketchConfig
from cep.sketch.errors import SketchConfigError
from cep.sketch.hashing import positions_of
from cep.sketch.stored import cached_config, merge_of_rows, subtree_sizes
from cep.sketch.tree import MAX_INDEX, SketchTree
from cep.sketch.units import Units, expand_rows, make_node_id


@dataclass(frozen=True, eq=False)
class Forest:
    """The twin-less query trees of many streams (one configuration), columnar.

    Attributes:
        config: The streams' shared settings.
        bounds: ``S + 1`` offsets: the node rows of stream ``s`` are ``bounds[s] ..
            bounds[s + 1] - 1``, in post-order (sorted by ``pos_end``, then level).
        level, index, pos_start, pos_end, ts_start, ts_end: The node rows (int64).
        is_top: The node rows that are top-level nodes.
        bits: The node rows' packed filters, uint8 ``(rows, m // 8)``.
        open_index, open_events, open_ts_start, open_ts_end: Each stream's open leaf (its
            number, its event count, 0 and its timestamps when it holds events).
        open_bits: Each stream's open-leaf filter, uint8 ``(S, m // 8)``.
    """

    config: SketchConfig
    bounds: np.ndarray
    level: np.ndarray
    index: np.ndarray
    pos_start: np.ndarray
    pos_end: np.ndarray
    ts_start: np.ndarray
    ts_end: np.ndarray
    is_top: np.ndarray
    bits: np.ndarray
    open_index: np.ndarray
    open_events: np.ndarray
    open_ts_start: np.ndarray
    open_ts_end: np.ndarray
    open_bits: np.ndarray

    @property
    def n_streams(self) -> int:
        """How many streams the forest holds."""
        return len(self.bounds) - 1


def restore_forest(cols: Mapping[str, np.ndarray], bits: np.ndarray, bounds: np.ndarray
                   ) -> Forest | None:
    """The forest of the stored rows of many streams, or ``None`` when the rows need the
    per-stream path (see the module docstring).

    Args:
        cols: Per-row columns, rows grouped by stream: ``node_id``, ``level``, ``idx``,
            ``pos_start``, ``pos_end``, ``ts_start``, ``ts_end`` (int64 microseconds),
            ``n_events``, ``is_top``, ``is_open``, ``m``, ``k``, ``config_version``, ``seeds``
            (2-d, one row per node row) and ``ts_valid`` (timestamps not NULL).
        bits: The rows' decoded filters, uint8 ``(rows, m // 8)``.
        bounds: ``S + 1`` row offsets of the streams (each stream at least one row).

    Returns:
        The forest, or ``None``: the streams do not share one configuration, or some check
        fails (the per-stream path then names the stream, the node and the fault).
    """
    n = len(bounds) - 1
    if n < 1 or bool(np.any(np.diff(bounds) < 1)):
        return None  # no stream, or a stream without rows
    config = _shared_config(cols, bits)
    if config is None:
        return None
    stream = np.repeat(np.arange(n, dtype=np.int64), np.diff(bounds))
    level, index = cols["level"], cols["idx"]
    is_open = np.asarray(cols["is_open"], dtype=np.bool_)
    if (np.bincount(stream[is_open], minlength=n) > 1).any():
        return None
    if (level.min() < 0 or level.max() > 62 or index.min() < 0 or index.max() > MAX_INDEX
            or bool(np.any(cols["node_id"] != ((level << 48) | index)))):
        return None
    full = np.flatnonzero(~is_open)
    if not bool(np.all(cols["ts_valid"][full])):
        return None
    nodes = _post_order(cols, stream, full, config)
    if nodes is None:
        return None
    order, node_bounds = nodes
    opened = _open_leaves(cols, stream, is_open, n, config)
    if opened is None:
        return None
    open_index, open_events, open_start, open_end, open_rows = opened
    if not _covered(cols, order, node_bounds, open_index, config):
        return None
    # The open leaf may not start before the stream's last node ends (its last top).
    last = node_bounds[1:] - 1
    has_nodes = np.diff(node_bounds) > 0
    late = has_nodes & (open_events > 0)
    if bool(np.any(open_start[late] < cols["ts_end"][order[last[late]]])):
        return None
    open_bits = np.zeros((n, bits.shape[1]), dtype=np.uint8)
    open_bits[stream[open_rows]] = bits[open_rows]
    pick = {name: np.asarray(cols[name], dtype=np.int64)[order]
            for name in ("level", "idx", "pos_start", "pos_end", "ts_start", "ts_end")}
    return Forest(config, node_bounds, pick["level"], pick["idx"], pick["pos_start"],
                  pick["pos_end"], pick["ts_start"], pick["ts_end"],
                  np.asarray(cols["is_top"], dtype=np.bool_)[order], bits[order],
                  open_index, open_events, open_start, open_end, open_bits)


def _shared_config(cols: Mapping[str, np.ndarray], bits: np.ndarray) -> SketchConfig | None:
    """The one configuration of every row, or None (see :func:`cep.sketch.stored.config_of_rows`
    for one stream's rule: ``C`` from a full leaf, ``fanout`` from a level-1 node)."""
    m, k, version = cols["m"], cols["k"], cols["config_version"]
    seeds = np.asarray(cols["seeds"], dtype=np.int64).reshape(len(m), -1)
    if not (np.all(m == m[0]) and np.all(k == k[0]) and np.all(version == version[0])
            and np.all(seeds == seeds[0])) or bits.shape[1] * 8 != int(m[0]):
        return None
    full = ~np.asarray(cols["is_open"], dtype=np.bool_)
    level, events = cols["level"], cols["n_events"]
    leaves = events[full & (level == 0)]
    c = int(leaves[0]) if len(leaves) else int(events[~full].max(initial=0)) + 1
    ones = events[full & (level == 1)]
    fanout = int(ones[0]) // c if len(ones) and c else 2
    merge = merge_of_rows(level[full], cols["idx"][full], cols["pos_start"][full], c, fanout)
    try:
        return cached_config(int(m[0]), int(k[0]), tuple(int(s) for s in seeds[0]), c, fanout,
                             int(version[0]), merge)
    except SketchConfigError:
        return None


def _post_order(cols: Mapping[str, np.ndarray], stream: np.ndarray, full: np.ndarray,
                config: SketchConfig) -> tuple[np.ndarray, np.ndarray] | None:
    """The node rows sorted by (stream, pos_end, level) and their stream bounds, after checking
    each node's interval and count against its level and index, and that none is there twice."""
    level, index = cols["level"][full], cols["idx"][full]
    c, f = config.C, config.fanout
    top_level = int(level.max(initial=0))
    widths = [c * f ** lv for lv in range(top_level + 1)]
    if max(widths) * (int(index.max(initial=0)) + 2) >= (1 << 62):
        return None  # int64 could overflow: the per-stream path computes exactly
    width = np.array(widths, dtype=np.int64)[level]
    start = index * (c if config.merge == NEIGHBOURS else width)
    if bool(np.any((cols["pos_start"][full] != start) | (cols["pos_end"][full] != start + width - 1)
                   | (cols["n_events"][full] != width)
                   | (cols["ts_start"][full] > cols["ts_end"][full]))):
        return None
    order = full[np.lexsort((level, cols["pos_end"][full], stream[full]))]
    s, e, lv = stream[order], cols["pos_end"][order], cols["level"][order]
    if bool(np.any((s[1:] == s[:-1]) & (e[1:] == e[:-1]) & (lv[1:] == lv[:-1]))):
        return None
    counts = np.bincount(s, minlength=int(stream[-1]) + 1)  # every stream has a row
    return order, np.concatenate(([0], np.cumsum(counts))).astype(np.int64)


def _open_leaves(cols: Mapping[str, np.ndarray], stream: np.ndarray, is_open: np.ndarray,
                 n: int, config: SketchConfig
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Per stream: the open leaf's number (``-1``: no open row), events and timestamps, and
    the open rows; None when an open row does not fit (count outside ``0 .. C-1``, timestamps
    missing or reversed while it holds events)."""
    rows = np.flatnonzero(is_open)
    events = cols["n_events"][rows]
    busy = events > 0
    if bool(np.any((events < 0) | (events >= config.C))):
        return None
    if bool(np.any(~cols["ts_valid"][rows][busy])) or bool(np.any(
            cols["ts_start"][rows][busy] > cols["ts_end"][rows][busy])):
        return None
    at = stream[rows]
    open_index = np.full(n, -1, dtype=np.int64)
    open_index[at] = cols["idx"][rows]
    open_events = np.zeros(n, dtype=np.int64)
    open_events[at] = events
    open_start = np.zeros(n, dtype=np.int64)
    open_end = np.zeros(n, dtype=np.int64)
    open_start[at[busy]] = cols["ts_start"][rows][busy]
    open_end[at[busy]] = cols["ts_end"][rows][busy]
    return open_index, open_events, open_start, open_end, rows


def _covered(cols: Mapping[str, np.ndarray], order: np.ndarray, node_bounds: np.ndarray,
             open_index: np.ndarray, config: SketchConfig) -> bool:
    """Every stream's top-level nodes cover positions ``0 .. open_index * C - 1`` in order
    without gaps, and each top has every node of its subtree and nothing else.

    ``open_index`` is replaced in place, for streams without an open row, by the number of
    full leaves (as :func:`cep.sketch.stored.stored_tree` does); then it is every stream's
    open-leaf number.
    """
    n = len(node_bounds) - 1
    per_stream = np.diff(node_bounds)
    stream = np.repeat(np.arange(n, dtype=np.int64), per_stream)
    level = cols["level"][order]
    pos_start, pos_end = cols["pos_start"][order], cols["pos_end"][order]
    last = node_bounds[1:] - 1
    has = per_stream > 0
    missing_open = open_index < 0
    open_index[missing_open & ~has] = 0
    fill = missing_open & has
    open_index[fill] = (pos_end[last[fill]] + 1) // config.C
    if bool(np.any(open_index[~has] != 0)):
        return False  # no node rows, but the open leaf is not leaf 0
    tops = np.flatnonzero(np.asarray(cols["is_top"], dtype=np.bool_)[order])
    top_stream = stream[tops]
    if bool(np.any(np.bincount(top_stream, minlength=n)[has] == 0)):
        return False
    # The last row of each stream is a top: no row lies after the last top.
    is_top = np.zeros(len(order), dtype=bool)
    is_top[tops] = True
    if bool(np.any(~is_top[last[has]])):
        return False
    first = np.ones(len(tops), dtype=bool)
    first[1:] = top_stream[1:] != top_stream[:-1]
    ends_here = np.ones(len(tops), dtype=bool)
    ends_here[:-1] = top_stream[1:] != top_stream[:-1]
    starts, ends = pos_start[tops], pos_end[tops]
    if bool(np.any(starts[first] != 0)) or bool(np.any(starts[1:][~first[1:]]
                                                       != ends[:-1][~first[1:]] + 1)):
        return False
    if bool(np.any(ends[ends_here] != open_index[top_stream[ends_here]] * config.C - 1)):
        return False
    # Each top's rows: from the row after the previous top (or the stream's first row) to it.
    segment = np.where(first, node_bounds[:-1][top_stream], np.concatenate(([0], tops[:-1] + 1)))
    top_level = level[tops]
    sizes = subtree_sizes(config.fanout)
    if bool(np.any(tops - segment + 1 != sizes[top_level])):
        return False
    return not bool(np.any(np.maximum.reduceat(level, segment) > top_level))


def cut_forest(forest: Forest, names: Sequence[str], level: int = 0, *, prune: bool = True
               ) -> tuple[Units, np.ndarray]:
    """:func:`cep.sketch.units.cut` (Bloom membership) of every stream of ``forest`` at once.

    Args:
        forest: The streams' trees.
        names: The names the query mentions (positive and negated).
        level: The accuracy level ``>= 0``.
        prune: Do not expand nodes that hold none of ``names`` (same answer, fewer units).

    Returns:
        ``(units, bounds)``: the units of every stream, stream after stream, each stream's in
        position order with its open leaf last; stream ``s`` owns units ``bounds[s] ..
        bounds[s + 1] - 1``.
    """
    names = list(dict.fromkeys(names))
    cfg = forest.config
    positions = positions_of(None, names, cfg.m, cfg.seeds or ())
    member = {name: has_positions(forest.bits, positions[i]) for i, name in enumerate(names)}
    needed = np.zeros(len(forest.level), dtype=bool)
    for col in member.values():
        needed |= col
    sizes = subtree_sizes(cfg.fanout)

    def children(parents: np.ndarray, offset: np.ndarray) -> np.ndarray:
        # A complete subtree ends at its root; child j's subtree is the (j + 1)-th block of
        # sizes[L - 1] rows from the subtree's first row.
        lv = forest.level[parents]
        return parents - sizes[lv] + (offset + 1) * sizes[lv - 1]

    rows = expand_rows(np.flatnonzero(forest.is_top), forest.level, needed if prune else None,
                       level, cfg.fanout, children)
    node_stream = np.repeat(np.arange(forest.n_streams, dtype=np.int64), np.diff(forest.bounds))
    opened = np.flatnonzero(forest.open_events > 0)
    open_start = forest.open_index[opened] * cfg.C
    unit_stream = np.concatenate((node_stream[rows], opened))
    kind = np.concatenate((np.zeros(len(rows), dtype=np.int8), np.ones(len(opened), dtype=np.int8)))
    place = np.lexsort((kind, unit_stream))  # stable: a stream's nodes keep their order

    def both(node_values: np.ndarray, open_values: np.ndarray) -> np.ndarray:
        return np.concatenate((node_values[rows], open_values)).astype(np.int64)[place]

    node_id = both(make_node_id(forest.level, forest.index), forest.open_index[opened])
    levels = both(forest.level, np.zeros(len(opened), dtype=np.int64)).astype(np.int8)
    membership = {}
    for i, name in enumerate(names):
        open_member = has_positions(forest.open_bits[opened], positions[i])
        membership[name] = np.concatenate((member[name][rows], open_member))[place]
    units = Units(node_id, levels, both(forest.pos_start, open_start),
                  both(forest.pos_end, open_start + forest.open_events[opened] - 1),
                  both(forest.ts_start, forest.open_ts_start[opened]),
                  both(forest.ts_end, forest.open_ts_end[opened]), membership)
    counts = np.bincount(unit_stream, minlength=forest.n_streams)
    return units, np.concatenate(([0], np.cumsum(counts))).astype(np.int64)


def stored_columns(trees: Sequence[SketchTree]) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """The stored rows of several streams' trees, as the nodes table holds them (node rows, then
    an ``is_open`` row when the open leaf holds events), grouped by stream: ``(cols, bits,
    bounds)`` for :func:`restore_forest` (examples and tests)."""
    parts: list[dict[str, np.ndarray]] = []
    blocks, sizes = [], []
    for tree in trees:
        leaf, cfg = tree.open_leaf, tree.config
        extra = 1 if leaf.n_events else 0
        n = len(tree) + extra

        def add(values: np.ndarray, last: int) -> np.ndarray:
            return np.append(np.asarray(values, dtype=np.int64), [last] * extra).astype(np.int64)

        parts.append({
            "node_id": add(tree.node_id, leaf.node_id), "level": add(tree.level, 0),
            "idx": add(tree.index, leaf.index), "pos_start": add(tree.pos_start, leaf.pos_start),
            "pos_end": add(tree.pos_end, leaf.pos_end),
            "ts_start": add(tree.ts_start, leaf.ts_start or 0),
            "ts_end": add(tree.ts_end, leaf.ts_end or 0),
            "n_events": add(tree.n_events, leaf.n_events),
            "is_top": np.concatenate((np.asarray(tree.is_top, dtype=bool), np.zeros(extra, bool))),
            "is_open": np.arange(n) >= n - extra,
            "m": np.full(n, cfg.m, dtype=np.int64), "k": np.full(n, cfg.k, dtype=np.int64),
            "config_version": np.full(n, cfg.config_version, dtype=np.int64),
            "seeds": np.tile(np.asarray(cfg.seeds or (), dtype=np.int64), (n, 1)),
            "ts_valid": np.ones(n, dtype=bool)})
        blocks.append(np.vstack([tree.bits, leaf.bits[None, :]][:1 + extra]))
        sizes.append(n)
    cols = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
    bounds = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    return cols, np.vstack(blocks), bounds
