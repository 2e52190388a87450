"""The Delta state of a sketch (docs/sketch.md, "State tables and the incremental job").

Schemas of the four tables of a registered sketch ``<name>`` and conversions between
:class:`~cep.sketch.tree.SketchTree` values and Arrow tables in those schemas. No algorithm
code: trees are built, appended and restored by ``cep.sketch``; this module only moves columns.

``<name>_nodes`` (one row per node, plus the ``is_open`` row of each stream whose open leaf holds
events; :data:`NODES_COLUMNS`)::

    stream STRING, node_id BIGINT, level INT, idx BIGINT, pos_start BIGINT, pos_end BIGINT,
    ts_start TIMESTAMP, ts_end TIMESTAMP, n_events BIGINT, parent_id BIGINT, is_top BOOLEAN,
    is_open BOOLEAN, m INT, k INT, seeds ARRAY<INT>, config_version INT, bits BINARY

``node_id = (level << 48) | idx``; ``parent_id`` is NULL for top-level nodes; ``bits`` is the
CSK1 blob of :mod:`cep.sketch.codec` (versioned, CRC-32, bound to its row). The ``is_open`` row is level 0 with
``node_id`` = the id the open leaf will have when full, ``is_top`` FALSE and ``parent_id`` NULL;
a stream whose open leaf is empty has no ``is_open`` row (an empty leaf has no interval and
no names, and queries skip it).

``<name>_meta`` (one row, :data:`META_COLUMNS`): the sketch's settings, the source table and
columns, and the versions of the last complete run. ``<name>_open`` (one row per stream,
:data:`OPEN_COLUMNS`): the open leaf's events and the stream's last accepted ``(ts, id)``.
``<name>_late`` (:data:`LATE_COLUMNS`): rejected source events, with the run that rejected them.

Timestamps are ``timestamp[us, UTC]`` in Arrow and int64 microseconds in the trees.

Example:
    >>> from cep.sketch import SketchConfig, SketchTree
    >>> cfg = SketchConfig(m=64, k=2, C=2)
    >>> tree = SketchTree.build(list("ABACBDE"), range(7), cfg)
    >>> rows = tree_to_arrow("case-1", tree)
    >>> rows.num_rows, rows.schema == NODES_ARROW_SCHEMA
    (5, True)
    >>> rows.column("is_open").to_pylist(), rows.column("parent_id").to_pylist()[:3]
    ([False, False, False, False, True], [281474976710656, 281474976710656, None])
    >>> back = tree_from_arrow(rows, cfg)          # a twin-less query tree
    >>> back.node_id.tolist() == tree.node_id.tolist(), back.open_leaf.n_events
    (True, 1)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cep.errors import CepError
from cep.sketch.codec import decode_bits, encode_bits, stream_bytes
from cep.sketch.config import ALIGNED, SketchConfig
from cep.sketch.errors import CorruptSketchError
from cep.sketch.stored import binding_fields, merge_of_rows
from cep.sketch.tree import SketchTree, split_node_ids

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

__all__ = [
    "NODES_COLUMNS", "META_COLUMNS", "OPEN_COLUMNS", "LATE_COLUMNS",
    "NODES_ARROW_SCHEMA", "META_ARROW_SCHEMA", "OPEN_ARROW_SCHEMA", "LATE_ARROW_SCHEMA",
    "SketchStateError", "ddl", "spark_schema", "tree_to_arrow", "append_rows", "open_to_arrow",
    "tree_from_arrow", "frontier_from_arrow", "decode_bits_column", "config_from_meta",
    "config_from_nodes", "OpenState", "NODE_ARRAYS", "nodes_from_columns", "tree_columns",
    "append_columns", "stored_node_columns", "restore_frontier",
]

TS = pa.timestamp("us", tz="UTC")

NODES_COLUMNS: tuple[tuple[str, str], ...] = (
    ("stream", "STRING"), ("node_id", "BIGINT"), ("level", "INT"), ("idx", "BIGINT"),
    ("pos_start", "BIGINT"), ("pos_end", "BIGINT"), ("ts_start", "TIMESTAMP"),
    ("ts_end", "TIMESTAMP"), ("n_events", "BIGINT"), ("parent_id", "BIGINT"),
    ("is_top", "BOOLEAN"), ("is_open", "BOOLEAN"), ("m", "INT"), ("k", "INT"),
    ("seeds", "ARRAY<INT>"), ("config_version", "INT"), ("bits", "BINARY"))
"""``<name>_nodes``: one row per node, plus one ``is_open`` row per stream with open events."""

META_COLUMNS: tuple[tuple[str, str], ...] = (
    ("sketch", "STRING"), ("source", "STRING"), ("stream_col", "STRING"), ("type_col", "STRING"),
    ("ts_col", "STRING"), ("id_col", "STRING"), ("m", "INT"), ("k", "INT"), ("C", "INT"),
    ("fanout", "INT"), ("seeds", "ARRAY<INT>"), ("target_fpq", "DOUBLE"),
    ("config_version", "INT"), ("source_version", "BIGINT"), ("nodes_version", "BIGINT"),
    ("open_version", "BIGINT"), ("late_version", "BIGINT"), ("run_id", "STRING"),
    ("events_total", "BIGINT"), ("late_total", "BIGINT"), ("merge", "STRING"))
"""``<name>_meta``: one row. ``source_version`` is the last source version fully processed;
``nodes_version``, ``open_version``, ``late_version`` the versions of the state tables that run
left; ``events_total`` the accepted events so far, ``late_total`` the rejected ones."""

OPEN_COLUMNS: tuple[tuple[str, str], ...] = (
    ("stream", "STRING"), ("leaf_index", "BIGINT"), ("pos_start", "BIGINT"),
    ("names", "ARRAY<STRING>"), ("ts", "ARRAY<TIMESTAMP>"), ("ids", "ARRAY<BIGINT>"),
    ("last_ts", "TIMESTAMP"), ("last_id", "BIGINT"))
"""``<name>_open``: per stream, the open leaf's events and the last accepted ``(ts, id)``."""

