"""Incremental prediction job: new source events through a set's subscriptions into Delta
(``python -m jobs predict --name NAME``).

One run of :func:`run_predict` for a registered prediction set (``conf/predictions.toml``,
:mod:`delta_tables.predict_state`; docs/predict-jobs.md) follows the protocol of
:mod:`jobs.framework.incremental` (target version, nothing new, resuming an interrupted run,
the meta table last); what is the set's own is :class:`PredictJob`:

1. Its settings check: a ``conf`` that no longer agrees with the meta table or
   ``<name>_subscriptions`` is :class:`~jobs.framework.errors.SettingsChangedError`
   (CEP-PRED-042; a changed set needs a new name).
2. Read only the new source rows: the change data feed from ``source_version + 1`` to the target
   (an update or delete there is :class:`~jobs.framework.errors.SourceNotAppendOnlyError`). A first run reads the feed
   from version 0 when it holds inserts only (so every row keeps the commit it arrived in), else
   the snapshot at the target as one commit.
3. The new events meet the persisted instance states of their keys (``<name>_instances`` as of
   the version the meta records) in :func:`~jobs.state.predict_bucket.process_bucket`: it
   sets late and incomplete rows aside, orders the rest per key by ``(ts, commit, id,
   attributes)`` and calls
   :func:`cep.predict.predict` once per subscription over all its keys, starting every instance
   from its persisted :class:`~cep.predict.InstanceState`. Out come the new instance rows, the
   trained counts (one model blob per subscription) and the late rows. A run of at most
   :data:`LOCAL_ROWS` source rows makes one call on the driver; a larger one runs in Spark
   (no event reaches the driver): the rows are hash-partitioned by key, every event gets its
   lateness bound from a window function (:func:`_with_bounds`), each task's rows are sorted
   by key and time and streamed through ``mapInArrow`` in chunks of ``chunk_rows``
   (:mod:`jobs.state.predict_chunks`; a key of any length in bounded memory). Both give the
   same state (counts add up; keys are independent; a key's calls split it by time).
4. On the driver: the bucket models are merged into the persisted model
   (:meth:`cep.predict.Model.merge`; counts add up, so the result is the model of one pass), and
   the machine states the merged model has seen that ``<name>_states`` lacks are listed.
5. Writes, in this order: ``<name>_subscriptions`` (first run), ``<name>_instances`` (MERGE on
   ``sub, key, instance``), ``<name>_models`` (MERGE on ``sub``), ``<name>_states`` (MERGE on
   ``sub, leaf, mask``), ``<name>_late`` (append); the framework then overwrites
   ``<name>_meta`` LAST. A table with nothing to write is not written.

**Late events.** An event is late when its timestamp is before the newest timestamp of its key
in an *earlier source commit* (processed by this run or an earlier one). Late and incomplete
rows (NULL key or timestamp) are not run: they go to ``<name>_late`` with the run, the commit
they arrived in and the key's newest timestamp, and are counted in the meta table. Because the
rule looks at commits, not at runs, the state does not depend on how commits are grouped into
runs.

**Idempotency.** Every write carries ``txnAppId = cep-predict-<name>-<table>`` and ``txnVersion``
= the source version the run processes up to (never the clock), and records the run in its
commit's ``userMetadata`` (the writes are :mod:`jobs.framework.txn`'s). Delta skips a write whose
``txnVersion`` it has already recorded for that ``txnAppId``. A rerun after a crash finds writes
newer than the meta table, resumes that run at its source version (same inputs: the state as
of the meta's versions and the same source rows, so the same rows come out; the writes that
were committed are skipped), then continues.

Example:
    >>> from jobs.session import build_session                              # doctest: +SKIP
    >>> run_predict(build_session(settings), settings, "heat").written        # doctest: +SKIP
    True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Callable

import pyarrow as pa
import pyarrow.compute as pc

from delta_tables.catalog import read_table
from delta_tables.predict_state import (COLUMNS, MERGE_KEYS, PredictionConf, PredictStateError,
                                        empty_model, load_prediction, state_rows,
                                        subscription_rows)
from delta_tables.settings import Settings
from delta_tables.sketch_state import spark_schema
from jobs.framework.errors import ErrorCodes, JobError, SettingsChangedError
from jobs.framework.faults import commit_point
from jobs.framework.incremental import IncrementalJob, Outcome, Run, RunResult
from jobs.state.predict_bucket import (EVENT, OUT_COLUMNS, OUT_INSTANCE, OUT_LATE, OUT_MODEL,
                                      OUT_STATS, STATE, counts_table, process_bucket)
from jobs.state.predict_chunks import CHUNK_ROWS, STAT_COLUMNS, StreamedPredict

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["PredictJob", "PredictRunResult", "run_predict", "process_bucket", "read_meta",
           "CODES"]

CODES = ErrorCodes(job="CEP-PRED-040", not_append_only="CEP-PRED-041",
                   settings_changed="CEP-PRED-042", source_version="CEP-PRED-043",
                   crash="CEP-PRED-045")
"""The codes of the prediction job's errors (docs/predict-jobs.md); inconsistent state is
:class:`~delta_tables.predict_state.PredictStateError` (CEP-PRED-044)."""
LOCAL_ROWS = 1_000_000
"""A run that reads at most this many new source rows runs them on the driver (one call of
:func:`process_bucket`), a larger one in Spark (``mapInArrow`` in chunks). Measured on 2 cores
(docs/predict-jobs.md): 10^6 synthetic events in 1,000 keys take ~2.5 s on the driver
(collect included) against ~14 s through Spark's Python workers; above the threshold the
driver's memory, not speed, is the limit."""

