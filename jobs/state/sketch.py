"""Incremental sketch job: new source events into a sketch's Delta state (``python -m jobs sketch``).

One run of :func:`run_sketch` for a registered sketch (``conf/sketches.toml``) follows the
protocol of :mod:`jobs.framework.incremental` (target version, nothing new, resuming an
interrupted run, the meta table last); what is the sketch's own is :class:`SketchJob`:

1. Its settings check: ``conf/sketches.toml`` against the settings frozen in ``<name>_meta``
   (:class:`~jobs.framework.errors.SettingsChangedError`, CEP-SKETCH-044).
2. Read only the new source rows: the change data feed from ``source_version + 1`` to the target
   version (a first run reads the feed from version 0 when it holds inserts only, else the
   table as of the target version). An update or delete in that range is a
   :class:`~jobs.framework.errors.SourceNotAppendOnlyError` (sketch sources are append-only).
3. Per stream, in Spark (each task's rows sorted by stream and streamed through ``mapInArrow``
   in chunks, :mod:`jobs.state.sketch_chunks`; no event reaches the driver): the new events are joined with the stream's **frontier** (its top-level
   node rows and its open-leaf row, read AS OF the versions the meta table records), sorted by
   ``(ts, id)``, late ones are split off, the rest are appended to the restored frontier tree
   (:meth:`cep.sketch.SketchTree.restore`), and the changed rows come out: new nodes, old nodes
   whose ``is_top``/``parent_id`` changed, the ``is_open`` row, the new open-leaf state and the
   late events (:func:`jobs.state.sketch_bucket.process_bucket`).
4. Write ``<name>_nodes`` (MERGE on ``(stream, node_id)``: update matched rows, insert the
   others), ``<name>_open`` (MERGE on ``stream``) and ``<name>_late`` (append); the framework
   then overwrites ``<name>_meta`` LAST.

**Idempotency.** Every write carries Delta's idempotent-write identity: ``txnAppId =
cep-sketch-<name>-<table>`` and ``txnVersion`` = the source version the run processes up to
(:mod:`jobs.framework.txn`), and records the run in its commit's ``userMetadata``. A rerun
after a crash between the writes finds that record newer than the meta table, resumes the
interrupted run at its source version (even if the source has grown since), recomputes the
same rows from the same state versions, and Delta skips the writes already applied; then it
continues to the newest version.

Example:
    >>> from jobs.session import build_session                           # doctest: +SKIP
    >>> settings = load_settings()                                       # doctest: +SKIP
    >>> run_sketch(build_session(settings), settings, "app_sketch").written   # doctest: +SKIP
    True
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cep.errors import CepError
from cep.sketch.config import SketchConfig
from delta_tables.catalog import read_table
from delta_tables.settings import Settings, TableConf, load_settings
from delta_tables.sketch_conf import SketchConf, load_sketch
from delta_tables.sketch_state import (
    LATE_COLUMNS,
    META_COLUMNS,
    NODES_COLUMNS,
    OPEN_COLUMNS,
    TS,
    SketchStateError,
    config_from_meta,
    spark_schema,
)
from jobs.framework.errors import ErrorCodes, SettingsChangedError
from jobs.framework.faults import commit_point
from jobs.framework.incremental import IncrementalJob, Outcome, Run, RunResult
from jobs.framework.txn import add_missing_columns
from jobs.state.sketch_bucket import (EVENT, NODE, OPEN, OUT_COLUMNS, OUT_LATE, OUT_NODE,
                                      OUT_OPEN, process_bucket)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["SketchJob", "SketchRunResult", "run_sketch", "process_bucket", "read_meta",
           "load_settings", "CODES"]

CODES = ErrorCodes(job="CEP-SKETCH-041", not_append_only="CEP-SKETCH-042",
                   source_version="CEP-SKETCH-043", settings_changed="CEP-SKETCH-044",
                   crash="CEP-SKETCH-045")
"""The codes of the sketch job's errors (docs/sketch.md)."""