LATE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_id", "STRING"), ("source_version", "BIGINT"), ("stream", "STRING"),
    ("type", "STRING"), ("ts", "TIMESTAMP"), ("id", "BIGINT"), ("reason", "STRING"),
    ("last_ts", "TIMESTAMP"), ("last_id", "BIGINT"))
"""``<name>_late``: a rejected source event (its stream, type, ts and id as read from the
source, ``source_version`` the commit it arrived in), why (``reason``: ``late`` when its
``(ts, id)`` is not after the stream's last accepted ``(ts, id)``, which ``last_ts``/``last_id``
give; ``incomplete`` when stream, type, ts or id is NULL) and the run that rejected it."""

_ARROW_TYPES: dict[str, pa.DataType] = {
    "STRING": pa.string(), "BIGINT": pa.int64(), "INT": pa.int32(), "TIMESTAMP": TS,
    "BOOLEAN": pa.bool_(), "BINARY": pa.binary(), "DOUBLE": pa.float64(),
    "ARRAY<INT>": pa.list_(pa.int32()), "ARRAY<STRING>": pa.list_(pa.string()),
    "ARRAY<TIMESTAMP>": pa.list_(TS), "ARRAY<BIGINT>": pa.list_(pa.int64())}


def _arrow_schema(columns: Sequence[tuple[str, str]]) -> pa.Schema:
    return pa.schema([pa.field(name, _ARROW_TYPES[kind]) for name, kind in columns])


NODES_ARROW_SCHEMA = _arrow_schema(NODES_COLUMNS)
META_ARROW_SCHEMA = _arrow_schema(META_COLUMNS)
OPEN_ARROW_SCHEMA = _arrow_schema(OPEN_COLUMNS)
LATE_ARROW_SCHEMA = _arrow_schema(LATE_COLUMNS)


class SketchStateError(CepError):
    """The stored state of a sketch is inconsistent (a missing or unexpected row, settings that
    disagree between tables). Damaged bits are a :class:`~cep.sketch.CorruptSketchError`."""

    code = "CEP-SKETCH-040"


