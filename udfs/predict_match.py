"""Spark adapter of ``predict_match``: will a subscription match within the next n events?

One function (docs/sql.md), in the shell of :mod:`udfs.shell` (``analyze`` on the driver, Arrow
batches on the executors), over the core's :func:`cep.predict.predict` (P-ToPSS, Muthusamy, Liu
and Jacobsen, DEBS 2010)::

    SELECT * FROM predict_match('PATTERN H, H, H DEFINE H AS tmax_c > 30', 'city',
                                TABLE(daily_temperatures), lookahead => 5, threshold => 0.2)
    SELECT * FROM predict_match(
        subscription => 'PATTERN H, H, H DEFINE H AS tmax_c > 30', lookahead => 5,
        model => (SELECT model FROM models VERSION AS OF 3 WHERE name = 'heat'),
        output => 'events', key_col => 'city', events => TABLE(daily_temperatures))

``analyze`` compiles the subscription (:func:`cep.predict.compile_subscription`: ``CEP-PAT-...``
and ``CEP-PRED-001`` .. ``003`` with line, column and caret), checks ``lookahead``,
``threshold``, ``output``, ``combine``, ``smoothing`` and ``definition`` with the core's
:func:`cep.predict.check_arguments` and :func:`cep.predict.answer.check_definition`
(``CEP-PRED-011``; ``definition => 'first_passage'`` is ours and the default, ``'paper'`` the
paper's ``alpha(n) = P^n[i, F]`` and ``beta(n) = alpha(1) + ... + alpha(n)`` trained as its line
387, docs/predict.md "Paper vs ours"; a composite subscription refuses ``smoothing`` and
``'paper'``, :func:`check_composite`), resolves the columns (``CEP-SQL-050``
for a missing column, a column of the wrong type or an argument that is not a constant;
``CEP-PAT-203`` with a caret for an attribute the table does not have) and asks Spark for just
the columns the subscription reads: the timestamp (TIMESTAMP, TIMESTAMP_NTZ and DATE as UTC
microseconds), the id, the type column when a class has no ``DEFINE``, the primitives'
attributes and the join-variable / ``[attr]`` attributes. Rows are **not** filtered by the
single-event conditions: an event that satisfies no primitive still moves every machine (``,``
means the very next event), so pushing a filter down would change the answer.

Partitions: with ``key_col`` the function partitions the table itself into ``KEY_BUCKETS``
buckets of the key hash, each task groups its rows by key, and every output row carries the key
column with its own name and type; without ``key_col`` the whole table is one stream. Inside a
stream the events are ordered by ``(ts, id)``.

Model: without ``model`` each stream's chain is trained on that stream's own events (one core
call per key). ``model`` is a BINARY blob of :meth:`cep.predict.Model.to_bytes`, typically a
scalar subquery over a Delta table of models (``VERSION AS OF`` reads an older one); Spark
evaluates it once and hands it to every task with each batch. A blob that is corrupt, of another
format version or of another subscription is ``CEP-PRED-012``; the argument given but NULL (the
subquery found no row) is ``CEP-SQL-050`` rather than a silent switch to per-stream training;
``model => NULL`` written as a literal means "no model". With a model, a task answers all its
keys in one core call (the answer of an instance does not depend on the other instances' events
once the chain is fixed).

Example (no Spark needed: the output schema is a plain function):
    >>> output_fields("keys", None, "BIGINT", "TIMESTAMP")[:4]
    ['instance STRING', 'state STRING', 'progress INT', 'probability DOUBLE']
    >>> output_fields("events", "city STRING", "BIGINT", "TIMESTAMP")[:4]
    ['city STRING', 'instance STRING', 'id BIGINT', 'ts TIMESTAMP']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterator

from cep.errors import CepError
from cep.lang import Query, parse_pattern
from cep.lang.ast import AttrRef
from cep.lang.errors import E_UNKNOWN_ATTRIBUTE, PatternSemanticError
from cep.lang.validate import checked_classes
from cep.predict import (Events, Model, Subscription, check_arguments, compile_subscription,
                         predict)
from cep.predict.answer import check_definition
from cep.predict.errors import PredictArgumentError, PredictEventsError
from cep.signature import SIGNATURES
from udfs.facts import FACTS, check_classes, class_questions, facts_sql, read_facts
from udfs.shell import (PlannedResult, TableFunction, grouping_key, keyed, planned,
                        quote as _quote, table_function, utc_micros)

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    from pyspark.sql.types import DataType, StructField
    from pyspark.sql.udtf import AnalyzeArgument, SelectedColumn, UserDefinedTableFunction

# Buckets of the key_col form (as match_seq): one task answers many keys, each on its own.
KEY_BUCKETS = 64


class PredictMatchArgumentError(CepError):
    """An argument of ``predict_match`` the core does not check: the TABLE argument, a column
    name (missing column, wrong type), an argument that is not a constant, the ``model``
    argument's type or a NULL model."""

    code = "CEP-SQL-050"


