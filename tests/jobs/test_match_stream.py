"""The standing-pattern job as a stream (``python -m jobs match --name N --stream``): started,
appended to, stopped, restarted, crashed in the middle of a micro-batch and killed, it leaves
the tables one scheduled run over the whole source leaves: no match lost, none twice.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from cep.errors import ConfigError
from delta_tables.catalog import current_version, read_table
from delta_tables.match_state import MatchConf
from delta_tables.settings import TableConf
from jobs.framework.errors import JobError
from jobs.framework.registry import StateJob, job_from_mapping
from jobs.framework.run_conf import RunConf
from jobs.framework.stream import parse_trigger, stream_job
from jobs.framework.txn import log_version
from jobs.state.match import run_match
from tests import jvm

ROOT = Path(__file__).resolve().parents[2]
EPOCH = 1_704_067_200_000_000
MINUTE = 60_000_000
TS = pa.timestamp("us", tz="UTC")
SCHEMA = pa.schema([("id", pa.int64()), ("case_id", pa.string()), ("ts", TS),
                    ("type", pa.string()), ("amount", pa.float64())])
ENTRY = {"source": "stream_src", "key_col": "case_id",
         "pattern": "PATTERN A a; B b WHERE b.amount >= a.amount WITHIN 30 MINUTES"}
WAIT = 180.0


def events(seed: int, n: int = 30) -> pa.Table:
    """Commit ``seed``: ``n`` events of three keys in the hour after ``seed`` hours."""
    rng = np.random.default_rng(seed)
    minutes = 60 * seed + np.sort(rng.integers(0, 60, n))
    return pa.table({"id": np.arange(1000 * seed, 1000 * seed + n, dtype=np.int64),
                     "case_id": [f"k{k}" for k in rng.integers(0, 3, n)],
                     "ts": pa.array(EPOCH + minutes * MINUTE, pa.int64()).cast(TS),
                     "type": [str(x) for x in rng.choice(list("AABBC"), n)],
                     "amount": rng.integers(1, 5, n).astype(np.float64)}, schema=SCHEMA)


class Source:
    """The stream's source table, appended to one commit at a time."""

    def __init__(self, spark: Any, settings: Any, name: str) -> None:
        from delta.tables import DeltaTable

        self.spark, self.commits = spark, 0
        self.table = TableConf(name, settings.location_under_warehouse(name))
        (DeltaTable.createIfNotExists(spark).location(str(self.table.location))
         .addColumns(spark.createDataFrame(SCHEMA.empty_table()).schema)
         .property("delta.enableChangeDataFeed", "true").execute())

    def append(self) -> int:
        self.spark.createDataFrame(events(self.commits).to_pandas()).write.format("delta") \
            .mode("append").save(str(self.table.location))
        self.commits += 1
        return int(current_version(self.spark, self.table))


def job_for(settings: Any, name: str, source: str) -> StateJob:
    return job_from_mapping(settings, "match", name, {**ENTRY, "source": source})


