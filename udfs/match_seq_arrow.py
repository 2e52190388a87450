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

    SELECT * FROM match_seq_arrow('PATTERN a; b', NULL, 'user_id',
                                  TABLE(events) PARTITION BY user_id ORDER BY ts)
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
            yield match_batches(self.batches, *self.args)
        except CepError as err:
            raise MatchSeqArrowFailed(str(err)) from None


def match_batches(batches: list[Any], pattern: Any, policy: Any, key_col: Any) -> Any:
    """The output table (``RETURN_TYPE``) for one partition's record batches."""
    import numpy as np
    import pyarrow as pa

    from cep.match import find_matches
    from cep.match.stream import EventStream

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
    ts_col = table.column(names["ts"])
    if not pa.types.is_timestamp(ts_col.type):
        raise MatchSeqArrowError(f"column ts must be a TIMESTAMP, found {ts_col.type}; use match_seq "
                                 "for numeric timestamps")
    compiled = _compiled(pattern, policy, tuple(table.column_names))
    ts = ts_col.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()).to_numpy(zero_copy_only=False)
    ids = table.column(names["id"]).to_numpy(zero_copy_only=False)
    if table.column(names["id"]).null_count or ts_col.null_count:
        raise MatchSeqArrowError("an event has a NULL id or timestamp; filter such rows out")
    types = np.asarray(table.column(names["type"]).to_pylist(), dtype=object)
    attrs = {}
    for attr in compiled.attributes:
        column = table.column(names[attr.lower()])
        array = column.to_numpy(zero_copy_only=False)
        attrs[attr] = array.astype(object) if array.dtype.kind in "US" else array
    stream = EventStream.from_columns(ids, ts, types, attrs)
    result = find_matches(compiled, stream)
    n = len(result)
    key = None
    if key_col is not None and table.num_rows:
        key_values = table.column(names[str(key_col).lower()])
        key = key_values[0].as_py()
        if len(key_values.unique()) > 1:
            raise MatchSeqArrowError(f"rows of several {key_col} values reached one partition; "
                                     f"add PARTITION BY {key_col}")
    offsets = result.offsets
    flat_ids = stream.ids[result.positions]
    event_ids = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(flat_ids, pa.int64()))
    variables = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()),
                                         pa.array(result.variables.tolist(), pa.string()))
    ts_type = pa.timestamp("us", tz="UTC")
    return pa.table({
        "key": pa.array([None if key is None else str(key)] * n, pa.string()),
        "match_id": pa.array(np.arange(1, n + 1, dtype=np.int64)),
        "start_ts": pa.array(stream.ts[result.starts], pa.int64()).cast(ts_type),
        "end_ts": pa.array(stream.ts[result.ends], pa.int64()).cast(ts_type),
        "event_ids": event_ids,
        "variables": variables,
        "n_events": pa.array(np.diff(offsets).astype(np.int32)),
    })


def match_seq_arrow_udtf() -> Any:
    """The Spark Arrow UDTF object for ``match_seq_arrow``."""
    from pyspark.sql.functions import arrow_udtf

    return arrow_udtf(MatchSeqArrowTable, returnType=RETURN_TYPE)
