"""Spark adapter of ``sketch_stats``: the size and fill of each stream's sketch tree.

    SELECT * FROM sketch_stats(TABLE(ev_sketch_nodes))

In the shell of :mod:`udfs.shell`, like ``approx_match_seq``: ``analyze`` checks the columns
of the table before any task runs (``CEP-SQL-021``), selects only what is read and asks for
the rows of each stream together; each task checks and reads the trees of all its streams at
once (:func:`udfs.approx_match_seq.partition_forest`), or, when its rows mix settings or fail
a check, one stream at a time (:func:`udfs.approx_match_seq.stream_trees`: ``CEP-SKETCH-002``
naming the stream and node when a blob is damaged or a node missing; ``CEP-SQL-022`` when the
rows are not one tree), and returns one row per stream:

==============  =========  ===================================================================
column          type       meaning
==============  =========  ===================================================================
``stream``      its own    the stream key, with the nodes table's type
``nodes``       BIGINT     full nodes (the open leaf is not a node)
``levels``      INT        levels with at least one node (0 when the stream has no full leaf)
``top_level``   BIGINT     top-level nodes (the entry points of every query)
``open_events`` BIGINT     events in the open leaf (0 without one)
``bytes``       BIGINT     bytes of the stored ``bits`` blobs, the open leaf's included
``fill``        DOUBLE     mean density (set bits / m) of the full nodes' filters; 0.0 without
``m``, ``k``    INT        bits per filter and hash functions
==============  =========  ===================================================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from cep.errors import CepError
from cep.signature import SIGNATURES
from cep.sketch.forest import Forest
from udfs.approx_match_seq import (node_columns, node_selection, partition_forest,
                                   stream_partitioning, stream_trees)
from udfs.shell import (PlannedResult, TableFunction, planned, table_fields,
                        table_function)

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    from pyspark.sql.udtf import UserDefinedTableFunction


class SketchStatsArgumentError(CepError):
    """``sketch_stats`` was called without a TABLE argument."""

    code = "CEP-SQL-023"


def analyze_stats(*args: Any, **kwargs: Any) -> PlannedResult:
    """The analysis of one call: the schema, the node columns selected, one stream together."""
    from pyspark.sql.types import (DoubleType, IntegerType, LongType, StructField, StructType)

    call = SIGNATURES["sketch_stats"].bind(args, kwargs, SketchStatsArgumentError)
    fields = table_fields(call.get("sketch"), "sketch", SketchStatsArgumentError)
    select = node_selection(fields, "sketch_stats")
    stream = fields["stream"]
    schema = StructType([StructField(stream.name, stream.dataType),
                         StructField("nodes", LongType()), StructField("levels", IntegerType()),
                         StructField("top_level", LongType()),
                         StructField("open_events", LongType()), StructField("bytes", LongType()),
                         StructField("fill", DoubleType()), StructField("m", IntegerType()),
                         StructField("k", IntegerType())])
    return PlannedResult(schema=schema, select=select, plan=stream.name,
                         partitionBy=stream_partitioning(fields))


class SketchStats(TableFunction):
    """The ``sketch_stats`` handler: one row per stream of a bucket."""

    analyze = staticmethod(planned(analyze_stats))

    def answer(self, plan: str, table: pa.Table) -> Iterator[pa.Table]:
        yield stats_table(plan, table)


def stats_table(stream_name: str, table: pa.Table) -> pa.Table:
    """One output row per stream of the selected node columns (all streams at once when
    :func:`udfs.approx_match_seq.partition_forest` takes them, else one at a time)."""
    import numpy as np
    import pyarrow as pa

    cols = node_columns(table)
    bounds = cols["bounds"]
    offsets = cols["bits_offsets"].astype(np.int64)
    stored = offsets[1:] - offsets[:-1]  # bytes of each row's blob
    forest = partition_forest(cols, bounds)
    rows = stream_stats(cols, stored) if forest is None else forest_stats(forest, stored, bounds)
    return pa.table({
        stream_name: cols["stream"].take(pa.array(rows["first"], pa.int64())),
        "nodes": pa.array(rows["nodes"], pa.int64()),
        "levels": pa.array(rows["levels"], pa.int32()),
        "top_level": pa.array(rows["top_level"], pa.int64()),
        "open_events": pa.array(rows["open_events"], pa.int64()),
        "bytes": pa.array(rows["bytes"], pa.int64()),
        "fill": pa.array(rows["fill"], pa.float64()),
        "m": pa.array(rows["m"], pa.int32()), "k": pa.array(rows["k"], pa.int32())})


def stream_stats(cols: dict[str, Any], stored: np.ndarray) -> dict[str, list[Any]]:
    """The output columns, one restored tree at a time (any rows; errors name the stream)."""
    rows: dict[str, list[Any]] = {name: [] for name in (
        "first", "nodes", "levels", "top_level", "open_events", "bytes", "fill", "m", "k")}
    for lo, hi, _, tree in stream_trees(cols):
        s = tree.stats()
        rows["first"].append(lo)
        rows["nodes"].append(s["nodes"])
        rows["levels"].append(s["levels"])
        rows["top_level"].append(s["top_level"])
        # open_leaf.n_events, not stats()["open_events"]: a restored tree's open leaf is a
        # summary without its events, which stats() counts as 0.
        rows["open_events"].append(tree.open_leaf.n_events)
        rows["bytes"].append(int(stored[lo:hi].sum()))
        rows["fill"].append(s["mean_fill"])
        rows["m"].append(tree.config.m)
        rows["k"].append(tree.config.k)
    return rows


def forest_stats(forest: Forest, stored: np.ndarray, bounds: np.ndarray) -> dict[str, np.ndarray]:
    """The output columns of every stream at once: :meth:`cep.sketch.SketchTree.stats` per
    stream, as segment sums over the forest's node rows."""
    import numpy as np

    n = forest.n_streams
    nodes = np.diff(forest.bounds)
    stream = np.repeat(np.arange(n, dtype=np.int64), nodes)
    levels = np.zeros(n, dtype=np.int64)
    np.maximum.at(levels, stream, forest.level + 1)
    ones = np.bitwise_count(forest.bits).sum(axis=1).astype(np.int64)
    per_stream = np.bincount(stream, weights=ones, minlength=n)
    fill = np.divide(per_stream, np.maximum(nodes, 1)) / forest.config.m
    return {"first": bounds[:-1], "nodes": nodes, "levels": levels,
            "top_level": np.bincount(stream, weights=forest.is_top, minlength=n).astype(np.int64),
            "open_events": forest.open_events, "bytes": np.add.reduceat(stored, bounds[:-1]),
            "fill": np.where(nodes > 0, fill, 0.0),
            "m": np.full(n, forest.config.m), "k": np.full(n, forest.config.k)}


def sketch_stats_udtf() -> UserDefinedTableFunction:
    """The Spark UDTF object of ``sketch_stats``."""
    return table_function(SketchStats)
