"""The SQL server for BI tools: ``python -m jobs serve`` (Spark's Thrift JDBC/ODBC server).

The server runs inside the project's own Spark session (:func:`jobs.session.build_session`:
Delta configured, the warehouse's Delta tables registered by name) after
``sql_ext.register_all`` has registered the CEP functions in it; the Thrift JDBC/ODBC service
(``spark-hive-thriftserver_2.13-4.2.0.jar``, shipped in the pyspark wheel) is started in that
session's JVM with ``spark.sql.hive.thriftServer.singleSession=true``, so every connection runs
its statements in that very session: the CEP functions (Python UDTFs, which are registered per
session), the registered tables and time travel (``VERSION AS OF``) work from beeline, JDBC
and Python DB-API clients alike.

Where it listens comes from ``conf/server.toml`` ``[server]`` (``host``, ``port``, ``tls``), then
the ``--host``/``--port``/``--tls`` flags; loopback (``127.0.0.1``), port 10000 (HiveServer2's
usual port) and no TLS by default (with TLS, HiveServer2's own TLS listener and the keystore of
:mod:`jobs.servers.tls`). Every client authenticates with a user name and password (HiveServer2's ``CUSTOM``
mode: SASL PLAIN, checked by the JVM shim's ``cep.sql.PasswordFileAuthenticator`` against the
users file of :mod:`jobs.servers.users`, which ``python -m jobs users add`` fills); the server
does not start without a user. Its session is under the lockdown of
:mod:`jobs.servers.lockdown` (no path outside the warehouse, no ``reflect``, no programs). The
command prints one line with the address and the JDBC URL once clients can connect, serves
until SIGTERM or SIGINT (Ctrl-C), then stops the service and the session and exits 0.
docs/bi.md has the client settings.

Two adjustments keep the service dependable in this session (both tested): the Delta jars go
on the JVM's class path too (Hive closes the class loader of ``spark.jars`` when a synchronous
client disconnects), and the service's internal Hive metastore gets a Derby URL that works
with the session's ``derby.system.home`` (Spark's form made every connection wait in retries).

Example:
    >>> conf = ServerConf("127.0.0.1", 10000)
    >>> conf.jdbc_url, conf.is_loopback
    ('jdbc:hive2://127.0.0.1:10000/', True)
    >>> ServerConf("::1", 10001).jdbc_url
    'jdbc:hive2://[::1]:10001/'
    >>> try:
    ...     check_port("http", "--port")
    ... except ServerConfError as exc:
    ...     print(exc)
    CEP-JOB-060: --port: expected a port number from 0 to 65535, found 'http'
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import subprocess
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from cep.errors import CepError, ConfigError
from delta_tables.settings import Settings
from jobs.servers import listener
from jobs.servers.lockdown import lockdown_conf, verify
from jobs.servers.tls import TRUSTSTORE_PASSWORD, thrift_tls_settings, tls_files
from jobs.servers.users import UsersError, list_users, users_file
from jobs.session.shim import shim_jar

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "ServerConf", "ServerConfError", "ServerStartError",
           "ThriftServer", "check_host", "check_port", "jdbc_url", "load_server_conf", "serve",
           "start_server", "thrift_settings"]

DEFAULT_HOST = "127.0.0.1"
"""Loopback: only programs on this machine can connect."""
DEFAULT_PORT = 10000
"""HiveServer2's usual port, the default of JDBC/ODBC drivers and BI tools."""
CONF_FILE = "server.toml"

SINGLE_SESSION = "spark.sql.hive.thriftServer.singleSession"
"""Static Spark setting: every connection uses the session the server was started from, the
one holding the CEP functions (otherwise each connection gets a new session without them)."""
CLASS_PATH = "spark.driver.extraClassPath"
THRIFT_SERVER = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
AUTHENTICATOR = "cep.sql.PasswordFileAuthenticator"
"""The shim's HiveServer2 ``CUSTOM`` provider: user names and passwords from the users file."""
USERS_PROPERTY = "cep.server.users"
"""The JVM system property naming the users file (read by :data:`AUTHENTICATOR`)."""
CUSTOM_CLASS = "hive.server2.custom.authentication.class"
OVERRIDING_ENV = ("HIVE_SERVER2_THRIFT_BIND_HOST", "HIVE_SERVER2_THRIFT_PORT",
                  "HIVE_SERVER2_THRIFT_HTTP_PORT", "HIVE_SERVER2_TRANSPORT_MODE")
