"""The standing-pattern job: a pattern's matches and timeouts kept current with its source.

One run of ``python -m jobs match --name NAME`` (the protocol of
:mod:`jobs.framework.incremental`):

1. reads the source's new rows (its change data feed after the last run; a first run reads
   the snapshot as one commit when the feed does not reach back to version 0), sets aside
   those with a NULL key, timestamp, id or type (``incomplete``) and those below their
   commit's watermark (``late``: :mod:`jobs.framework.watermarks`);
2. groups the applied rows with the stored key states (``<name>_open`` as of the last run) of
   the keys they touch and of the keys whose next start the watermark resolves (``resolve_at``;
   the watermark closes windows of keys with no new event too), by bucket of keys, and steps
   each key (:mod:`jobs.state.match_keys`, :func:`cep.match.run.standing.advance`) with the
   run's watermark: the newest timestamp read minus the lateness (0 by default);
3. appends the matches and the timeouts the watermark resolved, merges the new key states,
   appends the set-aside rows (each write idempotent, each followed by its commit point), and
   the framework writes the meta row last.

The tables are described in :mod:`delta_tables.match_state`, the semantics in docs/standing.md.

Example:
    >>> from jobs.state.match import run_match                                  # doctest: +SKIP
    >>> run_match(spark, settings, "unanswered").matches                         # doctest: +SKIP
    12
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from cep.errors import CepError
from delta_tables.catalog import read_table
from delta_tables.match_state import LATE as LATE_COLUMNS
from delta_tables.match_state import META, MatchConf, load_match
from delta_tables.settings import Settings
from jobs.framework.errors import ErrorCodes, JobError
from jobs.framework.faults import commit_point
from jobs.framework.incremental import IncrementalJob, Outcome, Run, RunResult
from jobs.framework.txn import log_version
from jobs.framework.watermarks import (LATE, Commit, WatermarkedJob, classify_late,
                                       commit_bounds)
from jobs.state.match_keys import EVENT, KIND, STATE, make_bucket_function, out_fields

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["MatchJob", "MatchRunResult", "run_match", "read_meta", "CODES"]

CODES = ErrorCodes(job="CEP-MATCH-040", not_append_only="CEP-MATCH-040",
                   source_version="CEP-MATCH-040", settings_changed="CEP-MATCH-040",
                   crash="CEP-MATCH-040")
"""The standing-pattern job's errors all carry CEP-MATCH-040 (docs/standing.md)."""
_SQL_TYPES = {"timestamp": "TIMESTAMP", "bigint": "BIGINT", "int": "INT", "smallint": "SMALLINT",
              "tinyint": "TINYINT"}
"""The ``ts_col`` types a standing pattern reads, as Spark names them, and as SQL writes them."""


@dataclass(frozen=True)
class MatchRunResult(RunResult):
    """What one run read and wrote (the common fields: :class:`RunResult`).

    Attributes:
        events_read: New source rows; ``late`` and ``incomplete`` of them were set aside.
        late, incomplete: Rows set aside (docs/watermarks.md).
        matches, timeouts: Rows appended to ``<name>_matches`` and ``<name>_timeouts``.
        keys: Keys stepped: every key with a new event, and every stored key whose next
            start the watermark resolves (the others are left as they are).
        watermark: The watermark the run resolved starts with.
    """

    events_read: int = 0
    late: int = 0
    incomplete: int = 0
    matches: int = 0
    timeouts: int = 0
    keys: int = 0
    watermark: int | None = None


@dataclass(frozen=True)
class _Source:
    """The source columns a run reads, resolved against the source's schema."""

    key: str
    key_type: str
    ts: str
    is_timestamp: bool
    id: str
    type: str
    attributes: tuple[str, ...]
    columns: tuple[str, ...]


def read_meta(spark: "SparkSession", conf: MatchConf) -> dict[str, Any] | None:
    """The meta row as a dict, or None before the first complete run."""
    return MatchJob(conf).read_meta(spark)


