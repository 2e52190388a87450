"""Incremental trend-graph job: the ABI graph of every (key, window) in Delta (``python -m jobs graph``).

One run of :func:`run_graph` for a registered graph (``conf/graphs.toml``,
:mod:`delta_tables.graph_state`):

1. Read ``<name>_meta``. If the source's version (or ``--until-version``) is not newer than the
   recorded ``source_version``, say that nothing is new and write nothing.
2. Read the new source rows (the change data feed after ``source_version``; a first run reads
   the feed from version 0 when it holds inserts only, so every row keeps the commit it arrived
   in, else the table as of the target as one commit) and sort them out: a row with a NULL
   key, timestamp or id is **incomplete**; with a ``lateness``, a row whose timestamp is below
   its commit's **watermark** is **late** (below). Neither is applied: both go to
   ``<name>_late``, and both are counted.
3. Find the **affected windows**: Spark's ``window(ts, w, s)`` over the applied new rows,
   distinct ``(key, window start)``. Without ``WITHIN`` every key with a new event is one window.
4. Rebuild each affected window from ALL its events as of the target version (an out-of-order
   event that is not late simply changes its windows) except those ever set aside as late
   (anti-joined on ``(key, id, ts)``): the source rows are assigned to windows with the same
   ``window()`` expression, semi-joined with the affected windows and grouped by ``(key,
   window)`` (``groupBy(...).applyInArrow``: one window per call, no event reaches the driver);
   each call applies the class test and filters, builds the window's ABI graph
   (:func:`cep.trends.build_graph`, ordered by ``(ts, id)``) and returns its state rows.
5. MERGE the rows of each state table on ``(key, window_start[, predicate])``: a rebuilt
   window's row replaces the old one, a new window is inserted; rows are whole windows, so a
   window is never half written. Then append the set-aside rows to ``<name>_late``, and
   overwrite ``<name>_meta`` LAST with the run, the version each table is at and the counts.

**Watermark** (docs/watermarks.md). With ``lateness`` set, the watermark of a source commit is
the newest timestamp of the complete rows of all EARLIER commits minus ``lateness``; an event of
that commit below it is late. The rule looks at commits, not runs, so how commits are grouped
into runs does not change what is late or what the state holds. Without ``lateness`` nothing
is ever late: windows are rebuilt whole, so any out-of-order event is applied exactly.

**Idempotency and crashes.** Every write carries ``txnAppId = cep-graph-<name>-<table>``,
``txnVersion`` = the target source version (:mod:`jobs.txn`) and the run's record
``{"cep-graph": name, "run_id": ..., "source_version": target}`` as the commit's
``userMetadata`` (the tables a run creates too). Delta skips a repeated write of the same run.
A rerun after a crash finds that record newer than the meta table, first finishes the
interrupted run at its own target (same source rows, same late rows: the committed writes are
skipped, so the late table holds no duplicate), then continues. A MERGE replaces whole window
rows by key, so applying one twice leaves the same state: the state after any sequence of runs
over any split of the source equals a from-scratch build over the same source version
(tested).

Example:
    >>> from jobs.session import build_session                             # doctest: +SKIP
    >>> run_graph(build_session(settings), settings, "checks_graph").written   # doctest: +SKIP
    True
"""

from __future__ import annotations

import datetime as _dt
import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import pyarrow as pa

from cep.errors import CepError
from delta_tables.catalog import read_table
from delta_tables.graph_state import (COLUMNS, KIND, MERGE_KEYS, OUT_DDL, OUT_SCHEMA,
                                      STATE_SUFFIXES, GraphConf, load_graph, window_rows)
from delta_tables.settings import Settings, TableConf
from delta_tables.sketch_state import spark_schema
# The TXN_* conf names are defined in jobs.txn and re-exported here.
from jobs.txn import commit_records as _run_records
from jobs.txn import log_version as _version
from jobs.txn import (TXN_APP_CONF, TXN_VERSION_CONF, USER_METADATA_CONF,  # noqa: F401
                      ensure_table, merge, read_meta_row, register_existing, save, say)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["GraphJobError", "GraphRunResult", "run_graph", "read_meta", "make_window_function",
           "CRASH_POINTS", "METADATA_KEY", "LATE", "INCOMPLETE"]

