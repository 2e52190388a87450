"""The levels and fill of sketch trees: how many nodes each level holds and how full their filters are.

Two inputs (docs/sketch.md):

* a nodes table ``<name>_nodes`` (any version of it): nodes per level and the mean density
  (set bits / ``m``) of the filters per level, summed over all streams or side by side for a
  few streams. Every ``bits`` blob is decoded and its bytes checked (``CEP-SKETCH-002`` when
  one is damaged); the row tag is not (the picture reads no interval, and a view's timestamps
  may come back in another time zone), see docs/sketch.md "Checksums". The open leaf (``is_open``) is not a node, as in ``sketch_stats``; the title
  counts open leaves apart. The fill panel marks 1/2: a parent exists only while the OR of its
  children is at most half full.
* the output of ``sketch_stats`` (one row per stream): streams per tree height (``levels``)
  and their mean fill.

Example:
    >>> import pandas as pd
    >>> stats = pd.DataFrame({"stream": ["a", "b", "c"], "nodes": [7, 3, 1], "levels": [3, 2, 1],
    ...                       "fill": [0.3, 0.25, 0.2]})
    >>> fig = plot_sketch_levels(stats)
    >>> [(int(b.get_x() + b.get_width() / 2), float(b.get_height())) for b in fig.axes[0].patches]
    [(1, 1.0), (2, 1.0), (3, 1.0)]
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from viz._input import check_limit, collect, columns_of, labels, new_figure, no_nulls
from viz.errors import VizArgumentError, VizColumnsError

NODES_COLUMNS = ("stream", "level", "is_open", "m", "bits")
"""What the picture reads from a ``<name>_nodes`` table."""
STATS_COLUMNS = ("stream", "nodes", "levels", "fill")
"""What the picture reads from the output of ``sketch_stats``."""

def node_fill(bits: pa.ChunkedArray | pa.Array, m: np.ndarray, *, stream: Any = None,
              node_ids: np.ndarray | None = None) -> np.ndarray:
    """The density (set bits / ``m``) of every CSK1 blob of a ``bits`` column, all rows at once.

    Args:
        bits: The ``bits`` column (BINARY).
        m: Each row's bits per filter.
        stream, node_ids: For the message of a damaged blob.

    Returns:
        float64 densities in [0, 1], one per row.

    Raises:
        CorruptSketchError: a damaged blob (CEP-SKETCH-002).

    Example:
        >>> from cep.sketch import encode_bits
        >>> node_fill(pa.array([encode_bits(bytes([0b1011, 0]), 16)]), np.array([16])).tolist()
        [0.1875]
    """
    from cep.sketch.stored import decode_bits_matrix

    column = bits.combine_chunks() if isinstance(bits, pa.ChunkedArray) else bits
    if pa.types.is_large_binary(column.type):
        column = column.cast(pa.binary())
    m = np.asarray(m, dtype=np.int64)
    out = np.zeros(len(column), dtype=np.float64)
    for width in np.unique(m):  # one pass per filter size (a table normally has one)
        rows = np.flatnonzero(m == width)
        part = column.take(pa.array(rows)) if len(rows) != len(column) else column
        offsets = np.frombuffer(part.buffers()[1], dtype=np.int32)[part.offset:
                                                                   part.offset + len(part) + 1]
        data = (np.frombuffer(part.buffers()[2], dtype=np.uint8) if part.buffers()[2] is not None
                else np.zeros(0, dtype=np.uint8))
        valid = np.asarray(part.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        matrix = decode_bits_matrix(data, offsets, int(width), stream=stream,
                                    node_ids=None if node_ids is None else node_ids[rows],
                                    valid=valid)
        out[rows] = np.bitwise_count(matrix).sum(axis=1) / float(width)
    return out


def plot_sketch_levels(sketch: Any, *, streams: str | Sequence[str] | None = None,
                       max_streams: int = 8, max_rows: int = 2_000_000,
                       title: str | None = None) -> Any:
    """Draw the sketch trees' levels: nodes per level and mean filter fill per level.

    Args:
        sketch: A ``<name>_nodes`` table or the output of ``sketch_stats``: a Spark DataFrame
            (``spark.table("app_sketch_nodes")``, a ``VERSION AS OF`` read, a
            ``sketch_stats(...)`` query), a pyarrow Table or a pandas DataFrame.
        streams: None: sum over every stream of the input. A stream key or a list of keys:
            only those streams (filtered in Spark before anything is collected), drawn side
            by side for a nodes table (at most ``max_streams``).
        max_streams: The most streams drawn side by side.
        max_rows: The most rows read; more is :class:`~viz.errors.VizTooManyRowsError`.
        title: The figure title; a default one counts streams and nodes.

    Returns:
        The matplotlib Figure with two axes: nodes (or streams) per level, and mean fill per
        level. Each series is one bar container labelled with its stream (or ``all streams``).

    Raises:
        VizColumnsError: neither the columns of a nodes table nor those of ``sketch_stats``
            (CEP-VIZ-001).
        VizTooManyRowsError: more than ``max_rows`` rows (CEP-VIZ-002).
        VizArgumentError: more than ``max_streams`` streams asked for, a limit that is not
            positive, a stream that is not in the input, or an input that is not a table
            (CEP-VIZ-003).
        CorruptSketchError: a damaged ``bits`` blob (CEP-SKETCH-002).
    """
    max_streams = check_limit(max_streams, name="max_streams")
    wanted = None if streams is None else [streams] if isinstance(streams, str) else list(streams)
    if wanted is not None and not 1 <= len(wanted) <= max_streams:
        raise VizArgumentError(f"streams: expected 1 to max_streams={max_streams} stream keys, "
                               f"found {len(wanted)}")
    found = columns_of(sketch, what="sketch")
    isin = None if wanted is None else {"stream": wanted}
    if all(c in found for c in NODES_COLUMNS):
        table = collect(sketch, NODES_COLUMNS, what="sketch nodes", max_rows=max_rows,
                        optional=["node_id"], isin=isin)
        return _from_nodes(table, wanted, title)
    if all(c in found for c in STATS_COLUMNS):
        table = collect(sketch, STATS_COLUMNS, what="sketch_stats", max_rows=max_rows, isin=isin)
        return _from_stats(table, wanted, title)
    raise VizColumnsError(f"sketch: expected the columns of a nodes table {list(NODES_COLUMNS)} "
                          f"or of sketch_stats {list(STATS_COLUMNS)}, found {found}")


def _missing_streams(stream: np.ndarray, wanted: list[str] | None) -> None:
    if wanted is None:
        return
    absent = sorted(set(wanted) - set(np.unique(stream).tolist()))
    if absent:
        raise VizArgumentError(f"streams: {absent} not in the input")


def _from_nodes(table: pa.Table, wanted: list[str] | None, title: str | None) -> Any:
    no_nulls(table, ["stream", "level", "is_open", "m"], what="sketch nodes")
    stream = labels(table, ["stream"])
    _missing_streams(stream, wanted)
    level = np.asarray(table.column("level").to_numpy(zero_copy_only=False), dtype=np.int64)
    is_open = np.asarray(table.column("is_open").to_numpy(zero_copy_only=False), dtype=bool)
    node = ~is_open
    ids = (np.asarray(table.column("node_id").to_numpy(zero_copy_only=False), dtype=np.int64)
           if "node_id" in table.column_names else None)
    fill = np.zeros(len(node))
    where = "(any input stream)" if wanted is None else ",".join(wanted)  # for a damaged blob
    fill[node] = node_fill(table.column("bits").filter(pa.array(node)),
                           np.asarray(table.column("m").to_numpy(zero_copy_only=False))[node],
                           stream=where, node_ids=None if ids is None else ids[node])
    series = [("all streams", node)] if wanted is None else [(s, node & (stream == s))
                                                             for s in wanted]
    levels = np.arange(int(level[node].max()) + 1 if node.any() else 1)
    fig, (ax_n, ax_f) = new_figure(11, 4.0, ncols=2)
    width = 0.8 / len(series)
    for i, (name, mask) in enumerate(series):
        counts = np.bincount(level[mask], minlength=len(levels))[:len(levels)]
        sums = np.bincount(level[mask], weights=fill[mask], minlength=len(levels))[:len(levels)]
        mean = np.divide(sums, counts, out=np.zeros(len(levels)), where=counts > 0)
        x = levels + (i - (len(series) - 1) / 2) * width
        ax_n.bar(x, counts, width=width, label=name, color=f"C{i}")
        ax_f.bar(x, mean, width=width, label=name, color=f"C{i}")
    ax_f.axhline(0.5, color="0.35", linestyle="--", linewidth=1, label="merge limit 1/2")
    if len(levels) and node.any():
        per_level = np.bincount(level[node])
        if per_level.max() > 50 * max(1, per_level[per_level > 0].min()):
            ax_n.set_yscale("log")
    _label(ax_n, ax_f, levels, "level (0 = leaves)", ("nodes", "nodes per level"),
           ("mean fill (set bits / m)", "filter fill per level"))
    if len(series) > 1:
        ax_n.legend(fontsize="small", frameon=False)
    n_streams = len(np.unique(stream)) if len(stream) else 0
    fig.suptitle(title or f"{int(node.sum())} nodes of {n_streams} stream(s), "
                 f"{int(is_open.sum())} open leaves")
    return fig


def _label(ax_n: Any, ax_f: Any, ticks: Any, xlabel: str, counts: tuple[str, str],
           fill: tuple[str, str]) -> None:
    """Ticks, labels and titles of the two panels (counts left, fill right, fill in [0, 1])."""
    for ax in (ax_n, ax_f):
        ax.set_xticks(ticks)
        ax.set_xlabel(xlabel)
        ax.grid(axis="y", alpha=0.3)
    ax_n.set_ylabel(counts[0])
    ax_n.set_title(counts[1])
    ax_f.set_ylabel(fill[0])
    ax_f.set_ylim(0, 1)
    ax_f.set_title(fill[1])
    ax_f.legend(fontsize="small", frameon=False)


def _from_stats(table: pa.Table, wanted: list[str] | None, title: str | None) -> Any:
    no_nulls(table, ["levels", "nodes", "fill"], what="sketch_stats")
    _missing_streams(labels(table, ["stream"]), wanted)
    levels = np.asarray(table.column("levels").to_numpy(zero_copy_only=False), dtype=np.int64)
    fill = np.asarray(pc.cast(table.column("fill"), "float64").to_numpy(zero_copy_only=False))
    nodes = np.asarray(table.column("nodes").to_numpy(zero_copy_only=False), dtype=np.int64)
    heights = np.unique(levels)
    streams = np.bincount(levels)[heights] if len(levels) else np.zeros(0, dtype=np.int64)
    mean_fill = (np.bincount(levels, weights=fill)[heights] / streams if len(levels)
                 else np.zeros(0))
    fig, (ax_n, ax_f) = new_figure(11, 4.0, ncols=2)
    ax_n.bar(heights, streams, width=0.7, label="streams", color="C0")
    ax_f.bar(heights, mean_fill, width=0.7, label="streams", color="C1")
    ax_f.axhline(0.5, color="0.35", linestyle="--", linewidth=1, label="merge limit 1/2")
    _label(ax_n, ax_f, heights, "levels of the tree", ("streams", "streams per tree height"),
           ("mean fill of the streams' nodes", "fill per tree height"))
    fig.suptitle(title or f"{len(levels)} stream(s), {int(nodes.sum())} nodes")
    return fig
