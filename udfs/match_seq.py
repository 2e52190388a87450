"""Spark adapter of ``match_seq``: a row UDTF with ``analyze`` over a partitioned TABLE argument.

``analyze`` (on the driver, once per query) parses and validates the pattern against the
table's columns, so a bad pattern fails the SQL statement with its error code, line, column
and caret snippet before any task runs. It also returns ``select``: Spark evaluates the
pushed-down single-event conditions as boolean columns (``__m<k>``) and sends only the columns
the engine needs. The handler buffers one partition, sorts it by ``(key, ts, id)``, matches it
(its keys as segments of one stream, ``cep.match.segments``) and yields one row per match.

Two call forms (docs/sql.md):

    SELECT * FROM match_seq('PATTERN ...', TABLE(events) PARTITION BY user_id ORDER BY ts)
    SELECT * FROM match_seq(pattern => 'PATTERN ...', key_col => 'user_id', events => TABLE(events))

With ``key_col`` the function partitions the table itself, by ``KEY_BUCKETS`` buckets of the
key hash (each bucket's keys matched together; ``match_id`` still counts per key), and every
output row carries the key column; Spark then rejects an explicit PARTITION BY in the same call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator

from pyspark.sql.udtf import AnalyzeResult

from cep.errors import CepError

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
# Buckets of the key_col form: enough for the parallelism of a small cluster, few enough that
# each holds many keys of a log of short cases.
KEY_BUCKETS = 64
OUTPUT_FIELDS = ("match_id BIGINT", "start_ts {ts}", "end_ts {ts}", "event_ids ARRAY<BIGINT>",
                 "variables ARRAY<STRING>", "n_events INT")


class MatchSeqArgumentError(CepError):
    """A ``match_seq`` argument (not the pattern) is missing, of the wrong type or unknown."""

    code = "CEP-SQL-010"


class MatchSeqFailed(Exception):
    """What the SQL caller sees: the message of the CepError (code, position, snippet)."""


@dataclass(frozen=True)
class CallPlan:
    """What ``analyze`` decided, shipped to every task: names and pushed-down mask aliases."""

    pattern: str
    policy: str | None
    ts_kind: str                     # "timestamp" or "number"
    key_col: str | None
    attributes: tuple[str, ...]      # engine attribute names, in select order (__a0, __a1, ...)
    mask_aliases: tuple[str, ...]    # alias of __m0, __m1, ...
    max_matches: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class MatchSeqAnalyzeResult(AnalyzeResult):
    """``AnalyzeResult`` that carries the :class:`CallPlan` to ``__init__`` on the executors."""

    plan: CallPlan | None = None


def _constant(arg: Any, name: str, *, required: bool = False) -> Any:
    if arg is None:
        if required:
            raise MatchSeqArgumentError(f"argument {name} is required")
        return None
    if arg.isTable or not arg.isConstantExpression:
        raise MatchSeqArgumentError(f"argument {name} must be a constant, found an expression")
    return arg.value


def _string_arg(arg: Any, name: str, default: str | None) -> str | None:
    value = _constant(arg, name)
    if value is None:
        return default
    if not isinstance(value, str):
        raise MatchSeqArgumentError(f"argument {name}: expected a string, found {value!r}")
    return value


def _column(fields: dict[str, Any], wanted: str, role: str) -> Any:
    found = fields.get(wanted.lower())
    if found is None:
        names = ", ".join(f.name for f in fields.values())
        raise MatchSeqArgumentError(f"{role} {wanted!r} is not a column of the events table; "
                                    f"columns: {names}")
    return found


def analyze_call(pattern: Any, events: Any, policy: Any = None, ts_col: Any = None,
                 type_col: Any = None, id_col: Any = None, key_col: Any = None,
                 max_matches: Any = None) -> Any:
    """The ``AnalyzeResult`` of one call (see the module docstring)."""
    from pyspark.sql.types import (ArrayType, LongType, StringType, StructField, StructType,
                                   TimestampType, IntegerType, NumericType)
    from pyspark.sql.udtf import OrderingColumn, PartitioningColumn, SelectedColumn

    from cep.lang import parse_pattern
    from cep.lang.ast import events as pattern_events
    from cep.lang.spark_sql import NotRenderable, class_test, render_condition
    from cep.match import compile_query

    text = _constant(pattern, "pattern", required=True)
    if not isinstance(text, str):
        raise MatchSeqArgumentError(f"argument pattern: expected a string, found {text!r}")
    if events is None or not events.isTable:
        raise MatchSeqArgumentError("argument events must be a TABLE(...) argument")
    fields = {f.name.lower(): f for f in events.dataType.fields}
    ts_f = _column(fields, _string_arg(ts_col, "ts_col", "ts"), "ts_col")
    type_f = _column(fields, _string_arg(type_col, "type_col", "type"), "type_col")
    id_f = _column(fields, _string_arg(id_col, "id_col", "id"), "id_col")
    key_name = _string_arg(key_col, "key_col", None)
    key_f = _column(fields, key_name, "key_col") if key_name else None
    chosen_policy = _string_arg(policy, "policy", None)
    limit = _constant(max_matches, "max_matches")
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise MatchSeqArgumentError(f"argument max_matches: expected a positive integer, found {limit!r}")
    if isinstance(ts_f.dataType, TimestampType):
        ts_kind, ts_sql, ts_type = "timestamp", f"unix_micros({_quote(ts_f.name)})", TimestampType()
    elif isinstance(ts_f.dataType, NumericType):
        ts_kind, ts_sql, ts_type = "number", f"CAST({_quote(ts_f.name)} AS BIGINT)", LongType()
    else:
        raise MatchSeqArgumentError(f"ts_col {ts_f.name!r} must be a TIMESTAMP or a number, found "
                                    f"{ts_f.dataType.simpleString()}")
    reserved = {ts_f.name.lower(), type_f.name.lower(), id_f.name.lower()}
    data_columns = [f.name for f in events.dataType.fields if f.name.lower() not in reserved]
    compiled = compile_query(text, policy=chosen_policy,
                             columns=[ts_f.name, type_f.name, id_f.name, *data_columns])
    # Column names as conditions resolve them: `a.ts` / `a.type` always mean the timestamp and
    # type columns (docs/semantics.md, decision 9), even when a data column is called ts/type.
    schema_names = {name.lower(): name for name in data_columns}
    schema_names.update({type_f.name.lower(): type_f.name, id_f.name.lower(): id_f.name,
                         "ts": ts_f.name, "type": type_f.name})
    attributes = tuple(a for a in compiled.attributes
                       if a.lower() not in {ts_f.name.lower(), id_f.name.lower()})

    select = [SelectedColumn(_quote(id_f.name), alias="__id"),
              SelectedColumn(ts_sql, alias="__ts"),
              SelectedColumn(_quote(type_f.name), alias="__type")]
    for i, attr in enumerate(attributes):
        select.append(SelectedColumn(_quote(schema_names[attr.lower()]), alias=f"__a{i}"))
    query = parse_pattern(text)
    classes = {e.alias: e.cls for e in pattern_events(query.pattern)}
    # Class tests as the engine reads them: a DEFINE with a join variable ($x) contributes only
    # its variable-free conjuncts; the conjuncts with $x are checked by the engine on matches.
    defines = {cls: pred.condition for cls, pred in compiled.defines.items()}
    mask_aliases = []
    for alias, conditions in compiled.pushdown.items():
        try:
            cls = classes[alias]
            parts = [render_condition(defines[cls], schema_names, ts_col=ts_f.name)
                     if cls in defines else class_test(type_f.name, cls)]
            parts += [render_condition(c, schema_names, ts_col=ts_f.name) for c in conditions]
        except (NotRenderable, KeyError):
            continue  # the engine evaluates this alias itself
        expr = " AND ".join(f"({p})" for p in parts)
        select.append(SelectedColumn(f"coalesce({expr}, false)", alias=f"__m{len(mask_aliases)}"))
        mask_aliases.append(alias)
    if key_f is not None:
        select.append(SelectedColumn(_quote(key_f.name), alias="__key"))

    out = []
    if key_f is not None:
        out.append(StructField(key_f.name, key_f.dataType))
    out += [StructField("match_id", LongType()), StructField("start_ts", ts_type),
            StructField("end_ts", ts_type), StructField("event_ids", ArrayType(LongType())),
            StructField("variables", ArrayType(StringType())),
            StructField("n_events", IntegerType())]

    # Keys go to KEY_BUCKETS buckets: one UDTF instance per bucket matches all its keys as
    # segments of one stream (cep.match.segments), instead of one instance and one engine call
    # per key, which dominated on logs of many short cases.
    partition_by: list[Any] = ([PartitioningColumn(f"pmod(hash({_quote(key_f.name)}), {KEY_BUCKETS})")]
                               if key_f else [])
    order_by: list[Any] = ([OrderingColumn(_quote(key_f.name)), OrderingColumn(_quote(ts_f.name)),
                            OrderingColumn(_quote(id_f.name))] if key_f else [])
    return MatchSeqAnalyzeResult(
        schema=StructType(out), partitionBy=partition_by, orderBy=order_by, select=select,
        plan=CallPlan(text, chosen_policy, ts_kind, key_f.name if key_f else None, attributes,
                      tuple(mask_aliases), limit))


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class MatchSeqTable:
    """Row UDTF handler: buffers a partition, runs the engine in ``terminate``."""

    @staticmethod
    def analyze(pattern: Any, events: Any = None, policy: Any = None, ts_col: Any = None,
                type_col: Any = None, id_col: Any = None, key_col: Any = None,
                max_matches: Any = None) -> Any:
        try:
            return analyze_call(pattern, events, policy, ts_col, type_col, id_col, key_col,
                                max_matches)
        except CepError as err:
            # One short frame instead of the compiler's stack: the SQL caller reads the message.
            raise MatchSeqFailed(str(err)) from None

    def __init__(self, analyze_result: Any) -> None:
        self.plan: CallPlan = analyze_result.plan
        self.rows: list[Any] = []

    def eval(self, pattern: Any, events: Any, policy: Any = None, ts_col: Any = None,
             type_col: Any = None, id_col: Any = None, key_col: Any = None,
             max_matches: Any = None) -> Iterator[Any]:
        self.rows.append(events)
        return iter(())

    def terminate(self) -> Iterator[tuple[Any, ...]]:
        if not self.rows:
            return
        try:
            yield from run_partition(self.plan, self.rows)
        except CepError as err:
            raise MatchSeqFailed(str(err)) from None


def run_partition(plan: CallPlan, rows: list[Any]) -> Iterator[tuple[Any, ...]]:
    """Match one partition's rows (Spark ``Row`` objects with the selected columns)."""
    import numpy as np

    from cep.match.segments import iter_segment_matches
    from cep.match.stream import EventStream

    n_attr, n_mask = len(plan.attributes), len(plan.mask_aliases)
    columns = list(zip(*rows))  # one tuple per selected column, in select order
    if None in columns[0] or None in columns[1]:
        at = next(i for i in range(len(rows)) if columns[0][i] is None or columns[1][i] is None)
        raise MatchSeqArgumentError(f"event with id {columns[0][at]} has a NULL id or timestamp; "
                                    "filter such rows out of the TABLE argument")
    ids = np.array(columns[0], dtype=np.int64)
    ts = np.array(columns[1], dtype=np.int64)
    types = np.array(columns[2], dtype=object)
    attrs = {name: _array(columns[3 + i]) for i, name in enumerate(plan.attributes)}
    masks = {alias: np.array(columns[3 + n_attr + j], dtype=bool)
             for j, alias in enumerate(plan.mask_aliases)}
    starts, keys = None, None
    if plan.key_col is not None:
        # Factorise the keys (one dict lookup per row, ~0.1 us, next to ~10 us per row of the
        # row transport itself); rows arrive sorted by key, so codes increase with the sort.
        index: dict[Any, int] = {}
        codes = np.fromiter((index.setdefault(k, len(index)) for k in columns[3 + n_attr + n_mask]),
                            dtype=np.int64, count=len(rows))
        order = np.lexsort((ids, ts, codes))
        codes = codes[order]
        starts = np.flatnonzero(np.diff(codes, prepend=-1)).astype(np.int64)
        keys = list(index)
        ids, ts, types = ids[order], ts[order], types[order]
        attrs = {k: v[order] for k, v in attrs.items()}
        masks = {k: v[order] for k, v in masks.items()}
        segment_keys = [keys[c] for c in codes[starts].tolist()]
    else:
        order = np.lexsort((ids, ts))
        ids, ts, types = ids[order], ts[order], types[order]
        attrs = {k: v[order] for k, v in attrs.items()}
        masks = {k: v[order] for k, v in masks.items()}
        segment_keys = [None]
    stream = EventStream(ids, ts, types, attrs, masks, starts)
    compiled = _compiled(plan.pattern, plan.policy, plan.max_matches)
    id_list, ts_list = stream.ids.tolist(), stream.ts.tolist()
    to_ts = _to_datetime if plan.ts_kind == "timestamp" else (lambda us: us)
    for chunk in iter_segment_matches(compiled, stream):
        result = chunk.matches
        positions, variables = result.positions.tolist(), result.variables.tolist()
        offsets, segments = result.offsets.tolist(), chunk.segments.tolist()
        match_ids = chunk.match_ids().tolist()
        for m in range(len(result)):
            lo, hi = offsets[m], offsets[m + 1]
            pos = positions[lo:hi]
            row = (match_ids[m], to_ts(ts_list[pos[0]]), to_ts(ts_list[pos[-1]]),
                   [id_list[p] for p in pos], variables[lo:hi], hi - lo)
            yield row if plan.key_col is None else (segment_keys[segments[m]], *row)


@lru_cache(maxsize=64)
def _compiled(pattern: str, policy: str | None, max_matches: int | None) -> Any:
    # Compiled once per Python worker: partitions are often tiny (one case each), and parsing
    # and compiling per partition measured ~1.5 ms, more than matching a small partition.
    from cep.match import MatchLimits, compile_query

    limits = MatchLimits() if max_matches is None else MatchLimits(max_matches=max_matches)
    return compile_query(pattern, policy=policy, limits=limits)


def _to_datetime(us: int) -> datetime:
    return _EPOCH + timedelta(microseconds=us)


def _array(values: tuple[Any, ...]) -> Any:
    import numpy as np

    if any(v is None for v in values):
        return np.array(values, dtype=object)
    array = np.array(values)
    return array.astype(object) if array.dtype.kind in "US" else array


def match_seq_udtf() -> Any:
    """The Spark UDTF object for ``match_seq`` (row UDTF: it needs ``analyze``)."""
    from pyspark.sql.functions import udtf

    return udtf(MatchSeqTable, useArrow=False)
