"""Which TCP addresses a process (and its children) listens on, read from ``/proc``: the
tests of issue 21's loopback-only rule (no ``ss`` needed)."""

from __future__ import annotations

import os
import time
from pathlib import Path


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (a ``python -m jobs`` child's JVM among them)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def listening_addresses(pid: int) -> list[str]:
    """``host:port`` of every TCP socket process ``pid`` listens on, read from /proc.

    A process that ends while it is read (a Python worker of the server, say) listens on
    nothing: it is answered with an empty list, not an error.
    """
    try:
        return _listening(pid)
    except (FileNotFoundError, ProcessLookupError):  # the process ended meanwhile
        return []


def _listening(pid: int) -> list[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table, width in (("tcp", 8), ("tcp6", 32)):
        lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        for line in lines:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state != "0A" or inode not in inodes:  # 0A: LISTEN
                continue
            address, port = local.split(":")
            raw = bytes.fromhex(address)
            # /proc prints each 32-bit word of the address little-endian.
            words = b"".join(raw[i:i + 4][::-1] for i in range(0, width // 2, 4))
            if width == 32 and words[:12] == b"\0" * 10 + b"\xff\xff":
                words = words[12:]  # an IPv4-mapped IPv6 address
            host = ".".join(str(b) for b in words) if len(words) == 4 else words.hex(":", 2)
            found.append(f"{host}:{int(port, 16)}")
    return found


def jvm_ticks(pid: int) -> int:
    """CPU ticks (user + system) used so far by the JVM under process ``pid`` (a server)."""
    for child in descendants(pid):
        try:
            if b"java" in Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")[0]:
                fields = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
                return int(fields[11]) + int(fields[12])
        except OSError:  # gone meanwhile
            continue
    raise AssertionError(f"no JVM under process {pid}")


def busy_ticks(pid: int, seconds: float = 2.0) -> int:
    """The CPU ticks of the JVM under ``pid`` over ``seconds`` (100 per second of one core)."""
    before = jvm_ticks(pid)
    time.sleep(seconds)
    return jvm_ticks(pid) - before


def kill_mid_query_and_wait_for_idle(server_pid: int, client: list[str],
                                     env: dict[str, str] | None = None,
                                     bound: float = 120.0) -> None:
    """Start ``client`` (a command whose query keeps the server busy for minutes), kill it
    once the JVM under ``server_pid`` is busy, and assert that the JVM falls idle again.

    Busy: a core or more over one second. Idle: less than a quarter of one core over two.
    ``bound`` seconds bound each wait; they are limits on a hang, not timings under test.
    """
    import subprocess

    proc = subprocess.Popen(client, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + bound
        while busy_ticks(server_pid, 1.0) < 100:
            assert proc.poll() is None and time.monotonic() < deadline, "the query never ran"
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + bound
    while busy_ticks(server_pid) >= 50:
        assert time.monotonic() < deadline, "the killed client's query is still running"
