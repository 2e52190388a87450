"""register_all: idempotent, and the registry is visible from SQL."""

from __future__ import annotations

import pytest

from sql_ext import FUNCTIONS, UnknownFunctionError, function, register_all


def test_register_all_is_idempotent(spark) -> None:
    first = register_all(spark)
    second = register_all(spark)
    assert first == second == [f.name for f in FUNCTIONS if f.status == "available" and f.adapter]
    rows = spark.sql("SELECT name, signature, status FROM cep_functions()").collect()
    assert [(r.name, r.signature, r.status) for r in rows] == \
        [(f.name, f.signature, f.status) for f in FUNCTIONS]


def test_every_function_name_is_unique_and_documented() -> None:
    names = [f.name for f in FUNCTIONS]
    assert len(names) == len(set(names))
    assert {"match_seq", "approx_match_seq", "cet_trends", "match_prob", "predict_match"} <= set(names)
    for spec in FUNCTIONS:
        assert spec.signature.startswith(spec.name + "(")
        assert (spec.adapter is None and spec.plan is None) == (spec.status == "planned")


def test_unknown_function_lists_the_known_ones() -> None:
    with pytest.raises(UnknownFunctionError, match="unknown CEP function 'nope'.*match_seq") as info:
        function("nope")
    assert info.value.code == "CEP-SQL-001"


def test_a_cep_error_is_the_first_thing_a_caller_reads(spark, capfd) -> None:
    # Issue 47: the code on the first line, no Python traceback before it, and no second copy
    # of the error (pyspark's JSON log line with the JVM's frames) on standard error.
    register_all(spark)
    capfd.readouterr()
    with pytest.raises(Exception) as info:
        spark.sql("SELECT * FROM match_seq('PATTERN A;; B', TABLE(SELECT 1L AS id, "
                  "TIMESTAMP'2024-01-01' AS ts, 'A' AS type))").collect()
    first = str(info.value).splitlines()[0]
    assert "udfs.shell.CallFailed: CEP-PAT-106: line 1, column 11: " in first, first
    assert "Traceback" not in str(info.value)
    err = capfd.readouterr().err
    assert "SQLQueryContextLogger" not in err and "CEP-PAT-106" not in err, err[-2000:]
