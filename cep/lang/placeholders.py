"""Placeholder SQL: one condition's tokens rewritten into SQL that sqlglot can parse.

The :class:`Rewriter` walks a condition's tokens once. Every reference to event data becomes
one backtick-quoted placeholder column named by the reference's canonical text (and one
:class:`cep.lang.ast.Ref` that explains it); keywords, operators, literals and the allowed
functions pass through as written; anything else is refused here, by token, with a message
about what the user wrote. Each output :class:`Piece` keeps the span of the text it came from,
so that :mod:`cep.lang.conditions` can map a sqlglot error back to the user's text.

References (``alias`` and ``attr`` are identifiers or backtick-quoted names; a double-quoted name
followed by ``.`` is an alias too):

=========================  ======================================  =============================
written                    placeholder column                      AST
=========================  ======================================  =============================
``a.x``                    ```a.x```                               ``AttrRef("a", "x")``
``x`` (DEFINE only)        ```x```                                 ``AttrRef(None, "x")``
``b[i].x``, ``b[i-1].x``   ```b[i].x```, ```b[i-1].x```            ``IterRef``
``b[1].x``                 ```b[1].x```                            ``IterRef`` (absolute, 1-based)
``avg(b[..i-1].x)``        ```avg(b[..i-1].x)```                   ``AggRef`` (avg sum min max count)
``avg(b.x)``               ```avg(b.x)```                          ``AggRef`` over all iterations
``t(a)``, ``t(b[i])``      ```t(a)```                              ``TsRef``
``$x``                     ```$x```                                ``VarRef``
``5 MINUTES``              ``INTERVAL '5' MINUTE``                 (time literal; ``5 UNITS`` is 5)
=========================  ======================================  =============================

Example:
    >>> from cep.lang.tokens import tokenize
    >>> text = "avg(b[..i-1].x) < t(a) + 5 MINUTES"
    >>> pieces, refs = Rewriter(text, tokenize(text)[:-1], WHERE, None).run()
    >>> join_pieces(pieces)[0]
    "`avg(b[..i-1].x)` < `t(a)` + INTERVAL '5' MINUTE"
    >>> [type(r).__name__ for r in refs]
    ['AggRef', 'TsRef']
"""

from __future__ import annotations

from dataclasses import dataclass

from cep.lang.ast import POLICIES, AggRef, AttrRef, Index, IterRef, Ref, TsRef, VarRef
from cep.lang.errors import (
    E_BAD_INDEX,
    E_BAD_LIKE,
    E_BAD_NUMBER,
    E_BAD_POLICY_OR_EQUIVALENCE,
    E_BAD_REFERENCE,
    E_BAD_TIME_LITERAL,
    E_CONDITION_SYNTAX,
    E_DEFINE_SCOPE,
    E_DQ_BACKSLASH,
    E_FORBIDDEN_SQL,
    E_FUNCTION_NOT_ALLOWED,
    E_MISSING_ALIAS,
    E_UNEXPECTED_TOKEN,
    PatternSemanticError,
    PatternSyntaxError,
)
from cep.lang.like import like_problem
from cep.lang.tokens import DQ, EOF, IDENT, NUMBER, QIDENT, STRING, VAR, Token
from cep.lang.words import (
    AGGREGATES,
    ALLOWED_FUNCTIONS,
    CAST_TYPES,
    DEFINE,
    FORBIDDEN_WORDS,
    FUNCTIONS,
    SQL_KEYWORDS,
    WHERE,
    policy_words,
    unit_of,
)


@dataclass(frozen=True)
class Piece:
    """A run of rewritten SQL and the span of the text it stands for."""

    sql: str
    start: int
    end: int


