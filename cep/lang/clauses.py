"""The clauses after the pattern: DEFINE, WHERE, the WITHIN and SLIDE spans, WINDOW bounds.

:class:`ClauseParser` reads one clause each, after :mod:`cep.lang.parser` has read and checked
its keyword. A DEFINE or WHERE condition ends at the next top-level clause keyword (see
:meth:`cep.lang.cursor.Cursor.region`) and is compiled by :mod:`cep.lang.conditions` and
:mod:`cep.lang.where_clause`; a span is a number and a unit (:func:`cep.lang.words.unit_of`); a
WINDOW holds two positions or two timestamps.

Example:
    >>> from cep.lang.limits import DEFAULT_LIMITS
    >>> from cep.lang.tokens import tokenize
    >>> text = "5 MINUTES [0, 999]"
    >>> p = ClauseParser(text, tokenize(text), DEFAULT_LIMITS)
    >>> str(p.span()), p.window()
    ('5 MINUTES', WindowBounds(start=0, end=999, kind='POSITION', span=(10, 18)))
"""

from __future__ import annotations

import math
from datetime import datetime

from cep.lang.ast import Condition, Define, Equivalence, Span, WindowBounds
from cep.lang.conditions import compile_condition
from cep.lang.cursor import CLAUSE_KEYWORDS, Cursor
from cep.lang.errors import (
    E_BAD_NUMBER,
    E_BAD_UNIT,
    E_BAD_WINDOW,
    E_BAD_WINDOW_SYNTAX,
    E_DUPLICATE_DEFINE,
    E_EMPTY_CONDITION,
    E_TWO_POLICIES,
    E_UNEXPECTED_TOKEN,
    PatternSemanticError,
)
from cep.lang.tokens import DQ, IDENT, NUMBER, STRING, Token
from cep.lang.where_clause import compile_where
from cep.lang.words import DEFINE as DEFINE_KIND
from cep.lang.words import unit_of

_UNITS_HELP = "MICROSECONDS, MILLISECONDS, SECONDS, MINUTES, HOURS, DAYS, WEEKS, EVENTS or UNITS"


