"""The run manifest: one row per completed state-job run, and consistent reads through it.

Every state job (sketch, graph, predict) ends a run by overwriting its one-row meta table,
which records the source version the state is complete up to and the Delta version the run
left in each of its other state tables. :mod:`jobs.framework.runner` then appends one row to the
manifest table (``cep_runs`` in ``conf/jobs.toml``), LAST: the job, the source version range,
and ``state_versions``, the version of every state table of the job as of that run (the meta
table's own included). A reader that picks a manifest row and reads each table ``VERSION AS
OF`` its entry sees the state of exactly one complete run, never a mix: a crashed run leaves
no row, and the state tables' later versions do not matter.

``state_timestamps`` holds the commit timestamp of each of those versions, so plain SQL can
read a run in one statement: ``VERSION AS OF`` takes only a literal, but ``TIMESTAMP AS OF``
takes a scalar subquery, and Delta resolves a commit's own timestamp to that commit::

    SELECT * FROM heat_models TIMESTAMP AS OF (
      SELECT state_timestamps['heat_models'] FROM cep_runs
      WHERE job = 'predict/heat' ORDER BY source_version DESC LIMIT 1)

The generation numbers the lineage of a job's state: it starts at 1 and goes up by one
whenever the job's meta table is a new Delta table (its table id differs from the one the
last manifest row of the job recorded), i.e. after the state was dropped and rebuilt. The
manifest's idempotent-write identity includes it, so a rebuilt job's runs are recorded again.

Example:
    >>> run = ManifestRun("predict/heat/g1/v3", "predict/heat", "predict", "heat", 1, "id-1",
    ...                   "daily_temperatures", 0, 3, {"heat_meta": 4, "heat_models": 2}, {},
    ...                   "complete", 1, 365, 0, None, None, "")
    >>> run.version_of("heat_models"), run_id("predict", "heat", 1, 3)
    (2, 'predict/heat/g1/v3')
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cep.errors import CepError
from delta_tables.catalog import is_delta_table, read_table
from delta_tables.settings import Settings, TableConf

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["MANIFEST_COLUMNS", "ManifestError", "ManifestRun", "run_id", "read_runs",
           "find_run", "read_state", "register_run_views"]

MANIFEST_COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_id", "STRING"), ("job", "STRING"), ("kind", "STRING"), ("name", "STRING"),
    ("generation", "INT"), ("state_id", "STRING"), ("source_table", "STRING"),
    ("source_from", "BIGINT"), ("source_version", "BIGINT"),
    ("state_versions", "MAP<STRING, BIGINT>"), ("state_timestamps", "MAP<STRING, TIMESTAMP>"),
    ("status", "STRING"), ("attempts", "INT"), ("rows_read", "BIGINT"), ("late", "BIGINT"),
    ("started_at", "TIMESTAMP"), ("finished_at", "TIMESTAMP"), ("summary", "STRING"))
"""Columns of the manifest table. ``source_from`` is the first source version the run read
(NULL when the run only recorded a run another process completed); ``status`` is
``complete`` for a run that wrote the state, ``recorded`` for a row written for a run whose
state was complete but whose manifest row was missing (a crash between the meta table and
the manifest)."""


class ManifestError(CepError):
    """No manifest, no run of that job, or a run that names a table the job does not have."""

    code = "CEP-JOB-045"


def _type(column: str) -> str:
    return dict(MANIFEST_COLUMNS)[column]


def run_id(kind: str, name: str, generation: int, source_version: int) -> str:
    """The run's id: ``kind/name/g<generation>/v<source version>`` (never from the clock)."""
    return f"{kind}/{name}/g{generation}/v{source_version}"


@dataclass(frozen=True)
class ManifestRun:
    """One manifest row (see :data:`MANIFEST_COLUMNS`)."""

    run_id: str
    job: str
    kind: str
    name: str
    generation: int
    state_id: str
    source_table: str
    source_from: int | None
    source_version: int
    state_versions: dict[str, int | None]
    state_timestamps: dict[str, _dt.datetime | None]
    status: str
    attempts: int | None
    rows_read: int | None
    late: int | None
    started_at: _dt.datetime | None
    finished_at: _dt.datetime | None
    summary: str

    def version_of(self, table: str) -> int | None:
        """The version of state table ``table`` (its SQL name) as of this run."""
        if table not in self.state_versions:
            raise ManifestError(f"run {self.run_id} has no state table {table!r}; its tables: "
                                f"{', '.join(sorted(self.state_versions))}")
        return self.state_versions[table]

    def as_row(self) -> tuple[Any, ...]:
        """The row in :data:`MANIFEST_COLUMNS` order."""
        return tuple(getattr(self, name) for name, _ in MANIFEST_COLUMNS)

    @staticmethod
    def from_row(row: Any) -> "ManifestRun":
        """A run from a row of :func:`read_runs`' query (timestamps as UTC microseconds)."""
        values = row.asDict(recursive=True)
        values["state_versions"] = dict(values["state_versions"] or {})
        values["state_timestamps"] = {k: _utc(v) for k, v in
                                      (values["state_timestamps"] or {}).items()}
        values["started_at"] = _utc(values["started_at"])
        values["finished_at"] = _utc(values["finished_at"])
        return ManifestRun(**{name: values[name] for name, _ in MANIFEST_COLUMNS})


