"""Printers for the AST: a stable debug tree (golden files) and pattern text (round trips).

``dump`` shows every field that matters, one node per line, with spans as ``[start:end)``
offsets, so a golden file both pins the structure and checks positions. ``format_query`` writes
pattern text that parses back to an equal query: it quotes names when needed, adds parentheses
where precedence requires them (``|`` < ``&`` < ``;``/``,`` < element) and writes conditions as
their original text (a WHERE conjunct whose top level is ``OR`` is wrapped in parentheses).

Example:
    >>> from cep.lang import parse_pattern
    >>> q = parse_pattern("PATTERN SEQ(A, OR(B, C), NOT(D), E) WITHIN 100 EVENTS")
    >>> format_query(q)
    'PATTERN A; (B | C); NOT(D); E WITHIN 100 EVENTS'
    >>> print(dump(q.pattern))
    Seq [8:35) links=followed,followed,followed
      Event cls='A' alias='A' [12:13)
      Or [15:23)
        Event cls='B' alias='B' [18:19)
        Event cls='C' alias='C' [21:22)
      Not [25:31)
        Event cls='D' alias='D' [29:30)
      Event cls='E' alias='E' [33:34)
"""

from __future__ import annotations

from typing import Protocol

from sqlglot import exp

from cep.lang.ast import (
    NEXT,
    AggRef,
    And,
    AttrRef,
    Condition,
    Define,
    Equivalence,
    Event,
    IterRef,
    Kleene,
    Loc,
    Not,
    Or,
    PatternNode,
    Ref,
    Seq,
    Span,
    Timed,
    TsRef,
    VarRef,
    WindowBounds,
    quote_name,
)


class QueryFields(Protocol):
    """What the printer reads of a :class:`cep.lang.query.Query`.

    A protocol, not an import: ``Query.dump()`` and ``Query.to_text()`` call this module, so
    importing ``cep.lang.query`` here would make the two modules import each other.
    """

    @property
    def pattern(self) -> PatternNode: ...
    @property
    def defines(self) -> tuple[Define, ...]: ...
    @property
    def conditions(self) -> tuple[Condition, ...]: ...
    @property
    def policy(self) -> str | None: ...
    @property
    def equivalences(self) -> tuple[Equivalence, ...]: ...
    @property
    def within(self) -> Span | None: ...
    @property
    def slide(self) -> Span | None: ...
    @property
    def window(self) -> WindowBounds | None: ...
    @property
    def span(self) -> Loc: ...


_PATTERN_NODES = (Event, Seq, And, Or, Not, Kleene, Timed)

_RESERVED = frozenset({"PATTERN", "DEFINE", "WHERE", "WITHIN", "SLIDE", "WINDOW", "AS"})
_OPERATOR_WORDS = frozenset({"SEQ", "AND", "OR", "NOT"})


def _loc(span: tuple[int, int]) -> str:
    return f"[{span[0]}:{span[1]})"


# ---------------------------------------------------------------------------------------------
# dump
# ---------------------------------------------------------------------------------------------


def dump(node: QueryFields | PatternNode | Condition) -> str:
    """Render a query, pattern or condition as an indented, stable tree.

    Args:
        node: what to render.

    Returns:
        The text, one node per line, without a trailing newline.
    """
    lines: list[str] = []
    if isinstance(node, Condition):
        _dump_condition(node, lines, 0)
    elif isinstance(node, _PATTERN_NODES):
        _dump_pattern(node, lines, 0)
    else:  # a Query (see QueryFields for why it is not named here)
        _dump_query(node, lines)
    return "\n".join(lines)


def _dump_query(q: QueryFields, out: list[str]) -> None:
    out.append(f"Query {_loc(q.span)}")
    out.append("  pattern:")
    _dump_pattern(q.pattern, out, 2)
    out.append("  defines:" + ("" if q.defines else " -"))
    for d in q.defines:
        _dump_define(d, out, 2)
    out.append("  where:" + ("" if q.conditions else " -"))
    for c in q.conditions:
        _dump_condition(c, out, 2)
    out.append(f"  policy: {q.policy or '-'}")
    out.append("  equivalences:" + ("" if q.equivalences else " -"))
    for e in q.equivalences:
        out.append(f"    [{e.attr}] {_loc(e.span)}")
    out.append(f"  within: {_span_text(q.within)}")
    out.append(f"  slide: {_span_text(q.slide)}")
    out.append(f"  window: {_window_text(q.window)}")


