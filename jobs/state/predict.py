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
   the version the meta records) in :func:`process_bucket`: it sets late and incomplete rows
   aside, orders the rest per key by ``(ts, commit, id, attributes)`` and calls
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

import functools
from dataclasses import dataclass, field
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_tables.catalog import read_table
from delta_tables.predict_state import (COLUMNS, MERGE_KEYS, PredictionConf, PredictStateError,
                                        empty_model, instance_text, instance_values,
                                        load_prediction, state_rows, subscription_rows)
from delta_tables.settings import Settings
from delta_tables.sketch_state import spark_schema
from jobs.framework.errors import ErrorCodes, JobError, SettingsChangedError
from jobs.framework.faults import commit_point
from jobs.framework.incremental import IncrementalJob, Outcome, Run, RunResult
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
LOOKAHEAD = 1
LOCAL_ROWS = 1_000_000
"""A run that reads at most this many new source rows runs them on the driver (one call of
:func:`process_bucket`), a larger one in Spark (``mapInArrow`` in chunks). Measured on 2 cores
(docs/predict-jobs.md): 10^6 synthetic events in 1,000 keys take ~2.5 s on the driver
(collect included) against ~14 s through Spark's Python workers; above the threshold the
driver's memory, not speed, is the limit."""
"""The job stores states and counts, not probabilities; the label comes with a 1-step answer."""

EVENT, STATE = 0, 1
OUT_INSTANCE, OUT_MODEL, OUT_LATE, OUT_STATS = 0, 1, 2, 3
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


# ---- the per-bucket function (runs in the Python workers) --------------------------------------

OUT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("out", "INT"), ("sub", "STRING"), ("key", "STRING"), ("instance", "STRING"),
    ("state", "BINARY"), ("label", "STRING"), ("progress", "INT"), ("last_ts", "BIGINT"),
    ("events", "BIGINT"), ("matches", "BIGINT"), ("model", "BINARY"), ("l_ts", "BIGINT"),
    ("l_id", "BIGINT"), ("l_version", "BIGINT"), ("l_reason", "STRING"), ("l_last_ts", "BIGINT"),
    ("n_read", "BIGINT"), ("n_run", "BIGINT"), ("n_keys", "BIGINT"), ("n_instances", "BIGINT"),
    ("n_late", "BIGINT"), ("n_incomplete", "BIGINT"))
"""Rows the per-bucket function emits: ``out`` 0 = an instance row, 1 = a bucket's trained model
of one subscription, 2 = a late or incomplete source row, 3 = the bucket's counts (source rows
read, run, keys run, instance rows, late and incomplete rows)."""
_ARROW = {"STRING": pa.string(), "BIGINT": pa.int64(), "INT": pa.int32(), "BINARY": pa.binary()}
OUT_SCHEMA = pa.schema([pa.field(name, _ARROW[kind]) for name, kind in OUT_COLUMNS])


def _padded(kind: int, n: int, columns: dict[str, Any]) -> pa.Table:
    arrays = []
    for fld in OUT_SCHEMA:
        if fld.name == "out":
            arrays.append(pa.array(np.full(n, kind, dtype=np.int32), pa.int32()))
        elif fld.name in columns:
            arrays.append(pa.array(columns[fld.name], fld.type))
        else:
            arrays.append(pa.nulls(n, fld.type))
    return pa.Table.from_arrays(arrays, schema=OUT_SCHEMA)


@functools.lru_cache(maxsize=256)
def _compiled(text: str) -> Any:
    from cep.predict import compile_subscription

    return compile_subscription(text)


def _numpy(column: pa.ChunkedArray) -> np.ndarray:
    """An attribute column for :class:`cep.predict.Events`: integers and booleans with NULLs
    as objects (so instance values stay integers), dates as timestamps, the rest as numpy."""
    kind = column.type
    if pa.types.is_date(kind):
        column = column.cast(pa.timestamp("us"))
    if (pa.types.is_integer(kind) or pa.types.is_boolean(kind)) and column.null_count:
        out = np.empty(len(column), dtype=object)
        out[:] = column.to_pylist()
        return out
    values = column.to_numpy(zero_copy_only=False)
    return values.astype(object) if values.dtype.kind in "USO" else values


