"""Spark adapter of ``sketch_stats``: the size and fill of each stream's sketch tree.

    SELECT * FROM sketch_stats(TABLE(ev_sketch_nodes))

In the shell of :mod:`udfs.shell`, like ``approx_match_seq``: ``analyze`` checks the columns
of the table before any task runs (``CEP-SQL-021``), selects only what is read and asks for
the rows of each stream together; each task rebuilds every stream's tree from its columns
(:func:`udfs.approx_match_seq.stream_trees`: every ``bits`` blob decoded and checked,
``CEP-SKETCH-002`` when one is damaged; ``CEP-SQL-022`` when the rows are not one tree) and
returns one row per stream:

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

from typing import Any, Iterator

from cep.errors import CepError
from udfs.approx_match_seq import node_columns, node_selection, stream_partitioning, stream_trees
from udfs.shell import (PlannedResult, TableFunction, bind_call, planned, table_fields,
                        table_function)


class SketchStatsArgumentError(CepError):
    """``sketch_stats`` was called without a TABLE argument."""

    code = "CEP-SQL-023"


def analyze_stats(*args: Any, **kwargs: Any) -> PlannedResult:
    """The analysis of one call: the schema, the node columns selected, one stream together."""
    from pyspark.sql.types import (DoubleType, IntegerType, LongType, StructField, StructType)

    call = bind_call("sketch_stats", args, kwargs, leading=(), table="sketch", keyed=False,
                     options=(), error=SketchStatsArgumentError)
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

    def answer(self, plan: str, table: Any) -> Iterator[Any]:
        yield stats_table(plan, table)


def stats_table(stream_name: str, table: Any) -> Any:
    """One output row per stream of the selected node columns."""
    import numpy as np
    import pyarrow as pa

    cols = node_columns(table)
    offsets = cols["bits_offsets"].astype(np.int64)
    stored = offsets[1:] - offsets[:-1]  # bytes of each row's blob
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
    return pa.table({
        stream_name: cols["stream"].take(pa.array(rows["first"], pa.int64())),
        "nodes": pa.array(rows["nodes"], pa.int64()),
        "levels": pa.array(rows["levels"], pa.int32()),
        "top_level": pa.array(rows["top_level"], pa.int64()),
        "open_events": pa.array(rows["open_events"], pa.int64()),
        "bytes": pa.array(rows["bytes"], pa.int64()),
        "fill": pa.array(rows["fill"], pa.float64()),
        "m": pa.array(rows["m"], pa.int32()), "k": pa.array(rows["k"], pa.int32())})


def sketch_stats_udtf() -> Any:
    """The Spark UDTF object of ``sketch_stats``."""
    return table_function(SketchStats)
