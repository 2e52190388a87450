"""The incremental-job protocol, written once: what every state job does around its own step.

A state job (the sketch, the trend graph, the prediction set; :mod:`jobs.state`) keeps Delta
tables current with a Delta source table. One call of :meth:`IncrementalJob.run`:

1. **Versions.** The target is the source's current version, or ``until_version`` checked
   against the source's versions (:class:`~jobs.framework.errors.SourceVersionError`).
2. **Settings.** With a meta table, the job checks that its registration still agrees with it
   (:meth:`IncrementalJob.check_settings`).
3. **Nothing new.** When the target is not newer than the ``source_version`` the meta table
   records, the run says so and writes nothing (it registers the existing tables by name).
4. **Resume.** Every write of a run carries the run's record
   ``{"cep-<kind>": name, "run_id": ..., "source_version": target}`` in its commit's
   ``userMetadata``. A record newer than the meta table is a run that a crash interrupted: it
   is finished first, at its own target (same inputs, and Delta skips the writes already
   committed: every write is idempotent, ``txnAppId = cep-<kind>-<name>-<table>``,
   ``txnVersion`` = the target; :mod:`jobs.framework.txn`), then the run continues.
5. **Run once.** The job's step (:meth:`IncrementalJob.process`) reads the new source rows,
   updates its state and writes its tables through the :class:`Run`, marking each commit
   point (:func:`jobs.framework.faults.commit_point`).
6. **Meta last.** The framework overwrites ``<name>_meta`` last with the job's meta columns,
   the target, the run id and the version of every other state table: a reader (and the run
   manifest, :mod:`jobs.framework.runner`) picks mutually consistent versions from it.

A job implements the small abstract part of :class:`IncrementalJob` (its tables and their
columns, its settings check, its step) and names its result class, a :class:`RunResult`
subclass with its own counters.

Example:
    >>> from jobs.state.predict import PredictJob                              # doctest: +SKIP
    >>> PredictJob(load_prediction(settings, "heat")).run(spark).written         # doctest: +SKIP
    True
"""

from __future__ import annotations

import json
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from cep.errors import CepError
from delta_tables.delta_log import check_log, latest_metadata
from delta_tables.settings import TableConf
from delta_tables.sketch_state import spark_schema
from jobs.framework.errors import (ErrorCodes, JobError, SourceNotAppendOnlyError,
                                   SourceReplacedError, SourceVersionError)
from jobs.framework.faults import FILES, Faults, armed, before_commit
from jobs.framework.meta_row import KEY as META_ROW_KEY, encode_row
from jobs.framework.txn import (CommitMetadata, commit_records, ensure_table, log_version, merge,
                                read_meta_row, register_existing, save, say, worker_error)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["IncrementalJob", "Run", "RunResult", "Outcome", "create_tables"]


@dataclass(frozen=True)
class RunResult:
    """What one run read and wrote: the fields every state job's result has.

    A job's result class adds its own counters (with defaults).

    Attributes:
        name: The job's name (its registration in ``conf/``).
        written: False when nothing was new (no table was written).
        source_version: The last source version read (the state is complete up to it).
        run_id: ``<name>:<first source version read>-<last>`` ("" when nothing was written).
        source_from: The first source version read (None when nothing was written).
        versions: Version of each state table after the run, ``meta`` last ({} when nothing
            was written).
        resumed: True when the run finished an interrupted run first.
        seconds: Wall time.
    """

    name: str
    written: bool
    source_version: int
    run_id: str = ""
    source_from: int | None = None
    versions: dict[str, int | None] = field(default_factory=dict)
    resumed: bool = False
    seconds: float = 0.0


@dataclass(frozen=True)
class Outcome:
    """What a job's step did, handed back to the framework.

    Attributes:
        meta: The job's own columns of its meta row (the framework adds ``source_version``,
            ``run_id`` and ``<suffix>_version`` of every other state table).
        result: The job's own fields of its result (its counters).
        summary: What the job's last progress line says besides the versions (may be empty).
    """

    meta: Mapping[str, Any]
    result: Mapping[str, Any]
    summary: str = ""


