"""Vectorised evaluation of condition expressions with SQL three-valued logic.

Each sqlglot expression of a :class:`cep.lang.Condition` is compiled once into a tree of
closures over numpy arrays (never into Python source: nothing is ``eval``-ed). A value is a
pair ``(values, nulls)``: ``values`` is an array (or numpy scalar) and ``nulls`` is None (no
NULLs) or a boolean array/scalar marking NULL entries, whose ``values`` are meaningless.

Semantics follow Spark SQL: comparisons and arithmetic with a NULL are NULL; ``AND``/``OR``/
``NOT`` use Kleene logic; ``/`` always divides as doubles; division or modulo by zero is NULL
(Spark without ANSI mode); ``%`` takes the sign of the dividend; ``x IN (...)`` is NULL when no
element is equal and ``x`` or an element is NULL; ``INTERVAL '5' MINUTE`` is 300000000
(microseconds, the unit of timestamps); ``CAST`` that cannot convert gives NULL.

Input columns come from :func:`column_value`: ``None`` in object columns and NaN in float
columns are NULL (Arrow nulls of a double column arrive as NaN after a pandas conversion).

Example:
    >>> import numpy as np
    >>> from cep.lang import parse_condition
    >>> c = parse_condition("a.x * 2 > b.x OR a.s LIKE 'q%'")
    >>> e = compile_expr(c.expr)
    >>> env = {"a.x": column_value(np.array([1.0, np.nan, 3.0])),
    ...        "b.x": column_value(np.array([1, 1, 9])),
    ...        "a.s": column_value(np.array(["qa", None, "zz"], dtype=object))}
    >>> e.truth(env, 3).tolist()
    [True, False, False]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any, Callable, Mapping

import numpy as np
from sqlglot import exp

from cep.lang.ast import TIME_UNITS
from cep.lang.like import like_regex
from cep.match.errors import UnsupportedPatternError
from cep.timestamps import try_iso_to_micros

Value = tuple[Any, Any]  # (values, nulls): arrays or numpy scalars; nulls None means no NULL
Env = Mapping[str, Value]
Fn = Callable[[Env, int], Value]


@dataclass(frozen=True)
class CompiledExpr:
    """A condition compiled into a vectorised evaluator.

    Attributes:
        sql: the expression as Spark SQL (for messages and ``explain``).
        columns: placeholder column names the expression reads (``a.x``, ``b[i-1].y``, ...).
    """

    sql: str
    columns: tuple[str, ...]
    fn: Fn

    def evaluate(self, env: Env, n: int) -> Value:
        """Values and NULL mask of the expression for ``n`` rows (arrays of length ``n``)."""
        values, nulls = self.fn(env, n)
        values = np.broadcast_to(np.asarray(values), (n,))
        nulls = np.zeros(n, dtype=bool) if nulls is None else np.broadcast_to(np.asarray(nulls), (n,))
        return values, nulls

    def truth(self, env: Env, n: int) -> np.ndarray:
        """Rows for which the condition is TRUE (NULL and FALSE are both 'not satisfied')."""
        values, nulls = self.fn(env, n)
        out = np.asarray(values, dtype=bool)
        if nulls is not None:
            out = out & ~np.asarray(nulls, dtype=bool)
        if out.shape != (n,):
            out = np.broadcast_to(out, (n,)).copy()
        return out


def compile_expr(expr: exp.Expression) -> CompiledExpr:
    """Compile a sqlglot condition expression (see the module docstring for the semantics)."""
    columns = tuple(dict.fromkeys(c.name for c in expr.find_all(exp.Column)))
    return CompiledExpr(expr.sql(dialect="spark"), columns, _compile(expr))


# ---------------------------------------------------------------------------------------------
# Input columns
# ---------------------------------------------------------------------------------------------


def column_value(array: np.ndarray) -> Value:
    """Turn a stream column into ``(values, nulls)``: None and float NaN are NULL.

    Object columns holding only numbers become numeric arrays, only booleans a boolean array,
    otherwise they stay objects with NULL entries replaced by ``""`` so comparisons never meet
    a None.
    """
    array = np.asarray(array)
    kind = array.dtype.kind
    if kind == "f":
        nulls = np.isnan(array)
        if nulls.any():
            return np.where(nulls, 0.0, array), nulls
        return array, None
    if kind in "iub":
        return array, None
    if kind in "US":
        return array.astype(object), None
    if kind == "M":
        return array.astype("datetime64[us]").astype(np.int64), np.isnat(array)
    nulls = np.fromiter((v is None or (isinstance(v, float) and math.isnan(v)) for v in array),
                        dtype=bool, count=len(array))
    present = [v for v, n in zip(array, nulls) if not n]
    if present and all(isinstance(v, (bool, np.bool_)) for v in present):
        values = np.array([bool(v) if not n else False for v, n in zip(array, nulls)], dtype=bool)
    elif present and all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                         for v in present):
        values = np.array([int(v) if not n else 0 for v, n in zip(array, nulls)], dtype=np.int64)
    elif present and all(isinstance(v, (int, float, np.integer, np.floating))
                         and not isinstance(v, (bool, np.bool_)) for v in present):
        values = np.array([float(v) if not n else 0.0 for v, n in zip(array, nulls)],
                          dtype=np.float64)
    else:
        values = array.copy()
        values[nulls] = ""
    return values, (nulls if nulls.any() else None)


def take(value: Value, index: np.ndarray) -> Value:
    """Rows ``index`` of a column value (``index`` may be any integer array)."""
    values, nulls = value
    return values[index], (None if nulls is None else nulls[index])


# ---------------------------------------------------------------------------------------------
# Null helpers
# ---------------------------------------------------------------------------------------------


def _or_nulls(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return a | b


def _const(value: Any, null: bool = False) -> Fn:
    v = np.asarray(value)
    nl = np.bool_(True) if null else None

    def fn(env: Env, n: int) -> Value:
        return v, nl

    return fn


def _is_objectish(values: Any) -> bool:
    return np.asarray(values).dtype.kind in "OUS"


# ---------------------------------------------------------------------------------------------
# Compilation
# ---------------------------------------------------------------------------------------------


_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    exp.EQ: np.equal,
    exp.NEQ: np.not_equal,
    exp.GT: np.greater,
    exp.GTE: np.greater_equal,
    exp.LT: np.less,
    exp.LTE: np.less_equal,
}


def _compile(node: exp.Expression) -> Fn:  # noqa: C901 -- one dispatch over node types
    if isinstance(node, exp.Paren):
        return _compile(node.this)
    if isinstance(node, exp.Column):
        name = node.name

        def column(env: Env, n: int) -> Value:
            return env[name]

        return column
    if isinstance(node, exp.Literal):
        if node.is_string:
            return _const(np.asarray(node.this, dtype=object))
        text = str(node.this)
        try:
            return _const(np.int64(int(text)))
        except ValueError:
            return _const(np.float64(float(text)))
    if isinstance(node, exp.Boolean):
        return _const(np.bool_(bool(node.this)))
    if isinstance(node, exp.Null):
        return _const(np.bool_(False), null=True)
    if isinstance(node, exp.Interval):
        return _const(np.int64(_interval_us(node)))
    if type(node) in _COMPARE:
        return _comparison(_COMPARE[type(node)], _compile(node.this), _compile(node.expression))
    if isinstance(node, exp.NullSafeEQ):
        return _null_safe_eq(_compile(node.this), _compile(node.expression))
    if isinstance(node, exp.And):
        return _and(_compile(node.this), _compile(node.expression))
    if isinstance(node, exp.Or):
        return _or(_compile(node.this), _compile(node.expression))
    if isinstance(node, exp.Not):
        return _not(_compile(node.this))
    if isinstance(node, exp.Neg):
        inner = _compile(node.this)

        def neg(env: Env, n: int) -> Value:
            v, nl = _numeric(*inner(env, n), n)
            return np.negative(v), nl

        return neg
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)):
        return _arithmetic(type(node), _compile(node.this), _compile(node.expression))
    if isinstance(node, exp.In):
        return _in(_compile(node.this), [_compile(e) for e in node.expressions])
    if isinstance(node, exp.Between):
        x, lo, hi = _compile(node.this), _compile(node.args["low"]), _compile(node.args["high"])
        return _and(_comparison(np.greater_equal, x, lo), _comparison(np.less_equal, x, hi))
    if isinstance(node, (exp.Like, exp.ILike)):
        fn = _like(_compile(node.this), node.expression, isinstance(node, exp.ILike))
        return _not(fn) if node.args.get("negate") else fn
    if isinstance(node, exp.Is):
        return _is(_compile(node.this), node.expression)
    if isinstance(node, exp.Abs):
        return _unary_numeric(_compile(node.this), np.abs)
    if isinstance(node, (exp.Lower, exp.Upper, exp.Length)):
        return _string_fn(_compile(node.this), type(node))
    if isinstance(node, exp.Coalesce):
        return _coalesce([_compile(node.this)] + [_compile(e) for e in node.expressions])
    if isinstance(node, (exp.Cast, exp.TryCast)):
        return _cast(_compile(node.this), node.to)
    raise UnsupportedPatternError(
        f"the matcher cannot evaluate {node.key.upper()} in a condition ({node.sql(dialect='spark')})")


def _interval_us(node: exp.Interval) -> int:
    unit = str(node.args["unit"].name).upper()
    value = float(str(node.this.this))
    factor = TIME_UNITS.get(unit + "S") or TIME_UNITS.get(unit)
    if factor is None:
        raise UnsupportedPatternError(f"unsupported interval unit {unit}")
    return round(value * factor)


def _comparison(op: Callable[[Any, Any], Any], left: Fn, right: Fn) -> Fn:
    def compare(env: Env, n: int) -> Value:
        lv, ln = left(env, n)
        rv, rn = right(env, n)
        nulls = _or_nulls(ln, rn)
        if _is_objectish(lv) or _is_objectish(rv):
            return _object_compare(op, lv, rv, nulls, n)
        return op(lv, rv), nulls

    return compare


def _object_compare(op: Callable[[Any, Any], Any], lv: Any, rv: Any, nulls: Any, n: int) -> Value:
    """Compare when a side holds objects: text with text as strings, text with a number as
    numbers (the text cast to a number, NULL when it does not parse), as Spark casts."""
    a = np.asarray(lv)
    b = np.asarray(rv)
    a_text, b_text = a.dtype.kind in "OUS", b.dtype.kind in "OUS"
    if a_text and b_text:
        a = np.broadcast_to(a.astype(object), (n,))
        b = np.broadcast_to(b.astype(object), (n,))
        try:
            return np.asarray(op(a, b), dtype=bool), nulls
        except TypeError:
            pass
        out = np.zeros(n, dtype=bool)
        bad = np.zeros(n, dtype=bool)
        for k in range(n):  # mixed text and numbers in one object column: rare, per value
            c = _scalar_compare(a[k], b[k])
            if c is None:
                bad[k] = True
            else:
                out[k] = bool(op(c, 0))
        return out, _or_nulls(nulls, bad)
    if a_text:
        a, bad = _text_to_number(a, n)
    else:
        b, bad = _text_to_number(b, n)
    return op(a, b), (_or_nulls(nulls, bad) if bad.any() else nulls)


def _scalar_compare(a: Any, b: Any) -> int | None:
    if isinstance(a, str) and isinstance(b, str):
        return (a > b) - (a < b)
    x, y = _scalar_number(a), _scalar_number(b)
    if x is None or y is None:
        return None
    return (x > y) - (x < y)


def _scalar_number(v: Any) -> float | int | None:
    if isinstance(v, (bool, int, float, np.integer, np.floating, np.bool_)):
        return v
    if isinstance(v, str):
        try:
            return float(v.strip())
        except ValueError:
            return None
    return None


def _text_to_number(values: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Cast text (or mixed objects) to float64; entries that do not parse are NULL."""
    arr = np.broadcast_to(np.asarray(values, dtype=object), (n,))
    out = np.zeros(n, dtype=np.float64)
    bad = np.zeros(n, dtype=bool)
    for k, v in enumerate(arr):  # parsing text is per value in any case
        x = _scalar_number(v)
        if x is None:
            bad[k] = True
        else:
            out[k] = float(x)
    return out, bad