def ddl(columns: Sequence[tuple[str, str]]) -> str:
    """The column list of a schema as Spark DDL, e.g. ``"stream STRING, node_id BIGINT, ..."``.

    Example:
        >>> ddl(OPEN_COLUMNS[:2])
        'stream STRING, leaf_index BIGINT'
    """
    return ", ".join(f"{name} {kind}" for name, kind in columns)


def spark_schema(columns: Sequence[tuple[str, str]]) -> "StructType":
    """The Spark ``StructType`` of a schema (every column nullable)."""
    from pyspark.sql import types as T

    simple = {"STRING": T.StringType(), "BIGINT": T.LongType(), "INT": T.IntegerType(),
              "TIMESTAMP": T.TimestampType(), "BOOLEAN": T.BooleanType(),
              "BINARY": T.BinaryType(), "DOUBLE": T.DoubleType()}

    def kind_of(kind: str) -> Any:
        if kind.startswith("ARRAY<"):
            return T.ArrayType(simple[kind[6:-1]], True)
        if kind.startswith("MAP<"):
            key, value = (part.strip() for part in kind[4:-1].split(","))
            return T.MapType(simple[key], simple[value], True)
        return simple[kind]

    return T.StructType([T.StructField(name, kind_of(kind), True) for name, kind in columns])


# ---- trees -> rows ---------------------------------------------------------------------------

def _ts_array(values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    array = pa.array(np.asarray(values, dtype=np.int64), pa.int64(),
                     mask=None if valid is None else ~valid)
    return array.cast(TS)


def _seeds_column(config: SketchConfig, n: int) -> pa.Array:
    seeds = np.asarray(config.seeds or (), dtype=np.int64)
    if len(seeds) and int(seeds.max()) > np.iinfo(np.int32).max:
        raise SketchStateError(f"seeds {list(config.seeds or ())} do not fit the INT column of "
                               "the state tables; use seeds below 2**31")
    offsets = np.arange(n + 1, dtype=np.int32) * len(seeds)
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()),
                                    pa.array(np.tile(seeds, n).astype(np.int32), pa.int32()))


def encode_bits_column(bits: np.ndarray, m: int, streams: Sequence[Any],
                       cols: Mapping[str, Any]) -> pa.Array:
    """CSK1 blobs of a ``(n, m // 8)`` uint8 matrix as an Arrow binary array, each bound to its
    row (``streams``, one key per row, and the :data:`cep.sketch.codec.BINDING_FIELDS` of
    ``cols``)."""
    fields = binding_fields(cols)
    step = fields.shape[1] * 8
    flat = fields.tobytes()
    keys = [stream_bytes(key) for key in streams]
    return pa.array([encode_bits(row, m, binding=flat[i * step:(i + 1) * step] + keys[i])
                     for i, row in enumerate(np.asarray(bits, dtype=np.uint8))], pa.binary())


NODE_ARRAYS = ("node_id", "level", "idx", "pos_start", "pos_end", "ts_start", "ts_end",
               "n_events", "parent_id", "is_top", "is_open", "bits")
"""The columns of :func:`append_columns` / :func:`tree_columns` (``parent_id`` -1 for NULL,
timestamps int64 microseconds, ``bits`` a uint8 ``(n, m // 8)`` matrix)."""


