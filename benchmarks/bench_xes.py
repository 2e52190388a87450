"""Benchmark of XES flattening (``cep.datasets.xes.read_xes``) on the real BPI logs.

Compares, in the same process on the same files, the streaming flattener against the obvious
baseline an engineer would write first: ``ElementTree.parse`` of the whole document, then a
walk over traces and events building one dict per event. Reports events per second, the
ratio, and the peak traced memory of each (tracemalloc), since the baseline holds the whole
tree in memory.

Run from the project root (after ``make data``)::

    python -m benchmarks.bench_xes [--json PATH]

Example:
    >>> import io
    >>> row = measure(io.BytesIO(b"<log><trace><event/></trace></log>"), "tiny")  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import time
import tracemalloc
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from cep.datasets.xes import read_xes
from delta_tables.settings import load_settings

LOGS = ("bpi2017_offers", "bpi2012", "bpi2017_applications")


def naive_flatten(data: bytes) -> list[dict[str, Any]]:
    """Baseline: whole-tree parse, one dict per event with its trace's attributes merged in."""
    root = ElementTree.parse(io.BytesIO(data)).getroot()
    rows: list[dict[str, Any]] = []
    for trace in root.iterfind(".//{*}trace"):  # {*}: the 2012 log declares the XES namespace
        case = {f"case_{c.get('key')}": c.get("value") for c in trace
                if not c.tag.endswith("event")}
        for event in trace.iterfind("{*}event"):
            row = dict(case)
            row.update({a.get("key"): a.get("value") for a in event})
            rows.append(row)
    return rows


def _timed(fn: Any, *args: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - start


def _peak_mib(fn: Any, *args: Any) -> float:
    # A separate run: tracemalloc slows allocation-heavy code too much to time it alongside.
    tracemalloc.start()
    fn(*args)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return peak


def measure(name: str) -> dict[str, Any]:
    """One row of the table: both flatteners on the decompressed log ``name``."""
    settings = load_settings()
    from jobs.loaders.datasets import extract_log  # jobs: the benchmark may use every layer

    data = gzip.decompress(extract_log(settings, name, quiet=True).read_bytes())
    ours, t_ours = _timed(read_xes, io.BytesIO(data))
    base, t_base = _timed(naive_flatten, data)
    m_ours = _peak_mib(read_xes, io.BytesIO(data))
    m_base = _peak_mib(naive_flatten, data)
    assert ours.n_events == len(base), (ours.n_events, len(base))
    return {"log": name, "events": ours.n_events, "ours_events_per_s": ours.n_events / t_ours,
            "baseline_events_per_s": len(base) / t_base, "speedup": t_base / t_ours,
            "ours_peak_mib": m_ours, "baseline_peak_mib": m_base}


def main() -> None:
    """Print the Markdown table; ``--json PATH`` also writes the numbers."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = [measure(name) for name in LOGS]
    print("| log | events | ours (events/s) | baseline (events/s) | speed ratio | "
          "ours peak MiB | baseline peak MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['log']} | {r['events']:,} | {r['ours_events_per_s']:,.0f} | "
              f"{r['baseline_events_per_s']:,.0f} | {r['speedup']:.2f}x | "
              f"{r['ours_peak_mib']:,.0f} | {r['baseline_peak_mib']:,.0f} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