def _null_safe_eq(left: Fn, right: Fn) -> Fn:
    def nse(env: Env, n: int) -> Value:
        lv, ln = left(env, n)
        rv, rn = right(env, n)
        eq, bad = _comparison(np.equal, lambda e, m: (lv, None), lambda e, m: (rv, None))(env, n)
        if bad is not None:
            eq = eq & ~bad
        lnull = np.bool_(False) if ln is None else ln
        rnull = np.bool_(False) if rn is None else rn
        return (eq & ~lnull & ~rnull) | (lnull & rnull), None

    return nse


def _true_false(value: Value) -> tuple[Any, Any]:
    v, nl = value
    v = np.asarray(v, dtype=bool)
    if nl is None:
        return v, ~v
    return v & ~nl, ~v & ~nl


def _and(left: Fn, right: Fn) -> Fn:
    def both(env: Env, n: int) -> Value:
        lt, lf = _true_false(left(env, n))
        rt, rf = _true_false(right(env, n))
        true = lt & rt
        false = lf | rf
        return true, ~(true | false)

    return both


def _or(left: Fn, right: Fn) -> Fn:
    def either(env: Env, n: int) -> Value:
        lt, lf = _true_false(left(env, n))
        rt, rf = _true_false(right(env, n))
        true = lt | rt
        false = lf & rf
        return true, ~(true | false)

    return either


