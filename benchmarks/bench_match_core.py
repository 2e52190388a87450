"""Benchmark of the exact matcher's core (``cep.match``) per partition, against the oracle.

On ``cep.datasets.synthetic.generate_events(SyntheticSpec(n_events=N, n_keys=1000, n_types=50))``
split into one :class:`~cep.match.EventStream` per key (numpy stable sort by key, ts, id),
it times ``find_matches`` over every key in one process (events per second per core), and
``iter_segment_matches`` on all keys laid end to end as one segmented stream (one engine call
for the 1,000 keys, as ``match_seq`` does per Spark partition), for:

* a SEQ of three with a cross-event predicate under each selection policy;
* a Kleene query (rising values, skip-till-next-match);
* a NOT query (skip-till-next-match).

Skip-till-any-match over a ten-minute window has ~30 matches per event at N = 10^6 (29M in
all), so it runs up to 10^6 only. In the same run the brute-force oracle
(``cep.oracles.oracle_matches``) answers the same queries on the small sizes (10^3, 10^4); its
match counts must equal ours, and the ratio is our events/s over the oracle's. 10^7 runs when
``--max-n 10000000`` is given (the default stops at 10^6 to stay within about two minutes).

Run from the project root::

    python -m benchmarks.bench_match_core [--json PATH] [--max-n N]

Example:
    >>> streams = split_by_key(generate_columns(2_000))
    >>> sum(len(s) for s in streams), len(segmented(streams).segment_starts)  # keys seen
    (2000, 865)
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

from cep.datasets.synthetic import EventColumns, SyntheticSpec, generate_events
from cep.match import EventStream, compile_query, find_matches
from cep.match.run.segments import iter_segment_matches
from cep.oracles import oracle_matches

SEED = 20240101
SIZES = (10_000, 100_000, 1_000_000, 10_000_000)
ORACLE_SIZES = (1_000, 10_000)
ANY_MAX_N = 1_000_000
QUERIES: dict[str, tuple[str, str]] = {
    "seq3 next": ("PATTERN T01; T02; T03 WHERE T03.v0 > T01.v0 WITHIN 10 MINUTES",
                  "skip-till-next-match"),
    "seq3 strict": ("PATTERN T01; T02; T03 WHERE T03.v0 > T01.v0 WITHIN 10 MINUTES",
                    "strict-contiguity"),
    "seq3 any": ("PATTERN T01; T02; T03 WHERE T03.v0 > T01.v0 WITHIN 10 MINUTES",
                 "skip-till-any-match"),
    "kleene next": ("PATTERN T01; T02+; T03 WHERE T02[i].v0 > T02[i-1].v0 WITHIN 10 MINUTES",
                    "skip-till-next-match"),
    "not next": ("PATTERN T01; NOT(T04); T02 WHERE T02.v0 > T01.v0 WITHIN 10 MINUTES",
                 "skip-till-next-match"),
}


def generate_columns(n_events: int) -> EventColumns:
    """The benchmarked stream: 1000 keys, 50 Zipf types, the default attributes."""
    return generate_events(SyntheticSpec(n_events=n_events, n_keys=1000, n_types=50, seed=SEED))


def split_by_key(cols: EventColumns) -> list[EventStream]:
    """One stream per key, each sorted by (ts, id) (one stable lexsort, then slices)."""
    order = np.lexsort((cols.id, cols.ts_us, cols.key))
    key = cols.key[order]
    ids = cols.id[order].astype(np.int64)
    ts = cols.ts_us[order].astype(np.int64)
    types = np.asarray(cols.types(), dtype=object)[order]
    attrs = {name: values[order] for name, values in cols.attrs.items()}
    cuts = np.flatnonzero(np.diff(key)) + 1
    bounds = zip(np.concatenate(([0], cuts)), np.concatenate((cuts, [len(key)])))
    return [EventStream(ids[a:b], ts[a:b], types[a:b], {k: v[a:b] for k, v in attrs.items()})
            for a, b in bounds]


def segmented(streams: list[EventStream]) -> EventStream:
    """All partitions laid end to end as one segmented stream."""
    sizes = [len(s) for s in streams]
    attrs = {k: np.concatenate([s.attrs[k] for s in streams]) for k in streams[0].attrs}
    return EventStream(np.concatenate([s.ids for s in streams]),
                       np.concatenate([s.ts for s in streams]),
                       np.concatenate([s.types for s in streams]), attrs,
                       segment_starts=np.cumsum([0] + sizes[:-1]))


def time_segmented(stream: EventStream, pattern: str, policy: str, repeats: int
                   ) -> tuple[float, int]:
    """Best wall time of the segmented matcher over all partitions (chunk by chunk, each
    chunk's matches dropped once counted, as the per-key loop drops each key's)."""
    compiled = compile_query(pattern, policy=policy)
    best = float("inf")
    count = 0
    for _ in range(repeats):
        start = time.perf_counter()
        count = sum(len(chunk.matches) for chunk in iter_segment_matches(compiled, stream))
        best = min(best, time.perf_counter() - start)
    return best, count


def time_ours(streams: list[EventStream], pattern: str, policy: str, repeats: int) -> tuple[float, int]:
    """Best wall time of ``find_matches`` over all partitions, and the number of matches."""
    compiled = compile_query(pattern, policy=policy)
    best = float("inf")
    count = 0
    for _ in range(repeats):
        start = time.perf_counter()
        count = sum(len(find_matches(compiled, s)) for s in streams)
        best = min(best, time.perf_counter() - start)
    return best, count


def time_oracle(streams: list[EventStream], pattern: str, policy: str) -> tuple[float, int]:
    """Wall time of the brute-force oracle over all partitions, and its number of matches."""
    start = time.perf_counter()
    count = sum(len(oracle_matches(pattern, s, policy=policy)) for s in streams)
    return time.perf_counter() - start, count


def run_benchmark(max_n: int) -> dict[str, Any]:
    """Every query on every size up to ``max_n``; the oracle on the small sizes."""
    rows: list[dict[str, Any]] = []
    sizes = sorted(set(s for s in SIZES + ORACLE_SIZES if s <= max_n))
    for n in sizes:
        streams = split_by_key(generate_columns(n))
        joint = segmented(streams)
        for name, (pattern, policy) in QUERIES.items():
            if policy == "skip-till-any-match" and n > ANY_MAX_N:
                continue
            row: dict[str, Any] = {"query": name, "policy": policy, "pattern": pattern, "events": n}
            if n in SIZES:
                repeats = 3 if n <= 100_000 else 1
                seconds, count = time_ours(streams, pattern, policy, repeats)
                row.update(seconds=seconds, matches=count, events_per_s=n / seconds)
                seg_seconds, seg_count = time_segmented(joint, pattern, policy, repeats)
                if seg_count != count:
                    raise AssertionError(f"{name} at N={n}: segmented {seg_count} matches, "
                                         f"per key {count}")
                row.update(segmented_seconds=seg_seconds, segmented_events_per_s=n / seg_seconds)
            if n in ORACLE_SIZES:
                o_seconds, o_count = time_oracle(streams, pattern, policy)
                if "seconds" not in row:
                    seconds, count = time_ours(streams, pattern, policy, 3)
                    row.update(seconds=seconds, matches=count, events_per_s=n / seconds)
                row.update(oracle_seconds=o_seconds, oracle_matches=o_count,
                           oracle_events_per_s=n / o_seconds,
                           ratio=o_seconds / row["seconds"])
                if o_count != row["matches"]:
                    raise AssertionError(f"{name} at N={n}: oracle {o_count} matches, ours {row['matches']}")
            rows.append(row)
            print(_line(row), flush=True)
    return {"machine": platform.platform(), "python": sys.version.split()[0], "rows": rows}


def _line(row: dict[str, Any]) -> str:
    oracle = (f"{row['oracle_events_per_s']:,.0f}" if "oracle_events_per_s" in row else "-")
    ratio = f"{row['ratio']:,.0f}x" if "ratio" in row else "-"
    seg = (f"{row['segmented_seconds']:.3f} | {row['segmented_events_per_s']:,.0f}"
           if "segmented_seconds" in row else "- | -")
    return (f"| {row['query']} | {row['events']:,} | {row['matches']:,} | {row['seconds']:.3f} | "
            f"{row['events_per_s']:,.0f} | {seg} | {oracle} | {ratio} |")


def markdown_table(result: dict[str, Any]) -> str:
    """The results as a Markdown table (one row per query and size)."""
    head = ("| query | events | matches | seconds (per key) | events/s (per key) | "
            "seconds (segmented) | events/s (segmented) | oracle events/s | "
            "per-key speed-up vs oracle |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    return head + "\n" + "\n".join(_line(r) for r in result["rows"])


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the table, optionally write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers here")
    parser.add_argument("--max-n", type=int, default=1_000_000,
                        help="largest stream size (10000000 adds the 10^7 row)")
    args = parser.parse_args(argv)
    for name, (pattern, policy) in QUERIES.items():
        print(f"- {name}: `{pattern}` ({policy})")
    result = run_benchmark(args.max_n)
    print()
    print(markdown_table(result))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