@dataclass(frozen=True)
class SketchRunResult(RunResult):
    """What one run read and wrote (the common fields: :class:`RunResult`).

    Attributes:
        events_read, events_accepted, late: New source rows, those appended to trees, those
            rejected (written to ``<name>_late``).
        streams: Streams with new events.
        node_rows: Rows merged into ``<name>_nodes``.
        config: The sketch's settings.
    """

    events_read: int = 0
    events_accepted: int = 0
    late: int = 0
    streams: int = 0
    node_rows: int = 0
    config: SketchConfig | None = None


def read_meta(spark: "SparkSession", conf: SketchConf) -> dict[str, Any] | None:
    """The meta row of ``conf`` as a dict, or None before the first complete run."""
    return SketchJob(conf).read_meta(spark)


def _frozen_config(conf: SketchConf, meta: dict[str, Any]) -> SketchConfig:
    """The frozen config; raises when the registration contradicts the meta table."""
    config = config_from_meta(meta)
    stored = {key: meta[key] for key in ("source", "stream_col", "type_col", "ts_col", "id_col")}
    wanted = {"source": conf.source.name, "stream_col": conf.stream_col,
              "type_col": conf.type_col, "ts_col": conf.ts_col, "id_col": conf.id_col}
    if stored != wanted:
        raise CODES.error(SettingsChangedError,
                          f"sketch {conf.name}: sketches.toml says {wanted}, the meta table {stored}")
    wanted_merge = conf.config.merge if conf.config is not None else (
        conf.solver.merge if conf.solver is not None else config.merge)
    if wanted_merge != config.merge:
        raise CODES.error(SettingsChangedError, (
            f"sketch {conf.name}: sketches.toml gives merge={wanted_merge!r}, the meta table "
            f"froze merge={config.merge!r}"))
    if conf.config is not None:
        explicit = conf.config
        if (explicit.m, explicit.k, explicit.C, explicit.fanout, explicit.seeds) != (
                config.m, config.k, config.C, config.fanout, config.seeds):
            raise CODES.error(SettingsChangedError, (
                f"sketch {conf.name}: sketches.toml gives m={explicit.m} k={explicit.k} "
                f"C={explicit.C} fanout={explicit.fanout} seeds={list(explicit.seeds or ())}, "
                f"the meta table froze m={config.m} k={config.k} C={config.C} "
                f"fanout={config.fanout} seeds={list(config.seeds or ())}"))
    elif conf.solver is not None and (conf.solver.window, conf.solver.fanout) != (
            config.C, config.fanout):
        raise CODES.error(SettingsChangedError, (
            f"sketch {conf.name}: sketches.toml gives C={conf.solver.window} "
            f"fanout={conf.solver.fanout}, the meta table froze C={config.C} "
            f"fanout={config.fanout}"))
    return config


# ---- reading the source ------------------------------------------------------------------------

def _first_commits(run: Run) -> "DataFrame | None":
    """The change data feed ``0..target`` when it holds inserts only, else None.

    A first run reads it rather than the snapshot so that each event keeps the commit it
    arrived in (``<name>_late.source_version``): a build from scratch then records the same
    late rows as a job that ran commit by commit. A feed that cannot be read from version 0
    (enabled later, vacuumed) or that holds updates or deletes (the table was rewritten) gives
    None: the snapshot as of ``target`` is the first run's input, every event at ``target``.
    """
    from pyspark.sql import functions as F

    try:
        frame = run.feed(0)
        rewritten = frame.where(F.col("_change_type") != "insert").limit(1).count()
    except Exception as exc:  # AnalysisException / Py4J: no feed from version 0
        if isinstance(exc, CepError):
            raise
        return None
    return None if rewritten else frame


