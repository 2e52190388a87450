"""The running summaries behind the aggregates a DEFINE condition reads the match with.

A DEFINE that calls an aggregate (``avg(A.price) > 10``, ``stddev(price) < 2``,
``median(B.x) > A.x``) is evaluated by the matcher per partial match
(:mod:`cep.recognize.condition`). Each aggregate is a *family*, a state folded forward one row
at a time (``update``), and a *pick* that reads the answer off the state. Aggregates of one
family over the same rows and columns share one state per thread (``sum``, ``avg``, ``count``
of ``A.x``: one fold). Each pick follows Spark 4's own definition, NULL and divide-by-zero
included; ``tests/sql_ext/test_define_functions_match_spark.py`` compares every one with
Spark's window aggregate up to each row.

The families that need every value (``median``, ``percentile``, ``mode``, ``collect_list``,
``collect_set``, ``listagg``) keep them as a persistent list, one cell per counted row, so a
thread costs O(1) memory per row and each evaluation O(values so far).

Example:
    >>> family, pick = SUMMARIES["stddev_samp"]
    >>> state = family.init
    >>> for x in (2, 4, 4, 4, 5, 5, 7, 9):
    ...     state = family.update(state, (x,))
    >>> round(pick(state), 4)
    2.1381
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from cep.recognize.functions import widen

__all__ = ["Family", "SUMMARIES"]


@dataclass(frozen=True)
class Family:
    """One running state: its name (the cache key), start value and one row's update.

    ``update(state, values)`` gets the row's argument values in the call's order (empty for
    ``count(*)``) and returns the new state; a row the aggregate skips returns ``state``.
    """

    name: str
    init: Any
    update: Callable[[Any, tuple[Any, ...]], Any]


def _basic(state: tuple[int, Any, Any, Any], values: tuple[Any, ...]) -> Any:
    """count, sum, min, max (avg from count and sum)."""
    if not values:
        return (state[0] + 1, None, None, None)  # count(*)
    x = values[0]
    if x is None:
        return state
    count, total, low, high = state
    if count == 0:
        return (1, x, x, x)
    return (count + 1, sum(widen(total, x)), x if x < low else low, x if x > high else high)


def _divide(a: Any, b: Any) -> Any:
    a, b = widen(a, b)
    return None if b == 0 else a / b


def _logical(state: tuple[int, int], values: tuple[Any, ...]) -> Any:
    """Counts of TRUE and FALSE values (count_if, bool_and, bool_or)."""
    x = values[0]
    if x is None:
        return state
    return (state[0] + 1, state[1]) if x else (state[0], state[1] + 1)


def _moments(state: tuple[int, float, float, float, float], values: tuple[Any, ...]) -> Any:
    """Count, mean and the 2nd, 3rd and 4th central moment sums, in doubles, by Terriberry's
    one-pass update (the old sums on the right), as Spark's ``CentralMomentAgg`` keeps them."""
    x = values[0]
    if x is None:
        return state
    n, mean, m2, m3, m4 = state
    x = float(x)
    n1 = n + 1
    delta = x - mean
    delta_n = delta / n1
    delta_n2 = delta_n * delta_n
    term = delta * delta_n * n
    return (n1, mean + delta_n, m2 + term, m3 + term * delta_n * (n1 - 2) - 3.0 * delta_n * m2,
            m4 + term * delta_n2 * (n1 * n1 - 3 * n1 + 3) + 6.0 * delta_n2 * m2
            - 4.0 * delta_n * m3)


def _sqrt(x: float) -> float:
    return math.sqrt(x) if x >= 0 else math.nan


def _pairs(state: tuple[int, float, float, float, float, float],
           values: tuple[Any, ...]) -> Any:
    """Count, means of y and x, and the co-moment sums of rows where both are set, as Spark's
    ``PearsonCorrelation``/``Covariance`` update them. ``values`` is ``(y, x)``."""
    y, x = values
    if x is None or y is None:
        return state
    n, y_avg, x_avg, ck, x_mk, y_mk = state
    x, y = float(x), float(y)
    n1 = n + 1
    dx, dy = x - x_avg, y - y_avg
    x_avg += dx / n1
    y_avg += dy / n1
    return (n1, y_avg, x_avg, ck + dx * (y - y_avg), x_mk + dx * (x - x_avg),
            y_mk + dy * (y - y_avg))


