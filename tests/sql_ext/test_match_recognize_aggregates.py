"""The aggregate names MATCH_RECOGNIZE recognises are those of the running Spark.

``cep/recognize/aggregates.py`` lists Spark 4.2's built-in aggregates (the registry's group
``agg_funcs``); a new Spark pin that adds or drops one fails here before a statement meets it.
"""

from __future__ import annotations

import pytest

from cep.recognize.aggregates import AGGREGATES, REFUSED
from cep.recognize.errors import RowPatternError
from cep.recognize.rewrite import rewrite_statement


def _spark_aggregates(spark) -> set[str]:
    jvm = spark._jvm
    registry = jvm.org.apache.spark.sql.catalyst.analysis.FunctionRegistry.builtin()
    identifier = jvm.org.apache.spark.sql.catalyst.FunctionIdentifier
    none = jvm.scala.Option.empty()
    names = set()
    for row in spark.sql("SHOW SYSTEM FUNCTIONS").collect():
        info = registry.lookupFunction(identifier(row[0], none, none))
        if info.isDefined() and info.get().getGroup() == "agg_funcs":
            names.add(row[0])
    return names


def test_the_list_is_the_running_sparks(spark) -> None:
    live = _spark_aggregates(spark)
    assert live == set(AGGREGATES), (f"missing here: {sorted(live - AGGREGATES)}; "
                                     f"not in Spark: {sorted(AGGREGATES - live)}")


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_aggregates_without_meaning_over_a_match_are_refused(name: str) -> None:
    sql = f"SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts MEASURES {name}(x) AS g PATTERN (A))"
    with pytest.raises(RowPatternError) as caught:
        rewrite_statement(sql)
    assert caught.value.code == "CEP-MR-207"
    assert f"line 1, column {sql.index(name) + 1}:" in str(caught.value), str(caught.value)


def test_every_one_argument_aggregate_reaches_spark_not_an_error_of_ours(spark) -> None:
    """Each numeric one-argument aggregate, RUNNING and FINAL, in ALL ROWS PER MATCH: Spark
    plans the rewritten statement (types and arguments are Spark's to check)."""
    numeric = ["avg", "bit_and", "bit_or", "bit_xor", "collect_list", "collect_set", "count",
               "kurtosis", "max", "mean", "min", "skewness", "std", "stddev",
               "stddev_pop", "stddev_samp", "sum", "try_avg", "try_sum", "var_pop",
               "var_samp", "variance", "approx_count_distinct", "any_value", "first_value",
               "last_value", "array_agg"]
    measures = ", ".join(f"RUNNING {n}(B.x) AS r{k}, FINAL {n}(x) AS f{k}"
                         for k, n in enumerate(numeric))
    rows = spark.sql(f"SELECT * FROM (SELECT id AS ts, id % 3 AS x FROM range(6)) "
                     f"MATCH_RECOGNIZE (ORDER BY ts MEASURES {measures} ALL ROWS PER MATCH "
                     "PATTERN (A B+) DEFINE A AS x = 0, B AS x > 0)").collect()
    assert len(rows) == 6
    final = spark.sql("SELECT * FROM (SELECT id AS ts, id % 3 AS x FROM range(6)) "
                      "MATCH_RECOGNIZE (ORDER BY ts MEASURES FINAL median(B.x) AS m ALL ROWS "
                      "PER MATCH PATTERN (A B+) DEFINE A AS x = 0, B AS x > 0)").collect()
    assert [r.m for r in final] == [1.5] * 6
    with pytest.raises(RowPatternError) as caught:
        rewrite_statement("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts MEASURES median(x) AS m "
                          "ALL ROWS PER MATCH PATTERN (A))")
    assert caught.value.code == "CEP-MR-205", str(caught.value)
    assert rows[2]["r{}".format(numeric.index("sum"))] == 3  # B rows 1, 2 so far
    assert rows[0]["f{}".format(numeric.index("count"))] == 3