def create_tables(spark: "SparkSession", job: "IncrementalJob", metadata: str) -> None:
    """Create the job's missing state tables and register them all by name.

    The creation commits carry ``metadata`` (the run's record), so a run that crashed after
    creating its tables is found and finished like any other interrupted run.
    """
    with CommitMetadata(spark, metadata):
        for suffix, table in job.tables.items():
            ensure_table(spark, table, job.columns(suffix), job.properties(suffix))


@dataclass(frozen=True)
class Run:
    """One run in progress: source versions ``done + 1 .. target`` and the writes it makes.

    Every write goes through here, so each is idempotent and carries the run's record.

    Attributes:
        job: The job.
        spark: The session.
        meta: The meta row the run starts from (None: a first run).
        done: The source version the state is complete up to (-1: none).
        target: The last source version the run reads.
        quiet: No progress output.
        started: ``time.monotonic()`` when the call began.
        source_id: The source's Delta table id, recorded with every write of the run.
    """

    job: "IncrementalJob"
    spark: "SparkSession"
    meta: dict[str, Any] | None
    done: int
    target: int
    quiet: bool
    started: float
    source_id: str | None = None

    @property
    def first(self) -> int:
        """The first source version the run reads."""
        return self.done + 1

    @property
    def run_id(self) -> str:
        """``<name>:<first>-<target>``."""
        return f"{self.job.name}:{self.first}-{self.target}"

    @property
    def metadata(self) -> str:
        """The run's record, the ``userMetadata`` of each of its commits."""
        return json.dumps({self.job.metadata_key: self.job.name, "run_id": self.run_id,
                           "source_version": self.target, "source_id": self.source_id})

    def app_id(self, suffix: str) -> str:
        """The ``txnAppId`` of the writes to state table ``suffix``."""
        return f"cep-{self.job.kind}-{self.job.name}-{suffix}"

    def table(self, suffix: str) -> TableConf:
        """The state table ``suffix``."""
        return self.job.tables[suffix]

    def elapsed(self) -> float:
        """Seconds since the call began."""
        return time.monotonic() - self.started

    def say(self, message: str) -> None:
        """A progress line on stderr (unless quiet)."""
        say(self.quiet, message)

    def versions(self) -> dict[str, int | None]:
        """The current version of every state table but the meta table."""
        return {suffix: log_version(table) for suffix, table in self.job.tables.items()
                if suffix != "meta"}

    def ensure_tables(self) -> None:
        """Create the missing state tables (their creation commits carry the run's record)."""
        create_tables(self.spark, self.job, self.metadata)

    def merge(self, suffix: str, frame: "DataFrame", keys: list[str], *,
              update: bool = True) -> None:
        """MERGE ``frame`` into state table ``suffix`` on ``keys`` as one idempotent write.

        Into a table still at version 0 (created empty by this job) the MERGE would insert
        every row: that is an append, which Delta does without the MERGE's join (2-4 s less per
        table on a first run), with the same ``txnAppId`` / ``txnVersion``.
        """
        table = self.table(suffix)
        self.before_commit_point(suffix, frame)
        if log_version(table) == 0:
            save(frame, table, "append", self.app_id(suffix), self.target, self.metadata)
            return
        merge(self.spark, table, frame, keys, self.app_id(suffix), self.target, self.metadata,
              update=update)

    def append(self, suffix: str, frame: "DataFrame") -> None:
        """Append ``frame`` to state table ``suffix`` as one idempotent write."""
        self.before_commit_point(suffix, frame)
        save(frame, self.table(suffix), "append", self.app_id(suffix), self.target,
             self.metadata)

    def before_commit_point(self, suffix: str, frame: "DataFrame") -> None:
        """Where a write to ``suffix`` may stop after its data files (crash tests only)."""
        location = str(self.table(suffix).location)
        before_commit(suffix, lambda: frame.write.mode("append").parquet(location))

    def feed(self, first: int) -> "DataFrame":
        """The source's change data feed from version ``first`` to the target (lazy)."""
        return (self.spark.read.format("delta").option("readChangeFeed", "true")
                .option("startingVersion", first).option("endingVersion", self.target)
                .load(str(self.job.source.location)))

    def unreadable_feed(self, exc: Exception) -> SourceVersionError:
        """The error for a change data feed after the state's version that cannot be read."""
        return self.job.error(SourceVersionError, (
            f"cannot read the change data feed of {self.job.source.name} from version "
            f"{self.first} to {self.target} (is delta.enableChangeDataFeed on?): "
            f"{str(exc).splitlines()[0][:300]}"))

    def not_append_only(self, change: str, version: int) -> SourceNotAppendOnlyError:
        """The error for an update or delete (``change``) in the source's new versions."""
        title = self.job.title
        return self.job.error(SourceNotAppendOnlyError, (
            f"source {self.job.source.name} has a {change} change at version {version}; "
            f"{title} sources are append-only (rebuild the {title})"))


