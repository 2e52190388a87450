"""Spark adapter of ``match_seq``: exact pattern matches of a table, per key.

One function (docs/sql.md), in the shell of :mod:`udfs.shell`: ``analyze`` on the driver
(:mod:`udfs.match_seq_plan`) and Arrow batches on the executors (this module).

    SELECT * FROM match_seq('PATTERN a; b WITHIN 1 HOUR', 'user_id', TABLE(events))
    SELECT * FROM match_seq(pattern => 'PATTERN a; b', key_col => 'user_id',
                            policy => 'skip-till-any-match', events => TABLE(events))
    SELECT * FROM match_seq('PATTERN a; b', TABLE(one_stream))     -- the table is one stream

``analyze`` (once per query, :mod:`udfs.match_seq_plan`) parses the pattern once, validates
it against the table's columns and plans what Spark selects; the tasks compile the parsed
pattern it carries (:class:`~udfs.match_seq_plan.CallPlan`). With ``key_col`` it asks for the rows
partitioned by ``KEY_BUCKETS`` buckets of the key's hash: a task matches all keys of a bucket
in one engine call, as segments of one stream (``cep.match.run.segments``), and ``match_id``
still counts per key; without it the table is one stream (one partition). Every output row
carries the key column with its own name and type.

Rows no alias can bind are dropped by Spark when they cannot matter
(:func:`udfs.match_seq_plan.keep_condition`).
Under strict contiguity that takes window functions over the key; the call then asks for no
partitioning of its own (the window's shuffle groups each key in one task), the engine cuts
each key into runs of consecutive rows (``__pos``), and ``match_id`` and ``max_matches`` are
counted per key across its runs (:func:`key_match_ids`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Iterator

from cep.lang import Query
from cep.match import CompiledQuery, MatchLimits, compile_query
from cep.match.columnar.arrays import MatchArrays
from cep.match.columnar.stream import EventStream
from cep.match.errors import MatchLimitError
from cep.match.limits import check_matches
from cep.match.run.closing import closed_only, open_windows
from cep.match.run.segments import SegmentMatches, iter_segment_matches
from udfs.chunks import ChunkBuffer, committed
from udfs.facts import check_classes, newest_of, read_facts
from udfs.match_seq_plan import (KEEP, MICROS_PER_DAY, POS, CallPlan, MatchSeqArgumentError,
                                 analyze_call)
from udfs.shell import (PlannedResult, TableFunction, grouping_key, key_runs, planned,
                        table_function)

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    from pyspark.sql.udtf import UserDefinedTableFunction


class MatchSeq(TableFunction):
    """The ``match_seq`` handler: one partition (a bucket of keys, a task's keys, or the whole
    stream)."""

    analyze = staticmethod(planned(analyze_call))
    _last_task: int | None = None

    def __init__(self, analyze_result: PlannedResult) -> None:
        super().__init__(analyze_result)
        self.second = False
        if self.plan.positioned and self.plan.key is not None:
            # Such a call asks Spark for no partitioning (its window groups the keys), so
            # Spark accepts a PARTITION BY clause, which would cut a task's keys apart: it shows
            # as a second handler in one task, as Spark makes one per partition.
            from pyspark import TaskContext

            task = TaskContext.get()
            attempt = task.taskAttemptId() if task is not None else None
            self.second = attempt is not None and attempt == MatchSeq._last_task
            MatchSeq._last_task = attempt

    def streamed(self) -> StreamedPartition | None:
        """Chunk by chunk when Spark sorts the partition (``plan.horizon``), else whole."""
        return None if self.plan.horizon is None else StreamedPartition(self.plan)

    def answer(self, plan: CallPlan, table: pa.Table) -> Iterator[pa.Table]:
        if self.second:
            raise MatchSeqArgumentError("write no PARTITION BY in the call: match_seq brings the "
                                        "rows of each key_col value together itself")
        return answer_table(plan, table)


class StreamedPartition:
    """One task's sorted partition matched chunk by chunk (:mod:`udfs.chunks`).

    The carried state between chunks is the open key's uncommitted rows and how many of its
    matches were already reported, so its ``match_id`` goes on counting.
    """

    def __init__(self, plan: CallPlan) -> None:
        self.plan = plan
        self.buffer = ChunkBuffer() if plan.chunk_rows is None else ChunkBuffer(plan.chunk_rows)
        self.reported = 0  # matches of the open key already emitted
        self.newest: int | None = None  # from the first rows (input_facts)
        self.checked = False

    def add(self, batch: pa.RecordBatch) -> Iterator[pa.Table]:
        """Take one record batch; the output tables of each chunk it completes."""
        if not self.checked and batch.num_rows:
            self.newest, self.checked = input_facts(self.plan, batch), True
        if self.plan.filtered:  # drop unbindable rows before they are held (no JVM shim)
            batch = batch.filter(batch.column(KEEP))
        size = self.buffer.rows
        for at in range(0, batch.num_rows, size):
            if self.buffer.add(batch.slice(at, size)):
                yield from self._flush(final=False)

    def finish(self) -> Iterator[pa.Table]:
        """The output tables of what is left at the end of the partition."""
        return self._flush(final=True)

    def _flush(self, final: bool) -> Iterator[pa.Table]:
        import numpy as np

        continues = self.buffer.tail is not None
        table = self.buffer.take()
        if table is None:
            return
        stream, keys, _, extra = event_stream(self.plan, table, presorted=True)
        starts = stream.segment_starts
        last = 0 if starts is None else len(starts) - 1
        first = 0 if starts is None else int(starts[-1])
        cut = len(stream) if final else committed(self.plan.horizon, stream.ts, first)
        offset = self.reported if continues else 0
        emitted = 0
        for _, segments, table_out in answer_stream(self.plan, stream, keys, cut=cut,
                                                    offset=offset, newest=self.newest,
                                                    extra=extra):
            emitted += int(np.count_nonzero(segments == last))
            yield table_out
        self.reported = emitted + (offset if last == 0 else 0)
        if not final:
            self.buffer.carry(table, cut)


def input_facts(plan: CallPlan, table: pa.Table | pa.RecordBatch) -> int | None:
    """Check the facts of the whole input on a task's first rows; the newest event time in
    the stream's unit when a trailing NOT needs it (else None).

    Raises:
        PatternSemanticError: CEP-PAT-219, a class of the pattern no event carries.
        MatchSeqArgumentError: a trailing NOT's time window and no facts (no JVM shim).
    """
    facts = read_facts(table)
    check_classes(_compiled(plan.query, plan.policy, plan.max_matches).query, plan.classes,
                  facts, table.column(dict(plan.renames).get("__type", "__type")))
    if not plan.newest:
        return None
    if facts is None:
        raise MatchSeqArgumentError(
            "a pattern that ends in NOT with a time window reports a match only once the "
            "newest event time of the whole input has closed its window, and this session "
            "cannot compute that time: start it with the CEP extension "
            "(spark.sql.extensions=cep.sql.CepExtensions, docs/setup.md) or end the pattern "
            "with a bound event")
    return int(micros(newest_of(table), plan.ts_kind)[0])


def closed(compiled: CompiledQuery, chunk: SegmentMatches, stream: EventStream,
           newest: int | None) -> SegmentMatches:
    """``chunk`` without the matches whose trailing NOT's window is still open."""
    from dataclasses import replace

    still = open_windows(compiled, chunk.matches, stream, chunk.segments, newest)
    if not still.any():
        return chunk
    return replace(chunk, matches=closed_only(chunk.matches, ~still),
                   segments=chunk.segments[~still])