PROP_GRAPH = "cep.graph.name"
PROP_TABLE = "cep.graph.table"
METADATA_KEY = "cep-graph"
"""Key of the run record in every commit's ``userMetadata``."""
CRASH_POINTS = ("event_vertices", "attribute_vertices", "from_edges", "to_edges", "late")
"""Test hook: the writes after which ``crash_after`` stops a run."""
LATE, INCOMPLETE = "late", "incomplete"
"""The ``reason`` of a row of ``<name>_late``."""
NO_WINDOW = 0
"""``window_start`` of the one window of a query without ``WITHIN``."""


class GraphJobError(CepError):
    """The graph job cannot run: no source, a bad ``--until-version``, a source column missing,
    an unreadable change data feed, an update/delete in the source's new versions, or state
    tables holding writes of several unfinished runs."""

    code = "CEP-TREND-040"


@dataclass(frozen=True)
class GraphRunResult:
    """What one run read and wrote.

    Attributes:
        graph: The graph's name.
        written: False when nothing was new (no table was written).
        source_version: The last source version read (the state is complete up to it).
        windows: Windows rebuilt.
        seconds: Wall time.
        run_id: ``<name>:<first source version read>-<last>`` ("" when nothing was written).
        source_from: The first source version read (None when nothing was written).
        events_read: New source rows; ``late`` and ``incomplete`` of them were set aside
            (``<name>_late``), the rest applied.
        late: New rows below their commit's watermark.
        incomplete: New rows with a NULL key, timestamp or id.
        watermark: The bound the next commit's events are held to (None without a lateness).
        versions: Version of each state table after the run, ``meta`` included.
        resumed: True when the run finished an interrupted run first.
    """

    graph: str
    written: bool
    source_version: int
    windows: int
    seconds: float
    run_id: str = ""
    source_from: int | None = None
    events_read: int = 0
    late: int = 0
    incomplete: int = 0
    watermark: int | None = None
    versions: dict[str, int | None] = field(default_factory=dict)
    resumed: bool = False


# ---- meta and state tables ---------------------------------------------------------------------

def read_meta(spark: "SparkSession", conf: GraphConf) -> dict[str, Any] | None:
    """The meta row as a dict, or None before the first complete run."""
    return read_meta_row(spark, conf.tables()["meta"], GraphJobError)


def _interrupted_target(conf: GraphConf, meta: dict[str, Any] | None) -> int | None:
    """The target source version of a run that wrote (or created) some state tables but not
    the meta table, or None."""
    done = -1 if meta is None else int(meta["source_version"])
    found: set[int] = set()
    for suffix in STATE_SUFFIXES:
        # A meta row of a state older than these columns has no versions: scan all commits
        # (the old ones carry no record).
        since = None if meta is None else meta.get(f"{suffix}_version")
        for record in _run_records(conf.tables()[suffix], since):
            version = int(record.get("source_version", -1))
            if record.get(METADATA_KEY) == conf.name and version > done:
                found.add(version)
    if len(found) > 1:
        raise GraphJobError(f"graph {conf.name}: state tables hold writes of several unfinished "
                            f"runs (source versions {sorted(found)})")
    return found.pop() if found else None


class _Metadata:
    """Sets only the commit ``userMetadata`` session conf around writes that take no writer
    options (table creation), so they too carry the run's record; unset on exit."""

    def __init__(self, spark: "SparkSession", metadata: str) -> None:
        self.spark, self.metadata = spark, metadata

    def __enter__(self) -> None:
        self.spark.conf.set(USER_METADATA_CONF, self.metadata)

    def __exit__(self, *exc: object) -> None:
        self.spark.conf.unset(USER_METADATA_CONF)


def _ensure_tables(spark: "SparkSession", conf: GraphConf, metadata: str) -> None:
    """Create the missing state tables and give an older meta table the newer columns."""
    with _Metadata(spark, metadata):
        for suffix, table in conf.tables().items():
            ensure_table(spark, table, COLUMNS[suffix],
                         {PROP_GRAPH: conf.name, PROP_TABLE: suffix})
    meta = conf.tables()["meta"]
    have = set(read_table(spark, meta).columns)
    if any(name not in have for name, _ in COLUMNS["meta"]):
        # A state written before the meta row grew its columns: an empty append with
        # mergeSchema adds them (old rows read NULL there) so the overwrite below fits.
        (spark.createDataFrame([], spark_schema(COLUMNS["meta"])).write.format("delta")
         .mode("append").option("mergeSchema", "true").option("userMetadata", metadata)
         .save(str(meta.location)))


