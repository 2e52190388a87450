"""Row UDTF or Arrow UDTF for ``approx_match_seq``? Times both on the same ``<name>_nodes`` tables.

``approx_match_seq`` is a row UDTF with ``analyze`` (validation before any task, a schema per
``mode``). DESIGN.md section 5 prefers ``arrow_udtf`` where ``analyze`` is not needed, because
it moves Arrow batches instead of one Python object per row. A sketch moves few rows: one per
node, about ``2 N / C`` for ``N`` events. This benchmark measures what the Arrow transport would
save, in one run, on the same Delta tables:

* ``row``: the registered ``approx_match_seq`` (a row UDTF when this benchmark was written;
  since issue 20 the one function in ``udfs/shell.py``: ``analyze`` plus Arrow batches);
* ``arrow``: a prototype Arrow UDTF defined here, the same per-stream work
  (``SketchTree.restore`` + ``evaluate_sketch``) but its columns taken from Arrow batches with
  numpy instead of from Python rows, the output built as an Arrow table; fixed schema, so one
  UDTF object per mode, positional arguments;
* ``cep only``: the per-stream work alone, in this process, from each stream's rows as an
  Arrow table (``delta_tables.sketch_state.tree_from_arrow`` + ``evaluate_sketch``, no Spark):
  the floor both UDTFs stand on.

Two shapes of ``10^6`` events each: ``many`` streams (2,000 of 500 events, ``C = 8``, like a log
of many cases) and ``few`` (4 of 250,000 events, ``C = 64``, like a few long sensor streams).
Names are Zipf-distributed over 50 types (``cep.datasets.synthetic``). Results go to Spark's ``noop``
sink, best of 3 after a warm-up. Every variant's row count is printed; they must agree.

Run from the project root::

    python -m benchmarks.bench_approx_sql [--json PATH]

Example:
    >>> names, ts = stream_events(0, 100)
    >>> len(names), bool((np.diff(ts) >= 0).all())
    (100, True)
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from cep.sketch import SketchConfig, SketchTree, evaluate_sketch
from cep.datasets.synthetic import SyntheticSpec, generate_events

SHAPES = {
    "many": {"streams": 2_000, "events": 500, "config": SketchConfig(m=256, k=3, C=8)},
    "few": {"streams": 4, "events": 250_000, "config": SketchConfig(m=1024, k=3, C=64)},
}
PATTERN = "PATTERN T01; T02; T03"
REPEATS = 3
INTERVALS = ("stream STRING, match_id BIGINT, pos_start BIGINT, pos_end BIGINT, "
             "ts_start TIMESTAMP, ts_end TIMESTAMP, node_ids ARRAY<BIGINT>, level INT")


def stream_events(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Names and timestamps (microseconds) of one synthetic stream of ``n`` events."""
    cols = generate_events(SyntheticSpec(n_events=n, n_keys=1, n_types=50, n_attrs=0, seed=seed))
    return cols.types(), cols.ts_us


def write_shape(spark: Any, root: Path, shape: str) -> tuple[str, dict[str, SketchTree]]:
    """Build the trees of one shape and write them as a Delta nodes table; its name and trees."""
    import pyarrow as pa

    from delta_tables.sketch_state import NODES_COLUMNS, spark_schema, tree_to_arrow

    spec = SHAPES[shape]
    trees = {}
    tables = []
    for s in range(spec["streams"]):
        names, ts = stream_events(s, spec["events"])
        trees[f"s{s:05d}"] = tree = SketchTree.build(list(names), ts, spec["config"])
        tables.append(tree_to_arrow(f"s{s:05d}", tree))
    table = pa.concat_tables(tables)
    name = f"bench_{shape}_nodes"
    location = root / name
    spark.createDataFrame(table, spark_schema(NODES_COLUMNS)).write.format("delta") \
        .mode("overwrite").save(str(location))
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.catalog.createTable(name, path=str(location), source="delta")
    return name, trees


