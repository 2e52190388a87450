"""The job framework (jobs/framework/runner.py) and the run manifest (delta_tables/manifest.py), on real Delta.

A small prediction set over a three-commit source runs through :func:`jobs.framework.runner.run_job`:
each run appends one manifest row after the meta table; reading the state through the manifest
(by version, by temp views, and in plain SQL with ``TIMESTAMP AS OF`` a subquery) gives the
state of that run even after later runs; a crash between the meta table and the manifest is
healed by the rerun, which writes the manifest row only; conflicts are retried, a bounded number
of times; a rebuilt state starts a new generation.
"""

from __future__ import annotations

import dataclasses
import shutil
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from cep.errors import ConfigError
from delta_tables.catalog import read_table
from delta_tables.manifest import ManifestError, find_run, read_runs, read_state, register_run_views
from delta_tables.predict_state import PredictionConf
from delta_tables.settings import TableConf
from jobs.framework.txn import log_version as _version
from jobs.framework.registry import StateJob
from jobs.framework.run_conf import RunConf
from jobs.framework.runner import RetriesExhaustedError, record_run, run_all, run_job

TS = pa.timestamp("us", tz="UTC")
HOUR = 3_600_000_000
EPOCH = 1_704_067_200_000_000
SCHEMA = pa.schema([("id", pa.int64()), ("user", pa.string()), ("ts", TS), ("temp", pa.float64())])


