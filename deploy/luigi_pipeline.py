"""Luigi pipeline that keeps the state jobs of ``conf/jobs.toml`` current (docs/scheduling.md).

One Luigi task per job of ``[run_all] jobs``, run in that order by one worker; each task is
complete when the run manifest already records a run of the job's current state that covers
the source's current version, which is exactly when ``python -m jobs run-all`` would find
nothing to do for it. So Luigi's "already done" and the jobs' own never disagree: a task Luigi
skips would have written nothing, and a task it runs writes state or the missing manifest row.

Run from the project directory (Luigi's own process lock refuses a second identical command
line; ``deploy/luigi.cfg`` makes a failed task a non-zero exit)::

    LUIGI_CONFIG_PATH=deploy/luigi.cfg PYTHONPATH=deploy \\
        .venv/bin/luigi --module luigi_pipeline RunAll --local-scheduler

    # only some jobs, in this order:
    ... RunAll --jobs '["predict/heat"]' --local-scheduler

Why the tasks call :func:`jobs.framework.runner.run_job` in-process rather than ``python -m jobs`` in a
subprocess: ``complete()`` needs a Spark session anyway (it reads the manifest and the source's
Delta version), so the worker process has one; a subprocess per task would start a second JVM
(10-25 s each) to do what that session can do, and ``run_job`` is the very function the command
line calls. The price: tasks must run in the process that holds the session, so keep Luigi's
default of one worker (``--workers`` above 1 forks, and a forked child cannot use the parent's
JVM gateway; :class:`RunStateJob` refuses to run there). One worker is also what the jobs need:
runs of one job must not overlap (docs/jobs.md section 5).

The jobs do not depend on each other's output (each reads its own source), so the tasks have no
``requires()`` between them: a failing job does not stop the later ones, as in ``run-all``. Their
order comes from Luigi priorities, which one worker follows.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import luigi

from delta_tables.catalog import current_version, is_delta_table
from delta_tables.manifest import ManifestError, find_run
from delta_tables.settings import Settings, TableConf, load_settings
from jobs.framework.registry import load_job, parse_key
from jobs.framework.run_conf import load_run_conf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["RunAll", "RunStateJob", "job_is_current", "use_session"]

_CONTEXT: dict[str, Any] = {}
"""The session and settings the tasks use, and the pid of the process that made the session."""


def use_session(spark: "SparkSession", settings: Settings) -> None:
    """Make the tasks use this session and these settings (an embedding process, or a test).

    Without it, the first task builds a session from ``conf/`` and the ``CEP_*`` environment,
    as ``python -m jobs`` does.
    """
    _CONTEXT.update(spark=spark, settings=settings, pid=os.getpid())


def _context() -> tuple["SparkSession", Settings]:
    """The session and settings of this process, built on first use."""
    if not _CONTEXT:
        from jobs.session import build_session

        settings = load_settings()
        # As the job commands of `python -m jobs` do: the jobs read and write by path and
        # register their own tables, so the session registers none (each would cost a catalog
        # call per table of the warehouse at every scheduled start).
        use_session(build_session(settings, register=False), settings)
    return _CONTEXT["spark"], _CONTEXT["settings"]


def _table_id(spark: "SparkSession", table: TableConf) -> str:
    """The Delta table id of ``table``: a new one whenever the table is created again."""
    from delta.tables import DeltaTable

    return str(DeltaTable.forPath(spark, str(table.location)).detail().select("id").first()[0])


def job_is_current(spark: "SparkSession", settings: Settings, key: str) -> bool:
    """Whether the manifest says job ``key`` has nothing to do: Luigi's ``complete()``.

    True when the manifest's latest run of the job (:func:`delta_tables.manifest.find_run`)
    belongs to the job's current state (its ``state_id`` is the meta table's Delta id: the state
    was not dropped and rebuilt since) and completed the source's current Delta version. Then
    :func:`jobs.framework.runner.run_job` would write nothing: no state, no manifest row. In every other
    case it writes something: new state, or the manifest row a crash left out.

    A job whose source does not exist is not current, so its task runs and fails with the job's
    own error rather than being skipped.
    """
    job = load_job(settings, *parse_key(key))
    source_version = current_version(spark, job.source)
    if source_version is None:
        return False
    try:
        run = find_run(spark, load_run_conf(settings).manifest, job.key)
    except ManifestError:  # no manifest yet, or no run of this job in it
        return False
    meta = job.tables["meta"]
    if not is_delta_table(spark, meta) or _table_id(spark, meta) != run.state_id:
        return False
    return run.source_version >= source_version


class RunStateJob(luigi.Task):
    """Bring one state job (``KIND/NAME``) up to date through the job framework."""

    job = luigi.Parameter(description="the job as KIND/NAME, e.g. predict/heat")
    # Not part of the task's identity: the same job is the same task whatever list it came from,
    # so a central scheduler never runs it twice at once.
    position = luigi.IntParameter(default=0, significant=False,
                                  description="place in the run-all list (earlier runs first)")

    @property
    def priority(self) -> int:  # type: ignore[override]
        """Earlier jobs of the list first; positive, since Luigi raises a dependency's priority
        to its dependent's (0 for :class:`RunAll`) and negative ones would all become 0."""
        return 1000 - self.position

    def complete(self) -> bool:
        """Done when the run manifest covers the source's current version (see
        :func:`job_is_current`)."""
        spark, settings = _context()
        return job_is_current(spark, settings, str(self.job))

    def run(self) -> None:
        """Run the job; progress goes to stderr, its summary line to stdout as in ``run-all``."""
        spark, settings = _context()
        if _CONTEXT.get("pid") != os.getpid():
            raise RuntimeError("RunStateJob runs in the process that holds the Spark session: "
                               "run Luigi with one worker (the default), not --workers N")
        from jobs.framework.runner import run_job

        summary = run_job(spark, settings, str(self.job))
        print(summary.line(), flush=True)


class RunAll(luigi.WrapperTask):
    """Every job of ``conf/jobs.toml`` ``[run_all] jobs`` (or of ``--jobs``), in that order."""

    jobs = luigi.ListParameter(default=(), description="KIND/NAME of the jobs to run, in order; "
                               "default: conf/jobs.toml [run_all] jobs")

    def requires(self) -> list[RunStateJob]:
        """One :class:`RunStateJob` per job, carrying its place in the list."""
        keys = list(self.jobs) or list(load_run_conf(_settings()).jobs)
        return [RunStateJob(job=key, position=i) for i, key in enumerate(keys)]


def _settings() -> Settings:
    """The tasks' settings, without starting Spark when no session is needed yet."""
    return _CONTEXT["settings"] if _CONTEXT else load_settings()
