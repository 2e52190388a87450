"""Mei et al.'s parallel ABI-graph construction (ICPP 2021, section 4.4, Algorithm 1), step by step.

:func:`cep.trends.build_graph` computes the same graph in one vectorised pass. Here the four
steps of Algorithm 1 are separate pure functions over numpy arrays, so that each step's tasks
can run in other processes or Spark tasks, and a driver merges their outputs:

0. **event vertices** (line 7): the events in (window, ts, tiebreak) order; a vertex's number
   is its rank, which is the arrival order of a stream sorted by time (:func:`event_vertices`);
1. **tuples** (lines 3-13): the events are split into ``P`` random partitions
   (:func:`split`); each computes ``lval`` and ``rval`` of its events, the ``(lval, ev)`` and
   ``(ev, rval)`` tuples, and its own sorted distinct ``rval`` values (:func:`extract_values`);
2. **attribute vertices** (lines 14-16): the sorted runs of the partitions are merged into one
   distinct sorted list (the paper's parallel sort: local sorts in the tasks, an ``O(m log P)``
   merge of sorted runs on the driver) and cut into vertices (:func:`attribute_vertices`);
3. **from-edges** (lines 17-21): each partition maps its ``lval`` values to vertices by binary
   search (a table look-up for narrow integers), and buckets the ``(av, ev)`` tuples by vertex
   range; each vertex range is then stored by one task (:func:`store_from_edges`, the paper's
   ``partitionByAv``: no two tasks write the adjacency of the same vertex);
4. **to-edges** (lines 22-27): each partition maps its ``rval`` values to vertices and stores the
   range ``(av_t, avs.last)`` (:func:`map_vertices`, with step 3's mapping).

:func:`merge` assembles the :class:`~cep.trends.graph.TrendGraph`; it is ``==`` to
``build_graph``'s for every partitioning (property-tested). :func:`build_graph_parallel` runs
the steps with any ``map``-like function (the built-in ``map``, ``Executor.map``);
:func:`build_graph_pool` with a process pool. The Spark runner is
:mod:`udfs.trend_graph_spark`.

Two choices differ from the paper (docs/trends.md, section 10): the tuples of step 1 are not
shipped from the step-1 tasks to the step-3 tasks; each step-3 task recomputes its
partition's tuples (one multiply-add per event), which moves fewer bytes than sending them
through the driver when processes share no memory. And the workers are processes, not
threads: the GIL serialises Python threads (BENCHMARKS.md measures it).

Example:
    >>> import numpy as np
    >>> from cep.trends.graph import build_graph
    >>> q = "PATTERN s+ WHERE s[i].price > s[i-1].price"
    >>> ts, cols = np.arange(6), {"price": np.array([5.0, 3.0, 4.0, 6.0, 3.0, 7.0])}
    >>> g = build_graph_parallel(q, ts, cols, parts=3)
    >>> g == build_graph(q, ts, cols), g.indexes[0].bounds.tolist()
    (True, [3.0, 4.0, 5.0, 6.0, 7.0])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from cep.errors import CepError
from cep.trends.graph import (POINTS, POINTS_AND_GAPS, RIGHT_OPEN, SHAPES, AttributeIndex, TrendGraph, _event_order,
                              _vertex_start, from_edges, number_events, to_edges)
from cep.trends.operands import Operands, lookup, operands
from cep.trends.query import NeighbourPredicate, TrendQuery, compile_trend

MapFn = Callable[[Callable[[Any], Any], Iterable[Any]], Iterable[Any]]
Pairs = tuple[np.ndarray, np.ndarray]
# Per partition and predicate: the distinct (window, rval) pairs, and the distinct rvals alone.
Runs = tuple[np.ndarray, np.ndarray, np.ndarray]
# Per event of a piece: its vertex number and its two to-edge ranges.
ToRows = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class EventVertices:
    """Step 0: the event vertices, sorted by (window, ts, tiebreak).

    Attributes:
        ts: timestamp of each vertex (numbers).
        row: the caller's id of each vertex.
        window: window number of each vertex (non-decreasing).
        window_starts: start of each window, by number.
        source: the input index of each vertex; None when the input was already in order.
    """

    ts: np.ndarray
    row: np.ndarray
    window: np.ndarray
    window_starts: np.ndarray
    source: np.ndarray | None

    @property
    def n_windows(self) -> int:
        """Number of windows."""
        return len(self.window_starts)


@dataclass(frozen=True)
class Partition:
    """One processing unit's events (line 3): vertex numbers, windows, ts and the columns read.

    ``events`` is increasing, so the window numbers are non-decreasing as well.
    """

    events: np.ndarray
    window: np.ndarray
    ts: np.ndarray
    columns: dict[str, np.ndarray]


@dataclass(frozen=True)
class Tuples:
    """Step 1 of one partition: per predicate, the operands and the sorted distinct ``rval`` values.

    Attributes:
        events, window: as in the partition.
        operands: per predicate, ``lval``/``rval`` of each event (the ``(lval, ev)`` and
            ``(ev, rval)`` tuple lists of lines 10-11).
        distinct: per predicate, the distinct ``(window, rval)`` pairs sorted by window, then
            value, and the sorted distinct ``rval`` values of all windows (line 14, done locally).
    """

    events: np.ndarray
    window: np.ndarray
    operands: tuple[Operands, ...]
    distinct: tuple[Runs, ...]


@dataclass(frozen=True)
class Summary:
    """What a step-1 task sends to the driver: the distinct ``rval`` values and the operand types.

    ``kinds`` holds, per predicate, whether its operands are strings, or None when the
    partition has no non-NULL operand (then its type says nothing).
    """

    distinct: tuple[Runs, ...]
    kinds: tuple[bool | None, ...]


@dataclass(frozen=True)
class Vertices:
    """Step 2: the attribute vertices of one predicate, as every step-3/4 task needs them.

    Attributes:
        predicate: the neighbour predicate.
        values: the sorted distinct ``rval`` values of all windows (the search keys).
        codes: per bound, ``window * (len(values) + 1) + rank of its value``, sorted; None with
            one window (then a bound's code is its rank).
        bounds, bound_window, base, vstart: as in :class:`~cep.trends.graph.AttributeIndex`
            (``base``: the first bound of each window).
        cuts: ``P + 1`` vertex numbers cutting the vertices into the ranges of step 3's stores.
        table: the look-up table of narrow integer bounds (one window), else None.
    """

    predicate: NeighbourPredicate
    values: np.ndarray
    codes: np.ndarray | None
    bounds: np.ndarray
    bound_window: np.ndarray
    base: np.ndarray
    vstart: np.ndarray
    cuts: np.ndarray
    table: DenseTable | None = None

    @property
    def shape(self) -> str:
        """The vertex shape of the predicate's comparator."""
        return SHAPES[self.predicate.op]

    def rank(self, x: np.ndarray, window: np.ndarray, valid: np.ndarray, side: str = "left") -> np.ndarray:
        """Per value, the global number of bounds of its window below it (``side='left'``) or
        not above it (``'right'``): a binary search, or a table look-up for narrow integers.

        Entries that are not ``valid`` get 0 and are never compared (their placeholders may
        have the other operand type).
        """
        out = np.zeros(len(x), dtype=np.int64)
        if not len(self.values) or not valid.any():
            return out
        xs = x[valid]
        if self.table is not None and xs.dtype.kind in "iu":
            out[valid] = self.table.count(xs, side)
            return out
        k = np.searchsorted(self.values, xs, side=side)
        if self.codes is not None:
            # Bounds of window w on the chosen side of x are the codes in [w * big, w * big + k).
            k = np.searchsorted(self.codes, window[valid] * np.int64(len(self.values) + 1) + k, side="left")
        out[valid] = k
        return out


@dataclass(frozen=True)
class DenseTable:
    """For integer bounds in a range at most a few times their number (one window): every
    integer's count of bounds not above it, so that a rank is a look-up, not a binary search
    (the counting trick of :func:`cep.trends.graph._dense_ranks`, shipped to each task)."""

    lo: int
    present: np.ndarray
    le: np.ndarray

    @staticmethod
    def of(values: np.ndarray) -> DenseTable | None:
        """The table of sorted distinct ``values``; None unless they are integers in a narrow range."""
        if values.dtype.kind not in "iu" or not len(values):
            return None
        lo, hi = int(values[0]), int(values[-1])
        if hi - lo > 8 * len(values) + 1024:
            return None
        present = np.zeros(hi - lo + 1, dtype=bool)
        present[values - lo] = True
        return DenseTable(lo, present, np.cumsum(present, dtype=np.int64))

    def count(self, x: np.ndarray, side: str) -> np.ndarray:
        """``np.searchsorted(values, x, side)`` by look-up."""
        hi = self.lo + len(self.present) - 1
        inside = (x >= self.lo) & (x <= hi)
        slot = np.where(inside, x - self.lo, 0)
        le = self.le[slot]
        if side == "left":
            le = le - self.present[slot]
        return np.where(inside, le, np.where(x > hi, self.le[-1], 0)).astype(np.int64, copy=False)


@dataclass(frozen=True)
class Edges:
    """Steps 3-4 of one partition: its from-edges bucketed by vertex range, and its to-edges.

    Attributes:
        events: the partition's event vertices.
        from_buckets: per predicate, per vertex range of :attr:`Vertices.cuts`, the ``(av, ev)``
            tuples (line 18) of this partition.
        to: per predicate, ``(lo, hi, lo2, hi2)`` of each event (the range to-edges).
    """

    events: np.ndarray
    from_buckets: tuple[tuple[Pairs, ...], ...]
    to: tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], ...]


