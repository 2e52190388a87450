"""register_all: idempotent, and the registry is visible from SQL."""

from __future__ import annotations

import pytest

from sql_ext import FUNCTIONS, UnknownFunctionError, function, register_all


def test_register_all_is_idempotent(spark) -> None:
    first = register_all(spark)
    second = register_all(spark)
    assert first == second == [f.name for f in FUNCTIONS if f.status == "available"]
    rows = spark.sql("SELECT name, signature, status FROM cep_functions()").collect()
    assert [(r.name, r.signature, r.status) for r in rows] == \
        [(f.name, f.signature, f.status) for f in FUNCTIONS]


def test_every_function_name_is_unique_and_documented() -> None:
    names = [f.name for f in FUNCTIONS]
    assert len(names) == len(set(names))
    assert {"match_seq", "approx_match_seq", "cet_trends", "match_prob", "predict_match"} <= set(names)
    for spec in FUNCTIONS:
        assert spec.signature.startswith(spec.name + "(")
        assert (spec.adapter is None) == (spec.status == "planned")


def test_unknown_function_lists_the_known_ones() -> None:
    with pytest.raises(UnknownFunctionError, match="unknown CEP function 'nope'.*match_seq") as info:
        function("nope")
    assert info.value.code == "CEP-SQL-001"
