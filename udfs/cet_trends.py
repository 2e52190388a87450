"""Spark adapter of ``cet_trends``: complete event trends of a table, per key and window.

One function (docs/sql.md), in the shell of :mod:`udfs.shell`: ``analyze`` on the driver, Arrow
batches on the executors:

    SELECT * FROM cet_trends(
      pattern => 'PATTERN check+ c[] WHERE c.type = ''not covered'' AND c[i].src = c[i-1].dest
                  WITHIN 1 WEEK SLIDE 1 DAY',
      key_col => 'bank', events => TABLE(checks))

``analyze`` compiles the pattern with :func:`cep.trends.compile_trend` against the table's
columns (a construct a trend cannot have is a ``CEP-TREND-0NN`` error with line, column and
caret), checks the arguments (``CEP-SQL-030``), asks Spark for just the columns the query
reads and, with ``key_col``, for the rows of each key together (``KEY_BUCKETS`` buckets of the
key's hash; without ``key_col`` the whole table is one stream; the call carries no ``PARTITION
BY``). Each task groups its rows by key with numpy, cuts the windows (``WITHIN w SLIDE s``: windows
``[start, start + w)`` with ``start`` a multiple of ``s``, the boundaries of Spark's
``window(ts, w, s)``), builds the ABI graph of every window and answers from it
(:func:`cep.trends.window_trends` / :func:`cep.trends.window_counts`).

Decisions (docs/trends.md, "In SQL"):

* ``type_col`` has no default: a trend query has one class and the TABLE argument already
  holds its events, so without ``type_col`` (or a ``DEFINE``) every row is an event of the
  class, and ``c.type`` is an ordinary column (the paper's Q1 reads ``c.type`` as the check's
  coverage). With ``type_col`` rows whose type differs from the class are not events.
* Output ``'trends'``: ``<key>, window_start, window_end, trend_id, length, first_ts, last_ts,
  event_ids``; ``'count'``: ``<key>, window_start, window_end, n_trends DECIMAL(38,0)`` (the
  exact count, computed without enumerating; ``CEP-SQL-031`` if it exceeds 38 digits).
  Without ``WITHIN`` there is one window per key and its bounds are NULL.
* ``window_col`` (optional): the ``STRUCT<start, end>`` of Spark's ``window(ts, w, s)`` computed
  in the TABLE query; then the windows are spread over Spark partitions too (the paper's
  distribution of windows), every (key, window) is one window, and the pattern's
  ``WITHIN``/``SLIDE`` do not cut.
* ``max_trends`` (default 1,000,000) bounds the trends of one key; more is ``CEP-TREND-020``
  before any trend is enumerated, with the advice to ask for ``output => 'count'``.
* ``completeness`` (default ``'ends'``): which of the paper's two definitions of a complete
  trend to answer: ``'ends'`` (no event can be added at either end, section 3) or
  ``'maximal'`` (not a sub-sequence of any other trend, section 1); docs/trends.md, "Paper vs
  ours". Another value is ``CEP-SQL-030``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterator

from cep.errors import CepError
from cep.lang import Query, parse_condition, parse_pattern
from cep.lang.spark_sql import NotRenderable, class_test, render_condition
from cep.lang.validate import checked_classes
from cep.signature import SIGNATURES
from cep.trends import (COMPLETENESS, DEFAULT_COMPLETENESS, DEFAULT_MAX_TRENDS, TrendQuery,
                        compile_trend, window_counts, window_trends)
from udfs.facts import FACTS, check_classes, class_questions, facts_sql, read_facts
from udfs.shell import (PlannedResult, TableFunction, field, grouping_key, named_columns,
                        planned, positions_lists,
                        quote as _quote, table_fields, table_function, utc_micros)

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    from pyspark.sql.types import DataType, StructField, StructType
    from pyspark.sql.udtf import SelectedColumn, UserDefinedTableFunction

OUTPUTS = ("trends", "count")
MAX_DECIMAL = 10 ** 38 - 1
# Buckets of the key: the keys of a bucket are answered in one task, each on its own.
KEY_BUCKETS = 16


class CetTrendsArgumentError(CepError):
    """An argument of ``cet_trends`` (not the pattern) is missing, of the wrong type, names a
    column that does not exist, or does not fit the pattern's units."""

    code = "CEP-SQL-030"


