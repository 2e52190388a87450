"""Spark's progress while a long query runs, for notebooks (and any place without Spark's console bar).

In a terminal Spark draws its own console progress bar when stderr is a terminal
(``spark.ui.showConsoleProgress``, set by ``jobs.session.build_session``). In a notebook that bar
goes to the kernel's log, not to the notebook. :func:`spark_progress` fills the gap: while its
block runs, a daemon thread polls ``SparkContext.statusTracker()`` and shows the tasks done of
every active stage of the block's jobs as a text bar that updates in place: an IPython display
handle inside a kernel, carriage-return text elsewhere. When the block ends it shows a summary
of every job and stage the block ran, read from Spark's status store (so it does not depend on
how often the thread polled).

The block's jobs are found through a job group set on the calling thread for the duration of
the block (and restored afterwards): jobs other threads run in the same application are not
counted.

Example:
    >>> stage = StageProgress(stage_id=3, name="collect at x.py:1", tasks=8, done=5, running=2,
    ...                       failed=0)
    >>> stage.bar(width=16)
    'Stage 3 [##########......] 5/8 tasks, 2 running'
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, TextIO

from viz.errors import VizArgumentError

_PROPERTIES = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")


@dataclass(frozen=True)
class StageProgress:
    """One stage's tasks as the status tracker last reported them.

    Attributes:
        stage_id: Spark's stage id.
        name: The stage's name (the action and call site, e.g. ``collect at <stdin>:1``).
        tasks: Tasks of the stage.
        done, running, failed: Tasks completed, running and failed so far.
    """

    stage_id: int
    name: str
    tasks: int
    done: int
    running: int
    failed: int

    @property
    def skipped(self) -> bool:
        """Whether the stage never ran a task (Spark reused an earlier stage's shuffle output)."""
        return self.done == 0 and self.running == 0 and self.failed == 0

    def bar(self, width: int = 30) -> str:
        """One line: ``Stage 3 [#####.....] 5/8 tasks, 2 running`` (and failures, if any)."""
        filled = int(round(width * self.done / self.tasks)) if self.tasks else width
        text = (f"Stage {self.stage_id} [{'#' * filled}{'.' * (width - filled)}] "
                f"{self.done}/{self.tasks} tasks")
        if self.running:
            text += f", {self.running} running"
        if self.failed:
            text += f", {self.failed} failed"
        return text


@dataclass
class SparkProgress:
    """What :func:`spark_progress` saw; filled in when the block ends.

    Attributes:
        group: The job group the block's jobs ran in.
        jobs: Ids of the block's jobs.
        stages: Every stage of those jobs, in id order, as last reported (skipped ones
            included: see :attr:`StageProgress.skipped`).
        failed_jobs: Ids of the jobs Spark reports as failed.
        updates: How many times the live line changed while the block ran.
        seconds: Wall time of the block.
    """

    group: str
    jobs: tuple[int, ...] = ()
    stages: tuple[StageProgress, ...] = ()
    failed_jobs: tuple[int, ...] = ()
    updates: int = 0
    seconds: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def summary(self) -> str:
        """A few lines: the totals, then one bar per stage that ran (at most 12)."""
        ran = [s for s in self.stages if not s.skipped]
        if not self.jobs:
            return "Spark: no job ran"
        done = sum(s.done for s in ran)
        tasks = sum(s.tasks for s in ran)
        parts = [f"Spark: {len(self.jobs)} job(s), {len(ran)} stage(s), {done}/{tasks} tasks done"]
        if len(ran) < len(self.stages):
            parts.append(f"{len(self.stages) - len(ran)} stage(s) skipped")
        if self.failed_jobs:
            parts.append(f"{len(self.failed_jobs)} job(s) failed")
        head = ", ".join(parts) + f" in {self.seconds:.1f}s"
        lines = [head, *(f"  {s.bar()}  {s.name}" for s in ran[:12])]
        if len(ran) > 12:
            lines.append(f"  ... {len(ran) - 12} more stage(s)")
        return "\n".join(lines)


def _context(spark: Any) -> Any:
    try:
        return spark.sparkContext
    except Exception as exc:  # Spark Connect sessions have no SparkContext
        raise VizArgumentError(
            "spark_progress needs a classic SparkSession with a SparkContext (a Spark Connect "
            f"session has none): {type(exc).__name__}") from None


def _in_kernel() -> bool:
    """Whether this runs inside a Jupyter kernel (where display handles update in place)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


class _Display:
    """Where the bar goes: an IPython display handle, or carriage-return lines on a stream."""

    def __init__(self, out: TextIO | None, use_display: bool) -> None:
        self.handle: Any = None
        self.out = out
        self.width = 0
        if use_display:
            from IPython.display import Pretty, display

            self._pretty = Pretty
            self.handle = display(Pretty("Spark: waiting for the first job ..."), display_id=True)

    def live(self, text: str) -> None:
        if self.handle is not None:
            self.handle.update(self._pretty(text))
        elif self.out is not None:
            pad = max(0, self.width - len(text))
            self.out.write("\r" + text + " " * pad)
            self.out.flush()
            self.width = len(text)

    def final(self, text: str) -> None:
        if self.handle is not None:
            self.handle.update(self._pretty(text))
        elif self.out is not None:
            first, _, rest = text.partition("\n")
            pad = max(0, self.width - len(first))
            self.out.write("\r" + first + " " * pad + "\n" + (rest + "\n" if rest else ""))
            self.out.flush()


def _stage(tracker: Any, stage_id: int) -> StageProgress | None:
    info = tracker.getStageInfo(stage_id)
    if info is None:
        return None
    return StageProgress(int(stage_id), str(info.name), int(info.numTasks),
                         int(info.numCompletedTasks), int(info.numActiveTasks),
                         int(info.numFailedTasks))


def _stages_of(tracker: Any, group: str, known: dict[int, tuple[int, ...]]) -> dict[int, str]:
    """Refresh ``known`` (job id -> its stage ids) from the group; return job id -> status."""
    status = {}
    for job_id in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job_id)
        if info is None:
            continue
        status[int(job_id)] = info.status
        if int(job_id) not in known:
            known[int(job_id)] = tuple(int(s) for s in info.stageIds)
    return status


def _settled(tracker: Any, group: str, known: dict[int, tuple[int, ...]], *,
             patience: float = 5.0) -> tuple[dict[int, str], tuple[StageProgress, ...]]:
    """The group's jobs and stages once Spark's status store has caught up with them.

    The store is fed by the asynchronous listener bus, so right after an action returns it may
    still show the last tasks running. Read again (briefly) until no job is running and every
    stage that ran has all its tasks done, or ``patience`` seconds have passed.
    """
    begin = time.monotonic()
    while True:
        status = _stages_of(tracker, group, known)
        stage_ids = sorted({s for stages in known.values() for s in stages})
        stages = tuple(st for st in (_stage(tracker, s) for s in stage_ids) if st)
        settled = (all(s != "RUNNING" for s in status.values())
                   and all(st.skipped or st.done + st.failed >= st.tasks for st in stages))
        waited = time.monotonic() - begin
        # No job after a short wait: the block ran none (its events would have arrived).
        if (settled and status) or (not status and waited > 0.3) or waited > patience:
            return status, stages
        time.sleep(0.05)


@contextmanager
def spark_progress(spark: Any, *, interval: float = 0.5, out: TextIO | None = None,
                   display: bool | None = None, width: int = 30) -> Iterator[SparkProgress]:
    """Show the progress of the Spark jobs a block runs, updated in place; summarise at the end.

    Args:
        spark: A classic SparkSession (``jobs.session.build_session``).
        interval: Seconds between two polls of the status tracker.
        out: Where text goes when not displaying in a kernel; default ``sys.stderr``.
        display: True: an IPython display handle (needs a kernel); False: text on ``out``;
            None: a display handle inside a Jupyter kernel, text elsewhere. In text mode on a
            terminal where Spark already draws its console bar, only the summary is printed.
        width: Characters of each bar.

    Yields:
        A :class:`SparkProgress`, filled in when the block ends (also when it raises).

    Raises:
        VizArgumentError: a session without a SparkContext (Spark Connect), or a bad
            ``interval`` or ``width`` (CEP-VIZ-003).

    Example (a live session; the summary's numbers depend on the query)::

        with spark_progress(spark) as progress:
            spark.sql("SELECT count(*) FROM match_seq(...)").collect()
        print(progress.summary())
    """
    if isinstance(interval, bool) or not isinstance(interval, (int, float)) or interval <= 0:
        raise VizArgumentError(f"interval: expected a positive number of seconds, "
                               f"found {interval!r}")
    if isinstance(width, bool) or not isinstance(width, int) or width < 1:
        raise VizArgumentError(f"width: expected a positive integer, found {width!r}")
    sc = _context(spark)
    use_display = _in_kernel() if display is None else bool(display)
    if use_display and not _in_kernel():
        raise VizArgumentError("display=True needs a Jupyter kernel (IPython with a kernel)")
    stream = out if out is not None else (None if use_display else sys.stderr)
    # Spark's own console bar already redraws stderr in a terminal: do not fight it.
    console = str(sc.getConf().get("spark.ui.showConsoleProgress", "false")).lower() == "true"
    live_text = use_display or not (console and stream is sys.stderr)
    view = _Display(stream, use_display)
    progress = SparkProgress(group=f"cep-progress-{uuid.uuid4().hex[:12]}")
    tracker = sc.statusTracker()
    known: dict[int, tuple[int, ...]] = {}
    stop = threading.Event()

    def poll() -> None:
        shown = ""
        while not stop.wait(interval):
            try:
                _stages_of(tracker, progress.group, known)
                mine = {s for stages in list(known.values()) for s in stages}
                active = [s for s in tracker.getActiveStageIds() if s in mine]
                bars = [st.bar(width) for st in (_stage(tracker, s) for s in active) if st]
            except Exception:  # the session is stopping: the summary below still runs
                return
            line = " | ".join(bars)
            if line and line != shown and live_text:  # redraw only what changed
                with progress._lock:
                    view.live(line)
                    progress.updates += 1
                shown = line

    saved = {key: sc.getLocalProperty(key) for key in _PROPERTIES}
    sc.setJobGroup(progress.group, "spark_progress", interruptOnCancel=False)
    thread = threading.Thread(target=poll, name="spark-progress", daemon=True)
    started = time.monotonic()
    thread.start()
    try:
        yield progress
    finally:
        stop.set()
        thread.join()
        for key, value in saved.items():
            sc.setLocalProperty(key, value)
        status, stages = _settled(tracker, progress.group, known)
        progress.jobs = tuple(sorted(known))
        progress.failed_jobs = tuple(j for j, s in sorted(status.items()) if s == "FAILED")
        progress.stages = stages
        progress.seconds = time.monotonic() - started
        with progress._lock:
            view.final(progress.summary())
