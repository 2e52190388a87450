"""Spark runner of Mei et al.'s parallel ABI-graph construction (ICPP 2021, Algorithm 1).

The steps are those of :mod:`cep.trends.parallel`; this module only moves their inputs and
outputs through Spark (no algorithm code here):

0. the driver numbers the event vertices (:func:`cep.trends.parallel.event_vertices`) and
   makes a DataFrame of ``(_ev, _w, _ts, columns read)``; ``repartition(P)`` spreads the rows
   over ``P`` tasks (Spark's round-robin partitioning: the paper's ``randPartition``, line 3);
1. **stage 1** (``mapInArrow``): each task computes its tuples and sends its sorted distinct
   ``rval`` values to the driver (Arrow IPC bytes: their type is known only after ``f`` is applied);
2. the driver merges them into the attribute vertices (a merge of sorted runs; the paper used
   ``zipWithIndex`` and a join on an RDD, line 496, to number them in Spark);
3. **stage 2** (``mapInArrow``, the vertices in the task closure, as a broadcast): each task
   recomputes its tuples and maps them to vertices; the from-edges are then
   ``repartitionByRange``'d by ``(predicate, vertex)`` and sorted within the partitions
   (``partitionByAv``, line 18: each vertex's adjacency is written by one task);
4. the driver collects the from-edges and the range to-edges and assembles the graph
   (:func:`cep.trends.parallel.merge`), equal to :func:`cep.trends.build_graph`'s (tested).

The events start and end on the driver (numpy in, a :class:`~cep.trends.graph.TrendGraph`
out), as in the process-pool runner; what runs in Spark is the per-partition work.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from cep.trends.graph import TrendGraph
from cep.trends.parallel import (EventVertices, Partition, attribute_vertices, edge_task,
                                 event_vertices, merge, raise_as_whole, read_columns, summarise)
from cep.trends.query import TrendQuery, compile_trend

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SUMMARY_SCHEMA = "pred INT, kind INT, pairs BINARY, distinct_values BINARY"
EDGE_SCHEMA = "pred INT, ev LONG, av LONG, lo LONG, hi LONG, lo2 LONG, hi2 LONG"


def build_graph_spark(spark: SparkSession, query: TrendQuery | str, ts: np.ndarray,
                      columns: Mapping[str, object], *,
                      window: np.ndarray | None = None, tiebreak: np.ndarray | None = None,
                      row: np.ndarray | None = None, partitions: int = 2) -> TrendGraph:
    """Build the ABI graph with Algorithm 1's per-partition steps as Spark tasks.

    Args:
        spark: the SparkSession.
        query, ts, columns, window, tiebreak, row: as for :func:`cep.trends.build_graph`.
        partitions: ``P``, the Spark partitions (tasks) of each stage.

    Returns:
        The graph, ``==`` to :func:`cep.trends.build_graph`'s.

    Raises:
        The errors of :func:`cep.trends.build_graph` for the same input.
    """
    q = compile_trend(query) if isinstance(query, str) else query
    ev = event_vertices(ts, window, tiebreak, row)
    n = len(ev.ts)
    cols = read_columns(q, columns, n)
    try:
        table = _event_table(ev, cols)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
        raise_as_whole(q, ev, cols)  # a column mixing types: the whole's own error
        raise
    names = list(cols)
    parted = spark.createDataFrame(table).repartition(max(1, partitions)).cache()
    try:
        try:
            rows = parted.mapInArrow(_stage1(q, names), SUMMARY_SCHEMA).toArrow()
        except Exception:
            raise_as_whole(q, ev, cols)
            raise
        runs, kinds = _summaries(rows, len(q.predicates))
        if any(len(set(k) - {None}) > 1 for k in kinds):
            raise_as_whole(q, ev, cols)
        avs = tuple(attribute_vertices(p, runs[i], ev.n_windows, max(1, partitions))
                    for i, p in enumerate(q.predicates))
        edges = parted.mapInArrow(_stage2(q, names, avs), EDGE_SCHEMA).cache()
        try:
            stored = (edges.where("av >= 0").select("pred", "av", "ev")
                      .repartitionByRange(max(1, partitions), "pred", "av")
                      .sortWithinPartitions("pred", "av", "ev").toArrow())
            to = edges.select("pred", "ev", "lo", "hi", "lo2", "hi2").toArrow()
        finally:
            edges.unpersist()
    finally:
        parted.unpersist()
    k = len(q.predicates)
    f_pred, t_pred = _np(stored, "pred"), _np(to, "pred")
    from_pairs = [[(_np(stored, "av")[f_pred == p], _np(stored, "ev")[f_pred == p])] for p in range(k)]
    to_rows = [[tuple(_np(to, c)[t_pred == p] for c in ("ev", "lo", "hi", "lo2", "hi2"))] for p in range(k)]
    return merge(q, ev, avs, from_pairs, to_rows)


def _event_table(ev: EventVertices, cols: Mapping[str, np.ndarray]) -> pa.Table:
    """The events in vertex order: ``_ev``, ``_w``, ``_ts`` and the columns read (datetimes as µs)."""
    src = ev.source
    data: dict[str, pa.Array] = {"_ev": pa.array(np.arange(len(ev.ts), dtype=np.int64)),
                                 "_w": pa.array(ev.window), "_ts": pa.array(ev.ts)}
    for name, col in cols.items():
        values = col if src is None else col[src]
        if values.dtype.kind == "M":
            # The core reads datetimes as microseconds; ship them as such (no time zone to shift).
            missing = np.isnat(values)
            values = pa.array(values.astype("datetime64[us]").astype(np.int64), mask=missing)
        data[name] = pa.array(values)
    return pa.table(data)


def _partition(batches: Iterator[pa.RecordBatch], names: list[str]) -> Partition | None:
    """One Spark partition's rows as a :class:`~cep.trends.parallel.Partition` (None when empty)."""
    got = [b for b in batches if b.num_rows]
    if not got:
        return None
    t = pa.Table.from_batches(got)
    events = _np(t, "_ev")
    order = np.argsort(events, kind="stable")
    columns = {name: _values(t.column(name))[order] for name in names}
    return Partition(events[order], _np(t, "_w")[order], _np(t, "_ts")[order], columns)