def decimal_exponent(n: int) -> int:
    """The power of ten below a positive ``n``, without ``str(n)`` (Python refuses to print an
    integer of more than 4,300 digits, and counts of trends reach far beyond that).

    Example:
        >>> decimal_exponent(999), decimal_exponent(1000), decimal_exponent(2 ** 20000)
        (2, 3, 6020)
    """
    exponent = int((n.bit_length() - 1) * math.log10(2))
    # The estimate from the bit length is off by at most one: settle it exactly.
    if 10 ** (exponent + 1) <= n:
        exponent += 1
    elif 10 ** exponent > n:
        exponent -= 1
    return exponent


class TrendCountOverflowError(CepError):
    """A window holds more complete trends than ``DECIMAL(38,0)`` can hold."""

    code = "CEP-SQL-031"


TREND_COLUMNS = ("window_start", "window_end", "trend_id", "length", "first_ts", "last_ts",
                 "event_ids")
"""The columns of ``output => 'trends'`` after the key (a ``columns =>`` name may not be one)."""


@dataclass(frozen=True)
class TrendCallPlan:
    """What ``analyze`` decided, shipped to every task; ``pattern`` is the pattern parsed once
    on the driver (a frozen tree), which each worker compiles without parsing it again."""

    pattern: Query
    output: str
    max_trends: int
    ts_kind: str  # "timestamp" or "number"
    attributes: tuple[str, ...]
    has_type: bool
    key: str | None  # the key column's name (the output column's name) with key_col
    windowed: bool
    pushed: bool = False  # class test and filters computed by Spark as the column __keep
    given_windows: bool = False  # windows from window_col (Spark's window()), not cut here
    completeness: str = "ends"  # 'ends' (section 3) or 'maximal' (line 43)
    classes: tuple[str, ...] = ()  # read from type_col: each must occur (udfs.facts)
    columns: tuple[str, ...] = ()  # columns => '...': the output's array columns (__c0, ...)


def check_completeness_argument(value: Any) -> str:
    """``completeness`` after its check (default ``'ends'``).

    Example:
        >>> check_completeness_argument(None), check_completeness_argument("maximal")
        ('ends', 'maximal')
        >>> check_completeness_argument("longest")
        Traceback (most recent call last):
        ...
        udfs.cet_trends.CetTrendsArgumentError: CEP-SQL-030: argument completeness: expected one of 'ends', 'maximal', found 'longest'
    """

    value = DEFAULT_COMPLETENESS if value is None else value
    if value not in COMPLETENESS:
        raise CetTrendsArgumentError(f"argument completeness: expected one of "
                                     f"{', '.join(map(repr, COMPLETENESS))}, found {value!r}")
    return str(value)


def check_arguments(output: Any, max_trends: Any) -> tuple[str, int]:
    """``output`` and ``max_trends`` after their checks (defaults ``'trends'``, 1,000,000).

    Example:
        >>> check_arguments(None, None)
        ('trends', 1000000)
        >>> check_arguments("paths", None)
        Traceback (most recent call last):
        ...
        udfs.cet_trends.CetTrendsArgumentError: CEP-SQL-030: argument output: expected one of 'trends', 'count', found 'paths'
    """

    output = "trends" if output is None else output
    if output not in OUTPUTS:
        raise CetTrendsArgumentError(f"argument output: expected one of "
                                     f"{', '.join(map(repr, OUTPUTS))}, found {output!r}")
    limit = DEFAULT_MAX_TRENDS if max_trends is None else max_trends
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise CetTrendsArgumentError(f"argument max_trends: expected a positive integer, "
                                     f"found {max_trends!r}")
    return output, int(limit)