"""Environment variables that HiveServer2's Java code prefers to its settings."""

LOGIN_TIMEOUT_SECONDS = 10
"""How long a connection may take to log in before the server closes it (cep.sql.ThriftGuard)."""
MAX_PENDING_LOGINS = 64
"""How many connections may be logging in at once; beyond, the oldest of them is closed. The
other 436 of HiveServer2's 500 worker threads stay for logged-in clients."""
WATCH_SECONDS = 1
"""How often the server looks for logged-in clients that have gone, to cancel their queries."""

JVM_EXIT_SECONDS = 60.0
"""How long a failed stop waits for a JVM that received the signal as well to finish exiting."""

class ServerConfError(ConfigError):
    """A bad ``[server]`` setting in ``conf/server.toml`` or a bad ``--host``/``--port``."""

    code = "CEP-JOB-060"


class ServerStartError(CepError):
    """The Thrift server could not start (port taken, address not this machine's, another
    session already running in the process) or its JVM died while serving."""

    code = "CEP-JOB-061"


@dataclass(frozen=True)
class ServerConf:
    """Where the Thrift server listens.

    Attributes:
        host: The address to bind (an IP address or a host name).
        port: The TCP port; 0 lets the system pick a free one (printed at start).
        tls: Whether the listener speaks TLS (:mod:`jobs.servers.tls`).
    """

    host: str
    port: int
    tls: bool = False

    @property
    def jdbc_url(self) -> str:
        """The ``jdbc:hive2://host:port/`` URL of this address (``;ssl=true`` with TLS)."""
        return jdbc_url(self.host, self.port, self.tls)

    @property
    def is_loopback(self) -> bool:
        """Whether only this machine can reach the address."""
        return listener.is_loopback(self.host)


def jdbc_url(host: str, port: int, tls: bool = False) -> str:
    """The Hive JDBC URL of ``host:port`` (an IPv6 address goes in brackets; ``;ssl=true``
    when the listener speaks TLS, the truststore is the client's to add)."""
    url = f"jdbc:hive2://[{host}]:{port}/" if ":" in host else f"jdbc:hive2://{host}:{port}/"
    return f"{url};ssl=true" if tls else url


def check_host(value: Any, where: str) -> str:
    """``value`` if it is an IP address or a host name, else :class:`ServerConfError`."""
    return listener.check_host(value, where, ServerConfError)


def check_port(value: Any, where: str) -> int:
    """``value`` (a TOML integer or a flag's digits) as a port 0..65535, else
    :class:`ServerConfError`."""
    return listener.check_port(value, where, ServerConfError)


def load_server_conf(
    settings: Settings, *, host: str | None = None, port: str | int | None = None,
    tls: bool | None = None
) -> ServerConf:
    """``[server]`` of ``<conf_dir>/server.toml``, with the flags that were given on top.

    Args:
        settings: Project settings; their ``conf_dir`` holds ``server.toml`` (a missing file
            means the defaults: ``127.0.0.1``, port 10000, no TLS).
        host: ``--host``, when given; wins over the file.
        port: ``--port``, when given; wins over the file.
        tls: ``--tls`` (True), when given; wins over the file.

    Raises:
        ServerConfError: unreadable file, unknown section or key, bad host, port or ``tls``.
    """
    found_host, found_port, switches = listener.load_address(
        settings, CONF_FILE, "server", (DEFAULT_HOST, DEFAULT_PORT), ServerConfError,
        host=host, port=port, switches={"tls": tls})
    return ServerConf(found_host, found_port, switches["tls"])


