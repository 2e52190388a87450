"""Compiling a trend query (``cet_trends``) into an immutable :class:`TrendQuery`.

A trend query is one Kleene+ class with an iteration alias, conditions on single events, and
predicates between neighbouring iterations (Mei et al., ICPP 2021, section 2: "complete event
trend" queries; DESIGN.md section 4, the ``cet_trends`` bullet; docs/trends.md)::

    PATTERN check+ c[] WHERE c.type = 'not covered' AND c[i].src = c[i-1].dest WITHIN 1 WEEK SLIDE 1 DAY

Each WHERE conjunct is sorted into one of two roles:

- a **filter** reads the current event only (``c.x``, ``c[i].x``, ``t(c)``, constants): it
  decides which events take part, before any graph is built (the Spark layer pushes it down);
- a **neighbour predicate** ``c[i].A op f(c[i-1].B)`` with ``op`` one of ``= <> < <= > >=``
  and ``f`` linear (``k * x + b``, ``x * k``, ``x / k``, ``x + b``, ``x - b``, ``-x``, ...;
  constants only); ``f(c[i-1].B) op c[i].A`` is normalised by flipping ``op``. An equivalence
  ``[attr]`` is the predicate ``c[i].attr = c[i-1].attr``. Conjunctions intersect edge sets.

Anything else raises :class:`UnsupportedTrendPatternError` (``CEP-TREND-001`` .. ``008``) with
the position of the offending text.

Example:
    >>> q = compile_trend("PATTERN stock+ s[] WHERE [id] AND s[i].price > 1.05 * s[i-1].price "
    ...                   "WITHIN 60 MINUTES SLIDE 10 MINUTES")
    >>> [p.describe(q.alias) for p in q.predicates]
    ['s[i].id = s[i-1].id', 's[i].price > 1.05 * s[i-1].price']
    >>> q.within, q.slide, q.unit
    (3600000000, 600000000, 'TIME')
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from sqlglot import exp

from cep.lang import Query, parse_pattern, validate_pattern
from cep.lang.ast import (
    EVENTS,
    TIME_UNITS,
    AggRef,
    AttrRef,
    Condition,
    Event,
    IterRef,
    Kleene,
    Ref,
    Span,
    Timed,
    TsRef,
    VarRef,
)
from cep.trends.errors import (
    E_CLAUSE,
    E_DEFINE,
    E_NEIGHBOUR,
    E_QUANTIFIER,
    E_REFERENCE,
    E_SHAPE,
    E_TIMED,
    UnsupportedTrendPatternError,
)

OPS = ("=", "<>", "<", "<=", ">", ">=")
FLIP = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_COMPARISONS: dict[type, str] = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=",
                                 exp.GT: ">", exp.GTE: ">="}
_SHAPE_HINT = "a trend query is one class under '+' with an iteration alias, e.g. PATTERN check+ c[]"
_FORM_HINT = ("a predicate between neighbours must read c[i].A op f(c[i-1].B) with op one of "
              "= <> < <= > >= and f linear in one attribute (k * x + b, x * k, x / k, x + b, x - b)")

Number = int | float


@dataclass(frozen=True)
class NeighbourPredicate:
    """``c[i].attr op f(c[i-1].prev_attr)`` with ``f(x) = (x * scale) / divisor + offset``.

    ``f`` is evaluated in exactly that order, skipping a step whose constant is neutral
    (``scale == 1``, ``divisor == 1``, ``offset == 0``), so it rounds exactly as the written
    SQL does (``x / 3`` divides; it does not multiply by ``1/3``). A NULL constant or a division
    by zero makes ``f`` NULL for every event (scale and offset NaN): the predicate never holds.

    Attributes:
        attr: attribute of the later event (``i``); ``"ts"`` is the timestamp.
        op: one of ``= <> < <= > >=`` (normalised so the later event is on the left).
        prev_attr: attribute of the earlier event (``i-1``).
        scale, offset, divisor: the linear function (ints or floats, as written).
        text: the condition as written (not compared).
        span: its character offsets in the query text (not compared).

    Example:
        >>> NeighbourPredicate("price", ">", "price", scale=1.05).describe("s")
        's[i].price > 1.05 * s[i-1].price'
    """

    attr: str
    op: str
    prev_attr: str
    scale: Number = 1
    offset: Number = 0
    divisor: Number = 1
    text: str = field(default="", compare=False)
    span: tuple[int, int] = field(default=(0, 0), compare=False)

    @property
    def identity(self) -> bool:
        """True when ``f`` is the identity (``c[i].A op c[i-1].B``)."""
        return self.scale == 1 and self.divisor == 1 and self.offset == 0

    @property
    def is_equality(self) -> bool:
        """True for ``=`` (its attribute vertices are single values)."""
        return self.op == "="

    def function_text(self, operand: str) -> str:
        """``f`` applied to ``operand``, written as SQL."""
        if isinstance(self.scale, float) and math.isnan(self.scale):
            return "NULL"
        out = operand
        if self.scale != 1:
            out = f"-{out}" if self.scale == -1 else f"{_num(self.scale)} * {out}"
        if self.divisor != 1:
            out = f"{out} / {_num(self.divisor)}"
        if self.offset != 0:
            out = f"{out} - {_num(-self.offset)}" if self.offset < 0 else f"{out} + {_num(self.offset)}"
        return out

    def describe(self, alias: str) -> str:
        """The normalised predicate as SQL over ``alias``."""
        return f"{alias}[i].{self.attr} {self.op} {self.function_text(f'{alias}[i-1].{self.prev_attr}')}"


@dataclass(frozen=True)
class TrendQuery:
    """A compiled trend query: what the graph builders, the counter and the extractor run on.

    Attributes:
        cls: the Kleene class name.
        alias: its iteration alias (``c`` in ``check+ c[]``; the class name when none is given).
        class_condition: the ``DEFINE`` of the class, or None (then the type column must equal
            ``cls``).
        filters: WHERE conditions on single events (pushed down as boolean columns).
        predicates: the neighbour predicates, ``[attr]`` equivalences first, in written order.
        within: window length, or None (one window: the whole partition). Microseconds for time
            units, raw timestamp units for ``UNITS``.
        slide: window slide in the same unit, or None (tumbling: ``slide == within``).
        unit: ``"TIME"``, ``"UNITS"`` or None (no WITHIN).
        text: the query text (positions of errors refer to it; not compared).
    """

    cls: str
    alias: str
    class_condition: Condition | None
    filters: tuple[Condition, ...]
    predicates: tuple[NeighbourPredicate, ...]
    within: Number | None
    slide: Number | None
    unit: str | None
    text: str = field(default="", compare=False)

    @property
    def attributes(self) -> tuple[str, ...]:
        """Every attribute the query reads (filters, DEFINE and predicates), in first-use order."""
        names: list[str] = []
        conds = ([self.class_condition] if self.class_condition is not None else []) + list(self.filters)
        for cond in conds:
            for ref in cond.refs:
                if isinstance(ref, (AttrRef, IterRef)):
                    names.append(ref.attr)
        for pred in self.predicates:
            names.extend([pred.attr, pred.prev_attr])
        return tuple(dict.fromkeys(names))

    @property
    def effective_slide(self) -> Number | None:
        """The slide windows are cut with: ``slide``, or ``within`` for tumbling windows."""
        return self.within if self.slide is None else self.slide


def compile_trend(query: Query | str, columns: Sequence[str] | None = None) -> TrendQuery:
    """Compile pattern text or a parsed query into a :class:`TrendQuery` (docs/trends.md).

    Args:
        query: pattern text or a parsed :class:`cep.lang.Query`.
        columns: the event table's columns; when given, every attribute must be one of them
            (``CEP-PAT-203`` otherwise, with the list of columns).

    Returns:
        The compiled query.

    Raises:
        PatternError: the text does not parse or names an unknown attribute (``CEP-PAT-...``).
        UnsupportedTrendPatternError: a construct a trend query cannot have (``CEP-TREND-0NN``),
            with line, column and a caret under the offending text.

    Example:
        >>> q = compile_trend("PATTERN check+ c[] WHERE c.type = 'not covered' AND "
        ...                   "c[i].src = c[i-1].dest WITHIN 1 WEEK SLIDE 1 DAY")
        >>> q.cls, q.alias, [f.sql for f in q.filters], q.predicates[0].describe("c")
        ('check', 'c', ["`c.type` = 'not covered'"], 'c[i].src = c[i-1].dest')
        >>> compile_trend("PATTERN a; b+")
        Traceback (most recent call last):
        ...
        cep.trends.errors.UnsupportedTrendPatternError: CEP-TREND-001: line 1, column 9: expected one Kleene+ class, found a sequence (';' or SEQ) of 2 components; a trend query is one class under '+' with an iteration alias, e.g. PATTERN check+ c[]
            PATTERN a; b+
                    ^~~~~
    """
    parsed = parse_pattern(query) if isinstance(query, str) else query
    if columns is not None:
        validate_pattern(parsed, columns=list(columns))
    return _Compiler(parsed).run()


class _Compiler:
    def __init__(self, query: Query) -> None:
        self.query = query
        self.text = query.text

    def fail(self, code: str, message: str, span: tuple[int, int] | None) -> UnsupportedTrendPatternError:
        start, end = span if span is not None else (0, 0)
        return UnsupportedTrendPatternError(code, message, self.text, start, end if end > start else None)

    def run(self) -> TrendQuery:
        event = self._shape()
        alias = event.alias
        self._clauses()
        class_condition = self._define(event.cls)
        filters: list[Condition] = []
        predicates = [NeighbourPredicate(eq.attr, "=", eq.attr, text=f"[{eq.attr}]", span=eq.span)
                      for eq in self.query.equivalences]
        for cond in self.query.conditions:
            roles = [self._role(cond, ref, alias) for ref in cond.refs]
            if "previous" not in roles:
                filters.append(cond)
                continue
            for part in _conjuncts(cond.expr):
                if not any(self._role(cond, cond.ref(c.name), alias) == "previous"
                           for c in part.find_all(exp.Column)):
                    raise self.fail(E_NEIGHBOUR, f"expected every part of a condition on {alias}[i-1] to "
                                    f"read {alias}[i-1], found {_plain(part.sql(dialect='spark'))}; write a "
                                    "condition on the current event alone as its own WHERE conjunct",
                                    cond.span)
                predicates.append(self._neighbour(cond, part, alias))
        within, unit = self._span(self.query.within)
        slide, _ = self._span(self.query.slide)
        return TrendQuery(event.cls, alias, class_condition, tuple(filters), tuple(predicates),
                          within, slide, unit, self.text)

    # -- pattern shape --------------------------------------------------------------------

    def _shape(self) -> Event:
        node = self.query.pattern
        if isinstance(node, Timed):
            raise self.fail(E_TIMED, "a trend query cannot have '@(...)' conditions; write them in "
                            "WHERE (c.x for the current event, c[i-1].x for the previous one)", node.span)
        if isinstance(node, Event):
            raise self.fail(E_QUANTIFIER, f"expected the quantifier '+' after {node.cls}, found none; "
                            + _SHAPE_HINT, node.span)
        if not isinstance(node, Kleene):
            raise self.fail(E_SHAPE, f"expected one Kleene+ class, found {_construct(node)}; {_SHAPE_HINT}",
                            node.span)
        part = node.part
        if isinstance(part, Timed):
            raise self.fail(E_TIMED, "a trend query cannot have '@(...)' conditions; write them in WHERE",
                            part.span)
        if not isinstance(part, Event):
            raise self.fail(E_SHAPE, f"expected one class under '+', found {_construct(part)} under it; "
                            + _SHAPE_HINT, part.span)
        if node.min != 1 or node.max is not None:
            found = self.text[node.quant_span[0]:node.quant_span[1]] if node.quant_span else _quant(node)
            raise self.fail(E_QUANTIFIER, f"expected the quantifier '+' (one or more), found '{found}'; "
                            "a trend is every maximal run of one or more events",
                            node.quant_span or node.span)
        return part

    def _clauses(self) -> None:
        q = self.query
        if q.window is not None:
            raise self.fail(E_CLAUSE, "expected WITHIN/SLIDE windows, found a WINDOW [a, b] clause; "
                            "filter the events before calling cet_trends instead", q.window.span)
        for span in (q.within, q.slide):
            if span is not None and span.unit == EVENTS:
                raise self.fail(E_CLAUSE, f"expected a time span or UNITS, found {span}; trend windows "
                                "are time windows (use the timestamp, or a numeric ts with UNITS)", span.span)
        if q.policy not in (None, "skip-till-any-match"):
            at = self.text.lower().find(q.policy.split("-")[0])
            span = (at, at + len(q.policy)) if at >= 0 else None
            raise self.fail(E_CLAUSE, f"expected skip-till-any-match (the trend semantics), found "
                            f"{q.policy}; complete trends skip any events between neighbours", span)

    def _define(self, cls: str) -> Condition | None:
        for define in self.query.defines:
            if define.condition.variables:
                raise self.fail(E_DEFINE, f"expected a DEFINE of {cls} over its own attributes, found a "
                                "join variable ($x); write the link between events as "
                                "c[i].attr = c[i-1].attr in WHERE", define.condition.span)
            if define.cls == cls:
                return define.condition
        return None

    # -- conditions -----------------------------------------------------------------------

    def _role(self, cond: Condition, ref: Ref, alias: str) -> str:
        """``"current"`` or ``"previous"`` for one reference; raise for any other kind."""
        if isinstance(ref, VarRef):
            raise self.fail(E_REFERENCE, f"expected references to {alias} or {alias}[i-1], found the "
                            f"join variable ${ref.var}; link neighbours with {alias}[i].attr = "
                            f"{alias}[i-1].attr", ref.span)
        if isinstance(ref, AggRef):
            raise self.fail(E_REFERENCE, f"expected references to {alias}[i] or {alias}[i-1], found the "
                            f"aggregate {ref.name}; a trend predicate compares neighbours only", ref.span)
        if isinstance(ref, (IterRef, TsRef)) and ref.index is not None:
            if not ref.index.relative:
                raise self.fail(E_REFERENCE, f"expected {alias}[i] or {alias}[i-1], found the fixed "
                                f"iteration {ref.name}", ref.span)
            if ref.index.offset == -1:
                return "previous"
            if ref.index.offset != 0:
                raise self.fail(E_REFERENCE, f"expected {alias}[i] or {alias}[i-1], found {ref.name}; "
                                "a trend predicate links neighbouring events only", ref.span)
        return "current"

    def _neighbour(self, cond: Condition, node: exp.Expression, alias: str) -> NeighbourPredicate:
        found = node.sql(dialect="spark")
        if type(node) not in _COMPARISONS:
            raise self.fail(E_NEIGHBOUR, f"{_FORM_HINT}; found {_plain(found)}", cond.span)
        op = _COMPARISONS[type(node)]
        left_attr = self._current_attr(cond, node.this)
        right_attr = self._current_attr(cond, node.expression)
        if left_attr is not None and right_attr is None:
            attr, other = left_attr, node.expression
        elif right_attr is not None and left_attr is None:
            attr, other, op = right_attr, node.this, FLIP[op]
        else:
            raise self.fail(E_NEIGHBOUR, f"{_FORM_HINT}; found {_plain(found)} (one side must be "
                            f"{alias}[i].attr alone)", cond.span)
        prev_attr, scale, divisor, offset = self._linear(cond, other, found)
        if any(isinstance(v, float) and math.isnan(v) for v in (scale, offset)) or divisor == 0:
            scale, divisor, offset = math.nan, 1, math.nan
        text = cond.text if len(_conjuncts(cond.expr)) == 1 else _plain(found)
        return NeighbourPredicate(attr, op, prev_attr, scale, offset, divisor, text=text, span=cond.span)

    def _current_attr(self, cond: Condition, node: exp.Expression) -> str | None:
        while isinstance(node, exp.Paren):
            node = node.this
        if not isinstance(node, exp.Column):
            return None
        ref = cond.ref(node.name)
        if isinstance(ref, IterRef) and ref.index.relative and ref.index.offset == 0:
            return ref.attr
        if isinstance(ref, TsRef) and ref.index is not None and ref.index.offset == 0:
            return "ts"
        if isinstance(ref, (AttrRef, TsRef)) and ref.alias is not None:
            raise self.fail(E_NEIGHBOUR, f"expected {ref.alias}[i] next to {ref.alias}[i-1], found the "
                            f"unindexed {ref.name}; write {_indexed(ref)}", ref.span)
        return None

    def _linear(self, cond: Condition, node: exp.Expression, found: str) -> tuple[str, Number, Number, Number]:
        """``(prev_attr, scale, divisor, offset)`` of a linear function of one ``c[i-1]`` reference."""

        def bad(reason: str) -> UnsupportedTrendPatternError:
            return self.fail(E_NEIGHBOUR, f"{_FORM_HINT}; found {_plain(found)} ({reason})", cond.span)

        def walk(n: exp.Expression) -> tuple[str, Number, Number, Number]:
            if isinstance(n, exp.Paren):
                return walk(n.this)
            if isinstance(n, exp.Column):
                ref = cond.ref(n.name)
                if isinstance(ref, IterRef) and ref.index.offset == -1:
                    return (ref.attr, 1, 1, 0)
                if isinstance(ref, TsRef) and ref.index is not None and ref.index.offset == -1:
                    return ("ts", 1, 1, 0)
                raise bad(f"{ref.name} cannot appear inside f")
            if isinstance(n, exp.Neg):
                attr, s, d, o = walk(n.this)
                return (attr, -s, d, -o)
            if isinstance(n, (exp.Add, exp.Sub, exp.Mul, exp.Div)):
                left_const = _constant(n.this)
                right_const = _constant(n.expression)
                if left_const is _NOT_CONSTANT and right_const is _NOT_CONSTANT:
                    raise bad("f may use one attribute of the previous event, combined with constants")
                if isinstance(n, exp.Mul):
                    const, inner = (left_const, n.expression) if left_const is not _NOT_CONSTANT else (right_const, n.this)
                    attr, s, d, o = walk(inner)
                    if d != 1 or o != 0 or s not in (1, -1):
                        raise bad("multiply first: f is evaluated as (x * k) / d + b")
                    return (attr, _mul(s, const), d, o)
                if isinstance(n, exp.Div):
                    if right_const is _NOT_CONSTANT:
                        raise bad("dividing by an attribute is not linear")
                    attr, s, d, o = walk(n.this)
                    if d != 1 or o != 0:
                        raise bad("divide before adding: f is evaluated as (x * k) / d + b")
                    return (attr, s, right_const if right_const is not None else 0, o)
                if isinstance(n, exp.Add):
                    const, inner = (left_const, n.expression) if left_const is not _NOT_CONSTANT else (right_const, n.this)
                    attr, s, d, o = walk(inner)
                    if o != 0:
                        raise bad("add one constant: f is evaluated as (x * k) / d + b")
                    return (attr, s, d, _nan_if_none(const))
                if right_const is not _NOT_CONSTANT:  # x - b
                    attr, s, d, o = walk(n.this)
                    if o != 0:
                        raise bad("add one constant: f is evaluated as (x * k) / d + b")
                    return (attr, s, d, _neg(right_const))
                attr, s, d, o = walk(n.expression)  # b - x == (-x) + b, exactly
                if o != 0:
                    raise bad("add one constant: f is evaluated as (x * k) / d + b")
                return (attr, -s, d, _nan_if_none(left_const))
            if _constant(n) is not _NOT_CONSTANT:
                raise bad("f must read an attribute of the previous event")
            raise bad(f"{n.key.upper()} is not a linear function")

        return walk(node)

    def _span(self, span: Span | None) -> tuple[Number | None, str | None]:
        if span is None:
            return None, None
        if span.unit in TIME_UNITS:
            return span.microseconds(), "TIME"
        value = span.value
        return (int(value) if float(value).is_integer() else float(value)), "UNITS"


class _NotConstant:
    def __repr__(self) -> str:
        return "<not constant>"


_NOT_CONSTANT = _NotConstant()


def _constant(node: exp.Expression) -> Number | None | _NotConstant:
    """The value of a constant numeric expression (None for NULL), or ``_NOT_CONSTANT``.

    Evaluated as the oracle's interpreter does: ``/`` divides as floats, a division by zero
    is NULL, an interval is its length in microseconds.
    """
    if isinstance(node, exp.Paren):
        return _constant(node.this)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return _NOT_CONSTANT
        text = str(node.this)
        try:
            return int(text)
        except ValueError:
            return float(text)
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Interval):
        unit = node.args.get("unit")
        name = (unit.name if unit is not None else "").upper()
        canonical = name if name.endswith("S") else name + "S"
        if canonical not in TIME_UNITS:
            return _NOT_CONSTANT
        amount = Decimal(str(node.this.name if isinstance(node.this, exp.Expression) else node.this))
        return int(round(amount * TIME_UNITS[canonical]))
    if isinstance(node, exp.Neg):
        inner = _constant(node.this)
        return inner if inner is None or inner is _NOT_CONSTANT else -inner
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div)):
        a, b = _constant(node.this), _constant(node.expression)
        if a is _NOT_CONSTANT or b is _NOT_CONSTANT:
            return _NOT_CONSTANT
        if a is None or b is None:
            return None
        if isinstance(node, exp.Add):
            return a + b
        if isinstance(node, exp.Sub):
            return a - b
        if isinstance(node, exp.Mul):
            return a * b
        return None if b == 0 else a / b
    return _NOT_CONSTANT


def _mul(scale: Number, const: Number | None) -> Number:
    if const is None:
        return math.nan
    return const if scale == 1 else -const


def _neg(const: Number | None) -> Number:
    return math.nan if const is None else -const


def _nan_if_none(const: Number | None) -> Number:
    return math.nan if const is None else const


def _conjuncts(node: exp.Expression) -> list[exp.Expression]:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    return [node]


def _plain(sql: str) -> str:
    """SQL with the placeholder backticks removed, as the analyst wrote the references."""
    return sql.replace("`", "")


def _num(value: Number) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _indexed(ref: AttrRef | TsRef) -> str:
    if isinstance(ref, TsRef):
        return f"t({ref.alias}[i])"
    return f"{ref.alias}[i].{ref.attr}"


def _quant(node: Kleene) -> str:
    if node.max is None:
        return "*" if node.min == 0 else f"{{{node.min},}}"
    if node.min == 0 and node.max == 1:
        return "?"
    return f"{{{node.min}}}" if node.min == node.max else f"{{{node.min},{node.max}}}"


def _construct(node: object) -> str:
    from cep.lang.ast import And, Not, Or, Seq

    if isinstance(node, Seq):
        return f"a sequence (';' or SEQ) of {len(node.parts)} components"
    if isinstance(node, And):
        return f"AND of {len(node.parts)} parts"
    if isinstance(node, Or):
        return f"OR of {len(node.parts)} parts"
    if isinstance(node, Not):
        return "NOT(...)"
    if isinstance(node, Kleene):
        return "a nested quantifier"
    return type(node).__name__
