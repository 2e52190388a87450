"""Spark adapter of ``predict_match``: will a subscription match within the next n events?

A row UDTF with ``analyze`` (DESIGN.md section 5: the output schema depends on ``output`` and on
the key, id and timestamp types, and the subscription is checked before any task runs) over the
core's :func:`cep.predict.predict` (P-ToPSS, Muthusamy, Liu and Jacobsen, DEBS 2010)::

    SELECT * FROM predict_match(
        subscription => 'PATTERN H, H, H DEFINE H AS tmax_c > 30',
        lookahead => 5, threshold => 0.2,
        events => TABLE(daily_temperatures) PARTITION BY city ORDER BY ts)
    SELECT * FROM predict_match(
        subscription => 'PATTERN H, H, H DEFINE H AS tmax_c > 30', lookahead => 5,
        model => (SELECT model FROM models VERSION AS OF 3 WHERE name = 'heat'),
        output => 'events', key_col => 'city', events => TABLE(daily_temperatures))

``analyze`` compiles the subscription (:func:`cep.predict.compile_subscription`: ``CEP-PAT-...``
and ``CEP-PRED-001`` .. ``003`` with line, column and caret), checks ``lookahead``,
``threshold``, ``output``, ``combine`` and ``smoothing`` with the core's
:func:`cep.predict.check_arguments` (``CEP-PRED-011``), resolves the columns (``CEP-SQL-050``
for a missing column, a column of the wrong type or an argument that is not a constant;
``CEP-PAT-203`` with a caret for an attribute the table does not have) and asks Spark for just
the columns the subscription reads: the timestamp (TIMESTAMP as UTC microseconds), the id, the
type column when a class has no ``DEFINE``, the primitives' attributes and the join-variable /
``[attr]`` attributes. Rows are **not** filtered by the single-event conditions: an event that
satisfies no primitive still moves every machine (``,`` means the very next event), so pushing
a filter down would change the answer.

Partitions: with ``key_col`` the function partitions the table itself into ``KEY_BUCKETS``
buckets of the key hash, each task groups its rows by key, and every output row carries the key
column (Spark then rejects an explicit ``PARTITION BY``). Without ``key_col`` the caller's
``PARTITION BY`` decides and each partition is one stream; a Python UDTF's ``analyze`` does not
see the ``PARTITION BY`` expressions, so the output has no key column then (as ``match_seq``).
Inside a stream the events are ordered by ``(ts, id)``.

Model: without ``model`` each stream's chain is trained on that stream's own events (one core
call per key). ``model`` is a BINARY blob of :meth:`cep.predict.Model.to_bytes`, typically a
scalar subquery over a Delta table of models (``VERSION AS OF`` reads an older one); Spark
evaluates it once and hands it to every task with each row. A blob that is corrupt, of another
format version or of another subscription is ``CEP-PRED-012``; the argument given but NULL (the
subquery found no row) is ``CEP-SQL-050`` rather than a silent switch to per-stream training;
``model => NULL`` written as a literal means "no model". With a model, a task answers all its
keys in one core call (the answer of an instance does not depend on the other instances' events
once the chain is fixed).

Errors raised in ``analyze`` or while a task runs are re-raised as :class:`PredictMatchFailed`
with the ``CepError`` message from one short frame, so the SQL caller reads the code, the
position and the caret snippet.

Example (no Spark needed: the output schema is a plain function):
    >>> output_fields("keys", None, "BIGINT", "TIMESTAMP")[:4]
    ['instance STRING', 'state STRING', 'progress INT', 'probability DOUBLE']
    >>> output_fields("events", "city STRING", "BIGINT", "TIMESTAMP")[:4]
    ['city STRING', 'instance STRING', 'id BIGINT', 'ts TIMESTAMP']
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from functools import lru_cache
from typing import Any, Iterator

from pyspark.sql.udtf import AnalyzeResult

from cep.errors import CepError

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
# Buckets of the key_col form (as match_seq): one task answers many keys, each on its own.
KEY_BUCKETS = 64
ARGUMENTS = ("subscription", "events", "lookahead", "threshold", "model", "output", "combine",
             "smoothing", "ts_col", "id_col", "type_col", "key_col")


class PredictMatchArgumentError(CepError):
    """An argument of ``predict_match`` the core does not check: the TABLE argument, a column
    name (missing column, wrong type), an argument that is not a constant, the ``model``
    argument's type or a NULL model."""

    code = "CEP-SQL-050"