def thrift_settings(settings: Settings, conf: ServerConf) -> dict[str, str]:
    """The HiveServer2 settings the service is started with.

    They are set on the session before the start: Spark copies the session's settings into
    the configuration the service reads.

    Raises:
        TlsError: TLS is on and its keystore or password is missing (:mod:`jobs.servers.tls`).
    """
    scratch = settings.scratch_dir / "thrift"
    return {
        **(thrift_tls_settings(tls_files(settings)) if conf.tls else {}),
        "hive.server2.transport.mode": "binary",
        "hive.server2.thrift.bind.host": conf.host,
        "hive.server2.thrift.port": str(conf.port),
        # CUSTOM is SASL PLAIN with the password checked by the shim's provider: what
        # beeline (-n/-p), the Hive JDBC driver (user/password), ODBC drivers and PyHive
        # (auth="CUSTOM") speak.
        "hive.server2.authentication": "CUSTOM",
        CUSTOM_CLASS: AUTHENTICATOR,
        # Statements run as the server's own OS user, restricted by the lockdown; the
        # authenticated names are the server's users, not the machine's.
        "hive.server2.enable.doAs": "false",
        # Hive's scratch and log folders default to /tmp/hive and the like; the project keeps
        # everything it writes under its data directory.
        "hive.exec.scratchdir": str(scratch / "scratch"),
        "hive.exec.local.scratchdir": str(scratch / "local"),
        "hive.server2.logging.operation.log.location": str(scratch / "operation_logs"),
        "hive.downloaded.resources.dir": str(scratch / "resources"),
        # A statement whose session closes (the client disconnected: cep.sql.ThriftGuard) stops
        # its tasks, Python workers included, instead of letting them finish.
        "spark.sql.thriftServer.interruptOnCancel": "true",
    }


@dataclass
class ThriftServer:
    """A running Thrift server and the session it serves.

    Attributes:
        spark: The project session; every connection runs its statements in it.
        service: The JVM's ``HiveThriftServer2`` object (a py4j proxy).
        host: The bound address.
        port: The bound port (the system's choice when 0 was asked for).
        tables: The Delta tables registered by name, which clients see.
    """

    spark: "SparkSession"
    service: Any
    host: str
    port: int
    tables: tuple[str, ...]
    tls: bool = False
    stopped: bool = False
    guard: Any = None
    """The JVM's ``cep.sql.ThriftGuard`` (a py4j proxy), None before it is installed."""

    @property
    def jdbc_url(self) -> str:
        """The JDBC URL clients use."""
        return jdbc_url(self.host, self.port, self.tls)

    def jvm_exit_code(self, wait: float = 0.0) -> int | None:
        """The JVM's exit code once it has exited (waiting up to ``wait`` seconds for that);
        None while it runs (or when unknown)."""
        # pyspark keeps the Popen of the JVM it launched on the gateway; a JVM started by
        # someone else has none and is taken to be alive.
        proc = getattr(self.spark.sparkContext._gateway, "proc", None)
        if proc is None:
            return None
        try:
            return proc.wait(wait) if wait else proc.poll()
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> None:
        """Stop the Thrift service (the port is released), then the session; idempotent.

        A SIGTERM sent to the whole process group also reaches the JVM, which then shuts the
        service and Spark down by itself: a JVM that is already gone has nothing to release.
        """
        if self.stopped:
            return
        self.stopped = True
        if self.jvm_exit_code() is not None:
            return
        # py4j logs a traceback through the root logger when the JVM goes away under a call
        # (the process-group case above) before raising; the raised error is what counts.
        logging.disable(logging.ERROR)
        try:
            self.service.stop()
            self.spark.stop()
        except Exception:  # py4j's errors when the JVM is exiting meanwhile (py4j is not
            # importable from this layer); from a JVM that stays alive it is a real failure
            if self.jvm_exit_code(wait=JVM_EXIT_SECONDS) is None:
                raise
        finally:
            logging.disable(logging.NOTSET)


def _probe_port(conf: ServerConf) -> None:
    """Fail fast, before a JVM starts, when ``conf``'s address cannot be listened on."""
    listener.probe_port(conf.host, conf.port, ServerStartError, f"[server] port in conf/{CONF_FILE}")


def _use_working_metastore(jvm: Any, service: Any, settings: Settings) -> None:
    """Point the service's internal Hive metastore at an in-memory Derby URL that works.

    Hive's session code opens the service's (empty, unused) metastore. Spark gives it the URL
    ``jdbc:derby:memory:;databaseName=<dir>``, which Derby refuses when ``derby.system.home``
    is set, as :mod:`jobs.session` does to keep ``derby.log`` under the data directory: every
    connection then spends 10-25 s in Hive's retries. ``jdbc:derby:memory:<name>`` works. The
    sessions copy the service's configuration when they open, and none can have opened yet.
    """
    hive_conf = service.getHiveConf()
    name = settings.scratch_dir / "thrift" / f"metastore-{uuid.uuid4().hex}"
    hive_conf.set("javax.jdo.option.ConnectionURL", f"jdbc:derby:memory:{name};create=true")
    # Create its schema now rather than in the first client's session (measured: ~10 s of
    # that client's first statement and of its disconnect on a busy 2-core machine).
    cli = next(child for child in service.getServices()
               if child.getClass().getName().endswith("SQLCLIService"))
    thread = jvm.java.lang.Thread.currentThread()
    loader = thread.getContextClassLoader()
    try:
        cli.closeSession(cli.openSession("cep-serve-warmup", "", None))
    finally:
        # A Hive session replaces this (py4j) thread's class loader with one that lacks the
        # Delta jars of spark.jars; the session's catalog is resolved through it later.
        thread.setContextClassLoader(loader)