_INT_TYPES = ("tinyint", "smallint", "int", "bigint")


@dataclass(frozen=True)
class PredictRunResult(RunResult):
    """What one run read and wrote (the common fields: :class:`RunResult`).

    Attributes:
        read: how the source was read (``change data feed``, ``commits from version 0`` or
            ``snapshot``).
        events_read: new source rows; ``events_run`` of them were run, ``late`` and
            ``incomplete`` set aside (``<name>_late``).
        keys: keys with events run.
        instance_rows, state_rows: rows merged into ``<name>_instances`` / ``<name>_states``.
        model_events: per subscription, the training events of its model after the run.
    """

    read: str = ""
    events_read: int = 0
    events_run: int = 0
    late: int = 0
    incomplete: int = 0
    keys: int = 0
    instance_rows: int = 0
    state_rows: int = 0
    model_events: dict[str, int] = field(default_factory=dict)


# ---- meta and settings -------------------------------------------------------------------------

def read_meta(spark: "SparkSession", conf: PredictionConf) -> dict[str, Any] | None:
    """The meta row of ``conf`` as a dict, or None before the first complete run."""
    return PredictJob(conf).read_meta(spark)


def _check_settings(spark: "SparkSession", conf: PredictionConf, meta: dict[str, Any]) -> None:
    """Raise SettingsChangedError (CEP-PRED-042) when the registration contradicts the state."""
    stored = {k: meta[k] for k in ("source", "key_col", "ts_col", "id_col", "type_col")}
    wanted = {"source": conf.source.name, "key_col": conf.key_col, "ts_col": conf.ts_col,
              "id_col": conf.id_col, "type_col": conf.type_col}
    if stored != wanted:
        raise CODES.error(SettingsChangedError, f"prediction set {conf.name}: predictions.toml "
                                                f"says {wanted}, the meta table {stored}")
    version = meta["subscriptions_version"]
    rows = [] if version is None else read_table(
        spark, conf.tables()["subscriptions"], version=int(version)
    ).select("sub", "pattern").collect()
    have = {r["sub"]: r["pattern"] for r in rows}
    if have != dict(conf.subscriptions):
        raise CODES.error(SettingsChangedError, (
            f"prediction set {conf.name}: predictions.toml registers "
            f"{sorted(dict(conf.subscriptions).items())}, the state was built for "
            f"{sorted(have.items())}; register the changed subscriptions under a new set name"))


# ---- reading the source ------------------------------------------------------------------------

