"""The JVM shim (sql_ext/jvm, jobs/shim.py): loaded by the session, its rule filters the rows a
call does not need before the shuffle, and the answers are the same with and without it."""

from __future__ import annotations

import pytest

from jobs.shim import EXTENSION, shim_jar
from sql_ext.quoting import sql_string
from tests.udfs.test_match_seq import SCHEMA, expected, random_events, streams_by_key

ENABLED = "spark.cep.keepRows.enabled"
FILTERED = [  # class events suffice: a row of no class (here D, or v1 >= 3 for X) can never bind
    ("PATTERN A; B; C WHERE C.v0 > A.v0 WITHIN 20 SECONDS", "skip-till-next-match"),
    ("PATTERN SEQ(A, NOT(C), B) WITHIN 30 SECONDS", "skip-till-any-match"),
    ("PATTERN A; B+ b[]; C WHERE b[i].v0 >= b[i-1].v0 WITHIN 25 SECONDS", "skip-till-next-match"),
    ("PATTERN X; B DEFINE X AS v1 < 3 AND type = 'A' WHERE [grp] WITHIN 10 SECONDS",
     "skip-till-any-match"),
]
NOT_FILTERED = [  # positions count every event
    ("PATTERN A; B", "strict-contiguity"),
    ("PATTERN A, B", "skip-till-next-match"),
    ("PATTERN A; B WITHIN 4 EVENTS", "skip-till-next-match"),
]


@pytest.fixture(scope="module")
def shim_events(spark):
    rows = random_events(11, n_keys=5, per_key=14)
    spark.createDataFrame(rows, SCHEMA).createOrReplaceTempView("shim_events")
    return rows


def query(pattern: str, policy: str) -> str:
    return (f"SELECT key, event_ids, variables FROM match_seq(pattern => {sql_string(pattern)}, "
            f"policy => {sql_string(policy)}, key_col => 'key', events => TABLE(shim_events))")


def optimized(spark, sql: str) -> str:
    return spark.sql(sql)._jdf.queryExecution().optimizedPlan().toString()


def test_the_session_loads_the_shim_built_from_the_current_sources(spark, settings) -> None:
    assert shim_jar(settings).is_file(), "make jars (python -m jobs fetch-jars) builds the shim"
    assert EXTENSION in spark.conf.get("spark.sql.extensions").split(",")
    assert str(shim_jar(settings)) in spark.sparkContext.getConf().get("spark.jars")


@pytest.mark.parametrize("pattern, policy", FILTERED)
def test_rows_no_alias_can_bind_are_filtered_below_the_shuffle(spark, shim_events, pattern: str,
                                                               policy: str) -> None:
    plan = optimized(spark, query(pattern, policy))
    assert "__cep_keep, true" in plan, plan
    # The filter sits under the repartition, so the shuffle moves only the rows that matter.
    assert plan.index("RepartitionByExpression") < plan.index("Filter"), plan
    with_rule = {(r.key, tuple(r.event_ids), tuple(r.variables))
                 for r in spark.sql(query(pattern, policy)).collect()}
    spark.conf.set(ENABLED, "false")
    try:
        assert "__cep_keep, true" not in optimized(spark, query(pattern, policy))
        without = {(r.key, tuple(r.event_ids), tuple(r.variables))
                   for r in spark.sql(query(pattern, policy)).collect()}
    finally:
        spark.conf.unset(ENABLED)
    oracle = expected(pattern, policy, streams_by_key(shim_events), use_oracle=True)
    assert with_rule == without == oracle
    assert oracle, "the data must give matches"


@pytest.mark.parametrize("pattern, policy", NOT_FILTERED)
def test_patterns_that_count_positions_get_every_row(spark, shim_events, pattern: str,
                                                     policy: str) -> None:
    assert "__cep_keep" not in optimized(spark, query(pattern, policy))
    got = {(r.key, tuple(r.event_ids), tuple(r.variables))
           for r in spark.sql(query(pattern, policy)).collect()}
    assert got == expected(pattern, policy, streams_by_key(shim_events), use_oracle=True)
