"""``match_seq`` answered by Spark alone: fixed-length runs of consecutive events (issue 53).

A call whose every match is ``k`` consecutive events, each bound by one alias Spark can test,
is replaced by the JVM shim's ``NativeCallRule`` with the selection ``udfs.match_seq_native``
writes (``lead`` masks, ``row_number`` over the kept rows, errors raised by Spark). Through
``spark.sql``, on random small tables (every timestamp type, three session time zones, one key
and many, empty cases, NULL types and values, ties of the clock), both paths, the native plan
and the Python function (the rule switched off), must give the brute-force oracle's matches;
the native plan must hold no Python task; and every error the Python function raises comes
from Spark at the same inputs, also when the query reads none of the output's columns.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cep.match import compile_query
from tests.sql_fuzz import (SQL_FUZZ, UNIT, ZONE, ZONES, Batch, batches, create_view,
                            rows_by_case, session_conf, union_sql)
from tests.udfs.test_fuzz_match_seq import check_rows, sql_call
from udfs.match_seq_native import steps

NATIVE = "spark.cep.nativeCalls.enabled"
PATTERNS = [
    "PATTERN A", "PATTERN A, B", "PATTERN A, A", "PATTERN A, B, C", "PATTERN B, A, B, C",
    "PATTERN A, N DEFINE N AS v IS NULL",  # holds past a key's last row: no run may end there
    "PATTERN X, Y DEFINE X AS v < 2, Y AS type = 'B' OR v = 3",
    "PATTERN A, B WHERE B.v > 1 AND A.v IS NOT NULL",
    "PATTERN SEQ(A, B, A) WHERE strict-contiguity",
]
WINDOWS = ["", " WITHIN 1 UNITS", " WITHIN 2 UNITS", " WITHIN 4 UNITS"]
POLICIES = ["strict-contiguity", "skip-till-next-match", "skip-till-any-match"]


def python_in(spark: Any, sql: str) -> bool:
    """Whether the optimised plan of ``sql`` still calls the Python table function."""
    return "match_seq(" in spark.sql(sql)._jdf.queryExecution().optimizedPlan().toString()


@pytest.mark.parametrize("pattern, native", [
    ("PATTERN A, B, C WITHIN 5 SECONDS", ("A", "B", "C")),
    ("PATTERN A; B", None),                          # skip-till-next-match: not a run
    ("PATTERN A, B+", None),                         # no fixed length
    ("PATTERN A, OR(B, C)", None),                   # two aliases may bind one event
    ("PATTERN A, B WHERE B.v > A.v", None),          # a condition across events
    ("PATTERN A, B WITHIN 3 EVENTS", None),          # positions count dropped events
    ("PATTERN A, B WITHIN 5 SECONDS SLIDE 1 SECONDS", None),
])
def test_which_patterns_run_natively(pattern: str, native: tuple[str, ...] | None) -> None:
    compiled = compile_query(pattern)
    masks = {alias: f"m_{alias}" for alias in compiled.alias_classes}
    assert steps(compiled, masks) == native
    # an alias whose conditions Spark cannot test (a timestamp read) keeps the Python path
    assert steps(compiled, dict(list(masks.items())[1:])) is None


@st.composite
def native_calls(draw: st.DrawFn) -> dict[str, Any]:
    pattern = draw(st.sampled_from(PATTERNS))
    policy = ("strict-contiguity" if "WHERE strict" in pattern
              else draw(st.sampled_from(POLICIES)))
    return {"query": pattern + draw(st.sampled_from(WINDOWS)), "policy": policy,
            "keyed": draw(st.booleans()), "chunk_rows": None, "renamed": draw(st.booleans()),
            "columns": draw(st.booleans())}


@SQL_FUZZ
@given(batch=batches(keys=("k1", "k2", "k3", "k4", None)), native=st.booleans(),
       zone=st.sampled_from(ZONES), data=st.data())
def test_native_and_python_paths_equal_the_oracle(spark, batch: Batch, native: bool, zone: str,
                                                  data: st.DataObject) -> None:
    chosen = [data.draw(native_calls()) for _ in range(batch.cases)]
    create_view(spark, batch, "fuzz_native")
    unit = UNIT[batch.ts_type]
    calls = [sql_call("fuzz_native", case, call, unit, batch.of_case(case))
             for case, call in enumerate(chosen)]
    statement = union_sql([
        (calls[case],
         ("key" if call["keyed"] else "CAST(NULL AS STRING) AS key")
         + ", match_id, start_ts, end_ts, event_ids, variables, n_events, "
         + (f"v AS vs, {'kind' if call['renamed'] else 'type'} AS types" if call["columns"]
            else "CAST(NULL AS ARRAY<BIGINT>) AS vs, CAST(NULL AS ARRAY<STRING>) AS types"))
        for case, call in enumerate(chosen)])
    with session_conf(spark, {NATIVE: str(native).lower(), ZONE: zone}):
        for call, sql in zip(chosen, calls):
            # One event is no run to cut: but for strict contiguity its rows are filtered by
            # class and matched in Python, as before.
            alone = ("," not in call["query"] and not call["query"].startswith("PATTERN SEQ")
                     and call["policy"] != "strict-contiguity")
            assert python_in(spark, f"SELECT * FROM {sql}") is (alone or not native), sql
        rows = spark.sql(statement).collect()
        row_of = {r.id: r for r in spark.table("fuzz_native").collect()}
    got = rows_by_case(rows, batch.cases, lambda r: r)
    for case, call in enumerate(chosen):
        check_rows(got[case], batch.of_case(case), call, row_of,
                   f"case {case} {call} native={native} {batch.ts_type} in {zone}")
        for key in {r.key for r in got[case]}:  # match_id in the order of first events
            mine = sorted((r for r in got[case] if r.key == key),
                          key=lambda r: (row_of[r.event_ids[0]].ts, r.event_ids[0]))
            assert [r.match_id for r in mine] == list(range(1, len(mine) + 1)), (case, key)


TIE = ("SELECT * FROM VALUES (1L, 'k', 'A', 1L), (2L, 'k', 'B', 2L), (2L, 'k', 'C', 2L), "
       "(3L, 'k', 'A', 3L), (4L, 'k', 'B', 4L) AS t(id, key, type, ts)")
CLEAN = TIE.replace("(2L, 'k', 'C', 2L), ", "")


@pytest.mark.parametrize("native", ["true", "false"])
@pytest.mark.parametrize("columns", ["*", "count(*)"])
def test_errors_are_raised_whatever_the_query_reads(spark, native: str, columns: str) -> None:
    # The optimizer drops columns no one reads: the checks live in the native plan's filters,
    # not in its output columns, so SELECT count(*) still refuses a tie and a limit.
    call = ("match_seq(pattern => 'PATTERN A, B', policy => 'strict-contiguity', "
            "key_col => 'key', events => TABLE({table}){extra})")
    with session_conf(spark, {NATIVE: native}):
        with pytest.raises(Exception) as tie:
            spark.sql(f"SELECT {columns} FROM " + call.format(table=TIE, extra="")).collect()
        assert "CEP-MATCH-004" in str(tie.value) and "unique ids" in str(tie.value), str(tie.value)
        with pytest.raises(Exception) as limit:
            spark.sql(f"SELECT {columns} FROM " + call.format(
                table=CLEAN, extra=", max_matches => 1")).collect()
        assert "CEP-MATCH-001: the partition has 2 matches, more than max_matches=1" \
            in str(limit.value), str(limit.value)
        assert spark.sql("SELECT count(*) AS n FROM " + call.format(
            table=CLEAN, extra=", max_matches => 2")).collect()[0].n == 2


@pytest.mark.parametrize("pattern, hint", [
    ("PATTERN O_Acepted, O_Accepted", "(did you mean 'O_Accepted'?)"),          # the closest
    ("PATTERN A_Pend, O_Accepted", "(did you mean 'A_Pending'?)"),              # a prefix
    ("PATTERN O_Create, O_Accepted", "(did you mean 'O_Create Offer'? a name with spaces is "
                                     "written in double quotes: \"O_Create Offer\")"),
    ("PATTERN Zzzzzzzz, O_Accepted", "class 'Zzzzzzzz'\n"),                    # nothing close
])
def test_an_absent_class_offers_a_type_value_of_the_input(spark, pattern: str, hint: str) -> None:
    table = ("SELECT * FROM VALUES (1L, 'A_Pending', 1L), (2L, 'O_Create Offer', 2L), "
             "(3L, 'O_Accepted', 3L) AS t(id, type, ts)")
    sql = (f"SELECT * FROM match_seq(pattern => '{pattern}', policy => 'strict-contiguity', "
           f"events => TABLE({table}))")
    assert not python_in(spark, sql)
    for native in ("true", "false"):  # the same words on both paths
        with session_conf(spark, {NATIVE: native}), pytest.raises(Exception) as absent:
            spark.sql(sql).collect()
        assert "CEP-PAT-219: line 1, column 9: no event of the input has class" in str(
            absent.value) and hint in str(absent.value), (native, str(absent.value))


def test_tiny_inputs(spark) -> None:
    # An empty table, a key of one event, a key without a match, a run at the very end of a key.
    table = ("SELECT * FROM VALUES (1L, 'k1', 'A', 1L), (2L, 'k2', 'A', 1L), (3L, 'k2', 'C', 2L), "
             "(4L, 'k3', 'B', 1L), (5L, 'k3', 'A', 2L), (6L, 'k3', 'B', 3L) AS t(id, key, type, ts)")
    call = ("SELECT key, match_id, event_ids FROM match_seq(pattern => 'PATTERN A, B', "
            "key_col => 'key', allow_absent => true, events => TABLE({}))")
    assert spark.sql(call.format(table + " WHERE id < 0")).collect() == []
    rows = spark.sql(call.format(table)).collect()
    assert [(r.key, r.match_id, list(r.event_ids)) for r in rows] == [("k3", 1, [5, 6])]


@pytest.mark.parametrize("native", ["true", "false"])
def test_a_run_cannot_end_past_the_last_row_of_a_key(spark, native: str) -> None:
    # `v IS NULL` holds for the row after a key's last one, which does not exist: the native
    # plan's lead() reads NULL there, and only the run's last row's existence tells them apart.
    table = "SELECT * FROM VALUES (1L, 'k', 'A', 1L, 1L), (2L, 'k', 'A', 2L, 1L) AS t(id, key, type, ts, v)"
    with session_conf(spark, {NATIVE: native}):
        rows = spark.sql("SELECT * FROM match_seq(pattern => 'PATTERN A, N DEFINE N AS v IS NULL', "
                         f"key_col => 'key', events => TABLE({table}))").collect()
    assert rows == []


def test_switched_off_the_python_path_computes_no_native_field(spark) -> None:
    # The fields the rule would read (event_ids' arrays, the checks' strings) become constants,
    # so the Python path costs what it cost before the native plan existed.
    sql = ("SELECT * FROM match_seq(pattern => 'PATTERN A, B', key_col => 'key', "
           f"events => TABLE({CLEAN}))")
    with session_conf(spark, {NATIVE: "false"}):
        plan = spark.sql(sql)._jdf.queryExecution().optimizedPlan().toString()
    assert "match_seq(" in plan and "array(" not in plan and "CEP-MATCH-004" not in plan, plan
