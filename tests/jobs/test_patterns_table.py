"""The patterns table (``cep_patterns``): standing patterns an analyst adds, changes and disables
with plain SQL, read by ``run-all`` at the start of each run (docs/standing.md).

A row added runs as ``match/<name>`` and finds what the same entry of ``conf/matches.toml``
finds; a changed pattern runs as a new generation with tables of its own (the old ones are
left as they were); a disabled row stops; a bad row is a failed job with its own error
(code, caret) while the others run.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from delta_tables.catalog import read_table
from delta_tables.match_state import MatchConf
from delta_tables.pattern_table import generations_table, patterns_table
from delta_tables.settings import TableConf
from jobs.framework.patterns import create_patterns_table, read_patterns
from jobs.framework.run_conf import RunConf
from jobs.framework.runner import run_all, run_job
from jobs.framework.txn import log_version
from jobs.state.match import run_match

EPOCH = 1_704_067_200_000_000
MINUTE = 60_000_000
TS = pa.timestamp("us", tz="UTC")
SCHEMA = pa.schema([("id", pa.int64()), ("case_id", pa.string()), ("ts", TS),
                    ("type", pa.string()), ("amount", pa.float64())])
FIRST = "PATTERN A a; B b WHERE b.amount >= a.amount WITHIN 30 MINUTES"
SECOND = "PATTERN A a; B b WITHIN 20 MINUTES"


def commit_events(seed: int, n: int, first_id: int, start_min: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    minutes = start_min + np.sort(rng.integers(0, 60, n))
    return pa.table({"id": np.arange(first_id, first_id + n, dtype=np.int64),
                     "case_id": [f"k{k}" for k in rng.integers(0, 3, n)],
                     "ts": pa.array(EPOCH + minutes * MINUTE, pa.int64()).cast(TS),
                     "type": [str(x) for x in rng.choice(list("AABBC"), n)],
                     "amount": rng.integers(1, 5, n).astype(np.float64)}, schema=SCHEMA)


@pytest.fixture(scope="module")
def world(spark, settings) -> Any:
    from delta.tables import DeltaTable

    location = settings.location_under_warehouse("pattab_src")
    (DeltaTable.createIfNotExists(spark).location(str(location))
     .addColumns(spark.createDataFrame(SCHEMA.empty_table()).schema)
     .property("delta.enableChangeDataFeed", "true").execute())
    for k in range(2):
        spark.createDataFrame(commit_events(k, 40, 100 * k, 60 * k).to_pandas()) \
            .write.format("delta").mode("append").save(str(location))
    create_patterns_table(spark, settings)
    manifest = TableConf("pattab_runs", settings.location_under_warehouse("pattab_runs"))
    yield {"location": location, "rules": RunConf((), 1, 0.0, manifest, 168, True)}
    # The table is the warehouse's own: leave no row for another test's run-all.
    spark.sql("DELETE FROM cep_patterns")


def sql_text(value: str) -> str:
    """A SQL string literal (the test's own constants only)."""
    return "'" + value.replace("'", "''") + "'"


def insert(spark, name: str, pattern: str, *, source: str = "pattab_src") -> None:
    spark.sql(f"INSERT INTO cep_patterns (name, source, pattern, key_col, enabled) VALUES "
              f"({sql_text(name)}, {sql_text(source)}, {sql_text(pattern)}, 'case_id', true)")


def table(settings, name: str) -> TableConf:
    return TableConf(name, settings.warehouse_dir / name)


def rows(spark, settings, name: str) -> list[dict]:
    found = read_table(spark, table(settings, name)).drop("run_id").toArrow().to_pylist()
    return sorted(found, key=lambda r: (str(r.get("case_id")), r.get("match_id") or 0,
                                        str(r.get("start_ts"))))


def test_rows_added_changed_disabled_run_as_their_generation(spark, settings, world) -> None:
    rules = world["rules"]
    insert(spark, "pt_next", FIRST)
    report = run_all(spark, settings, quiet=True, run_conf=rules)
    assert report.ok, report.failures
    assert [s.job for s in report.summaries] == ["match/pt_next"]
    # What the row finds is what the same TOML entry finds.
    ref = MatchConf.from_mapping(settings, "pt_ref", {"source": "pattab_src", "pattern": FIRST,
                                                      "key_col": "case_id"})
    run_match(spark, settings, ref, quiet=True)
    assert rows(spark, settings, "pt_next_matches") == rows(spark, settings, "pt_ref_matches")
    assert rows(spark, settings, "pt_next_matches"), "the source holds matches"
    assert rows(spark, settings, "pt_next_timeouts") == rows(spark, settings, "pt_ref_timeouts")
    first_version = log_version(table(settings, "pt_next_matches"))

    # A changed pattern is generation 2, with tables of its own; generation 1 is left alone.
    spark.sql(f"UPDATE cep_patterns SET pattern = {sql_text(SECOND)} WHERE name = 'pt_next'")
    report = run_all(spark, settings, quiet=True, run_conf=rules)
    assert [s.job for s in report.summaries] == ["match/pt_next_g2"], report.failures
    assert log_version(table(settings, "pt_next_matches")) \
        == first_version
    # (other tests of the session register patterns of their own in the same table)
    gens = sorted((r["name"], r["generation"], r["job"]) for r in
                  read_table(spark, generations_table(settings)).collect()
                  if r["name"] == "pt_next")
    assert gens == [("pt_next", 1, "pt_next"), ("pt_next", 2, "pt_next_g2")]
    ref2 = MatchConf.from_mapping(settings, "pt_ref2", {"source": "pattab_src",
                                                        "pattern": SECOND, "key_col": "case_id"})
    run_match(spark, settings, ref2, quiet=True)
    assert rows(spark, settings, "pt_next_g2_matches") == rows(spark, settings, "pt_ref2_matches")
    # A rerun with nothing new finds the same generation and writes nothing.
    recorded = log_version(generations_table(settings))
    report = run_all(spark, settings, quiet=True, run_conf=rules)
    assert [(s.job, s.written) for s in report.summaries] == [("match/pt_next_g2", False)]
    assert log_version(generations_table(settings)) == recorded

    # `python -m jobs match --name pt_next` runs the current generation.
    assert run_job(spark, settings, "match/pt_next", quiet=True,
                   run_conf=rules).job == "match/pt_next_g2"

    # Disabled: not run, even with new events; its tables stay.
    spark.sql("UPDATE cep_patterns SET enabled = false WHERE name = 'pt_next'")
    meta = log_version(table(settings, "pt_next_g2_meta"))
    spark.createDataFrame(commit_events(7, 20, 700, 200).to_pandas()).write.format("delta") \
        .mode("append").save(str(world["location"]))
    report = run_all(spark, settings, quiet=True, run_conf=rules)
    assert report.ok and report.summaries == []
    assert log_version(table(settings, "pt_next_g2_meta")) == meta
    assert [r.line() for r in read_patterns(spark, settings)] == ["pt_next: disabled"]
    # Enabled again with the same pattern: the same generation catches up.
    spark.sql("UPDATE cep_patterns SET enabled = true WHERE name = 'pt_next'")
    report = run_all(spark, settings, quiet=True, run_conf=rules)
    assert [(s.job, s.written) for s in report.summaries] == [("match/pt_next_g2", True)]
    spark.sql("DELETE FROM cep_patterns WHERE name = 'pt_next'")


@pytest.mark.parametrize("name, pattern, source, expected", [
    ("pt_bad", "PATTERN A; B", "pattab_src", "CEP-MATCH-005"),
    ("pt_syntax", "PATTERN A; ; B WITHIN 2 EVENTS", "pattab_src", "line 1, column"),
    ("unanswered_offers", FIRST, "pattab_src", "also a standing pattern of conf/matches.toml"),
    ("pt_x_g2", FIRST, "pattab_src", "ends like a later generation"),
    ("pt_far", FIRST, "../outside", "invalid source table"),
])
def test_a_bad_row_fails_alone_with_its_own_error(spark, settings, world, name, pattern, source,
                                                  expected) -> None:
    insert(spark, name, pattern, source=source)
    insert(spark, "pt_good", FIRST)
    try:
        report = run_all(spark, settings, quiet=True, run_conf=world["rules"])
        assert [s.job for s in report.summaries] == ["match/pt_good"]
        error = report.failures[f"match/{name}"]
        assert expected in str(error) and "CEP-CONF-001" in str(error)
        assert f"cep_patterns row {name!r}" in str(error)
        if "column" in expected:
            assert "^" in str(error)  # the caret under the user's own text
        if name != "unanswered_offers":  # that name runs the TOML entry
            with pytest.raises(type(error)):
                    run_job(spark, settings, f"match/{name}", quiet=True,
                        run_conf=world["rules"])
    finally:
        spark.sql(f"DELETE FROM cep_patterns WHERE name IN ({sql_text(name)}, 'pt_good')")


def test_two_rows_of_one_name_are_refused(spark, settings, world) -> None:
    insert(spark, "pt_twice", FIRST)
    insert(spark, "pt_twice", SECOND)
    try:
        found = read_patterns(spark, settings)
        assert [(r.name, r.job) for r in found] == [("pt_twice", None)]
        assert "2 rows of cep_patterns are named 'pt_twice'" in str(found[0].error)
    finally:
        spark.sql("DELETE FROM cep_patterns WHERE name = 'pt_twice'")


def test_the_patterns_command_lists_rows(spark, settings, world, capsys) -> None:
    from jobs.cli import main

    insert(spark, "pt_listed", FIRST)
    try:
        assert main(["patterns", "--create"], spark=spark, settings=settings) == 0
        out = capsys.readouterr().out
        assert f"cep_patterns at {patterns_table(settings).location}" in out
        assert "pt_listed: generation 1, job match/pt_listed" in out
    finally:
        spark.sql("DELETE FROM cep_patterns WHERE name = 'pt_listed'")