class PredictMatchFailed(Exception):
    """What the SQL caller sees: the message of the CepError (code, position, snippet)."""


@dataclass(frozen=True)
class PredictCallPlan:
    """What ``analyze`` decided, shipped to every task.

    Attributes:
        subscription: the subscription text.
        lookahead, threshold, output, combine, smoothing: the checked arguments.
        ts_kind: ``'timestamp'`` (UTC microseconds), ``'int'`` or ``'float'``.
        has_id, has_type, has_key: whether ``__id``, ``__type`` and ``__key`` are selected.
        attributes: lower-cased attribute names of ``__a0, __a1, ...``.
        model_given: the ``model`` argument was passed (and is not a NULL literal).
        model_blob: the blob when ``model`` is a constant (checked in ``analyze``).
    """

    subscription: str
    lookahead: int
    threshold: float
    output: str
    combine: str
    smoothing: float
    ts_kind: str
    has_id: bool
    has_type: bool
    has_key: bool
    attributes: tuple[str, ...]
    model_given: bool = False
    model_blob: bytes | None = None


@dataclass
class PredictMatchAnalyzeResult(AnalyzeResult):
    """``AnalyzeResult`` carrying the :class:`PredictCallPlan` to ``__init__`` on the executors."""

    plan: PredictCallPlan | None = None


def output_fields(output: str, key: str | None, id_type: str, ts_type: str) -> list[str]:
    """The output columns as ``name TYPE`` strings (``key``: the key column's, or None).

    The row layout the handler yields and docs/sql.md documents; ``analyze`` builds the
    schema from :func:`output_columns` with the same names.
    """
    head = [] if key is None else [key]
    return head + [f"{name} {ts_type if typ == 'TS' else id_type if typ == 'ID' else typ}"
                   for name, typ in output_columns(output)]


def output_columns(output: str) -> list[tuple[str, str]]:
    """``(name, type)`` of the output columns after the key; ``ID`` / ``TS``: the id / ts type."""
    if output == "events":
        return [("instance", "STRING"), ("id", "ID"), ("ts", "TS"), ("state", "STRING"),
                ("progress", "INT"), ("probability", "DOUBLE"), ("p_exact", "DOUBLE"),
                ("matched", "BOOLEAN")]
    return [("instance", "STRING"), ("state", "STRING"), ("progress", "INT"),
            ("probability", "DOUBLE"), ("p_exact", "DOUBLE"), ("matched", "BOOLEAN"),
            ("matches", "BIGINT"), ("events", "BIGINT"), ("last_ts", "TS")]


def _constant(arg: Any, name: str) -> Any:
    if arg is None:
        return None
    if arg.isTable or not arg.isConstantExpression:
        raise PredictMatchArgumentError(f"argument {name} must be a constant, found an "
                                        "expression or a table")
    return arg.value


def _string(arg: Any, name: str) -> str | None:
    value = _constant(arg, name)
    if value is not None and (not isinstance(value, str) or not value):
        raise PredictMatchArgumentError(f"argument {name}: expected a column name, found {value!r}")
    return value


def _number(value: Any) -> Any:
    """A SQL DECIMAL literal (``0.2``) as a float; anything else unchanged (the core checks)."""
    return float(value) if isinstance(value, Decimal) else value


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _columns_found(fields: dict[str, Any]) -> str:
    return ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in fields.values())


def _field(fields: dict[str, Any], name: str, role: str) -> Any:
    found = fields.get(name.lower())
    if found is None:
        raise PredictMatchArgumentError(f"{role} {name!r} is not a column of the events table; "
                                        f"columns found: {_columns_found(fields)}")
    return found


@lru_cache(maxsize=64)
def _compiled(text: str) -> Any:
    # Compiled once per Python worker (analyze and every task of the same query).
    from cep.predict import compile_subscription

    return compile_subscription(text)


