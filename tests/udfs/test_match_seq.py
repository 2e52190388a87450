"""match_seq from Spark SQL == the engine == the oracle, on the same data; errors reach SQL."""

from __future__ import annotations

import re
import random
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from cep.match import compile_query, find_matches
from cep.match.columnar.stream import EventStream
from cep.oracles import oracle_matches
from sql_ext.quoting import sql_string

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)

PATTERNS = [
    "PATTERN A; B; C WHERE C.v0 > A.v0 WITHIN 20 SECONDS",
    "PATTERN SEQ(A, OR(B, C), NOT(D), A) WITHIN 30 SECONDS",
    "PATTERN A; B+ b[]; C WHERE b[i].v0 >= b[i-1].v0 WITHIN 25 SECONDS",
    "PATTERN A; (B & C) WITHIN 15 SECONDS",
    "PATTERN X; Y DEFINE X AS v1 < 3, Y AS v1 >= 3 AND type = 'B' WHERE [grp] WITHIN 10 SECONDS",
    "PATTERN A, B WITHIN 10 EVENTS",
]
POLICIES = ["skip-till-next-match", "skip-till-any-match", "strict-contiguity"]


def random_events(seed: int, n_keys: int = 4, per_key: int = 12) -> list[tuple]:
    rng = random.Random(seed)
    rows, next_id = [], 0
    for k in range(n_keys):
        t = 0
        for _ in range(per_key):
            t += rng.choice([0, 1, 2, 3])  # zero gaps: ties in timestamps
            rows.append((next_id, f"k{k}", rng.choice("ABCD"), T0 + timedelta(seconds=t),
                         float(rng.randint(0, 5)), rng.randint(0, 5), rng.choice(["g1", "g2"])))
            next_id += 1
    rng.shuffle(rows)  # arrival order must not matter
    return rows


SCHEMA = "id BIGINT, key STRING, type STRING, ts TIMESTAMP, v0 DOUBLE, v1 BIGINT, grp STRING"


def streams_by_key(rows: list[tuple]) -> dict[str, EventStream]:
    out = {}
    for key in sorted({r[1] for r in rows}):
        mine = [r for r in rows if r[1] == key]
        out[key] = EventStream.from_columns(
            ids=[r[0] for r in mine],
            ts=[int((r[3] - datetime(1970, 1, 1, tzinfo=timezone.utc)) / timedelta(microseconds=1))
                for r in mine],
            types=[r[2] for r in mine],
            attrs={"v0": np.array([r[4] for r in mine]), "v1": np.array([r[5] for r in mine]),
                   "grp": np.array([r[6] for r in mine], dtype=object)})
    return out


def expected(pattern: str, policy: str, streams: dict[str, EventStream], use_oracle: bool) -> set:
    result = set()
    for key, stream in streams.items():
        if use_oracle:
            matches = oracle_matches(pattern, stream, policy=policy)
        else:
            matches = find_matches(compile_query(pattern, policy=policy), stream).to_matches()
        for m in matches:
            result.add((key, tuple(int(stream.ids[p]) for p in m.positions), m.variables))
    return result


@pytest.fixture(scope="module")
def events_view(spark):
    rows = random_events(7)
    spark.createDataFrame(rows, SCHEMA).createOrReplaceTempView("ms_events")
    return rows


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("pattern", PATTERNS)
def test_spark_equals_engine_equals_oracle(spark, events_view, pattern: str, policy: str) -> None:
    got = spark.sql(
        "SELECT key, event_ids, variables, match_id, start_ts, end_ts, n_events FROM match_seq("
        f"pattern => {sql_string(pattern)}, policy => {sql_string(policy)}, key_col => 'key', "
        "events => TABLE(ms_events))").collect()
    spark_set = {(r.key, tuple(r.event_ids), tuple(r.variables)) for r in got}
    streams = streams_by_key(events_view)
    engine_set = expected(pattern, policy, streams, use_oracle=False)
    oracle_set = expected(pattern, policy, streams, use_oracle=True)
    assert engine_set == oracle_set
    assert spark_set == engine_set
    for r in got:
        assert r.n_events == len(r.event_ids) and r.start_ts <= r.end_ts


