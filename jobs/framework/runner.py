"""The job framework: run a registered state job with retries, then record it in the run manifest.

Every state job (``python -m jobs sketch|graph|predict --name N`` and ``python -m jobs
run-all``) goes through :func:`run_job`:

1. **Run** the job's own incremental step (:meth:`jobs.framework.registry.StateJob.run`): it reads only
   the source versions after the ones its meta table records (Delta's change data feed), makes
   every write idempotent (``txnAppId`` from the job and the table, ``txnVersion`` = the
   source version it processes up to, never the clock), resumes a run a crash interrupted, and
   writes its meta table last.
2. **Retry** a run that meets a Delta concurrency conflict (``ConcurrentAppendException`` and
   its kin: another writer committed first), up to ``[retries] max_attempts`` of
   ``conf/jobs.toml``, waiting ``backoff_seconds`` (doubled each time) in between. Running
   again is safe because of step 1: a write that already landed is skipped by Delta. Any other
   error is not retried.
3. **Record** the run in the manifest (:mod:`delta_tables.manifest`), after the meta table:
   the versions the meta row names, the meta table's own version, their commit timestamps.
   The row's write is idempotent too (``txnAppId = cep-manifest-<kind>-<name>-g<generation>``,
   ``txnVersion`` = the source version), so two runs of the same work record it once. Every
   complete run whose row is missing is recorded too, oldest first, also when the source has
   grown since: a run killed between the meta table and the manifest, and a run killed between
   two state tables that the next run finished (:func:`record_run`). A rerun that finds
   nothing new writes such rows and nothing else.

Example:
    >>> is_concurrency_conflict(RuntimeError("[DELTA_CONCURRENT_APPEND] ConcurrentAppendException: "
    ...                                      "Files were added to the root of the table"))
    True
    >>> is_concurrency_conflict(RuntimeError("CEP-PRED-043: no source table"))
    False
"""

from __future__ import annotations

import datetime as _dt
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cep.errors import CepError, ConfigError
from delta_tables.catalog import current_version, is_delta_table, read_table
from delta_tables.delta_log import commit_timestamp, latest_metadata
from delta_tables.manifest import MANIFEST_COLUMNS, ManifestRun, read_runs, run_id
from delta_tables.settings import Settings, TableConf
from delta_tables.sketch_state import spark_schema
from jobs.framework.patterns import find_table_job, read_patterns
from jobs.framework.registry import StateJob, load_job, parse_key
from jobs.framework.run_conf import RunConf, load_run_conf
from jobs.framework.txn import check_kind, ensure_table, save, say

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["JobRunError", "RetriesExhaustedError", "RunSummary", "is_concurrency_conflict",
           "run_job", "record_run", "run_all", "resolve_job", "CONFLICTS"]

CONFLICTS = ("ConcurrentAppendException", "ConcurrentDeleteReadException",
             "ConcurrentDeleteDeleteException", "ConcurrentTransactionException",
             "MetadataChangedException", "ProtocolChangedException", "ConcurrentWriteException",
             "DELTA_CONCURRENT_")
"""What names a Delta concurrency conflict in an exception's text (class names and Delta's
error-class prefix)."""

MANIFEST_KEY = "cep-manifest"
"""Key of the manifest commits' ``userMetadata`` record."""
MANIFEST_KIND = "run-manifest"
"""The manifest table's ``cep.table`` property: a table without it is never written as one."""


class JobRunError(CepError):
    """A run-all job failed; its own error is in the message."""

    code = "CEP-JOB-040"


class RetriesExhaustedError(CepError):
    """A run met a Delta concurrency conflict on every attempt."""

    code = "CEP-JOB-041"


def is_concurrency_conflict(exc: BaseException) -> bool:
    """Whether ``exc`` is Delta reporting that another writer committed first."""
    text = f"{type(exc).__name__}: {exc}"
    return any(name in text for name in CONFLICTS)


