"""The Delta state of a registered trend graph (``conf/graphs.toml``): the ABI graph per window.

A graph ``<name>`` keeps the attribute-based indexing graph (Mei et al., ICPP 2021; docs/trends.md)
of every (key, window) of its source in four Delta tables, one row per (key, window) and, for the
per-predicate tables, per predicate; the arrays of a row are indexed by the event's position in
the window (``(ts, id)`` order):

* ``<name>_event_vertices``: ``key, window_start, window_end, event_id ARRAY<BIGINT>,
  ts ARRAY<BIGINT>`` (microseconds, or raw units for a numeric ``ts_col``);
* ``<name>_attribute_vertices``: ``key, window_start, predicate, attr, op``, the vertices'
  bounds (``lo_num``/``hi_num`` for numbers, ``lo_str``/``hi_str`` for strings) and flags
  (``lo_bounded``, ``hi_bounded``, ``lo_closed``, ``hi_closed``);
* ``<name>_from_edges``: ``key, window_start, predicate, event ARRAY<BIGINT>,
  vertex ARRAY<BIGINT>`` (the attribute vertex holding each event's value);
* ``<name>_to_edges``: ``key, window_start, predicate, event, lo, hi`` (range form: event
  ``event[i]`` links to the events whose vertex is in ``[lo[i], hi[i])``, later in time);
* ``<name>_late`` (:data:`LATE`): source events the job did not apply (``late``: older than
  the watermark; ``incomplete``: NULL key, timestamp or id), with the run and the commit they
  arrived in; never dropped silently;
* ``<name>_meta`` (:data:`META`): one row, written LAST: the source version the state is
  complete up to, the run, the version it left in every other table, the watermark, counts.

``window_start`` is 0 for a query without ``WITHIN`` (one window per key). Keys are STRING.

The optional ``lateness`` of a graph (``"30 DAYS"``; a number or ``"N UNITS"`` for a numeric
``ts_col``; :func:`parse_lateness`) turns the watermark on (docs/watermarks.md): an event older
than the newest event of the earlier source commits minus ``lateness`` is late. Without it
nothing is late.

Example:
    >>> from delta_tables.settings import load_settings
    >>> s = load_settings(overrides={"data_dir": "/tmp/cep-doc"})
    >>> conf = GraphConf.from_mapping(s, "g", {"source": "checks", "pattern":
    ...     "PATTERN check+ c[] WHERE c[i].src = c[i-1].dest WITHIN 1 DAY", "key_col": "bank"})
    >>> conf.tables()["to_edges"].name, conf.query.within, conf.lateness
    ('g_to_edges', 86400000000, None)
    >>> str(parse_lateness("30 days")), parse_lateness("1 hour").microseconds()
    ('30 DAYS', 3600000000)
    >>> str(parse_lateness(500)), parse_lateness("500 units").kind
    ('500 UNITS', 'UNITS')
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pyarrow as pa

from cep.errors import ConfigError
from cep.lang.ast import TIME_UNITS, UNITS, Span
from cep.lang.words import unit_of
from delta_tables.settings import Settings, TableConf, check_identifier

SUFFIXES = ("event_vertices", "attribute_vertices", "from_edges", "to_edges", "late", "meta")
"""The state tables of a graph, ``<name>_<suffix>``; ``meta`` is written last."""
STATE_SUFFIXES = SUFFIXES[:-1]
"""The tables whose version the meta row records (``<suffix>_version``)."""
_KNOWN = {"source", "pattern", "key_col", "ts_col", "id_col", "type_col", "description",
          "lateness"}
_DURATION = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?)\s+([A-Za-z]+)\s*")

EVENT_VERTICES = (("key", "STRING"), ("window_start", "BIGINT"), ("window_end", "BIGINT"),
                  ("event_id", "ARRAY<BIGINT>"), ("ts", "ARRAY<BIGINT>"))
ATTRIBUTE_VERTICES = (("key", "STRING"), ("window_start", "BIGINT"), ("predicate", "INT"),
                      ("attr", "STRING"), ("op", "STRING"), ("lo_num", "ARRAY<DOUBLE>"),
                      ("hi_num", "ARRAY<DOUBLE>"), ("lo_str", "ARRAY<STRING>"),
                      ("hi_str", "ARRAY<STRING>"), ("lo_bounded", "ARRAY<BOOLEAN>"),
                      ("hi_bounded", "ARRAY<BOOLEAN>"), ("lo_closed", "ARRAY<BOOLEAN>"),
                      ("hi_closed", "ARRAY<BOOLEAN>"))
FROM_EDGES = (("key", "STRING"), ("window_start", "BIGINT"), ("predicate", "INT"),
              ("event", "ARRAY<BIGINT>"), ("vertex", "ARRAY<BIGINT>"))
TO_EDGES = (("key", "STRING"), ("window_start", "BIGINT"), ("predicate", "INT"),
            ("event", "ARRAY<BIGINT>"), ("lo", "ARRAY<BIGINT>"), ("hi", "ARRAY<BIGINT>"))
LATE = (("run_id", "STRING"), ("source_version", "BIGINT"), ("key", "STRING"), ("ts", "BIGINT"),
        ("id", "BIGINT"), ("reason", "STRING"), ("watermark", "BIGINT"))
"""``<name>_late``: one row per source event not applied. ``source_version`` is the commit it
arrived in, ``ts`` its timestamp in the state's units (microseconds, or raw units), ``reason``
``late`` (``ts`` below ``watermark``, the bound of its commit) or ``incomplete`` (NULL key,
timestamp or id; ``watermark`` NULL)."""
META = (("graph", "STRING"), ("source", "STRING"), ("pattern", "STRING"), ("key_col", "STRING"),
        ("source_version", "BIGINT"), ("windows", "BIGINT"), ("events", "BIGINT"),
        ("updated_at", "TIMESTAMP"), ("source_from", "BIGINT"), ("run_id", "STRING"),
        *((f"{suffix}_version", "BIGINT") for suffix in STATE_SUFFIXES),
        ("lateness", "STRING"), ("max_ts", "BIGINT"), ("watermark", "BIGINT"),
        ("events_read_total", "BIGINT"), ("late_total", "BIGINT"))
"""``<name>_meta``, one row: ``source_version`` is the last source version fully processed,
``source_from`` the first one the last run read, ``run_id`` that run (``<name>:<from>-<to>``);
each ``<suffix>_version`` the version of that state table as the run left it (NULL: never
written); ``windows`` / ``events`` the windows and event vertices held; ``lateness`` the setting
the run used, ``max_ts`` the newest timestamp of a complete source row read so far and
``watermark`` = ``max_ts - lateness``, the bound the next commit's events are held to (NULL
without a lateness); ``events_read_total`` the source rows read so far, ``late_total`` those set
aside (late or incomplete: the rows of ``<name>_late``). ``updated_at`` (wall clock) is
informational only; nothing is derived from it."""
COLUMNS = {"event_vertices": EVENT_VERTICES, "attribute_vertices": ATTRIBUTE_VERTICES,
           "from_edges": FROM_EDGES, "to_edges": TO_EDGES, "late": LATE, "meta": META}
MERGE_KEYS = {"event_vertices": ["key", "window_start"],
              "attribute_vertices": ["key", "window_start", "predicate"],
              "from_edges": ["key", "window_start", "predicate"],
              "to_edges": ["key", "window_start", "predicate"]}

# One Arrow schema for everything the per-window function returns: a `kind` column says which
# table a row belongs to; the job splits them with a filter and a projection.
KIND = {"event_vertices": 0, "attribute_vertices": 1, "from_edges": 2, "to_edges": 3}
_OUT_FIELDS = [("kind", pa.int8())] + [
    (name, _t) for name, _t in {
        "key": pa.string(), "window_start": pa.int64(), "window_end": pa.int64(),
        "predicate": pa.int32(), "attr": pa.string(), "op": pa.string(),
        "event_id": pa.list_(pa.int64()), "ts": pa.list_(pa.int64()),
        "lo_num": pa.list_(pa.float64()), "hi_num": pa.list_(pa.float64()),
        "lo_str": pa.list_(pa.string()), "hi_str": pa.list_(pa.string()),
        "lo_bounded": pa.list_(pa.bool_()), "hi_bounded": pa.list_(pa.bool_()),
        "lo_closed": pa.list_(pa.bool_()), "hi_closed": pa.list_(pa.bool_()),
        "event": pa.list_(pa.int64()), "vertex": pa.list_(pa.int64()),
        "lo": pa.list_(pa.int64()), "hi": pa.list_(pa.int64())}.items()]
OUT_SCHEMA = pa.schema(_OUT_FIELDS)
_DDL = {pa.int8(): "TINYINT", pa.string(): "STRING", pa.int64(): "BIGINT", pa.int32(): "INT",
        pa.float64(): "DOUBLE", pa.bool_(): "BOOLEAN"}
OUT_DDL = ", ".join(f"{name} {_DDL[t.value_type] if pa.types.is_list(t) else _DDL[t]}"
                    if not pa.types.is_list(t) else f"{name} ARRAY<{_DDL[t.value_type]}>"
                    for name, t in _OUT_FIELDS)
""":data:`OUT_SCHEMA` as the DDL string ``applyInArrow`` takes."""


@dataclass(frozen=True)
class GraphConf:
    """One registered graph: its source, pattern, columns and state tables.

    Attributes:
        name: the graph's name (a SQL identifier; tables are ``<name>_<suffix>``).
        source: the source table.
        pattern: the trend pattern (compiled at load time: errors surface before any job runs).
        key_col, ts_col, id_col: key (one graph per key and window), TIMESTAMP or numeric
            timestamp, BIGINT tie-break.
        type_col: the type column, or None (then every source row is an event of the class,
            as in ``cet_trends`` without ``type_col``).
        settings: the settings the tables resolve under.
        lateness: how far behind the newest earlier event an event may be and still be
            applied (:func:`parse_lateness`), or None: no watermark, nothing is ever late.
    """

    name: str
    source: TableConf
    pattern: str
    key_col: str
    ts_col: str
    id_col: str
    type_col: str | None
    settings: Settings
    lateness: Span | None = None

    @property
    def query(self) -> Any:
        """The compiled :class:`cep.trends.TrendQuery`."""
        from cep.trends import compile_trend

        return compile_trend(self.pattern)

    def tables(self) -> dict[str, TableConf]:
        """The state tables by suffix, each under the warehouse."""
        return {suffix: TableConf(f"{self.name}_{suffix}",
                                  self.settings.warehouse_dir / f"{self.name}_{suffix}")
                for suffix in SUFFIXES}

    @staticmethod
    def from_mapping(settings: Settings, name: str, entry: Mapping[str, Any]) -> GraphConf:
        """A graph from its ``conf/graphs.toml`` entry; :class:`ConfigError` on anything wrong."""
        check_identifier(name, what="graph name")
        if len(name) > 100:
            raise ConfigError(f"graph name {name!r} is longer than 100 characters")
        unknown = sorted(set(entry) - _KNOWN)
        if unknown:
            raise ConfigError(f"graph {name}: unknown keys {unknown}; known: {sorted(_KNOWN)}")
        for needed in ("source", "pattern", "key_col"):
            if not isinstance(entry.get(needed), str):
                raise ConfigError(f"graph {name}: {needed} must be a string")
        source_name = check_identifier(entry["source"], what="source table")
        source = (settings.tables[source_name] if source_name in settings.tables else
                  TableConf(source_name, settings.warehouse_dir / source_name))
        cols = {c: check_identifier(entry.get(c, default), what=c) for c, default in
                (("key_col", None), ("ts_col", "ts"), ("id_col", "id"))}
        type_col = entry.get("type_col")
        if type_col is not None:
            check_identifier(type_col, what="type_col")
        lateness = None
        if "lateness" in entry:
            try:
                lateness = parse_lateness(entry["lateness"])
            except ConfigError as err:
                raise ConfigError(f"graph {name}: {err.message}") from None
        conf = GraphConf(name, source, entry["pattern"], cols["key_col"], cols["ts_col"],
                         cols["id_col"], type_col, settings, lateness)
        query = conf.query  # compile now: a bad pattern is a config error with code and caret
        if lateness is not None and query.within is not None and query.unit != lateness.kind:
            # WITHIN in time units means a TIMESTAMP ts_col, in UNITS a numeric one: the
            # lateness is measured on the same column, so in the same kind of unit.
            raise ConfigError(f"graph {name}: lateness {lateness} is in {lateness.kind} but the "
                              f"pattern's WITHIN is in {query.unit}; use the same kind of unit")
        return conf

    def lateness_amount(self, numeric_ts: bool) -> int | None:
        """``lateness`` in the units of the state's timestamps, or None without a lateness.

        Args:
            numeric_ts: whether ``ts_col`` is numeric (raw units) rather than a TIMESTAMP
                (microseconds).

        Raises:
            ConfigError: a time lateness for a numeric ``ts_col``, or UNITS for a TIMESTAMP.
        """
        if self.lateness is None:
            return None
        if numeric_ts != (self.lateness.kind == UNITS):
            wanted = "a number (or 'N UNITS')" if numeric_ts else "a time such as '30 DAYS'"
            raise ConfigError(f"graph {self.name}: lateness {self.lateness} does not fit the "
                              f"{'numeric' if numeric_ts else 'TIMESTAMP'} column "
                              f"{self.ts_col}; use {wanted}")
        if numeric_ts:
            return int(self.lateness.value)
        return int(self.lateness.microseconds() or 0)


def parse_lateness(value: Any) -> Span:
    """The ``lateness`` of a ``conf/graphs.toml`` entry as a :class:`cep.lang.ast.Span`.

    A string is a number and a unit as after ``WITHIN`` (``"30 DAYS"``, ``"1 hour"``, ``"500
    UNITS"``; the unit words of the pattern language, :func:`cep.lang.words.unit_of`); a
    bare non-negative whole number means raw units of a numeric ``ts_col``.

    Args:
        value: the TOML value.

    Raises:
        ConfigError: anything else: ``EVENTS``, an unknown unit, a negative or fractional
            number of UNITS, a boolean, a span beyond 2**62 microseconds.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ConfigError(f'lateness must be a duration such as "30 DAYS" or a number, '
                          f"not {value!r}")
    if isinstance(value, str):
        found = _DURATION.fullmatch(value)
        unit = unit_of(found.group(2)) if found else None
        if found is None or (unit not in TIME_UNITS and unit != UNITS):
            raise ConfigError(f'lateness {value!r}: expected a number and a unit of time '
                              f'(MICROSECONDS .. WEEKS) or UNITS, such as "30 DAYS"')
        span = Span(float(found.group(1)), unit)
    else:
        span = Span(float(value), UNITS)
    if not math.isfinite(span.value) or span.value < 0 or span.magnitude() > 2 ** 62:
        raise ConfigError(f"lateness {value!r} is out of range")
    if span.kind == UNITS and not float(span.value).is_integer():
        raise ConfigError(f"lateness {value!r}: a number of UNITS must be whole")
    return span


def load_graph(settings: Settings, name: str) -> GraphConf:
    """The graph ``name`` of ``<conf_dir>/graphs.toml``."""
    path = settings.conf_dir / "graphs.toml"
    try:
        entries = tomllib.loads(path.read_text(encoding="utf-8")).get("graphs", {})
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    if name not in entries:
        raise ConfigError(f"unknown graph {name!r}; registered in {path.name}: "
                          f"{', '.join(sorted(entries)) or '(none)'}")
    return GraphConf.from_mapping(settings, name, entries[name])


def window_rows(graph: Any, key: str, window_start: int, window_end: int,
                event_ids: np.ndarray) -> pa.Table:
    """The state rows (:data:`OUT_SCHEMA`) of ONE window's :class:`cep.trends.TrendGraph`.

    Args:
        graph: the window's graph (built over the window's member events only).
        key, window_start, window_end: where it belongs.
        event_ids: the id of each input row of the graph (``graph.row`` indexes it).
    """
    arrays = graph.to_arrays()
    rows: list[dict[str, Any]] = []
    order = np.argsort(np.asarray(arrays["event_vertices.pos"], dtype=np.int64), kind="stable")
    ids = np.asarray(event_ids, dtype=np.int64)[np.asarray(arrays["event_vertices.row"])[order]]
    rows.append({"kind": KIND["event_vertices"], "key": key, "window_start": window_start,
                 "window_end": window_end, "event_id": ids.tolist(),
                 "ts": np.asarray(arrays["event_vertices.ts"])[order].astype(np.int64).tolist()})
    for p, (attr, op) in enumerate(zip(arrays["predicates.attr"].tolist(),
                                       arrays["predicates.op"].tolist())):
        lo, hi = arrays[f"attribute_vertices.{p}.lo"], arrays[f"attribute_vertices.{p}.hi"]
        numeric = lo.dtype.kind in "iuf"
        base = {"key": key, "window_start": window_start, "predicate": p}
        rows.append({**base, "kind": KIND["attribute_vertices"], "attr": attr, "op": op,
                     "lo_num": lo.astype(np.float64).tolist() if numeric else None,
                     "hi_num": hi.astype(np.float64).tolist() if numeric else None,
                     "lo_str": None if numeric else [None if v is None else str(v) for v in lo],
                     "hi_str": None if numeric else [None if v is None else str(v) for v in hi],
                     **{flag: arrays[f"attribute_vertices.{p}.{flag}"].astype(bool).tolist()
                        for flag in ("lo_bounded", "hi_bounded", "lo_closed", "hi_closed")}})
        rows.append({**base, "kind": KIND["from_edges"],
                     "event": arrays[f"from_edges.{p}.event"].astype(np.int64).tolist(),
                     "vertex": arrays[f"from_edges.{p}.vertex"].astype(np.int64).tolist()})
        rows.append({**base, "kind": KIND["to_edges"],
                     "event": arrays[f"to_edges.{p}.event"].astype(np.int64).tolist(),
                     "lo": arrays[f"to_edges.{p}.lo"].astype(np.int64).tolist(),
                     "hi": arrays[f"to_edges.{p}.hi"].astype(np.int64).tolist()})
    return pa.Table.from_pylist(rows, schema=OUT_SCHEMA)
