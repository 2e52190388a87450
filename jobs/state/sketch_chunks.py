"""The sketch job's partitions streamed in chunks, so one huge stream needs bounded memory.

Spark hands :func:`stream_partition` a partition of the job's work rows sorted by ``(stream,
kind descending, ts, id, type, version)``: each stream's stored state (its open row, then its
frontier's node rows) and then its new events in the order the tree appends them. The rows
are gathered until ``chunk_rows`` have arrived; every stream that has ended in the buffer is
appended by :func:`jobs.state.sketch.process_bucket` exactly as before, and of the stream still
arriving, the rows so far are appended too and its state *after* them is carried into the next
buffer as ordinary state rows (:func:`carry_rows`): its frontier's top nodes and its open row.
The tree's append is incremental by construction (``SketchTree.append`` equals one build over
all events), so the stream ends with the nodes of one whole append.

Output rows are emitted once each: a node row that is no longer top (it has its parent) never
changes again and goes out at once; the stream's top rows and its ``is_open`` row are held
(a few per level) and go out, last version only, when the stream ends. The open row goes out
once, at the end, with ``n_accepted`` summed over the chunks; late rows go out at once.

The cut between ended streams and the one still arriving is
:func:`udfs.chunks.last_start`, shared with the prediction job (:mod:`jobs.state.predict_chunks`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from udfs.chunks import ChunkedStream, last_start, release_memory

CHUNK_ROWS = 1 << 20
"""Work rows a task gathers before it appends them (bounded memory per task: the rows, plus
one stream's frontier)."""


class StreamedSketch(ChunkedStream):
    """One task's sorted work rows appended chunk by chunk (the module docstring).

    Args:
        process: ``table -> output table``: :func:`jobs.state.sketch.process_bucket` bound to
            the sketch's configuration and output schema.
        kinds: the work rows' ``kind`` values ``(event, node, open)``.
        outs: the output rows' ``out`` values ``(node, open, late)``.
        chunk_rows: rows gathered before an append.
    """

    def __init__(self, process: Any, kinds: tuple[int, int, int], outs: tuple[int, int, int],
                 chunk_rows: int = CHUNK_ROWS) -> None:
        self.process = process
        self.event, self.node, self.open = kinds
        self.out_node, self.out_open, self.out_late = outs
        super().__init__(chunk_rows)
        self.carried: Any = None          # the stream whose state is carried, if any
        self.held: dict[int, pa.Table] = {}  # its top and is_open node rows, by node_id
        self.accepted = 0                 # its events accepted by earlier chunks
        self.open_row: pa.Table | None = None  # its latest open row (an output row)
        self.frontier: dict[int, pa.Table] = {}  # its top nodes as work rows, by node_id
        self.dropped: list[int] = []      # nodes the last chunk gave a parent

    def _flush(self, final: bool) -> Iterator[pa.Table]:
        if not self.batches:
            return
        release_memory()  # the last chunk's garbage, before this one's peak
        table = pa.Table.from_batches(self.batches)
        self.batches, self.rows = [], 0
        cut = table.num_rows if final else last_start(table.column("stream"))
        if cut > 0:  # every stream before the last one has ended
            yield from self._ended(self.process(table.slice(0, cut)))
        if cut == table.num_rows:
            return
        rest = table.slice(cut)
        stream = rest.column("stream")[0].as_py()
        if stream is None:  # events without a stream are only rejected: nothing to carry
            yield from self._ended(self.process(rest))
            return
        last_kind = rest.column("kind")[rest.num_rows - 1].as_py()
        if rest.num_rows < self.chunk_rows // 2 or last_kind != self.event:
            # a short tail, or one whose state rows (sorted before its events) may not all be
            # here yet: keep it whole for the next buffer, no append yet
            self.batches, self.rows = rest.to_batches(), rest.num_rows
            return
        # the stream still arriving: append what is here and carry its state over
        yield from self._continued(stream, self.process(rest))
        self._advance_frontier(rest)
        carry = self.carry_rows(stream)
        self.batches, self.rows = carry.to_batches(), 0

    def _ended(self, out: pa.Table) -> Iterator[pa.Table]:
        """Output of streams that ended; the carried stream's held rows joined to its own."""
        if self.carried is None:
            yield out
            return
        mine = pc.fill_null(pc.equal(out.column("stream"), pa.scalar(self.carried)), False)
        if not pc.any(mine).as_py():  # the carried stream had no row after its last chunk
            yield from self._release()
            yield out
            return
        yield out.filter(pc.invert(mine))
        yield from self._continued(self.carried, out.filter(mine), final=True)

    def _continued(self, stream: Any, out: pa.Table, final: bool = False) -> Iterator[pa.Table]:
        """One chunk's output of the stream still arriving: final rows out, the rest held."""
        if self.carried != stream:
            yield from self._release()
            self.carried, self.held, self.accepted = stream, {}, 0
        kind = out.column("out").to_numpy(zero_copy_only=False)
        late = out.filter(pa.array(kind == self.out_late))
        if late.num_rows:
            yield late
        nodes = out.filter(pa.array(kind == self.out_node))
        is_top = np.asarray(pc.fill_null(nodes.column("is_top"), False).to_numpy(
            zero_copy_only=False), dtype=bool)
        is_open = np.asarray(pc.fill_null(nodes.column("is_open"), False).to_numpy(
            zero_copy_only=False), dtype=bool)
        ids = nodes.column("node_id").to_numpy(zero_copy_only=False)
        done = ~is_top & ~is_open
        self.dropped = [int(ids[i]) for i in np.flatnonzero(done).tolist()]
        for i in np.flatnonzero(~done).tolist():
            self.held[int(ids[i])] = nodes.slice(i, 1)
        for node_id in self.dropped:
            self.held.pop(node_id, None)
        if done.any():
            yield nodes.filter(pa.array(done))
        opened = out.filter(pa.array(kind == self.out_open))
        accepted = pc.sum(opened.column("n_accepted")).as_py() or 0
        self.accepted += int(accepted)
        self.open_row = opened
        if final:
            yield from self._release()

    def _release(self) -> Iterator[pa.Table]:
        """The carried stream's held node rows and its open row (``n_accepted`` summed)."""
        if self.carried is None:
            return
        if self.held:
            yield pa.concat_tables(list(self.held.values()))
        opened = self.open_row
        if opened is not None and opened.num_rows:
            at = opened.schema.get_field_index("n_accepted")
            yield opened.set_column(at, "n_accepted",
                                    pa.array([self.accepted], opened.schema.field(at).type))
        self.carried, self.held, self.accepted, self.open_row = None, {}, 0, None

    def _advance_frontier(self, rest: pa.Table) -> None:
        """The carried stream's frontier after a chunk: the frontier it started from (its
        ``kind = node`` rows), without the nodes that got a parent, with the new top nodes."""
        kind = rest.column("kind").to_numpy(zero_copy_only=False)
        before = rest.filter(pa.array(kind == self.node))
        ids = before.column("node_id").to_numpy(zero_copy_only=False).tolist()
        self.frontier = {int(i): before.slice(at, 1) for at, i in enumerate(ids)}
        for node_id in self.dropped:
            self.frontier.pop(node_id, None)
        for node_id, row in self.held.items():
            if row.column("is_top")[0].as_py() and not row.column("is_open")[0].as_py():
                self.frontier[node_id] = self._as_work(row, self.node)

    def carry_rows(self, stream: Any) -> pa.Table:
        """The carried stream's state as work rows: its frontier (top, not open) node rows as
        ``kind = node`` and its open row as ``kind = open``, in the work rows' schema."""
        assert self.schema is not None
        parts = []
        if self.frontier:
            parts.append(pa.concat_tables(list(self.frontier.values())))
        if self.open_row is not None and self.open_row.num_rows:
            parts.append(self._as_work(self.open_row, self.open))
        return pa.concat_tables(parts) if parts else self.schema.empty_table()

    def _as_work(self, rows: pa.Table, kind: int) -> pa.Table:
        """Output rows in the work rows' schema (same column names), ``kind`` set."""
        assert self.schema is not None
        n = rows.num_rows
        arrays = []
        for fld in self.schema:
            if fld.name == "kind":
                arrays.append(pa.array(np.full(n, kind), fld.type))
            elif fld.name in rows.column_names:
                arrays.append(rows.column(fld.name).cast(fld.type))
            else:
                arrays.append(pa.nulls(n, fld.type))
        return pa.Table.from_arrays(arrays, schema=self.schema)
