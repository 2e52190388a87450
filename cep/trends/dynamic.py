"""The dynamic (streaming) construction of the ABI graph: events arrive one by one in ts order.

Mei et al., ICPP 2021, section 4.1 (dynamic construction): when an event arrives, its
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

**Basic to-edges** (``to_edges='basic'``, the paper's "seq" of Fig. 8, section 4.1): the
to-edges are stored one per attribute vertex, as the paper's basic dynamic method does before
its range representation (section 4.3): an event gets an edge to every vertex its ``rval``
makes relevant (``O(m)`` per event), and a split copies every to-edge of the split vertex to
the new vertex (Fig. 4: ``e2 -> av3`` becomes ``e2 -> av31`` and ``e2 -> av32``). The snapshot
turns each event's vertices back into ranges (they are contiguous, section 4.3), so the graph
is ``==`` the range-mode graph; only the work and memory differ (``O(mn)`` against
``O(n log m)``).

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

from cep.trends.errors import TrendOptionError
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


TO_EDGES = ("range", "basic")


def check_to_edges(value: object) -> str:
    """``value`` if it names a to-edge representation (``'range'``, ``'basic'``), else a
    :class:`TrendOptionError` (``CEP-TREND-011``)."""
    if value not in TO_EDGES:
        raise TrendOptionError(f"to_edges: expected one of {', '.join(map(repr, TO_EDGES))}, "
                               f"found {value!r}")
    return str(value)


class DynamicIndex:
    """The attribute vertices of one predicate in one window, grown event by event.

    Vertex ids are stable (creation order); ``order`` lists them by value.

    Args:
        predicate: the neighbour predicate.
        basic: store one to-edge per attribute vertex (``to_members``) instead of the owned
            vertex alone (module docstring, "Basic to-edges").
    """

    def __init__(self, predicate: NeighbourPredicate, basic: bool = False) -> None:
        self.predicate = predicate
        self.basic = basic
        self.to_members: list[list[int]] = []  # basic: vertex id -> events with a to-edge to it
        self.to_edges = 0  # to-edges stored (basic: one per vertex; range: one per event)
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
        self.to_members.append([])
        return len(self.members) - 1

    def add(self, event: int, lval: object, rval: object) -> None:
        """Insert one event: split the vertex its new ``rval`` violates, then link it.

        ``lval`` / ``rval`` are None for NULL.
        """
        if rval is not None:
            if rval not in self.owner:
                self._split(rval)
            self.to_owner[event] = self.owner[rval]
            if self.basic:
                rank = self.order.index(self.owner[rval])
                lo, hi, lo2, hi2 = _ranges(self.predicate.op, 0, len(self.order), rank)
                for vertex in self.order[lo:hi] + self.order[lo2:hi2]:
                    self.to_members[vertex].append(event)
                    self.to_edges += 1
            else:
                self.to_edges += 1
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
            self._copy_to_edges(old, new)
        elif self.shape == RIGHT_OPEN:
            old = self.order[p]  # [r[p-1], r[p]) holds r
            keep, move = _partition(self.members[old], lambda x: x >= r)
            self.members[old], self.members[new] = keep, move
            self.order.insert(p + 1, new)  # [r, r[p]) after [r[p-1], r)
            self._copy_to_edges(old, new)
        else:
            old = self.order[2 * p]  # the gap (r[p-1], r[p]) holds r
            gap = self._new_vertex()
            low, point, high = [], [], []
            for item in self.members[old]:
                (low if item[1] < r else point if item[1] == r else high).append(item)
            self.members[old], self.members[new], self.members[gap] = low, point, high
            self.order[2 * p + 1:2 * p + 1] = [new, gap]
            self._copy_to_edges(old, new)
            self._copy_to_edges(old, gap)

    def _copy_to_edges(self, old: int, new: int) -> None:
        """Basic to-edges: every event relevant to all of ``old`` is relevant to its part
        ``new`` too (section 4.1, the copy of a split); nothing to do with range to-edges."""
        if self.basic:
            self.to_members[new] = list(self.to_members[old])
            self.to_edges += len(self.to_members[old])

    def to_vertices(self, event: int) -> list[int]:
        """Basic to-edges: the vertex ids ``event`` has a to-edge to, in value order."""
        return [v for v in self.order if event in self.to_members[v]]

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

    def __init__(self, query: TrendQuery, n_windows: int = 1, to_edges: str = "range") -> None:
        self.query = query
        self.basic = check_to_edges(to_edges) == "basic"
        self.windows = [[DynamicIndex(p, self.basic) for p in query.predicates]
                        for _ in range(n_windows)]

    @property
    def n_to_edges(self) -> int:
        """The to-edges stored so far (basic: one per (event, vertex); range: one per event)."""
        return sum(ix.to_edges for indexes in self.windows for ix in indexes)

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
                if ix.basic:
                    _basic_ranges(ix, rank, base, ranges)
                else:
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


def _basic_ranges(ix: DynamicIndex, rank: dict[int, int], base: int, ranges: np.ndarray) -> None:
    """Write the to-edge ranges of basic to-edges: each event's vertices, read in value order,
    are one run (two around the excluded point for ``<>``), section 4.3."""
    held: dict[int, list[int]] = {}
    for vertex, events in enumerate(ix.to_members):
        if vertex in rank:
            for event in events:
                held.setdefault(event, []).append(rank[vertex])
    for event, ranks in held.items():
        ranks.sort()
        cuts = [i for i in range(1, len(ranks)) if ranks[i] != ranks[i - 1] + 1]
        runs = [(ranks[a], ranks[b - 1] + 1) for a, b in zip([0] + cuts, cuts + [len(ranks)])]
        if len(runs) > 2 or (len(runs) == 2 and ix.shape != POINTS_AND_GAPS):
            raise RuntimeError(f"the to-edges of event {event} are not contiguous: {runs}")
        flat = [x for run in runs for x in (base + run[0], base + run[1])] + [0, 0]
        ranges[:, event] = flat[:4]


def _values(bounds: list[object]) -> np.ndarray:
    if bounds and isinstance(bounds[0], str):
        return np.array(bounds, dtype=object)
    return np.array(bounds)


def build_graph_dynamic(query: TrendQuery | str, ts: np.ndarray, columns: Mapping[str, object], *,
                        window: np.ndarray | None = None, tiebreak: np.ndarray | None = None,
                        row: np.ndarray | None = None, to_edges: str = "range") -> TrendGraph:
    """Build the ABI graph by feeding the events one at a time in ts order (streaming).

    Same arguments and result as :func:`cep.trends.graph.build_graph` (the results are
    ``==``); a Python loop per event, as the streaming algorithm is. ``to_edges='basic'``
    stores one to-edge per attribute vertex while building (the paper's "seq", Fig. 8) and
    gives the same graph at a cost of ``O(m)`` per event.

    Raises:
        TrendOptionError: ``to_edges`` is neither ``'range'`` nor ``'basic'``.
    """
    q = compile_trend(query) if isinstance(query, str) else query
    check_to_edges(to_edges)
    prep = _prepare(q, ts, columns, window, tiebreak, row)
    n = len(prep.ts)
    dyn = DynamicGraph(q, prep.n_windows, to_edges)
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