def _stage1(q: TrendQuery, names: list[str]):  # noqa: ANN202
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        part = _partition(batches, names)
        if part is None:
            return
        s = summarise(q.predicates, q.text, part)
        for p, ((w, v, u), kind) in enumerate(zip(s.distinct, s.kinds)):
            yield pa.record_batch({
                "pred": pa.array([p], pa.int32()),
                "kind": pa.array([-1 if kind is None else int(kind)], pa.int32()),
                "pairs": pa.array([_ipc({"w": w, "v": v})], pa.binary()),
                "distinct_values": pa.array([_ipc({"u": u})], pa.binary())})
    return run


def _stage2(q: TrendQuery, names: list[str], avs: tuple):  # noqa: ANN202
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        part = _partition(batches, names)
        if part is None:
            return
        e = edge_task(q.predicates, q.text, avs, part)
        for p in range(len(avs)):
            av = np.full(len(e.events), -1, dtype=np.int64)
            # One row per event: its from-edge (or -1) beside its to-edges; the range
            # partitioning by vertex happens in Spark after this stage.
            for a, ev in e.from_buckets[p]:
                av[np.searchsorted(e.events, ev)] = a
            lo, hi, lo2, hi2 = e.to[p]
            yield pa.record_batch({"pred": pa.array(np.full(len(e.events), p, dtype=np.int32)),
                                   "ev": pa.array(e.events), "av": pa.array(av), "lo": pa.array(lo),
                                   "hi": pa.array(hi), "lo2": pa.array(lo2), "hi2": pa.array(hi2)})
    return run


def _summaries(rows: pa.Table, k: int) -> tuple[list[list[tuple]], list[list[bool | None]]]:
    """Per predicate, every partition's distinct runs and operand kind."""
    runs: list[list[tuple]] = [[] for _ in range(k)]
    kinds: list[list[bool | None]] = [[] for _ in range(k)]
    for p, kind, pairs, distinct in zip(*(rows.column(c).to_pylist() for c in
                                          ("pred", "kind", "pairs", "distinct_values"))):
        w, v = _from_ipc(pairs)
        (u,) = _from_ipc(distinct)
        runs[p].append((w.astype(np.int64), v, u))
        kinds[p].append(None if kind < 0 else bool(kind))
    return runs, kinds


def _ipc(arrays: dict[str, np.ndarray]) -> bytes:
    batch = pa.record_batch({k: pa.array(v) for k, v in arrays.items()})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def _from_ipc(data: bytes) -> list[np.ndarray]:
    table = pa.ipc.open_stream(data).read_all()
    return [_values(table.column(i)) for i in range(table.num_columns)]


def _values(col: pa.ChunkedArray) -> np.ndarray:
    """An Arrow column as the core reads numpy columns: NULLs of numbers as None in an object array."""
    if col.null_count and not (pa.types.is_floating(col.type) or pa.types.is_string(col.type)
                               or pa.types.is_large_string(col.type)):
        return np.array(col.to_pylist(), dtype=object)
    if pa.types.is_null(col.type):
        return np.array(col.to_pylist(), dtype=object)
    return col.to_numpy()


def _np(table: pa.Table, name: str) -> np.ndarray:
    return table.column(name).to_numpy()