def _not(inner: Fn) -> Fn:
    def negate(env: Env, n: int) -> Value:
        v, nl = inner(env, n)
        return ~np.asarray(v, dtype=bool), nl

    return negate


def _numeric(values: Any, nulls: Any, n: int) -> tuple[Any, Any]:
    arr = np.asarray(values)
    if arr.dtype.kind == "b":
        return arr.astype(np.int64), nulls
    if arr.dtype.kind in "OUS":
        out, bad = _text_to_number(arr, n)  # Spark casts text to a number in arithmetic
        return out, _or_nulls(nulls, bad) if bad.any() else nulls
    return arr, nulls


def _arithmetic(kind: type, left: Fn, right: Fn) -> Fn:
    def arith(env: Env, n: int) -> Value:
        a, ln = _numeric(*left(env, n), n)
        b, rn = _numeric(*right(env, n), n)
        nulls = _or_nulls(ln, rn)
        if kind is exp.Add:
            return a + b, nulls
        if kind is exp.Sub:
            return a - b, nulls
        if kind is exp.Mul:
            return a * b, nulls
        zero = b == 0
        safe = np.where(zero, 1, b)
        if kind is exp.Div:
            with np.errstate(all="ignore"):
                out = np.asarray(a, dtype=np.float64) / safe
        else:
            with np.errstate(all="ignore"):
                out = np.fmod(a, safe)
        return out, (_or_nulls(nulls, zero) if np.any(zero) else nulls)

    return arith


