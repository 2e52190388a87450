"""The watermark of each source commit, as every job with a lateness computes it.

docs/watermarks.md: the watermark of a commit is the newest complete timestamp of all earlier
commits (this run's and, through ``max_ts``, the earlier runs') minus the lateness; an event of
the commit below it is late. Computing it per commit, not per run, is what makes a run over
several commits set aside exactly what runs over each of them would.

Example:
    >>> commit_bounds([Commit(1, 3, 0, 10), Commit(2, 2, 0, 25), Commit(3, 1, 0, None)], 5, 4)
    ({1: 1, 2: 6, 3: 21}, 25)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Commit:
    """What one source commit of a run brings: rows, incomplete rows, newest complete ts."""

    version: int
    rows: int
    incomplete: int
    newest: int | None


def commit_bounds(commits: list[Commit], max_ts: int | None,
                  lateness: int | None) -> tuple[dict[int, int], int | None]:
    """The watermark of each commit (none for a commit without an earlier complete row, and
    none at all without a lateness) and the newest complete timestamp after all of them.

    The watermark of a commit is the newest complete timestamp of all earlier commits (this
    run's and, through ``max_ts``, the earlier runs') minus ``lateness``. A late row is below
    the newest timestamp before it, so counting late rows in that maximum changes nothing.
    """
    bounds: dict[int, int] = {}
    running = max_ts
    for commit in commits:
        if running is not None and lateness is not None:
            bounds[commit.version] = running - lateness
        if commit.newest is not None:
            running = commit.newest if running is None else max(running, commit.newest)
    return bounds, running