GROUPED_PATTERNS = ["PATTERN A; B+; C WHERE C.v0 > A.v0 WITHIN 20 SECONDS",
                    "PATTERN AND(A, B+) WITHIN 6 EVENTS", "PATTERN A; B{2}; C WITHIN 15 SECONDS",
                    "PATTERN A; B*; C WHERE B.v1 >= A.v1 WITHIN 12 SECONDS"]


@pytest.mark.parametrize("pattern", GROUPED_PATTERNS)
def test_grouped_kleene_spark_equals_engine_equals_oracle(spark, events_view,
                                                          pattern: str) -> None:
    policy = "skip-till-any-match-grouped"  # FAEM's grouped closures (docs/semantics.md)
    got = spark.sql(
        f"SELECT key, event_ids, variables FROM match_seq(pattern => {sql_string(pattern)}, "
        f"policy => '{policy}', key_col => 'key', events => TABLE(ms_events))").collect()
    streams = streams_by_key(events_view)
    engine_set = expected(pattern, policy, streams, use_oracle=False)
    assert engine_set == expected(pattern, policy, streams, use_oracle=True)
    assert {(r.key, tuple(r.event_ids), tuple(r.variables)) for r in got} == engine_set
    assert engine_set, "the events should give grouped matches"


def test_figure_3_of_faem_through_sql(spark) -> None:
    # Behravesh et al., Fig. 3: m1 m2 g3 g4 m5 g6 m7, G & M+ within 5 events.
    rows = [(i + 1, "k", t, T0 + timedelta(seconds=i), 0.0, 0, "g")
            for i, t in enumerate("MMGGMGM")]
    spark.createDataFrame(rows, SCHEMA).createOrReplaceTempView("ms_faem")
    got = spark.sql("SELECT event_ids FROM match_seq(pattern => 'PATTERN AND(G, M+) WITHIN 5 "
                    "EVENTS', policy => 'skip-till-any-match-grouped', key_col => 'key', "
                    "events => TABLE(ms_faem)) ORDER BY match_id").collect()
    assert [tuple(r.event_ids) for r in got] == [(1, 2, 3), (1, 2, 4), (2, 5, 6), (3, 5, 7),
                                                (4, 5, 7), (6, 7)]


def test_positional_forms_and_match_ids(spark, events_view) -> None:
    pattern = "PATTERN A; B WITHIN 20 SECONDS"
    streams = streams_by_key(events_view)
    want = expected(pattern, "skip-till-next-match", streams, False)
    # match_seq(pattern, key_col, TABLE(t)): the table is the last positional argument.
    keyed = spark.sql(f"SELECT key, match_id, event_ids, variables FROM match_seq("
                      f"{sql_string(pattern)}, 'key', TABLE(ms_events))").collect()
    assert {(r.key, tuple(r.event_ids), tuple(r.variables)) for r in keyed} == want
    # match_id is 1..n within each key, in order of the first bound event.
    per_key: dict[str, list] = {}
    for r in keyed:
        per_key.setdefault(r.key, []).append((r.match_id, r.event_ids))
    positions = {r[0]: i for i, r in enumerate(sorted(events_view, key=lambda r: (r[1], r[3], r[0])))}
    for key, ms in per_key.items():
        ms.sort()
        assert [m for m, _ in ms] == list(range(1, len(ms) + 1)), key
        starts = [positions[ids[0]] for _, ids in ms]
        assert starts == sorted(starts), key
    # match_seq(pattern, TABLE(t)): the whole table is one stream, and no key column comes back.
    busiest = max(per_key, key=lambda k: len(per_key[k]))
    one = spark.sql(f"SELECT * FROM match_seq({sql_string(pattern)}, "
                    f"TABLE(SELECT * FROM ms_events WHERE key = {sql_string(busiest)}))").collect()
    assert one and set(one[0].asDict()) == {"match_id", "start_ts", "end_ts", "event_ids", "variables",
                                    "n_events"}
    assert {(tuple(r.event_ids), tuple(r.variables)) for r in one} == \
        {(ids, var) for key, ids, var in want if key == busiest}