def event_vertices(ts: np.ndarray, window: np.ndarray | None = None, tiebreak: np.ndarray | None = None,
                   row: np.ndarray | None = None) -> EventVertices:
    """Step 0: number the events by (window, ts, tiebreak), as :func:`cep.trends.build_graph` does.

    Raises:
        TrendInputError: a NULL timestamp, or ``window``/``tiebreak``/``row`` of another length.
    """
    t, starts, wnum, rows = number_events(ts, window, tiebreak, row)
    order = _event_order(wnum, t, tiebreak)
    if order is not None:
        t, rows, wnum = t[order], rows[order], wnum[order]
    return EventVertices(t, rows, wnum, starts, order)


def read_columns(query: TrendQuery, columns: Mapping[str, object], n: int) -> dict[str, np.ndarray]:
    """The columns the predicates read, by the names they are written with (``ts`` excluded).

    Raises:
        TrendInputError: a missing column, or one of another length.
    """
    names = {name for p in query.predicates for name in (p.attr, p.prev_attr) if name.lower() != "ts"}
    return {name: lookup(columns, name, n) for name in sorted(names)}


def split(vertices: EventVertices, columns: Mapping[str, np.ndarray], parts: int,
          seed: int | None = 0) -> list[Partition]:
    """``randPartition`` (line 3): each event to one of ``parts`` partitions, uniformly at random.

    Args:
        vertices: the event vertices (step 0).
        columns: the columns the predicates read, in input order.
        parts: the number of partitions (at least 1).
        seed: the random seed; None cuts contiguous blocks of vertices instead.
    """
    n = len(vertices.ts)
    parts = max(1, int(parts))
    if seed is None or parts == 1:
        groups = np.array_split(np.arange(n, dtype=np.int64), parts)
    else:
        owner = np.random.default_rng(seed).integers(0, parts, n).astype(np.uint8 if parts < 256 else np.int64)
        # A stable sort of small integers is a counting pass, and keeps each group's events increasing.
        order = np.argsort(owner, kind="stable")
        groups = np.split(order, np.cumsum(np.bincount(owner, minlength=parts))[:-1])
    out = []
    for events in groups:
        src = events if vertices.source is None else vertices.source[events]
        out.append(Partition(events, vertices.window[events], vertices.ts[events],
                             {k: v[src] for k, v in columns.items()}))
    return out