class IncrementalJob(ABC):
    """One state job: its own part (abstract) and the protocol that drives it (:meth:`run`).

    Class attributes a job sets:
        kind: ``sketch``, ``graph`` or ``predict``: the app ids, the record's key
            ``cep-<kind>``, the table properties ``cep.<kind>.*``, ``CEP_<KIND>_CRASH_AFTER``.
        title: How messages name the job (``sketch``, ``graph``, ``prediction set``).
        state_word: What the nothing-new line calls the state (``sketch at 3``).
        codes: The codes its errors carry.
        crash_points: The commit points a test may name (:mod:`jobs.framework.faults`).
        table_columns: ``(name, SQL type)`` pairs of each state table, by suffix (the meta
            table's in row order).
        result_type: Its :class:`RunResult` subclass.
        state_error: The class of an inconsistent-state error (several meta rows, writes of
            several unfinished runs); None: :class:`~jobs.framework.errors.JobError`.

    Args:
        conf: The job's registration (SketchConf, GraphConf or PredictionConf).
    """

    kind: ClassVar[str]
    title: ClassVar[str]
    state_word: ClassVar[str]
    codes: ClassVar[ErrorCodes]
    crash_points: ClassVar[tuple[str, ...]]
    table_columns: ClassVar[Mapping[str, tuple[tuple[str, str], ...]]]
    result_type: ClassVar[type[RunResult]]
    state_error: ClassVar[type[CepError] | None] = None

    def __init__(self, conf: Any) -> None:
        self.conf = conf

    # ---- what each job implements ---------------------------------------------------------------

    @abstractmethod
    def process(self, run: Run) -> Outcome:
        """Read the new source rows, update the state and write every state table but meta.

        Each write goes through ``run`` and is followed by one ``commit_point(<suffix>)``.
        """

    def check_settings(self, spark: "SparkSession", meta: dict[str, Any]) -> None:
        """Raise SettingsChangedError when the registration contradicts the state (default:
        nothing to check)."""

    def idle_fields(self, meta: dict[str, Any] | None) -> dict[str, Any]:
        """The job's own result fields of a run that found nothing new (default: none)."""
        return {}

    def done_line(self, run: Run, outcome: Outcome, seconds: float) -> str:
        """The run's last progress line, before the versions."""
        return f"{self.name}: source version {run.target} done in {seconds:.1f}s; versions "

    # ---- shared by every job ----------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The job's name."""
        return str(self.conf.name)

    @property
    def source(self) -> TableConf:
        """The source Delta table."""
        return self.conf.source

    @property
    def tables(self) -> dict[str, TableConf]:
        """The state tables by suffix, in the order a run writes them, ``meta`` last (what the
        registration's ``tables()`` gives; a job may order them otherwise)."""
        return dict(self.conf.tables())

    def columns(self, suffix: str) -> tuple[tuple[str, str], ...]:
        """``(name, SQL type)`` of state table ``suffix``."""
        return self.table_columns[suffix]

    @property
    def metadata_key(self) -> str:
        """Key of the run's record in every commit's ``userMetadata``."""
        return f"cep-{self.kind}"

    @property
    def crash_env(self) -> str:
        """The environment variable that names a crash point for a run."""
        return f"CEP_{self.kind.upper()}_CRASH_AFTER"

    def properties(self, suffix: str) -> dict[str, str]:
        """The table properties of a new state table ``suffix``."""
        return {f"cep.{self.kind}.name": self.name, f"cep.{self.kind}.table": suffix}

    def error(self, kind: type[JobError], message: str) -> JobError:
        """An error of class ``kind`` naming this job, with the job's code for it."""
        return self.codes.error(kind, f"{self.title} {self.name}: {message}")

    def state_failure(self, message: str) -> Exception:
        """An inconsistent-state error (:attr:`state_error`)."""
        if self.state_error is None:
            return self.codes.error(JobError, message)
        return self.state_error(message)

    def worker_error(self, exc: Exception, classes: Mapping[str, type[CepError]]) -> Exception:
        """A typed error raised in a Python worker, rebuilt on the driver (another code
        becomes a :class:`~jobs.framework.errors.JobError` with the job's code)."""
        return worker_error(exc, classes, lambda message: self.codes.error(JobError, message))

    def read_meta(self, spark: "SparkSession") -> dict[str, Any] | None:
        """The meta row as a dict, or None before the first complete run."""
        table = self.tables["meta"]
        return read_meta_row(spark, table, self.state_failure, self.columns("meta"))

    def interrupted_target(self, meta: dict[str, Any] | None) -> int | None:
        """The target source version of a run that wrote (or created) some state tables but
        not the meta table, or None."""
        done = -1 if meta is None else int(meta["source_version"])
        found: set[int] = set()
        for suffix, table in self.tables.items():
            if suffix == "meta":
                continue
            # A meta row of a state older than its version columns has none: scan all commits
            # (the old ones carry no record).
            since = None if meta is None else meta.get(f"{suffix}_version")
            for record in commit_records(table, since):
                version = int(record.get("source_version", -1))
                if record.get(self.metadata_key) == self.name and version > done:
                    found.add(version)
        if len(found) > 1:
            raise self.state_failure(f"{self.title} {self.name}: state tables hold writes of "
                                     f"several unfinished runs (source versions {sorted(found)})")
        return found.pop() if found else None

    def source_id(self, spark: "SparkSession") -> str | None:
        """The source's Delta table id (from its log; Spark's ``DESCRIBE DETAIL`` when the
        commits that set it were cleaned up), or None when neither knows it."""
        found = latest_metadata(self.source)
        if found is not None and found.get("id"):
            return str(found["id"])
        from delta.tables import DeltaTable

        rows = DeltaTable.forPath(spark, str(self.source.location)).detail().select("id").collect()
        return str(rows[0]["id"]) if rows and rows[0]["id"] else None

    def check_source_id(self, meta: dict[str, Any] | None, source_id: str | None) -> None:
        """Refuse a source that is not the table the state was built from.

        The id is the one the meta table's last commit recorded (states written before ids were
        recorded have none, and are taken as they are; their next run records it).

        Raises:
            SourceReplacedError: the ids differ.
        """
        if meta is None or source_id is None:
            return
        meta_table = self.tables["meta"]
        latest = log_version(meta_table) or 0
        # The meta table's newest commits, then all of them (maintenance commits carry none).
        records = []
        for since in (latest - 8, None):
            records = [r for r in commit_records(meta_table, since)
                       if r.get(self.metadata_key) == self.name]
            if records:
                break
        recorded = records[-1].get("source_id") if records else None
        if recorded is not None and recorded != source_id:
            raise self.error(
                SourceReplacedError,
                f"{self.title} {self.name}: the source table {self.source.name} at "
                f"{self.source.location} is not the table the state was built from (Delta table "
                f"id {source_id}, the state read {recorded} up to its version "
                f"{meta['source_version']}): it was removed and created again, so its versions "
                "do not continue the ones the state has read; nothing was read or written. "
                f"To rebuild from the new table, drop the state tables "
                f"({', '.join(t.name for t in self.tables.values())}) and run the job again")

    def target_version(self, until_version: int | None) -> int:
        """The source version a run reads up to: the current one or ``until_version``."""
        source = self.source
        current = log_version(source)
        if current is None:
            raise self.error(SourceVersionError, f"source table {source.name} does not exist at "
                                                 f"{source.location}")
        target = current if until_version is None else int(until_version)
        if not 0 <= target <= current:
            raise self.error(SourceVersionError, f"--until-version {until_version} is outside "
                                                 f"the versions 0..{current} of {source.name}")
        return target

    def faults(self, crash_after: str | None) -> Faults:
        """The commit point this run stops at: ``crash_after`` or ``$CEP_<KIND>_CRASH_AFTER``."""
        point = crash_after if crash_after is not None else os.environ.get(self.crash_env) or None
        # After a table's commit (the job's own points), or inside any table's write, meta's too.
        inside = point is not None and point.endswith(FILES) and point[:-len(FILES)] in self.tables
        if point is not None and point not in self.crash_points and not inside:
            raise self.codes.error(JobError, f"crash point {point!r}: expected one of "
                                             f"{self.crash_points} or <table>{FILES}")
        return Faults(point, self.crash_env, self.codes)

    def run(self, spark: "SparkSession", *, until_version: int | None = None,
            quiet: bool = False, crash_after: str | None = None) -> RunResult:
        """Bring the state up to the source's current version (or ``until_version``).

        Args:
            spark: A session from :func:`jobs.session.build_session`.
            until_version: Process the source only up to this version.
            quiet: No progress output.
            crash_after: Test hook (default ``$CEP_<KIND>_CRASH_AFTER``), one of
                :attr:`crash_points` or ``<table>-files``: raise InjectedCrash there.

        Returns:
            The last run's result (``written`` False when nothing was new).

        Raises:
            SourceVersionError: no source table, a bad ``until_version``, an unreadable feed.
            SourceNotAppendOnlyError: an update or delete in the source's new versions.
            SourceReplacedError: the source is another table than the state was built from.
            SettingsChangedError: the registration contradicts the state.
            DeltaLogError: a commit file of the source or a state table is damaged.
        """
        started = time.monotonic()
        faults = self.faults(crash_after)
        # A damaged commit file is a typed error naming the table and version before any read.
        for table in (self.source, *self.tables.values()):
            check_log(table)
        target = self.target_version(until_version)
        meta = self.read_meta(spark)
        done = -1 if meta is None else int(meta["source_version"])
        source_id = self.source_id(spark)
        self.check_source_id(meta, source_id)
        if meta is not None:
            self.check_settings(spark, meta)
        if target <= done:
            say(quiet, f"{self.name}: nothing new in {self.source.name} (source version {target}, "
                       f"{self.state_word} at {done}); nothing written")
            # Another process (the demo, a scheduler) may have built the state: make its tables
            # queryable by name in this session too. Registration writes nothing to Delta.
            register_existing(spark, self.tables.values())
            return self.result_type(self.name, False, done, seconds=time.monotonic() - started,
                                    **self.idle_fields(meta))
        with armed(faults):
            interrupted = self.interrupted_target(meta)
            resumed = False
            result: RunResult | None = None
            if interrupted is not None and interrupted > done:
                say(quiet, f"{self.name}: resuming the run interrupted at source version "
                           f"{interrupted}")
                result = self._run_once(Run(self, spark, meta, done, interrupted, quiet, started,
                                            source_id), resumed=True)
                meta, done, resumed = self.read_meta(spark), interrupted, True
            if target <= done and result is not None:
                return result
            return self._run_once(Run(self, spark, meta, done, target, quiet, started,
                                      source_id), resumed=resumed)

    def _run_once(self, run: Run, *, resumed: bool) -> RunResult:
        """Process source versions ``run.first .. run.target``: the job's step, then meta."""
        outcome = self.process(run)
        versions = run.versions()
        row = {**outcome.meta, "source_version": run.target, "run_id": run.run_id,
               **{f"{suffix}_version": version for suffix, version in versions.items()}}
        columns = self.columns("meta")
        meta = self.tables["meta"]
        frame = run.spark.createDataFrame([tuple(row[name] for name, _ in columns)],
                                          spark_schema(columns))
        run.before_commit_point("meta", frame)
        # The commit records the row it writes: the next read needs no Spark job (meta_row).
        record = {**json.loads(run.metadata), META_ROW_KEY: encode_row(row, columns)}
        save(frame, meta, "overwrite", run.app_id("meta"), run.target, json.dumps(record))
        versions["meta"] = log_version(meta)
        seconds = run.elapsed()
        run.say(self.done_line(run, outcome, seconds)
                + ", ".join(f"{k}={v}" for k, v in versions.items()))
        return self.result_type(self.name, True, run.target, run.run_id, run.first, versions,
                                resumed, seconds, **outcome.result)
