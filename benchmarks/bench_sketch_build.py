"""Benchmark of building the Bloom-filter tree of one stream (``cep.sketch.SketchTree``).

For one stream of N = 10^5, 10^6 and 10^7 events it measures, in one process:

1. ``SketchTree.build(names, ts, config)`` in one pass (names factorised, each distinct name
   hashed once, leaves, then every level), events per second of wall time and of process CPU
   time (the build is single-threaded numpy, so CPU events/s are events/s per core);
2. the same tree built incrementally, ``append`` in batches of 10^4 events from an empty tree;
   the result must equal the one-pass tree (the run ends with exit code 1 otherwise);
3. a naive baseline on the sizes up to 10^6: a Python loop per leaf over ``set``s of names and
   Python-int bit masks (each distinct name hashed once, as ours), then a loop per node and
   level (the brute-force rule of the tests); ratio = its wall time / ours.

Two kinds of names, both from ``cep.datasets.synthetic.generate_events`` (``n_keys=1``, its Zipf law
over type ranks, ``zipf_s = 1.1``): ``synthetic`` uses the generated type column as names (50
types ``T00`` .. ``T49``), ``bpi-like`` maps 26 type ranks to the 26 activity names of the BPI
Challenge 2017 application log (long names with spaces and parentheses, 6 to 26 characters).
Settings: ``m = 1024`` bits, ``k = 3``, ``C = 64`` events per leaf, fanout 2.

Run from the project root::

    python -m benchmarks.bench_sketch_build [--json PATH] [--max-n N]

Example:
    >>> row = measure("bpi-like", 20_000, repeats=1, baseline=True)
    >>> row["events"], row["incremental_equals_one_pass"], row["nodes"] == row["baseline_nodes"]
    (20000, True, True)
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from cep.sketch import SketchConfig, SketchTree, bit_positions
from cep.datasets.synthetic import SyntheticSpec, generate_events

SEED = 20240101
SIZES = (100_000, 1_000_000, 10_000_000)
BASELINE_MAX = 1_000_000
BATCH = 10_000
CONFIG = SketchConfig(m=1024, k=3, C=64)
REPEATS = {100_000: 5, 1_000_000: 3, 10_000_000: 1}
BPI_2017_ACTIVITIES = (
    "W_Validate application", "W_Call after offers", "O_Create Offer", "O_Created",
    "O_Sent (mail and online)", "W_Complete application", "A_Validating", "W_Call incomplete files",
    "A_Create Application", "A_Submitted", "W_Handle leads", "A_Concept", "A_Accepted",
    "A_Complete", "O_Returned", "A_Incomplete", "O_Cancelled", "A_Pending", "O_Accepted",
    "A_Denied", "O_Refused", "A_Cancelled", "W_Assess potential fraud", "O_Sent (online only)",
    "W_Personal Loan collection", "W_Shortened completion")
KINDS = ("synthetic", "bpi-like")


def stream(kind: str, n_events: int) -> tuple[np.ndarray, np.ndarray]:
    """``(names, ts)`` of one stream of ``n_events`` events: a numpy str array and int64 us."""
    n_types = 50 if kind == "synthetic" else len(BPI_2017_ACTIVITIES)
    cols = generate_events(SyntheticSpec(n_events=n_events, n_keys=1, n_types=n_types, n_attrs=0,
                                         seed=SEED))
    if kind == "synthetic":
        return cols.types(), cols.ts_us
    return np.array(BPI_2017_ACTIVITIES)[cols.type_code], cols.ts_us


def naive_build(names: list[str], config: SketchConfig) -> int:
    """The tree rule with Python sets and ints, one loop step per leaf and per node; node count."""
    c, f, m = config.C, config.fanout, config.m
    masks = {}
    for name in set(names):
        mask = 0
        for p in bit_positions([name], m, config.seeds or ())[0].tolist():
            mask |= 1 << p
        masks[name] = mask
    level: dict[int, tuple[int, frozenset[str]]] = {}
    for j in range(len(names) // c):
        leaf = frozenset(names[j * c:(j + 1) * c])
        mask = 0
        for name in leaf:
            mask |= masks[name]
        level[j] = (mask, leaf)
    count = len(level)
    while level:
        parents = {}
        for g in range(max(level) // f + 1):
            kids = [level.get(g * f + i) for i in range(f)]
            if any(kid is None for kid in kids):
                continue
            mask = 0
            for kid in kids:
                mask |= kid[0]  # type: ignore[index]
            if bin(mask).count("1") <= m // 2:
                parents[g] = (mask, frozenset().union(*(kid[1] for kid in kids)))  # type: ignore[index]
        count += len(parents)
        level = parents
    return count


def _best(fn: Any, repeats: int) -> tuple[Any, float, float]:
    """``fn()`` and its best wall and CPU seconds over ``repeats`` runs."""
    wall = cpu = float("inf")
    value = None
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        value = fn()
        wall = min(wall, time.perf_counter() - w0)
        cpu = min(cpu, time.process_time() - c0)
    return value, wall, cpu


def _incremental(names: np.ndarray, ts: np.ndarray) -> SketchTree:
    tree = SketchTree.empty(CONFIG)
    for lo in range(0, len(names), BATCH):
        tree = tree.append(names[lo:lo + BATCH], ts[lo:lo + BATCH])
    return tree


def measure(kind: str, n_events: int, repeats: int = 1, baseline: bool = False) -> dict[str, Any]:
    """One row: one-pass and incremental build of one stream (and the naive baseline)."""
    names, ts = stream(kind, n_events)
    tree, wall, cpu = _best(lambda: SketchTree.build(names, ts, CONFIG), repeats)
    inc, inc_wall, inc_cpu = _best(lambda: _incremental(names, ts), max(1, repeats // 2))
    stats = tree.stats()
    row: dict[str, Any] = {
        "names": kind, "events": n_events, "distinct_names": stats["names"],
        "nodes": stats["nodes"], "levels": stats["levels"], "top_level": stats["top_level"],
        "mean_fill": stats["mean_fill"], "filter_mib": stats["bytes"] / 2**20,
        "seconds": wall, "cpu_seconds": cpu, "events_per_s": n_events / wall,
        "events_per_cpu_s": n_events / cpu,
        "append_seconds": inc_wall, "append_events_per_s": n_events / inc_wall,
        "append_events_per_cpu_s": n_events / inc_cpu,
        "incremental_equals_one_pass": inc == tree,
    }
    if baseline:
        listed = names.tolist()
        count, b_wall, _ = _best(lambda: naive_build(listed, CONFIG), 1)
        row.update(baseline_nodes=count, baseline_seconds=b_wall, ratio=b_wall / wall)
    return row


def run_benchmark(max_n: int) -> dict[str, Any]:
    """Every kind of names at every size up to ``max_n``."""
    rows = []
    for kind in KINDS:
        for n in (s for s in SIZES if s <= max_n):
            row = measure(kind, n, REPEATS[n], baseline=n <= BASELINE_MAX)
            rows.append(row)
            print(_line(row), flush=True)
    return {"machine": platform.platform(), "python": sys.version.split()[0],
            "numpy": np.__version__, "config": CONFIG.to_dict(), "batch": BATCH, "rows": rows}


def _line(row: dict[str, Any]) -> str:
    base = (f"{row['baseline_seconds']:.2f} | {row['ratio']:,.0f}x"
            if "baseline_seconds" in row else "- | -")
    return (f"| {row['names']} | {row['events']:,} | {row['nodes']:,} | {row['levels']} | "
            f"{row['top_level']} | {row['mean_fill']:.3f} | {row['seconds']:.3f} | "
            f"{row['events_per_s']:,.0f} | {row['events_per_cpu_s']:,.0f} | "
            f"{row['append_seconds']:.3f} | {row['append_events_per_s']:,.0f} | "
            f"{row['append_events_per_cpu_s']:,.0f} | {row['incremental_equals_one_pass']} | {base} |")


def markdown_table(result: dict[str, Any]) -> str:
    """The results as a Markdown table (one row per kind of names and size)."""
    head = ("| names | events | nodes | levels | top-level | mean fill | build s | build events/s | "
            "build events/CPU-s | append s (10^4 batches) | append events/s | "
            "append events/CPU-s | append == one pass | naive s | speed-up vs naive |\n"
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|")
    return head + "\n" + "\n".join(_line(r) for r in result["rows"])


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the table, optionally write JSON; exit 1 on a disagreement."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers here")
    parser.add_argument("--max-n", type=int, default=10_000_000, help="largest stream size")
    args = parser.parse_args(argv)
    print(f"m={CONFIG.m}, k={CONFIG.k}, C={CONFIG.C}, fanout={CONFIG.fanout}; "
          f"append in batches of {BATCH:,}")
    result = run_benchmark(args.max_n)
    print()
    print(markdown_table(result))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    bad = [r for r in result["rows"] if not r["incremental_equals_one_pass"]
           or r.get("baseline_nodes", r["nodes"]) != r["nodes"]]
    if bad:
        print(f"DISAGREEMENT in {len(bad)} rows", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
