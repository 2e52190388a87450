"""Spark adapter of ``sketch_stats``: the size and fill of each stream's sketch tree.

    SELECT * FROM sketch_stats(TABLE(ev_sketch_nodes) PARTITION BY stream)

A row UDTF with ``analyze``, like ``approx_match_seq``: ``analyze`` checks the columns of the
table before any task runs (``CEP-SQL-021``) and selects only what is read; each task groups
its rows by stream, rebuilds each stream's tree with
:func:`udfs.approx_match_seq.query_tree` (every ``bits`` blob decoded and checked:
``CEP-SKETCH-002`` when one is damaged; ``CEP-SQL-022`` when the rows are not one tree) and
yields one row per stream:

==============  =========  ===================================================================
column          type       meaning
==============  =========  ===================================================================
``stream``      STRING     the stream key
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

from pyspark.sql.udtf import AnalyzeResult

from cep.errors import CepError
from udfs.approx_match_seq import group_streams, node_selection, query_tree

STATS_SCHEMA = ("stream STRING, nodes BIGINT, levels INT, top_level BIGINT, open_events BIGINT, "
                "bytes BIGINT, fill DOUBLE, m INT, k INT")


class SketchStatsArgumentError(CepError):
    """``sketch_stats`` was called without a TABLE argument."""

    code = "CEP-SQL-023"


class SketchStatsFailed(Exception):
    """What the SQL caller sees: the message of the CepError."""


def analyze_stats(sketch: Any) -> AnalyzeResult:
    """The ``AnalyzeResult`` of one call: fixed schema, the node columns selected."""
    from pyspark.sql.types import (DoubleType, IntegerType, LongType, StringType, StructField,
                                   StructType)

    if sketch is None or not sketch.isTable:
        raise SketchStatsArgumentError("sketch_stats takes one TABLE(...) argument over a "
                                       "<name>_nodes table, with PARTITION BY stream")
    schema = StructType([StructField("stream", StringType()), StructField("nodes", LongType()),
                         StructField("levels", IntegerType()), StructField("top_level", LongType()),
                         StructField("open_events", LongType()), StructField("bytes", LongType()),
                         StructField("fill", DoubleType()), StructField("m", IntegerType()),
                         StructField("k", IntegerType())])
    return AnalyzeResult(schema=schema, select=node_selection(sketch.dataType, "sketch_stats"))


def stream_stats(rows: list[Any]) -> Iterator[tuple[Any, ...]]:
    """One output row per stream of ``rows`` (tuples in ``NODE_COLUMNS`` order)."""
    for stream, mine in group_streams(rows).items():
        tree = query_tree(stream, mine)
        s = tree.stats()
        stored = sum(len(r[-1]) for r in mine)  # bits is the last selected column
        # open_leaf.n_events, not stats()["open_events"]: a restored tree's open leaf is a
        # summary without its events, which stats() counts as 0.
        yield (stream, s["nodes"], s["levels"], s["top_level"], tree.open_leaf.n_events, stored,
               s["mean_fill"], tree.config.m, tree.config.k)


class SketchStatsTable:
    """Row UDTF handler: buffers a partition's node rows, one row per stream in ``terminate``."""

    @staticmethod
    def analyze(sketch: Any = None) -> Any:
        try:
            return analyze_stats(sketch)
        except CepError as err:
            raise SketchStatsFailed(str(err)) from None

    def __init__(self) -> None:
        self.rows: list[Any] = []

    def eval(self, sketch: Any) -> Iterator[Any]:
        self.rows.append(sketch)
        return iter(())

    def terminate(self) -> Iterator[tuple[Any, ...]]:
        if not self.rows:
            return
        try:
            yield from stream_stats(self.rows)
        except CepError as err:
            raise SketchStatsFailed(str(err)) from None


def sketch_stats_udtf() -> Any:
    """The Spark UDTF object for ``sketch_stats`` (row UDTF with ``analyze``)."""
    from pyspark.sql.functions import udtf

    return udtf(SketchStatsTable, useArrow=False)
