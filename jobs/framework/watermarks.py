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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from jobs.framework.incremental import Outcome, Run

LATE, INCOMPLETE = "late", "incomplete"
"""The ``reason`` of a row of a job's ``<name>_late`` table."""


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


def classify_late(spark: "SparkSession", new: "DataFrame", bounds: dict[int, int],
                  complete: "Column", ts: str) -> "DataFrame":
    """``new`` with ``bound`` (its commit's watermark, NULL for none) and ``reason``: NULL
    (applied), ``late`` (``ts`` below ``bound``) or ``incomplete`` (not ``complete``)."""
    from pyspark.sql import functions as F

    if bounds:
        table = spark.createDataFrame(sorted(bounds.items()), "commit BIGINT, bound BIGINT")
        frame = new.join(F.broadcast(table), "commit", "left")
    else:
        frame = new.withColumn("bound", F.lit(None).cast("bigint"))
    reason = (F.when(~complete, F.lit(INCOMPLETE))
              .when(F.col(ts) < F.col("bound"), F.lit(LATE)))
    return frame.withColumn("reason", reason)


class WatermarkedJob:
    """What a job with a watermark reports the same way (mixed into an
    :class:`~jobs.framework.incremental.IncrementalJob` before it)."""

    name: str

    def idle_fields(self, meta: dict[str, Any] | None) -> dict[str, Any]:
        """A run with nothing new still reports the watermark."""
        return {"watermark": meta.get("watermark") if meta else None}

    def done_line(self, run: "Run", outcome: "Outcome", seconds: float) -> str:
        """``state complete up to ...`` with the job's own summary."""
        return (f"{self.name}: state complete up to source version {run.target} "
                f"({outcome.summary}) in {seconds:.1f} s; ")
