"""Incremental prediction job: new source events through a set's subscriptions into Delta
(``python -m jobs predict --name NAME``).

One run of :func:`run_predict` for a registered prediction set (``conf/predictions.toml``,
:mod:`delta_tables.predict_state`; docs/predict-jobs.md):

1. Read ``<name>_meta``. If the source's version (or ``--until-version``) is not newer than the
   recorded ``source_version``, say that nothing is new and write nothing. A ``conf`` that no
   longer agrees with the meta table or ``<name>_subscriptions`` is
   :class:`PredictSettingsChangedError` (a changed set needs a new name).
2. Read only the new source rows: the change data feed from ``source_version + 1`` to the target
   (an update or delete there is :class:`SourceNotAppendOnlyError`). A first run reads the feed
   from version 0 when it holds inserts only (so every row keeps the commit it arrived in), else
   the snapshot at the target as one commit.
3. The new events meet the persisted instance states of their keys (``<name>_instances`` as of
   the version the meta records) in :func:`process_bucket`: it sets late and incomplete rows
   aside, orders the rest per key by ``(ts, commit, id, attributes)`` and calls
   :func:`cep.predict.predict` once per subscription over all its keys, starting every instance
   from its persisted :class:`~cep.predict.InstanceState`. Out come the new instance rows, the
   trained counts (one model blob per subscription) and the late rows. A run of at most
   :data:`LOCAL_ROWS` source rows makes one call on the driver; a larger one runs in Spark,
   ``groupBy(bucket).applyInArrow`` over hash buckets of keys (no event reaches the driver),
   one call per bucket. Both give the same state (counts add up; keys are independent).
4. On the driver: the bucket models are merged into the persisted model
   (:meth:`cep.predict.Model.merge`; counts add up, so the result is the model of one pass), and
   the machine states the merged model has seen that ``<name>_states`` lacks are listed.
5. Writes, in this order: ``<name>_subscriptions`` (first run), ``<name>_instances`` (MERGE on
   ``sub, key, instance``), ``<name>_models`` (MERGE on ``sub``), ``<name>_states`` (MERGE on
   ``sub, leaf, mask``), ``<name>_late`` (append) and ``<name>_meta`` (overwrite) LAST. A table
   with nothing to write is not written.

**Late events.** An event is late when its timestamp is before the newest timestamp of its key
in an *earlier source commit* (processed by this run or an earlier one). Late and incomplete
rows (NULL key or timestamp) are not run: they go to ``<name>_late`` with the run, the commit
they arrived in and the key's newest timestamp, and are counted in the meta table. Because the
rule looks at commits, not at runs, the state does not depend on how commits are grouped into
runs.

**Idempotency.** Every write carries ``txnAppId = cep-predict-<name>-<table>`` and ``txnVersion``
= the source version the run processes up to (never the clock), and records the run in its
commit's ``userMetadata`` (the writes are :mod:`jobs.txn`'s). Delta skips a write whose
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
import json
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cep.errors import CepError
from delta_tables.catalog import read_table
from delta_tables.predict_state import (COLUMNS, MERGE_KEYS, PredictionConf, PredictStateError,
                                        empty_model, instance_text, instance_values,
                                        load_prediction, state_rows, subscription_rows)
from delta_tables.settings import Settings, TableConf
from delta_tables.sketch_state import spark_schema
# The TXN_* conf names are defined in jobs.txn and re-exported here.
from jobs.txn import commit_records as _run_records
from jobs.txn import log_version as _version
from jobs.txn import (TXN_APP_CONF, TXN_VERSION_CONF, USER_METADATA_CONF,  # noqa: F401
                      crash_point, ensure_table, merge, read_meta_row, register_existing, save,
                      say, worker_error)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["PredictJobError", "SourceNotAppendOnlyError", "PredictSettingsChangedError",
           "SourceVersionError", "InjectedCrash", "PredictRunResult", "run_predict",
           "process_bucket", "read_meta", "CRASH_ENV", "CRASH_POINTS"]

CRASH_ENV = "CEP_PREDICT_CRASH_AFTER"
CRASH_POINTS = ("instances-files", "instances", "models", "states", "late")
"""Test hook points: ``instances-files`` writes the instance rows' data files into the
instances table's folder WITHOUT a Delta commit (what a process killed inside the MERGE leaves)
and stops; the others stop right after that table's commit (before the meta table)."""
METADATA_KEY = "cep-predict"
PROP_SET = "cep.predict.name"
PROP_TABLE = "cep.predict.table"
LOOKAHEAD = 1
LOCAL_ROWS = 1_000_000
"""A run that reads at most this many new source rows runs them on the driver (one call of
:func:`process_bucket`), a larger one in Spark (``groupBy(bucket).applyInArrow``). Measured on
2 cores (docs/predict-jobs.md): 10^6 synthetic events in 1,000 keys take ~2.5 s on the driver
(collect included) against ~14 s through ``applyInArrow``; above the threshold the driver's
memory, not speed, is the limit."""
"""The job stores states and counts, not probabilities; the label comes with a 1-step answer."""

