"""Incremental trend-graph job: the ABI graph of every (key, window) in Delta (``python -m jobs graph``).

One run of :func:`run_graph` for a registered graph (``conf/graphs.toml``,
:mod:`delta_tables.graph_state`):

1. Read ``<name>_meta``. If the source's version (or ``--until-version``) equals the recorded
   ``source_version``, say that nothing is new and write nothing.
2. Find the **affected windows**: Spark's ``window(ts, w, s)`` over the new source rows only
   (the change data feed after ``source_version``; a first run takes the whole table), distinct
   ``(key, window start)``. Without ``WITHIN`` every key with a new event is one window.
3. Rebuild each affected window from ALL its events as of the target version (a late event
   simply changes its windows): the source rows are assigned to windows with the same
   ``window()`` expression, semi-joined with the affected windows and grouped by ``(key,
   window)`` (``groupBy(...).applyInArrow``: one window per call, no event reaches the driver);
   each call applies the class test and filters, builds the window's ABI graph
   (:func:`cep.trends.build_graph`, ordered by ``(ts, id)``) and returns its state rows.
4. MERGE the rows of each state table on ``(key, window_start[, predicate])``: a rebuilt
   window's row replaces the old one, a new window is inserted; rows are whole windows, so a
   window is never half written. ``<name>_meta`` is overwritten LAST.

**Idempotency and crashes.** Every MERGE and the meta write carry ``txnAppId =
cep-graph-<name>-<table>`` and ``txnVersion`` = the target source version (:mod:`jobs.txn`):
Delta skips a repeated write of the same run. A rerun after a crash (meta not advanced)
recomputes the same windows from the same source and MERGEs them again; since a MERGE replaces
whole window rows by key, applying it twice leaves the same state, and windows already written
by the crashed run are simply rewritten with the same rows. So state after any sequence of runs
over any split of the source equals a from-scratch build over the same source version (tested).

Example:
    >>> from jobs.session import build_session                             # doctest: +SKIP
    >>> run_graph(build_session(settings), settings, "checks_graph").written   # doctest: +SKIP
    True
"""

from __future__ import annotations

import datetime as _dt
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import pyarrow as pa

from cep.errors import CepError
from delta_tables.catalog import current_version, is_delta_table, read_table
from delta_tables.graph_state import (COLUMNS, KIND, MERGE_KEYS, OUT_DDL, OUT_SCHEMA, GraphConf,
                                      load_graph, window_rows)
from delta_tables.settings import Settings
from delta_tables.sketch_state import spark_schema
# The TXN_* conf names are defined in jobs.txn and re-exported here.
from jobs.txn import (TXN_APP_CONF, TXN_VERSION_CONF, ensure_table, merge,  # noqa: F401
                      register_existing, save, say)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

PROP_GRAPH = "cep.graph.name"
NO_WINDOW = 0
"""``window_start`` of the one window of a query without ``WITHIN``."""


class GraphJobError(CepError):
    """The graph job cannot run: no source, a bad ``--until-version``, a source column missing,
    an unreadable change data feed, or an update/delete in the source's new versions."""

    code = "CEP-TREND-040"


@dataclass(frozen=True)
class GraphRunResult:
    """What one run did."""

    graph: str
    written: bool
    source_version: int
    windows: int
    seconds: float


def read_meta(spark: "SparkSession", conf: GraphConf) -> dict[str, Any] | None:
    """The meta row as a dict, or None before the first complete run."""
    table = conf.tables()["meta"]
    if not is_delta_table(spark, table):
        return None
    rows = read_table(spark, table).collect()
    return rows[0].asDict() if rows else None


def _ensure_tables(spark: "SparkSession", conf: GraphConf) -> None:
    for suffix, table in conf.tables().items():
        ensure_table(spark, table, COLUMNS[suffix], {PROP_GRAPH: conf.name})


