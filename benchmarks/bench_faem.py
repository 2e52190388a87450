"""FAEM's evaluation (Behravesh et al., seed 001, Figs. 7-11) on our engine, same workload shape.

The paper runs 1,000,000 Yahoo! Music ratings (KDD Cup 2011), one event per rating, typed by
track, and queries the four most frequent tracks (Table 1: 1,661 / 1,350 / 1,325 / 1,268
events per million). That file is not available here. The workload below keeps its shape: one
stream of N events, where the four classes T1..T4 occur at Table 1's rates in random positions
and every other event is of a class no query names; each event has a value ``v`` uniform in
[0, 1) for the selectivity predicates (Fig. 9). Windows are counted in events
(``WITHIN n EVENTS``), as the paper's "5000 unit" windows over a file read at full speed.

Every query runs under FAEM's own semantics, ``skip-till-any-match-grouped``
(docs/semantics.md): one composite per set of single events, each closure holding its whole
group. It runs under each join tree the paper compares: Left ``((1;2);3);4``, Right
``1;(2;(3;4))``, Bushy ``(1;2);(3;4)`` and Inner ``1;((2;3);4)``, our ``left-deep``,
``right-deep``, ``bushy`` and ``inner`` plans, all forced. Per run it reports throughput
(events/s: N over the matching time, input already in memory as in the paper), Python's peak
traced memory during matching (tracemalloc, which sees numpy's buffers; measured in a second,
untimed run because tracing slows allocation), and the number of composites.

* Fig. 7: ``T1;T2;T3;T4+``, ``T1+;T2;T3;T4``, ``T1;T2;T3;T4`` within 5,000 events.
* Fig. 8: ``T4;T3;T2;T1+``, ``T4+;T3;T2;T1``, ``T1+;T2;T3;T4``, ``T1;T2;T3`` within 5,000.
* Fig. 9: ``T1;T2;T3;T4+`` with ``T2.v < s`` (selectivity s of the predicate between the first
  two classes) for s in 0.1, 0.5, 1.0.
* Fig. 10: window 2,500 / 5,000 / 10,000 for ``T1;T2;T3;T4+`` against ``T1;T2;T3;T4``, Left
  and Right plans.
* Fig. 11: the closure (``{3}``, ``+``, ``*``) at positions 1 to 4 of ``T1;T2;T3;T4`` within
  10,000 events, Right plan.
* ``--switch``: plan switching (``cep/match/columnar/spans.py``) on a stream whose mix changes halfway
  (T1 ten times its rate in the first half, T4 in the second), the cost model's choice per
  span of 65,536 start positions against one choice from the partition's first events.

Run from the project root (pure Python, one core)::

    python -m benchmarks.bench_faem [--events 1000000] [--figures 7 8 9 10 11]

Example:
    >>> s = workload(20_000, seed=1)
    >>> sorted(set(s.types.tolist()))
    ['T1', 'T2', 'T3', 'T4', 'x']
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from typing import Any

import numpy as np

from cep.match import EventStream, MatchLimitError, compile_query, find_matches

POPULATION = {"T1": 1661, "T2": 1350, "T3": 1325, "T4": 1268}
"""Table 1: events per 1,000,000 ratings of tracks 147073, 56437, 189820 and 531386."""
PLANS = {"Left": "left-deep", "Right": "right-deep", "Bushy": "bushy", "Inner": "inner"}
GROUPED = "skip-till-any-match-grouped"
SEED = 2014


def workload(n: int, seed: int = SEED) -> EventStream:
    """``n`` events; T1..T4 at Table 1's rates (scaled to ``n``), the rest of class ``x``."""
    rng = np.random.default_rng(seed)
    types = np.full(n, "x", dtype=object)
    free = rng.permutation(n)
    at = 0
    for name, per_million in POPULATION.items():
        k = round(per_million * n / 1_000_000)
        types[free[at:at + k]] = name
        at += k
    return EventStream.from_columns(ids=np.arange(n), ts=np.arange(n), types=types.tolist(),
                                    attrs={"v": rng.random(n).tolist()})


def drifting(n: int, seed: int = SEED) -> EventStream:
    """Table 1's mix, but T1 ten times as frequent in the first half and T4 in the second."""
    rng = np.random.default_rng(seed)
    half = n // 2
    parts = []
    for boosted in ("T1", "T4"):
        rates = {t: p * (10 if t == boosted else 1) / 1_000_000 for t, p in POPULATION.items()}
        names = list(rates) + ["x"]
        parts.append(rng.choice(names, half, p=list(rates.values()) + [1 - sum(rates.values())]))
    types = np.concatenate(parts)
    return EventStream.from_columns(ids=np.arange(len(types)), ts=np.arange(len(types)),
                                    types=types.tolist(),
                                    attrs={"v": rng.random(len(types)).tolist()})