EVENT, STATE = 0, 1
OUT_INSTANCE, OUT_MODEL, OUT_LATE, OUT_STATS = 0, 1, 2, 3
_INT_TYPES = ("tinyint", "smallint", "int", "bigint")


class PredictJobError(CepError):
    """The prediction job cannot run (base of the job's errors): a source column missing or of
    a type the job cannot order by."""

    code = "CEP-PRED-040"


class SourceNotAppendOnlyError(PredictJobError):
    """The change data feed holds an update or a delete: prediction sources are append-only.
    Drop the set's tables (or register a new name) after rewriting the source."""

    code = "CEP-PRED-041"


class PredictSettingsChangedError(PredictJobError):
    """``conf/predictions.toml`` no longer agrees with the meta or subscriptions table (source,
    columns, subscription names or texts); a changed set needs a new name."""

    code = "CEP-PRED-042"


class SourceVersionError(PredictJobError):
    """No source table, ``--until-version`` outside the source's versions, or a change data feed
    that cannot be read for the needed range (not enabled, or vacuumed)."""

    code = "CEP-PRED-043"


class InjectedCrash(PredictJobError):
    """Raised by the test hook (:data:`CRASH_ENV`, ``crash_after``)."""

    code = "CEP-PRED-045"


@dataclass(frozen=True)
class PredictRunResult:
    """What one run read and wrote.

    Attributes:
        prediction: the set's name.
        written: False when nothing was new (no table was written).
        run_id: ``<name>:<first source version read>-<last>``.
        source_from, source_version: the source versions read (inclusive).
        read: how the source was read (``change data feed``, ``commits from version 0`` or
            ``snapshot``).
        events_read: new source rows; ``events_run`` of them were run, ``late`` and
            ``incomplete`` set aside (``<name>_late``).
        keys: keys with events run.
        instance_rows, state_rows: rows merged into ``<name>_instances`` / ``<name>_states``.
        model_events: per subscription, the training events of its model after the run.
        versions: version of each state table after the run.
        resumed: True when the run finished an interrupted run first.
        seconds: wall time.
    """

    prediction: str
    written: bool
    run_id: str
    source_from: int | None
    source_version: int
    read: str = ""
    events_read: int = 0
    events_run: int = 0
    late: int = 0
    incomplete: int = 0
    keys: int = 0
    instance_rows: int = 0
    state_rows: int = 0
    model_events: dict[str, int] = field(default_factory=dict)
    versions: dict[str, int | None] = field(default_factory=dict)
    resumed: bool = False
    seconds: float = 0.0


# ---- meta and settings -------------------------------------------------------------------------

def read_meta(spark: "SparkSession", conf: PredictionConf) -> dict[str, Any] | None:
    """The meta row of ``conf`` as a dict, or None before the first complete run."""
    return read_meta_row(spark, conf.tables()["meta"], PredictStateError)


def _ensure_tables(spark: "SparkSession", conf: PredictionConf) -> None:
    for suffix, table in conf.tables().items():
        ensure_table(spark, table, COLUMNS[suffix], {PROP_SET: conf.name, PROP_TABLE: suffix})


def _check_settings(spark: "SparkSession", conf: PredictionConf, meta: dict[str, Any]) -> None:
    """Raise :class:`PredictSettingsChangedError` when the registration contradicts the state."""
    stored = {k: meta[k] for k in ("source", "key_col", "ts_col", "id_col", "type_col")}
    wanted = {"source": conf.source.name, "key_col": conf.key_col, "ts_col": conf.ts_col,
              "id_col": conf.id_col, "type_col": conf.type_col}
    if stored != wanted:
        raise PredictSettingsChangedError(f"prediction set {conf.name}: predictions.toml says "
                                          f"{wanted}, the meta table {stored}")
    version = meta["subscriptions_version"]
    rows = [] if version is None else read_table(
        spark, conf.tables()["subscriptions"], version=int(version)
    ).select("sub", "pattern").collect()
    have = {r["sub"]: r["pattern"] for r in rows}
    if have != dict(conf.subscriptions):
        raise PredictSettingsChangedError(
            f"prediction set {conf.name}: predictions.toml registers "
            f"{sorted(dict(conf.subscriptions).items())}, the state was built for "
            f"{sorted(have.items())}; register the changed subscriptions under a new set name")


