"""plot_sketch_levels: renders, bar heights are the nodes and fill per level of the trees, typed
errors; fed by a real Spark nodes table and sketch_stats."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from cep.sketch import SketchConfig, SketchTree
from cep.sketch.errors import CorruptSketchError
from delta_tables.sketch_state import tree_to_arrow
from tests.viz.render import png
from viz import VizArgumentError, VizColumnsError, VizTooManyRowsError, node_fill, plot_sketch_levels

CONFIG = SketchConfig(m=64, k=2, C=4)


def _trees(seed: int = 5) -> dict[str, SketchTree]:
    rng = np.random.default_rng(seed)
    trees = {}
    for i, n in enumerate((90, 41, 7)):  # 7 events: one full leaf and an open one
        names = rng.choice(list("ABCDEFGHIJ"), size=n).tolist()
        trees[f"s{i}"] = SketchTree.build(names, np.arange(n) * 1_000_000, CONFIG)
    return trees


def _nodes(trees: dict[str, SketchTree]) -> pa.Table:
    return pa.concat_tables([tree_to_arrow(name, tree) for name, tree in trees.items()])


def _expected(trees: list[SketchTree], levels: int) -> tuple[list[float], list[float]]:
    """Nodes and mean fill per level straight from the trees' own arrays (not from the blobs)."""
    level = np.concatenate([t.level for t in trees])
    ones = np.concatenate([np.unpackbits(t.bits, axis=1).sum(axis=1) for t in trees]) / CONFIG.m
    counts = [float((level == lv).sum()) for lv in range(levels)]
    fill = [float(ones[level == lv].mean()) if (level == lv).any() else 0.0 for lv in range(levels)]
    return counts, fill


def _heights(ax) -> list[list[float]]:
    return [[float(b.get_height()) for b in c.patches] for c in ax.containers]


def test_summed_levels_match_the_trees() -> None:
    trees = _trees()
    fig = plot_sketch_levels(_nodes(trees))
    png(fig)
    nodes_ax, fill_ax = fig.axes
    levels = max(t.n_levels for t in trees.values())
    counts, fill = _expected(list(trees.values()), levels)
    assert _heights(nodes_ax) == [counts]
    assert np.allclose(_heights(fill_ax)[0], fill)
    assert [c.get_label() for c in nodes_ax.containers] == ["all streams"]
    open_leaves = sum(t.open_leaf.n_events > 0 for t in trees.values())
    assert fig._suptitle.get_text() == (f"{sum(t.n_nodes for t in trees.values())} nodes of 3 "
                                        f"stream(s), {open_leaves} open leaves")


def test_per_stream_bars_side_by_side() -> None:
    trees = _trees()
    fig = plot_sketch_levels(_nodes(trees).to_pandas(), streams=["s1", "s0"])
    png(fig)
    nodes_ax, fill_ax = fig.axes
    levels = max(trees[s].n_levels for s in ("s0", "s1"))
    assert [c.get_label() for c in nodes_ax.containers] == ["s1", "s0"]
    for i, s in enumerate(["s1", "s0"]):
        counts, fill = _expected([trees[s]], levels)
        assert _heights(nodes_ax)[i] == counts
        assert np.allclose(_heights(fill_ax)[i], fill)
        # The mean over all of a stream's nodes is the tree's own mean fill.
        w = np.asarray(counts)
        assert np.isclose((w * np.asarray(_heights(fill_ax)[i])).sum() / w.sum(),
                          trees[s].stats()["mean_fill"])


def test_node_fill_checks_every_blob() -> None:
    table = _nodes(_trees())
    fill = node_fill(table.column("bits"), table.column("m").to_numpy())
    assert fill.shape == (table.num_rows,) and ((0 <= fill) & (fill <= 1)).all()
    blobs = table.column("bits").to_pylist()
    blobs[3] = blobs[3][:-5] + bytes([blobs[3][-5] ^ 1]) + blobs[3][-4:]  # in the bytes' CRC
    with pytest.raises(CorruptSketchError, match="CEP-SKETCH-002"):
        node_fill(pa.array(blobs, pa.binary()), table.column("m").to_numpy())


def test_bad_input_is_a_typed_error() -> None:
    nodes = _nodes(_trees())
    with pytest.raises(VizColumnsError, match=r"CEP-VIZ-001: sketch: expected the columns of a "
                                              r"nodes table \['stream', 'level', 'is_open', 'm', "
                                              r"'bits'\] or of sketch_stats"):
        plot_sketch_levels(nodes.drop_columns(["bits"]))
    with pytest.raises(VizArgumentError, match=r"streams: \['nope'\] not in the input"):
        plot_sketch_levels(nodes, streams="nope")
    with pytest.raises(VizArgumentError, match="max_streams=2"):
        plot_sketch_levels(nodes, streams=["s0", "s1", "s2"], max_streams=2)
    with pytest.raises(VizTooManyRowsError):
        plot_sketch_levels(nodes, max_rows=5)


@pytest.mark.spark
def test_fed_by_spark_nodes_table_and_sketch_stats(spark) -> None:
    spark.createDataFrame(_nodes(_trees())).createOrReplaceTempView("viz_sketch_nodes")
    nodes = spark.table("viz_sketch_nodes")
    fig = plot_sketch_levels(nodes)  # the Spark DataFrame itself
    png(fig)
    per_level = {r.level: r.n for r in spark.sql(
        "SELECT level, count(*) AS n FROM viz_sketch_nodes WHERE NOT is_open GROUP BY level").collect()}
    assert _heights(fig.axes[0]) == [[float(per_level.get(lv, 0)) for lv in range(len(per_level))]]

    stats = spark.sql("SELECT * FROM sketch_stats(TABLE(viz_sketch_nodes))")
    rows = stats.collect()
    fig = plot_sketch_levels(stats)
    png(fig)
    heights = sorted({r.levels for r in rows})
    streams_ax, fill_ax = fig.axes
    assert [(round(b.get_x() + b.get_width() / 2), b.get_height()) for b in streams_ax.patches] == [
        (h, sum(r.levels == h for r in rows)) for h in heights]
    assert np.allclose([b.get_height() for b in fill_ax.patches],
                       [np.mean([r.fill for r in rows if r.levels == h]) for h in heights])
    one = plot_sketch_levels(stats, streams="s1")
    assert [b.get_height() for b in one.axes[0].patches] == [1]
