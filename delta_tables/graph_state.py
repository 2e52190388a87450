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
* ``<name>_meta``: one row, the source version the state is complete up to and what it holds.

``window_start`` is 0 for a query without ``WITHIN`` (one window per key). Keys are STRING.

Example:
    >>> from delta_tables.settings import load_settings
    >>> s = load_settings(overrides={"data_dir": "/tmp/cep-doc"})
    >>> conf = GraphConf.from_mapping(s, "g", {"source": "checks", "pattern":
    ...     "PATTERN check+ c[] WHERE c[i].src = c[i-1].dest WITHIN 1 DAY", "key_col": "bank"})
    >>> conf.tables()["to_edges"].name, conf.query.within
    ('g_to_edges', 86400000000)
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pyarrow as pa

from cep.errors import ConfigError
from delta_tables.settings import Settings, TableConf, check_identifier

SUFFIXES = ("event_vertices", "attribute_vertices", "from_edges", "to_edges", "meta")
_KNOWN = {"source", "pattern", "key_col", "ts_col", "id_col", "type_col", "description"}

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
META = (("graph", "STRING"), ("source", "STRING"), ("pattern", "STRING"), ("key_col", "STRING"),
        ("source_version", "BIGINT"), ("windows", "BIGINT"), ("events", "BIGINT"),
        ("updated_at", "TIMESTAMP"))
COLUMNS = {"event_vertices": EVENT_VERTICES, "attribute_vertices": ATTRIBUTE_VERTICES,
           "from_edges": FROM_EDGES, "to_edges": TO_EDGES, "meta": META}
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
    """

    name: str
    source: TableConf
    pattern: str
    key_col: str
    ts_col: str
    id_col: str
    type_col: str | None
    settings: Settings

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
        conf = GraphConf(name, source, entry["pattern"], cols["key_col"], cols["ts_col"],
                         cols["id_col"], type_col, settings)
        conf.query  # compile now: a bad pattern is a config error with code and caret
        return conf


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