def test_a_partition_by_of_the_caller_is_refused(spark, events_view) -> None:
    # The function partitions the table itself (by the key, or as one stream); a PARTITION BY
    # in the call is refused by Spark before anything runs, never answered without the key.
    for call in ("match_seq('PATTERN A; B', TABLE(ms_events) PARTITION BY key ORDER BY ts)",
                 "match_seq('PATTERN A; B', 'key', TABLE(ms_events) PARTITION BY key)"):
        with pytest.raises(Exception, match="PARTITION BY"):
            spark.sql(f"SELECT * FROM {call}").collect()


def test_bad_pattern_reaches_the_sql_caller_with_code_and_position(spark, events_view) -> None:
    with pytest.raises(Exception) as info:
        spark.sql("SELECT * FROM match_seq('PATTERN A; B WHERE A.v0 >', 'key', TABLE(ms_events))"
                  ).collect()
    message = str(info.value)
    assert "CEP-PAT-" in message and "line 1, column" in message and "^" in message
    assert "Traceback" not in message.split("CEP-PAT-")[1]


def test_unknown_attribute_lists_the_columns(spark, events_view) -> None:
    with pytest.raises(Exception) as info:
        spark.sql("SELECT * FROM match_seq('PATTERN A; B WHERE A.price > 1', 'key', "
                  "TABLE(ms_events))").collect()
    message = str(info.value)
    assert "price" in message and "v0" in message and "grp" in message


def test_bad_argument_is_a_typed_error(spark, events_view) -> None:
    with pytest.raises(Exception, match="CEP-SQL-010.*ts_col 'when'"):
        spark.sql("SELECT * FROM match_seq(pattern => 'PATTERN A; B', ts_col => 'when', "
                  "key_col => 'key', events => TABLE(ms_events))").collect()
    with pytest.raises(Exception, match="CEP-SQL-010.*key_col 'nope'.*columns: id, key"):
        spark.sql("SELECT * FROM match_seq('PATTERN A; B', 'nope', TABLE(ms_events))").collect()
    with pytest.raises(Exception, match="CEP-SQL-010.*id_col 'grp' must be an integer"):
        spark.sql("SELECT * FROM match_seq('PATTERN A; B', 'key', TABLE(ms_events), "
                  "id_col => 'grp')").collect()
    with pytest.raises(Exception, match="CEP-SQL-010: match_seq has no argument 'polcy' \\(did "
                                        "you mean 'policy'\\?\\); its arguments: pattern, "
                                        "key_col, events, policy"):
        spark.sql("SELECT * FROM match_seq('PATTERN A; B', 'key', TABLE(ms_events), "
                  "polcy => 'skip-till-any-match')").collect()
    with pytest.raises(Exception, match="CEP-SQL-010: match_seq takes at most"):
        spark.sql("SELECT * FROM match_seq('PATTERN A; B', 'key', 'x', TABLE(ms_events))").collect()
    with pytest.raises(Exception, match="CEP-SQL-010: match_seq: argument key_col is given twice"):
        spark.sql("SELECT * FROM match_seq('PATTERN A; B', 'key', TABLE(ms_events), "
                  "key_col => 'key')").collect()
    with pytest.raises(Exception, match="CEP-SQL-010.*max_matches"):
        spark.sql("SELECT * FROM match_seq('PATTERN A; B', 'key', TABLE(ms_events), "
                  "max_matches => 0)").collect()


