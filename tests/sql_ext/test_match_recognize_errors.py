"""Errors of a MATCH_RECOGNIZE statement point into the statement the user wrote (issue 47).

The statement is parsed from the rewriter's text, so Spark's own errors would name positions
of that text and suggest its internal columns. The shim's parser gives every parsed node an
origin in the user's text (``RewrittenOrigins``) and its post-hoc rule words the common errors
(``RewrittenErrorsRule``: CEP-MR-208, 209, 210). Each case here is the smallest statement that
showed the old message.
"""

from __future__ import annotations

import re

import pytest

TICKS = ("SELECT * FROM VALUES ('a', TIMESTAMP'2024-01-01 00:00:00', 1, 10.0), "
         "('a', TIMESTAMP'2024-01-01 00:01:00', 2, 9.0), "
         "('a', TIMESTAMP'2024-01-01 00:02:00', 3, 11.0) AS t(stock, ts, id, price)")
CLAUSE = ("MATCH_RECOGNIZE (PARTITION BY {key} ORDER BY {ts} MEASURES {measure} AS low "
          "ONE ROW PER MATCH PATTERN (S D+ U) DEFINE D AS {define}, U AS price > PREV(price))")


@pytest.fixture(scope="module")
def ticks(spark):
    spark.sql(f"CREATE OR REPLACE TEMP VIEW mr_err_ticks AS {TICKS}")
    yield "mr_err_ticks"
    spark.sql("DROP VIEW IF EXISTS mr_err_ticks")


def statement(source: str = "mr_err_ticks", head: str = "SELECT *", key: str = "stock",
              ts: str = "ts", measure: str = "LAST(D.price)",
              define: str = "price < PREV(price)") -> str:
    return f"{head} FROM {source} " + CLAUSE.format(key=key, ts=ts, measure=measure,
                                                     define=define)


def failure(spark, sql: str) -> str:
    with pytest.raises(Exception) as info:
        spark.sql(sql).collect()
    return str(info.value)


def column_of(sql: str, word: str, nth: int = 0) -> int:
    """1-based column of the ``nth`` whole-word occurrence of ``word`` in a one-line ``sql``."""
    return [m.start() for m in re.finditer(rf"\b{re.escape(word)}\b", sql)][nth] + 1


@pytest.mark.parametrize("part, kwargs, word", [
    ("MEASURES", {"measure": "LAST(D.pricee)"}, "pricee"),
    ("DEFINE", {"define": "price < PREV(pricex)"}, "pricex"),
    ("PARTITION BY", {"key": "stockx"}, "stockx"),
    ("ORDER BY", {"ts": "tsx"}, "tsx"),
    ("the outer SELECT", {"head": "SELECT low, nope"}, "nope"),
])
def test_an_unknown_column_is_named_where_the_user_wrote_it(spark, ticks, part, kwargs, word):
    sql = statement(**kwargs)
    message = failure(spark, sql)
    first = message.splitlines()[0]
    assert first.startswith(f"CEP-MR-208: line 1, column {column_of(sql, word)}: "
                            f"no column `{word}`"), (part, message)
    assert "__mr_" not in message and "cep_match_recognize" not in message, (part, message)
    caret = message.splitlines()[2]
    assert caret.strip() == "^" + "~" * (len(word) - 1), (part, message)


def test_suggestions_are_the_users_columns_nearest_first(spark, ticks):
    message = failure(spark, statement(measure="LAST(D.prise)"))
    assert "did you mean `price`, " in message.splitlines()[0], message


def test_a_multi_line_statement_gets_its_line_and_column(spark, ticks):
    sql = ("SELECT *\nFROM mr_err_ticks MATCH_RECOGNIZE (\n  PARTITION BY stock ORDER BY ts\n"
           "  MEASURES LAST(D.price) AS low\n  PATTERN (S D+ U)\n"
           "  DEFINE D AS price < PREV(price), U AS price > PREV(pricey))")
    message = failure(spark, sql)
    assert message.startswith("CEP-MR-208: line 6, column 54: no column `pricey`"), message
    assert message.splitlines()[1].strip().startswith("DEFINE D AS price"), message