def wait_for(job: StateJob, spark: Any, version: int, query: Any = None,
             child: Any = None) -> None:
    """Until the job's meta row records ``version`` (or the query or the child fails)."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        meta = job.read_meta(spark) if log_version(job.tables["meta"]) is not None else None
        if meta is not None and int(meta["source_version"]) >= version:
            return
        if query is not None and query.exception() is not None:
            raise AssertionError(f"the stream failed: {query.exception()}")
        if child is not None and child[0].poll() is not None:
            raise AssertionError(f"the stream process ended: {child[1].read_text()[-4000:]}")
        time.sleep(0.5)
    raise AssertionError(f"{job.key} did not reach source version {version} in {WAIT}s")


def outputs(spark: Any, job: StateJob) -> dict[str, list[dict]]:
    """The matches and timeouts, without the run that wrote them, sorted."""
    found = {}
    for suffix in ("matches", "timeouts"):
        rows = read_table(spark, job.tables[suffix]).drop("run_id").toArrow().to_pylist()
        found[suffix] = sorted(rows, key=lambda r: (r["case_id"], str(r["start_ts"]),
                                                    r.get("match_id") or 0))
    return found


def reference(spark: Any, settings: Any, name: str, source: str) -> dict[str, list[dict]]:
    """The tables one scheduled run over the whole source leaves."""
    conf = MatchConf.from_mapping(settings, name, {**ENTRY, "source": source})
    run_match(spark, settings, conf, quiet=True)
    return outputs(spark, job_from_mapping(settings, "match", name, {**ENTRY, "source": source}))


@pytest.fixture(scope="module")
def rules(settings) -> RunConf:
    manifest = TableConf("stream_runs", settings.location_under_warehouse("stream_runs"))
    return RunConf((), 1, 0.0, manifest, 168, True)


def test_start_append_stop_restart_loses_and_repeats_nothing(spark, settings, rules,
                                                             tmp_path) -> None:
    src = Source(spark, settings, "stream_src")
    src.append()
    job = job_for(settings, "st_next", "stream_src")
    checkpoint = tmp_path / "checkpoint"
    query = stream_job(spark, settings, job, trigger="300ms", quiet=True, run_conf=rules,
                       checkpoint=checkpoint)
    try:
        wait_for(job, spark, src.append(), query)
        wait_for(job, spark, src.append(), query)
    finally:
        query.stop()
    stopped_at = src.append()  # lands while no stream runs
    query = stream_job(spark, settings, job, trigger="300ms", quiet=True, run_conf=rules,
                       checkpoint=checkpoint)
    try:
        wait_for(job, spark, stopped_at, query)
        wait_for(job, spark, src.append(), query)
    finally:
        query.stop()
    got = outputs(spark, job)
    assert got == reference(spark, settings, "st_ref", "stream_src")
    assert got["matches"] and got["timeouts"], "the source holds both"
    ids = [(r["case_id"], r["match_id"]) for r in got["matches"]]
    assert len(ids) == len(set(ids)), "a match written twice"
    # --available-now: what is there, then the query stops by itself.
    last = src.append()
    query = stream_job(spark, settings, job, available_now=True, quiet=True, run_conf=rules,
                       checkpoint=checkpoint)
    query.awaitTermination(WAIT)
    assert not query.isActive and int(job.read_meta(spark)["source_version"]) == last


def test_a_crash_in_a_micro_batch_is_healed_by_the_restart(spark, settings, rules, tmp_path,
                                                          monkeypatch) -> None:
    src = Source(spark, settings, "stream_crash_src")
    src.append()
    job = job_for(settings, "st_crash", "stream_crash_src")
    checkpoint = tmp_path / "checkpoint"
    query = stream_job(spark, settings, job, trigger="300ms", quiet=True, run_conf=rules,
                       checkpoint=checkpoint)
    try:
        wait_for(job, spark, src.append(), query)
        # The next batch stops between its writes: after the matches, before the key states.
        monkeypatch.setenv("CEP_MATCH_CRASH_AFTER", "matches")
        src.append()
        with pytest.raises(Exception, match="CEP-MATCH-040: .*injected crash after the matches"):
            query.awaitTermination(WAIT)
    finally:
        query.stop()
    monkeypatch.delenv("CEP_MATCH_CRASH_AFTER")
    query = stream_job(spark, settings, job, trigger="300ms", quiet=True, run_conf=rules,
                       checkpoint=checkpoint)
    try:
        wait_for(job, spark, src.append(), query)
    finally:
        query.stop()
    assert outputs(spark, job) == reference(spark, settings, "st_crash_ref", "stream_crash_src")


def test_a_killed_stream_process_restarts_where_it_was(spark, settings, tmp_path) -> None:
    """``python -m jobs match --stream`` SIGKILLed while it runs; its restart (the stream with
    ``--available-now`` over the child's checkpoint) leaves what one run over everything leaves. The pattern is a row of the
    patterns table, so the child finds it with no conf file of its own."""
    from jobs.framework.patterns import create_patterns_table

    src = Source(spark, settings, "stream_kill_src")
    for _ in range(2):
        src.append()
    create_patterns_table(spark, settings)
    spark.sql("INSERT INTO cep_patterns (name, source, pattern, key_col, enabled) VALUES "
              "('st_kill', 'stream_kill_src', 'PATTERN A a; B b WHERE b.amount >= a.amount "
              "WITHIN 30 MINUTES', 'case_id', true)")
    job = job_for(settings, "st_kill", "stream_kill_src")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CEP_", "PYSPARK_SUBMIT"))}
    env.update(CEP_WAREHOUSE=str(settings.warehouse_dir), CEP_DATA_DIR=str(settings.data_dir),
               PYTHONUNBUFFERED="1", JAVA_TOOL_OPTIONS=jvm.FAST_START)
    argv = [sys.executable, "-m", "jobs", "match", "--name", "st_kill", "--stream",
            "--trigger", "500ms", "--checkpoint", str(tmp_path / "checkpoint")]
    log = tmp_path / "child.err"
    try:
        with open(log, "w") as err:
            child = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                     stderr=err, start_new_session=True)
        try:
            wait_for(job, spark, 1, child=(child, log))
            wait_for(job, spark, src.append(), child=(child, log))
            src.append()
            src.append()
            time.sleep(1.5)  # somewhere in the next micro-batch, or between two
        finally:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait(timeout=60)
        # The restart, here in the test's own session, from the child's checkpoint.
        query = stream_job(spark, settings, "match/st_kill", available_now=True, quiet=True,
                           checkpoint=tmp_path / "checkpoint")
        query.awaitTermination(WAIT)
        assert int(job.read_meta(spark)["source_version"]) == src.commits
        assert outputs(spark, job) == reference(spark, settings, "st_kill_ref", "stream_kill_src")
    finally:
        spark.sql("DELETE FROM cep_patterns WHERE name = 'st_kill'")


def test_a_source_without_a_change_data_feed_cannot_stream(spark, settings, rules,
                                                           tmp_path) -> None:
    location = settings.location_under_warehouse("stream_nocdf_src")
    spark.createDataFrame(events(0).to_pandas()).write.format("delta").save(str(location))
    with pytest.raises(JobError, match="CEP-MATCH-040: .*no change data feed"):
        stream_job(spark, settings, job_for(settings, "st_nocdf", "stream_nocdf_src"),
                   quiet=True, run_conf=rules, checkpoint=tmp_path)


@pytest.mark.parametrize("text", ["", "0s", "fast", "-1s", "10 hours"])
def test_a_bad_trigger_is_refused(text) -> None:
    with pytest.raises(ConfigError, match="--trigger"):
        parse_trigger(text)
