"""Errors of the pattern language: every failure names a stable code, a position and a snippet.

A SQL caller usually sees nothing but the message string, so ``str(err)`` carries everything:
the code, ``line L, column C``, the message, and the offending source line with a caret line
(``^~~~``) under the offending token::

    CEP-PAT-110: line 1, column 10: a quantifier needs a bound inside '{}', e.g. A{3} or A{2,5}
        PATTERN A{}; B
                 ^~

Error codes (stable; search for them in the docs and the tests):

=============  ========  =============================================================
code           class     meaning
=============  ========  =============================================================
CEP-PAT-001    limit     pattern text longer than the maximum length
CEP-PAT-002    limit     brackets nested deeper than the maximum depth
CEP-PAT-003    limit     more event components than the maximum
CEP-PAT-004    limit     a condition nested too deeply (brackets plus prefix operators)
CEP-PAT-005    limit     a quantifier bound above the maximum repeat count
CEP-PAT-006    limit     a condition with more operators than the maximum
CEP-PAT-100    syntax    the pattern is not a string
CEP-PAT-101    syntax    unterminated string literal or double-quoted name
CEP-PAT-102    syntax    unterminated backtick-quoted name
CEP-PAT-103    syntax    unterminated ``/* ... */`` comment
CEP-PAT-104    syntax    character that is not part of the language
CEP-PAT-105    syntax    the text does not start with PATTERN
CEP-PAT-106    syntax    unexpected token (the message says what was expected)
CEP-PAT-107    syntax    unexpected end of the pattern text
CEP-PAT-108    syntax    bracket opened but never closed
CEP-PAT-109    syntax    closing bracket without a matching opening one
CEP-PAT-110    syntax    malformed quantifier (``{}``, ``{a}``, ``A+*``, ...)
CEP-PAT-111    syntax    SEQ/AND/OR/NOT called with no arguments
CEP-PAT-112    syntax    NOT called with more than one argument
CEP-PAT-113    syntax    missing or unknown unit after a number (WITHIN, SLIDE, conditions)
CEP-PAT-114    syntax    malformed or out-of-range number
CEP-PAT-115    syntax    misplaced alias (alias twice, alias on a group, ``[]`` misuse)
CEP-PAT-116    syntax    clause repeated or out of order (DEFINE, WHERE, WITHIN, SLIDE, WINDOW)
CEP-PAT-117    syntax    a condition is not valid SQL (reported at the original position)
CEP-PAT-118    syntax    empty condition (``WHERE`` with nothing after it, ``@()``, ...)
CEP-PAT-119    syntax    forbidden SQL in a condition (subquery, statement, ``;``, aliasing)
CEP-PAT-120    syntax    function not on the allow-list, or an aggregate of the wrong shape
CEP-PAT-121    syntax    malformed reference (``b[x]``, ``b[i+1]``, ``$`` without a name, ...)
CEP-PAT-122    syntax    malformed or misplaced policy keyword or ``[attr]`` equivalence
CEP-PAT-123    syntax    malformed WINDOW bounds (not integers or timestamp strings)
CEP-PAT-124    syntax    unit not allowed in a condition (EVENTS), or below microsecond precision
CEP-PAT-125    syntax    a condition that is not boolean (``a.x + 1``)
CEP-PAT-126    syntax    a string escape that is no character (``'\\uD800'``, ``'\\U00110000'``)
CEP-PAT-127    syntax    a LIKE pattern Spark rejects (``\\`` before a character other than ``%``, ``_``, ``\\``, or last)
CEP-PAT-128    syntax    a double-quoted string in a condition with a backslash (write it in single quotes)
CEP-PAT-201    semantic  the same alias names two events
CEP-PAT-202    semantic  a condition uses an alias that no event has
CEP-PAT-203    semantic  an attribute that is not a column of the event table
CEP-PAT-204    semantic  iteration reference ``b[i]`` on an alias that is not under a Kleene quantifier
CEP-PAT-205    semantic  NOT as the first component of the pattern
CEP-PAT-206    semantic  NOT as the last component without a WITHIN window
CEP-PAT-207    semantic  invalid quantifier bounds (negative, min > max, max = 0)
CEP-PAT-208    semantic  Kleene quantifier over a pattern that can match nothing (``(A*)*``)
CEP-PAT-209    semantic  SLIDE without WITHIN
CEP-PAT-210    semantic  SLIDE larger than WITHIN
CEP-PAT-211    semantic  SLIDE unit kind differs from the WITHIN unit kind
CEP-PAT-212    semantic  zero, negative or out-of-range WITHIN / SLIDE span
CEP-PAT-213    semantic  invalid WINDOW bounds (start > end, negative, mixed kinds)
CEP-PAT-214    semantic  DEFINE for a class the pattern does not use
CEP-PAT-215    semantic  more than one selection policy keyword
CEP-PAT-216    semantic  attribute without an alias in WHERE or ``@(...)``
CEP-PAT-217    semantic  DEFINE condition that mentions another event, an iteration or an aggregate
CEP-PAT-218    semantic  the same class defined twice in DEFINE
CEP-PAT-219    semantic  event class that is not among the known classes
CEP-PAT-220    semantic  ``[]`` iteration marker on an event that is not repeated
CEP-PAT-221    semantic  NOT applied to a NOT, or a quantifier applied to a NOT
CEP-PAT-222    semantic  the whole pattern can match the empty sequence
CEP-PAT-223    semantic  aggregate over an alias that is not under a Kleene quantifier
CEP-PAT-224    semantic  EVENTS span that is not a whole number
CEP-PAT-225    semantic  invalid iteration index (``b[0]``, beyond ``{n}``, two ``i`` variables)
=============  ========  =============================================================
"""