def _source_rows(spark: "SparkSession", conf: GraphConf, version: int, since: int | None,
                 attributes: tuple[str, ...]) -> "DataFrame":
    """``key, ts_us, id, attributes...(, type)`` of the source as of ``version`` (all rows), or
    of the change data feed after ``since`` (new rows only)."""
    from pyspark.sql import functions as F

    if since is None:
        frame = read_table(spark, conf.source, version=version)
    else:
        try:
            frame = (spark.read.format("delta").option("readChangeFeed", "true")
                     .option("startingVersion", since + 1).option("endingVersion", version)
                     .load(str(conf.source.location)))
            bad = frame.where(F.col("_change_type") != "insert").limit(1).collect()
        except Exception as exc:  # AnalysisException / Py4J: CDF off, vacuumed, ...
            raise GraphJobError(f"graph {conf.name}: cannot read the change data feed of "
                                f"{conf.source.name} from version {since + 1} to {version}: "
                                f"{str(exc).splitlines()[0][:300]}") from None
        if bad:
            raise GraphJobError(f"graph {conf.name}: source {conf.source.name} has a "
                                f"{bad[0]['_change_type']} change; graph sources are append-only")
    have = {c.lower(): c for c in frame.columns}
    wanted = [conf.key_col, conf.ts_col, conf.id_col, *attributes] + (
        [conf.type_col] if conf.type_col else [])
    missing = [c for c in wanted if c.lower() not in have]
    if missing:
        raise GraphJobError(f"graph {conf.name}: source {conf.source.name} has no column "
                            f"{missing}; it has {sorted(c for c in frame.columns if not c.startswith('_'))}")
    ts = F.col(have[conf.ts_col.lower()])
    ts_type = dict(frame.dtypes)[have[conf.ts_col.lower()]]
    ts_us = F.unix_micros(ts.cast("timestamp")) if ts_type.startswith("timestamp") else ts
    cols = [F.col(have[conf.key_col.lower()]).cast("string").alias("key"),
            ts_us.alias("ts_us"), F.col(have[conf.id_col.lower()]).cast("bigint").alias("id")]
    cols += [F.col(have[a.lower()]).alias(f"a_{i}") for i, a in enumerate(attributes)]
    if conf.type_col:
        cols.append(F.col(have[conf.type_col.lower()]).cast("string").alias("etype"))
    return frame.select(*cols)


def _with_windows(frame: "DataFrame", query: Any) -> "DataFrame":
    """Each row once per window it belongs to: ``window_start``/``window_end`` (Spark's
    ``window()`` on the same epoch-aligned boundaries as :func:`cep.trends.assign_windows`)."""
    from pyspark.sql import functions as F

    if query.within is None:
        return frame.withColumn("window_start", F.lit(NO_WINDOW).cast("bigint")) \
            .withColumn("window_end", F.lit(NO_WINDOW).cast("bigint"))
    w, s = int(query.within), int(query.effective_slide)
    if query.unit == "TIME":
        win = F.window(F.timestamp_micros("ts_us"), f"{w} microseconds", f"{s} microseconds")
        frame = frame.withColumn("w", win)
        return frame.withColumn("window_start", F.unix_micros("w.start")) \
            .withColumn("window_end", F.unix_micros("w.end")).drop("w")
    # UNITS on a numeric column: the windows containing t are the multiples of s in (t - w, t].
    first = F.floor((F.col("ts_us") - F.lit(w)) / F.lit(s)) + 1
    last = F.floor(F.col("ts_us") / F.lit(s))
    frame = frame.withColumn("k", F.explode(F.sequence(first.cast("bigint"), last.cast("bigint"))))
    return frame.withColumn("window_start", F.col("k") * F.lit(s)) \
        .withColumn("window_end", F.col("k") * F.lit(s) + F.lit(w)).drop("k")


def make_window_function(conf: GraphConf, attributes: tuple[str, ...]
                         ) -> Callable[[pa.Table], pa.Table]:
    """The per-window function of ``applyInArrow``: one window's rows in, its state rows out."""
    pattern, has_type = conf.pattern, conf.type_col is not None

    def per_window(table: pa.Table) -> pa.Table:
        from cep.trends import build_graph, event_mask
        from udfs.cet_trends import _compiled

        query = _compiled(pattern, has_type)
        if not table.num_rows:
            return OUT_SCHEMA.empty_table()
        ids = table.column("id").to_numpy().astype(np.int64)
        ts = table.column("ts_us").to_numpy()
        cols = {a: _values(table.column(f"a_{i}")) for i, a in enumerate(attributes)}
        type_attr = next((a for a in attributes if a.lower() == "type"), None)
        types = (_values(table.column("etype")) if has_type
                 else cols[type_attr] if type_attr is not None else None)
        members = np.flatnonzero(event_mask(query, ts, cols, types=types))
        if not len(members):
            return OUT_SCHEMA.empty_table()
        graph = build_graph(query, ts[members], {a: v[members] for a, v in cols.items()},
                            tiebreak=ids[members])
        key = table.column("key")[0].as_py()
        start = int(table.column("window_start")[0].as_py())
        end = int(table.column("window_end")[0].as_py())
        return window_rows(graph, key, start, end, ids[members])

    return per_window