def _in(left: Fn, items: list[Fn]) -> Fn:
    def member(env: Env, n: int) -> Value:
        lv, ln = left(env, n)
        true = np.zeros(n, dtype=bool)
        unknown = np.zeros(n, dtype=bool)
        for item in items:
            iv, inl = item(env, n)
            if _is_objectish(lv) or _is_objectish(iv):
                eq, bad = _object_compare(np.equal, lv, iv, None, n)
                inl = _or_nulls(inl, bad)
            else:
                eq = np.equal(lv, iv)
            if inl is None:
                true |= eq
            else:
                true |= eq & ~inl
                unknown |= inl
        nulls = ~true & unknown
        if ln is not None:
            nulls = nulls | (ln & np.ones(n, dtype=bool))
            true = true & ~ln
        return true, nulls

    return member


def _like(left: Fn, pattern: exp.Expression, ignore_case: bool) -> Fn:
    if isinstance(pattern, exp.Literal) and pattern.is_string:
        text = str(pattern.this)
        regex = like_regex(text.lower() if ignore_case else text)

        def like(env: Env, n: int) -> Value:
            lv, ln = left(env, n)
            values = np.broadcast_to(np.asarray(lv, dtype=object), (n,))
            texts = (_to_text(v) for v in values)
            if ignore_case:
                texts = (t.lower() for t in texts)
            out = np.fromiter((regex.fullmatch(t) is not None for t in texts), dtype=bool, count=n)
            return out, ln

        return like
    right = _compile(pattern)

    def like_dynamic(env: Env, n: int) -> Value:
        lv, ln = left(env, n)
        rv, rn = right(env, n)
        a = np.broadcast_to(np.asarray(lv, dtype=object), (n,))
        b = np.broadcast_to(np.asarray(rv, dtype=object), (n,))
        out = np.zeros(n, dtype=bool)
        for k in range(n):  # a pattern per row must be compiled per row
            x, p = _to_text(a[k]), _to_text(b[k])
            if ignore_case:
                x, p = x.lower(), p.lower()
            out[k] = like_regex(p).fullmatch(x) is not None
        return out, _or_nulls(ln, rn)

    return like_dynamic


