"""A scalar SQL interpreter for condition expressions (sqlglot trees), used by the oracles.

The oracles must not trust Spark or the engine, so they evaluate ``Condition.expr`` themselves,
node by node, with SQL three-valued logic. Python ``None`` is SQL NULL. No string is ever
evaluated as code: the interpreter only walks the allow-listed node types of
``cep.lang.conditions`` and raises :class:`UnsupportedPatternError` on anything else.

Values are Python scalars: ``bool``, ``int``, ``float``, ``str`` or ``None``. Timestamps are
``int`` microseconds since the epoch (raw values for numeric ``ts`` columns), and an
``INTERVAL 'n' UNIT`` literal is its length in microseconds, so ``t(b) - t(a) < 5 MINUTES`` is
integer arithmetic.

Choices where Spark itself has modes or is vague (an oracle needs one fixed answer):

- Division and remainder by zero give NULL (Spark's legacy non-ANSI behaviour). Spark 4
  defaults to ANSI mode, where they raise; a match predicate should not abort a whole query,
  so the project uses NULL, and the condition is then not satisfied.
- ``/`` always gives a floating-point result (Spark's ``/`` returns DOUBLE for integers);
  ``%`` takes the sign of the dividend (Java semantics, as in Spark).
- A float NaN read from an attribute column is NULL (see :func:`to_value`): numeric columns
  that come from Spark through numpy carry missing values as NaN.
- Comparing a string with a number casts the string to a number (NULL when it does not
  parse), as Spark's implicit casts do; other mixed comparisons are NULL.
- ``CAST`` never raises: a value that does not convert is NULL (``TRY_CAST``, which is what
  the parser produces). ``DECIMAL(p, s)`` rounds half up to ``s`` digits (``DECIMAL`` alone is
  ``DECIMAL(10, 0)`` as in Spark) and is then held as a float. ``CAST(x AS TIMESTAMP)`` reads
  an ISO string (naive means UTC) or a number of seconds, giving microseconds; ``DATE`` reads
  an ISO date as the microseconds of its midnight (UTC).
- Integer arithmetic does not wrap around at 64 bits (inputs of the oracle are small).

Example:
    >>> from cep.lang import parse_condition
    >>> c = parse_condition("a.x / 0 IS NULL AND a.s LIKE 'ab%' AND a.t - 1 < 2 MINUTES")
    >>> values = {"a.x": 3, "a.s": "abc", "a.t": 60_000_000}
    >>> evaluate(c.expr, values.__getitem__)
    True
    >>> evaluate(parse_condition("a.x > NULL OR a.x < 5").expr, lambda name: 7) is None
    True
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any, Callable, Union

import numpy as np
from sqlglot import exp

from cep.lang.ast import TIME_UNITS
from cep.match.errors import UnsupportedPatternError
from cep.lang.like import like_regex
from cep.timestamps import try_iso_to_micros

Value = Union[bool, int, float, str, None]
Lookup = Callable[[str], Value]

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_INT_TYPES = {"INT", "BIGINT", "SMALLINT", "TINYINT", "UINT", "UBIGINT", "USMALLINT", "UTINYINT"}
_FLOAT_TYPES = {"DOUBLE", "FLOAT"}
_STRING_TYPES = {"TEXT", "VARCHAR", "CHAR", "NCHAR", "NVARCHAR"}
_TRUE_WORDS = {"true", "t", "yes", "y", "1"}
_FALSE_WORDS = {"false", "f", "no", "n", "0"}


# ---------------------------------------------------------------------------------------------
# Converting data into interpreter values
# ---------------------------------------------------------------------------------------------


def to_value(raw: Any) -> Value:
    """Turn one cell of an event column into an interpreter value.

    numpy scalars become Python scalars; ``None`` and float NaN become NULL; datetimes become
    microseconds since the epoch (naive means UTC), so they compare with ``t(a)``.

    Example:
        >>> to_value(np.int64(3)), to_value(np.float64("nan")), to_value(np.str_("x"))
        (3, None, 'x')
    """
    if raw is None:
        return None
    if isinstance(raw, np.datetime64):
        if np.isnat(raw):
            return None
        return int(raw.astype("datetime64[us]").astype(np.int64))
    if isinstance(raw, np.generic):
        raw = raw.item()
    if isinstance(raw, datetime):
        stamp = raw if raw.tzinfo is not None else raw.replace(tzinfo=timezone.utc)
        delta = stamp - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(raw, float) and math.isnan(raw):
        return None
    if isinstance(raw, (bool, int, float, str)):
        return raw
    if isinstance(raw, bytes):
        return raw.decode("utf-8", "replace")
    raise UnsupportedPatternError(f"the oracle cannot evaluate a value of type {type(raw).__name__}")


# ---------------------------------------------------------------------------------------------
# Three-valued logic and comparisons
# ---------------------------------------------------------------------------------------------


def and3(a: Value, b: Value) -> Value:
    """SQL AND: FALSE wins, then NULL."""
    if a is False or b is False:
        return False
    if a is None or b is None:
        return None
    return bool(a) and bool(b)


def or3(a: Value, b: Value) -> Value:
    """SQL OR: TRUE wins, then NULL."""
    if a is True or b is True:
        return True
    if a is None or b is None:
        return None
    return False


def not3(a: Value) -> Value:
    """SQL NOT: NULL stays NULL."""
    return None if a is None else not a


def _is_number(v: Value) -> bool:
    return isinstance(v, (int, float))  # bool is an int: Spark compares TRUE with 1 as equal


def _as_number(v: Value) -> int | float | None:
    if _is_number(v):
        return v  # type: ignore[return-value]
    if isinstance(v, str):
        try:
            return float(v.strip())
        except ValueError:
            return None
    return None


def compare(a: Value, b: Value) -> int | None:
    """-1, 0 or 1 as SQL orders ``a`` and ``b``; None when either is NULL or they do not compare.

    Floats follow Spark: NaN equals NaN and is larger than every other number.
    """
    if a is None or b is None:
        return None
    if isinstance(a, str) and isinstance(b, str):
        return (a > b) - (a < b)
    x, y = _as_number(a), _as_number(b)
    if x is None or y is None:
        return None
    x_nan = isinstance(x, float) and math.isnan(x)
    y_nan = isinstance(y, float) and math.isnan(y)
    if x_nan or y_nan:
        return (x_nan and not y_nan) - (y_nan and not x_nan)
    return (x > y) - (x < y)


def null_safe_equal(a: Value, b: Value) -> bool:
    """SQL ``<=>``: NULL equals NULL, NULL differs from every value."""
    if a is None or b is None:
        return a is None and b is None
    return compare(a, b) == 0


# ---------------------------------------------------------------------------------------------
# Arithmetic
# ---------------------------------------------------------------------------------------------


def _arith(op: str, a: Value, b: Value) -> Value:
    x, y = _as_number(a), _as_number(b)
    if x is None or y is None:
        return None
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "*":
        return x * y
    if y == 0:
        return None  # division by zero is NULL (module docstring)
    if op == "/":
        return x / y
    # Remainder with the sign of the dividend, as Java and Spark compute it.
    if isinstance(x, int) and isinstance(y, int):
        r = abs(x) % abs(y)
        return -r if x < 0 else r
    return math.fmod(x, y)


# ---------------------------------------------------------------------------------------------
# Functions and casts
# ---------------------------------------------------------------------------------------------


def to_text(v: Value) -> str | None:
    """The string Spark's ``CAST(v AS STRING)`` gives for a scalar (close enough for tests)."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def cast(v: Value, type_name: str, params: tuple[int, ...] = ()) -> Value:
    """``TRY_CAST(v AS type_name(params))``: NULL when the value does not convert.

    Example:
        >>> cast("1.5", "INT"), cast(1.235, "DECIMAL", (10, 2)), cast(2.5, "DECIMAL"), cast("x", "DOUBLE")
        (1, 1.24, 3.0, None)
    """
    if v is None:
        return None
    if type_name == "DECIMAL":
        return _decimal(v, *(params or (10, 0)))  # Spark's DECIMAL alone is DECIMAL(10, 0)
    if type_name in _STRING_TYPES:
        return to_text(v)
    if type_name == "BOOLEAN":
        if isinstance(v, str):
            word = v.strip().lower()
            return True if word in _TRUE_WORDS else False if word in _FALSE_WORDS else None
        return bool(v)
    if type_name in _INT_TYPES:
        if isinstance(v, str):
            try:
                v = float(Decimal(v.strip()))
            except (InvalidOperation, ValueError):
                return None
        if isinstance(v, float) and not math.isfinite(v):
            return None
        return int(v)  # truncates toward zero, as Spark does
    if type_name in _FLOAT_TYPES:
        n = _as_number(v)
        return None if n is None else float(n)
    if type_name in ("TIMESTAMP", "TIMESTAMPTZ", "TIMESTAMPNTZ", "DATE"):
        if isinstance(v, str):
            return try_iso_to_micros(v)
        if _is_number(v) and not isinstance(v, bool) and type_name != "DATE":
            return int(round(v * 1_000_000))  # Spark reads a number as seconds since the epoch
        return None
    raise UnsupportedPatternError(f"the oracle cannot evaluate CAST to {type_name}")