class MatchJob(WatermarkedJob, IncrementalJob):
    """The standing pattern's own part of the protocol: its tables and its step.

    Args:
        conf: The registered standing pattern.
    """

    kind = "match"
    title = "standing pattern"
    state_word = "matches"
    codes = CODES
    crash_points = ("matches", "timeouts", "open", "late")
    table_columns = {"late": LATE_COLUMNS, "meta": META}
    result_type = MatchRunResult

    conf: MatchConf

    def __init__(self, conf: MatchConf) -> None:
        super().__init__(conf)
        self.program = conf.program
        self.source_columns: _Source | None = None

    def columns(self, suffix: str) -> tuple[tuple[str, str], ...]:
        """``(name, SQL type)`` of state table ``suffix``: the key and the timestamps take the
        source's types, so they are known once the run has read the source's schema."""
        if suffix in self.table_columns:
            return self.table_columns[suffix]
        src = self.source_columns
        if src is None:
            raise CODES.error(JobError, f"standing pattern {self.name}: the source's columns "
                                        "are read before its tables are created")
        ts = "TIMESTAMP" if src.is_timestamp else "BIGINT"
        ts_units = "BIGINT"  # resolve_at: in the state's units, as the watermark
        ids, names = "ARRAY<BIGINT>", "ARRAY<STRING>"
        return {
            "matches": ((self.conf.key_col, src.key_type), ("match_id", "BIGINT"),
                        ("start_ts", ts), ("end_ts", ts), ("event_ids", ids),
                        ("variables", names), ("n_events", "INT"), ("run_id", "STRING")),
            "timeouts": ((self.conf.key_col, src.key_type), ("start_ts", ts),
                         ("closed_at", ts), ("event_ids", ids), ("variables", names),
                         ("components", "INT"), ("run_id", "STRING")),
            "open": (("key", src.key_type), ("state", "BINARY"), ("resolve_at", ts_units)),
        }[suffix]

    def process(self, run: Run) -> Outcome:
        """Set aside, step every key, write the matches, timeouts, key states and late rows."""
        from pyspark.sql import functions as F

        conf, meta = self.conf, run.meta
        feed, commits = self._new_rows(run)
        try:
            src = self.source_columns
            assert src is not None  # set by _new_rows
            lateness = conf.lateness_amount(not src.is_timestamp)
            before = _baseline(meta)
            bounds, newest = commit_bounds(commits, before["max_ts"], lateness)
            watermark = None if newest is None else newest - lateness
            tagged = classify_late(run.spark, feed, bounds, _complete(), "ts")
            read = sum(c.rows for c in commits)
            incomplete = sum(c.incomplete for c in commits)
            late = tagged.where(F.col("reason") == LATE).count() if bounds else 0
            run.say(f"{conf.name}: {conf.source.name} versions {run.first}..{run.target}: "
                    f"{read:,} events read, {read - late - incomplete:,} applied, {late:,} "
                    f"late, {incomplete:,} incomplete; watermark {watermark}")
            run.ensure_tables()
            out = self._step(run, tagged, watermark, read - late - incomplete).persist()
            try:
                counts = {int(r[0]): int(r[1])
                          for r in out.groupBy("kind").count().collect()}
                self._write(run, out, tagged, src, counts, late + incomplete)
            finally:
                out.unpersist()
        finally:
            feed.unpersist()
        behind = counts.get(KIND["late"], 0)
        matches, timeouts = counts.get(KIND["matches"], 0), counts.get(KIND["timeouts"], 0)
        keys = counts.get(KIND["open"], 0)
        totals = {"events_read_total": before["events_read_total"] + read,
                  "late_total": before["late_total"] + late + incomplete + behind,
                  "matches_total": before["matches_total"] + matches,
                  "timeouts_total": before["timeouts_total"] + timeouts}
        return Outcome(
            meta={"standing": conf.name, "source": conf.source.name, "pattern": conf.pattern,
                  "policy": conf.policy, "key_col": conf.key_col,
                  "updated_at": _dt.datetime.now(_dt.timezone.utc), "source_from": run.first,
                  "lateness": None if conf.lateness is None else str(conf.lateness),
                  "max_ts": newest, "watermark": watermark, "keys": keys, **totals},
            result={"events_read": read, "late": late + behind, "incomplete": incomplete,
                    "matches": matches, "timeouts": timeouts, "keys": keys,
                    "watermark": watermark},
            summary=f"{matches} matches, {timeouts} timeouts, {keys} keys")

    # ---- the steps of a run ---------------------------------------------------------------------

    def _new_rows(self, run: Run) -> tuple["DataFrame", list[Commit]]:
        """``key, ts, id, type, a_0.., commit`` of the new source rows (persisted) and what
        each commit brings; the snapshot as one commit when a first run finds no insert-only
        feed from version 0.

        Raises:
            SourceVersionError, SourceNotAppendOnlyError: after a first run, an unreadable
                feed or an update/delete in it.
        """
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        frame, why = None, ""
        try:
            raw = run.feed(run.first)
            frame = self._select(raw, F.col("_commit_version"), F.col("_change_type"))
            stats = _per_commit(frame)
        except CepError:
            raise
        except Exception as exc:  # noqa: BLE001 - AnalysisException / Py4J: CDF off, vacuumed
            frame, why = None, str(exc).splitlines()[0][:200]
            if run.done >= 0:
                raise run.unreadable_feed(exc) from None
        bad = sorted((int(r[0]), str(r[1])) for r in stats if r[1] != "insert") if frame else []
        if bad and run.done >= 0:
            raise run.not_append_only(bad[0][1], bad[0][0])
        if frame is None or bad:
            run.say(f"{self.name}: no insert-only change data feed of {self.source.name} from "
                    f"version 0 ({why or f'a {bad[0][1]} at version {bad[0][0]}'}); reading "
                    f"version {run.target} as one commit")
            frame = self._select(read_table(run.spark, self.source, version=run.target),
                                 F.lit(run.target), F.lit("insert"))
            stats = _per_commit(frame)
        frame = frame.drop("change").persist(StorageLevel.MEMORY_AND_DISK)
        commits = sorted((Commit(int(r[0]), int(r[2]), int(r[3]),
                                 None if r[4] is None else int(r[4])) for r in stats),
                         key=lambda c: c.version)
        return frame, commits

    def _select(self, frame: "DataFrame", commit: "Column", change: "Column") -> "DataFrame":
        """The columns a run reads, resolved (any case) against the source's schema."""
        from pyspark.sql import functions as F

        src = self.source_columns = self._resolve(dict(frame.dtypes))
        ts = F.col(src.ts)
        return frame.select(
            F.col(src.key).alias("key"),
            (F.unix_micros(ts) if src.is_timestamp else ts.cast("bigint")).alias("ts"),
            F.col(src.id).cast("bigint").alias("id"),
            F.col(src.type).cast("string").alias("type"),
            *(F.col(c).alias(f"a_{i}") for i, c in enumerate(src.columns)),
            commit.cast("bigint").alias("commit"), change.alias("change"))

    def _resolve(self, dtypes: dict[str, str]) -> _Source:
        """The source columns of the registration and the pattern's attributes.

        Raises:
            JobError: a missing column, or a column of a type a standing pattern cannot read.
        """
        conf = self.conf
        have = {c.lower(): c for c in dtypes if not c.startswith("_")}

        def column(name: str, role: str) -> str:
            found = have.get(name.lower())
            if found is None:
                raise self.error(JobError, f"source {conf.source.name} has no {role} column "
                                           f"{name!r}; it has {sorted(have.values())}")
            return found

        key, ts = column(conf.key_col, "key_col"), column(conf.ts_col, "ts_col")
        ident, etype = column(conf.id_col, "id_col"), column(conf.type_col, "type_col")
        if dtypes[key].upper() not in ("STRING", "BIGINT", "INT"):
            raise self.error(JobError, f"key_col {key!r} is {dtypes[key]}; a standing pattern's "
                                       "key is a STRING, INT or BIGINT column")
        if dtypes[ts] not in _SQL_TYPES:
            raise self.error(JobError, f"ts_col {ts!r} is {dtypes[ts]}; a standing pattern reads "
                                       "a TIMESTAMP or an integer column")
        named = {"ts": ts, "type": etype}
        attributes, columns = [], []
        for attr in self.program.compiled.attributes:
            if attr.lower() in ("ts", ts.lower(), ident.lower()):
                continue
            found = named.get(attr.lower()) or column(attr, "attribute")
            kind = dtypes[found]
            if not (kind in ("string", "boolean", "double", "float") or kind in _SQL_TYPES
                    and kind != "timestamp"):
                raise self.error(JobError, f"attribute {attr!r} ({found}) is {kind}; a standing "
                                           "pattern's conditions read numbers, strings and "
                                           "booleans (cast it in a view of the source)")
            attributes.append(attr)
            columns.append(found)
        return _Source(key, dtypes[key].upper(), ts, dtypes[ts] == "timestamp", ident, etype,
                       tuple(attributes), tuple(columns))

    def _step(self, run: Run, tagged: "DataFrame", watermark: int | None,
              applied_rows: int) -> "DataFrame":
        """The keys' steps: the applied new rows and the stored key states that can change,
        grouped by bucket of keys.

        A stored key with no new event is stepped only when the watermark reaches its
        ``resolve_at`` (:func:`cep.match.run.standing.resolves_at`): below it the step would
        report nothing and keep the state as it is, so a run over a few new events reads and
        rewrites only the keys they touch and those whose windows closed.
        """
        from pyspark.sql import functions as F

        src = self.source_columns
        assert src is not None
        applied = tagged.where(F.col("reason").isNull()).select(
            F.lit(EVENT).cast("tinyint").alias("kind"), "key", "ts", "id", "type",
            *(f"a_{i}" for i in range(len(src.attributes))), "commit",
            F.lit(None).cast("binary").alias("state"))
        # The key states as the last complete run left them, at a pinned version: a resumed
        # run must step from the same states, and a plan Spark evaluates again after this
        # run's own MERGE (a cache miss) must not read the states it wrote.
        version = None if run.meta is None else run.meta.get("open_version")
        if version is None:
            version = log_version(self.tables["open"])
        stored = read_table(run.spark, self.tables["open"], version=version)
        touched = applied.select("key").distinct().withColumn("touched", F.lit(True))
        due = F.col("touched").isNotNull()
        if watermark is not None:
            due = due | (F.col("resolve_at") <= F.lit(watermark))
        stored = stored.join(touched, "key", "left").where(due).select(
            F.lit(STATE).cast("tinyint").alias("kind"), "key",
            *(F.lit(None).cast(t).alias(n) for n, t in (("ts", "bigint"), ("id", "bigint"),
                                                         ("type", "string"))),
            *(F.lit(None).cast(applied.schema[f"a_{i}"].dataType).alias(f"a_{i}")
              for i in range(len(src.attributes))),
            F.lit(None).cast("bigint").alias("commit"), "state")
        key_type = _arrow_type(applied.schema["key"].dataType)
        function = make_bucket_function(self.program, src.attributes, watermark, key_type)
        schema = ", ".join(f"{name} {_ddl(t, src.key_type)}"
                           for name, t in out_fields(key_type))
        buckets = _buckets(run.spark, applied_rows)
        rows = applied.unionByName(stored)
        return (rows.withColumn("bucket", F.pmod(F.xxhash64("key"), F.lit(buckets)))
                .groupBy("bucket").applyInArrow(function, schema))

    def _write(self, run: Run, out: "DataFrame", tagged: "DataFrame", src: _Source,
               counts: dict[int, int], set_aside: int) -> None:
        """The four writes of a run, in order, each followed by its commit point; a write with
        no rows is left out (a Delta commit costs 0.8-0.9 s here, BENCHMARKS.md "Standing
        patterns"), as the graph job leaves out its MERGEs when no window changed."""
        from pyspark.sql import functions as F

        def ts(column: str) -> "Column":
            return F.timestamp_micros(F.col(column)) if src.is_timestamp else F.col(column)

        key = F.col("key").alias(self.conf.key_col)
        of = lambda kind: out.where(F.col("kind") == KIND[kind])  # noqa: E731
        if counts.get(KIND["matches"]):
            run.append("matches", of("matches").select(
                key, "match_id", ts("start_ts").alias("start_ts"), ts("end_ts").alias("end_ts"),
                "event_ids", "variables", "n_events", F.lit(run.run_id).alias("run_id")))
        commit_point("matches")
        if counts.get(KIND["timeouts"]):
            run.append("timeouts", of("timeouts").select(
                key, ts("start_ts").alias("start_ts"), ts("closed_at").alias("closed_at"),
                "event_ids", "variables", "components", F.lit(run.run_id).alias("run_id")))
        commit_point("timeouts")
        if counts.get(KIND["open"]):
            run.merge("open", of("open").select("key", "state", "resolve_at"), ["key"])
        commit_point("open")
        if set_aside or counts.get(KIND["late"]):
            aside = tagged.where(F.col("reason").isNotNull()).select(
                F.col("commit").alias("source_version"), "key", "ts", "id", "reason",
                F.when(F.col("reason") == LATE, F.col("bound")).alias("watermark"))
            behind = of("late").select(F.col("commit").alias("source_version"), "key", "ts",
                                       "id", F.lit(LATE).alias("reason"), "watermark")
            run.append("late", aside.unionByName(behind).select(
                F.lit(run.run_id).alias("run_id"), "source_version",
                F.col("key").cast("string").alias("key"), "ts", "id", "reason", "watermark"))
        commit_point("late")


