"""Incremental trend-graph job: the ABI graph of every (key, window) in Delta (``python -m jobs graph``).

One run of :func:`run_graph` for a registered graph (``conf/graphs.toml``,
:mod:`delta_tables.graph_state`) follows the protocol of :mod:`jobs.framework.incremental`
(target version, nothing new, resuming an interrupted run, the meta table last); what is the
graph's own is :class:`GraphJob`:

1. (The framework: nothing new when the source's version, or ``--until-version``, is not newer
   than the ``source_version`` ``<name>_meta`` records.)
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
   window is never half written. Then append the set-aside rows to ``<name>_late``; the
   framework overwrites ``<name>_meta`` LAST with the run, the version each table is at and
   the counts.

**Watermark** (docs/watermarks.md). With ``lateness`` set, the watermark of a source commit is
the newest timestamp of the complete rows of all EARLIER commits minus ``lateness``; an event of
that commit below it is late. The rule looks at commits, not runs, so how commits are grouped
into runs does not change what is late or what the state holds. Without ``lateness`` nothing
is ever late: windows are rebuilt whole, so any out-of-order event is applied exactly.

**Idempotency and crashes.** Every write carries ``txnAppId = cep-graph-<name>-<table>``,
``txnVersion`` = the target source version (:mod:`jobs.framework.txn`) and the run's record
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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import pyarrow as pa

from cep.errors import CepError
from delta_tables.catalog import read_table
from delta_tables.graph_state import (COLUMNS, KIND, MERGE_KEYS, OUT_DDL, OUT_SCHEMA, GraphConf,
                                      load_graph, window_rows)
from delta_tables.settings import Settings
from jobs.framework.errors import ErrorCodes, JobError
from jobs.framework.faults import commit_point
from jobs.framework.watermarks import (INCOMPLETE, LATE, Commit, WatermarkedJob,
                                       classify_late, commit_bounds)
from jobs.framework.incremental import IncrementalJob, Outcome, Run, RunResult, create_tables
from jobs.framework.txn import add_missing_columns
from jobs.session import session_confs

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["GraphJob", "GraphRunResult", "run_graph", "read_meta", "make_window_function",
           "CODES", "METADATA_KEY", "LATE", "INCOMPLETE"]

METADATA_KEY = "cep-graph"
"""Key of the run record in every commit's ``userMetadata``."""
CODES = ErrorCodes(job="CEP-TREND-040", not_append_only="CEP-TREND-040",
                   source_version="CEP-TREND-040", settings_changed="CEP-TREND-040",
                   crash="CEP-TREND-040")
"""The graph job's errors all carry CEP-TREND-040 (docs/trends.md)."""
NO_WINDOW = 0
"""``window_start`` of the one window of a query without ``WITHIN``."""
CACHE_BATCH_ROWS = 32
"""Rows per batch of the cached state rows of the rebuilt windows (Spark's default: 10,000).

A state row holds a window's arrays, 16 to 24 bytes per event of the window (9 KB a row on
average for the 600-event windows of ``benchmarks.bench_scaling``), so a batch of 10,000 rows
was about 90 MB, built in growing heap buffers that Spark's memory manager does not count; 32
rows keep a batch near 300 KB there. How the cache batches rows changes nothing written."""


@dataclass(frozen=True)
class GraphRunResult(RunResult):
    """What one run read and wrote (the common fields: :class:`RunResult`).

    Attributes:
        windows: Windows rebuilt.
        events_read: New source rows; ``late`` and ``incomplete`` of them were set aside
            (``<name>_late``), the rest applied.
        late: New rows below their commit's watermark.
        incomplete: New rows with a NULL key, timestamp or id.
        watermark: The bound the next commit's events are held to (None without a lateness).
    """

    windows: int = 0
    events_read: int = 0
    late: int = 0
    incomplete: int = 0
    watermark: int | None = None


# ---- meta and state tables ---------------------------------------------------------------------

def read_meta(spark: "SparkSession", conf: GraphConf) -> dict[str, Any] | None:
    """The meta row as a dict, or None before the first complete run."""
    return GraphJob(conf).read_meta(spark)


