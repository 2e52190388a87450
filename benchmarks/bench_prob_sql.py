"""``match_prob`` end to end in Spark SQL against the core on the same streams.

The core (``benchmarks/bench_prob.py``) answers 1 to 3 million time points per CPU-second. The
SQL function is a row UDTF with ``analyze`` (DESIGN.md section 5): Spark hands it one Python
row per ``(t, value, p)``, so its rate is bounded by the row transport, not by the matcher.
This benchmark measures by how much, in one run:

* ``sql (long)``: ``match_prob`` over a Delta table in the long layout (one row per time point
  and value; the synthetic stream has all 4 values at every time point, so 4 rows per time
  point), results to Spark's ``noop`` sink;
* ``sql (wide)``: the same streams in the wide layout (one row per time point, a MAP column);
* ``arrow (long)``, ``arrow (wide)``: ``match_prob_arrow`` (the Arrow UDTF, positional
  arguments) over the same two tables, in its documented form ``TABLE(t) PARTITION BY stream
  ORDER BY t``;
* ``core``: :func:`cep.prob.match_prob` on the same streams in this process (no Spark).

Data: ``S`` streams of ``synthetic_pstream(N / S, seed=s)`` (docs/prob-data.md), pattern
``PATTERN a, b+, c``, threshold 0.01, window 10, single overlap; best of 2 after a warm-up.
The group counts of all five must agree.

Run from the project root::

    python -m benchmarks.bench_prob_sql [--sizes 100000 1000000] [--streams 8]

Example:
    >>> rows = long_rows(2, 3)
    >>> len(rows) > 0 and rows[0][:2]
    ('s00', 0)
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from cep.prob import match_prob
from cep.datasets.prob_streams import long_columns, synthetic_pstream

PATTERN = "PATTERN a, b+, c"
ARGS = "pattern => 'PATTERN a, b+, c', window => 10, threshold => 0.01"
ARROW_ARGS = "'PATTERN a, b+, c', 'single', 0.01, 10, 'groups'"


def long_rows(streams: int, per_stream: int) -> list[tuple[str, int, str, float]]:
    """The long layout ``(stream, t, value, p)`` of ``streams`` synthetic streams."""
    rows = []
    for s in range(streams):
        cols = long_columns(synthetic_pstream(per_stream, seed=s))
        rows += [(f"s{s:02d}", int(t), str(v), float(p))
                 for t, v, p in zip(cols["t"].tolist(), cols["value"].tolist(), cols["p"].tolist())]
    return rows


def core_groups(streams: int, per_stream: int) -> tuple[int, float]:
    """Groups found by the core over all streams, and its CPU seconds."""
    found, seconds = 0, 0.0
    for s in range(streams):
        stream = synthetic_pstream(per_stream, seed=s)
        c0 = time.process_time()
        found += len(match_prob(PATTERN, stream, window=10, threshold=0.01))
        seconds += time.process_time() - c0
    return found, seconds


def _best(spark: Any, sql: str, repeats: int = 2) -> tuple[int, float]:
    count = spark.sql(sql).count()  # warm-up, and the row count
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        spark.sql(sql).write.format("noop").mode("overwrite").save()
        best = min(best, time.perf_counter() - start)
    return count, best


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
    long_count, long_s = _best(spark, f"SELECT * FROM match_prob({ARGS}, pstream => TABLE(prob_long))")
    wide_count, wide_s = _best(spark, f"SELECT * FROM match_prob({ARGS}, pstream => TABLE(prob_wide))")
    arrow = "SELECT * FROM match_prob_arrow({}, TABLE({}) PARTITION BY stream ORDER BY t)"
    along_count, along_s = _best(spark, arrow.format(ARROW_ARGS, "prob_long"))
    awide_count, awide_s = _best(spark, arrow.format(ARROW_ARGS, "prob_wide"))
    core_count, core_s = core_groups(streams, per)
    return {"n": per * streams, "streams": streams, "rows_long": rows,
            "groups": (long_count, wide_count, along_count, awide_count, core_count),
            "long_s": long_s, "wide_s": wide_s, "arrow_long_s": along_s, "arrow_wide_s": awide_s,
            "core_cpu_s": core_s}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--streams", type=int, default=8)
    args = parser.parse_args(argv)
    from delta_tables.settings import load_settings
    from jobs.session import build_session
    from sql_ext import register_all

    root = Path(tempfile.mkdtemp(prefix="bench-prob-"))
    settings = load_settings(overrides={"warehouse": str(root), "show_progress": False})
    spark = build_session(settings)
    register_all(spark)
    print("| N time points | streams | long rows | groups (long, wide, arrow long, arrow wide, core) | "
          "SQL long s | SQL wide s | SQL arrow long s | SQL arrow wide s | core CPU s | "
          "SQL long time points/s | SQL wide time points/s | SQL arrow long time points/s | "
          "SQL arrow wide time points/s | core / SQL wide | core / SQL arrow (long, wide) |")
    print("|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    bad = False
    for n in args.sizes:
        r = run(spark, root, n, args.streams)
        bad |= len(set(r["groups"])) != 1
        print(f"| {r['n']:,} | {r['streams']} | {r['rows_long']:,} | {r['groups']} | {r['long_s']:.1f} | "
              f"{r['wide_s']:.1f} | {r['arrow_long_s']:.2f} | {r['arrow_wide_s']:.2f} | "
              f"{r['core_cpu_s']:.2f} | {r['n'] / r['long_s']:,.0f} | {r['n'] / r['wide_s']:,.0f} | "
              f"{r['n'] / r['arrow_long_s']:,.0f} | {r['n'] / r['arrow_wide_s']:,.0f} | "
              f"{r['wide_s'] / r['core_cpu_s']:.1f}x | {r['arrow_long_s'] / r['core_cpu_s']:.1f}x, "
              f"{r['arrow_wide_s'] / r['core_cpu_s']:.1f}x |", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