def _collect(state: tuple[int, Any], values: tuple[Any, ...]) -> Any:
    """Every non-NULL value, newest first, as ``(count, (value, rest))``."""
    x = values[0]
    if x is None:
        return state
    return (state[0] + 1, (x, state[1]))


def _values(state: tuple[int, Any]) -> list[Any]:
    """The collected values in the match's order."""
    out, cell = [], state[1]
    while cell is not None:
        out.append(cell[0])
        cell = cell[1]
    out.reverse()
    return out


def _percentile(state: tuple[int, Any], p: Any = 0.5) -> Any:
    """Spark's exact ``percentile``: linear interpolation between the two closest ranks."""
    values = sorted(float(x) for x in _values(state))
    if not values:
        return None
    at = float(p) * (len(values) - 1)
    low, high = math.floor(at), math.ceil(at)
    if low == high:
        return values[low]
    return (high - at) * values[low] + (at - low) * values[high]


def _mode(state: tuple[int, Any], deterministic: bool = True) -> Any:
    """The most frequent value; of equally frequent ones the smallest (Spark's
    ``mode(x, true)``; plain ``mode`` may return any of them)."""
    counts: dict[Any, int] = {}
    for x in _values(state):
        counts[x] = counts.get(x, 0) + 1
    if not counts:
        return None
    most = max(counts.values())
    return min(x for x, c in counts.items() if c == most)


def _distinct(state: tuple[int, Any]) -> list[Any]:
    return list(dict.fromkeys(_values(state)))


def _by(better: Callable[[Any, Any], bool]) -> Callable[[Any, tuple[Any, ...]], Any]:
    """max_by / min_by as ``(seen, value, key)``: the value at the best key so far (rows with
    a NULL key skipped; the first of equal keys kept)."""
    def update(state: tuple[bool, Any, Any], values: tuple[Any, ...]) -> Any:
        x, key = values
        if key is None:
            return state
        if not state[0] or better(*widen(key, state[2])):
            return (True, x, key)
        return state
    return update


def _bits(func: Callable[[int, int], int]) -> Callable[[Any, tuple[Any, ...]], Any]:
    def update(state: tuple[bool, Any, Any], values: tuple[Any, ...]) -> Any:
        x = values[0]
        if x is None:
            return state
        return (True, x if not state[0] else func(state[1], x), None)
    return update


def _null_if_none(n: int, value: Callable[[], Any]) -> Any:
    return None if n == 0 else value()


BASIC = Family("basic", (0, None, None, None), _basic)
LOGICAL = Family("logical", (0, 0), _logical)
MOMENTS = Family("moments", (0, 0.0, 0.0, 0.0, 0.0), _moments)
PAIRS = Family("pairs", (0, 0.0, 0.0, 0.0, 0.0, 0.0), _pairs)
COLLECT = Family("collect", (0, None), _collect)
_FIRST = Family("first_value", (False, None, None),
                # Spark's first_value/last_value keep NULLs unless told to ignore them.
                lambda s, v: s if s[0] else (True, v[0], None))
_LAST = Family("last_value", (False, None, None), lambda s, v: (True, v[0], None))


def _fold(name: str, update: Callable[[Any, tuple[Any, ...]], Any]) -> tuple[Family, Any]:
    return Family(name, (False, None, None), update), lambda s: s[1]


def _pair_pick(func: Callable[[int, float, float, float, float, float], Any]) -> Any:
    return lambda s: None if s[0] == 0 else func(*s)


def _slope(n: int, ya: float, xa: float, ck: float, xm: float, ym: float) -> Any:
    return None if xm == 0 else ck / xm


def _r2(n: int, ya: float, xa: float, ck: float, xm: float, ym: float) -> Any:
    if xm == 0:
        return None
    return 1.0 if ym == 0 else ck * ck / (xm * ym)


