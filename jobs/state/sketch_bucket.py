"""One bucket of a sketch run: the work rows of any number of streams in, changed rows out.

:func:`process_bucket` is the sketch job's step 3 (:mod:`jobs.state.sketch`), run in Spark's
Python workers through :mod:`jobs.state.sketch_chunks`. Its input rows are the job's work rows:
``kind`` :data:`EVENT` (a new source row), :data:`NODE` (a stored top-level node row) and
:data:`OPEN` (a stream's stored open row, its columns prefixed ``o_``). Its output rows are
:data:`OUT_COLUMNS`: node rows to merge, each stream's new open row, and the late and
incomplete events. It reads nothing but its rows and the sketch's config, so Spark can ship it
to workers.

Example:
    >>> _stream_ranges(np.array(["a", "a", "b"], dtype=object))
    [(0, 2), (2, 3)]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cep.sketch.config import SketchConfig
from delta_tables.sketch_state import (
    NODES_COLUMNS,
    OPEN_ARROW_SCHEMA,
    OPEN_COLUMNS,
    TS,
    OpenState,
    SketchStateError,
    append_columns,
    nodes_from_columns,
    open_to_arrow,
    restore_frontier,
)

if TYPE_CHECKING:
    from cep.sketch.tree import SketchTree

__all__ = ["process_bucket", "OUT_COLUMNS", "EVENT", "NODE", "OPEN", "OUT_NODE", "OUT_OPEN",
           "OUT_LATE"]

# Kinds of the rows that go into and come out of the per-stream function.
EVENT, NODE, OPEN = 0, 1, 2
OUT_NODE, OUT_OPEN, OUT_LATE = 0, 1, 2

OUT_COLUMNS: tuple[tuple[str, str], ...] = (
    (("out", "INT"),) + NODES_COLUMNS
    + tuple((f"o_{name}", kind) for name, kind in OPEN_COLUMNS if name != "stream")
    + (("l_type", "STRING"), ("l_ts", "TIMESTAMP"), ("l_id", "BIGINT"),
       ("l_version", "BIGINT"), ("l_reason", "STRING"), ("l_last_ts", "TIMESTAMP"),
       ("l_last_id", "BIGINT"), ("n_accepted", "BIGINT")))
"""Rows the per-stream function emits: ``out`` 0 = a nodes row, 1 = the stream's open row,
2 = a late event; other columns are NULL where they do not apply."""

_EMPTY_NODES: dict[str, Any] = {
    **{name: np.zeros(0, dtype=np.int64) for name in (
        "node_id", "level", "idx", "pos_start", "pos_end", "ts_start", "ts_end", "n_events")},
    "is_top": np.zeros(0, dtype=np.bool_), "bits": []}
"""The node columns of a stream without stored nodes (:func:`restore_frontier`)."""


def _padded(schema: pa.Schema, kind: int, n: int, columns: dict[str, Any]) -> pa.Table:
    """``n`` output rows of kind ``kind``: the given columns, NULL in every other one."""
    arrays = []
    for fld in schema:
        if fld.name == "out":
            arrays.append(pa.array(np.full(n, kind, dtype=np.int32), pa.int32()))
        elif fld.name in columns:
            arrays.append(columns[fld.name])
        else:
            arrays.append(pa.nulls(n, fld.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def _filled(table: pa.Table, name: str, fill: Any = 0) -> np.ndarray:
    """A column as numpy, NULLs as ``fill`` and timestamps as microseconds."""
    column = table.column(name)
    if pa.types.is_timestamp(column.type):
        column = pc.cast(column, TS).cast(pa.int64())
    return np.asarray(pc.fill_null(column, fill).to_numpy(zero_copy_only=False))


def _late_bounds(accepted: np.ndarray, ts: np.ndarray, ids: np.ndarray,
                 last_ts: int | None, last_id: int | None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each late event: the last accepted ``(ts, id)`` before it, and whether there is one."""
    late = ~accepted
    idx = np.where(accepted, np.arange(len(ts)), -1)
    before = np.concatenate(([-1], np.maximum.accumulate(idx)[:-1])) if len(ts) else idx
    at = before[late]
    has = at >= 0
    bound_ts = np.where(has, ts[np.maximum(at, 0)], -1 if last_ts is None else last_ts)
    bound_id = np.where(has, ids[np.maximum(at, 0)], -1 if last_id is None else last_id)
    return bound_ts, bound_id, has | (last_ts is not None)


