"""Which events take part in a trend query: class membership and single-event filters.

An event is a member when it belongs to the class (its ``DEFINE`` condition is TRUE, or with
no ``DEFINE`` its type column equals the class name) and every filter of the query is TRUE
(NULL is not TRUE). The Spark layer pushes these down as boolean columns; this module
evaluates the same conditions on numpy columns (with :mod:`cep.match.compile.expr`, SQL three-valued
logic), so the core can run on its own and agrees with the oracle.

References a filter may use: ``c.x``, ``c[i].x``, ``t(c)``, ``t(c[i])`` (the timestamp),
``c.ts`` / ``c.type`` (always the timestamp and type columns, docs/semantics.md decision 9),
and in ``DEFINE`` the bare attribute ``x``.

Example:
    >>> import numpy as np
    >>> from cep.trends.query import compile_trend
    >>> q = compile_trend("PATTERN check+ c[] WHERE c.amount > 10 AND c[i].src = c[i-1].dest")
    >>> event_mask(q, np.arange(3), {"amount": np.array([5, 50, 20])},
    ...            types=np.array(["check", "check", "wire"], dtype=object)).tolist()
    [False, True, False]
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from cep.lang.ast import AttrRef, Condition, IterRef, TsRef
from cep.match.compile.expr import column_value, compile_expr
from cep.trends.errors import TrendInputError
from cep.trends.operands import lookup
from cep.trends.query import TrendQuery


def event_mask(query: TrendQuery, ts: np.ndarray, columns: Mapping[str, object], *,
               types: np.ndarray | None = None) -> np.ndarray:
    """Boolean mask of the events that belong to the query's class and pass every filter.

    Args:
        query: the compiled trend query.
        ts: timestamps (read by ``t(c)`` and ``c.ts``).
        columns: attribute name -> array, one entry per event (case-insensitive names).
        types: the type column; needed when the class has no ``DEFINE`` (and for ``c.type``).

    Returns:
        A boolean array, one entry per event.

    Raises:
        TrendInputError: a column is missing or has the wrong length; no type column while the
            class has no DEFINE.
    """
    ts = np.asarray(ts)
    n = len(ts)
    if query.class_condition is not None:
        mask = _truth(query.class_condition, ts, columns, types, n)
    else:
        if types is None:
            raise TrendInputError(f"the class {query.cls} has no DEFINE, so the type column decides "
                                  "membership; pass types=")
        kinds = np.asarray(types)
        if len(kinds) != n:
            raise TrendInputError(f"the type column has {len(kinds)} entries; expected {n} like the timestamps")
        mask = np.asarray(kinds.astype(object) == query.cls, dtype=bool)
    for cond in query.filters:
        mask &= _truth(cond, ts, columns, types, n)
    return mask


def _truth(cond: Condition, ts: np.ndarray, columns: Mapping[str, object], types: np.ndarray | None,
           n: int) -> np.ndarray:
    env = {}
    for ref in cond.refs:
        env[ref.name] = column_value(_column(ref, ts, columns, types, n))
    return np.array(compile_expr(cond.expr).truth(env, n), dtype=bool)


def _column(ref: object, ts: np.ndarray, columns: Mapping[str, object], types: np.ndarray | None,
            n: int) -> np.ndarray:
    if isinstance(ref, TsRef):
        return ts
    assert isinstance(ref, (AttrRef, IterRef))
    name = ref.attr.lower()
    if name == "ts":
        return ts
    if name == "type":
        if types is None:
            raise TrendInputError("a condition reads the type column; pass types=")
        return np.asarray(types)
    return lookup(columns, ref.attr, n)