def measure(stream: EventStream, text: str, plan: str | None,
            switch_every: int | None = None) -> dict[str, Any]:
    """One run: throughput, peak traced memory and composites of ``text`` under ``plan``."""
    compiled = compile_query(text, policy=GROUPED)
    started = time.perf_counter()
    try:
        found = find_matches(compiled, stream, plan=plan, switch_every=switch_every)
    except MatchLimitError as err:  # kleene num: C(group, 3) composites per set of events
        return {"query": text, "plan": plan, "seconds": float("nan"), "events_per_s": 0.0,
                "peak_mib": float("nan"), "composites": str(err).split(";")[0]}
    seconds = time.perf_counter() - started
    # A second run for memory: tracemalloc slows allocation-heavy Python 3-4x, so it never
    # runs during the timed one.
    tracemalloc.start()
    find_matches(compiled, stream, plan=plan, switch_every=switch_every)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"query": text, "plan": plan, "seconds": seconds,
            "events_per_s": len(stream) / seconds, "peak_mib": peak / 2 ** 20,
            "composites": len(found)}


def _seq(parts: list[str], window: int, where: str = "") -> str:
    return f"PATTERN {'; '.join(parts)}{' WHERE ' + where if where else ''} WITHIN {window} EVENTS"


def figures(which: list[int], fig11_window: int = 10000
            ) -> list[tuple[str, str, str, list[str]]]:
    """``(figure, label, query, plan names)`` of every run asked for."""
    runs: list[tuple[str, str, str, list[str]]] = []
    every = list(PLANS)
    if 7 in which:
        for label, parts in [("kleene last", ["T1", "T2", "T3", "T4+"]),
                             ("kleene first", ["T1+", "T2", "T3", "T4"]),
                             ("no kleene", ["T1", "T2", "T3", "T4"])]:
            runs.append(("7", label, _seq(parts, 5000), every))
    if 8 in which:
        for label, parts in [("T4;T3;T2;T1+", ["T4", "T3", "T2", "T1+"]),
                             ("T4+;T3;T2;T1", ["T4+", "T3", "T2", "T1"]),
                             ("T1+;T2;T3;T4", ["T1+", "T2", "T3", "T4"]),
                             ("T1;T2;T3", ["T1", "T2", "T3"])]:
            runs.append(("8", label, _seq(parts, 5000), every))
    if 9 in which:
        for s in (0.1, 0.5, 1.0):
            runs.append(("9", f"T2.v < {s}", _seq(["T1", "T2", "T3", "T4+"], 5000,
                                                  f"T2.v < {s}"), every))
    if 10 in which:
        for window in (2500, 5000, 10000):
            for label, parts in [("kleene", ["T1", "T2", "T3", "T4+"]),
                                 ("no kleene", ["T1", "T2", "T3", "T4"])]:
                runs.append(("10", f"{label}, window {window}", _seq(parts, window),
                             ["Left", "Right"]))
    if 11 in which:
        for kind, suffix in [("num 3", "{3}"), ("plus", "+"), ("star", "*")]:
            for position in range(4):
                parts = [f"T{k + 1}" + (suffix if k == position else "") for k in range(4)]
                runs.append(("11", f"{kind} at {position + 1}", _seq(parts, fig11_window),
                             ["Right"]))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--figures", type=int, nargs="+", default=[7, 8, 9, 10, 11])
    parser.add_argument("--switch", action="store_true", help="the plan-switching run only")
    parser.add_argument("--fig11-window", type=int, default=10000)
    args = parser.parse_args()
    if args.switch:
        switching(args.events)
        return
    stream = workload(args.events)
    print(f"{args.events:,} events; T1..T4: "
          + ", ".join(f"{int((stream.types == t).sum()):,}" for t in POPULATION))
    print("| fig | query | plan | events/s | peak MiB | composites |")
    print("|---|---|---|---:|---:|---:|")
    for fig, label, text, plans in figures(args.figures, args.fig11_window):
        for name in plans:
            row = measure(stream, text, PLANS[name])
            count = row["composites"]
            print(f"| {fig} | {label} | {name} | {row['events_per_s']:,.0f} | "
                  f"{row['peak_mib']:.1f} | {count if isinstance(count, str) else f'{count:,}'} |",
                  flush=True)


def switching(n: int) -> None:
    """Plan switching against one plan per partition, on :func:`drifting` (3 runs each)."""
    from cep.match import explain
    from cep.match.columnar.spans import SWITCH_EVENTS

    stream = drifting(n)
    for text in ("PATTERN T1; T2; T3; T4+ WITHIN 5000 EVENTS",
                 "PATTERN T1; T2; T3; T4 WITHIN 5000 EVENTS"):
        compiled = compile_query(text, policy=GROUPED)
        plans = [x.strip() for x in explain(compiled, stream).splitlines()
                 if "plan switching" in x or "chosen plan" in x]
        print(text, *plans, sep="\n  ")
        for label, every in (("one plan", None), ("switching", SWITCH_EVENTS)) * 3:
            row = measure(stream, text, None, every)
            print(f"| {label} | {row['seconds']:.2f} s | {row['peak_mib']:.1f} MiB | "
                  f"{row['composites']:,} |", flush=True)


if __name__ == "__main__":
    main()