def answer_table(plan: CallPlan, table: pa.Table) -> Iterator[pa.Table]:
    """The output tables of one partition's selected columns (one per chunk of segments)."""

    newest = input_facts(plan, table) if table.num_rows else None
    stream, keys, groups, extra = event_stream(plan, table)
    compiled = _compiled(plan.query, plan.policy, plan.max_matches)
    carry = (-1, 0)
    try:
        for chunk in iter_segment_matches(compiled, stream):
            chunk = closed(compiled, chunk, stream, newest)
            ids = chunk.match_ids()
            if groups is not None:  # segments are runs: number and limit matches per key
                ids, carry = key_match_ids(groups[chunk.segments], carry)
                if len(ids):
                    check_matches(compiled.limits, int(ids.max()))
            yield _output(plan, stream, keys, chunk, ids, extra)
    except MatchLimitError as err:
        raise MatchLimitError(sql_advice(err.message)) from None


def answer_stream(plan: CallPlan, stream: EventStream, keys: pa.Array | None, *, cut: int,
                  offset: int, newest: int | None = None, extra: list[pa.Array] | None = None
                  ) -> Iterator[tuple[np.ndarray, np.ndarray, pa.Table]]:
    """The matches of a streamed chunk whose first event lies before ``cut``.

    Args:
        plan, stream, keys: as from :func:`event_stream` over the chunk.
        cut: the first uncommitted position (:func:`udfs.chunks.committed`).
        offset: matches of segment 0's key reported by earlier chunks: its ``match_id`` and
            its ``max_matches`` count go on from there.
        newest: from :func:`input_facts`.
        extra: the chunk's ``columns =>`` arrays, from :func:`event_stream`.

    Yields:
        ``(match_id, segment, output table)`` per piece of segments.
    """
    import numpy as np

    compiled = _compiled(plan.query, plan.policy, plan.max_matches)
    try:
        for chunk in iter_segment_matches(compiled, stream):
            # match_id order is start order, so the committed matches are a prefix
            k = int(np.searchsorted(chunk.matches.starts, cut, side="left"))
            truncated = k < len(chunk.matches)
            if truncated:
                chunk = _head(chunk, k)
            chunk = closed(compiled, chunk, stream, newest)
            ids = chunk.match_ids()
            if offset:
                first_key = chunk.segments == 0
                ids[first_key] += offset
                if first_key.any():
                    check_matches(compiled.limits, int(ids[first_key].max()))
            if len(ids):
                yield ids, chunk.segments, _output(plan, stream, keys, chunk, ids, extra or [])
            if truncated:  # the next pieces hold later segments: nothing committed there
                break
    except MatchLimitError as err:
        raise MatchLimitError(sql_advice(err.message)) from None