def test_null_id_or_timestamp_is_a_typed_error(spark) -> None:
    spark.createDataFrame([(1, "k", "A", T0), (2, "k", "B", None)],
                          "id BIGINT, key STRING, type STRING, ts TIMESTAMP") \
        .createOrReplaceTempView("ms_nulls")
    with pytest.raises(Exception, match="CEP-SQL-010.*id 2 has a NULL id or timestamp"):
        spark.sql("SELECT * FROM match_seq('PATTERN A; B', 'key', TABLE(ms_nulls))").collect()


def test_injection_through_the_pattern_stays_data(spark, events_view) -> None:
    # A quote-laden class name and a string literal are data, never SQL text.
    pattern = "PATTERN A; B WHERE A.grp = 'g1'' OR 1=1 --' WITHIN 20 SECONDS"
    rows = spark.sql(f"SELECT * FROM match_seq({sql_string(pattern)}, 'key', TABLE(ms_events))"
                     ).collect()
    assert rows == []
    assert spark.sql("SELECT count(*) FROM ms_events").first()[0] == len(events_view)


def test_limit_errors_reach_the_sql_caller(spark, events_view) -> None:
    with pytest.raises(Exception) as info:
        spark.sql("SELECT * FROM match_seq(pattern => 'PATTERN A; B', policy => 'skip-till-any-match', "
                  "max_matches => 1, key_col => 'key', events => TABLE(ms_events))").collect()
    message = str(info.value)
    assert "CEP-MATCH-001" in message and "more than max_matches=1;" in message, message
    # The advice is in the call's terms, not the Python core's (MatchLimits).
    assert "the argument max_matches => N" in message and "MatchLimits" not in message, message


@pytest.mark.parametrize("pattern, policy", [("PATTERN A+, B", "strict-contiguity"),
                                             ("PATTERN A+; B", "skip-till-any-match"),
                                             ("PATTERN A+; B", "skip-till-next-match")])
def test_kleene_over_a_long_run_of_one_key_is_a_typed_limit(spark, pattern: str,
                                                           policy: str) -> None:
    # Issue 46: under strict contiguity `A+, B` over 10^4 A's of one key grew its rows to
    # n^2/2 events and ended in numpy's memory error (a 10,000 x 10,001 array) after 30 s.
    events = ("SELECT id, 'k' AS key, TIMESTAMP_SECONDS(id) AS ts, "
              "IF(id = 9999, 'B', 'A') AS type FROM range(10000)")
    with pytest.raises(Exception) as info:
        spark.sql(f"SELECT count(*) FROM match_seq(pattern => '{pattern}', policy => '{policy}', "
                  f"key_col => 'key', events => TABLE({events}))").collect()
    message = str(info.value)
    assert "CEP-MATCH-001" in message and "MemoryError" not in message, message[:3000]
    assert re.search(r"more than max_(bound_events|partial_matches)=", message), message[:3000]


@pytest.mark.parametrize("first, second", [("A", "B"), ("B", "A")])
@pytest.mark.parametrize("pattern", ["PATTERN A; B", "PATTERN A, B"])
@pytest.mark.parametrize("key", ["", ", key_col => 'key'"])
def test_two_events_sharing_ts_and_id_are_refused_in_either_order(
        spark, first: str, second: str, pattern: str, key: str) -> None:
    # Issue 46: under strict contiguity the order B, A of two rows with one (ts, id) gave 0
    # rows (Spark's window saw them in some order and dropped both) and A, B gave CEP-MATCH-004.
    events = (f"SELECT * FROM VALUES (1L, 'k', TIMESTAMP'2024-01-01 00:00:00', '{first}'), "
              f"(1L, 'k', TIMESTAMP'2024-01-01 00:00:00', '{second}') AS t(id, key, ts, type)")
    with pytest.raises(Exception) as info:
        spark.sql(f"SELECT * FROM match_seq(pattern => '{pattern}'{key}, "
                  f"events => TABLE({events}))").collect()
    assert "CEP-MATCH-004" in str(info.value) and "unique ids" in str(info.value), \
        str(info.value)[:3000]


