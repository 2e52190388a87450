"""How much of a SQL call is the Python UDTF transport itself: the floor under issues 3 and 4.

Two open targets are set against plain Spark: ``match_seq`` under strict contiguity must beat one
``lead()`` window pass at 10^6 events (issue 3), and ``approx_match_seq`` must be 10x faster
than exact ``match_seq`` at 10^7 events (issue 4). This benchmark measures, in one Spark
session and on the same data, what an Arrow UDTF costs that receives the same rows with the
same ``PARTITION BY`` and does *nothing* (``noop_arrow``): no Python-side change can go below
that.

Part 1 (issue 3): 10^6 synthetic events (1,000 keys, 50 Zipf types, cached like
``bench_match_sql``); the ``lead()`` query of ``seq3_strict``, ``match_seq`` (``key_col``,
64 buckets), the no-op Arrow UDTF with the same partitioning, with three columns only, without
``PARTITION BY``, and the shuffle alone.

Part 2 (issue 4): the 10^7-event ``keys`` sketch of ``bench_sketch_query`` (100 streams, solver
config) as a ``<name>_nodes`` Delta table in two files; the scan, the shuffle alone, the no-op
Arrow UDTF over all columns, without ``seeds``, without ``bits`` and over ``stream`` only, and
``approx_match_seq`` (exists); plus the Python side of that call alone (``answer_table`` over
the whole table's selected columns in this process, one core).

Run: ``python -m benchmarks.bench_udtf_floor [--events N] [--sketch-events N]``; best of 3 after
one warm-up; prints Markdown rows.

Example:
    >>> NOOP_RETURN
    'x INT'
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

NOOP_RETURN = "x INT"
BUCKETS = 16
REPEATS = 3


def best_seconds(fn: Callable[[], Any], repeats: int = REPEATS) -> float:
    """Best wall time of ``fn()`` over ``repeats`` runs after one warm-up."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def noop_sql(spark: Any, sql: str) -> float:
    """Best time of writing the query's rows to Spark's ``noop`` sink."""
    return best_seconds(lambda: spark.sql(sql).write.format("noop").mode("overwrite").save())


def strict_rows(spark: Any, settings: Any, n: int) -> list[tuple[str, float]]:
    """Part 1: the strict-contiguity question and its floor."""
    from benchmarks.bench_match_sql import QUERIES
    from cep.datasets.synthetic import SyntheticSpec
    from jobs.loaders.generate import write_synthetic
    from sql_ext.quoting import sql_string

    write_synthetic(spark, settings, SyntheticSpec(n_events=n, n_keys=1000, n_types=50,
                                                   seed=2024), f"floor_events_{n}", quiet=True)
    frame = spark.table(f"floor_events_{n}")
    frame.cache().count()
    frame.createOrReplaceTempView("bench_events")
    q = QUERIES["seq3_strict"]
    part = f"PARTITION BY pmod(hash(key), {BUCKETS})"
    rows = [
        ("plain SQL, one lead() window pass", noop_sql(spark, q["sql"])),
        ("match_seq, key_col (64 buckets)", noop_sql(spark, (
            f"SELECT * FROM match_seq({sql_string(q['pattern'])}, 'key', TABLE(bench_events), "
            f"policy => {sql_string(q['policy'])})"))),
        ("no-op Arrow UDTF, same partitioning", noop_sql(
            spark, f"SELECT * FROM noop_arrow(TABLE(bench_events) {part})")),
        ("no-op Arrow UDTF, key/type/ts only", noop_sql(
            spark, f"SELECT * FROM noop_arrow(TABLE(SELECT key, type, ts FROM bench_events) "
                   f"{part})")),
        ("no-op Arrow UDTF, no PARTITION BY", noop_sql(
            spark, "SELECT * FROM noop_arrow(TABLE(bench_events))")),
        ("the shuffle alone (REPARTITION by key)", noop_sql(
            spark, "SELECT /*+ REPARTITION(2, key) */ * FROM bench_events")),
    ]
    frame.unpersist()
    return rows


