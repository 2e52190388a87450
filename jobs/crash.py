"""Test hook: kill (or freeze) a job process between a Delta write's data files and its commit.

A Delta write first writes its data files into the table's folder (a task opens each file when
it starts writing), then commits by writing the next ``_delta_log/<version>.json``. A process
that dies in between leaves orphan data files and no commit: the state a real crash inside a
write leaves. :func:`arm`, called at the start of :func:`jobs.cli.main`, produces exactly that
on demand, from the environment (inert when the variables are unset):

``CEP_KILL_BEFORE_COMMIT=<absolute table location>``
    A daemon thread lists the table's folder about every millisecond. When a data file
    (``*.parquet`` outside ``_delta_log``) appears that was not there when the hook was armed
    and that no commit made since then names, it sends SIGKILL to the Spark JVM of this process
    and then to this process: no cleanup, no ``finally``, no shutdown hook. The JVM is killed
    first because it is the one that would write the commit; a Python driver that dies alone
    leaves its JVM running until it notices the closed pipe, long enough to commit.

``CEP_PAUSE_BEFORE_COMMIT=<absolute table location>`` and ``CEP_PAUSE_MARKER=<file>``
    The same trigger, but the JVM is frozen (SIGSTOP) instead, and its pid is written to the
    marker file. A test then runs another run of the same job to the end and resumes the frozen
    one (SIGCONT): two runs overlapping in the middle of a write, deterministically.

If the commit is already there when the new file is seen (the watcher lost the race against
the commit), the hook does nothing but say so on stderr and disarm: a test sees exit code 0
and must retry, never pass silently. Every action is announced on stderr with the word
``cep-crash-hook``, the table and the data file, so a test can check the file it left behind.

Example:
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> (folder / "_delta_log").mkdir()
    >>> watcher = Watcher(folder, "kill")
    >>> watcher.check() is None                 # nothing new yet
    True
    >>> _ = (folder / "part-0.parquet").write_bytes(b"PAR1")
    >>> watcher.check()                         # a new file that no commit names: fire
    'part-0.parquet'
    >>> late = Watcher(folder, "kill")          # armed after part-0 was there
    >>> _ = (folder / "_delta_log" / "00000000000000000000.json").write_text(
    ...     '{"add":{"path":"part-1.parquet"}}\\n')
    >>> _ = (folder / "part-1.parquet").write_bytes(b"PAR1")
    >>> late.check() is None, late.disarmed     # committed before it was seen: lost the race
    (True, True)
    >>> orphan_files(folder)
    ['part-0.parquet']
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote

__all__ = ["KILL_ENV", "PAUSE_ENV", "MARKER_ENV", "TAG", "Watcher", "arm", "data_files",
           "committed_files", "orphan_files"]

KILL_ENV = "CEP_KILL_BEFORE_COMMIT"
"""Absolute location of the table whose next write kills the process before its commit."""
PAUSE_ENV = "CEP_PAUSE_BEFORE_COMMIT"
"""Absolute location of the table whose next write freezes the JVM before its commit."""
MARKER_ENV = "CEP_PAUSE_MARKER"
"""File the pause hook writes the frozen JVM's pid to (required with :data:`PAUSE_ENV`)."""
TAG = "cep-crash-hook"
"""First word of every line the hook prints to stderr."""
POLL_SECONDS = 0.001
LOG = "_delta_log"


def data_files(location: Path) -> set[str]:
    """Paths (relative to ``location``, ``/``-separated) of the table's parquet data files.

    ``_delta_log`` (checkpoints) and hidden files (``.*.crc`` checksums) are not data files.
    """
    found: set[str] = set()
    if not location.is_dir():
        return found
    for root, dirs, files in os.walk(location):
        if root == str(location):
            dirs[:] = [d for d in dirs if d != LOG]
        rel = os.path.relpath(root, location)
        for name in files:
            if name.endswith(".parquet") and not name.startswith("."):
                found.add(name if rel == "." else f"{rel.replace(os.sep, '/')}/{name}")
    return found


def _commit_files(location: Path) -> set[str]:
    log = location / LOG
    if not log.is_dir():
        return set()
    return {p.name for p in log.iterdir() if p.suffix == ".json" and p.stem.isdigit()}


def committed_files(location: Path, commits: set[str] | None = None) -> set[str]:
    """Data file paths named by the table's commit files (``add``, ``remove`` and ``cdc``).

    Args:
        location: The table's folder.
        commits: Only these commit file names (``00..07.json``); default all of them.
    """
    names = _commit_files(location) if commits is None else commits
    out: set[str] = set()
    for name in names:
        try:
            text = (location / LOG / name).read_text(encoding="utf-8")
        except FileNotFoundError:  # a commit file is never deleted while a job runs; be lenient
            continue
        for line in text.splitlines():
            if not line.strip():
                continue
            action = json.loads(line)
            for kind in ("add", "remove", "cdc"):
                if kind in action and "path" in action[kind]:
                    out.add(unquote(action[kind]["path"]))
    return out