def extract_values(predicates: Sequence[NeighbourPredicate], text: str, part: Partition,
                   distinct: bool = True) -> Tuples:
    """Step 1 for one partition (lines 6-11 and, locally, line 14): operands and distinct ``rval`` values.

    With ``distinct`` False the distinct values are left out (empty), for a step-3 task that
    recomputes the tuples.
    """
    n = len(part.events)
    ops = tuple(operands(p, part.columns, n, ts=part.ts, query_text=text) for p in predicates)
    if distinct:
        runs = tuple(_distinct_pairs(part.window[~o.rnull], o.rval[~o.rnull]) for o in ops)
    else:
        runs = tuple(_distinct_pairs(part.window[:0], o.rval[:0]) for o in ops)
    return Tuples(part.events, part.window, ops, runs)


def summarise(predicates: Sequence[NeighbourPredicate], text: str, part: Partition) -> Summary:
    """A step-1 task: :func:`extract_values`, keeping only what the driver needs."""
    t = extract_values(predicates, text, part)
    kinds = tuple(o.text if (~o.lnull).any() or (~o.rnull).any() else None for o in t.operands)
    return Summary(t.distinct, kinds)


def attribute_vertices(pred: NeighbourPredicate, runs: Sequence[Runs], n_windows: int,
                       parts: int = 1) -> Vertices:
    """Step 2 (lines 14-16): merge the partitions' sorted distinct ``rval`` values into the vertices.

    Args:
        pred: the predicate.
        runs: per partition, its distinct ``(window, value)`` pairs (:attr:`Tuples.distinct`).
        n_windows: the number of windows.
        parts: the number of vertex ranges step 3 stores separately.
    """
    values = _merge_sorted([u for _, _, u in runs])
    if n_windows <= 1:
        codes = None
        bounds = values
        bound_window = np.zeros(len(values), dtype=np.int64)
    else:
        big = np.int64(len(values) + 1)
        w = np.concatenate([w for w, _, _ in runs]).astype(np.int64)
        rank = np.searchsorted(values, np.concatenate([v for _, v, _ in runs])) if len(values) else w
        codes = np.unique(w * big + rank)
        bounds = values[codes % big] if len(codes) else values[:0]
        bound_window = (codes // big).astype(np.int64)
    shape = SHAPES[pred.op]
    base = np.searchsorted(bound_window, np.arange(n_windows + 1)).astype(np.int64)
    vstart = _vertex_start(shape, bound_window, n_windows)
    cuts = np.linspace(0, int(vstart[-1]), max(1, parts) + 1).astype(np.int64)
    table = DenseTable.of(values) if codes is None else None
    return Vertices(pred, values, codes, bounds, bound_window, base, vstart, cuts, table)


def map_vertices(vertices: Sequence[Vertices], tuples: Tuples) -> Edges:
    """Steps 3 and 4 for one partition (lines 17-18 and 22-27): map values to vertices by binary search."""
    buckets, to = [], []
    for v, o in zip(vertices, tuples.operands):
        w = tuples.window
        valid_l, valid_r = ~o.lnull, ~o.rnull
        # Only the searches the shape needs: one side for ranges, both for points (equality).
        l_left = v.rank(o.lval, w, valid_l, "right" if v.shape == RIGHT_OPEN else "left")
        hit = valid_l & (v.rank(o.lval, w, valid_l, "right") > l_left) if v.shape in (POINTS, POINTS_AND_GAPS) \
            else valid_l
        av = from_edges(v.shape, v.vstart, v.base, w, l_left, hit, valid_l)
        r_pos = v.rank(o.rval, w, valid_r)
        to.append(to_edges(v.predicate.op, v.vstart, v.base, w, r_pos, valid_r))
        has = av >= 0
        av, ev = av[has], tuples.events[has]
        # partitionByAv (line 18): the tuples of each vertex range, in event order.
        where = np.searchsorted(v.cuts, av, side="right") - 1
        order = np.argsort(where, kind="stable")
        sizes = np.bincount(where, minlength=len(v.cuts) - 1)[:len(v.cuts) - 1]
        bounds = np.r_[0, np.cumsum(sizes)]
        buckets.append(tuple((av[order[a:b]], ev[order[a:b]]) for a, b in zip(bounds[:-1], bounds[1:])))
    return Edges(tuples.events, tuple(buckets), tuple(to))


def edge_task(predicates: Sequence[NeighbourPredicate], text: str, vertices: Sequence[Vertices],
              part: Partition) -> Edges:
    """A step-3/4 task: recompute the partition's tuples (module docstring) and map them."""
    return map_vertices(vertices, extract_values(predicates, text, part, distinct=False))


def store_from_edges(pieces: Sequence[Sequence[Pairs]]) -> tuple[Pairs, ...]:
    """Lines 19-21 for one vertex range: per predicate, its from-edges as adjacency lists.

    Args:
        pieces: per predicate, the ``(av, ev)`` tuples of this range from every partition.

    Returns:
        Per predicate ``(av, ev)`` sorted by vertex: each vertex's list of events.
    """
    out = []
    for runs in pieces:
        av = np.concatenate([a for a, _ in runs]) if runs else np.zeros(0, dtype=np.int64)
        ev = np.concatenate([e for _, e in runs]) if runs else np.zeros(0, dtype=np.int64)
        # Each piece is in event order; a stable sort by vertex keeps that inside each vertex.
        order = np.argsort(av, kind="stable")
        out.append((av[order], ev[order]))
    return tuple(out)


def merge(query: TrendQuery, vertices: EventVertices, avs: Sequence[Vertices],
          from_pairs: Sequence[Sequence[Pairs]], to_rows: Sequence[Sequence[ToRows]]) -> TrendGraph:
    """The driver's last step (line 28): the graph from the stored from-edges and the to-edges.

    Args:
        query: the query.
        vertices: the event vertices (step 0).
        avs: per predicate, its attribute vertices (step 2).
        from_pairs: per predicate, its stored ``(av, ev)`` from-edges, in any number of pieces.
        to_rows: per predicate, ``(ev, lo, hi, lo2, hi2)`` pieces covering every event.
    """
    n = len(vertices.ts)
    indexes = []
    for p, v in enumerate(avs):
        from_vertex = np.full(n, -1, dtype=np.int64)
        for av, ev in from_pairs[p]:
            from_vertex[ev] = av
        to = [np.zeros(n, dtype=np.int64) for _ in range(4)]
        for ev, *ranges in to_rows[p]:
            for full, part in zip(to, ranges):
                full[ev] = part
        indexes.append(AttributeIndex(v.predicate, v.shape, v.bounds, v.bound_window, v.vstart,
                                      from_vertex, *to))
    return TrendGraph(vertices.ts, vertices.row, vertices.window, vertices.window_starts,
                      tuple(indexes), query.text)


def build_graph_parallel(query: TrendQuery | str, ts: np.ndarray, columns: Mapping[str, object], *,
                         window: np.ndarray | None = None, tiebreak: np.ndarray | None = None,
                         row: np.ndarray | None = None, parts: int = 2, map_fn: MapFn = map,
                         seed: int | None = 0) -> TrendGraph:
    """Build the ABI graph with Algorithm 1's four steps, each step's tasks run by ``map_fn``.

    Arguments and result as :func:`cep.trends.build_graph` (equal graphs), plus:

    Args:
        parts: ``P``, the number of partitions (tasks per step).
        map_fn: runs a step's tasks: ``map`` (in this process), ``Executor.map`` (a pool); the
            tasks are picklable (module-level functions and numpy arrays).
        seed: the seed of the random partitioning; None for contiguous blocks.

    Raises:
        The errors of :func:`cep.trends.build_graph`, the same ones for the same input.
    """
    q = compile_trend(query) if isinstance(query, str) else query
    ev = event_vertices(ts, window, tiebreak, row)
    n = len(ev.ts)
    cols = read_columns(q, columns, n)
    partitions = split(ev, cols, parts, seed)
    preds = q.predicates
    try:
        summaries = list(map_fn(partial(summarise, preds, q.text), partitions))
    except CepError:
        raise_as_whole(q, ev, cols)
        raise
    for p in range(len(preds)):
        if len({s.kinds[p] for s in summaries} - {None}) > 1:
            raise_as_whole(q, ev, cols)
    avs = tuple(attribute_vertices(pred, [s.distinct[p] for s in summaries], ev.n_windows, len(partitions))
                for p, pred in enumerate(preds))
    edges = list(map_fn(partial(edge_task, preds, q.text, avs), partitions))
    ranges = [tuple([e.from_buckets[p][b] for e in edges] for p in range(len(preds)))
              for b in range(len(partitions))]
    stores = list(map_fn(store_from_edges, ranges))
    return merge(q, ev, avs, [[st[p] for st in stores] for p in range(len(preds))],
                 [[(e.events, *e.to[p]) for e in edges] for p in range(len(preds))])


def build_graph_pool(query: TrendQuery | str, ts: np.ndarray, columns: Mapping[str, object], *,
                     workers: int = 2, parts: int | None = None, pool: ProcessPoolExecutor | None = None,
                     **kwargs: Any) -> TrendGraph:
    """Algorithm 1 on a process pool (the paper's threads; section 4.4).

    Args:
        query, ts, columns: as for :func:`build_graph_parallel` (and its keyword arguments).
        workers: processes of a new pool (ignored with ``pool``).
        parts: partitions per step (default: ``workers``).
        pool: an open pool to reuse (a warm pool, as the paper's thread pool).
    """
    parts = workers if parts is None else parts
    if pool is not None:
        return build_graph_parallel(query, ts, columns, parts=parts, map_fn=pool.map, **kwargs)
    with ProcessPoolExecutor(max_workers=workers, mp_context=pool_context()) as own:
        return build_graph_parallel(query, ts, columns, parts=parts, map_fn=own.map, **kwargs)


def pool_context() -> Any:
    """The start method of the worker processes: ``forkserver``, not ``fork``.

    The caller may host a JVM (a notebook with Spark, the tests): forking a process with other
    threads running copies locks they hold, and the child can hang on one; a fork server is a
    fresh interpreter that forks the workers from a single thread.
    """
    import multiprocessing

    return multiprocessing.get_context("forkserver")


def raise_as_whole(query: TrendQuery, ev: EventVertices, columns: Mapping[str, np.ndarray]) -> None:
    """Raise the error :func:`cep.trends.build_graph` raises for these events, if any.

    A partition sees only part of a column: one may hold only strings and another only
    numbers, or one may raise where the whole raises on an earlier predicate. Reading the
    operands of all events, predicate by predicate, gives the whole's error.
    """
    n = len(ev.ts)
    ts_in = ev.ts if ev.source is None else np.empty_like(ev.ts)
    if ev.source is not None:
        ts_in[ev.source] = ev.ts
    for pred in query.predicates:
        operands(pred, columns, n, ts=ts_in, query_text=query.text)


def _distinct_pairs(window: np.ndarray, values: np.ndarray) -> Runs:
    """Distinct ``(window, value)`` pairs sorted by window, then value; and the distinct values."""
    if not len(values) or window[0] == window[-1]:
        u = _unique(values)
        return np.full(len(u), window[0] if len(window) else 0, dtype=np.int64), u, u
    u, inv = np.unique(values, return_inverse=True)
    big = np.int64(len(u))
    codes = np.unique(window.astype(np.int64) * big + inv)
    return codes // big, u[codes % big], u


def _unique(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values; by a presence table (no sort) for integers in a narrow range."""
    if values.dtype.kind in "iu" and len(values):
        lo, hi = int(values.min()), int(values.max())
        if hi - lo <= 4 * len(values) + 1024:
            present = np.zeros(hi - lo + 1, dtype=bool)
            present[values - lo] = True
            return (np.flatnonzero(present) + lo).astype(values.dtype, copy=False)
    return np.unique(values)


def _merge_sorted(runs: Sequence[np.ndarray]) -> np.ndarray:
    """The distinct values of sorted runs, sorted: a merge (``O(m log P)``), not a full sort."""
    if not runs:
        return np.zeros(0, dtype=np.float64)
    values = np.concatenate(runs)
    if len(runs) > 1:
        # Timsort/mergesort finds the runs already sorted and merges them.
        values = np.sort(values, kind="stable")
    if len(values) < 2:
        return values
    keep = np.ones(len(values), dtype=bool)
    keep[1:] = values[1:] != values[:-1]
    return values[keep]
