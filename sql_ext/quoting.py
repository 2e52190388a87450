"""Quoting of user strings for Spark SQL text, for the places that must build SQL text.

Spark does not bind ``:name`` parameters inside table-valued function arguments, so a pattern
passed to ``match_seq`` from Python has to become a SQL string literal. sqlglot's Spark
generator writes the literal, escaping quotes and backslashes.

Example:
    >>> sql_string("PATTERN a WHERE a.name = 'O''Brien'")
    "'PATTERN a WHERE a.name = \\\\'O\\\\'\\\\'Brien\\\\''"
"""

from __future__ import annotations

from sqlglot import exp


def sql_string(text: str) -> str:
    """A Spark SQL string literal whose value is exactly ``text``."""
    if not isinstance(text, str):
        raise TypeError(f"expected a string, found {type(text).__name__}")
    return exp.Literal.string(text).sql(dialect="spark")
