"""Benchmark of the Kleene grouping (``cep/match/plan/plans.py``): left vs right vs late vs the cost model.

On ``cep.datasets.synthetic`` streams (50 Zipf types: ``T00`` is about a quarter of the events, ``T01``
about one in nine, ``T30`` about one in 170) split by key (10^4 events per key at 100 events/s
per key, unless said otherwise), it times ``find_matches`` over every key in one process with
every Kleene closure grouped ``left`` (grown forwards from the event before it), grouped
``right`` (grown backwards from the event after it), combined ``late`` between its neighbours
(``cep/match/plan/late.py``; where late combination does not apply the closure falls back to
``left``, so the column repeats ``left``) and grouped as the cost model chooses, for queries
whose neighbours differ in frequency:

* ``right rare``: a closure between a frequent and a rare event: right grouping should win;
* ``right rare {3}``: the same with three iterations (late combination against the rounds);
* ``rare both {2}``, ``rare both {3}``: a closure between two rare events (``T30; T01{n};
  T31`` in a 2 s window): the case late combination is for;
* ``left rare``: the mirror image of ``right rare``: left grouping should win;
* ``leading``: a closure that starts the pattern (left grouping makes it a unit of its own);
* ``many keys``: ``right rare`` on partitions of 100 events (1 event/s), below
  ``SMALL_PARTITION``: the cost model compares buffer sizes instead of sampling (and counts the
  whole partition for late combination).

The answers must have the same number of matches. The column ``chosen`` counts the groupings
the cost model picked over the partitions' shapes.

Run from the project root::

    python -m benchmarks.bench_kleene_grouping [--events N] [--json PATH]

Example:
    >>> streams = split_by_key(generate_events(SyntheticSpec(n_events=500, n_keys=5, seed=1)))
    >>> len(streams), sum(len(s) for s in streams)
    (5, 500)
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from cep.datasets.synthetic import EventColumns, SyntheticSpec, generate_events
from cep.match import EventStream, compile_query, find_matches
from cep.match.columnar.data import StreamData
from cep.match.run.any_match import AnyMatch

SEED = 20240101
# name -> (pattern, policy, events per key, events per second per key): partitions keep their
# size and density at every stream size (the stream's rate is scaled by the number of keys).
CASES: dict[str, tuple[str, str, int, float]] = {
    "right rare": ("PATTERN T00; T01{2}; T30 WITHIN 500 MILLISECONDS", "skip-till-any-match",
                   10_000, 100.0),
    "right rare {3}": ("PATTERN T00; T01{3}; T30 WITHIN 500 MILLISECONDS", "skip-till-any-match",
                       10_000, 100.0),
    "rare both {2}": ("PATTERN T30; T01{2}; T31 WITHIN 2 SECONDS", "skip-till-any-match",
                      10_000, 100.0),
    "rare both {3}": ("PATTERN T30; T01{3}; T31 WITHIN 2 SECONDS", "skip-till-any-match",
                      10_000, 100.0),
    "left rare": ("PATTERN T30; T01{2}; T00 WITHIN 500 MILLISECONDS", "skip-till-any-match",
                  10_000, 100.0),
    "right rare, rising": ("PATTERN T00; T01+; T30 WHERE T01[i].v0 > T01[i-1].v0 "
                           "WITHIN 500 MILLISECONDS", "skip-till-any-match", 10_000, 100.0),
    "leading": ("PATTERN T01+; T30 WHERE T01[i].v0 > T01[i-1].v0 WITHIN 500 MILLISECONDS",
                "skip-till-any-match", 10_000, 100.0),
    "strict": ("PATTERN T00, T00+, T30", "strict-contiguity", 10_000, 100.0),
    "many keys": ("PATTERN T00; T01{2}; T30 WITHIN 20 SECONDS", "skip-till-any-match", 100, 1.0),
}
PLANS = {"left": "left-deep:left", "right": "left-deep:right", "late": "left-deep:late",
         "chosen": None}


def split_by_key(cols: EventColumns) -> list[EventStream]:
    """One stream per key, each in (ts, id) order (one lexsort, then slices)."""
    order = np.lexsort((cols.id, cols.ts_us, cols.key))
    key = cols.key[order]
    types = np.asarray(cols.types(), dtype=object)[order]
    ids = cols.id[order].astype(np.int64)
    ts = cols.ts_us[order].astype(np.int64)
    attrs = {name: values[order] for name, values in cols.attrs.items()}
    cuts = np.flatnonzero(np.diff(key)) + 1
    starts = np.concatenate(([0], cuts))
    ends = np.concatenate((cuts, [len(key)]))
    return [EventStream(ids[a:b], ts[a:b], types[a:b], {k: v[a:b] for k, v in attrs.items()})
            for a, b in zip(starts, ends)]


def time_plans(streams: list[EventStream], pattern: str, policy: str,
               repeats: int) -> tuple[dict[str, float], set[int]]:
    """Best wall time of ``find_matches`` over every partition for each of :data:`PLANS`, and
    the numbers of matches they found. The plans take turns within each repeat, so a change in
    the machine's load affects them alike."""
    compiled = compile_query(pattern, policy=policy)
    best = {label: float("inf") for label in PLANS}
    counts = set()
    for _ in range(repeats):
        for label, plan in PLANS.items():
            start = time.perf_counter()
            count = sum(len(find_matches(compiled, s, plan=plan)) for s in streams)
            best[label] = min(best[label], time.perf_counter() - start)
            counts.add(count)
    return best, counts


