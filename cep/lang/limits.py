"""Size and complexity limits, checked before the parser runs so it can never be overwhelmed.

The pattern text is a user string that reaches us from SQL. Before any recursive parsing we
check, in linear time: the text length, the bracket nesting depth (a scan that skips quoted
strings and comments), and the number of event components (counted on the token stream, not
the parse tree). Conditions have their own, smaller nesting limit because sqlglot's recursive
parser needs roughly twenty Python frames per nesting level.

Example:
    >>> check_text("PATTERN ((A))", Limits(max_depth=1))
    Traceback (most recent call last):
    ...
    cep.lang.errors.PatternLimitError: CEP-PAT-002: line 1, column 10: brackets are nested 2 deep; the maximum is 1
        PATTERN ((A))
                 ^
"""

from __future__ import annotations

from dataclasses import dataclass

from cep.lang.errors import E_TOO_DEEP, E_TOO_LONG, E_TOO_MANY_COMPONENTS, PatternLimitError
from cep.lang.tokens import BRACKETS, DQ, IDENT, OP, QIDENT, Token, skip_comment

# Words that end the pattern part of a query (see cursor.CLAUSE_KEYWORDS).
_PATTERN_END = ("DEFINE", "WHERE", "WITHIN", "SLIDE", "WINDOW")
# Tokens after which an identifier starts a new event component.
_EVENT_STARTERS = ("(", ",", ";", "|", "&", "!")
_OPERATOR_WORDS = ("SEQ", "AND", "OR", "NOT")


@dataclass(frozen=True)
class Limits:
    """The bounds every pattern must stay within.

    Attributes:
        max_length: maximum pattern text length in characters.
        max_depth: maximum nesting depth of ``( [ {`` brackets anywhere in the text.
        max_components: maximum number of event components (class occurrences).
        max_repeat: maximum quantifier bound, ``A{n}`` / ``A{n,m}`` / ``A[n]``.
        max_condition_depth: maximum nesting of one condition (brackets plus prefix operators).
        max_condition_operators: maximum number of operators in one condition (every
            comparison, arithmetic and logical operator, ``IN``, ``BETWEEN``, ``LIKE``, ``IS``):
            a chain ``a + b + c ...`` nests one level per operator in the engines' trees.
    """

    max_length: int = 20_000
    max_depth: int = 64
    max_components: int = 256
    max_repeat: int = 1000
    max_condition_depth: int = 16
    max_condition_operators: int = 256


DEFAULT_LIMITS = Limits()


def check_text(text: str, limits: Limits = DEFAULT_LIMITS) -> None:
    """Check the length and the bracket nesting depth of the raw text.

    Args:
        text: the whole pattern text.
        limits: the bounds to enforce.

    Raises:
        PatternLimitError: the text is too long or its brackets nest too deeply.
    """
    if len(text) > limits.max_length:
        raise PatternLimitError(
            E_TOO_LONG,
            f"pattern text is {len(text)} characters long; the maximum is {limits.max_length}",
            text,
            limits.max_length,
            len(text),
        )
    depth = 0
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"`":
            i = _skip_quoted(text, i)
            continue
        after = skip_comment(text, i)
        if after is None:
            return  # unterminated comment: the tokenizer reports it with a better message
        if after != i:
            i = after
            continue
        if ch in BRACKETS:
            depth += 1
            if depth > limits.max_depth:
                raise PatternLimitError(
                    E_TOO_DEEP,
                    f"brackets are nested {depth} deep; the maximum is {limits.max_depth}",
                    text,
                    i,
                    i + 1,
                )
        elif ch in ")]}":
            depth = max(0, depth - 1)
        i += 1


def _skip_quoted(text: str, start: int) -> int:
    quote = text[start]
    i = start + 1
    while i < len(text):
        ch = text[i]
        if quote == "'" and ch == "\\":
            i += 2
            continue
        if ch == quote:
            if i + 1 < len(text) and text[i + 1] == quote:
                i += 2
                continue
            return i + 1
        i += 1
    return len(text)  # unterminated: the tokenizer reports it


def check_components(text: str, tokens: list[Token], limits: Limits = DEFAULT_LIMITS) -> None:
    """Count event components in the pattern part of the token stream, before parsing it.

    A component is a class name in a position where the grammar starts an element: right after
    PATTERN or after one of ``( , ; | & !`` (a name after another name or a quantifier is an
    alias). ``SEQ(`` / ``AND(`` / ``OR(`` / ``NOT(`` are operators, not components.

    Raises:
        PatternLimitError: more components than ``limits.max_components``.
    """
    count = 0
    depth = 0
    first_over: Token | None = None
    for k in range(1, len(tokens)):
        tok = tokens[k]
        prev = tokens[k - 1]
        if tok.kind == OP and tok.text in BRACKETS:
            depth += 1
        elif tok.kind == OP and tok.text in ")]}":
            depth -= 1
        if depth <= 0 and tok.is_kw(*_PATTERN_END) and not prev.is_op("."):
            break
        if tok.kind not in (IDENT, QIDENT, DQ):
            continue
        starts = (k == 1) or (prev.kind == OP and prev.text in _EVENT_STARTERS)
        nxt = tokens[k + 1] if k + 1 < len(tokens) else tok
        if not starts or (tok.is_kw(*_OPERATOR_WORDS) and nxt.is_op("(")):
            continue
        count += 1
        if count > limits.max_components and first_over is None:
            first_over = tok
    if first_over is not None:
        raise PatternLimitError(
            E_TOO_MANY_COMPONENTS,
            f"the pattern has {count} event components; the maximum is {limits.max_components}",
            text,
            first_over.start,
            first_over.end,
        )
