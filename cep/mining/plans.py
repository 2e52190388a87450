"""The Spark SQL each process-mining function stands for: window and aggregate plans only.

Every function reads its events through one projection (:func:`events_sql`) that renames the
columns the call names to internal ones and refuses a NULL timestamp or id with Spark's
``raise_error`` (``CEP-PM-110``), so a missing value is never quietly ordered first. Events
are ordered inside a case by the timestamp, then the id, as ``match_seq`` orders them.

* ``follows``: ``lead()`` over the case (directly-follows), or the case joined with itself on
  row numbers (eventually-follows), then grouped by (source, target) for the graph;
* ``variants``: each case's activities collected and sorted by (ts, id), then grouped;
* ``case_stats``: one aggregate per case (the smallest and largest event by ``(ts, id)``).

Durations are DOUBLE: seconds between two timestamps (TIMESTAMP, TIMESTAMP_NTZ or DATE; a
DATE or TIMESTAMP_NTZ difference is their wall-clock difference, whatever the session's time
zone), or the difference itself for a numeric ``ts_col``. Medians are exact (``median``).

Example:
    >>> sql = plan_sql("case_stats", "SELECT * FROM log", {"key_col": "case_id",
    ...     "ts_col": "ts", "type_col": "type", "id_col": "id"})
    >>> sql.startswith("SELECT __pm_k AS `case_id`, __pm_f.__pm_ts AS start_ts")
    True
"""

from __future__ import annotations

from typing import Any, Callable

from cep.lang.ast import TIME_UNITS, UNITS
from cep.lang.spark_sql import quoted, sql_string

__all__ = ["OUTPUT_COLUMNS", "duration_sql", "events_sql", "micros_sql", "plan_sql",
           "within_seconds"]

_ORDER = "__pm_ts, __pm_id"
_CASE_WINDOW = f"PARTITION BY __pm_k ORDER BY {_ORDER}"

OUTPUT_COLUMNS: dict[tuple[str, str], tuple[str, ...]] = {
    ("follows", "graph"): ("source", "target", "n", "cases", "min_duration",
                           "median_duration", "mean_duration", "max_duration"),
    ("follows", "pairs"): ("source", "target", "source_id", "target_id", "source_ts",
                           "target_ts", "duration"),
    ("variants", ""): ("rank", "variant", "length", "cases", "share", "min_duration",
                       "median_duration", "mean_duration", "max_duration"),
    ("case_stats", ""): ("start_ts", "end_ts", "duration", "n_events", "first_type",
                         "last_type", "first_id", "last_id"),
}
"""Each output's own columns (the key column comes besides them, under its own name)."""


def _string(text: str) -> str:
    return sql_string(text)


def micros_sql(ts: str) -> str:
    """BIGINT microseconds since the epoch of ``ts`` whatever its type: a TIMESTAMP as the
    instant it is; a TIMESTAMP_NTZ or DATE read as UTC (its wall clock, so a day is always 24
    hours in any session time zone); a number as that many seconds (so its raw units come
    back from :func:`duration_sql`). ``typeof`` is folded to a constant while Spark plans the
    query, so only the branch of the column's type runs.

    Example:
        >>> micros_sql("x").startswith("CASE WHEN typeof(x) IN ('date', 'timestamp_ntz')")
        True
    """
    as_utc = (f"unix_micros(CAST(concat(CAST({ts} AS STRING), CASE typeof({ts}) WHEN 'date' "
              "THEN 'T00:00:00Z' ELSE 'Z' END) AS TIMESTAMP))")
    return (f"CASE WHEN typeof({ts}) IN ('date', 'timestamp_ntz') THEN {as_utc} "
            f"ELSE unix_micros(CAST({ts} AS TIMESTAMP)) END")


def duration_sql(start_us: str, end_us: str) -> str:
    """DOUBLE seconds (or raw units of a numeric ``ts_col``) between two microsecond values
    of :func:`micros_sql`."""
    return f"CAST(({end_us}) - ({start_us}) AS DOUBLE) / 1000000.0"


