"""A Spark standalone cluster on loopback for the tests: one master, ``n`` workers, separate JVMs.

Started from the pyspark wheel's own ``bin/spark-class`` (no Spark download), each process in
its own session group so that a test can SIGKILL one worker, and everything is stopped within
a bounded time at the end. The workers' executors run Python from ``.venv-exec`` (third-party
packages only, ``make exec-venv``): the session builder must ship the project's code itself.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

ROOT = Path(__file__).resolve().parents[2]
EXEC_PYTHON = ROOT / ".venv-exec" / "bin" / "python"
SPARK_HOME = Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Cluster:
    """A running standalone cluster: its URL, UI, processes and log directory."""

    url: str
    ui: str
    log_dir: Path
    master: subprocess.Popen
    workers: list[subprocess.Popen] = field(default_factory=list)

    def state(self) -> dict:
        """The master's JSON status (workers, applications)."""
        with urllib.request.urlopen(f"{self.ui}/json/", timeout=5) as reply:
            return json.loads(reply.read())

    def alive_workers(self) -> int:
        return sum(1 for w in self.state().get("workers", []) if w.get("state") == "ALIVE")

    def with_executor(self) -> list[subprocess.Popen]:
        """The running workers that have an executor JVM now (in start order)."""
        parents = _parents()
        return [w for w in self.workers if w.poll() is None and any(
            _is_executor(pid) for pid in _children(w.pid, parents))]

    def worker_of(self, pid: int) -> subprocess.Popen | None:
        """The worker ``pid`` descends from (its executor, a Python worker), if any."""
        parents, workers = _parents(), {w.pid: w for w in self.workers}
        while pid in parents and pid not in workers:
            pid = parents[pid]
        return workers.get(pid)

    def kill(self, worker: subprocess.Popen) -> None:
        """SIGKILL a worker's process group (worker JVM, executor JVM) and every process
        below it: pyspark's Python daemon and its workers run in a process group of their own
        (the daemon calls ``setpgid``), so the group alone would leave them running."""
        below = _children(worker.pid)
        os.killpg(worker.pid, signal.SIGKILL)
        for pid in below:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def executor_pids(self) -> list[int]:
        """PIDs of the executor JVMs the workers started (children of the worker JVMs)."""
        parents = _parents()
        return [pid for worker in self.workers for pid in _children(worker.pid, parents)
                if _is_executor(pid)]


def _is_executor(pid: int) -> bool:
    try:
        return b"CoarseGrainedExecutorBackend" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _parents() -> dict[int, int]:
    """``{pid: parent pid}`` of every process now (one pass over /proc)."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        out[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    return out


def _children(pid: int, parents: dict[int, int] | None = None) -> list[int]:
    """The descendants of ``pid``."""
    parents = _parents() if parents is None else parents
    out, todo = [], [pid]
    while todo:
        here = todo.pop()
        found = [child for child, parent in parents.items() if parent == here]
        out += found
        todo += found
    return out


def _start(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    handle = log.open("wb")
    return subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), *args], stdout=handle,
                            stderr=subprocess.STDOUT, env=env, start_new_session=True)


@contextmanager
def standalone_cluster(work_dir: Path, workers: int = 2, cores: int = 1,
                       memory: str = "1536m", timeout: float = 90.0) -> Iterator[Cluster]:
    """Start a master and ``workers`` workers on 127.0.0.1; stop them all on exit.

    Raises:
        RuntimeError: the workers did not register within ``timeout`` seconds (the message
            has the end of every log).
    """
    work_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": str(EXEC_PYTHON), "SPARK_NO_DAEMONIZE": "1",
           "SPARK_LOG_DIR": str(work_dir), "SPARK_WORKER_DIR": str(work_dir / "work")}
    env.pop("PYTHONPATH", None)
    port, ui_port = free_port(), free_port()
    master = _start(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                     "--port", str(port), "--webui-port", str(ui_port)],
                    work_dir / "master.log", env)
    cluster = Cluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}", work_dir, master)
    try:
        for i in range(workers):
            cluster.workers.append(_start(
                ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                 "--cores", str(cores), "--memory", memory, "--webui-port", str(free_port()),
                 "--work-dir", str(work_dir / f"work{i}"), cluster.url],
                work_dir / f"worker{i}.log", env))
        deadline = time.monotonic() + timeout
        while True:
            try:
                if cluster.alive_workers() == workers:
                    break
            except OSError:
                pass  # the master's UI is not up yet
            if time.monotonic() > deadline or master.poll() is not None:
                logs = "\n".join(f"--- {p.name}\n{p.read_text()[-2000:]}"
                                 for p in sorted(work_dir.glob("*.log")))
                raise RuntimeError(f"the standalone cluster did not come up in {timeout}s:\n{logs}")
            time.sleep(0.5)
        yield cluster
    finally:
        for process in [*cluster.workers, master]:
            _stop(process)


def _stop(process: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM the process group, then SIGKILL what is left after ``grace`` seconds."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(grace)
    except ProcessLookupError:
        pass
