"""Conditions: SQL boolean expressions over event references, checked and parsed with sqlglot.

A condition is rebuilt from its tokens into SQL that sqlglot can parse: every reference to
event data becomes one backtick-quoted placeholder column named by the reference's canonical
text, and everything else must be on an allow-list (:mod:`cep.lang.placeholders`, which also
tabulates the references). sqlglot (dialect ``spark``) then parses the result, and the parsed
tree is walked once more against an allow-list of node types, so a user string can never
smuggle a subquery, a statement or an unknown function into Spark.

Allowed SQL: comparisons (``= == <> != < <= > >= <=>``), arithmetic (``+ - * / %``), ``AND OR
NOT``, ``IN (...)``, ``BETWEEN``, ``LIKE``/``ILIKE``, ``IS [NOT] NULL/TRUE/FALSE``, literals, and
the functions ``abs lower upper length coalesce cast`` plus ``t()`` and the aggregates
``avg sum min max count``. SQL keywords that start statements or subqueries (``SELECT``,
``DROP``, ...) are rejected by name; a column with such a name must be written with backticks.

A WHERE clause is a list of such conditions, with policies and equivalences among them:
:mod:`cep.lang.where_clause` splits it.

Example:
    >>> c = parse_condition("s[i].price > 1.05 * s[i-1].price")
    >>> c.sql
    '`s[i].price` > 1.05 * `s[i-1].price`'
    >>> [r.name for r in c.refs], c.single_event
    (['s[i].price', 's[i-1].price'], False)
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from cep.lang.ast import Condition
from cep.lang.errors import (
    E_CONDITION_SYNTAX,
    E_CONDITION_TOO_DEEP,
    E_CONDITION_TOO_LARGE,
    E_EMPTY_CONDITION,
    E_FORBIDDEN_SQL,
    E_NOT_A_STRING,
    E_NOT_BOOLEAN,
    PatternLimitError,
    PatternSyntaxError,
)
from cep.lang.limits import DEFAULT_LIMITS, Limits, check_text
from cep.lang.placeholders import Piece, Rewriter, join_pieces
from cep.lang.tokens import OP, Token, tokenize
from cep.lang.words import SQL_KEYWORDS, WHERE

_BOOLEAN_NODES = (
    exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.In, exp.Between,
    exp.Like, exp.ILike, exp.Is, exp.Boolean,
)  # fmt: skip
_ALLOWED_NODES = _BOOLEAN_NODES + (
    exp.And, exp.Or, exp.Not, exp.Paren, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.Neg,
    exp.Null, exp.Literal, exp.Column, exp.Identifier, exp.Abs, exp.Lower, exp.Upper, exp.Length,
    exp.Coalesce, exp.Cast, exp.TryCast, exp.DataType, exp.DataTypeParam, exp.Interval, exp.Var,
)  # fmt: skip


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
    rewriter = Rewriter(text, list(tokens), kind, subject)
    pieces, refs = rewriter.run()
    sql, starts = join_pieces(pieces)
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
        elif tok.kind != OP and not tok.is_kw(*SQL_KEYWORDS):
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
    return prev.is_kw(*SQL_KEYWORDS) and not prev.is_kw("NULL", "TRUE", "FALSE")


# ---------------------------------------------------------------------------------------------
# sqlglot parsing, error mapping and the allow-list walk
# ---------------------------------------------------------------------------------------------


def _origin(rewritten_offset: int, starts: list[int], pieces: list[Piece], whole: tuple[int, int]) -> tuple[int, int]:
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
    text: str, sql: str, starts: list[int], pieces: list[Piece], whole: tuple[int, int]
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
    pieces: list[Piece],
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
    pieces: list[Piece],
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
