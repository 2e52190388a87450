"""The brute-force oracle of complete event trends: docs/trends.md implemented literally.

Independent of ``cep/trends``: it reads the parsed query itself and evaluates every condition
with the scalar SQL interpreter of :mod:`cep.oracles.values` (plain Python values, NULL as
None). For each partition:

1. an event is a member when its class test holds (DEFINE TRUE, or type equal to the class)
   and every WHERE condition that reads only the current event is TRUE;
2. windows: every start ``m * s`` (``s`` the slide, the length ``w`` without SLIDE) with
   ``start <= ts < start + w`` for some member, each holding the members with
   ``start <= ts < start + w``; without WITHIN, one window (start 0) with every member;
3. in a window, members ordered by ``(ts, tiebreak)``; an edge ``j -> k`` for every pair with
   ``ts(j) < ts(k)`` for which every condition that reads ``c[i-1]`` is TRUE with ``c[i]``
   read from ``k`` and ``c[i-1]`` from ``j``, and every ``[attr]`` holds (``j.attr = k.attr``,
   NULL not equal to anything); O(n^2) pairs;
4. sources have no incoming edge, sinks no outgoing one; the trends are all source-to-sink
   paths (depth-first search, an event alone when it is both), the count their number (also
   counted without listing them, by a memoised depth-first search, for larger inputs).

:func:`oracle_complete_trends` checks both of the paper's definitions of "complete" from
scratch: it lists every path of a window (any start, any end) and keeps those that no event
extends at either end (``'ends'``) or that are a sub-sequence of no other path (``'maximal'``).

Small inputs only: it is meant to be obviously right, not fast.

Example:
    >>> import numpy as np
    >>> q = "PATTERN s+ WHERE s[i].p > s[i-1].p"
    >>> ts, cols = np.arange(4), {"p": np.array([3, 1, 2, 5])}
    >>> w = oracle_trend_windows(q, ts, cols, types=np.array(["s"] * 4))
    >>> sorted(w[0].edges), w[0].trends, w[0].count
    ([(0, 3), (1, 2), (1, 3), (2, 3)], ((0, 3), (1, 2, 3), (1, 3)), 3)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from cep.lang import Query, parse_pattern
from cep.lang.ast import TIME_UNITS, AttrRef, Condition, Event, IterRef, Kleene, TsRef
from cep.match.errors import MatchLimitError
from cep.oracles.values import compare, evaluate, to_value

DEFAULT_MAX_PATHS = 200_000


@dataclass(frozen=True)
class OracleWindow:
    """One window as the oracle sees it; events are named by their input row numbers.

    Attributes:
        start: the window start (0 for the single window of a query without WITHIN).
        rows: the members in ``(ts, tiebreak)`` order.
        edges: every ``(j, k)`` pair linked by the predicates.
        sources, sinks: rows without incoming / outgoing edges.
        trends: every source-to-sink path, as tuples of rows, sorted (None when the caller
            asked for the count only).
        count: the number of source-to-sink paths, counted by a memoised depth-first search
            over the same edges (so it is available when enumerating would take too long).
    """

    start: Any
    rows: tuple[int, ...]
    edges: frozenset[tuple[int, int]]
    sources: tuple[int, ...]
    sinks: tuple[int, ...]
    trends: tuple[tuple[int, ...], ...] | None
    count: int


def oracle_trend_windows(query: Query | str, ts: Any, columns: Mapping[str, Any], *,
                         types: Any = None, tiebreak: Any = None, listing: bool = True,
                         max_paths: int = DEFAULT_MAX_PATHS) -> dict[Any, OracleWindow]:
    """Every non-empty window of one partition with its edges, sources, sinks and trends.

    Args:
        query: pattern text or a parsed query (one Kleene+ class; see docs/trends.md).
        ts: timestamps (numbers, or datetimes read as microseconds).
        columns: attribute name -> sequence of values, one per event.
        types: the type column (needed when the class has no DEFINE).
        tiebreak: orders events with equal timestamps (default: input order).
        listing: False to count the trends without listing them (``trends`` is None).
        max_paths: the most trends the oracle may enumerate.

    Returns:
        Window start -> :class:`OracleWindow`, in order of start.

    Raises:
        MatchLimitError: more than ``max_paths`` trends.
    """
    q = parse_pattern(query) if isinstance(query, str) else query
    reader = _Reader(q, ts, columns, types)
    members = [e for e in range(reader.n) if reader.member(e)]
    order_key = list(range(reader.n)) if tiebreak is None else [to_value(v) for v in tiebreak]
    windows = _windows(q, reader, members)
    out: dict[Any, OracleWindow] = {}
    budget = [max_paths]
    for start in sorted(windows):
        rows = sorted(windows[start], key=lambda e: (reader.ts[e], order_key[e]))
        edges = {(j, k) for a, j in enumerate(rows) for k in rows[a + 1:]
                 if reader.ts[j] < reader.ts[k] and reader.linked(j, k)}
        succ = {e: [k for k in rows if (e, k) in edges] for e in rows}
        has_in = {k for _, k in edges}
        sources = tuple(e for e in rows if e not in has_in)
        sinks = tuple(e for e in rows if not succ[e])
        count = sum(_count(e, succ, {}) for e in sources)
        listed = None
        if listing:
            trends: list[tuple[int, ...]] = []
            for e in sources:
                _paths(e, succ, [e], trends, budget, max_paths)
            listed = tuple(sorted(trends))
        out[start] = OracleWindow(start, tuple(rows), frozenset(edges), sources, sinks, listed, count)
    return out


def _count(e: int, succ: dict[int, list[int]], memo: dict[int, int]) -> int:
    """Paths from ``e`` to a sink (an exact int), memoised; recursion depth is the path length."""
    if e not in memo:
        memo[e] = sum(_count(k, succ, memo) for k in succ[e]) if succ[e] else 1
    return memo[e]


def oracle_trend_counts(query: Query | str, ts: Any, columns: Mapping[str, Any], **kwargs: Any) -> dict[Any, int]:
    """Window start -> number of complete trends (counted over the pairwise edges)."""
    kwargs.setdefault("listing", False)
    return {w: win.count for w, win in oracle_trend_windows(query, ts, columns, **kwargs).items()}


def oracle_complete_trends(window: OracleWindow, completeness: str = "ends",
                           max_trends: int = 20_000) -> tuple[tuple[int, ...], ...]:
    """The complete trends of one window under either definition of Mei et al., by brute force.

    Independent of the source-to-sink shortcut above: it lists **every** trend of the window
    (every path of its event edges, of any length, from any event) and keeps those that the
    definition calls complete, read literally:

    - ``'ends'`` (section 3, seed text line 119): no event ``e_k`` of the window can be added
      after the last event or before the first one so that the longer sequence is a trend;
    - ``'maximal'`` (section 1, line 43): the trend is not a sub-sequence of any other trend
      (events may be inserted anywhere, also between two of its events).

    Args:
        window: a window of :func:`oracle_trend_windows`.
        completeness: ``'ends'`` or ``'maximal'``.
        max_trends: the most trends (paths) the window may hold; more raises.

    Returns:
        The complete trends as sorted tuples of input rows.

    Raises:
        ValueError: an unknown ``completeness``.
        MatchLimitError: more than ``max_trends`` paths.

    Example:
        >>> import numpy as np
        >>> w = oracle_trend_windows("PATTERN s+ WHERE s[i].p > s[i-1].p", np.arange(4),
        ...                          {"p": np.array([1, 3, 2, 4])}, types=np.array(["s"] * 4))[0]
        >>> oracle_complete_trends(w, "ends"), oracle_complete_trends(w, "maximal")
        (((0, 1, 3), (0, 2, 3), (0, 3)), ((0, 1, 3), (0, 2, 3)))
    """
    if completeness not in ("ends", "maximal"):
        raise ValueError(f"completeness must be 'ends' or 'maximal', found {completeness!r}")
    succ = {e: sorted(k for j, k in window.edges if j == e) for e in window.rows}
    every: list[tuple[int, ...]] = []
    stack = [(e,) for e in window.rows]
    while stack:
        path = stack.pop()
        every.append(path)
        if len(every) > max_trends:
            raise MatchLimitError(f"the window holds more than {max_trends} trends")
        stack.extend(path + (k,) for k in succ[path[-1]])
    if completeness == "ends":
        keep = [p for p in every
                if not any((e, p[0]) in window.edges or (p[-1], e) in window.edges
                           for e in window.rows)]
    else:
        keep = [p for p in every if not any(len(o) > len(p) and _subsequence(p, o) for o in every)]
    return tuple(sorted(keep))


def _subsequence(short: tuple[int, ...], long: tuple[int, ...]) -> bool:
    """``short`` occurs in ``long`` in order (not necessarily contiguously)."""
    it = iter(long)
    return all(any(x == y for y in it) for x in short)


def _paths(e: int, succ: dict[int, list[int]], path: list[int], out: list[tuple[int, ...]],
           budget: list[int], max_paths: int) -> None:
    if not succ[e]:
        if budget[0] <= 0:
            raise MatchLimitError(f"the trend oracle would enumerate more than max_paths={max_paths} "
                                  "trends; use a smaller input or pass a larger max_paths")
        budget[0] -= 1
        out.append(tuple(path))
        return
    for k in succ[e]:
        path.append(k)
        _paths(k, succ, path, out, budget, max_paths)
        path.pop()


def _windows(q: Query, reader: _Reader, members: list[int]) -> dict[Any, list[int]]:
    if q.within is None:
        return {0: members} if members else {}
    w = _length(q.within)
    s = w if q.slide is None else _length(q.slide)
    found: dict[Any, list[int]] = {}
    for e in members:
        t = reader.ts[e]
        for m in range(math.floor((t - w) / s) - 1, math.floor(t / s) + 2):
            start = m * s
            if start <= t < start + w:
                found.setdefault(start, []).append(e)
    return found


def _length(span: Any) -> int | float:
    if span.unit in TIME_UNITS:
        return span.microseconds()
    value = span.value
    return int(value) if float(value).is_integer() else float(value)


class _Reader:
    """Cell values and condition checks for the events of one partition."""

    def __init__(self, q: Query, ts: Any, columns: Mapping[str, Any], types: Any) -> None:
        node = q.pattern
        assert isinstance(node, Kleene) and isinstance(node.part, Event), "a trend query is one class under +"
        self.cls, self.alias = node.part.cls, node.part.alias
        self.ts = [to_value(v) for v in np.asarray(ts).tolist()] if np.asarray(ts).dtype.kind != "M" \
            else [to_value(v) for v in np.asarray(ts).astype("datetime64[us]").astype(np.int64).tolist()]
        self.n = len(self.ts)
        self.columns = {str(k).lower(): v for k, v in columns.items()}
        self.types = None if types is None else [to_value(v) for v in list(types)]
        self.define = next((d.condition for d in q.defines if d.cls == self.cls), None)
        self.singles: list[Condition] = []
        self.pairs: list[Condition] = []
        for cond in q.conditions:
            (self.pairs if any(_previous(r) for r in cond.refs) else self.singles).append(cond)
        self.equivalences = [eq.attr for eq in q.equivalences]
        self._cache: dict[str, list[Any]] = {}

    def cell(self, attr: str, e: int) -> Any:
        name = attr.lower()
        if name == "ts":
            return self.ts[e]
        if name == "type":
            return None if self.types is None else self.types[e]
        if name not in self._cache:
            self._cache[name] = [to_value(v) for v in list(self.columns[name])]
        return self._cache[name][e]

    def member(self, e: int) -> bool:
        if self.define is not None:
            if evaluate(self.define.expr, lambda name: self._single(self.define, name, e)) is not True:
                return False
        elif self.types is None or self.types[e] != self.cls:
            return False
        return all(evaluate(c.expr, lambda name, c=c: self._single(c, name, e)) is True for c in self.singles)

    def linked(self, j: int, k: int) -> bool:
        for attr in self.equivalences:
            if compare(self.cell(attr, j), self.cell(attr, k)) != 0:
                return False
        return all(evaluate(c.expr, lambda name, c=c: self._pair(c, name, j, k)) is True for c in self.pairs)

    def _single(self, cond: Condition, name: str, e: int) -> Any:
        ref = cond.ref(name)
        if isinstance(ref, TsRef):
            return self.ts[e]
        assert isinstance(ref, (AttrRef, IterRef))
        return self.cell(ref.attr, e)

    def _pair(self, cond: Condition, name: str, j: int, k: int) -> Any:
        ref = cond.ref(name)
        e = j if _previous(ref) else k
        if isinstance(ref, TsRef):
            return self.ts[e]
        assert isinstance(ref, (AttrRef, IterRef))
        return self.cell(ref.attr, e)


def _previous(ref: Any) -> bool:
    index = getattr(ref, "index", None)
    return index is not None and index.relative and index.offset == -1