def process_bucket(table: pa.Table, config: SketchConfig, schema: pa.Schema) -> pa.Table:
    """Append each stream's new events to its restored frontier; all changed rows as ``schema``.

    ``table`` holds the work rows of any number of streams: ``kind`` 0 events (``e_type``,
    ``e_ts``, ``e_id``, ``e_version``), 1 top-level node rows (the nodes columns), 2 open rows
    (``o_*``). Per stream: restore the frontier (:func:`restore_frontier`), order the complete
    events by ``(ts, id)`` (then type and commit version: a total order, so a rerun keeps the
    same duplicate), reject incomplete and late ones, append the rest, and emit the changed
    node rows, the new open state (with ``n_accepted``) and the rejected events. Columns are
    gathered per bucket and converted to Arrow once.
    """
    if not table.num_rows:
        return schema.empty_table()
    table = table.take(pc.sort_indices(table, sort_keys=[("stream", "ascending", "at_start"),
                                                         ("kind", "ascending", "at_end")]))
    stream = table.column("stream").to_numpy(zero_copy_only=False)
    kind = np.asarray(table.column("kind").to_numpy(zero_copy_only=False))
    events = _EventColumns.of(table)
    nodes = _stored_nodes(table, kind, config)
    states = _open_states(table, kind)

    rejected = _Rejected(events)
    node_parts: list[dict[str, np.ndarray]] = []
    node_streams: list[str] = []
    new_states: list[OpenState] = []
    n_accepted: list[int] = []
    for lo, hi in _stream_ranges(stream):
        key = stream[lo]
        seg = np.arange(lo, hi)
        rows = seg[kind[lo:hi] == EVENT]
        if key is None:
            rejected.add(None, rows, "incomplete")
            continue
        state = states.get(key)
        front = _frontier(key, seg[kind[lo:hi] == NODE], nodes, state, config)
        part, new_state, accepted = _append_stream(key, rows, front, state, events, rejected)
        node_parts.append(part)
        node_streams += [key] * len(part["node_id"])
        new_states.append(new_state)
        n_accepted.append(accepted)

    parts = [part for part in (_node_table(schema, node_parts, node_streams, config),
                               _open_table(schema, new_states, n_accepted, config),
                               rejected.table(schema)) if part is not None]
    return pa.concat_tables(parts) if parts else schema.empty_table()


def _stream_ranges(stream: np.ndarray) -> list[tuple[int, int]]:
    """The ``[lo, hi)`` row range of each stream, in rows sorted by stream."""
    n = len(stream)
    change = np.ones(n, dtype=np.bool_)
    change[1:] = stream[1:] != stream[:-1]
    starts = np.flatnonzero(change)
    ends = np.append(starts[1:], n)
    return list(zip(starts.tolist(), ends.tolist()))


@dataclass(frozen=True)
class _EventColumns:
    """A bucket's event columns as numpy arrays, one value per work row of any kind (NULLs
    filled with 0: the ``valid_*`` masks say which)."""

    e_type: np.ndarray
    e_ts: np.ndarray
    e_id: np.ndarray
    e_version: np.ndarray
    valid_ts: np.ndarray
    valid_id: np.ndarray
    complete: np.ndarray

    @classmethod
    def of(cls, table: pa.Table) -> "_EventColumns":
        """The event columns of ``table`` (complete: with a type, a timestamp and an id)."""
        valid_ts = np.asarray(pc.is_valid(table.column("e_ts")))
        valid_id = np.asarray(pc.is_valid(table.column("e_id")))
        complete = np.asarray(pc.is_valid(table.column("e_type"))) & valid_ts & valid_id
        e_type = table.column("e_type").to_numpy(zero_copy_only=False)
        e_ts, e_id, e_version = (_filled(table, name) for name in ("e_ts", "e_id", "e_version"))
        return cls(e_type, e_ts, e_id, e_version, valid_ts, valid_id, complete)


def _stored_nodes(table: pa.Table, kind: np.ndarray, config: SketchConfig) -> dict[str, Any]:
    """The node columns of the bucket, one value per work row (empty without node rows); the
    stored rows are checked against the sketch's settings first."""
    node_rows = kind == NODE
    if not node_rows.any():
        return {}
    _check_settings_columns(table.filter(pa.array(node_rows)), config)
    nodes: dict[str, Any] = {name: _filled(table, name) for name in (
        "node_id", "level", "idx", "pos_start", "pos_end", "ts_start", "ts_end", "n_events")}
    nodes["is_top"] = _filled(table, "is_top", False).astype(np.bool_)
    nodes["bits"] = table.column("bits")
    return nodes