def _head(chunk: SegmentMatches, k: int) -> SegmentMatches:
    """The first ``k`` matches of a ``SegmentMatches``."""
    from dataclasses import replace

    m = chunk.matches
    offsets = m.offsets[:k + 1]
    end = int(offsets[-1])
    head = MatchArrays(m.starts[:k], m.ends[:k], offsets, m.positions[:end], m.variables[:end])
    return replace(chunk, matches=head, segments=chunk.segments[:k])


SQL_ADVICE = {
    "raise MatchLimits.max_matches": "raise the limit with the argument max_matches => N",
    "raise MatchLimits.max_partial_matches": "split the input (a narrower TABLE argument)",
    "raise MatchLimits.max_kleene_iterations": "split the input (a narrower TABLE argument)",
    "raise MatchLimits.max_bound_events": "split the input (a narrower TABLE argument)",
}
"""The core's advice names its Python settings; a SQL caller can only change the call."""


def sql_advice(message: str) -> str:
    """A limit error's message with the core's advice in the words of the SQL function.

    Example:
        >>> sql_advice("2 matches, more than max_matches=1; narrow the pattern or "
        ...            "raise MatchLimits.max_matches")
        '2 matches, more than max_matches=1; narrow the pattern or raise the limit with the argument max_matches => N'
    """
    for python, sql in SQL_ADVICE.items():
        message = message.replace(python, sql)
    return message