from __future__ import annotations

from dataclasses import dataclass

from cep.errors import CepError

# Limits (PatternLimitError).
E_TOO_LONG = "CEP-PAT-001"
E_TOO_DEEP = "CEP-PAT-002"
E_TOO_MANY_COMPONENTS = "CEP-PAT-003"
E_CONDITION_TOO_DEEP = "CEP-PAT-004"
E_REPEAT_TOO_LARGE = "CEP-PAT-005"
E_CONDITION_TOO_LARGE = "CEP-PAT-006"
# Syntax (PatternSyntaxError).
E_NOT_A_STRING = "CEP-PAT-100"
E_UNTERMINATED_STRING = "CEP-PAT-101"
E_UNTERMINATED_QUOTED_NAME = "CEP-PAT-102"
E_UNTERMINATED_COMMENT = "CEP-PAT-103"
E_BAD_CHARACTER = "CEP-PAT-104"
E_MISSING_PATTERN = "CEP-PAT-105"
E_UNEXPECTED_TOKEN = "CEP-PAT-106"
E_UNEXPECTED_END = "CEP-PAT-107"
E_UNCLOSED_BRACKET = "CEP-PAT-108"
E_UNMATCHED_BRACKET = "CEP-PAT-109"
E_BAD_QUANTIFIER = "CEP-PAT-110"
E_EMPTY_ARGUMENTS = "CEP-PAT-111"
E_NOT_ARITY = "CEP-PAT-112"
E_BAD_UNIT = "CEP-PAT-113"
E_BAD_NUMBER = "CEP-PAT-114"
E_BAD_ALIAS = "CEP-PAT-115"
E_CLAUSE_ORDER = "CEP-PAT-116"
E_CONDITION_SYNTAX = "CEP-PAT-117"
E_EMPTY_CONDITION = "CEP-PAT-118"
E_FORBIDDEN_SQL = "CEP-PAT-119"
E_FUNCTION_NOT_ALLOWED = "CEP-PAT-120"
E_BAD_REFERENCE = "CEP-PAT-121"
E_BAD_POLICY_OR_EQUIVALENCE = "CEP-PAT-122"
E_BAD_WINDOW_SYNTAX = "CEP-PAT-123"
E_BAD_TIME_LITERAL = "CEP-PAT-124"
E_NOT_BOOLEAN = "CEP-PAT-125"
E_BAD_ESCAPE = "CEP-PAT-126"
E_BAD_LIKE = "CEP-PAT-127"
E_DQ_BACKSLASH = "CEP-PAT-128"
# Semantics (PatternSemanticError).
E_DUPLICATE_ALIAS = "CEP-PAT-201"
E_UNDEFINED_ALIAS = "CEP-PAT-202"
E_UNKNOWN_ATTRIBUTE = "CEP-PAT-203"
E_NOT_ITERABLE = "CEP-PAT-204"
E_NOT_FIRST = "CEP-PAT-205"
E_NOT_LAST = "CEP-PAT-206"
E_BAD_BOUNDS = "CEP-PAT-207"
E_NULLABLE_KLEENE = "CEP-PAT-208"
E_SLIDE_WITHOUT_WITHIN = "CEP-PAT-209"
E_SLIDE_TOO_LARGE = "CEP-PAT-210"
E_SLIDE_KIND = "CEP-PAT-211"
E_BAD_SPAN = "CEP-PAT-212"
E_BAD_WINDOW = "CEP-PAT-213"
E_UNUSED_DEFINE = "CEP-PAT-214"
E_TWO_POLICIES = "CEP-PAT-215"
E_MISSING_ALIAS = "CEP-PAT-216"
E_DEFINE_SCOPE = "CEP-PAT-217"
E_DUPLICATE_DEFINE = "CEP-PAT-218"
E_UNKNOWN_CLASS = "CEP-PAT-219"
E_MARKER_NOT_REPEATED = "CEP-PAT-220"
E_BAD_NOT = "CEP-PAT-221"
E_EMPTY_MATCH = "CEP-PAT-222"
E_AGGREGATE_NOT_ITERABLE = "CEP-PAT-223"
E_EVENTS_NOT_INTEGER = "CEP-PAT-224"
E_BAD_INDEX = "CEP-PAT-225"

