"""One huge key through the state jobs: time and peak Python memory, streamed against whole.

Issue 25 asks that the state jobs' largest key, like ``match_seq``'s, be processed with bounded
Python memory. This writes a Delta source of ``n`` events of ONE key (one event per second,
four types by a hash of the id, a value; written by Spark with the change data feed, once
per size) and runs a first run of:

* the prediction job (``PATTERN A, B ; C`` and ``PATTERN H, H DEFINE H AS v0 > 90``), in
  Spark as every run above 10^6 rows: the task's rows sorted by time and run in chunks of
  ``CHUNK_ROWS``, the key's instance states carried (``jobs/state/predict_chunks.py``), and
  the same run with ``chunk_rows`` above the size, so the task runs its key in one call (how
  the job ran before: the whole key in one worker), up to ``--whole-max`` events;
* the sketch job (``m = 1024, k = 3, C = 64``), streamed the same way
  (``jobs/state/sketch_chunks.py``), with ``--sketch``.

It samples the resident memory of every Python worker of its own Spark (descendants of this
process) every 0.1 s and reports the largest single worker, the wall time of the run (its
Spark stages and Delta writes included) and a fitted log-log exponent against size.

Run from the project root::

    python -m benchmarks.bench_big_key_jobs [--sizes 1000000 10000000] [--whole-max N] [--sketch]

Example:
    >>> sorted(SUBSCRIPTIONS)
    ['hot', 'seq']
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Any

from benchmarks.common import timed
from benchmarks.memory import MemorySampler, loglog_slope

EVENTS = ("SELECT id, 'k0' AS key, timestamp_seconds(id) AS ts, "
          "element_at(array('A', 'B', 'C', 'D'), CAST(pmod(hash(id), 4) + 1 AS INT)) AS type, "
          "CAST(pmod(hash(id, 7), 100) AS DOUBLE) AS v0 FROM range({n})")
SUBSCRIPTIONS = {"seq": "PATTERN A, B ; C", "hot": "PATTERN H, H DEFINE H AS v0 > 90"}


def session() -> tuple[Any, Any]:
    """local[2] over a fresh warehouse."""
    from delta_tables.settings import load_settings
    from jobs.session import build_session

    settings = load_settings(overrides={"warehouse": tempfile.mkdtemp(prefix="bench_bigjobs_"),
                                        "show_progress": False})
    spark = build_session(settings)
    spark.sparkContext.setLogLevel("ERROR")
    return spark, settings


def write(spark: Any, settings: Any, n: int) -> str:
    """The source of ``n`` events of one key; its table name."""
    name = f"bigkey_{n}"
    (spark.sql(EVENTS.format(n=n)).write.format("delta")
     .option("delta.enableChangeDataFeed", "true").mode("overwrite")
     .save(str(settings.location_under_warehouse(name))))
    return name


def run_predict_once(spark: Any, settings: Any, source: str, n: int, chunk: int | None,
                     tag: str) -> tuple[Any, float, int]:
    """A first run of a fresh prediction set: ``(instance rows, seconds, peak one worker)``."""
    from delta_tables.predict_state import PredictionConf
    from jobs.state.predict import run_predict

    conf = PredictionConf.from_mapping(settings, f"bigpred_{tag}_{n}", {
        "source": source, "key_col": "key", "ts_col": "ts", "id_col": "id",
        "type_col": "type", "subscriptions": SUBSCRIPTIONS})
    with MemorySampler() as mem:
        result, seconds = timed(lambda: run_predict(spark, settings, conf, quiet=True,
                                                    local_rows=0, chunk_rows=chunk))
    assert result.events_run == n, (result.events_run, n)
    return result.instance_rows, seconds, mem.one


def run_sketch_once(spark: Any, settings: Any, source: str, n: int) -> tuple[Any, float, int]:
    """A first run of a fresh sketch: ``(written, seconds, peak one worker)``."""
    from jobs.framework.registry import job_from_mapping

    job = job_from_mapping(settings, "sketch", f"bigsketch_{n}", {
        "source": source, "stream_col": "key", "type_col": "type", "ts_col": "ts",
        "id_col": "id", "m": 1024, "k": 3, "C": 64})
    with MemorySampler() as mem:
        written, seconds = timed(lambda: job.run(spark, settings, quiet=True).written)
    return written, seconds, mem.one


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**6, 10**7])
    parser.add_argument("--whole-max", type=int, default=10**7)
    parser.add_argument("--sketch", action="store_true", help="also the sketch job")
    args = parser.parse_args()
    spark, settings = session()
    warm = write(spark, settings, 10**4)
    run_predict_once(spark, settings, warm, 10**4, None, "warm")  # JIT, Python workers, Delta
    print(f"pid {os.getpid()}, {time.strftime('%Y-%m-%d %H:%M')}, one key, subscriptions "
          f"{SUBSCRIPTIONS}")
    print("| events | job | mode | result | seconds | events/s | peak one worker (MB) |")
    print("|---:|---|---|---:|---:|---:|---:|")
    fits: dict[tuple[str, str], list[tuple[int, float, int]]] = {}
    for n in args.sizes:
        source = write(spark, settings, n)
        runs = [("predict", "streamed", lambda: run_predict_once(spark, settings, source, n,
                                                                 None, "s"))]
        if n <= args.whole_max:
            runs.append(("predict", "one call", lambda: run_predict_once(
                spark, settings, source, n, 2 * n + 10, "w")))
        if args.sketch:
            runs.append(("sketch", "streamed", lambda: run_sketch_once(spark, settings, source,
                                                                       n)))
        for job, mode, step in runs:
            print(f"  {time.strftime('%H:%M:%S')} {n:,} {job} {mode} ...", file=sys.stderr,
                  flush=True)
            try:
                value, seconds, one = step()
            except Exception as err:  # a run that dies (memory) is the result
                print(f"| {n:,} | {job} | {mode} | fails: {type(err).__name__} "
                      f"{str(err).splitlines()[0][:80]} | | | |", flush=True)
                continue
            fits.setdefault((job, mode), []).append((n, seconds, one))
            print(f"| {n:,} | {job} | {mode} | {value} | {seconds:.1f} | {n / seconds:,.0f} | "
                  f"{one / 2**20:,.0f} |", flush=True)
    for (job, mode), points in fits.items():
        if len(points) > 1:
            sizes = [p[0] for p in points]
            print(f"{job}, {mode}: time ~ n^{loglog_slope(sizes, [p[1] for p in points]):.2f}, "
                  f"peak worker memory ~ n^{loglog_slope(sizes, [p[2] for p in points]):.2f}")
    print(f"load {os.getloadavg()[0]:.1f}")
    spark.stop()


if __name__ == "__main__":
    main()
