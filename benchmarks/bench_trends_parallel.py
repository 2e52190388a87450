"""Figs. 9-10 and 13-14 of Mei et al., ICPP 2021: construction and extraction against parallelism.

The paper's Figs. 9-10 time Algorithm 1 on 2 to 16 threads (Q2 on ~600k stock events: -48 %
from 2 to 16 threads; Q1 on 5M check events: -41 %), Figs. 13-14 the anchored extraction on 2
to 16 threads (-76 % Q1, -40 % Q2). Here, on the seeded streams of
:mod:`benchmarks.bench_trends` (Q1: ``c[i].src = c[i-1].dest``, the equal comparator; Q2:
``s[i].price > 1.05 * s[i-1].price``, a non-equal one), in one run:

1. **construction** (Figs. 9-10): :func:`cep.trends.build_graph` (sequential, vectorised: the
   baseline every ratio is against), then :func:`cep.trends.parallel.build_graph_pool` on a warm
   process pool with 1, 2, 4 and 8 workers (``P`` = workers partitions), once on a thread pool
   of 2 (the GIL: Python threads do not run numpy's Python-level steps in parallel), and
   :func:`udfs.trend_graph_spark.build_graph_spark` with 1, 2, 4, 8 partitions on the
   benchmark's ``local[2]`` session. Every graph must be ``==`` to the sequential one;
2. **Amdahl fit**: from the pool's 1- and 2-worker times, the serial fraction
   ``s = 2 T2 / T1 - 1`` of ``T(p) = T1 (s + (1 - s) / p)``, and the modelled reduction from 2
   to 16 workers, ``1 - T(16) / T(2)``, to set beside the paper's 41 % / 48 % (a model, not a
   measurement: this machine has 2 cores);
3. **extraction** (Figs. 13-14): :func:`cep.trends.extract_trends` (baseline),
   :func:`cep.trends.anchored_trends` (one process) and
   :func:`cep.trends.stealing.stealing_trends` (pulled and split DFS tasks) with 1 and 2
   worker processes, over tumbling windows of consecutive events; the trends must be equal.

Exit code 1 when two answers disagree. Run from the project root::

    python -m benchmarks.bench_trends_parallel [--quick] [--no-spark] [--json PATH]

Example:
    >>> amdahl(10.0, 6.0)["serial_fraction"]
    0.2
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench_trends import QUERIES, stream
from benchmarks.common import best_of
from cep.trends import anchored_trends, build_graph, compile_trend, extract_trends
from cep.trends.parallel import build_graph_parallel, build_graph_pool
from cep.trends.stealing import stealing_trends

WORKERS = (1, 2, 4, 8)
SIZES = {"Q1": (1_000_000, 5_000_000), "Q2": (150_000, 600_000)}
QUICK_SIZES = {"Q1": (100_000,), "Q2": (50_000,)}
KINDS = {"Q1": "=", "Q2": ">"}
EXTRACT = {"Q1": (200_000, 40, 100), "Q2": (100_000, 50, 100)}  # events, window events, anchors
BUDGET = 2_000  # concatenations before a DFS task is split
QUICK_EXTRACT = {"Q1": (40_000, 40, 100), "Q2": (20_000, 50, 100)}
PAPER_REDUCTION = {"Q1": 0.41, "Q2": 0.48}


def amdahl(t1: float, t2: float, target: int = 16) -> dict[str, float]:
    """Serial fraction from the 1- and 2-worker times, and the modelled times and reduction."""
    s = min(max(2.0 * t2 / t1 - 1.0, 0.0), 1.0)
    t_target = t1 * (s + (1.0 - s) / target)
    t_two = t1 * (s + (1.0 - s) / 2)
    return {"serial_fraction": round(s, 4), f"model_t{target}": t_target,
            f"model_reduction_2_to_{target}": 1.0 - t_target / t_two}


def measure_construction(name: str, n_events: int, pools: dict[int, ProcessPoolExecutor], spark: Any,
                         repeats: int) -> dict[str, Any]:
    """One row of Figs. 9-10: sequential, pool, threads and Spark times for one query and size."""
    query = compile_trend(QUERIES[KINDS[name]])
    ts, cols = stream(KINDS[name], n_events)
    expected, t_seq = best_of(lambda: build_graph(query, ts, cols), repeats)
    row: dict[str, Any] = {"query": name, "events": n_events, "sequential_seconds": t_seq, "equal": True}
    for w, pool in pools.items():
        got, t = best_of(lambda: build_graph_pool(query, ts, cols, pool=pool, parts=w), repeats)
        row[f"pool{w}_seconds"] = t
        row["equal"] &= got == expected
    with ThreadPoolExecutor(max_workers=2) as threads:
        got, t = best_of(lambda: build_graph_parallel(query, ts, cols, parts=2, map_fn=threads.map), repeats)
    row["threads2_seconds"] = t
    row["equal"] &= got == expected
    got, t = best_of(lambda: build_graph_parallel(query, ts, cols, parts=1), repeats)
    row["inline_seconds"] = t  # the four steps in this process, P = 1: the cost of the split itself
    row["equal"] &= got == expected
    if spark is not None:
        from udfs.trend_graph_spark import build_graph_spark

        for w in WORKERS:
            got, t = best_of(lambda: build_graph_spark(spark, query, ts, cols, partitions=w), 1)
            row[f"spark{w}_seconds"] = t
            row["equal"] &= got == expected
    if 1 in pools and 2 in pools:
        row.update(amdahl(row["pool1_seconds"], row["pool2_seconds"]))
    return row


def measure_extraction(name: str, n_events: int, window_events: int, anchors: int,
                       repeats: int) -> dict[str, Any]:
    """One row of Figs. 13-14: extraction in one process against split DFS tasks on 1 and 2 workers."""
    query = compile_trend(QUERIES[KINDS[name]])
    ts, cols = stream(KINDS[name], n_events)
    window = np.arange(n_events, dtype=np.int64) // window_events
    graph = build_graph(query, ts, cols, window=window)
    expected, t_plain = best_of(lambda: extract_trends(graph, max_trends=10**8), repeats)
    want = [t.tolist() for t in expected]
    row: dict[str, Any] = {"query": name, "events": n_events, "window_events": window_events,
                           "anchors": anchors, "trends": len(expected), "extract_seconds": t_plain}
    anchored, t_anch = best_of(lambda: anchored_trends(graph, anchors, max_trends=10**8), repeats)
    row["anchored_seconds"] = t_anch
    equal = [t.tolist() for t in anchored.trends] == want
    for w in (1, 2):
        got, t = best_of(lambda: stealing_trends(graph, anchors, workers=w, budget=BUDGET,
                                                             max_trends=10**8), repeats)
        row[f"steal{w}_seconds"] = t
        row[f"steal{w}_tasks"] = got.dfs_tasks
        row[f"steal{w}_splits"] = got.splits
        equal &= [t.tolist() for t in got.trends] == want
    row["equal"] = equal
    row["reduction_1_to_2"] = 1.0 - row["steal2_seconds"] / row["steal1_seconds"]
    return row


def run_benchmark(quick: bool, with_spark: bool) -> dict[str, Any]:
    """Every row, with the machine it ran on."""
    repeats = 1 if quick else 3
    spark = None
    if with_spark:
        from benchmarks.common import sql_session

        spark, _ = sql_session("bench-trends-parallel-")
        from udfs.trend_graph_spark import build_graph_spark

        # Warm-up: the JVM's first jobs and the Python workers are not part of any row.
        ts, cols = stream(">", 1000)
        build_graph_spark(spark, QUERIES[">"], ts, cols, partitions=2)
    sizes = QUICK_SIZES if quick else SIZES
    pools = {w: ProcessPoolExecutor(max_workers=w) for w in WORKERS}
    try:
        for pool in pools.values():  # warm: the workers are started and numpy imported
            list(pool.map(abs, range(len(WORKERS) * 2)))
        construction = [measure_construction(name, n, pools, spark, repeats)
                        for name in sizes for n in sizes[name]]
    finally:
        for pool in pools.values():
            pool.shutdown()
    extraction = [measure_extraction(name, *args, repeats=repeats)
                  for name, args in (QUICK_EXTRACT if quick else EXTRACT).items()]
    if spark is not None:
        spark.stop()
    return {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                        "platform": platform.platform()},
            "quick": quick, "construction": construction, "extraction": extraction}


def markdown_tables(result: dict[str, Any]) -> str:
    """The tables of BENCHMARKS.md."""
    spark = any("spark1_seconds" in r for r in result["construction"])
    head = ["query", "events", "sequential s", *(f"pool {w}" for w in WORKERS), "threads 2", "P=1 inline"]
    if spark:
        head += [f"Spark {w}" for w in WORKERS]
    head += ["serial fraction", "model 2->16", "paper 2->16", "equal"]
    lines = ["Construction (Figs. 9-10); cells are seconds and, in brackets, sequential / that time:",
             "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in result["construction"]:
        base = r["sequential_seconds"]
        cells = [r["query"], f"{r['events']:,}", f"{base:.3f}"]
        keys = [f"pool{w}_seconds" for w in WORKERS] + ["threads2_seconds", "inline_seconds"]
        if spark:
            keys += [f"spark{w}_seconds" for w in WORKERS]
        cells += [f"{r[k]:.3f} ({base / r[k]:.2f}x)" if k in r else "-" for k in keys]
        cells += [f"{r.get('serial_fraction', float('nan')):.2f}",
                  f"-{100 * r.get('model_reduction_2_to_16', float('nan')):.0f} %",
                  f"-{100 * PAPER_REDUCTION[r['query']]:.0f} %", str(r["equal"])]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Extraction (Figs. 13-14); seconds:", "",
              "| query | events | window | anchors | trends | extract_trends | anchored (1 proc) | "
              "split DFS, 1 worker | split DFS, 2 workers | tasks / splits (2) | 1->2 | equal |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["extraction"]:
        lines.append(
            f"| {r['query']} | {r['events']:,} | {r['window_events']} | {r['anchors']} | {r['trends']:,} | "
            f"{r['extract_seconds']:.3f} | {r['anchored_seconds']:.3f} | {r['steal1_seconds']:.3f} | "
            f"{r['steal2_seconds']:.3f} | {r['steal2_tasks']} / {r['steal2_splits']} | "
            f"{-100 * r['reduction_1_to_2']:+.0f} % | {r['equal']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run, print the tables, optionally write JSON; exit 1 when answers disagree."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat (a few minutes)")
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark runner (no JVM)")
    args = parser.parse_args(argv)
    result = run_benchmark(args.quick, not args.no_spark)
    print(markdown_tables(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=float))
    ok = all(r["equal"] for r in result["construction"] + result["extraction"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