def _new_events(run: Run, conf: SketchConf) -> "DataFrame":
    """``stream, type, ts, id, version`` of the source rows after ``done`` up to ``target``."""
    from pyspark.sql import functions as F

    if run.done < 0:
        frame = _first_commits(run)
        if frame is None:
            frame = read_table(run.spark, conf.source, version=run.target)
            version = F.lit(run.target).cast("bigint")
        else:
            version = F.col("_commit_version").cast("bigint")
    else:
        try:
            frame = run.feed(run.first)
            bad = (frame.where(F.col("_change_type") != "insert")
                   .select("_change_type", "_commit_version").limit(1).collect())
        except Exception as exc:  # AnalysisException / Py4J: CDF off, vacuumed, ...
            if isinstance(exc, CepError):
                raise
            raise run.unreadable_feed(exc) from None
        if bad:
            raise run.not_append_only(bad[0][0], bad[0][1])
        version = F.col("_commit_version").cast("bigint")
    columns = set(frame.columns)
    for column in (conf.stream_col, conf.type_col, conf.ts_col, conf.id_col):
        if column not in columns:
            raise CODES.error(SettingsChangedError, (
                f"sketch {conf.name}: source {conf.source.name} has no column {column!r}; it "
                f"has {sorted(c for c in columns if not c.startswith('_'))}"))
    return frame.select(
        F.col(conf.stream_col).cast("string").alias("stream"),
        F.lit(EVENT).alias("kind"),
        F.col(conf.type_col).cast("string").alias("e_type"),
        F.col(conf.ts_col).cast("timestamp").alias("e_ts"),
        F.col(conf.id_col).cast("bigint").alias("e_id"),
        version.alias("e_version"))


def _state(spark: "SparkSession", conf: SketchConf, meta: dict[str, Any] | None,
           events: "DataFrame") -> list["DataFrame"]:
    """Frontier node rows and open rows of the streams with new events, as of the meta."""
    from pyspark.sql import functions as F

    if meta is None:
        # No state yet; empty frames still give the work frame every column.
        return [spark.createDataFrame([], spark_schema(NODES_COLUMNS))
                .withColumn("kind", F.lit(NODE)),
                spark.createDataFrame([], spark_schema(
                    [("stream", "STRING")] + [(f"o_{n}", k) for n, k in OPEN_COLUMNS[1:]]))
                .withColumn("kind", F.lit(OPEN))]
    streams = events.select("stream").where(F.col("stream").isNotNull()).distinct()
    nodes = (read_table(spark, conf.nodes, version=int(meta["nodes_version"]))
             .where(F.col("is_top") & ~F.col("is_open"))
             .join(streams, "stream", "left_semi").withColumn("kind", F.lit(NODE)))
    opened = read_table(spark, conf.open, version=int(meta["open_version"]))
    opened = (opened.select([F.col(c).alias(f"o_{c}") if c != "stream" else F.col(c)
                             for c in opened.columns])
              .join(streams, "stream", "left_semi").withColumn("kind", F.lit(OPEN)))
    return [nodes, opened]


# ---- the per-stream function's partitions (jobs/state/sketch_bucket.py) -----------------------

def _out_schema() -> pa.Schema:
    from delta_tables.sketch_state import _arrow_schema

    return _arrow_schema(OUT_COLUMNS)


