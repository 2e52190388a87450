"""Evaluating conditions on many (partial) matches at once, with the quantifiers of the contract.

A :class:`View` is a set of ``n`` bindings seen alias by alias: for each bound alias a 2-D
array of positions (one row per binding, one column per event of the alias: one for a single
event, ``r`` for Kleene iterations) and the number of valid columns per row. An alias that is
not in the view, or has count 0 in a row, is not bound there: a condition that mentions it is
ignored for that row (docs/semantics.md, "Bindings and conditions").

:func:`holds` evaluates a :class:`~cep.match.compile.predicates.Predicate` for every row, looping in
Python only over the condition's *instances* (values of ``i`` and iterations of unindexed
Kleene aliases) and evaluating each instance as one vectorised expression over all rows. With
``new_of=b`` it checks only the instances that involve ``b``'s newest iteration, which is
enough when the other instances were checked before (``Predicate.incremental_in``).

Example:
    >>> import numpy as np
    >>> from cep.lang import parse_condition
    >>> from cep.match.columnar.data import StreamData
    >>> from cep.match.compile.predicates import analyse
    >>> from cep.match.columnar.stream import EventStream
    >>> s = EventStream.from_columns(ids=range(5), ts=range(5), types=list("ABBBC"),
    ...                              attrs={"v": [0, 1, 2, 1, 0]})
    >>> d = StreamData(s, None)
    >>> p = analyse(parse_condition("b[i].v > b[i-1].v"))
    >>> view = View(2, {"b": np.array([[1, 2, 3], [1, 2, 0]])}, {"b": np.array([3, 2])})
    >>> holds(p, view, d).tolist()
    [False, True]
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

import numpy as np

from cep.lang.ast import AggRef, TsRef, VarRef
from cep.match.columnar.data import StreamData
from cep.match.compile.expr import Value, _scalar_compare, _scalar_number
from cep.match.compile.predicates import Predicate

Index = Any  # an int (same for every row) or an int64 array (one per row)


@dataclass
class View:
    """``n`` bindings, alias by alias (see the module docstring).

    Attributes:
        n: number of rows.
        pos: alias -> int64 array ``(n, w)``; columns at or beyond the row's count are padding
            (any valid position).
        count: alias -> int64 array ``(n,)``: how many columns of the row are bound.
    """

    n: int
    pos: dict[str, np.ndarray]
    count: dict[str, np.ndarray]
    _cache: dict[Any, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def of_columns(cls, n: int, columns: Mapping[str, list[np.ndarray]]) -> "View":
        """A view where every row binds the same number of events per alias."""
        pos = {}
        count = {}
        for alias, cols in columns.items():
            pos[alias] = np.stack(cols, axis=1) if len(cols) != 1 else cols[0].reshape(n, 1)
            count[alias] = np.full(n, len(cols), dtype=np.int64)
        return cls(n, pos, count)

    def take(self, rows: np.ndarray) -> "View":
        """The rows ``rows`` (an index array) of the view."""
        return View(len(rows), {a: p[rows] for a, p in self.pos.items()},
                    {a: c[rows] for a, c in self.count.items()})

    def with_alias(self, alias: str, positions: np.ndarray) -> "View":
        """The view plus ``alias`` bound to one event per row."""
        pos = dict(self.pos)
        count = dict(self.count)
        pos[alias] = positions.reshape(self.n, 1)
        count[alias] = np.ones(self.n, dtype=np.int64)
        return View(self.n, pos, count)

    def bound(self, alias: str) -> np.ndarray:
        """Rows in which ``alias`` has at least one event."""
        c = self.count.get(alias)
        return np.zeros(self.n, dtype=bool) if c is None else c >= 1


def _gather(matrix: np.ndarray, col: Index) -> np.ndarray:
    """Column ``col`` of ``matrix`` (per row when ``col`` is an array), clipped into range."""
    width = matrix.shape[1]
    if np.isscalar(col):
        return matrix[:, min(max(int(col), 0), width - 1)]
    return matrix[np.arange(len(matrix)), np.clip(col, 0, width - 1)]


def holds(pred: Predicate, view: View, data: StreamData,
          variables: Mapping[str, Value] | None = None, new_of: str | None = None) -> np.ndarray:
    """Rows for which ``pred`` is satisfied (or ignored: it mentions an unbound alias).

    Args:
        pred: the condition.
        view: the bindings.
        data: the partition's columns.
        variables: values of join variables (per row), NULL when missing.
        new_of: only check the instances involving this alias's newest iteration.
    """
    n = view.n
    if not pred.aliases <= view.pos.keys():
        return np.ones(n, dtype=bool)
    applicable = np.ones(n, dtype=bool)
    for alias in pred.aliases:
        applicable &= view.count[alias] >= 1
    if (pred.rel_alias is None and not pred.absolute and not pred.agg_all
            and all(view.pos[a].shape[1] == 1 for a in pred.unindexed)):
        # One instance: every alias read has (at most) one event; the common case.
        env = _env(pred, view, data, None, {a: 0 for a in pred.unindexed}, variables)
        return ~applicable | pred.expr.truth(env, n)
    ok = np.ones(n, dtype=bool)
    for alias, k in pred.absolute:
        ok &= view.count[alias] >= k
    for valid, env in instances(pred, view, data, variables, new_of):
        if not valid.any():
            continue
        ok &= pred.expr.truth(env, n) | ~valid
    return ~applicable | ok


def instances(pred: Predicate, view: View, data: StreamData,
              variables: Mapping[str, Value] | None = None,
              new_of: str | None = None) -> Iterator[tuple[np.ndarray, dict[str, Value]]]:
    """Each instance of the condition: the rows where it exists and its column values."""
    n = view.n
    rel = pred.rel_alias
    if rel is not None:
        counts = view.count[rel]
        if new_of == rel and pred.incremental_in(rel):
            i_values: list[Index] = [counts]
        else:
            top = int(counts.max()) if n else 0
            i_values = list(range(1, top + 1))
    else:
        i_values = [None]
    each: list[tuple[str, list[Index]]] = []
    for alias in pred.unindexed:
        counts = view.count[alias]
        if new_of == alias and pred.incremental_in(alias):
            each.append((alias, [counts - 1]))
        else:
            top = int(counts.max()) if n else 0
            each.append((alias, list(range(max(top, 1)))))
    names = [a for a, _ in each]
    for i in i_values:
        valid = np.ones(n, dtype=bool)
        if i is not None:
            for ref in pred.relative:
                c = view.count[ref.alias]  # type: ignore[union-attr]
                if isinstance(ref, AggRef):
                    off = ref.upto.offset  # type: ignore[union-attr]
                    valid &= (i + off >= 1) & (i <= c)
                else:
                    k = i + ref.index.offset  # type: ignore[union-attr]
                    valid &= (k >= 1) & (k <= c)
        for combo in itertools.product(*(ks for _, ks in each)):
            chosen = dict(zip(names, combo))
            ok = valid.copy() if chosen else valid
            for alias, k in chosen.items():
                ok &= k < view.count[alias]
            yield ok, _env(pred, view, data, i, chosen, variables)


def _env(pred: Predicate, view: View, data: StreamData, i: Index | None,
         chosen: Mapping[str, Index], variables: Mapping[str, Value] | None) -> dict[str, Value]:
    env: dict[str, Value] = {}
    for name, ref in pred.refs.items():
        if isinstance(ref, VarRef):
            value = (variables or {}).get(ref.var)
            env[name] = value if value is not None else (np.zeros(view.n), np.ones(view.n, dtype=bool))
            continue
        matrix = view.pos[ref.alias]  # type: ignore[index]
        if isinstance(ref, AggRef):
            env[name] = _aggregate(ref, view, data, i)
            continue
        index = getattr(ref, "index", None)
        if index is None:
            col: Index = chosen[ref.alias]  # type: ignore[index]
        elif index.relative:
            col = i + index.offset - 1  # type: ignore[operator]
        else:
            col = index.offset - 1
        positions = _gather(matrix, col)
        attr = "ts" if isinstance(ref, TsRef) else ref.attr  # type: ignore[union-attr]
        env[name] = data.at(attr, positions)
    return env


def _aggregate(ref: AggRef, view: View, data: StreamData, i: Index | None) -> Value:
    """``func(alias[..upto].attr)`` per row: SQL aggregate of the first ``m`` iterations."""
    matrix = view.pos[ref.alias]
    n, width = matrix.shape
    if ref.upto is None:
        m: Any = view.count[ref.alias]
    elif ref.upto.relative:
        m = i + ref.upto.offset  # type: ignore[operator]
    else:
        m = ref.upto.offset
    m = np.broadcast_to(np.asarray(m, dtype=np.int64), (n,))
    in_range = np.arange(width)[None, :] < m[:, None]
    if ref.attr is None:
        return np.minimum(m, width).astype(np.int64), None
    values, nulls = data.at(ref.attr, matrix)
    present = in_range & ~nulls
    cnt = present.sum(axis=1)
    if ref.func == "count":
        return cnt.astype(np.int64), None
    empty = cnt == 0
    kind = np.asarray(values).dtype.kind
    if kind in "OUS":
        return _aggregate_objects(ref.func, values, present)
    if kind == "b":
        values = values.astype(np.int64)
    if ref.func in ("sum", "avg"):
        total = np.where(present, values, 0).sum(axis=1)
        if ref.func == "avg":
            total = total / np.where(empty, 1, cnt)
        return total, (empty if empty.any() else None)
    if values.dtype.kind == "f":
        fill = np.inf if ref.func == "min" else -np.inf
    else:
        info = np.iinfo(values.dtype)
        fill = info.max if ref.func == "min" else info.min
    filled = np.where(present, values, fill)
    best = filled.min(axis=1) if ref.func == "min" else filled.max(axis=1)
    return np.where(empty, 0, best), (empty if empty.any() else None)


def _aggregate_objects(func: str, values: np.ndarray, present: np.ndarray) -> Value:
    """min/max/sum/avg over text (or mixed) values, row by row: text columns are rare here."""
    n = len(values)
    out = np.empty(n, dtype=object)
    nulls = np.zeros(n, dtype=bool)
    for row in range(n):
        items = [v for v, p in zip(values[row], present[row]) if p]
        result: Any = None
        if items and func in ("min", "max"):
            result = items[0]
            for v in items[1:]:
                c = _scalar_compare(v, result)
                if c is not None and ((func == "min" and c < 0) or (func == "max" and c > 0)):
                    result = v
        elif items:
            numbers = [_scalar_number(v) for v in items]
            if all(x is not None for x in numbers):
                result = sum(numbers)  # type: ignore[arg-type]
                if func == "avg":
                    result = result / len(numbers)
        nulls[row] = result is None
        out[row] = "" if result is None else result
    from cep.match.compile.expr import column_value

    values_out, _ = column_value(out)
    return values_out, (nulls if nulls.any() else None)