def _jars_spark_lacks(jars: list[Path]) -> list[Path]:
    """The Delta jars (of ``spark.jars``) none of whose classes Spark's own jars ship.

    They go on the JVM's class path as well: Hive's session code closes the class loader that
    holds ``spark.jars`` when a client in synchronous mode (PyHive, ODBC drivers) disconnects,
    and a Delta class not loaded by then (the ``delta`` data source of ``CREATE TABLE ...
    USING delta``, the code paths of later reads) could no longer be loaded. Dependencies
    Spark ships in another version (Jackson, Parquet, Hadoop...) stay off the class path,
    where they would take precedence over Spark's.
    """
    import pyspark

    home = Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent)

    def classes(jar: Path) -> set[str]:
        with zipfile.ZipFile(jar) as archive:
            return {name for name in archive.namelist()
                    if name.endswith(".class") and not name.startswith("META-INF/")}

    shipped: set[str] = set()
    for jar in sorted((home / "jars").glob("*.jar")):
        shipped |= classes(jar)
    return [jar for jar in jars if not classes(jar) & shipped]


def _java_message(exc: BaseException) -> str:
    """The JVM's own account of a py4j error (its root cause), else the first line."""
    java = getattr(exc, "java_exception", None)
    if java is None:
        return next((line for line in str(exc).splitlines() if line.strip()), repr(exc))
    while java.getCause() is not None and java.getCause() != java:
        java = java.getCause()
    return str(java.toString())


def _bound_port(service: Any) -> int:
    """The port the service's Thrift socket listens on."""
    for child in service.getServices():
        if child.getClass().getName().endswith("ThriftBinaryCLIService"):
            return int(child.getPortNumber())
    raise ServerStartError("the Thrift service started without a binary Thrift listener")