def _baseline(spark: "SparkSession", conf: GraphConf, meta: dict[str, Any] | None,
              done: int) -> tuple[int | None, int, int]:
    """``(max_ts, events_read_total, late_total)`` before this run.

    A meta row written before those columns existed (no ``run_id``) gets them from the source
    as of its ``source_version`` (one aggregate): its newest complete timestamp and row count;
    such a state set nothing aside.
    """
    from pyspark.sql import functions as F

    if meta is None:
        return None, 0, 0
    if meta.get("run_id") is not None:
        return (None if meta["max_ts"] is None else int(meta["max_ts"]),
                int(meta["events_read_total"] or 0), int(meta["late_total"] or 0))
    frame, _ = _select(read_table(spark, conf.source, version=done), conf, (), F.lit(done))
    row = frame.agg(F.max(F.when(_complete(), F.col("ts_us"))), F.count(F.lit(1))).first()
    return (None if row[0] is None else int(row[0])), int(row[1]), 0


# ---- reading the source ------------------------------------------------------------------------

def _complete() -> "Column":
    """A source row the graph can place: key, timestamp and id all set."""
    from pyspark.sql import functions as F

    return F.col("key").isNotNull() & F.col("ts_us").isNotNull() & F.col("id").isNotNull()


def _select(frame: "DataFrame", conf: GraphConf, attributes: tuple[str, ...],
            commit: "Column", *extra: "Column") -> tuple["DataFrame", bool]:
    """``key, ts_us, id, commit, a_0.., (etype), extra..`` of a source frame, and whether
    ``ts_col`` is a TIMESTAMP (``ts_us`` in microseconds) rather than a number (raw units);
    GraphJobError when a column is missing."""
    from pyspark.sql import functions as F

    have = {c.lower(): c for c in frame.columns}
    wanted = [conf.key_col, conf.ts_col, conf.id_col, *attributes] + (
        [conf.type_col] if conf.type_col else [])
    missing = [c for c in wanted if c.lower() not in have]
    if missing:
        raise GraphJobError(f"graph {conf.name}: source {conf.source.name} has no column "
                            f"{missing}; it has {sorted(c for c in frame.columns if not c.startswith('_'))}")
    ts = F.col(have[conf.ts_col.lower()])
    is_timestamp = dict(frame.dtypes)[have[conf.ts_col.lower()]].startswith("timestamp")
    ts_us = F.unix_micros(ts.cast("timestamp")) if is_timestamp else ts
    cols = [F.col(have[conf.key_col.lower()]).cast("string").alias("key"),
            ts_us.alias("ts_us"), F.col(have[conf.id_col.lower()]).cast("bigint").alias("id"),
            commit.cast("bigint").alias("commit")]
    cols += [F.col(have[a.lower()]).alias(f"a_{i}") for i, a in enumerate(attributes)]
    if conf.type_col:
        cols.append(F.col(have[conf.type_col.lower()]).cast("string").alias("etype"))
    return frame.select(*cols, *extra), is_timestamp


def _source_rows(spark: "SparkSession", conf: GraphConf, version: int,
                 attributes: tuple[str, ...]) -> "DataFrame":
    """``key, ts_us, id, commit, attributes...(, etype)`` of every source row as of
    ``version`` (what a window is rebuilt from)."""
    from pyspark.sql import functions as F

    return _select(read_table(spark, conf.source, version=version), conf, attributes,
                   F.lit(version))[0]


def _feed(spark: "SparkSession", conf: GraphConf, first: int, last: int) -> "DataFrame":
    """The source's change data feed from version ``first`` to ``last`` (lazy)."""
    return (spark.read.format("delta").option("readChangeFeed", "true")
            .option("startingVersion", first).option("endingVersion", last)
            .load(str(conf.source.location)))


@dataclass(frozen=True)
class _Commit:
    """What one source commit of a run brings: rows, incomplete rows, newest complete ts."""

    version: int
    rows: int
    incomplete: int
    newest: int | None


