"""Peak memory of Spark's Python workers, sampled from ``/proc``, and log-log slopes.

The benchmarks that measure how memory grows with input size (``bench_big_key``,
``bench_scaling``) sample the resident set of every Python worker that descends from the
benchmark's own process (its Spark's ``pyspark.daemon`` and the workers it forks), so another
Spark session on the same machine is not counted.

Example:
    >>> round(loglog_slope([1e6, 1e7], [2.0, 20.0]), 2)
    1.0
    >>> parent(1) >= 0
    True
"""

from __future__ import annotations

import math
import os
import threading
from pathlib import Path


def parent(pid: int) -> int:
    """The parent PID of ``pid`` (0 when it has gone)."""
    try:
        # the command name in field 2 may hold spaces: the fields after its ')' are plain
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def python_workers(root: int) -> list[int]:
    """PIDs of the Python workers (the daemon and its forks) that descend from ``root``: this
    process's Spark, not another session's on the same machine."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if b"pyspark.daemon" not in cmd and b"pyspark.worker" not in cmd:
            continue
        pid = up = int(entry.name)
        while up > 1 and up != root:
            up = parent(up)
        if up == root:
            pids.append(pid)
    return pids


def rss_bytes(pid: int) -> int:
    """Resident set size of ``pid`` (0 when it has gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class MemorySampler:
    """Largest RSS of one Python worker and of all of them, sampled in a thread.

    ``roots``: the processes whose descendant workers count (default: this one; on a
    standalone cluster, the worker JVMs).
    """

    def __init__(self, every_s: float = 0.1, roots: list[int] | None = None) -> None:
        self.every_s = every_s
        self.roots = roots or [os.getpid()]
        self.one = 0
        self.total = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "MemorySampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            sizes = [rss_bytes(pid) for root in self.roots for pid in python_workers(root)]
            if sizes:
                self.one = max(self.one, max(sizes))
                self.total = max(self.total, sum(sizes))
            self._stop.wait(self.every_s)


def loglog_slope(sizes: list[float], values: list[float]) -> float:
    """Least-squares slope of ``log(values)`` against ``log(sizes)``."""
    xs = [math.log(s) for s in sizes]
    ys = [math.log(v) for v in values]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    num = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    den = sum((x - mx) ** 2 for x in xs)
    return num / den
