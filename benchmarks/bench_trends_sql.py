"""``cet_trends`` end to end in Spark SQL against the transport floor on the same table.

Issue 20 asks for every function within 1.5x of an Arrow UDTF that does nothing with the same
input. This benchmark measures, in one run, over one Delta table of ``N`` price ticks of ``K``
keys (a geometric random walk per key, one tick a minute, ids unique):

* ``count``: ``cet_trends(..., output => 'count')`` for rising trends
  (``s[i].price > s[i-1].price``) in tumbling 30-minute windows: the number of complete trends
  per (key, window), counted over the ABI graph without listing them (Mei et al., ICPP 2021,
  section 4);
* ``trends``: every trend of steep rises (``s[i].price > 1.01 * s[i-1].price``) in tumbling
  10-minute windows, one row per trend with its event ids;
* ``no-op``: ``benchmarks.common.NoopTable`` over the same table with the partitioning
  ``cet_trends`` uses itself (``pmod(hash(key), 16)``): what Spark and the Arrow transport cost
  to hand the rows to Python.

Results go to Spark's ``noop`` sink; best of 2 after a warm-up (which also counts the rows).

Run from the project root::

    python -m benchmarks.bench_trends_sql [--sizes 100000 1000000] [--keys 1000]

Example:
    >>> table = ticks(10, 2)
    >>> table.num_rows, sorted(set(table.column("key").to_pylist()))
    (10, ['k0000', 'k0001'])
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from benchmarks.common import sql_best, sql_session

COUNT_SQL = ("SELECT * FROM cet_trends(pattern => 'PATTERN tick+ s[] WHERE s[i].price > "
             "s[i-1].price WITHIN 30 MINUTES SLIDE 30 MINUTES', output => 'count', "
             "key_col => 'key', events => TABLE(ticks))")
TRENDS_SQL = ("SELECT * FROM cet_trends(pattern => 'PATTERN tick+ s[] WHERE s[i].price > "
              "1.01 * s[i-1].price WITHIN 10 MINUTES SLIDE 10 MINUTES', key_col => 'key', "
              "events => TABLE(ticks))")
NOOP_SQL = "SELECT * FROM noop_arrow(TABLE(ticks) PARTITION BY pmod(hash(key), 16))"

EPOCH_US = 1_704_067_200_000_000  # 2024-01-01 UTC
MINUTE_US = 60_000_000


def ticks(n: int, keys: int, seed: int = 7) -> pa.Table:
    """``n`` ticks ``(id, key, ts, price)``: key ``i % keys``, a tick a minute per key, prices
    a geometric random walk per key (1 % volatility a tick)."""
    rng = np.random.default_rng(seed)
    ids = np.arange(n, dtype=np.int64)
    key_no, step = ids % keys, ids // keys
    # Row i is tick (step, key) of a steps x keys grid: each column is one key's walk.
    steps = -(-n // keys)
    walk = 100.0 * np.exp(np.cumsum(rng.normal(0.0, 0.01, (steps, keys)), axis=0))
    return pa.table({
        "id": ids,
        "key": pa.array([f"k{k:04d}" for k in key_no.tolist()]),
        "ts": pa.array(EPOCH_US + step * MINUTE_US, pa.int64()).cast(pa.timestamp("us", "UTC")),
        "price": np.round(walk.reshape(-1)[:n], 4)})


def run(spark: Any, root: Path, n: int, keys: int) -> dict[str, Any]:
    """One size: write the table, time the two queries and the no-op."""
    path = root / f"ticks_{n}"
    spark.createDataFrame(ticks(n, keys)).write.format("delta").mode(
        "overwrite").save(str(path))
    spark.read.format("delta").load(str(path)).createOrReplaceTempView("ticks")
    windows, count_s = sql_best(spark, COUNT_SQL)
    trends, trends_s = sql_best(spark, TRENDS_SQL)
    _, noop_s = sql_best(spark, NOOP_SQL)
    total = spark.sql("SELECT sum(n_trends) FROM (" + COUNT_SQL + ")").first()[0]
    return {"n": n, "keys": keys, "windows": windows, "trends_counted": int(total),
            "trends_listed": trends, "count_s": count_s, "trends_s": trends_s,
            "noop_s": noop_s}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--keys", type=int, default=1000)
    args = parser.parse_args(argv)
    spark, root = sql_session("bench-trends-")
    print("| N ticks | keys | windows (count) | trends counted | trends listed | count s | "
          "trends s | no-op s | count / no-op | trends / no-op |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in args.sizes:
        r = run(spark, root, n, args.keys)
        print(f"| {r['n']:,} | {r['keys']:,} | {r['windows']:,} | {r['trends_counted']:,} | "
              f"{r['trends_listed']:,} | {r['count_s']:.2f} | {r['trends_s']:.2f} | "
              f"{r['noop_s']:.2f} | {r['count_s'] / r['noop_s']:.2f}x | "
              f"{r['trends_s'] / r['noop_s']:.2f}x |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
