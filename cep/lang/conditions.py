"""Conditions: SQL boolean expressions over event references, checked and parsed with sqlglot.

A condition is rebuilt from its tokens into SQL that sqlglot can parse: every reference to
event data becomes one backtick-quoted placeholder column named by the reference's canonical
text, and everything else must be on an allow-list. sqlglot (dialect ``spark``) then parses the
result, and the parsed tree is walked once more against an allow-list of node types, so a user
string can never smuggle a subquery, a statement or an unknown function into Spark.

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

Allowed SQL: comparisons (``= == <> != < <= > >= <=>``), arithmetic (``+ - * / %``), ``AND OR
NOT``, ``IN (...)``, ``BETWEEN``, ``LIKE``/``ILIKE``, ``IS [NOT] NULL/TRUE/FALSE``, literals, and
the functions ``abs lower upper length coalesce cast`` plus ``t()`` and the aggregates above.
SQL keywords that start statements or subqueries (``SELECT``, ``DROP``, ...) are rejected by name;
a column with such a name must be written with backticks.

In WHERE, top-level ``AND`` splits conjuncts (``BETWEEN x AND y`` is respected; a top-level
``OR`` keeps the whole clause one condition, as SQL precedence requires). A conjunct may also be
a selection policy (``strict-contiguity``, ``skip-till-next-match``, ``skip-till-any-match``) or
an equivalence ``[attr]`` / ``[attr1, attr2]``.

Example:
    >>> c = parse_condition("s[i].price > 1.05 * s[i-1].price")
    >>> c.sql
    '`s[i].price` > 1.05 * `s[i-1].price`'
    >>> [r.name for r in c.refs], c.single_event
    (['s[i].price', 's[i-1].price'], False)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from cep.lang.ast import (
    POLICIES,
    TIME_UNITS,
    AggRef,
    AttrRef,
    Condition,
    Equivalence,
    Index,
    IterRef,
    Ref,
    TsRef,
    VarRef,
)
from cep.lang.errors import (
    E_BAD_NUMBER,
    E_BAD_POLICY_OR_EQUIVALENCE,
    E_BAD_REFERENCE,
    E_BAD_TIME_LITERAL,
    E_BAD_INDEX,
    E_BAD_LIKE,
    E_CONDITION_SYNTAX,
    E_CONDITION_TOO_DEEP,
    E_CONDITION_TOO_LARGE,
    E_DEFINE_SCOPE,
    E_DQ_BACKSLASH,
    E_EMPTY_CONDITION,
    E_FORBIDDEN_SQL,
    E_FUNCTION_NOT_ALLOWED,
    E_MISSING_ALIAS,
    E_NOT_A_STRING,
    E_NOT_BOOLEAN,
    E_UNEXPECTED_TOKEN,
    PatternLimitError,
    PatternSemanticError,
    PatternSyntaxError,
)
from cep.lang.like import like_problem
from cep.lang.limits import DEFAULT_LIMITS, Limits, check_text
from cep.lang.tokens import DQ, EOF, IDENT, NUMBER, OP, QIDENT, STRING, VAR, Token, tokenize

WHERE = "where"
TIMED = "timed"
DEFINE = "define"

# Keywords passed through to sqlglot as written (upper-cased).
_SQL_KEYWORDS = frozenset({"AND", "OR", "NOT", "IN", "IS", "NULL", "TRUE", "FALSE", "BETWEEN", "LIKE", "ILIKE"})
_FUNCTIONS = frozenset({"abs", "lower", "upper", "length", "coalesce"})
_AGGREGATES = frozenset({"avg", "sum", "min", "max", "count"})
ALLOWED_FUNCTIONS = tuple(sorted(_FUNCTIONS | _AGGREGATES | {"cast", "t"}))
_CAST_TYPES = frozenset(
    {
        "INT", "INTEGER", "BIGINT", "LONG", "SMALLINT", "SHORT", "TINYINT", "BYTE", "DOUBLE", "FLOAT",
        "REAL", "DECIMAL", "DEC", "NUMERIC", "STRING", "VARCHAR", "CHAR", "BOOLEAN", "DATE", "TIMESTAMP",
        "TIMESTAMP_NTZ",
    }
)  # fmt: skip
# Words that only ever start statements, subqueries or constructs outside the allow-list.
_FORBIDDEN_WORDS = frozenset(
    {
        "SELECT", "FROM", "INSERT", "UPDATE", "DELETE", "DROP", "CREATE", "ALTER", "TABLE", "UNION",
        "INTERSECT", "EXCEPT", "WITH", "INTO", "VALUES", "EXEC", "EXECUTE", "CALL", "GRANT", "REVOKE",
        "TRUNCATE", "MERGE", "JOIN", "LIMIT", "ORDER", "GROUP", "HAVING", "CASE", "WHEN", "THEN",
        "ELSE", "END", "EXISTS", "OVER", "INTERVAL", "DISTINCT", "ALL", "ANY", "SOME", "SET", "USE",
        "SHOW", "DESCRIBE", "LATERAL", "TRANSFORM", "REDUCE", "MAP", "ESCAPE", "RLIKE", "REGEXP",
        "DIV", "AS",
    }
)  # fmt: skip
_UNIT_WORDS: dict[str, str] = {}
for _canonical in TIME_UNITS:
    _UNIT_WORDS[_canonical] = _canonical
    _UNIT_WORDS[_canonical[:-1]] = _canonical
_UNIT_WORDS.update({"UNIT": "UNITS", "UNITS": "UNITS", "EVENT": "EVENTS", "EVENTS": "EVENTS"})

_BOOLEAN_NODES = (
    exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.In, exp.Between,
    exp.Like, exp.ILike, exp.Is, exp.Boolean,
)  # fmt: skip
_ALLOWED_NODES = _BOOLEAN_NODES + (
    exp.And, exp.Or, exp.Not, exp.Paren, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.Neg,
    exp.Null, exp.Literal, exp.Column, exp.Identifier, exp.Abs, exp.Lower, exp.Upper, exp.Length,
    exp.Coalesce, exp.Cast, exp.TryCast, exp.DataType, exp.DataTypeParam, exp.Interval, exp.Var,
)  # fmt: skip


@dataclass(frozen=True)
class WhereClause:
    """The parts of a WHERE clause: conditions, the policy keyword (if any), equivalences."""

    conditions: tuple[Condition, ...]
    policies: tuple[tuple[str, tuple[int, int]], ...]
    equivalences: tuple[Equivalence, ...]
    equivalence_spans: tuple[tuple[int, int], ...] = ()  # whole "[...]" conjuncts


def unit_of(word: str) -> str | None:
    """Canonical unit for ``word`` (``minute`` -> ``MINUTES``), or None if it is not a unit."""
    return _UNIT_WORDS.get(word.upper())


def parse_condition(
    text: str, *, kind: str = WHERE, subject: str | None = None, limits: Limits = DEFAULT_LIMITS
) -> Condition:
    """Parse one condition written on its own (spans index into ``text``).

    Args:
        text: the condition, e.g. ``"a.x > 5 AND b.y = 'z'"``.
        kind: ``"where"`` and ``"timed"`` need an alias on every attribute; ``"define"`` allows
            bare attributes, meaning the event being defined.
        subject: for ``"define"``, the class being defined (``F.status`` then means ``status``).
        limits: size and nesting limits.

    Returns:
        The parsed condition.

    Raises:
        PatternError: syntax, forbidden SQL or a limit, with the position in ``text``.

    Example:
        >>> parse_condition("status = 'denied'", kind="define", subject="F").refs
        (AttrRef(alias=None, attr='status', span=(0, 6)),)
    """
    if not isinstance(text, str):
        raise PatternSyntaxError(E_NOT_A_STRING, "a condition must be a string", "", 0)
    check_text(text, limits)
    tokens = tokenize(text)
    return compile_condition(text, tokens[:-1], kind=kind, subject=subject, limits=limits, at=len(text))


def compile_where(text: str, tokens: Sequence[Token], limits: Limits, at: int) -> WhereClause:
    """Split a WHERE clause into conjuncts and compile each one.

    Args:
        text: the whole query text.
        tokens: the tokens after ``WHERE`` up to the next clause (no EOF token).
        limits: size and nesting limits.
        at: offset to report when the clause is empty.
    """
    conditions: list[Condition] = []
    policies: list[tuple[str, tuple[int, int]]] = []
    equivalences: list[Equivalence] = []
    bracket_spans: list[tuple[int, int]] = []
    for part in split_conjuncts(text, tokens, at):
        policy = _policy_of(text, part)
        if policy is not None:
            policies.append((policy, (part[0].start, part[-1].end)))
            continue
        if part[0].is_op("["):
            equivalences.extend(_equivalences(text, part))
            bracket_spans.append((part[0].start, part[-1].end))
            continue
        conditions.append(compile_condition(text, part, kind=WHERE, limits=limits))
    return WhereClause(tuple(conditions), tuple(policies), tuple(equivalences), tuple(bracket_spans))


def split_conjuncts(text: str, tokens: Sequence[Token], at: int) -> list[list[Token]]:
    """Split tokens at top-level ``AND`` (not the one of ``BETWEEN x AND y``).

    A top-level ``OR`` binds looser than ``AND`` in SQL, so then the tokens stay one conjunct.

    Raises:
        PatternSyntaxError: an empty conjunct (``WHERE AND ...``, ``x AND``, nothing at all).
    """
    if not tokens:
        raise PatternSyntaxError(E_EMPTY_CONDITION, "expected a condition", text, at, at)
    depth = 0
    top_or = False
    for k, tok in enumerate(tokens):
        if tok.is_op("(", "["):
            depth += 1
        elif tok.is_op(")", "]"):
            depth -= 1
        elif depth == 0 and tok.is_kw("OR") and not (k and tokens[k - 1].is_op(".")):
            top_or = True
    if top_or:
        return [list(tokens)]
    parts: list[list[Token]] = []
    current: list[Token] = []
    depth = 0
    pending_between = 0
    for k, tok in enumerate(tokens):
        after_dot = k > 0 and tokens[k - 1].is_op(".")
        if tok.is_op("(", "["):
            depth += 1
        elif tok.is_op(")", "]"):
            depth -= 1
        elif depth == 0 and not after_dot and tok.is_kw("BETWEEN"):
            pending_between += 1
        elif depth == 0 and not after_dot and tok.is_kw("AND"):
            if pending_between:
                pending_between -= 1
            else:
                if not current:
                    raise PatternSyntaxError(
                        E_EMPTY_CONDITION,
                        "expected a condition before AND",
                        text,
                        tok.start,
                        tok.end,
                    )
                parts.append(current)
                current = []
                continue
        current.append(tok)
    if not current:
        last = tokens[-1]
        raise PatternSyntaxError(E_EMPTY_CONDITION, "expected a condition after AND", text, last.start, last.end)
    parts.append(current)
    return parts


def _policy_words(tokens: Sequence[Token], k: int) -> tuple[int, str] | None:
    """Read ``word-word-...`` starting at ``tokens[k]``; return (end index, lower-case text)."""
    if k >= len(tokens) or tokens[k].kind != IDENT:
        return None
    words = [tokens[k].text.lower()]
    j = k + 1
    while j + 1 < len(tokens) and tokens[j].is_op("-") and tokens[j + 1].kind == IDENT:
        words.append(tokens[j + 1].text.lower())
        j += 2
    if len(words) < 2:
        return None
    return j, "-".join(words)


def _policy_of(text: str, part: Sequence[Token]) -> str | None:
    """The policy a whole conjunct names, None if it is not a policy; raise on a near-miss."""
    read = _policy_words(part, 0)
    if read is None or read[0] != len(part):
        return None
    name = read[1]
    if name in POLICIES:
        return name
    if name.split("-")[0] in ("skip", "strict"):
        raise PatternSyntaxError(
            E_BAD_POLICY_OR_EQUIVALENCE,
            f"unknown selection policy '{name}'; expected one of {', '.join(POLICIES)}",
            text,
            part[0].start,
            part[-1].end,
        )
    return None


def _equivalences(text: str, part: Sequence[Token]) -> list[Equivalence]:
    """Read ``[attr]`` or ``[attr1, attr2]`` covering the whole conjunct."""
    bad = PatternSyntaxError(
        E_BAD_POLICY_OR_EQUIVALENCE,
        "an equivalence is written [attr] or [attr1, attr2], as a conjunct of its own",
        text,
        part[0].start,
        part[-1].end,
    )
    if len(part) < 3 or not part[-1].is_op("]"):
        raise bad
    out: list[Equivalence] = []
    inner = part[1:-1]
    for k, tok in enumerate(inner):
        if k % 2 == 0:
            if tok.kind not in (IDENT, QIDENT):
                raise bad
            out.append(Equivalence(tok.value, span=(tok.start, tok.end)))
        elif not tok.is_op(","):
            raise bad
    if len(inner) % 2 == 0:
        raise bad
    return out


def compile_condition(
    text: str,
    tokens: Sequence[Token],
    *,
    kind: str,
    subject: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
    at: int | None = None,
) -> Condition:
    """Turn the tokens of one condition into a :class:`Condition`.

    Args:
        text: the whole text the tokens come from.
        tokens: the condition's tokens (no EOF token).
        kind: ``"where"``, ``"timed"`` or ``"define"`` (see :func:`parse_condition`).
        subject: the class a ``"define"`` condition defines.
        limits: size and nesting limits.
        at: offset to report when ``tokens`` is empty.
    """
    if not tokens:
        pos = at if at is not None else 0
        raise PatternSyntaxError(E_EMPTY_CONDITION, "expected a condition", text, pos, pos)
    _check_depth(text, tokens, limits)
    rewriter = _Rewriter(text, list(tokens), kind, subject)
    pieces, refs = rewriter.run()
    sql, starts = _join(pieces)
    first, last = tokens[0].start, tokens[-1].end
    expr = _parse_sql(text, sql, starts, pieces, (first, last))
    _check_allowed(text, expr, {r.name for r in refs}, starts, pieces, (first, last))
    if not _is_boolean(expr):
        raise PatternSyntaxError(
            E_NOT_BOOLEAN,
            "a condition must be true or false (a comparison, IN, LIKE, IS NULL, ...), not a value",
            text,
            first,
            last,
        )
    try:
        rendered = expr.sql(dialect="spark")
    except RecursionError:
        raise PatternLimitError(E_CONDITION_TOO_DEEP, "condition is too complex", text, first, last) from None
    return Condition(text[first:last], rendered, tuple(refs), expr=expr, span=(first, last))


# ---------------------------------------------------------------------------------------------
# Depth limit (sqlglot recurses per nesting level and per prefix operator)
# ---------------------------------------------------------------------------------------------


_COUNTED_WORDS = ("AND", "OR", "NOT", "IN", "IS", "BETWEEN", "LIKE", "ILIKE")
_NOT_OPERATORS = ("(", ")", "[", "]", ",", ".")


def _check_depth(text: str, tokens: Sequence[Token], limits: Limits) -> None:
    """Check the nesting (brackets and prefix operators) and the number of operators."""
    unary = [0]
    prev: Token | None = None
    operators = 0
    for tok in tokens:
        if (tok.kind == OP and not tok.is_op(*_NOT_OPERATORS)) or tok.is_kw(*_COUNTED_WORDS):
            operators += 1
            if operators > limits.max_condition_operators:
                raise PatternLimitError(
                    E_CONDITION_TOO_LARGE,
                    f"condition has more than {limits.max_condition_operators} operators; "
                    "split it (several WHERE conjuncts, IN (...) for a list of values)",
                    text,
                    tok.start,
                    tok.end,
                )
        if tok.is_op("(", "["):
            unary.append(0)
        elif tok.is_op(")", "]"):
            if len(unary) > 1:
                unary.pop()
            unary[-1] = 0
        elif tok.is_kw("NOT") or (tok.is_op("-", "+") and _prefix_position(prev)):
            unary[-1] += 1
        elif tok.kind != OP and not tok.is_kw(*_SQL_KEYWORDS):
            unary[-1] = 0
        depth = len(unary) - 1 + sum(unary)
        if depth > limits.max_condition_depth:
            raise PatternLimitError(
                E_CONDITION_TOO_DEEP,
                f"condition nests {depth} levels deep (brackets and prefix operators); "
                f"the maximum is {limits.max_condition_depth}",
                text,
                tok.start,
                tok.end,
            )
        prev = tok


def _prefix_position(prev: Token | None) -> bool:
    if prev is None:
        return True
    if prev.kind == OP:
        return not prev.is_op(")", "]")
    return prev.is_kw(*_SQL_KEYWORDS) and not prev.is_kw("NULL", "TRUE", "FALSE")


# ---------------------------------------------------------------------------------------------
# Rewriting tokens into placeholder SQL
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Piece:
    sql: str
    start: int
    end: int


def _placeholder(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _join(pieces: list[_Piece]) -> tuple[str, list[int]]:
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


class _Rewriter:
    """Walks a condition's tokens once, emitting SQL pieces and collecting references."""

    def __init__(self, text: str, tokens: list[Token], kind: str, subject: str | None) -> None:
        self.text = text
        self.toks = tokens
        self.kind = kind
        self.subject = subject
        self.k = 0
        self.pieces: list[_Piece] = []
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
        self.pieces.append(_Piece(sql, start, end))

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
    def run(self) -> tuple[list[_Piece], list[Ref]]:
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
        if nxt.is_op(".") or (nxt.is_op("[") and (word not in _SQL_KEYWORDS or nxt.start == tok.end)):
            self.reference(tok)
            return
        if word in _SQL_KEYWORDS:
            self.k += 1
            self.emit(word, tok.start, tok.end)
            return
        if word == "AS" and self.casts and self.paren == self.casts[-1]:
            self.cast_type(tok)
            return
        policy = _policy_words(self.toks, self.k)
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
        if word in _FORBIDDEN_WORDS:
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
        if type_tok.kind != IDENT or type_tok.text.upper() not in _CAST_TYPES:
            self.fail(
                E_CONDITION_SYNTAX,
                f"expected a type after AS in CAST, one of {', '.join(sorted(_CAST_TYPES))}",
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
        elif name in _AGGREGATES:
            self.aggregate(tok)
        elif name == "cast":
            self.k += 2
            self.paren += 1
            self.casts.append(self.paren)
            self.emit("CAST(", tok.start, self.toks[self.k - 1].end)
        elif name in _FUNCTIONS:
            self.k += 2
            self.paren += 1
            self.emit(f"{name.upper()}(", tok.start, self.toks[self.k - 1].end)
        elif tok.text.upper() in _FORBIDDEN_WORDS:
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


# ---------------------------------------------------------------------------------------------
# sqlglot parsing, error mapping and the allow-list walk
# ---------------------------------------------------------------------------------------------


def _origin(rewritten_offset: int, starts: list[int], pieces: list[_Piece], whole: tuple[int, int]) -> tuple[int, int]:
    """Map an offset in the rewritten SQL back to the original span of its piece."""
    if not pieces:
        return whole
    best = 0
    for idx, start in enumerate(starts):
        if start <= rewritten_offset:
            best = idx
        else:
            break
    piece = pieces[best]
    if rewritten_offset >= starts[best] + len(piece.sql):
        # Past the end of the last piece: the condition ended too early.
        if best == len(pieces) - 1:
            return (whole[1], whole[1])
    return (piece.start, piece.end)


def _friendly(description: str, highlight: str) -> str:
    if description.startswith("Expecting )"):
        return "expected ')'"
    if description.startswith("Invalid expression / Unexpected token"):
        return f"unexpected '{highlight}'" if highlight else "unexpected token"
    if description.startswith("Required keyword") and "Between" in description:
        return "BETWEEN needs two bounds: x BETWEEN low AND high"
    if description.startswith("Required keyword"):
        return f"'{highlight}' is missing an operand" if highlight else "incomplete expression"
    if description.startswith("Expected TYPE after CAST"):
        return "expected a type after AS in CAST"
    # sqlglot names its classes in some messages; an analyst does not need them.
    cleaned = description
    while "<class '" in cleaned:
        a = cleaned.index("<class '")
        b = cleaned.find("'>", a)
        if b < 0:
            break
        cleaned = cleaned[:a] + cleaned[a + 8 : b].rsplit(".", 1)[-1] + cleaned[b + 2 :]
    return cleaned[:200]


def _parse_sql(
    text: str, sql: str, starts: list[int], pieces: list[_Piece], whole: tuple[int, int]
) -> exp.Expression:
    try:
        expr = sqlglot.parse_one(sql, dialect="spark")
    except ParseError as err:
        info = err.errors[0] if err.errors else {}
        line = int(info.get("line") or 1)
        col = int(info.get("col") or 1)
        # Rewritten SQL is one line unless a string literal holds a newline; count them.
        line_start = 0
        for _ in range(line - 1):
            nl = sql.find("\n", line_start)
            if nl < 0:
                break
            line_start = nl + 1
        start, end = _origin(line_start + max(col - 1, 0), starts, pieces, whole)
        message = _friendly(str(info.get("description", "invalid syntax")), str(info.get("highlight") or ""))
        raise PatternSyntaxError(E_CONDITION_SYNTAX, f"invalid condition: {message}", text, start, end) from None
    except RecursionError:
        raise PatternLimitError(E_CONDITION_TOO_DEEP, "condition is too complex to parse", text, *whole) from None
    except Exception as err:  # noqa: BLE001 -- any sqlglot failure must reach the user as a PatternError
        raise PatternSyntaxError(E_CONDITION_SYNTAX, f"invalid condition: {type(err).__name__}", text, *whole) from None
    if expr is None:
        raise PatternSyntaxError(E_EMPTY_CONDITION, "expected a condition", text, *whole)
    return expr


def _meta_offsets(node: exp.Expression, key: str) -> list[int]:
    return [sub.meta[key] for sub in node.walk() if sub.meta and isinstance(sub.meta.get(key), int)]


def _node_origin(
    node: exp.Expression,
    starts: list[int],
    pieces: list[_Piece],
    whole: tuple[int, int],
) -> tuple[int, int]:
    """Original span of a parsed node: its operator for a binary node, else its leftmost token."""
    if isinstance(node, exp.Alias) and isinstance(node.args.get("alias"), exp.Expression):
        # "a.x = 1 b.y": the second value is where the operator is missing.
        node = node.args["alias"]
    if isinstance(node, exp.Binary) and node.this is not None and node.expression is not None:
        left_end = _meta_offsets(node.this, "end")
        right_start = _meta_offsets(node.expression, "start")
        if left_end and right_start:
            between = [
                i
                for i, s in enumerate(starts)
                if s > max(left_end) and s + len(pieces[i].sql) - 1 < min(right_start)
            ]
            if between:
                return (pieces[between[0]].start, pieces[between[-1]].end)
    offsets = _meta_offsets(node, "start")
    return _origin(min(offsets), starts, pieces, whole) if offsets else whole


def _check_allowed(
    text: str,
    expr: exp.Expression,
    names: set[str],
    starts: list[int],
    pieces: list[_Piece],
    whole: tuple[int, int],
) -> None:
    """Reject any node outside the allow-list (defence in depth behind the token rewrite)."""
    for node in expr.walk():
        ok = isinstance(node, _ALLOWED_NODES)
        if isinstance(node, exp.Column):
            ok = not node.table and node.name in names
        elif isinstance(node, exp.Identifier):
            ok = isinstance(node.parent, exp.Column)
        elif isinstance(node, exp.Var):
            ok = isinstance(node.parent, exp.Interval)
        elif isinstance(node, (exp.DataType, exp.DataTypeParam)):
            ok = isinstance(node.parent, (exp.Cast, exp.TryCast, exp.DataType))
        elif isinstance(node, exp.In):
            ok = set(k for k, v in node.args.items() if v) <= {"this", "expressions", "is_global"}
        if not ok:
            start, end = _node_origin(node, starts, pieces, whole)
            if isinstance(node, exp.Alias):
                message = "missing operator: a value is followed by another value (aliases are not allowed)"
            elif isinstance(node, exp.Binary) and end > start:
                message = f"operator '{text[start:end]}' is not allowed in a condition"
            else:
                message = f"{node.key.upper() if node.key else type(node).__name__} is not allowed in a condition"
            raise PatternSyntaxError(E_FORBIDDEN_SQL, message, text, start, end)


def _is_boolean(expr: exp.Expression) -> bool:
    """True if ``expr`` yields a boolean (iterative: long AND chains are deep trees)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, exp.Paren):
            stack.append(node.this)
        elif isinstance(node, (exp.And, exp.Or)):
            stack.extend((node.this, node.expression))
        elif isinstance(node, exp.Not):
            stack.append(node.this)
        elif isinstance(node, exp.Coalesce):
            stack.append(node.this)
            stack.extend(node.expressions)
        elif isinstance(node, (exp.Cast, exp.TryCast)):
            if not node.to.is_type(exp.DataType.Type.BOOLEAN):
                return False
        elif not isinstance(node, _BOOLEAN_NODES + (exp.Column, exp.Null)):
            return False
    return True