def within_seconds(text: str) -> float:
    """The bound of ``within => '<n> <unit>'`` in seconds (or raw units with ``UNITS``);
    ValueError when it is not one.

    Example:
        >>> within_seconds("30 minutes"), within_seconds("2.5 UNITS")
        (1800.0, 2.5)
    """
    parts = text.split()
    if len(parts) != 2:
        raise ValueError(f"expected '<number> <unit>', found {text!r}")
    number, unit = float(parts[0]), parts[1].upper()
    if number != number or number < 0 or number == float("inf"):
        raise ValueError(f"expected a finite number >= 0, found {parts[0]!r}")
    if unit == UNITS:
        return number
    plural = unit if unit.endswith("S") else unit + "S"
    if plural not in TIME_UNITS:
        raise ValueError(f"unknown unit {parts[1]!r}: expected one of "
                         f"{', '.join((*TIME_UNITS, UNITS))}")
    return number * TIME_UNITS[plural] / 1_000_000


def events_sql(source: str, values: dict[str, Any]) -> str:
    """The source's rows as ``__pm_k, __pm_t, __pm_ts, __pm_id, __pm_us`` (the last:
    :func:`micros_sql`; a NULL timestamp or id:
    ``CEP-PM-110`` while the query runs)."""
    key = quoted(values["key_col"]) if values.get("key_col") else "NULL"
    ts, kind, ident = (quoted(values[c]) for c in ("ts_col", "type_col", "id_col"))
    which = f"the case {values['key_col']} = " if values.get("key_col") else "the table"
    advice = (": every event needs a timestamp and an id (filter the rows, or fill the "
              "value in the TABLE query)")
    def refuse(what: str) -> str:  # no str.format: the key's name may hold braces
        return (f"raise_error(concat({_string('CEP-PM-110: a NULL ' + what + ' in ' + which)}, "
                f"coalesce(CAST({key} AS STRING), 'NULL'), {_string(advice)}))")

    return (f"SELECT {key} AS __pm_k, {kind} AS __pm_t, "
            f"coalesce({ts}, {refuse('timestamp')}) AS __pm_ts, "
            f"coalesce({ident}, {refuse('id')}) AS __pm_id, "
            f"{micros_sql(ts)} AS __pm_us FROM ({source})")


def _key_out(values: dict[str, Any], expression: str = "__pm_k") -> str:
    key = values.get("key_col")
    return f"{expression} AS {quoted(key)}, " if key else ""


def _stats(column: str) -> str:
    return (f"min({column}) AS min_duration, median({column}) AS median_duration, "
            f"avg({column}) AS mean_duration, max({column}) AS max_duration")


def _pairs(source: str, values: dict[str, Any]) -> str:
    events = events_sql(source, values)
    if values["relation"] == "direct":
        return ("SELECT __pm_k, __pm_t AS __pm_s, __pm_ts AS __pm_s_ts, __pm_id AS __pm_s_id, "
                "__pm_n.__pm_t AS __pm_g, __pm_n.__pm_ts AS __pm_g_ts, "
                f"__pm_n.__pm_id AS __pm_g_id, {duration_sql('__pm_us', '__pm_n.__pm_us')} "
                "AS __pm_d FROM (SELECT *, lead(struct(__pm_t, __pm_ts, __pm_id, __pm_us)) "
                f"OVER ({_CASE_WINDOW}) AS __pm_n FROM ({events})) WHERE __pm_n IS NOT NULL")
    numbered = (f"SELECT *, row_number() OVER ({_CASE_WINDOW}) AS __pm_rn FROM ({events})")
    bound = ""
    if values.get("within") is not None:
        limit = round(within_seconds(values["within"]) * 1_000_000)
        bound = f" AND b.__pm_us - a.__pm_us <= {limit}"
    return ("SELECT a.__pm_k, a.__pm_t AS __pm_s, a.__pm_ts AS __pm_s_ts, "
            "a.__pm_id AS __pm_s_id, b.__pm_t AS __pm_g, b.__pm_ts AS __pm_g_ts, "
            f"b.__pm_id AS __pm_g_id, {duration_sql('a.__pm_us', 'b.__pm_us')} AS __pm_d "
            f"FROM ({numbered}) a JOIN ({numbered}) b "
            f"ON a.__pm_k <=> b.__pm_k AND a.__pm_rn < b.__pm_rn{bound}")


