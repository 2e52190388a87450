"""Keys' steps of a standing pattern in a Spark task: each key's new events and carried state
in, its matches, timeouts, new state and late events out (docs/standing.md).

The job (:mod:`jobs.state.match`) groups the applied new events and the stored states by a
bucket of keys (``groupBy(bucket).applyInArrow``); :func:`make_bucket_function` returns the
function each bucket runs: it sorts the bucket by key and steps each key in turn. A bucket, not
a key, per Python call: with one call per key the calls themselves cost more than the steps
(measured on the offer feed, 43,000 keys: BENCHMARKS.md "Standing patterns"). All rows go out
in one Arrow schema whose ``kind`` column says which table a row belongs to (:data:`KIND`), as
the graph job does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cep.match.columnar.stream import EventStream
from cep.match.compile.standing import StandingProgram
from cep.match.run.carried import Carried
from cep.match.run.standing import StandingStep, advance, resolves_at

if TYPE_CHECKING:
    from cep.match.columnar.arrays import MatchArrays

KIND = {"matches": 0, "timeouts": 1, "open": 2, "late": 3}
"""The ``kind`` of each output row: the table it goes to."""
EVENT, STATE = 0, 1
"""The ``kind`` of an input row: a new event, or a key's stored state."""
LATE_BEHIND = "late"
"""The ``reason`` of an event that sorts at or before a start its key has already resolved."""


def out_fields(key_type: pa.DataType) -> list[tuple[str, pa.DataType]]:
    """The output columns of the bucket function (the key in its own Arrow type)."""
    ids, names = pa.list_(pa.int64()), pa.list_(pa.string())
    return [("kind", pa.int8()), ("key", key_type), ("match_id", pa.int64()),
            ("start_ts", pa.int64()), ("end_ts", pa.int64()), ("closed_at", pa.int64()),
            ("event_ids", ids), ("variables", names), ("n_events", pa.int32()),
            ("components", pa.int32()), ("state", pa.binary()), ("resolve_at", pa.int64()),
            ("ts", pa.int64()), ("id", pa.int64()), ("commit", pa.int64()),
            ("watermark", pa.int64())]


def make_bucket_function(program: StandingProgram, attributes: tuple[str, ...],
                         watermark: int | None, key_type: pa.DataType
                         ) -> Callable[[pa.Table], pa.Table]:
    """The function one bucket of keys runs: every key of it stepped, in key order.

    Args:
        program: the compiled standing pattern.
        attributes: the engine's attribute names, in the order of the input's ``a_0, a_1 ..``.
        watermark: the run's watermark in the state's units (None: nothing read has a time).
        key_type: the key column's Arrow type.
    """
    schema = pa.schema(out_fields(key_type))

    def per_bucket(table: pa.Table) -> pa.Table:
        table = table.take(pc.sort_indices(table, sort_keys=[("key", "ascending")]))
        keys = table.column("key").to_numpy(zero_copy_only=False)
        cuts = [0, *(np.flatnonzero(keys[1:] != keys[:-1]) + 1).tolist(), len(keys)]
        out = _Rows(schema)
        for a, b in zip(cuts, cuts[1:]):
            key = keys[a].item() if isinstance(keys[a], np.generic) else keys[a]
            _step_key(program, attributes, watermark, table.slice(a, b - a), key, out)
        return out.table()

    return per_bucket


def _step_key(program: StandingProgram, attributes: tuple[str, ...], watermark: int | None,
              table: pa.Table, key: object, out: "_Rows") -> None:
    """One key's step: its rows of every kind added to ``out``."""
    kinds = table.column("kind").to_numpy(zero_copy_only=False)
    states = table.filter(pa.array(kinds == STATE))
    state = (Carried.from_bytes(states.column("state")[0].as_py()) if states.num_rows
             else Carried.empty(attributes))
    events = table.filter(pa.array(kinds == EVENT))
    new, late = _split_behind(_events(events, attributes), state.frontier)
    stream, open_from = state.stream_with(new)
    step = advance(program, stream, open_from=open_from, emitted=state.emitted,
                   watermark=watermark)
    after = state.after(stream, step)
    due = resolves_at(program, stream, step)
    for part in (_matches(stream, step), _timeouts(stream, step),
                 {"kind": [KIND["open"]], "state": [after.to_bytes()],
                  "resolve_at": [None if due is None else int(math.ceil(due))]},
                 _late(events, late, state.frontier)):
        out.add(key, part)


