"""The errors every incremental state job can raise, defined once for the three of them.

A job's errors keep the codes its documentation lists (``CEP-SKETCH-04x``, ``CEP-PRED-04x``,
``CEP-TREND-040``): the class says what went wrong, the job's :class:`ErrorCodes` say which
code it carries. :meth:`ErrorCodes.error` builds an error with the job's code.

Example:
    >>> codes = ErrorCodes(job="CEP-PRED-040", not_append_only="CEP-PRED-041",
    ...                    settings_changed="CEP-PRED-042", source_version="CEP-PRED-043",
    ...                    crash="CEP-PRED-045")
    >>> str(codes.error(SourceVersionError, "no source table"))
    'CEP-PRED-043: no source table'
    >>> isinstance(codes.error(InjectedCrash, "stop"), RuntimeError)
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, TypeVar

from cep.errors import CepError

__all__ = ["JobError", "SourceVersionError", "SourceReplacedError", "SourceNotAppendOnlyError",
           "SettingsChangedError", "InjectedCrash", "ErrorCodes"]


class JobError(CepError):
    """An incremental job cannot run (base of the jobs' errors); also a source column that is
    missing or of a type the job cannot use.

    Args:
        message: What went wrong, naming the job.
        code: The job's code for this error (default: the class's own).
    """

    code = "CEP-JOB-042"
    field: ClassVar[str] = "job"
    """The :class:`ErrorCodes` field that holds a job's code for this class."""

    def __init__(self, message: str, *, code: str | None = None) -> None:
        if code is not None:
            # Per instance: the same class carries the sketch's, the graph's or the
            # prediction set's code, the one its documentation lists.
            self.code = code
        super().__init__(message)


class SourceNotAppendOnlyError(JobError):
    """The change data feed of the source holds an update or a delete: state jobs summarise
    append-only sources. Rebuild the state (drop its tables) after rewriting the source."""

    field = "not_append_only"


class SourceVersionError(JobError):
    """The source table is missing, ``--until-version`` is outside the source's versions, or the
    change data feed cannot be read for the needed range (not enabled, or vacuumed)."""

    field = "source_version"


class SourceReplacedError(SourceVersionError):
    """The source table at the registered location is another table than the one the state
    was built from (its Delta table id changed: the folder was removed and a table created
    there again), so its versions do not continue the ones the state has read."""


class SettingsChangedError(JobError):
    """The registration in ``conf/`` no longer agrees with the settings the state was built
    with (frozen in its meta table); a changed registration needs a new name."""

    field = "settings_changed"


class InjectedCrash(JobError, RuntimeError):
    """Raised at a commit point named by the crash tests (:mod:`jobs.framework.faults`).

    Also a RuntimeError: what the graph job's crash hook raised before it had a code.
    """

    field = "crash"


E = TypeVar("E", bound=JobError)


@dataclass(frozen=True)
class ErrorCodes:
    """The code each error class carries for one job (what the job's docs list).

    Attributes:
        job: :class:`JobError` (and worker errors with a code the job does not know).
        not_append_only: :class:`SourceNotAppendOnlyError`.
        settings_changed: :class:`SettingsChangedError`.
        source_version: :class:`SourceVersionError`.
        crash: :class:`InjectedCrash`.
    """

    job: str
    not_append_only: str
    settings_changed: str
    source_version: str
    crash: str

    def error(self, kind: type[E], message: str) -> E:
        """An error of class ``kind`` with this job's code for it."""
        return kind(message, code=getattr(self, kind.field))
