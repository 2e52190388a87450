"""What the two servers (``serve``, ``connect-server``) share: where they listen and how they run.

Both are the project's Spark session with a network service started in its JVM; both read a
host and a port from a conf file section and flags, check the port before the slow JVM start,
print one line once clients can connect and serve in the foreground until SIGTERM or SIGINT.
The service-specific parts (the Thrift server in :mod:`jobs.servers.server`, Spark Connect in
:mod:`jobs.servers.connect_server`) pass their own error classes, so each keeps its error codes.

Example:
    >>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("10.0.0.5")
    (True, True, False)
    >>> check_port("8080", "--port", ValueError)
    8080
    >>> try:
    ...     check_host("bad host", "--host", ValueError)
    ... except ValueError as exc:
    ...     print(exc)
    --host: expected an IP address or a host name (e.g. 127.0.0.1), found 'bad host'
"""

from __future__ import annotations

import ipaddress
import re
import signal
import socket
import sys
import threading
import tomllib
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TextIO, TypeVar

from delta_tables.settings import Settings

__all__ = ["Service", "check_host", "check_port", "is_loopback", "load_address", "probe_port",
           "run_until_signal"]

JVM_CHECK_SECONDS = 5.0
"""How often a waiting server checks that its JVM is alive (a dead JVM must not leave a
Python process behind that claims to serve)."""

_LABEL = r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)"
_HOST_NAME = re.compile(rf"^{_LABEL}(\.{_LABEL})*\.?$")


def is_loopback(host: str) -> bool:
    """Whether only this machine can reach ``host`` (another host name may resolve to any
    address, so it is not)."""
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_host(value: Any, where: str, error: type[Exception]) -> str:
    """``value`` if it is an IP address or a host name, else ``error`` naming ``where``."""
    if isinstance(value, str):
        try:
            return str(ipaddress.ip_address(value))
        except ValueError:
            if len(value) <= 253 and _HOST_NAME.match(value):
                return value
    raise error(f"{where}: expected an IP address or a host name (e.g. 127.0.0.1), "
                f"found {value!r}")


def check_port(value: Any, where: str, error: type[Exception]) -> int:
    """``value`` (a TOML integer or a flag's digits) as a port 0..65535, else ``error``."""
    port = None
    if isinstance(value, int) and not isinstance(value, bool):
        port = value
    elif isinstance(value, str) and value.strip().isdigit():
        port = int(value.strip())
    if port is None or not 0 <= port <= 65535:
        raise error(f"{where}: expected a port number from 0 to 65535, found {value!r}")
    return port


def load_address(settings: Settings, conf_file: str, section: str, defaults: tuple[str, int],
                 error: type[Exception], *, host: str | None = None,
                 port: str | int | None = None, switches: Mapping[str, bool | None] | None = None
                 ) -> tuple[str, int, dict[str, bool]]:
    """``(host, port, switches)`` of ``[section]`` in ``<conf_dir>/<conf_file>``, the flags on top.

    A missing file means ``defaults``; a flag that was given wins over the file.

    Args:
        switches: The section's boolean keys besides ``host`` and ``port`` (``tls``), each with
            its flag's value (None: not given; the file's value, else False).

    Raises:
        error: unreadable file, unknown section or key, bad host, port or switch.
    """
    switches = dict(switches or {})
    path = settings.conf_dir / conf_file
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise error(f"cannot read {path}: {exc}") from None
    unknown = sorted(set(data) - {section})
    if unknown:
        raise error(f"{conf_file}: unknown section [{unknown[0]}]; expected [{section}]")
    table = data.get(section, {})
    if not isinstance(table, dict):
        raise error(f"{conf_file}: [{section}] must be a table")
    keys = ["host", "port", *switches]
    extra = sorted(set(table) - set(keys))
    if extra:
        raise error(f"{conf_file}: unknown key {section}.{extra[0]}; expected {', '.join(keys)}")
    found_host = check_host(table.get("host", defaults[0]), f"{conf_file}: {section}.host", error)
    found_port = check_port(table.get("port", defaults[1]), f"{conf_file}: {section}.port", error)
    if host is not None:
        found_host = check_host(host, "--host", error)
    if port is not None:
        found_port = check_port(port, "--port", error)
    found: dict[str, bool] = {}
    for name, flag in switches.items():
        value = table.get(name, False)
        if not isinstance(value, bool):
            raise error(f"{conf_file}: {section}.{name}: expected true or false, found {value!r}")
        found[name] = value if flag is None else flag
    return found_host, found_port, found


def probe_port(host: str, port: int, error: type[Exception], hint: str) -> None:
    """Fail fast, before a JVM starts, when ``host:port`` cannot be listened on.

    Args:
        hint: Where to choose another port, appended to the message.
    """
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise error(f"cannot resolve host {host!r}: {exc.strerror}") from None
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # Both services set SO_REUSEADDR too: a port in TIME_WAIT after a previous server is
        # usable, so the probe must not refuse it.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise error(f"cannot listen on {host}:{port}: {exc.strerror or exc}; the port may "
                        f"be taken: choose another with --port or {hint}") from None


class Service(Protocol):
    """A running server: its JVM can be watched and it can be stopped (idempotently)."""

    def jvm_exit_code(self) -> int | None: ...

    def stop(self) -> None: ...


S = TypeVar("S", bound=Service)


def refuse_running_session(error: type[Exception], command: str) -> None:
    """Raise ``error`` when a Spark session already runs in this process.

    A server's session needs settings that only a new JVM takes (the lockdown, the single
    session, the Connect binding). Building it here would hand back the running session and,
    worse, copy the server's SQL settings into it (``spark.sql.runSQLOnFiles=false`` for one):
    the check comes before any session is built.
    """
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        raise error(f"a Spark session already runs in this process; start the server in a "
                    f"process of its own (python -m jobs {command})")


def run_until_signal(start: Callable[[], S], ready: Callable[[S], str],
                     stopped: Callable[[S], str], died: Callable[[S, int], Exception],
                     out: TextIO | None = None) -> int:
    """Start a server, announce it, serve until SIGTERM or SIGINT, stop it; returns 0.

    Args:
        start: Builds the session and starts the service (slow: a JVM start).
        ready: The line printed once clients can connect.
        stopped: The line printed after a clean stop.
        died: The error raised when the JVM exits while serving (its exit code given).
    """
    out = out or sys.stdout
    stop_requested = threading.Event()

    def request_stop(signum: int, frame: object) -> None:
        stop_requested.set()

    # Installed before the JVM starts: a signal during the slow start still stops cleanly.
    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    server: S | None = None
    try:
        server = start()
        # pyspark's SparkContext replaces the SIGINT handler with one that cancels jobs and
        # raises KeyboardInterrupt; Ctrl-C must stop the server like SIGTERM instead.
        for sig in previous:
            signal.signal(sig, request_stop)
        print(ready(server), file=out, flush=True)
        while not stop_requested.wait(JVM_CHECK_SECONDS):
            code = server.jvm_exit_code()
            if code is not None and not stop_requested.is_set():
                raise died(server, code)
        server.stop()
        print(stopped(server), file=out, flush=True)
        return 0
    finally:
        if server is not None:
            server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
