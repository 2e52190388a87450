"""Pictures of what the CEP functions return, and Spark's progress in notebooks (docs/notebooks.md).

Every plot takes the rows a user already has (a Spark DataFrame, which is filtered and capped
in Spark and moved with ``toArrow()``; a pyarrow Table; a pandas DataFrame) and returns a
matplotlib Figure built with the object API: nothing is shown, no pyplot state is touched, and
it works under any backend (Agg included). Bad input raises a typed ``CEP-VIZ-0NN`` error
(:mod:`viz.errors`) naming the expected and the found columns.

| function | picture | input |
|---|---|---|
| :func:`plot_match_timeline` | matches per key over time | ``match_seq`` output |
| :func:`plot_sketch_levels` | nodes and filter fill per level of sketch trees | ``<name>_nodes`` or ``sketch_stats`` |
| :func:`plot_trend_graph` | one window's event DAG | the graph job's ``<name>_event_vertices``, ``_from_edges``, ``_to_edges`` |
| :func:`plot_probability` | predicted probability over time per key | ``predict_match(..., output => 'events')`` |
| :func:`plot_standing` | a standing pattern's matches and timeouts per time bin | the match job's ``<name>_matches``, ``<name>_timeouts`` |
| :func:`plot_follows` | the directly-follows graph as a process map | ``follows(...)`` (and ``case_stats(...)``) |
| :func:`plot_variants` | the most common variants, their cases and durations | ``variants(...)`` |
| :func:`spark_progress` | live stage progress of a block's Spark jobs | a SparkSession |
"""

from __future__ import annotations

from viz.errors import VizArgumentError, VizColumnsError, VizError, VizTooManyRowsError
from viz.probability import plot_probability
from viz.process_map import Placed, follows_layout, plot_follows, plot_variants
from viz.progress import SparkProgress, StageProgress, spark_progress
from viz.sketch_levels import node_fill, plot_sketch_levels
from viz.standing import plot_standing
from viz.timeline import plot_match_timeline
from viz.trend_graph import TrendWindow, plot_trend_graph, trend_edges

__all__ = [
    "Placed",
    "SparkProgress",
    "StageProgress",
    "TrendWindow",
    "VizArgumentError",
    "VizColumnsError",
    "VizError",
    "VizTooManyRowsError",
    "follows_layout",
    "node_fill",
    "plot_follows",
    "plot_match_timeline",
    "plot_probability",
    "plot_sketch_levels",
    "plot_standing",
    "plot_trend_graph",
    "plot_variants",
    "spark_progress",
    "trend_edges",
]