def follows_sql(source: str, values: dict[str, Any]) -> str:
    """``follows``: the directly- or eventually-follows graph, or its pairs of events."""
    pairs = _pairs(source, values)
    if values["output"] == "pairs":
        return (f"SELECT {_key_out(values)}__pm_s AS source, __pm_g AS target, "
                "__pm_s_id AS source_id, __pm_g_id AS target_id, __pm_s_ts AS source_ts, "
                f"__pm_g_ts AS target_ts, __pm_d AS duration FROM ({pairs})")
    # The distinct cases are counted apart and joined: with count(DISTINCT) beside the exact
    # median, Spark expands every pair row once per distinct aggregate, and the graph of 10^6
    # events took 8.8 s instead of 5.1 s (BENCHMARKS.md, "Process mining").
    cases = ("SELECT __pm_s, __pm_g, count(*) AS __pm_c, min(__pm_k) AS __pm_x FROM "
             "(SELECT DISTINCT __pm_s, __pm_g, __pm_k FROM __pm_p) GROUP BY __pm_s, __pm_g")
    stats = (f"SELECT __pm_s, __pm_g, count(*) AS __pm_n, {_stats('__pm_d')} FROM __pm_p "
             "GROUP BY __pm_s, __pm_g")
    return (f"WITH __pm_p AS ({pairs}) SELECT a.__pm_s AS source, a.__pm_g AS target, "
            f"a.__pm_n AS n, b.__pm_c AS cases, {_key_out(values, 'b.__pm_x')}"
            "a.min_duration, a.median_duration, a.mean_duration, a.max_duration "
            f"FROM ({stats}) a JOIN ({cases}) b ON a.__pm_s <=> b.__pm_s AND a.__pm_g <=> b.__pm_g")


def variants_sql(source: str, values: dict[str, Any]) -> str:
    """``variants``: each distinct activity sequence with its cases and case durations."""
    # The events are shuffled by case before they are collected: a partial collect_list
    # keeps every event anyway, so its serialized buffers only add work. Measured at 10^6
    # events, 3 rounds in turns (2026-11-28): 1.40-1.74 s instead of 1.69-2.08 s on the BPI
    # applications, 1.88 s instead of 2.14 s on 1,000 long cases, level on 10^5 short ones;
    # against the analyst's query still level (BENCHMARKS.md, "`variants` again").
    cases = ("SELECT __pm_k, transform(array_sort(collect_list(struct(__pm_ts, __pm_id, "
             "__pm_t))), e -> e.__pm_t) AS __pm_v, "
             f"{duration_sql('min(__pm_us)', 'max(__pm_us)')} AS __pm_d "
             f"FROM (SELECT * FROM ({events_sql(source, values)}) DISTRIBUTE BY __pm_k) "
             "GROUP BY __pm_k")
    return ("SELECT CAST(row_number() OVER (ORDER BY count(*) DESC, __pm_v) AS INT) AS rank, "
            "__pm_v AS variant, size(__pm_v) AS length, count(*) AS cases, "
            "count(*) / sum(count(*)) OVER () AS share, "
            f"{_key_out(values, 'min(__pm_k)')}{_stats('__pm_d')} "
            f"FROM ({cases}) GROUP BY __pm_v")


def case_stats_sql(source: str, values: dict[str, Any]) -> str:
    """``case_stats``: per case its first and last event, duration and size."""
    # The smallest and largest (ts, id, type, us) of a case are its first and last event: two
    # aggregates instead of a min_by and a max_by per column.
    event = "struct(__pm_ts, __pm_id, __pm_t, __pm_us)"
    cases = (f"SELECT __pm_k, min({event}) AS __pm_f, max({event}) AS __pm_l, count(*) AS __pm_n "
             f"FROM ({events_sql(source, values)}) GROUP BY __pm_k")
    return (f"SELECT {_key_out(values)}__pm_f.__pm_ts AS start_ts, __pm_l.__pm_ts AS end_ts, "
            f"{duration_sql('__pm_f.__pm_us', '__pm_l.__pm_us')} AS duration, "
            "__pm_n AS n_events, __pm_f.__pm_t AS first_type, __pm_l.__pm_t AS last_type, "
            f"__pm_f.__pm_id AS first_id, __pm_l.__pm_id AS last_id FROM ({cases})")


_PLANS: dict[str, Callable[[str, dict[str, Any]], str]] = {
    "follows": follows_sql, "variants": variants_sql, "case_stats": case_stats_sql}


def plan_sql(function: str, source: str, values: dict[str, Any]) -> str:
    """The SELECT that ``function(...)`` over the query ``source`` stands for."""
    return _PLANS[function](source, values)
