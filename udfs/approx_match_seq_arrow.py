"""Spark adapter of ``approx_match_seq_arrow``: sketch queries with node rows moved as Arrow batches.

The same answers as ``approx_match_seq`` (same compiled query, same ``evaluate_sketch``), for
large nodes tables: the row UDTF pays ~40 us per node row to turn it into a Python object
(BENCHMARKS.md), this one receives Arrow record batches and rebuilds every tree of a partition
from whole columns (:mod:`cep.sketch.stored`: one vectorised pass checks and unpacks every
``bits`` blob). Arrow UDTFs cannot have ``analyze`` in Spark 4.2 (SPARK-53286), hence:

* positional arguments, the table last: ``approx_match_seq_arrow(pattern, policy, mode, level,
  sketch)``; ``policy``, ``mode`` and ``level`` may be NULL (the pattern's policy or
  skip-till-next-match, ``'exists'``, 0);
* the arguments and the pattern are checked when the first partition runs (errors still reach
  the SQL caller with their code, line, column and caret);
* one fixed output schema for both modes, :data:`RETURN_TYPE`: ``mode => 'exists'`` gives one
  row per stream with ``matched`` and NULL interval columns; ``'intervals'`` one row per match
  with ``matched = true`` and the columns of ``approx_match_seq``'s intervals schema.

A partition may hold many streams (``PARTITION BY stream`` or a bucket of it such as
``PARTITION BY pmod(hash(stream), 16)``): rows are sorted by stream, every stream's tree is
restored from its slice of the columns, and one output table is produced per partition.

    SELECT * FROM approx_match_seq_arrow('PATTERN A; B', NULL, 'intervals', 0,
                                         TABLE(ev_sketch_nodes) PARTITION BY stream)
"""

from __future__ import annotations

from typing import Any, Iterator

from cep.errors import CepError
from udfs.approx_match_seq import check_arguments, compiled_query
from udfs.shell import scalar as _scalar

RETURN_TYPE = ("stream STRING, matched BOOLEAN, match_id BIGINT, pos_start BIGINT, "
               "pos_end BIGINT, ts_start TIMESTAMP, ts_end TIMESTAMP, node_ids ARRAY<BIGINT>, "
               "level INT")
_NEEDED = ("stream", "node_id", "level", "idx", "pos_start", "pos_end", "ts_start", "ts_end",
           "n_events", "is_top", "is_open", "m", "k", "seeds", "config_version", "bits")


class ApproxMatchSeqArrowFailed(Exception):
    """What the SQL caller sees: the message of the CepError (code, position, snippet)."""


class SketchBatchError(CepError):
    """The TABLE argument of ``approx_match_seq_arrow`` is not a ``<name>_nodes`` table (a
    column is missing or has the wrong type), or a row has a NULL where a tree needs a value."""

    code = "CEP-SQL-023"


class ApproxMatchSeqArrowTable:
    """Arrow UDTF handler: collects a partition's batches, answers every stream in ``terminate``."""

    def __init__(self) -> None:
        self.batches: list[Any] = []
        self.args: tuple[Any, ...] | None = None

    def eval(self, pattern: Any, policy: Any, mode: Any, level: Any, sketch: Any
             ) -> Iterator[Any]:
        if self.args is None:
            self.args = (_scalar(pattern), _scalar(policy), _scalar(mode), _scalar(level))
        self.batches.append(sketch)
        return iter(())

    def terminate(self) -> Iterator[Any]:
        if not self.batches or self.args is None:
            return
        try:
            plan = check_arguments(*self.args)
            yield answer_batches(self.batches, plan)
        except CepError as err:
            raise ApproxMatchSeqArrowFailed(str(err)) from None


