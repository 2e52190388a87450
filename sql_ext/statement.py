"""What a SQL statement's text can name, read with sqlglot's tokenizer (no parse needed).

``python -m jobs sql`` registers only the tables a statement can mean, because registering a
table makes Delta read its log. sqlglot cannot parse every Spark statement (table arguments such
as ``TABLE(t) PARTITION BY k`` fail), but it tokenizes them all, and the words are enough.

Example:
    >>> sorted(statement_words("SELECT * FROM approx_match_seq(pattern => 'A; B', "
    ...                        "sketch => TABLE(app_sketch_nodes))"))
    ['FROM', 'SELECT', 'TABLE', 'app_sketch_nodes', 'approx_match_seq', 'pattern', 'sketch']
"""

from __future__ import annotations

import re

from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

__all__ = ["statement_words"]

_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


def statement_words(statement: str) -> set[str] | None:
    """The identifier-shaped words of a Spark SQL statement, or None if it does not tokenize.

    Over-reading is harmless to a caller that registers tables by these words (a keyword or a
    column named like a table registers that table); string literals, such as a pattern's
    text, are not words.

    Example:
        >>> statement_words("SELECT 'no end") is None
        True
    """
    try:
        tokens = Dialect.get_or_raise("spark").tokenize(statement)
    except SqlglotError:
        return None
    return {t.text for t in tokens if t.token_type != TokenType.STRING and _WORD.match(t.text)}
