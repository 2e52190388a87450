"""Recursive-descent parser for pattern queries (DESIGN.md section 3).

Grammar (keywords are case-insensitive; class names and aliases are case-sensitive)::

    query  := PATTERN pattern [DEFINE defs] [WHERE conds] [WITHIN span [SLIDE span]] [WINDOW '[' a ',' b ']']
    pattern:= orseq
    orseq  := andseq ('|' andseq)*
    andseq := sseq ('&' sseq)*
    sseq   := cseq (';' cseq)*               -- followed-by: the selection policy applies
    cseq   := item (',' item)*               -- next event (strict contiguity); not inside f(...)
    item   := prim quant? [alias ['[' ']']] ('@' '(' cond ')')*
    prim   := SEQ '(' args ')' | AND '(' args ')' | OR '(' args ')' | NOT '(' arg ')' | '!' prim
            | '(' pattern ')' | CLASS [alias] ['[' ']']
    args   := arg (',' arg)*                 -- an arg is an orseq without a top-level ','
    quant  := '*' | '+' | '?' | '{' n '}' | '{' n ',' [m] '}' | '[' n ']'
    defs   := CLASS AS cond (',' CLASS AS cond)*
    conds  := cond (AND cond)*               -- a cond may be a policy keyword or [attr]
    span   := number unit                    -- MICROSECOND(S) .. WEEK(S), EVENT(S), UNIT(S)

Decisions where the grammar leaves room:

- **Class names.** An identifier, a backtick-quoted name or a double-quoted name
  (``"O_Sent (mail and online)"``). ``SEQ``, ``AND``, ``OR`` and ``NOT`` are operators only when
  ``(`` follows; otherwise they are class names (``PATTERN Seq; Or`` has classes Seq and Or).
  ``PATTERN DEFINE WHERE WITHIN SLIDE WINDOW AS`` are reserved: quote them to use them as names.
- **Aliases.** An alias may follow the class directly (``Stock s+``) or follow the quantifier
  (``check+ c[]``); not both. ``c[]`` marks an iteration alias (documentation of intent: an alias
  under any repeating quantifier may be indexed ``c[i]``; ``[]`` on an event that is not
  repeated is an error). ``check[]+`` marks the implicit alias ``check``. An alias cannot follow
  a group: ``(A; B)+ x`` is an error.
- **``[``.** After a class or alias, ``[]`` is the iteration marker and ``[n]`` the quantifier
  "exactly n": ``Microsoft[3]`` is three Microsoft events; ``c[]`` is an alias marker.
- **Juxtaposition.** ``A x`` is the class A with alias x; two events are always separated by
  ``,`` ``;`` ``&`` or ``|``, so ``A x B`` is an error that says so.
- **Alias rule.** An event without an explicit alias gets its class name as alias. When the same
  class appears more than once without an explicit alias, those occurrences get the aliases
  ``<CLASS>1, <CLASS>2, ...`` in order of appearance, so ``PATTERN F, F, F @(t(F3) - t(F1) < 5
  MINUTES) ; S`` has aliases F1, F2, F3, S. An alias used twice (explicitly or by this rule,
  e.g. ``F, F, G F1``) is an error.
- **``@(...)``** binds to the element just before it (tighter than ``,``): in ``F, F, F @(c)``
  the condition is attached to the third F. It may mention any alias of the pattern.
- **Quantifiers.** One per element (``A+*`` is an error; write ``(A+)*``). ``!A+`` is a
  quantified NOT and is rejected by validation; ``!!A`` is rejected here.
- **Flattening.** Nested sequences are flattened keeping each link (``(A, B); C`` becomes
  ``Seq([A, B, C], [next, followed])``); nested ``&`` / ``|`` of the same operator are
  flattened; ``SEQ(X)``, ``AND(X)``, ``OR(X)`` and ``(X)`` are just ``X``. ``NOT`` takes exactly
  one argument.
- **Clauses** come in the order DEFINE, WHERE, WITHIN, SLIDE, WINDOW, each at most once.
  WHERE and DEFINE conditions end at a top-level clause keyword (outside brackets and not after
  ``.``); a column named like a clause keyword must be written in backticks.
- **Comments** ``-- ...`` and ``/* ... */`` are allowed anywhere whitespace is.

Example:
    >>> q = parse_syntax("PATTERN F, F, F @(t(F3) - t(F1) < 5 MINUTES) ; S")
    >>> q.aliases()
    ['F1', 'F2', 'F3', 'S']
    >>> q.pattern.links
    ('next', 'next', 'followed')
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime

from cep.lang.ast import (
    FOLLOWED,
    NEXT,
    And,
    Condition,
    Define,
    Equivalence,
    Event,
    Kleene,
    Not,
    Or,
    PatternNode,
    Seq,
    Span,
    Timed,
    WindowBounds,
)
from cep.lang.conditions import DEFINE as DEFINE_KIND
from cep.lang.conditions import compile_condition, compile_where, unit_of
from cep.lang.errors import (
    E_BAD_ALIAS,
    E_BAD_NOT,
    E_BAD_NUMBER,
    E_BAD_POLICY_OR_EQUIVALENCE,
    E_BAD_QUANTIFIER,
    E_BAD_UNIT,
    E_BAD_WINDOW,
    E_BAD_WINDOW_SYNTAX,
    E_CLAUSE_ORDER,
    E_DUPLICATE_ALIAS,
    E_DUPLICATE_DEFINE,
    E_EMPTY_ARGUMENTS,
    E_EMPTY_CONDITION,
    E_MISSING_PATTERN,
    E_NOT_A_STRING,
    E_NOT_ARITY,
    E_REPEAT_TOO_LARGE,
    E_TOO_DEEP,
    E_TWO_POLICIES,
    E_UNCLOSED_BRACKET,
    E_UNEXPECTED_END,
    E_UNEXPECTED_TOKEN,
    E_UNMATCHED_BRACKET,
    PatternLimitError,
    PatternSemanticError,
    PatternSyntaxError,
)
from cep.lang.query import Query
from cep.lang.limits import DEFAULT_LIMITS, Limits, check_components, check_text
from cep.lang.tokens import BRACKETS, DQ, EOF, IDENT, NUMBER, QIDENT, STRING, Token, tokenize

# Clause keywords, in the order they must appear.
CLAUSE_ORDER = ("DEFINE", "WHERE", "WITHIN", "SLIDE", "WINDOW")
CLAUSE_KEYWORDS = frozenset(CLAUSE_ORDER) | {"PATTERN"}
# Never a class name or alias unless quoted.
RESERVED = CLAUSE_KEYWORDS | {"AS"}
OPERATOR_WORDS = ("SEQ", "AND", "OR", "NOT")
_UNITS_HELP = "MICROSECONDS, MILLISECONDS, SECONDS, MINUTES, HOURS, DAYS, WEEKS, EVENTS or UNITS"


def parse_syntax(text: str, *, limits: Limits = DEFAULT_LIMITS) -> Query:
    """Parse a pattern query: limits, tokens, grammar, the alias rule and the conditions.

    The checks of meaning (:func:`cep.lang.validate.check_structure`) are the next stage;
    :func:`cep.lang.pipeline.parse_pattern` runs both and is what callers want.

    Args:
        text: the query, e.g. ``"PATTERN a; b+ WHERE a.x < b.x WITHIN 5 MINUTES"``.
        limits: size and complexity bounds, checked before parsing.

    Returns:
        The query AST, not yet checked for meaning.

    Raises:
        PatternSyntaxError: the text does not follow the grammar.
        PatternSemanticError: a meaningless shape the grammar itself rules out (NOT of a NOT, an
            alias used twice, ...).
        PatternLimitError: it exceeds a limit.

    Example:
        >>> q = parse_syntax("PATTERN check+ c[] WHERE c[i].src = c[i-1].dest WITHIN 1 WEEK SLIDE 1 DAY")
        >>> q.pattern
        Kleene(part=Event(cls='check', alias='c', iter_alias=True, span=(8, 18)), min=1, max=None, span=(8, 18))
        >>> [c.sql for c in q.conditions], str(q.within), str(q.slide)
        (['`c[i].src` = `c[i-1].dest`'], '1 WEEK', '1 DAY')
    """
    if not isinstance(text, str):
        raise PatternSyntaxError(E_NOT_A_STRING, f"a pattern must be a string, not {type(text).__name__}", "", 0)
    check_text(text, limits)
    tokens = tokenize(text)
    check_components(text, tokens, limits)
    try:
        query = _Parser(text, tokens, limits).parse_query()
    except RecursionError:
        # The limits above keep the parser well inside Python's stack (about 450 frames at
        # worst); this only fires when the caller itself is already nearly out of stack.
        raise PatternLimitError(E_TOO_DEEP, "pattern is too deeply nested to parse here", text, 0, 1) from None
    return query


@dataclass
class _Head:
    """An event class with its alias, while the item around it is still being parsed."""

    cls: str
    start: int
    end: int
    alias: str | None = None
    alias_span: tuple[int, int] | None = None
    iter_alias: bool = False

    def event(self) -> Event:
        # alias "" until finish_pattern applies the alias rule.
        return Event(
            self.cls,
            self.alias or "",
            self.iter_alias,
            span=(self.start, self.end),
            alias_span=self.alias_span,
        )


class _Parser:
    """One parse of one text; positions in errors are offsets into ``text``."""

    def __init__(self, text: str, tokens: list[Token], limits: Limits) -> None:
        self.text = text
        self.toks = tokens
        self.k = 0
        self.limits = limits
        # Token ranges of '@(...)' conditions, compiled after the recursive descent returns so
        # that sqlglot's deep recursion starts from a shallow stack.
        self.pending: dict[tuple[int, int], list[tuple[int, int]]] = {}

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

    # -- query --------------------------------------------------------------------------------
    def parse_query(self) -> Query:
        first = self.peek()
        if not first.is_kw("PATTERN"):
            if first.kind == EOF:
                raise self.error(
                    E_MISSING_PATTERN,
                    "empty pattern; a pattern starts with PATTERN, e.g. PATTERN A; B",
                    first,
                )
            raise self.error(
                E_MISSING_PATTERN,
                f"a pattern starts with the keyword PATTERN, found {first.describe()}",
                first,
            )
        self.advance()
        start = self.peek()
        if start.kind == EOF or start.is_kw(*CLAUSE_KEYWORDS):
            raise self.error(E_UNEXPECTED_TOKEN, f"expected a pattern after PATTERN, found {start.describe()}", start)
        pattern = self.finish_pattern(self.orseq(in_args=False))
        query = Query(pattern, text=self.text, span=(0, len(self.text)))
        seen: list[str] = []
        while self.peek().kind != EOF:
            tok = self.peek()
            word = self.clause_word(tok, seen)
            self.advance()
            seen.append(word)
            if word == "DEFINE":
                query = replace(query, defines=self.defines())
            elif word == "WHERE":
                conditions, policy, equivalences = self.where(tok)
                query = replace(query, conditions=conditions, policy=policy, equivalences=equivalences)
            elif word == "WITHIN":
                query = replace(query, within=self.span())
            elif word == "SLIDE":
                query = replace(query, slide=self.span())
            else:
                query = replace(query, window=self.window())
        return query

    def clause_word(self, tok: Token, seen: list[str]) -> str:
        """The clause keyword ``tok`` starts, checked against the clauses already ``seen``."""
        word = tok.text.upper() if tok.kind == IDENT else ""
        last = CLAUSE_ORDER.index(seen[-1]) if seen else -1
        if word not in CLAUSE_ORDER:
            if seen and not tok.is_kw("PATTERN"):
                raise self.error(
                    E_UNEXPECTED_TOKEN,
                    f"unexpected {tok.describe()} after {seen[-1]}; expected "
                    + ", ".join([*CLAUSE_ORDER[last + 1 :], "the end of the pattern"]),
                    tok,
                )
            raise self.unexpected_after_pattern(tok)
        if word in seen:
            raise self.error(E_CLAUSE_ORDER, f"{word} appears twice", tok)
        if CLAUSE_ORDER.index(word) < last:
            raise self.error(
                E_CLAUSE_ORDER,
                f"{word} must come before {seen[-1]} (order: {', '.join(CLAUSE_ORDER)})",
                tok,
            )
        return word

    def unexpected_after_pattern(self, tok: Token) -> PatternSyntaxError:
        if tok.is_kw("PATTERN"):
            return self.error(E_CLAUSE_ORDER, "PATTERN can appear only once, at the start", tok)
        if tok.is_kw("AND", "OR"):
            op = "&" if tok.is_kw("AND") else "|"
            return self.error(
                E_UNEXPECTED_TOKEN,
                f"unexpected {tok.describe()}; between pattern elements write '{op}' or {tok.text.upper()}(...)",
                tok,
            )
        if tok.is_op(")", "]", "}"):
            return self.error(E_UNMATCHED_BRACKET, f"'{tok.text}' has no matching opening bracket", tok)
        if self.is_name(tok):
            return self.error(
                E_UNEXPECTED_TOKEN,
                f"unexpected {tok.describe()}; separate pattern elements with ',' (next) or ';' (followed by)",
                tok,
            )
        return self.error(
            E_UNEXPECTED_TOKEN,
            f"expected ',' ';' '&' '|', DEFINE, WHERE, WITHIN, WINDOW or the end, found {tok.describe()}",
            tok,
        )

    # -- pattern ------------------------------------------------------------------------------
    def orseq(self, in_args: bool) -> PatternNode:
        start = self.peek().start
        parts = [self.andseq(in_args)]
        while self.peek().is_op("|"):
            self.advance()
            parts.append(self.andseq(in_args))
        return parts[0] if len(parts) == 1 else _make_or(parts, (start, self.toks[self.k - 1].end))

    def andseq(self, in_args: bool) -> PatternNode:
        start = self.peek().start
        parts = [self.sseq(in_args)]
        while self.peek().is_op("&"):
            self.advance()
            parts.append(self.sseq(in_args))
        return parts[0] if len(parts) == 1 else _make_and(parts, (start, self.toks[self.k - 1].end))

    def sseq(self, in_args: bool) -> PatternNode:
        start = self.peek().start
        parts = [self.cseq(in_args)]
        while self.peek().is_op(";"):
            self.advance()
            parts.append(self.cseq(in_args))
        if len(parts) == 1:
            return parts[0]
        return _make_seq(parts, [FOLLOWED] * (len(parts) - 1), (start, self.toks[self.k - 1].end))

    def cseq(self, in_args: bool) -> PatternNode:
        start = self.peek().start
        parts = [self.item()]
        while not in_args and self.peek().is_op(","):
            self.advance()
            parts.append(self.item())
        if len(parts) == 1:
            return parts[0]
        return _make_seq(parts, [NEXT] * (len(parts) - 1), (start, self.toks[self.k - 1].end))

    def item(self) -> PatternNode:
        start = self.peek().start
        head = self.event_head() if self.starts_event(self.peek()) else None
        node: PatternNode | None = None if head is not None else self.prim()
        quant = self.quantifier()
        if quant is not None and self.peek_quantifier():
            raise self.error(
                E_BAD_QUANTIFIER,
                "only one quantifier per element; use parentheses, e.g. (A+)*",
                self.peek(),
            )
        if self.is_alias(self.peek()):
            alias_tok = self.peek()
            if head is None:
                raise self.error(
                    E_BAD_ALIAS,
                    f"an alias can only name an event class, not a group; found {alias_tok.describe()}",
                    alias_tok,
                )
            if quant is None:
                raise self.unexpected_after_pattern(alias_tok)
            if head.alias is not None:
                raise self.error(E_BAD_ALIAS, f"this event already has the alias '{head.alias}'", alias_tok)
            self.advance()
            head.alias = alias_tok.value
            head.alias_span = (alias_tok.start, alias_tok.end)
            self.iter_marker(head)
            if self.peek_quantifier():
                raise self.error(
                    E_BAD_QUANTIFIER,
                    "the quantifier comes before the alias, e.g. check+ c[]",
                    self.peek(),
                )
        if head is not None:
            node = head.event()
        assert node is not None
        if quant is not None:
            lo, hi, qspan = quant
            node = Kleene(node, lo, hi, span=(start, self.toks[self.k - 1].end), quant_span=qspan)
        if self.peek().is_op("@"):
            node = self.timed(node, start)
        if self.peek().is_op("[") and self.peek(1).is_op("]"):
            raise self.error(
                E_BAD_ALIAS,
                "'[]' marks an alias: write it after the alias, e.g. check+ c[]",
                self.peek(),
                self.peek(1).end,
            )
        return node

    def starts_event(self, tok: Token) -> bool:
        if tok.kind in (QIDENT, DQ):
            return True
        if tok.kind != IDENT or tok.text.upper() in RESERVED:
            return False
        return not (tok.text.upper() in OPERATOR_WORDS and self.peek(1).is_op("("))

    def event_head(self) -> _Head:
        cls_tok = self.advance()
        head = _Head(cls_tok.value, cls_tok.start, cls_tok.end)
        if self.is_alias(self.peek()):
            alias_tok = self.advance()
            head.alias = alias_tok.value
            head.alias_span = (alias_tok.start, alias_tok.end)
        self.iter_marker(head)
        return head

    def iter_marker(self, head: _Head) -> None:
        """Consume an optional ``[]`` after the class or alias just read."""
        head.end = self.toks[self.k - 1].end
        if self.peek().is_op("[") and self.peek(1).is_op("]"):
            self.advance()
            head.end = self.advance().end
            head.iter_alias = True

    def prim(self) -> PatternNode:
        tok = self.peek()
        if tok.kind == IDENT and tok.text.upper() in OPERATOR_WORDS and self.peek(1).is_op("("):
            return self.function()
        if tok.is_op("("):
            self.advance()
            if self.peek().is_op(")"):
                raise self.error(E_UNEXPECTED_TOKEN, "empty parentheses; expected a pattern inside", self.peek())
            inner = self.orseq(in_args=False)
            self.expect_close(tok, "',' ';' '&' '|'")
            return _regroup(inner, (tok.start, self.toks[self.k - 1].end))
        if tok.is_op("!"):
            self.advance()
            nxt = self.peek()
            if nxt.is_op("!") or (nxt.is_kw("NOT") and self.peek(1).is_op("(")):
                raise PatternSemanticError(E_BAD_NOT, "NOT of a NOT is not allowed", self.text, tok.start, nxt.end)
            if self.starts_event(nxt):
                part: PatternNode = self.event_head().event()
            else:
                part = self.prim()
            return Not(part, span=(tok.start, self.toks[self.k - 1].end))
        raise self.expected_element(tok)

    def expected_element(self, tok: Token) -> PatternSyntaxError:
        if tok.kind == EOF:
            return self.error(E_UNEXPECTED_END, "the pattern ends too early; expected an event class", tok)
        if tok.kind == STRING:
            return self.error(
                E_UNEXPECTED_TOKEN,
                "class names are quoted with double quotes or backticks, not single quotes",
                tok,
            )
        if tok.is_op(")", "]", "}"):
            return self.error(E_UNMATCHED_BRACKET, f"expected an event class, found '{tok.text}'", tok)
        if tok.kind == IDENT and tok.text.upper() in RESERVED:
            return self.error(
                E_UNEXPECTED_TOKEN,
                f"expected an event class, found keyword {tok.text.upper()} (quote it to use it as a class name)",
                tok,
            )
        return self.error(
            E_UNEXPECTED_TOKEN,
            f"expected an event class, '(', SEQ(, AND(, OR(, NOT( or '!', found {tok.describe()}",
            tok,
        )

    def function(self) -> PatternNode:
        name_tok = self.advance()
        open_tok = self.advance()
        name = name_tok.text.upper()
        if self.peek().is_op(")"):
            raise self.error(E_EMPTY_ARGUMENTS, f"{name}() needs at least one argument", name_tok, self.peek().end)
        args = [self.orseq(in_args=True)]
        while self.peek().is_op(","):
            self.advance()
            args.append(self.orseq(in_args=True))
        self.expect_close(open_tok, "','")
        span = (name_tok.start, self.toks[self.k - 1].end)
        if name == "NOT":
            if len(args) != 1:
                raise self.error(
                    E_NOT_ARITY,
                    "NOT takes exactly one argument; write NOT(SEQ(a, b)) or NOT(OR(a, b))",
                    name_tok,
                    span[1],
                )
            if isinstance(args[0], Not):
                raise PatternSemanticError(E_BAD_NOT, "NOT of a NOT is not allowed", self.text, *span)
            return Not(args[0], span=span)
        if len(args) == 1:
            return _regroup(args[0], span)
        if name == "SEQ":
            return _make_seq(args, [FOLLOWED] * (len(args) - 1), span)
        if name == "AND":
            return _make_and(args, span)
        return _make_or(args, span)

    def peek_quantifier(self) -> bool:
        tok = self.peek()
        return tok.is_op("*", "+", "?", "{") or (tok.is_op("[") and not self.peek(1).is_op("]"))

    def quantifier(self) -> tuple[int, int | None, tuple[int, int]] | None:
        tok = self.peek()
        if tok.is_op("*", "+", "?"):
            self.advance()
            bounds = {"*": (0, None), "+": (1, None), "?": (0, 1)}[tok.text]
            return bounds[0], bounds[1], (tok.start, tok.end)
        if tok.is_op("[") and not self.peek(1).is_op("]"):
            self.advance()
            n = self.bound(tok, "[n]")
            close = self.peek()
            if not close.is_op("]"):
                raise self.error(E_BAD_QUANTIFIER, "expected ']' after the count in [n]", close)
            self.advance()
            return n, n, (tok.start, close.end)
        if not tok.is_op("{"):
            return None
        self.advance()
        if self.peek().is_op("}"):
            raise self.error(
                E_BAD_QUANTIFIER,
                "a quantifier needs a bound inside '{}', e.g. A{3} or A{2,5}",
                tok,
                self.peek().end,
            )
        if self.peek().is_op(","):
            raise self.error(E_BAD_QUANTIFIER, "a quantifier needs a lower bound, e.g. A{0,5}", self.peek())
        lo = self.bound(tok, "{n,m}")
        hi: int | None = lo
        if self.peek().is_op(","):
            self.advance()
            hi = None if self.peek().is_op("}") else self.bound(tok, "{n,m}")
        close = self.peek()
        if not close.is_op("}"):
            if close.kind == EOF:
                raise self.error(E_UNCLOSED_BRACKET, "'{' is never closed with '}'", tok)
            raise self.error(
                E_BAD_QUANTIFIER,
                f"expected '}}' to close the quantifier, found {close.describe()}",
                close,
            )
        self.advance()
        return lo, hi, (tok.start, close.end)

    def bound(self, open_tok: Token, form: str) -> int:
        sign = 1
        tok = self.peek()
        if tok.is_op("-"):
            sign = -1
            self.advance()
            tok = self.peek()
        if tok.kind != NUMBER or not tok.text.isdigit():
            if tok.kind == EOF:
                raise self.error(E_UNCLOSED_BRACKET, f"'{open_tok.text}' is never closed", open_tok)
            raise self.error(
                E_BAD_QUANTIFIER,
                f"a quantifier bound must be a whole number as in {form}, found {tok.describe()}",
                tok,
            )
        self.advance()
        if len(tok.text) > 9:
            raise PatternLimitError(
                E_REPEAT_TOO_LARGE,
                f"quantifier bound {tok.text[:20]} exceeds the maximum {self.limits.max_repeat}",
                self.text,
                tok.start,
                tok.end,
            )
        return sign * int(tok.text)

    def timed(self, node: PatternNode, start: int) -> Timed:
        ranges: list[tuple[int, int]] = []
        while self.peek().is_op("@"):
            at = self.advance()
            open_tok = self.peek()
            if not open_tok.is_op("("):
                raise self.error(E_UNEXPECTED_TOKEN, f"expected '(' after '@', found {open_tok.describe()}", open_tok)
            self.advance()
            first = self.k
            last = self.region(stop_words=CLAUSE_KEYWORDS, until_close=open_tok)
            if first == last:
                raise self.error(E_EMPTY_CONDITION, "empty condition in @()", at, self.peek().end)
            ranges.append((first, last))
            self.advance()  # ')'
        span = (start, self.toks[self.k - 1].end)
        self.pending[span] = ranges
        return Timed(node, (), span=span)

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

    # -- clauses ------------------------------------------------------------------------------
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

    # -- post-processing ----------------------------------------------------------------------
    def finish_pattern(self, pattern: PatternNode) -> PatternNode:
        """Apply the alias rule and attach the compiled ``@(...)`` conditions."""
        aliases = _assign_aliases(self.text, pattern)
        compiled: dict[tuple[int, int], tuple[Condition, ...]] = {}
        for span, ranges in self.pending.items():
            conds: list[Condition] = []
            for first, last in ranges:
                clause = compile_where(self.text, self.toks[first:last], self.limits, at=self.toks[first].start)
                extra = [s for _, s in clause.policies] + list(clause.equivalence_spans)
                if extra:
                    raise PatternSyntaxError(
                        E_BAD_POLICY_OR_EQUIVALENCE,
                        "policy keywords and [attr] equivalences belong in WHERE, not in @(...)",
                        self.text,
                        *extra[0],
                    )
                conds.extend(clause.conditions)
            compiled[span] = tuple(conds)
        return _rebuild(pattern, iter(aliases), compiled)


# ---------------------------------------------------------------------------------------------
# Tree helpers
# ---------------------------------------------------------------------------------------------


def _regroup(node: PatternNode, span: tuple[int, int]) -> PatternNode:
    """Give a parenthesised operator node the span including its brackets."""
    if isinstance(node, (Seq, And, Or)):
        return replace(node, span=span)
    return node


def _make_seq(parts: list[PatternNode], links: list[str], span: tuple[int, int]) -> Seq:
    flat_parts: list[PatternNode] = []
    flat_links: list[str] = []
    for idx, part in enumerate(parts):
        if idx:
            flat_links.append(links[idx - 1])
        if isinstance(part, Seq):
            flat_parts.extend(part.parts)
            flat_links.extend(part.links)
        else:
            flat_parts.append(part)
    return Seq(tuple(flat_parts), tuple(flat_links), span=span)


def _make_and(parts: list[PatternNode], span: tuple[int, int]) -> And:
    flat: list[PatternNode] = []
    for part in parts:
        flat.extend(part.parts if isinstance(part, And) else (part,))
    return And(tuple(flat), span=span)


def _make_or(parts: list[PatternNode], span: tuple[int, int]) -> Or:
    flat: list[PatternNode] = []
    for part in parts:
        flat.extend(part.parts if isinstance(part, Or) else (part,))
    return Or(tuple(flat), span=span)


def _assign_aliases(text: str, pattern: PatternNode) -> list[str]:
    """Final alias of every event, in order of appearance (see the module docstring)."""
    from cep.lang.ast import events

    evs = events(pattern)
    unaliased: dict[str, int] = {}
    for ev in evs:
        if not ev.alias:
            unaliased[ev.cls] = unaliased.get(ev.cls, 0) + 1
    seen_count: dict[str, int] = {}
    result: list[str] = []
    owner: dict[str, str] = {}  # alias -> how its first owner got it
    for ev in evs:
        if ev.alias:
            alias, how = ev.alias, f"the explicit alias of an event of class {ev.cls}"
        elif unaliased[ev.cls] > 1:
            seen_count[ev.cls] = seen_count.get(ev.cls, 0) + 1
            alias = f"{ev.cls}{seen_count[ev.cls]}"
            how = f"the automatic alias of the {_ordinal(seen_count[ev.cls])} unaliased event of class {ev.cls}"
        else:
            alias, how = ev.cls, f"the default alias (class name) of an event of class {ev.cls}"
        if alias in owner:
            where = ev.alias_span or ev.span
            raise PatternSemanticError(
                E_DUPLICATE_ALIAS,
                f"alias '{alias}' is used twice: it is {owner[alias]} and {how}; give one of them another alias",
                text,
                where[0],
                where[1],
            )
        owner[alias] = how
        result.append(alias)
    return result


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _rebuild(
    node: PatternNode,
    aliases: Iterator[str],
    compiled: dict[tuple[int, int], tuple[Condition, ...]],
) -> PatternNode:
    """Return ``node`` with final aliases and compiled conditions (pre-order = event order)."""
    if isinstance(node, Event):
        return replace(node, alias=next(aliases))
    if isinstance(node, (Seq, And, Or)):
        return replace(node, parts=tuple(_rebuild(p, aliases, compiled) for p in node.parts))
    if isinstance(node, Timed):
        part = _rebuild(node.part, aliases, compiled)
        return replace(node, part=part, conditions=compiled[node.span])
    return replace(node, part=_rebuild(node.part, aliases, compiled))  # type: ignore[union-attr]
