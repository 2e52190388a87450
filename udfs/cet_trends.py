"""Spark adapter of ``cet_trends``: complete event trends of a table, per key and window.

A row UDTF with ``analyze`` (DESIGN.md section 5: the output schema depends on ``output`` and
on the key's type, and the pattern is checked before any task runs):

    SELECT * FROM cet_trends(
      pattern => 'PATTERN check+ c[] WHERE c.type = ''not covered'' AND c[i].src = c[i-1].dest
                  WITHIN 1 WEEK SLIDE 1 DAY',
      key_col => 'bank', events => TABLE(checks))

``analyze`` compiles the pattern with :func:`cep.trends.compile_trend` against the table's
columns (a construct a trend cannot have is a ``CEP-TREND-0NN`` error with line, column and
caret), checks the arguments (``CEP-SQL-030``), asks Spark for just the columns the query
reads and, with ``key_col``, for one partition per key (``PARTITION BY`` the key is then
implied; without ``key_col`` the caller's ``PARTITION BY`` decides and each partition is one
stream). Each task groups its rows by key, cuts the windows (``WITHIN w SLIDE s``: windows
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
  in the TABLE query; then every (key, window) is its own Spark partition and one window (the
  paper's distribution of windows), and the pattern's ``WITHIN``/``SLIDE`` do not cut.
* ``max_trends`` (default 1,000,000) bounds the trends of one key; more is ``CEP-TREND-020``
  before any trend is enumerated, with the advice to ask for ``output => 'count'``.
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
OUTPUTS = ("trends", "count")
MAX_DECIMAL = 10 ** 38 - 1


class CetTrendsArgumentError(CepError):
    """An argument of ``cet_trends`` (not the pattern) is missing, of the wrong type, names a
    column that does not exist, or does not fit the pattern's units."""

    code = "CEP-SQL-030"


class TrendCountOverflowError(CepError):
    """A window holds more complete trends than ``DECIMAL(38,0)`` can hold."""

    code = "CEP-SQL-031"


class CetTrendsFailed(Exception):
    """What the SQL caller sees: the message of the CepError (code, position, snippet)."""


@dataclass(frozen=True)
class TrendCallPlan:
    """What ``analyze`` decided, shipped to every task."""

    pattern: str
    output: str
    max_trends: int
    ts_kind: str  # "timestamp" or "number"
    attributes: tuple[str, ...]
    has_type: bool
    has_key: bool
    windowed: bool
    pushed: bool = False  # class test and filters computed by Spark as the column __keep
    given_windows: bool = False  # windows from window_col (Spark's window()), not cut here


@dataclass
class CetTrendsAnalyzeResult(AnalyzeResult):
    """``AnalyzeResult`` carrying the :class:`TrendCallPlan` to ``__init__`` on the executors."""

    plan: TrendCallPlan | None = None


def _constant(arg: Any, name: str, *, required: bool = False) -> Any:
    if arg is None:
        if required:
            raise CetTrendsArgumentError(f"argument {name} is required")
        return None
    if arg.isTable or not arg.isConstantExpression:
        raise CetTrendsArgumentError(f"argument {name} must be a constant, found an expression "
                                     "or a table")
    return arg.value


def _string(arg: Any, name: str) -> str | None:
    value = _constant(arg, name)
    if value is not None and not isinstance(value, str):
        raise CetTrendsArgumentError(f"argument {name}: expected a string, found {value!r}")
    return value


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _field(fields: dict[str, Any], name: str, role: str) -> Any:
    found = fields.get(name.lower())
    if found is None:
        have = ", ".join(f.name for f in fields.values())
        raise CetTrendsArgumentError(f"{role} {name!r} is not a column of the events table; "
                                     f"columns: {have}")
    return found


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
    from cep.trends import DEFAULT_MAX_TRENDS

    output = "trends" if output is None else output
    if output not in OUTPUTS:
        raise CetTrendsArgumentError(f"argument output: expected one of "
                                     f"{', '.join(map(repr, OUTPUTS))}, found {output!r}")
    limit = DEFAULT_MAX_TRENDS if max_trends is None else max_trends
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise CetTrendsArgumentError(f"argument max_trends: expected a positive integer, "
                                     f"found {max_trends!r}")
    return output, int(limit)