# The snippet shows at most this many characters of a long line, centred on the error.
_SNIPPET_WIDTH = 100


@dataclass(frozen=True)
class Location:
    """Where an error is: 1-based line and column plus the snippet that shows it.

    Example:
        >>> loc = Location.of("PATTERN A;\\n  B )", 15, 16)
        >>> (loc.line, loc.column)
        (2, 5)
        >>> print(loc.snippet)
          B )
            ^
    """

    line: int
    column: int
    snippet: str

    @staticmethod
    def of(text: str, start: int, end: int | None = None) -> Location:
        """Locate the half-open character range ``[start, end)`` of ``text``."""
        start = max(0, min(start, len(text)))
        end = start + 1 if end is None else max(start, min(end, len(text)))
        line_start = 0
        line = 1
        i = 0
        # '\r\n', '\r' and '\n' all end a line, as editors count them.
        while i < start:
            ch = text[i]
            if ch == "\n" or (ch == "\r" and (i + 1 >= len(text) or text[i + 1] != "\n")):
                line += 1
                line_start = i + 1
            i += 1
        line_end = line_start
        while line_end < len(text) and text[line_end] not in "\r\n":
            line_end += 1
        column = start - line_start + 1
        source_line = text[line_start:line_end]
        width = max(1, min(end, line_end) - start)
        return Location(line, column, _snippet(source_line, column - 1, width))


def _snippet(source_line: str, col0: int, width: int) -> str:
    """Render ``source_line`` and a caret line marking ``width`` characters from ``col0``."""
    prefix = ""
    suffix = ""
    if len(source_line) > _SNIPPET_WIDTH:
        # Long single-line patterns (generated SQL) would bury the caret; show a window.
        lo = max(0, col0 - _SNIPPET_WIDTH // 2)
        hi = min(len(source_line), lo + _SNIPPET_WIDTH)
        lo = max(0, hi - _SNIPPET_WIDTH)
        prefix = "..." if lo > 0 else ""
        suffix = "..." if hi < len(source_line) else ""
        source_line = source_line[lo:hi]
        col0 -= lo
        width = min(width, max(1, len(source_line) - col0))
    shown = prefix + source_line + suffix
    col0 += len(prefix)
    # Keep tabs so the caret lines up under a tab-indented line in any terminal.
    pad = "".join("\t" if ch == "\t" else " " for ch in shown[:col0])
    return shown + "\n" + pad + "^" + "~" * (width - 1)


class PatternError(CepError):
    """A pattern could not be parsed or validated; carries code, position and snippet.

    Args:
        code: stable error code, ``CEP-PAT-NNN`` (see the module docstring).
        message: what is wrong, in words an analyst understands.
        text: the whole pattern text the position refers to.
        offset: 0-based character offset of the offending token.
        end: offset just after the offending token (defaults to ``offset + 1``).

    Example:
        >>> err = PatternSyntaxError("CEP-PAT-106", "unexpected ')'", "PATTERN A )", 10, 11)
        >>> (err.code, err.line, err.column)
        ('CEP-PAT-106', 1, 11)
        >>> print(err)
        CEP-PAT-106: line 1, column 11: unexpected ')'
            PATTERN A )
                      ^
    """

    code: str = "CEP-PAT-000"

    def __init__(self, code: str, message: str, text: str, offset: int, end: int | None = None) -> None:
        text = text if isinstance(text, str) else ""
        offset = max(0, min(int(offset), len(text)))
        loc = Location.of(text, offset, end)
        self.code = code
        self.text = text
        self.offset = offset
        self.end_offset = max(offset, min(end if end is not None else offset + 1, len(text)))
        self.line = loc.line
        self.column = loc.column
        self.snippet = loc.snippet
        indented = "\n".join("    " + part for part in loc.snippet.split("\n"))
        super().__init__(f"line {loc.line}, column {loc.column}: {message}\n{indented}")
        # CepError stores the full text in .message; keep the bare sentence there instead.
        self.message = message

    def __reduce__(self) -> tuple[type[PatternError], tuple[str, str, str, int, int]]:
        # Spark ships worker exceptions between processes by pickling them; the default
        # reduce would call __init__ with the formatted string only and fail.
        return (type(self), (self.code, self.message, self.text, self.offset, self.end_offset))


class PatternSyntaxError(PatternError):
    """The text does not follow the grammar (or a condition is not valid, allowed SQL)."""


class PatternSemanticError(PatternError):
    """The text parses but means nothing sensible (undefined alias, NOT at the end, ...)."""


class PatternLimitError(PatternError):
    """The text exceeds a size or complexity limit that protects the parser and the engines."""
