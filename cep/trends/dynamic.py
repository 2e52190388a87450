"""The dynamic (streaming) construction of the ABI graph: events arrive one by one in ts order.

Mei et al., ICPP 2021, section 4.2 (dynamic construction): when an event arrives, its
``rval`` may be a value the window has not seen; the attribute vertex whose range contains it
is then *violated* (its events no longer all satisfy the same predicates) and is split in
place, moving the events whose ``lval`` falls on the other side to the new vertex. The event
is then linked: a from-edge to the vertex holding its ``lval`` and a to-edge to the vertex its
``rval`` *owns*. The structure is kept sorted (a sorted list of values, ``bisect``), so the
vertex of a value is found in ``O(log m)``.

Ownership makes to-edges survive later splits without being rewritten. Every distinct value
creates exactly one vertex, the one it owns:

- ``>`` and ``<=`` (vertices ``(a, b]``): the value ``b`` owns ``(a, b]``; a split of
  ``(a, b]`` by ``r`` creates ``(a, r]`` (owned by ``r``) and leaves ``(r, b]`` with ``b``;
- ``>=`` and ``<`` (vertices ``[a, b)``): ``a`` owns ``[a, b)``; the split creates ``[r, b)``;
- ``=``: the value's own vertex (events waiting for a value that has no vertex yet are kept
  aside and claimed when it arrives); ``<>``: the value's point vertex, splitting a gap into
  gap, point, gap.

A to-edge is then "everything after / up to / except the owned vertex", so it is resolved to a
range of vertex numbers only when the graph is read (:meth:`DynamicGraph.snapshot`), and the
snapshot equals the parallel construction's graph exactly (property-tested).

This is the streaming algorithm, so it runs a Python loop per arriving event (a few list
operations and ``bisect`` calls, plus the moves of a split); the parallel construction
(:func:`cep.trends.graph.build_graph`) is the vectorised one.

Example:
    >>> import numpy as np
    >>> from cep.trends.graph import build_graph
    >>> ts, cols = np.arange(4), {"p": np.array([5.0, 3.0, 4.0, 6.0])}
    >>> q = "PATTERN s+ WHERE s[i].p > s[i-1].p"
    >>> build_graph_dynamic(q, ts, cols) == build_graph(q, ts, cols)
    True
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping

import numpy as np

from cep.trends.graph import (
    LEFT_OPEN,
    POINTS,
    POINTS_AND_GAPS,
    RIGHT_OPEN,
    SHAPES,
    AttributeIndex,
    TrendGraph,
    _prepare,
)
from cep.trends.query import NeighbourPredicate, TrendQuery, compile_trend


class DynamicIndex:
    """The attribute vertices of one predicate in one window, grown event by event.

    Vertex ids are stable (creation order); ``order`` lists them by value.
    """

    def __init__(self, predicate: NeighbourPredicate) -> None:
        self.predicate = predicate
        self.shape = SHAPES[predicate.op]
        self.bounds: list[object] = []  # sorted distinct rvals
        self.owner: dict[object, int] = {}  # rval -> the vertex it owns
        self.order: list[int] = []  # vertex ids in value order
        self.members: list[list[tuple[int, object]]] = []  # vertex id -> (event, lval)
        self.pending: dict[object, list[tuple[int, object]]] = {}  # '=': lval without a vertex yet
        self.to_owner: dict[int, int] = {}  # event -> owned vertex of its rval
        if self.shape in (LEFT_OPEN, RIGHT_OPEN, POINTS_AND_GAPS):
            self._new_vertex()
            self.order.append(0)  # one vertex holding every value

    def _new_vertex(self) -> int:
        self.members.append([])
        return len(self.members) - 1

    def add(self, event: int, lval: object, rval: object) -> None:
        """Insert one event: split the vertex its new ``rval`` violates, then link it.

        ``lval`` / ``rval`` are None for NULL.
        """
        if rval is not None:
            if rval not in self.owner:
                self._split(rval)
            self.to_owner[event] = self.owner[rval]
        if lval is not None:
            self._place(event, lval)

    def _split(self, r: object) -> None:
        p = bisect_left(self.bounds, r)
        self.bounds.insert(p, r)
        new = self._new_vertex()
        self.owner[r] = new
        if self.shape == POINTS:
            self.order.insert(p, new)
            self.members[new] = self.pending.pop(r, [])
        elif self.shape == LEFT_OPEN:
            old = self.order[p]  # (r[p-1], r[p]] holds r
            keep, move = _partition(self.members[old], lambda x: x <= r)
            self.members[old], self.members[new] = keep, move
            self.order.insert(p, new)  # (r[p-1], r] before (r, r[p]]
        elif self.shape == RIGHT_OPEN:
            old = self.order[p]  # [r[p-1], r[p]) holds r
            keep, move = _partition(self.members[old], lambda x: x >= r)
            self.members[old], self.members[new] = keep, move
            self.order.insert(p + 1, new)  # [r, r[p]) after [r[p-1], r)
        else:
            old = self.order[2 * p]  # the gap (r[p-1], r[p]) holds r
            gap = self._new_vertex()
            low, point, high = [], [], []
            for item in self.members[old]:
                (low if item[1] < r else point if item[1] == r else high).append(item)
            self.members[old], self.members[new], self.members[gap] = low, point, high
            self.order[2 * p + 1:2 * p + 1] = [new, gap]

    def _place(self, event: int, lval: object) -> None:
        if self.shape == POINTS:
            vertex = self.owner.get(lval)
            if vertex is None:
                self.pending.setdefault(lval, []).append((event, lval))
                return
        elif self.shape == LEFT_OPEN:
            vertex = self.order[bisect_left(self.bounds, lval)]
        elif self.shape == RIGHT_OPEN:
            vertex = self.order[bisect_right(self.bounds, lval)]
        else:
            i = bisect_left(self.bounds, lval)
            hit = i < len(self.bounds) and self.bounds[i] == lval
            vertex = self.order[2 * i + (1 if hit else 0)]
        self.members[vertex].append((event, lval))


def _partition(items: list[tuple[int, object]], moves) -> tuple[list, list]:  # noqa: ANN001
    keep, move = [], []
    for item in items:
        (move if moves(item[1]) else keep).append(item)
    return keep, move


class DynamicGraph:
    """The ABI graph of a stream, grown one event at a time (module docstring).

    Args:
        query: the compiled trend query.
        n_windows: number of windows events may belong to.
    """

    def __init__(self, query: TrendQuery, n_windows: int = 1) -> None:
        self.query = query
        self.windows = [[DynamicIndex(p) for p in query.predicates] for _ in range(n_windows)]

    def add(self, event: int, window: int, lvals: list[object], rvals: list[object]) -> None:
        """Insert event ``event`` (its vertex number) into window ``window``."""
        for ix, lv, rv in zip(self.windows[window], lvals, rvals):
            ix.add(event, lv, rv)

    def snapshot(self, n_events: int) -> tuple[AttributeIndex, ...]:
        """The canonical attribute indexes (vertex numbers by window, then value)."""
        out = []
        for p, pred in enumerate(self.query.predicates):
            shape = SHAPES[pred.op]
            from_vertex = np.full(n_events, -1, dtype=np.int64)
            ranges = np.zeros((4, n_events), dtype=np.int64)
            bounds: list[object] = []
            bound_window: list[int] = []
            starts = [0]
            for w, indexes in enumerate(self.windows):
                ix = indexes[p]
                rank = {vertex: i for i, vertex in enumerate(ix.order)}
                base, size = starts[-1], len(ix.order)
                for vertex, items in enumerate(ix.members):
                    if vertex in rank:
                        for event, _ in items:
                            from_vertex[event] = base + rank[vertex]
                for event, vertex in ix.to_owner.items():
                    ranges[:, event] = _ranges(pred.op, base, size, rank[vertex])
                bounds.extend(ix.bounds)
                bound_window.extend([w] * len(ix.bounds))
                starts.append(base + size)
            lo, hi, lo2, hi2 = ranges
            keep, keep2 = lo < hi, lo2 < hi2
            out.append(AttributeIndex(
                pred, shape, _values(bounds), np.array(bound_window, dtype=np.int64),
                np.array(starts, dtype=np.int64), from_vertex,
                np.where(keep, lo, 0), np.where(keep, hi, 0), np.where(keep2, lo2, 0), np.where(keep2, hi2, 0)))
        return tuple(out)


def _ranges(op: str, base: int, size: int, rank: int) -> tuple[int, int, int, int]:
    """The to-edge ranges of an event whose rval owns the vertex at ``rank``."""
    if op == "=":
        return (base + rank, base + rank + 1, 0, 0)
    if op == ">":
        return (base + rank + 1, base + size, 0, 0)
    if op == "<=":
        return (base, base + rank + 1, 0, 0)
    if op == ">=":
        return (base + rank, base + size, 0, 0)
    if op == "<":
        return (base, base + rank, 0, 0)
    return (base, base + rank, base + rank + 1, base + size)


def _values(bounds: list[object]) -> np.ndarray:
    if bounds and isinstance(bounds[0], str):
        return np.array(bounds, dtype=object)
    return np.array(bounds)


def build_graph_dynamic(query: TrendQuery | str, ts: np.ndarray, columns: Mapping[str, object], *,
                        window: np.ndarray | None = None, tiebreak: np.ndarray | None = None,
                        row: np.ndarray | None = None) -> TrendGraph:
    """Build the ABI graph by feeding the events one at a time in ts order (streaming).

    Same arguments and result as :func:`cep.trends.graph.build_graph` (the results are
    ``==``); a Python loop per event, as the streaming algorithm is.
    """
    q = compile_trend(query) if isinstance(query, str) else query
    prep = _prepare(q, ts, columns, window, tiebreak, row)
    n = len(prep.ts)
    dyn = DynamicGraph(q, prep.n_windows)
    lvals = [_nullable(o.lval, o.lnull) for o in prep.operands]
    rvals = [_nullable(o.rval, o.rnull) for o in prep.operands]
    arrival = np.lexsort((np.arange(n), prep.ts)).tolist()  # ts order, then vertex order
    windows = prep.wnum.tolist()
    for e in arrival:
        dyn.add(e, windows[e], [lv[e] for lv in lvals], [rv[e] for rv in rvals])
    indexes = dyn.snapshot(n)
    # Bounds keep the dtype the parallel construction sorts them in.
    fixed = tuple(_with_dtype(ix, o.rval.dtype) for ix, o in zip(indexes, prep.operands))
    return TrendGraph(prep.ts, prep.row, prep.wnum, prep.window_starts, fixed, q.text)


def _nullable(values: np.ndarray, nulls: np.ndarray) -> list[object]:
    out = values.tolist()
    for i in np.flatnonzero(nulls).tolist():
        out[i] = None
    return out


def _with_dtype(ix: AttributeIndex, dtype: np.dtype) -> AttributeIndex:
    bounds = np.asarray(ix.bounds, dtype=dtype) if dtype != object else np.array(list(ix.bounds), dtype=object)
    return AttributeIndex(ix.predicate, ix.shape, bounds, ix.bound_window, ix.vertex_start, ix.from_vertex,
                          ix.to_lo, ix.to_hi, ix.to_lo2, ix.to_hi2)
