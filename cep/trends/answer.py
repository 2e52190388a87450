"""The whole trend query over the events of one partition: filters, windows, graph, answer.

``window_graph`` applies the class test and the filters (:mod:`cep.trends.filters`), cuts
the windows (:mod:`cep.trends.windows`) and builds one ABI graph holding every window
(:mod:`cep.trends.graph`); ``window_counts`` and ``window_trends`` answer from it. The Spark
layer does the first two steps in SQL and calls the rest; these functions give the same
answer on numpy columns, and are what the oracle is compared with.

Example:
    >>> import numpy as np
    >>> q = "PATTERN check+ c[] WHERE c[i].src = c[i-1].dest WITHIN 10 UNITS"
    >>> ts = np.array([1, 2, 3, 12])
    >>> cols = {"src": np.array(["a", "b", "b", "c"]), "dest": np.array(["b", "c", "c", "d"])}
    >>> types = np.array(["check"] * 4)
    >>> window_counts(q, ts, cols, types=types)
    {0: 2, 10: 1}
    >>> [(w, rows.tolist()) for w, rows in window_trends(q, ts, cols, types=types)]
    [(0, [0, 1]), (0, [0, 2]), (10, [3])]
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from cep.trends.count import count_by_window
from cep.trends.extract import DEFAULT_MAX_TRENDS, extract_trends
from cep.trends.filters import event_mask
from cep.trends.graph import TrendGraph, build_graph
from cep.trends.maximal import DEFAULT_COMPLETENESS, check_completeness
from cep.trends.operands import lookup
from cep.trends.query import TrendQuery, compile_trend
from cep.trends.windows import assign_windows, timestamps


def window_graph(query: TrendQuery | str, ts: np.ndarray, columns: Mapping[str, object], *,
                 types: np.ndarray | None = None, tiebreak: np.ndarray | None = None) -> TrendGraph:
    """The ABI graph of every window of one partition.

    Args:
        query: the compiled query or its text.
        ts: timestamps of the partition's events (any order).
        columns: attribute name -> array, one entry per event.
        types: the type column (needed when the class has no DEFINE).
        tiebreak: orders events with equal timestamps (default: input order).

    Returns:
        The graph; ``graph.row`` holds input row numbers, ``graph.window_starts`` the starts.
    """
    q = compile_trend(query) if isinstance(query, str) else query
    t = timestamps(ts)
    members = np.flatnonzero(event_mask(q, t, columns, types=types))
    starts, which = assign_windows(t[members], q.within, q.slide)
    rows = members[which]
    n = len(t)
    needed = {}
    for pred in q.predicates:
        for name in (pred.attr, pred.prev_attr):
            if name.lower() == "type" and types is not None:
                needed[name] = np.asarray(types)[rows]  # c[i].type reads the type column
            elif name.lower() != "ts":
                needed[name] = lookup(columns, name, n)[rows]
    order = rows if tiebreak is None else np.asarray(tiebreak)[rows]
    return build_graph(q, t[rows], needed, window=starts, tiebreak=order, row=rows)


def window_counts(query: TrendQuery | str, ts: np.ndarray, columns: Mapping[str, object], *,
                  types: np.ndarray | None = None, tiebreak: np.ndarray | None = None,
                  completeness: str = DEFAULT_COMPLETENESS) -> dict[int | float, int]:
    """Window start -> number of complete trends (exact), for every non-empty window.

    ``completeness``: ``'ends'`` (default) or ``'maximal'`` (:mod:`cep.trends.maximal`).
    """
    check_completeness(completeness)
    return count_by_window(window_graph(query, ts, columns, types=types, tiebreak=tiebreak),
                           completeness)


def window_trends(query: TrendQuery | str, ts: np.ndarray, columns: Mapping[str, object], *,
                  types: np.ndarray | None = None, tiebreak: np.ndarray | None = None,
                  max_trends: int = DEFAULT_MAX_TRENDS,
                  completeness: str = DEFAULT_COMPLETENESS) -> list[tuple[int | float, np.ndarray]]:
    """Every complete trend as ``(window start, input rows in ts order)``.

    ``completeness``: ``'ends'`` (default) or ``'maximal'`` (:mod:`cep.trends.maximal`).

    Raises:
        TrendLimitError: more than ``max_trends`` trends (checked before enumerating).
        TrendOptionError: an unknown ``completeness``.
    """
    check_completeness(completeness)
    graph = window_graph(query, ts, columns, types=types, tiebreak=tiebreak)
    starts = graph.window_starts.tolist()
    return [(starts[int(graph.window[t[0]])], graph.row[t])
            for t in extract_trends(graph, max_trends, completeness)]