def analyze_call(*args: Any, **kwargs: Any) -> PlannedResult:
    """The analysis of one call (see the module docstring)."""
    from pyspark.sql.types import DecimalType, IntegralType, StringType
    from pyspark.sql.udtf import PartitioningColumn, SelectedColumn

    err = CetTrendsArgumentError
    signature = SIGNATURES["cet_trends"]
    call = signature.bind(args, kwargs, err)
    given = signature.values(call, err)
    text, allowed = given["pattern"], given["allow_absent"]
    out_kind, limit = check_arguments(given["output"], given["max_trends"])
    complete = check_completeness_argument(given["completeness"])
    events = call.get("events")
    fields = table_fields(events, "events", err)
    ts_f = field(fields, given["ts_col"], "ts_col", err)
    id_f = field(fields, given["id_col"], "id_col", err)
    type_name = given["type_col"]
    type_f = field(fields, type_name, "type_col", err) if type_name else None
    key_name = given["key_col"]
    key_f = field(fields, key_name, "key_col", err) if key_name else None
    if not isinstance(id_f.dataType, IntegralType):
        raise CetTrendsArgumentError(f"id_col {id_f.name!r} must be an integer column, found "
                                     f"{id_f.dataType.simpleString()}")
    columns = [f.name for f in events.dataType.fields]
    parsed = parse_pattern(text)  # once: the plan carries the tree to the tasks
    query = compile_trend(parsed, columns=columns)
    ts_kind, ts_sql, ts_type = _timestamp(ts_f, query.unit)
    attributes = tuple(a for a in query.attributes if a.lower() != "ts")
    select = [SelectedColumn(_quote(id_f.name), alias="__id"),
              SelectedColumn(ts_sql, alias="__ts")]
    # DECIMAL columns (a bare 1.05 in Spark SQL is DECIMAL) reach the engine as DOUBLE: the
    # engine's numeric comparisons are float64 (docs/trends.md, "Numbers").
    select += [SelectedColumn(
        f"CAST({_quote(fields[a.lower()].name)} AS DOUBLE)"
        if isinstance(fields[a.lower()].dataType, DecimalType) else _quote(fields[a.lower()].name),
        alias=f"__a{i}") for i, a in enumerate(attributes)]
    classes: tuple[str, ...] = ()
    if type_f is not None:
        select.append(SelectedColumn(_quote(type_f.name), alias="__type"))
        # The class must occur in the input (udfs.facts, issue 47): a misspelt class would
        # answer "no trend" without a word.
        classes = () if allowed else tuple(checked_classes(parsed))
        if classes:
            type_sql = (_quote(type_f.name) if isinstance(type_f.dataType, StringType)
                        else f"CAST({_quote(type_f.name)} AS STRING)")
            select.append(SelectedColumn(facts_sql(class_questions(classes, type_sql)),
                                         alias=FACTS))
    if key_f is not None:
        select.append(SelectedColumn(_quote(key_f.name), alias="__key"))
    keep = _pushdown(query, fields, type_f, ts_f)
    if keep is not None:
        select.append(SelectedColumn(keep, alias="__keep"))
    window_name = given["window_col"]
    window_f = field(fields, window_name, "window_col", err) if window_name else None
    if window_f is not None:
        select += _window_columns(window_f, ts_kind)
    extra = named_columns(events, given["columns"],
                          {c.lower() for c in TREND_COLUMNS}
                          | ({key_f.name.lower()} if key_f is not None else set()),
                          "cet_trends", f"{', '.join(TREND_COLUMNS)}, the key", err)
    if extra and out_kind != "trends":
        raise err("columns: only output => 'trends' has events to carry columns of")
    select += [SelectedColumn(_quote(f.name), alias=f"__c{i}") for i, f in enumerate(extra)]
    out = _output_schema(key_f, ts_type, out_kind, extra)
    partition_by = ([PartitioningColumn(f"pmod(hash({_quote(key_f.name)}), {KEY_BUCKETS})")]
                    if key_f is not None else [])
    if window_f is not None:  # the windows of a key spread over tasks (the paper's distribution)
        partition_by.append(PartitioningColumn(f"{_quote(window_f.name)}.start"))
    plan = TrendCallPlan(parsed, out_kind, limit, ts_kind, attributes, type_f is not None,
                         key_f.name if key_f is not None else None,
                         query.within is not None or window_f is not None,
                         keep is not None, window_f is not None, complete, classes,
                         tuple(f.name for f in extra))
    if not partition_by:
        return PlannedResult(schema=out, withSinglePartition=True, select=select, plan=plan)
    return PlannedResult(schema=out, partitionBy=partition_by, select=select, plan=plan)