def _span_text(span: Span | None) -> str:
    if span is None:
        return "-"
    us = span.microseconds()
    extra = f", {us} us" if us is not None else ""
    return f"{span} ({span.kind}{extra}) {_loc(span.span)}"


def _window_text(win: WindowBounds | None) -> str:
    if win is None:
        return "-"
    return f"[{win.start!r}, {win.end!r}] ({win.kind}) {_loc(win.span)}"


def _dump_define(d: Define, out: list[str], depth: int) -> None:
    pad = "  " * depth
    out.append(f"{pad}Define cls={d.cls!r} {_loc(d.span)}")
    _dump_condition(d.condition, out, depth + 1)


def _dump_condition(c: Condition, out: list[str], depth: int) -> None:
    pad = "  " * depth
    out.append(f"{pad}Condition {_loc(c.span)} {c.text!r}")
    out.append(f"{pad}  sql: {c.sql}")
    out.append(f"{pad}  single_event: {str(c.single_event).lower()}")
    aliases = ", ".join(sorted(c.aliases)) or "-"
    out.append(f"{pad}  aliases: {aliases}")
    for ref in c.refs:
        out.append(f"{pad}  ref {_ref_text(ref)} {_loc(ref.span)}")


def _ref_text(ref: Ref) -> str:
    if isinstance(ref, AttrRef):
        return f"AttrRef alias={ref.alias!r} attr={ref.attr!r}"
    if isinstance(ref, IterRef):
        return f"IterRef alias={ref.alias!r} index={ref.index} attr={ref.attr!r}"
    if isinstance(ref, AggRef):
        upto = "all" if ref.upto is None else f"..{ref.upto}"
        return f"AggRef func={ref.func} alias={ref.alias!r} range={upto} attr={ref.attr!r}"
    if isinstance(ref, TsRef):
        idx = "" if ref.index is None else f" index={ref.index}"
        return f"TsRef alias={ref.alias!r}{idx}"
    assert isinstance(ref, VarRef)
    return f"VarRef ${ref.var}"


def _dump_pattern(node: PatternNode, out: list[str], depth: int) -> None:
    pad = "  " * depth
    if isinstance(node, Event):
        marker = " iter_alias" if node.iter_alias else ""
        out.append(f"{pad}Event cls={node.cls!r} alias={node.alias!r}{marker} {_loc(node.span)}")
    elif isinstance(node, Seq):
        out.append(f"{pad}Seq {_loc(node.span)} links={','.join(node.links)}")
        for part in node.parts:
            _dump_pattern(part, out, depth + 1)
    elif isinstance(node, (And, Or)):
        out.append(f"{pad}{type(node).__name__} {_loc(node.span)}")
        for part in node.parts:
            _dump_pattern(part, out, depth + 1)
    elif isinstance(node, Not):
        out.append(f"{pad}Not {_loc(node.span)}")
        _dump_pattern(node.part, out, depth + 1)
    elif isinstance(node, Kleene):
        hi = "inf" if node.max is None else str(node.max)
        out.append(f"{pad}Kleene min={node.min} max={hi} {_loc(node.span)}")
        _dump_pattern(node.part, out, depth + 1)
    elif isinstance(node, Timed):
        out.append(f"{pad}Timed {_loc(node.span)}")
        _dump_pattern(node.part, out, depth + 1)
        for c in node.conditions:
            _dump_condition(c, out, depth + 1)


# ---------------------------------------------------------------------------------------------
# pattern text
# ---------------------------------------------------------------------------------------------

_OR, _AND, _SEQ, _ITEM = range(4)


def _name(name: str, alias: bool) -> str:
    reserved = _RESERVED | _OPERATOR_WORDS if alias else _RESERVED
    if quote_name(name) == name and name.upper() not in reserved:
        return name
    return '"' + name.replace('"', '""') + '"'


