"""NOT as a vectorised anti-join: is there a violating event in each binding's range?

For ``NOT(D)`` the range of a binding is the open interval between the last event bound before
the NOT and the first one bound after it, or, for a trailing NOT, from the last bound event to
the close of the window of the match's first event (docs/semantics.md). The candidates are
the positions of D's buffer in that range: two ``searchsorted`` calls count them. Without
further conditions a binding survives when the count is 0; with conditions that read bound
aliases (or an ``[attr]`` equivalence), the candidates are expanded into (binding, event) pairs
and evaluated in one vectorised pass, and a binding survives when none of its pairs violates
(an anti-join, as SASE evaluates negation: Wu, Diao & Rizvi, SIGMOD 2006).

Example:
    >>> import numpy as np
    >>> from cep.match.columnar.joins import count_between
    >>> count_between(np.array([2, 5, 9]), np.array([0, 3]), np.array([6, 4])).tolist()
    [2, 0]
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np

from cep.match.columnar.bindings import View, holds
from cep.match.columnar.data import StreamData
from cep.match.columnar.joins import count_between, expand_ranges
from cep.match.compile.expr import Value, null_safe_equal
from cep.match.compile.predicates import Predicate
from cep.match.compile.program import WindowSpec
from cep.match.limits import MatchLimits


def window_close(window: WindowSpec, data: StreamData, first: np.ndarray) -> np.ndarray:
    """One past the last position before the window of each ``first`` event closes."""
    if window.width is None:
        return np.full(len(first), data.hi, dtype=np.int64)
    if window.by_events:
        close = np.ceil(first + window.width).astype(np.int64)
    else:
        close = np.searchsorted(data.ts, data.ts[first] + window.width, side="left").astype(np.int64)
    return np.minimum(close, data.hi)


def violated(conditions: Mapping[str, Sequence[Predicate]], view: View, data: StreamData,
             left: np.ndarray, right: np.ndarray, first: np.ndarray,
             buffer: Callable[[str], np.ndarray], equivalences: Sequence[str],
             limits: MatchLimits, variables: Mapping[str, Value] | None = None) -> np.ndarray:
    """Rows with a violating event strictly between ``left`` and ``right`` (positions).

    Args:
        conditions: per negated alias, the conditions an event must meet to violate.
        view: the bindings (the negated alias is added to it for each candidate).
        data: the partition's columns.
        left, right: per row, the exclusive bounds of the range.
        first: per row, the match's first bound position (for ``[attr]``).
        buffer: positions that can be each negated alias (class and its filters).
        equivalences: ``[attr]`` attributes: a violating event shares them with ``first``.
        limits: bounds the number of (binding, candidate) pairs expanded.
        variables: join-variable values per row, when the conditions use them.
    """
    out = np.zeros(view.n, dtype=bool)
    for alias, preds in conditions.items():
        buf = buffer(alias)
        if len(buf) == 0:
            continue
        if not preds and not equivalences:
            out |= count_between(buf, left, right) > 0
            continue
        lo = np.searchsorted(buf, left, side="right")
        hi = np.searchsorted(buf, right, side="left")
        todo = (hi > lo) & ~out
        if not todo.any():
            continue
        rows_todo = np.flatnonzero(todo)
        rows, idx = expand_ranges(lo[rows_todo], hi[rows_todo], limits, "checking a NOT")
        rows = rows_todo[rows]
        cand = buf[idx]
        ok = np.ones(len(rows), dtype=bool)
        for attr in equivalences:
            ok &= null_safe_equal(data.at(attr, cand), data.at(attr, first[rows]), len(rows))
        if preds and ok.any():
            sub = view.take(rows).with_alias(alias, cand)
            sub_vars = None if variables is None else {
                k: (np.broadcast_to(v[0], (view.n,))[rows], None if v[1] is None
                    else np.broadcast_to(v[1], (view.n,))[rows]) for k, v in variables.items()}
            for pred in preds:
                ok &= holds(pred, sub, data, sub_vars)
        out[rows[ok]] = True
    return out