def test_numeric_timestamps_and_units_windows(spark) -> None:
    rows = [(i, "k", t, ts) for i, (t, ts) in enumerate(zip("ABAB", [10, 12, 30, 31]))]
    spark.createDataFrame(rows, "id BIGINT, key STRING, type STRING, ts BIGINT") \
        .createOrReplaceTempView("ms_units")
    got = spark.sql("SELECT start_ts, end_ts, event_ids FROM match_seq("
                    "'PATTERN A; B WITHIN 5 UNITS', 'key', TABLE(ms_units))").collect()
    assert sorted((r.start_ts, r.end_ts, tuple(r.event_ids)) for r in got) == \
        [(10, 12, (0, 1)), (30, 31, (2, 3))]


@pytest.mark.parametrize("ts_type, key_type", [("TIMESTAMP_NTZ", "INT"), ("DATE", "DATE"),
                                               ("TIMESTAMP", "BIGINT")])
def test_timestamp_and_key_types_users_have(spark, ts_type: str, key_type: str) -> None:
    # TIMESTAMP_NTZ (what Spark reads from most pandas-written Parquet) and DATE timestamps;
    # the key comes back with its own name and type, and start_ts/end_ts with the ts type.
    days = [0, 1, 3, 0, 2, 9]
    rows = [(i, k, t, d) for i, (k, t, d) in enumerate(zip([1, 1, 1, 2, 2, 2], "ABBABB", days))]
    spark.createDataFrame(rows, "id BIGINT, k INT, type STRING, d INT").createOrReplaceTempView(
        "ms_types_raw")
    ts_sql = {"TIMESTAMP_NTZ": "CAST(date_from_unix_date(d) AS TIMESTAMP_NTZ)",
              "DATE": "date_from_unix_date(d)",
              "TIMESTAMP": "CAST(date_from_unix_date(d) AS TIMESTAMP)"}[ts_type]
    key_sql = {"INT": "k", "DATE": "date_from_unix_date(k)", "BIGINT": "CAST(k AS BIGINT)"}[key_type]
    spark.sql(f"SELECT id, {key_sql} AS user_key, type, {ts_sql} AS day FROM ms_types_raw") \
        .createOrReplaceTempView("ms_types")
    frame = spark.sql("SELECT * FROM match_seq('PATTERN A; B WITHIN 3 DAYS', 'user_key', "
                      "TABLE(ms_types), ts_col => 'day')")
    fields = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
    assert fields["user_key"] == key_type.lower()
    assert fields["start_ts"] == fields["end_ts"] == ts_type.lower()
    got = sorted((str(r.user_key), tuple(r.event_ids), str(r.start_ts)[:10], str(r.end_ts)[:10])
                 for r in frame.collect())
    keys = {1: "1", 2: "2"} if key_type != "DATE" else {1: "1970-01-02", 2: "1970-01-03"}
    assert got == [(keys[1], (0, 1), "1970-01-01", "1970-01-02"),
                   (keys[2], (3, 4), "1970-01-01", "1970-01-03")]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("pattern", PATTERNS)
def test_many_keys_per_bucket(spark, pattern: str, policy: str) -> None:
    # 150 keys in 64 buckets: several keys share a partition and are matched as segments of one
    # stream; each key must still get its own matches, match_ids and timestamps.
    rows = random_events(5, n_keys=150, per_key=10)
    spark.createDataFrame(rows, SCHEMA).createOrReplaceTempView("ms_buckets")
    want = set()
    for key, stream in streams_by_key(rows).items():
        found = find_matches(compile_query(pattern, policy=policy), stream).to_matches()
        for match_id, m in enumerate(found, start=1):
            want.add((key, match_id, tuple(int(stream.ids[p]) for p in m.positions), m.variables,
                      int(stream.ts[m.positions[0]]), int(stream.ts[m.positions[-1]])))
    got = spark.sql(f"SELECT key, match_id, event_ids, variables, unix_micros(start_ts) AS s, "
                    f"unix_micros(end_ts) AS e FROM match_seq(pattern => {sql_string(pattern)}, "
                    f"policy => {sql_string(policy)}, key_col => 'key', "
                    "events => TABLE(ms_buckets))").collect()
    assert {(r.key, r.match_id, tuple(r.event_ids), tuple(r.variables), r.s, r.e)
            for r in got} == want


