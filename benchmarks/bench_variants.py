"""Benchmark of ``variants`` against its same-output window SQL, taken in turns, five times.

``benchmarks.bench_process_mining`` times each query best of 2, one query after the other; its
``variants`` ratios (0.78-1.01x on 2026-11-27) were inside the run-to-run spread of the same
query on this machine (up to 30 %). This benchmark measures only ``variants`` and its
baselines on the same three shapes (``long``, ``short``, ``bpi``), runs the queries in turns
(ours, then each baseline, then ours again...) ``REPEATS`` times so a slow spell of the machine
falls on all of them, and reports the best and the median of each:

* ``ours``: ``SELECT * FROM variants('<key>', TABLE(<table>))`` through the shim;
* ``same``: the same-output query of ``bench_process_mining`` (rank, path, length, cases,
  share, an example case, min / exact median / mean / max duration);
* ``unranked``: ``same`` without the rank and length columns (what the 2026-11-27 run used).

Run from the project root::

    python -m benchmarks.bench_variants [--events 1000000] [--json PATH]

Example:
    >>> sorted(QUERIES)
    ['ours', 'same', 'unranked']
"""

from __future__ import annotations

import statistics
from typing import Any

from benchmarks.bench_process_mining import BASELINES, OURS, SECONDS, _shapes
from benchmarks.common import events_cli, ratio, report, timed

REPEATS = 5
UNRANKED = (
    "SELECT path, count(*) AS cases, count(*) / sum(count(*)) OVER () AS share, "
    "min(k) AS example, min(d) AS min_d, percentile(d, 0.5) AS median_d, "
    "avg(d) AS mean_d, max(d) AS max_d FROM ("
    "SELECT {key} AS k, transform(array_sort(collect_list(struct(ts, id, type))), "
    f"e -> e.type) AS path, {SECONDS.format(a='min(ts)', b='max(ts)')} AS d "
    "FROM {table} GROUP BY {key}) GROUP BY path")
QUERIES = {"ours": OURS["variants"], "same": BASELINES["variants"]["same"],
           "unranked": UNRANKED}


def run(n: int) -> dict[str, Any]:
    """Every measurement; returns the rows of the report."""
    from benchmarks.common import bench_session

    spark, settings = bench_session()
    rows = []
    for shape, (table, key, events) in _shapes(spark, settings, n).items():
        texts = {name: sql.format(key=key, table=table) for name, sql in QUERIES.items()}
        counts = {name: spark.sql(sql).count() for name, sql in texts.items()}  # warm-up
        assert len(set(counts.values())) == 1, (shape, counts)
        times: dict[str, list[float]] = {name: [] for name in texts}
        for _ in range(REPEATS):
            for name, sql in texts.items():
                _, seconds = timed(lambda: spark.sql(sql).write.format("noop")
                                   .mode("overwrite").save())
                times[name].append(seconds)
        row: dict[str, Any] = {"shape": shape, "events": events, "variants": counts["ours"]}
        for name, values in times.items():
            row[f"{name}_best_s"] = round(min(values), 2)
            row[f"{name}_median_s"] = round(statistics.median(values), 2)
        for name in ("same", "unranked"):
            row[f"{name}_best_ratio"] = ratio(min(times[name]), min(times["ours"]))
            row[f"{name}_median_ratio"] = ratio(statistics.median(times[name]),
                                                statistics.median(times["ours"]))
        rows.append(row)
        print(f"{shape} ({events:,} events, {counts['ours']:,} variants): "
              + ", ".join(f"{name} best {min(v):.2f}s median {statistics.median(v):.2f}s"
                          for name, v in times.items())
              + f"; same/ours {row['same_best_ratio']} (best), {row['same_median_ratio']} "
                "(median)", flush=True)
    spark.stop()
    return report(rows)


def main(argv: list[str] | None = None) -> None:
    events_cli(run, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main()