def _change_feed(run: Run, first: int) -> tuple["DataFrame", int, tuple | None]:
    """The change data feed ``first..target``, its number of rows and its first non-insert
    change ``(type, version)`` (None when it holds inserts only); one scan."""
    from pyspark.sql import functions as F

    frame = run.feed(first)
    counts = {r[0]: int(r[1]) for r in frame.groupBy("_change_type").count().collect()}
    bad = None
    if set(counts) - {"insert"}:
        row = (frame.where(F.col("_change_type") != "insert")
               .select("_change_type", "_commit_version").orderBy("_commit_version").first())
        bad = (row[0], int(row[1]))
    return frame, sum(counts.values()), bad


def _source_rows(run: Run, conf: PredictionConf) -> tuple["DataFrame", str, tuple[str, ...], int]:
    """``key, kind, e_ts, e_id, e_commit, e_type, a_0..`` of the source rows after ``done`` up
    to ``target``, how they were read, the attribute of each ``a_i`` column (an attribute
    ``ts`` or, with a type column, ``type`` that is not a source column is not one: the events'
    timestamps and types stand for it), and the number of rows."""
    from pyspark.sql import functions as F

    frame, read = None, "change data feed"
    target = run.target
    if run.done < 0:
        try:
            frame, rows, bad = _change_feed(run, 0)
            read = "commits from version 0"
        except Exception:  # no feed from version 0 (enabled later, vacuumed): the snapshot
            frame, bad = None, None
        if frame is None or bad:
            frame, read = read_table(run.spark, conf.source, version=target), "snapshot"
            rows = frame.count()
    else:
        try:
            frame, rows, bad = _change_feed(run, run.first)
        except Exception as exc:  # AnalysisException / Py4J: CDF off, vacuumed, ...
            raise run.unreadable_feed(exc) from None
        if bad:
            raise run.not_append_only(bad[0], bad[1])
    have = {c.lower(): c for c in frame.columns if not c.startswith("_")}
    types = {c.lower(): t for c, t in frame.dtypes}
    wanted = [conf.key_col, conf.ts_col] + [c for c in (conf.id_col, conf.type_col) if c]
    attrs = [a for a in conf.attributes if a in have
             or not (a == "ts" or (a == "type" and conf.type_col))]
    missing = [c for c in wanted + attrs if c.lower() not in have]
    if missing:
        raise run.job.error(JobError, f"source {conf.source.name} has no column {missing}; it "
                                      f"has {sorted(have.values())}")
    ts_name, ts_type = have[conf.ts_col.lower()], types[conf.ts_col.lower()]
    if ts_type.startswith("timestamp") or ts_type == "date":
        ts = F.unix_micros(F.col(ts_name).cast("timestamp"))
    elif ts_type in _INT_TYPES:
        ts = F.col(ts_name).cast("bigint")
    else:
        raise run.job.error(JobError, f"ts_col {conf.ts_col} is {ts_type}; expected TIMESTAMP, "
                                      "DATE or an integer type")
    if conf.id_col:
        id_type = types[conf.id_col.lower()]
        if id_type not in _INT_TYPES:
            raise run.job.error(JobError, f"id_col {conf.id_col} is {id_type}; expected an "
                                          "integer type")
        ident = F.col(have[conf.id_col.lower()]).cast("bigint")
    else:
        ident = F.lit(None).cast("bigint")
    commit = (F.col("_commit_version") if "_commit_version" in frame.columns
              else F.lit(target)).cast("bigint")
    cols = [F.col(have[conf.key_col.lower()]).cast("string").alias("key"),
            F.lit(EVENT).alias("kind"), ts.alias("e_ts"), ident.alias("e_id"),
            commit.alias("e_commit"),
            (F.col(have[conf.type_col.lower()]).cast("string") if conf.type_col
             else F.lit(None).cast("string")).alias("e_type")]
    for i, a in enumerate(attrs):
        column = F.col(have[a.lower()])
        if types[a.lower()].startswith("decimal"):
            column = column.cast("double")
        cols.append(column.alias(f"a_{i}"))
    return frame.select(*cols), read, tuple(attrs), rows