def micros(column: pa.Array | pa.ChunkedArray, ts_kind: str) -> np.ndarray:
    """A timestamp column as int64 microseconds (raw values for numbers), numpy."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if ts_kind == "date":
        days = pc.cast(column, pa.int32()).to_numpy(zero_copy_only=False)
        return days.astype(np.int64) * MICROS_PER_DAY
    if ts_kind in ("timestamp", "timestamp_ntz"):
        column = pc.cast(column, pa.timestamp("us", tz=column.type.tz))
    return pc.cast(column, pa.int64()).to_numpy(zero_copy_only=False).astype(np.int64)


def from_micros(values: np.ndarray, ts_kind: str) -> pa.Array:
    """int64 microseconds (numpy) back to an Arrow column of the plan's timestamp type."""
    import numpy as np
    import pyarrow as pa

    if ts_kind == "date":
        return pa.array((values // MICROS_PER_DAY).astype(np.int32), pa.int32()).cast(pa.date32())
    if ts_kind == "timestamp":
        return pa.array(values, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    if ts_kind == "timestamp_ntz":
        return pa.array(values, pa.int64()).cast(pa.timestamp("us"))
    return pa.array(values, pa.int64())


def event_stream(plan: CallPlan, table: pa.Table, *, presorted: bool = False
                 ) -> tuple[EventStream, pa.Array | None, np.ndarray | None, list[pa.Array]]:
    """One partition as a (segmented, with a key) EventStream, each segment's key, when a
    segment is a run of a key (``plan.positioned``) the key's index for each segment, and the
    columns of ``columns =>`` in stream order (a match's positions index them).

    ``presorted``: Spark delivered the rows in the engine's order (the call's ``orderBy``) and
    :class:`StreamedPartition` has already dropped the unbindable rows, so stream positions are
    the table's rows."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if plan.renames:
        columns = {name: table.column(name) for name in table.column_names}
        columns.update((internal, table.column(name)) for internal, name in plan.renames)
        table = pa.table(columns)
    if plan.filtered and not presorted:  # rows no alias can bind (the JVM shim has dropped
        # them already, if loaded; a streamed partition drops them as each batch arrives)
        table = table.filter(table.column(KEEP))
    if table.column("__id").null_count or table.column("__ts").null_count:
        bad = pc.or_(pc.is_null(table.column("__id")), pc.is_null(table.column("__ts")))
        at = pc.index(bad, True).as_py()
        raise MatchSeqArgumentError(f"event with id {table.column('__id')[at].as_py()} has a NULL "
                                    "id or timestamp; filter such rows out of the TABLE argument")
    table = table.append_column("__us", pa.array(micros(table.column("__ts"), plan.ts_kind)))
    order = [("__us", "ascending", "at_end"), ("__id", "ascending", "at_end")]
    if plan.positioned:  # Spark's order, ties of (ts, id) included
        order = [(POS, "ascending", "at_end")]
    if plan.key is not None:
        order.insert(0, ("__key", "ascending", "at_end"))
    if not presorted:
        table = table.take(pc.sort_indices(table, sort_keys=order))
    n = table.num_rows
    starts, keys = None, None
    if plan.key is not None:
        key = table.column("__key").combine_chunks()
        if pa.types.is_dictionary(key.type):
            key = key.cast(key.type.value_type)
        key = grouping_key(key)  # -0.0 and 0.0, and all NaNs, are one key as in GROUP BY
        keys = key.slice(0, 0)  # a task whose rows all dropped out still has the key's type
    if plan.key is not None and n:
        starts = key_runs(key)
    groups = None
    if plan.positioned and n:  # every run of consecutive positions is a segment of its own
        key_starts = starts if starts is not None else np.zeros(1, dtype=np.int64)
        pos = table.column(POS).to_numpy(zero_copy_only=False).astype(np.int64)
        cuts = np.flatnonzero(np.diff(pos) != 1) + 1
        starts = np.union1d(key_starts, cuts).astype(np.int64)
        groups = np.searchsorted(key_starts, starts, side="right") - 1
    if plan.key is not None and n:
        keys = key.take(pa.array(starts))
    types = table.column("__type")
    attrs = {}
    for i, attr in enumerate(plan.attributes):
        array = table.column(f"__a{i}").to_numpy(zero_copy_only=False)
        attrs[attr] = array.astype(object) if array.dtype.kind in "US" else array
    masks = {alias: table.column(f"__m{j}").to_numpy(zero_copy_only=False).astype(bool)
             for j, alias in enumerate(plan.mask_aliases)}
    stream = EventStream(table.column("__id").to_numpy(zero_copy_only=False).astype(np.int64),
                         table.column("__us").to_numpy(zero_copy_only=False),
                         np.asarray(types.to_numpy(zero_copy_only=False), dtype=object),
                         attrs, masks, starts)
    extra = [table.column(f"__c{i}").combine_chunks() for i in range(len(plan.columns))]
    return stream, keys, groups, extra


def key_match_ids(groups: np.ndarray, carry: tuple[int, int]
                  ) -> tuple[np.ndarray, tuple[int, int]]:
    """``match_id`` of each match when a key's runs are separate segments: 1, 2, ... per key.

    Args:
        groups: the key (an index, non-decreasing) of each match of a chunk, numpy.
        carry: the key and last ``match_id`` of the chunk before (``(-1, 0)`` at first).

    Returns:
        The ids and the carry for the next chunk.

    Example:
        >>> import numpy as np
        >>> ids, carry = key_match_ids(np.array([0, 0, 1]), (-1, 0))
        >>> ids.tolist(), carry
        ([1, 2, 1], (1, 1))
        >>> key_match_ids(np.array([1, 2]), carry)[0].tolist()
        [2, 1]
    """
    import numpy as np

    first = np.searchsorted(groups, groups, side="left")
    ids = np.arange(1, len(groups) + 1, dtype=np.int64) - first
    ids[groups == carry[0]] += carry[1]
    return ids, ((int(groups[-1]), int(ids[-1])) if len(groups) else carry)


def _output(plan: CallPlan, stream: EventStream, keys: pa.Array | None, chunk: SegmentMatches,
            ids: np.ndarray, extra: list[pa.Array]) -> pa.Table:
    """One chunk's matches as an Arrow table of the output schema (``extra``: the
    ``columns =>`` arrays in stream order, taken at the matches' positions)."""
    import numpy as np
    import pyarrow as pa

    result = chunk.matches
    offsets = pa.array(result.offsets - result.offsets[0], pa.int32())
    columns = {}
    if plan.key is not None:
        columns[plan.key] = keys.take(pa.array(chunk.segments, pa.int64()))
    columns.update({
        "match_id": pa.array(ids, pa.int64()),
        "start_ts": from_micros(stream.ts[result.starts], plan.ts_kind),
        "end_ts": from_micros(stream.ts[result.ends], plan.ts_kind),
        "event_ids": pa.ListArray.from_arrays(offsets, pa.array(stream.ids[result.positions],
                                                                pa.int64())),
        "variables": pa.ListArray.from_arrays(offsets, pa.array(result.variables, pa.string())),
        "n_events": pa.array(np.diff(result.offsets).astype(np.int32)),
    })
    if extra:
        taken = pa.array(result.positions, pa.int64())
        for name, values in zip(plan.columns, extra):
            columns[name] = pa.ListArray.from_arrays(offsets, values.take(taken))
    return pa.table(columns)


@lru_cache(maxsize=64)
def _compiled(query: Query, policy: str | None, max_matches: int | None) -> CompiledQuery:
    # Compiled once per Python worker from the tree analyze parsed (validated against the
    # columns there already): compiling a parsed pattern took 0.7 ms against 1.8 ms from its
    # text (a pattern with WHERE across three components), more than matching a small
    # partition. The compiled program itself holds closures, which do not pickle.

    limits = MatchLimits() if max_matches is None else MatchLimits(max_matches=max_matches)
    return compile_query(query, policy=policy, limits=limits)


def match_seq_udtf() -> UserDefinedTableFunction:
    """The Spark UDTF object of ``match_seq``."""
    return table_function(MatchSeq)
