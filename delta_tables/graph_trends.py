"""Join-based trend extraction over a persisted ABI graph (Mei et al., ICPP 2021, Algorithm 2).

For windows too large for one Python worker: the complete trends are computed by Spark
DataFrame joins over the graph tables the graph job wrote (:mod:`delta_tables.graph_state`),
read as of any version:

1. the range-form to-edges are joined with the from-edges of the same window and predicate
   (``lo <= vertex < hi``): the explicit edges of each predicate; their intersection over the
   predicates, with strictly increasing timestamps, is the window's event DAG;
2. start events (no incoming edge) and end events (no outgoing edge) come from anti-joins
   (the pre-filter, Algorithm 3);
3. partial trends start at the start events and are extended by one join with the (broadcast)
   edges per step; a partial trend whose last event is an end event is complete. The loop runs
   as many steps as the longest trend has events (checkpointed each step so plans stay small).

The answer equals :func:`cep.trends.extract_trends` on the same window (tested against the
trend oracle). Example (needs a session and a built graph)::

    trends = graph_trends(spark, load_graph(settings, "checks_graph"), version=3)
    trends.orderBy("key", "window_start").show()
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cep.errors import CepError
from delta_tables.catalog import read_table
from delta_tables.graph_state import GraphConf

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class GraphTrendLimitError(CepError):
    """The join-based extraction needed more steps than ``max_steps`` (a trend longer than the
    limit); ask for fewer windows or a larger limit."""

    code = "CEP-TREND-041"


def _read(spark: "SparkSession", conf: GraphConf, suffix: str, version: int | None) -> "DataFrame":
    return read_table(spark, conf.tables()[suffix], version=version)


def graph_edges(spark: "SparkSession", conf: GraphConf, version: int | None = None
                ) -> "DataFrame":
    """``key, window_start, src, dst`` (event positions): the event DAG of every window."""
    from pyspark.sql import functions as F

    events = (_read(spark, conf, "event_vertices", version)
              .select("key", "window_start", F.posexplode("ts").alias("pos", "ts")))
    if not conf.query.predicates:  # no neighbour predicate: every later event follows
        a = events.select("key", "window_start", F.col("pos").alias("src"), F.col("ts").alias("t0"))
        b = events.select("key", "window_start", F.col("pos").alias("dst"), F.col("ts").alias("t1"))
        return (a.join(b, ["key", "window_start"]).where(F.col("t0") < F.col("t1"))
                .select("key", "window_start", "src", "dst"))
    frm = (_read(spark, conf, "from_edges", version)
           .select("key", "window_start", "predicate",
                   F.explode(F.arrays_zip("event", "vertex")).alias("e"))
           .select("key", "window_start", "predicate", F.col("e.event").alias("dst"),
                   F.col("e.vertex").alias("vertex")))
    to = (_read(spark, conf, "to_edges", version)
          .select("key", "window_start", "predicate",
                  F.explode(F.arrays_zip("event", "lo", "hi")).alias("e"))
          .select("key", "window_start", "predicate", F.col("e.event").alias("src"),
                  F.col("e.lo").alias("lo"), F.col("e.hi").alias("hi")))
    n_pred = (_read(spark, conf, "to_edges", version).groupBy("key", "window_start")
              .agg(F.countDistinct("predicate").alias("n_pred")))
    per_pred = (to.join(frm, ["key", "window_start", "predicate"])
                .where((F.col("vertex") >= F.col("lo")) & (F.col("vertex") < F.col("hi")))
                .select("key", "window_start", "predicate", "src", "dst").distinct())
    both = (per_pred.groupBy("key", "window_start", "src", "dst")
            .agg(F.countDistinct("predicate").alias("n"))
            .join(n_pred, ["key", "window_start"]).where(F.col("n") == F.col("n_pred")))
    src_ts = events.select("key", "window_start", F.col("pos").alias("src"),
                           F.col("ts").alias("src_ts"))
    dst_ts = events.select("key", "window_start", F.col("pos").alias("dst"),
                           F.col("ts").alias("dst_ts"))
    return (both.join(src_ts, ["key", "window_start", "src"])
            .join(dst_ts, ["key", "window_start", "dst"])
            .where(F.col("src_ts") < F.col("dst_ts"))
            .select("key", "window_start", "src", "dst"))


def graph_trends(spark: "SparkSession", conf: GraphConf, version: int | None = None, *,
                 max_steps: int = 10_000) -> "DataFrame":
    """Every complete trend of every window of the graph, by joins (see the module docstring).

    Args:
        spark: the session.
        conf: the registered graph.
        version: read the graph tables as of this version of each (None: current). Use the
            versions a consistent run recorded (the graph's meta table is written last).
        max_steps: the most join steps (the longest trend's length).

    Returns:
        ``key, window_start, window_end, length, event_ids ARRAY<BIGINT>`` (ids in ts order).

    Raises:
        GraphTrendLimitError: a trend longer than ``max_steps``.
    """
    from pyspark.sql import functions as F

    edges = graph_edges(spark, conf, version).localCheckpoint()
    events = _read(spark, conf, "event_vertices", version)
    positions = events.select("key", "window_start", F.posexplode("event_id").alias("pos", "id"))
    has_in = edges.select("key", "window_start", F.col("dst").alias("pos")).distinct()
    has_out = edges.select("key", "window_start", F.col("src").alias("pos")).distinct()
    starts = positions.join(has_in, ["key", "window_start", "pos"], "left_anti")
    ends = positions.join(has_out, ["key", "window_start", "pos"], "left_anti") \
        .select("key", "window_start", F.col("pos").alias("last"), F.lit(True).alias("is_end"))
    partial = starts.select("key", "window_start", F.array("pos").alias("path"),
                            F.col("pos").alias("last"))
    step_edges = F.broadcast(edges.withColumnRenamed("src", "last"))
    done = []
    for _ in range(max_steps):
        marked = partial.join(F.broadcast(ends), ["key", "window_start", "last"], "left") \
            .localCheckpoint()
        done.append(marked.where(F.col("is_end")).select("key", "window_start", "path"))
        open_ = marked.where(F.col("is_end").isNull()).drop("is_end")
        if open_.limit(1).count() == 0:
            break
        partial = (open_.join(step_edges, ["key", "window_start", "last"])
                   .select("key", "window_start",
                           F.concat("path", F.array("dst")).alias("path"),
                           F.col("dst").alias("last")))
    else:
        raise GraphTrendLimitError(f"graph {conf.name}: a trend is longer than max_steps="
                                   f"{max_steps}")
    trends = done[0]
    for more in done[1:]:
        trends = trends.unionByName(more)
    return (trends.join(events.select("key", "window_start", "window_end", "event_id"),
                        ["key", "window_start"])
            .select("key", "window_start", "window_end", F.size("path").alias("length"),
                    F.transform("path", lambda p: F.element_at("event_id", (p + 1).cast("int")))
                    .alias("event_ids")))


def graph_counts(trends: Any) -> "DataFrame":
    """Trends per window from :func:`graph_trends` (``key, window_start, n_trends``)."""
    from pyspark.sql import functions as F

    return trends.groupBy("key", "window_start").agg(F.count("*").alias("n_trends"))