def _state_rows(spark: "SparkSession", conf: PredictionConf, meta: dict[str, Any] | None,
                events: "DataFrame") -> "DataFrame | None":
    """The persisted instance rows of the keys with new events (as of the meta's version);
    ``i_last_ts`` is the state's newest timestamp (the key's bound from earlier runs)."""
    from pyspark.sql import functions as F

    if meta is None or meta["instances_version"] is None:
        return None
    keys = events.select("key").where(F.col("key").isNotNull()).distinct()
    return (read_table(spark, conf.tables()["instances"], version=int(meta["instances_version"]))
            .join(keys, "key", "left_semi")
            .select("key", F.lit(STATE).alias("kind"), F.col("sub").alias("i_sub"),
                    F.col("instance").alias("i_instance"), F.col("state").alias("i_state"),
                    F.col("last_ts").alias("i_last_ts")))


def _with_bounds(work: "DataFrame") -> "DataFrame":
    """Every complete event row with its lateness bound ``e_bound`` (NULL: nothing before it).

    The bound is the newest timestamp of the row's key in earlier source commits of this run,
    or in earlier runs (its persisted states' ``i_last_ts``): the rule of :func:`_late_mask`,
    as one window per key ordered by commit (state rows first) and framed to the commits
    before the row's. Each row then knows whether it is late without the others, so a key's
    events can be run in chunks.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    earlier = (Window.partitionBy("key").orderBy(F.coalesce(F.col("e_commit"), F.lit(-1)))
               .rangeBetween(Window.unboundedPreceding, -1))
    complete = (F.col("kind") == EVENT) & F.col("key").isNotNull() & F.col("e_ts").isNotNull()
    newest = F.when(F.col("kind") == STATE, F.col("i_last_ts")).when(complete, F.col("e_ts"))
    return work.withColumn("e_bound", F.when(complete, F.max(newest).over(earlier)))


# ---- what the per-bucket function runs with (jobs/state/predict_bucket.py) --------------------

def _spec(conf: PredictionConf, attributes: tuple[str, ...]) -> dict[str, Any]:
    """What :func:`process_bucket` needs to know of the set (plain values: shipped to workers);
    ``attributes`` are the columns ``a_0, a_1, ...`` of the work rows (:func:`_source_rows`)."""
    return {"name": conf.name, "subscriptions": list(conf.subscriptions),
            "attributes": list(attributes), "has_type": conf.type_col is not None}


def make_partition_function(conf: PredictionConf, attributes: tuple[str, ...],
                            chunk_rows: int | None = None
                            ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The function ``mapInArrow`` runs on a partition of work rows sorted by key, kind
    (descending) and time: chunks of ``chunk_rows`` rows (:mod:`jobs.state.predict_chunks`)."""
    spec = _spec(conf, attributes)
    rows = CHUNK_ROWS if chunk_rows is None else chunk_rows

    def per_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        streamed = StreamedPredict(lambda table: process_bucket(table, spec), counts_table,
                                   (EVENT, STATE), (OUT_INSTANCE, OUT_STATS), rows)
        yield from streamed.run(batches)

    return per_partition


# ---- the job ----------------------------------------------------------------------------------

def _stored_models(spark: "SparkSession", conf: PredictionConf, meta: dict[str, Any] | None,
                   compiled: dict[str, Any]) -> dict[str, Any]:
    """The persisted model of every subscription (as of the meta's version), checked."""
    from cep.predict import Model, ModelFormatError

    out = {sub: empty_model(c) for sub, c in compiled.items()}
    if meta is None or meta["models_version"] is None:
        return out
    table = conf.tables()["models"]
    for row in read_table(spark, table, version=int(meta["models_version"])).collect():
        if row["sub"] not in compiled:
            raise PredictStateError(f"{table.name} has a model of {row['sub']!r}, which is not "
                                    "registered")
        try:
            out[row["sub"]] = Model.from_bytes(row["model"], subscription=compiled[row["sub"]].text)
        except ModelFormatError as err:
            raise ModelFormatError(f"{table.name} version {meta['models_version']}, subscription "
                                   f"{row['sub']}: {err.message}") from None
    return out


def _known_states(compiled: dict[str, Any], models: dict[str, Any],
                  meta: dict[str, Any] | None) -> dict[str, set[tuple[int, int]]]:
    """The machine states ``(leaf, mask)`` per subscription that ``<name>_states`` holds.

    ``<name>_states`` holds the states of every model written so far, and counts only grow, so
    they are the states of the persisted model: no need to read the table.
    """
    if meta is None:
        return {sub: set() for sub in compiled}
    return {sub: {(int(r[1]), int(r[2])) for r in state_rows(sub, compiled[sub], models[sub])}
            for sub in compiled}


