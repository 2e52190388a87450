"""Streaming a sorted partition through an engine in chunks, carrying the look-ahead over.

Spark hands a table function its partition as record batches. Collecting them all before
matching holds the partition whole in the Python worker, which for one key with 10^8 events
is several gigabytes. When Spark delivers the rows sorted (the call asks for ``orderBy``
key, timestamp, id), a partition can be matched piece by piece instead:

* every key before the last one in the buffer is complete (the rows of a key are
  contiguous): its matches are final;
* of the last, *open* key only the rows whose matches cannot reach past the buffer are
  final. A match reaches at most ``horizon`` past its first event (``WITHIN``: a time span or
  a number of events), so a first event is *committed* when the buffer already holds
  everything up to its horizon: its timestamp is at most ``last - width`` (later rows have a
  timestamp of at least ``last``), or its position is at most ``n - width`` for an
  ``EVENTS`` window;
* the engine runs over the whole buffer, the caller reports the matches whose first event is
  committed (in ``match_id`` order they come first), and the rows from the first uncommitted
  one on are carried into the next buffer. Matches of the carried rows are found again next
  time, with the events after them.

This is exact for every policy because a match is a function of its first event and the
events inside its window that follow it (docs/semantics.md): nothing before the first event
matters. The Python memory is bounded by ``CHUNK_ROWS`` new rows plus the rows of one window
of the open key; a query without a window carries its open key whole (docs/cluster.md, "Big
keys").

Example:
    >>> import numpy as np
    >>> ts = np.array([0, 5, 10, 20, 30])
    >>> committed(Horizon(False, 10), ts, first=0)   # rows at 0, 5, 10, 20 see 10 ahead of them
    4
    >>> committed(Horizon(True, 3), ts, first=0)     # 3 events: positions 0..2 see theirs
    3
    >>> committed(Horizon(False, None), ts, first=2)  # no window: only closed keys (rows 0, 1)
    2
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

CHUNK_ROWS = 1 << 20
"""New rows a buffer takes before it is matched: ~100 MB of columns for a typical call, a few
ms of fixed cost per engine call (measured in BENCHMARKS.md, "Big keys")."""


@dataclass(frozen=True)
class Horizon:
    """How far past its first event a match can reach.

    Attributes:
        by_events: the width counts events (``WITHIN n EVENTS``), else timestamp units.
        width: the window's width; None when matches are unbounded (no ``WITHIN``).
    """

    by_events: bool
    width: int | float | None


def committed(horizon: Horizon, ts: np.ndarray, first: int) -> int:
    """How many leading rows of a sorted buffer start only final matches.

    Args:
        horizon: the query's reach.
        ts: timestamps of the buffer's rows (sorted within each key).
        first: the first row of the open (last) key.

    Returns:
        ``c`` with ``first <= c < len(ts)`` (at least the open key's last row stays
        uncommitted, so the open key always continues in the next buffer).
    """
    n = len(ts)
    if n == 0:
        return 0
    if horizon.width is None:
        return first
    if horizon.by_events:
        # a match from position p binds positions below p + width: p + ceil(width) - 1 < n
        cut = n - int(math.ceil(horizon.width)) + 1
    else:
        # the rows with ts < ts[p] + width are all here when ts[p] + width <= ts[-1]
        cut = first + int(np.searchsorted(ts[first:], ts[-1] - horizon.width, side="right"))
    return int(min(max(cut, first), n - 1))


class ChunkBuffer:
    """The rows of a partition not matched yet: a carried tail and the batches since.

    Example:
        >>> import pyarrow as pa
        >>> buf = ChunkBuffer(rows=3)
        >>> buf.add(pa.record_batch({"x": [1, 2]})), buf.add(pa.record_batch({"x": [3]}))
        (False, True)
        >>> table = buf.take(); table.column("x").to_pylist()
        [1, 2, 3]
        >>> buf.carry(table, 2); buf.take().column("x").to_pylist()
        [3]
    """

    def __init__(self, rows: int = CHUNK_ROWS) -> None:
        self.rows = rows
        self.tail: pa.Table | None = None
        self.batches: list[pa.RecordBatch] = []
        self.new_rows = 0

    def add(self, batch: pa.RecordBatch) -> bool:
        """Keep ``batch``; True when enough new rows arrived to match a chunk."""
        if batch.num_rows:
            self.batches.append(batch)
            self.new_rows += batch.num_rows
        return self.new_rows >= self.rows

    def take(self) -> pa.Table | None:
        """Everything held, as one ``pyarrow.Table`` (None when empty); the buffer empties."""
        import pyarrow as pa

        parts = [] if self.tail is None else [self.tail]
        if self.batches:
            parts.append(pa.Table.from_batches(self.batches))
        self.tail, self.batches, self.new_rows = None, [], 0
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else pa.concat_tables(parts)

    def carry(self, table: pa.Table, start: int) -> None:
        """Hold the rows of ``table`` from ``start`` on for the next chunk."""
        import pyarrow as pa

        if start < table.num_rows:
            # a copy (a slice would keep the whole buffer's memory alive)
            self.tail = table.take(pa.array(np.arange(start, table.num_rows, dtype=np.int64)))


def last_start(streams: pa.Array | pa.ChunkedArray) -> int:
    """The first row of the last run of equal values of a sorted column (0 when one run).

    Where a sorted buffer's ended keys stop and its open key begins (NULLs are equal here).

    Example:
        >>> import pyarrow as pa
        >>> last_start(pa.chunked_array([["a", "a", "b", "b"]]))
        2
        >>> last_start(pa.array([None, 1, None, None]))
        2
    """
    n = len(streams)
    if n == 0:
        return 0
    import pyarrow as pa
    import pyarrow.compute as pc

    values = streams.combine_chunks() if isinstance(streams, pa.ChunkedArray) else streams
    last = values[n - 1]
    if not last.is_valid:
        same = pc.is_null(values)
    else:
        same = pc.fill_null(pc.equal(values, last), False)
    differs = np.flatnonzero(~np.asarray(same.to_numpy(zero_copy_only=False), dtype=bool))
    return int(differs[-1]) + 1 if len(differs) else 0


def release_memory() -> None:
    """Hand the memory freed since the last chunk back to the operating system.

    pyarrow's pool (mimalloc) and glibc's ``malloc`` keep freed pages for reuse, and with
    chunks of changing shapes a worker's resident set creeps up chunk after chunk: the sketch
    job's stream of 10^7 events of one key held 0.87 GB between chunks of 2^20 rows in
    isolation (0.23 GB with this call after each chunk) and peaked at 2.8 GB in a Spark worker
    (BENCHMARKS.md, "The state jobs' largest key"). Costs a few milliseconds per chunk.

    Example:
        >>> release_memory()   # nothing to see: the resident set only gets smaller
    """
    import ctypes
    import ctypes.util

    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: its allocator is left as it is
        pass


class ChunkedStream:
    """The skeleton of a task's sorted rows run chunk by chunk: batches in, output tables out.

    A subclass writes ``_flush(final)``: run what the buffer (``self.batches``, ``self.rows``
    new rows) allows and yield the output. The state jobs' streams
    (:mod:`jobs.state.sketch_chunks`, :mod:`jobs.state.predict_chunks`) are two.

    Args:
        chunk_rows: new rows gathered before a flush.
    """

    def __init__(self, chunk_rows: int = CHUNK_ROWS) -> None:
        self.chunk_rows = chunk_rows
        self.batches: list[pa.RecordBatch | pa.Table] = []  # a subclass may hold tables
        self.rows = 0
        self.schema: pa.Schema | None = None

    def add(self, batch: pa.RecordBatch) -> Iterator[pa.Table]:
        """Take one sorted batch; the output of every chunk it completes."""
        if self.schema is None:
            self.schema = batch.schema
        for at in range(0, batch.num_rows, self.chunk_rows):
            piece = batch.slice(at, self.chunk_rows)
            self.batches.append(piece)
            self.rows += piece.num_rows
            if self.rows >= self.chunk_rows:
                yield from self._flush(final=False)

    def finish(self) -> Iterator[pa.Table]:
        """The output of what is left at the end of the partition."""
        yield from self._flush(final=True)

    def _flush(self, final: bool) -> Iterator[pa.Table]:
        raise NotImplementedError

    def run(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """The record batches ``mapInArrow`` returns for a partition's sorted batches."""
        for batch in batches:
            for out in self.add(batch):
                yield from out.to_batches()
        for out in self.finish():
            yield from out.to_batches()
