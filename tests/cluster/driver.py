"""A driver process on the standalone cluster: runs SQL statements and state jobs, writes results.

``python -m tests.cluster.driver SPEC OUT``: SPEC is a JSON file with ``master``,
``warehouse``, ``executor_python``, ``statements`` (a list of SQL texts) and optionally
``sketches``, ``graphs``, ``predictions`` (each ``[name, registration mapping, [source
versions to run up to]]``: a job's first run and its incremental ones; the prediction runs
with ``local_rows=0``, so in Spark), ``kill_job`` (a sketch's first run and an incremental
run during which the test kills a worker, before everything else: :func:`kill_run`), ``marker`` (a file written before the statements of
``after_marker`` run, so a test can kill a worker during them). OUT receives
``{"executor_python": [...], "results": [[row, ...], ...], "missing": [...], "runs": [...],
"kill": {...}}`` with rows as lists of strings. The session is the project's own
(:func:`jobs.session.build_session`): it ships the code.

The stand-in of :func:`_marked` runs on the executors, pickled by value (this module is
``__main__``): the executors' Python does not have the ``tests`` package.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any


def _summary(result: Any) -> dict[str, Any]:
    """What the test checks of one run's result."""
    return {"name": result.name, "written": result.written, "resumed": result.resumed,
            "source_from": result.source_from, "source_version": result.source_version,
            "late": getattr(result, "late", None), "seconds": round(result.seconds, 2)}


def _marked(marker: str, calls: str, pause: float) -> Any:
    """A stand-in for the sketch job's ``process_bucket`` (the per-stream work every version of
    the job's Python stage calls on the executors): it writes ``marker`` (its Python worker's
    PID) when the first call starts, logs each call's start and end in ``calls`` (wall clock),
    waits ``pause`` seconds (so that the stage outlasts the test's reaction to the marker) and
    calls the real function. The job's closures capture it when they are pickled; on the
    executor, ``jobs.state.sketch`` (from the shipped zip) still has the real one."""

    def process_bucket(*args: Any, **kwargs: Any) -> Any:
        import os
        import time as clock

        import jobs.state.sketch as module

        real = module.process_bucket
        if getattr(real, "cluster_test_marker", False):
            raise RuntimeError("the marked process_bucket ran on the driver")
        with open(calls, "a", encoding="utf-8") as log:
            log.write(f"start {clock.time():.3f} {os.getpid()}\n")
        if not os.path.exists(marker):
            with open(f"{marker}.{os.getpid()}", "w", encoding="utf-8") as flag:
                flag.write(str(os.getpid()))  # the Python worker: the test kills its worker
            os.replace(f"{marker}.{os.getpid()}", marker)
        clock.sleep(pause)
        out = real(*args, **kwargs)
        with open(calls, "a", encoding="utf-8") as log:
            log.write(f"end {clock.time():.3f} {os.getpid()}\n")
        return out

    process_bucket.cluster_test_marker = True  # type: ignore[attr-defined]
    return process_bucket


def _stages(spark: Any, group: str) -> dict[str, int]:
    """Stages, failed tasks and stage re-attempts of the jobs of ``group`` (status tracker)."""
    tracker = spark.sparkContext.statusTracker()
    stages = failed = retried = 0
    for job_id in tracker.getJobIdsForGroup(group):
        job = tracker.getJobInfo(job_id)
        for stage_id in (job.stageIds if job else ()):
            info = tracker.getStageInfo(stage_id)
            if info is None:
                continue
            stages += 1
            failed += info.numFailedTasks
            retried += info.currentAttemptId > 0
    return {"stages": stages, "failed_tasks": failed, "stage_retries": retried}


def _executors(spark: Any) -> int:
    """Executors registered with the driver (the driver itself not counted)."""
    return max(0, spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1)


