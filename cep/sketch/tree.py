"""The Bloom-filter tree of one stream, with its exact-set twin (docs/sketch.md sections 1-3).

A :class:`SketchTree` is columnar: one numpy array per node attribute, one entry per node.

========================  =====================================================================
attribute                 meaning
========================  =====================================================================
``level``                 int8, 0 for leaves
``index``                 int64, ``g``: the node's number within its level (leaf ``j`` holds
                          positions ``j*C .. j*C + C - 1``; node ``(L, g)`` has the children
                          ``(L-1, g*f) .. (L-1, g*f + f - 1)``)
``node_id``               int64, ``(level << 48) | index``
``pos_start, pos_end``    int64, first and last position covered (inclusive)
``ts_start, ts_end``      int64, timestamps (microseconds) of the first and last event covered
``n_events``              int64, events covered (``C * f**level``)
``is_top``                bool, the node exists and its parent does not
``bits``                  uint8 ``(n_nodes, m // 8)``, the packed Bloom filter of each node
``twin_row, twin_code``   the exact-set twin as sorted ``(row, code)`` pairs: name
                          ``vocabulary[code]`` occurs under node ``row``
``vocabulary``            the stream's distinct names (sorted), including the open leaf's
========================  =====================================================================

**Rows** are in post-order: sorted by ``(pos_end, level)``, so children come before their parent,
the rows of one level are in ``index`` (= position) order, and the top-level nodes are in
position order. Appending events only ever *appends* rows (and clears ``is_top`` on nodes that
got a parent); it never moves or changes an existing row.

The **open leaf** (the last ``< C`` events) is not a node: :attr:`SketchTree.open_leaf` is an
:class:`OpenLeaf` with its positions, timestamps, names and Bloom filter. The top-level nodes
followed by the open leaf cover the stream in order, without overlap.

A node exists exactly when all ``f`` children exist and the OR of their filters has at most
``m / 2`` bits set (docs/sketch.md section 3). Building is vectorised: names are factorised, each
distinct name is hashed once, leaf filters are set on a boolean matrix and packed, and each
level is made from the one below with a few numpy operations (group by ``g // f``, keep the
complete groups, OR, popcount). :meth:`SketchTree.build` is :meth:`SketchTree.append` on an empty
tree, and ``append`` only touches the new events, the open leaf and the top-level nodes.

Queries: :meth:`member` (Bloom: all ``k`` bits set, per node) and :meth:`twin_member` (exact),
:meth:`children`, :meth:`parent_rows`, :meth:`top_rows`, :meth:`rows_at`, :meth:`rows_of`.

**Restoring from storage.** The Delta nodes table keeps no exact sets (a sketch keeps no raw
events). :meth:`SketchTree.restore` rebuilds a *twin-less* tree (``has_twin`` False; the twin
methods raise :class:`~cep.sketch.errors.TwinUnavailableError`) from stored node columns: either
every row plus a summary of the open leaf (a query tree), or only the top-level rows plus the
open leaf's events, the **frontier** (:meth:`SketchTree.frontier`). ``append`` reads nothing
but the top-level rows and the open leaf, so appending to the frontier adds exactly the rows,
and clears exactly the ``is_top`` flags, that appending to the full tree does (property-tested).

Values are immutable: every array attribute is a read-only view. ``append`` returns a new tree;
successive trees may share buffers (capacity doubling), but only rows beyond the old tree's
length are ever written, so the old tree is unchanged.

Example (``C = 2``, ``f = 2``):
    >>> cfg = SketchConfig(m=64, k=2, C=2)
    >>> tree = SketchTree.build(["A", "B", "A", "C", "B", "D", "E"], range(7), cfg)
    >>> tree.level.tolist(), tree.index.tolist(), tree.is_top.tolist()
    ([0, 0, 1, 0], [0, 1, 0, 2], [False, False, True, True])
    >>> [tree.twin_names(r) for r in tree.top_rows()], tree.open_leaf.names
    ([('A', 'B', 'C'), ('B', 'D')], ('E',))
    >>> tree.twin_member("C").tolist(), tree.member("C").tolist()
    ([False, True, True, False], [False, True, True, False])
    >>> tree.index[tree.children(2)].tolist(), int(tree.node_id[2]) == (1 << 48) | 0
    ([0, 1], True)
    >>> tree.append(["F"], [7]) == SketchTree.build(list("ABACBDEF"), range(8), cfg)
    True
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

import numpy as np

from cep.sketch.bloom import BloomFilter, has_positions
from cep.sketch.config import NEIGHBOURS, SketchConfig
from cep.sketch.errors import SketchConfigError, SketchInputError, TwinUnavailableError
from cep.sketch.hashing import Hasher, positions_of
from cep.sketch.levels import (Level, Store, extend, leaf_level, neighbour_parents, parents,
                               ranges, read_only, timestamps)
from cep.sketch.node_ids import (ID_SHIFT, MAX_INDEX, child_index, child_indices, node_ids,
                                 split_node_ids)
from cep.sketch.names import factorize, merge_vocabularies
from cep.sketch.open_leaf import OpenLeaf
from cep.sketch.restored import (RESTORE_COLUMNS, check_restored, restored_columns,
                                 restored_last_ts, restored_open_leaf, restored_store)

__all__ = ["ID_SHIFT", "MAX_INDEX", "OpenLeaf", "SketchTree", "node_ids", "split_node_ids"]
"""``SketchTree`` here; the node-id helpers and ``OpenLeaf`` are re-exported from
:mod:`cep.sketch.node_ids` and :mod:`cep.sketch.open_leaf`, where they live."""

_NODE_COLUMNS: tuple[tuple[str, Any], ...] = (
    ("level", np.int8), ("index", np.int64), ("node_id", np.int64),
    ("pos_start", np.int64), ("pos_end", np.int64), ("ts_start", np.int64),
    ("ts_end", np.int64), ("n_events", np.int64))


class SketchTree:
    """The Bloom-filter tree and exact-set twin of one stream (see the module docstring).

    Build with :meth:`build` or :meth:`empty` + :meth:`append`; never mutate the arrays.
    """

    level: np.ndarray
    index: np.ndarray
    node_id: np.ndarray
    pos_start: np.ndarray
    pos_end: np.ndarray
    ts_start: np.ndarray
    ts_end: np.ndarray
    n_events: np.ndarray
    bits: np.ndarray
    is_top: np.ndarray
    twin_row: np.ndarray
    twin_code: np.ndarray

    def __init__(self, config: SketchConfig, vocabulary: tuple[str, ...],
                 name_positions: np.ndarray, nodes: Store | None, n_nodes: int,
                 is_top: np.ndarray, twin: Store | None, n_pairs: int, n_full_leaves: int,
                 open_codes: np.ndarray, open_ts: np.ndarray, last_ts: int | None,
                 hasher: Hasher | None, *, has_twin: bool = True,
                 open_summary: OpenLeaf | None = None) -> None:
        """Internal: use :meth:`build`, :meth:`empty`, :meth:`append` or :meth:`restore`."""
        self.config = config
        self.has_twin = has_twin
        self._open_summary = open_summary
        self.vocabulary = vocabulary
        self.name_positions = read_only(name_positions)
        self.hasher = hasher
        self._nodes, self._twin = nodes, twin
        self.n_nodes, self.n_full_leaves = n_nodes, n_full_leaves
        self._last_ts = last_ts
        for name, dtype in _NODE_COLUMNS:
            column = nodes.columns[name][:n_nodes] if nodes else np.zeros(0, dtype=dtype)
            setattr(self, name, read_only(column))
        self.bits = read_only(nodes.columns["bits"][:n_nodes] if nodes
                               else np.zeros((0, config.m // 8), dtype=np.uint8))
        self.is_top = read_only(is_top)
        self.twin_row = read_only(twin.columns["row"][:n_pairs] if twin
                                   else np.zeros(0, dtype=np.int64))
        self.twin_code = read_only(twin.columns["code"][:n_pairs] if twin
                                    else np.zeros(0, dtype=np.int32))
        self.open_codes = read_only(open_codes)
        self.open_ts = read_only(open_ts)

    # ---- construction ------------------------------------------------------------------------

    @classmethod
    def empty(cls, config: SketchConfig, hasher: Hasher | None = None) -> SketchTree:
        """The tree of an empty stream (no nodes, empty open leaf)."""
        if not isinstance(config, SketchConfig):
            raise SketchConfigError(f"config: expected a SketchConfig, found {type(config).__name__}")
        return cls(config, (), np.zeros((0, config.k), dtype=np.int64), None, 0,
                   np.zeros(0, dtype=np.bool_), None, 0, 0, np.zeros(0, dtype=np.int32),
                   np.zeros(0, dtype=np.int64), None, hasher)

    @classmethod
    def build(cls, names: Sequence[str] | np.ndarray, ts: Sequence[int] | np.ndarray,
              config: SketchConfig, hasher: Hasher | None = None) -> SketchTree:
        """The tree of one stream in one pass.

        Args:
            names: Event names (the type column), ordered by ``(ts, id)``.
            ts: Timestamps in microseconds (int64 or ``datetime64``), non-decreasing.
            config: Filter size, hashes, leaf size, fanout.
            hasher: Bit positions of names (default: murmur3, :func:`~cep.sketch.bit_positions`).

        Raises:
            SketchInputError: names are not strings, lengths differ, timestamps go backwards.
        """
        return cls.empty(config, hasher).append(names, ts)

    @classmethod
    def restore(cls, config: SketchConfig, nodes: Mapping[str, Any], *, open_index: int,
                open_names: Sequence[str] | np.ndarray | None = None,
                open_ts: Sequence[int] | np.ndarray | None = None,
                open_summary: tuple[int, int | None, int | None, Any] | None = None,
                last_ts: int | None = None, hasher: Hasher | None = None) -> SketchTree:
        """A twin-less tree from stored node columns (the nodes table holds no exact sets).

        Two uses: the **frontier** (only the top-level rows plus the open leaf's events, all an
        :meth:`append` reads: it appends rows computed exactly as on the full tree, see
        :meth:`frontier`), and a **query tree** (every row plus the ``is_open`` summary, all
        :func:`cep.sketch.units.cut` reads). The result has ``has_twin = False``: the twin
        methods raise :class:`TwinUnavailableError`, and appending keeps it twin-less.

        Args:
            config: The sketch's settings (``m``, ``k``, ``C``, ``fanout``, ``seeds``).
            nodes: Equal-length columns ``level``, ``index``, ``pos_start``, ``pos_end``,
                ``ts_start``, ``ts_end`` (int64 microseconds), ``n_events``, ``is_top`` (bool)
                and ``bits`` (uint8 ``(n, m // 8)``, or a sequence of ``m // 8``-byte strings),
                rows in any order (they are put in post-order).
            open_index: The open leaf's number (= the number of full leaves).
            open_names, open_ts: The open leaf's events, in order (an appendable tree).
            open_summary: Instead of the events: ``(n_events, ts_start, ts_end, bits)`` of the
                open leaf (the nodes table's ``is_open`` row); such a tree cannot append.
            last_ts: Timestamp of the stream's last event (default: the open leaf's last, else
                the last node's ``ts_end``); later appends may not go before it.
            hasher: As for :meth:`build`.

        Raises:
            CorruptSketchError: the columns are not the rows of one tree under ``config``:
                lengths or shapes differ, a node's interval or count does not match its
                ``(level, index)``, a node appears twice, the top-level rows do not cover
                positions ``0 .. open_index * C - 1`` in order without overlap, or the open
                leaf does not fit.
            TwinUnavailableError: both or half of the open leaf's two forms were given.

        Example:
            >>> cfg = SketchConfig(m=64, k=2, C=2)
            >>> full = SketchTree.build(list("ABACBDE"), range(7), cfg)
            >>> top = full.top_rows()
            >>> cols = {c: getattr(full, c)[top] for c in ("level", "index", "pos_start",
            ...         "pos_end", "ts_start", "ts_end", "n_events", "is_top", "bits")}
            >>> front = SketchTree.restore(cfg, cols, open_index=3, open_names=["E"], open_ts=[6])
            >>> front.n_nodes, front.has_twin, front == full.frontier()
            (2, False, True)
            >>> grown = front.append(["F"], [7])
            >>> grown.node_id[2:].tolist() == full.append(["F"], [7]).node_id[4:].tolist()
            True
        """
        if not isinstance(config, SketchConfig):
            raise SketchConfigError(f"config: expected a SketchConfig, found {type(config).__name__}")
        cols = restored_columns(nodes, config.m // 8)
        n = len(cols["level"])
        order = np.lexsort((cols["level"], cols["pos_end"]))
        cols = {name: values[order] for name, values in cols.items()}
        check_restored(cols, config.C, config.fanout, open_index, config.merge)
        summary, codes, vocabulary, ts = restored_open_leaf(config, open_index, open_names,
                                                             open_ts, open_summary, hasher)
        last_ts = restored_last_ts(cols["ts_end"], summary, ts, last_ts)
        positions = (positions_of(hasher, list(vocabulary), config.m, config.seeds or ())
                     if vocabulary else np.zeros((0, config.k), dtype=np.int64))
        return cls(config, vocabulary, positions, restored_store(cols), n, cols["is_top"], None,
                   0, int(open_index), codes.astype(np.int32, copy=False), ts, last_ts, hasher,
                   has_twin=False, open_summary=summary)

    def frontier(self) -> SketchTree:
        """The twin-less tree of this tree's top-level rows and open leaf (:meth:`restore`).

        Appending to the frontier adds the same rows (same columns, bits, ``is_top``) as
        appending to this tree, and clears ``is_top`` on the same top-level nodes: an append
        reads nothing else (tested). This is what the incremental job restores from Delta.
        """
        rows = self.top_rows()
        cols = {name: getattr(self, name)[rows] for name in RESTORE_COLUMNS}
        leaf = self.open_leaf
        if leaf.names is None:
            summary = (leaf.n_events, leaf.ts_start, leaf.ts_end, leaf.bits)
            return SketchTree.restore(self.config, cols, open_index=self.n_full_leaves,
                                      open_summary=summary, last_ts=self._last_ts,
                                      hasher=self.hasher)
        return SketchTree.restore(self.config, cols, open_index=self.n_full_leaves,
                                  open_names=list(leaf.names), open_ts=self.open_ts,
                                  last_ts=self._last_ts, hasher=self.hasher)

    @property
    def last_ts(self) -> int | None:
        """Timestamp of the stream's last event (``None`` for an empty stream)."""
        return self._last_ts

    def append(self, names: Sequence[str] | np.ndarray, ts: Sequence[int] | np.ndarray
               ) -> SketchTree:
        """This tree with more events of the stream appended (a new value; this one is unchanged).

        The events fill the open leaf, then new full leaves; parents whose children are now
        complete are added and ``is_top`` is cleared on nodes that got a parent. The result
        equals :meth:`build` over all the events at once.

        Raises:
            SketchInputError: names are not strings, lengths differ, or a timestamp is smaller
                than the one before it (also across the batch boundary).

        Example:
            >>> cfg = SketchConfig(m=64, k=2, C=3)
            >>> a = SketchTree.build(["x", "y"], [1, 2], cfg)
            >>> b = a.append(["z", "x"], [2, 5])
            >>> a.n_nodes, b.n_nodes, b.open_leaf.names, b.open_leaf.pos_start
            (0, 1, ('x',), 3)
            >>> a.append(["x"], [0])
            Traceback (most recent call last):
            ...
            cep.sketch.errors.SketchInputError: CEP-SKETCH-003: ts: event 0 of the batch has ts 0, before the stream's last event (ts 2); events must be appended in (ts, id) order
        """
        codes_batch, vocab_batch = factorize(names)
        ts_batch = timestamps(ts, len(codes_batch))
        if self._open_summary is not None and len(codes_batch):
            raise TwinUnavailableError(
                "append: this tree's open leaf was restored from its stored filter only; "
                "appending needs the open leaf's events (restore with open_names and open_ts)")
        if len(ts_batch) and self._last_ts is not None and ts_batch[0] < self._last_ts:
            raise SketchInputError(
                f"ts: event 0 of the batch has ts {int(ts_batch[0])}, before the stream's last "
                f"event (ts {self._last_ts}); events must be appended in (ts, id) order")
        if not len(codes_batch):
            return self
        vocabulary, remap = merge_vocabularies(self.vocabulary, vocab_batch)
        lookup = {name: code for code, name in enumerate(vocabulary)}
        batch_map = np.array([lookup[name] for name in vocab_batch], dtype=np.int32)
        codes_batch = batch_map[codes_batch]
        positions = self._positions_for(vocabulary, remap)
        return self._grow(vocabulary, remap, positions, codes_batch, ts_batch)

    def _positions_for(self, vocabulary: tuple[str, ...], remap: np.ndarray) -> np.ndarray:
        """Bit positions of every name of ``vocabulary``, hashing only names new to the tree."""
        if vocabulary == self.vocabulary:
            return np.asarray(self.name_positions)
        known = np.zeros(len(vocabulary), dtype=np.bool_)
        known[remap] = True
        positions = np.empty((len(vocabulary), self.config.k), dtype=np.int64)
        positions[remap] = self.name_positions
        fresh = np.flatnonzero(~known)
        positions[fresh] = positions_of(self.hasher, [vocabulary[i] for i in fresh],
                                        self.config.m, self.config.seeds or ())
        return positions

    def _grow(self, vocabulary: tuple[str, ...], remap: np.ndarray, positions: np.ndarray,
              codes_batch: np.ndarray, ts_batch: np.ndarray) -> SketchTree:
        cfg = self.config
        c, f = cfg.C, cfg.fanout
        codes = np.concatenate((remap[self.open_codes], codes_batch))
        ts = np.concatenate((self.open_ts, ts_batch))
        n_leaves = len(codes) // c
        if self.n_full_leaves + n_leaves - 1 > MAX_INDEX:
            raise SketchInputError(f"the stream has more than {MAX_INDEX + 1} leaves")
        cut = n_leaves * c
        current = leaf_level(codes[:cut], ts[:cut], self.n_full_leaves, positions, cfg,
                              len(vocabulary))
        new_levels = [current]
        is_top = np.array(self.is_top, dtype=np.bool_)
        tops = np.flatnonzero(is_top)
        level = 1
        neighbours = cfg.merge == NEIGHBOURS
        while len(current):
            if neighbours:
                # Only the top just before the new nodes can pair with them: every older pair
                # was tried when its right node was made (Algorithm 2 run leaf by leaf).
                waiting = tops[(self.level[tops] == level - 1)
                               & (self.pos_end[tops] == current.pos_start[0] - 1)]
            else:
                first_group = int(current.index[0]) // f
                waiting = tops[(self.level[tops] == level - 1)
                               & (self.index[tops] >= first_group * f)]
            pool = Level.concat(self._old_level(waiting, level - 1, remap), current)
            current = (neighbour_parents if neighbours else parents)(
                pool, level, cfg, len(vocabulary))
            is_top[pool.old_row[pool.has_parent & (pool.old_row >= 0)]] = False
            if len(waiting):
                new_levels[-1].has_parent[:] = pool.has_parent[len(waiting):]
            new_levels.append(current)
            level += 1
        return self._with_new_nodes(vocabulary, positions, remap, new_levels, is_top,
                                    codes[cut:], ts[cut:],
                                    int(ts[-1]) if len(ts) else self._last_ts)

    def _old_level(self, rows: np.ndarray, level: int, remap: np.ndarray) -> Level:
        """Existing (top-level) nodes as a batch, their twin codes in the new vocabulary."""
        lo = np.searchsorted(self.twin_row, rows, side="left")
        hi = np.searchsorted(self.twin_row, rows, side="right")
        counts = hi - lo
        return Level(
            level, self.index[rows], self.pos_start[rows], self.pos_end[rows],
            self.ts_start[rows], self.ts_end[rows], self.n_events[rows], self.bits[rows],
            pair_node=np.repeat(np.arange(len(rows), dtype=np.int64), counts),
            pair_code=remap[self.twin_code[ranges(lo, counts)]],
            old_row=rows.astype(np.int64), has_parent=np.zeros(len(rows), dtype=np.bool_))

    def _with_new_nodes(self, vocabulary: tuple[str, ...], positions: np.ndarray,
                        remap: np.ndarray, levels: list[Level], is_top: np.ndarray,
                        open_codes: np.ndarray, open_ts: np.ndarray, last_ts: int | None
                        ) -> SketchTree:
        """A new tree: this one's rows, then the new nodes in post-order."""
        levels = [lv for lv in levels if len(lv)]
        nodes, n_nodes = self._nodes, self.n_nodes
        twin, n_pairs = self._twin, len(self.twin_row)
        # A twin-less (restored) tree stays twin-less: new nodes over old ones would get
        # partial exact sets.
        keep_twin = self.has_twin
        if vocabulary != self.vocabulary and n_pairs:
            # Codes of existing pairs move with the vocabulary (their order within a node is kept).
            twin, n_pairs = extend(None, 0, {"row": np.array(self.twin_row),
                                              "code": remap[self.twin_code]})
        n_full = self.n_full_leaves
        if levels:
            sizes = [len(lv) for lv in levels]
            level = np.repeat(np.array([lv.level for lv in levels], dtype=np.int8), sizes)
            cat = {name: np.concatenate([getattr(lv, name) for lv in levels])
                   for name in ("index", "pos_start", "pos_end", "ts_start", "ts_end",
                                "n_events", "bits", "has_parent")}
            order = np.lexsort((level, cat["pos_end"]))
            new = {name: cat[name][order] for name in
                   ("index", "pos_start", "pos_end", "ts_start", "ts_end", "n_events", "bits")}
            new["level"] = level[order]
            new["node_id"] = node_ids(new["level"], new["index"])
            nodes, n_nodes = extend(nodes, n_nodes, new)
            is_top = np.concatenate((is_top, ~cat["has_parent"][order]))
            offsets = np.cumsum([0] + sizes[:-1])
            pair_node = np.concatenate([lv.pair_node + off for lv, off in zip(levels, offsets)])
            pair_code = np.concatenate([lv.pair_code for lv in levels])
            counts = np.bincount(pair_node, minlength=len(order))
            starts = np.cumsum(counts) - counts
            take = ranges(starts[order], counts[order])
            rows = np.repeat(np.arange(self.n_nodes, n_nodes, dtype=np.int64), counts[order])
            if len(rows) and keep_twin:
                twin, n_pairs = extend(twin, n_pairs, {"row": rows, "code": pair_code[take]})
            n_full += len(levels[0]) if levels[0].level == 0 else 0
        return SketchTree(self.config, vocabulary, positions, nodes, n_nodes, is_top, twin,
                          n_pairs, n_full, open_codes.astype(np.int32, copy=False),
                          open_ts.astype(np.int64, copy=False), last_ts, self.hasher,
                          has_twin=self.has_twin)

    # ---- the open leaf and sizes -------------------------------------------------------------

    @cached_property
    def open_leaf(self) -> OpenLeaf:
        """The open leaf (the last ``< C`` events); a summary when restored without its events."""
        if self._open_summary is not None:
            return self._open_summary
        names = tuple(self.vocabulary[c] for c in self.open_codes.tolist())
        filt = BloomFilter.empty(self.config.m, self.config.seeds or (), self.hasher)
        if names:
            rows = self.name_positions[np.unique(self.open_codes)]
            dense = np.zeros(self.config.m, dtype=np.bool_)
            dense[rows.reshape(-1)] = True
            filt = BloomFilter.from_packed(np.packbits(dense, bitorder="little"), self.config.m,
                                           filt.seeds, self.hasher)
        return OpenLeaf(self.n_full_leaves, self.n_full_leaves * self.config.C, names,
                        self.open_ts, filt)

    @property
    def fanout(self) -> int:
        """``f``, children per inner node (``config.fanout``)."""
        return self.config.fanout

    @property
    def leaf_size(self) -> int:
        """``C``, events per leaf (``config.C``)."""
        return self.config.C

    @property
    def n_stream_events(self) -> int:
        """Events of the stream so far (full leaves and open leaf)."""
        if self._open_summary is not None:
            return self.n_full_leaves * self.config.C + self._open_summary.n_events
        return self.n_full_leaves * self.config.C + len(self.open_codes)

    def __len__(self) -> int:
        """Number of nodes."""
        return self.n_nodes

    # ---- membership --------------------------------------------------------------------------

    def positions(self, name: str) -> np.ndarray:
        """The ``k`` bit positions of ``name`` (from the tree's table for known names)."""
        code = self.code_of(name)
        if code >= 0:
            return np.asarray(self.name_positions[code])
        return positions_of(self.hasher, [name], self.config.m, self.config.seeds or ())[0]

    def code_of(self, name: str) -> int:
        """The code of ``name`` in :attr:`vocabulary`, ``-1`` when the stream never had it."""
        at = bisect_left(self.vocabulary, name)
        return at if at < len(self.vocabulary) and self.vocabulary[at] == name else -1

    def member(self, name: str) -> np.ndarray:
        """Bloom membership at every node: all ``k`` bits of ``name`` are set (bool per row)."""
        if not self.n_nodes:
            return np.zeros(0, dtype=np.bool_)
        return has_positions(self.bits, self.positions(name))

    def member_matrix(self, names: Sequence[str]) -> np.ndarray:
        """:meth:`member` of several names: bool ``(n_nodes, len(names))``."""
        out = np.zeros((self.n_nodes, len(names)), dtype=np.bool_)
        for column, name in enumerate(names):
            out[:, column] = self.member(name)
        return out

    def _need_twin(self, what: str) -> None:
        if not self.has_twin:
            raise TwinUnavailableError(
                f"{what}: this tree was restored from stored columns, which hold no exact-set "
                "twin (a sketch keeps no raw events); use member() (Bloom membership)")

    def twin_member(self, name: str) -> np.ndarray:
        """Exact membership at every node: ``name`` occurs under the node (bool per row).

        Raises:
            TwinUnavailableError: the tree is twin-less (:meth:`restore`).
        """
        self._need_twin("twin_member")
        out = np.zeros(self.n_nodes, dtype=np.bool_)
        code = self.code_of(name)
        if code >= 0:
            out[self.twin_row[self.twin_code == code]] = True
        return out

    def twin_member_matrix(self, names: Sequence[str]) -> np.ndarray:
        """:meth:`twin_member` of several names: bool ``(n_nodes, len(names))``."""
        self._need_twin("twin_member_matrix")
        out = np.zeros((self.n_nodes, len(names)), dtype=np.bool_)
        for column, name in enumerate(names):
            out[:, column] = self.twin_member(name)
        return out

    def twin_names(self, row: int) -> tuple[str, ...]:
        """The exact set of names under node ``row``, sorted (twin trees only)."""
        self._need_twin("twin_names")
        lo, hi = np.searchsorted(self.twin_row, [row, row + 1])
        return tuple(self.vocabulary[c] for c in self.twin_code[lo:hi].tolist())

    def filter(self, row: int) -> BloomFilter:
        """The Bloom filter of node ``row`` as a :class:`BloomFilter` value."""
        return BloomFilter.from_packed(self.bits[row], self.config.m, self.config.seeds or (),
                                       self.hasher)

    # ---- navigation --------------------------------------------------------------------------

    @cached_property
    def _id_order(self) -> np.ndarray:
        return np.argsort(self.node_id, kind="stable")

    def rows_of(self, ids: np.ndarray | Sequence[int]) -> np.ndarray:
        """Row of each node id, ``-1`` for ids of nodes that do not exist."""
        ids = np.asarray(ids, dtype=np.int64)
        if not self.n_nodes:
            return np.full(ids.shape, -1, dtype=np.int64)
        sorted_ids = self.node_id[self._id_order]
        at = np.minimum(np.searchsorted(sorted_ids, ids), self.n_nodes - 1)
        return np.where(sorted_ids[at] == ids, self._id_order[at], -1).astype(np.int64)

    def children(self, row: int) -> np.ndarray:
        """Rows of the ``f`` children of node ``row`` in position order (empty for a leaf)."""
        if int(self.level[row]) == 0:
            return np.zeros(0, dtype=np.int64)
        return self.children_of([row])[0]

    def children_of(self, rows: np.ndarray | Sequence[int]) -> np.ndarray:
        """Children of several inner nodes: int64 ``(len(rows), f)``, ``-1`` under a leaf."""
        rows = np.asarray(rows, dtype=np.int64)
        level = self.level[rows].astype(np.int64)
        ids = node_ids((level - 1)[:, None], child_indices(level, self.index[rows], self.config))
        out = self.rows_of(ids)
        out[level == 0] = -1
        return out

    def child_rows(self, rows: np.ndarray, offset: np.ndarray) -> np.ndarray:
        """Row of child ``offset[i]`` of inner node ``rows[i]`` (``-1`` when it is missing)."""
        rows = np.asarray(rows, dtype=np.int64)
        level = self.level[rows].astype(np.int64)
        return self.rows_of(node_ids(level - 1, child_index(level, self.index[rows], offset,
                                                             self.config)))

    def parent_rows(self) -> np.ndarray:
        """Row of every node's parent, ``-1`` for top-level nodes."""
        if not self.n_nodes:
            return np.zeros(0, dtype=np.int64)
        up = self.level.astype(np.int64) + 1
        if self.config.merge != NEIGHBOURS:
            return self.rows_of(node_ids(up, self.index // self.config.fanout))
        # A left child shares its parent's index; a right child starts 2**level leaves later.
        as_left = self.rows_of(node_ids(up, self.index))
        right_index = self.index - np.left_shift(np.int64(1), self.level.astype(np.int64))
        as_right = np.where(right_index >= 0,
                            self.rows_of(node_ids(up, np.maximum(right_index, 0))), -1)
        return np.where(as_left >= 0, as_left, as_right)

    def parent_ids(self) -> np.ndarray:
        """Node id of every node's parent, ``-1`` for top-level nodes (the ``parent_id`` column)."""
        rows = self.parent_rows()
        out = np.full(len(rows), -1, dtype=np.int64)
        has = rows >= 0
        out[has] = self.node_id[rows[has]]
        return out

    def top_rows(self) -> np.ndarray:
        """Rows of the top-level nodes, in position order."""
        return np.flatnonzero(self.is_top)

    def rows_at(self, level: int) -> np.ndarray:
        """Rows of the nodes of one level, in index (= position) order."""
        return np.flatnonzero(self.level == level)

    @property
    def n_levels(self) -> int:
        """Number of levels with at least one node."""
        return int(self.level.max()) + 1 if self.n_nodes else 0

    # ---- comparison and summary --------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SketchTree):
            return NotImplemented
        if (self.config != other.config or self.vocabulary != other.vocabulary
                or self.has_twin != other.has_twin or self.open_leaf != other.open_leaf
                or self.n_nodes != other.n_nodes or self.n_full_leaves != other.n_full_leaves):
            return False
        arrays = [name for name, _ in _NODE_COLUMNS] + [
            "bits", "is_top", "twin_row", "twin_code", "open_codes", "open_ts", "name_positions"]
        return all(np.array_equal(getattr(self, name), getattr(other, name)) for name in arrays)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"SketchTree(events={self.n_stream_events}, nodes={self.n_nodes}, "
                f"levels={self.n_levels}, top={int(self.is_top.sum())}, "
                f"open={len(self.open_codes)}, names={len(self.vocabulary)})")

    def stats(self) -> dict[str, Any]:
        """Sizes of the tree.

        Returns:
            ``events`` (stream events), ``open_events``, ``nodes``, ``levels``, ``top_level``
            (top-level nodes), ``bytes`` (filter bytes over all nodes, ``nodes * m / 8``),
            ``state_bytes`` (every array of the value), ``mean_fill`` (mean density of the node
            filters, 0.0 without nodes), ``names`` (distinct names), ``twin_pairs``.

        Example:
            >>> SketchTree.build(["a"] * 5, range(5), SketchConfig(m=64, k=1, C=2)).stats()["nodes"]
            3
        """
        arrays = [getattr(self, name) for name, _ in _NODE_COLUMNS] + [
            self.bits, self.is_top, self.twin_row, self.twin_code, self.open_codes, self.open_ts,
            self.name_positions]
        fill = (float(np.bitwise_count(self.bits).sum(axis=1).mean()) / self.config.m
                if self.n_nodes else 0.0)
        # open_leaf.n_events, not len(open_codes): a tree restored from an is_open row keeps
        # only the leaf's summary (count, interval, filter), no codes.
        return {"events": self.n_stream_events, "open_events": self.open_leaf.n_events,
                "nodes": self.n_nodes, "levels": self.n_levels,
                "top_level": int(self.is_top.sum()), "bytes": int(self.bits.nbytes),
                "state_bytes": int(sum(a.nbytes for a in arrays)), "mean_fill": fill,
                "names": len(self.vocabulary), "twin_pairs": len(self.twin_row)}