def _is(left: Fn, what: exp.Expression) -> Fn:
    if isinstance(what, exp.Null):
        def is_null(env: Env, n: int) -> Value:
            _, ln = left(env, n)
            return (np.bool_(False) if ln is None else ln), None

        return is_null
    if isinstance(what, exp.Boolean):
        wanted = bool(what.this)

        def is_bool(env: Env, n: int) -> Value:
            true, false = _true_false(left(env, n))
            return (true if wanted else false), None

        return is_bool
    raise UnsupportedPatternError(f"unsupported IS {what.sql(dialect='spark')}")


def _unary_numeric(inner: Fn, op: Callable[[Any], Any]) -> Fn:
    def apply(env: Env, n: int) -> Value:
        v, nl = _numeric(*inner(env, n), n)
        return op(v), nl

    return apply


def _string_fn(inner: Fn, kind: type) -> Fn:
    def apply(env: Env, n: int) -> Value:
        v, nl = inner(env, n)
        values = np.broadcast_to(np.asarray(v, dtype=object), (n,))
        texts = [x if isinstance(x, str) else _to_text(x) for x in values]
        if kind is exp.Length:
            return np.fromiter((len(t) for t in texts), dtype=np.int64, count=n), nl
        out = np.empty(n, dtype=object)
        out[:] = [t.lower() for t in texts] if kind is exp.Lower else [t.upper() for t in texts]
        return out, nl

    return apply


