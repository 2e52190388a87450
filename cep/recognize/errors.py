"""Errors of MATCH_RECOGNIZE: a stable code, the line and column in the statement, a caret.

Positions are offsets into the whole SQL statement the clause came from, so the caret points
into what the analyst wrote (the machinery is :class:`cep.lang.errors.PatternError`)::

    CEP-MR-106: line 3, column 17: a quantifier cannot follow a quantifier; bracket the term first
          PATTERN (A{2}{3})
                      ^~~

Error codes (stable; the docs and tests search for them):

=============  ========  =============================================================
code           class     meaning
=============  ========  =============================================================
CEP-MR-001     limit     row pattern text longer than the maximum
CEP-MR-002     limit     row pattern nested deeper than the maximum
CEP-MR-003     limit     the compiled automaton would exceed the maximum size
CEP-MR-004     limit     more alive threads in one partition than the maximum, or (with a
                         DEFINE that reads the match) more thread steps than the maximum
CEP-MR-005     limit     more output rows from one partition than the maximum
CEP-MR-101     syntax    a character that is not part of the row pattern grammar
CEP-MR-102     syntax    unexpected token (the message says what was expected)
CEP-MR-103     syntax    unterminated double-quoted variable name
CEP-MR-104     syntax    bracket opened but never closed
CEP-MR-105     syntax    malformed quantifier bounds (``{}``, ``{a}``, ``{3,2}``)
CEP-MR-106     syntax    a quantifier directly after a quantifier (``A{2}{3}``)
CEP-MR-107     syntax    the clause itself is malformed (missing PATTERN, clause twice, ...)
CEP-MR-108     syntax    Spark cannot parse the statement once its clauses are rewritten (a
                         syntax error elsewhere in it; raised by the JVM shim's parser)
CEP-MR-109     setup     a MATCH_RECOGNIZE statement in a session started without the JVM
                         shim (``sql_ext.configure(builder)`` adds it; docs/install.md)
CEP-MR-201     semantic  a variable defined, skipped to or used in a measure that is unknown
CEP-MR-202     semantic  a SUBSET name that is also a primary variable, or defined twice
CEP-MR-203     semantic  AFTER MATCH SKIP would start the next match where this one started
CEP-MR-204     semantic  AFTER MATCH SKIP TO a variable that matched no row
CEP-MR-205     semantic  a construct the engine does not support yet (the message says which)
CEP-MR-206     semantic  WITH UNMATCHED ROWS together with a pattern exclusion
CEP-MR-207     semantic  a DEFINE or MEASURES expression that is malformed or not allowed
CEP-MR-208     analysis  a column the rows do not have (raised by the JVM shim's
                         ``RewrittenErrorsRule`` once Spark has resolved the statement)
CEP-MR-209     analysis  an expression whose input types do not fit (the same rule)
CEP-MR-210     analysis  a source table or view the catalog does not have (the same rule)
=============  ========  =============================================================
"""

from __future__ import annotations

from cep.lang.errors import PatternError

__all__ = ["RowPatternError", "RowPatternLimitError", "RowPatternSemanticError",
           "RowPatternSyntaxError"]

E_TOO_LONG = "CEP-MR-001"
E_TOO_DEEP = "CEP-MR-002"
E_PROGRAM_TOO_LARGE = "CEP-MR-003"
E_TOO_MANY_THREADS = "CEP-MR-004"
E_TOO_MUCH_OUTPUT = "CEP-MR-005"
E_BAD_CHARACTER = "CEP-MR-101"
E_UNEXPECTED = "CEP-MR-102"
E_UNTERMINATED_NAME = "CEP-MR-103"
E_UNCLOSED = "CEP-MR-104"
E_BAD_BOUNDS = "CEP-MR-105"
E_DOUBLE_QUANTIFIER = "CEP-MR-106"
E_CLAUSE = "CEP-MR-107"
E_NO_SHIM = "CEP-MR-109"
E_UNKNOWN_VARIABLE = "CEP-MR-201"
E_BAD_SUBSET = "CEP-MR-202"
E_SKIP_LOOPS = "CEP-MR-203"
E_SKIP_TARGET_EMPTY = "CEP-MR-204"
E_UNSUPPORTED = "CEP-MR-205"
E_UNMATCHED_EXCLUSION = "CEP-MR-206"
E_BAD_EXPRESSION = "CEP-MR-207"


class RowPatternError(PatternError):
    """A MATCH_RECOGNIZE clause failed; ``code``, ``line``, ``column`` and ``snippet`` say where.

    Example:
        >>> err = RowPatternSyntaxError(E_UNEXPECTED, "expected ')'", "PATTERN (A", 10, 10)
        >>> (err.code, err.line, err.column)
        ('CEP-MR-102', 1, 11)
    """

    code = "CEP-MR-000"


class RowPatternSyntaxError(RowPatternError):
    """The clause or its row pattern does not follow the grammar."""


class RowPatternSemanticError(RowPatternError):
    """The clause parses but cannot mean anything (unknown variable, looping skip, ...)."""


class RowPatternLimitError(RowPatternError):
    """A size limit that protects the compiler and the matcher was reached."""
