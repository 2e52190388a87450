"""Spark adapter of ``match_seq_arrow``: ``match_seq`` over Arrow batches, for large tables.

The same matches as ``match_seq`` (same engine, same semantics), moved between the JVM and
Python as Arrow record batches instead of one Python object per row: on 10^6 events the
transport is ~5x cheaper (BENCHMARKS.md). Arrow UDTFs cannot have ``analyze`` in Spark 4.2, so
the trade-offs are: a fixed output schema (the key, when ``key_col`` is given, comes back as
STRING in column ``key``), ``ts_col`` must be a TIMESTAMP, the pattern is validated when the
first partition runs (errors still reach the SQL caller with code and position), and
single-event conditions are evaluated by the engine (numpy) rather than pushed down to Spark.

Arguments are positional (named arguments are not passed to Arrow UDTFs with a TABLE
argument): ``match_seq_arrow(pattern, policy, key_col, events)`` where ``policy`` and
``key_col`` may be NULL. Columns must be called ``id``, ``type`` and ``ts`` (rename them in the
TABLE subquery otherwise).

With ``key_col``, one Spark partition may hold many keys: every row of a key must be in it
(``PARTITION BY key``, or a bucket of the key such as ``PARTITION BY pmod(hash(key), 64)``).
The rows are grouped by key and matched as segments of one stream (``cep.match.segments``),
which saves the per-call cost when keys have few events. Without ``key_col`` the whole
partition is one stream.

    SELECT * FROM match_seq_arrow('PATTERN a; b', NULL, 'user_id',
                                  TABLE(events) PARTITION BY pmod(hash(user_id), 64))
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Iterator

from cep.errors import CepError

RETURN_TYPE = ("key STRING, match_id BIGINT, start_ts TIMESTAMP, end_ts TIMESTAMP, "
               "event_ids ARRAY<BIGINT>, variables ARRAY<STRING>, n_events INT")


class MatchSeqArrowFailed(Exception):
    """What the SQL caller sees: the message of the CepError (code, position, snippet)."""


class MatchSeqArrowError(CepError):
    """An argument or input column of ``match_seq_arrow`` is missing or has the wrong type."""

    code = "CEP-SQL-011"


def _scalar(value: Any) -> Any:
    # Scalar arguments arrive as one-element (or per-row) Arrow arrays.
    if hasattr(value, "to_pylist"):
        items = value.to_pylist()
        return items[0] if items else None
    return value


@lru_cache(maxsize=64)
def _compiled(pattern: str, policy: str | None, columns: tuple[str, ...]) -> Any:
    # Compiled once per Python worker, validated against the table's columns.
    from cep.match import compile_query

    return compile_query(pattern, policy=policy, columns=list(columns))


class MatchSeqArrowTable:
    """Arrow UDTF handler: collects a partition's batches, runs the engine in ``terminate``."""

    def __init__(self) -> None:
        self.batches: list[Any] = []
        self.args: tuple[Any, ...] = ()

    def eval(self, pattern: Any, policy: Any, key_col: Any, events: Any) -> Iterator[Any]:
        if not self.args:
            self.args = (_scalar(pattern), _scalar(policy), _scalar(key_col))
        self.batches.append(events)
        return iter(())

    def terminate(self) -> Iterator[Any]:
        if not self.batches:
            return
        try:
            yield from match_batches(self.batches, *self.args)
        except CepError as err:
            raise MatchSeqArrowFailed(str(err)) from None


def match_batches(batches: list[Any], pattern: Any, policy: Any, key_col: Any) -> Iterator[Any]:
    """The output tables (``RETURN_TYPE``) for one partition's record batches.

    With ``key_col`` the partition may hold many keys (``PARTITION BY key`` or a bucket of it):
    rows are grouped by key, every key is a segment of one stream, and the segments are matched
    together, chunk by chunk (``cep.match.segments``); one table is yielded per chunk.
    """
    import pyarrow as pa

    from cep.match.segments import iter_segment_matches

    if not isinstance(pattern, str):
        raise MatchSeqArrowError(f"argument pattern: expected a string, found {pattern!r}")
    table = pa.Table.from_batches(batches)
    names = {n.lower(): n for n in table.column_names}
    for needed in ("id", "type", "ts"):
        if needed not in names:
            raise MatchSeqArrowError(f"the events table needs a column {needed!r}; columns: "
                                     f"{', '.join(table.column_names)}")
    if key_col is not None and str(key_col).lower() not in names:
        raise MatchSeqArrowError(f"key_col {key_col!r} is not a column; columns: "
                                 f"{', '.join(table.column_names)}")
    if not pa.types.is_timestamp(table.column(names["ts"]).type):
        raise MatchSeqArrowError(f"column ts must be a TIMESTAMP, found "
                                 f"{table.column(names['ts']).type}; use match_seq for numeric "
                                 "timestamps")
    if table.column(names["id"]).null_count or table.column(names["ts"]).null_count:
        raise MatchSeqArrowError("an event has a NULL id or timestamp; filter such rows out")
    compiled = _compiled(pattern, policy, tuple(table.column_names))
    key_name = None if key_col is None else names[str(key_col).lower()]
    stream, keys = _stream(table, names, key_name, compiled.attributes)
    for chunk in iter_segment_matches(compiled, stream):
        yield _output(stream, keys, chunk)


