"""Fault injection for the crash tests: a run stops at a commit point the test names.

A state job marks each of its commit points with ONE call, :func:`commit_point` (right after
that table's write, also when the write had nothing to do). The framework arms the run
(:func:`armed`) with the point a test asks for: the run's ``crash_after`` argument or, for a
job run by the command line, the environment variable ``CEP_<KIND>_CRASH_AFTER``. Unarmed,
every call is a no-op. A point ``<table>-files`` stops inside that table's write instead:
its data files are written into the table's folder without a Delta commit, what a process
killed inside the write leaves (:func:`before_commit`, called by the framework's writes).

Example:
    >>> from jobs.framework.errors import ErrorCodes
    >>> codes = ErrorCodes("CEP-X-1", "CEP-X-2", "CEP-X-3", "CEP-X-4", "CEP-X-5")
    >>> with armed(Faults("nodes", "CEP_X_CRASH_AFTER", codes)):
    ...     commit_point("open")                 # not the point asked for: nothing happens
    ...     commit_point("nodes")
    Traceback (most recent call last):
    ...
    jobs.framework.errors.InjectedCrash: CEP-X-5: injected crash after the nodes write (CEP_X_CRASH_AFTER=nodes)
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from jobs.framework.errors import ErrorCodes, InjectedCrash

__all__ = ["Faults", "armed", "commit_point", "before_commit", "FILES"]

FILES = "-files"
"""Suffix of a point that stops inside a table's write, after its data files."""

_ARMED: contextvars.ContextVar["Faults | None"] = contextvars.ContextVar("cep_faults",
                                                                       default=None)


@dataclass(frozen=True)
class Faults:
    """The commit point one run stops at.

    Attributes:
        point: The point (a table suffix, or ``<suffix>-files``); None: the run never stops.
        env: The environment variable that can name it (quoted in the crash's message).
        codes: The job's error codes (:class:`InjectedCrash` carries ``codes.crash``).
    """

    point: str | None
    env: str
    codes: ErrorCodes

    def crash(self, where: str) -> None:
        """Raise :class:`InjectedCrash` when ``where`` is the point asked for."""
        if self.point == where:
            raise self.codes.error(InjectedCrash,
                                   f"injected crash after the {where} write ({self.env}={where})")


@contextmanager
def armed(faults: Faults) -> Iterator[None]:
    """Arm ``faults`` for the code run inside the ``with`` block (this thread/context only)."""
    token = _ARMED.set(faults)
    try:
        yield
    finally:
        _ARMED.reset(token)


def commit_point(where: str) -> None:
    """Mark the commit point ``where`` (a table just written); raises only when armed for it.

    Raises:
        InjectedCrash: the armed run asked to stop after ``where``.
    """
    faults = _ARMED.get()
    if faults is not None:
        faults.crash(where)


def before_commit(where: str, write_files: Callable[[], None]) -> None:
    """Inside the write of table ``where``: when armed for ``<where>-files``, write its data
    files (``write_files``) without a commit and stop.

    Raises:
        InjectedCrash: the armed run asked to stop inside the write of ``where``.
    """
    faults = _ARMED.get()
    if faults is not None and faults.point == where + FILES:
        write_files()
        faults.crash(where + FILES)