@lru_cache(maxsize=8)
def _model(blob: bytes, subscription: str) -> Any:
    from cep.predict import load_model

    return load_model(blob, subscription)


def read_attributes(text: str, columns: list[str]) -> tuple[list[str], bool]:
    """The attributes a subscription reads (lower-cased, first mention first) and whether it
    reads the type column (a class without ``DEFINE``, or ``type`` in a condition).

    ``ts`` and ``type`` always mean the timestamp and type columns (docs/semantics.md,
    decision 9). An attribute the table does not have is ``CEP-PAT-203`` with its position.
    """
    from cep.lang import parse_pattern
    from cep.lang.ast import AttrRef
    from cep.lang.errors import E_UNKNOWN_ATTRIBUTE, PatternSemanticError

    query = parse_pattern(text)
    sub = _compiled(text)
    wanted: dict[str, tuple[int, int] | None] = {}
    for cond in query.all_conditions():
        for ref in cond.refs:
            if isinstance(ref, AttrRef):
                wanted.setdefault(ref.attr.lower(), ref.span)
    for eq in query.equivalences:
        wanted.setdefault(eq.attr.lower(), eq.span)
    for attr in sub.instance_attrs:
        wanted.setdefault(attr.lower(), None)
    needs_type = any(p.condition is None for p in sub.primitives) or "type" in wanted
    out = []
    for attr, span in wanted.items():
        if attr in ("ts", "type"):
            continue
        if attr not in {c.lower() for c in columns}:
            start, end = span if span is not None else (0, 0)
            raise PatternSemanticError(
                E_UNKNOWN_ATTRIBUTE, f"unknown attribute '{attr}'; the events table has columns: "
                f"{', '.join(columns)}", text, start, end)
        out.append(attr)
    return out, needs_type


def check_call(subscription: Any, lookahead: Any, threshold: Any, output: Any, combine: Any,
               smoothing: Any) -> tuple[str, int, float, str, str, float]:
    """The subscription compiled and the core's argument checks, from plain values.

    Example:
        >>> check_call("PATTERN A, B", 3, Decimal("0.2"), None, None, None)
        ('PATTERN A, B', 3, 0.2, 'keys', 'independent', 0.0)
    """
    from cep.predict import check_arguments

    if subscription is None:
        raise PredictMatchArgumentError("argument subscription is required")
    if not isinstance(subscription, str):
        raise PredictMatchArgumentError(f"argument subscription: expected a string, found "
                                        f"{subscription!r}")
    _compiled(subscription)
    checked = check_arguments(lookahead, _number(threshold), output, combine, _number(smoothing))
    return (subscription, *checked)


