"""``match_prob`` end to end in Spark SQL against the core on the same streams.

The core (``benchmarks/bench_prob.py``) answers 1 to 3 million time points per CPU-second. The
SQL function runs in the shell of ``udfs/shell.py`` (``analyze`` plus Arrow batches), so its
floor is what Spark and the Arrow transport cost to hand the same rows to Python. This
benchmark measures, in one run:

* ``sql (long)``: ``match_prob`` over a Delta table in the long layout (one row per time point
  and value; the synthetic stream has all 4 values at every time point, so 4 rows per time
  point), results to Spark's ``noop`` sink;
* ``sql (wide)``: the same streams in the wide layout (one row per time point, a MAP column);
* ``no-op (long)``, ``no-op (wide)``: an Arrow UDTF that does nothing
  (``benchmarks.common.NoopTable``) over the same two tables with the partitioning
  ``match_prob`` asks for (``PARTITION BY pmod(hash(stream), 16)``): the floor; issue 20 asks
  for ``match_prob`` within 1.5x of it;
* ``core``: :func:`cep.prob.match_prob` on the same streams in this process (no Spark).

Data: ``S`` streams of ``synthetic_pstream(N / S, seed=s)`` (docs/prob-data.md), pattern
``PATTERN a, b+, c``, threshold 0.01, window 10, single overlap; best of 2 after a warm-up.
The group counts of the two SQL layouts and the core must agree.

Run from the project root::

    python -m benchmarks.bench_prob_sql [--sizes 100000 1000000] [--streams 8]

Example:
    >>> rows = long_rows(2, 3)
    >>> len(rows) > 0 and rows[0][:2]
    ('s00', 0)
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from benchmarks.common import sql_best, sql_session
from cep.prob import match_prob
from cep.datasets.prob_streams import long_columns, synthetic_pstream

PATTERN = "PATTERN a, b+, c"
ARGS = "pattern => 'PATTERN a, b+, c', window => 10, threshold => 0.01"


def long_rows(streams: int, per_stream: int) -> list[tuple[str, int, str, float]]:
    """The long layout ``(stream, t, value, p)`` of ``streams`` synthetic streams."""
    rows = []
    for s in range(streams):
        cols = long_columns(synthetic_pstream(per_stream, seed=s, noise="split"))
        rows += [(f"s{s:02d}", int(t), str(v), float(p))
                 for t, v, p in zip(cols["t"].tolist(), cols["value"].tolist(), cols["p"].tolist())]
    return rows


def core_groups(streams: int, per_stream: int) -> tuple[int, float]:
    """Groups found by the core over all streams, and its CPU seconds."""
    found, seconds = 0, 0.0
    for s in range(streams):
        stream = synthetic_pstream(per_stream, seed=s, noise="split")
        c0 = time.process_time()
        found += len(match_prob(PATTERN, stream, window=10, threshold=0.01))
        seconds += time.process_time() - c0
    return found, seconds


def run(spark: Any, root: Path, n: int, streams: int) -> dict[str, Any]:
    from pyspark.sql import functions as F

    per = n // streams
    long_df = spark.createDataFrame(long_rows(streams, per), "stream STRING, t BIGINT, value STRING, p DOUBLE")
    long_path = root / f"prob_long_{n}"
    long_df.write.format("delta").mode("overwrite").save(str(long_path))
    wide_path = root / f"prob_wide_{n}"
    (spark.read.format("delta").load(str(long_path)).groupBy("stream", "t")
     .agg(F.map_from_entries(F.collect_list(F.struct("value", "p"))).alias("probs"))
     .write.format("delta").mode("overwrite").save(str(wide_path)))
    spark.read.format("delta").load(str(long_path)).createOrReplaceTempView("prob_long")
    spark.read.format("delta").load(str(wide_path)).createOrReplaceTempView("prob_wide")
    rows = spark.read.format("delta").load(str(long_path)).count()
    long_count, long_s = sql_best(spark, f"SELECT * FROM match_prob({ARGS}, pstream => TABLE(prob_long))")
    wide_count, wide_s = sql_best(spark, f"SELECT * FROM match_prob({ARGS}, pstream => TABLE(prob_wide))")
    noop = "SELECT * FROM noop_arrow(TABLE({}) PARTITION BY pmod(hash(stream), 16))"
    _, noop_long_s = sql_best(spark, noop.format("prob_long"))
    _, noop_wide_s = sql_best(spark, noop.format("prob_wide"))
    core_count, core_s = core_groups(streams, per)
    return {"n": per * streams, "streams": streams, "rows_long": rows,
            "groups": (long_count, wide_count, core_count),
            "long_s": long_s, "wide_s": wide_s, "noop_long_s": noop_long_s,
            "noop_wide_s": noop_wide_s, "core_cpu_s": core_s}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--streams", type=int, default=8)
    args = parser.parse_args(argv)
    spark, root = sql_session("bench-prob-")
    print("| N time points | streams | long rows | groups (long, wide, core) | "
          "SQL long s | SQL wide s | no-op long s | no-op wide s | core CPU s | "
          "SQL long time points/s | SQL wide time points/s | SQL / no-op (long, wide) |")
    print("|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
    bad = False
    for n in args.sizes:
        r = run(spark, root, n, args.streams)
        bad |= len(set(r["groups"])) != 1
        print(f"| {r['n']:,} | {r['streams']} | {r['rows_long']:,} | {r['groups']} | {r['long_s']:.2f} | "
              f"{r['wide_s']:.2f} | {r['noop_long_s']:.2f} | {r['noop_wide_s']:.2f} | "
              f"{r['core_cpu_s']:.2f} | {r['n'] / r['long_s']:,.0f} | {r['n'] / r['wide_s']:,.0f} | "
              f"{r['long_s'] / r['noop_long_s']:.2f}x, {r['wide_s'] / r['noop_wide_s']:.2f}x |",
              flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
