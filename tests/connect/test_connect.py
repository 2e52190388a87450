"""Spark Connect (issue 9): the CEP functions registered and run from a Connect client session.

One real server per module: ``python -m jobs connect-server --port 0`` in a child process over
the test warehouse (the port is the system's choice, read from the URL line the server
prints). Before it starts, this process writes a small Delta table in two commits, so the
server registers it by name like every other warehouse table. A Connect client session in
this process (made by the Connect builder itself, beside the classic ``spark`` fixture) calls
``sql_ext.register_all`` and runs ``match_seq`` (now and ``VERSION AS OF 0``),
``match_seq`` positionally, ``cet_trends``, ``follows``, ``variants``, ``case_stats`` and
``cep_functions()``, in SQL and through the DataFrame API (``sql_ext.match_seq(df, ...)``);
every answer must equal the same SQL in the classic in-process session. A second client in a fresh interpreter takes the path
docs/connect.md shows (``SparkSession.builder.remote(url).getOrCreate()``, which puts the
process in Connect mode). A malformed pattern must fail with its CEP code in the client's
exception text; a taken port and bad settings are typed errors; SIGTERM stops the server with
exit 0 and frees the port. A TLS front (``connect-server --tls``'s proxy) in front of the
server carries the docs' client with ``use_ssl=true``. Issue 21: a local OS user other than
the server's cannot read the token; a client with it gets ``CEP-SQL-090`` for every statement
that reaches past the warehouse (``/etc/shadow``, ``reflect``,
``java_method('java.lang.System', 'exit', 0)``...), and the server still answers afterwards.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import os
import queue
import re
import signal
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from delta_tables.catalog import register_table
from delta_tables.settings import Settings, TableConf
from jobs.servers.connect_server import (ConnectConf, ConnectConfError, ConnectServerError,
                                         client_url, load_connect_conf, start_server)
from jobs.servers.tls import TlsError, create_self_signed, pem_pair
from jobs.servers.tls_proxy import TlsProxy, server_context
from tests import jvm
from tests.os_users import REFUSED_SQL, probe_user
from tests.sockets import descendants, kill_mid_query_and_wait_for_idle, listening_addresses

ROOT = Path(__file__).resolve().parents[2]
TABLE = "connect_events"
T0 = datetime(2024, 3, 1, 8, 0, tzinfo=timezone.utc)
START_TIMEOUT = 900  # seconds; only a guard against a hung child (a JVM start takes 10-30 s)

MATCH_SEQ = f"""
SELECT key, match_id, start_ts, end_ts, event_ids, variables, n_events
FROM match_seq(pattern => 'PATTERN a; b+; c WHERE c.price > a.price WITHIN 30 MINUTES',
               key_col => 'key', events => TABLE({{source}}))
"""
NOW = MATCH_SEQ.format(source=TABLE)
AS_OF_0 = MATCH_SEQ.format(source=f"SELECT * FROM {TABLE} VERSION AS OF 0")
MATCH_SEQ_POSITIONAL = f"""
SELECT * FROM match_seq('PATTERN a; b+; c WITHIN 30 MINUTES', 'key', TABLE({TABLE}),
                        policy => 'skip-till-any-match')
"""
CET_TRENDS = f"""
SELECT * FROM cet_trends(pattern => 'PATTERN up+ u[] WHERE u[i].price > u[i-1].price
                                     WITHIN 40 MINUTES SLIDE 20 MINUTES',
                         key_col => 'key', events => TABLE(SELECT id, key, ts, price FROM {TABLE}))
"""
# The time stamps become strings on the server (session time zone UTC), so the answer of a
# client in another process does not depend on either process's local time zone.
AS_TEXT = f"""
SELECT key, match_id, CAST(start_ts AS STRING) AS start_ts, CAST(end_ts AS STRING) AS end_ts,
       event_ids, variables
FROM match_seq(pattern => 'PATTERN a; b+; c WITHIN 30 MINUTES', key_col => 'key',
               events => TABLE({TABLE}))