def _micros(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    return np.asarray(pc.cast(column, TS).cast(pa.int64()).to_numpy(zero_copy_only=False),
                      dtype=np.int64)


def make_partition_function(config: SketchConfig, chunk_rows: int | None = None
                            ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The function ``mapInArrow`` runs on a partition of work rows sorted by stream, kind
    (descending), ts, id, type and version: chunks of ``chunk_rows`` rows
    (:mod:`jobs.state.sketch_chunks`)."""
    from jobs.state.sketch_chunks import CHUNK_ROWS, StreamedSketch

    settings = config.to_dict()
    rows = CHUNK_ROWS if chunk_rows is None else chunk_rows

    def per_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        cfg, schema = SketchConfig.from_dict(settings), _out_schema()
        streamed = StreamedSketch(lambda table: process_bucket(table, cfg, schema),
                                  (EVENT, NODE, OPEN), (OUT_NODE, OUT_OPEN, OUT_LATE), rows)
        yield from streamed.run(batches)

    return per_partition


# ---- the job ----------------------------------------------------------------------------------

class SketchJob(IncrementalJob):
    """The sketch's own part of the protocol: its tables, its settings check, its step.

    Args:
        conf: The registered sketch.
    """

    kind = "sketch"
    title = "sketch"
    state_word = "sketch"
    codes = CODES
    crash_points = ("nodes", "open", "late")
    table_columns = {"nodes": NODES_COLUMNS, "open": OPEN_COLUMNS, "late": LATE_COLUMNS,
                     "meta": META_COLUMNS}
    result_type = SketchRunResult
    state_error = SketchStateError
    chunk_rows: int | None = None
    """Work rows a task appends at once (None: ``jobs.state.sketch_chunks.CHUNK_ROWS``)."""

    conf: SketchConf

    @property
    def tables(self) -> dict[str, TableConf]:
        """``nodes``, ``open``, ``late`` and ``meta``, in the order a run writes them."""
        return {suffix: self.conf.state_tables()[suffix] for suffix in self.table_columns}

    def check_settings(self, spark: "SparkSession", meta: dict[str, Any]) -> None:
        """Raise SettingsChangedError (CEP-SKETCH-044) when sketches.toml contradicts the meta."""
        _frozen_config(self.conf, meta)

    def idle_fields(self, meta: dict[str, Any] | None) -> dict[str, Any]:
        """A run with nothing new still reports the sketch's settings."""
        return {"config": config_from_meta(meta) if meta else None}

    def _worker_error(self, exc: Exception) -> Exception:
        """A typed error raised in a Python worker, rebuilt on the driver from Spark's message:
        002 a damaged blob, 003 bad events, 040 inconsistent state."""
        from cep.sketch.errors import CorruptSketchError, SketchInputError

        error = self.worker_error(exc, {
            CorruptSketchError.code: CorruptSketchError, SketchInputError.code: SketchInputError,
            SketchStateError.code: SketchStateError})
        if isinstance(error, CorruptSketchError):  # the worker read rows, not the table's name
            return CorruptSketchError(f"table {self.conf.nodes.name}: {error.message}")
        return error

    def process(self, run: Run) -> Outcome:
        """Append the new events to their streams' frontiers; write nodes, open, late."""
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        conf, spark, meta = self.conf, run.spark, run.meta
        config = _frozen_config(conf, meta) if meta is not None else conf.initial_config()
        run.ensure_tables()
        add_missing_columns(spark, conf.meta, META_COLUMNS, run.metadata)
        run.say(f"{conf.name}: reading {conf.source.name} versions {run.first}..{run.target} "
                f"({'snapshot' if run.done < 0 else 'change data feed'}); m={config.m} "
                f"k={config.k} C={config.C} fanout={config.fanout} merge={config.merge}")
        events = _new_events(run, conf)
        work = events
        for part in _state(spark, conf, meta, events):
            work = work.unionByName(part, allowMissingColumns=True)
        # Each task gets its streams sorted as the trees append them and streams them through
        # in chunks (jobs/state/sketch_chunks.py): a stream of any length in bounded memory.
        parts = int(spark.conf.get("spark.sql.shuffle.partitions"))
        out = (work.repartition(parts, "stream")
               .sortWithinPartitions("stream", F.desc("kind"), "e_ts", "e_id", "e_type",
                                     "e_version")
               .mapInArrow(make_partition_function(config, self.chunk_rows),
                           spark_schema(OUT_COLUMNS))
               .persist(StorageLevel.MEMORY_AND_DISK))
        try:
            try:
                stats = {row["out"]: row for row in out.groupBy("out").agg(
                    F.count(F.lit(1)).alias("rows"),
                    F.coalesce(F.sum("n_accepted"), F.lit(0)).alias("accepted")).collect()}
            except Exception as exc:
                raise self._worker_error(exc) from None
            node_rows = int(stats[OUT_NODE]["rows"]) if OUT_NODE in stats else 0
            streams = int(stats[OUT_OPEN]["rows"]) if OUT_OPEN in stats else 0
            accepted = int(stats[OUT_OPEN]["accepted"]) if OUT_OPEN in stats else 0
            late = int(stats[OUT_LATE]["rows"]) if OUT_LATE in stats else 0
            run.say(f"{conf.name}: {accepted + late:,} events read in {streams:,} streams: "
                    f"{accepted:,} accepted, {late:,} late; {node_rows:,} node rows to merge "
                    f"({run.elapsed():.1f}s)")
            if node_rows:
                run.merge("nodes", out.where(F.col("out") == OUT_NODE)
                          .select([name for name, _ in NODES_COLUMNS]), ["stream", "node_id"])
            run.say(f"{conf.name}: nodes merged ({run.elapsed():.1f}s)")
            commit_point("nodes")
            if streams:
                run.merge("open", out.where(F.col("out") == OUT_OPEN).select(
                    F.col("stream"), *[F.col(f"o_{name}").alias(name)
                                       for name, _ in OPEN_COLUMNS if name != "stream"]),
                          ["stream"])
            run.say(f"{conf.name}: open leaves merged ({run.elapsed():.1f}s)")
            commit_point("open")
            if late:
                run.append("late", out.where(F.col("out") == OUT_LATE).select(
                    F.lit(run.run_id).alias("run_id"), F.col("l_version").alias("source_version"),
                    "stream", F.col("l_type").alias("type"), F.col("l_ts").alias("ts"),
                    F.col("l_id").alias("id"), F.col("l_reason").alias("reason"),
                    F.col("l_last_ts").alias("last_ts"), F.col("l_last_id").alias("last_id")))
            commit_point("late")
        finally:
            out.unpersist()
        return Outcome(
            meta={"sketch": conf.name, "source": conf.source.name, "stream_col": conf.stream_col,
                  "type_col": conf.type_col, "ts_col": conf.ts_col, "id_col": conf.id_col,
                  "m": config.m, "k": config.k, "C": config.C, "fanout": config.fanout,
                  "seeds": list(config.seeds or ()), "target_fpq": config.target_fpq,
                  "config_version": config.config_version, "merge": config.merge,
                  "events_total": (int(meta["events_total"]) if meta else 0) + accepted,
                  "late_total": (int(meta["late_total"]) if meta else 0) + late},
            result={"events_read": accepted + late, "events_accepted": accepted, "late": late,
                    "streams": streams, "node_rows": node_rows, "config": config})


def run_sketch(spark: "SparkSession", settings: Settings, conf: SketchConf | str, *,
               until_version: int | None = None, quiet: bool = False,
               crash_after: str | None = None, chunk_rows: int | None = None
               ) -> SketchRunResult:
    """Bring the sketch's state up to the source's current version (or ``until_version``).

    Args:
        spark: A session from :func:`jobs.session.build_session`.
        settings: Resolved settings.
        conf: The sketch (or its name in ``conf/sketches.toml``).
        until_version: Process the source only up to this version.
        quiet: No progress output.
        crash_after: Test hook (default ``$CEP_SKETCH_CRASH_AFTER``): raise
            :class:`~jobs.framework.errors.InjectedCrash` right after the ``nodes``, ``open``
            or ``late`` write.
        chunk_rows: work rows a task appends at once (default
            ``jobs.state.sketch_chunks.CHUNK_ROWS``; tests lower it to cut streams often).

    Returns:
        The last run's :class:`SketchRunResult` (``written`` False when nothing was new).

    Raises:
        SourceVersionError: no source table, a bad ``until_version``, or an unreadable feed.
        SourceNotAppendOnlyError: an update or delete in the source's new versions.
        SettingsChangedError: the registration contradicts the meta table.
        CorruptSketchError: a stored filter is damaged (CEP-SKETCH-002, naming stream and node).
    """
    job = SketchJob(load_sketch(settings, conf) if isinstance(conf, str) else conf)
    job.chunk_rows = chunk_rows
    return job.run(spark, until_version=until_version, quiet=quiet,  # type: ignore[return-value]
                   crash_after=crash_after)