def _stream(table: Any, names: dict[str, str], key_name: str | None,
            attributes: tuple[str, ...]) -> tuple[Any, Any]:
    """The partition as one (segmented, when keyed) EventStream, and each segment's key."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from cep.match.stream import EventStream

    ts_us = pc.cast(pc.cast(table.column(names["ts"]), pa.timestamp("us", tz="UTC")), pa.int64())
    table = table.append_column("__ts_us", ts_us)
    order = [("__ts_us", "ascending", "at_end"), (names["id"], "ascending", "at_end")]
    if key_name is not None:
        order.insert(0, (key_name, "ascending", "at_end"))
    table = table.take(pc.sort_indices(table, sort_keys=order))
    n = table.num_rows
    starts = np.zeros(1, dtype=np.int64)
    keys = None
    if key_name is not None and n:
        key = table.column(key_name)
        if pa.types.is_dictionary(key.type):
            key = key.cast(key.type.value_type)
        nulls = key.is_null().to_numpy(zero_copy_only=False)
        changed = pc.fill_null(pc.not_equal(key.slice(1), key.slice(0, n - 1)), False)
        changed = changed.to_numpy(zero_copy_only=False) | (nulls[1:] != nulls[:-1])
        starts = np.concatenate(([0], np.flatnonzero(changed) + 1)).astype(np.int64)
        keys = _key_strings(key.take(pa.array(starts)))
    types_col = table.column(names["type"])
    if pa.types.is_dictionary(types_col.type):
        types_col = types_col.cast(types_col.type.value_type)
    attrs = {}
    for attr in attributes:
        array = table.column(names[attr.lower()]).to_numpy(zero_copy_only=False)
        attrs[attr] = array.astype(object) if array.dtype.kind in "US" else array
    stream = EventStream(table.column(names["id"]).to_numpy(zero_copy_only=False).astype(np.int64),
                         table.column("__ts_us").to_numpy(zero_copy_only=False),
                         np.asarray(types_col.to_numpy(zero_copy_only=False), dtype=object),
                         attrs, segment_starts=starts if n else None)
    return stream, keys


def _key_strings(keys: Any) -> Any:
    """The ``key`` output column's values (STRING) for the segments' keys."""
    import pyarrow as pa

    try:
        return keys.cast(pa.string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.array([None if k is None else str(k) for k in keys.to_pylist()], pa.string())


def _output(stream: Any, keys: Any, chunk: Any) -> Any:
    """One chunk's matches as an Arrow table of ``RETURN_TYPE``."""
    import numpy as np
    import pyarrow as pa

    result = chunk.matches
    n = len(result)
    offsets = pa.array(result.offsets - result.offsets[0], pa.int32())
    event_ids = pa.ListArray.from_arrays(offsets, pa.array(stream.ids[result.positions], pa.int64()))
    variables = pa.ListArray.from_arrays(offsets, pa.array(result.variables, pa.string()))
    ts_type = pa.timestamp("us", tz="UTC")
    key = (pa.nulls(n, pa.string()) if keys is None
           else keys.take(pa.array(chunk.segments, pa.int64())))
    return pa.table({
        "key": key,
        "match_id": pa.array(chunk.match_ids()),
        "start_ts": pa.array(stream.ts[result.starts], pa.int64()).cast(ts_type),
        "end_ts": pa.array(stream.ts[result.ends], pa.int64()).cast(ts_type),
        "event_ids": event_ids,
        "variables": variables,
        "n_events": pa.array(np.diff(result.offsets).astype(np.int32)),
    })


def match_seq_arrow_udtf() -> Any:
    """The Spark Arrow UDTF object for ``match_seq_arrow``."""
    from pyspark.sql.functions import arrow_udtf

    return arrow_udtf(MatchSeqArrowTable, returnType=RETURN_TYPE)