"""
RECOGNIZE = f"""
SELECT * FROM {TABLE} MATCH_RECOGNIZE (
  PARTITION BY key ORDER BY ts, id
  MEASURES MATCH_NUMBER() AS m, FIRST(A.id) AS first_id, COUNT(B.*) AS bs, LAST(C.price) AS c_price
  PATTERN (A B+ C) DEFINE A AS type = 'a', B AS type = 'b', C AS type = 'c')
"""
FUNCTIONS_SQL = "SELECT name, signature, status FROM cep_functions()"
MODEL = (f"SELECT subscription, hex(model) AS model, events, keys "
         f"FROM predict_model('PATTERN a ; b, c', 'key', TABLE({TABLE}))")
FOLLOWS = f"SELECT * FROM follows('key', TABLE({TABLE}))"
VARIANTS = f"SELECT * FROM variants(key_col => 'key', events => TABLE({TABLE}))"
CASE_STATS = (f"SELECT key, CAST(start_ts AS STRING) AS start_ts, CAST(end_ts AS STRING) AS end_ts, "
              f"duration, n_events, first_type, last_type, first_id, last_id "
              f"FROM case_stats('key', TABLE({TABLE}))")
QUERIES = {"functions": FUNCTIONS_SQL, "now": NOW, "as_of_0": AS_OF_0, "positional": MATCH_SEQ_POSITIONAL,
           "trends": CET_TRENDS, "as_text": AS_TEXT, "recognize": RECOGNIZE, "follows": FOLLOWS,
           "variants": VARIANTS, "case_stats": CASE_STATS, "model": MODEL}
"""Every query a client runs, by name; the classic session's answers are the expected ones."""
# The client of docs/connect.md, in a fresh interpreter: URL and SQL in, rows out as JSON.
CLIENT = """
import json, sys
from pyspark.sql import SparkSession
from sql_ext import register_all

spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
names = register_all(spark)
rows = [r.asDict() for r in spark.sql(sys.argv[2]).collect()]
print(json.dumps({"type": type(spark).__module__, "names": names, "rows": rows}))
spark.stop()
"""


def events(commit: int) -> list[tuple[int, str, str, datetime, float]]:
    """The rows of one commit: four keys, a few minutes apart, types cycling with a twist.

    The second commit continues every key later in time, so a match over both commits exists
    that version 0 does not have.
    """
    rows = []
    for k in range(4):
        t = T0 + timedelta(minutes=90 * commit + k)
        for i in range(6 if commit == 0 else 4):
            n = 10 * commit + i
            kind = "abbc"[(n + k) % 4] if (n * 7 + k) % 5 else "d"
            rows.append((100 * commit + 10 * k + i, f"k{k}", kind, t, float((n * 3 + k) % 7)))
            t += timedelta(minutes=2 + (n + k) % 3)
    return rows


def sorted_rows(rows: list[Any]) -> list[tuple]:
    """Rows as tuples in a fixed order (a query's row order is not part of its answer)."""
    return sorted((tuple(r) for r in rows), key=repr)


@dataclass
class Server:
    """The child running ``python -m jobs connect-server`` and what it printed."""

    proc: subprocess.Popen[str]
    address: str  # the sc://host:port the server printed
    url: str  # what clients connect with: sc://localhost:PORT/;token=... (the token's file)
    port: int
    first_line: str
    env: dict[str, str]
    stderr: Path
    expected: dict[str, list[tuple]]  # the classic session's answer to each of QUERIES
    lines: queue.Queue[str]  # stdout after the first line, filled by ``reader``
    reader: threading.Thread

    def log(self) -> str:
        """The end of the server's stderr, for failure messages."""
        return self.stderr.read_text(errors="replace")[-4000:]


@pytest.fixture(scope="module")
def table(spark: Any, settings: Settings) -> TableConf:
    """``connect_events`` in the test warehouse: version 0 and version 1 (an append)."""
    conf = TableConf(TABLE, settings.warehouse_dir / TABLE)
    schema = "id BIGINT, key STRING, type STRING, ts TIMESTAMP, price DOUBLE"
    for commit in (0, 1):
        (spark.createDataFrame(events(commit), schema).write.format("delta").mode("append")
         .save(str(conf.location)))
    assert register_table(spark, conf)
    versions = spark.sql(f"DESCRIBE HISTORY {TABLE}").select("version").collect()
    assert sorted(r.version for r in versions) == [0, 1]
    return conf


