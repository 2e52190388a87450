"""Spark's operators and scalar functions, in Python, for DEFINE conditions that read the match.

Where a DEFINE wraps a reference to other rows of the match in a function
(``round(LAST(A.price), 1) < price``, ``B.ts <= A.ts + INTERVAL '10' MINUTE``,
``startswith(B.url, A.url)``), the value differs per partial match, so the matcher computes the
function itself (:mod:`cep.recognize.condition`). Every function here gives Spark 4's answer
for the same values, NULLs and edge cases included (``round`` half up on the decimal text of a
double, 1-based ``substring`` with negative positions, ``ln`` of 0 NULL, ``sqrt`` of a
negative NaN); ``tests/sql_ext/test_define_functions_match_spark.py`` compares each with a
``SELECT`` of the same call. A function that does not read the match is never computed here:
Spark computes it as a column before the matcher runs, so any Spark function works there.

Divisions by zero give NULL, as ``try_divide`` does, so a condition never fails the query.

Example:
    >>> FUNCTIONS["round"]([2.5]), FUNCTIONS["substring"](["Spark", -3, 2])
    (3.0, 'ar')
    >>> BINARY["="](1, None) is None
    True
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from typing import Any, Callable

__all__ = ["BINARY", "FUNCTIONS", "widen"]


def widen(a: Any, b: Any) -> tuple[Any, Any]:
    """The two numbers in one Python type where Spark widens them (DECIMAL with DOUBLE is
    DOUBLE; Python refuses to mix Decimal and float)."""
    if isinstance(a, Decimal) and isinstance(b, float):
        return float(a), b
    if isinstance(a, float) and isinstance(b, Decimal):
        return a, float(b)
    return a, b


def _divide(a: Any, b: Any) -> Any:
    a, b = widen(a, b)
    if b == 0:
        return None  # as try_divide: a condition never fails the query
    return a / b


def _strict(func: Callable[..., Any]) -> Callable[[list[Any]], Any]:
    """``func`` of the arguments, NULL when any is NULL (most of Spark's functions)."""
    def apply(values: list[Any]) -> Any:
        if any(x is None for x in values):
            return None
        return func(*values)
    return apply


def _binary(func: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def apply(a: Any, b: Any) -> Any:
        if a is None or b is None:
            return None
        return func(*widen(a, b))
    return apply


def _modulo(a: Any, b: Any) -> Any:
    if b == 0:
        return None
    result = abs(a) % abs(b)  # SQL's remainder takes the dividend's sign
    return -result if a < 0 else result


def _int_divide(a: Any, b: Any) -> Any:
    if b == 0:
        return None
    q = abs(a) // abs(b)  # ``div`` truncates toward zero
    return int(q if (a < 0) == (b < 0) else -q)


BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "=": _binary(lambda a, b: a == b), "<>": _binary(lambda a, b: a != b),
    "<": _binary(lambda a, b: a < b), "<=": _binary(lambda a, b: a <= b),
    ">": _binary(lambda a, b: a > b), ">=": _binary(lambda a, b: a >= b),
    "+": _binary(lambda a, b: a + b), "-": _binary(lambda a, b: a - b),
    "*": _binary(lambda a, b: a * b), "/": _binary(_divide), "%": _binary(_modulo),
    "div": _binary(_int_divide),
}
"""SQL's binary operators with three-valued logic (NULL in, NULL out)."""


def _like(text: Any, pattern: Any, fold: bool) -> Any:
    """SQL LIKE with Spark's default escape (backslash): ``%`` any run, ``_`` one character."""
    out, k = [], 0
    while k < len(pattern):
        ch = pattern[k]
        if ch == "\\" and k + 1 < len(pattern):
            out.append(re.escape(pattern[k + 1]))
            k += 2
            continue
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        k += 1
    flags = re.DOTALL | (re.IGNORECASE if fold else 0)
    return re.fullmatch("".join(out), str(text), flags) is not None


def _in(values: list[Any]) -> Any:
    x, *items = values
    if x is None:
        return None
    unknown = False
    for item in items:
        same = BINARY["="](x, item)
        if same is True:
            return True
        unknown = unknown or same is None
    return None if unknown else False


def _extreme(pick: Callable[..., Any]) -> Callable[[list[Any]], Any]:
    def apply(values: list[Any]) -> Any:
        present = [x for x in values if x is not None]  # Spark's greatest/least skip NULLs
        return pick(present) if present else None
    return apply


def _rounded(mode: str) -> Callable[..., Any]:
    """round (half up) / bround (half even) to ``scale`` digits, on the decimal text of a
    double as Spark's ``BigDecimal`` rounding does; integers stay integers."""
    def apply(x: Any, scale: int = 0) -> Any:
        if isinstance(x, float) and not math.isfinite(x):
            return x
        exact = Decimal(repr(x)) if isinstance(x, float) else Decimal(x)
        out = exact.quantize(Decimal(1).scaleb(-int(scale)), rounding=mode)
        if isinstance(x, float):
            return float(out)
        return int(out) if isinstance(x, int) else out
    return apply


def _integral(mode: str) -> Callable[[Any], Any]:
    """floor / ceil: BIGINT of a double or an integer, a scale-0 DECIMAL of a decimal."""
    def apply(x: Any) -> Any:
        if isinstance(x, Decimal):
            return x.to_integral_value(rounding=mode)
        return math.floor(x) if mode == ROUND_FLOOR else math.ceil(x)
    return apply


def _double(func: Callable[[float], float]) -> Callable[[Any], Any]:
    def apply(x: Any) -> Any:
        try:
            return func(float(x))
        except OverflowError:
            return math.inf
        except ValueError:
            return math.nan
    return apply


def _power(base: Any, exponent: Any) -> float:
    """Java's ``Math.pow``: infinity for 0 to a negative power, NaN for a negative base to a
    fraction."""
    b, e = float(base), float(exponent)
    if b == 0 and e < 0:
        return math.inf
    try:
        return math.pow(b, e)
    except OverflowError:
        return math.inf
    except ValueError:
        return math.nan


def _log(base: Any, x: Any) -> Any:
    b, v = float(base), float(x)
    if b <= 0 or v <= 0:
        return None  # Spark's log is NULL outside its domain
    return math.log(v) / math.log(b)


def _sign(x: Any) -> float:
    v = float(x)
    if math.isnan(v):
        return v
    return float((v > 0) - (v < 0))


def _substring(text: str, pos: int, length: int = 2 ** 31 - 1) -> str:
    """1-based, 0 as 1, negative from the end (Spark's ``UTF8String.substringSQL``)."""
    size = len(text)
    start = pos - 1 if pos > 0 else size + pos if pos < 0 else 0
    end = start + length
    start = max(start, 0)
    return "" if start >= end else text[start:end]


def _positive_modulo(a: Any, b: Any) -> Any:
    """Spark's ``pmod``: the remainder, moved by the divisor once when it is negative."""
    r = _modulo(a, b)
    if r is None or r >= 0:
        return r
    return _modulo(r + b, b)


def _array_contains(values: list[Any]) -> Any:
    items, x = values
    if items is None or x is None:
        return None
    if any(BINARY["="](item, x) is True for item in items):
        return True
    return None if any(item is None for item in items) else False


def _nanvl(values: list[Any]) -> Any:
    x, other = values
    if isinstance(x, float) and math.isnan(x):
        return other
    return x


FUNCTIONS: dict[str, Callable[[list[Any]], Any]] = {
    "like": _strict(lambda a, b: _like(a, b, False)),
    "ilike": _strict(lambda a, b: _like(a, b, True)),
    "rlike": _strict(lambda a, b: re.search(b, a) is not None),
    "in": _in,
    "concat": _strict(lambda *a: "".join(map(str, a))),
    "upper": _strict(lambda s: str(s).upper()), "lower": _strict(lambda s: str(s).lower()),
    "length": _strict(lambda s: len(s)),
    "greatest": _extreme(max), "least": _extreme(min),
    "abs": _strict(abs),
    "round": _strict(_rounded(ROUND_HALF_UP)), "bround": _strict(_rounded(ROUND_HALF_EVEN)),
    "floor": _strict(_integral(ROUND_FLOOR)), "ceil": _strict(_integral(ROUND_CEILING)),
    "sqrt": _strict(_double(lambda v: math.sqrt(v) if v >= 0 else math.nan)),
    "exp": _strict(_double(math.exp)),
    "ln": _strict(lambda x: None if float(x) <= 0 else math.log(float(x))),
    "log": _strict(_log),
    "log10": _strict(lambda x: None if float(x) <= 0 else math.log10(float(x))),
    "power": _strict(_power),
    "sign": _strict(_sign),
    "pmod": _strict(_positive_modulo),
    "nullif": lambda a: None if BINARY["="](a[0], a[1]) is True else a[0],
    "nvl2": lambda a: a[1] if a[0] is not None else a[2],
    "isnan": lambda a: isinstance(a[0], float) and math.isnan(a[0]),
    "nanvl": _nanvl,
    "substring": _strict(_substring),
    "left": _strict(lambda s, n: "" if n <= 0 else _substring(s, 1, n)),
    "right": _strict(lambda s, n: "" if n <= 0 else _substring(s, -n, n)),
    "trim": _strict(lambda s: s.strip(" ")), "ltrim": _strict(lambda s: s.lstrip(" ")),
    "rtrim": _strict(lambda s: s.rstrip(" ")),
    "reverse": _strict(lambda s: s[::-1]),
    "startswith": _strict(lambda s, p: s.startswith(p)),
    "endswith": _strict(lambda s, p: s.endswith(p)),
    "contains": _strict(lambda s, p: p in s),
    "instr": _strict(lambda s, p: s.find(p) + 1),
    "replace": _strict(lambda s, old, new="": s if old == "" else s.replace(old, new)),
    "size": _strict(len),
    "array_contains": _array_contains,
}
"""Scalar function name -> its value from the list of argument values."""