EVENTS_PER_BUCKET = 50_000
"""About how many new events one Python call steps (with their keys' carried states): a
bucket's rows are one Arrow table in the worker's memory."""


def _buckets(spark: "SparkSession", applied: int) -> int:
    """How many buckets a run's keys go into: about :data:`EVENTS_PER_BUCKET` new events each,
    and at least four per shuffle partition: Spark places the buckets by a hash of their
    number, and two buckets over two partitions can land in one, leaving a core idle."""
    partitions = int(spark.conf.get("spark.sql.shuffle.partitions") or 2)
    return max(4 * partitions, math.ceil(applied / EVENTS_PER_BUCKET))


def _per_commit(frame: "DataFrame") -> list[Any]:
    """Per commit and change type: rows, incomplete rows, newest complete timestamp."""
    from pyspark.sql import functions as F

    return frame.groupBy("commit", "change").agg(
        F.count(F.lit(1)), F.count(F.when(~_complete(), F.lit(1))),
        F.max(F.when(_complete(), F.col("ts")))).collect()


def _complete() -> "Column":
    """A source row a key's stream can place: key, timestamp, id and type all set."""
    from pyspark.sql import functions as F

    return (F.col("key").isNotNull() & F.col("ts").isNotNull() & F.col("id").isNotNull()
            & F.col("type").isNotNull())