def _interrupted_target(spark: "SparkSession", conf: PredictionConf,
                        meta: dict[str, Any] | None) -> int | None:
    """The source version of a run that wrote some state tables but not the meta table."""
    done = -1 if meta is None else int(meta["source_version"])
    found: set[int] = set()
    for suffix, table in conf.tables().items():
        if suffix == "meta":
            continue
        since = None if meta is None else meta[f"{suffix}_version"]
        for record in _run_records(table, since):
            version = int(record.get("source_version", -1))
            if record.get(METADATA_KEY) == conf.name and version > done:
                found.add(version)
    if len(found) > 1:
        raise PredictStateError(f"prediction set {conf.name}: state tables hold writes of several "
                                f"unfinished runs (source versions {sorted(found)})")
    return found.pop() if found else None


# ---- reading the source ------------------------------------------------------------------------

def _change_feed(spark: "SparkSession", conf: PredictionConf, first: int, target: int
                 ) -> tuple["DataFrame", int, tuple | None]:
    """The change data feed ``first..target``, its number of rows and its first non-insert
    change ``(type, version)`` (None when it holds inserts only); one scan."""
    from pyspark.sql import functions as F

    frame = (spark.read.format("delta").option("readChangeFeed", "true")
             .option("startingVersion", first).option("endingVersion", target)
             .load(str(conf.source.location)))
    counts = {r[0]: int(r[1]) for r in frame.groupBy("_change_type").count().collect()}
    bad = None
    if set(counts) - {"insert"}:
        row = (frame.where(F.col("_change_type") != "insert")
               .select("_change_type", "_commit_version").orderBy("_commit_version").first())
        bad = (row[0], int(row[1]))
    return frame, sum(counts.values()), bad


def _source_rows(spark: "SparkSession", conf: PredictionConf, done: int, target: int
                 ) -> tuple["DataFrame", str, tuple[str, ...], int]:
    """``key, kind, e_ts, e_id, e_commit, e_type, a_0..`` of the source rows after ``done`` up
    to ``target``, how they were read, the attribute of each ``a_i`` column (an attribute
    ``ts`` or, with a type column, ``type`` that is not a source column is not one: the events'
    timestamps and types stand for it), and the number of rows."""
    from pyspark.sql import functions as F

    frame, read = None, "change data feed"
    if done < 0:
        try:
            frame, rows, bad = _change_feed(spark, conf, 0, target)
            read = "commits from version 0"
        except Exception:  # no feed from version 0 (enabled later, vacuumed): the snapshot
            frame, bad = None, None
        if frame is None or bad:
            frame, read = read_table(spark, conf.source, version=target), "snapshot"
            rows = frame.count()
    else:
        try:
            frame, rows, bad = _change_feed(spark, conf, done + 1, target)
        except Exception as exc:  # AnalysisException / Py4J: CDF off, vacuumed, ...
            raise SourceVersionError(
                f"prediction set {conf.name}: cannot read the change data feed of "
                f"{conf.source.name} from version {done + 1} to {target} (is "
                f"delta.enableChangeDataFeed on?): {str(exc).splitlines()[0][:300]}") from None
        if bad:
            raise SourceNotAppendOnlyError(
                f"prediction set {conf.name}: source {conf.source.name} has a {bad[0]} change "
                f"at version {bad[1]}; prediction sources are append-only (rebuild the set)")
    have = {c.lower(): c for c in frame.columns if not c.startswith("_")}
    types = {c.lower(): t for c, t in frame.dtypes}
    wanted = [conf.key_col, conf.ts_col] + [c for c in (conf.id_col, conf.type_col) if c]
    attrs = [a for a in conf.attributes if a in have
             or not (a == "ts" or (a == "type" and conf.type_col))]
    missing = [c for c in wanted + attrs if c.lower() not in have]
    if missing:
        raise PredictJobError(f"prediction set {conf.name}: source {conf.source.name} has no "
                              f"column {missing}; it has {sorted(have.values())}")
    ts_name, ts_type = have[conf.ts_col.lower()], types[conf.ts_col.lower()]
    if ts_type.startswith("timestamp") or ts_type == "date":
        ts = F.unix_micros(F.col(ts_name).cast("timestamp"))
    elif ts_type in _INT_TYPES:
        ts = F.col(ts_name).cast("bigint")
    else:
        raise PredictJobError(f"prediction set {conf.name}: ts_col {conf.ts_col} is {ts_type}; "
                              "expected TIMESTAMP, DATE or an integer type")
    if conf.id_col:
        id_type = types[conf.id_col.lower()]
        if id_type not in _INT_TYPES:
            raise PredictJobError(f"prediction set {conf.name}: id_col {conf.id_col} is {id_type}; "
                                  "expected an integer type")
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
    """The persisted instance rows of the keys with new events (as of the meta's version)."""
    from pyspark.sql import functions as F

    if meta is None or meta["instances_version"] is None:
        return None
    keys = events.select("key").where(F.col("key").isNotNull()).distinct()
    return (read_table(spark, conf.tables()["instances"], version=int(meta["instances_version"]))
            .join(keys, "key", "left_semi")
            .select("key", F.lit(STATE).alias("kind"), F.col("sub").alias("i_sub"),
                    F.col("instance").alias("i_instance"), F.col("state").alias("i_state")))


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
STAT_COLUMNS = ("n_read", "n_run", "n_keys", "n_instances", "n_late", "n_incomplete")
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
    keys; ``spec`` names the subscriptions, attributes and optional columns. Returns
    :data:`OUT_SCHEMA` rows.

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