def _work_rows(spark: "SparkSession", conf: PredictionConf, meta: dict[str, Any] | None,
               events: "DataFrame") -> "DataFrame":
    """The new events and the persisted instance rows of their keys, as one frame of work rows
    (on a first run the instance columns are there, NULL)."""
    from pyspark.sql import functions as F

    stored = _state_rows(spark, conf, meta, events)
    if stored is not None:
        return events.unionByName(stored, allowMissingColumns=True)
    return (events.withColumn("i_sub", F.lit(None).cast("string"))
            .withColumn("i_instance", F.lit(None).cast("string"))
            .withColumn("i_state", F.lit(None).cast("binary"))
            .withColumn("i_last_ts", F.lit(None).cast("bigint")))


def _run_on_driver(spark: "SparkSession", conf: PredictionConf, work: "DataFrame",
                   attributes: tuple[str, ...]) -> tuple["DataFrame", list[dict[str, Any]]]:
    """A small run's output rows, from one :func:`process_bucket` call on the driver.

    Returns:
        The output rows as a frame for the writes, and its model and counts rows.
    """
    result = process_bucket(work.toArrow(), _spec(conf, attributes))
    kinds = pa.array([OUT_MODEL, OUT_STATS], pa.int32())
    small = result.filter(pc.is_in(result.column("out"), value_set=kinds)).to_pylist()
    return spark.createDataFrame(result, spark_schema(OUT_COLUMNS)), small


def _counts(small: list[dict[str, Any]]) -> dict[str, int]:
    """The run's counts (:data:`~jobs.state.predict_chunks.STAT_COLUMNS`): every counts row
    added up."""
    return {c: sum(int(r[c]) for r in small if r["out"] == OUT_STATS) for c in STAT_COLUMNS}


def _merged_models(small: list[dict[str, Any]], compiled: dict[str, Any],
                   models: dict[str, Any]) -> dict[str, Any]:
    """The persisted model of every subscription plus every bucket's counts (in any order:
    counts add up)."""
    from cep.predict import Model

    trained: dict[str, list] = {sub: [] for sub in compiled}
    for r in small:
        if r["out"] == OUT_MODEL:
            trained[r["sub"]].append(Model.from_bytes(r["model"], subscription=compiled[r["sub"]].text))
    merged = dict(models)
    for sub, parts in trained.items():
        for part in parts:
            merged[sub] = merged[sub].merge(part)
    return merged


def _outcome(conf: PredictionConf, meta: dict[str, Any] | None, read: str,
             counts: dict[str, int], models: dict[str, Any], new_states: list) -> Outcome:
    """The meta row the framework writes last, and the fields of the run's result."""
    late, incomplete = counts["n_late"], counts["n_incomplete"]
    return Outcome(
        meta={"prediction": conf.name, "source": conf.source.name, "key_col": conf.key_col,
              "ts_col": conf.ts_col, "id_col": conf.id_col, "type_col": conf.type_col,
              "events_total": (int(meta["events_total"]) if meta else 0) + counts["n_run"],
              "late_total": (int(meta["late_total"]) if meta else 0) + late + incomplete},
        result={"read": read, "events_read": counts["n_read"], "events_run": counts["n_run"],
                "late": late, "incomplete": incomplete, "keys": counts["n_keys"],
                "instance_rows": counts["n_instances"], "state_rows": len(new_states),
                "model_events": {sub: m.events for sub, m in models.items()}})


