"""Resolved conditions (:mod:`cep.recognize.context`) computed over a whole task at once.

A condition whose navigations are physical offsets is a function of a row and its neighbours,
so numpy computes it for every row of a task in a few array operations instead of once per
thread and row. Values follow SQL's three-valued logic as :mod:`cep.recognize.condition` does
(NULL in, NULL out; AND and OR settled by one FALSE or TRUE), with a fourth state, *unknown*:
the value depends on a row further back than the context placed. A row whose condition is
unknown is *undecided*; the caller keeps the per-thread matcher for its partition.

Only what gives exactly the per-thread evaluator's answers is vectorised: comparisons of two
numbers, two strings, two booleans or two times of one kind, AND, OR, NOT, IS [NOT] NULL and
BETWEEN. Anything else raises :class:`Unsupported`, and the caller keeps the per-thread
matcher, so nothing is computed two ways.

Example:
    >>> import numpy as np
    >>> v = Column(np.array([5.0, 3.0, 4.0, 1.0]), np.zeros(4, dtype=bool), "number")
    >>> tree = ["op", "<", ["at", 0, "v"], ["at", -1, "v"]]
    >>> true, undecided = evaluate(tree, {"v": v}, np.array([0, 0, 0, 1]))
    >>> true.tolist(), undecided.tolist()
    ([False, True, False, False], [False, False, False, False])
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable

import numpy as np

__all__ = ["KINDS", "Column", "Unsupported", "evaluate"]

KINDS = ("number", "string", "boolean", "timestamp", "date")
"""The kinds of column the evaluator compares (two of one kind only)."""

_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "=": operator.eq, "<>": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge}


class Unsupported(Exception):
    """The condition holds an operator, a literal or a pairing of kinds not vectorised here."""


@dataclass(frozen=True)
class Column:
    """One column of a task: values (anything where ``null`` is set), NULL flags, kind.

    Attributes:
        data: the values, numbers as int64/float64, strings as objects (never None: NULLs
            are filled), times as int64 ticks.
        null: True where the value is NULL.
        kind: one of :data:`KINDS`.
    """

    data: np.ndarray
    null: np.ndarray
    kind: str


@dataclass(frozen=True)
class _Value:
    data: Any  # an array, or a scalar broadcast over the rows
    null: Any  # bool array or bool
    unknown: Any  # bool array or bool
    kind: str


def evaluate(tree: Any, columns: dict[str, Column], partition: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """Where ``tree`` is TRUE for every row, and where its value is undecided.

    Args:
        tree: a resolved condition (:func:`cep.recognize.context.resolve`).
        columns: the task's columns the tree names.
        partition: per row, its partition's number (ascending); an offset that leaves the
            partition reads NULL.

    Raises:
        Unsupported: the tree holds what is not vectorised here.
    """
    n = len(partition)
    value = _evaluate(tree, columns, partition, {})
    if value.kind != "boolean":
        raise Unsupported(f"a condition of kind {value.kind}")
    true = np.broadcast_to(np.asarray(value.data, dtype=bool) & ~np.asarray(value.null)
                           & ~np.asarray(value.unknown), (n,))
    undecided = np.broadcast_to(np.asarray(value.unknown, dtype=bool), (n,))
    return np.array(true), np.array(undecided)


def _evaluate(tree: Any, columns: dict[str, Column], partition: np.ndarray,
              shifted: dict[tuple[str, int], _Value]) -> _Value:
    kind = tree[0]
    if kind == "at":
        key = (tree[2], tree[1])
        if key not in shifted:
            shifted[key] = _shift(columns[tree[2]], tree[1], partition)
        return shifted[key]
    if kind == "unknown":
        return _Value(False, False, True, "any")
    if kind == "null":
        return _Value(False, True, False, "any")
    if kind == "bool":
        return _Value(bool(tree[1]), False, False, "boolean")
    if kind == "str":
        return _Value(tree[1], False, False, "string")
    if kind == "num":
        text = tree[1]
        number: Any = int(text) if text.lstrip("-").isdigit() else Decimal(text)
        if isinstance(number, int) and abs(number) >= 1 << 53:
            raise Unsupported("an integer literal beyond a double's exact range")
        return _Value(number if isinstance(number, int) else float(number), False, False,
                      "literal number" if isinstance(number, int) else "literal decimal")
    if kind != "op":
        raise Unsupported(f"a {kind!r} leaf")
    name = tree[1]
    args = [_evaluate(t, columns, partition, shifted) for t in tree[2:]]
    if name in _COMPARE:
        return _compare(_COMPARE[name], *args)
    if name in ("and", "or"):
        return _connective(name == "or", args)
    if name == "not":
        (x,) = args
        _boolean(x)
        return _Value(~np.asarray(x.data, dtype=bool), x.null, x.unknown, "boolean")
    if name in ("isnull", "notnull"):
        (x,) = args
        null = np.asarray(x.null) if name == "isnull" else ~np.asarray(x.null)
        return _Value(null, False, x.unknown, "boolean")
    if name == "between":
        x, low, high = args
        return _connective(False, [_compare(operator.ge, x, low), _compare(operator.le, x, high)])
    raise Unsupported(f"the operator {name!r}")


def _shift(column: Column, offset: int, partition: np.ndarray) -> _Value:
    """``column`` read ``offset`` rows away, NULL where that leaves the partition."""
    n = len(partition)
    if offset == 0:
        return _Value(column.data, column.null, False, column.kind)
    source = np.arange(n) + offset
    inside = (source >= 0) & (source < n)
    source = np.clip(source, 0, max(n - 1, 0))
    inside &= partition[source] == partition if n else inside
    return _Value(column.data[source], column.null[source] | ~inside, False, column.kind)


def _compare(op: Callable[[Any, Any], Any], a: _Value, b: _Value) -> _Value:
    kinds = {a.kind, b.kind} - {"any"}
    numbers = {"number", "literal number", "literal decimal"}
    if not (len(kinds) <= 1 or kinds <= numbers) or kinds == {"literal decimal", "literal number"}:
        raise Unsupported(f"a comparison of {' and '.join(sorted(kinds))}")
    if "literal decimal" in kinds and "number" in kinds:
        # The per-thread evaluator compares a decimal literal exactly with an integer and as a
        # double with a double; numpy compares as doubles, so only doubles qualify.
        for side in (a, b):
            if side.kind == "number" and side.data.dtype.kind != "f":
                raise Unsupported("a decimal literal against an integer column")
    if kinds <= {"literal number", "literal decimal", "boolean", "string"} and not (
            isinstance(a.data, np.ndarray) or isinstance(b.data, np.ndarray)):
        raise Unsupported("a comparison of two literals")
    null = np.asarray(a.null) | np.asarray(b.null)
    unknown = (np.asarray(a.unknown) | np.asarray(b.unknown)) & ~null  # NULL in, NULL out
    if not kinds:  # NULL or unknown on both sides
        return _Value(False, null, unknown, "boolean")
    if a.kind == "any" or b.kind == "any":
        return _Value(False, null, unknown, "boolean")
    dtypes = {side.data.dtype.kind for side in (a, b) if isinstance(side.data, np.ndarray)}
    if "u" in dtypes:
        raise Unsupported("an unsigned column")
    if dtypes == {"i", "f"}:
        # numpy compares an integer with a double as doubles, Python exactly: the same only
        # while every integer is exact as a double.
        ints = a.data if a.data.dtype.kind == "i" else b.data
        if len(ints) and (int(ints.max()) >= 1 << 53 or int(ints.min()) <= -(1 << 53)):
            raise Unsupported("integers beyond a double's exact range against doubles")
    return _Value(op(a.data, b.data), null, unknown, "boolean")


def _connective(decisive: bool, args: list[_Value]) -> _Value:
    """AND (``decisive`` False) or OR (True): one known, non-NULL ``decisive`` argument settles
    it; else any unknown makes it unknown, else any NULL makes it NULL."""
    settled: Any = False
    unknown: Any = False
    null: Any = False
    for x in args:
        _boolean(x)
        known = ~np.asarray(x.null) & ~np.asarray(x.unknown)
        hit = known & (np.asarray(x.data, dtype=bool) == decisive)
        settled = settled | hit
        unknown = unknown | np.asarray(x.unknown)
        null = null | np.asarray(x.null)
    unknown = unknown & ~settled
    null = null & ~settled & ~unknown
    data = settled if decisive else ~settled
    return _Value(data, null, unknown, "boolean")


def _boolean(x: _Value) -> None:
    if x.kind not in ("boolean", "any"):
        raise Unsupported(f"AND, OR or NOT over a {x.kind}")