def _timestamp(ts_f: StructField, unit: str) -> tuple[str, str, DataType]:
    """``(ts_kind, the SQL that selects ts_col, the output's timestamp type)``.

    Raises:
        CetTrendsArgumentError: ts_col is neither a timestamp nor a number, or its type does
            not suit the WITHIN's ``unit`` (time units or UNITS).
    """
    from pyspark.sql.types import DateType, NumericType, TimestampNTZType, TimestampType

    if isinstance(ts_f.dataType, (TimestampType, TimestampNTZType, DateType)):
        # TIMESTAMP_NTZ and DATE as they are, their wall clock read as UTC in the task
        # (udfs.shell.utc_micros): a CAST to TIMESTAMP would read them in the session time zone
        # (a 23-hour day at a clock change, issue 47).
        ts_sql = (f"unix_micros({_quote(ts_f.name)})" if isinstance(ts_f.dataType, TimestampType)
                  else _quote(ts_f.name))
        ts_kind, ts_type = "timestamp", TimestampType()
        if unit == "UNITS":
            raise CetTrendsArgumentError(f"WITHIN ... UNITS needs a numeric ts_col; "
                                         f"{ts_f.name!r} is a {ts_f.dataType.simpleString().upper()} "
                                         "(use a time unit)")
    elif isinstance(ts_f.dataType, NumericType):
        ts_kind, ts_sql, ts_type = "number", _quote(ts_f.name), ts_f.dataType
        if unit == "TIME":
            raise CetTrendsArgumentError(f"a WITHIN in time units needs a TIMESTAMP ts_col; "
                                         f"{ts_f.name!r} is {ts_f.dataType.simpleString()} "
                                         "(use UNITS)")
    else:
        raise CetTrendsArgumentError(f"ts_col {ts_f.name!r} must be a TIMESTAMP or a number, "
                                     f"found {ts_f.dataType.simpleString()}")
    return ts_kind, ts_sql, ts_type


def _window_columns(window_f: StructField, ts_kind: str) -> list[SelectedColumn]:
    """The selected bounds of ``window_col`` (``__wstart``, ``__wend``), after their check."""
    from pyspark.sql.types import StructType, TimestampNTZType, TimestampType
    from pyspark.sql.udtf import SelectedColumn

    select = []
    names = ({f.name.lower(): f for f in window_f.dataType.fields}
             if isinstance(window_f.dataType, StructType) else {})
    if ts_kind != "timestamp" or not all(
            isinstance(getattr(names.get(n), "dataType", None), (TimestampType,
                                                                  TimestampNTZType))
            for n in ("start", "end")):
        raise CetTrendsArgumentError(
            f"window_col {window_f.name!r} must be the STRUCT<start, end> of Spark's "
            f"window(ts, ...) over a TIMESTAMP ts_col, found "
            f"{window_f.dataType.simpleString()}")
    for bound in ("start", "end"):
        select.append(SelectedColumn(
            f"unix_micros(CAST({_quote(window_f.name)}.{bound} AS TIMESTAMP))",
            alias=f"__w{bound}"))
    return select


def _output_schema(key_f: StructField | None, ts_type: DataType, out_kind: str,
                   extra: tuple[StructField, ...] = ()) -> StructType:
    """The output columns: the key under its own name, the window, the trends (and an ARRAY
    per column of ``columns =>``) or their count."""
    from pyspark.sql.types import (ArrayType, DecimalType, IntegerType, LongType, StructField,
                                   StructType)

    out = [StructField(key_f.name, key_f.dataType)] if key_f is not None else []
    out += [StructField("window_start", ts_type), StructField("window_end", ts_type)]
    if out_kind == "trends":
        out += [StructField("trend_id", LongType()), StructField("length", IntegerType()),
                StructField("first_ts", ts_type), StructField("last_ts", ts_type),
                StructField("event_ids", ArrayType(LongType()))]
        out += [StructField(f.name, ArrayType(f.dataType)) for f in extra]
    else:
        out.append(StructField("n_trends", DecimalType(38, 0)))
    return StructType(out)


def _pushdown(query: TrendQuery, fields: dict[str, StructField], type_f: StructField | None,
              ts_f: StructField) -> str | None:
    """Spark SQL for "the row is an event of the class and passes every filter" (DESIGN.md
    section 3: single-event conditions are boolean columns computed before any Python runs),
    or None when a part cannot be rendered with the engine's semantics (a timestamp, ``c.type``
    without ``type_col``): then the engine evaluates them all."""

    names = {name: f.name for name, f in fields.items()}
    if type_f is not None:
        names["type"] = type_f.name  # c.type is the type column (decision 9)
    elif "type" in {r.attr.lower() for c in query.filters for r in c.refs if hasattr(r, "attr")}:
        names["type"] = fields["type"].name if "type" in fields else "type"
    parts = []
    try:
        if query.class_condition is not None:
            parts.append(render_condition(query.class_condition, names, ts_col=ts_f.name))
        elif type_f is not None:
            parts.append(class_test(type_f.name, query.cls))
        parts += [render_condition(c, names, ts_col=ts_f.name) for c in query.filters]
    except NotRenderable:
        return None
    if not parts:
        return None
    return "coalesce(" + " AND ".join(f"({p})" for p in parts) + ", false)"


