"""Benchmark of ``follows``, ``variants`` and ``case_stats`` against the window SQL an analyst writes.

Three data shapes, each in Delta and cached before timing:

* ``long``: the synthetic stream of ``n`` events, 1,000 keys (cases of about ``n / 1,000``
  events), 50 Zipf types (``benchmarks.common.cached_events``);
* ``short``: ``n`` events over ``n / 10`` keys (cases of about 10 events), 20 Zipf types;
* ``bpi``: the real BPI 2017 application log (771,148 events, 31,509 cases), ``case_id``.

For each function two hand-written baselines, the SQL text below (reviewed for fairness: the
same window ordered by ``ts, id``, exact medians where ours are exact):

* ``same``: the query that returns what the function returns (its counts, distinct cases,
  min / median / mean / max durations; for ``variants`` the path with its cases and duration
  statistics; for ``case_stats`` the first and last event by ``(ts, id)``);
* ``minimal``: the smallest query an analyst would write for the headline number (pair
  counts; paths with their cases; start, end and count per case).

Every query is written to Spark's ``noop`` sink, best of 2 after a warm-up count. The ratio is
baseline / ours (above 1: the function is faster).

Run from the project root::

    python -m benchmarks.bench_process_mining [--events 1000000] [--json PATH]

Example:
    >>> sorted(BASELINES)
    ['case_stats', 'follows', 'variants']
"""

from __future__ import annotations

from typing import Any

from benchmarks.common import cached_events, events_cli, ratio, report, sql_best

SECONDS = "(unix_micros({b}) - unix_micros({a})) / 1000000.0"
BASELINES = {
    "follows": {
        "same": (
            "WITH p AS (SELECT {key} AS k, type, ts, lead(type) OVER w AS next_type, "
            "lead(ts) OVER w AS next_ts FROM {table} "
            "WINDOW w AS (PARTITION BY {key} ORDER BY ts, id)) "
            "SELECT type AS source, next_type AS target, count(*) AS n, "
            "count(DISTINCT k) AS cases, min(k) AS example, min(d) AS min_d, "
            "percentile(d, 0.5) AS median_d, avg(d) AS mean_d, max(d) AS max_d "
            f"FROM (SELECT *, {SECONDS.format(a='ts', b='next_ts')} AS d FROM p "
            "WHERE next_ts IS NOT NULL) GROUP BY type, next_type"),
        "minimal": (
            "SELECT type, next_type, count(*) AS n FROM (SELECT type, lead(type) OVER "
            "(PARTITION BY {key} ORDER BY ts, id) AS next_type FROM {table}) "
            "WHERE next_type IS NOT NULL GROUP BY type, next_type"),
    },
    "variants": {
        # The rank (the function's first column) and the length are part of its output, so
        # the same-output query numbers the paths too, by cases and then by the path
        # (until 2026-11-28 it left both out: benchmarks/bench_variants.py measures both).
        "same": (
            "SELECT CAST(row_number() OVER (ORDER BY count(*) DESC, path) AS INT) AS rank, "
            "path, size(path) AS length, "
            "count(*) AS cases, count(*) / sum(count(*)) OVER () AS share, "
            "min(k) AS example, min(d) AS min_d, percentile(d, 0.5) AS median_d, "
            "avg(d) AS mean_d, max(d) AS max_d FROM ("
            "SELECT {key} AS k, transform(array_sort(collect_list(struct(ts, id, type))), "
            f"e -> e.type) AS path, {SECONDS.format(a='min(ts)', b='max(ts)')} AS d "
            "FROM {table} GROUP BY {key}) GROUP BY path"),
        "minimal": (
            "SELECT path, count(*) AS cases FROM (SELECT {key}, "
            "transform(array_sort(collect_list(struct(ts, id, type))), e -> e.type) AS path "
            "FROM {table} GROUP BY {key}) GROUP BY path"),
    },
    "case_stats": {
        "same": (
            "SELECT {key}, min(ts) AS start_ts, max(ts) AS end_ts, "
            f"{SECONDS.format(a='min(ts)', b='max(ts)')} AS duration, count(*) AS n_events, "
            "min_by(type, struct(ts, id)) AS first_type, max_by(type, struct(ts, id)) "
            "AS last_type, min_by(id, struct(ts, id)) AS first_id, "
            "max_by(id, struct(ts, id)) AS last_id FROM {table} GROUP BY {key}"),
        "minimal": (
            "SELECT {key}, min(ts) AS start_ts, max(ts) AS end_ts, count(*) AS n_events "
            "FROM {table} GROUP BY {key}"),
    },
}
OURS = {"follows": "SELECT * FROM follows('{key}', TABLE({table}))",
        "variants": "SELECT * FROM variants('{key}', TABLE({table}))",
        "case_stats": "SELECT * FROM case_stats('{key}', TABLE({table}))"}


def _shapes(spark: Any, settings: Any, n: int) -> dict[str, tuple[str, str, int]]:
    """Each shape's table (cached, as a temporary view), key column and events."""
    from cep.datasets.synthetic import SyntheticSpec
    from jobs.loaders.generate import write_synthetic
    from jobs.loaders.load_logs import load_log

    shapes = {}
    cached_events(spark, settings, n).createOrReplaceTempView("pm_long")
    shapes["long"] = ("pm_long", "key", n)
    name = f"pm_short_{n}"
    write_synthetic(spark, settings, SyntheticSpec(n_events=n, n_keys=max(1, n // 10),
                                                   n_types=20, seed=2025), name, quiet=True)
    spark.table(name).cache().createOrReplaceTempView("pm_short")
    shapes["short"] = ("pm_short", "key", spark.table("pm_short").count())
    load_log(spark, settings, "bpi2017_applications", quiet=True)
    spark.table("bpi2017_applications").select("case_id", "type", "ts", "id").cache() \
        .createOrReplaceTempView("pm_bpi")
    shapes["bpi"] = ("pm_bpi", "case_id", spark.table("pm_bpi").count())
    return shapes


def run(n: int) -> dict[str, Any]:
    """Every measurement; returns the rows of the report."""
    from benchmarks.common import bench_session

    spark, settings = bench_session()
    rows = []
    for shape, (table, key, events) in _shapes(spark, settings, n).items():
        for function, baselines in BASELINES.items():
            count, ours = sql_best(spark, OURS[function].format(key=key, table=table))
            row: dict[str, Any] = {"shape": shape, "events": events, "function": function,
                                   "rows": count, "ours_s": round(ours, 2)}
            for label, sql in baselines.items():
                base_count, seconds = sql_best(spark, sql.format(key=key, table=table))
                assert base_count == count, (shape, function, label, base_count, count)
                row[f"{label}_s"] = round(seconds, 2)
                row[f"{label}_ratio"] = ratio(seconds, ours)
            rows.append(row)
            print(f"{shape} ({events:,} events) {function}: ours {ours:.2f}s, "
                  f"same-output SQL {row['same_s']:.2f}s ({row['same_ratio']}), "
                  f"minimal SQL {row['minimal_s']:.2f}s ({row['minimal_ratio']})", flush=True)
    spark.stop()
    return report(rows)


def main(argv: list[str] | None = None) -> None:
    events_cli(run, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main()