def _ensure_tables(spark: "SparkSession", conf: GraphConf, metadata: str) -> None:
    """Create the missing state tables (carrying the run's record ``metadata``) and give an
    older meta table the newer columns."""
    create_tables(spark, GraphJob(conf), metadata)
    add_missing_columns(spark, conf.tables()["meta"], COLUMNS["meta"], metadata)


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
    JobError (CEP-TREND-040) when a column is missing."""
    from pyspark.sql import functions as F

    have = {c.lower(): c for c in frame.columns}
    wanted = [conf.key_col, conf.ts_col, conf.id_col, *attributes] + (
        [conf.type_col] if conf.type_col else [])
    missing = [c for c in wanted if c.lower() not in have]
    if missing:
        raise CODES.error(JobError, (
            f"graph {conf.name}: source {conf.source.name} has no column {missing}; it has "
            f"{sorted(c for c in frame.columns if not c.startswith('_'))}"))
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


def _new_rows(run: Run, conf: GraphConf) -> tuple["DataFrame", list[Commit], bool]:
    """The new source rows ``key, ts_us, id, commit`` (persisted: every later step reads them),
    what each commit brings, and whether ``ts_col`` is a TIMESTAMP (:func:`_select`).

    The rows are the change data feed after ``done``; one aggregate over them checks that the
    feed holds inserts only and counts per commit. A first run reads the feed from version 0
    when it holds inserts only, so every row keeps the commit it arrived in (the watermark and
    the late table need it, and a from-scratch build then records the same commits as an
    incremental one); otherwise (a feed switched on later, vacuumed, a rewritten source) it
    reads the snapshot as of ``target`` as one commit.

    Raises:
        SourceVersionError: after a first run, an unreadable feed.
        SourceNotAppendOnlyError: after a first run, an update/delete in the feed.
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

    new, stats, why = None, None, ""
    try:
        feed = run.feed(run.first)
        new, is_timestamp = narrow(feed, F.col("_commit_version"), F.col("_change_type"))
        stats = per_commit(new)
    except CepError:
        raise
    except Exception as exc:  # noqa: BLE001 - AnalysisException / Py4J: CDF off, vacuumed, ...
        if new is not None:
            new.unpersist()
        new, why = None, str(exc).splitlines()[0][:200]
        if run.done >= 0:
            raise run.unreadable_feed(exc) from None
    bad = sorted((int(r[0]), str(r[1])) for r in stats or () if r[1] != "insert")
    if bad and run.done >= 0:
        new.unpersist()  # type: ignore[union-attr]
        raise run.not_append_only(bad[0][1], bad[0][0])
    if new is None or bad:
        if new is not None:
            new.unpersist()
        run.say(f"{conf.name}: no insert-only change data feed of {conf.source.name} from "
                f"version 0 ({why or f'a {bad[0][1]} at version {bad[0][0]}'}); reading "
                f"version {run.target} as one commit")
        new, is_timestamp = narrow(read_table(run.spark, conf.source, version=run.target),
                                   F.lit(run.target), F.lit("insert"))
        stats = per_commit(new)
    commits = sorted((Commit(int(r[0]), int(r[2]), int(r[3]),
                              None if r[4] is None else int(r[4])) for r in stats or ()),
                     key=lambda c: c.version)
    return new, commits, is_timestamp


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


# ---- the job ----------------------------------------------------------------------------------