def analyze_call(subscription: Any, events: Any, lookahead: Any = None, threshold: Any = None,
                 model: Any = None, output: Any = None, combine: Any = None,
                 smoothing: Any = None, ts_col: Any = None, id_col: Any = None,
                 type_col: Any = None, key_col: Any = None) -> PredictMatchAnalyzeResult:
    """The ``AnalyzeResult`` of one call (see the module docstring)."""
    from pyspark.sql.types import (BinaryType, BooleanType, DecimalType, DoubleType, IntegerType,
                                   IntegralType, LongType, NullType, NumericType, StringType,
                                   StructField, StructType, TimestampNTZType, TimestampType)
    from pyspark.sql.udtf import OrderingColumn, PartitioningColumn, SelectedColumn

    if events is None or not events.isTable:
        raise PredictMatchArgumentError("argument events must be a TABLE(...) argument")
    text, look, theta, out_kind, comb, smooth = check_call(
        _constant(subscription, "subscription"), _constant(lookahead, "lookahead"),
        _constant(threshold, "threshold"), _constant(output, "output"),
        _constant(combine, "combine"), _constant(smoothing, "smoothing"))
    fields = {f.name.lower(): f for f in events.dataType.fields}
    ts_f = _field(fields, _string(ts_col, "ts_col") or "ts", "ts_col")
    id_name = _string(id_col, "id_col")
    id_f = _field(fields, id_name, "id_col") if id_name else fields.get("id")
    key_name = _string(key_col, "key_col")
    key_f = _field(fields, key_name, "key_col") if key_name else None
    attributes, needs_type = read_attributes(text, [f.name for f in fields.values()])
    type_name = _string(type_col, "type_col")
    type_f = _field(fields, type_name, "type_col") if type_name else fields.get("type")
    if needs_type and type_f is None:
        classes = [p.cls for p in _compiled(text).primitives if p.condition is None]
        what = f"class {classes[0]!r} has no DEFINE" if classes else "a condition reads type"
        raise PredictMatchArgumentError(f"{what}, so the events need a type column: type_col "
                                        f"'type' is not a column of the events table; pass "
                                        f"type_col or DEFINE the class; columns found: "
                                        f"{_columns_found(fields)}")

    if isinstance(ts_f.dataType, (TimestampType, TimestampNTZType)):
        ts_kind, ts_sql, ts_type = ("timestamp", f"unix_micros(CAST({_quote(ts_f.name)} AS TIMESTAMP))",
                                    TimestampType())
    elif isinstance(ts_f.dataType, IntegralType):
        ts_kind, ts_sql, ts_type = "int", f"CAST({_quote(ts_f.name)} AS BIGINT)", ts_f.dataType
    elif isinstance(ts_f.dataType, DecimalType):
        ts_kind, ts_sql, ts_type = "float", f"CAST({_quote(ts_f.name)} AS DOUBLE)", DoubleType()
    elif isinstance(ts_f.dataType, NumericType):
        ts_kind, ts_sql, ts_type = "float", f"CAST({_quote(ts_f.name)} AS DOUBLE)", ts_f.dataType
    else:
        raise PredictMatchArgumentError(f"ts_col {ts_f.name!r} must be a TIMESTAMP or a number, "
                                        f"found {ts_f.dataType.simpleString()}")
    model_given, blob = False, None
    if model is not None:
        if model.isTable:
            raise PredictMatchArgumentError("argument model: expected a BINARY value (a model "
                                            "blob or a scalar subquery), found a table")
        if not isinstance(model.dataType, (BinaryType, NullType)):
            raise PredictMatchArgumentError(f"argument model: expected BINARY (a blob of "
                                            f"Model.to_bytes()), found {model.dataType.simpleString()}")
        if model.isConstantExpression:
            if model.value is not None:
                blob = bytes(model.value)
                _model(blob, text)  # CEP-PRED-012 before any task runs
                model_given = True
        else:
            model_given = True

    select = [SelectedColumn(ts_sql, alias="__ts")]
    if id_f is not None:
        select.append(SelectedColumn(_quote(id_f.name), alias="__id"))
    if needs_type:
        select.append(SelectedColumn(_quote(type_f.name), alias="__type"))
    if key_f is not None:
        select.append(SelectedColumn(_quote(key_f.name), alias="__key"))
    # DECIMAL attributes reach the core as DOUBLE (its numeric comparisons are float64).
    for i, attr in enumerate(attributes):
        f = fields[attr]
        sql = (f"CAST({_quote(f.name)} AS DOUBLE)" if isinstance(f.dataType, DecimalType)
               else _quote(f.name))
        select.append(SelectedColumn(sql, alias=f"__a{i}"))

    types = {"STRING": StringType(), "INT": IntegerType(), "DOUBLE": DoubleType(),
             "BOOLEAN": BooleanType(), "BIGINT": LongType(), "TS": ts_type,
             "ID": id_f.dataType if id_f is not None else LongType()}
    schema = [StructField(name, types[typ]) for name, typ in output_columns(out_kind)]
    if key_f is not None:
        if key_f.name.lower() in {f.name for f in schema}:
            raise PredictMatchArgumentError(f"key_col {key_f.name!r} has the name of an output "
                                            "column; rename it in the TABLE query")
        schema.insert(0, StructField(key_f.name, key_f.dataType))
    partition_by = ([PartitioningColumn(f"pmod(hash({_quote(key_f.name)}), {KEY_BUCKETS})")]
                    if key_f is not None else [])
    order_by = ([OrderingColumn(_quote(key_f.name)), OrderingColumn(_quote(ts_f.name))]
                if key_f is not None else [])
    plan = PredictCallPlan(text, look, theta, out_kind, comb, smooth, ts_kind, id_f is not None,
                           needs_type, key_f is not None, tuple(attributes), model_given, blob)
    return PredictMatchAnalyzeResult(schema=StructType(schema), partitionBy=partition_by, orderBy=order_by,
                                     select=select, plan=plan)