def _utc(micros: int | None) -> _dt.datetime | None:
    """An aware UTC datetime from microseconds since the epoch (exact, whatever the local zone)."""
    if micros is None:
        return None
    return _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(microseconds=micros)


def read_runs(spark: "SparkSession", manifest: TableConf, job: str | None = None, *,
              version: int | None = None) -> list[ManifestRun]:
    """The manifest's runs (of ``job``, ``kind/name``, if given), oldest source version first.

    Args:
        spark: The session.
        manifest: The manifest table (``jobs.framework.run_conf.load_run_conf(settings).manifest``).
        job: Only this job's runs.
        version: Read the manifest as of this Delta version.
    """
    if not is_delta_table(spark, manifest):
        return []
    from pyspark.sql import functions as F

    frame = read_table(spark, manifest, version=version).select(
        *[F.col(name) for name, _ in MANIFEST_COLUMNS if "TIMESTAMP" not in _type(name)],
        F.expr("transform_values(state_timestamps, (k, v) -> unix_micros(v))")
        .alias("state_timestamps"),
        F.unix_micros("started_at").alias("started_at"),
        F.unix_micros("finished_at").alias("finished_at"))
    if job is not None:
        frame = frame.where(F.col("job") == F.lit(job))
    runs = [ManifestRun.from_row(row) for row in frame.collect()]
    return sorted(runs, key=lambda r: (r.job, r.generation, r.source_version))


def find_run(spark: "SparkSession", manifest: TableConf, job: str, *,
             run: str | None = None, source_version: int | None = None) -> ManifestRun:
    """One run of ``job``: by id, by the source version it completed, or else the latest.

    "Latest" is the highest source version of the highest generation. A ``source_version``
    that no run completed selects the last run at or before it (the state a reader would have
    seen then).

    Raises:
        ManifestError: no manifest, no run of ``job``, or no run matching.
    """
    runs = read_runs(spark, manifest, job)
    if not runs:
        raise ManifestError(f"no run of job {job!r} in the manifest {manifest.name}")
    if run is not None:
        found = [r for r in runs if r.run_id == run]
        if not found:
            raise ManifestError(f"job {job!r} has no run {run!r}; its runs: "
                                f"{', '.join(r.run_id for r in runs[-5:])}")
        return found[0]
    generation = max(r.generation for r in runs)
    current = [r for r in runs if r.generation == generation]
    if source_version is None:
        return current[-1]
    before = [r for r in current if r.source_version <= source_version]
    if not before:
        raise ManifestError(f"job {job!r} has no run at or before source version "
                            f"{source_version}; its first run completed version "
                            f"{current[0].source_version}")
    return before[-1]


def read_state(spark: "SparkSession", tables: dict[str, TableConf],
               run: ManifestRun) -> dict[str, "DataFrame"]:
    """Each state table of a job (``tables``: suffix -> table) as of ``run``.

    A table the run left no version in (NULL in ``state_versions``) is left out.
    """
    out: dict[str, "DataFrame"] = {}
    for suffix, table in tables.items():
        version = run.version_of(table.name)
        if version is not None:
            out[suffix] = read_table(spark, table, version=version)
    return out


def register_run_views(spark: "SparkSession", tables: dict[str, TableConf], run: ManifestRun,
                       suffix: str = "_at_run") -> list[str]:
    """Temp views ``<table><suffix>`` over each state table as of ``run``; returns their names.

    Every SQL query over those views, in any order and any number of statements, sees one
    complete run.
    """
    names = []
    for frame_suffix, frame in read_state(spark, tables, run).items():
        view = f"{tables[frame_suffix].name}{suffix}"
        frame.createOrReplaceTempView(view)
        names.append(view)
    return names