@lru_cache(maxsize=64)
def _compiled_pushed(pattern: Query) -> TrendQuery:
    """The query with its class test and filters removed: Spark evaluated them (``__keep``)."""
    from dataclasses import replace

    query = _compiled(pattern, True)
    return replace(query, filters=(), class_condition=parse_condition(
        "TRUE", kind="define", subject=query.cls))


@lru_cache(maxsize=64)
def _compiled(pattern: Query, has_type: bool) -> TrendQuery:
    """The compiled query; without ``type_col`` a class without DEFINE holds every row (its
    class test becomes TRUE, as if the pattern said ``DEFINE <class> AS TRUE``)."""
    from dataclasses import replace

    query = compile_trend(pattern)
    if not has_type and query.class_condition is None:
        query = replace(query, class_condition=parse_condition("TRUE", kind="define",
                                                               subject=query.cls))
    return query


def _values(array: pa.Array) -> np.ndarray:
    """An Arrow column as numpy: numbers as numbers, strings and columns with NULLs as objects."""
    import numpy as np
    import pyarrow as pa

    if array.null_count or not (pa.types.is_integer(array.type) or pa.types.is_floating(array.type)
                                or pa.types.is_boolean(array.type)):
        values = np.empty(len(array), dtype=object)
        values[:] = array.to_pylist()
        return values
    return array.to_numpy(zero_copy_only=False)


def _groups(table: pa.Table, plan: TrendCallPlan
            ) -> tuple[pa.Array | None, list[tuple[int, tuple[int, int] | None, np.ndarray]]]:
    """The keys (an Arrow column, or None) and, per (key, window) in key order, ``(key index,
    window bounds or None, sorted row positions)`` of the rows the class and filters keep."""
    import numpy as np
    import pyarrow.compute as pc

    n = table.num_rows
    keep = (np.ones(n, dtype=bool) if not plan.pushed
            else pc.fill_null(table.column("__keep"), False).to_numpy(zero_copy_only=False))
    keys, key_codes = None, np.zeros(n, dtype=np.int64)
    if plan.key is not None:
        # -0.0 and 0.0, and all NaNs, are one key as in GROUP BY (issue 47)
        encoded = pc.dictionary_encode(grouping_key(table.column("__key").combine_chunks()),
                                       null_encoding="encode")
        keys = encoded.dictionary
        key_codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    window_codes = np.zeros(n, dtype=np.int64)
    starts = ends = None
    if plan.given_windows:
        starts = table.column("__wstart").to_numpy(zero_copy_only=False)
        ends = table.column("__wend").to_numpy(zero_copy_only=False)
        _, window_codes = np.unique(starts, return_inverse=True)
    rows = np.flatnonzero(keep)
    if not len(rows):
        return keys, []
    order = rows[np.lexsort((window_codes[rows], key_codes[rows]))]
    pair = np.stack((key_codes[order], window_codes[order]))
    cuts = np.flatnonzero((pair[:, 1:] != pair[:, :-1]).any(axis=0)) + 1
    out = []
    for part in np.split(order, cuts):
        first = int(part[0])
        window = None if starts is None else (int(starts[first]), int(ends[first]))
        out.append((int(key_codes[first]), window, part))
    return keys, out