def commit(seed: int, n: int, first_id: int, start_hour: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    hours = start_hour + np.sort(rng.integers(0, 40, n))
    return pa.table({"id": np.arange(first_id, first_id + n, dtype=np.int64),
                     "user": [f"u{k}" for k in rng.integers(0, 3, n)],
                     "ts": pa.array(EPOCH + hours * HOUR, pa.int64()).cast(TS),
                     "temp": np.round(rng.normal(29, 3, n), 1)}, schema=SCHEMA)


@pytest.fixture(scope="module")
def world(spark, settings) -> dict[str, Any]:
    from delta.tables import DeltaTable

    location = settings.location_under_warehouse("runner_src")
    (DeltaTable.createIfNotExists(spark).location(str(location))
     .addColumns(spark.createDataFrame(SCHEMA.empty_table()).schema)
     .property("delta.enableChangeDataFeed", "true").execute())
    conf = PredictionConf.from_mapping(settings, "runner_heat", {
        "source": "runner_src", "key_col": "user", "ts_col": "ts", "id_col": "id",
        "subscriptions": {"hot3": "PATTERN H, H, H DEFINE H AS temp > 30"}})
    job = StateJob("predict", "runner_heat", conf, conf.source, dict(conf.tables()))
    manifest = TableConf("runner_runs", settings.location_under_warehouse("runner_runs"))
    rules = RunConf((), 3, 0.0, manifest, 168, True)
    return {"location": location, "job": job, "rules": rules, "manifest": manifest}


def append(spark, world: dict[str, Any], part: pa.Table) -> int:
    spark.createDataFrame(part).write.format("delta").mode("append").save(str(world["location"]))
    return int(_version(TableConf("runner_src", world["location"])))


def snapshot(spark, job: StateJob, versions: dict[str, int | None] | None = None) -> dict:
    out = {}
    for suffix, table in job.tables.items():
        v = None if versions is None else versions[table.name]
        rows = read_table(spark, table, version=v).toArrow().to_pylist()
        for row in rows:
            for volatile in ("updated_at", "run_id"):
                row.pop(volatile, None)
        out[suffix] = sorted(rows, key=lambda r: tuple(str(x) for x in r.values()))
    return out


def test_runs_are_recorded_and_readable_as_of_each_run(spark, settings, world) -> None:
    job, rules, manifest = world["job"], world["rules"], world["manifest"]
    seen = []
    for seed in range(3):
        version = append(spark, world, commit(seed, 60, 1000 * seed, 40 * seed))
        done = run_job(spark, settings, job, quiet=True, run_conf=rules)
        assert done.written and done.run is not None and done.attempts == 1
        assert done.run.source_version == version and done.run.status == "complete"
        assert done.run.generation == 1 and done.run.run_id == f"predict/runner_heat/g1/v{version}"
        seen.append((done.run, snapshot(spark, job)))
    again = run_job(spark, settings, job, quiet=True, run_conf=rules)
    assert not again.written and again.run is None  # nothing new: nothing written, no row
    runs = read_runs(spark, manifest, job.key)
    assert [r.run_id for r in runs] == [r.run_id for r, _ in seen]
    for run, state in seen:
        assert snapshot(spark, job, run.state_versions) == state
        frames = read_state(spark, job.tables, run)
        assert sorted(frames) == sorted(job.tables)
    first = find_run(spark, manifest, job.key, source_version=seen[0][0].source_version)
    assert first == seen[0][0]
    assert find_run(spark, manifest, job.key) == seen[-1][0]
    with pytest.raises(ManifestError, match="CEP-JOB-045: job 'predict/runner_heat' has no run"):
        find_run(spark, manifest, job.key, run="predict/runner_heat/g1/v999")

    # Views over the first run, and plain SQL with TIMESTAMP AS OF a manifest subquery.
    views = register_run_views(spark, job.tables, seen[0][0])
    assert "runner_heat_models_at_run" in views
    via_view = spark.sql("SELECT sub, events FROM runner_heat_models_at_run").collect()
    # Both tables are registered by name: the job registers its state, the runner the manifest.
    via_sql = spark.sql(
        "SELECT sub, events FROM runner_heat_models TIMESTAMP AS OF ("
        "  SELECT state_timestamps['runner_heat_models'] FROM runner_runs"
        f"  WHERE run_id = '{seen[0][0].run_id}')").collect()
    assert sorted(via_sql) == sorted(via_view)
    assert sorted(via_view) != sorted(spark.sql("SELECT sub, events FROM runner_heat_models")
                                      .collect())


def test_a_missing_manifest_row_is_written_by_the_rerun_alone(spark, settings, world) -> None:
    job, rules, manifest = world["job"], world["rules"], world["manifest"]
    append(spark, world, commit(7, 30, 7000, 200))
    # The crash: the job's run completes (meta written) but the process dies before the manifest.
    result = job.run(spark, settings, quiet=True)
    assert result.written
    before = {t.name: _version(t) for t in job.tables.values()}
    healed = run_job(spark, settings, job, quiet=True, run_conf=rules)
    assert not healed.written and healed.run is not None and healed.run.status == "recorded"
    assert healed.run.source_version == result.source_version
    assert {t.name: _version(t) for t in job.tables.values()} == before  # state untouched
    assert healed.run.state_versions == {name: v for name, v in before.items()}
    # Recording again (or a second process recording the same run) adds nothing.
    assert record_run(spark, job, manifest) is None
    assert len([r for r in read_runs(spark, manifest, job.key)
                if r.source_version == result.source_version]) == 1


def test_a_manifest_set_to_a_source_table_is_refused_before_any_write(spark, settings,
                                                                        world) -> None:
    # jobs.toml [manifest] table pointing at the job's own source (issue 21): a typed error
    # naming the table before the job runs; the source and the state keep their versions.
    job, rules = world["job"], world["rules"]
    source = TableConf("runner_src", world["location"])
    wrong = dataclasses.replace(rules, manifest=source)
    append(spark, world, commit(11, 20, 11000, 300))
    before = {t.name: _version(t) for t in (source, *job.tables.values())}
    rows = read_table(spark, source).count()
    with pytest.raises(ConfigError, match=r"CEP-CONF-001: table runner_src .* is not a "
                                          r"run-manifest table \(no cep.table property\); "
                                          r"nothing was written"):
        run_job(spark, settings, job, quiet=True, run_conf=wrong)
    assert {t.name: _version(t) for t in (source, *job.tables.values())} == before
    assert read_table(spark, source).count() == rows
    # A manifest row alone (a rerun healing a crash) is refused the same way.
    with pytest.raises(ConfigError, match="is not a run-manifest table"):
        record_run(spark, job, source)
    healed = run_job(spark, settings, job, quiet=True, run_conf=rules)
    assert healed.written and healed.run.source_version == before["runner_src"]


def test_conflicts_are_retried_a_bounded_number_of_times(spark, settings, world) -> None:
    job, rules = world["job"], world["rules"]
    calls: list[int] = []
    waits: list[float] = []

    class Flaky:
        def __init__(self, failures: int) -> None:
            self.failures = failures

        def __getattr__(self, name: str) -> Any:
            return getattr(job, name)

        def run(self, *args: Any, **kwargs: Any) -> Any:
            calls.append(1)
            if len(calls) <= self.failures:
                raise RuntimeError("[DELTA_CONCURRENT_APPEND] ConcurrentAppendException: "
                                   "Files were added by a concurrent update")
            return job.run(*args, **kwargs)

    retry = RunConf((), 3, 0.5, rules.manifest, 168, True)
    done = run_job(spark, settings, Flaky(2), quiet=True, run_conf=retry, sleep=waits.append)
    assert done.attempts == 3 and waits == [0.5, 1.0]
    calls.clear()
    with pytest.raises(RetriesExhaustedError, match="CEP-JOB-041: predict/runner_heat: a Delta "
                                                    "concurrency conflict on each of 3 attempts"):
        run_job(spark, settings, Flaky(5), quiet=True, run_conf=retry, sleep=waits.append)
    assert len(calls) == 3


def test_a_rebuilt_state_is_a_new_generation(spark, settings, world) -> None:
    job, rules, manifest = world["job"], world["rules"], world["manifest"]
    last = find_run(spark, manifest, job.key)
    old = snapshot(spark, job, last.state_versions)
    world["instances_at_last"] = old["instances"]
    world["models_at_last"] = [(r["sub"], r["events"], r["transitions"]) for r in old["models"]]
    for table in job.tables.values():
        shutil.rmtree(table.location)
    rebuilt = run_job(spark, settings, job, quiet=True, run_conf=rules)
    assert rebuilt.written and rebuilt.run.generation == 2
    assert rebuilt.run.source_version == last.source_version
    assert find_run(spark, manifest, job.key) == rebuilt.run
    # The same source version built in one pass holds the same Markov counts and instances.
    state = snapshot(spark, job, rebuilt.run.state_versions)
    assert state["instances"] == world["instances_at_last"]
    assert [(r["sub"], r["events"], r["transitions"]) for r in state["models"]] == \
        world["models_at_last"]


def test_run_all_reports_each_job_and_keeps_going(spark, settings, world, predicted_heat) -> None:
    rules = world["rules"]
    report = run_all(spark, settings, ["predict/no_such_set", "predict/heat"], quiet=True,
                     run_conf=rules)
    assert not report.ok and list(report.failures) == ["predict/no_such_set"]
    assert "unknown prediction set 'no_such_set'" in str(report.failures["predict/no_such_set"])
    (heat,) = report.summaries
    # The heat set was built before this (test-local) manifest existed: the run is recorded,
    # nothing else is written.
    assert not heat.written and heat.run is not None and heat.run.status == "recorded"
    assert heat.run.state_versions["heat_meta"] is not None