def analyze_call(pattern: Any, events: Any, output: Any = None, max_trends: Any = None,
                 key_col: Any = None, ts_col: Any = None, id_col: Any = None,
                 type_col: Any = None, window_col: Any = None) -> CetTrendsAnalyzeResult:
    """The ``AnalyzeResult`` of one call (see the module docstring)."""
    from pyspark.sql.types import (ArrayType, DecimalType, IntegerType, IntegralType, LongType,
                                   NumericType, StructField, StructType, TimestampNTZType,
                                   TimestampType)
    from pyspark.sql.udtf import PartitioningColumn, SelectedColumn

    from cep.trends import compile_trend

    text = _constant(pattern, "pattern", required=True)
    if not isinstance(text, str):
        raise CetTrendsArgumentError(f"argument pattern: expected a string, found {text!r}")
    if events is None or not events.isTable:
        raise CetTrendsArgumentError("argument events must be a TABLE(...) argument")
    out_kind, limit = check_arguments(_constant(output, "output"), _constant(max_trends,
                                                                             "max_trends"))
    fields = {f.name.lower(): f for f in events.dataType.fields}
    ts_f = _field(fields, _string(ts_col, "ts_col") or "ts", "ts_col")
    id_f = _field(fields, _string(id_col, "id_col") or "id", "id_col")
    type_name = _string(type_col, "type_col")
    type_f = _field(fields, type_name, "type_col") if type_name else None
    key_name = _string(key_col, "key_col")
    key_f = _field(fields, key_name, "key_col") if key_name else None
    if not isinstance(id_f.dataType, IntegralType):
        raise CetTrendsArgumentError(f"id_col {id_f.name!r} must be an integer column, found "
                                     f"{id_f.dataType.simpleString()}")
    columns = [f.name for f in events.dataType.fields]
    query = compile_trend(text, columns=columns)
    if isinstance(ts_f.dataType, (TimestampType, TimestampNTZType)):
        ts_kind, ts_sql, ts_type = "timestamp", f"unix_micros(CAST({_quote(ts_f.name)} AS TIMESTAMP))", TimestampType()
        if query.unit == "UNITS":
            raise CetTrendsArgumentError(f"WITHIN ... UNITS needs a numeric ts_col; "
                                         f"{ts_f.name!r} is a TIMESTAMP (use a time unit)")
    elif isinstance(ts_f.dataType, NumericType):
        ts_kind, ts_sql, ts_type = "number", _quote(ts_f.name), ts_f.dataType
        if query.unit == "TIME":
            raise CetTrendsArgumentError(f"a WITHIN in time units needs a TIMESTAMP ts_col; "
                                         f"{ts_f.name!r} is {ts_f.dataType.simpleString()} "
                                         "(use UNITS)")
    else:
        raise CetTrendsArgumentError(f"ts_col {ts_f.name!r} must be a TIMESTAMP or a number, "
                                     f"found {ts_f.dataType.simpleString()}")
    attributes = tuple(a for a in query.attributes if a.lower() != "ts")
    select = [SelectedColumn(_quote(id_f.name), alias="__id"),
              SelectedColumn(ts_sql, alias="__ts")]
    # DECIMAL columns (a bare 1.05 in Spark SQL is DECIMAL) reach the engine as DOUBLE: the
    # engine's numeric comparisons are float64 (docs/trends.md, "Numbers").
    select += [SelectedColumn(
        f"CAST({_quote(fields[a.lower()].name)} AS DOUBLE)"
        if isinstance(fields[a.lower()].dataType, DecimalType) else _quote(fields[a.lower()].name),
        alias=f"__a{i}") for i, a in enumerate(attributes)]
    if type_f is not None:
        select.append(SelectedColumn(_quote(type_f.name), alias="__type"))
    if key_f is not None:
        select.append(SelectedColumn(_quote(key_f.name), alias="__key"))
    keep = _pushdown(query, fields, type_f, ts_f)
    if keep is not None:
        select.append(SelectedColumn(keep, alias="__keep"))
    window_name = _string(window_col, "window_col")
    window_f = _field(fields, window_name, "window_col") if window_name else None
    if window_f is not None:
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
    out = [StructField(key_f.name, key_f.dataType)] if key_f is not None else []
    out += [StructField("window_start", ts_type), StructField("window_end", ts_type)]
    if out_kind == "trends":
        out += [StructField("trend_id", LongType()), StructField("length", IntegerType()),
                StructField("first_ts", ts_type), StructField("last_ts", ts_type),
                StructField("event_ids", ArrayType(LongType()))]
    else:
        out.append(StructField("n_trends", DecimalType(38, 0)))
    partition_by = [PartitioningColumn(_quote(key_f.name))] if key_f is not None else []
    if window_f is not None:  # one partition per key and window
        partition_by.append(PartitioningColumn(f"{_quote(window_f.name)}.start"))
    plan = TrendCallPlan(text, out_kind, limit, ts_kind, attributes, type_f is not None,
                         key_f is not None, query.within is not None or window_f is not None,
                         keep is not None, window_f is not None)
    return CetTrendsAnalyzeResult(schema=StructType(out), partitionBy=partition_by,
                                  select=select, plan=plan)


