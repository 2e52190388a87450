"""Rendering of single-event conditions as Spark SQL, for pushdown as boolean columns.

The SQL text is generated from the validated sqlglot tree, never pasted from the user's
string: every column becomes a backtick-quoted identifier of a column that exists in the
table (its schema spelling), every literal is re-rendered by sqlglot's Spark generator (which
escapes quotes and backslashes), and only the node types the condition parser allows can
occur. Conditions that read timestamps (``t(a)``, ``a.ts``) are not rendered: Spark's
TIMESTAMP arithmetic differs from the engine's microsecond integers, so the engine keeps them.

Example:
    >>> from cep.lang import parse_pattern
    >>> q = parse_pattern("PATTERN a; b WHERE a.price > 10 AND lower(b.name) LIKE 'x%'")
    >>> cols = {"price": "Price", "name": "name", "type": "type"}
    >>> class_test("type", "O'Brien")
    "`type` = 'O\\\\'Brien'"
    >>> render_condition(q.conditions[0], cols)
    '`Price` > 10'
"""

from __future__ import annotations

from typing import Callable, Mapping

from sqlglot import exp

from cep.lang.ast import AttrRef, Condition, TsRef


class NotRenderable(ValueError):
    """The condition cannot be evaluated by Spark with the engine's exact semantics."""


def _identifier(name: str) -> exp.Column:
    return exp.column(exp.to_identifier(name, quoted=True))


def tokens_of(sql: str) -> list:
    """A statement's tokens (sqlglot's Spark tokenizer); ``[]`` if it does not tokenize.

    Example:
        >>> [t.text for t in tokens_of("SELECT 'a' -- b")], tokens_of("SELECT 'a")
        (['SELECT', 'a'], [])
    """
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.errors import SqlglotError

    try:
        return list(Dialect.get_or_raise("spark").tokenize(sql))
    except SqlglotError:
        return []


def quoted(name: str) -> str:
    """``name`` as a Spark SQL identifier in backquotes (a backquote inside doubled).

    Example:
        >>> print(quoted("odd`name"))
        `odd``name`
    """
    return "`" + name.replace("`", "``") + "`"


def sql_string(text: str) -> str:
    """A Spark SQL string literal whose value is exactly ``text``.

    Example:
        >>> print(sql_string("it's"))
        'it\\'s'
    """
    if not isinstance(text, str):
        raise TypeError(f"expected a string, found {type(text).__name__}")
    return exp.Literal.string(text).sql(dialect="spark")


def _column(name: str, column_sql: Callable[[str], str] | None) -> exp.Expression:
    """The tree of column ``name``, or of the SQL ``column_sql`` gives for it (``lead``)."""
    if column_sql is None:
        return _identifier(name)
    return exp.maybe_parse(column_sql(quoted(name)), dialect="spark")


def class_test(type_col: str, cls: str, column_sql: Callable[[str], str] | None = None) -> str:
    """Spark SQL for "the event's type column equals ``cls``" (``column_sql``: as for
    :func:`render_condition`)."""
    return exp.EQ(this=_column(type_col, column_sql),
                  expression=exp.Literal.string(cls)).sql(dialect="spark")


def render_condition(condition: Condition, columns: Mapping[str, str], *,
                     ts_col: str | None = None,
                     column_sql: Callable[[str], str] | None = None) -> str:
    """Spark SQL for a single-event ``condition``.

    Args:
        condition: a condition with ``single_event`` True (WHERE on one alias, or a DEFINE
            without join variables; of a DEFINE with ``$x`` only the class test that
            ``cep.lang.rewrite.split_define`` keeps is renderable).
        columns: lower-cased attribute name -> the column's name in the table schema.
        ts_col: the timestamp column; a condition reading it raises :class:`NotRenderable`.
        column_sql: SQL in place of each (quoted) column, e.g. the value ``lead(`x`, 1) OVER
            w`` of the next row; plain columns by default.

    Raises:
        NotRenderable: the condition reads a timestamp, an unknown column, or is not single-event
            (it reads several events, an iteration, an aggregate or a join variable).
    """
    if not condition.single_event:
        raise NotRenderable(f"{condition.text!r} reads more than one event")
    tree = condition.expr.copy()
    for node in list(tree.find_all(exp.Column)):
        ref = condition.ref(node.name)
        if isinstance(ref, TsRef):
            raise NotRenderable(f"{condition.text!r} reads a timestamp")
        if not isinstance(ref, AttrRef):
            raise NotRenderable(f"{condition.text!r} uses {type(ref).__name__}")
        column = columns.get(ref.attr.lower())
        if column is None:
            raise NotRenderable(f"{condition.text!r}: unknown column {ref.attr!r}")
        if ts_col is not None and column.lower() == ts_col.lower():
            raise NotRenderable(f"{condition.text!r} reads the timestamp column")
        node.replace(_column(column, column_sql))
    return tree.sql(dialect="spark")
