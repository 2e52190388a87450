"""Quoting of user strings for Spark SQL text, for the places that must build SQL text.

Spark does not bind ``:name`` parameters inside table-valued function arguments, so a pattern
passed to ``match_seq`` from Python has to become a SQL string literal. sqlglot's Spark
generator writes the literal, escaping quotes and backslashes (``cep.lang.spark_sql.sql_string``).

Example:
    >>> sql_string("PATTERN a WHERE a.name = 'O''Brien'")
    "'PATTERN a WHERE a.name = \\\\'O\\\\'\\\\'Brien\\\\''"
"""

from __future__ import annotations

from cep.lang.spark_sql import sql_string

__all__ = ["sql_string"]  # written once, in cep.lang.spark_sql, where udfs/ can reach it too
