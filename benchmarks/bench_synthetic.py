"""Benchmark of the synthetic event generator, to show it can feed benchmarks of 10^4..10^7 events.

Measures events per second of ``cep.datasets.synthetic.generate_events`` at 10^4, 10^5 and 10^6 events
and of ``generate_batches`` (batches of 10^6) at 10^7 events, and compares them, in the same
process and with the same parameters, against a naive baseline: a plain Python loop over events
with the ``random`` module that builds the same columns as Python lists (run up to 10^5 events
only; it is slow). Peak RSS after each step shows that streaming 10^7 events does not hold the
stream in memory.

Run from the project root::

    python -m benchmarks.bench_synthetic [--json PATH]

Example:
    >>> row = measure_ours(10_000, repeats=1)
    >>> row["events"], row["events_per_s"] > 0
    (10000, True)
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import os
import platform
import random
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from cep.datasets.synthetic import SyntheticSpec, generate_batches, generate_events

SIZES = (10_000, 100_000, 1_000_000, 10_000_000)
STREAM_FROM = 10_000_000  # sizes from here on go through generate_batches
STREAM_BATCH = 1_000_000
BASELINE_MAX = 100_000
# Repeats per size: enough to steady the small sizes, few enough to stay well under 2 minutes.
OURS_REPEATS = {10_000: 25, 100_000: 9, 1_000_000: 5, 10_000_000: 1}
BASELINE_REPEATS = {10_000: 5, 100_000: 3}
SEED = 20240101


def _spec(n_events: int) -> SyntheticSpec:
    """The benchmarked spec: the defaults (1000 keys, 50 Zipf types, 2 attributes)."""
    return SyntheticSpec(n_events=n_events, seed=SEED)


def _peak_rss_mib() -> float:
    """Peak resident set size of this process so far (ru_maxrss is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def _bytes_per_event(spec: SyntheticSpec) -> int:
    """Bytes a materialised stream holds per event (id, key, ts int64; type int32; attrs f64)."""
    return 8 + 8 + 4 + 8 + 8 * spec.n_attrs


def baseline_generate(spec: SyntheticSpec) -> dict[str, list[float] | list[int] | list[str]]:
    """The same kinds of columns as generate_events, one event at a time with ``random``.

    This is how one would write the generator without numpy; it stops at Python lists, which
    favours the baseline (no conversion to arrays is timed).

    Args:
        spec: Parameters; the same laws as ``cep.datasets.synthetic`` (not the same values).

    Returns:
        Columns by name: id, key, type_code, type, ts_us, v0, v1, ...

    Example:
        >>> cols = baseline_generate(SyntheticSpec(n_events=5, seed=1))
        >>> cols["id"], len(cols["ts_us"]), sorted(cols)[:3]
        ([0, 1, 2, 3, 4], 5, ['id', 'key', 'ts_us'])
    """
    rnd = random.Random(spec.seed)
    weights = [1.0 / (rank + 1) ** spec.zipf_s for rank in range(spec.n_types)]
    total = sum(weights)
    cdf: list[float] = []
    running = 0.0
    for weight in weights:
        running += weight / total
        cdf.append(running)
    width = len(str(spec.n_types - 1))
    names = [f"T{rank:0{width}d}" for rank in range(spec.n_types)]
    last_type = spec.n_types - 1
    mean_gap_us = 1e6 / spec.rate_per_s
    resolution = spec.ts_resolution_us

    ids: list[int] = []
    keys: list[int] = []
    codes: list[int] = []
    types: list[str] = []
    stamps: list[int] = []
    attrs: list[list[float]] = [[] for _ in range(spec.n_attrs)]
    elapsed = 0.0
    for i in range(spec.n_events):
        elapsed += rnd.expovariate(1.0) * mean_gap_us
        code = min(bisect.bisect_right(cdf, rnd.random()), last_type)
        ids.append(i)
        keys.append(rnd.randrange(spec.n_keys))
        codes.append(code)
        types.append(names[code])
        stamps.append(spec.start_us + int(elapsed // resolution) * resolution)
        for index, column in enumerate(attrs):
            if index == 0:
                column.append(round(rnd.gauss(100.0, 15.0), 2))
            elif index == 1:
                column.append(float(rnd.randrange(1000)))
            else:
                column.append(math.floor(rnd.random() * 1e4) / 1e4)
    columns: dict[str, list[float] | list[int] | list[str]] = {
        "id": ids,
        "key": keys,
        "type_code": codes,
        "type": types,
        "ts_us": stamps,
    }
    columns.update({f"v{index}": column for index, column in enumerate(attrs)})
    return columns


def _median_seconds(run: object, repeats: int) -> float:
    """Median wall time of ``run()`` over ``repeats`` calls (median: robust to one slow call)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure_ours(n_events: int, repeats: int) -> dict[str, object]:
    """Events/s of the numpy generator at one size (streamed in batches from STREAM_FROM on)."""
    spec = _spec(n_events)
    if n_events >= STREAM_FROM:
        mode = f"generate_batches (batch {STREAM_BATCH:,})"

        def run() -> None:
            seen = 0
            for batch in generate_batches(spec, STREAM_BATCH):
                seen += len(batch)
            assert seen == n_events

    else:
        mode = "generate_events"

        def run() -> None:
            cols = generate_events(spec)
            # Touch the type names too: a consumer wanting strings pays for them in the baseline.
            cols.types()

    seconds = _median_seconds(run, repeats)
    return {
        "events": n_events,
        "mode": mode,
        "seconds": seconds,
        "events_per_s": n_events / seconds,
        "peak_rss_mib": _peak_rss_mib(),
        "materialised_mib": n_events * _bytes_per_event(spec) / 2**20,
    }


def measure_baseline(n_events: int, repeats: int) -> dict[str, object]:
    """Events/s of the per-event Python loop at one size."""
    spec = _spec(n_events)
    seconds = _median_seconds(lambda: baseline_generate(spec), repeats)
    return {"events": n_events, "seconds": seconds, "events_per_s": n_events / seconds}


def _check_same_shape(n_events: int) -> None:
    """Both generators produce the same columns and laws, so the comparison is like for like."""
    spec = _spec(n_events)
    ours = generate_events(spec)
    theirs = baseline_generate(spec)
    assert len(ours) == len(theirs["id"]) == n_events
    assert set(ours.attrs) < set(theirs)
    their_ts = np.asarray(theirs["ts_us"])
    assert np.all(np.diff(their_ts) >= 0) and np.all(np.diff(ours.ts_us) >= 0)
    # Same Zipf law: the share of type 0 agrees to within sampling noise.
    share_ours = float(np.mean(ours.type_code == 0))
    share_theirs = float(np.mean(np.asarray(theirs["type_code"]) == 0))
    assert abs(share_ours - share_theirs) < 0.02, (share_ours, share_theirs)


def run_benchmark() -> dict[str, object]:
    """All measurements, smallest size first (so peak RSS grows only where memory is needed)."""
    generate_events(_spec(1000))  # warm caches and lazy imports outside the timings
    _check_same_shape(20_000)
    rows = []
    for n_events in SIZES:
        row = measure_ours(n_events, OURS_REPEATS[n_events])
        if n_events <= BASELINE_MAX:
            base = measure_baseline(n_events, BASELINE_REPEATS[n_events])
            row["baseline_events_per_s"] = base["events_per_s"]
            row["ratio"] = row["events_per_s"] / base["events_per_s"]  # type: ignore[operator]
        else:
            row["baseline_events_per_s"] = None
            row["ratio"] = None
        rows.append(row)
    return {
        "benchmark": "cep.datasets.synthetic generator vs per-event Python loop (random module)",
        "spec": {
            "n_keys": 1000,
            "n_types": 50,
            "zipf_s": 1.1,
            "n_attrs": 2,
            "rate_per_s": 1000.0,
            "ts_resolution_us": 1000,
            "seed": SEED,
        },
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "rows": rows,
    }


def _fmt_rate(value: object) -> str:
    return "-" if value is None else f"{value:,.0f}"


def markdown_table(result: dict[str, object]) -> str:
    """The rows as a Markdown table, for BENCHMARKS.md."""
    lines = [
        "| events | mode | ours (events/s) | baseline (events/s) | ratio | peak RSS (MiB) "
        "| stream if materialised (MiB) |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for row in result["rows"]:  # type: ignore[attr-defined]
        ratio = "-" if row["ratio"] is None else f"{row['ratio']:.0f}x"
        lines.append(
            f"| {row['events']:,} | {row['mode']} | {_fmt_rate(row['events_per_s'])} "
            f"| {_fmt_rate(row['baseline_events_per_s'])} | {ratio} "
            f"| {row['peak_rss_mib']:.0f} | {row['materialised_mib']:.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line: print the table, optionally write the numbers as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers here")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    result = run_benchmark()
    result["total_seconds"] = time.perf_counter() - started
    print(markdown_table(result))
    print(
        f"\nPython {result['python']}, numpy {result['numpy']}, {result['cpus']} CPUs; "
        f"median of repeated runs; baseline only up to {BASELINE_MAX:,} events; "
        f"peak RSS is the process maximum so far; total {result['total_seconds']:.1f} s."
    )
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