def _attr(name: str) -> str:
    # Inside [attr] a name is an identifier or backtick-quoted, as in conditions.
    return name if quote_name(name) == name else "`" + name.replace("`", "``") + "`"


def _quant(node: Kleene) -> str:
    lo, hi = node.min, node.max
    if (lo, hi) == (0, None):
        return "*"
    if (lo, hi) == (1, None):
        return "+"
    if (lo, hi) == (0, 1):
        return "?"
    if lo == hi:
        return f"{{{lo}}}"
    return f"{{{lo},{'' if hi is None else hi}}}"


def _event(ev: Event, quant: str = "") -> str:
    text = _name(ev.cls, alias=False)
    if ev.alias != ev.cls:
        text += " " + _name(ev.alias, alias=True)
    # The marker and the quantifier follow the alias ("check c[]+"), which parses the same as
    # the documented "check+ c[]".
    return text + ("[]" if ev.iter_alias else "") + quant


def format_pattern(node: PatternNode, level: int = _OR, in_args: bool = False) -> str:
    """Write a pattern tree as text; ``level`` is the precedence the context requires."""
    if isinstance(node, Event):
        return _event(node)
    if isinstance(node, Kleene):
        if isinstance(node.part, Event):
            return _event(node.part, _quant(node))
        return "(" + format_pattern(node.part) + ")" + _quant(node)
    if isinstance(node, Timed):
        inner = node.part
        head = format_pattern(inner) if isinstance(inner, (Event, Kleene)) else "(" + format_pattern(inner) + ")"
        return head + "".join(f" @({c.text})" for c in node.conditions)
    if isinstance(node, Not):
        return "NOT(" + format_pattern(node.part, _OR, in_args=True) + ")"
    if isinstance(node, Seq):
        text = ""
        for idx, part in enumerate(node.parts):
            if idx:
                text += ", " if node.links[idx - 1] == NEXT else "; "
            text += format_pattern(part, _ITEM)
        needs = level > _SEQ or (in_args and NEXT in node.links)
        return f"({text})" if needs else text
    if isinstance(node, And):
        text = " & ".join(format_pattern(p, _SEQ, in_args) for p in node.parts)
        return f"({text})" if level > _AND else text
    assert isinstance(node, Or)
    text = " | ".join(format_pattern(p, _AND, in_args) for p in node.parts)
    return f"({text})" if level > _OR else text


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _bound(value: int | str) -> str:
    return str(value) if isinstance(value, int) else "'" + value.replace("'", "''") + "'"


def format_query(q: QueryFields) -> str:
    """Write a query as pattern text that parses back to an equal query.

    Example:
        >>> from cep.lang import parse_pattern
        >>> format_query(parse_pattern("pattern stock+ s[] where [id] and s[i].p > s[i-1].p within 1 hour"))
        'PATTERN stock s[]+ WHERE [id] AND s[i].p > s[i-1].p WITHIN 1 HOURS'
    """
    parts = ["PATTERN " + format_pattern(q.pattern)]
    if q.defines:
        parts.append("DEFINE " + ", ".join(f"{_name(d.cls, alias=False)} AS {d.condition.text}" for d in q.defines))
    conjuncts: list[str] = []
    if q.policy:
        conjuncts.append(q.policy)
    conjuncts.extend(f"[{_attr(e.attr)}]" for e in q.equivalences)
    many = len(conjuncts) + len(q.conditions) > 1
    for c in q.conditions:
        conjuncts.append(f"({c.text})" if many and isinstance(c.expr, exp.Or) else c.text)
    if conjuncts:
        parts.append("WHERE " + " AND ".join(conjuncts))
    if q.within is not None:
        parts.append(f"WITHIN {_number(q.within.value)} {q.within.unit}")
    if q.slide is not None:
        parts.append(f"SLIDE {_number(q.slide.value)} {q.slide.unit}")
    if q.window is not None:
        parts.append(f"WINDOW [{_bound(q.window.start)}, {_bound(q.window.end)}]")
    return " ".join(parts)