@pytest.fixture(scope="module")
def server(spark: Any, settings: Settings, table: TableConf,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The Connect server over the test warehouse, started after ``table`` is written; while
    its JVM starts, this process computes the classic answers to compare with."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CEP_", "PYSPARK_SUBMIT", "SPARK_CONNECT", "SPARK_REMOTE"))}
    env.update(CEP_WAREHOUSE=str(settings.warehouse_dir), CEP_CONF_DIR=str(settings.conf_dir),
               CEP_DATA_DIR=str(settings.data_dir), PYTHONUNBUFFERED="1",
               JAVA_TOOL_OPTIONS=jvm.FAST_START)
    stderr = tmp_path_factory.mktemp("connect") / "server.err"
    with stderr.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "jobs", "connect-server", "--port", "0"],
                                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
    lines: queue.Queue[str] = queue.Queue()
    # A thread reads stdout, so a server that hangs before its first line fails the fixture
    # after START_TIMEOUT instead of blocking the run.
    reader = threading.Thread(target=lambda: [lines.put(ln) for ln in proc.stdout], daemon=True)
    reader.start()
    try:
        expected = {name: sorted_rows(spark.sql(query).collect())
                    for name, query in QUERIES.items()}
        try:
            first = lines.get(timeout=START_TIMEOUT)
        except queue.Empty:
            first = ""
        found = re.search(r"sc://127\.0\.0\.1:(\d+)", first)
        token_at = re.search(r"the token in (\S+), readable by this user only", first)
        if not found or not token_at:
            proc.kill()
            proc.wait()
            pytest.fail(f"no URL from connect-server (exit {proc.returncode}): {first!r}\n"
                        f"{stderr.read_text(errors='replace')[-4000:]}")
        token = Path(token_at.group(1)).read_text().strip()
        url = f"sc://localhost:{found.group(1)}/;token={token}"
        yield Server(proc, found.group(0), url, int(found.group(1)), first, env, stderr,
                     expected, lines, reader)
    finally:
        if proc.poll() is None:  # a failure left it running (the last test stops it)
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def remote(server: Server) -> Iterator[Any]:
    """A Connect client session in this process, next to the classic ``spark`` session.

    Made by the Connect builder itself: ``pyspark.sql.SparkSession.builder.remote`` would put
    the whole test process in Connect mode (``SPARK_CONNECT_MODE_ENABLED``), and every later
    classic test would then build Connect objects.
    """
    from pyspark.sql.connect.session import SparkSession as RemoteSession

    session = RemoteSession.builder.remote(server.url).create()
    yield session
    session.stop()


@pytest.fixture(scope="module")
def registered(remote: Any) -> list[str]:
    """The front door's ``sql_ext.enable`` on the Connect session (``register_all`` and the
    settings; MATCH_RECOGNIZE is the server JVM's, so it answers None for it)."""
    import sql_ext

    enabled = sql_ext.enable(remote)
    assert enabled.match_recognize is None
    assert sql_ext.register_all(remote) == list(enabled.functions)  # idempotent
    return list(enabled.functions)


def test_server_prints_its_loopback_url(server: Server) -> None:
    assert server.first_line.startswith(f"Spark Connect server at {server.address} "
                                        "(loopback only;")
    assert server.proc.poll() is None


def test_the_token_file_is_the_servers_users_alone(server: Server, settings: Settings) -> None:
    path = settings.data_dir / "connect" / "token"
    assert f"the token in {path}," in server.first_line
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    assert len(path.read_text().strip()) >= 40


def test_another_local_user_cannot_read_the_token(server: Server, settings: Settings) -> None:
    prober = probe_user()
    if prober is None:
        pytest.skip("acting as another local user needs root")
    shown = prober.run(["cat", str(settings.data_dir / "connect" / "token")])
    assert shown.returncode != 0 and "Permission denied" in shown.stderr, shown