class ArrowApprox:
    """Prototype Arrow UDTF handler: ``(pattern, mode, level, sketch)``, positional."""

    def __init__(self) -> None:
        self.batches: list[Any] = []
        self.args: tuple[Any, ...] = ()

    def eval(self, pattern: Any, mode: Any, level: Any, sketch: Any) -> Iterator[Any]:
        if not self.args:
            self.args = tuple(a.to_pylist()[0] if hasattr(a, "to_pylist") else a
                              for a in (pattern, mode, level))
        self.batches.append(sketch)
        return iter(())

    def terminate(self) -> Iterator[Any]:
        if self.batches:
            yield arrow_answer(self.batches, *self.args)


def arrow_answer(batches: list[Any], pattern: str, mode: str, level: int) -> Any:
    """The prototype's output table for one partition's record batches."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from cep.sketch import SketchConfig, decode_bits

    table = pa.Table.from_batches(batches)
    table = table.take(pc.sort_indices(table, [("stream", "ascending")]))
    stream = table.column("stream").to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(np.concatenate(([True], stream[1:] != stream[:-1]))) if len(stream) \
        else np.zeros(0, dtype=np.int64)
    bounds = np.append(starts, len(stream))
    ts_type = pa.timestamp("us", tz="UTC")
    cols = {name: table.column(name).to_numpy(zero_copy_only=False)
            for name in ("level", "idx", "pos_start", "pos_end", "n_events", "is_top", "is_open",
                         "m", "k", "config_version")}
    for name in ("ts_start", "ts_end"):
        cols[name] = pc.cast(table.column(name), ts_type).cast(pa.int64()).to_numpy()
    blobs = table.column("bits").to_pylist()
    seeds = table.column("seeds").to_pylist()
    out: dict[str, list[Any]] = {"stream": [], "matched": [], "match_id": [], "pos_start": [],
                                 "pos_end": [], "ts_start": [], "ts_end": [], "node_ids": []}
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        full = np.flatnonzero(~cols["is_open"][lo:hi]) + lo
        opened = np.flatnonzero(cols["is_open"][lo:hi]) + lo
        levels = cols["level"][full]
        c = int(cols["n_events"][full][levels == 0][0])
        ones = cols["n_events"][full][levels == 1]
        config = SketchConfig(m=int(cols["m"][lo]), k=int(cols["k"][lo]), C=c,
                              fanout=int(ones[0]) // c if len(ones) else 2,
                              seeds=tuple(seeds[lo]), config_version=int(cols["config_version"][lo]))
        bits = np.stack([decode_bits(blobs[i], config.m) for i in full.tolist()])
        nodes = {"level": levels, "index": cols["idx"][full], "pos_start": cols["pos_start"][full],
                 "pos_end": cols["pos_end"][full], "ts_start": cols["ts_start"][full],
                 "ts_end": cols["ts_end"][full], "n_events": cols["n_events"][full],
                 "is_top": cols["is_top"][full], "bits": bits}
        if len(opened):
            o = int(opened[0])
            summary = (int(cols["n_events"][o]), int(cols["ts_start"][o]), int(cols["ts_end"][o]),
                       decode_bits(blobs[o], config.m))
            open_index = int(cols["idx"][o])
        else:
            summary = (0, None, None, np.zeros(config.m // 8, dtype=np.uint8))
            open_index = (int(nodes["pos_end"].max()) + 1) // c
        tree = SketchTree.restore(config, nodes, open_index=open_index, open_summary=summary)
        result = evaluate_sketch(pattern, tree, level=level, mode=mode)
        key = stream[lo]
        if mode == "exists":
            out["stream"].append(key)
            out["matched"].append(bool(result))
            continue
        n = len(result)
        out["stream"] += [key] * n
        out["match_id"] += range(1, n + 1)
        out["pos_start"] += result.pos_start.tolist()
        out["pos_end"] += result.pos_end.tolist()
        out["ts_start"] += result.ts_start.tolist()
        out["ts_end"] += result.ts_end.tolist()
        out["node_ids"] += result.node_ids.tolist()
    if mode == "exists":
        return pa.table({"stream": pa.array(out["stream"], pa.string()),
                         "matched": pa.array(out["matched"], pa.bool_())})
    n = len(out["stream"])
    return pa.table({
        "stream": pa.array(out["stream"], pa.string()),
        "match_id": pa.array(out["match_id"], pa.int64()),
        "pos_start": pa.array(out["pos_start"], pa.int64()),
        "pos_end": pa.array(out["pos_end"], pa.int64()),
        "ts_start": pa.array(out["ts_start"], pa.int64()).cast(ts_type),
        "ts_end": pa.array(out["ts_end"], pa.int64()).cast(ts_type),
        "node_ids": pa.array(out["node_ids"], pa.list_(pa.int64())),
        "level": pa.array(np.full(n, level, dtype=np.int32), pa.int32()),
    })


def _best(fn: Any) -> tuple[float, Any]:
    fn()  # warm-up: Python workers, compiled query caches
    times, result = [], None
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


def measure(spark: Any, table: str, trees: dict[str, SketchTree], mode: str) -> dict[str, Any]:
    """Times of the three variants on one table and mode, with their row counts."""
    from cep.sketch import compile_sketch_query

    row_sql = (f"SELECT * FROM approx_match_seq(pattern => '{PATTERN}', mode => '{mode}', "
               f"sketch => TABLE({table}))")
    arrow_sql = (f"SELECT * FROM bench_approx_{mode}('{PATTERN}', '{mode}', 0, "
                 f"TABLE({table}) PARTITION BY stream)")

    def spark_rows(sql: str) -> int:
        frame = spark.sql(sql)
        frame.write.format("noop").mode("overwrite").save()
        return frame.count()

    from delta_tables.sketch_state import tree_from_arrow, tree_to_arrow

    stored = [(tree_to_arrow(s, t), t.config) for s, t in trees.items()]

    def python_only() -> int:
        q = compile_sketch_query(PATTERN)
        total = 0
        for rows, config in stored:
            result = evaluate_sketch(q, tree_from_arrow(rows, config), mode=mode)
            total += 1 if mode == "exists" else len(result)
        return total

    # The timed Spark calls write to noop; counting is done once, outside the timing.
    t_row, _ = _best(lambda: spark.sql(row_sql).write.format("noop").mode("overwrite").save())
    t_arrow, _ = _best(lambda: spark.sql(arrow_sql).write.format("noop").mode("overwrite").save())
    t_python, n_python = _best(python_only)
    n_row, n_arrow = spark.sql(row_sql).count(), spark.sql(arrow_sql).count()
    nodes = spark.sql(f"SELECT count(*) FROM {table}").first()[0]
    return {"table": table, "mode": mode, "streams": len(trees), "rows": nodes,
            "row_s": round(t_row, 3), "arrow_s": round(t_arrow, 3),
            "python_s": round(t_python, 3), "row_over_arrow": round(t_row / t_arrow, 2),
            "out_row": n_row, "out_arrow": n_arrow, "out_python": n_python}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES))
    args = parser.parse_args(argv)

    from pyspark.sql.functions import arrow_udtf

    from delta_tables.settings import load_settings
    from jobs.session import build_session
    from sql_ext import register_all

    root = Path(tempfile.mkdtemp(prefix="bench-approx-"))
    settings = load_settings(overrides={"warehouse": str(root), "show_progress": False})
    spark = build_session(settings)
    register_all(spark)
    spark.udtf.register("bench_approx_exists",
                        arrow_udtf(ArrowApprox, returnType="stream STRING, matched BOOLEAN"))
    spark.udtf.register("bench_approx_intervals", arrow_udtf(ArrowApprox, returnType=INTERVALS))
    results = []
    print("| shape | mode | streams | node rows | row UDTF s | Arrow UDTF s | row / Arrow | "
          "cep only s | output rows (row, Arrow, cep) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for shape in args.shapes:
        t0 = time.perf_counter()
        table, trees = write_shape(spark, root, shape)
        print(f"<!-- {shape}: trees built and written in {time.perf_counter() - t0:.1f} s -->",
              flush=True)
        for mode in ("exists", "intervals"):
            r = measure(spark, table, trees, mode)
            r["shape"] = shape
            results.append(r)
            print(f"| {shape} | {mode} | {r['streams']:,} | {r['rows']:,} | {r['row_s']} | "
                  f"{r['arrow_s']} | {r['row_over_arrow']} | {r['python_s']} | "
                  f"{r['out_row']:,}, {r['out_arrow']:,}, {r['out_python']:,} |", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    spark.stop()
    bad = [r for r in results if not r["out_row"] == r["out_arrow"] == r["out_python"]]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
