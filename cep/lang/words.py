"""The words of conditions: their kinds, the SQL they may use, the words they refuse, time units.

A condition is read against fixed lists, kept here so that every stage reads the same ones:
the keywords passed through to sqlglot as written, the functions and aggregates a condition may
call, the types ``CAST`` may name, the words that only ever start statements or subqueries (a
condition refuses them by name), and the units of a time literal, which WITHIN and SLIDE read
too. A selection policy is spelled as words joined by ``-`` (:func:`policy_words`).

Example:
    >>> unit_of("minute"), unit_of("Events"), unit_of("fortnight")
    ('MINUTES', 'EVENTS', None)
    >>> from cep.lang.tokens import tokenize
    >>> policy_words(tokenize("skip-till-any-match AND a.x > 1"), 0)
    (7, 'skip-till-any-match')
"""

from __future__ import annotations

from collections.abc import Sequence

from cep.lang.ast import TIME_UNITS
from cep.lang.tokens import IDENT, Token

# The kinds of condition: WHERE and @(...) ("timed") need an alias on every attribute; DEFINE
# reads the one event it defines.
WHERE = "where"
TIMED = "timed"
DEFINE = "define"

# Keywords passed through to sqlglot as written (upper-cased).
SQL_KEYWORDS = frozenset({"AND", "OR", "NOT", "IN", "IS", "NULL", "TRUE", "FALSE", "BETWEEN", "LIKE", "ILIKE"})
FUNCTIONS = frozenset({"abs", "lower", "upper", "length", "coalesce"})
AGGREGATES = frozenset({"avg", "sum", "min", "max", "count"})
ALLOWED_FUNCTIONS = tuple(sorted(FUNCTIONS | AGGREGATES | {"cast", "t"}))
CAST_TYPES = frozenset(
    {
        "INT", "INTEGER", "BIGINT", "LONG", "SMALLINT", "SHORT", "TINYINT", "BYTE", "DOUBLE", "FLOAT",
        "REAL", "DECIMAL", "DEC", "NUMERIC", "STRING", "VARCHAR", "CHAR", "BOOLEAN", "DATE", "TIMESTAMP",
        "TIMESTAMP_NTZ",
    }
)  # fmt: skip
# Words that only ever start statements, subqueries or constructs outside the allow-list.
FORBIDDEN_WORDS = frozenset(
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


def unit_of(word: str) -> str | None:
    """Canonical unit for ``word`` (``minute`` -> ``MINUTES``), or None if it is not a unit."""
    return _UNIT_WORDS.get(word.upper())


def policy_words(tokens: Sequence[Token], k: int) -> tuple[int, str] | None:
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
