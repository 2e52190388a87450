"""The attribute-based indexing (ABI) graph of a trend query, built in parallel (vectorised).

Mei et al., ICPP 2021, section 4: instead of materialising the event graph (an edge ``j -> k``
for every pair of events the predicates link, quadratic in the window), the ABI graph links
events to **attribute vertices** that index the values of the predicate:

- **event vertices**: the events of a window ordered by ``(ts, tiebreak)``;
- **attribute vertices** of a predicate ``c[i].A op f(c[i-1].B)``: built from the sorted
  distinct ``rval = f(B)`` values of the window. For ``=`` one vertex per distinct value; for
  the order comparators *composite ranges*, the intervals between consecutive values
  (``>`` and ``<=``: ``(-inf, r0], (r0, r1], ..., (r[m-1], +inf)``; ``>=`` and ``<``:
  ``(-inf, r0), [r0, r1), ..., [r[m-1], +inf)``); for ``<>`` the values and the open gaps
  between them (``(-inf, r0), [r0], (r0, r1), [r1], ...``);
- a **from-edge** from each event to the attribute vertex holding its ``lval = A`` (none when
  ``A`` is NULL, or for ``=`` when no event's ``rval`` equals it);
- a **to-edge** from each event to the *range* ``[lo, hi)`` of attribute vertices its
  successors' ``lval`` must fall in (``<>``: two ranges around its own value; empty when
  ``rval`` is NULL).

Because the vertices of a window are sorted by value, the set of values satisfying
``x op rval`` is always a contiguous run of vertices, so a to-edge is two integers. The event
edge ``j -> k`` of a predicate exists exactly when ``from_vertex[k]`` lies in ``j``'s range;
with several predicates the edge needs every one of them, and ``ts(j) < ts(k)`` strictly
(:mod:`cep.trends.edges`). Several windows are built at once: each window has its own block of
attribute vertices, so no edge crosses windows.

:func:`build_graph` is the paper's parallel construction (Algorithm 1): compute ``lval`` and
``rval`` of all events, sort the distinct ``rval``, build the range vertices, map every value
with ``np.searchsorted``; ``O(n log n)``, no Python loop per event.
:func:`cep.trends.dynamic.build_graph_dynamic` is the streaming construction and builds the
same graph (``==`` compares graphs canonically). :mod:`cep.trends.parallel` runs Algorithm 1's
four steps as separate tasks (partitions on processes or Spark tasks) and builds it too;
:func:`from_edges` and :func:`to_edges` are the per-event formulas both share.

Example:
    >>> import numpy as np
    >>> from cep.trends.query import compile_trend
    >>> q = compile_trend("PATTERN s+ WHERE s[i].price > s[i-1].price")
    >>> g = build_graph(q, ts=np.array([1, 2, 3, 4]), columns={"price": np.array([5.0, 3.0, 4.0, 6.0])})
    >>> idx = g.indexes[0]
    >>> idx.shape, idx.bounds.tolist(), idx.from_vertex.tolist()
    ('left-open', [3.0, 4.0, 5.0, 6.0], [2, 0, 1, 3])
    >>> list(zip(idx.to_lo.tolist(), idx.to_hi.tolist()))
    [(3, 5), (1, 5), (2, 5), (4, 5)]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from cep.trends.errors import CorruptTrendGraphError, TrendInputError
from cep.trends.operands import Operands, operands
from cep.trends.query import NeighbourPredicate, TrendQuery, compile_trend
from cep.trends.windows import timestamps

POINTS = "points"
LEFT_OPEN = "left-open"
RIGHT_OPEN = "right-open"
POINTS_AND_GAPS = "points-and-gaps"
SHAPES = {"=": POINTS, ">": LEFT_OPEN, "<=": LEFT_OPEN, ">=": RIGHT_OPEN, "<": RIGHT_OPEN,
          "<>": POINTS_AND_GAPS}
FORMAT_VERSION = 1


@dataclass(frozen=True, eq=False)
class AttributeIndex:
    """The attribute vertices of one predicate, and every event's from-edge and to-edges.

    Vertices are numbered globally, window by window (window ``w`` owns the vertices
    ``vertex_start[w] .. vertex_start[w+1] - 1``), in increasing order of value inside a window.

    Attributes:
        predicate: the neighbour predicate.
        shape: ``"points"`` (``=``), ``"left-open"`` (``>``, ``<=``), ``"right-open"``
            (``>=``, ``<``) or ``"points-and-gaps"`` (``<>``).
        bounds: the distinct non-NULL ``rval`` of each window, sorted by (window, value).
        bound_window: the window number of each bound.
        vertex_start: first vertex of each window, plus the total (length ``W + 1``).
        from_vertex: per event, the vertex holding its ``lval``; -1 for none.
        to_lo, to_hi: per event, the range of vertices its successors' ``lval`` must be in.
        to_lo2, to_hi2: the second range (``<>`` only; otherwise empty ranges).
    """

    predicate: NeighbourPredicate
    shape: str
    bounds: np.ndarray
    bound_window: np.ndarray
    vertex_start: np.ndarray
    from_vertex: np.ndarray
    to_lo: np.ndarray
    to_hi: np.ndarray
    to_lo2: np.ndarray
    to_hi2: np.ndarray

    @property
    def n_vertices(self) -> int:
        """Number of attribute vertices over all windows."""
        return int(self.vertex_start[-1])

    def holds(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """For pairs of event positions: does ``lval(dst) op rval(src)`` hold (ignoring time)?"""
        v = self.from_vertex[dst]
        ok = (v >= 0) & (self.to_lo[src] <= v) & (v < self.to_hi[src])
        if self.shape == POINTS_AND_GAPS:
            ok |= (v >= 0) & (self.to_lo2[src] <= v) & (v < self.to_hi2[src])
        return ok

    def vertices(self) -> dict[str, np.ndarray]:
        """One row per attribute vertex: its window and the interval of values it holds.

        Keys: ``window``, ``lo``, ``hi`` (values; meaningless where unbounded), ``lo_bounded``,
        ``hi_bounded``, ``lo_closed``, ``hi_closed``.
        """
        starts = self.vertex_start
        n_windows = len(starts) - 1
        sizes = np.diff(starts)
        window = np.repeat(np.arange(n_windows, dtype=np.int64), sizes)
        j = np.arange(int(starts[-1]), dtype=np.int64) - starts[:-1][window]
        base = np.searchsorted(self.bound_window, np.arange(n_windows + 1))
        m = np.diff(base)[window]
        first = base[:-1][window]
        if self.shape == POINTS:
            lo_idx = hi_idx = first + j
            lo_b = hi_b = np.ones(len(j), dtype=bool)
            lo_c = hi_c = np.ones(len(j), dtype=bool)
        elif self.shape in (LEFT_OPEN, RIGHT_OPEN):
            lo_idx, hi_idx = first + j - 1, first + j
            lo_b, hi_b = j >= 1, j < m
            closed_low = self.shape == RIGHT_OPEN
            lo_c = np.full(len(j), closed_low)
            hi_c = np.full(len(j), not closed_low)
        else:
            point = (j % 2) == 1
            half = j // 2
            lo_idx = np.where(point, first + half, first + half - 1)
            hi_idx = first + half
            lo_b = point | (half >= 1)
            hi_b = point | (half < m)
            lo_c = hi_c = point
        return {
            "window": window,
            "lo": _take(self.bounds, lo_idx, lo_b),
            "hi": _take(self.bounds, hi_idx, hi_b),
            "lo_bounded": np.asarray(lo_b, dtype=bool),
            "hi_bounded": np.asarray(hi_b, dtype=bool),
            "lo_closed": np.asarray(lo_c, dtype=bool) & lo_b,
            "hi_closed": np.asarray(hi_c, dtype=bool) & hi_b,
        }


@dataclass(frozen=True, eq=False)
class TrendGraph:
    """The ABI graph of one or more windows of one partition (module docstring).

    Event vertices are sorted by (window, ts, tiebreak); ``pos`` (the index into these arrays)
    is the vertex number. Two graphs are ``==`` when every array of :meth:`to_arrays` is equal
    (NaN equal to NaN), which is the canonical form of both constructions.

    Attributes:
        ts: timestamp of each event vertex.
        row: the input row of each event vertex (the caller's event id or row number).
        window: the window number of each event vertex (non-decreasing).
        window_starts: the start of each window, by window number.
        indexes: one :class:`AttributeIndex` per neighbour predicate.
        text: the query text (not compared).
    """

    ts: np.ndarray
    row: np.ndarray
    window: np.ndarray
    window_starts: np.ndarray
    indexes: tuple[AttributeIndex, ...]
    text: str = ""

    @property
    def n_events(self) -> int:
        """Number of event vertices."""
        return len(self.ts)

    @property
    def n_windows(self) -> int:
        """Number of windows."""
        return len(self.window_starts)

    @property
    def predicates(self) -> tuple[NeighbourPredicate, ...]:
        """The neighbour predicates, one per attribute index."""
        return tuple(ix.predicate for ix in self.indexes)

    def window_slices(self) -> np.ndarray:
        """Event positions where each window starts, plus ``n_events`` (length ``W + 1``)."""
        return np.searchsorted(self.window, np.arange(self.n_windows + 1)).astype(np.int64)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TrendGraph):
            return NotImplemented
        a, b = self.to_arrays(), other.to_arrays()
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)

    __hash__ = None  # type: ignore[assignment]

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The graph as flat arrays, grouped like the Delta tables that persist it.

        Keys (``p`` is the predicate number):

        - ``format.version``; ``graph.window_starts``;
        - ``predicates.attr|op|prev_attr|text`` (strings), ``predicates.scale|offset|divisor``;
        - ``event_vertices.pos|row|ts|window``: one row per event vertex;
        - ``attribute_vertices.{p}.bound|bound_window``: the sorted distinct values the vertices
          are cut from (the canonical content), and one row per vertex:
          ``attribute_vertices.{p}.window|lo|hi|lo_bounded|hi_bounded|lo_closed|hi_closed``;
        - ``from_edges.{p}.event|vertex``: one row per event with a from-edge;
        - ``to_edges.{p}.event|lo|hi``: one row per non-empty range (``<>``: up to two per event).

        Example:
            >>> import numpy as np
            >>> g = build_graph("PATTERN s+ WHERE s[i].v = s[i-1].v", np.arange(3), {"v": np.array([1, 2, 1])})
            >>> a = g.to_arrays()
            >>> a["from_edges.0.event"].tolist(), a["to_edges.0.lo"].tolist()
            ([0, 1, 2], [0, 1, 0])
            >>> TrendGraph.from_arrays(a) == g
            True
        """
        out: dict[str, np.ndarray] = {
            "format.version": np.array([FORMAT_VERSION], dtype=np.int64),
            "graph.window_starts": self.window_starts,
            "predicates.attr": np.array([p.attr for p in self.predicates], dtype=object),
            "predicates.op": np.array([p.op for p in self.predicates], dtype=object),
            "predicates.prev_attr": np.array([p.prev_attr for p in self.predicates], dtype=object),
            "predicates.text": np.array([p.text for p in self.predicates], dtype=object),
            "predicates.scale": np.array([float(p.scale) for p in self.predicates], dtype=np.float64),
            "predicates.offset": np.array([float(p.offset) for p in self.predicates], dtype=np.float64),
            "predicates.divisor": np.array([float(p.divisor) for p in self.predicates], dtype=np.float64),
            "event_vertices.pos": np.arange(self.n_events, dtype=np.int64),
            "event_vertices.row": self.row,
            "event_vertices.ts": self.ts,
            "event_vertices.window": self.window,
        }
        events = np.arange(self.n_events, dtype=np.int64)
        for p, ix in enumerate(self.indexes):
            out[f"attribute_vertices.{p}.bound"] = ix.bounds
            out[f"attribute_vertices.{p}.bound_window"] = ix.bound_window
            for key, values in ix.vertices().items():
                out[f"attribute_vertices.{p}.{key}"] = values
            has = ix.from_vertex >= 0
            out[f"from_edges.{p}.event"] = events[has]
            out[f"from_edges.{p}.vertex"] = ix.from_vertex[has]
            ev, lo, hi = [], [], []
            for a, b in ((ix.to_lo, ix.to_hi), (ix.to_lo2, ix.to_hi2)):
                keep = a < b
                ev.append(events[keep])
                lo.append(a[keep])
                hi.append(b[keep])
            e, lo_all, hi_all = np.concatenate(ev), np.concatenate(lo), np.concatenate(hi)
            order = np.lexsort((lo_all, e))
            out[f"to_edges.{p}.event"] = e[order]
            out[f"to_edges.{p}.lo"] = lo_all[order]
            out[f"to_edges.{p}.hi"] = hi_all[order]
        return out

    @staticmethod
    def from_arrays(arrays: Mapping[str, np.ndarray], text: str = "") -> TrendGraph:
        """Rebuild a graph from :meth:`to_arrays` output (e.g. read back from Delta).

        Raises:
            CorruptTrendGraphError: a key is missing, the format version is unknown, or a
                length or index is out of range.
        """
        def get(key: str) -> np.ndarray:
            if key not in arrays:
                raise CorruptTrendGraphError(f"the stored graph has no '{key}'")
            return np.asarray(arrays[key])

        version = get("format.version")
        if version.shape != (1,) or int(version[0]) != FORMAT_VERSION:
            raise CorruptTrendGraphError(f"unknown graph format version {version.tolist()}; "
                                         f"expected [{FORMAT_VERSION}]")
        window_starts = get("graph.window_starts")
        row = get("event_vertices.row").astype(np.int64)
        ts = get("event_vertices.ts")
        window = get("event_vertices.window").astype(np.int64)
        n, n_windows = len(row), len(window_starts)
        if len(ts) != n or len(window) != n or len(get("event_vertices.pos")) != n:
            raise CorruptTrendGraphError("event vertex columns have different lengths")
        if n and (window.min() < 0 or window.max() >= n_windows or np.any(np.diff(window) < 0)):
            raise CorruptTrendGraphError("event vertex windows are out of range or not sorted")
        names = [get(f"predicates.{k}") for k in ("attr", "op", "prev_attr", "text", "scale", "offset", "divisor")]
        if len({len(v) for v in names}) != 1:
            raise CorruptTrendGraphError("predicate columns have different lengths")
        indexes = []
        for p in range(len(names[0])):
            op = str(names[1][p])
            if op not in SHAPES:
                raise CorruptTrendGraphError(f"predicate {p} has unknown comparator {op!r}")
            pred = NeighbourPredicate(str(names[0][p]), op, str(names[2][p]), _number(names[4][p]),
                                      _number(names[5][p]), _number(names[6][p]), text=str(names[3][p]))
            bounds = get(f"attribute_vertices.{p}.bound")
            bound_window = get(f"attribute_vertices.{p}.bound_window").astype(np.int64)
            if len(bound_window) != len(bounds) or np.any(np.diff(bound_window) < 0) or (
                    len(bound_window) and (bound_window.min() < 0 or bound_window.max() >= n_windows)):
                raise CorruptTrendGraphError(f"predicate {p}: bound windows are out of range or not sorted")
            shape = SHAPES[op]
            vstart = _vertex_start(shape, bound_window, n_windows)
            n_vertices = int(vstart[-1])
            from_vertex = np.full(n, -1, dtype=np.int64)
            fe, fv = get(f"from_edges.{p}.event").astype(np.int64), get(f"from_edges.{p}.vertex").astype(np.int64)
            _check_index(fe, n, f"predicate {p}: from-edge event")
            _check_index(fv, n_vertices, f"predicate {p}: from-edge vertex")
            from_vertex[fe] = fv
            te = get(f"to_edges.{p}.event").astype(np.int64)
            tlo = get(f"to_edges.{p}.lo").astype(np.int64)
            thi = get(f"to_edges.{p}.hi").astype(np.int64)
            _check_index(te, n, f"predicate {p}: to-edge event")
            if len(tlo) != len(te) or len(thi) != len(te) or np.any(tlo < 0) or np.any(thi > n_vertices) \
                    or np.any(tlo >= thi):
                raise CorruptTrendGraphError(f"predicate {p}: to-edge ranges are out of range")
            lo1 = np.zeros(n, dtype=np.int64)
            hi1 = np.zeros(n, dtype=np.int64)
            lo2 = np.zeros(n, dtype=np.int64)
            hi2 = np.zeros(n, dtype=np.int64)
            first = np.ones(len(te), dtype=bool)
            first[1:] = te[1:] != te[:-1]
            lo1[te[first]], hi1[te[first]] = tlo[first], thi[first]
            lo2[te[~first]], hi2[te[~first]] = tlo[~first], thi[~first]
            indexes.append(AttributeIndex(pred, shape, bounds, bound_window, vstart, from_vertex,
                                          lo1, hi1, lo2, hi2))
        return TrendGraph(ts, row, window, window_starts, tuple(indexes), text)


def build_graph(query: TrendQuery | str, ts: np.ndarray, columns: Mapping[str, object], *,
                window: np.ndarray | None = None, tiebreak: np.ndarray | None = None,
                row: np.ndarray | None = None) -> TrendGraph:
    """Build the ABI graph of the given events (Mei et al., ICPP 2021, Algorithm 1), vectorised.

    The events are the members of the query's class that passed its filters (the caller or
    the Spark layer applies :func:`cep.trends.filters.event_mask` first). With ``window``,
    each distinct value is one window and its events get their own vertices.

    Args:
        query: the compiled query (or its text).
        ts: timestamps (numbers or datetimes), one per event.
        columns: attribute name -> array, one entry per event.
        window: the window (start) of each event, e.g. from :func:`assign_windows` (an event
            in several windows appears once per window); None for one window (start 0).
        tiebreak: orders events with equal timestamps (default: input order).
        row: the id reported for each event (default: its input index).

    Returns:
        The graph; event vertices sorted by (window, ts, tiebreak).

    Raises:
        TrendInputError: arrays of different lengths, a NULL timestamp, a missing column.
        UnsupportedTrendPatternError: a string attribute with an order comparator (``CEP-TREND-006``).

    Complexity:
        ``O(n log n)`` per predicate (sorting), all numpy; 0.1 to 0.45 s for 10**6 events and
        one or two predicates on one core (docs/trends.md, section 6).
    """
    q = compile_trend(query) if isinstance(query, str) else query
    prepared = _prepare(q, ts, columns, window, tiebreak, row)
    indexes = tuple(_index(pred, ops, prepared.wnum, prepared.n_windows)
                    for pred, ops in zip(q.predicates, prepared.operands))
    return TrendGraph(prepared.ts, prepared.row, prepared.wnum, prepared.window_starts, indexes, q.text)


@dataclass(frozen=True)
class Prepared:
    """Events sorted by (window, ts, tiebreak), with the operands of every predicate."""

    ts: np.ndarray
    row: np.ndarray
    wnum: np.ndarray
    window_starts: np.ndarray
    n_windows: int
    operands: tuple[Operands, ...]


def number_events(ts: np.ndarray, window: np.ndarray | None, tiebreak: np.ndarray | None,
                  row: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Timestamps, window starts, window number and row of each event, in input order (the
    sequential and the parallel construction both start here).

    Raises:
        TrendInputError: a NULL timestamp, or ``window``/``tiebreak``/``row`` of another length.
    """
    t = timestamps(ts)
    n = len(t)
    for name, arr in (("window", window), ("tiebreak", tiebreak), ("row", row)):
        if arr is not None and len(np.asarray(arr)) != n:
            raise TrendInputError(f"{name} has {len(np.asarray(arr))} entries; expected {n} like the timestamps")
    if window is None:
        window_starts = np.zeros(1 if n else 0, dtype=np.int64)
        wnum = np.zeros(n, dtype=np.int64)
    else:
        window_starts, wnum = np.unique(np.asarray(window), return_inverse=True)
        wnum = wnum.astype(np.int64)
    rows = np.arange(n, dtype=np.int64) if row is None else np.asarray(row).astype(np.int64)
    return t, window_starts, wnum, rows


def _prepare(q: TrendQuery, ts: np.ndarray, columns: Mapping[str, object], window: np.ndarray | None,
             tiebreak: np.ndarray | None, row: np.ndarray | None) -> Prepared:
    t, window_starts, wnum, rows = number_events(ts, window, tiebreak, row)
    n = len(t)
    ops = tuple(operands(p, columns, n, ts=np.asarray(ts), query_text=q.text) for p in q.predicates)
    order = _event_order(wnum, t, tiebreak)
    if order is not None:
        t, rows, wnum = t[order], rows[order], wnum[order]
        ops = tuple(Operands(o.lval[order], o.lnull[order], o.rval[order], o.rnull[order], o.text) for o in ops)
    return Prepared(t, rows, wnum, window_starts, len(window_starts), ops)


def _event_order(wnum: np.ndarray, t: np.ndarray, tiebreak: np.ndarray | None) -> np.ndarray | None:
    """The permutation sorting events by (window, ts, tiebreak); None when already sorted."""
    n = len(t)
    if n < 2:
        return None
    tb = None if tiebreak is None else np.asarray(tiebreak)
    dw, dt = np.diff(wnum), np.diff(t)
    later = (dw > 0) | ((dw == 0) & (dt > 0))
    same = (dw == 0) & (dt == 0)
    if tb is None:
        ok = bool(np.all(later | same))
    else:
        ok = bool(np.all(later | (same & (tb[1:] >= tb[:-1]))))
    if ok:
        return None
    keys = (t, wnum) if tb is None else (tb, t, wnum)
    return np.lexsort(keys)


def _index(pred: NeighbourPredicate, ops: Operands, wnum: np.ndarray, n_windows: int) -> AttributeIndex:
    """Algorithm 1 for one predicate: sorted distinct ``rval``, vertices, from- and to-edges."""
    n = len(wnum)
    shape = SHAPES[pred.op]
    valid_l, valid_r = ~ops.lnull, ~ops.rnull
    same = ops.lval is ops.rval or (pred.attr == pred.prev_attr and pred.identity
                                    and np.array_equal(ops.lnull, ops.rnull))
    dense = _dense_ranks(ops, valid_l, valid_r) if n_windows <= 1 else None
    if dense is not None:
        bounds, r_pos, count_lt, count_le = dense
        keys_b = bounds
        bound_window = np.zeros(len(bounds), dtype=np.int64)
        lkeys = ops.lval
    elif n_windows <= 1:
        # One window: the values themselves are the sort keys.
        bounds, r_inv = np.unique(ops.rval[valid_r], return_inverse=True)
        keys_b = bounds
        bound_window = np.zeros(len(bounds), dtype=np.int64)
        r_pos = np.zeros(n, dtype=np.int64)
        r_pos[valid_r] = r_inv
        lkeys = ops.lval
    else:
        # Several windows: rank all values once, then sort by (window, rank) codes.
        lv, rv = ops.lval[valid_l], ops.rval[valid_r]
        uniq, inv = np.unique(np.concatenate([lv, rv]), return_inverse=True)
        big = np.int64(max(len(uniq), 1))
        lcode = np.zeros(n, dtype=np.int64)
        rcode = np.zeros(n, dtype=np.int64)
        lcode[valid_l] = wnum[valid_l] * big + inv[:len(lv)]
        rcode[valid_r] = wnum[valid_r] * big + inv[len(lv):]
        keys_b, r_inv = np.unique(rcode[valid_r], return_inverse=True)
        bounds = uniq[keys_b % big] if len(keys_b) else uniq[:0]
        bound_window = (keys_b // big).astype(np.int64)
        r_pos = np.zeros(n, dtype=np.int64)
        r_pos[valid_r] = r_inv
        lkeys = lcode
    base = np.searchsorted(bound_window, np.arange(n_windows + 1)).astype(np.int64)
    vstart = _vertex_start(shape, bound_window, n_windows)
    w = wnum
    n_bounds = len(keys_b)
    if same and shape in (POINTS, LEFT_OPEN, POINTS_AND_GAPS):
        l_left, hit = r_pos, valid_l.copy()
    elif dense is not None:
        l_left = count_le if shape == RIGHT_OPEN else count_lt
        hit = valid_l & (count_le > count_lt) if shape in (POINTS, POINTS_AND_GAPS) else valid_l
    else:
        side = "right" if shape == RIGHT_OPEN else "left"
        l_left = np.searchsorted(keys_b, lkeys, side=side).astype(np.int64)
        if shape in (POINTS, POINTS_AND_GAPS):
            probe = np.minimum(l_left, max(n_bounds - 1, 0))
            hit = valid_l & (l_left < n_bounds) & (keys_b[probe] == lkeys if n_bounds else False)
        else:
            hit = valid_l
    from_vertex = from_edges(shape, vstart, base, w, l_left, hit, valid_l)
    to_lo, to_hi, to_lo2, to_hi2 = to_edges(pred.op, vstart, base, w, r_pos, valid_r)
    return AttributeIndex(pred, shape, bounds, bound_window, vstart, from_vertex, to_lo, to_hi, to_lo2, to_hi2)


def from_edges(shape: str, vstart: np.ndarray, base: np.ndarray, w: np.ndarray, l_left: np.ndarray,
               hit: np.ndarray, valid_l: np.ndarray) -> np.ndarray:
    """The from-edge of each event: the vertex holding its ``lval``, -1 for none (Algorithm 1, line 17).

    Elementwise over any subset of events, so a partition of them can run it alone
    (:mod:`cep.trends.parallel`).

    Args:
        shape: the vertex shape of the predicate.
        vstart, base: first vertex and first bound of each window (length ``W + 1``).
        w: the window number of each event.
        l_left: per event, the global number of bounds below its ``lval`` (``searchsorted`` on
            side ``left``; side ``right`` for ``right-open``).
        hit: per event, whether its ``lval`` equals a bound (read for points only).
        valid_l: per event, whether its ``lval`` is not NULL.
    """
    if shape == POINTS:
        out = np.where(hit, l_left, -1)
    elif shape == POINTS_AND_GAPS:
        out = np.where(valid_l, vstart[w] + 2 * (l_left - base[w]) + hit, -1)
    else:
        out = np.where(valid_l, vstart[w] + (l_left - base[w]), -1)
    return out.astype(np.int64, copy=False)


def to_edges(op: str, vstart: np.ndarray, base: np.ndarray, w: np.ndarray, r_pos: np.ndarray,
             valid_r: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The range to-edges ``(lo, hi, lo2, hi2)`` of each event (Algorithm 1, lines 22-27).

    Section 4.3: the vertices a successor's ``lval`` may hang from are one contiguous run,
    ``(av_t, avs.last)`` for ``>``/``>=``; the mirror run for ``<``/``<=``, one vertex for ``=``
    and the two runs around the point for ``<>``. Elementwise, like :func:`from_edges`.

    Args:
        op: the comparator.
        vstart, base, w: as for :func:`from_edges`.
        r_pos: per event, the global index of its ``rval`` among the bounds (any value where NULL).
        valid_r: per event, whether its ``rval`` is not NULL.
    """
    shape = SHAPES[op]
    r_local = r_pos - base[w]
    empty = np.zeros(len(w), dtype=np.int64)
    if shape == POINTS:
        to_lo = np.where(valid_r, r_pos, 0)
        to_hi = np.where(valid_r, r_pos + 1, 0)
        to_lo2 = to_hi2 = empty
    elif shape == POINTS_AND_GAPS:
        point = vstart[w] + 2 * r_local + 1
        to_lo = np.where(valid_r, vstart[w], 0)
        to_hi = np.where(valid_r, point, 0)
        to_lo2 = np.where(valid_r, point + 1, 0)
        to_hi2 = np.where(valid_r, vstart[w + 1], 0)
    else:
        if op in (">", ">="):
            to_lo = np.where(valid_r, vstart[w] + r_local + 1, 0)
            to_hi = np.where(valid_r, vstart[w + 1], 0)
        else:
            to_lo = np.where(valid_r, vstart[w], 0)
            to_hi = np.where(valid_r, vstart[w] + r_local + 1, 0)
        to_lo2 = to_hi2 = empty
    # Empty ranges are stored as [0, 0) so that equal graphs have equal arrays.
    nonempty = to_lo < to_hi
    to_lo, to_hi = np.where(nonempty, to_lo, 0), np.where(nonempty, to_hi, 0)
    nonempty2 = to_lo2 < to_hi2
    to_lo2, to_hi2 = np.where(nonempty2, to_lo2, 0), np.where(nonempty2, to_hi2, 0)
    return (to_lo.astype(np.int64), to_hi.astype(np.int64), to_lo2.astype(np.int64),
            to_hi2.astype(np.int64))


def _dense_ranks(ops: Operands, valid_l: np.ndarray,
                 valid_r: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Sorted distinct ``rval`` and every value's rank by counting, for integers in a narrow range.

    Account numbers, ids and codes are integers whose range is rarely much wider than the
    number of events. Then a presence table over the range and its running sum give the
    distinct values and, for every ``lval``, the number of them below it (``searchsorted``
    with side ``left``) and not above it (side ``right``) in ``O(n + range)`` sequential
    passes: no sort, and no binary search of ``n`` random values (which is memory-bound
    and was half the build time at 10**7 events, BENCHMARKS.md).

    Returns:
        ``(bounds, r_pos, count_lt, count_le)`` with ``r_pos`` the rank of each valid
        ``rval`` (0 where NULL); None when the values are not integers or the range is wider
        than ``4 * n + 1024`` (the sort path is used then).
    """
    lv, rv = ops.lval, ops.rval
    if lv.dtype.kind not in "iu" or rv.dtype.kind not in "iu" or not valid_r.any():
        return None
    r_valid = rv[valid_r]
    lo, hi = int(r_valid.min()), int(r_valid.max())
    n = len(rv)
    if hi - lo > 4 * n + 1024:
        return None
    present = np.zeros(hi - lo + 1, dtype=bool)
    present[r_valid - lo] = True
    bounds = (np.flatnonzero(present) + lo).astype(rv.dtype, copy=False)
    count_le_table = np.cumsum(present, dtype=np.int64)
    r_pos = np.zeros(n, dtype=np.int64)
    r_pos[valid_r] = count_le_table[r_valid - lo] - 1
    # lval outside [lo, hi] has no equal rval: none below it (under lo) or all of them (over hi).
    inside = valid_l & (lv >= lo) & (lv <= hi)
    slot = np.where(inside, lv - lo, 0).astype(np.int64, copy=False)
    count_le = np.where(inside, count_le_table[slot], np.where(valid_l & (lv > hi), len(bounds), 0))
    count_lt = count_le - (inside & present[slot])
    return bounds, r_pos, count_lt, count_le


def _vertex_start(shape: str, bound_window: np.ndarray, n_windows: int) -> np.ndarray:
    """First vertex of each window's block (and the total) for ``shape``."""
    base = np.searchsorted(bound_window, np.arange(n_windows + 1)).astype(np.int64)
    windows = np.arange(n_windows + 1, dtype=np.int64)
    if shape == POINTS:
        return base
    if shape == POINTS_AND_GAPS:
        return 2 * base + windows
    return base + windows


def _take(values: np.ndarray, idx: np.ndarray, bounded: np.ndarray) -> np.ndarray:
    """``values[idx]`` where bounded, a neutral placeholder elsewhere (same dtype)."""
    if len(values) == 0:
        fill = "" if values.dtype == object else 0
        return np.full(len(idx), fill, dtype=values.dtype if len(idx) else values.dtype)
    out = values[np.clip(idx, 0, len(values) - 1)].copy()
    if values.dtype == object:
        out[~bounded] = ""
    else:
        out[~bounded] = 0
    return out


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind == "f" and b.dtype.kind == "f":
        return bool(np.array_equal(a, b, equal_nan=True))
    if a.dtype == object or b.dtype == object:
        return all(x == y or (x != x and y != y) for x, y in zip(a.tolist(), b.tolist()))
    return bool(np.array_equal(a, b))


def _number(value: object) -> int | float:
    f = float(value)  # type: ignore[arg-type]
    return int(f) if f.is_integer() else f


def _check_index(values: np.ndarray, size: int, what: str) -> None:
    if len(values) and (values.min() < 0 or values.max() >= size):
        raise CorruptTrendGraphError(f"{what} out of range [0, {size})")
