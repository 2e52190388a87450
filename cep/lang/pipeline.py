"""The public entry points of the pattern language: parse, then check.

The stages are separate modules that do not know each other: :mod:`cep.lang.parser` turns
text into a :class:`~cep.lang.query.Query` (syntax), :mod:`cep.lang.validate` checks a Query
(meaning, and the schema when given). This module runs them in that order::

    parse_pattern(text)       = parse_syntax(text) -> check_structure(query)
    validate_pattern(query)   = [parse_pattern, if text] -> check_query(query, columns, classes)

Example:
    >>> q = parse_pattern("PATTERN a; b WHERE a.price < b.price WITHIN 5 MINUTES")
    >>> validate_pattern(q, columns=["type", "ts", "price"]) is q
    True
"""

from __future__ import annotations

from collections.abc import Sequence

from cep.lang.errors import E_TOO_DEEP, PatternLimitError
from cep.lang.limits import DEFAULT_LIMITS, Limits
from cep.lang.parser import parse_syntax
from cep.lang.query import Query
from cep.lang.validate import check_query, check_structure


def parse_pattern(text: str, *, limits: Limits = DEFAULT_LIMITS) -> Query:
    """Parse a pattern query and run every check that needs no schema.

    Args:
        text: the query, e.g. ``"PATTERN a; b+ WHERE a.x < b.x WITHIN 5 MINUTES"``.
        limits: size and complexity bounds, checked before parsing.

    Returns:
        The query AST.

    Raises:
        PatternSyntaxError: the text does not follow the grammar.
        PatternSemanticError: it parses but is meaningless (undefined alias, NOT at the end, ...).
        PatternLimitError: it exceeds a limit.

    Example:
        >>> q = parse_pattern("PATTERN check+ c[] WHERE c[i].src = c[i-1].dest WITHIN 1 WEEK SLIDE 1 DAY")
        >>> q.pattern
        Kleene(part=Event(cls='check', alias='c', iter_alias=True, span=(8, 18)), min=1, max=None, span=(8, 18))
        >>> [c.sql for c in q.conditions], str(q.within), str(q.slide)
        (['`c[i].src` = `c[i-1].dest`'], '1 WEEK', '1 DAY')
    """
    query = parse_syntax(text, limits=limits)
    try:
        check_structure(query, limits)
    except RecursionError:
        # As in parse_syntax: the limits keep the checks well inside Python's stack; this only
        # fires when the caller itself is already nearly out of stack.
        raise PatternLimitError(E_TOO_DEEP, "pattern is too deeply nested to parse here", text, 0, 1) from None
    return query


def validate_pattern(
    query: Query | str,
    columns: Sequence[str] | None = None,
    classes: Sequence[str] | None = None,
    *,
    limits: Limits = DEFAULT_LIMITS,
) -> Query:
    """Check a query against the structure rules and, when given, the table's schema.

    Args:
        query: a parsed query, or pattern text (parsed first, with :func:`parse_pattern`).
        columns: the event table's columns; every attribute and ``[attr]`` must be one of them.
        classes: the known event classes (values of the type column); every class that DEFINE
            does not define must be one of them.
        limits: size and complexity bounds.

    Returns:
        The query, unchanged, so calls can be chained.

    Raises:
        PatternError: the first problem in text order.

    Example:
        >>> validate_pattern("PATTERN a; b", classes=["a", "c"])
        Traceback (most recent call last):
        ...
        cep.lang.errors.PatternSemanticError: CEP-PAT-219: line 1, column 12: unknown event class 'b'; known classes: a, c
            PATTERN a; b
                       ^
    """
    if isinstance(query, str):
        query = parse_pattern(query, limits=limits)
    check_query(query, columns, classes, limits=limits)
    return query