def answer_table(plan: TrendCallPlan, table: pa.Table) -> pa.Table:
    """The output table of one partition's selected columns."""
    import numpy as np

    query = _compiled_pushed(plan.pattern) if plan.pushed else _compiled(plan.pattern,
                                                                         plan.has_type)
    if table.column("__id").null_count or table.column("__ts").null_count:
        raise CetTrendsArgumentError("an event has a NULL id or timestamp; filter such rows out "
                                     "of the TABLE argument")
    if plan.classes:
        check_classes(plan.pattern, plan.classes, read_facts(table),
                      table.column("__type").combine_chunks())
    ids = table.column("__id").to_numpy().astype(np.int64)
    ts_arrow = table.column("__ts").type
    ts = table.column("__ts").to_numpy()
    if plan.ts_kind == "timestamp":
        ts = utc_micros(table.column("__ts").combine_chunks()).to_numpy().astype(np.int64)
    attrs = {a: _values(table.column(f"__a{i}").combine_chunks())
             for i, a in enumerate(plan.attributes)}
    # c.type reads the type column when there is one (docs/semantics.md decision 9), else an
    # ordinary column called type (the paper's Q1 reads the check's coverage so).
    type_attr = next((a for a in plan.attributes if a.lower() == "type"), None)
    types = (_values(table.column("__type").combine_chunks()).astype(object) if plan.has_type
             else attrs[type_attr] if type_attr is not None else None)
    if plan.given_windows:  # the window is the partition: no cutting here
        from dataclasses import replace

        query = replace(query, within=None, slide=None, unit=None)
    span = query.within
    keys, groups = _groups(table, plan)
    out: dict[str, list[Any]] = {name: [] for name in (
        "key", "window_start", "window_end", "trend_id", "length", "first_ts", "last_ts",
        "event_ids", "n_trends", "positions")}
    for key, given, sel in groups:
        k_ts, k_ids = ts[sel], ids[sel]
        k_attrs = {a: v[sel] for a, v in attrs.items()}
        k_types = None if types is None else types[sel]

        def bounds(start: int | float, given: tuple[int, int] | None = given
                   ) -> tuple[int | float | None, int | float | None]:
            if given is not None:
                return given
            if not plan.windowed:
                return None, None
            return start, start + span

        if plan.output == "count":
            for start, n in sorted(window_counts(query, k_ts, k_attrs, types=k_types,
                                                 tiebreak=k_ids,
                                                 completeness=plan.completeness).items()):
                if n > MAX_DECIMAL:
                    name = None if keys is None else keys[key].as_py()
                    raise TrendCountOverflowError(
                        f"key {name!r}: a window holds about 10^{decimal_exponent(n)} complete "
                        "trends, more than DECIMAL(38,0) holds; a shorter WITHIN (or a "
                        "narrower pattern) gives countable windows")
                lo, hi = bounds(start)
                out["key"].append(key)
                out["window_start"].append(lo)
                out["window_end"].append(hi)
                out["n_trends"].append(Decimal(n))
            continue
        trends = window_trends(query, k_ts, k_attrs, types=k_types, tiebreak=k_ids,
                               max_trends=plan.max_trends, completeness=plan.completeness)
        trend_id, last_start = 0, object()
        for start, rows_ in trends:
            trend_id = trend_id + 1 if start == last_start else 1
            last_start = start
            ev = rows_.tolist()
            lo, hi = bounds(start)
            out["key"].append(key)
            out["window_start"].append(lo)
            out["window_end"].append(hi)
            out["trend_id"].append(trend_id)
            out["length"].append(len(ev))
            out["first_ts"].append(k_ts[ev[0]].item())
            out["last_ts"].append(k_ts[ev[-1]].item())
            out["event_ids"].append(k_ids[ev].tolist())
            if plan.columns:
                out["positions"].append(sel[rows_])
    return _output(plan, keys, ts_arrow, out, table)


def _output(plan: TrendCallPlan, keys: pa.Array | None, ts_arrow: pa.DataType,
            out: dict[str, list[Any]], table: pa.Table | None = None) -> pa.Table:
    import pyarrow as pa

    def stamps(values: list[int | float | None]) -> pa.Array:
        if plan.ts_kind == "timestamp":
            return pa.array(values, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
        return pa.array(values, ts_arrow)

    cols: dict[str, pa.Array] = {}
    if plan.key is not None:
        cols[plan.key] = keys.take(pa.array(out["key"], pa.int64()))
    cols["window_start"] = stamps(out["window_start"])
    cols["window_end"] = stamps(out["window_end"])
    if plan.output == "count":
        cols["n_trends"] = pa.array(out["n_trends"], pa.decimal128(38, 0))
    else:
        cols.update({"trend_id": pa.array(out["trend_id"], pa.int64()),
                     "length": pa.array(out["length"], pa.int32()),
                     "first_ts": stamps(out["first_ts"]), "last_ts": stamps(out["last_ts"]),
                     "event_ids": pa.array(out["event_ids"], pa.list_(pa.int64()))})
        for i, name in enumerate(plan.columns):  # each trend's rows, in event_ids order
            cols[name] = positions_lists(table.column(f"__c{i}"), out["positions"])
    return pa.table(cols)


class CetTrends(TableFunction):
    """The ``cet_trends`` handler: every key and window of a partition."""

    analyze = staticmethod(planned(analyze_call))

    def answer(self, plan: TrendCallPlan, table: pa.Table) -> Iterator[pa.Table]:
        yield answer_table(plan, table)


def cet_trends_udtf() -> UserDefinedTableFunction:
    """The Spark UDTF object of ``cet_trends``."""
    return table_function(CetTrends)