def chosen_groupings(streams: list[EventStream], pattern: str, policy: str) -> dict[str, int]:
    """How often the cost model grouped the closures left, right or late (per shape and
    partition)."""
    compiled = compile_query(pattern, policy=policy)
    counts: Counter[str] = Counter()
    for stream in streams:
        data = StreamData(stream, compiled.normal.window)
        for alt in compiled.alternatives:
            for shape in alt.shapes:
                grouping = AnyMatch(compiled, shape, data).grouping
                counts.update(g for g in grouping if g is not None)
    return dict(sorted(counts.items()))


def run_benchmark(n_events: int, repeats: int) -> dict[str, Any]:
    """Every case at ``n_events`` events."""
    rows = []
    for name, (pattern, policy, per_key, rate) in CASES.items():
        n_keys = max(1, n_events // per_key)
        spec = SyntheticSpec(n_events=n_events, n_keys=n_keys, n_types=50, rate_per_s=rate * n_keys,
                             seed=SEED)
        streams = split_by_key(generate_events(spec))
        row: dict[str, Any] = {"case": name, "pattern": pattern, "policy": policy,
                               "events": n_events, "keys": len(streams)}
        best, counts = time_plans(streams, pattern, policy, repeats)
        for label, seconds in best.items():
            row[f"{label}_seconds"] = seconds
        if len(counts) != 1:
            raise AssertionError(f"{name}: the groupings disagree on the number of matches: {counts}")
        row["matches"] = counts.pop()
        row["chosen"] = chosen_groupings(streams, pattern, policy)
        rows.append(row)
        print(_line(row), flush=True)
    return {"machine": platform.platform(), "python": sys.version.split()[0], "rows": rows}


def _line(row: dict[str, Any]) -> str:
    chosen = ", ".join(f"{k} {v}" for k, v in row["chosen"].items())
    return (f"| {row['case']} | {row['events']:,} | {row['keys']:,} | {row['matches']:,} | "
            f"{row['left_seconds']:.3f} | {row['right_seconds']:.3f} | "
            f"{row['late_seconds']:.3f} | {row['chosen_seconds']:.3f} | {chosen} |")


def markdown_table(result: dict[str, Any]) -> str:
    """The results as a Markdown table (one row per case)."""
    head = ("| case | events | keys | matches | left s | right s | late s | chosen s | "
            "chosen groupings |\n|---|---:|---:|---:|---:|---:|---:|---:|---|")
    return head + "\n" + "\n".join(_line(r) for r in result["rows"])


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the table, optionally write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000, help="events per case")
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers here")
    args = parser.parse_args(argv)
    for name, (pattern, policy, per_key, rate) in CASES.items():
        print(f"- {name}: `{pattern}` ({policy}, ~{per_key:,} events per key, {rate:g}/s per key)")
    result = run_benchmark(args.events, args.repeats)
    print()
    print(markdown_table(result))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
