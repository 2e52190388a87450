"""The process-mining calls of a SQL statement, found at the token level and bound by name.

A call is ``<function>( ... )`` where ``<function>`` is one of :data:`FUNCTIONS` and one
argument is ``TABLE(...)`` (so a scalar function or a column of the same name is never taken
for one). Arguments follow the one call convention (docs/sql.md): positionally
``[key_col,] TABLE(t)``, every other by name; values are constants (strings, numbers,
``true``/``false``, ``NULL``). The TABLE argument is kept as text: a table name becomes
``SELECT * FROM <name>``, a query stays itself.

Example:
    >>> sql = "SELECT * FROM follows('case_id', TABLE(log), output => 'pairs') AS f"
    >>> call = next(find_calls(sql))
    >>> call.function, call.source, sql[call.start:call.end]
    ('follows', 'SELECT * FROM log', "follows('case_id', TABLE(log), output => 'pairs')")
    >>> sorted(call.values.items())[:3]
    [('events', None), ('id_col', 'id'), ('key_col', 'case_id')]
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Iterator

from cep.lang.spark_sql import tokens_of
from cep.mining.errors import E_ARGUMENT, E_CALL, MiningError
from cep.signature import SIGNATURES

__all__ = ["FUNCTIONS", "Call", "find_calls", "mentions_call", "tokens_of"]

FUNCTIONS = ("follows", "variants", "case_stats")
"""The functions Spark runs as generated plans (no Python at run time)."""
_QUERY_STARTS = ("SELECT", "WITH", "FROM", "VALUES", "L_PAREN", "TABLE")


@dataclass(frozen=True)
class Call:
    """One call: its function, span in the statement, the TABLE argument as a query, and
    every other argument checked and with its default (:meth:`cep.signature.Signature.values`)."""

    function: str
    start: int
    end: int
    source: str
    values: dict[str, Any]
    spans: dict[str, tuple[int, int]]
    """Where each argument given in the call is (its value's characters), for errors."""


@dataclass(frozen=True)
class _Constant:
    """An argument as :meth:`cep.signature.Argument.read` reads one (Spark's shape)."""

    value: Any
    isTable: bool = False  # noqa: N815 - pyspark's AnalyzeArgument spells it so
    isConstantExpression: bool = True  # noqa: N815


def mentions_call(sql: str) -> bool:
    """Whether ``sql`` may hold a call (a cheap test on the text, before tokenizing).

    Example:
        >>> mentions_call("select * from VARIANTS(table(t))"), mentions_call("select 1")
        (True, False)
    """
    lowered = sql.lower()
    return any(name in lowered for name in FUNCTIONS)


def find_calls(sql: str, tokens: list[Any] | None = None) -> Iterator[Call]:
    """Every call in ``sql``, in the order they start; raises :class:`MiningError` for the
    first malformed one."""
    tokens = tokens_of(sql) if tokens is None else tokens
    for at, tok in enumerate(tokens[:-1]):
        if (tok.token_type.name == "VAR" and tok.text.lower() in FUNCTIONS
                and tokens[at + 1].token_type.name == "L_PAREN"
                and (at == 0 or tokens[at - 1].token_type.name != "DOT")):
            close = _close_of(sql, tokens, at + 1)
            if any(t.token_type.name == "TABLE" for t in tokens[at + 2:close]):
                yield _bind(sql, tokens, at, close)


def _close_of(sql: str, tokens: list[Any], open_at: int) -> int:
    depth = 0
    for j in range(open_at, len(tokens)):
        kind = tokens[j].token_type.name
        depth += kind == "L_PAREN"
        depth -= kind == "R_PAREN"
        if depth == 0:
            return j
    tok = tokens[open_at]
    raise MiningError(E_CALL, "the bracket opened here is never closed", sql, tok.start,
                      tok.end + 1)


def _bind(sql: str, tokens: list[Any], at: int, close: int) -> Call:
    function = tokens[at].text.lower()
    signature = SIGNATURES[function]
    positional: list[Any] = []
    named: dict[str, Any] = {}
    spans: dict[str, tuple[int, int]] = {}
    source = ""
    table_name = next(a.name for a in signature.arguments if a.role == "table")
    for first, last in _arguments(sql, tokens, at + 1, close):
        name, name_span = None, (0, 0)
        if (last - first >= 2 and tokens[first + 1].token_type.name == "FARROW"
                and tokens[first].token_type.name in ("VAR", "IDENTIFIER")):
            name_span = (tokens[first].start, tokens[first].end + 1)
            name, first = tokens[first].text, first + 2
        span = (tokens[first].start, tokens[last - 1].end + 1)
        if tokens[first].token_type.name == "TABLE":
            source = _table_source(sql, tokens, first, last)
            value: Any = _Constant(None, isTable=True, isConstantExpression=False)
        else:
            value = _Constant(_constant(sql, tokens, first, last))
        if name is None:
            if named:
                raise MiningError(E_CALL, "a positional argument after a named one; write "
                                  "name => value", sql, *span)
            positional.append((value, span))
        else:
            if name.lower() in {n.lower() for n in named}:
                raise MiningError(E_ARGUMENT, f"{function}: argument {name.lower()} is given "
                                  "twice", sql, *name_span)
            named[name] = (value, span)
            spans[f"name:{name.lower()}"] = name_span
    bound = _bound(sql, tokens, at, close, signature, positional, named, spans)
    if not source or not getattr(bound.get(table_name), "isTable", False):
        raise MiningError(E_CALL, f"{function} takes the events as TABLE(t) or TABLE(SELECT "
                          f"...), the last positional argument or {table_name} => TABLE(...)",
                          sql, tokens[at].start, tokens[at].end + 1)
    try:
        values = signature.values(bound, _ArgumentProblem)
    except _ArgumentProblem as problem:
        name = problem.args[0].split()[1].rstrip(":")
        start, end = spans.get(name, (tokens[at].start, tokens[at].end + 1))
        raise MiningError(E_ARGUMENT, f"{function}: {problem.args[0]}", sql, start, end) from None
    values[table_name] = None
    return Call(function, tokens[at].start, tokens[close].end + 1, source, values, spans)


class _ArgumentProblem(ValueError):
    """What :class:`cep.signature.Signature` raises, before it gets a position."""


def _bound(sql: str, tokens: list[Any], at: int, close: int, signature: Any,
           positional: list[Any], named: dict[str, Any],
           spans: dict[str, tuple[int, int]]) -> dict[str, Any]:
    """The call's arguments by name; ``spans`` gets where each one is."""
    try:
        bound = signature.bind(tuple(v for v, _ in positional),
                               {k: v for k, (v, _) in named.items()}, _ArgumentProblem)
    except _ArgumentProblem as problem:
        wrong = next((spans[f"name:{name.lower()}"] for name in named
                      if name.lower() not in signature.names()), None)
        start, end = wrong or (tokens[at].start, tokens[close].end + 1)
        raise MiningError(E_ARGUMENT, str(problem), sql, start, end) from None
    order = [name for name in bound if name not in {n.lower() for n in named}]
    for name, (_, span) in zip(order, positional):
        spans[name] = span
    spans.update({name.lower(): span for name, (_, span) in named.items()})
    return bound


def _arguments(sql: str, tokens: list[Any], open_at: int,
               close: int) -> Iterator[tuple[int, int]]:
    """The token ranges ``[first, last)`` of the arguments between two brackets."""
    depth, first = 0, open_at + 1
    for j in range(open_at + 1, close + 1):
        kind = tokens[j].token_type.name
        if j == close or (kind == "COMMA" and depth == 0):
            if first == j:
                raise MiningError(E_CALL, "an empty argument", sql, tokens[j].start,
                                  tokens[j].end + 1)
            yield first, j
            first = j + 1
        depth += kind == "L_PAREN"
        depth -= kind == "R_PAREN"


def _table_source(sql: str, tokens: list[Any], first: int, last: int) -> str:
    """The query a ``TABLE(...)`` argument stands for."""
    opened = first + 1
    if opened >= last or tokens[opened].token_type.name != "L_PAREN":
        raise MiningError(E_CALL, "TABLE needs a table name or a query in brackets", sql,
                          tokens[first].start, tokens[first].end + 1)
    closed = _close_of(sql, tokens, opened)
    if closed != last - 1:
        extra = tokens[closed + 1]
        raise MiningError(E_CALL, "nothing may follow TABLE(...) (no PARTITION BY or ORDER BY: "
                          "the function groups the rows by key_col and orders them by ts_col "
                          "and id_col itself)", sql, extra.start, tokens[last - 1].end + 1)
    if closed == opened + 1:
        raise MiningError(E_CALL, "TABLE() is empty: name a table or write a query", sql,
                          tokens[opened].start, tokens[closed].end + 1)
    text = sql[tokens[opened + 1].start:tokens[closed - 1].end + 1]
    if tokens[opened + 1].token_type.name in _QUERY_STARTS:
        return text
    return f"SELECT * FROM {text}"


def _constant(sql: str, tokens: list[Any], first: int, last: int) -> Any:
    """The value of a constant argument: a string, a number, a boolean or NULL."""
    kinds = [t.token_type.name for t in tokens[first:last]]
    sign = -1 if kinds[0] == "DASH" else 1
    body = kinds[1:] if kinds[0] in ("DASH", "PLUS") else kinds
    tok = tokens[last - 1]
    if all(kind == "STRING" for kind in kinds):
        # Spark reads 'a''b' as a'b (a doubled quote) and 'a' 'b' as ab (adjacent literals).
        parts = tokens[first:last]
        return "".join(("'" if k and parts[k - 1].end + 1 == t.start else "") + t.text
                       for k, t in enumerate(parts))
    if body == ["NUMBER"]:
        number = Decimal(tok.text)
        return sign * (int(number) if number == number.to_integral_value()
                       and "." not in tok.text and "e" not in tok.text.lower() else float(number))
    if kinds in (["TRUE"], ["FALSE"]):
        return kinds == ["TRUE"]
    if kinds == ["NULL"]:
        return None
    raise MiningError(E_CALL, "an argument must be a constant: a string, a number, true, false "
                      "or NULL", sql, tokens[first].start, tokens[last - 1].end + 1)
