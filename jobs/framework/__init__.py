"""The job framework: the incremental-job protocol and what runs it.

What lives here:

- :mod:`~jobs.framework.incremental`: the protocol every state job follows (versions, nothing
  new, resuming an interrupted run, run once, meta last), :class:`IncrementalJob`.
- :mod:`~jobs.framework.errors`: the errors the state jobs share, with each job's codes.
- :mod:`~jobs.framework.faults`: the crash tests' commit points.
- :mod:`~jobs.framework.txn`: idempotent Delta writes and the state tables' plumbing.
"""

from __future__ import annotations

from jobs.framework.errors import (ErrorCodes, InjectedCrash, JobError, SettingsChangedError,
                                   SourceNotAppendOnlyError, SourceVersionError)
from jobs.framework.faults import commit_point
from jobs.framework.incremental import IncrementalJob, Outcome, Run, RunResult

__all__ = ["IncrementalJob", "Run", "RunResult", "Outcome", "ErrorCodes", "JobError",
           "SourceVersionError", "SourceNotAppendOnlyError", "SettingsChangedError",
           "InjectedCrash", "commit_point"]
