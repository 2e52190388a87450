"""The prediction job's partitions streamed in chunks, so one huge key needs bounded memory.

Spark hands :func:`StreamedPredict` a partition of the job's work rows sorted by ``(key, kind
descending, e_ts, e_commit, e_id, e_type, a_0, ...)``: each key's persisted instance states,
then its new events in the order the machines run them. Every event row already carries its
lateness bound (``e_bound``, computed by Spark per key and commit), so whether a row is late
does not depend on which other rows are in the chunk.

The rows are gathered until ``chunk_rows`` have arrived; every key that has ended in the buffer
is run by :func:`jobs.state.predict_bucket.process_bucket` exactly as before. Of the key still
arriving, the rows before its last timestamp are run too, starting from its instance states;
the states after them are carried into the next buffer as ordinary ``kind = state`` work rows,
and the rows of the last timestamp wait for the next buffer (so the rows of one timestamp are
always ordered by one sort, in one call). Running a key in two calls that split its events
by time is what the job already does across runs: a machine's state after an event is a
function of the state before it and the event (:func:`cep.predict.predict` with ``start``).

Output rows are emitted once each. The trained counts of every call go out at once (the driver
adds them up, so several per subscription are fine), late rows at once. The open key's
instance rows are held, the newest per ``(sub, instance)``, and go out when the key ends,
with one counts row for the key (its events counted once, and the key once).

Example:
    >>> held = HeldCounts()
    >>> held.add({"n_read": 3, "n_run": 2, "n_keys": 1, "n_instances": 1, "n_late": 1,
    ...           "n_incomplete": 0})
    >>> held.add({"n_read": 2, "n_run": 2, "n_keys": 1, "n_instances": 1, "n_late": 0,
    ...           "n_incomplete": 0})
    >>> held.row(instances=1)["n_read"], held.row(instances=1)["n_keys"]
    (5, 1)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from udfs.chunks import ChunkedStream, last_start, release_memory

CHUNK_ROWS = 1 << 20
"""Work rows a task gathers before it runs them (bounded memory per task: the rows, plus the
instance states of one key)."""

STAT_COLUMNS = ("n_read", "n_run", "n_keys", "n_instances", "n_late", "n_incomplete")


class HeldCounts:
    """The counts of the open key's calls, added up until the key ends."""

    def __init__(self) -> None:
        self.sums = dict.fromkeys(STAT_COLUMNS, 0)

    def add(self, row: dict[str, Any]) -> None:
        """Count one call's counts row; the key counts once however many calls ran it."""
        for name in STAT_COLUMNS:
            value = int(row[name] or 0)
            self.sums[name] = max(self.sums[name], value) if name == "n_keys" else \
                self.sums[name] + value

    def row(self, instances: int) -> dict[str, int]:
        """The key's counts row, with the number of instance rows that went out."""
        return {**self.sums, "n_instances": instances}


