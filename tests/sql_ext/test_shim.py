"""The JVM shim (sql_ext/jvm, jobs/session/shim.py): loaded by the session, its rule filters the rows a
call does not need before the shuffle, and the answers are the same with and without it."""

from __future__ import annotations

import pytest

from cep.match import compile_query, find_matches
from jobs.session.shim import EXTENSION, shim_jar
from sql_ext.quoting import sql_string
from tests.udfs.test_match_seq import SCHEMA, expected, random_events, streams_by_key

ENABLED = "spark.cep.keepRows.enabled"
NATIVE = "spark.cep.nativeCalls.enabled"
FILTERED = [  # class events suffice: a row of no class (here D, or v1 >= 3 for X) can never bind
    ("PATTERN A; B; C WHERE C.v0 > A.v0 WITHIN 20 SECONDS", "skip-till-next-match"),
    ("PATTERN SEQ(A, NOT(C), B) WITHIN 30 SECONDS", "skip-till-any-match"),
    ("PATTERN A; B+ b[]; C WHERE b[i].v0 >= b[i-1].v0 WITHIN 25 SECONDS", "skip-till-next-match"),
    ("PATTERN X; B DEFINE X AS v1 < 3 AND type = 'A' WHERE [grp] WITHIN 10 SECONDS",
     "skip-till-any-match"),
]
RUNS = [  # every match is a run of consecutive events: rows of no run are filtered, runs cut
    ("PATTERN A; B", "strict-contiguity"),
    ("PATTERN A, B", "skip-till-next-match"),
    ("PATTERN A, B, C WHERE C.v0 > A.v0 WITHIN 20 SECONDS", "strict-contiguity"),
    ("PATTERN A, OR(B, C), D", "skip-till-next-match"),
    ("PATTERN A, B+ b[], C WHERE b[i].v0 >= b[i-1].v0", "strict-contiguity"),  # any length
]
NOT_FILTERED = [  # positions count every event
    ("PATTERN SEQ(A, NOT(C), B)", "strict-contiguity"),
    ("PATTERN A; B WITHIN 4 EVENTS", "skip-till-next-match"),
]


@pytest.fixture(scope="module")
def shim_events(spark):
    rows = random_events(11, n_keys=5, per_key=14)
    spark.createDataFrame(rows, SCHEMA).createOrReplaceTempView("shim_events")
    return rows


@pytest.fixture(scope="module")
def run_events(spark):
    rows = random_events(13, n_keys=6, per_key=150)
    spark.createDataFrame(rows, SCHEMA).createOrReplaceTempView("run_events")
    return rows


def query(pattern: str, policy: str, table: str = "shim_events", extra: str = "") -> str:
    return (f"SELECT key, match_id, event_ids, variables FROM match_seq(pattern => "
            f"{sql_string(pattern)}, policy => {sql_string(policy)}, key_col => 'key', "
            f"events => TABLE({table}){extra})")


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
    # The filter sits under the repartition, so the shuffle moves only the rows that matter
    # (the facts' subqueries, printed above it, hold filters of their own).
    assert "Filter" in plan[plan.index("+- RepartitionByExpression"):], plan
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


def numbered(pattern: str, policy: str, rows: list[tuple]) -> set:
    """(key, match_id, event_ids) as the engine numbers the matches of each whole key."""
    out = set()
    for key, stream in streams_by_key(rows).items():
        found = find_matches(compile_query(pattern, policy=policy), stream).to_matches()
        out |= {(key, i, tuple(int(stream.ids[p]) for p in m.positions))
                for i, m in enumerate(found, start=1)}
    return out


@pytest.mark.parametrize("pattern, policy", RUNS)
def test_runs_of_consecutive_events_are_cut_where_rows_were_filtered(spark, run_events,
                                                                      pattern: str,
                                                                      policy: str) -> None:
    sql = query(pattern, policy, "run_events")
    # The Python path (a fixed-length run also has a native plan: tests/udfs/test_match_seq_native.py)
    spark.conf.set(NATIVE, "false")
    try:
        plan = optimized(spark, sql)
        assert "__cep_keep, true" in plan and "Window" in plan and "__pos" in plan, plan
        with_rule = spark.sql(sql).collect()
        spark.conf.set(ENABLED, "false")
        without = spark.sql(sql).collect()
    finally:
        spark.conf.unset(ENABLED)
        spark.conf.unset(NATIVE)
    oracle = expected(pattern, policy, streams_by_key(run_events), use_oracle=True)
    assert oracle, "the data must give matches"
    for got in (with_rule, without, spark.sql(sql).collect()):
        assert {(r.key, tuple(r.event_ids), tuple(r.variables)) for r in got} == oracle
        # match_id counts per key across the runs the key was cut into
        assert ({(r.key, r.match_id, tuple(r.event_ids)) for r in got}
                == numbered(pattern, policy, run_events))


def test_max_matches_counts_every_run_of_a_key(spark, run_events) -> None:
    pattern, policy = "PATTERN A, B", "strict-contiguity"
    per_key: dict[str, int] = {}
    for key, _, _ in numbered(pattern, policy, run_events):
        per_key[key] = per_key.get(key, 0) + 1
    most = max(per_key.values())
    assert most >= 2, "one key must have matches in several runs"
    assert len(spark.sql(query(pattern, policy, "run_events").replace(
        "events =>", f"max_matches => {most}, events =>")).collect()) == sum(per_key.values())
    with pytest.raises(Exception, match=f"CEP-MATCH-001.*{most} matches, more than "
                                        f"max_matches={most - 1}"):
        spark.sql(query(pattern, policy, "run_events").replace(
            "events =>", f"max_matches => {most - 1}, events =>")).collect()


def test_a_partition_by_clause_is_refused_for_runs(spark, run_events) -> None:
    # The shim's parser refuses it first (tests/sql_ext/test_table_arguments.py); a session
    # without the shim reaches the task's own check, CEP-SQL-010 "write no PARTITION BY".
    with pytest.raises(Exception, match="CEP-SQL-003.*instead of PARTITION BY"):
        spark.sql(query("PATTERN A, B", "strict-contiguity", "run_events",
                        " PARTITION BY grp")).collect()


def _python_workers() -> set[int]:
    """The pids of the Python workers Spark's daemons forked (a daemon's own child)."""
    from pathlib import Path

    daemons, children = set(), {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except OSError:  # gone meanwhile
            continue
        if b"pyspark.daemon" in command:
            daemons.add(int(entry.name))
            children[int(entry.name)] = parent
    return {pid for pid, parent in children.items() if parent in daemons}


def test_the_class_check_leaves_the_python_workers_alive(spark, shim_events) -> None:
    # Regression: FactsRule once asked each class with a `LIMIT 1` query. Over a DataFrame of a
    # Python list every scan is a Python task, and one that stops reading early loses its worker:
    # every call then forked new workers (and imported pandas again in each, ~1 s).
    pattern, policy = FILTERED[0]
    sql = (f"SELECT * FROM match_seq(pattern => {sql_string(pattern)}, policy => "
           f"{sql_string(policy)}, key_col => 'key', events => TABLE(shim_events))")
    spark.sql(sql).collect()
    before = _python_workers()
    for _ in range(2):
        spark.sql(sql).collect()
    new = _python_workers() - before
    assert before and not new, f"the calls forked new Python workers {sorted(new)} " \
                               f"(alive before: {sorted(before)})"
