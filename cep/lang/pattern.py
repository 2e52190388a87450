"""The pattern of a query: the grammar of its elements, from PATTERN up to the first clause.

:class:`PatternParser` reads ``orseq`` down to ``prim``, quantifiers, aliases and ``@(...)``
conditions (the grammar and its decisions are in :mod:`cep.lang.parser`), builds the nodes of
:mod:`cep.lang.ast` with nested sequences and operators flattened, and at the end applies the
alias rule (:mod:`cep.lang.aliases`) and compiles the ``@(...)`` conditions.

Example:
    >>> from cep.lang.limits import DEFAULT_LIMITS
    >>> from cep.lang.tokens import tokenize
    >>> text = "PATTERN A; (B+ b[], C) WITHIN 1 HOUR"
    >>> p = PatternParser(text, tokenize(text)[1:], DEFAULT_LIMITS)
    >>> node = p.finish_pattern(p.orseq(in_args=False))
    >>> [type(n).__name__ for n in node.parts], node.links, p.peek().text
    (['Event', 'Kleene', 'Event'], ('followed', 'next'), 'WITHIN')
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from cep.lang.aliases import assign_aliases
from cep.lang.ast import FOLLOWED, NEXT, And, Condition, Event, Kleene, Not, Or, PatternNode, Seq, Timed
from cep.lang.cursor import CLAUSE_KEYWORDS, OPERATOR_WORDS, RESERVED, Cursor
from cep.lang.errors import (
    E_BAD_ALIAS,
    E_BAD_NOT,
    E_BAD_POLICY_OR_EQUIVALENCE,
    E_BAD_QUANTIFIER,
    E_CLAUSE_ORDER,
    E_EMPTY_ARGUMENTS,
    E_EMPTY_CONDITION,
    E_NOT_ARITY,
    E_REPEAT_TOO_LARGE,
    E_UNCLOSED_BRACKET,
    E_UNEXPECTED_END,
    E_UNEXPECTED_TOKEN,
    E_UNMATCHED_BRACKET,
    PatternLimitError,
    PatternSemanticError,
    PatternSyntaxError,
)
from cep.lang.limits import Limits
from cep.lang.tokens import DQ, EOF, IDENT, NUMBER, QIDENT, STRING, Token
from cep.lang.where_clause import compile_where


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


class PatternParser(Cursor):
    """The pattern grammar over a :class:`cep.lang.cursor.Cursor`, one parse of one text."""

    def __init__(self, text: str, tokens: list[Token], limits: Limits) -> None:
        super().__init__(text, tokens, limits)
        # Token ranges of '@(...)' conditions, compiled after the recursive descent returns so
        # that sqlglot's deep recursion starts from a shallow stack.
        self.pending: dict[tuple[int, int], list[tuple[int, int]]] = {}

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

    # -- post-processing ----------------------------------------------------------------------
    def finish_pattern(self, pattern: PatternNode) -> PatternNode:
        """Apply the alias rule and attach the compiled ``@(...)`` conditions."""
        aliases = assign_aliases(self.text, pattern)
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