def _late_mask(key: np.ndarray, commit: np.ndarray, ts: np.ndarray,
               known: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """Rows sorted by ``(key, commit, ts)``: which are late, and each row's bound.

    The bound of a row is the newest timestamp of its key in earlier commits (this batch's, and
    ``known`` from earlier runs); a row is late when its timestamp is before it. A late row is
    not after the bound, so counting it in the running maximum changes nothing.
    """
    n = len(ts)
    if n == 0:
        return np.zeros(0, dtype=bool), np.zeros(0, dtype=np.int64)
    new_key = np.r_[True, key[1:] != key[:-1]]
    new_seg = new_key | np.r_[True, commit[1:] != commit[:-1]]
    seg = np.cumsum(new_seg) - 1
    seg_last = np.r_[np.flatnonzero(new_seg)[1:] - 1, n - 1]
    seg_key = (np.cumsum(new_key) - 1)[new_seg]
    seg_max = ts[seg_last]
    uniq, rank = np.unique(seg_max, return_inverse=True)
    base = seg_key.astype(np.int64) * (len(uniq) + 1)
    running = np.maximum.accumulate(base + rank.reshape(-1) + 1)
    before = np.r_[0, running[:-1]]
    has = before > base
    bound = np.where(has, uniq[np.clip(before - base - 1, 0, len(uniq) - 1)], 0).astype(np.int64)
    first = np.flatnonzero(new_seg)
    for s in range(len(first)):  # the bound from earlier runs (keys with persisted instances)
        prior = known.get(key[first[s]])
        if prior is not None and (not has[s] or prior > bound[s]):
            bound[s], has[s] = prior, True
    late = has[seg] & (ts < bound[seg])
    return late, np.where(has[seg], bound[seg], -1)


def process_bucket(table: pa.Table, spec: dict[str, Any]) -> pa.Table:
    """Run every subscription over the new events of the bucket's keys (module docstring).

    ``table`` holds ``kind`` 0 event rows (``key, e_ts, e_id, e_commit, e_type, a_i``) and
    ``kind`` 1 persisted instance rows (``key, i_sub, i_instance, i_state``) of any number of
    keys; ``spec`` names the subscriptions, attributes and optional columns. With an
    ``e_bound`` column (the Spark path: :func:`_with_bounds`) a row is late when its timestamp
    is below its bound; without it the rule is applied here over the table's own commits
    (:func:`_late_mask`, the driver's path). Returns :data:`OUT_SCHEMA` rows.

    Raises:
        ModelFormatError: a persisted instance state blob is corrupt (``CEP-PRED-012``, naming
            the subscription, key and instance).
        PredictStateError: an ``instance`` value that is not a JSON array.
    """
    from cep.predict import Events, ModelFormatError, load_state, predict

    if not table.num_rows:
        return OUT_SCHEMA.empty_table()
    kind = table.column("kind")
    events = table.filter(pc.equal(kind, EVENT))
    stored = table.filter(pc.equal(kind, STATE))
    parts: list[pa.Table] = []
    n_read = events.num_rows

    # Persisted states, and the newest timestamp each key has reached in earlier runs.
    starts: dict[str, dict[tuple, Any]] = {}
    known: dict[str, int] = {}
    for sub, key, inst, blob in zip(*(stored.column(c).to_pylist()
                                      for c in ("i_sub", "key", "i_instance", "i_state"))):
        try:
            state = load_state(blob)
        except ModelFormatError as err:
            raise ModelFormatError(f"prediction set {spec['name']}, subscription {sub}, key "
                                   f"{key!r}, instance {inst}: {err.message}") from None
        starts.setdefault(sub, {})[(key, instance_values(inst))] = state
        if state.last_ts is not None and (key not in known or state.last_ts > known[key]):
            known[key] = int(state.last_ts)

    # Incomplete rows, then late rows (decided per source commit).
    valid = pc.and_(pc.is_valid(events.column("key")), pc.is_valid(events.column("e_ts")))
    incomplete = events.filter(pc.invert(valid))
    if incomplete.num_rows:
        parts.append(_padded(OUT_LATE, incomplete.num_rows, {
            "key": incomplete.column("key"), "l_ts": incomplete.column("e_ts"),
            "l_id": incomplete.column("e_id"), "l_version": incomplete.column("e_commit"),
            "l_reason": ["incomplete"] * incomplete.num_rows}))
    events = events.filter(valid)
    if "e_bound" in events.column_names:
        # Spark marked every row with its bound (_bounds): the rule needs no other row here, so
        # a key's events may arrive in chunks (jobs/state/predict_chunks.py).
        has = pc.is_valid(events.column("e_bound")).to_numpy(zero_copy_only=False)
        bound = pc.fill_null(events.column("e_bound"), -1).to_numpy(zero_copy_only=False)
        late = has & (events.column("e_ts").to_numpy() < bound)
    else:
        events = events.take(pc.sort_indices(events, sort_keys=[
            ("key", "ascending"), ("e_commit", "ascending"), ("e_ts", "ascending")]))
        key = events.column("key").to_numpy(zero_copy_only=False).astype(object)
        late, bound = _late_mask(key, events.column("e_commit").to_numpy(),
                                 events.column("e_ts").to_numpy(), known)
    if late.any():
        gone = events.filter(pa.array(late))
        parts.append(_padded(OUT_LATE, gone.num_rows, {
            "key": gone.column("key"), "l_ts": gone.column("e_ts"), "l_id": gone.column("e_id"),
            "l_version": gone.column("e_commit"), "l_reason": ["late"] * gone.num_rows,
            "l_last_ts": bound[late]}))
        events = events.filter(pa.array(~late))
    n_late = int(late.sum())

    # The events run, per key in (ts, commit, id, attributes) order.
    attrs = spec["attributes"]
    order = [("key", "ascending"), ("e_ts", "ascending"), ("e_commit", "ascending"),
             ("e_id", "ascending"), ("e_type", "ascending")]
    order += [(f"a_{i}", "ascending") for i in range(len(attrs))]
    events = events.take(pc.sort_indices(events, sort_keys=[(k, d, "at_end") for k, d in order]))
    n_run = events.num_rows
    keys = events.column("key").to_numpy(zero_copy_only=False).astype(object)
    n_keys = int(len(np.unique(keys))) if n_run else 0
    n_instances = 0
    if n_run:
        ev = Events.from_columns(
            ts=events.column("e_ts").to_numpy(), keys=keys,
            types=events.column("e_type").to_numpy(zero_copy_only=False).astype(object)
            if spec["has_type"] else None,
            attrs={a: _numpy(events.column(f"a_{i}")) for i, a in enumerate(attrs)})
        for sub, text in spec["subscriptions"]:
            result = predict(_compiled(text), ev, lookahead=LOOKAHEAD, start=starts.get(sub))
            parts.append(_instance_rows(sub, result))
            n_instances += parts[-1].num_rows
            parts.append(_padded(OUT_MODEL, 1, {"sub": [sub],
                                                "model": [result.trained.to_bytes()]}))
    parts.append(_padded(OUT_STATS, 1, {
        "n_read": [n_read], "n_run": [n_run], "n_keys": [n_keys], "n_instances": [n_instances],
        "n_late": [n_late], "n_incomplete": [incomplete.num_rows]}))
    return pa.concat_tables(parts)


def _instance_rows(sub: str, result: Any) -> pa.Table:
    """The instance rows of one subscription's :class:`~cep.predict.Prediction`.

    ``result.rows`` (``output='keys'``, threshold 0) has one row per instance in the order the
    states were built; the key and instance of each row are checked against the state's.
    """
    rows = result.rows
    states = list(result.states.items())
    if len(states) != len(rows["key"]):
        raise PredictStateError(f"subscription {sub}: {len(states)} instance states but "
                                f"{len(rows['key'])} instance rows")
    out: dict[str, list] = {name: [] for name in (
        "sub", "key", "instance", "state", "label", "progress", "last_ts", "events", "matches")}
    for i, ((key, values), state) in enumerate(states):
        readable = (None if not values
                    else ", ".join("NULL" if v is None else str(v) for v in values))
        if rows["key"][i] != key or rows["instance"][i] != readable:
            raise PredictStateError(f"subscription {sub}: instance rows and states are not in the "
                                    f"same order at {key!r} / {rows['key'][i]!r}")
        out["sub"].append(sub)
        out["key"].append(str(key))
        out["instance"].append(instance_text(values))
        out["state"].append(state.to_bytes())
        out["label"].append(rows["state"][i])
        out["progress"].append(int(rows["progress"][i]))
        out["last_ts"].append(None if state.last_ts is None else int(state.last_ts))
        out["events"].append(int(state.events))
        out["matches"].append(int(state.matches))
    return _padded(OUT_INSTANCE, len(states), out)


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

    def counts_row(counts: dict[str, int]) -> pa.Table:
        return _padded(OUT_STATS, 1, {name: [value] for name, value in counts.items()})

    def per_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        streamed = StreamedPredict(lambda table: process_bucket(table, spec), counts_row,
                                   (EVENT, STATE), (OUT_INSTANCE, OUT_STATS), rows)
        yield from streamed.run(batches)

    return per_partition


# ---- the job ----------------------------------------------------------------------------------

def _stored_models(spark: "SparkSession", conf: PredictionConf, meta: dict[str, Any] | None,
                   compiled: dict[str, Any]) -> dict[str, Any]:
    """The persisted model of every subscription (as of the meta's version), checked."""
    from cep.predict import ModelFormatError, load_model

    out = {sub: empty_model(c) for sub, c in compiled.items()}
    if meta is None or meta["models_version"] is None:
        return out
    table = conf.tables()["models"]
    for row in read_table(spark, table, version=int(meta["models_version"])).collect():
        if row["sub"] not in compiled:
            raise PredictStateError(f"{table.name} has a model of {row['sub']!r}, which is not "
                                    "registered")
        try:
            out[row["sub"]] = load_model(row["model"], subscription=compiled[row["sub"]].text)
        except ModelFormatError as err:
            raise ModelFormatError(f"{table.name} version {meta['models_version']}, subscription "
                                   f"{row['sub']}: {err.message}") from None
    return out


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
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        conf, spark, meta, local_rows = self.conf, run.spark, run.meta, self.local_rows
        compiled = conf.compiled()
        run.ensure_tables()
        # The persisted models and states first: a corrupt model fails the run before any work.
        # <name>_states holds the states of every model written so far; counts only grow, so
        # that is the states of the persisted model (no need to read the table).
        models = _stored_models(spark, conf, meta, compiled)
        known = {sub: {(int(r[1]), int(r[2])) for r in state_rows(sub, compiled[sub], models[sub])}
                 for sub in compiled} if meta is not None else {sub: set() for sub in compiled}
        events, read, attributes, n_rows = _source_rows(run, conf)
        where = "on the driver" if n_rows <= local_rows else "in Spark (mapInArrow, chunked)"
        run.say(f"{conf.name}: reading {conf.source.name} versions {run.first}..{run.target} "
                f"({read}): {n_rows:,} rows, run {where}; {len(compiled)} subscription(s): "
                f"{', '.join(compiled)}")
        work = events
        stored = _state_rows(spark, conf, meta, events)
        if stored is not None:
            work = work.unionByName(stored, allowMissingColumns=True)
        else:
            work = (work.withColumn("i_sub", F.lit(None).cast("string"))
                    .withColumn("i_instance", F.lit(None).cast("string"))
                    .withColumn("i_state", F.lit(None).cast("binary"))
                    .withColumn("i_last_ts", F.lit(None).cast("bigint")))
        if n_rows <= local_rows:
            # Few rows: one call of the same function on the driver is faster than a shuffle
            # into Python workers (docs/predict-jobs.md, "Where the events are run").
            result = process_bucket(work.toArrow(), _spec(conf, attributes))
            kinds = pa.array([OUT_MODEL, OUT_STATS], pa.int32())
            small = result.filter(pc.is_in(result.column("out"), value_set=kinds)).to_pylist()
            out = spark.createDataFrame(result, spark_schema(OUT_COLUMNS))
        else:
            # One shuffle by key (the window reuses it), then each task streams its keys in
            # time order through chunks (jobs/state/predict_chunks.py).
            parts = int(spark.conf.get("spark.sql.shuffle.partitions"))
            out = (_with_bounds(work.repartition(parts, "key"))
                   .sortWithinPartitions("key", F.desc("kind"), F.asc_nulls_last("e_ts"))
                   .mapInArrow(make_partition_function(conf, attributes, self.chunk_rows),
                               spark_schema(OUT_COLUMNS))
                   .persist(StorageLevel.MEMORY_AND_DISK))
        try:
            try:
                if n_rows > local_rows:
                    small = [r.asDict() for r in out.where(F.col("out").isin(OUT_MODEL, OUT_STATS))
                             .select("out", "sub", "model", *STAT_COLUMNS).collect()]
            except Exception as exc:
                raise self._worker_error(exc) from None
            stats = {c: sum(int(r[c]) for r in small if r["out"] == OUT_STATS)
                     for c in STAT_COLUMNS}
            n_read, n_run, n_keys = stats["n_read"], stats["n_run"], stats["n_keys"]
            instance_rows = stats["n_instances"]
            late, incomplete = stats["n_late"], stats["n_incomplete"]
            run.say(f"{conf.name}: {n_read:,} events read: {n_run:,} run in {n_keys:,} keys, "
                    f"{late:,} late, {incomplete:,} incomplete; {instance_rows:,} instance rows "
                    f"({run.elapsed():.1f}s)")

            # Models: the persisted ones plus every bucket's counts (order does not matter).
            from cep.predict import load_model

            trained: dict[str, list] = {sub: [] for sub in compiled}
            for r in small:
                if r["out"] == OUT_MODEL:
                    trained[r["sub"]].append(load_model(r["model"],
                                                        subscription=compiled[r["sub"]].text))
            for sub, parts in trained.items():
                for part in parts:
                    models[sub] = models[sub].merge(part)
            new_states = [row for sub, c in compiled.items()
                          for row in state_rows(sub, c, models[sub], known[sub])]

            if meta is None:
                run.merge("subscriptions", spark.createDataFrame(
                    subscription_rows(conf), spark_schema(COLUMNS["subscriptions"])),
                          MERGE_KEYS["subscriptions"])
            if instance_rows:
                names = [name for name, _ in COLUMNS["instances"]]
                run.merge("instances", out.where(F.col("out") == OUT_INSTANCE).select(*names),
                          MERGE_KEYS["instances"])
            run.say(f"{conf.name}: instances merged ({run.elapsed():.1f}s)")
            commit_point("instances")
            if n_run:
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
            if late + incomplete:
                run.append("late", out.where(F.col("out") == OUT_LATE).select(
                    F.lit(run.run_id).alias("run_id"), F.col("l_version").alias("source_version"),
                    "key", F.col("l_ts").alias("ts"), F.col("l_id").alias("id"),
                    F.col("l_reason").alias("reason"), F.col("l_last_ts").alias("last_ts")))
            commit_point("late")
        finally:
            out.unpersist()
        return Outcome(
            meta={"prediction": conf.name, "source": conf.source.name, "key_col": conf.key_col,
                  "ts_col": conf.ts_col, "id_col": conf.id_col, "type_col": conf.type_col,
                  "events_total": (int(meta["events_total"]) if meta else 0) + n_run,
                  "late_total": (int(meta["late_total"]) if meta else 0) + late + incomplete},
            result={"read": read, "events_read": n_read, "events_run": n_run, "late": late,
                    "incomplete": incomplete, "keys": n_keys, "instance_rows": instance_rows,
                    "state_rows": len(new_states),
                    "model_events": {sub: m.events for sub, m in models.items()}})


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