def make_bucket_function(conf: PredictionConf, attributes: tuple[str, ...]
                         ) -> Callable[[pa.Table], pa.Table]:
    """The function ``applyInArrow`` runs on the rows of one bucket of keys."""
    spec = _spec(conf, attributes)

    def per_bucket(table: pa.Table) -> pa.Table:
        return process_bucket(table, spec)

    return per_bucket


# ---- writes ------------------------------------------------------------------------------------

def _worker_error(exc: Exception) -> Exception:
    """A typed error raised in a Python worker, rebuilt on the driver from Spark's message
    (:func:`jobs.txn.worker_error`; another code becomes a :class:`PredictJobError`)."""
    from cep.predict import ModelFormatError, PredictEventsError, PredictLimitError

    return worker_error(exc, {
        ModelFormatError.code: ModelFormatError, PredictEventsError.code: PredictEventsError,
        PredictLimitError.code: PredictLimitError, PredictStateError.code: PredictStateError},
        PredictJobError)


def _merge(spark: "SparkSession", table: TableConf, source: "DataFrame", keys: list[str],
           app_id: str, version: int, metadata: str, *, update: bool = True) -> None:
    """MERGE ``source`` into ``table`` on ``keys`` as one idempotent write. Into a table still at
    version 0 (created empty by :func:`_ensure_tables`) the MERGE would insert every row: that
    is an append, which Delta does without the MERGE's join (measured 2-4 s less per table on
    a first run), with the same ``txnAppId`` / ``txnVersion``."""
    if _version(table) == 0:
        save(source, table, "append", app_id, version, metadata)
        return
    merge(spark, table, source, keys, app_id, version, metadata, update=update)


def _crash_point(where: str, crash_after: str | None) -> None:
    crash_point(where, crash_after, InjectedCrash, CRASH_ENV)


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


# ---- the run -----------------------------------------------------------------------------------

