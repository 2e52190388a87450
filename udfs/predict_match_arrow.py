"""Spark adapter of ``predict_match_arrow``: ``predict_match`` with the events moved as Arrow batches.

The same answers as ``predict_match`` (same argument checks, same ordering, same core calls:
:func:`udfs.predict_match.answer_partition`), for large tables: the row UDTF pays for one
Python row per event (BENCHMARKS.md), this one receives Arrow record batches and hands whole
numpy columns to :func:`cep.predict.predict`. Arrow UDTFs cannot have ``analyze`` in Spark 4.2
(SPARK-53286), hence:

* positional arguments, the table last: ``predict_match_arrow(subscription, lookahead,
  threshold, model, output, key_col, events)``; ``threshold``, ``model``, ``output`` and
  ``key_col`` may be NULL (0, no model, ``'keys'``, no key); ``combine`` and ``smoothing`` are
  the defaults (``'independent'``, 0);
* the caller partitions the table: ``TABLE(t) PARTITION BY key`` (every row of a key in one
  partition; a bucket such as ``PARTITION BY pmod(hash(key), 16)`` also works, the rows are
  grouped by ``key_col`` here and ordered by ``(key, ts, id)``); without ``key_col`` the whole
  partition is one stream;
* fixed column names: ``ts`` (TIMESTAMP), optional ``id`` (an integer type: ties in ``ts``, and
  the ``id`` of ``'events'`` output) and ``type`` (read when a class has no ``DEFINE``), plus the
  columns the subscription reads; other columns are ignored (rename columns in the TABLE
  subquery otherwise);
* a NULL ``model`` means no model (each key trained on its own events): without ``analyze`` a
  model subquery that finds no row cannot be told from no model, unlike ``predict_match``;
* the arguments are checked when the first partition runs, with the codes of
  ``predict_match`` (``CEP-PAT-...`` / ``CEP-PRED-001..003`` with caret, ``CEP-PRED-011``,
  ``CEP-PRED-012``, ``CEP-PRED-010``); a table without the needed columns (or with one of the
  wrong type), or a bad ``key_col``, is ``CEP-SQL-051``;
* one output schema for both outputs, :data:`RETURN_TYPE` (``key`` as STRING): with ``'keys'``
  ``id`` and ``ts`` are NULL, with ``'events'`` ``matches``, ``events`` and ``last_ts``.

    SELECT * FROM predict_match_arrow('PATTERN A, B; C', 5, NULL, NULL, 'keys', 'user_id',
                                      TABLE(events) PARTITION BY pmod(hash(user_id), 16))

Example (no Spark needed: the column check is a plain function):
    >>> import pyarrow as pa
    >>> needed_columns("PATTERN H, H DEFINE H AS tmax_c > 30",
    ...                pa.schema([("City", pa.string()), ("TS", pa.timestamp("us")),
    ...                           ("tmax_c", pa.float64())]), "city")
    TableColumns(ts='TS', id=None, type=None, key='City', attributes=(('tmax_c', 'tmax_c'),))
    >>> needed_columns("PATTERN A, B", pa.schema([("ts", pa.timestamp("us"))]), None)
    Traceback (most recent call last):
    ...
    udfs.predict_match_arrow.PredictTableError: CEP-SQL-051: class 'A' has no DEFINE, so predict_match_arrow needs a column type; the table has: ts timestamp[us]
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

from cep.errors import CepError
from udfs.shell import key_strings as _key_strings, scalar as _scalar
from udfs.predict_match import (PredictCallPlan, _model, answer_partition, check_call,
                                check_timestamps, read_attributes)

RETURN_TYPE = ("key STRING, instance STRING, id BIGINT, ts TIMESTAMP, state STRING, "
               "progress INT, probability DOUBLE, p_exact DOUBLE, matched BOOLEAN, "
               "matches BIGINT, events BIGINT, last_ts TIMESTAMP")


class PredictMatchArrowFailed(Exception):
    """What the SQL caller sees: the message of the CepError (code, position, snippet)."""


class PredictTableError(CepError):
    """The TABLE argument of ``predict_match_arrow`` lacks a needed column or has one of the
    wrong type, or ``key_col`` is not a column name (the message lists the table's columns)."""

    code = "CEP-SQL-051"


@dataclass(frozen=True)
class TableColumns:
    """The table's names of the columns a call reads (None: not read / not there)."""

    ts: str
    id: str | None
    type: str | None
    key: str | None
    attributes: tuple[tuple[str, str], ...]  # (attribute as the core reads it, column name)


class PredictMatchArrowTable:
    """Arrow UDTF handler: checks the call on the first batch, answers in ``terminate``."""

    def __init__(self) -> None:
        self.batches: list[Any] = []
        self.plan: PredictCallPlan | None = None
        self.model: Any = None
        self.columns: TableColumns | None = None

    def eval(self, subscription: Any, lookahead: Any, threshold: Any, model: Any, output: Any,
             key_col: Any, events: Any) -> Iterator[Any]:
        if self.plan is None:
            with _reported():
                self.plan, self.model, self.columns = check_batch_call(
                    _scalar(subscription), _scalar(lookahead), _scalar(threshold),
                    _scalar(model), _scalar(output), _scalar(key_col), events.schema)
        self.batches.append(events)
        return iter(())

    def terminate(self) -> Iterator[Any]:
        if self.plan is None:  # no rows in this partition
            return
        with _reported():
            answer = answer_batches(self.batches, self.plan, self.model, self.columns)
        yield answer


@contextmanager
def _reported() -> Iterator[None]:
    """A CepError reaches the SQL caller as its message (code, position, caret), one frame."""
    try:
        yield
    except CepError as err:
        raise PredictMatchArrowFailed(str(err)) from None


def _found(schema: Any) -> str:
    return ", ".join(f"{f.name} {f.type}" for f in schema)


def needed_columns(subscription: str, schema: Any, key_col: Any) -> TableColumns:
    """The columns a call reads, or :class:`PredictTableError` when one is missing or has the
    wrong type (an attribute the subscription reads and the table lacks is ``CEP-PAT-203``)."""
    import pyarrow as pa

    from udfs.predict_match import _compiled

    names = {f.name.lower(): f.name for f in schema}
    types = {f.name.lower(): f.type for f in schema}
    if "ts" not in names or not pa.types.is_timestamp(types["ts"]):
        found = "missing" if "ts" not in names else f"of type {types['ts']}"
        raise PredictTableError(f"predict_match_arrow needs a TIMESTAMP column ts ({found}); use "
                                f"predict_match for other timestamps; the table has: "
                                f"{_found(schema)}")
    attributes, needs_type = read_attributes(subscription, [f.name for f in schema])
    if needs_type and "type" not in names:
        classes = [p.cls for p in _compiled(subscription).primitives if p.condition is None]
        what = f"class {classes[0]!r} has no DEFINE" if classes else "a condition reads type"
        raise PredictTableError(f"{what}, so predict_match_arrow needs a column type; the table "
                                f"has: {_found(schema)}")
    if "id" in names and not pa.types.is_integer(types["id"]):
        raise PredictTableError(f"column id must be an integer type, found {types['id']}; the "
                                f"table has: {_found(schema)}")
    key = None
    if key_col is not None:
        if not isinstance(key_col, str) or key_col.lower() not in names:
            raise PredictTableError(f"key_col {key_col!r} is not a column; the table has: "
                                    f"{_found(schema)}")
        if pa.types.is_nested(types[key_col.lower()]):
            raise PredictTableError(f"key_col {key_col!r} must be a scalar column, found "
                                    f"{types[key_col.lower()]}")
        key = names[key_col.lower()]
    return TableColumns(names["ts"], names.get("id"), names["type"] if needs_type else None, key,
                        tuple((a, names[a]) for a in attributes))


def check_batch_call(subscription: Any, lookahead: Any, threshold: Any, model: Any, output: Any,
                     key_col: Any, schema: Any) -> tuple[PredictCallPlan, Any, TableColumns]:
    """The plan, the model (or None) and the columns to read, from the scalar arguments and the
    table's Arrow schema: the checks of ``predict_match``'s ``analyze``, run on the first batch."""
    text, look, theta, out_kind, comb, smooth = check_call(subscription, lookahead, threshold,
                                                           output, None, None)
    columns = needed_columns(text, schema, key_col)
    blob = None if model is None else bytes(model)
    plan = PredictCallPlan(text, look, theta, out_kind, comb, smooth, "timestamp",
                           columns.id is not None, columns.type is not None,
                           columns.key is not None, tuple(a for a, _ in columns.attributes),
                           blob is not None, blob)
    return plan, None if blob is None else _model(blob, text), columns


def answer_batches(batches: list[Any], plan: PredictCallPlan, model: Any,
                   columns: TableColumns) -> Any:
    """The output table (:data:`RETURN_TYPE`) of one partition's record batches."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    table = pa.Table.from_batches(batches)

    def column(name: str) -> Any:
        array = table.column(name).combine_chunks()
        return array.dictionary_decode() if pa.types.is_dictionary(array.type) else array

    ts_col = pc.cast(pc.cast(column(columns.ts), pa.timestamp("us", tz="UTC")), pa.int64())
    ids = None if columns.id is None else _values(column(columns.id))
    codes, keys = None, None
    if columns.key is not None:
        encoded = pc.dictionary_encode(_key_strings(column(columns.key)), null_encoding="encode")
        keys = encoded.dictionary
        codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    if ts_col.null_count:
        check_timestamps(ts_col.to_pylist(), None if ids is None else ids.tolist(),
                         None if keys is None else keys.take(pa.array(codes)).to_pylist())
    ts = ts_col.to_numpy(zero_copy_only=False)
    types = None if columns.type is None else _values(column(columns.type), strings=True)
    attrs = {attr: _values(column(name)) for attr, name in columns.attributes}
    return _output(plan, keys, list(answer_partition(plan, model, ts, ids, types, codes, attrs)))


def _values(array: Any, strings: bool = False) -> Any:
    """An Arrow column as the numpy array the core reads: numbers as numbers (floats with NaN
    for NULL), everything else (strings, NULLs in integers or booleans) as objects."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = array.type
    if pa.types.is_decimal(kind):
        array, kind = pc.cast(array, pa.float64()), pa.float64()
    if pa.types.is_floating(kind):
        return array.to_numpy(zero_copy_only=False).astype(np.float64)
    if (pa.types.is_integer(kind) or pa.types.is_boolean(kind)) and not array.null_count:
        return array.to_numpy(zero_copy_only=False)
    if strings or pa.types.is_string(kind) or pa.types.is_large_string(kind):
        encoded = pc.dictionary_encode(array, null_encoding="encode")
        values = np.empty(len(encoded.dictionary), dtype=object)
        values[:] = encoded.dictionary.to_pylist()
        return values[encoded.indices.to_numpy(zero_copy_only=False)]
    values = np.empty(len(array), dtype=object)
    values[:] = array.to_pylist()
    return values


def _output(plan: PredictCallPlan, keys: Any, parts: list[dict[str, list[Any]]]) -> Any:
    import numpy as np
    import pyarrow as pa

    def joined(name: str) -> list[Any]:
        return [v for part in parts for v in part[name]]

    n = sum(len(part["state"]) for part in parts)
    ts_type = pa.timestamp("us", tz="UTC")
    key = (pa.nulls(n, pa.string()) if keys is None
           else keys.take(pa.array(joined("key"), pa.int64())))
    cols = {"key": key, "instance": pa.array(joined("instance"), pa.string()),
            "state": pa.array(joined("state"), pa.string()),
            "progress": pa.array(joined("progress"), pa.int32()),
            "probability": pa.array(joined("probability"), pa.float64()),
            "p_exact": pa.array(joined("p_exact"), pa.float64()),
            "matched": pa.array(joined("matched"), pa.bool_())}
    if plan.output == "events":
        cols.update(id=pa.array(joined("id"), pa.int64()),
                    ts=pa.array(np.asarray(joined("ts"), dtype=np.int64)).cast(ts_type),
                    matches=pa.nulls(n, pa.int64()), events=pa.nulls(n, pa.int64()),
                    last_ts=pa.nulls(n, ts_type))
    else:
        cols.update(id=pa.nulls(n, pa.int64()), ts=pa.nulls(n, ts_type),
                    matches=pa.array(joined("matches"), pa.int64()),
                    events=pa.array(joined("events"), pa.int64()),
                    last_ts=pa.array(np.asarray(joined("last_ts"), dtype=np.int64)).cast(ts_type))
    return pa.table({name: cols[name] for name in (
        "key", "instance", "id", "ts", "state", "progress", "probability", "p_exact", "matched",
        "matches", "events", "last_ts")})


def predict_match_arrow_udtf() -> Any:
    """The Spark Arrow UDTF object for ``predict_match_arrow``."""
    from pyspark.sql.functions import arrow_udtf

    return arrow_udtf(PredictMatchArrowTable, returnType=RETURN_TYPE)
