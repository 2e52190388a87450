"""The pattern language: tokenizer, parser, AST, conditions and validation (DESIGN.md section 3).

A compiler-shaped pipeline, one stage per module; no stage imports a later one::

    text --limits--> --tokens--> --parser--> Query --validate--> Query (checked)
                                     \\--conditions (sqlglot)--/

The parser stage is :mod:`cep.lang.parser` (the query) with :mod:`cep.lang.pattern`,
:mod:`cep.lang.clauses` and :mod:`cep.lang.aliases` over a :mod:`cep.lang.cursor`; the
conditions stage is :mod:`cep.lang.where_clause` (WHERE and ``@(...)``) and
:mod:`cep.lang.conditions` (one condition) over :mod:`cep.lang.placeholders` and
:mod:`cep.lang.words`.

The AST is :mod:`cep.lang.ast` (nodes) and :mod:`cep.lang.query` (the root, ``Query``);
:mod:`cep.lang.printer` renders both. Public entry points, in :mod:`cep.lang.pipeline`, are
:func:`parse_pattern` (syntax plus every check that needs no schema) and
:func:`validate_pattern` (adds column and class checks). Every failure is a
:class:`PatternError` with a stable code, a 1-based line and column and a caret snippet.

Example:
    >>> q = parse_pattern("PATTERN Google; Microsoft+ WHERE Google.value < Microsoft.value WITHIN 5 UNITS")
    >>> [c.sql for c in q.conditions]
    ['`Google.value` < `Microsoft.value`']
    >>> validate_pattern(q, columns=["type", "ts", "value"]) is q
    True
"""

from __future__ import annotations

from cep.lang.ast import (
    FOLLOWED,
    NEXT,
    POLICIES,
    AggRef,
    And,
    AttrRef,
    Condition,
    Define,
    Equivalence,
    Event,
    Index,
    IterRef,
    Kleene,
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
    events,
    walk,
)
from cep.lang.conditions import parse_condition
from cep.lang.errors import PatternError, PatternLimitError, PatternSemanticError, PatternSyntaxError
from cep.lang.limits import DEFAULT_LIMITS, Limits
from cep.lang.pipeline import parse_pattern, validate_pattern
from cep.lang.printer import dump, format_pattern, format_query
from cep.lang.query import Query

__all__ = [
    "DEFAULT_LIMITS",
    "FOLLOWED",
    "NEXT",
    "POLICIES",
    "AggRef",
    "And",
    "AttrRef",
    "Condition",
    "Define",
    "Equivalence",
    "Event",
    "Index",
    "IterRef",
    "Kleene",
    "Limits",
    "Not",
    "Or",
    "PatternError",
    "PatternLimitError",
    "PatternNode",
    "PatternSemanticError",
    "PatternSyntaxError",
    "Query",
    "Ref",
    "Seq",
    "Span",
    "Timed",
    "TsRef",
    "VarRef",
    "WindowBounds",
    "dump",
    "events",
    "format_pattern",
    "format_query",
    "parse_condition",
    "parse_pattern",
    "validate_pattern",
    "walk",
]
