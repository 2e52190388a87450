"""cet_trends from Spark SQL == the brute-force trend oracle (and cep.trends) on the same rows.

Random small tables of several keys (check-like rows with src/dest/amount, stock-like rows with
id/price) are written as Delta tables and queried through SQL with ``key_col``; every
(key, window) answer must equal :func:`cep.oracles.trend_oracle.oracle_trend_windows` on that
key's rows: the trends (as event-id sequences) and the exact counts. Errors reach the SQL caller
with their code and position.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest

from cep.oracles.trend_oracle import oracle_trend_windows
from sql_ext.quoting import sql_string

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
T0_US = int(T0.timestamp()) * 1_000_000

PATTERNS = [
    "PATTERN check+ c[] WHERE c.type = 'not covered' AND c[i].src = c[i-1].dest "
    "WITHIN 3 HOURS SLIDE 1 HOUR",
    "PATTERN check+ c[] WHERE c[i].amount > 1.05 * c[i-1].amount WITHIN 2 HOURS",
    "PATTERN check+ c[] WHERE [src] AND c[i].amount <= c[i-1].amount + 2",
    "PATTERN check+ c[] WHERE c[i].src <> c[i-1].src AND c[i].amount >= c[i-1].amount",
]


def checks(seed: int) -> list[dict[str, Any]]:
    """Check-like rows of 3 banks: ids unique, timestamps with ties, small value domains."""
    rng = random.Random(seed)
    rows, next_id = [], 1
    for bank in ("b1", "b2", "b3"):
        t = 0
        for _ in range(rng.choice([6, 10, 14])):
            t += rng.choice([0, 10, 20, 40])
            rows.append({"id": next_id, "bank": bank, "ts": T0 + timedelta(minutes=t),
                         "src": rng.choice("xyz"), "dest": rng.choice("xyz"),
                         "amount": float(rng.choice([10, 11, 12, 14, 20])),
                         "type": rng.choice(["not covered", "covered"])})
            next_id += 1
    return rows


@pytest.fixture(scope="module")
def check_table(spark, settings) -> list[dict[str, Any]]:
    rows = checks(7)
    location = settings.warehouse_dir / "trend_checks"
    spark.createDataFrame(rows, "id BIGINT, bank STRING, ts TIMESTAMP, src STRING, dest STRING, "
                                "amount DOUBLE, type STRING") \
        .write.format("delta").mode("overwrite").save(str(location))
    if not spark.catalog.tableExists("trend_checks"):
        spark.catalog.createTable("trend_checks", path=str(location), source="delta")
    return rows


def oracle(pattern: str, rows: list[dict[str, Any]]) -> dict[tuple[str, Any], Any]:
    """(bank, window start in us or None) -> OracleWindow, per bank."""
    out = {}
    for bank in sorted({r["bank"] for r in rows}):
        mine = [r for r in rows if r["bank"] == bank]
        ts = np.array([int(r["ts"].timestamp()) * 1_000_000 for r in mine], dtype=np.int64)
        cols = {c: np.array([r[c] for r in mine], dtype=object) for c in ("src", "dest", "type")}
        cols["amount"] = np.array([r["amount"] for r in mine])
        # Without type_col every row is a check and c.type is the column called type: for the
        # oracle, the class holds every row (DEFINE check AS TRUE) and the type column is it.
        every_row = pattern.replace(" WHERE ", " DEFINE check AS TRUE WHERE ", 1)
        windows = oracle_trend_windows(every_row, ts, cols, types=cols["type"],
                                       tiebreak=np.array([r["id"] for r in mine]))
        ids = [r["id"] for r in mine]
        for start, w in windows.items():
            out[(bank, start if "WITHIN" in pattern else None)] = (
                w.count, sorted(tuple(ids[e] for e in t) for t in w.trends))
    return out


def call(pattern: str, output: str | None = None, extra: str = "") -> str:
    args = f"pattern => {sql_string(pattern)}, key_col => 'bank'"
    if output is not None:
        args += f", output => {sql_string(output)}"
    return f"cet_trends({args}{extra}, events => TABLE(trend_checks))"


@pytest.mark.parametrize("pattern", PATTERNS)
def test_trends_and_counts_equal_the_oracle(spark, check_table, pattern: str) -> None:
    expected = oracle(pattern, check_table)
    assert any(len(t) > 1 for _, trends in expected.values() for t in trends)
    trends = spark.sql(f"SELECT bank, unix_micros(window_start) AS ws, unix_micros(window_end) "
                       f"AS we, trend_id, length, event_ids, first_ts, last_ts "
                       f"FROM {call(pattern)}").collect()
    got: dict[tuple[str, Any], list] = {}
    by_id = {r["id"]: r for r in check_table}
    for r in trends:
        got.setdefault((r.bank, r.ws), []).append((r.trend_id, tuple(r.event_ids)))
        assert r.length == len(r.event_ids)
        assert (r.first_ts, r.last_ts) == (by_id[r.event_ids[0]]["ts"].replace(tzinfo=None),
                                           by_id[r.event_ids[-1]]["ts"].replace(tzinfo=None))
        if r.ws is not None:
            assert r.we - r.ws == (3 if "3 HOURS" in pattern else 2) * 3_600_000_000
    assert set(got) == set(expected)
    for key, rows in got.items():
        assert sorted(i for i, _ in rows) == list(range(1, len(rows) + 1))
        assert sorted(t for _, t in rows) == expected[key][1], key
    counts = spark.sql(f"SELECT bank, unix_micros(window_start) AS ws, n_trends "
                       f"FROM {call(pattern, 'count')}").collect()
    assert {(r.bank, r.ws): int(r.n_trends) for r in counts} == {
        k: v[0] for k, v in expected.items()}


def test_rising_prices_with_id_equality_and_price_predicate(spark, settings) -> None:
    # Q2's combination ([id] together with the price predicate), a partition holding two stocks.
    rng = random.Random(3)
    rows = [{"id": i, "sid": rng.choice(["A", "B"]), "ts": T0 + timedelta(minutes=7 * i),
             "price": float(rng.choice([100, 104, 106, 112, 120]))} for i in range(1, 25)]
    spark.createDataFrame(rows, "id BIGINT, sid STRING, ts TIMESTAMP, price DOUBLE") \
        .createOrReplaceTempView("trend_stocks")
    pattern = ("PATTERN stock+ s[] WHERE [sid] AND s[i].price > 1.05 * s[i-1].price "
               "WITHIN 60 MINUTES SLIDE 10 MINUTES")
    got = spark.sql(f"SELECT unix_micros(window_start) AS ws, event_ids FROM cet_trends("
                    f"pattern => {sql_string(pattern)}, events => TABLE(trend_stocks))"
                    ).collect()
    ts = np.array([int(r["ts"].timestamp()) * 1_000_000 for r in rows], dtype=np.int64)
    windows = oracle_trend_windows(pattern, ts, {"sid": np.array([r["sid"] for r in rows], object),
                                                 "price": np.array([r["price"] for r in rows])},
                                   types=np.array(["stock"] * len(rows)))  # no c.type read
    expected = sorted((s, tuple(rows[e]["id"] for e in t)) for s, w in windows.items()
                      for t in w.trends)
    assert sorted((r.ws, tuple(r.event_ids)) for r in got) == expected
    assert any(len(t) > 1 for _, t in expected)


def sql_error(spark: Any, sql: str) -> str:
    with pytest.raises(Exception) as info:
        spark.sql(sql).collect()
    return str(info.value)


def test_errors_reach_the_caller_with_code_and_position(spark, check_table) -> None:
    message = sql_error(spark, f"SELECT * FROM {call('PATTERN check; deposit+')}")
    assert "CEP-TREND-001: line 1, column 9" in message and "^" in message
    message = sql_error(spark, f"SELECT * FROM {call('PATTERN check+ c[] WHERE c[i].nope > 1')}")
    assert "CEP-PAT-" in message and "amount" in message  # lists the columns that exist
    message = sql_error(spark, f"SELECT * FROM {call(PATTERNS[1], 'paths')}")
    assert "CEP-SQL-030: argument output" in message
    message = sql_error(spark, "SELECT * FROM " + call(
        "PATTERN check+ c[] WHERE c[i].amount >= c[i-1].amount", None, ", max_trends => 2"))
    assert "CEP-TREND-020" in message and "output => 'count'" in message
    message = sql_error(spark, "SELECT * FROM " + call(PATTERNS[1], None, ", ts_col => 'src'"))
    assert "CEP-SQL-030: ts_col 'src' must be a TIMESTAMP or a number" in message
    message = sql_error(spark, "SELECT * FROM " + call(
        "PATTERN check+ c[] WHERE c[i].amount > c[i-1].amount WITHIN 5 UNITS"))
    assert "CEP-SQL-030" in message and "UNITS needs a numeric ts_col" in message


def test_a_count_beyond_decimal_38_and_beyond_4300_digits_is_a_typed_error(spark) -> None:
    # Issue 46: 15,000 rising prices hold about 10^4514 complete trends; the overflow's message
    # printed the count's digits, and Python refuses to print more than 4,300.
    events = ("SELECT id, TIMESTAMP_SECONDS(id) AS ts, 'stock' AS type, CAST(id AS DOUBLE) "
              "AS price FROM range(15000)")
    message = sql_error(spark, "SELECT * FROM cet_trends(pattern => 'PATTERN stock+ s[] WHERE "
                               "s[i].price > s[i-1].price', output => 'count', "
                               f"events => TABLE({events}))")
    assert "CEP-SQL-031" in message and "about 10^4514 complete trends" in message, \
        message[:3000]
    assert "Exceeds the limit" not in message


def test_injection_through_the_pattern_stays_data(spark, check_table) -> None:
    pattern = "PATTERN check+ c[] WHERE c.type = 'x''); DROP TABLE trend_checks; --'"
    rows = spark.sql(f"SELECT * FROM {call(pattern)}").collect()
    assert rows == [] and spark.catalog.tableExists("trend_checks")


def test_decimal_columns_compare_as_numbers(spark, check_table) -> None:
    pattern = "PATTERN check+ c[] WHERE c[i].amount > 1.05 * c[i-1].amount WITHIN 2 HOURS"
    as_double = spark.sql(f"SELECT * FROM {call(pattern)}").collect()
    as_decimal = spark.sql(
        f"SELECT * FROM cet_trends(pattern => {sql_string(pattern)}, key_col => 'bank', "
        "events => TABLE(SELECT id, bank, ts, CAST(amount AS DECIMAL(10, 2)) AS amount "
        "FROM trend_checks))").collect()
    assert sorted(as_decimal) == sorted(as_double) and as_double


def test_class_test_and_filters_are_pushed_down_as_one_boolean_column() -> None:
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, TimestampType

    from cep.trends import compile_trend
    from udfs.cet_trends import _pushdown

    fields = {n: StructField(n, t) for n, t in (("id", LongType()), ("ts", TimestampType()),
                                                  ("kind", StringType()), ("type", StringType()),
                                                  ("amount", DoubleType()))}
    q = compile_trend("PATTERN check+ c[] WHERE c.type = 'not covered' AND c.amount > 10 "
                      "AND c[i].amount > c[i-1].amount")
    assert _pushdown(q, fields, None, fields["ts"]) == (
        "coalesce((`type` = 'not covered') AND (`amount` > 10), false)")
    # with type_col, the class is a test on it and c.type reads it (decision 9)
    assert _pushdown(q, fields, fields["kind"], fields["ts"]) == (
        "coalesce((`kind` = 'check') AND (`kind` = 'not covered') AND (`amount` > 10), false)")
    # a filter on the timestamp stays in the engine (and then every filter does)
    timed = compile_trend("PATTERN check+ c[] WHERE t(c) > 5 AND c[i].amount > c[i-1].amount")
    assert _pushdown(timed, fields, None, fields["ts"]) is None


@pytest.mark.parametrize("output", ["trends", "count"])
def test_windows_from_spark_window_equal_windows_cut_by_the_engine(spark, check_table,
                                                                   output: str) -> None:
    pattern = PATTERNS[0]  # WITHIN 3 HOURS SLIDE 1 HOUR
    cut = spark.sql(f"SELECT * FROM {call(pattern, output)}").collect()
    given = spark.sql(
        f"SELECT * FROM cet_trends(pattern => {sql_string(pattern)}, key_col => 'bank', "
        f"output => '{output}', window_col => 'w', events => TABLE(SELECT *, "
        "window(ts, '3 hours', '1 hour') AS w FROM trend_checks))").collect()
    assert sorted(given) == sorted(cut) and cut
    message = sql_error(spark, "SELECT * FROM cet_trends(pattern => 'PATTERN check+ c[] WHERE "
                               "c[i].amount > c[i-1].amount', window_col => 'src', "
                               "events => TABLE(trend_checks))")
    assert "CEP-SQL-030: window_col 'src' must be the STRUCT<start, end>" in message


def test_paper_examples_under_both_readings_of_complete(spark) -> None:
    # Mei et al. (seed 003): Fig. 2 (line 97; Q1, the accounts of tests/cep/trends/
    # test_trend_paper.py) and Table 2 with e[i].attr > e[i-1].attr * 2 (lines 155, 177), under
    # 'ends' (section 3, the default) and 'maximal' (line 43). One query for all of them.
    checks = ("TABLE(SELECT * FROM VALUES "
              + ", ".join(f"({i + 1}, TIMESTAMP'2024-01-01 {10 + i}:00:00', '{s}', '{d}', "
                          "'not covered')"
                          for i, (s, d) in enumerate(zip("ABBAAC", "BCABCA")))
              + " AS t(id, ts, src, dest, type))")
    table2 = ("TABLE(SELECT * FROM VALUES "
              + ", ".join(f"({i + 1}, {i + 1}, {v})" for i, v in enumerate([32, 7, 15, 35, 40, 17]))
              + " AS t(id, ts, attr))")
    q1 = sql_string("PATTERN check+ c[] WHERE c.type = 'not covered' AND c[i].src = c[i-1].dest "
                    "WITHIN 1 WEEK SLIDE 1 DAY")
    q = sql_string("PATTERN e+ WHERE e[i].attr > e[i-1].attr * 2")
    calls = [(f"fig2 {c}", f"pattern => {q1}, completeness => '{c}', events => {checks}")
             for c in ("ends", "maximal")]
    calls += [("table2 ends", f"pattern => {q}, events => {table2}"),
              ("table2 maximal", f"pattern => {q}, completeness => 'maximal', events => {table2}")]
    sql = " UNION ALL ".join(f"SELECT '{name}' AS example, event_ids FROM cet_trends({args})"
                             for name, args in calls)
    got: dict[str, set[tuple[int, ...]]] = {}
    for r in spark.sql(sql).collect():
        got.setdefault(r.example, set()).add(tuple(r.event_ids))
    fig2 = {(1, 2, 6), (1, 3, 5, 6), (1, 3, 4)}  # line 97, as printed
    assert got == {"fig2 ends": fig2, "fig2 maximal": fig2,
                   "table2 ends": {(1,), (2, 3, 4), (2, 3, 5), (2, 4), (2, 5), (2, 6)},
                   "table2 maximal": {(1,), (2, 3, 4), (2, 3, 5), (2, 6)}}
    message = sql_error(spark, f"SELECT * FROM cet_trends(pattern => {q}, "
                               f"completeness => 'longest', events => {table2})")
    assert "CEP-SQL-030: argument completeness: expected one of 'ends', 'maximal'" in message


def test_floating_keys_group_as_group_by_does(spark) -> None:
    # Issue 47: NaNs of different bits, and -0.0 beside 0.0, are one key each for GROUP BY.
    from tests.udfs.test_match_seq import NAN_KEYS

    rows = spark.sql(f"SELECT key, event_ids FROM cet_trends('PATTERN A+ a[]', 'key', "
                     f"TABLE({NAN_KEYS}), type_col => 'type')").collect()
    assert sorted((str(r.key), list(r.event_ids)) for r in rows) == [("0.0", [3, 4]),
                                                                     ("nan", [1, 2])]


@pytest.mark.parametrize("ts_type", ["TIMESTAMP_NTZ", "DATE"])
def test_ntz_and_date_are_read_as_utc_in_any_session_time_zone(spark, ts_type: str) -> None:
    # Issue 47: a CAST to TIMESTAMP read them in the session time zone, so in New York the
    # one-hour windows of 2024-03-10 (a clock change) started at 06:00 and 07:00 UTC.
    from tests.sql_fuzz import ZONE, session_conf

    table = (f"SELECT * FROM VALUES (1L, CAST(TIMESTAMP_NTZ'2024-03-10 01:30:00' AS {ts_type}), "
             f"1.0D), (2L, CAST(TIMESTAMP_NTZ'2024-03-10 03:10:00' AS {ts_type}), 2.0D) "
             "AS t(id, ts, x)")
    with session_conf(spark, {ZONE: "America/New_York"}):
        rows = spark.sql("SELECT unix_micros(window_start) AS ws, event_ids FROM cet_trends("
                         "'PATTERN s+ w[] WHERE w[i].x > w[i-1].x WITHIN 1 HOUR', "
                         f"TABLE({table}))").collect()
    hour = 3_600_000_000
    day = 1_710_028_800_000_000  # 2024-03-10 00:00 UTC
    found = sorted((r.ws, list(r.event_ids)) for r in rows)
    if ts_type == "DATE":  # both at midnight UTC: one window, and no trend links equal times
        assert found == [(day, [1]), (day, [2])]
    else:
        assert found == [(day + hour, [1]), (day + 3 * hour, [2])]