class _Rows:
    """The output rows of a bucket, column by column (one Arrow table at the end)."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self.columns: dict[str, list] = {field.name: [] for field in schema}

    def add(self, key: object, part: dict[str, list]) -> None:
        """Add ``part``'s rows (columns it lacks are NULL), each with ``key``."""
        n = len(part["kind"])
        if not n:
            return
        for name, values in self.columns.items():
            if name == "key":
                values.extend([key] * n)
            else:
                values.extend(part.get(name, [None] * n))

    def table(self) -> pa.Table:
        return pa.Table.from_arrays([pa.array(self.columns[f.name], f.type)
                                     for f in self.schema], schema=self.schema)


def _events(table: pa.Table, attributes: tuple[str, ...]) -> EventStream:
    """The new events of a group as a stream (sorted by ``(ts, id)``)."""
    return EventStream.from_columns(
        ids=table.column("id").to_numpy(zero_copy_only=False),
        ts=table.column("ts").to_numpy(zero_copy_only=False),
        types=table.column("type").to_pylist(),
        attrs={name: _values(table.column(f"a_{i}")) for i, name in enumerate(attributes)})


def _values(column: pa.ChunkedArray) -> np.ndarray:
    """An attribute column as the engine reads it, as ``match_seq`` hands it over (numbers as
    numbers, strings as objects)."""
    array = column.to_numpy(zero_copy_only=False)
    return array.astype(object) if array.dtype.kind in "US" else array


def _split_behind(new: EventStream, frontier: tuple[int, int] | None
                  ) -> tuple[EventStream, np.ndarray]:
    """The new events after the key's resolved starts, and the mask of those at or before
    them (late: their place in the key's order was decided without them)."""
    if frontier is None or not len(new):
        return new, np.zeros(len(new), dtype=bool)
    f_ts, f_id = frontier
    behind = (new.ts < f_ts) | ((new.ts == f_ts) & (new.ids <= f_id))
    if not behind.any():
        return new, behind
    keep = ~behind
    return EventStream(new.ids[keep], new.ts[keep], new.types[keep],
                       {k: np.asarray(v)[keep] for k, v in new.attrs.items()}, {}), behind


def _lists(arrays: MatchArrays, stream: EventStream) -> tuple[list, list]:
    """``event_ids`` and ``variables`` of each match as Python lists."""
    ids = stream.ids[arrays.positions].tolist()
    names = [str(v) for v in arrays.variables]
    bounds = arrays.offsets.tolist()
    return ([ids[a:b] for a, b in zip(bounds, bounds[1:])],
            [names[a:b] for a, b in zip(bounds, bounds[1:])])


def _matches(stream: EventStream, step: StandingStep) -> dict[str, list]:
    m = step.matches
    event_ids, variables = _lists(m, stream)
    return {"kind": [KIND["matches"]] * len(m), "match_id": step.match_ids.tolist(),
            "start_ts": stream.ts[m.starts].tolist(), "end_ts": stream.ts[m.ends].tolist(),
            "event_ids": event_ids, "variables": variables,
            "n_events": np.diff(m.offsets).tolist()}


def _timeouts(stream: EventStream, step: StandingStep) -> dict[str, list]:
    t = step.timeouts
    return {"kind": [KIND["timeouts"]] * len(t),
            "start_ts": [int(stream.ts[x.start]) for x in t],
            # a fractional UNITS window closes within the unit it ends in
            "closed_at": [int(np.ceil(x.closed_at)) for x in t],
            "event_ids": [[int(stream.ids[p]) for p in x.positions] for x in t],
            "variables": [list(x.variables) for x in t],
            "components": [x.components for x in t]}


def _late(events: pa.Table, behind: np.ndarray, frontier: tuple[int, int] | None
          ) -> dict[str, list]:
    """The rows of the events behind the key's resolved starts (in the input's order)."""
    if not behind.any():
        return {"kind": []}
    order = np.lexsort((events.column("id").to_numpy(zero_copy_only=False),
                        events.column("ts").to_numpy(zero_copy_only=False)))
    rows = events.take(pa.array(order[behind]))
    return {"kind": [KIND["late"]] * rows.num_rows, "ts": rows.column("ts").to_pylist(),
            "id": rows.column("id").to_pylist(), "commit": rows.column("commit").to_pylist(),
            "watermark": [None if frontier is None else frontier[0]] * rows.num_rows}