SUMMARIES: dict[str, tuple[Family, Callable[..., Any]]] = {
    "count": (BASIC, lambda s: s[0]),
    "sum": (BASIC, lambda s: s[1]),
    "min": (BASIC, lambda s: s[2]),
    "max": (BASIC, lambda s: s[3]),
    "avg": (BASIC, lambda s: None if s[0] == 0 else _divide(s[1], s[0])),
    "count_if": (LOGICAL, lambda s: s[0]),
    "bool_and": (LOGICAL, lambda s: None if s == (0, 0) else s[1] == 0),
    "bool_or": (LOGICAL, lambda s: None if s == (0, 0) else s[0] > 0),
    "var_samp": (MOMENTS, lambda s: s[2] / (s[0] - 1) if s[0] > 1 else None),
    "var_pop": (MOMENTS, lambda s: s[2] / s[0] if s[0] else None),
    "stddev_samp": (MOMENTS, lambda s: _sqrt(s[2] / (s[0] - 1)) if s[0] > 1 else None),
    "stddev_pop": (MOMENTS, lambda s: _sqrt(s[2] / s[0]) if s[0] else None),
    "skewness": (MOMENTS, lambda s: None if s[0] == 0 or s[2] == 0
                 else math.sqrt(s[0]) * s[3] / math.sqrt(s[2] ** 3)),
    "kurtosis": (MOMENTS, lambda s: None if s[0] == 0 or s[2] == 0
                 else s[0] * s[4] / (s[2] * s[2]) - 3.0),
    "corr": (PAIRS, _pair_pick(lambda n, ya, xa, ck, xm, ym:
                               None if n == 1 else ck / _sqrt(xm * ym) if xm * ym else math.nan)),
    "covar_pop": (PAIRS, _pair_pick(lambda n, ya, xa, ck, xm, ym: ck / n)),
    "covar_samp": (PAIRS, _pair_pick(lambda n, ya, xa, ck, xm, ym:
                                     None if n == 1 else ck / (n - 1))),
    "regr_count": (PAIRS, lambda s: s[0]),
    "regr_avgy": (PAIRS, _pair_pick(lambda n, ya, xa, ck, xm, ym: ya)),
    "regr_avgx": (PAIRS, _pair_pick(lambda n, ya, xa, ck, xm, ym: xa)),
    "regr_sxx": (PAIRS, _pair_pick(lambda n, ya, xa, ck, xm, ym: xm)),
    "regr_syy": (PAIRS, _pair_pick(lambda n, ya, xa, ck, xm, ym: ym)),
    "regr_sxy": (PAIRS, _pair_pick(lambda n, ya, xa, ck, xm, ym: ck)),
    "regr_slope": (PAIRS, _pair_pick(_slope)),
    "regr_intercept": (PAIRS, _pair_pick(lambda n, ya, xa, ck, xm, ym:
                                         None if xm == 0 else ya - ck / xm * xa)),
    "regr_r2": (PAIRS, _pair_pick(_r2)),
    "median": (COLLECT, _percentile),
    "percentile": (COLLECT, _percentile),
    "mode": (COLLECT, _mode),
    "collect_list": (COLLECT, _values),
    "collect_set": (COLLECT, _distinct),
    "listagg": (COLLECT, lambda s, sep="": None if s[0] == 0
                else ("" if sep is None else sep).join(_values(s))),
    "first_value": (_FIRST, lambda s: s[1]),
    "last_value": (_LAST, lambda s: s[1]),
    "max_by": _fold("max_by", _by(lambda a, b: a > b)),
    "min_by": _fold("min_by", _by(lambda a, b: a < b)),
    "bit_and": _fold("bit_and", _bits(lambda a, b: a & b)),
    "bit_or": _fold("bit_or", _bits(lambda a, b: a | b)),
    "bit_xor": _fold("bit_xor", _bits(lambda a, b: a ^ b)),
}
"""Running summary name -> (its family, the pick that reads the answer; literal parameters
such as ``percentile``'s fraction or ``listagg``'s separator follow the state)."""