def _new_rows(spark: "SparkSession", conf: GraphConf, done: int, target: int, quiet: bool
              ) -> tuple["DataFrame", list[_Commit], bool]:
    """The new source rows ``key, ts_us, id, commit`` (persisted: every later step reads them),
    what each commit brings, and whether ``ts_col`` is a TIMESTAMP (:func:`_select`).

    The rows are the change data feed after ``done``; one aggregate over them checks that the
    feed holds inserts only and counts per commit. A first run reads the feed from version 0
    when it holds inserts only, so every row keeps the commit it arrived in (the watermark and
    the late table need it, and a from-scratch build then records the same commits as an
    incremental one); otherwise (a feed switched on later, vacuumed, a rewritten source) it
    reads the snapshot as of ``target`` as one commit.

    Raises:
        GraphJobError: after a first run, an unreadable feed or an update/delete in it.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    def per_commit(frame: "DataFrame") -> list[Any]:
        return frame.groupBy("commit", "change").agg(
            F.count(F.lit(1)), F.count(F.when(~_complete(), F.lit(1))),
            F.max(F.when(_complete(), F.col("ts_us")))).collect()

    def narrow(frame: "DataFrame", commit: "Column", change: "Column") -> tuple["DataFrame", bool]:
        rows, is_timestamp = _select(frame, conf, (), commit, change.alias("change"))
        return rows.persist(StorageLevel.MEMORY_AND_DISK), is_timestamp

    first = done + 1
    new, stats, why = None, None, ""
    try:
        feed = _feed(spark, conf, first, target)
        new, is_timestamp = narrow(feed, F.col("_commit_version"), F.col("_change_type"))
        stats = per_commit(new)
    except CepError:
        raise
    except Exception as exc:  # noqa: BLE001 - AnalysisException / Py4J: CDF off, vacuumed, ...
        if new is not None:
            new.unpersist()
        new, why = None, str(exc).splitlines()[0][:200]
        if done >= 0:
            raise GraphJobError(f"graph {conf.name}: cannot read the change data feed of "
                                f"{conf.source.name} from version {first} to {target}: "
                                f"{str(exc).splitlines()[0][:300]}") from None
    bad = sorted((int(r[0]), str(r[1])) for r in stats or () if r[1] != "insert")
    if bad and done >= 0:
        new.unpersist()  # type: ignore[union-attr]
        raise GraphJobError(f"graph {conf.name}: source {conf.source.name} has a {bad[0][1]} "
                            f"change at version {bad[0][0]}; graph sources are append-only")
    if new is None or bad:
        if new is not None:
            new.unpersist()
        say(quiet, f"{conf.name}: no insert-only change data feed of {conf.source.name} from "
                   f"version 0 ({why or f'a {bad[0][1]} at version {bad[0][0]}'}); reading "
                   f"version {target} as one commit")
        new, is_timestamp = narrow(read_table(spark, conf.source, version=target),
                                   F.lit(target), F.lit("insert"))
        stats = per_commit(new)
    commits = sorted((_Commit(int(r[0]), int(r[2]), int(r[3]),
                              None if r[4] is None else int(r[4])) for r in stats or ()),
                     key=lambda c: c.version)
    return new, commits, is_timestamp


def _bounds(commits: list[_Commit], max_ts: int | None,
            lateness: int | None) -> tuple[dict[int, int], int | None]:
    """The watermark of each commit (none for a commit without an earlier complete row, and
    none at all without a lateness) and the newest complete timestamp after all of them.

    The watermark of a commit is the newest complete timestamp of all earlier commits (this
    run's and, through ``max_ts``, the earlier runs') minus ``lateness``. A late row is below
    the newest timestamp before it, so counting late rows in that maximum changes nothing.
    """
    bounds: dict[int, int] = {}
    running = max_ts
    for commit in commits:
        if running is not None and lateness is not None:
            bounds[commit.version] = running - lateness
        if commit.newest is not None:
            running = commit.newest if running is None else max(running, commit.newest)
    return bounds, running


def _classify(spark: "SparkSession", new: "DataFrame", bounds: dict[int, int]) -> "DataFrame":
    """``key, ts_us, id, commit, bound, reason`` of the new rows: ``reason`` NULL (applied),
    ``late`` (below ``bound``, its commit's watermark) or ``incomplete``."""
    from pyspark.sql import functions as F

    frame = new.drop("change")
    if bounds:
        table = spark.createDataFrame(sorted(bounds.items()), "commit BIGINT, bound BIGINT")
        frame = frame.join(F.broadcast(table), "commit", "left")
    else:
        frame = frame.withColumn("bound", F.lit(None).cast("bigint"))
    reason = (F.when(~_complete(), F.lit(INCOMPLETE))
              .when(F.col("ts_us") < F.col("bound"), F.lit(LATE)))
    return frame.withColumn("reason", reason)


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
           version: int, metadata: str) -> None:
    """MERGE ``source`` into the state table ``suffix`` on its keys, with the run's record.

    Into a table still at version 0 (created empty by this run) the MERGE would insert every
    row: that is an append, which Delta does without the MERGE's join, with the same
    ``txnAppId`` / ``txnVersion`` (as :func:`jobs.predict._merge` does).
    """
    table, app_id = conf.tables()[suffix], f"cep-graph-{conf.name}-{suffix}"
    if _version(table) == 0:
        save(source, table, "append", app_id, version, metadata)
        return
    merge(spark, table, source, MERGE_KEYS[suffix], app_id, version, metadata)


