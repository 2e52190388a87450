"""Runs every benchmark in turn (``make bench``); each prints its own Markdown table.

Example:
    >>> BENCHMARKS[0]
    'benchmarks.bench_synthetic'
"""

from __future__ import annotations

import runpy
import sys

BENCHMARKS = ("benchmarks.bench_synthetic", "benchmarks.bench_xes", "benchmarks.bench_match_bpi",
              "benchmarks.bench_sketch_build", "benchmarks.bench_sketch_query",
              "benchmarks.bench_trends")


def main() -> None:
    """Run each benchmark module as ``__main__`` with no arguments."""
    for name in BENCHMARKS:
        print(f"\n## {name}\n", flush=True)
        sys.argv = [name]
        try:
            runpy.run_module(name, run_name="__main__")
        except SystemExit as done:  # a benchmark's own main() may end with sys.exit(code)
            if done.code not in (None, 0):
                raise


if __name__ == "__main__":
    main()