def run_predict(spark: "SparkSession", settings: Settings, conf: PredictionConf | str, *,
                until_version: int | None = None, quiet: bool = False,
                crash_after: str | None = None, local_rows: int = LOCAL_ROWS) -> PredictRunResult:
    """Bring the set's state up to the source's current version (or ``until_version``).

    Args:
        spark: a session from :func:`jobs.session.build_session`.
        settings: resolved settings.
        conf: the prediction set (or its name in ``conf/predictions.toml``).
        until_version: process the source only up to this version.
        quiet: no progress output.
        crash_after: test hook (default ``$CEP_PREDICT_CRASH_AFTER``), one of
            :data:`CRASH_POINTS`: raise :class:`InjectedCrash` there.
        local_rows: run on the driver when the run reads at most this many source rows, else
            in Spark (:data:`LOCAL_ROWS`; the results are the same).

    Returns:
        The last run's :class:`PredictRunResult` (``written`` False when nothing was new).

    Raises:
        SourceVersionError, SourceNotAppendOnlyError, PredictSettingsChangedError,
        PredictJobError: see the classes.
        ModelFormatError: a persisted model or instance state is corrupt (``CEP-PRED-012``).
    """
    started = time.monotonic()
    if isinstance(conf, str):
        conf = load_prediction(settings, conf)
    crash_after = crash_after if crash_after is not None else os.environ.get(CRASH_ENV) or None
    if crash_after is not None and crash_after not in CRASH_POINTS:
        raise PredictJobError(f"crash point {crash_after!r}: expected one of {CRASH_POINTS}")
    current = _version(conf.source)
    if current is None:
        raise SourceVersionError(f"prediction set {conf.name}: source table {conf.source.name} "
                                 f"does not exist at {conf.source.location}")
    target = current if until_version is None else int(until_version)
    if not 0 <= target <= current:
        raise SourceVersionError(f"prediction set {conf.name}: --until-version {until_version} is "
                                 f"outside the versions 0..{current} of {conf.source.name}")
    meta = read_meta(spark, conf)
    done = -1 if meta is None else int(meta["source_version"])
    if meta is not None:
        _check_settings(spark, conf, meta)
    if target <= done:
        say(quiet, f"{conf.name}: nothing new in {conf.source.name} (source version {target}, "
                   f"state at {done}); nothing written")
        register_existing(spark, conf.tables().values())
        return PredictRunResult(conf.name, False, "", None, done,
                                seconds=time.monotonic() - started)
    interrupted = _interrupted_target(spark, conf, meta)
    resumed = False
    result: PredictRunResult | None = None
    if interrupted is not None and interrupted > done:
        say(quiet, f"{conf.name}: resuming the run interrupted at source version {interrupted}")
        result = _run_once(spark, conf, meta, done, interrupted, quiet, crash_after, started,
                           resumed=True, local_rows=local_rows)
        meta, done, resumed = read_meta(spark, conf), interrupted, True
    if target <= done and result is not None:
        return result
    return _run_once(spark, conf, meta, done, target, quiet, crash_after, started, resumed=resumed,
                     local_rows=local_rows)