def _crash_point(where: str, crash_after: str | None) -> None:
    if crash_after == where:
        raise RuntimeError(f"injected crash after the {where} write")


# ---- the run -----------------------------------------------------------------------------------

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
        crash_after: Test hook, one of :data:`CRASH_POINTS`: raise ``RuntimeError`` right
            after that write (before the next one).

    Returns:
        The last run's :class:`GraphRunResult` (``written`` False when nothing was new).

    Raises:
        GraphJobError: no source, a bad ``until_version``, a missing column, an update/delete,
            writes of several unfinished runs.
        ConfigError: the ``lateness`` does not fit the source's ``ts_col``.
    """
    started = time.monotonic()
    if isinstance(conf, str):
        conf = load_graph(settings, conf)
    if crash_after is not None and crash_after not in CRASH_POINTS:
        raise GraphJobError(f"crash point {crash_after!r}: expected one of {CRASH_POINTS}")
    current = _version(conf.source)
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
        # Another process may have built the state: make it queryable by name here too.
        register_existing(spark, conf.tables().values())
        return GraphRunResult(conf.name, False, done, 0, time.monotonic() - started,
                              watermark=meta.get("watermark") if meta else None)
    interrupted = _interrupted_target(conf, meta)
    resumed = False
    result: GraphRunResult | None = None
    if interrupted is not None and interrupted > done:
        say(quiet, f"{conf.name}: resuming the run interrupted at source version {interrupted}")
        result = _run_once(spark, conf, meta, done, interrupted, quiet, crash_after, started,
                           resumed=True)
        meta, done, resumed = read_meta(spark, conf), interrupted, True
    if target <= done and result is not None:
        return result
    return _run_once(spark, conf, meta, done, target, quiet, crash_after, started,
                     resumed=resumed)


def _run_once(spark: "SparkSession", conf: GraphConf, meta: dict[str, Any] | None, done: int,
              target: int, quiet: bool, crash_after: str | None, started: float, *,
              resumed: bool) -> GraphRunResult:
    """Process source versions ``done + 1 .. target`` and write the state (meta last)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    query = conf.query
    attributes = tuple(a for a in query.attributes if a.lower() != "ts")
    tables = conf.tables()
    first = done + 1
    run_id = f"{conf.name}:{first}-{target}"
    metadata = json.dumps({METADATA_KEY: conf.name, "run_id": run_id, "source_version": target})
    since = None if done < 0 else done
    max_ts, read_before, set_aside_before = _baseline(spark, conf, meta, done)
    new, commits, is_timestamp = _new_rows(spark, conf, done, target, quiet)
    out: "DataFrame | None" = None
    try:
        # Checked before the first write: a lateness that does not fit ts_col is a config error.
        lateness = conf.lateness_amount(not is_timestamp)
        bounds, newest = _bounds(commits, max_ts, lateness)
        tagged = _classify(spark, new, bounds)
        read = sum(c.rows for c in commits)
        incomplete = sum(c.incomplete for c in commits)
        late = tagged.where(F.col("reason") == LATE).count() if bounds else 0
        applied = read - late - incomplete
        say(quiet, f"{conf.name}: {conf.source.name} versions {first}..{target}: {read:,} events "
                   f"read, {applied:,} applied, {late:,} late, {incomplete:,} incomplete"
                   + (f" (lateness {conf.lateness})" if lateness is not None else "")
                   + f" ({time.monotonic() - started:.1f}s)")
        _ensure_tables(spark, conf, metadata)
        windows = 0
        if applied:
            out = _rebuild(spark, conf, meta, target, since, attributes, tagged,
                           excluded=late > 0 or set_aside_before > 0)
            out = out.persist(StorageLevel.MEMORY_AND_DISK)
            windows = out.where(F.col("kind") == KIND["event_vertices"]).count()
        say(quiet, f"{conf.name}: {windows} window(s) rebuilt; writing")
        for suffix, kind in KIND.items():
            if windows:
                names = [name for name, _ in COLUMNS[suffix]]
                _merge(spark, conf, suffix, out.where(F.col("kind") == kind).select(*names),
                       target, metadata)
            _crash_point(suffix, crash_after)
        if late + incomplete:
            save(tagged.where(F.col("reason").isNotNull()).select(
                     F.lit(run_id).alias("run_id"), F.col("commit").alias("source_version"),
                     "key", F.col("ts_us").cast("bigint").alias("ts"), "id", "reason",
                     F.when(F.col("reason") == LATE, F.col("bound")).alias("watermark")),
                 tables["late"], "append", f"cep-graph-{conf.name}-late", target, metadata)
        _crash_point("late", crash_after)
    finally:
        new.unpersist()
        if out is not None:
            out.unpersist()
    versions = {suffix: _version(tables[suffix]) for suffix in STATE_SUFFIXES}
    if windows or meta is None or meta.get("windows") is None:
        totals = read_table(spark, tables["event_vertices"],
                            version=versions["event_vertices"]).agg(
            F.count(F.lit(1)), F.coalesce(F.sum(F.size("event_id")), F.lit(0))).first()
        total, events = int(totals[0]), int(totals[1])
    else:  # no window changed: the counts of the last run still hold
        total, events = int(meta["windows"]), int(meta["events"])
    max_ts = newest
    watermark = None if lateness is None or max_ts is None else max_ts - lateness
    meta_row = {
        "graph": conf.name, "source": conf.source.name, "pattern": conf.pattern,
        "key_col": conf.key_col, "source_version": target, "windows": total, "events": events,
        "updated_at": _dt.datetime.now(_dt.timezone.utc), "source_from": first, "run_id": run_id,
        **{f"{suffix}_version": v for suffix, v in versions.items()},
        "lateness": None if conf.lateness is None else str(conf.lateness), "max_ts": max_ts,
        "watermark": watermark, "events_read_total": read_before + read,
        "late_total": set_aside_before + late + incomplete}
    save(spark.createDataFrame([tuple(meta_row[name] for name, _ in COLUMNS["meta"])],
                               spark_schema(COLUMNS["meta"])),
         tables["meta"], "overwrite", f"cep-graph-{conf.name}-meta", target, metadata)
    versions["meta"] = _version(tables["meta"])
    seconds = time.monotonic() - started
    say(quiet, f"{conf.name}: state complete up to source version {target} ({total} windows, "
               f"{events} event vertices, {late + incomplete} set aside) in {seconds:.1f} s; "
               + ", ".join(f"{k}={v}" for k, v in versions.items()))
    return GraphRunResult(conf.name, True, target, int(windows), seconds, run_id, first, read,
                          late, incomplete, watermark, versions, resumed)


