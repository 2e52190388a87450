"""Semantic checks of a parsed query: structure (no schema needed) and schema (columns, classes).

This is the stage after :mod:`cep.lang.parser` and imports nothing of it; :mod:`cep.lang.pipeline`
runs the two in order. ``parse_pattern`` runs :func:`check_structure`; ``validate_pattern`` runs
:func:`check_query`, which runs it again (so a hand-built Query is checked too) and adds the
checks that need the event table's columns and the known event classes. All problems found are
sorted by position and the first is raised, so an analyst fixes a pattern from left to right.

Rules beyond the obvious ones:

- an alias is *iterable* when its event sits under a quantifier that can repeat (``max`` None or
  > 1); only iterable aliases may be indexed (``b[i]``) or aggregated (``avg(b[..i-1].x)``);
  an unindexed ``b.x`` on an iterable alias means "every iteration";
- one condition may use the iteration variable ``i`` of one alias only;
- NOT may not be the first component; it may be the last only with WITHIN; a quantifier over
  NOT and NOT of NOT are rejected;
- a quantifier over something that can match the empty sequence (``(A*)*``, ``(A?)+``) and a
  pattern that as a whole can match the empty sequence are rejected;
- attribute names are compared to columns case-insensitively, as Spark resolves them.

Example:
    >>> from cep.lang import parse_pattern
    >>> q = parse_pattern("PATTERN a; b WHERE a.prce < b.price")
    >>> check_query(q, columns=["type", "ts", "price"])
    Traceback (most recent call last):
    ...
    cep.lang.errors.PatternSemanticError: CEP-PAT-203: line 1, column 20: unknown attribute 'prce' of alias a; the event table has columns: type, ts, price (did you mean 'price'?)
        PATTERN a; b WHERE a.prce < b.price
                           ^~~~~~
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence

from cep.lang.ast import (
    EVENTS,
    AggRef,
    AttrRef,
    Event,
    IterRef,
    Kleene,
    Not,
    Or,
    PatternNode,
    Seq,
    Span,
    Timed,
    TsRef,
    VarRef,
    children,
    events,
    walk,
)
from cep.lang.errors import (
    E_AGGREGATE_NOT_ITERABLE,
    E_BAD_BOUNDS,
    E_BAD_INDEX,
    E_BAD_NOT,
    E_BAD_SPAN,
    E_BAD_WINDOW,
    E_EMPTY_MATCH,
    E_EVENTS_NOT_INTEGER,
    E_MARKER_NOT_REPEATED,
    E_NOT_FIRST,
    E_NOT_ITERABLE,
    E_NOT_LAST,
    E_NULLABLE_KLEENE,
    E_REPEAT_TOO_LARGE,
    E_SLIDE_KIND,
    E_SLIDE_TOO_LARGE,
    E_SLIDE_WITHOUT_WITHIN,
    E_UNDEFINED_ALIAS,
    E_UNKNOWN_ATTRIBUTE,
    E_UNKNOWN_CLASS,
    E_UNUSED_DEFINE,
    PatternError,
    PatternLimitError,
    PatternSemanticError,
)
from cep.lang.limits import DEFAULT_LIMITS, Limits
from cep.lang.query import Query

# Longest span in microseconds we accept: int64 microseconds, as Spark timestamps are.
_MAX_MICROS = 2**63 - 1


def check_query(
    query: Query,
    columns: Sequence[str] | None = None,
    classes: Sequence[str] | None = None,
    *,
    limits: Limits = DEFAULT_LIMITS,
) -> None:
    """Check a parsed query against the structure rules and, when given, the table's schema.

    :func:`cep.lang.pipeline.validate_pattern` is the public entry point (it also takes text).

    Args:
        query: a parsed or hand-built query.
        columns: the event table's columns; every attribute and ``[attr]`` must be one of them.
        classes: the known event classes (values of the type column); every class that DEFINE
            does not define must be one of them.
        limits: size and complexity bounds.

    Raises:
        PatternError: the first problem in text order.
    """
    problems = list(_structure(query, limits))
    if columns is not None:
        problems.extend(_columns(query, [str(c) for c in columns]))
    if classes is not None:
        problems.extend(_classes(query, [str(c) for c in classes]))
    _raise_first(problems)


def check_structure(query: Query, limits: Limits = DEFAULT_LIMITS) -> None:
    """Run every check that needs no schema; raise the first problem in text order."""
    _raise_first(list(_structure(query, limits)))


def _raise_first(problems: list[PatternError]) -> None:
    if problems:
        raise min(problems, key=lambda e: (e.offset, e.code))


def _name_extent(text: str, start: int) -> tuple[int, int]:
    """The extent of the (possibly quoted) name starting at ``start``, for a tight caret."""
    if start >= len(text):
        return (start, start)
    quote = text[start]
    if quote in "\"`":
        close = text.find(quote, start + 1)
        while close >= 0 and close + 1 < len(text) and text[close + 1] == quote:
            close = text.find(quote, close + 2)
        return (start, close + 1 if close >= 0 else len(text))
    end = start
    while end < len(text) and (text[end] == "_" or text[end].isalnum()):
        end += 1
    return (start, max(end, start + 1))


def _err(query: Query, code: str, message: str, span: tuple[int, int] | None) -> PatternSemanticError:
    start, end = span if span is not None else (0, 0)
    return PatternSemanticError(code, message, query.text, start, end if end > start else None)


# ---------------------------------------------------------------------------------------------
# Structure
# ---------------------------------------------------------------------------------------------


def _structure(query: Query, limits: Limits) -> Iterator[PatternError]:
    yield from _quantifiers(query, limits)
    yield from _negations(query)
    yield from _markers(query)
    yield from _references(query)
    yield from _windows(query)
    yield from _defines(query)


def iterable_aliases(pattern: PatternNode) -> dict[str, Kleene]:
    """Map each alias under a repeating quantifier to the innermost such quantifier."""
    out: dict[str, Kleene] = {}
    stack: list[tuple[PatternNode, Kleene | None]] = [(pattern, None)]
    while stack:
        node, kleene = stack.pop()
        if isinstance(node, Kleene) and (node.max is None or node.max > 1):
            kleene = node
        if isinstance(node, Event) and kleene is not None:
            out[node.alias] = kleene
        stack.extend((child, kleene) for child in children(node))
    return out


def nullable(node: PatternNode) -> bool:
    """True if ``node`` can match the empty sequence (NOT matches no event by itself)."""
    if isinstance(node, Event):
        return False
    if isinstance(node, Not):
        return True
    if isinstance(node, Kleene):
        return node.min == 0 or nullable(node.part)
    if isinstance(node, Timed):
        return nullable(node.part)
    if isinstance(node, Or):
        return any(nullable(p) for p in node.parts)
    return all(nullable(p) for p in node.parts)  # Seq, And


def _quantifiers(query: Query, limits: Limits) -> Iterator[PatternError]:
    for node in walk(query.pattern):
        if not isinstance(node, Kleene):
            continue
        where = node.quant_span or node.span
        bounds = f"{{{node.min},{'' if node.max is None else node.max}}}"
        if node.min < 0 or (node.max is not None and node.max < 0):
            yield _err(query, E_BAD_BOUNDS, f"quantifier bounds cannot be negative, found {bounds}", where)
        elif node.max is not None and node.max == 0:
            yield _err(query, E_BAD_BOUNDS, "a quantifier with maximum 0 matches nothing; remove the element", where)
        elif node.max is not None and node.min > node.max:
            yield _err(
                query,
                E_BAD_BOUNDS,
                f"quantifier minimum {node.min} is larger than its maximum {node.max}",
                where,
            )
        elif max(node.min, node.max or 0) > limits.max_repeat:
            yield PatternLimitError(
                E_REPEAT_TOO_LARGE,
                f"quantifier bound {max(node.min, node.max or 0)} exceeds the maximum repeat count {limits.max_repeat}",
                query.text,
                *where,
            )
        if isinstance(node.part, Not) or (isinstance(node.part, Timed) and isinstance(node.part.part, Not)):
            yield _err(query, E_BAD_NOT, "a quantifier cannot repeat a NOT; write NOT(A+) to forbid A", where)
        elif nullable(node.part):
            yield _err(
                query,
                E_NULLABLE_KLEENE,
                "this quantifier repeats a pattern that can match the empty sequence (as in (A*)* or (A?)+), "
                "which has infinitely many ways to match; make the inner pattern match at least one event",
                where,
            )
    if nullable(query.pattern):
        yield _err(
            query,
            E_EMPTY_MATCH,
            "the pattern can match the empty sequence; at least one event must be required (use + instead of *)",
            query.pattern.span,
        )


def _negations(query: Query) -> Iterator[PatternError]:
    """NOT placement: the first and last components of the match, NOT of NOT."""
    stack: list[tuple[PatternNode, bool, bool]] = [(query.pattern, True, True)]
    while stack:
        node, first, last = stack.pop()
        if isinstance(node, Not):
            if isinstance(node.part, Not):
                yield _err(query, E_BAD_NOT, "NOT of a NOT is not allowed", node.span)
            if first:
                yield _err(
                    query,
                    E_NOT_FIRST,
                    "a pattern cannot start with NOT (there is no earlier event to measure 'between' from)",
                    node.span,
                )
            elif last and query.within is None:
                yield _err(
                    query,
                    E_NOT_LAST,
                    "a pattern can end with NOT only with a WITHIN window "
                    "(then: no such event until the window closes)",
                    node.span,
                )
            continue
        if isinstance(node, Seq):
            n = len(node.parts)
            for idx, part in enumerate(node.parts):
                stack.append((part, first and idx == 0, last and idx == n - 1))
        else:
            stack.extend((child, first, last) for child in children(node))


def _markers(query: Query) -> Iterator[PatternError]:
    iterable = iterable_aliases(query.pattern)
    for ev in events(query.pattern):
        if ev.iter_alias and ev.alias not in iterable:
            yield _err(
                query,
                E_MARKER_NOT_REPEATED,
                f"'{ev.alias}[]' marks an iteration alias, "
                f"but {ev.cls} is not under a repeating quantifier (+, *, {{n}})",
                ev.span,
            )


def _references(query: Query) -> Iterator[PatternError]:
    aliases = query.aliases()
    known = set(aliases)
    iterable = iterable_aliases(query.pattern)
    for cond in query.all_conditions():
        indexed: str | None = None  # the alias whose iteration variable i this condition uses
        for ref in cond.refs:
            if isinstance(ref, VarRef) or ref.alias is None:
                continue
            if ref.alias not in known:
                close = difflib.get_close_matches(ref.alias, aliases, n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                yield _err(
                    query,
                    E_UNDEFINED_ALIAS,
                    f"alias '{ref.alias}' is not defined; the pattern's aliases are {', '.join(aliases)}{hint}",
                    ref.span,
                )
                continue
            index = getattr(ref, "index", None)
            if isinstance(ref, AggRef):
                if ref.alias not in iterable:
                    yield _err(
                        query,
                        E_AGGREGATE_NOT_ITERABLE,
                        f"{ref.func}() aggregates over iterations, "
                        f"but '{ref.alias}' is not under a repeating quantifier",
                        ref.span,
                    )
                index = ref.upto
            elif isinstance(ref, (IterRef, TsRef)) and index is not None and ref.alias not in iterable:
                yield _err(
                    query,
                    E_NOT_ITERABLE,
                    f"'{ref.alias}' is not under a repeating quantifier (+, *, {{n}}), "
                    "so it has no iterations to index",
                    ref.span,
                )
                continue
            if index is None or ref.alias not in iterable:
                continue
            if index.relative:
                if indexed is None:
                    indexed = ref.alias
                elif indexed != ref.alias:
                    yield _err(
                        query,
                        E_BAD_INDEX,
                        "one condition can use the iteration variable i of one alias only; "
                        f"it already indexes '{indexed}'",
                        ref.span,
                    )
            else:
                kleene = iterable[ref.alias]
                if kleene.max is not None and index.offset > kleene.max:
                    yield _err(
                        query,
                        E_BAD_INDEX,
                        f"'{ref.alias}' has at most {kleene.max} iterations; index {index.offset} is out of range",
                        ref.span,
                    )


def _span_problems(query: Query, span: Span, name: str) -> Iterator[PatternError]:
    if not span.value > 0:
        yield _err(query, E_BAD_SPAN, f"{name} must be positive, found {span}", span.span)
    elif span.kind == EVENTS and not float(span.value).is_integer():
        yield _err(
            query,
            E_EVENTS_NOT_INTEGER,
            f"{name} in EVENTS must be a whole number, found {span.value}",
            span.span,
        )
    elif span.microseconds() is not None and span.microseconds() > _MAX_MICROS:  # type: ignore[operator]
        yield _err(query, E_BAD_SPAN, f"{name} {span} is too long", span.span)


def _windows(query: Query) -> Iterator[PatternError]:
    within, slide = query.within, query.slide
    if within is not None:
        yield from _span_problems(query, within, "WITHIN")
    if slide is not None:
        yield from _span_problems(query, slide, "SLIDE")
        if within is None:
            yield _err(query, E_SLIDE_WITHOUT_WITHIN, "SLIDE needs a WITHIN window to slide", slide.span)
        elif slide.kind != within.kind:
            yield _err(
                query,
                E_SLIDE_KIND,
                f"SLIDE is in {slide.kind} but WITHIN is in {within.kind}; use the same kind of unit",
                slide.span,
            )
        elif slide.magnitude() > within.magnitude():
            yield _err(query, E_SLIDE_TOO_LARGE, f"SLIDE {slide} is larger than WITHIN {within}", slide.span)
    win = query.window
    if win is not None:
        if win.kind == "POSITION":
            if int(win.start) < 0 or int(win.end) < 0:
                yield _err(query, E_BAD_WINDOW, "WINDOW positions are 0-based and cannot be negative", win.span)
            elif int(win.start) > int(win.end):
                yield _err(query, E_BAD_WINDOW, f"WINDOW start {win.start} is after its end {win.end}", win.span)
        else:
            try:
                lo, hi = win.microseconds()  # type: ignore[misc]
            except (ValueError, OverflowError):
                yield _err(query, E_BAD_WINDOW, "WINDOW timestamps are out of range", win.span)
                return
            if lo > hi:
                yield _err(query, E_BAD_WINDOW, f"WINDOW start {win.start} is after its end {win.end}", win.span)


def _defines(query: Query) -> Iterator[PatternError]:
    used = {ev.cls for ev in events(query.pattern)}
    for d in query.defines:
        if d.cls not in used:
            close = difflib.get_close_matches(d.cls, sorted(used), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            yield _err(
                query,
                E_UNUSED_DEFINE,
                f"DEFINE {d.cls}: the pattern has no class {d.cls}; its classes are {', '.join(sorted(used))}{hint}",
                _name_extent(query.text, d.span[0]),
            )


# ---------------------------------------------------------------------------------------------
# Schema
# ---------------------------------------------------------------------------------------------


def _listing(names: Sequence[str], limit: int = 30) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


def checked_classes(query: Query) -> list[str]:
    """The event classes a query reads from the type column, in order of first appearance.

    These are the names of the pattern's events (NOT's included) that DEFINE does not define:
    an event of such a class is one whose type value equals the name.

    Example:
        >>> from cep.lang.pipeline import parse_pattern
        >>> checked_classes(parse_pattern("PATTERN a; b; NOT(c); a DEFINE b AS v > 1"))
        ['a', 'c']
    """
    defined = {d.cls for d in query.defines}
    return list(dict.fromkeys(ev.cls for ev in events(query.pattern) if ev.cls not in defined))


def absent_class(query: Query, cls: str, near: str | None = None) -> PatternSemanticError:
    """The error for a class no event of the input carries, at the class's first use.

    Args:
        query: the parsed query.
        cls: one of :func:`checked_classes`.
        near: a type value of the input close to ``cls``, offered as "did you mean".

    Example:
        >>> from cep.lang.pipeline import parse_pattern
        >>> print(absent_class(parse_pattern("PATTERN O_Create Offer; O_Sent"), "O_Create",
        ...                    "O_Create Offer"))
        CEP-PAT-219: line 1, column 9: no event of the input has class 'O_Create' (did you mean 'O_Create Offer'? a name with spaces is written in double quotes: "O_Create Offer")
            PATTERN O_Create Offer; O_Sent
                    ^~~~~~~~
    """
    hint = ""
    if near is not None:
        hint = f" (did you mean '{near}'?"
        if not all(ch == "_" or ch.isalnum() for ch in near):
            quoted = near.replace('"', '""')
            hint += f' a name with spaces is written in double quotes: "{quoted}"'
        hint += ")"
    first = next(ev for ev in events(query.pattern) if ev.cls == cls)
    return _err(query, E_UNKNOWN_CLASS, f"no event of the input has class '{cls}'{hint}",
                _name_extent(query.text, first.span[0]))


def _columns(query: Query, columns: list[str]) -> Iterator[PatternError]:
    # `a.ts` and `a.type` always name the timestamp and type columns, whatever the table calls
    # them (docs/semantics.md, decision 9), so they exist in every table.
    lowered = {c.lower() for c in columns} | {"ts", "type"}

    def unknown(attr: str, span: tuple[int, int], owner: str) -> PatternError:
        close = difflib.get_close_matches(attr, columns, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        return _err(
            query,
            E_UNKNOWN_ATTRIBUTE,
            f"unknown attribute '{attr}'{owner}; the event table has columns: {_listing(columns)}{hint}",
            span,
        )

    for cond in query.all_conditions():
        for ref in cond.refs:
            if isinstance(ref, (AttrRef, IterRef, AggRef)) and ref.attr is not None and ref.attr.lower() not in lowered:
                owner = f" of alias {ref.alias}" if ref.alias is not None else ""
                yield unknown(ref.attr, ref.span, owner)
    for eq in query.equivalences:
        if eq.attr.lower() not in lowered:
            yield unknown(eq.attr, eq.span, " in an [attr] equivalence")


def _classes(query: Query, classes: list[str]) -> Iterator[PatternError]:
    known = set(classes)
    defined = {d.cls for d in query.defines}
    for ev in events(query.pattern):
        if ev.cls not in known and ev.cls not in defined:
            close = difflib.get_close_matches(ev.cls, classes, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            yield _err(
                query,
                E_UNKNOWN_CLASS,
                f"unknown event class '{ev.cls}'; known classes: {_listing(sorted(classes))}{hint}",
                _name_extent(query.text, ev.span[0]),
            )