def _run_once(spark: "SparkSession", conf: PredictionConf, meta: dict[str, Any] | None,
              done: int, target: int, quiet: bool, crash_after: str | None, started: float, *,
              resumed: bool, local_rows: int) -> PredictRunResult:
    """Process source versions ``done + 1 .. target`` and write the state (meta last)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    tables = conf.tables()
    compiled = conf.compiled()
    _ensure_tables(spark, conf)
    first = done + 1
    run_id = f"{conf.name}:{first}-{target}"
    # The persisted models and states first: a corrupt model fails the run before any work.
    # <name>_states holds the states of every model written so far; counts only grow, so that
    # is the states of the persisted model (no need to read the table).
    models = _stored_models(spark, conf, meta, compiled)
    known = {sub: {(int(r[1]), int(r[2])) for r in state_rows(sub, compiled[sub], models[sub])}
             for sub in compiled} if meta is not None else {sub: set() for sub in compiled}
    events, read, attributes, n_rows = _source_rows(spark, conf, done, target)
    where = "on the driver" if n_rows <= local_rows else "in Spark (applyInArrow)"
    say(quiet, f"{conf.name}: reading {conf.source.name} versions {first}..{target} ({read}): "
               f"{n_rows:,} rows, run {where}; {len(compiled)} subscription(s): "
               f"{', '.join(compiled)}")
    work = events
    stored = _state_rows(spark, conf, meta, events)
    if stored is not None:
        work = work.unionByName(stored, allowMissingColumns=True)
    else:
        work = (work.withColumn("i_sub", F.lit(None).cast("string"))
                .withColumn("i_instance", F.lit(None).cast("string"))
                .withColumn("i_state", F.lit(None).cast("binary")))
    if n_rows <= local_rows:
        # Few rows: one call of the same function on the driver is faster than a shuffle into
        # Python workers (docs/predict-jobs.md, "Where the events are run").
        result = process_bucket(work.toArrow(), _spec(conf, attributes))
        kinds = pa.array([OUT_MODEL, OUT_STATS], pa.int32())
        small = result.filter(pc.is_in(result.column("out"), value_set=kinds)).to_pylist()
        out = spark.createDataFrame(result, spark_schema(OUT_COLUMNS))
    else:
        buckets = max(64, 4 * int(spark.conf.get("spark.sql.shuffle.partitions")))
        out = (work.withColumn("bucket", F.pmod(F.xxhash64("key"), F.lit(buckets)))
               .groupBy("bucket").applyInArrow(make_bucket_function(conf, attributes),
                                               spark_schema(OUT_COLUMNS))
               .persist(StorageLevel.MEMORY_AND_DISK))
    try:
        try:
            if n_rows > local_rows:
                small = [r.asDict() for r in out.where(F.col("out").isin(OUT_MODEL, OUT_STATS))
                         .select("out", "sub", "model", *STAT_COLUMNS).collect()]
        except Exception as exc:
            raise _worker_error(exc) from None
        stats = {c: sum(int(r[c]) for r in small if r["out"] == OUT_STATS) for c in STAT_COLUMNS}
        n_read, n_run, n_keys = stats["n_read"], stats["n_run"], stats["n_keys"]
        instance_rows = stats["n_instances"]
        late, incomplete = stats["n_late"], stats["n_incomplete"]
        say(quiet, f"{conf.name}: {n_read:,} events read: {n_run:,} run in {n_keys:,} keys, "
                   f"{late:,} late, {incomplete:,} incomplete; {instance_rows:,} instance rows "
                   f"({time.monotonic() - started:.1f}s)")

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

        metadata = json.dumps({METADATA_KEY: conf.name, "run_id": run_id,
                               "source_version": target})

        def app(suffix: str) -> str:
            return f"cep-predict-{conf.name}-{suffix}"

        def write(suffix: str, frame: "DataFrame", *, update: bool = True) -> None:
            _merge(spark, tables[suffix], frame, MERGE_KEYS[suffix], app(suffix), target,
                   metadata, update=update)

        if meta is None:
            write("subscriptions", spark.createDataFrame(subscription_rows(conf),
                                                         spark_schema(COLUMNS["subscriptions"])))
        names = [name for name, _ in COLUMNS["instances"]]
        instance_frame = out.where(F.col("out") == OUT_INSTANCE).select(*names)
        if crash_after == "instances-files":
            # What a process killed inside the MERGE leaves: data files, no commit.
            instance_frame.write.mode("append").parquet(str(tables["instances"].location))
            _crash_point("instances-files", crash_after)
        if instance_rows:
            write("instances", instance_frame)
        say(quiet, f"{conf.name}: instances merged ({time.monotonic() - started:.1f}s)")
        _crash_point("instances", crash_after)
        if n_run:
            model_rows = [(sub, m.to_bytes(), m.events,
                           sum(leaf.counts.total for leaf in m.leaves), target)
                          for sub, m in models.items()]
            write("models", spark.createDataFrame(model_rows, spark_schema(COLUMNS["models"])))
        _crash_point("models", crash_after)
        if new_states:
            write("states", spark.createDataFrame(new_states, spark_schema(COLUMNS["states"])),
                  update=False)
        _crash_point("states", crash_after)
        if late + incomplete:
            save(out.where(F.col("out") == OUT_LATE)
                 .select(F.lit(run_id).alias("run_id"), F.col("l_version").alias("source_version"),
                         "key", F.col("l_ts").alias("ts"), F.col("l_id").alias("id"),
                         F.col("l_reason").alias("reason"), F.col("l_last_ts").alias("last_ts")),
                 tables["late"], "append", app("late"), target, metadata)
        _crash_point("late", crash_after)
    finally:
        out.unpersist()
    versions = {suffix: _version(table) for suffix, table in tables.items() if suffix != "meta"}
    meta_row = {
        "prediction": conf.name, "source": conf.source.name, "key_col": conf.key_col,
        "ts_col": conf.ts_col, "id_col": conf.id_col, "type_col": conf.type_col,
        "source_version": target, "run_id": run_id,
        **{f"{suffix}_version": v for suffix, v in versions.items()},
        "events_total": (int(meta["events_total"]) if meta else 0) + n_run,
        "late_total": (int(meta["late_total"]) if meta else 0) + late + incomplete}
    save(spark.createDataFrame([tuple(meta_row[name] for name, _ in COLUMNS["meta"])],
                               spark_schema(COLUMNS["meta"])),
         tables["meta"], "overwrite", app("meta"), target, metadata)
    versions["meta"] = _version(tables["meta"])
    seconds = time.monotonic() - started
    say(quiet, f"{conf.name}: source version {target} done in {seconds:.1f}s; versions "
               + ", ".join(f"{k}={v}" for k, v in versions.items()))
    return PredictRunResult(conf.name, True, run_id, first, target, read, n_read, n_run, late,
                            incomplete, n_keys, instance_rows, len(new_states),
                            {sub: m.events for sub, m in models.items()}, versions, resumed,
                            seconds)