def _rebuild(spark: "SparkSession", conf: GraphConf, meta: dict[str, Any] | None, target: int,
             since: int | None, attributes: tuple[str, ...], tagged: "DataFrame", *,
             excluded: bool) -> "DataFrame":
    """The state rows (:data:`~delta_tables.graph_state.OUT_SCHEMA`) of every window an
    applied new row falls in, each rebuilt from all its complete source rows as of ``target``
    but those ever set aside as late (``excluded``: there may be some)."""
    from pyspark.sql import functions as F

    query = conf.query
    applied = tagged.where(F.col("reason").isNull()).select("key", "ts_us")
    affected = _with_windows(applied, query).select("key", "window_start").distinct()
    rows = _source_rows(spark, conf, target, attributes).where(_complete()).drop("commit")
    if excluded:
        # Late rows stay out of every later rebuild of their windows: this run's and those of
        # earlier runs (the late table as of the version the meta records).
        gone = tagged.where(F.col("reason") == LATE).select(
            "key", "id", F.col("ts_us").cast("bigint").alias("x_ts"))
        if meta is not None and meta.get("late_version") is not None:
            gone = gone.unionByName(read_table(spark, conf.tables()["late"],
                                               version=int(meta["late_version"]))
                                    .where(F.col("reason") == LATE)
                                    .select("key", "id", F.col("ts").alias("x_ts")))
        rows = rows.withColumn("x_ts", F.col("ts_us").cast("bigint")) \
            .join(gone, ["key", "id", "x_ts"], "left_anti").drop("x_ts")
    rows = _with_windows(rows, query).join(
        F.broadcast(affected) if since is not None else affected, ["key", "window_start"],
        "left_semi")
    return rows.groupBy("key", "window_start").applyInArrow(
        make_window_function(conf, attributes), OUT_DDL)