class ClauseParser(Cursor):
    """Reads the clauses of a query over a :class:`cep.lang.cursor.Cursor`."""

    def defines(self) -> tuple[Define, ...]:
        out: list[Define] = []
        seen: dict[str, Token] = {}
        while True:
            name_tok = self.peek()
            if not self.is_name(name_tok):
                raise self.error(
                    E_UNEXPECTED_TOKEN,
                    f"expected a class name to define, found {name_tok.describe()}",
                    name_tok,
                )
            self.advance()
            as_tok = self.peek()
            if not as_tok.is_kw("AS"):
                raise self.error(
                    E_UNEXPECTED_TOKEN,
                    f"expected AS after DEFINE {name_tok.text}, found {as_tok.describe()}",
                    as_tok,
                )
            self.advance()
            first = self.k
            last = self.region(stop_words=CLAUSE_KEYWORDS, define_split=True)
            if first == last:
                raise self.error(
                    E_EMPTY_CONDITION,
                    f"expected a condition after {name_tok.text} AS",
                    as_tok,
                    self.peek().end,
                )
            if name_tok.value in seen:
                raise PatternSemanticError(
                    E_DUPLICATE_DEFINE,
                    f"class {name_tok.value} is defined twice",
                    self.text,
                    name_tok.start,
                    name_tok.end,
                )
            seen[name_tok.value] = name_tok
            cond = compile_condition(
                self.text, self.toks[first:last], kind=DEFINE_KIND, subject=name_tok.value, limits=self.limits
            )
            out.append(Define(name_tok.value, cond, span=(name_tok.start, self.toks[last - 1].end)))
            if not self.peek().is_op(","):
                return tuple(out)
            self.advance()

    def where(self, where_tok: Token) -> tuple[tuple[Condition, ...], str | None, tuple[Equivalence, ...]]:
        first = self.k
        last = self.region(stop_words=CLAUSE_KEYWORDS)
        clause = compile_where(self.text, self.toks[first:last], self.limits, at=where_tok.end)
        policy = None
        if clause.policies:
            policy = clause.policies[0][0]
            if len(clause.policies) > 1:
                name, (s, e) = clause.policies[1]
                raise PatternSemanticError(
                    E_TWO_POLICIES, f"only one selection policy is allowed; {policy} is already given", self.text, s, e
                )
        return clause.conditions, policy, clause.equivalences

    def number(self, what: str) -> tuple[float, Token, int]:
        """Read an optionally negative number; return (value, number token, start offset)."""
        sign_tok = self.peek()
        sign = 1.0
        if sign_tok.is_op("-", "+"):
            sign = -1.0 if sign_tok.text == "-" else 1.0
            self.advance()
        tok = self.peek()
        if tok.kind != NUMBER:
            raise self.error(E_UNEXPECTED_TOKEN, f"expected a number for {what}, found {tok.describe()}", tok)
        self.advance()
        value = sign * float(tok.text)
        if not math.isfinite(value) or abs(value) > 1e18:
            raise self.error(E_BAD_NUMBER, f"number {tok.text[:20]} is out of range", tok)
        return value, tok, sign_tok.start

    def span(self) -> Span:
        value, num_tok, start = self.number("the length")
        unit_tok = self.peek()
        if unit_tok.kind != IDENT:
            raise self.error(
                E_BAD_UNIT,
                f"expected a unit after {num_tok.text} ({_UNITS_HELP}), found {unit_tok.describe()}",
                unit_tok,
            )
        unit = unit_of(unit_tok.text)
        if unit is None:
            raise self.error(E_BAD_UNIT, f"unknown unit '{unit_tok.text}'; expected {_UNITS_HELP}", unit_tok)
        self.advance()
        return Span(value, unit, span=(start, unit_tok.end))

    def window(self) -> WindowBounds:
        open_tok = self.peek()
        if not open_tok.is_op("["):
            raise self.error(
                E_BAD_WINDOW_SYNTAX,
                f"expected '[' after WINDOW, e.g. WINDOW [0, 999], found {open_tok.describe()}",
                open_tok,
            )
        self.advance()
        lo, lo_kind = self.window_bound()
        comma = self.peek()
        if not comma.is_op(","):
            raise self.error(
                E_BAD_WINDOW_SYNTAX,
                f"expected ',' between the WINDOW bounds, found {comma.describe()}",
                comma,
            )
        self.advance()
        hi, hi_kind = self.window_bound()
        self.expect_close(open_tok, "the end of the bounds")
        if lo_kind != hi_kind:
            raise PatternSemanticError(
                E_BAD_WINDOW,
                "WINDOW bounds must be both positions or both timestamps",
                self.text,
                open_tok.start,
                self.toks[self.k - 1].end,
            )
        return WindowBounds(lo, hi, lo_kind, span=(open_tok.start, self.toks[self.k - 1].end))

    def window_bound(self) -> tuple[int | str, str]:
        tok = self.peek()
        if tok.kind in (STRING, DQ):
            self.advance()
            try:
                datetime.fromisoformat(tok.value)
            except ValueError:
                raise self.error(
                    E_BAD_WINDOW_SYNTAX,
                    f"{tok.text} is not a timestamp like '2020-01-31 12:00:00'",
                    tok,
                ) from None
            return tok.value, "TIMESTAMP"
        value, num_tok, start = self.number("a WINDOW bound")
        if not num_tok.text.isdigit():
            raise self.error(
                E_BAD_WINDOW_SYNTAX,
                f"a WINDOW position must be a whole number, found {num_tok.text}",
                num_tok,
            )
        return (-1 if value < 0 else 1) * int(num_tok.text), "POSITION"