class GraphJob(WatermarkedJob, IncrementalJob):
    """The graph's own part of the protocol: its tables, its step (classify, rebuild, write).

    Args:
        conf: The registered graph.
    """

    kind = "graph"
    title = "graph"
    state_word = "graph"
    codes = CODES
    crash_points = ("event_vertices", "attribute_vertices", "from_edges", "to_edges", "late")
    table_columns = COLUMNS
    result_type = GraphRunResult

    conf: GraphConf

    def process(self, run: Run) -> Outcome:
        """Classify the new rows, rebuild the affected windows, write the vertex and edge
        tables and the set-aside rows."""
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        conf, spark, meta = self.conf, run.spark, run.meta
        query = conf.query
        attributes = tuple(a for a in query.attributes if a.lower() != "ts")
        since = None if run.done < 0 else run.done
        max_ts, read_before, set_aside_before = _baseline(spark, conf, meta, run.done)
        new, commits, is_timestamp = _new_rows(run, conf)
        out: "DataFrame | None" = None
        try:
            # Checked before the first write: a lateness that does not fit ts_col is a config
            # error.
            lateness = conf.lateness_amount(not is_timestamp)
            bounds, newest = commit_bounds(commits, max_ts, lateness)
            tagged = classify_late(spark, new.drop("change"), bounds, _complete(), "ts_us")
            read = sum(c.rows for c in commits)
            incomplete = sum(c.incomplete for c in commits)
            late = tagged.where(F.col("reason") == LATE).count() if bounds else 0
            applied = read - late - incomplete
            run.say(f"{conf.name}: {conf.source.name} versions {run.first}..{run.target}: "
                    f"{read:,} events read, {applied:,} applied, {late:,} late, "
                    f"{incomplete:,} incomplete"
                    + (f" (lateness {conf.lateness})" if lateness is not None else "")
                    + f" ({run.elapsed():.1f}s)")
            _ensure_tables(spark, conf, run.metadata)
            windows = 0
            if applied:
                out = _rebuild(spark, conf, meta, run.target, since, attributes, tagged,
                               excluded=late > 0 or set_aside_before > 0)
                # On disk, not MEMORY_AND_DISK: a partition's rows are one cached block (0.9 GB
                # each in a first run of 10^8 events on local[2]). MEMORY_AND_DISK unrolled it
                # in memory, checking its budget only every 16 batches, and once spilled read
                # it back into one byte array: OutOfMemoryError with the 4 GB driver. On disk it
                # is written and read as a stream; the MERGEs read it. The cache is built (its
                # batch size read) by this count.
                with session_confs(spark, {"spark.sql.inMemoryColumnarStorage.batchSize":
                                           str(CACHE_BATCH_ROWS)}):
                    out = out.persist(StorageLevel.DISK_ONLY)
                    windows = out.where(F.col("kind") == KIND["event_vertices"]).count()
            run.say(f"{conf.name}: {windows} window(s) rebuilt; writing")
            for suffix, kind in KIND.items():
                if windows:
                    names = [name for name, _ in COLUMNS[suffix]]
                    run.merge(suffix, out.where(F.col("kind") == kind).select(*names),
                              MERGE_KEYS[suffix])
                commit_point(suffix)
            if late + incomplete:
                run.append("late", tagged.where(F.col("reason").isNotNull()).select(
                    F.lit(run.run_id).alias("run_id"), F.col("commit").alias("source_version"),
                    "key", F.col("ts_us").cast("bigint").alias("ts"), "id", "reason",
                    F.when(F.col("reason") == LATE, F.col("bound")).alias("watermark")))
            commit_point("late")
        finally:
            new.unpersist()
            if out is not None:
                out.unpersist()
        if windows or meta is None or meta.get("windows") is None:
            totals = read_table(spark, self.tables["event_vertices"],
                                version=run.versions()["event_vertices"]).agg(
                F.count(F.lit(1)), F.coalesce(F.sum(F.size("event_id")), F.lit(0))).first()
            total, events = int(totals[0]), int(totals[1])
        else:  # no window changed: the counts of the last run still hold
            total, events = int(meta["windows"]), int(meta["events"])
        watermark = None if lateness is None or newest is None else newest - lateness
        return Outcome(
            meta={"graph": conf.name, "source": conf.source.name, "pattern": conf.pattern,
                  "key_col": conf.key_col, "windows": total, "events": events,
                  "updated_at": _dt.datetime.now(_dt.timezone.utc), "source_from": run.first,
                  "lateness": None if conf.lateness is None else str(conf.lateness),
                  "max_ts": newest, "watermark": watermark,
                  "events_read_total": read_before + read,
                  "late_total": set_aside_before + late + incomplete},
            result={"windows": int(windows), "events_read": read, "late": late,
                    "incomplete": incomplete, "watermark": watermark},
            summary=(f"{total} windows, {events} event vertices, {late + incomplete} set "
                     f"aside"))


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
        crash_after: Test hook (default ``$CEP_GRAPH_CRASH_AFTER``), one of
            :attr:`GraphJob.crash_points`: raise :class:`~jobs.framework.errors.InjectedCrash`
            (a RuntimeError) right after that write (before the next one).

    Returns:
        The last run's :class:`GraphRunResult` (``written`` False when nothing was new).

    Raises:
        SourceVersionError, SourceNotAppendOnlyError, JobError: no source, a bad
            ``until_version``, an update/delete, a missing column, writes of several
            unfinished runs (all CEP-TREND-040).
        ConfigError: the ``lateness`` does not fit the source's ``ts_col``.
    """
    job = GraphJob(load_graph(settings, conf) if isinstance(conf, str) else conf)
    return job.run(spark, until_version=until_version, quiet=quiet,  # type: ignore[return-value]
                   crash_after=crash_after)


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