@dataclass(frozen=True)
class PredictCallPlan:
    """What ``analyze`` decided, shipped to every task.

    Attributes:
        subscription: the subscription text.
        lookahead, threshold, output, combine, smoothing: the checked arguments.
        ts_kind: ``'timestamp'`` (UTC microseconds), ``'int'`` or ``'float'``.
        has_id, has_type: whether ``__id`` and ``__type`` are selected.
        key: the key column's name when ``__key`` is selected (the output column's name).
        attributes: lower-cased attribute names of ``__a0, __a1, ...``.
        model_given: the ``model`` argument was passed (and is not a NULL literal).
        model_blob: the blob when ``model`` is a constant (checked in ``analyze``).
        definition: ``'first_passage'`` (ours) or ``'paper'`` (:data:`cep.predict.answer.DEFINITIONS`).
        classes: the classes read from the type column that must occur in the input
            (:mod:`udfs.facts`; none with a model or ``allow_absent => true``).
        query: the subscription parsed once on the driver (a frozen tree), which the tasks
            compile without parsing the text again.
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
    key: str | None
    attributes: tuple[str, ...]
    model_given: bool = False
    model_blob: bytes | None = None
    definition: str = "first_passage"
    classes: tuple[str, ...] = ()
    query: Query | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.query is None:  # a plan built by hand (tests): parse it here, once
            object.__setattr__(self, "query", _parsed(self.subscription))


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


def _string(value: Any, name: str) -> str | None:
    if value is not None and (not isinstance(value, str) or not value):
        raise PredictMatchArgumentError(f"argument {name}: expected a column name, found {value!r}")
    return value


def _number(value: Any) -> Any:
    """A SQL DECIMAL literal (``0.2``) as a float; anything else unchanged (the core checks)."""
    return float(value) if isinstance(value, Decimal) else value


def _columns_found(fields: dict[str, StructField]) -> str:
    return ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in fields.values())


def _field(fields: dict[str, StructField], name: str, role: str) -> StructField:
    found = fields.get(name.lower())
    if found is None:
        raise PredictMatchArgumentError(f"{role} {name!r} is not a column of the events table; "
                                        f"columns found: {_columns_found(fields)}")
    return found


@lru_cache(maxsize=64)
def _parsed(text: str) -> Query:
    """The subscription parsed once on the driver, however many checks read it; the plan
    carries the tree to the tasks."""
    return parse_pattern(text)


@lru_cache(maxsize=64)
def _compiled(query: Query) -> Subscription:
    # Compiled once per Python worker and parsed subscription (analyze and every task).
    return compile_subscription(query)


@lru_cache(maxsize=8)
def _model(blob: bytes, subscription: str) -> Model:
    return Model.from_bytes(blob, subscription)


def read_attributes(text: str, columns: list[str]) -> tuple[list[str], bool]:
    """The attributes a subscription reads (lower-cased, first mention first) and whether it
    reads the type column (a class without ``DEFINE``, or ``type`` in a condition).

    ``ts`` and ``type`` always mean the timestamp and type columns (docs/semantics.md,
    decision 9). An attribute the table does not have is ``CEP-PAT-203`` with its position.
    """

    query = _parsed(text)
    sub = _compiled(query)
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

    if subscription is None:
        raise PredictMatchArgumentError("argument subscription is required")
    if not isinstance(subscription, str):
        raise PredictMatchArgumentError(f"argument subscription: expected a string, found "
                                        f"{subscription!r}")
    _compiled(_parsed(subscription))
    checked = check_arguments(lookahead, _number(threshold), output, combine, _number(smoothing))
    return (subscription, *checked)


def check_composite(definition: str, smoothing: float) -> None:
    """``CEP-PRED-011`` for what a composite subscription cannot do yet, before any task runs.

    The core refuses both with these messages (:func:`cep.predict.predict`,
    :func:`cep.predict.composite.predict_composite`), but only once a task calls it, so an empty
    table or key answered no rows instead (issue 47).

    Example:
        >>> check_composite("first_passage", 0.0)
    """

    if definition != "first_passage":
        raise PredictArgumentError("argument definition: a composite subscription is predicted by "
                                   "the convolution of completion times ('first_passage' only)")
    if smoothing:
        raise PredictArgumentError("argument smoothing: not supported for a composite "
                                   "subscription (a master sequence with '&' / '|' steps); use 0")


@dataclass(frozen=True)
class EventSelection:
    """The TABLE argument's columns a subscription reads, resolved by ``analyze``.

    Attributes:
        select: what Spark hands the tasks (``__ts``, ``__id``, ``__type``, facts, ``__key``,
            ``__a0, __a1, ...``).
        ts_kind, ts_type: :func:`_timestamp`'s reading of ``ts_col``.
        id_field, key_field: the id and key columns (None when absent).
        needs_type: whether ``__type`` is selected.
        attributes: lower-cased attribute names of ``__a0, __a1, ...``.
        classes: the classes that must occur in the input (:mod:`udfs.facts`).
    """

    select: list[SelectedColumn]
    ts_kind: str
    ts_type: DataType
    id_field: StructField | None
    key_field: StructField | None
    needs_type: bool
    attributes: tuple[str, ...]
    classes: tuple[str, ...]


def select_events(text: str, events: AnalyzeArgument, given: dict[str, Any],
                  check_absent: bool) -> EventSelection:
    """The columns of ``events`` the subscription ``text`` reads (``given``: the bound
    arguments ``ts_col``, ``id_col``, ``key_col``, ``type_col``); with ``check_absent`` the
    classes read from the type column must occur in the input (facts).

    Raises:
        PredictMatchArgumentError: a missing column or one of the wrong type (CEP-SQL-050).
        PatternSemanticError: an attribute the table does not have (CEP-PAT-203).
    """
    from pyspark.sql.types import DecimalType, StringType
    from pyspark.sql.udtf import SelectedColumn

    fields = {f.name.lower(): f for f in events.dataType.fields}
    ts_f = _field(fields, _string(given["ts_col"], "ts_col") or "ts", "ts_col")
    id_name = _string(given["id_col"], "id_col")
    id_f = _field(fields, id_name, "id_col") if id_name else fields.get("id")
    key_name = _string(given["key_col"], "key_col")
    key_f = _field(fields, key_name, "key_col") if key_name else None
    attributes, needs_type = read_attributes(text, [f.name for f in fields.values()])
    type_name = _string(given["type_col"], "type_col")
    type_f = _field(fields, type_name, "type_col") if type_name else fields.get("type")
    if needs_type and type_f is None:
        classes = [p.cls for p in _compiled(_parsed(text)).primitives if p.condition is None]
        what = f"class {classes[0]!r} has no DEFINE" if classes else "a condition reads type"
        raise PredictMatchArgumentError(f"{what}, so the events need a type column: type_col "
                                        f"'type' is not a column of the events table; pass "
                                        f"type_col or DEFINE the class; columns found: "
                                        f"{_columns_found(fields)}")
    ts_kind, ts_sql, ts_type = _timestamp(ts_f)
    select = [SelectedColumn(ts_sql, alias="__ts")]
    if id_f is not None:
        select.append(SelectedColumn(_quote(id_f.name), alias="__id"))
    classes: tuple[str, ...] = ()
    if needs_type:
        select.append(SelectedColumn(_quote(type_f.name), alias="__type"))
        classes = tuple(checked_classes(_parsed(text))) if check_absent else ()
        if classes:
            type_sql = (_quote(type_f.name) if isinstance(type_f.dataType, StringType)
                        else f"CAST({_quote(type_f.name)} AS STRING)")
            select.append(SelectedColumn(facts_sql(class_questions(classes, type_sql)),
                                         alias=FACTS))
    if key_f is not None:
        select.append(SelectedColumn(_quote(key_f.name), alias="__key"))
    # DECIMAL attributes reach the core as DOUBLE (its numeric comparisons are float64).
    for i, attr in enumerate(attributes):
        f = fields[attr]
        sql = (f"CAST({_quote(f.name)} AS DOUBLE)" if isinstance(f.dataType, DecimalType)
               else _quote(f.name))
        select.append(SelectedColumn(sql, alias=f"__a{i}"))
    return EventSelection(select, ts_kind, ts_type, id_f, key_f, needs_type, tuple(attributes),
                          classes)


def analyze_call(*args: Any, **kwargs: Any) -> PlannedResult:
    """The analysis of one call (see the module docstring)."""
    from pyspark.sql.types import (BooleanType, DoubleType, IntegerType, LongType, StringType,
                                   StructField, StructType)

    err = PredictMatchArgumentError
    signature = SIGNATURES["predict_match"]
    call = signature.bind(args, kwargs, err)
    given = signature.values(call, err)
    events, model = call.get("events"), call.get("model")
    if events is None or not events.isTable:
        raise err("argument events must be a TABLE(...) argument")
    text, look, theta, out_kind, comb, smooth = check_call(
        *(given[n] for n in ("subscription", "lookahead", "threshold", "output", "combine",
                             "smoothing")))

    definition_checked = check_definition(given["definition"])
    if _compiled(_parsed(text)).composite:
        check_composite(definition_checked, smooth)
    model_given, blob = _model_argument(model, text)
    # Trained on the input itself, a class no event carries (a misspelt name) would give
    # every stream probability 0 without a word (udfs.facts, issue 47). A given model may
    # know classes this input has not seen yet: no check then.
    chosen = select_events(text, events, given,
                           check_absent=not (given["allow_absent"] or model_given))
    id_f, key_f = chosen.id_field, chosen.key_field
    types = {"STRING": StringType(), "INT": IntegerType(), "DOUBLE": DoubleType(),
             "BOOLEAN": BooleanType(), "BIGINT": LongType(), "TS": chosen.ts_type,
             "ID": id_f.dataType if id_f is not None else LongType()}
    schema = [StructField(name, types[typ]) for name, typ in output_columns(out_kind)]
    if key_f is not None:
        if key_f.name.lower() in {f.name for f in schema}:
            raise PredictMatchArgumentError(f"key_col {key_f.name!r} has the name of an output "
                                            "column; rename it in the TABLE query")
        schema.insert(0, StructField(key_f.name, key_f.dataType))
    key = key_f.name if key_f is not None else None
    plan = PredictCallPlan(text, look, theta, out_kind, comb, smooth, chosen.ts_kind,
                           id_f is not None, chosen.needs_type, key, chosen.attributes,
                           model_given, blob, definition_checked, chosen.classes)
    return keyed(StructType(schema), chosen.select, plan, key, KEY_BUCKETS)


def _timestamp(ts_f: StructField) -> tuple[str, str, DataType]:
    """``(ts_kind, the SQL that selects ts_col, the output's timestamp type)``.

    Raises:
        PredictMatchArgumentError: ts_col is neither a timestamp, a date nor a number.
    """
    from pyspark.sql.types import (DateType, DoubleType, IntegralType, LongType, NumericType,
                                   TimestampNTZType, TimestampType)

    if isinstance(ts_f.dataType, TimestampType):
        ts_kind, ts_sql, ts_type = ("timestamp", f"unix_micros(CAST({_quote(ts_f.name)} AS TIMESTAMP))",
                                    TimestampType())
    elif isinstance(ts_f.dataType, (TimestampNTZType, DateType)):
        # As they are: a CAST to TIMESTAMP would read them in the session time zone, not as UTC
        # (docs/sql.md); the task takes their wall clock as UTC (utc_micros).
        ts_kind, ts_sql, ts_type = "timestamp", _quote(ts_f.name), TimestampType()
    elif isinstance(ts_f.dataType, IntegralType):
        ts_kind, ts_sql, ts_type = "int", f"CAST({_quote(ts_f.name)} AS BIGINT)", LongType()
    elif isinstance(ts_f.dataType, NumericType):
        ts_kind, ts_sql, ts_type = "float", f"CAST({_quote(ts_f.name)} AS DOUBLE)", DoubleType()
    else:
        raise PredictMatchArgumentError(f"ts_col {ts_f.name!r} must be a TIMESTAMP, "
                                        f"TIMESTAMP_NTZ, DATE or a number, found "
                                        f"{ts_f.dataType.simpleString()}")
    return ts_kind, ts_sql, ts_type


def _model_argument(model: AnalyzeArgument | None, text: str) -> tuple[bool, bytes | None]:
    """Whether a ``model`` was given, and its blob when it is a constant (checked against the
    subscription ``text`` before any task runs: CEP-PRED-012).

    Raises:
        PredictMatchArgumentError: ``model`` is a table or not BINARY.
    """
    from pyspark.sql.types import BinaryType, NullType

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
    return model_given, blob


class PredictMatch(TableFunction):
    """The ``predict_match`` handler: every key of a bucket (or the one stream)."""

    analyze = staticmethod(planned(analyze_call))

    def __init__(self, analyze_result: PlannedResult) -> None:
        super().__init__(analyze_result)
        self.blob: bytes | None = None

    def eval(self, *args: Any, **kwargs: Any) -> Iterator[pa.Table]:
        if not self.batches:  # the model subquery's value: the same in every batch
            model = next((v for k, v in kwargs.items() if k.lower() == "model"), None)
            if model is not None and hasattr(model, "to_pylist"):
                values = model.to_pylist()
                model = values[0] if values else None
            self.blob = model
        return super().eval(*args, **kwargs)

    def answer(self, plan: PredictCallPlan, table: pa.Table) -> Iterator[pa.Table]:
        yield answer_table(plan, table, self.blob)


def partition_model(plan: PredictCallPlan, blob: bytes | None) -> Model | None:
    """The :class:`cep.predict.Model` a task predicts with, or None (train per key)."""
    if plan.model_blob is not None:
        return _model(plan.model_blob, plan.subscription)
    if not plan.model_given:
        return None
    if blob is None:
        raise PredictMatchArgumentError("argument model is NULL (did the model subquery find no "
                                        "row?); omit model to train on each partition's events")
    return _model(bytes(blob), plan.subscription)


def answer_table(plan: PredictCallPlan, table: pa.Table, blob: bytes | None = None) -> pa.Table:
    """The output table of one partition's selected columns."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    model = partition_model(plan, blob)

    def column(name: str) -> pa.Array:
        array = table.column(name).combine_chunks()
        return array.dictionary_decode() if pa.types.is_dictionary(array.type) else array

    if plan.classes:
        check_classes(plan.query, plan.classes, read_facts(table),
                      column("__type"))
    ts_col = utc_micros(column("__ts"))
    ids = _values(column("__id")) if plan.has_id else None
    codes, keys = None, None
    if plan.key is not None:
        # -0.0 and 0.0, and all NaNs, are one key as in GROUP BY (issue 47)
        encoded = pc.dictionary_encode(grouping_key(column("__key")), null_encoding="encode")
        keys = encoded.dictionary
        codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    if ts_col.null_count:
        check_timestamps(ts_col.to_pylist(), None if ids is None else ids.tolist(),
                         None if keys is None else keys.take(pa.array(codes)).to_pylist())
    ts = ts_col.to_numpy(zero_copy_only=False)
    ts = ts.astype(np.float64 if plan.ts_kind == "float" else np.int64)
    types = _values(column("__type"), strings=True) if plan.has_type else None
    attrs = {attr: _values(column(f"__a{i}")) for i, attr in enumerate(plan.attributes)}
    id_type = table.column("__id").type if plan.has_id else pa.int64()
    return _output(plan, keys, id_type,
                   list(answer_partition(plan, model, ts, ids, types, codes, attrs)))


def check_timestamps(ts: list[int | float | None], ids: list[Any] | None,
                     keys: list[Any] | None) -> None:
    """``CEP-PRED-010`` naming the first event with a NULL timestamp by its id and key."""

    if None in ts:
        i = list(ts).index(None)
        where = "" if keys is None else f" of key {keys[i]!r}"
        what = "" if ids is None else f" with id {ids[i]!r}"
        raise PredictEventsError(f"event{what}{where} has a NULL timestamp; filter such rows out "
                                 "of the TABLE argument")


def answer_partition(plan: PredictCallPlan, model: Model | None, ts: np.ndarray,
                     ids: np.ndarray | None, types: np.ndarray | None, codes: np.ndarray | None,
                     attrs: dict[str, np.ndarray]) -> Iterator[dict[str, list[Any]]]:
    """The core's rows (:attr:`cep.predict.Prediction.rows`) for one partition's columns, one
    dict per core call, with ``key`` holding each row's key code (None without keys).

    The events are ordered by ``(key, ts, id)``. Without a model each key is its own core call
    (its chain trained on its own events); with one, one call answers every key.
    """
    import numpy as np

    subscription = _compiled(plan.query)  # once per worker, not once per key
    order = _order(ts, ids, codes)
    ts = ts[order]
    ids = None if ids is None else ids[order]
    types = None if types is None else types[order]
    attrs = {name: values[order] for name, values in attrs.items()}
    common: dict[str, Any]  # the core's keyword arguments, of several types
    common = dict(lookahead=plan.lookahead, threshold=plan.threshold, output=plan.output,
                  combine=plan.combine, smoothing=plan.smoothing, model=model,
                  definition=plan.definition)
    if codes is None or model is not None:
        ev = Events.from_columns(ts=ts, keys=None if codes is None else codes[order], ids=ids,
                                 types=types, attrs=attrs)
        yield predict(subscription, ev, **common).rows
        return
    codes = codes[order]
    starts = np.flatnonzero(np.diff(codes, prepend=-1)).tolist() + [len(codes)]
    for a, b in zip(starts[:-1], starts[1:]):
        ev = Events.from_columns(ts=ts[a:b], ids=None if ids is None else ids[a:b],
                                 types=None if types is None else types[a:b],
                                 attrs={k: v[a:b] for k, v in attrs.items()})
        found = predict(subscription, ev, **common).rows
        found["key"] = [int(codes[a])] * len(found["state"])
        yield found


def _order(ts: np.ndarray, ids: np.ndarray | None, codes: np.ndarray | None) -> np.ndarray:
    """Positions in ``(key, ts, id)`` order; without sortable ids ties keep arrival order."""
    import numpy as np

    tie = np.arange(len(ts))
    if ids is not None:
        sortable: np.ndarray | None = ids
        if ids.dtype == object:
            values = ids.tolist()
            sortable = None if any(v is None for v in values) else np.array(values)
        if sortable is not None and sortable.dtype.kind in "iufUSb" and sortable.ndim == 1:
            tie = sortable
    return np.lexsort([tie, ts] if codes is None else [tie, ts, codes])


def _values(array: pa.Array, strings: bool = False) -> np.ndarray:
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


def _ts_array(plan: PredictCallPlan, values: list[Any]) -> pa.Array:
    """Timestamps of the core's rows as the Arrow column of the output's ts type."""
    import pyarrow as pa

    if plan.ts_kind == "timestamp":
        return pa.array(values, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    if plan.ts_kind == "int":
        return pa.array(values, pa.int64())
    return pa.array(values, pa.float64())


def _output(plan: PredictCallPlan, keys: pa.Array | None, id_type: pa.DataType,
            parts: list[dict[str, list[Any]]]) -> pa.Table:
    """The core's rows of every call as one Arrow table of the output schema."""
    import pyarrow as pa

    def joined(name: str) -> list[Any]:
        return [v for part in parts for v in part[name]]

    cols: dict[str, pa.Array] = {}
    if plan.key is not None:
        cols[plan.key] = keys.take(pa.array(joined("key"), pa.int64()))
    cols["instance"] = pa.array(joined("instance"), pa.string())
    if plan.output == "events":
        cols["id"] = pa.array(joined("id"), id_type)
        cols["ts"] = _ts_array(plan, joined("ts"))
    cols.update({"state": pa.array(joined("state"), pa.string()),
                 "progress": pa.array(joined("progress"), pa.int32()),
                 "probability": pa.array(joined("probability"), pa.float64()),
                 "p_exact": pa.array(joined("p_exact"), pa.float64()),
                 "matched": pa.array(joined("matched"), pa.bool_())})
    if plan.output != "events":
        cols.update({"matches": pa.array(joined("matches"), pa.int64()),
                     "events": pa.array(joined("events"), pa.int64()),
                     "last_ts": _ts_array(plan, joined("last_ts"))})
    return pa.table(cols)


def predict_match_udtf() -> UserDefinedTableFunction:
    """The Spark UDTF object of ``predict_match``."""
    return table_function(PredictMatch)