def _placeholder(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def join_pieces(pieces: list[Piece]) -> tuple[str, list[int]]:
    """The pieces' SQL joined by spaces, and where each piece starts in it."""
    starts: list[int] = []
    pos = 0
    for p in pieces:
        starts.append(pos)
        pos += len(p.sql) + 1
    return " ".join(p.sql for p in pieces), starts


_PASS_THROUGH_OPS = frozenset(
    {"(", ")", ",", "=", "==", "<>", "!=", "<", "<=", ">", ">=", "<=>", "+", "-", "*", "/", "%"}
)
_OP_HINTS = {
    "|": "use OR",
    "&": "use AND",
    "!": "use NOT",
    ";": "';' is not allowed in a condition",
    "@": "'@(...)' belongs after a pattern element",
}


class Rewriter:
    """Walks a condition's tokens once, emitting SQL pieces and collecting references."""

    def __init__(self, text: str, tokens: list[Token], kind: str, subject: str | None) -> None:
        self.text = text
        self.toks = tokens
        self.kind = kind
        self.subject = subject
        self.k = 0
        self.pieces: list[Piece] = []
        self.refs: list[Ref] = []
        self.paren = 0
        self.casts: list[int] = []  # paren depth inside each open CAST(

    # -- helpers ------------------------------------------------------------------------------
    def tok(self, ahead: int = 0) -> Token:
        j = self.k + ahead
        if j < len(self.toks):
            return self.toks[j]
        end = self.toks[-1].end
        return Token(EOF, "", "", end, end)

    def emit(self, sql: str, start: int, end: int) -> None:
        self.pieces.append(Piece(sql, start, end))

    def fail(self, code: str, message: str, tok: Token, end: int | None = None, semantic: bool = False) -> None:
        cls = PatternSemanticError if semantic else PatternSyntaxError
        raise cls(code, message, self.text, tok.start, tok.end if end is None else end)

    def string(self, tok: Token) -> None:
        """A string literal; after LIKE/ILIKE, a pattern Spark accepts."""
        if tok.kind == DQ and "\\" in tok.value:
            # Spark reads backslash escapes in "..." too; the pattern tokenizer does not (there
            # it is a class name), so the two would disagree: refuse rather than guess.
            self.fail(E_DQ_BACKSLASH, "a double-quoted string in a condition cannot hold a "
                      "backslash: write it in single quotes, as Spark SQL reads it", tok)
        before = self.toks[self.k - 1] if self.k > 0 else None
        if before is not None and before.is_kw("LIKE", "ILIKE"):
            problem = like_problem(tok.value)
            if problem is not None:
                self.fail(E_BAD_LIKE, f"Spark's LIKE refuses this pattern: {problem}", tok)
        self.k += 1
        self.emit(_sql_string(tok.value), tok.start, tok.end)

    def add_ref(self, ref: Ref) -> None:
        self.refs.append(ref)
        self.emit(_placeholder(ref.name), ref.span[0], ref.span[1])

    # -- main loop ----------------------------------------------------------------------------
    def run(self) -> tuple[list[Piece], list[Ref]]:
        while self.k < len(self.toks):
            self.step()
        return self.pieces, self.refs

    def step(self) -> None:
        tok = self.tok()
        nxt = self.tok(1)
        if tok.kind == IDENT:
            self.ident(tok, nxt)
        elif tok.kind == QIDENT and nxt.is_op("("):
            self.fail(
                E_FUNCTION_NOT_ALLOWED,
                f"function {tok.text} is not allowed; allowed functions: {', '.join(ALLOWED_FUNCTIONS)}",
                tok,
            )
        elif tok.kind == QIDENT or (tok.kind == DQ and nxt.is_op(".")):
            if nxt.is_op(".", "["):
                self.reference(tok)
            else:
                self.k += 1
                self.bare(tok)
        elif tok.kind in (STRING, DQ):
            self.string(tok)
        elif tok.kind == NUMBER:
            self.number(tok, nxt)
        elif tok.kind == VAR:
            # Allowed in DEFINE too: a join variable is a cross-event constraint the matchers
            # evaluate on whole bindings (docs/semantics.md, "Join variables").
            self.k += 1
            self.add_ref(VarRef(tok.value, span=(tok.start, tok.end)))
        else:
            self.operator(tok)

    def operator(self, tok: Token) -> None:
        if tok.text in _PASS_THROUGH_OPS:
            self.k += 1
            if tok.text == "(":
                self.paren += 1
            elif tok.text == ")":
                self.paren -= 1
                if self.casts and self.paren < self.casts[-1]:
                    self.casts.pop()
            self.emit(tok.text, tok.start, tok.end)
            return
        if tok.text == ";":
            self.fail(E_FORBIDDEN_SQL, "';' is not allowed in a condition (no statements)", tok)
        if tok.text == "[" and self.kind == WHERE:
            self.fail(
                E_BAD_POLICY_OR_EQUIVALENCE,
                "an equivalence [attr] must be a conjunct of its own, joined to the others with AND",
                tok,
            )
        hint = _OP_HINTS.get(tok.text)
        suffix = f" ({hint})" if hint else ""
        self.fail(E_UNEXPECTED_TOKEN, f"unexpected {tok.describe()} in a condition{suffix}", tok)

    def number(self, tok: Token, nxt: Token) -> None:
        unit = unit_of(nxt.text) if nxt.kind == IDENT else None
        self.k += 1
        if unit is None:
            self.emit(tok.text, tok.start, tok.end)
            return
        self.k += 1
        if unit == "EVENTS":
            self.fail(E_BAD_TIME_LITERAL, "EVENTS is not a unit of time; use it in WITHIN only", nxt)
        if unit == "UNITS":
            self.emit(tok.text, tok.start, nxt.end)
            return
        self.emit(f"INTERVAL '{tok.text}' {unit[:-1]}", tok.start, nxt.end)

    def ident(self, tok: Token, nxt: Token) -> None:
        word = tok.text.upper()
        # A name followed by '.' (or directly by '[') is an alias, even one spelled like a
        # keyword (a class called "Or"): no SQL keyword is followed by those. "AND [id]" with a
        # space is the keyword before an equivalence.
        if nxt.is_op(".") or (nxt.is_op("[") and (word not in SQL_KEYWORDS or nxt.start == tok.end)):
            self.reference(tok)
            return
        if word in SQL_KEYWORDS:
            self.k += 1
            self.emit(word, tok.start, tok.end)
            return
        if word == "AS" and self.casts and self.paren == self.casts[-1]:
            self.cast_type(tok)
            return
        policy = policy_words(self.toks, self.k)
        if policy is not None and policy[1] in POLICIES:
            self.fail(
                E_BAD_POLICY_OR_EQUIVALENCE,
                "a selection policy must be a top-level conjunct of WHERE (joined with AND)",
                tok,
                self.toks[policy[0] - 1].end,
            )
        if nxt.is_op("("):
            self.function(tok)
            return
        if word in FORBIDDEN_WORDS:
            what = "aliasing with AS" if word == "AS" else f"SQL keyword {word}"
            self.fail(
                E_FORBIDDEN_SQL,
                f"{what} is not allowed in a condition (no subqueries or statements); "
                f"write a column with this name in backticks",
                tok,
            )
        self.k += 1
        self.bare(tok)

    def bare(self, tok: Token) -> None:
        """A bare attribute: the DEFINE subject's attribute, an error elsewhere."""
        if self.kind != DEFINE:
            self.fail(
                E_MISSING_ALIAS,
                f"attribute '{tok.value}' needs an alias, e.g. a.{tok.value} (conditions can mention several events)",
                tok,
                semantic=True,
            )
        self.add_ref(AttrRef(None, tok.value, span=(tok.start, tok.end)))

    def cast_type(self, as_tok: Token) -> None:
        self.k += 1
        type_tok = self.tok()
        if type_tok.kind != IDENT or type_tok.text.upper() not in CAST_TYPES:
            self.fail(
                E_CONDITION_SYNTAX,
                f"expected a type after AS in CAST, one of {', '.join(sorted(CAST_TYPES))}",
                type_tok,
            )
        self.k += 1
        sql = f"AS {type_tok.text.upper()}"
        end = type_tok.end
        if self.tok().is_op("("):
            params: list[str] = []
            self.k += 1
            while True:
                p = self.tok()
                if p.kind != NUMBER or not p.text.isdigit() or len(p.text) > 3:
                    self.fail(E_CONDITION_SYNTAX, "expected a small whole number as a type parameter", p)
                params.append(p.text)
                self.k += 1
                if self.tok().is_op(","):
                    self.k += 1
                    continue
                if not self.tok().is_op(")"):
                    self.fail(E_CONDITION_SYNTAX, "expected ',' or ')' in the type parameters", self.tok())
                end = self.tok().end
                self.k += 1
                break
            sql += "(" + ", ".join(params) + ")"
        self.emit(sql, as_tok.start, end)

    # -- functions ----------------------------------------------------------------------------
    def function(self, tok: Token) -> None:
        name = tok.text.lower()
        if name == "t":
            self.timestamp(tok)
        elif name in AGGREGATES:
            self.aggregate(tok)
        elif name == "cast":
            self.k += 2
            self.paren += 1
            self.casts.append(self.paren)
            self.emit("CAST(", tok.start, self.toks[self.k - 1].end)
        elif name in FUNCTIONS:
            self.k += 2
            self.paren += 1
            self.emit(f"{name.upper()}(", tok.start, self.toks[self.k - 1].end)
        elif tok.text.upper() in FORBIDDEN_WORDS:
            self.fail(E_FORBIDDEN_SQL, f"SQL keyword {tok.text.upper()} is not allowed in a condition", tok)
        else:
            self.fail(
                E_FUNCTION_NOT_ALLOWED,
                f"function '{tok.text}' is not allowed; allowed functions: {', '.join(ALLOWED_FUNCTIONS)}",
                tok,
            )

    def timestamp(self, tok: Token) -> None:
        self.k += 2  # t (
        name = self.tok()
        if name.kind not in (IDENT, QIDENT, DQ):
            self.fail(E_BAD_REFERENCE, "t() takes an alias, e.g. t(a) or t(b[i])", name)
        self.k += 1
        index = None
        if self.tok().is_op("["):
            index = self.index(allow_range=False)
        close = self.tok()
        if not close.is_op(")"):
            self.fail(E_BAD_REFERENCE, "t() takes one alias, e.g. t(a) or t(b[i]); expected ')'", close)
        self.k += 1
        alias = self.scope_check(name, index, extra="an iteration")
        self.add_ref(TsRef(alias, index, span=(tok.start, close.end)))

    def aggregate(self, tok: Token) -> None:
        func = tok.text.lower()
        shape = f"{func}() takes one iteration reference, e.g. {func}(b[..i-1].price) or {func}(b.price)"
        self.k += 2  # func (
        name = self.tok()
        if name.kind not in (IDENT, QIDENT, DQ) or not self.tok(1).is_op("[", ".", ")"):
            self.fail(E_FUNCTION_NOT_ALLOWED, shape, tok, self.tok().end)
        self.k += 1
        upto = None
        if self.tok().is_op("["):
            start_tok = self.tok()
            if not self.tok(1).is_op(".."):
                self.fail(E_BAD_REFERENCE, f"{func}() needs a range of iterations such as b[..i-1]", start_tok)
            upto = self.index(allow_range=True)
        attr = None
        if self.tok().is_op("."):
            attr_tok = self.tok(1)
            if attr_tok.kind not in (IDENT, QIDENT):
                self.fail(E_BAD_REFERENCE, "expected an attribute name after '.'", attr_tok)
            attr = attr_tok.value
            self.k += 2
        if not self.tok().is_op(")"):
            self.fail(E_FUNCTION_NOT_ALLOWED, shape, self.tok())
        if attr is None and func != "count":
            self.fail(
                E_BAD_REFERENCE,
                f"{func}() needs an attribute, e.g. {func}(b[..i-1].price)",
                name,
                self.tok().end,
            )
        close = self.tok()
        self.k += 1
        if self.kind == DEFINE:
            self.fail(
                E_DEFINE_SCOPE,
                "a DEFINE condition reads one event; aggregates are not allowed",
                tok,
                close.end,
                True,
            )
        self.add_ref(AggRef(func, name.value, attr, upto, span=(tok.start, close.end)))

    # -- references ---------------------------------------------------------------------------
    def reference(self, name: Token) -> None:
        """``alias.attr`` or ``alias[index].attr`` starting at ``name``."""
        self.k += 1
        index = None
        if self.tok().is_op("["):
            index = self.index(allow_range=False)
        dot = self.tok()
        if not dot.is_op("."):
            self.fail(E_BAD_REFERENCE, f"expected '.attribute' after {self.text[name.start:dot.start].strip()}", dot)
        attr_tok = self.tok(1)
        if attr_tok.kind not in (IDENT, QIDENT):
            self.fail(E_BAD_REFERENCE, "expected an attribute name after '.'", attr_tok)
        self.k += 2
        if self.tok().is_op("."):
            self.fail(
                E_BAD_REFERENCE,
                "a reference has the form alias.attribute (nested fields are not supported)",
                self.tok(),
            )
        span = (name.start, attr_tok.end)
        alias = self.scope_check(name, index, extra="an iteration")
        if index is None:
            self.add_ref(AttrRef(alias, attr_tok.value, span=span))
        else:
            assert alias is not None  # scope_check rejects indexes in DEFINE
            self.add_ref(IterRef(alias, attr_tok.value, index, span=span))

    def scope_check(self, name: Token, index: Index | None, extra: str) -> str | None:
        """Resolve the alias of a reference; in DEFINE only the defined class itself is allowed."""
        if self.kind != DEFINE:
            return name.value
        if index is not None:
            self.fail(
                E_DEFINE_SCOPE,
                f"a DEFINE condition reads one event; {extra} is not allowed",
                name,
                semantic=True,
            )
        if name.value != self.subject:
            self.fail(
                E_DEFINE_SCOPE,
                f"a DEFINE condition can only read the event it defines ({self.subject}), not '{name.value}'",
                name,
                semantic=True,
            )
        return None

    def index(self, allow_range: bool) -> Index:
        """Read ``[i]``, ``[i-k]``, ``[k]`` or (aggregates) ``[..i-k]``; ``self.k`` is at ``[``."""
        open_tok = self.tok()
        self.k += 1
        usage = "use b[i], b[i-1], b[1], or b[..i-1] inside an aggregate"
        if self.tok().is_op(".."):
            if not allow_range:
                self.fail(E_BAD_REFERENCE, "a range b[..i-1] is only allowed inside avg/sum/min/max/count", self.tok())
            self.k += 1
        tok = self.tok()
        if tok.is_op("]"):
            self.fail(E_BAD_REFERENCE, f"empty iteration index; {usage}", open_tok, tok.end)
        if tok.kind == NUMBER:
            self.k += 1
            result = Index(False, self.small_int(tok))
            if result.offset < 1:
                self.fail(E_BAD_INDEX, "iterations are numbered from 1; b[1] is the first", tok, semantic=True)
        elif tok.kind == IDENT and tok.text.lower() == "i":
            self.k += 1
            offset = 0
            sign = self.tok()
            if sign.is_op("+"):
                self.fail(E_BAD_REFERENCE, "a condition cannot look ahead to a later iteration (i+k)", sign)
            if sign.is_op("-"):
                num = self.tok(1)
                if num.kind != NUMBER:
                    self.fail(E_BAD_REFERENCE, f"expected a whole number after 'i-'; {usage}", num)
                offset = -self.small_int(num)
                self.k += 2
            result = Index(True, offset)
        else:
            self.fail(E_BAD_REFERENCE, f"invalid iteration index {tok.describe()}; {usage}", tok)
        close = self.tok()
        if not close.is_op("]"):
            self.fail(E_BAD_REFERENCE, f"expected ']' to close the iteration index; {usage}", close)
        self.k += 1
        return result

    def small_int(self, tok: Token) -> int:
        if not tok.text.isdigit():
            self.fail(E_BAD_REFERENCE, f"an iteration index must be a whole number, not {tok.text}", tok)
        if len(tok.text) > 9:
            self.fail(E_BAD_NUMBER, f"number {tok.text[:20]} is too large", tok)
        return int(tok.text)