def _columns(table: Any) -> dict[str, Any]:
    """The numpy columns :func:`cep.sketch.stored.stored_tree` reads, plus the settings."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    names = {n.lower(): n for n in table.column_names}
    missing = [c for c in _NEEDED if c not in names]
    if missing:
        raise SketchBatchError(f"approx_match_seq_arrow needs a sketch nodes table "
                               f"(<name>_nodes); missing columns {missing}; the table has: "
                               f"{', '.join(table.column_names)}")
    col = {c: table.column(names[c]).combine_chunks() for c in _NEEDED}
    for c in ("node_id", "level", "idx", "pos_start", "pos_end", "n_events", "is_open", "m", "k",
              "config_version", "seeds", "stream"):
        if col[c].null_count:
            raise SketchBatchError(f"a node row has a NULL {c}")
    out: dict[str, Any] = {}
    for c in ("node_id", "level", "idx", "pos_start", "pos_end", "n_events", "m", "k",
              "config_version"):
        if not pa.types.is_integer(col[c].type):
            raise SketchBatchError(f"column {c!r} must be an integer, found {col[c].type}")
        out[c] = col[c].to_numpy().astype(np.int64, copy=False)
    for c in ("is_top", "is_open"):
        out[c] = pc.fill_null(col[c], False).to_numpy(zero_copy_only=False)
    ts_type = pa.timestamp("us", tz="UTC")
    valid = None
    for c in ("ts_start", "ts_end"):
        if not pa.types.is_timestamp(col[c].type):
            raise SketchBatchError(f"column {c!r} must be a TIMESTAMP, found {col[c].type}")
        micros = pc.cast(pc.cast(col[c], ts_type), pa.int64())
        mask = micros.is_valid().to_numpy(zero_copy_only=False)
        valid = mask if valid is None else valid & mask
        out[c] = pc.fill_null(micros, 0).to_numpy()
    out["ts_valid"] = valid
    seeds = col["seeds"]
    lengths = pc.list_value_length(seeds).to_numpy(zero_copy_only=False)
    width = int(lengths[0]) if len(lengths) else 0
    if len(lengths) and (lengths != width).any():
        raise SketchBatchError("rows of different sketch configurations (seed lists of "
                               "different lengths); read one version of the table")
    out["seeds"] = seeds.flatten().to_numpy(zero_copy_only=False).astype(np.int64) \
        .reshape(len(lengths), width)
    bits = col["bits"]
    if not pa.types.is_binary(bits.type):
        raise SketchBatchError(f"column 'bits' must be BINARY, found {bits.type}")
    buffers = bits.buffers()
    out["bits_offsets"] = (np.frombuffer(buffers[1], dtype=np.int32,
                                         count=len(bits) + 1, offset=bits.offset * 4)
                           if len(bits) else np.zeros(1, dtype=np.int32))
    out["bits_data"] = (np.frombuffer(buffers[2], dtype=np.uint8) if len(bits) and buffers[2]
                        is not None else np.zeros(0, dtype=np.uint8))
    out["bits_valid"] = bits.is_valid().to_numpy(zero_copy_only=False)
    out["stream"] = col["stream"].cast(pa.string())
    return out


def answer_batches(batches: list[Any], plan: Any) -> Any:
    """The output table (:data:`RETURN_TYPE`) of one partition's record batches.

    Raises:
        SketchBatchError: not a nodes table, or NULLs where a tree needs a value.
        CorruptSketchError: a damaged blob or rows that are not one tree (naming the stream).
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from cep.sketch import evaluate_sketch
    from cep.sketch.stored import config_of_rows, decode_bits_matrix, stored_tree, stream_bounds

    table = pa.Table.from_batches(batches)
    stream_name = next((n for n in table.column_names if n.lower() == "stream"), "stream")
    if stream_name in table.column_names:
        table = table.take(pc.sort_indices(table, [(stream_name, "ascending")]))
    cols = _columns(table)
    query = compiled_query(plan.pattern, plan.policy)
    streams = cols["stream"]
    keys = np.asarray(streams.to_numpy(zero_copy_only=False), dtype=object)
    bounds = stream_bounds(keys)
    parts: dict[str, list[Any]] = {name: [] for name in (
        "stream", "matched", "pos_start", "pos_end", "ts_start", "ts_end", "node_ids",
        "match_id", "slots")}
    per_row = ("node_id", "level", "idx", "pos_start", "pos_end", "ts_start", "ts_end",
               "n_events", "is_top", "is_open")
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        key = keys[lo]
        config = config_of_rows(key, m=cols["m"][lo:hi], k=cols["k"][lo:hi],
                                seeds=cols["seeds"][lo:hi],
                                config_version=cols["config_version"][lo:hi],
                                level=cols["level"][lo:hi], n_events=cols["n_events"][lo:hi],
                                is_open=cols["is_open"][lo:hi])
        bits = decode_bits_matrix(cols["bits_data"], cols["bits_offsets"][lo:hi + 1], config.m,
                                  stream=key, node_ids=cols["node_id"][lo:hi],
                                  valid=cols["bits_valid"][lo:hi])
        tree = stored_tree(key, config, {c: cols[c][lo:hi] for c in per_row}, bits,
                           ts_valid=cols["ts_valid"][lo:hi])
        result = evaluate_sketch(query, tree, level=plan.level, mode=plan.mode,
                                 membership="bloom")
        if plan.mode == "exists":
            parts["stream"].append(np.array([lo]))
            parts["matched"].append(np.array([bool(result)]))
            continue
        n = len(result)
        parts["stream"].append(np.full(n, lo))
        parts["match_id"].append(np.arange(1, n + 1, dtype=np.int64))
        for name in ("pos_start", "pos_end", "ts_start", "ts_end"):
            parts[name].append(np.asarray(getattr(result, name), dtype=np.int64))
        parts["node_ids"].append(np.asarray(result.node_ids, dtype=np.int64).reshape(-1))
        parts["slots"].append(np.full(n, result.node_ids.shape[1], dtype=np.int32))
    return _output(parts, streams, plan)