class PredictJob(IncrementalJob):
    """The prediction set's own part of the protocol: its tables, its settings check, its step.

    Args:
        conf: The registered prediction set.
        local_rows: Run on the driver when the run reads at most this many source rows, else in
            Spark (:data:`LOCAL_ROWS`; the results are the same).
        chunk_rows: Work rows a Spark task runs at once (None:
            ``jobs.state.predict_chunks.CHUNK_ROWS``; tests lower it to cut keys often).
    """

    kind = "predict"
    title = "prediction set"
    state_word = "state"
    codes = CODES
    crash_points = ("instances-files", "instances", "models", "states", "late")
    table_columns = COLUMNS
    result_type = PredictRunResult
    state_error = PredictStateError

    conf: PredictionConf

    def __init__(self, conf: PredictionConf, local_rows: int = LOCAL_ROWS,
                 chunk_rows: int | None = None) -> None:
        super().__init__(conf)
        self.local_rows = local_rows
        self.chunk_rows = chunk_rows

    def check_settings(self, spark: "SparkSession", meta: dict[str, Any]) -> None:
        """Raise SettingsChangedError (CEP-PRED-042) when the registration contradicts the
        meta table or ``<name>_subscriptions``."""
        _check_settings(spark, self.conf, meta)

    def _worker_error(self, exc: Exception) -> Exception:
        """A typed error raised in a Python worker, rebuilt on the driver from Spark's message."""
        from cep.predict import ModelFormatError, PredictEventsError, PredictLimitError

        return self.worker_error(exc, {
            ModelFormatError.code: ModelFormatError, PredictEventsError.code: PredictEventsError,
            PredictLimitError.code: PredictLimitError, PredictStateError.code: PredictStateError})

    def process(self, run: Run) -> Outcome:
        """Run the new events through every subscription; write instances, models, states,
        late (the subscriptions on a first run)."""
        conf, spark, meta = self.conf, run.spark, run.meta
        compiled = conf.compiled()
        run.ensure_tables()
        # The persisted models and states first: a corrupt model fails the run before any work.
        models = _stored_models(spark, conf, meta, compiled)
        known = _known_states(compiled, models, meta)
        events, read, attributes, n_rows = _source_rows(run, conf)
        local = n_rows <= self.local_rows
        where = "on the driver" if local else "in Spark (mapInArrow, chunked)"
        run.say(f"{conf.name}: reading {conf.source.name} versions {run.first}..{run.target} "
                f"({read}): {n_rows:,} rows, run {where}; {len(compiled)} subscription(s): "
                f"{', '.join(compiled)}")
        work = _work_rows(spark, conf, meta, events)
        small: list[dict[str, Any]] | None = None
        if local:
            # Few rows: one call of the same function on the driver is faster than a shuffle
            # into Python workers (docs/predict-jobs.md, "Where the events are run").
            out, small = _run_on_driver(spark, conf, work, attributes)
        else:
            out = self._run_in_spark(spark, work, attributes)
        try:
            if small is None:  # collected inside the try: a failed stage still unpersists
                small = self._collected(out)
            counts = _counts(small)
            run.say(f"{conf.name}: {counts['n_read']:,} events read: {counts['n_run']:,} run "
                    f"in {counts['n_keys']:,} keys, {counts['n_late']:,} late, "
                    f"{counts['n_incomplete']:,} incomplete; {counts['n_instances']:,} instance "
                    f"rows ({run.elapsed():.1f}s)")
            models = _merged_models(small, compiled, models)
            new_states = [row for sub, comp in compiled.items()
                          for row in state_rows(sub, comp, models[sub], known[sub])]
            self._write(run, out, counts, models, new_states)
        finally:
            out.unpersist()
        return _outcome(conf, meta, read, counts, models, new_states)

    def _run_in_spark(self, spark: "SparkSession", work: "DataFrame",
                      attributes: tuple[str, ...]) -> "DataFrame":
        """A large run's output rows, computed in Spark and persisted (the caller unpersists).

        One shuffle by key (the window of :func:`_with_bounds` reuses it), then each task
        streams its keys in time order through chunks (jobs/state/predict_chunks.py).
        """
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        parts = int(spark.conf.get("spark.sql.shuffle.partitions"))
        return (_with_bounds(work.repartition(parts, "key"))
                .sortWithinPartitions("key", F.desc("kind"), F.asc_nulls_last("e_ts"))
                .mapInArrow(make_partition_function(self.conf, attributes, self.chunk_rows),
                            spark_schema(OUT_COLUMNS))
                .persist(StorageLevel.MEMORY_AND_DISK))

    def _collected(self, out: "DataFrame") -> list[dict[str, Any]]:
        """The model and counts rows of a Spark run, on the driver; a worker's typed error is
        raised as itself."""
        from pyspark.sql import functions as F

        try:
            return [r.asDict() for r in out.where(F.col("out").isin(OUT_MODEL, OUT_STATS))
                    .select("out", "sub", "model", *STAT_COLUMNS).collect()]
        except Exception as exc:
            raise self._worker_error(exc) from None

    def _write(self, run: Run, out: "DataFrame", counts: dict[str, int],
               models: dict[str, Any], new_states: list) -> None:
        """Write the run's tables in the protocol's order, each followed by its commit point.

        ``<name>_subscriptions`` (first run only), ``<name>_instances``, ``<name>_models``,
        ``<name>_states``, ``<name>_late``; a table with nothing to write is not written, but
        its commit point is passed all the same (the framework writes ``<name>_meta`` last).
        """
        from pyspark.sql import functions as F

        conf, spark = self.conf, run.spark
        if run.meta is None:
            run.merge("subscriptions", spark.createDataFrame(
                subscription_rows(conf), spark_schema(COLUMNS["subscriptions"])),
                      MERGE_KEYS["subscriptions"])
        if counts["n_instances"]:
            names = [name for name, _ in COLUMNS["instances"]]
            run.merge("instances", out.where(F.col("out") == OUT_INSTANCE).select(*names),
                      MERGE_KEYS["instances"])
        run.say(f"{conf.name}: instances merged ({run.elapsed():.1f}s)")
        commit_point("instances")
        if counts["n_run"]:
            model_rows = [(sub, m.to_bytes(), m.events,
                           sum(leaf.counts.total for leaf in m.leaves), run.target)
                          for sub, m in models.items()]
            run.merge("models", spark.createDataFrame(model_rows,
                                                      spark_schema(COLUMNS["models"])),
                      MERGE_KEYS["models"])
        commit_point("models")
        if new_states:
            run.merge("states", spark.createDataFrame(new_states,
                                                      spark_schema(COLUMNS["states"])),
                      MERGE_KEYS["states"], update=False)
        commit_point("states")
        if counts["n_late"] + counts["n_incomplete"]:
            run.append("late", out.where(F.col("out") == OUT_LATE).select(
                F.lit(run.run_id).alias("run_id"), F.col("l_version").alias("source_version"),
                "key", F.col("l_ts").alias("ts"), F.col("l_id").alias("id"),
                F.col("l_reason").alias("reason"), F.col("l_last_ts").alias("last_ts")))
        commit_point("late")