def _pushdown(query: Any, fields: dict[str, Any], type_f: Any, ts_f: Any) -> str | None:
    """Spark SQL for "the row is an event of the class and passes every filter" (DESIGN.md
    section 3: single-event conditions are boolean columns computed before any Python runs),
    or None when a part cannot be rendered with the engine's semantics (a timestamp, ``c.type``
    without ``type_col``): then the engine evaluates them all."""
    from cep.lang.spark_sql import NotRenderable, class_test, render_condition

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
def _compiled_pushed(pattern: str) -> Any:
    """The query with its class test and filters removed: Spark evaluated them (``__keep``)."""
    from dataclasses import replace

    from cep.lang import parse_condition

    query = _compiled(pattern, True)
    return replace(query, filters=(), class_condition=parse_condition(
        "TRUE", kind="define", subject=query.cls))


@lru_cache(maxsize=64)
def _compiled(pattern: str, has_type: bool) -> Any:
    """The compiled query; without ``type_col`` a class without DEFINE holds every row (its
    class test becomes TRUE, as if the pattern said ``DEFINE <class> AS TRUE``)."""
    from dataclasses import replace

    from cep.lang import parse_condition
    from cep.trends import compile_trend

    query = compile_trend(pattern)
    if not has_type and query.class_condition is None:
        query = replace(query, class_condition=parse_condition("TRUE", kind="define",
                                                               subject=query.cls))
    return query


def _to_ts(plan: TrendCallPlan, value: Any) -> Any:
    if value is None:
        return None
    if plan.ts_kind == "timestamp":
        return _EPOCH + timedelta(microseconds=int(value))
    return value


def _column(values: tuple[Any, ...]) -> Any:
    import numpy as np

    if any(v is None for v in values):
        return np.array(values, dtype=object)
    array = np.array(values)
    return array.astype(object) if array.dtype.kind in "US" else array


