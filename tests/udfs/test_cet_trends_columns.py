"""``cet_trends(..., columns => 'type, v')`` through ``spark.sql``: each trend's own columns.

The definition (docs/sql.md): per trend, one ARRAY per named column holding the values of the
trend's events in the order of ``event_ids``. The reference is read from the table itself by
id; the rest of each row must be the row of the same call without ``columns``. Random small
tables reach the paths: with and without a key, a NULL key, ties in ``ts``, NULL values in the
carried columns, a numeric and a timestamp ``ts``, windows cut by ``WITHIN`` or none, and keys
without any trend.
"""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings as hsettings
from hypothesis import strategies as st

from sql_ext.quoting import sql_string

pytestmark = pytest.mark.spark

PATTERNS = [
    "PATTERN A+ a[] WHERE a[i].v >= a[i-1].v",
    "PATTERN A+ a[] WITHIN 4 UNITS SLIDE 2 UNITS",
    "PATTERN A+ a[] DEFINE A AS type <> 'c' WHERE a[i].type <> a[i-1].type WITHIN 3 UNITS",
]

EVENT = st.tuples(st.sampled_from(["k1", "k2", None]), st.integers(0, 5),
                  st.sampled_from("abc"), st.one_of(st.none(), st.integers(0, 3)))


def _table(rows: list[tuple], timestamp: bool) -> str:
    def ts(t: int) -> str:
        return (f"TIMESTAMP'{dt.datetime(2024, 1, 1) + dt.timedelta(seconds=t)}'" if timestamp
                else f"CAST({t} AS BIGINT)")

    values = ", ".join(
        f"({i}, {'NULL' if k is None else sql_string(k)}, {ts(t)}, {sql_string(c)}, "
        f"{'NULL' if v is None else v})" for i, (k, t, c, v) in enumerate(rows))
    return (f"SELECT CAST(id AS BIGINT) AS id, CAST(k AS STRING) AS k, ts, type, "
            f"CAST(v AS DOUBLE) AS v FROM VALUES {values} AS x(id, k, ts, type, v)")


@hsettings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(pattern=st.sampled_from(PATTERNS), keyed=st.booleans(),
       rows=st.lists(EVENT, min_size=1, max_size=12))
def test_each_trend_carries_its_events_columns(spark, pattern: str, keyed: bool,
                                               rows: list[tuple]) -> None:
    timestamp = "UNITS" not in pattern  # UNITS windows read a numeric ts
    table = _table(rows, timestamp)
    key = "key_col => 'k', " if keyed else ""
    call = (f"SELECT * FROM cet_trends(pattern => {sql_string(pattern)}, {key}"
            f"events => TABLE({table}){{extra}})")
    plain = spark.sql(call.format(extra="")).collect()
    carried = spark.sql(call.format(extra=", columns => 'type, v'")).collect()
    by_id = {i: (c, None if v is None else float(v)) for i, (_, _, c, v) in enumerate(rows)}
    assert sorted((tuple(r)[:-2] for r in carried), key=repr) == \
        sorted((tuple(r) for r in plain), key=repr)
    for r in carried:
        assert list(r["type"]) == [by_id[i][0] for i in r["event_ids"]], r
        assert list(r["v"]) == [by_id[i][1] for i in r["event_ids"]], r


def test_the_documented_call_finds_trends_with_their_resource(spark, loaded_logs) -> None:
    rows = spark.sql(
        "SELECT org_resource, event_ids FROM cet_trends('PATTERN work+ w[] WHERE "
        "w[i].org_resource = w[i-1].org_resource', 'case_id', TABLE(SELECT id, case_id, ts, "
        "org_resource FROM bpi2012 WHERE pmod(hash(case_id), 500) = 0), "
        "columns => 'org_resource')").collect()
    assert rows and any(len(r.event_ids) > 1 for r in rows)
    assert all(len(set(r.org_resource)) == 1 for r in rows)


@pytest.mark.parametrize("columns, output, message", [
    ("nope", "trends", "columns 'nope' is not a column of the events table"),
    ("v, v", "trends", "columns: 'v' is named twice"),
    ("length", "trends", "'length' is also the name of an output column of cet_trends"),
    ("k", "trends", "'k' is also the name of an output column of cet_trends"),
    ("v", "count", "only output => 'trends'"),
])
def test_bad_columns_are_refused(spark, columns: str, output: str, message: str) -> None:
    table = ("SELECT 1L AS id, 'k1' AS k, 1L AS ts, 'a' AS type, 1.0D AS v, 2 AS length")
    with pytest.raises(Exception) as err:
        spark.sql(f"SELECT * FROM cet_trends('PATTERN A+ a[]', 'k', TABLE({table}), "
                  f"columns => {sql_string(columns)}, output => {sql_string(output)})").collect()
    assert "CEP-SQL-030" in str(err.value) and message in str(err.value), str(err.value)[:800]