def run_predict(spark: "SparkSession", settings: Settings, conf: PredictionConf | str, *,
                until_version: int | None = None, quiet: bool = False,
                crash_after: str | None = None, local_rows: int = LOCAL_ROWS,
                chunk_rows: int | None = None) -> PredictRunResult:
    """Bring the set's state up to the source's current version (or ``until_version``).

    Args:
        spark: a session from :func:`jobs.session.build_session`.
        settings: resolved settings.
        conf: the prediction set (or its name in ``conf/predictions.toml``).
        until_version: process the source only up to this version.
        quiet: no progress output.
        crash_after: test hook (default ``$CEP_PREDICT_CRASH_AFTER``), one of
            :attr:`PredictJob.crash_points`: raise :class:`~jobs.framework.errors.InjectedCrash`
            there.
        local_rows: run on the driver when the run reads at most this many source rows, else
            in Spark (:data:`LOCAL_ROWS`; the results are the same).
        chunk_rows: work rows a Spark task runs at once (None:
            ``jobs.state.predict_chunks.CHUNK_ROWS``).

    Returns:
        The last run's :class:`PredictRunResult` (``written`` False when nothing was new).

    Raises:
        SourceVersionError, SourceNotAppendOnlyError, SettingsChangedError, JobError: see
            :mod:`jobs.framework.errors` (codes CEP-PRED-040..045).
        ModelFormatError: a persisted model or instance state is corrupt (``CEP-PRED-012``).
    """
    job = PredictJob(load_prediction(settings, conf) if isinstance(conf, str) else conf,
                     local_rows, chunk_rows)
    return job.run(spark, until_version=until_version, quiet=quiet,  # type: ignore[return-value]
                   crash_after=crash_after)