def start_server(settings: Settings, conf: ServerConf) -> ThriftServer:
    """Build the project session, register the CEP functions and start the Thrift server.

    Args:
        settings: Project settings (warehouse, jars, Spark settings).
        conf: Where to listen (:func:`load_server_conf`).

    Returns:
        The running server; :meth:`ThriftServer.stop` stops it.

    Raises:
        ServerStartError: the address cannot be listened on, or a Spark session without the
            single-session setting already runs in this process.
        UsersError: the users file holds no user (or cannot be read).
        LockdownUnavailable: the JVM shim is missing or does not restrict the session.
        DeltaJarsUnavailable: the Delta jars cannot be loaded.
    """
    _probe_port(conf)
    if not list_users(settings):
        raise UsersError(f"the SQL server authenticates every client and {users_file(settings)} "
                         "holds no user: add one with `python -m jobs users add NAME` "
                         "(docs/bi.md)")
    listener.refuse_running_session(ServerStartError, "serve")
    service_settings = thrift_settings(settings, conf)  # a missing keystore fails here
    locked = lockdown_conf(settings)
    for name in OVERRIDING_ENV:
        # The JVM inherits this environment; these would silently win over --host/--port.
        os.environ.pop(name, None)
    from delta_tables.catalog import discover_tables
    from jobs.session import build_session, ensure_delta_jars
    from sql_ext import register_all

    extra = {**settings.spark_extra, **locked, SINGLE_SESSION: "true"}
    # The shim goes on the class path too: Hive loads the authenticator by name through the
    # application class loader, which does not see spark.jars.
    jars = os.pathsep.join(str(jar) for jar in [*_jars_spark_lacks(ensure_delta_jars(settings)),
                                                 shim_jar(settings)])
    extra[CLASS_PATH] = f"{extra[CLASS_PATH]}{os.pathsep}{jars}" if extra.get(CLASS_PATH) else jars
    spark = build_session(dataclasses.replace(settings, spark_extra=extra))
    # build_session hands back a session already running in this process as it is; without
    # the single-session setting, connections would not see the CEP functions.
    if spark.sparkContext.getConf().get(SINGLE_SESSION) != "true":
        raise ServerStartError(
            f"a Spark session without {SINGLE_SESSION}=true already runs in this process; "
            "start the server in a process of its own (python -m jobs serve)")
    try:
        verify(spark)
    except Exception:
        spark.stop()
        raise
    register_all(spark)
    for key, value in service_settings.items():
        spark.conf.set(key, value)
    # Hive builds the CUSTOM provider from a fresh HiveConf, which reads the JVM's system
    # properties, not the service's settings.
    jvm = spark.sparkContext._jvm
    jvm.java.lang.System.setProperty(CUSTOM_CLASS, AUTHENTICATOR)
    jvm.java.lang.System.setProperty(USERS_PROPERTY, str(users_file(settings)))
    # Hive logs an error at every disconnect while this folder is missing (it makes the
    # others itself, with the permissions it checks).
    os.makedirs(spark.conf.get("hive.exec.local.scratchdir"), exist_ok=True)
    try:
        # exitOnError=false: a failed start raises here instead of exiting the JVM.
        service = getattr(jvm, THRIFT_SERVER).startWithSparkSession(spark._jsparkSession, False)
    except Exception as exc:  # a Py4JJavaError carrying the JVM's bind failure
        spark.stop()
        raise ServerStartError(f"the Thrift server did not start on {conf.host}:{conf.port}: "
                               f"{_java_message(exc)}") from None
    try:
        _use_working_metastore(jvm, service, settings)
        port = _bound_port(service)
        guard = _guard(jvm, service, conf.host, port)
    except Exception:
        service.stop()
        spark.stop()
        raise
    tables = tuple(t.name for t in discover_tables(settings) if spark.catalog.tableExists(t.name))
    return ThriftServer(spark, service, conf.host, port, tables, conf.tls, guard=guard)


def _guard(jvm: Any, service: Any, host: str, port: int) -> Any:
    """Put ``cep.sql.ThriftGuard`` on the started service (issue 46): a login timeout, a cap
    on connections still logging in, and the queries of clients that have gone cancelled."""
    thrift = next(child for child in service.getServices()
                  if child.getClass().getName().endswith("ThriftBinaryCLIService"))
    guard = jvm.cep.sql.ThriftGuard.install(thrift, LOGIN_TIMEOUT_SECONDS * 1000,
                                            MAX_PENDING_LOGINS, WATCH_SECONDS * 1000)
    # The accept loop is already waiting on the unguarded socket: one connection of ours,
    # closed at once, takes that wait, so every client's connection meets the guard.
    target = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    with socket.create_connection((target, port), timeout=30):
        pass
    return guard


def serve(settings: Settings, conf: ServerConf, *, out: TextIO | None = None) -> int:
    """Run the server in the foreground until SIGTERM or SIGINT; returns the exit code 0.

    Prints one line with the address and the JDBC URL once clients can connect, and one when
    it has stopped.

    Raises:
        ServerConfError, ServerStartError: see :func:`start_server`.
    """
    if conf.tls:
        files = tls_files(settings)
        reach = (f"TLS: clients trust {files.cert} (PEM) or {files.truststore} (password "
                 f"{TRUSTSTORE_PASSWORD}); " + ("loopback only" if conf.is_loopback
                                                 else "reachable from other hosts"))
    else:
        reach = ("loopback only" if conf.is_loopback
                 else "reachable from other hosts: passwords cross the network in clear text "
                      "unless TLS is on (--tls) or a tunnel is in front")
    return listener.run_until_signal(
        lambda: start_server(settings, conf),
        lambda server: (f"SQL server (Spark Thrift JDBC/ODBC) listening on host {server.host} "
                        f"port {server.port}: JDBC URL {server.jdbc_url} ({reach}; "
                        f"{len(list_users(settings))} user(s) in {users_file(settings)}; "
                        f"{len(server.tables)} Delta tables of {settings.warehouse_dir}; stop "
                        "with Ctrl-C or SIGTERM)"),
        lambda server: f"SQL server on {server.host}:{server.port} stopped",
        lambda server, code: ServerStartError(f"the Spark JVM exited with code {code} while "
                                              f"serving {server.jdbc_url}"),
        out)