class PredictMatchTable:
    """Row UDTF handler: buffers a partition's rows, answers in ``terminate``."""

    @staticmethod
    def analyze(subscription: Any, events: Any = None, lookahead: Any = None,
                threshold: Any = None, model: Any = None, output: Any = None,
                combine: Any = None, smoothing: Any = None, ts_col: Any = None,
                id_col: Any = None, type_col: Any = None, key_col: Any = None) -> Any:
        try:
            return analyze_call(subscription, events, lookahead, threshold, model, output,
                                combine, smoothing, ts_col, id_col, type_col, key_col)
        except CepError as err:
            # One short frame instead of the compiler's stack: the SQL caller reads the message.
            raise PredictMatchFailed(str(err)) from None

    def __init__(self, analyze_result: Any) -> None:
        self.plan: PredictCallPlan = analyze_result.plan
        self.rows: list[Any] = []
        self.blob: Any = None

    def eval(self, subscription: Any, events: Any, lookahead: Any = None, threshold: Any = None,
             model: Any = None, output: Any = None, combine: Any = None, smoothing: Any = None,
             ts_col: Any = None, id_col: Any = None, type_col: Any = None,
             key_col: Any = None) -> Iterator[Any]:
        if not self.rows:
            self.blob = model
        self.rows.append(events)
        return iter(())

    def terminate(self) -> Iterator[tuple[Any, ...]]:
        if not self.rows:
            return
        try:
            yield from run_partition(self.plan, self.rows, self.blob)
        except CepError as err:
            raise PredictMatchFailed(str(err)) from None


def partition_model(plan: PredictCallPlan, blob: Any) -> Any:
    """The :class:`cep.predict.Model` a task predicts with, or None (train per key)."""
    if plan.model_blob is not None:
        return _model(plan.model_blob, plan.subscription)
    if not plan.model_given:
        return None
    if blob is None:
        raise PredictMatchArgumentError("argument model is NULL (did the model subquery find no "
                                        "row?); omit model to train on each partition's events")
    return _model(bytes(blob), plan.subscription)


def run_partition(plan: PredictCallPlan, rows: list[Any], blob: Any = None
                  ) -> Iterator[tuple[Any, ...]]:
    """Answer one partition's rows (Spark ``Row`` objects with the selected columns)."""
    import numpy as np

    model = partition_model(plan, blob)
    cols = list(zip(*rows))
    at = 1
    ids = cols[at] if plan.has_id else None
    at += plan.has_id
    types = cols[at] if plan.has_type else None
    at += plan.has_type
    keys = cols[at] if plan.has_key else None
    at += plan.has_key
    check_timestamps(cols[0], ids, keys)
    ts = np.array(cols[0], dtype=np.int64 if plan.ts_kind != "float" else np.float64)
    codes, key_values = None, None
    if keys is not None:
        index: dict[Any, int] = {}
        codes = np.fromiter((index.setdefault(k, len(index)) for k in keys), dtype=np.int64,
                            count=len(keys))
        key_values = list(index)
    attrs = {name: _array(cols[at + i]) for i, name in enumerate(plan.attributes)}
    to_ts = _to_datetime if plan.ts_kind == "timestamp" else (lambda v: v)
    for found in answer_partition(plan, model, ts, None if ids is None else _objects(ids),
                                  None if types is None else _objects(types), codes, attrs):
        yield from _rows(plan, found, key_values, to_ts)


def check_timestamps(ts: Any, ids: Any, keys: Any) -> None:
    """``CEP-PRED-010`` naming the first event with a NULL timestamp by its id and key."""
    from cep.predict.errors import PredictEventsError

    if None in ts:
        i = list(ts).index(None)
        where = "" if keys is None else f" of key {keys[i]!r}"
        what = "" if ids is None else f" with id {ids[i]!r}"
        raise PredictEventsError(f"event{what}{where} has a NULL timestamp; filter such rows out "
                                 "of the TABLE argument")


