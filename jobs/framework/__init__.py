"""The job framework: the incremental-job protocol and what runs, records and registers jobs.

What lives here (it imports no state job, loader or server: tests/cep/test_layering.py):

- :mod:`~jobs.framework.incremental`: the protocol every state job follows (versions, nothing
  new, resuming an interrupted run, run once, meta last): :class:`IncrementalJob`.
- :mod:`~jobs.framework.errors`: the errors the state jobs share, each job with its own codes.
- :mod:`~jobs.framework.faults`: the crash tests' commit points.
- :mod:`~jobs.framework.txn`: idempotent Delta writes and the state tables' plumbing.
- :mod:`~jobs.framework.runner`: ``run_job`` / ``run_all`` (retries, then the run manifest).
- :mod:`~jobs.framework.registry`: every registered state job of ``conf/``.
- :mod:`~jobs.framework.run_conf`: the rules of ``conf/jobs.toml``.
"""

from __future__ import annotations

from jobs.framework.errors import (ErrorCodes, InjectedCrash, JobError, SettingsChangedError,
                                   SourceNotAppendOnlyError, SourceVersionError)
from jobs.framework.faults import commit_point
from jobs.framework.incremental import IncrementalJob, Outcome, Run, RunResult
from jobs.framework.registry import StateJob, load_job, registered_jobs
from jobs.framework.run_conf import RunConf, load_run_conf
from jobs.framework.runner import RunSummary, run_all, run_job

__all__ = ["IncrementalJob", "Run", "RunResult", "Outcome", "ErrorCodes", "JobError",
           "SourceVersionError", "SourceNotAppendOnlyError", "SettingsChangedError",
           "InjectedCrash", "commit_point", "StateJob", "load_job", "registered_jobs", "RunConf",
           "load_run_conf", "RunSummary", "run_job", "run_all"]