class StreamedPredict(ChunkedStream):
    """One task's sorted work rows run chunk by chunk (the module docstring).

    Args:
        process: ``table -> output table``: :func:`jobs.state.predict_bucket.process_bucket` bound to
            the set's spec.
        stats_row: ``counts -> output table``: one ``out = stats`` row.
        kinds: the work rows' ``kind`` values ``(event, state)``.
        outs: the output rows' ``out`` values ``(instance, stats)``.
        chunk_rows: rows gathered before a call.
    """

    def __init__(self, process: Callable[[pa.Table], pa.Table],
                 stats_row: Callable[[dict[str, int]], pa.Table], kinds: tuple[int, int],
                 outs: tuple[int, int], chunk_rows: int = CHUNK_ROWS) -> None:
        self.process, self.stats_row = process, stats_row
        self.event, self.state = kinds
        self.out_instance, self.out_stats = outs
        super().__init__(chunk_rows)
        self.key: Any = None                   # the open key whose states are carried
        self.starts: dict[tuple, pa.Table] = {}  # its instance states, as work rows
        self.held: dict[tuple, pa.Table] = {}    # its newest instance rows, as output rows
        self.counts = HeldCounts()

    def _flush(self, final: bool) -> Iterator[pa.Table]:
        release_memory()  # the last chunk's garbage, before this one's peak
        table = _table(self.batches, self.schema)
        self.batches, self.rows = [], 0
        if self.key is not None:
            keys = table.column("key")
            same = pc.fill_null(pc.equal(keys, pa.scalar(self.key, keys.type)), False)
            differs = np.flatnonzero(~np.asarray(same.to_numpy(zero_copy_only=False), dtype=bool))
            end = int(differs[0]) if len(differs) else table.num_rows
            if end == table.num_rows and not final:  # the whole buffer is the open key's
                yield from self._continue(table)
                return
            yield from self._close(table.slice(0, end))
            table = table.slice(end)
        if table.num_rows == 0:
            return
        cut = table.num_rows if final else last_start(table.column("key"))
        if cut > 0:  # every key before the last one has ended
            yield self.process(table.slice(0, cut))
        rest = table.slice(cut)
        if rest.num_rows == 0:
            return
        if not rest.column("key")[0].is_valid:  # rows without a key are only set aside
            yield self.process(rest)
        elif rest.num_rows < self.chunk_rows // 2:  # a short tail: wait for more of it
            self.batches, self.rows = [rest], rest.num_rows
        else:
            yield from self._continue(rest)

    def _continue(self, rows: pa.Table) -> Iterator[pa.Table]:
        """Run the open key's rows before its last timestamp; carry its states over."""
        kind = rows.column("kind").to_numpy(zero_copy_only=False)
        stored = int(np.count_nonzero(kind == self.state))  # sorted first (kind descending)
        cut = stored + last_start(rows.column("e_ts").slice(stored))
        if cut == stored:  # one timestamp so far: nothing can be run yet
            self.batches, self.rows = [rows], 0
            return
        key = rows.column("key")[0].as_py()
        if key != self.key:
            self.key, self.held, self.counts = key, {}, HeldCounts()
            head = rows.slice(0, stored)
            self.starts = {(sub, inst): head.slice(i, 1) for i, (sub, inst) in enumerate(zip(
                head.column("i_sub").to_pylist(), head.column("i_instance").to_pylist()))}
        yield from self._run(rows.slice(stored, cut - stored))
        # a copy: a slice would keep the whole buffer's memory alive
        self.batches = [rows.take(pa.array(np.arange(cut, rows.num_rows, dtype=np.int64)))]
        self.rows = 0

    def _close(self, rows: pa.Table) -> Iterator[pa.Table]:
        """Run the open key's last rows; its held instance rows and counts go out."""
        if rows.num_rows:
            yield from self._run(rows)
        if self.held:
            yield pa.concat_tables(list(self.held.values()))
        yield self.stats_row(self.counts.row(instances=len(self.held)))
        self.key, self.starts, self.held, self.counts = None, {}, {}, HeldCounts()

    def _run(self, events: pa.Table) -> Iterator[pa.Table]:
        """One call over the open key's carried states and ``events``; hold what it built."""
        assert self.schema is not None
        parts = list(self.starts.values()) + [events]
        out = self.process(pa.concat_tables([p.select(self.schema.names).cast(self.schema)
                                             for p in parts]))
        kind = out.column("out").to_numpy(zero_copy_only=False)
        instances = out.filter(pa.array(kind == self.out_instance))
        for i, (sub, inst) in enumerate(zip(instances.column("sub").to_pylist(),
                                            instances.column("instance").to_pylist())):
            row = instances.slice(i, 1)
            self.held[(sub, inst)] = row
            self.starts[(sub, inst)] = self._as_state(row)
        for row in out.filter(pa.array(kind == self.out_stats)).to_pylist():
            self.counts.add(row)
        rest = out.filter(pa.array((kind != self.out_instance) & (kind != self.out_stats)))
        if rest.num_rows:
            yield rest

    def _as_state(self, row: pa.Table) -> pa.Table:
        """An instance row (output) as a ``kind = state`` work row of the same key."""
        assert self.schema is not None
        columns = {"key": row.column("key"), "i_sub": row.column("sub"),
                   "i_instance": row.column("instance"), "i_state": row.column("state")}
        arrays = []
        for fld in self.schema:
            if fld.name == "kind":
                arrays.append(pa.array([self.state], fld.type))
            elif fld.name in columns:
                arrays.append(columns[fld.name].cast(fld.type))
            else:
                arrays.append(pa.nulls(1, fld.type))
        return pa.Table.from_arrays(arrays, schema=self.schema)


def _table(batches: list[pa.Table | pa.RecordBatch], schema: pa.Schema | None) -> pa.Table:
    """The buffer's pieces as one table (an empty one of ``schema`` when there are none)."""
    if not batches:
        return schema.empty_table() if schema is not None else pa.table({"key": pa.array([],
                                                                                        pa.string())})
    tables = [b if isinstance(b, pa.Table) else pa.Table.from_batches([b]) for b in batches]
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)
