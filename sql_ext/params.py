"""Parameter markers bound as escaped literals: the safe way to pass a user's values into SQL.

Spark 4.2 binds ``:name`` markers (``spark.sql(text, args={...})``) in expressions but not
inside the arguments of a table-valued function, so ``match_seq(:pattern, ...)`` fails with
UNBOUND_SQL_PARAMETER. :func:`bind_parameters` replaces every marker with the value as a Spark
SQL literal before the text reaches Spark: strings through sqlglot's Spark generator (quotes and
backslashes escaped), numbers, booleans, NULL, bytes, dates and timestamps typed. The markers are
found with sqlglot's Spark tokenizer, so a ``:name`` inside a string literal or a comment is left
alone, and a value never becomes SQL text of its own: a string is always one literal.

Example:
    >>> bind_parameters("SELECT * FROM match_seq(:pattern, 'user_id', TABLE(t), "
    ...                 "max_matches => :limit)", pattern="PATTERN a; b WHERE a.x = 'it''s'",
    ...                 limit=10)
    "SELECT * FROM match_seq('PATTERN a; b WHERE a.x = \\\\'it\\\\'\\\\'s\\\\'', 'user_id', TABLE(t), max_matches => 10)"
    >>> bind_parameters("SELECT ':name', :n -- :m", n=None)
    "SELECT ':name', NULL -- :m"
"""

from __future__ import annotations

import math
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Mapping

from cep.errors import CepError


class ParameterError(CepError):
    """A marker without a value, a value without a marker, or a value of a type SQL has no
    literal for here."""

    code = "CEP-SQL-002"


def literal(value: Any) -> str:
    """``value`` as one Spark SQL literal (a ParameterError for a type without one).

    Example:
        >>> [literal(v) for v in (None, True, 3, 2.5, Decimal("0.10"), b"\\x01\\xff")]
        ['NULL', 'TRUE', '3', '2.5D', '0.10BD', "X'01FF'"]
    """
    from sql_ext.quoting import sql_string

    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ParameterError(f"a parameter value must be a finite number, found {value!r}")
        return f"{value!r}D"  # a bare 2.5 is a DECIMAL in Spark SQL
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ParameterError(f"a parameter value must be a finite number, found {value!r}")
        return f"{value}BD"
    if isinstance(value, str):
        return sql_string(value)
    if isinstance(value, (bytes, bytearray)):
        return f"X'{bytes(value).hex().upper()}'"
    if isinstance(value, datetime):
        kind = "TIMESTAMP_NTZ" if value.tzinfo is None else "TIMESTAMP"
        return f"{kind} {sql_string(value.isoformat(sep=' '))}"
    if isinstance(value, date):
        return f"DATE {sql_string(value.isoformat())}"
    raise ParameterError(f"no SQL literal for a parameter of type {type(value).__name__}")


def bind_parameters(sql: str, params: Mapping[str, Any] | None = None, /, **named: Any) -> str:
    """``sql`` with every ``:name`` marker replaced by its value as a literal.

    Args:
        sql: SQL text with markers ``:name`` (a colon right before a name).
        params, named: the values by name (both may be given; names are case-sensitive).

    Raises:
        ParameterError: a marker has no value (naming its line and column), a value has no
            marker, or a value has no literal.
    """
    from sqlglot.dialects.spark import Spark
    from sqlglot.tokens import TokenType

    values = {**(params or {}), **named}
    tokens = Spark().tokenize(sql)
    pieces, at, used = [], 0, set()
    for colon, name in zip(tokens, tokens[1:]):
        # A marker is a colon right before a word (keywords too: `:limit`), never a string.
        if colon.token_type != TokenType.COLON or name.start != colon.end + 1 \
                or name.token_type == TokenType.STRING or not name.text.isidentifier() \
                or sql[name.start] in "`\"":
            continue
        if name.text not in values:
            line = sql.count("\n", 0, colon.start) + 1
            column = colon.start - (sql.rfind("\n", 0, colon.start) + 1) + 1
            raise ParameterError(f"line {line}, column {column}: no value for the parameter "
                                 f":{name.text}; given: {', '.join(sorted(values)) or 'none'}")
        pieces += [sql[at:colon.start], literal(values[name.text])]
        at = name.end + 1
        used.add(name.text)
    unused = sorted(set(values) - used)
    if unused:
        raise ParameterError(f"no marker for the parameter(s) {', '.join(unused)}")
    return "".join(pieces) + sql[at:]