def _output(parts: dict[str, list[Any]], streams: Any, plan: Any) -> Any:
    import numpy as np
    import pyarrow as pa

    def cat(name: str, dtype: Any) -> Any:
        return np.concatenate(parts[name]).astype(dtype) if parts[name] else np.zeros(0, dtype)

    rows = cat("stream", np.int64)
    n = len(rows)
    ts_type = pa.timestamp("us", tz="UTC")
    stream = streams.take(pa.array(rows, pa.int64()))
    if plan.mode == "exists":
        nulls = pa.nulls(n, pa.int64())
        return pa.table({
            "stream": stream, "matched": pa.array(cat("matched", np.bool_)),
            "match_id": nulls, "pos_start": nulls, "pos_end": nulls,
            "ts_start": pa.nulls(n, ts_type), "ts_end": pa.nulls(n, ts_type),
            "node_ids": pa.nulls(n, pa.list_(pa.int64())),
            "level": pa.nulls(n, pa.int32())})
    return pa.table({
        "stream": stream, "matched": pa.array(np.ones(n, dtype=np.bool_)),
        "match_id": pa.array(cat("match_id", np.int64)),
        "pos_start": pa.array(cat("pos_start", np.int64)),
        "pos_end": pa.array(cat("pos_end", np.int64)),
        "ts_start": pa.array(cat("ts_start", np.int64)).cast(ts_type),
        "ts_end": pa.array(cat("ts_end", np.int64)).cast(ts_type),
        "node_ids": pa.ListArray.from_arrays(
            pa.array(np.concatenate(([0], np.cumsum(cat("slots", np.int32)))).astype(np.int32)),
            pa.array(cat("node_ids", np.int64))),
        "level": pa.array(np.full(n, plan.level, dtype=np.int32))})


def approx_match_seq_arrow_udtf() -> Any:
    """The Spark Arrow UDTF object for ``approx_match_seq_arrow``."""
    from pyspark.sql.functions import arrow_udtf

    return arrow_udtf(ApproxMatchSeqArrowTable, returnType=RETURN_TYPE)