def kill_run(spark: Any, settings: Any, job: dict[str, Any]) -> dict[str, Any]:
    """A sketch's first run up to source version ``job["first"]``, then its incremental run
    up to ``job["target"]`` during which the test kills a worker (once ``job["marker"]``
    exists; the run appends ``job["chunk_rows"]`` rows at a time and the stand-in of
    :func:`_marked` pauses ``job["pause"]`` seconds per call).

    Returns the outcome: ``retry`` (the run completed) or ``error`` (it raised: the error, and
    the state tables' versions after it, then a rerun's result), the versions before and after,
    the jobs' failed tasks and stage re-attempts, when the run started and ended.
    """
    import jobs.state.sketch as sketch_job
    from delta_tables.sketch_conf import sketch_from_mapping
    from jobs.framework.txn import log_version

    conf = sketch_from_mapping(settings, job["name"], job["mapping"])
    tables = conf.state_tables()
    run_sketch = sketch_job.run_sketch
    first = run_sketch(spark, settings, conf, until_version=job["first"], quiet=True)
    before = {suffix: log_version(table) for suffix, table in tables.items()}
    out: dict[str, Any] = {"first": _summary(first), "before": before,
                           "executors_before": _executors(spark)}
    original = sketch_job.process_bucket
    sketch_job.process_bucket = _marked(job["marker"], job["calls"], job["pause"])
    spark.sparkContext.setJobGroup("cep-kill", "a sketch run during which a worker is killed")
    out["started"] = time.time()
    try:
        # Small chunks: each task calls process_bucket every few rows, so the first call (the
        # marker) comes early in the task and more follow after the kill.
        out["result"] = _summary(run_sketch(spark, settings, conf, until_version=job["target"],
                                            quiet=True, chunk_rows=job["chunk_rows"]))
        out["outcome"] = "retry"
    except Exception as exc:  # noqa: BLE001 - what the kill raised is the test's subject
        out["outcome"] = "error"
        out["error"] = f"{type(exc).__module__}.{type(exc).__name__}: {exc}"[:4000]
        out["code"] = getattr(exc, "code", None)
    finally:
        out["ended"] = time.time()
        sketch_job.process_bucket = original
        out.update(_stages(spark, "cep-kill"))
        spark.sparkContext.setJobGroup("cep-after-kill", "after the kill")
    out["after"] = {suffix: log_version(table) for suffix, table in tables.items()}
    if out["outcome"] == "error":
        out["rerun"] = _summary(run_sketch(spark, settings, conf, until_version=job["target"],
                                           quiet=True))
        out["after_rerun"] = {suffix: log_version(table) for suffix, table in tables.items()}
    return out


def main(spec_path: str, out_path: str) -> int:
    from delta_tables.graph_state import GraphConf
    from delta_tables.predict_state import PredictionConf
    from delta_tables.settings import load_settings
    from delta_tables.sketch_conf import sketch_from_mapping
    from jobs.session.code_bundle import missing_on_executors
    from jobs.session import build_session
    from jobs.state.graph import run_graph
    from jobs.state.predict import run_predict
    from jobs.state.sketch import run_sketch
    from sql_ext import register_all

    spec = json.loads(Path(spec_path).read_text())
    settings = load_settings(overrides={"master": spec["master"], "warehouse": spec["warehouse"],
                                        "show_progress": False, "driver_memory": "1g",
                                        "app_name": "spark-cep-cluster-test"})
    settings = replace(settings, spark_extra={
        **settings.spark_extra, "spark.pyspark.python": spec["executor_python"],
        "spark.executor.memory": "1g", "spark.executor.cores": "1", "spark.cores.max": "2",
        "spark.task.maxFailures": "4", **spec.get("conf", {})})
    spark = build_session(settings)
    register_all(spark)
    probe = spark.sparkContext.parallelize(range(4), 4).map(
        lambda _: __import__("sys").executable).distinct().collect()

    # First the sketch run with the kill: the statements below read its nodes, and the master
    # brings up the replacement executor while the other jobs run.
    kill = kill_run(spark, settings, spec["kill_job"]) if spec.get("kill_job") else None
    runs = []
    jobs = [(sketch_from_mapping, run_sketch, {}, spec.get("sketches", [])),
            (GraphConf.from_mapping, run_graph, {}, spec.get("graphs", [])),
            (PredictionConf.from_mapping, run_predict, {"local_rows": 0, "chunk_rows": 16},
             spec.get("predictions", []))]
    for load, run, options, entries in jobs:
        for name, mapping, versions in entries:
            conf = load(settings, name, mapping)
            for version in versions:
                runs.append(_summary(run(spark, settings, conf, until_version=version,
                                         quiet=True, **options)))
    results = []
    for statement in spec["statements"]:
        rows = spark.sql(statement).collect()
        results.append([[None if v is None else str(v) for v in row] for row in rows])
    missing = missing_on_executors(spark)
    if spec.get("marker"):
        # The queries after the marker run while the test kills a worker: wait until the
        # cluster has replaced the executor an earlier kill took (or the test times out).
        deadline = time.monotonic() + 90
        while _executors(spark) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        # The test kills a worker once this file exists: the statements after it run while
        # the cluster loses an executor.
        Path(spec["marker"]).write_text("running")
    for statement in spec.get("after_marker", []):
        rows = spark.sql(statement).collect()
        results.append([[None if v is None else str(v) for v in row] for row in rows])
    Path(out_path).write_text(json.dumps({"executor_python": sorted(probe), "results": results,
                                          "missing": missing, "runs": runs, "kill": kill}))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
