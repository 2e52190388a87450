"""Benchmark of ``predict_match`` with many subscriptions (``cep.predict.many``): events per CPU-second.

P-ToPSS (Muthusamy, Liu and Jacobsen, DEBS 2010) matches and predicts for many subscriptions
at once. On the synthetic workload at the paper's defaults as we reconstruct them
(:mod:`cep.datasets.predict_workload`: subscriptions of length 10 over a pool of 50 values, 2 ``;``
links, uniform events; seeded), with ``N = 10, 100, 1000, 10000`` subscriptions, one process
measures in CPU seconds (single-threaded numpy, so per core; the machine is shared):

1. **compile**: parsing the ``N`` texts (:func:`cep.predict.many.compile_many`), the common
   symbols of the events (:func:`cep.predict.many.alphabet`) and the flat table;
2. **states** without and with merging equivalent states (:mod:`cep.predict.merge`), the
   commonality and the merge's CPU time, for the uniform and the Gaussian (sigma 5) workloads;
3. **match**: every subscription's state after every event and its match count
   (:func:`cep.predict.many.run_many` without pair counts); **match + predict**: the same and,
   after every event, ``beta(5)`` of every subscription's state (a gather into a float block per
   chunk) and how many are at least 0.5; **train**: matching with pair counts, then the
   unmerged and the pooled chains and their first passage up to ``n = 10`` (separately timed);
   target: at least 100,000 events/s per core for match + predict at 1000 subscriptions;
4. **baseline**: the plain per-subscription Python loop, :func:`cep.predict.run.run_leaf` for
   each subscription in turn over the same symbols (it matches and counts, like *train*). Its
   cost is linear in the subscriptions, so it runs the first ``BASELINE_SUBS`` (100)
   subscriptions over the first ``BASELINE_EVENTS`` (20,000) events, and its events/s for
   ``N`` subscriptions is scaled by ``100 / N``; its match counts must equal ours on those
   events and subscriptions (exit code 1 otherwise).

Run from the project root::

    python -m benchmarks.bench_predict [--json PATH] [--events N] [--max-subscriptions N]

Example:
    >>> row = measure(10, 2_000, repeats=1)
    >>> row["subscriptions"], row["events"], row["agree"]
    (10, 2000, True)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from cep.predict.many import alphabet, beta_table, compile_many, walk
from cep.predict.merge import flat_table, merge_tables
from cep.predict.run import run_leaf
from cep.datasets.predict_workload import synthetic_workload

SEED = 20261121
SIZES = (10, 100, 1000, 10_000)
EVENTS = 100_000
BASELINE_SUBS = 100
BASELINE_EVENTS = 20_000
LOOKAHEAD = 5
THETA = 0.5
TARGET = 100_000


def _best(fn: Callable[[], Any], repeats: int) -> tuple[Any, float]:
    best = float("inf")
    value = None
    for _ in range(repeats):
        c0 = time.process_time()
        value = fn()
        best = min(best, time.process_time() - c0)
    return value, best


def measure(n_subs: int, n_events: int, repeats: int = 2) -> dict[str, Any]:
    """One row: all stages at ``n_subs`` subscriptions over ``n_events`` uniform events."""
    w = synthetic_workload(n_subs, n_events, seed=SEED)
    c0 = time.process_time()
    work = compile_many(w.subscriptions)
    c1 = time.process_time()
    alph = alphabet(work, w.events)
    c2 = time.process_time()
    flat = flat_table(work.machines, alph.sigs)
    c3 = time.process_time()
    starts = np.zeros(1, dtype=np.int64)
    init = flat.starts[None, :]
    report, merge_s = _best(lambda: merge_tables(flat), 1)

    def match() -> np.ndarray:
        hits = np.zeros(n_subs, dtype=np.int64)

        def add(_: int, states: np.ndarray) -> None:
            hits[:] += flat.accepting[states].sum(axis=0)

        walk(flat.next, alph.symbol, starts, init, count=False, on_chunk=add)
        return hits

    hits, match_s = _best(match, repeats)
    (end, pairs), train_s = _best(lambda: walk(flat.next, alph.symbol, starts, init, count=True), repeats)
    freq = np.bincount(alph.symbol, minlength=flat.n_symbols)
    (_, beta), chain_s = _best(lambda: beta_table(flat, pairs, freq, 10), 1)
    _, pooled_s = _best(lambda: beta_table(flat, pairs, freq, 10, merged=report), 1)
    beta_n = beta[LOOKAHEAD].astype(np.float64)

    def match_predict() -> int:
        alarms = [0]
        hits2 = np.zeros(n_subs, dtype=np.int64)

        def answer(_: int, states: np.ndarray) -> None:
            hits2[:] += flat.accepting[states].sum(axis=0)
            prob = beta_n[states]                      # every subscription, every event
            alarms[0] += int(np.count_nonzero(prob >= THETA))

        walk(flat.next, alph.symbol, starts, init, count=False, on_chunk=answer)
        return alarms[0]

    alarms, predict_s = _best(match_predict, repeats)
    # Baseline: one subscription at a time, Python loop per event. Its cost is linear in the
    # subscriptions, so it runs the first BASELINE_SUBS of them over BASELINE_EVENTS events and
    # its events/s for N subscriptions is scaled by BASELINE_SUBS / N.
    k = min(n_subs, BASELINE_SUBS)
    base_n = min(n_events, BASELINE_EVENTS)
    local_symbols = [flat.local[j][alph.symbol[:base_n]] for j in range(k)]
    ts = np.arange(base_n, dtype=np.int64)

    def baseline() -> np.ndarray:
        out = np.zeros(k, dtype=np.int64)
        for j in range(k):
            machine, sub = work.machines[j], work.subscriptions[j]
            r = run_leaf(machine, sub.leaves[0], local_symbols[j], flat.local_sigs[j], ts, starts)
            out[j] = int(r.accepted.sum())
        return out

    base_hits, base_s = _best(baseline, 1)

    def prefix_hits() -> np.ndarray:
        hits3 = np.zeros(n_subs, dtype=np.int64)

        def add(_: int, states: np.ndarray) -> None:
            hits3[:] += flat.accepting[states].sum(axis=0)

        walk(flat.next, alph.symbol[:base_n], starts, init, count=False, on_chunk=add)
        return hits3[:k]

    ours_prefix = prefix_hits()
    gauss = synthetic_workload(n_subs, min(n_events, 20_000), distribution="gaussian", seed=SEED)
    gwork = compile_many(gauss.subscriptions)
    greport = merge_tables(flat_table(gwork.machines, alphabet(gwork, gauss.events).sigs))
    return {"subscriptions": n_subs, "events": n_events, "primitives": len(work.primitives),
            "symbols": flat.n_symbols, "compile_s": c1 - c0, "alphabet_s": c2 - c1, "table_s": c3 - c2,
            "states_unmerged": report.unmerged, "states_merged": report.merged,
            "commonality": report.commonality, "merge_rounds": report.rounds, "merge_s": merge_s,
            "gauss_states_unmerged": greport.unmerged, "gauss_states_merged": greport.merged,
            "gauss_commonality": greport.commonality,
            "matches": int(hits.sum()), "match_s": match_s, "match_eps": n_events / match_s,
            "predict_s": predict_s, "predict_eps": n_events / predict_s, "alarms": alarms,
            "train_s": train_s, "train_eps": n_events / train_s, "chains_s": chain_s, "pooled_chains_s": pooled_s,
            "baseline_subscriptions": k, "baseline_events": base_n, "baseline_s": base_s,
            "baseline_eps": base_n / base_s * k / n_subs,
            "agree": bool(np.array_equal(base_hits, ours_prefix)),
            "target_met": n_events / predict_s >= TARGET}


def run_benchmark(n_events: int, max_subs: int) -> dict[str, Any]:
    rows = [measure(n, n_events) for n in SIZES if n <= max_subs]
    return {"machine": {"platform": platform.platform(), "python": platform.python_version(),
                        "numpy": np.__version__, "cpus": os.cpu_count(), "load": os.getloadavg()},
            "rows": rows}


def _k(x: float) -> str:
    return f"{x / 1e6:.2f} M" if x >= 1e6 else f"{x / 1e3:.1f} k"


def markdown_tables(result: dict[str, Any]) -> str:
    lines = ["| N subs | events | match events/CPU-s | match + predict events/CPU-s | >= 100k | train (match + counts) "
             "events/CPU-s | per-subscription loop events/CPU-s | match + predict / loop | train / loop |",
             "|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
    for r in result["rows"]:
        lines.append(f"| {r['subscriptions']:,} | {r['events']:,} | {_k(r['match_eps'])} | {_k(r['predict_eps'])} | "
                     f"{'yes' if r['target_met'] else 'no'} | {_k(r['train_eps'])} | {_k(r['baseline_eps'])} | "
                     f"{r['predict_eps'] / r['baseline_eps']:,.1f}x | {r['train_eps'] / r['baseline_eps']:,.1f}x |")
    lines += ["", "| N subs | primitives | symbols | states unmerged | states merged | commonality | rounds | "
              "merge CPU s | Gaussian: unmerged | merged | commonality |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["rows"]:
        lines.append(f"| {r['subscriptions']:,} | {r['primitives']} | {r['symbols']} | {r['states_unmerged']:,} | "
                     f"{r['states_merged']:,} | {r['commonality']:.4f} | {r['merge_rounds']} | {r['merge_s']:.3f} | "
                     f"{r['gauss_states_unmerged']:,} | {r['gauss_states_merged']:,} | {r['gauss_commonality']:.4f} |")
    lines += ["", "| N subs | compile (parse) CPU s | symbols CPU s | flat table CPU s | match CPU s | match + predict "
              "CPU s | train: walk with counts CPU s | unmerged chains + first passage (n <= 10) CPU s | pooled "
              "chains CPU s | loop subscriptions x events | loop CPU s | matches agree |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in result["rows"]:
        lines.append(f"| {r['subscriptions']:,} | {r['compile_s']:.2f} | {r['alphabet_s']:.3f} | {r['table_s']:.2f} | "
                     f"{r['match_s']:.2f} | {r['predict_s']:.2f} | {r['train_s']:.2f} | {r['chains_s']:.3f} | "
                     f"{r['pooled_chains_s']:.3f} | {r['baseline_subscriptions']} x {r['baseline_events']:,} | "
                     f"{r['baseline_s']:.2f} | "
                     f"{'yes' if r['agree'] else 'NO'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers here")
    parser.add_argument("--events", type=int, default=EVENTS, help="events in the stream")
    parser.add_argument("--max-subscriptions", type=int, default=max(SIZES), help="largest N")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    result = run_benchmark(args.events, args.max_subscriptions)
    m = result["machine"]
    print(f"{m['platform']}, Python {m['python']}, numpy {m['numpy']}, {m['cpus']} CPUs; load {m['load'][0]:.2f}; "
          f"{time.perf_counter() - start:.0f} s")
    print(markdown_tables(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=float))
    if not all(r["agree"] for r in result["rows"]):
        print("DISAGREEMENT between the per-subscription loop and run_many", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