def nodes_from_columns(stream: str | Sequence[str | None] | np.ndarray,
                       cols: Mapping[str, np.ndarray], config: SketchConfig) -> pa.Table:
    """Nodes-table rows (:data:`NODES_ARROW_SCHEMA`) from :data:`NODE_ARRAYS` columns.

    Args:
        stream: One stream key for every row, or one per row.
        cols: The columns; ``bits`` are packed filters, encoded here as CSK1 blobs.
        config: The sketch's settings (the ``m``, ``k``, ``seeds``, ``config_version`` columns).
    """
    n = len(cols["node_id"])
    parent = np.asarray(cols["parent_id"], dtype=np.int64)
    has_parent = parent >= 0
    streams = [stream] * n if isinstance(stream, str) else list(stream)
    arrays = [
        pa.array(streams, pa.string()),
        pa.array(np.asarray(cols["node_id"], dtype=np.int64), pa.int64()),
        pa.array(np.asarray(cols["level"], dtype=np.int32), pa.int32()),
        pa.array(np.asarray(cols["idx"], dtype=np.int64), pa.int64()),
        pa.array(np.asarray(cols["pos_start"], dtype=np.int64), pa.int64()),
        pa.array(np.asarray(cols["pos_end"], dtype=np.int64), pa.int64()),
        _ts_array(cols["ts_start"]),
        _ts_array(cols["ts_end"]),
        pa.array(np.asarray(cols["n_events"], dtype=np.int64), pa.int64()),
        pa.array(np.where(has_parent, parent, 0), pa.int64(), mask=~has_parent),
        pa.array(np.asarray(cols["is_top"], dtype=np.bool_), pa.bool_()),
        pa.array(np.asarray(cols["is_open"], dtype=np.bool_), pa.bool_()),
        pa.array(np.full(n, config.m, dtype=np.int32), pa.int32()),
        pa.array(np.full(n, config.k, dtype=np.int32), pa.int32()),
        _seeds_column(config, n),
        pa.array(np.full(n, config.config_version, dtype=np.int32), pa.int32()),
        encode_bits_column(np.asarray(cols["bits"], dtype=np.uint8).reshape(n, config.m // 8),
                           config.m, streams, cols),
    ]
    return pa.Table.from_arrays(arrays, schema=NODES_ARROW_SCHEMA)


def _rows_columns(tree: SketchTree, rows: np.ndarray, parent: np.ndarray) -> dict[str, np.ndarray]:
    cols = {name: np.asarray(getattr(tree, source))[rows] for name, source in (
        ("node_id", "node_id"), ("level", "level"), ("idx", "index"), ("pos_start", "pos_start"),
        ("pos_end", "pos_end"), ("ts_start", "ts_start"), ("ts_end", "ts_end"),
        ("n_events", "n_events"), ("is_top", "is_top"), ("bits", "bits"))}
    cols["parent_id"] = parent[rows]
    cols["is_open"] = np.zeros(len(rows), dtype=np.bool_)
    return cols


def _open_columns(tree: SketchTree) -> dict[str, np.ndarray]:
    """The ``is_open`` row of ``tree`` (no row when its open leaf is empty)."""
    leaf = tree.open_leaf
    if not leaf.n_events:
        return {name: np.zeros((0, tree.config.m // 8) if name == "bits" else 0,
                               dtype=np.uint8 if name == "bits" else np.int64)
                for name in NODE_ARRAYS}
    one = np.ones(1, dtype=np.int64)
    return {"node_id": one * leaf.node_id, "level": one * 0, "idx": one * leaf.index,
            "pos_start": one * leaf.pos_start, "pos_end": one * leaf.pos_end,
            "ts_start": one * int(leaf.ts_start), "ts_end": one * int(leaf.ts_end),
            "n_events": one * leaf.n_events, "parent_id": -one,
            "is_top": np.zeros(1, dtype=np.bool_), "is_open": np.ones(1, dtype=np.bool_),
            "bits": np.asarray(leaf.bits)[None, :]}


def _concat_columns(parts: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {name: np.concatenate([np.asarray(p[name]) for p in parts]) for name in NODE_ARRAYS}


def tree_columns(tree: SketchTree) -> dict[str, np.ndarray]:
    """:data:`NODE_ARRAYS` of every row of one stream's tree, then its ``is_open`` row."""
    rows = np.arange(tree.n_nodes, dtype=np.int64)
    return _concat_columns([_rows_columns(tree, rows, tree.parent_ids()), _open_columns(tree)])


def tree_to_arrow(stream: str, tree: SketchTree) -> pa.Table:
    """Every row of one stream's nodes table: all nodes in tree row order, then the ``is_open``
    row (when the open leaf holds events)."""
    return nodes_from_columns(stream, tree_columns(tree), tree.config)


def append_columns(before: SketchTree, after: SketchTree) -> dict[str, np.ndarray]:
    """:data:`NODE_ARRAYS` of the rows an append changed (see :func:`append_rows`).

    Raises:
        SketchStateError: ``after`` does not extend ``before``.
    """
    n0 = before.n_nodes
    if after.n_nodes < n0 or not np.array_equal(after.node_id[:n0], before.node_id):
        raise SketchStateError("the new tree does not extend the old one")
    changed = np.flatnonzero(np.asarray(before.is_top) & ~np.asarray(after.is_top)[:n0])
    rows = np.concatenate((changed, np.arange(n0, after.n_nodes, dtype=np.int64)))
    return _concat_columns([_rows_columns(after, rows, after.parent_ids()),
                            _open_columns(after)])


def append_rows(stream: str, before: SketchTree, after: SketchTree) -> pa.Table:
    """The nodes-table rows an append changed: ``after = before.append(...)``.

    The rows are the old nodes whose ``is_top`` was cleared (now with their ``parent_id``), the
    new nodes (rows of ``after`` beyond ``before``), and the ``is_open`` row of ``after``; each
    is a whole row, so a MERGE on ``(stream, node_id)`` that updates matched rows and inserts the
    others applies it. A new full leaf has the id of the previous ``is_open`` row and replaces
    it. ``before`` may be a frontier (:meth:`SketchTree.frontier`): the rows are the same as for
    the full tree.

    Raises:
        SketchStateError: ``after`` does not extend ``before``.
    """
    try:
        cols = append_columns(before, after)
    except SketchStateError as exc:
        raise SketchStateError(f"stream {stream!r}: {exc.message}") from None
    return nodes_from_columns(stream, cols, after.config)


@dataclass(frozen=True)
class OpenState:
    """One row of ``<name>_open``: the open leaf's events and the stream's last accepted event.

    Attributes:
        stream: The stream key.
        leaf_index: The open leaf's number (= the number of full leaves).
        names, ts, ids: The open leaf's events in order (ts in microseconds).
        last_ts, last_id: The stream's last accepted ``(ts, id)``; ``None`` before any event.
    """

    stream: str
    leaf_index: int
    names: tuple[str, ...]
    ts: tuple[int, ...]
    ids: tuple[int, ...]
    last_ts: int | None
    last_id: int | None

    @staticmethod
    def from_arrow(table: pa.Table) -> list[OpenState]:
        """The states of an ``<name>_open`` table (or a slice of it)."""
        out = []
        for row in table.select([name for name, _ in OPEN_COLUMNS]).to_pylist():
            out.append(OpenState(
                row["stream"], int(row["leaf_index"]), tuple(row["names"] or ()),
                tuple(_micros(t) for t in (row["ts"] or ())), tuple(row["ids"] or ()),
                None if row["last_ts"] is None else _micros(row["last_ts"]), row["last_id"]))
        return out


def _micros(value: Any) -> int:
    """Microseconds since the epoch of an Arrow/Python timestamp value."""
    if isinstance(value, (int, np.integer)):
        return int(value)
    return int(pa.scalar(value, TS).cast(pa.int64()).as_py())


def open_to_arrow(states: Sequence[OpenState], config: SketchConfig) -> pa.Table:
    """``<name>_open`` rows of several streams.

    Raises:
        SketchStateError: a state's leaf is not smaller than ``config.C`` or its lists differ
            in length.
    """
    for s in states:
        if not len(s.names) == len(s.ts) == len(s.ids) or len(s.names) >= config.C:
            raise SketchStateError(f"stream {s.stream!r}: open leaf of {len(s.names)} names, "
                                   f"{len(s.ts)} ts, {len(s.ids)} ids")
    ts_lists = pa.array([list(s.ts) for s in states], pa.list_(pa.int64()))
    ts_lists = pa.ListArray.from_arrays(ts_lists.offsets, ts_lists.flatten().cast(TS))
    last = np.array([-1 if s.last_ts is None else s.last_ts for s in states], dtype=np.int64)
    has_last = np.array([s.last_ts is not None for s in states], dtype=np.bool_)
    arrays = [
        pa.array([s.stream for s in states], pa.string()),
        pa.array([s.leaf_index for s in states], pa.int64()),
        pa.array([s.leaf_index * config.C for s in states], pa.int64()),
        pa.array([list(s.names) for s in states], pa.list_(pa.string())),
        ts_lists,
        pa.array([list(s.ids) for s in states], pa.list_(pa.int64())),
        _ts_array(last, has_last),
        pa.array([s.last_id for s in states], pa.int64()),
    ]
    return pa.Table.from_arrays(arrays, schema=OPEN_ARROW_SCHEMA)


# ---- rows -> trees ---------------------------------------------------------------------------

def decode_bits_column(blobs: pa.Array | pa.ChunkedArray | Sequence[bytes | None], m: int,
                       stream: Any, node_id: Sequence[int] | np.ndarray,
                       fields: np.ndarray | None = None) -> np.ndarray:
    """The packed filters of stored CSK1 blobs, each checked with :func:`decode_bits`.

    Args:
        blobs: The ``bits`` column.
        m: The sketch's bits per filter.
        stream: The rows' stream key.
        node_id: Each row's node id (for messages).
        fields: The rows' :func:`cep.sketch.stored.binding_fields`: every bound blob must sit
            in the row it was written for. ``None``: the bytes alone are checked.

    Returns:
        uint8 ``(n, m // 8)``.

    Raises:
        CorruptSketchError: a blob is missing or damaged, or was written for another row; the
            message names the stream and the node id (and what :func:`decode_bits` found).
    """
    values = blobs.to_pylist() if isinstance(blobs, (pa.Array, pa.ChunkedArray)) else list(blobs)
    ids = np.asarray(node_id, dtype=np.int64)
    key = stream_bytes(stream)
    out = np.empty((len(values), m // 8), dtype=np.uint8)
    for i, blob in enumerate(values):
        try:
            if blob is None:
                raise CorruptSketchError("the bits are NULL")
            bound = None if fields is None else fields[i].tobytes() + key
            out[i] = decode_bits(blob, m, binding=bound)
        except CorruptSketchError as exc:
            level, index = split_node_ids(ids[i])
            raise CorruptSketchError(
                f"stream {stream!r}, node_id {int(ids[i])} (level {int(level)}, index "
                f"{int(index)}): {exc.message}") from None
    return out


def _ts_micros(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    return np.asarray(pc.cast(column, TS).cast(pa.int64()).to_numpy(zero_copy_only=False),
                      dtype=np.int64)


def _check_config_columns(nodes: pa.Table, config: SketchConfig, stream: Any) -> None:
    """Every row carries the sketch's ``m``, ``k``, ``seeds`` and ``config_version``."""
    if not nodes.num_rows:
        return
    seeds = list(config.seeds or ())
    for name, expected in (("m", config.m), ("k", config.k),
                           ("config_version", config.config_version)):
        values = nodes.column(name)
        if values.null_count or pc.any(pc.not_equal(values, expected)).as_py():
            raise SketchStateError(f"stream {stream!r}: a node row has another {name} than the "
                                   f"sketch ({name}={expected})")
    stored = {tuple(x) if x is not None else None for x in nodes.column("seeds").to_pylist()}
    if stored != {tuple(seeds)}:
        raise SketchStateError(f"stream {stream!r}: a node row has other seeds than the "
                               f"sketch ({seeds})")


def stored_node_columns(stream: Any, cols: Mapping[str, Any], config: SketchConfig
                        ) -> dict[str, Any]:
    """Stored node columns (``node_id``, ``level``, ``idx``, intervals, ``n_events``, ``is_top``,
    timestamps as int64 microseconds, ``bits`` as CSK1 blobs) as :meth:`SketchTree.restore`
    reads them, each blob checked.

    Raises:
        CorruptSketchError: a blob is damaged (naming the stream and the node id).
        SketchStateError: a row's ``level``/``idx`` do not match its ``node_id``.
    """
    ids = np.asarray(cols["node_id"], dtype=np.int64)
    level, index = split_node_ids(ids)
    stored_level = np.asarray(cols["level"], dtype=np.int64)
    stored_index = np.asarray(cols["idx"], dtype=np.int64)
    bad = np.flatnonzero((level != stored_level) | (index != stored_index))
    if len(bad):
        i = int(bad[0])
        raise SketchStateError(f"stream {stream!r}, node_id {int(ids[i])}: level/idx "
                               f"{int(stored_level[i])}/{int(stored_index[i])} do not match the id")
    out = {name: np.asarray(cols[name]) for name in ("pos_start", "pos_end", "ts_start", "ts_end",
                                                     "n_events", "is_top")}
    fields = binding_fields({**cols, "is_open": np.zeros(len(ids), dtype=np.bool_)})
    out.update(level=stored_level, index=stored_index,
               bits=decode_bits_column(cols["bits"], config.m, stream, ids, fields))
    return out


def restore_frontier(stream: Any, cols: Mapping[str, Any], state: OpenState | None,
                     config: SketchConfig) -> SketchTree:
    """The appendable frontier of one stream from its stored top-level node columns (see
    :func:`stored_node_columns`) and its open state (``None`` for a new stream).

    Raises:
        CorruptSketchError: a damaged blob, or rows that are not a frontier (naming the stream).
        SketchStateError: ``level``/``idx`` that do not match ``node_id``.
    """
    nodes = stored_node_columns(stream, cols, config)
    if state is None:
        args: dict[str, Any] = {"open_index": 0, "open_names": [], "open_ts": []}
    else:
        args = {"open_index": state.leaf_index, "open_names": list(state.names),
                "open_ts": np.array(state.ts, dtype=np.int64), "last_ts": state.last_ts}
    return _restore_columns(stream, config, nodes, **args)


def _restore_columns(stream: Any, config: SketchConfig, nodes: Mapping[str, Any],
                     **open_args: Any) -> SketchTree:
    try:
        return SketchTree.restore(config, nodes, **open_args)
    except CorruptSketchError as exc:
        if exc.message.startswith("stream "):
            raise
        raise CorruptSketchError(f"stream {stream!r}: {exc.message}") from None


def _node_columns(nodes: pa.Table, config: SketchConfig, stream: Any) -> dict[str, Any]:
    cols: dict[str, Any] = {name: nodes.column(name).to_numpy(zero_copy_only=False) for name in (
        "node_id", "level", "idx", "pos_start", "pos_end", "n_events", "is_top")}
    cols.update(ts_start=_ts_micros(nodes.column("ts_start")),
                ts_end=_ts_micros(nodes.column("ts_end")), bits=nodes.column("bits"))
    return stored_node_columns(stream, cols, config)


def _split_open(nodes: pa.Table) -> tuple[pa.Table, pa.Table]:
    is_open = pc.fill_null(nodes.column("is_open"), False)
    return nodes.filter(pc.invert(is_open)), nodes.filter(is_open)


def _restore(stream: Any, config: SketchConfig, nodes: pa.Table, **open_args: Any
             ) -> SketchTree:
    return _restore_columns(stream, config, _node_columns(nodes, config, stream), **open_args)


def tree_from_arrow(nodes: pa.Table, config: SketchConfig) -> SketchTree:
    """The twin-less query tree of ONE stream from all its nodes-table rows.

    Every node row plus the ``is_open`` row (the open leaf becomes a summary: Bloom membership,
    interval and count, no names). Such a tree answers :func:`cep.sketch.units.cut` and
    ``evaluate_sketch`` with ``membership="bloom"``; it cannot append.

    Raises:
        CorruptSketchError: a blob is damaged (naming stream and node id) or the rows are not
            one tree.
        SketchStateError: rows of several streams, two ``is_open`` rows, or rows whose
            ``m``/``k``/``seeds``/``config_version`` differ from ``config``.
    """
    stream = _one_stream(nodes)
    _check_config_columns(nodes, config, stream)
    full, open_rows = _split_open(nodes)
    if open_rows.num_rows > 1:
        raise SketchStateError(f"stream {stream!r}: {open_rows.num_rows} is_open rows, expected "
                               "at most one")
    if open_rows.num_rows:
        o = open_rows.to_pylist()[0]
        ts_start, ts_end = _micros(o["ts_start"]), _micros(o["ts_end"])
        fields = binding_fields({**{k: [o[k]] for k in ("node_id", "pos_start", "pos_end",
                                                        "n_events", "is_open")},
                                 "ts_start": [ts_start], "ts_end": [ts_end]})
        bits = decode_bits_column(open_rows.column("bits"), config.m, stream,
                                  [o["node_id"]], fields)[0]
        summary = (int(o["n_events"]), ts_start, ts_end, bits)
        open_index = int(o["idx"])
    else:
        pos_end = full.column("pos_end").to_numpy() if full.num_rows else np.zeros(0)
        open_index = (int(pos_end.max()) + 1) // config.C if len(pos_end) else 0
        summary = (0, None, None, np.zeros(config.m // 8, dtype=np.uint8))
    return _restore(stream, config, full, open_index=open_index, open_summary=summary)


def frontier_from_arrow(nodes: pa.Table, state: OpenState | None, config: SketchConfig
                        ) -> SketchTree:
    """The appendable frontier of ONE stream: its top-level node rows plus its open state.

    Args:
        nodes: The stream's rows with ``is_top`` (``is_open`` rows are ignored).
        state: Its ``<name>_open`` row (``None`` for a new stream).
        config: The sketch's settings.

    Raises:
        CorruptSketchError: a blob is damaged (naming stream and node id), or the top-level rows
            do not cover the stream's full leaves.
        SketchStateError: settings columns disagree with ``config``.
    """
    stream = state.stream if state is not None else _one_stream(nodes)
    _check_config_columns(nodes, config, stream)
    full, _ = _split_open(nodes)
    if state is None:
        return _restore(stream, config, full, open_index=0, open_names=[], open_ts=[])
    return _restore(stream, config, full, open_index=state.leaf_index,
                    open_names=list(state.names), open_ts=np.array(state.ts, dtype=np.int64),
                    last_ts=state.last_ts)


def _one_stream(nodes: pa.Table) -> Any:
    if not nodes.num_rows:
        return None
    streams = pc.unique(nodes.column("stream")).to_pylist()
    if len(streams) != 1:
        raise SketchStateError(f"expected the rows of one stream, found {len(streams)} streams")
    return streams[0]


# ---- settings ---------------------------------------------------------------------------------

def config_from_meta(row: Mapping[str, Any]) -> SketchConfig:
    """The :class:`SketchConfig` of a ``<name>_meta`` row (a mapping of its columns)."""
    return SketchConfig(m=int(row["m"]), k=int(row["k"]), C=int(row["C"]),
                        fanout=int(row["fanout"]), seeds=tuple(int(s) for s in row["seeds"]),
                        config_version=int(row["config_version"]),
                        target_fpq=None if row.get("target_fpq") is None
                        else float(row["target_fpq"]),
                        # A meta row written before the column existed is an aligned tree.
                        merge=row.get("merge") or ALIGNED)


def config_from_nodes(nodes: pa.Table) -> SketchConfig | None:
    """The settings of a sketch as far as its nodes-table rows tell (``None`` without rows).

    ``m``, ``k``, ``seeds`` and ``config_version`` are columns; ``C`` is the ``n_events`` of a
    full leaf and ``fanout`` the ratio of a level-1 node's ``n_events`` to ``C``. Without a full
    leaf ``C`` is one more than the largest open leaf (any larger ``C`` gives the same units);
    without a level-1 node ``fanout`` is 2 (it is then never used). Prefer the meta table.
    """
    if not nodes.num_rows:
        return None
    first = nodes.slice(0, 1).to_pylist()[0]
    levels = np.asarray(nodes.column("level").to_numpy(), dtype=np.int64)
    counts = np.asarray(nodes.column("n_events").to_numpy(), dtype=np.int64)
    is_open = np.asarray(pc.fill_null(nodes.column("is_open"), False)
                         .to_numpy(zero_copy_only=False), dtype=np.bool_)
    leaves = counts[(levels == 0) & ~is_open]
    c = int(leaves[0]) if len(leaves) else int(counts[is_open].max()) + 1
    ones = counts[(levels == 1) & ~is_open]
    fanout = int(ones[0]) // c if len(ones) else 2
    full = ~is_open
    merge = merge_of_rows(levels[full], np.asarray(nodes.column("idx").to_numpy())[full],
                          np.asarray(nodes.column("pos_start").to_numpy())[full], c, fanout)
    return SketchConfig(m=int(first["m"]), k=int(first["k"]), C=c, fanout=fanout,
                        seeds=tuple(first["seeds"]), config_version=int(first["config_version"]),
                        merge=merge)