def sketch_rows(spark: Any, n: int, root: Path) -> list[tuple[str, float]]:
    """Part 2: the sketch query at ``n`` events and its floor."""
    from benchmarks import bench_sketch_query as b
    from delta_tables.sketch_state import NODES_COLUMNS, spark_schema
    from udfs.approx_match_seq import answer_table, check_arguments, selected_columns

    streams, names = b.synthetic_streams("keys", n)
    per = n // len(streams.keys)
    config, _ = b.solver_config(b.FPQ, b.SYN_BYTES_PER_EVENT * per, per, b.SYN_WINDOW,
                                b.SYN_QUERY_LENGTH)
    trees, _ = b.build_trees(streams, config)
    table = b.nodes_arrow(streams, trees)
    pattern = b.questions("keys", names)["frequent"]
    plan = check_arguments(pattern, b.POLICY, "exists", 0)
    selected_table = selected_columns(table)
    python_side = best_seconds(lambda: answer_table(plan, selected_table))
    staged = root / "staged.parquet"
    import pyarrow.parquet as pq

    pq.write_table(table, staged)
    del trees, streams, table
    location = root / "floor_nodes"
    # Two files, as a first run of the sketch job writes them (two shuffle partitions).
    (spark.read.schema(spark_schema(NODES_COLUMNS)).parquet(str(staged)).repartition(2)
     .write.format("delta").save(str(location)))
    nodes = f"delta.`{location}`"
    part = f"PARTITION BY pmod(hash(stream), {BUCKETS})"
    rows = [
        (f"approx_match_seq exists, {pattern!r}", noop_sql(spark, (
            f"SELECT * FROM approx_match_seq('{pattern}', TABLE({nodes}))"))),
        ("its Python side alone (answer_table, one core)", python_side),
        ("no-op Arrow UDTF, every column", noop_sql(
            spark, f"SELECT * FROM noop_arrow(TABLE({nodes}) {part})")),
        ("no-op Arrow UDTF, without seeds", noop_sql(
            spark, f"SELECT * FROM noop_arrow(TABLE(SELECT * EXCEPT (seeds) FROM {nodes}) "
                   f"{part})")),
        ("no-op Arrow UDTF, without bits", noop_sql(
            spark, f"SELECT * FROM noop_arrow(TABLE(SELECT * EXCEPT (bits) FROM {nodes}) "
                   f"{part})")),
        ("no-op Arrow UDTF, stream only", noop_sql(
            spark, f"SELECT * FROM noop_arrow(TABLE(SELECT stream FROM {nodes}) {part})")),
        ("the shuffle alone (REPARTITION by stream)", noop_sql(
            spark, f"SELECT /*+ REPARTITION(2, stream) */ * FROM {nodes}")),
        ("the scan alone (sum of bits lengths)", noop_sql(
            spark, f"SELECT sum(length(bits)) FROM {nodes}")),
    ]
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--sketch-events", type=int, default=10_000_000)
    args = parser.parse_args(argv)

    from delta_tables.settings import load_settings
    from jobs.session import build_session
    from benchmarks.common import register_noop
    from sql_ext import register_all

    settings = load_settings(overrides={"show_progress": False})
    spark = build_session(settings, register=False)
    register_all(spark)
    register_noop(spark)
    root = Path(tempfile.mkdtemp(prefix="bench-floor-", dir=settings.scratch_dir))
    try:
        print(f"| part | what | best of {REPEATS} s |\n|---|---|---:|", flush=True)
        for label, seconds in strict_rows(spark, settings, args.events):
            print(f"| strict, {args.events:,} events | {label} | {seconds:.3f} |", flush=True)
        for label, seconds in sketch_rows(spark, args.sketch_events, root):
            print(f"| sketch, {args.sketch_events:,} events | {label} | {seconds:.3f} |",
                  flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