def _to_text(value: Any) -> str:
    """The string form of a scalar as ``CAST(x AS STRING)`` gives it (booleans lower case)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _coalesce(parts: list[Fn]) -> Fn:
    def first(env: Env, n: int) -> Value:
        values: Any = None
        nulls: Any = np.ones(n, dtype=bool)
        for part in parts:
            v, nl = part(env, n)
            v = np.broadcast_to(np.asarray(v), (n,))
            if values is None:
                values = v.copy()
            else:
                if values.dtype != v.dtype:
                    values = values.astype(np.result_type(values.dtype, v.dtype)
                                           if values.dtype.kind != "O" and v.dtype.kind != "O"
                                           else object)
                values[nulls] = v[nulls]
            nulls = nulls & (np.zeros(n, dtype=bool) if nl is None else nl)
            if not nulls.any():
                break
        return values, (nulls if nulls.any() else None)

    return first


_INTEGER_TYPES = {"INT", "BIGINT", "SMALLINT", "TINYINT", "UINT", "UBIGINT", "USMALLINT", "UTINYINT"}
_FLOAT_TYPES = {"DOUBLE", "FLOAT"}
_TEXT_TYPES = {"VARCHAR", "TEXT", "CHAR", "NVARCHAR", "NCHAR"}
_TIME_TYPES = {"TIMESTAMP", "TIMESTAMPTZ", "TIMESTAMPNTZ", "DATE"}
_TRUE_WORDS = {"true", "t", "yes", "y", "1"}
_FALSE_WORDS = {"false", "f", "no", "n", "0"}


def _cast(inner: Fn, to: exp.DataType) -> Fn:
    name = to.this.name.upper()
    params = tuple(int(p.this.name) for p in to.expressions if isinstance(p.this, exp.Literal))
    known = _INTEGER_TYPES | _FLOAT_TYPES | _TEXT_TYPES | _TIME_TYPES | {"BOOLEAN", "DECIMAL"}
    if name not in known:
        raise UnsupportedPatternError(f"the matcher cannot CAST to {name}")

    def cast(env: Env, n: int) -> Value:
        v, nl = inner(env, n)
        arr = np.broadcast_to(np.asarray(v), (n,))
        if arr.dtype.kind in "iuf" and name in _INTEGER_TYPES | _FLOAT_TYPES:
            if name in _FLOAT_TYPES:
                return arr.astype(np.float64), nl
            if arr.dtype.kind == "f":
                bad = ~np.isfinite(arr)
                out = np.trunc(np.where(bad, 0.0, arr)).astype(np.int64)
                return out, (_or_nulls(nl, bad) if bad.any() else nl)
            return arr.astype(np.int64), nl
        # Text parsing, decimals (round half up) and timestamps go value by value.
        results = [_cast_scalar(x, name, params) for x in arr]
        bad = np.fromiter((r is None for r in results), dtype=bool, count=n)
        out = np.empty(n, dtype=object)
        out[:] = [("" if r is None else r) for r in results]
        values, _ = column_value(out)
        return values, (_or_nulls(nl, bad) if bad.any() else nl)

    return cast


def _cast_scalar(v: Any, name: str, params: tuple[int, ...]) -> Any:
    """``TRY_CAST`` of one value: None when it does not convert."""
    if isinstance(v, np.generic):
        v = v.item()
    if name in _TEXT_TYPES:
        return _to_text(v)
    if name == "BOOLEAN":
        if isinstance(v, str):
            word = v.strip().lower()
            return True if word in _TRUE_WORDS else False if word in _FALSE_WORDS else None
        return bool(v)
    number = _scalar_number(v)
    if name in _FLOAT_TYPES:
        return None if number is None else float(number)
    if name in _INTEGER_TYPES:
        if isinstance(v, str):
            try:
                number = float(Decimal(v.strip()))
            except (InvalidOperation, ValueError):
                return None
        if number is None or (isinstance(number, float) and not math.isfinite(number)):
            return None
        return int(number)
    if name == "DECIMAL":
        precision, scale = (params + (10, 0)[len(params):]) if len(params) < 2 else params[:2]
        if number is None or (isinstance(number, float) and not math.isfinite(number)):
            return None
        exact = Decimal(str(number)).quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
        if len(exact.as_tuple().digits) > precision and exact != 0:
            return None
        return float(exact)
    # TIMESTAMP / DATE: ISO text (naive is UTC) or, for TIMESTAMP, seconds since the epoch.
    if isinstance(v, str):
        return try_iso_to_micros(v)
    if isinstance(v, (int, float)) and not isinstance(v, bool) and name != "DATE":
        return int(round(v * 1_000_000))
    return None


def null_safe_equal(left: Value, right: Value, n: int) -> np.ndarray:
    """``left <=> right`` row by row (NULL equals NULL), with the comparison rules above."""
    fn = _null_safe_eq(lambda env, m: left, lambda env, m: right)
    values, _ = fn({}, n)
    return np.broadcast_to(np.asarray(values, dtype=bool), (n,))