def test_a_type_error_is_worded_without_the_rewrite(spark, ticks):
    sql = statement(measure="LAST(D.price) AND true")
    message = failure(spark, sql)
    assert message.startswith(f"CEP-MR-209: line 1, column {column_of(sql, 'price')}: the "
                              "types do not fit: "), message
    assert "BOOLEAN" in message and "__mr_" not in message and "max_by" not in message, message


def test_an_unknown_source_table_is_ours_too(spark, ticks):
    sql = statement(source="mr_err_tickz")
    message = failure(spark, sql)
    assert message.startswith(f"CEP-MR-210: line 1, column {column_of(sql, 'mr_err_tickz')}: "
                              "no table or view `mr_err_tickz`"), message
    assert "__mr_" not in message, message


def test_spark_errors_left_to_spark_still_point_into_the_users_text(spark, ticks):
    # An unknown function fails in Spark's first analysis batch, before any rule of ours: its
    # message is Spark's, and its position is the user's.
    sql = statement(measure="foo(D.price)")
    message = failure(spark, sql)
    assert "UNRESOLVED_ROUTINE" in message and "`FOO`" in message, message
    assert f"line 1 pos {column_of(sql, 'foo') - 1}" in message, message
    assert "__mr_" not in message, message


def test_valid_statements_around_the_rewrite_still_run(spark, ticks):
    # Correlated subqueries, CTEs and views over a rewritten clause resolve as before: the
    # rule only speaks once the outermost analysis is done.
    clause = CLAUSE.format(key="stock", ts="ts", measure="LAST(D.price)",
                           define="price < PREV(price)")
    rows = spark.sql(f"SELECT o.id FROM mr_err_ticks o WHERE EXISTS (SELECT 1 FROM mr_err_ticks "
                     f"{clause} m WHERE m.stock = o.stock AND m.low < o.price) ORDER BY id"
                     ).collect()
    assert [r.id for r in rows] == [1, 3]
    rows = spark.sql(f"WITH x AS (SELECT * FROM mr_err_ticks) SELECT low FROM x {clause} AS m "
                     "WHERE EXISTS (SELECT 1 FROM mr_err_ticks t WHERE t.stock = m.stock)"
                     ).collect()
    assert [float(r.low) for r in rows] == [9.0]
    spark.sql(f"CREATE OR REPLACE TEMP VIEW mr_err_view AS SELECT * FROM mr_err_ticks {clause}")
    try:
        assert [float(r.low) for r in spark.sql("SELECT low FROM mr_err_view").collect()] == [9.0]
    finally:
        spark.sql("DROP VIEW IF EXISTS mr_err_view")


def test_a_syntax_error_outside_the_clause_is_shown_in_the_users_text(spark, ticks):
    sql = statement() + " WHERE low >"
    message = failure(spark, sql)
    assert message.startswith(f"CEP-MR-108: line 1, column {len(sql)}: Spark cannot parse the "
                              "statement: Syntax error at or near end of input"), message
    sql = statement() + " m GROUP BY BY low"
    message = failure(spark, sql)
    assert message.startswith(f"CEP-MR-108: line 1, column {len(sql) - 2}: "), message
    assert "__mr_" not in message, message


@pytest.mark.parametrize("source", [
    "VALUES ('a', TIMESTAMP'2024-01-01 00:00:00', 10.0), ('a', TIMESTAMP'2024-01-01 00:01:00', "
    "9.0), ('a', TIMESTAMP'2024-01-01 00:02:00', 11.0) AS t(stock, ts, price)",
    "(SELECT stock, ts, price FROM mr_err_ticks) AS t(stock, ts, price)",
    "(SELECT stock, ts, price FROM mr_err_ticks) t(stock, ts, price)",
])
def test_a_source_with_a_column_list_is_read_whole(spark, ticks, source):
    # The rewriter took `(stock, ts, price)` for the source and left `VALUES ... AS t` in
    # front of the subquery: Spark's parse error named the internal columns.
    rows = spark.sql(statement(source=source)).collect()
    assert [float(r.low) for r in rows] == [9.0], rows