@dataclass(frozen=True)
class RunSummary:
    """What one :func:`run_job` call read and wrote.

    Attributes:
        job: ``kind/name``.
        written: Whether the job wrote state (False: nothing was new).
        attempts: Attempts made (> 1 after concurrency conflicts).
        result: The job's own result (SketchRunResult, GraphRunResult or PredictRunResult).
        run: The manifest row this call wrote, or None (nothing new and nothing to record).
        seconds: Wall time of the call.
    """

    job: str
    written: bool
    attempts: int
    result: Any
    run: ManifestRun | None
    seconds: float

    def line(self) -> str:
        """One line for the terminal: what was read, what was written, where."""
        r = self.result
        if not self.written and self.run is None:
            return (f"{self.job}: nothing new (source version {r.source_version}); nothing "
                    f"written ({self.seconds:.1f}s)")
        parts = [f"{self.job}: source {'..'.join(str(v) for v in _span(r))}"]
        read = getattr(r, "events_read", None)
        if read is not None and self.written:
            parts.append(f"{read:,} events read")
        late = getattr(r, "late", None)
        if late:
            parts.append(f"{late:,} late")
        if self.run is not None:
            versions = ", ".join(f"{t} v{v}" for t, v in sorted(self.run.state_versions.items()))
            parts.append(f"run {self.run.run_id} ({self.run.status}): {versions}")
        if self.attempts > 1:
            parts.append(f"{self.attempts} attempts")
        return "; ".join(parts) + f" ({self.seconds:.1f}s)"


def _span(result: Any) -> tuple[int, ...]:
    start = getattr(result, "source_from", None)
    end = int(result.source_version)
    return (end,) if start is None or start == end else (int(start), end)


def run_job(spark: "SparkSession", settings: Settings, job: StateJob | str, *,
            until_version: int | None = None, quiet: bool = False,
            run_conf: RunConf | None = None,
            sleep: Callable[[float], None] = time.sleep) -> RunSummary:
    """Run one state job with bounded retries, then record it in the run manifest.

    Args:
        spark: A session from :func:`jobs.session.build_session`.
        settings: Resolved settings.
        job: The job, or its ``kind/name``.
        until_version: Process the source only up to this version.
        quiet: No progress output.
        run_conf: Rules of ``conf/jobs.toml`` (default: read them).
        sleep: How to wait between attempts (tests pass a recorder).

    Raises:
        RetriesExhaustedError: every attempt met a concurrency conflict.
        CepError: the job's own typed errors (bad source version, settings changed, ...).
    """
    run_conf = run_conf or load_run_conf(settings)
    if isinstance(job, str):
        job = resolve_job(spark, settings, job)
    # A manifest setting that names a source or state table is refused before the job runs.
    check_kind(spark, run_conf.manifest, MANIFEST_KIND)
    started = time.monotonic()
    started_at = _dt.datetime.now(_dt.timezone.utc)
    attempt = 0
    while True:
        attempt += 1
        try:
            result = job.run(spark, settings, until_version=until_version, quiet=quiet)
            break
        except Exception as exc:  # noqa: BLE001 - only conflicts are retried, the rest re-raised
            if not is_concurrency_conflict(exc):
                raise
            if attempt >= run_conf.max_attempts:
                raise RetriesExhaustedError(
                    f"{job.key}: a Delta concurrency conflict on each of {attempt} attempts; "
                    f"last: {str(exc).splitlines()[0][:300]}") from None
            wait = run_conf.backoff_seconds * 2 ** (attempt - 1)
            say(quiet, f"{job.key}: attempt {attempt} met a concurrency conflict "
                       f"({str(exc).splitlines()[0][:120]}); retrying in {wait:.1f}s")
            sleep(wait)
    run = record_run(spark, job, run_conf.manifest, result=result, attempts=attempt,
                     started_at=started_at, quiet=quiet)
    summary = RunSummary(job.key, bool(result.written), attempt, result, run,
                         time.monotonic() - started)
    say(quiet, summary.line())
    return summary


def resolve_job(spark: "SparkSession", settings: Settings, key: str) -> StateJob:
    """The job ``kind/name`` of the conf files, or a standing pattern of the patterns table
    (:mod:`jobs.framework.patterns`) when ``conf/matches.toml`` has no ``name``.

    Raises:
        ConfigError: neither registers it, or its row of ``cep_patterns`` cannot run.
    """
    kind, name = parse_key(key)
    try:
        return load_job(settings, kind, name)
    except ConfigError:
        found = find_table_job(spark, settings, name) if kind == "match" else None
        if found is None:
            raise
        return found