def _open_states(table: pa.Table, kind: np.ndarray) -> dict[str, OpenState]:
    """The stored open row of each stream of the bucket; two for one stream is a
    :class:`SketchStateError`."""
    open_rows = table.filter(pa.array(kind == OPEN))
    states: dict[str, OpenState] = {}
    if open_rows.num_rows:
        cols = {name: open_rows.column(f"o_{name}") if name != "stream"
                else open_rows.column("stream") for name, _ in OPEN_COLUMNS}
        for state in OpenState.from_arrow(pa.table(cols).cast(OPEN_ARROW_SCHEMA)):
            if state.stream in states:
                raise SketchStateError(f"stream {state.stream!r}: two open rows")
            states[state.stream] = state
    return states


def _frontier(key: str, rows: np.ndarray, nodes: dict[str, Any], state: OpenState | None,
              config: SketchConfig) -> SketchTree:
    """A stream's appendable frontier, from its top-level node ``rows`` of ``nodes``
    (:func:`_stored_nodes`) and its open row (None: a new stream)."""
    if len(rows):
        cols = {name: values[rows] for name, values in nodes.items() if name != "bits"}
        cols["bits"] = nodes["bits"].take(pa.array(rows))
    else:
        cols = _EMPTY_NODES
    return restore_frontier(key, cols, state, config)


def _append_stream(key: str, rows: np.ndarray, front: SketchTree, state: OpenState | None,
                   events: _EventColumns, rejected: _Rejected
                   ) -> tuple[dict[str, np.ndarray], OpenState, int]:
    """One stream's new events, ordered and checked, appended to its frontier.

    Args:
        key: The stream.
        rows: Its event rows (indices into ``events``).
        front: Its frontier (:func:`_frontier`).
        state: Its stored open row (None: a new stream).
        events: The bucket's event columns.
        rejected: Takes its incomplete and late events.

    Returns:
        The node columns the append changed, the stream's new open row and the number of
        events appended.
    """
    bad = rows[~events.complete[rows]]
    if len(bad):
        rejected.add(key, bad, "incomplete")
    rows = rows[events.complete[rows]]
    ts, ids = events.e_ts[rows], events.e_id[rows]
    names, versions = events.e_type[rows], events.e_version[rows]
    order = np.lexsort((versions, names.astype(str), ids, ts))
    rows, ts, ids, names = rows[order], ts[order], ids[order], names[order]
    last_ts = state.last_ts if state is not None else None
    last_id = state.last_id if state is not None else None
    is_late = _late_mask(ts, ids, last_ts, last_id)
    accepted = ~is_late
    if is_late.any():
        rejected.add(key, rows[is_late], "late", _late_bounds(accepted, ts, ids, last_ts, last_id))
    grown = front.append(names[accepted].tolist(), ts[accepted])
    part = append_columns(front, grown)
    return part, _open_state(key, grown, state, ts[accepted], ids[accepted]), int(accepted.sum())


def _late_mask(ts: np.ndarray, ids: np.ndarray, last_ts: int | None,
               last_id: int | None) -> np.ndarray:
    """Which of a stream's events, sorted by ``(ts, id)``, are late: not after the stream's
    stored last ``(ts, id)``, or the same ``(ts, id)`` as the event before."""
    is_late = np.zeros(len(ts), dtype=np.bool_)
    if last_ts is not None:
        is_late |= (ts < last_ts) | ((ts == last_ts) & (ids <= int(last_id)))
    if len(ts) > 1:
        is_late[1:] |= (ts[1:] == ts[:-1]) & (ids[1:] == ids[:-1])
    return is_late


def _open_state(key: str, grown: SketchTree, state: OpenState | None, ts: np.ndarray,
                ids: np.ndarray) -> OpenState:
    """A stream's open row after its append of the events ``(ts, id)``: the ids of its open
    leaf's events and the newest appended ``(ts, id)`` (the stored one when none was)."""
    all_ids = (list(state.ids) if state is not None else []) + ids.tolist()
    n_open = grown.open_leaf.n_events
    if len(ts):
        last = (int(ts[-1]), int(ids[-1]))
    else:
        last = (state.last_ts, state.last_id) if state is not None else (None, None)
    return OpenState(key, grown.n_full_leaves, tuple(grown.open_leaf.names or ()),
                     tuple(grown.open_ts.tolist()),
                     tuple(all_ids[len(all_ids) - n_open:]) if n_open else (), *last)


def _node_table(schema: pa.Schema, parts: list[dict[str, np.ndarray]], streams: list[str],
                config: SketchConfig) -> pa.Table | None:
    """The node rows the appends changed, as ``out`` :data:`OUT_NODE` rows (None: none)."""
    if not parts:
        return None
    rows = nodes_from_columns(streams, {
        name: np.concatenate([p[name] for p in parts]) for name in parts[0]}, config)
    return _padded(schema, OUT_NODE, rows.num_rows,
                   {name: rows.column(name) for name, _ in NODES_COLUMNS})


