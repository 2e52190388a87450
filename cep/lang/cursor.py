"""The parser's cursor over a query's tokens: look-ahead, errors at a token, condition regions.

The pattern grammar (:mod:`cep.lang.pattern`) and the clauses (:mod:`cep.lang.clauses`) both
read tokens through a :class:`Cursor`; :mod:`cep.lang.parser` puts them together. The cursor
also knows the words that end a pattern or a condition (the clause keywords) and the words that
are never a class name or an alias unless quoted.

Example:
    >>> from cep.lang.limits import DEFAULT_LIMITS
    >>> from cep.lang.tokens import tokenize
    >>> text = "a.x IN (1, 2) WITHIN 5 MINUTES"
    >>> cur = Cursor(text, tokenize(text), DEFAULT_LIMITS)
    >>> end = cur.region(stop_words=CLAUSE_KEYWORDS)
    >>> text[: cur.toks[end].start].strip(), cur.peek().text
    ('a.x IN (1, 2)', 'WITHIN')
"""

from __future__ import annotations

from cep.lang.errors import (
    E_UNCLOSED_BRACKET,
    E_UNEXPECTED_END,
    E_UNEXPECTED_TOKEN,
    E_UNMATCHED_BRACKET,
    PatternSyntaxError,
)
from cep.lang.limits import Limits
from cep.lang.tokens import BRACKETS, DQ, EOF, IDENT, QIDENT, Token

# Clause keywords, in the order they must appear.
CLAUSE_ORDER = ("DEFINE", "WHERE", "WITHIN", "SLIDE", "WINDOW")
CLAUSE_KEYWORDS = frozenset(CLAUSE_ORDER) | {"PATTERN"}
# Never a class name or alias unless quoted.
RESERVED = CLAUSE_KEYWORDS | {"AS"}
OPERATOR_WORDS = ("SEQ", "AND", "OR", "NOT")


class Cursor:
    """A position in one text's tokens; positions in errors are offsets into ``text``."""

    def __init__(self, text: str, tokens: list[Token], limits: Limits) -> None:
        self.text = text
        self.toks = tokens
        self.k = 0
        self.limits = limits

    # -- token helpers ------------------------------------------------------------------------
    def peek(self, ahead: int = 0) -> Token:
        return self.toks[min(self.k + ahead, len(self.toks) - 1)]

    def advance(self) -> Token:
        tok = self.toks[self.k]
        if tok.kind != EOF:
            self.k += 1
        return tok

    def error(self, code: str, message: str, tok: Token, end: int | None = None) -> PatternSyntaxError:
        if tok.kind == EOF:
            code = E_UNEXPECTED_END if code == E_UNEXPECTED_TOKEN else code
            # Point just after the last token, not at trailing blank lines.
            at = self.toks[-2].end if len(self.toks) > 1 else 0
            return PatternSyntaxError(code, message, self.text, at, at)
        return PatternSyntaxError(code, message, self.text, tok.start, tok.end if end is None else end)

    def expect_close(self, open_tok: Token, what: str) -> Token:
        close = BRACKETS[open_tok.text]
        tok = self.peek()
        if tok.is_op(close):
            return self.advance()
        if tok.kind == EOF or tok.is_kw(*CLAUSE_KEYWORDS):
            raise self.error(E_UNCLOSED_BRACKET, f"'{open_tok.text}' is never closed with '{close}'", open_tok)
        if tok.is_op(")", "]", "}"):
            raise self.error(
                E_UNMATCHED_BRACKET,
                f"expected '{close}' to close '{open_tok.text}', found '{tok.text}'",
                tok,
            )
        raise self.error(E_UNEXPECTED_TOKEN, f"expected {what} or '{close}', found {tok.describe()}", tok)

    def is_name(self, tok: Token) -> bool:
        return tok.kind in (QIDENT, DQ) or (tok.kind == IDENT and tok.text.upper() not in RESERVED)

    def is_alias(self, tok: Token) -> bool:
        return tok.kind in (QIDENT, DQ) or (
            tok.kind == IDENT and tok.text.upper() not in RESERVED and tok.text.upper() not in OPERATOR_WORDS
        )

    # -- regions of condition tokens ----------------------------------------------------------
    def region(self, stop_words: frozenset[str], until_close: Token | None = None, define_split: bool = False) -> int:
        """Advance over a condition; return the index of its end token (not consumed).

        Stops at a top-level clause keyword (not after '.'), at EOF, at the ')' matching
        ``until_close``, or (``define_split``) at a top-level ',' followed by ``NAME AS``.
        """
        stack: list[Token] = []
        while True:
            tok = self.peek()
            prev = self.toks[self.k - 1]
            top = not stack
            at_clause = top and tok.kind == IDENT and tok.text.upper() in stop_words and not prev.is_op(".")
            if tok.kind == EOF or at_clause:
                if stack:
                    raise self.error(
                        E_UNCLOSED_BRACKET,
                        f"'{stack[-1].text}' is never closed with '{BRACKETS[stack[-1].text]}'",
                        stack[-1],
                    )
                if until_close is not None:
                    raise self.error(E_UNCLOSED_BRACKET, "'(' is never closed with ')'", until_close)
                return self.k
            if top and define_split and tok.is_op(",") and self.is_name(self.peek(1)) and self.peek(2).is_kw("AS"):
                return self.k
            if tok.is_op("(", "["):
                stack.append(tok)
            elif tok.is_op(")", "]"):
                if not stack:
                    if until_close is not None and tok.is_op(")"):
                        return self.k
                    raise self.error(E_UNMATCHED_BRACKET, f"'{tok.text}' has no matching opening bracket", tok)
                want = BRACKETS[stack[-1].text]
                if tok.text != want:
                    raise self.error(
                        E_UNMATCHED_BRACKET,
                        f"expected '{want}' to close '{stack[-1].text}', found '{tok.text}'",
                        tok,
                    )
                stack.pop()
            self.advance()
