"""Spark Connect server over the project's warehouse: ``python -m jobs connect-server``.

The server is the project's own Spark session (:func:`jobs.session.build_session`: Delta
configured, the warehouse's Delta tables registered by name) with Spark's Connect gRPC service
started in its JVM (``spark-connect_2.13-4.2.0.jar`` ships in the pyspark wheel). Every Connect
client gets its own session on this JVM: it shares the catalog (the registered tables) and
the SQL settings of ``conf/spark.toml``, but registers the CEP functions itself with
``sql_ext.register_all(spark)`` (functions are per session; docs/connect.md).

Where it listens comes from ``conf/connect.toml`` ``[connect]`` (``host``, ``port``, ``tls``),
then the ``--host``/``--port``/``--tls`` flags; loopback (``127.0.0.1``), port 15002 and no TLS
by default. With TLS the service binds a free loopback port and the TLS front of
:mod:`jobs.servers.tls_proxy` listens at ``host:port`` (Spark 4.2's service has no TLS). The command
prints one line with the ``sc://host:port`` URL, serves until SIGTERM or SIGINT (Ctrl-C), then
stops the service and the session and exits 0.

Every run makes a new random token (Spark Connect's pre-shared key,
``spark.connect.authenticate.token``) and writes it to ``<data_dir>/connect/token``, readable
by the server's user only; a client presents it as ``sc://localhost:PORT/;token=...``
(:func:`client_url`) and one without it is refused. Another local user can reach the port but
not read the token. Every client's session is under the lockdown of
:mod:`jobs.servers.lockdown` (no path outside the warehouse, no ``reflect``, no programs from
SQL); a Connect client can still run Python UDFs in the server's workers, as the server's user,
which is why the token is as secret as that user's login.

Example:
    >>> conf = ConnectConf("127.0.0.1", 15002)
    >>> conf.url, conf.is_loopback
    ('sc://127.0.0.1:15002', True)
    >>> ConnectConf("::1", 15002).url
    'sc://[::1]:15002'
    >>> try:
    ...     check_port("70000", "--port")
    ... except ConnectConfError as exc:
    ...     print(exc)
    CEP-JOB-070: --port: expected a port number from 0 to 65535, found '70000'
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from cep.errors import CepError, ConfigError
from delta_tables.settings import Settings
from jobs.servers import listener
from jobs.servers.lockdown import lockdown_conf, verify
from jobs.servers.tls import pem_pair, tls_files
from jobs.servers.tls_proxy import TlsProxy, server_context

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["ConnectConf", "ConnectConfError", "ConnectServer", "ConnectServerError",
           "DEFAULT_HOST", "DEFAULT_PORT", "check_host", "check_port", "client_url",
           "issue_token", "load_connect_conf", "serve", "start_server", "token_file"]

DEFAULT_HOST = "127.0.0.1"
"""Loopback: only programs on this machine can connect (and only with the server's token)."""
DEFAULT_PORT = 15002
"""Spark Connect's own default port, so ``sc://localhost`` finds it."""
CONF_FILE = "connect.toml"

BINDING_ADDRESS = "spark.connect.grpc.binding.address"
BINDING_PORT = "spark.connect.grpc.binding.port"
PORT_RETRIES = "spark.connect.grpc.port.maxRetries"
SERVICE = "org.apache.spark.sql.connect.service.SparkConnectService"
TOKEN_CONF = "spark.connect.authenticate.token"
"""Spark Connect's pre-shared key: a client without it is refused (UNAUTHENTICATED)."""

JVM_EXIT_GRACE_SECONDS = 60.0
"""How long a failed stop waits for a JVM that is shutting down on the same signal."""

class ConnectConfError(ConfigError):
    """A bad ``[connect]`` setting or ``--host``/``--port`` flag of ``connect-server``."""

    code = "CEP-JOB-070"


class ConnectServerError(CepError):
    """The Spark Connect service could not start (the port is taken, the address is not
    this machine's), or its JVM died while serving."""

    code = "CEP-JOB-071"


@dataclass(frozen=True)
class ConnectConf:
    """Where the Connect service listens.

    Attributes:
        host: The address the gRPC service binds to (an IP address or a host name).
        port: The TCP port; 0 lets the system choose a free one (printed at start).
        tls: Whether clients connect with TLS: the service then binds a free loopback port
            and a TLS front (:mod:`jobs.servers.tls_proxy`) listens at ``host:port``.
    """

    host: str
    port: int
    tls: bool = False

    @property
    def url(self) -> str:
        """The ``sc://host:port`` connection string of this address (IPv6 in brackets)."""
        return connect_url(self.host, self.port)

    @property
    def is_loopback(self) -> bool:
        """Whether only this machine can reach the address."""
        return listener.is_loopback(self.host)


def connect_url(host: str, port: int) -> str:
    """``sc://host:port``, with an IPv6 address in brackets as URLs require."""
    return f"sc://[{host}]:{port}" if ":" in host else f"sc://{host}:{port}"


def check_host(value: Any, where: str) -> str:
    """``value`` if it is an IP address or a host name, else :class:`ConnectConfError`."""
    return listener.check_host(value, where, ConnectConfError)


def check_port(value: Any, where: str) -> int:
    """``value`` as a port number 0..65535 (a TOML integer or a flag's digits), else
    :class:`ConnectConfError`."""
    return listener.check_port(value, where, ConnectConfError)


def load_connect_conf(
    settings: Settings, *, host: str | None = None, port: str | int | None = None,
    tls: bool | None = None
) -> ConnectConf:
    """``[connect]`` of ``<conf_dir>/connect.toml``, then the flags that were given.

    Args:
        settings: Project settings; their ``conf_dir`` holds ``connect.toml`` (a missing file
            means the defaults, ``127.0.0.1`` and 15002).
        host: ``--host``, when given: wins over the file.
        port: ``--port``, when given: wins over the file.
        tls: ``--tls`` (True), when given: wins over the file.

    Raises:
        ConnectConfError: unreadable file, unknown section or key, bad host, port or ``tls``.
    """
    found_host, found_port, switches = listener.load_address(
        settings, CONF_FILE, "connect", (DEFAULT_HOST, DEFAULT_PORT), ConnectConfError,
        host=host, port=port, switches={"tls": tls})
    return ConnectConf(found_host, found_port, switches["tls"])


def binding_conf(conf: ConnectConf, token: str) -> dict[str, str]:
    """The Spark settings that make the Connect service listen at ``conf``, for clients that
    present ``token``.

    They are static settings: they must be in the session's configuration when its JVM
    starts, so they go through ``build_session`` rather than ``spark.conf.set``.
    """
    # No retries: a taken port must fail, not silently move the server to the next port.
    return {BINDING_ADDRESS: conf.host, BINDING_PORT: str(conf.port), PORT_RETRIES: "0",
            TOKEN_CONF: token, **DETACHED}


DETACHED = {"spark.connect.execute.reattachable.senderMaxStreamDuration": "10s",
            "spark.connect.execute.manager.detachedTimeout": "15s",
            "spark.connect.execute.manager.maintenanceInterval": "5s",
            "spark.sql.execution.interruptOnCancel": "true"}
"""A query whose client has gone is interrupted, its tasks with it, within about half a
minute (issue 46). Spark Connect ends a query's response stream every 10 s (default 2 minutes)
and a live client reattaches at once; a query nobody has reattached to for 15 s (default 5
minutes), checked every 5 s (default 30 s), is interrupted."""


def token_file(settings: Settings) -> Path:
    """Where a running server keeps its token: ``<data_dir>/connect/token``, owner-only."""
    return settings.data_dir / "connect" / "token"


def issue_token(settings: Settings) -> str:
    """A new random token for one server run, written to :func:`token_file` (mode 0600).

    Another local user cannot read it, so cannot connect: the file, not the port, is the
    permission. Written aside and renamed, so a reader never sees half a token.
    """
    token = secrets.token_urlsafe(32)
    path = token_file(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    aside = path.with_name(f".token.{os.getpid()}")
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(token + "\n")
    os.replace(aside, path)
    return token


def client_url(host: str, port: int, token: str, tls: bool = False) -> str:
    """The URL a pyspark client connects with: the token as a bearer credential.

    pyspark sends a token without TLS only to the host name ``localhost`` (gRPC's local
    credentials), so a loopback server is addressed by that name (which ``tls init --name
    localhost`` puts in the certificate, for TLS on loopback).

    Example:
        >>> client_url("127.0.0.1", 15002, "t0k")
        'sc://localhost:15002/;token=t0k'
        >>> client_url("10.0.0.5", 15002, "t0k", tls=True)
        'sc://10.0.0.5:15002/;use_ssl=true;token=t0k'
    """
    where = f"localhost:{port}" if ConnectConf(host, port).is_loopback else \
        connect_url(host, port)[len("sc://"):]
    return f"sc://{where}/;use_ssl=true;token={token}" if tls else f"sc://{where}/;token={token}"


@dataclass
class ConnectServer:
    """A running Connect service and the session it serves from.

    Attributes:
        spark: The project session in whose JVM the service runs.
        host: The bound address.
        port: The bound port (the system's choice when 0 was asked for).
        tables: The Delta tables the session registered by name, which clients see.
    """

    spark: "SparkSession"
    host: str
    port: int
    tables: tuple[str, ...]
    token: str = ""
    token_path: Path | None = None
    proxy: TlsProxy | None = None
    stopped: bool = False

    @property
    def url(self) -> str:
        """The ``sc://host:port`` address of the service (without the token)."""
        return connect_url(self.host, self.port)

    @property
    def client_url(self) -> str:
        """The connection string a pyspark client uses, token included (:func:`client_url`)."""
        return client_url(self.host, self.port, self.token, self.proxy is not None)

    def jvm_exit_code(self) -> int | None:
        """The JVM's exit code once it has exited; None while it runs (or when unknown)."""
        proc = self._jvm_process()
        return None if proc is None else proc.poll()

    def _jvm_process(self) -> "subprocess.Popen[bytes] | None":
        # pyspark keeps the JVM's Popen on the gateway it launched; a session attached to a
        # JVM started elsewhere has none, and is then taken to be alive.
        return getattr(self.spark.sparkContext._gateway, "proc", None)

    def stop(self) -> None:
        """Stop the Connect service (the port is released), then the session; idempotent.

        A SIGTERM sent to the whole process group (a service manager, ``timeout``) reaches
        the JVM as well, which then shuts down by itself: a JVM that is gone, or going, has
        nothing left to release.
        """
        if self.stopped:
            return
        self.stopped = True
        if self.proxy is not None:
            self.proxy.stop()
        if self.jvm_exit_code() is not None:
            return
        try:
            service = getattr(self.spark.sparkContext._jvm, SERVICE)
            service.stop(getattr(service, "stop$default$1")(), getattr(service, "stop$default$2")())
            self.spark.stop()
        except Exception:  # py4j's errors when the JVM exits meanwhile (py4j is not importable
            # from this layer); anything else with a live JVM is a real failure
            proc = self._jvm_process()
            if proc is None:
                raise
            try:
                proc.wait(timeout=JVM_EXIT_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                raise ConnectServerError("the Connect service did not stop and its JVM still "
                                         f"runs (pid {proc.pid})") from None


def _probe_port(conf: ConnectConf) -> None:
    """Fail fast, before a JVM starts, when ``conf``'s port cannot be listened on."""
    listener.probe_port(conf.host, conf.port, ConnectServerError,
                        f"[connect] port in conf/{CONF_FILE}")


def start_server(settings: Settings, conf: ConnectConf) -> ConnectServer:
    """Build the project session with the Connect binding and start the service in its JVM.

    Args:
        settings: Project settings (warehouse, jars, Spark settings).
        conf: Where to listen (:func:`load_connect_conf`).

    Returns:
        The running server; :meth:`ConnectServer.stop` stops it.

    Raises:
        ConnectServerError: the port is taken, the address cannot be bound, or a Spark session
            with other settings already runs in this process.
        TlsError: TLS is on and the key or certificate is missing (or the key is readable by
            other users).
        LockdownUnavailable: the JVM shim is missing or does not restrict the sessions.
        DeltaJarsUnavailable: the Delta jars cannot be loaded.
    """
    _probe_port(conf)
    pem = pem_pair(tls_files(settings)) if conf.tls else None  # missing files fail here
    listener.refuse_running_session(ConnectServerError, "connect-server")
    locked = lockdown_conf(settings)
    from delta_tables.catalog import discover_tables
    from jobs.session import build_session

    token = issue_token(settings)
    # With TLS the service itself listens on a free loopback port behind the TLS front.
    service_conf = ConnectConf("127.0.0.1", 0) if conf.tls else conf
    with_binding = dataclasses.replace(settings, spark_extra={
        **settings.spark_extra, **locked, **binding_conf(service_conf, token)})
    spark = build_session(with_binding)
    # build_session returns a session that already runs in this process unchanged; its JVM
    # would then listen wherever that session's settings say, not at ``conf``.
    live = spark.sparkContext.getConf()
    if (live.get(BINDING_ADDRESS), live.get(BINDING_PORT)) != (service_conf.host,
                                                                 str(service_conf.port)):
        raise ConnectServerError(
            "a Spark session with other Connect settings already runs in this process; start "
            "the server in a process of its own (python -m jobs connect-server)")
    try:
        verify(spark)
    except Exception:
        spark.stop()
        raise
    jvm = spark.sparkContext._jvm
    try:
        getattr(jvm, SERVICE).start(spark.sparkContext._jsc.sc())
        port = int(getattr(getattr(jvm, SERVICE + "$"), "MODULE$").localPort())
    except Exception as exc:  # a Py4JJavaError carrying the JVM's bind failure
        spark.stop()
        first = next((ln for ln in str(exc).splitlines() if ln.strip()), repr(exc))
        raise ConnectServerError(
            f"the Spark Connect service did not start on {service_conf.host}:"
            f"{service_conf.port}: {first}") from None
    proxy = None
    if pem is not None:
        proxy = TlsProxy(conf.host, conf.port, port, server_context(*pem))
        try:
            port = proxy.start()
        except OSError as exc:
            ConnectServer(spark, "127.0.0.1", port, ()).stop()
            raise ConnectServerError(f"the TLS front did not start on {conf.host}:{conf.port}: "
                                     f"{exc}") from None
    registered = tuple(t.name for t in discover_tables(settings)
                       if spark.catalog.tableExists(t.name))
    return ConnectServer(spark, conf.host, port, registered, token, token_file(settings), proxy)


def serve(settings: Settings, conf: ConnectConf, *, out: TextIO | None = None) -> int:
    """Run the server in the foreground until SIGTERM or SIGINT; returns the exit code 0.

    Prints one line with the ``sc://`` URL once clients can connect, and one when stopped.

    Raises:
        ConnectConfError, ConnectServerError: see :func:`start_server`.
    """
    if conf.tls:
        where = (f"TLS: clients trust {tls_files(settings).cert}; "
                 + ("loopback only" if conf.is_loopback else "reachable from other hosts"))
    else:
        where = ("loopback only" if conf.is_loopback
                 else "reachable from other hosts; clients there need TLS (--tls)")
    return listener.run_until_signal(
        lambda: start_server(settings, conf),
        lambda server: (f"Spark Connect server at {server.url} ({where}; clients connect with "
                        f"{client_url(server.host, server.port, '<token>', conf.tls)}, the token in "
                        f"{server.token_path}, readable by this user only; {len(server.tables)} "
                        f"Delta tables of {settings.warehouse_dir}; stop with Ctrl-C or "
                        "SIGTERM)"),
        lambda server: f"Spark Connect server at {server.url} stopped",
        lambda server, code: ConnectServerError(f"the Spark JVM exited with code {code} while "
                                                f"serving {server.url}"),
        out)