def _state_id(spark: "SparkSession", table: TableConf) -> str:
    """The Delta table id of ``table`` (new whenever the table is created again)."""
    from delta.tables import DeltaTable

    found = latest_metadata(table)
    if found is not None and found.get("id"):
        return str(found["id"])
    return str(DeltaTable.forPath(spark, str(table.location)).detail().select("id").first()[0])


def _generation(runs: Sequence[ManifestRun], state_id: str) -> int:
    """The lineage number of a job's state whose meta table has id ``state_id``."""
    for run in reversed(runs):
        if run.state_id == state_id:
            return run.generation
    return max((r.generation for r in runs), default=0) + 1


def _commit_timestamps(spark: "SparkSession", tables: dict[str, TableConf],
                       versions: dict[str, int | None]) -> dict[str, _dt.datetime | None]:
    """The commit timestamp Delta time travel uses for each ``(table, version)``, in UTC.

    Read from the tables' log folders (:func:`delta_tables.delta_log.commit_timestamp`); a
    version whose commit file is gone (log cleanup) is looked up in the table's history.
    """
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    epoch = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
    found: dict[str, _dt.datetime | None] = {}
    for name, version in versions.items():
        found[name] = None if version is None else commit_timestamp(tables[name], version)
        if version is not None and found[name] is None:
            row = (DeltaTable.forPath(spark, str(tables[name].location)).history()
                   .where(F.col("version") == version).select(F.unix_micros("timestamp"))
                   .first())
            found[name] = None if row is None else epoch + _dt.timedelta(microseconds=int(row[0]))
    return found


def record_run(spark: "SparkSession", job: StateJob, manifest: TableConf, *, result: Any = None,
               attempts: int | None = None, started_at: _dt.datetime | None = None,
               quiet: bool = True) -> ManifestRun | None:
    """Append the manifest rows of the job's complete runs that the manifest lacks.

    Every version of the job's meta table is one complete run (the meta table is overwritten
    once, last, by each run). Normally only the newest is unrecorded: the run just made. After
    a crash there can be more, and each is recorded, oldest first, even when the source has
    grown since:

    - a run killed between its meta table and its manifest row;
    - a run killed between two state tables and finished by the next run, which then writes
      the meta table twice (the finished run's, then its own).

    So the versions after the last one the manifest records for the job's current state are
    recorded; a state no row records yet (built before the manifest existed, or rebuilt) gets
    the row of its newest version only. A row describes the state its meta version
    describes: its ``source_version``, the ``<suffix>_version`` of each other state table, and
    the meta table's own version.

    Returns:
        The last row written, or None when the manifest already holds them all (or the job has
        no complete run yet).
    """
    meta_table = job.tables["meta"]
    latest = current_version(spark, meta_table)
    if latest is None:
        return None
    state_id = _state_id(spark, meta_table)
    check_kind(spark, manifest, MANIFEST_KIND)
    runs = read_runs(spark, manifest, job.key)
    generation = _generation(runs, state_id)
    recorded = [r.state_versions.get(meta_table.name) for r in runs if r.generation == generation]
    recorded = [int(v) for v in recorded if v is not None]
    written = None
    for meta_version in range(max(recorded) + 1 if recorded else latest, latest + 1):
        run = _record_version(spark, job, manifest, meta_version, state_id, generation, runs,
                              result=result, attempts=attempts, started_at=started_at,
                              quiet=quiet)
        if run is not None:
            runs.append(run)
            written = run
    return written


