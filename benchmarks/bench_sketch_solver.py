"""Benchmark of the sketch configuration solver: figure 4.9, and predictions against built trees.

1. **Figure 4.9** (our reconstruction, ``cep/sketch/solver.py``): the predicted memory of the
   cheapest configuration of every tree height for ``N = 10^6`` events, ``fpq = 10^-4``, leaves
   of ``C = 64`` events and queries of ``s = 2`` names, with Heaps' ``K = 60``, ``beta = 0.5``,
   as a Markdown table. The chosen height (budget 50 MB) is marked ``<-``.
2. **Prediction versus a built tree.** One synthetic stream (``cep.datasets.synthetic``: one key,
   ``10^6`` events, names = types, Zipf ``s = 1.2`` over ``10^6`` types, so that names keep
   arriving as Heaps' law assumes). The solver runs twice with the same target and budget: with
   the default Heaps estimate, and with ``K``, ``beta`` fitted on the stream (least squares of
   ``log D(w)`` on ``log w`` over the windows ``C * 2**L``). A :class:`~cep.sketch.SketchTree` is
   built with each chosen config, and predicted height, nodes and bytes are set against the
   tree's (bytes: filters plus the 58 bytes of node columns per node; the exact-set twin is
   extra and shown apart). The leaf false-positive rate of single-name queries is measured
   against the exact sets: for probe names absent from the stream and for a sample of the
   stream's names, the share of leaves without the name whose filter says "possibly present";
   it is compared with the solver's prediction and with the Bloom formula at each leaf's actual
   number of distinct names.

Run from the project root::

    python -m benchmarks.bench_sketch_solver [--events N] [--json PATH]

Example:
    >>> result = figure_4_9()
    >>> result.height, result.m, result.k, len(result.table)
    (5, 8864, 3, 14)
    >>> row = measure(n_events=20_000, n_types=5_000, budget=10**6, probes=20, fit=True)
    >>> row["actual_bytes"] > 0 and 0.0 <= row["measured_leaf_fp"] <= 1.0
    True
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from cep.sketch.solver import SolverResult, bloom_fp, memory_table, solve
from cep.sketch.tree import SketchTree
from cep.datasets.synthetic import SyntheticSpec, generate_events

FPQ = 1e-4
WINDOW = 64
QUERY_LENGTH = 2
FANOUT = 2
BUDGET = 50_000_000
N_EVENTS = 1_000_000
N_TYPES = 1_000_000
ZIPF_S = 1.2
SEED = 20240101
PROBES = 5000
"""Absent probe names for the measured leaf FP rate (a tenth as many sampled stream names)."""
NODE_COLUMN_BYTES = 58
"""Bytes of the node columns of a SketchTree row: level (1), is_top (1) and seven int64."""


def figure_4_9(
    n_events: int = N_EVENTS, fpq: float = FPQ, window: int = WINDOW, budget: int = BUDGET
) -> SolverResult:
    """The solver's table of every height for figure 4.9's setting (default Heaps' law)."""
    return solve(
        fpq=fpq, memory_bytes=budget, n_events=n_events, window=window, query_length=QUERY_LENGTH
    )


def distinct_per_window(codes: np.ndarray, window: int, fanout: int) -> list[tuple[int, float]]:
    """Mean distinct codes per aligned block of ``window * fanout**L`` events, for every ``L``.

    Example:
        >>> distinct_per_window(np.array([0, 0, 1, 2, 2, 2, 3, 4]), 2, 2)
        [(2, 1.5), (4, 3.0), (8, 5.0)]
    """
    out = []
    width = window
    while width <= len(codes):
        blocks = np.sort(codes[: len(codes) // width * width].reshape(-1, width), axis=1)
        distinct = 1 + np.count_nonzero(blocks[:, 1:] != blocks[:, :-1], axis=1)
        out.append((width, float(distinct.mean())))
        width *= fanout
    return out


def fit_heaps(codes: np.ndarray, window: int, fanout: int) -> tuple[float, float]:
    """Heaps' ``(K, beta)`` by least squares of ``log D(w)`` on ``log w`` (``beta`` capped at 1).

    Example:
        >>> k, beta = fit_heaps(np.arange(4096), 8, 2)
        >>> round(k, 6), round(beta, 6)
        (1.0, 1.0)
    """
    points = distinct_per_window(codes, window, fanout)
    if len(points) < 2:
        return 1.0, 1.0
    slope, intercept = np.polyfit(
        np.log([w for w, _ in points]), np.log([d for _, d in points]), 1
    )
    return float(math.exp(intercept)), float(min(1.0, max(slope, 1e-3)))


def _measured_leaf_fp(tree: SketchTree, probes: int, seed: int) -> dict[str, float]:
    """Leaf false-positive rates of single-name queries, measured against the exact sets."""
    leaves = tree.rows_at(0)
    absent_fp = absent_n = 0
    for i in range(probes):
        said = tree.member(f"absent-{i}")[leaves]
        absent_fp += int(said.sum())
        absent_n += len(leaves)
    rng = np.random.default_rng(seed)
    size = min(max(1, probes // 10), len(tree.vocabulary))
    sample = rng.choice(len(tree.vocabulary), size=size, replace=False)
    present_fp = present_n = 0
    for code in sample.tolist():
        name = tree.vocabulary[code]
        negative = ~tree.twin_member(name)[leaves]
        present_fp += int((tree.member(name)[leaves] & negative).sum())
        present_n += int(negative.sum())
    return {
        "absent_fp": absent_fp / absent_n if absent_n else 0.0,
        "stream_names_fp": present_fp / present_n if present_n else 0.0,
        "all_fp": (absent_fp + present_fp) / max(1, absent_n + present_n),
    }


def measure(
    n_events: int = N_EVENTS,
    n_types: int = N_TYPES,
    budget: int = BUDGET,
    probes: int = PROBES,
    fit: bool = False,
) -> dict[str, Any]:
    """Solve, build the tree of one synthetic stream with the chosen config, compare.

    Args:
        n_events: Events of the stream (one key).
        n_types: Distinct types the Zipf law draws from.
        budget: Memory budget given to the solver, bytes.
        probes: Absent probe names (and a tenth as many sampled stream names) for the measured
            leaf false-positive rate.
        fit: Use Heaps' ``K``, ``beta`` fitted on the stream instead of ``60``, ``0.5``.

    Returns:
        Predicted and actual height, nodes and bytes, predicted and measured leaf FP rates.
    """
    events = generate_events(
        SyntheticSpec(n_events=n_events, n_keys=1, n_types=n_types, zipf_s=ZIPF_S, seed=SEED)
    )
    heaps_k, heaps_beta = fit_heaps(events.type_code, WINDOW, FANOUT) if fit else (60.0, 0.5)
    result = solve(
        fpq=FPQ,
        memory_bytes=budget,
        n_events=n_events,
        window=WINDOW,
        query_length=QUERY_LENGTH,
        fanout=FANOUT,
        heaps_k=heaps_k,
        heaps_beta=heaps_beta,
    )
    config = result.to_config()
    started = time.perf_counter()
    tree = SketchTree.build(events.types(), events.ts_us, config)
    build_seconds = time.perf_counter() - started
    stats = tree.stats()
    actual_bytes = stats["bytes"] + NODE_COLUMN_BYTES * stats["nodes"]
    leaves = tree.rows_at(0)
    leaf_distinct = np.bincount(tree.twin_row, minlength=len(tree))[leaves]
    fp_at_actual = float(np.mean([bloom_fp(config.m, config.k, d) for d in leaf_distinct]))
    measured = _measured_leaf_fp(tree, probes, SEED)
    return {
        "heaps": "fitted" if fit else "default",
        "heaps_k": heaps_k,
        "heaps_beta": heaps_beta,
        "m": config.m,
        "k": config.k,
        "predicted_height": result.height,
        "actual_height": stats["levels"] - 1,
        "predicted_nodes": result.table[result.height].nodes,
        "actual_nodes": stats["nodes"],
        "predicted_bytes": result.predicted_bytes,
        "actual_bytes": actual_bytes,
        "twin_and_state_bytes": stats["state_bytes"] - stats["bytes"],
        "predicted_leaf_fp": result.predicted_leaf_fp,
        "leaf_fp_at_actual_distinct": fp_at_actual,
        "measured_leaf_fp": measured["all_fp"],
        "measured_absent_fp": measured["absent_fp"],
        "measured_stream_names_fp": measured["stream_names_fp"],
        "mean_leaf_distinct": float(leaf_distinct.mean()),
        "mean_fill": stats["mean_fill"],
        "build_seconds": build_seconds,
    }


def thesis_against_ours(n_events: int = N_EVENTS, probes: int = PROBES) -> list[dict[str, Any]]:
    """The thesis's rule (``cep/sketch/thesis_solver.py``) and ours on the thesis's inputs.

    M = 2 GB, C = 100, fpq = 10^-4, s = 3 (section 5.2.1), N = ``n_events``: each chosen
    ``(m, k)`` builds the tree of the same stream under each merge rule (the thesis's
    Algorithm 2, ``neighbours``, and our aligned groups), and the false-positive rate of absent names is measured at the leaves and at
    the top-level nodes (the filters the thesis sizes for).
    """
    from cep.sketch.config import SketchConfig
    from cep.sketch.thesis_solver import thesis_solve

    events = generate_events(
        SyntheticSpec(n_events=n_events, n_keys=1, n_types=N_TYPES, zipf_s=ZIPF_S, seed=SEED)
    )
    thesis = thesis_solve(fpq=FPQ, memory_bits=2 * 8 * 2 ** 30, n_events=n_events, window=100,
                          query_length=3)
    ours = solve(fpq=FPQ, memory_bytes=2 * 2 ** 30, n_events=n_events, window=100,
                 query_length=3)
    rows = []
    for rule, m, k, height, merge in (
            (rule, m, k, height, merge)
            for rule, m, k, height in (("thesis", thesis.m, thesis.k, thesis.height),
                                       ("ours", ours.m, ours.k, ours.height))
            for merge in ("neighbours", "aligned")):
        config = SketchConfig(m=-(-m // 8) * 8, k=k, C=100, merge=merge)
        started = time.perf_counter()
        tree = SketchTree.build(events.types(), events.ts_us, config)
        seconds = time.perf_counter() - started
        stats = tree.stats()
        out = {"rule": rule, "merge": merge, "m": config.m, "k": k, "solver_height": height,
               "tree_height": stats["levels"] - 1, "nodes": stats["nodes"],
               "top_nodes": int(tree.is_top.sum()), "filter_mib": stats["bytes"] / 2 ** 20,
               "build_s": seconds}
        for where, rows_at in (("leaf", tree.rows_at(0)), ("top", tree.top_rows())):
            said = sum(int(tree.member(f"absent-{i}")[rows_at].sum()) for i in range(probes))
            out[f"{where}_fp"] = said / (probes * len(rows_at))
        out.update(_query_times(tree, events.types()))
        rows.append(out)
    return rows


def _query_times(tree: SketchTree, names: np.ndarray, n_queries: int = 100) -> dict[str, float]:
    """Mean time of ``n_queries`` random ``PATTERN a; b; c`` (names drawn from the stream, so
    frequent names are frequent in queries) per policy, intervals at level 0, and the
    intervals the Bloom filters add over the exact sets (Tables 5.5 and 5.6's setting)."""
    from cep.sketch.evaluate import evaluate_sketch

    rng = np.random.default_rng(SEED)
    picked = rng.choice(np.asarray(names, dtype=object), size=(n_queries, 3)).tolist()
    out: dict[str, float] = {}
    for policy in ("strict-contiguity", "skip-till-next-match"):
        seconds, extra = 0.0, 0
        for a, b, c in picked:
            text = "PATTERN " + "; ".join(f"`{x}`" for x in (a, b, c))
            started = time.perf_counter()
            found = evaluate_sketch(text, tree, policy=policy)
            seconds += time.perf_counter() - started
            extra += len(found) - len(evaluate_sketch(text, tree, policy=policy,
                                                      membership="twin"))
        out[f"{policy}_ms"] = 1000 * seconds / n_queries
        out[f"{policy}_extra"] = extra
    return out


def comparison_table(rows: list[dict[str, Any]]) -> str:
    """Predicted versus actual, one line per run, as Markdown.

    Example:
        >>> comparison_table([]).splitlines()[0].split(" | ")[:2]
        ['| Heaps (K, beta)', 'm, k']
    """
    lines = [
        "| Heaps (K, beta) | m, k | height pred / actual | nodes pred / actual "
        "| bytes pred / actual (ratio) | twin+state bytes | leaf FP pred | leaf FP at actual D "
        "| leaf FP measured (absent / stream names) | build s |",
        "|---|---|---|---|---|---:|---:|---:|---|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['heaps']} ({row['heaps_k']:.2f}, {row['heaps_beta']:.3f}) "
            f"| {row['m']}, {row['k']} "
            f"| {row['predicted_height']} / {row['actual_height']} "
            f"| {row['predicted_nodes']} / {row['actual_nodes']} "
            f"| {row['predicted_bytes']} / {row['actual_bytes']} "
            f"({row['actual_bytes'] / row['predicted_bytes']:.3f}) "
            f"| {row['twin_and_state_bytes']} "
            f"| {row['predicted_leaf_fp']:.2e} | {row['leaf_fp_at_actual_distinct']:.2e} "
            f"| {row['measured_leaf_fp']:.2e} ({row['measured_absent_fp']:.2e} / "
            f"{row['measured_stream_names_fp']:.2e}) | {row['build_seconds']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command line: print both tables, optionally write the numbers as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=N_EVENTS, help="stream size of part 2")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers here")
    parser.add_argument("--thesis", action="store_true",
                        help="only the thesis's rule against ours on the thesis's inputs")
    args = parser.parse_args(argv)
    if args.thesis:
        print("| rule | merge | m | k | solver h | tree h | nodes | top nodes | filters MiB "
              "| build s | leaf FP | top FP | strict ms (extra) | next ms (extra) |\n"
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in thesis_against_ours(args.events):
            print(f"| {r['rule']} | {r['merge']} | {r['m']:,} | {r['k']} | {r['solver_height']} | "
                  f"{r['tree_height']} | {r['nodes']:,} | {r['top_nodes']:,} | "
                  f"{r['filter_mib']:.1f} | {r['build_s']:.2f} | {r['leaf_fp']:.2e} | "
                  f"{r['top_fp']:.2e} | {r['strict-contiguity_ms']:.2f} "
                  f"({r['strict-contiguity_extra']}) | {r['skip-till-next-match_ms']:.2f} "
                  f"({r['skip-till-next-match_extra']}) |", flush=True)
        return 0
    started = time.perf_counter()
    figure = figure_4_9()
    print(
        f"### Figure 4.9 (reconstructed): memory vs height, N={N_EVENTS:,}, fpq={FPQ:g}, "
        f"C={WINDOW}, s={QUERY_LENGTH}, f={FANOUT}, Heaps K=60, beta=0.5, budget {BUDGET:,} B\n"
    )
    print(memory_table(figure))
    rows = [measure(n_events=args.events, fit=fit) for fit in (False, True)]
    print(
        f"### Predicted vs built tree: {args.events:,} events, one key, Zipf s={ZIPF_S} over "
        f"{N_TYPES:,} types, fpq={FPQ:g}, budget {BUDGET:,} B\n"
    )
    print(comparison_table(rows))
    total = time.perf_counter() - started
    print(f"Python {platform.python_version()}, numpy {np.__version__}; total {total:.1f} s.")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "figure_4_9": [row.__dict__ for row in figure.table],
            "trees": rows,
            "total_seconds": total,
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