def test_the_sessions_refuse_what_reaches_past_the_warehouse(server: Server, remote: Any,
                                                            tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    for name, sql in REFUSED_SQL.items():
        *allowed, last = [part.strip() for part in sql.format(outside=outside).split(";")]
        for statement in allowed:
            remote.sql(statement).collect()
        with pytest.raises(Exception) as refused:
            remote.sql(last).collect()
        assert "CEP-SQL-090: " in str(refused.value), (name, str(refused.value)[:2000])
    assert remote.sql("SELECT 'still serving' AS alive").collect()[0].alive == "still serving"
    assert list(outside.iterdir()) == [] and server.proc.poll() is None


def test_a_clients_dataframe_api_cannot_open_jdbc_or_choose_a_catalog(
        server: Server, remote: Any, tmp_path: Path) -> None:
    # Issue 46: the JDBC source and catalogs through the DataFrame API, which reaches the
    # analyser without the parser (a reader's format is resolved, and connects, in analysis).
    outside = tmp_path / "outside"
    outside.mkdir()
    jdbc = "org.apache.spark.sql.execution.datasources.jdbc.JdbcRelationProvider"

    def url(name: str) -> str:
        return f"jdbc:derby:{outside}/{name};create=true"

    def catalog() -> None:
        remote.conf.set("spark.sql.catalog.cep_probe_cat",
                        "org.apache.spark.sql.execution.datasources.v2.jdbc.JDBCTableCatalog")
        remote.conf.set("spark.sql.catalog.cep_probe_cat.url", url("cat"))
        try:
            remote.table("cep_probe_cat.SYS.SYSTABLES").collect()
        finally:
            remote.conf.unset("spark.sql.catalog.cep_probe_cat")
            remote.conf.unset("spark.sql.catalog.cep_probe_cat.url")

    routes = {
        "read.format('jdbc')": lambda: remote.read.format("jdbc").option("url", url("r1"))
        .option("dbtable", "SYS.SYSTABLES").load().collect(),
        "read.jdbc": lambda: remote.read.jdbc(url("r2"), "SYS.SYSTABLES").collect(),
        "read by class name": lambda: remote.read.format(jdbc).option("url", url("r3"))
        .option("dbtable", "SYS.SYSTABLES").load().collect(),
        "write.jdbc": lambda: remote.range(1).write.jdbc(url("w1"), "T"),
        "saveAsTable with jdbc": lambda: remote.range(1).write.format("jdbc")
        .option("url", url("w2")).option("dbtable", "T").saveAsTable("cep_probe_w"),
        "a catalog set by conf.set": catalog,
    }
    for name, attempt in routes.items():
        with pytest.raises(Exception) as refused:
            attempt()
        assert "CEP-SQL-090: " in str(refused.value), (name, str(refused.value)[:2000])
    assert remote.sql("SELECT 'still serving' AS alive").collect()[0].alive == "still serving"
    assert list(outside.iterdir()) == [] and server.proc.poll() is None


def test_a_killed_clients_query_stops(server: Server, remote: Any) -> None:
    # Issue 46: Spark Connect keeps a query whose client has gone for 5 minutes, in case the
    # client reattaches; the server interrupts it after 15 s. The query runs ~200 s alone.
    client = ("from pyspark.sql.connect.session import SparkSession\n"
              f"s = SparkSession.builder.remote({server.url!r}).create()\n"
              "s.range(0, 200000000000).where('id % 7 = 3').count()\n")
    env = {k: v for k, v in server.env.items() if not k.startswith("JAVA_TOOL")}
    kill_mid_query_and_wait_for_idle(server.proc.pid, [sys.executable, "-c", client], env)
    assert remote.sql("SELECT 'still serving' AS alive").collect()[0].alive == "still serving"


@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_a_client_without_the_token_is_refused(server: Server, token: str | None) -> None:
    from pyspark.sql.connect.session import SparkSession as RemoteSession

    url = f"sc://localhost:{server.port}" + ("" if token is None else f"/;token={token}")
    with pytest.raises(Exception) as refused:
        session = RemoteSession.builder.remote(url).create()
        try:
            session.sql("SELECT 1").collect()
        finally:
            session.stop()
    assert "UNAUTHENTICATED" in str(refused.value), str(refused.value)[:2000]


def test_server_is_not_reachable_from_other_hosts(server: Server) -> None:
    # This machine's own non-loopback address stands for "another host": the service is bound
    # to 127.0.0.1 only, so nothing listens there.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks a route
            address = probe.getsockname()[0]
        except OSError:
            address = "127.0.0.1"
    if ipaddress.ip_address(address).is_loopback:
        pytest.skip("this machine has no non-loopback IPv4 address to connect from")
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((address, server.port), timeout=30).close()


def test_the_server_listens_on_loopback_only(server: Server) -> None:
    # Issue 21: the server's JVM bound the driver's RPC and block-manager ports on the
    # machine's address. Every listener of the child and its JVM is on 127.0.0.1 now.
    listening = [a for pid in descendants(server.proc.pid) for a in listening_addresses(pid)]
    assert f"127.0.0.1:{server.port}" in listening, (listening, server.log())
    assert all(a.startswith("127.0.0.1:") for a in listening), listening


def test_register_all_registers_every_function_over_connect(
        server: Server, remote: Any, registered: list[str]) -> None:
    from sql_ext import FUNCTIONS

    assert registered == [f.name for f in FUNCTIONS if f.status == "available" and f.adapter]
    assert type(remote).__module__ == "pyspark.sql.connect.session"
    assert sorted_rows(remote.sql(FUNCTIONS_SQL).collect()) == server.expected["functions"]


def test_match_seq_over_connect_equals_classic(server: Server, remote: Any,
                                               registered: list[str]) -> None:
    # The table was registered by the server at its start: the client names it, no path.
    got = sorted_rows(remote.sql(NOW).collect())
    assert got and got == server.expected["now"]


def test_time_travel_over_connect_equals_classic(server: Server, remote: Any,
                                                 registered: list[str]) -> None:
    got = sorted_rows(remote.sql(AS_OF_0).collect())
    assert got and got == server.expected["as_of_0"]
    # Version 1 appended later events that complete further matches: the versions differ.
    assert got != sorted_rows(remote.sql(NOW).collect())
    history = remote.sql(f"DESCRIBE HISTORY {TABLE}").select("version").collect()
    assert sorted(r.version for r in history) == [0, 1]


@pytest.mark.parametrize("name", ["positional", "trends", "recognize", "follows", "variants",
                                  "case_stats", "model"])
def test_more_cep_functions_over_connect_equal_classic(server: Server, remote: Any,
                                                       registered: list[str], name: str) -> None:
    # match_seq in its positional form with a named option; cet_trends, another function.
    got = sorted_rows(remote.sql(QUERIES[name]).collect())
    assert got and got == server.expected[name]


def test_the_dataframe_api_over_connect_equals_classic_sql(server: Server, remote: Any,
                                                          registered: list[str]) -> None:
    # Issue 52: sql_ext.<function>(df, ...) on a Connect DataFrame answers as the SQL does.
    import sql_ext

    events = remote.table(TABLE)
    pattern = "PATTERN a; b+; c WHERE c.price > a.price WITHIN 30 MINUTES"
    got = sql_ext.match_seq(events, pattern, key_col="key").select(
        "key", "match_id", "start_ts", "end_ts", "event_ids", "variables", "n_events")
    assert sorted_rows(got.collect()) == server.expected["now"]
    assert sorted_rows(sql_ext.follows(events, "key").collect()) == server.expected["follows"]
    assert sorted_rows(sql_ext.variants(events, key_col="key").collect()) == \
        server.expected["variants"]
    stats = sql_ext.case_stats(events, "key").selectExpr(
        "key", "CAST(start_ts AS STRING) AS start_ts", "CAST(end_ts AS STRING) AS end_ts",
        "duration", "n_events", "first_type", "last_type", "first_id", "last_id")
    assert sorted_rows(stats.collect()) == server.expected["case_stats"]
    model = sql_ext.predict_model(events, "PATTERN a ; b, c", "key").selectExpr(
        "subscription", "hex(model) AS model", "events", "keys")
    assert sorted_rows(model.collect()) == server.expected["model"]


def test_malformed_pattern_reaches_the_client_with_its_code(remote: Any,
                                                            registered: list[str]) -> None:
    from pyspark.errors import AnalysisException

    bad = f"SELECT * FROM match_seq('PATTERN a; ;', 'key', TABLE({TABLE}))"
    with pytest.raises(AnalysisException) as caught:
        remote.sql(bad).collect()
    text = str(caught.value)
    assert "CEP-PAT-106: line 1, column 12:" in text, text[:2000]
    assert "PATTERN a; ;" in text  # the caret snippet comes along


def test_match_recognize_error_reaches_the_client_with_its_position(
        remote: Any, registered: list[str]) -> None:
    bad = f"SELECT * FROM {TABLE} MATCH_RECOGNIZE (ORDER BY ts PATTERN (A{{3,2}}))"
    with pytest.raises(Exception) as caught:
        remote.sql(bad).collect()
    text = str(caught.value)
    assert "CEP-MR-105: line 1, column " in text and "PARSE_SYNTAX_ERROR" not in text, text[:2000]


def test_client_in_connect_mode_process(server: Server) -> None:
    # The docs' way: pyspark.sql.SparkSession.builder.remote(...).getOrCreate() in a process
    # of its own, where pyspark builds Connect UDTF objects from the start.
    proc = subprocess.run([sys.executable, "-c", CLIENT, server.url, AS_TEXT], cwd=ROOT,
                          env=server.env, capture_output=True, text=True, timeout=START_TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-4000:]
    answer = json.loads(proc.stdout.strip().splitlines()[-1])
    assert answer["type"] == "pyspark.sql.connect.session"
    assert "match_seq" in answer["names"] and "cet_trends" in answer["names"]
    got = sorted_rows([list(row.values()) for row in answer["rows"]])
    assert got and got == server.expected["as_text"]


def test_a_tls_front_carries_connect_clients(server: Server, settings: Settings,
                                            tmp_path: Path) -> None:
    # Issue 21, optional TLS: Spark 4.2's Connect service speaks no TLS, so connect-server
    # --tls puts jobs.servers.tls_proxy in front of it. Here that front, with a set made by
    # tls init, forwards to the module's server: the docs' client with use_ssl=true and the
    # certificate as its trust root gets the classic rows; without the root the handshake fails.
    files = create_self_signed(dataclasses.replace(settings, data_dir=tmp_path), ["localhost"])
    proxy = TlsProxy("127.0.0.1", 0, server.port, server_context(*pem_pair(files)))
    port = proxy.start()
    try:
        url = client_url("127.0.0.1", port, server.url.split("token=")[1], tls=True)
        assert url.startswith(f"sc://localhost:{port}/;use_ssl=true;token=")
        trusting = {**server.env, "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": str(files.cert)}
        proc = subprocess.run([sys.executable, "-c", CLIENT, url, AS_TEXT], cwd=ROOT,
                              env=trusting, capture_output=True, text=True,
                              timeout=START_TIMEOUT)
        assert proc.returncode == 0, proc.stderr[-4000:]
        got = sorted_rows([list(row.values())
                           for row in json.loads(proc.stdout.strip().splitlines()[-1])["rows"]])
        assert got and got == server.expected["as_text"]
        # Without the certificate as a root the handshake fails (pyspark's client would
        # retry UNAVAILABLE for minutes before saying so).
        with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
            with pytest.raises(ssl.SSLCertVerificationError):
                ssl.create_default_context().wrap_socket(raw, server_hostname="localhost")
    finally:
        proxy.stop()
    with pytest.raises(TlsError, match=r"CEP-JOB-065: TLS is on and the private key .*key\.pem "
                                       r"is missing"):
        start_server(dataclasses.replace(settings, data_dir=tmp_path / "none"),
                     ConnectConf("127.0.0.1", 0, tls=True))


def test_a_taken_port_is_a_typed_error(server: Server) -> None:
    proc = subprocess.run([sys.executable, "-m", "jobs", "connect-server", "--port",
                           str(server.port)], cwd=ROOT, env=server.env, capture_output=True,
                          text=True, timeout=START_TIMEOUT)
    assert proc.returncode == 2
    assert f"CEP-JOB-071: cannot listen on 127.0.0.1:{server.port}" in proc.stderr


def test_server_in_a_process_with_another_session_is_refused(spark: Any,
                                                             settings: Settings) -> None:
    # This process already runs the classic session, whose JVM was started without the
    # Connect binding; building "the server's" session would return it unchanged.
    with pytest.raises(ConnectServerError, match="already runs in this process"):
        start_server(settings, ConnectConf("127.0.0.1", 0))
    # Refused before any session is built: the server's settings did not leak into this one
    # (the lockdown's spark.sql.runSQLOnFiles=false once did, and every later test reading a
    # Delta path failed).
    assert spark.conf.get("spark.sql.runSQLOnFiles") == "true"


@pytest.mark.parametrize("text, flags, message", [
    ("[connect]\nport = 70000\n", {}, "connect.port: expected a port number from 0 to 65535"),
    ("[connect]\nport = true\n", {}, "connect.port: expected a port number"),
    ("[connect]\nhost = 'not a host'\n", {}, "connect.host: expected an IP address or a host"),
    ("[connect]\nhots = '127.0.0.1'\n", {}, "unknown key connect.hots"),
    ("[connect]\ntls = 1\n", {}, "connect.tls: expected true or false, found 1"),
    ("[server]\nport = 1\n", {}, "unknown section [server]"),
    ("[connect\n", {}, "cannot read"),
    ("", {"port": "-1"}, "--port: expected a port number"),
    ("", {"host": "a/b"}, "--host: expected an IP address or a host name"),
])
def test_bad_connect_settings_are_typed_errors(settings: Settings, tmp_path: Path, text: str,
                                               flags: dict[str, str], message: str) -> None:
    (tmp_path / "connect.toml").write_text(text, encoding="utf-8")
    local = dataclasses.replace(settings, conf_dir=tmp_path)
    with pytest.raises(ConnectConfError) as caught:
        load_connect_conf(local, **flags)
    assert caught.value.code == "CEP-JOB-070" and message in str(caught.value)


def test_connect_settings_defaults_file_and_flags(settings: Settings, tmp_path: Path) -> None:
    local = dataclasses.replace(settings, conf_dir=tmp_path)
    assert load_connect_conf(local).url == "sc://127.0.0.1:15002"  # no file: the defaults
    (tmp_path / "connect.toml").write_text("[connect]\nhost = 'localhost'\nport = 16000\n")
    conf = load_connect_conf(local)
    assert (conf.url, conf.is_loopback) == ("sc://localhost:16000", True)
    conf = load_connect_conf(local, host="::1", port="0")
    assert (conf.url, conf.is_loopback) == ("sc://[::1]:0", True)
    assert not load_connect_conf(local, host="0.0.0.0").is_loopback
    assert not load_connect_conf(local).tls and load_connect_conf(local, tls=True).tls
    assert load_connect_conf(settings).port == 15002  # the project's conf/connect.toml


def test_sigterm_stops_the_server_and_frees_the_port(server: Server, remote: Any) -> None:
    # Last test of the module: it ends the server the others used.
    remote.stop()  # the client first: a session closed by its client needs no retries
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(timeout=START_TIMEOUT) == 0, server.log()
    server.reader.join(timeout=START_TIMEOUT)  # stdout's end: the JVM has let go of it too
    rest = [server.lines.get_nowait() for _ in range(server.lines.qsize())]
    assert [ln.strip() for ln in rest] == [f"Spark Connect server at {server.address} stopped"], \
        server.log()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", server.port), timeout=30).close()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as again:
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        again.bind(("127.0.0.1", server.port))  # a new server could listen there now