def _record_version(spark: "SparkSession", job: StateJob, manifest: TableConf, meta_version: int,
                    state_id: str, generation: int, runs: list[ManifestRun], *, result: Any,
                    attempts: int | None, started_at: _dt.datetime | None,
                    quiet: bool) -> ManifestRun | None:
    """Append the row of the run that left ``meta_version`` in the meta table, unless it has
    one (or the version holds no row: the table's creation)."""
    meta_table = job.tables["meta"]
    rows = read_table(spark, meta_table, version=meta_version).collect()
    if not rows:
        return None
    meta = rows[0].asDict()
    source_version = int(meta["source_version"])
    if any(r.generation == generation and r.source_version >= source_version for r in runs):
        return None
    by_name = {table.name: table for table in job.tables.values()}
    versions: dict[str, int | None] = {
        table.name: (None if meta.get(f"{suffix}_version") is None
                     else int(meta[f"{suffix}_version"]))
        for suffix, table in job.tables.items() if suffix != "meta"}
    versions[meta_table.name] = meta_version
    wrote = result is not None and bool(result.written) \
        and int(result.source_version) == source_version
    read = getattr(result, "events_read", None) if wrote else None
    late = getattr(result, "late", None) if wrote else None
    run = ManifestRun(
        run_id=run_id(job.kind, job.name, generation, source_version), job=job.key,
        kind=job.kind, name=job.name, generation=generation, state_id=state_id,
        source_table=job.source.name,
        source_from=getattr(result, "source_from", None) if wrote else None,
        source_version=source_version, state_versions=versions,
        state_timestamps=_commit_timestamps(spark, by_name, versions),
        status="complete" if wrote else "recorded", attempts=attempts if wrote else None,
        rows_read=None if read is None else int(read), late=None if late is None else int(late),
        started_at=started_at if wrote else None,
        finished_at=_dt.datetime.now(_dt.timezone.utc),
        summary="" if not wrote else _result_text(result))
    ensure_table(spark, manifest, MANIFEST_COLUMNS, {"cep.table": MANIFEST_KIND})
    frame = spark.createDataFrame([run.as_row()], spark_schema(MANIFEST_COLUMNS))
    save(frame, manifest, "append", f"{MANIFEST_KEY}-{job.kind}-{job.name}-g{generation}",
         source_version, json.dumps({MANIFEST_KEY: job.key, "run_id": run.run_id,
                                     "source_version": source_version}))
    say(quiet, f"{job.key}: manifest row {run.run_id} ({run.status}) written to {manifest.name}")
    return run


def _result_text(result: Any) -> str:
    """The job result's counters as ``name=value`` pairs (what the run read and wrote)."""
    names = [n for n in ("events_read", "events_accepted", "events_run", "late", "incomplete",
                         "streams", "keys", "windows", "node_rows", "instance_rows",
                         "state_rows") if isinstance(getattr(result, n, None), int)]
    return ", ".join(f"{n}={getattr(result, n)}" for n in names)


@dataclass
class RunAllReport:
    """What ``run-all`` did: one summary per job that ran, one error per job that failed."""

    summaries: list[RunSummary] = field(default_factory=list)
    failures: dict[str, CepError | Exception] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when every job ran."""
        return not self.failures


def run_all(spark: "SparkSession", settings: Settings, jobs: Sequence[str] | None = None, *,
            quiet: bool = False, run_conf: RunConf | None = None) -> RunAllReport:
    """Run the jobs of ``conf/jobs.toml`` ``[run_all] jobs`` (or ``jobs``) one after another,
    then (without ``jobs``) the enabled standing patterns of the patterns table
    (:func:`jobs.framework.patterns.read_patterns`, read and checked before any job runs).

    A job that fails does not stop the others; its error is kept in the report and printed,
    and the command exits non-zero. A row of the patterns table that cannot run is such a
    failure, under ``match/<name>``.
    """
    run_conf = run_conf or load_run_conf(settings)
    todo: list[str | StateJob] = list(jobs) if jobs is not None else list(run_conf.jobs)
    report = RunAllReport()
    if jobs is None:
        for row in read_patterns(spark, settings):
            if row.job is not None:
                todo.append(row.job)
            elif row.error is not None:
                report.failures[row.key] = row.error
                say(quiet, f"{row.key} failed: {row.error}")
            else:
                say(quiet, f"{row.key}: disabled in cep_patterns; not run")
    for i, job in enumerate(todo, 1):
        key = job if isinstance(job, str) else job.key
        say(quiet, f"[{i}/{len(todo)}] {key}")
        try:
            report.summaries.append(run_job(spark, settings, job, quiet=quiet,
                                            run_conf=run_conf))
        except Exception as exc:  # noqa: BLE001 - one failing job must not stop the others
            report.failures[key] = exc
            say(quiet, f"[{i}/{len(todo)}] {key} failed: {str(exc).splitlines()[0]}")
    say(quiet, f"run-all: {len(report.summaries)} job(s) ran, {len(report.failures)} failed")
    return report