def _baseline(meta: dict[str, Any] | None) -> dict[str, Any]:
    """The running counts and newest timestamp before this run."""
    names = ("events_read_total", "late_total", "matches_total", "timeouts_total")
    if meta is None:
        return {"max_ts": None, **{n: 0 for n in names}}
    return {"max_ts": None if meta["max_ts"] is None else int(meta["max_ts"]),
            **{n: int(meta[n] or 0) for n in names}}


def _arrow_type(data_type: Any) -> pa.DataType:
    """The Arrow type Spark hands a column of ``data_type`` over as."""
    from pyspark.sql.pandas.types import to_arrow_type

    return to_arrow_type(data_type)


def _ddl(arrow: pa.DataType, key_type: str) -> str:
    """The SQL type of an output column (the key keeps the source's type)."""
    if arrow == pa.int8():
        return "TINYINT"
    simple = {pa.int64(): "BIGINT", pa.int32(): "INT", pa.binary(): "BINARY",
              pa.string(): "STRING", pa.list_(pa.int64()): "ARRAY<BIGINT>",
              pa.list_(pa.string()): "ARRAY<STRING>"}
    return simple.get(arrow, key_type)


def run_match(spark: "SparkSession", settings: Settings, conf: MatchConf | str, *,
              until_version: int | None = None, quiet: bool = False,
              crash_after: str | None = None) -> MatchRunResult:
    """Bring the standing pattern's tables up to the source's current version.

    Args:
        spark: A session from :func:`jobs.session.build_session`.
        settings: Resolved settings.
        conf: The standing pattern (or its name in ``conf/matches.toml``).
        until_version: Process the source only up to this version.
        quiet: No progress output.
        crash_after: Test hook (default ``$CEP_MATCH_CRASH_AFTER``), one of
            :attr:`MatchJob.crash_points`.

    Raises:
        SourceVersionError, SourceNotAppendOnlyError, JobError: as every state job (all
            CEP-MATCH-040).
        ConfigError: a lateness that does not fit ``ts_col``.
    """
    job = MatchJob(load_match(settings, conf) if isinstance(conf, str) else conf)
    return job.run(spark, until_version=until_version, quiet=quiet,  # type: ignore[return-value]
                   crash_after=crash_after)