def _values(column: Any) -> np.ndarray:
    values = column.to_numpy(zero_copy_only=False)
    return values.astype(object) if values.dtype.kind in "USO" else values


def _merge(spark: "SparkSession", conf: GraphConf, suffix: str, source: "DataFrame",
           version: int) -> None:
    """MERGE ``source`` into the state table ``suffix`` on its keys (no ``userMetadata``)."""
    merge(spark, conf.tables()[suffix], source, MERGE_KEYS[suffix],
          f"cep-graph-{conf.name}-{suffix}", version)


def run_graph(spark: "SparkSession", settings: Settings, conf: GraphConf | str, *,
              until_version: int | None = None, quiet: bool = False,
              crash_after: str | None = None) -> GraphRunResult:
    """Bring the graph's state up to the source's current version (or ``until_version``).

    Args:
        spark: A session from :func:`jobs.session.build_session`.
        settings: Resolved settings.
        conf: The graph (or its name in ``conf/graphs.toml``).
        until_version: Process the source only up to this version.
        quiet: No progress output.
        crash_after: Test hook: raise ``RuntimeError`` right after the MERGE into this state
            table (``event_vertices``, ``attribute_vertices``, ``from_edges``, ``to_edges``).

    Raises:
        GraphJobError: no source, a bad ``until_version``, a missing column, an update/delete.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    started = time.monotonic()
    if isinstance(conf, str):
        conf = load_graph(settings, conf)
    current = current_version(spark, conf.source)
    if current is None:
        raise GraphJobError(f"graph {conf.name}: source table {conf.source.name} does not exist")
    target = current if until_version is None else int(until_version)
    if not 0 <= target <= current:
        raise GraphJobError(f"graph {conf.name}: --until-version {until_version} is outside the "
                            f"versions 0..{current} of {conf.source.name}")
    meta = read_meta(spark, conf)
    done = -1 if meta is None else int(meta["source_version"])
    if target <= done:
        say(quiet, f"{conf.name}: nothing new in {conf.source.name} (source version {target}, "
                   f"graph at {done}); nothing written")
        register_existing(spark, conf.tables().values())
        return GraphRunResult(conf.name, False, done, 0, time.monotonic() - started)
    query = conf.query
    attributes = tuple(a for a in query.attributes if a.lower() != "ts")
    _ensure_tables(spark, conf)
    say(quiet, f"{conf.name}: reading {conf.source.name} versions {done + 1}..{target}")
    new = _with_windows(_source_rows(spark, conf, target, None if done < 0 else done,
                                     attributes), query)
    affected = new.select("key", "window_start").distinct()
    rows = _with_windows(_source_rows(spark, conf, target, None, attributes), query) \
        .join(F.broadcast(affected) if done >= 0 else affected, ["key", "window_start"],
              "left_semi")
    out = rows.groupBy("key", "window_start").applyInArrow(
        make_window_function(conf, attributes), OUT_DDL).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        windows = out.where(F.col("kind") == KIND["event_vertices"]).count()
        say(quiet, f"{conf.name}: {windows} window(s) rebuilt; writing")
        for suffix, kind in KIND.items():
            names = [name for name, _ in COLUMNS[suffix]]
            _merge(spark, conf, suffix, out.where(F.col("kind") == kind).select(*names), target)
            if crash_after == suffix:
                raise RuntimeError(f"injected crash after the {suffix} write")
        events = int(read_table(spark, conf.tables()["event_vertices"])
                     .select(F.coalesce(F.sum(F.size("event_id")), F.lit(0))).first()[0])
        total = read_table(spark, conf.tables()["event_vertices"]).count()
    finally:
        out.unpersist()
    meta_row = [(conf.name, conf.source.name, conf.pattern, conf.key_col, target, total, events,
                 _dt.datetime.now(_dt.timezone.utc))]
    save(spark.createDataFrame(meta_row, spark_schema(COLUMNS["meta"])), conf.tables()["meta"],
         "overwrite", f"cep-graph-{conf.name}-meta", target)
    say(quiet, f"{conf.name}: state complete up to source version {target} ({total} windows, "
               f"{events} event vertices) in {time.monotonic() - started:.1f} s")
    return GraphRunResult(conf.name, True, target, int(windows), time.monotonic() - started)
