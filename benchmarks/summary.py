"""The headline table of BENCHMARKS.md, written from the benchmarks' recorded results.

A benchmark run with ``--record`` writes ``benchmarks/results/<benchmark>.json``
(:func:`record`): when and where it ran (date, commit, machine, the command line), its rows,
and its headline entries, each one question against the baseline an analyst would pick:
``{"function", "question", "shape", "ours_s", "baseline", "baseline_s"}``. ``make
bench-summary`` (``python -m benchmarks.summary``) rewrites the block of BENCHMARKS.md
between the two ``headline`` markers from every recorded file, so the first table a reader
sees is today's figure for each function and job, with the run that produced it;
``tests/test_benchmarks_summary.py`` fails when the block and the files disagree.

Example:
    >>> entry = {"function": "match_seq", "question": "T1; T2; T3, skip-till-next",
    ...          "shape": "10^6 events", "ours_s": 2.0, "baseline": "hand-written Spark SQL",
    ...          "baseline_s": 5.0}
    >>> run = {"benchmark": "bench_match_sql", "date": "2026-11-27", "commit": "abc1234",
    ...        "machine": "2 cores", "command": "python -m benchmarks.bench_match_sql",
    ...        "headline": [entry]}
    >>> print(headline_table([run]).splitlines()[2])
    | match_seq | T1; T2; T3, skip-till-next | 10^6 events | 2.00 s | hand-written Spark SQL: 5.00 s | 2.50x | 2026-11-27, abc1234, `bench_match_sql` |
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
BENCHMARKS_MD = ROOT / "BENCHMARKS.md"
START = "<!-- headline:start (written by `make bench-summary`; do not edit by hand) -->"
END = "<!-- headline:end -->"
COLUMNS = ("function or job", "question", "data", "ours", "baseline", "baseline / ours", "run")


def record(benchmark: str, rows: list[dict[str, Any]], headline: list[dict[str, Any]],
           folder: Path = RESULTS) -> Path:
    """Write ``folder/<benchmark>.json``: the run's date, commit, machine and command line,
    its rows and its headline entries (see the module docstring)."""
    run = {"benchmark": benchmark, "date": datetime.date.today().isoformat(),
           "commit": _commit(), "machine": _machine(),
           "command": " ".join(["python -m", f"benchmarks.{benchmark}", *sys.argv[1:]]),
           "headline": headline, "rows": rows}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{benchmark}.json"
    path.write_text(json.dumps(run, indent=1, default=str) + "\n")
    return path


def _commit() -> str:
    # "+" marks a run of a working tree with uncommitted changes.
    found = subprocess.run(["git", "describe", "--always", "--dirty=+"], cwd=ROOT,
                           capture_output=True, text=True)
    return found.stdout.strip() or "unknown"


def _machine() -> str:
    return f"{os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def headline_table(runs: list[dict[str, Any]]) -> str:
    """The Markdown table of every headline entry of ``runs``, by function then question."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    entries = sorted(((run, e) for run in runs for e in run["headline"]),
                     key=lambda pair: (pair[1]["function"], pair[1]["question"],
                                       pair[1]["shape"]))
    for run, e in entries:
        ratio = ("-" if not e.get("baseline_s") or not e.get("ours_s")
                 else f"{e['baseline_s'] / e['ours_s']:.2f}x")
        lines.append(f"| {e['function']} | {e['question']} | {e['shape']} | "
                     f"{_seconds(e.get('ours_s'))} | {e['baseline']}: "
                     f"{_seconds(e.get('baseline_s'))} | {ratio} | {run['date']}, "
                     f"{run['commit']}, `{run['benchmark']}` |")
    return "\n".join(lines)


def read_runs(folder: Path = RESULTS) -> list[dict[str, Any]]:
    """Every recorded run in ``folder``, by benchmark name."""
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


def block(runs: list[dict[str, Any]]) -> str:
    """The text between (and with) the markers: the table and the runs' command lines."""
    commands = "\n".join(f"- `{r['benchmark']}`: `{r['command']}` ({r['date']}, commit "
                         f"{r['commit']}, {r['machine']})" for r in runs)
    return (f"{START}\n{headline_table(runs)}\n\nEach row is the newest recorded run of its "
            f"benchmark (`benchmarks/results/*.json`); above 1x ours is faster. The runs:\n\n"
            f"{commands}\n{END}")


def rewrite(text: str, runs: list[dict[str, Any]]) -> str:
    """``text`` (BENCHMARKS.md) with its headline block replaced by :func:`block`."""
    if START not in text or END not in text:
        raise ValueError("BENCHMARKS.md has no headline markers")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return head + block(runs) + tail


def main() -> None:
    """Rewrite BENCHMARKS.md's headline block from ``benchmarks/results``."""
    BENCHMARKS_MD.write_text(rewrite(BENCHMARKS_MD.read_text(), read_runs()))
    print(f"{BENCHMARKS_MD.name}: headline of {len(read_runs())} recorded benchmark(s)")


if __name__ == "__main__":
    main()
