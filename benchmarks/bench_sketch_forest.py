"""Benchmark: ``approx_match_seq``'s Python side on many short streams, one pass against one call per stream.

Issue 20: on a process-mining shape (the ``cases`` shape of ``bench_sketch_query``: ~9 events
per stream, 24 Zipf types, trees as ``app_sketch`` builds them, C = 4) the sketch query was
slower than exact matching of the raw events, because each stream's tree was restored, cut and
evaluated by its own Python calls (~0.2 ms per stream). In ONE process, on the same node rows
as the function's ``select`` hands them to a task (integers as BIGINT, timestamps as
microseconds), this times ``udfs.approx_match_seq``:

* ``forest``: :func:`udfs.approx_match_seq.forest_answer` (every stream at once,
  :mod:`cep.sketch.forest`) and the output table;
* ``per stream``: :func:`udfs.approx_match_seq.stream_answers` (the path rows that fail the
  batch checks take) and the output table;
* ``exact``: the exact core matcher on the raw events, all streams laid end to end
  (``cep.match.run.segments.iter_segment_matches``), as ``match_seq`` runs per partition;

for the frequent and the selective question, ``exists`` and ``intervals``, best of 3,
interleaved, and checks that both sketch paths give the same rows. One core, no Spark.

    python -m benchmarks.bench_sketch_forest --sizes 65000 1000000
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from benchmarks import bench_sketch_query as b

REPEATS = 3


def selected_table(streams: Any, trees: Any) -> Any:
    """The nodes table's rows as ``approx_match_seq``'s ``select`` hands them to a task."""
    from udfs.approx_match_seq import selected_columns

    return selected_columns(b.nodes_arrow(streams, trees))


def run(n: int) -> list[dict[str, Any]]:
    """Every question and mode of the ``cases`` shape at ``n`` events."""
    from cep.match import compile_query
    from udfs.approx_match_seq import (check_arguments, compiled_query, forest_answer,
                                       node_columns, output_table, stream_answers)

    spec = b.SHAPES["cases"]
    streams, names = b.synthetic_streams("cases", n)
    config, _ = b.solver_config(b.FPQ, spec["tree"]["budget"], spec["tree"]["expected_events"],
                                spec["tree"]["window"], b.SYN_QUERY_LENGTH)
    trees, _ = b.build_trees(streams, config)
    table = selected_table(streams, trees)
    exact_stream = streams.exact_stream()
    rows = []
    for label, pattern in b.questions("cases", names).items():
        compiled = compile_query(pattern, policy=b.POLICY)
        for mode in ("exists", "intervals"):
            plan = check_arguments(pattern, b.POLICY, mode, 0)
            query = compiled_query(plan.pattern, plan.policy)

            def both(answer: Any) -> Any:
                cols = node_columns(table)
                bounds = cols["bounds"]
                found = answer(cols, bounds)
                return output_table(plan, cols, bounds, found)

            def forest() -> Any:
                return both(lambda cols, bounds: forest_answer(plan, query, cols, bounds))

            def per_stream() -> Any:
                return both(lambda cols, bounds: stream_answers(plan, query, cols))

            best = {"forest": float("inf"), "per stream": float("inf"), "exact": float("inf")}
            out: dict[str, Any] = {}
            for _ in range(REPEATS):
                for name, fn in (("forest", forest), ("per stream", per_stream),
                                 ("exact", lambda: b.run_exact(compiled, exact_stream))):
                    start = time.perf_counter()
                    out[name] = fn()
                    best[name] = min(best[name], time.perf_counter() - start)
            assert out["forest"].equals(out["per stream"]), "the two sketch paths differ"
            rows.append({"events": n, "streams": len(trees), "question": label, "mode": mode,
                         "rows": out["forest"].num_rows, "exact_matches": out["exact"][0],
                         **{f"{k}_s": v for k, v in best.items()}})
            r = rows[-1]
            print(f"| {n:,} | {r['streams']:,} | {label} | {mode} | {r['rows']:,} | "
                  f"{r['forest_s']:.3f} s | {r['per stream_s']:.3f} s | "
                  f"{r['per stream_s'] / r['forest_s']:.1f}x | {r['exact_s']:.3f} s "
                  f"({r['exact_matches']:,}) | {r['exact_s'] / r['forest_s']:.2f}x |", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    """Print one Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[65_000, 1_000_000])
    args = parser.parse_args(argv)
    print("| events | streams | question | mode | rows out | forest | per stream | forest "
          "speed-up | exact core (matches) | exact / forest |")
    print("|---:|---:|---|---|---:|---:|---:|---:|---:|---:|")
    for n in args.sizes:
        run(n)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