def _open_table(schema: pa.Schema, states: list[OpenState], n_accepted: list[int],
                config: SketchConfig) -> pa.Table | None:
    """The streams' new open rows with their accepted events, as ``out`` :data:`OUT_OPEN`
    rows (None: none)."""
    if not states:
        return None
    opened = open_to_arrow(states, config)
    columns = {f"o_{name}": opened.column(name) for name, _ in OPEN_COLUMNS if name != "stream"}
    columns["stream"] = opened.column("stream")
    columns["n_accepted"] = pa.array(n_accepted, pa.int64())
    return _padded(schema, OUT_OPEN, opened.num_rows, columns)


class _Rejected:
    """A bucket's incomplete and late events, gathered stream by stream, then turned into
    ``out`` :data:`OUT_LATE` rows at once.

    Args:
        events: The bucket's event columns, which the rejected rows index.
    """

    def __init__(self, events: _EventColumns) -> None:
        self.events = events
        self.columns: dict[str, list[Any]] = {name: [] for name in (
            "stream", "type", "ts", "id", "version", "reason", "last_ts", "last_id", "valid_ts",
            "valid_id", "valid_last")}

    def add(self, key: Any, rows: np.ndarray, reason: str, bound: tuple | None = None) -> None:
        """Reject some events of one stream.

        Args:
            key: The stream (None: the events have none).
            rows: The events' rows (indices into the event columns).
            reason: ``incomplete`` or ``late``.
            bound: For late events, the last accepted ``(ts, id)`` before each and whether
                there is one (:func:`_late_bounds`).
        """
        late, events, k = self.columns, self.events, len(rows)
        late["stream"] += [key] * k
        late["type"].append(events.e_type[rows])
        late["ts"].append(events.e_ts[rows])
        late["id"].append(events.e_id[rows])
        late["version"].append(events.e_version[rows])
        late["reason"] += [reason] * k
        if bound is None:
            bound = (np.zeros(k, dtype=np.int64), np.zeros(k, dtype=np.int64),
                     np.zeros(k, dtype=np.bool_))
        late["last_ts"].append(bound[0])
        late["last_id"].append(bound[1])
        late["valid_last"].append(bound[2])
        late["valid_ts"].append(events.valid_ts[rows])
        late["valid_id"].append(events.valid_id[rows])

    def _joined(self, name: str, dtype: Any) -> np.ndarray:
        """One gathered column as one array."""
        return np.concatenate(self.columns[name]).astype(dtype)

    def table(self, schema: pa.Schema) -> pa.Table | None:
        """The rejected events as output rows (None: none was rejected)."""
        late, cat = self.columns, self._joined
        if not late["stream"]:
            return None
        ts_ok, last_ok = cat("valid_ts", np.bool_), cat("valid_last", np.bool_)
        return _padded(schema, OUT_LATE, len(late["stream"]), {
            "stream": pa.array(late["stream"], pa.string()),
            "l_type": pa.array(np.concatenate(late["type"]).tolist(), pa.string()),
            "l_ts": pa.array(cat("ts", np.int64), pa.int64(), mask=~ts_ok).cast(TS),
            "l_id": pa.array(cat("id", np.int64), pa.int64(), mask=~cat("valid_id", np.bool_)),
            "l_version": pa.array(cat("version", np.int64), pa.int64()),
            "l_reason": pa.array(late["reason"], pa.string()),
            "l_last_ts": pa.array(cat("last_ts", np.int64), pa.int64(),
                                  mask=~last_ok).cast(TS),
            "l_last_id": pa.array(cat("last_id", np.int64), pa.int64(), mask=~last_ok)})


def _check_settings_columns(nodes: pa.Table, config: SketchConfig) -> None:
    """Every stored node row carries the sketch's ``m``, ``k``, ``seeds``, ``config_version``."""
    for name, expected in (("m", config.m), ("k", config.k),
                           ("config_version", config.config_version)):
        values = nodes.column(name)
        if values.null_count or pc.any(pc.not_equal(values, expected)).as_py():
            raise SketchStateError(f"a node row has another {name} than the sketch "
                                   f"({name}={expected})")
    seeds = {tuple(x) if x is not None else None for x in nodes.column("seeds").to_pylist()}
    if seeds != {tuple(config.seeds or ())}:
        raise SketchStateError(f"a node row has other seeds than the sketch "
                               f"({list(config.seeds or ())})")