def test_ts_and_type_always_mean_the_chosen_columns(spark) -> None:
    # A data column called `type` must not shadow type_col, and `a.ts` reads ts_col.
    spark.createDataFrame(
        [(1, "k", "check", "not covered", T0), (2, "k", "check", "covered", T0 + timedelta(seconds=1)),
         (3, "k", "check", "x", T0 + timedelta(seconds=5))],
        "event_id BIGINT, key STRING, kind STRING, type STRING, event_time TIMESTAMP",
    ).createOrReplaceTempView("ms_renamed")

    def run(pattern: str) -> list:
        return [tuple(r.event_ids) for r in spark.sql(
            f"SELECT event_ids FROM match_seq(pattern => {sql_string(pattern)}, "
            "ts_col => 'event_time', type_col => 'kind', id_col => 'event_id', key_col => 'key', "
            "events => TABLE(ms_renamed))").collect()]

    assert run("PATTERN check+ c[] WHERE c.type = 'not covered'") == []
    assert run("PATTERN check c WHERE c.type = 'check' AND c.kind = 'check'") == [(1,), (2,), (3,)]
    assert sorted(run("PATTERN a; b DEFINE a AS true, b AS true WHERE b.ts - a.ts > 2 SECONDS")) \
        == [(1, 3), (2, 3)]


@pytest.mark.parametrize("pattern", ["PATTERN SEQ(a, b) WHERE strict-contiguity", "PATTERN a, b"])
@pytest.mark.parametrize("shim", ["true", "false"])
def test_strict_pattern_over_a_key_whose_rows_all_drop_out(spark, pattern: str, shim: str) -> None:
    # Issue 47's first finding: without the shim's row filter the task filters the rows
    # itself; a, c, b, b leaves it none, and the key column's values were never set.
    from tests.sql_fuzz import SHIM, session_conf

    table = ("SELECT * FROM VALUES (1L, 'k', 'a', 1L), (2L, 'k', 'c', 2L), (3L, 'k', 'b', 3L), "
             "(4L, 'k', 'b', 4L) AS t(id, key, type, ts)")
    with session_conf(spark, {SHIM: shim}):
        rows = spark.sql(f"SELECT * FROM match_seq({sql_string(pattern)}, 'key', "
                         f"TABLE({table}))").collect()
    assert rows == []


NAN_KEYS = ("SELECT * FROM VALUES (1L, CAST('NaN' AS DOUBLE), 'A', 1L), "
            "(2L, -CAST('NaN' AS DOUBLE), 'A', 2L), (3L, CAST('-0.0' AS DOUBLE), 'A', 3L), "
            "(4L, 0.0D, 'A', 4L) AS t(id, key, type, ts)")
"""Two NaN keys of different bits and -0.0 beside 0.0: two keys for GROUP BY (issue 47)."""


@pytest.mark.parametrize("pattern", ["PATTERN A; A", "PATTERN A, A"])
def test_floating_keys_group_as_group_by_does(spark, pattern: str) -> None:
    groups = spark.sql(f"SELECT count(DISTINCT key) AS n FROM ({NAN_KEYS})").collect()[0].n
    rows = spark.sql(f"SELECT key, event_ids FROM match_seq({sql_string(pattern)}, 'key', "
                     f"TABLE({NAN_KEYS}))").collect()
    assert groups == 2
    assert sorted((str(r.key), list(r.event_ids)) for r in rows) == [("0.0", [3, 4]),
                                                                     ("nan", [1, 2])]
