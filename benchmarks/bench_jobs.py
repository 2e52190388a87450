"""Benchmark of the state jobs through the framework: incremental runs against rebuilding.

For each job kind, on real data (the sketch on the BPI 2017 offer log, the prediction set
``heat`` on the daily temperatures of five cities, the trend graph ``checks_graph`` on the
generated checks), the source is copied, sorted by time, into a table of its own in two
commits: the oldest 99 % of the rows, then the newest 1 %. Then, in one process:

1. **first run**: ``run_job`` over the first commit (a from-scratch build of 99 %);
2. **incremental**: the job alone over the second commit (``StateJob.run``), then
   **record**: the manifest row (``jobs.framework.runner.record_run``), the framework's own cost;
3. **nothing new**: ``run_job`` again (reads the meta table, writes nothing);
4. **rebuild**: a fresh job with the same registration over both commits, which is what a
   scheduler without incremental state would run each time.

The ratio is rebuild / (incremental + record): how much an incremental run saves. The first
Spark work of the process also warms the JVM up, so the kinds run in a fixed order and the
first run of the first kind is the least comparable number.

Run from the project root::

    python -m benchmarks.bench_jobs [--kinds sketch,predict,graph] [--json PATH]

Example:
    >>> split_point(1000), split_point(50)
    (990, 49)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from typing import Any

from benchmarks.common import timed

KINDS = ("sketch", "predict", "graph")
NEW_SHARE = 0.01
"""The share of the source, newest first, that the incremental run reads."""


def split_point(rows: int) -> int:
    """Rows in the first commit: all but the newest :data:`NEW_SHARE` (at least one new row)."""
    return min(rows - 1, int(round(rows * (1 - NEW_SHARE))))


def registrations() -> dict[str, tuple[str, dict[str, Any]]]:
    """``kind -> (real source table, registration)``: the project's own conf entries where
    there is one (``heat``, ``checks_graph``), the source replaced by the benchmark's copy."""
    from delta_tables.settings import load_settings
    from jobs.framework.registry import load_job

    settings = load_settings()
    heat, graph = load_job(settings, "predict", "heat"), load_job(settings, "graph", "checks_graph")
    return {
        "sketch": ("bpi2017_offers", {"stream_col": "case_id", "type_col": "type", "ts_col": "ts",
                                      "id_col": "id", "m": 1024, "k": 3, "C": 16}),
        "predict": ("daily_temperatures", {
            "key_col": heat.conf.key_col, "ts_col": heat.conf.ts_col,
            "subscriptions": dict(heat.conf.subscriptions)}),
        "graph": ("checks", {"key_col": graph.conf.key_col, "pattern": graph.conf.pattern,
                             "lateness": str(graph.conf.lateness)}),
    }


def load_source(spark: Any, settings: Any, kind: str) -> None:
    """Load the real table ``kind`` copies (a no-op when it is there already)."""
    if kind == "sketch":
        from jobs.loaders.load_logs import load_log
        load_log(spark, settings, "bpi2017_offers", quiet=True)
    elif kind == "predict":
        from jobs.loaders.temperatures import load_temperatures
        load_temperatures(spark, settings, quiet=True)
    else:
        from jobs.loaders.checks import write_checks
        write_checks(spark, settings, quiet=True)


def copy_in_two_commits(spark: Any, settings: Any, real: str, name: str, ts_col: str) -> int:
    """Copy ``real`` into ``name`` (change data feed on), oldest 99 % then newest 1 %."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    from delta_tables.catalog import read_table

    frame = read_table(spark, settings.table(real))
    rows = frame.count()
    # One global order (time, then the first other column as a tie-break): the newest rows
    # are the second commit. A single-partition window is fine at these sizes.
    tie = [c for c in frame.columns if c != ts_col][:1]
    ordered = frame.withColumn("_rank", F.row_number().over(Window.orderBy(ts_col, *tie)))
    location = str(settings.location_under_warehouse(name))
    (DeltaTable.createIfNotExists(spark).location(location).addColumns(frame.schema)
     .property("delta.enableChangeDataFeed", "true").execute())
    cut = split_point(rows)
    for part in (F.col("_rank") <= cut, F.col("_rank") > cut):
        (ordered.where(part).drop("_rank").write.format("delta").mode("append").save(location))
    return rows


def measure(spark: Any, settings: Any, kind: str, real: str, entry: dict[str, Any]
            ) -> dict[str, Any]:
    """The five timings of one kind (see the module docstring)."""
    from jobs.framework.registry import job_from_mapping
    from jobs.framework.run_conf import load_run_conf
    from jobs.framework.runner import record_run, run_job

    rules = load_run_conf(settings)
    load_source(spark, settings, kind)
    source = f"bench_{kind}_src"
    ts_col = entry.get("ts_col", "ts")
    rows = copy_in_two_commits(spark, settings, real, source, ts_col)
    job = job_from_mapping(settings, kind, f"bench_{kind}", {"source": source, **entry})
    first_version = 1  # version 0 is the table's creation
    first, t_first = timed(lambda: run_job(spark, settings, job, until_version=first_version,
                                           quiet=True, run_conf=rules))
    assert first.written
    result, t_incr = timed(lambda: job.run(spark, settings, quiet=True))
    assert result.written
    recorded, t_record = timed(lambda: record_run(spark, job, rules.manifest, result=result))
    assert recorded is not None
    again, t_noop = timed(lambda: run_job(spark, settings, job, quiet=True, run_conf=rules))
    assert not again.written
    fresh = job_from_mapping(settings, kind, f"bench_{kind}_rebuild", {"source": source, **entry})
    rebuilt, t_rebuild = timed(lambda: fresh.run(spark, settings, quiet=True))
    assert rebuilt.written
    return {"kind": kind, "source": real, "rows": rows, "new_rows": rows - split_point(rows),
            "first_run_s": t_first, "incremental_s": t_incr, "record_s": t_record,
            "nothing_new_s": t_noop, "rebuild_s": t_rebuild,
            "rebuild_over_incremental": t_rebuild / (t_incr + t_record)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    from delta_tables.settings import load_settings
    from jobs.session import build_session

    # A warehouse of its own; the real data come from the project's download cache.
    settings = load_settings(overrides={
        "warehouse": tempfile.mkdtemp(prefix="bench_jobs_"), "show_progress": False})
    spark = build_session(settings)
    regs = registrations()
    rows = [measure(spark, settings, kind, *regs[kind]) for kind in args.kinds.split(",")]
    print(f"\nmachine: {platform.machine()}, {os.cpu_count()} cores, Spark local[2]\n")
    print("| job | source rows | new rows | first run (99 %) | incremental (1 %) | manifest "
          "record | nothing new | rebuild (100 %) | rebuild / (incremental + record) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['kind']} ({r['source']}) | {r['rows']:,} | {r['new_rows']:,} | "
              f"{r['first_run_s']:.1f} s | {r['incremental_s']:.1f} s | {r['record_s']:.2f} s | "
              f"{r['nothing_new_s']:.2f} s | {r['rebuild_s']:.1f} s | "
              f"{r['rebuild_over_incremental']:.2f}x |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"rows": rows, "python": sys.version}, handle, indent=2)
    spark.stop()


if __name__ == "__main__":
    main()