def run_partition(plan: TrendCallPlan, rows: list[Any]) -> Iterator[tuple[Any, ...]]:
    """The output rows of one partition (Spark ``Row`` objects with the selected columns)."""
    import numpy as np

    from cep.trends import window_counts, window_trends

    query = _compiled_pushed(plan.pattern) if plan.pushed else _compiled(plan.pattern,
                                                                         plan.has_type)
    n_attr = len(plan.attributes)
    cols = list(zip(*rows))
    if None in cols[0] or None in cols[1]:
        raise CetTrendsArgumentError("an event has a NULL id or timestamp; filter such rows out "
                                     "of the TABLE argument")
    ids = np.array(cols[0], dtype=np.int64)
    ts = np.array(cols[1]) if plan.ts_kind == "number" else np.array(cols[1], dtype=np.int64)
    attrs = {a: _column(cols[2 + i]) for i, a in enumerate(plan.attributes)}
    at = 2 + n_attr
    # c.type reads the type column when there is one (docs/semantics.md decision 9), else an
    # ordinary column called type (the paper's Q1 reads the check's coverage so).
    type_attr = next((a for a in plan.attributes if a.lower() == "type"), None)
    types = (np.array(cols[at], dtype=object) if plan.has_type
             else attrs[type_attr] if type_attr is not None else None)
    at += plan.has_type
    keep = np.array(cols[at + plan.has_key], dtype=bool) if plan.pushed else None
    at_window = at + plan.has_key + plan.pushed
    keys = cols[at] if plan.has_key else [None] * len(rows)
    windows = (list(zip(cols[at_window], cols[at_window + 1])) if plan.given_windows
               else [None] * len(rows))
    groups: dict[Any, list[int]] = {}
    for i, (k, w) in enumerate(zip(keys, windows)):
        if keep is None or keep[i]:
            groups.setdefault((k, w), []).append(i)
    parts = [(k, w, np.array(v, dtype=np.int64)) for (k, w), v in groups.items()]
    if plan.given_windows:  # the window is the partition: no cutting here
        from dataclasses import replace

        query = replace(query, within=None, slide=None, unit=None)
    span = query.within
    for key, given, sel in parts:
        k_ts, k_ids = ts[sel], ids[sel]
        k_attrs = {a: v[sel] for a, v in attrs.items()}
        k_types = None if types is None else types[sel]
        prefix = (key,) if plan.has_key else ()

        def bounds(start: Any, given: Any = given) -> tuple[Any, Any]:
            if given is not None:
                return _to_ts(plan, given[0]), _to_ts(plan, given[1])
            if not plan.windowed:
                return None, None
            return _to_ts(plan, start), _to_ts(plan, start + span)

        if plan.output == "count":
            for start, n in sorted(window_counts(query, k_ts, k_attrs, types=k_types,
                                                 tiebreak=k_ids).items()):
                if n > MAX_DECIMAL:
                    raise TrendCountOverflowError(
                        f"key {key!r}: a window holds {len(str(n))}-digit many complete trends, "
                        "more than DECIMAL(38,0) holds")
                yield (*prefix, *bounds(start), Decimal(n))
            continue
        trends = window_trends(query, k_ts, k_attrs, types=k_types, tiebreak=k_ids,
                               max_trends=plan.max_trends)
        trend_id, last_start = 0, object()
        for start, rows_ in trends:
            trend_id = trend_id + 1 if start == last_start else 1
            last_start = start
            ev = rows_.tolist()
            yield (*prefix, *bounds(start), trend_id, len(ev), _to_ts(plan, k_ts[ev[0]].item()),
                   _to_ts(plan, k_ts[ev[-1]].item()), k_ids[ev].tolist())


class CetTrendsTable:
    """Row UDTF handler: buffers a partition, answers in ``terminate``."""

    @staticmethod
    def analyze(pattern: Any, events: Any = None, output: Any = None, max_trends: Any = None,
                key_col: Any = None, ts_col: Any = None, id_col: Any = None,
                type_col: Any = None, window_col: Any = None) -> Any:
        try:
            return analyze_call(pattern, events, output, max_trends, key_col, ts_col, id_col,
                                type_col, window_col)
        except CepError as err:
            raise CetTrendsFailed(str(err)) from None

    def __init__(self, analyze_result: Any) -> None:
        self.plan: TrendCallPlan = analyze_result.plan
        self.rows: list[Any] = []

    def eval(self, pattern: Any, events: Any, output: Any = None, max_trends: Any = None,
             key_col: Any = None, ts_col: Any = None, id_col: Any = None,
             type_col: Any = None, window_col: Any = None) -> Iterator[Any]:
        self.rows.append(events)
        return iter(())

    def terminate(self) -> Iterator[tuple[Any, ...]]:
        if not self.rows:
            return
        try:
            yield from run_partition(self.plan, self.rows)
        except CepError as err:
            raise CetTrendsFailed(str(err)) from None


def cet_trends_udtf() -> Any:
    """The Spark UDTF object for ``cet_trends`` (row UDTF: it needs ``analyze``)."""
    from pyspark.sql.functions import udtf

    return udtf(CetTrendsTable, useArrow=False)
