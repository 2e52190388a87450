"""The evaluation of Sugiura et al., DASFAA 2015 (section 6), reproduced: Table 2 and Fig. 11.

The paper's setting (lines 266-296 of ``../shared/seeds/002_cc1ed863d7a1915b.txt``): one
synthetic stream of 10,000 events over ``V = {a, b, c, d}`` where every value other than the
true one gets a probability from ``U[0, 0.1]`` independently
(:func:`cep.datasets.prob_streams.synthetic_pstream` with ``noise='paper'``), the pattern
``<a b+ c>`` (``PATTERN a, b+, c``), throughput in events per second, and the parameters of
Table 1: overlap ``comp`` / ``sing``, threshold ``theta`` in {0, 0.01, 0.02, 0.04, 0.06, 0.08,
0.1}, window ``w`` in {5, 10, 15, 20, 25, 50}.

- **Table 2**: ``(o, 0.01, w)`` for ``w`` = 5, 10, 15, proposed (transducer) vs naive (all
  sequences of each group's span, equation (3)); the paper: proposed 79,581 / 71,356 / 71,076
  (comp) and 102,389 / 97,575 / 99,865 (sing) events/s, naive 265 / 14 / out of memory (comp)
  and 267 / 14 / out of memory (sing).
- **Fig. 11 (a)**: throughput against ``w`` (5 .. 50) for ``theta`` = 0 and 0.01;
  **Fig. 11 (b)**: against ``theta`` at ``w = 50``. The figure's values are not in the text we
  have, only its trends (section 6.1): without a threshold the throughput falls quickly with
  ``w`` (``O(w^2)`` matches); with one it is flat in ``w``; single overlap is faster than
  complete; the throughput rises with ``theta``.

"Proposed" is the core end to end (:func:`cep.prob.group_columns`: matches with pruning,
groups, group probabilities), in both transducer modes: ``window`` (ours, the default) and
``paper`` (the paper's ``|p| + 1``-state transducer). Throughput is events per CPU-second of
this process (best of ``REPEATS``; numpy, one core). Two naive methods, each run over the
groups in order until ``NAIVE_BUDGET_S`` CPU-seconds are spent (throughput: the events up to
the last finished group's end per CPU-second), each checked against the transducer to 1e-9:

- **naive, window** (the paper's, section 6.2: "we generate all sequences in a window and
  summarize their probabilities according to (3)"): the ``4^w`` sequences of the ``w`` time
  points from the group's start (or of its span, when longer), the group's matches looked up in
  each (:func:`naive_window_probability`);
- **naive, span**: only the sequences of the group's span
  (:func:`benchmarks.bench_prob.naive_group_probability`); with a threshold most spans are
  short, so this is much faster than the paper's naive method.

A group needing more than ``NAIVE_CAP`` sequences stops a naive run: "out of memory", as in the
paper (``4^15`` sequences of 15 time points are 15 GB as one byte per value).

Run from the project root (about 5 minutes on 2 shared cores)::

    python -m benchmarks.bench_prob_paper [--json PATH] [--events N]

Example:
    >>> row = measure_proposed(synthetic_pstream(2_000, seed=SEED, noise="paper"), "single", 0.01, 5, "window", 1)
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

from benchmarks.bench_prob import naive_group_probability
from cep.datasets.prob_streams import synthetic_pstream
from cep.prob import compile_prob, find_matches, group_columns
from cep.prob.answer import cached_transducer, group_matches
from cep.prob.pattern import ProbPattern
from cep.prob.stream import ProbStream
from cep.prob.transducer import group_probabilities, symbol_masses

SEED = 20150420
EVENTS = 10_000
PATTERN = "PATTERN a, b+, c"
THETAS = (0.0, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1)
WINDOWS = (5, 10, 15, 20, 25, 50)
TABLE2_WINDOWS = (5, 10, 15)
OVERLAPS = ("complete", "single")
MODES = ("window", "paper")
REPEATS = 3
NAIVE_CAP = 1 << 22
NAIVE_BUDGET_S = 15.0
NAIVES = ("window", "span")
PAPER_TABLE2 = {("complete", "proposed"): (79_581, 71_356, 71_076), ("complete", "naive"): (265, 14, None),
                ("single", "proposed"): (102_389, 97_575, 99_865), ("single", "naive"): (267, 14, None)}


def measure_proposed(stream: ProbStream, overlap: str, theta: float, window: int, mode: str,
                     repeats: int = REPEATS) -> dict[str, Any]:
    """One ``(o, theta, w)`` setting of the proposed method: best CPU time of ``repeats`` runs."""
    pattern = compile_prob(PATTERN)
    best = float("inf")
    cols: dict[str, np.ndarray] = {}
    for _ in range(repeats):
        c0 = time.process_time()
        cols = group_columns(pattern, stream, overlap, theta, window, transducer_mode=mode)
        best = min(best, time.process_time() - c0)
    n_matches = len(find_matches(pattern, stream, window=window, threshold=theta, values=False))
    return {"events": len(stream), "overlap": overlap, "theta": theta, "window": window, "mode": mode,
            "matches": n_matches, "groups": len(cols["t_start"]), "cpu_s": best,
            "events_per_s": len(stream) / best if best > 0 else float("inf")}


def naive_window_probability(pattern: ProbPattern, masses: np.ndarray, first: int, last: int, window: int,
                             core_start: int, core_end: int, cap: int) -> tuple[float | None, int]:
    """Equation (3) over every sequence of ``masses`` (all of its time points, at least the window),
    counting the sequences that hold a match inside ``[first, last]`` starting at or before
    ``core_start`` and ending at or after ``core_end`` (positions in ``masses``); ``(None, n)``
    when the ``n`` sequences are more than ``cap``."""
    support = [np.flatnonzero(masses[i] > 0).astype(np.int8) for i in range(len(masses))]
    n_seq = math.prod(len(x) for x in support)
    if n_seq > cap:
        return None, n_seq
    seqs = np.stack([g.ravel() for g in np.meshgrid(*support, indexing="ij")], axis=1)
    prob = np.ones(len(seqs))
    for i in range(len(masses)):
        prob *= masses[i, seqs[:, i]]
    dfa = np.array(pattern.dfa, dtype=np.int64)
    accepting = np.array(pattern.dfa_accepting, dtype=bool)
    hit = np.zeros(len(seqs), dtype=bool)
    for s in range(first, core_start + 1):
        state = np.zeros(len(seqs), dtype=np.int64)
        for e in range(s, min(last + 1, s + window)):
            state = np.where(state >= 0, dfa[np.maximum(state, 0), seqs[:, e]], -1)
            if e >= core_end:
                hit |= (state >= 0) & accepting[np.maximum(state, 0)]
    return float(prob[hit].sum()), n_seq


def measure_naive(stream: ProbStream, overlap: str, theta: float, window: int, naive: str = "window",
                  cap: int = NAIVE_CAP, budget_s: float = NAIVE_BUDGET_S) -> dict[str, Any]:
    """A naive method (``'window'``: the paper's, ``'span'``) in group order until the CPU budget
    is spent or a group needs more than ``cap`` sequences."""
    pattern = compile_prob(PATTERN)
    matches = find_matches(pattern, stream, window=window, threshold=theta, values=False)
    groups = group_matches(matches, overlap, window)
    longest = int((groups.t_end - groups.t_start).max()) + 1 if len(groups) else 1
    tr = cached_transducer(pattern, min(window, longest))
    ours = group_probabilities(tr, stream, groups.t_start, groups.t_end, groups.core_start, groups.core_end)
    masses = symbol_masses(tr, stream)
    done, covered, worst, stop = 0, 0, 0.0, "finished"
    c0 = time.process_time()
    for i in range(len(groups)):
        a, b = int(groups.t_start[i]), int(groups.t_end[i])
        if naive == "window":
            hi = min(len(stream) - 1, max(b, a + window - 1))
            p, worlds = naive_window_probability(pattern, masses[a:hi + 1], 0, b - a, window,
                                                 int(groups.core_start[i]) - a, int(groups.core_end[i]) - a, cap)
        else:
            p, worlds = naive_group_probability(pattern, masses[a:b + 1], window, int(groups.core_start[i]) - a,
                                                int(groups.core_end[i]) - a, cap)
        if p is None:
            stop = f"out of memory: group {i + 1} needs {worlds:.2e} sequences"
            break
        done += 1
        covered = b + 1
        worst = max(worst, abs(p - float(ours[i])))
        if time.process_time() - c0 > budget_s:
            stop = "budget"
            break
    spent = time.process_time() - c0
    return {"events": len(stream), "overlap": overlap, "theta": theta, "window": window, "naive": naive,
            "groups": len(groups),
            "naive_groups": done, "events_covered": covered, "cpu_s": spent, "stop": stop,
            "events_per_s": covered / spent if spent > 0 and covered else None,
            "max_abs_diff": worst, "agree": worst <= 1e-9}


def run_benchmark(events: int) -> dict[str, Any]:
    stream = synthetic_pstream(events, seed=SEED, noise="paper")
    for mode in MODES:  # build the transducers once (lru-cached), outside the measurements
        measure_proposed(stream, "single", 0.01, 50, mode, repeats=1)
    table2 = [measure_proposed(stream, o, 0.01, w, m) for o in OVERLAPS for w in TABLE2_WINDOWS for m in MODES]
    naive = [measure_naive(stream, o, 0.01, w, n) for o in OVERLAPS for w in TABLE2_WINDOWS for n in NAIVES]
    fig11a = [measure_proposed(stream, o, th, w, m) for o in OVERLAPS for th in (0.0, 0.01) for w in WINDOWS
              for m in MODES]
    fig11b = [measure_proposed(stream, o, th, 50, m) for o in OVERLAPS for th in THETAS for m in MODES]
    top = stream.probs.max(axis=1)
    return {"machine": {"platform": platform.platform(), "python": platform.python_version(),
                        "numpy": np.__version__, "cpus": os.cpu_count(), "load": os.getloadavg()},
            "stream": {"events": events, "seed": SEED, "true_min": float(top.min()), "true_mean": float(top.mean())},
            "table2": table2, "naive": naive, "fig11a": fig11a, "fig11b": fig11b}


def _k(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}"


def markdown_tables(result: dict[str, Any]) -> str:
    """Table 2 (paper beside ours), then Fig. 11 (a) and (b) as tables."""
    prop = {(r["overlap"], r["window"], r["mode"]): r for r in result["table2"]}
    naive = {(r["overlap"], r["window"], r["naive"]): r for r in result["naive"]}
    lines = ["| setting | w = 5 | w = 10 | w = 15 |", "|---|---:|---:|---:|"]
    for o, short in (("complete", "comp"), ("single", "sing")):
        paper_p, paper_n = PAPER_TABLE2[(o, "proposed")], PAPER_TABLE2[(o, "naive")]
        lines.append(f"| ({short}, 0.01, w) + proposed, paper | " + " | ".join(_k(x) for x in paper_p) + " |")
        for m in MODES:
            lines.append(f"| ({short}, 0.01, w) + proposed, ours, {m} transducer | "
                         + " | ".join(_k(prop[(o, w, m)]["events_per_s"]) for w in TABLE2_WINDOWS) + " |")
        lines.append(f"| ({short}, 0.01, w) + naive, paper | "
                     + " | ".join("out of memory" if x is None else _k(x) for x in paper_n) + " |")
        for n in NAIVES:
            cells = []
            for w in TABLE2_WINDOWS:
                r = naive[(o, w, n)]
                if r["stop"].startswith("out of memory"):
                    cells.append(f"out of memory after {r['naive_groups']:,} groups"
                                 + (f" ({_k(r['events_per_s'])} until then)" if r["events_per_s"] else ""))
                else:
                    cells.append(f"{_k(r['events_per_s'])} ({r['naive_groups']:,} of {r['groups']:,} groups)")
            lines.append(f"| ({short}, 0.01, w) + naive, ours, {n} | " + " | ".join(cells) + " |")
    lines += ["", "| overlap | theta | transducer | " + " | ".join(f"w = {w}" for w in WINDOWS) + " |",
              "|---|---:|---|" + "---:|" * len(WINDOWS)]
    a = {(r["overlap"], r["theta"], r["window"], r["mode"]): r for r in result["fig11a"]}
    for o in OVERLAPS:
        for th in (0.0, 0.01):
            for m in MODES:
                lines.append(f"| {o} | {th:g} | {m} | "
                             + " | ".join(_k(a[(o, th, w, m)]["events_per_s"]) for w in WINDOWS) + " |")
    lines += ["", "| overlap | transducer | " + " | ".join(f"theta = {t:g}" for t in THETAS) + " |",
              "|---|---|" + "---:|" * len(THETAS)]
    b = {(r["overlap"], r["theta"], r["mode"]): r for r in result["fig11b"]}
    for o in OVERLAPS:
        for m in MODES:
            lines.append(f"| {o} | {m} | " + " | ".join(_k(b[(o, t, m)]["events_per_s"]) for t in THETAS) + " |")
    lines += ["", "| overlap | theta | w | matches | groups |", "|---|---:|---:|---:|---:|"]
    for r in result["fig11a"]:
        if r["mode"] == "window":
            lines.append(f"| {r['overlap']} | {r['theta']:g} | {r['window']} | {r['matches']:,} | {r['groups']:,} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers here")
    parser.add_argument("--events", type=int, default=EVENTS, help="stream length (the paper: 10,000)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    result = run_benchmark(args.events)
    m = result["machine"]
    print(f"{m['platform']}, Python {m['python']}, numpy {m['numpy']}, {m['cpus']} CPUs; load {m['load'][0]:.2f}; "
          f"{time.perf_counter() - start:.0f} s")
    print(markdown_tables(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=float))
    bad = [r for r in result["naive"] if not r["agree"]]
    if bad:
        print(f"DISAGREEMENT between naive and transducer in {len(bad)} rows", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
