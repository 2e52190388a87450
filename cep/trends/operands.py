"""Event columns as the trend core reads them, and the two operands of a neighbour predicate.

For a predicate ``c[i].A op f(c[i-1].B)`` every event ``e`` has two values (Mei et al., ICPP
2021, section 4.4, Algorithm 1, line 9, "extractVals"):

- ``lval(e) = e.A``: what the event offers to a predecessor (the left side when ``e`` is ``i``);
- ``rval(e) = f(e.B)``: what the event asks of a successor (the right side when ``e`` is ``i-1``).

There is an edge ``j -> k`` for this predicate exactly when ``lval(k) op rval(j)``.

Values: numeric columns (ints, floats, booleans, datetimes as microseconds) are compared as
numpy compares them (an int with a float as float64); string columns only with ``=`` and
``<>`` against strings, with ``f`` the identity. NULL (``None``) and NaN are NULL: an event
with a NULL ``lval`` has no predecessor and one with a NULL ``rval`` no successor through the
predicate (SQL: a comparison with NULL is not TRUE).

Example:
    >>> import numpy as np
    >>> from cep.trends.query import NeighbourPredicate
    >>> p = NeighbourPredicate("price", ">", "price", scale=2, offset=1)
    >>> ops = operands(p, {"price": np.array([1.0, np.nan, 3.0])}, n=3)
    >>> ops.lval[~ops.lnull].tolist(), ops.rval[~ops.rnull].tolist(), ops.rnull.tolist()
    ([1.0, 3.0], [3.0, 7.0], [False, True, False])
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from cep.trends.errors import E_STRING, TrendInputError, UnsupportedTrendPatternError
from cep.trends.query import NeighbourPredicate


@dataclass(frozen=True)
class Operands:
    """``lval`` and ``rval`` of every event for one predicate, with their NULL masks.

    Both value arrays have one common dtype (numeric, or object holding strings); NULL entries
    hold a placeholder (0 or ``""``) and must be ignored.
    """

    lval: np.ndarray
    lnull: np.ndarray
    rval: np.ndarray
    rnull: np.ndarray
    text: bool


def lookup(columns: Mapping[str, object], name: str, n: int) -> np.ndarray:
    """Column ``name`` (case-insensitive, as Spark resolves names) as a 1-D array of length ``n``.

    Raises:
        TrendInputError: no such column, or a length other than ``n``.
    """
    found = columns.get(name)
    if found is None:
        lowered = {str(k).lower(): k for k in columns}
        key = lowered.get(name.lower())
        if key is None:
            raise TrendInputError(f"the events have no column '{name}'; columns: "
                                  f"{', '.join(sorted(map(str, columns))) or '(none)'}")
        found = columns[key]
    array = np.asarray(found)
    if array.ndim != 1 or len(array) != n:
        raise TrendInputError(f"column '{name}' has shape {array.shape}; expected ({n},) like the timestamps")
    return array


def column_values(array: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray, bool | None]:
    """``(values, nulls, is_text)`` of a column: None and NaN are NULL, datetimes are microseconds.

    ``is_text`` is None for an object column holding nothing but NULLs (no type to tell).

    Raises:
        TrendInputError: an object column mixing strings with other values, or holding values
            that are neither numbers nor strings.
    """
    kind = array.dtype.kind
    if kind == "f":
        nulls = np.isnan(array)
        return (np.where(nulls, 0.0, array) if nulls.any() else array), nulls, False
    if kind in "iu":
        return array.astype(np.int64, copy=False), np.zeros(len(array), dtype=bool), False
    if kind == "b":
        return array.astype(np.int64), np.zeros(len(array), dtype=bool), False
    if kind == "M":
        nulls = np.isnat(array)
        values = array.astype("datetime64[us]").astype(np.int64)
        return np.where(nulls, 0, values), nulls, False
    if kind in "US":
        return array.astype(object), np.zeros(len(array), dtype=bool), True
    if kind != "O":
        raise TrendInputError(f"column '{name}' has dtype {array.dtype}; expected numbers, strings or timestamps")
    nulls = np.fromiter((v is None or (isinstance(v, float) and math.isnan(v)) for v in array),
                        dtype=bool, count=len(array))
    present = array[~nulls]
    if not len(present):
        return np.zeros(len(array), dtype=np.int64), nulls, None
    if all(isinstance(v, str) for v in present):
        values = array.copy()
        values[nulls] = ""
        return values, nulls, True
    if all(isinstance(v, (bool, int, float, np.integer, np.floating, np.bool_)) for v in present):
        as_int = all(isinstance(v, (bool, int, np.integer, np.bool_)) for v in present)
        values = np.zeros(len(array), dtype=np.int64 if as_int else np.float64)
        values[~nulls] = [int(v) if as_int else float(v) for v in present]
        return values, nulls, False
    kinds = sorted({type(v).__name__ for v in present})
    raise TrendInputError(f"column '{name}' mixes values of types {', '.join(kinds)}; expected only "
                          "numbers or only strings")


def operands(pred: NeighbourPredicate, columns: Mapping[str, object], n: int, *,
             ts: np.ndarray | None = None, query_text: str = "") -> Operands:
    """``lval`` and ``rval`` of ``n`` events for ``pred`` (module docstring).

    Args:
        pred: the neighbour predicate.
        columns: attribute name -> array of length ``n`` (looked up case-insensitively).
        n: number of events.
        ts: the timestamps, read for the attribute ``ts`` (``t(c[i])``); falls back to a column
            called ``ts``.
        query_text: the query text, for the position of a type error.

    Raises:
        UnsupportedTrendPatternError: a string attribute with an order comparator, a non-identity
            ``f``, or compared with a number (``CEP-TREND-006``).
        TrendInputError: a missing column or one of the wrong shape or type.
    """

    def read(name: str) -> tuple[np.ndarray, np.ndarray, bool]:
        if name.lower() == "ts" and ts is not None:
            array = np.asarray(ts)
        else:
            array = lookup(columns, name, n)
        return column_values(array, name)

    lval, lnull, ltext = read(pred.attr)
    prev, pnull, ptext = read(pred.prev_attr)
    # A column of NULLs only takes the type of the other side (it links nothing anyway).
    if ltext is None:
        ltext = bool(ptext)
        lval = np.full(n, "", dtype=object) if ltext else lval
    if ptext is None:
        ptext = bool(ltext)
        prev = np.full(n, "", dtype=object) if ptext else prev
    if ltext or ptext:
        problem = None
        if ltext != ptext:
            problem = (f"{pred.attr if ltext else pred.prev_attr} holds strings and "
                       f"{pred.prev_attr if ltext else pred.attr} numbers")
        elif pred.op not in ("=", "<>"):
            problem = f"strings are compared with = or <> only, found {pred.op}"
        elif not pred.identity:
            problem = "f must be the identity on strings"
        if problem is not None:
            raise UnsupportedTrendPatternError(
                E_STRING, f"expected a string attribute to be compared with = or <> to a string attribute "
                f"of the previous event; {problem} in {pred.text or pred.describe('c')}",
                query_text, pred.span[0], pred.span[1] if pred.span[1] > pred.span[0] else None)
        return Operands(lval, lnull, prev, pnull, True)
    rval, rnull = _apply(pred, prev, pnull)
    common = np.result_type(lval.dtype, rval.dtype)
    return Operands(lval.astype(common, copy=False), lnull, rval.astype(common, copy=False), rnull, False)


def _apply(pred: NeighbourPredicate, x: np.ndarray, nulls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``f(x)`` evaluated step by step as written: ``(x * scale) / divisor + offset``."""
    out = x
    with np.errstate(all="ignore"):
        if pred.scale != 1 or _is_nan(pred.scale):
            out = out * pred.scale
        if pred.divisor != 1:
            out = out / pred.divisor
        if pred.offset != 0 or _is_nan(pred.offset):
            out = out + pred.offset
    if out.dtype.kind == "f":
        bad = np.isnan(out)
        if bad.any():
            nulls = nulls | bad
            out = np.where(bad, 0.0, out)
    return out, nulls


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)