def _decimal(v: Value, precision: int = 10, scale: int = 0) -> float | None:
    """A DECIMAL(precision, scale) cast: round half up to ``scale``; NULL when it overflows."""
    n = _as_number(v)
    if n is None or isinstance(n, bool) or (isinstance(n, float) and not math.isfinite(n)):
        return None
    exact = Decimal(str(n)).quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
    if len(exact.as_tuple().digits) > precision and exact != 0:
        return None
    return float(exact)


def _like(value: Value, pattern: Value, fold: bool) -> Value:
    text, pat = to_text(value), to_text(pattern)
    if text is None or pat is None:
        return None
    if fold:
        text, pat = text.lower(), pat.lower()
    return like_regex(pat).fullmatch(text) is not None


def _interval(node: exp.Interval) -> int:
    unit = node.args.get("unit")
    name = (unit.name if unit is not None else "").upper()
    canonical = name if name.endswith("S") else name + "S"
    if canonical not in TIME_UNITS:
        raise UnsupportedPatternError(f"the oracle cannot evaluate an interval in {name or '?'}")
    amount = Decimal(str(node.this.name if isinstance(node.this, exp.Expression) else node.this))
    return int(round(amount * TIME_UNITS[canonical]))


def _literal(node: exp.Literal) -> Value:
    if node.is_string:
        return str(node.this)
    text = str(node.this)
    try:
        return int(text)
    except ValueError:
        return float(text)