def orphan_files(location: Path) -> list[str]:
    """The table's data files that no commit names: what a write that never committed left."""
    return sorted(data_files(location) - committed_files(location))


class Watcher:
    """Watches one table's folder for the first data file of a write that has not committed.

    Args:
        location: The table's folder (it may not exist yet).
        action: ``kill`` or ``pause``.
        marker: The file the pause action writes the JVM's pid to.
        known: Data files to ignore (default: those present now).
    """

    def __init__(self, location: Path, action: str, marker: Path | None = None, *,
                 known: set[str] | None = None) -> None:
        if action not in ("kill", "pause"):
            raise ValueError(f"{TAG}: action {action!r}: expected 'kill' or 'pause'")
        self.location = location
        self.action = action
        self.marker = marker
        self.known = data_files(location) if known is None else set(known)
        self.commits_at_arm = _commit_files(location)
        self.disarmed = False
        self._thread: threading.Thread | None = None

    def check(self) -> str | None:
        """The first new data file that no commit since arming names, or None.

        A new file that a new commit already names means the watcher lost the race: it says
        so on stderr, sets :attr:`disarmed` (no later write of the table triggers it) and
        returns None.
        """
        if self.disarmed:
            return None
        new = data_files(self.location) - self.known
        if not new:
            return None
        committed = committed_files(self.location,
                                    _commit_files(self.location) - self.commits_at_arm)
        pending = sorted(new - committed)
        if pending:
            return pending[0]
        _say(f"lost the race at {self.location}: data file(s) {sorted(new)} already "
             "committed when seen; disarmed, nothing done")
        self.known |= new
        self.disarmed = True
        return None

    def fire(self, data_file: str) -> None:
        """Kill this process (and its JVM first), or freeze the JVM and write the marker."""
        jvm = _jvm_pid()
        if self.action == "kill":
            # The JVM first: it is the process that would write the commit.
            if jvm is not None:
                os.kill(jvm, signal.SIGKILL)
            _say(f"data file {data_file} of {self.location} written, no commit: SIGKILL to "
                 f"JVM {jvm} and process {os.getpid()}")
            os.kill(os.getpid(), signal.SIGKILL)
            return
        if jvm is not None:
            os.kill(jvm, signal.SIGSTOP)
        assert self.marker is not None
        tmp = self.marker.with_name(self.marker.name + ".tmp")
        tmp.write_text(f"{jvm if jvm is not None else -1}\n{data_file}\n", encoding="utf-8")
        os.replace(tmp, self.marker)  # atomic: the test never reads half a marker
        _say(f"data file {data_file} of {self.location} written, no commit: JVM {jvm} "
             f"frozen (SIGSTOP); pid written to {self.marker}")

    def _loop(self) -> None:
        while not self.disarmed:
            try:
                found = self.check()
            except Exception as exc:  # noqa: BLE001 - a broken hook must say so, not kill the job
                _say(f"watcher of {self.location} failed: {exc!r}; disarmed")
                return
            if found is not None:
                self.fire(found)
                return
            time.sleep(POLL_SECONDS)

    def start(self) -> "Watcher":
        """Run :meth:`check` about every millisecond in a daemon thread until it fires."""
        self._thread = threading.Thread(target=self._loop, name=TAG, daemon=True)
        self._thread.start()
        return self


def _say(message: str) -> None:
    print(f"{TAG}: {message}", file=sys.stderr, flush=True)


def _jvm_pid() -> int | None:
    """The pid of this process's Spark JVM (the gateway PySpark launched), or None."""
    try:
        from pyspark import SparkContext
    except ImportError:
        return None
    gateway = getattr(SparkContext, "_gateway", None)
    proc = getattr(gateway, "proc", None)
    return None if proc is None else int(proc.pid)


def arm(environ: Mapping[str, str] | None = None) -> Watcher | None:
    """Start the hook the environment asks for (:data:`KILL_ENV` or :data:`PAUSE_ENV`).

    Returns:
        The running watcher, or None when neither variable is set (the normal case).

    Raises:
        ValueError: both variables set, a location that is not absolute, or a pause without
            :data:`MARKER_ENV`.
    """
    env = os.environ if environ is None else environ
    kill, pause = env.get(KILL_ENV) or None, env.get(PAUSE_ENV) or None
    if kill is None and pause is None:
        return None
    if kill is not None and pause is not None:
        raise ValueError(f"{TAG}: set {KILL_ENV} or {PAUSE_ENV}, not both")
    location = Path(kill or pause or "")
    if not location.is_absolute():
        raise ValueError(f"{TAG}: {KILL_ENV if kill else PAUSE_ENV}={location}: expected the "
                         "absolute location of a Delta table")
    marker = None
    if pause is not None:
        if not env.get(MARKER_ENV):
            raise ValueError(f"{TAG}: {PAUSE_ENV} needs {MARKER_ENV}=<file>")
        marker = Path(env[MARKER_ENV])
    watcher = Watcher(location, "kill" if kill else "pause", marker).start()
    _say(f"armed: {watcher.action} before the commit of the next write to {location}")
    return watcher