def answer_partition(plan: PredictCallPlan, model: Any, ts: Any, ids: Any, types: Any,
                     codes: Any, attrs: dict[str, Any]) -> Iterator[dict[str, list[Any]]]:
    """The core's rows (:attr:`cep.predict.Prediction.rows`) for one partition's columns, one
    dict per core call, with ``key`` holding each row's key code (None without keys).

    The events are ordered by ``(key, ts, id)``. Without a model each key is its own core call
    (its chain trained on its own events); with one, one call answers every key.
    """
    import numpy as np

    from cep.predict import Events, predict

    order = _order(ts, ids, codes)
    ts = ts[order]
    ids = None if ids is None else ids[order]
    types = None if types is None else types[order]
    attrs = {name: values[order] for name, values in attrs.items()}
    common = dict(lookahead=plan.lookahead, threshold=plan.threshold, output=plan.output,
                  combine=plan.combine, smoothing=plan.smoothing, model=model)
    if codes is None or model is not None:
        ev = Events.from_columns(ts=ts, keys=None if codes is None else codes[order], ids=ids,
                                 types=types, attrs=attrs)
        yield predict(plan.subscription, ev, **common).rows
        return
    codes = codes[order]
    starts = np.flatnonzero(np.diff(codes, prepend=-1)).tolist() + [len(codes)]
    for a, b in zip(starts[:-1], starts[1:]):
        ev = Events.from_columns(ts=ts[a:b], ids=None if ids is None else ids[a:b],
                                 types=None if types is None else types[a:b],
                                 attrs={k: v[a:b] for k, v in attrs.items()})
        found = predict(plan.subscription, ev, **common).rows
        found["key"] = [int(codes[a])] * len(found["state"])
        yield found


def _rows(plan: PredictCallPlan, rows: dict[str, list[Any]], key_values: list[Any] | None,
          to_ts: Any) -> Iterator[tuple[Any, ...]]:
    """The core's row columns as output tuples (the key first when there are keys)."""
    n = len(rows["state"])
    if plan.output == "events":
        cols = [rows["instance"], rows["id"], [to_ts(v) for v in rows["ts"]], rows["state"],
                rows["progress"], rows["probability"], rows["p_exact"], rows["matched"]]
    else:
        cols = [rows["instance"], rows["state"], rows["progress"], rows["probability"],
                rows["p_exact"], rows["matched"], rows["matches"], rows["events"],
                [to_ts(v) for v in rows["last_ts"]]]
    if key_values is not None:
        cols.insert(0, [key_values[c] for c in rows["key"]])
    for i in range(n):
        yield tuple(c[i] for c in cols)


def _order(ts: Any, ids: Any, codes: Any) -> Any:
    """Positions in ``(key, ts, id)`` order; without sortable ids ties keep arrival order."""
    import numpy as np

    tie = np.arange(len(ts))
    if ids is not None:
        sortable = ids
        if ids.dtype == object:
            values = ids.tolist()
            sortable = None if any(v is None for v in values) else np.array(values)
        if sortable is not None and sortable.dtype.kind in "iufUSb" and sortable.ndim == 1:
            tie = sortable
    return np.lexsort([tie, ts] if codes is None else [tie, ts, codes])


def _objects(values: tuple[Any, ...]) -> Any:
    import numpy as np

    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    return arr


def _array(values: tuple[Any, ...]) -> Any:
    import numpy as np

    if any(v is None for v in values):
        return _objects(values)
    array = np.array(values)
    return _objects(values) if array.dtype.kind in "USOV" or array.ndim != 1 else array


def _to_datetime(us: int) -> datetime:
    return _EPOCH + timedelta(microseconds=us)


def predict_match_udtf() -> Any:
    """The Spark UDTF object for ``predict_match`` (row UDTF: it needs ``analyze``)."""
    from pyspark.sql.functions import udtf

    return udtf(PredictMatchTable, useArrow=False)