# ---------------------------------------------------------------------------------------------
# The interpreter
# ---------------------------------------------------------------------------------------------

_COMPARISONS: dict[type, Callable[[int], bool]] = {
    exp.EQ: lambda c: c == 0,
    exp.NEQ: lambda c: c != 0,
    exp.GT: lambda c: c > 0,
    exp.GTE: lambda c: c >= 0,
    exp.LT: lambda c: c < 0,
    exp.LTE: lambda c: c <= 0,
}
_ARITHMETIC: dict[type, str] = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%"}


def evaluate(node: exp.Expression, lookup: Lookup) -> Value:
    """Evaluate a condition expression; ``lookup(name)`` gives the value of placeholder column ``name``.

    Args:
        node: a sqlglot expression built by ``cep.lang.conditions`` (read-only).
        lookup: the value of each placeholder column (already an interpreter value). It may raise
            to abandon the evaluation (the oracle does so for an iteration that does not exist).

    Returns:
        The SQL value: for a condition ``True``, ``False`` or ``None`` (NULL).

    Raises:
        UnsupportedPatternError: a node type outside the condition allow-list.
    """
    result = _eval(node, lookup)
    if node.args.get("negate"):
        return not3(result)
    return result


def _eval(node: exp.Expression, lookup: Lookup) -> Value:  # noqa: C901 -- one branch per node type
    if isinstance(node, exp.Paren):
        return evaluate(node.this, lookup)
    if isinstance(node, exp.Column):
        return lookup(node.name)
    if isinstance(node, exp.Literal):
        return _literal(node)
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Interval):
        return _interval(node)
    if isinstance(node, exp.And):
        left = evaluate(node.this, lookup)
        if left is False:
            return False  # short cut; the result is FALSE whatever the right side is
        return and3(left, evaluate(node.expression, lookup))
    if isinstance(node, exp.Or):
        left = evaluate(node.this, lookup)
        if left is True:
            return True
        return or3(left, evaluate(node.expression, lookup))
    if isinstance(node, exp.Not):
        return not3(evaluate(node.this, lookup))
    for cls, test in _COMPARISONS.items():
        if type(node) is cls:
            c = compare(evaluate(node.this, lookup), evaluate(node.expression, lookup))
            return None if c is None else test(c)
    if isinstance(node, exp.NullSafeEQ):
        return null_safe_equal(evaluate(node.this, lookup), evaluate(node.expression, lookup))
    for cls, op in _ARITHMETIC.items():
        if type(node) is cls:
            return _arith(op, evaluate(node.this, lookup), evaluate(node.expression, lookup))
    if isinstance(node, exp.Neg):
        v = _as_number(evaluate(node.this, lookup))
        return None if v is None else -v
    if isinstance(node, exp.In):
        return _in(evaluate(node.this, lookup), [evaluate(e, lookup) for e in node.expressions])
    if isinstance(node, exp.Between):
        v = evaluate(node.this, lookup)
        low = compare(v, evaluate(node.args["low"], lookup))
        high = compare(v, evaluate(node.args["high"], lookup))
        return and3(None if low is None else low >= 0, None if high is None else high <= 0)
    if isinstance(node, exp.Like):
        return _like(evaluate(node.this, lookup), evaluate(node.expression, lookup), fold=False)
    if isinstance(node, exp.ILike):
        return _like(evaluate(node.this, lookup), evaluate(node.expression, lookup), fold=True)
    if isinstance(node, exp.Is):
        v = evaluate(node.this, lookup)
        target = node.expression
        if isinstance(target, exp.Null):
            return v is None
        if isinstance(target, exp.Boolean):
            return v is bool(target.this)  # IS TRUE / IS FALSE are never NULL
        raise UnsupportedPatternError(f"the oracle cannot evaluate IS {target.sql()}")
    if isinstance(node, exp.Coalesce):
        for arg in [node.this, *node.expressions]:
            v = evaluate(arg, lookup)
            if v is not None:
                return v
        return None
    if isinstance(node, exp.Abs):
        v = _as_number(evaluate(node.this, lookup))
        return None if v is None else abs(v)
    if isinstance(node, (exp.Lower, exp.Upper, exp.Length)):
        text = to_text(evaluate(node.this, lookup))
        if text is None:
            return None
        if isinstance(node, exp.Length):
            return len(text)
        return text.lower() if isinstance(node, exp.Lower) else text.upper()
    if isinstance(node, (exp.Cast, exp.TryCast)):
        params = tuple(int(p.this.name) for p in node.to.expressions if isinstance(p.this, exp.Literal))
        return cast(evaluate(node.this, lookup), node.to.this.name, params)
    raise UnsupportedPatternError(f"the oracle cannot evaluate {type(node).__name__} in a condition")


def _in(v: Value, options: list[Value]) -> Value:
    """SQL IN: TRUE on a match, else NULL if anything was NULL, else FALSE."""
    if v is None:
        return None
    saw_null = False
    for option in options:
        c = compare(v, option)
        if c == 0:
            return True
        saw_null = saw_null or c is None
    return None if saw_null else False
