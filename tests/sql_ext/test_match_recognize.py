"""MATCH_RECOGNIZE through ``spark.sql``: the conformance cases, errors, ties and limits.

The cases (tests/sql_ext/match_recognize_cases.py) run in batches: one statement per batch,
each case's rows as JSON under its name, so the suite pays Spark's planning and a Python
worker's start a few times instead of once per case.
"""

from __future__ import annotations

import json
import re

import pytest

from cep.recognize.errors import RowPatternError
from cep.recognize.rewrite import rewrite_statement
from sql_ext.params import bind_parameters
from tests.sql_ext.match_recognize_cases import CASES, Case, stream

BATCH = 12
RUNS = [c for c in CASES if c.error is None]
REWRITE_ERRORS = [c for c in CASES if c.error is not None and c.name.startswith("error_")]
RUN_ERRORS = [c for c in CASES if c.error is not None and not c.name.startswith("error_")]


@pytest.fixture(scope="module")
def cases_view(spark):
    rows = [(c.name, *row) for c in CASES for row in c.rows]
    spark.createDataFrame(rows, "c STRING, p STRING, ts INT, v STRING, x INT") \
        .createOrReplaceTempView("mr_cases")
    return "mr_cases"


def _statement(case: Case) -> str:
    source = f"(SELECT p, ts, v, x FROM mr_cases WHERE c = '{case.name}')"
    return re.sub(r"\binput\b", source, case.sql)


def _normal(rows: list[tuple]) -> list[str]:
    return sorted(json.dumps(list(r)) for r in rows)


@pytest.mark.parametrize("batch", range(0, len(RUNS), BATCH),
                         ids=lambda b: f"cases_{b}_{b + BATCH - 1}")
def test_conformance_cases(spark, cases_view, batch: int) -> None:
    cases = RUNS[batch:batch + BATCH]
    parts = [f"SELECT '{c.name}' AS c, to_json(struct(*), map('ignoreNullFields', 'false')) "
             f"AS r FROM ({_statement(c)})" for c in cases]
    found: dict[str, list[tuple]] = {c.name: [] for c in cases}
    for row in spark.sql(" UNION ALL ".join(parts)).collect():
        found[row.c].append(tuple(json.loads(row.r).values()))
    failures = [f"{c.name}: expected {_normal(c.expected)}, found {_normal(found[c.name])}"
                for c in cases if _normal(found[c.name]) != _normal(c.expected)]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("case", REWRITE_ERRORS, ids=[c.name for c in REWRITE_ERRORS])
def test_errors_before_anything_runs(case: Case) -> None:
    with pytest.raises(RowPatternError) as caught:
        rewrite_statement(case.sql)
    assert caught.value.code == case.error, str(caught.value)
    assert re.search(r"line \d+, column \d+: ", str(caught.value)) and "^" in str(caught.value)


@pytest.mark.parametrize("case", RUN_ERRORS, ids=[c.name for c in RUN_ERRORS])
def test_errors_while_matching(spark, cases_view, case: Case) -> None:
    with pytest.raises(Exception) as caught:
        spark.sql(_statement(case)).collect()
    assert f"{case.error}: line 1, column " in str(caught.value), str(caught.value)[:2000]


def test_error_reaches_spark_sql_caller_with_position(spark) -> None:
    with pytest.raises(Exception) as caught:
        spark.sql("SELECT * FROM range(3)\n  MATCH_RECOGNIZE (ORDER BY id PATTERN (A B{3,2}))")
    message = str(caught.value)
    assert "CEP-MR-105: line 2, column 44: the quantifier's lower bound 3 is above" in message
    assert "PARSE_SYNTAX_ERROR" not in message


def test_ties_are_broken_the_same_way_every_time(spark) -> None:
    rows = [("p", 1, v, i) for i, v in enumerate("abababab")]
    spark.createDataFrame(rows, "p STRING, ts INT, v STRING, x INT").createOrReplaceTempView(
        "mr_ties")
    sql = ("SELECT * FROM mr_ties MATCH_RECOGNIZE (PARTITION BY p ORDER BY ts MEASURES "
           "MATCH_NUMBER() AS m, CLASSIFIER() AS c, x AS x ALL ROWS PER MATCH PATTERN (A B) "
           "DEFINE A AS v = 'a', B AS v = 'b')")
    first = sorted(map(tuple, spark.sql(sql).collect()))
    assert first == sorted(map(tuple, spark.sql(sql).collect()))
    # Within equal ORDER BY values the rows come in order of xxhash64 of the whole row.
    order = [r.x for r in spark.sql("SELECT x FROM (SELECT x, ts, xxhash64(*) AS h FROM mr_ties) ORDER BY ts, h").collect()]
    expected_labels = []
    pos = 0
    vs = {r.x: r.v for r in spark.table("mr_ties").collect()}
    while pos + 1 < len(order):
        if vs[order[pos]] == "a" and vs[order[pos + 1]] == "b":
            expected_labels += [(order[pos], "A"), (order[pos + 1], "B")]
            pos += 2
        else:
            pos += 1
    assert sorted((r[4], r[3]) for r in first) == sorted(expected_labels)


def test_user_values_bound_as_literals(spark) -> None:
    hostile = "it's -- not /* a */ comment \\ \x00 " + "x" * 1000
    rows = [("p", 1, hostile, 1), ("p", 2, "b", 2)]
    spark.createDataFrame(rows, "p STRING, ts INT, v STRING, x INT").createOrReplaceTempView(
        "mr_hostile")
    sql = bind_parameters("SELECT * FROM mr_hostile MATCH_RECOGNIZE (PARTITION BY p ORDER BY ts "
                          "MEASURES FIRST(A.v) AS first_v PATTERN (A B) "
                          "DEFINE A AS v = :value, B AS v = 'b')", value=hostile)
    assert [tuple(r) for r in spark.sql(sql).collect()] == [("p", hostile)]


def test_long_run_of_one_value_is_linear(spark) -> None:
    """``A+ B+`` over 10^5 rows that satisfy both (trinodb/trino#18036 backtracks)."""
    spark.range(100_000).selectExpr("'p' AS p", "id AS ts", "1 AS x") \
        .createOrReplaceTempView("mr_flat")
    row = spark.sql("SELECT * FROM mr_flat MATCH_RECOGNIZE (PARTITION BY p ORDER BY ts "
                    "MEASURES COUNT(A.*) AS na, COUNT(B.*) AS nb PATTERN (A+ B+) "
                    "DEFINE A AS x = 1, B AS x = 1)").collect()
    assert [tuple(r) for r in row] == [("p", 99_999, 1)]


def test_version_as_of_source(spark, tmp_path) -> None:
    path = str(tmp_path / "mr_delta")
    spark.createDataFrame(stream("a1 b2"), "p STRING, ts INT, v STRING, x INT") \
        .write.format("delta").save(path)
    spark.createDataFrame(stream("a1 b2 a3 b4"), "p STRING, ts INT, v STRING, x INT") \
        .write.format("delta").mode("overwrite").save(path)
    sql = (f"SELECT * FROM delta.`{path}` VERSION AS OF {{v}} MATCH_RECOGNIZE (PARTITION BY p "
           "ORDER BY ts MEASURES MATCH_NUMBER() AS m PATTERN (A B) "
           "DEFINE A AS v = 'a', B AS v = 'b')")
    assert len(spark.sql(sql.format(v=0)).collect()) == 1
    assert len(spark.sql(sql.format(v=1)).collect()) == 2
