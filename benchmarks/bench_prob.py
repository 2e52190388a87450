"""Benchmark of the ``match_prob`` core (``cep.prob``): the transducer against naive possible worlds.

The paper's table 2 (Sugiura et al., DASFAA 2015, section 6) compares events per second of
its transducer method with a naive method over window sizes; their Java system reports
70,000 to 100,000 events/s. In one process, on the same seeded synthetic stream
(:func:`cep.datasets.prob_streams.synthetic_pstream`: domain {a, b, c, d}, noise in [0, 0.1]),
pattern ``PATTERN a, b+, c``, threshold 0.01:

1. **ours**: :func:`cep.prob.match_prob` end to end (matches, groups, group probabilities) for
   single and complete overlap, windows 5 to 50, at N = 10^5 and 10^6 time points; events per
   CPU-second (single-threaded numpy, so per core; the target is 100,000 and flat in the window);
2. **naive**: the group probabilities by enumerating every possible world of each group's span
   (symbols a, b, c and "other"; vectorised over worlds with numpy, the DFA run from every start
   in every world) on the first ``NAIVE_N`` time points, with at most ``NAIVE_CAP`` worlds per
   group; groups over the cap are counted as *collapsed* (not computed). Where both computed a
   group, the probabilities must agree to 1e-9 (exit code 1 otherwise);
3. **naive per window** (the shape of the paper's naive method in table 2): the probability that
   the pattern occurs in each sliding window ``[t, t + w - 1]``, by enumerating the window's
   worlds, on the first ``WINDOW_N`` time points; it grows as ``4^w`` and is *collapsed* (not
   run) once a window has more than ``WINDOW_CAP`` worlds. The transducer answers the same
   windows (one group per window) for comparison.

Run from the project root::

    python -m benchmarks.bench_prob [--json PATH] [--max-n N]

Example:
    >>> row = measure_ours(2_000, 5, "single")
    >>> row["events"], row["groups"] > 0
    (2000, True)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from cep.prob import compile_prob, find_matches
from cep.prob.answer import cached_transducer, group_matches
from cep.prob.pattern import ProbPattern
from cep.datasets.prob_streams import synthetic_pstream
from cep.prob.transducer import group_probabilities, symbol_masses

SEED = 20261121
PATTERN = "PATTERN a, b+, c"
THRESHOLD = 0.01
WINDOWS = (5, 10, 20, 30, 40, 50)
SIZES = (100_000, 1_000_000)
NAIVE_N = 5_000
NAIVE_CAP = 1 << 18
WINDOW_N = 300
WINDOW_CAP = 1 << 16
TARGET = 100_000


def measure_ours(n: int, window: int, overlap: str, repeats: int = 2) -> dict[str, Any]:
    """One row: ``match_prob`` stages on ``n`` synthetic time points, best CPU time of ``repeats``."""
    stream = synthetic_pstream(n, seed=SEED, noise="split")
    pattern = compile_prob(PATTERN)
    best: dict[str, float] = {}
    for _ in range(repeats):
        c0 = time.process_time()
        matches = find_matches(pattern, stream, window=window, threshold=THRESHOLD)
        c1 = time.process_time()
        groups = group_matches(matches, overlap, window)
        c2 = time.process_time()
        longest = int((groups.t_end - groups.t_start).max()) + 1 if len(groups) else 1
        tr = cached_transducer(pattern, min(window, longest))
        prob = group_probabilities(tr, stream, groups.t_start, groups.t_end, groups.core_start, groups.core_end)
        c3 = time.process_time()
        run = {"match_s": c1 - c0, "group_s": c2 - c1, "prob_s": c3 - c2, "total_s": c3 - c0}
        if not best or run["total_s"] < best["total_s"]:
            best = run
    return {"events": n, "window": window, "overlap": overlap, "matches": len(matches), "groups": len(groups),
            "longest_span": longest, "transducer_states": tr.n_states, **best,
            "events_per_cpu_s": n / best["total_s"], "target_met": n / best["total_s"] >= TARGET,
            "mean_probability": float(np.mean(prob)) if len(prob) else 0.0}


def naive_group_probability(pattern: ProbPattern, masses: np.ndarray, window: int, core_start: int,
                            core_end: int, cap: int) -> tuple[float | None, int]:
    """P(union) of one group by enumerating the worlds of its span; ``(None, worlds)`` over the cap."""
    length = len(masses)
    support = [np.flatnonzero(masses[i] > 0) for i in range(length)]
    n_worlds = math.prod(len(s) for s in support)
    if n_worlds > cap:
        return None, n_worlds
    grids = np.meshgrid(*support, indexing="ij")
    worlds = np.stack([g.ravel() for g in grids], axis=1)
    prob = np.ones(len(worlds))
    for i in range(length):
        prob *= masses[i, worlds[:, i]]
    dfa = np.array(pattern.dfa, dtype=np.int64)
    accepting = np.array(pattern.dfa_accepting, dtype=bool)
    hit = np.zeros(len(worlds), dtype=bool)
    for s in range(core_start + 1):
        state = np.zeros(len(worlds), dtype=np.int64)
        alive = np.ones(len(worlds), dtype=bool)
        for e in range(s, min(length, s + window)):
            state = np.where(alive, dfa[np.maximum(state, 0), worlds[:, e]], -1)
            alive = state >= 0
            if e >= core_end:
                hit |= alive & accepting[np.maximum(state, 0)]
    return float(prob[hit].sum()), n_worlds


def measure_naive(window: int, overlap: str, n: int = NAIVE_N, cap: int = NAIVE_CAP) -> dict[str, Any]:
    """The naive row on the first ``n`` time points, checked against the transducer."""
    stream = synthetic_pstream(n, seed=SEED, noise="split")
    pattern = compile_prob(PATTERN)
    matches = find_matches(pattern, stream, window=window, threshold=THRESHOLD)
    groups = group_matches(matches, overlap, window)
    longest = int((groups.t_end - groups.t_start).max()) + 1 if len(groups) else 1
    tr = cached_transducer(pattern, min(window, longest))
    c0 = time.process_time()
    ours = group_probabilities(tr, stream, groups.t_start, groups.t_end, groups.core_start, groups.core_end)
    ours_s = time.process_time() - c0
    masses = symbol_masses(tr, stream)
    done = collapsed = worlds = 0
    worst = 0.0
    c0 = time.process_time()
    for i in range(len(groups)):
        a, b = int(groups.t_start[i]), int(groups.t_end[i])
        p, w = naive_group_probability(pattern, masses[a:b + 1], window, int(groups.core_start[i]) - a,
                                       int(groups.core_end[i]) - a, cap)
        if p is None:
            collapsed += 1
            continue
        done += 1
        worlds += w
        worst = max(worst, abs(p - float(ours[i])))
    naive_s = time.process_time() - c0
    return {"events": n, "window": window, "overlap": overlap, "groups": len(groups), "naive_groups": done,
            "collapsed": collapsed, "worlds": worlds, "naive_s": naive_s, "ours_prob_s": ours_s,
            "naive_events_per_cpu_s": n / naive_s if naive_s else float("inf"),
            "max_abs_diff": worst, "agree": worst <= 1e-9}


def measure_naive_windows(window: int, n: int = WINDOW_N, cap: int = WINDOW_CAP) -> dict[str, Any]:
    """Naive and transducer P(match inside each sliding window of ``window`` time points)."""
    stream = synthetic_pstream(n + window - 1, seed=SEED, noise="split")
    pattern = compile_prob(PATTERN)
    tr = cached_transducer(pattern, window)
    starts = np.arange(n, dtype=np.int64)
    ends = starts + window - 1
    c0 = time.process_time()
    ours = group_probabilities(tr, stream, starts, ends, ends, starts)
    ours_s = time.process_time() - c0
    masses = symbol_masses(tr, stream)
    worlds = math.prod(int((masses[i] > 0).sum()) for i in range(window))
    row = {"events": n, "window": window, "worlds_per_window": worlds, "ours_s": ours_s,
           "ours_events_per_cpu_s": n / ours_s if ours_s else float("inf")}
    if worlds > cap:
        return {**row, "naive_s": None, "naive_events_per_cpu_s": None, "max_abs_diff": 0.0, "agree": True}
    c0 = time.process_time()
    worst = 0.0
    for t in range(n):
        p, _ = naive_group_probability(pattern, masses[t:t + window], window, window - 1, 0, cap)
        worst = max(worst, abs(float(p) - float(ours[t])))
    naive_s = time.process_time() - c0
    return {**row, "naive_s": naive_s, "naive_events_per_cpu_s": n / naive_s, "max_abs_diff": worst,
            "agree": worst <= 1e-9}


def run_benchmark(max_n: int) -> dict[str, Any]:
    sizes = [n for n in SIZES if n <= max_n]
    ours = [measure_ours(n, w, ov) for n in sizes for ov in ("single", "complete") for w in WINDOWS]
    naive = [measure_naive(w, ov) for ov in ("single", "complete") for w in WINDOWS]
    per_window = [measure_naive_windows(w) for w in (3, 4, 5, 6, 7, 8, *WINDOWS[1:])]
    return {"per_window": per_window, "machine": {"platform": platform.platform(), "python": platform.python_version(),
                        "numpy": np.__version__, "cpus": os.cpu_count(), "load": os.getloadavg()},
            "ours": ours, "naive": naive}


def markdown_tables(result: dict[str, Any]) -> str:
    lines = ["| overlap | N | window | matches | groups | longest span | transducer states | match s | group s | "
             "probability s | events/CPU-s | >= 100k |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in result["ours"]:
        lines.append(f"| {r['overlap']} | {r['events']:,} | {r['window']} | {r['matches']:,} | {r['groups']:,} | "
                     f"{r['longest_span']} | {r['transducer_states']} | {r['match_s']:.3f} | {r['group_s']:.3f} | "
                     f"{r['prob_s']:.3f} | {r['events_per_cpu_s'] / 1e6:.2f} M | "
                     f"{'yes' if r['target_met'] else 'no'} |")
    lines += ["", "| overlap | N | window | groups | naive computed | collapsed (> cap worlds) | worlds | naive s | "
              "transducer s | naive events/CPU-s | naive / transducer | max abs diff |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["naive"]:
        ratio = r["naive_s"] / r["ours_prob_s"] if r["ours_prob_s"] else float("inf")
        lines.append(f"| {r['overlap']} | {r['events']:,} | {r['window']} | {r['groups']:,} | {r['naive_groups']:,} | "
                     f"{r['collapsed']:,} | {r['worlds']:,} | {r['naive_s']:.2f} | {r['ours_prob_s']:.4f} | "
                     f"{r['naive_events_per_cpu_s'] / 1e3:.1f} k | {ratio:,.0f}x | {r['max_abs_diff']:.1e} |")
    lines += ["", "| window w | windows | worlds per window | naive s | naive windows/CPU-s | transducer s | "
              "transducer windows/CPU-s | max abs diff |", "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["per_window"]:
        naive = ("collapsed", "-") if r["naive_s"] is None else (f"{r['naive_s']:.2f}",
                                                                  f"{r['naive_events_per_cpu_s']:,.0f}")
        lines.append(f"| {r['window']} | {r['events']:,} | {r['worlds_per_window']:.3g} | {naive[0]} | {naive[1]} | "
                     f"{r['ours_s']:.4f} | {r['ours_events_per_cpu_s']:,.0f} | {r['max_abs_diff']:.1e} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers here")
    parser.add_argument("--max-n", type=int, default=max(SIZES), help="largest stream size")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    result = run_benchmark(args.max_n)
    m = result["machine"]
    print(f"{m['platform']}, Python {m['python']}, numpy {m['numpy']}, {m['cpus']} CPUs; load {m['load'][0]:.2f}; "
          f"{time.perf_counter() - start:.0f} s")
    print(markdown_tables(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=float))
    bad = [r for r in result["naive"] + result["per_window"] if not r["agree"]]
    if bad:
        print(f"DISAGREEMENT between naive and transducer in {len(bad)} rows", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
