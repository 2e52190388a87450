"""The SQL server for BI tools (``python -m jobs serve``, docs/bi.md) with real clients.

One server per module: ``python -m jobs serve --port 0`` in a child process over the test
session's warehouse, after this module has written a small Delta table there in three commits
(``bi_clicks``: 36 clicks of six users). Then:

- every client authenticates: the module adds the user ``analyst`` to a users file of its own
  (``$CEP_SERVER_USERS``); a client without the password, or with a wrong one, is refused;
- beeline (shipped in the pyspark wheel) and PyHive (a DB-API client from PyPI) each run a
  ``match_seq`` query and a ``VERSION AS OF`` query, and get exactly the rows the same SQL
  gives in this process's session;
- a malformed pattern reaches the DB-API client with the CEP error code the in-process call
  raises; a failing call of every function (at plan time, and at run time for ``match_seq``
  and ``cet_trends``) reaches beeline with the message the in-process call raises: code,
  position and caret snippet, one Python frame around it;
- Delta keeps working after a synchronous (PyHive) client disconnected;
- the server listens on loopback only: a TCP connection to the machine's other address is
  refused, one to 127.0.0.1 is accepted;
- a local OS user other than the server's (``cep-probe``, made when the tests run as root)
  cannot read the users file, cannot connect without the password, and with it gets
  ``CEP-SQL-090`` for every statement that reaches past the warehouse (``/etc/shadow``,
  ``reflect``, ``INSERT OVERWRITE DIRECTORY``...), after which the server still answers;
- SIGTERM stops it: exit code 0, the port is free afterwards;
- then a second server with ``--tls`` and a set made by ``python -m jobs tls init``: beeline
  with the truststore gets the in-process rows, beeline without TLS is refused, a Python TLS
  client verifies the certificate, and the keystore's password never reaches a client.

Bad settings (``conf/server.toml``, ``--host``, ``--port``, a taken port) are typed
``CEP-JOB-060``/``CEP-JOB-061`` errors, checked without starting a JVM.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import ipaddress
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyspark
import pytest

from delta_tables.catalog import current_version, register_table
from delta_tables.settings import Settings, TableConf, load_settings
from jobs.cli import main
from jobs.servers.server import (ServerConf, ServerConfError, ServerStartError, load_server_conf,
                                start_server, thrift_settings)
from jobs.servers.tls import TRUSTSTORE_PASSWORD, TlsError, TlsFiles, create_self_signed, tls_files
from jobs.servers.users import USERS_ENV, UsersError, add_user, remove_user
from tests import jvm
from tests.os_users import REFUSED_SQL, ProbeUser, probe_user, reachable_beeline
from tests.sockets import descendants, kill_mid_query_and_wait_for_idle, listening_addresses

ROOT = Path(__file__).resolve().parents[2]
BEELINE = Path(pyspark.__file__).parent / "bin" / "beeline"
TABLE = "bi_clicks"
START = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)
# Bounds for a child that hangs, never timings under test: a JVM start takes 10-30 s here,
# several times that on a loaded machine.
START_TIMEOUT = 600
CLIENT_TIMEOUT = 300
STOP_TIMEOUT = 120

# Six users, six clicks each, committed two clicks per user at a time (three commits).
CLICKS = {
    "u1": ["login", "view", "view", "buy", "logout", "login"],
    "u2": ["login", "buy", "view", "buy", "logout", "view"],
    "u3": ["view", "login", "view", "view", "buy", "logout"],
    "u4": ["login", "logout", "login", "view", "buy", "buy"],
    "u5": ["login", "view", "buy", "login", "view", "buy"],
    "u6": ["buy", "view", "login", "view", "logout", "buy"],
}
PATTERN = "PATTERN SEQ(login, view+, buy) WITHIN 1 HOUR"
# Distinct column names: beeline's output of the two statements is split at their headers.
MATCHES = ("SELECT user_id, match_id, CAST(start_ts AS STRING) AS start_ts, "
           "CAST(end_ts AS STRING) AS end_ts, "
           "array_join(transform(event_ids, i -> CAST(i AS STRING)), ' ') AS event_ids, "
           "array_join(variables, ' ') AS variables "
           f"FROM match_seq(pattern => '{PATTERN}', key_col => 'user_id', "
           f"events => TABLE({TABLE})) ORDER BY user_id, match_id")
RECOGNIZE = (f"SELECT user_id AS mr_user, mr_first, mr_n FROM {TABLE} MATCH_RECOGNIZE ("
             "PARTITION BY user_id ORDER BY ts, id "
             "MEASURES CAST(FIRST(L.ts) AS STRING) AS mr_first, COUNT(*) AS mr_n "
             "PATTERN (L V+ B) DEFINE L AS type = 'login', V AS type = 'view', B AS type = 'buy') "
             "ORDER BY mr_user, mr_first")
# A trailing NOT: a login's absence is reported once the newest click of the table (any
# user's) has closed its 25 minutes; u1's second login, at 09:50 of a table whose newest click
# is 09:55, is not (issue 47).
ABSENCES = ("SELECT user_id AS ab_user, CAST(start_ts AS STRING) AS ab_start FROM match_seq("
            "pattern => 'PATTERN login; NOT(buy) WITHIN 25 MINUTES', key_col => 'user_id', "
            f"events => TABLE({TABLE})) ORDER BY ab_user, ab_start")
AS_OF = ("SELECT user_id AS as_of_user, count(*) AS as_of_clicks, "
         f"CAST(max(ts) AS STRING) AS as_of_last FROM {TABLE} VERSION AS OF {{version}} "
         "GROUP BY user_id ORDER BY user_id")
BAD_PATTERN = ("SELECT * FROM match_seq(pattern => 'PATTERN SEQ(login, view+', "
               f"key_col => 'user_id', events => TABLE({TABLE}))")
CODE = re.compile(r"CEP-[A-Z]+-\d{3}")
EVENTS = ("SELECT * FROM VALUES (1L, 'k1', TIMESTAMP'2024-01-01 00:00:00', 'a', 1.0), "
          "(2L, 'k1', TIMESTAMP'2024-01-01 00:01:00', 'b', 2.0), "
          "(3L, 'k1', TIMESTAMP'2024-01-01 00:02:00', 'b', 2.0) AS t(id, key, ts, type, x)")
PSTREAM = "SELECT * FROM VALUES ('s', 1, map('a', 1.0D)) AS t(stream, t, probs)"
ERRORS = {  # a failing call of every function with an argument: (SQL, the code it must carry)
    "match_seq": (f"SELECT * FROM match_seq('PATTERN a; b DEFINE a AS x >', key_col => 'key', "
                  f"events => TABLE({EVENTS}))", "CEP-PAT-117"),
    "match_seq at run time": (
        f"SELECT * FROM match_seq('PATTERN a; b', key_col => 'key', "
        f"policy => 'skip-till-any-match', max_matches => 1, events => TABLE({EVENTS}))",
        "CEP-MATCH-001"),
    # a class no event carries: decided from the whole input, before the tasks (issue 47)
    "match_seq absent class": (f"SELECT * FROM match_seq('PATTERN a; bb', key_col => 'key', "
                               f"events => TABLE({EVENTS}))", "CEP-PAT-219"),
    "approx_match_seq": ("SELECT * FROM approx_match_seq('PATTERN a;;', "
                         "sketch => TABLE(SELECT 1 AS x))", "CEP-PAT-106"),
    "sketch_stats": ("SELECT * FROM sketch_stats(TABLE(SELECT 1 AS x))", "CEP-SQL-021"),
    "cet_trends": (f"SELECT * FROM cet_trends('PATTERN a+ w[] WHERE w[i].x >', key_col => 'key', "
                   f"events => TABLE({EVENTS}))", "CEP-PAT-117"),
    "cet_trends at run time": (f"SELECT * FROM cet_trends('PATTERN a+', key_col => 'key', "
                               f"max_trends => 1, events => TABLE({EVENTS}))", "CEP-TREND-020"),
    "match_prob": (f"SELECT * FROM match_prob('PATTERN a, (b', pstream => TABLE({PSTREAM}))",
                   "CEP-PAT-108"),
    # A pattern of two lines: the position names the second (beeline drops the indentation of a
    # script's continuation lines, so the second line starts at column 1 here).
    "predict_match": (f"SELECT * FROM predict_match('PATTERN a, b\nDEFINE a AS x >', "
                      f"key_col => 'key', events => TABLE({EVENTS}))", "CEP-PAT-117"),
    # MATCH_RECOGNIZE fails in the parser (no Python frame: the rewriter's message alone) ...
    "match_recognize": ("SELECT * FROM range(3) MATCH_RECOGNIZE (ORDER BY id PATTERN (A{3,2}))",
                        "CEP-MR-105"),
    # ... or in the analyser, about the user's own names: in the user's statement, never the
    # rewritten one (no internal column suggested, no rewritten plan printed).
    "match_recognize unknown column": (
        f"SELECT * FROM ({EVENTS}) MATCH_RECOGNIZE (ORDER BY ts MEASURES LAST(B.xx) AS v "
        "PATTERN (A B) DEFINE A AS type = 'a', B AS type = 'b')", "CEP-MR-208"),
    # Spark's own call form for table functions: refused by the parser, naming the form to write.
    "table partition by": (f"SELECT * FROM match_seq('PATTERN a; b', events => TABLE({EVENTS}) "
                           "PARTITION BY key ORDER BY ts)", "CEP-SQL-003"),
    # ... or while matching, in the shell like every function.
    "match_recognize at run time": (
        f"SELECT * FROM ({EVENTS}) MATCH_RECOGNIZE (ORDER BY ts MEASURES COUNT(*) AS n "
        "AFTER MATCH SKIP TO B PATTERN (A B? C) DEFINE A AS type = 'a', B AS type = 'z', "
        "C AS type = 'b')", "CEP-MR-204"),
}
"""``cep_functions()`` takes no argument: a wrong call of it is Spark's own error."""
READY = re.compile(r"listening on host (\S+) port (\d+): JDBC URL (\S+)")
USER, PASSWORD = "analyst", "horse-battery-staple-9"
"""The module's user (beeline's launcher splits arguments at spaces: none in the password)."""


@dataclass(frozen=True)
class BiTable:
    """The clicks table, by the Delta version of its first commit (three in all)."""

    first: int

    def queries(self) -> dict[str, str]:
        """The statements every client runs, by name (the second version is the past one)."""
        return {"matches": MATCHES, "as_of": AS_OF.format(version=self.first + 1),
                "recognize": RECOGNIZE, "absences": ABSENCES}


@dataclass(frozen=True)
class Result:
    """What the in-process session returns for one statement, every value as text."""

    columns: tuple[str, ...]
    rows: list[tuple[str, ...]]


@dataclass
class Server:
    """The ``python -m jobs serve`` child and where it listens."""

    proc: subprocess.Popen[bytes]
    port: int
    url: str
    out: Path
    err: Path
    users: Path

    def log(self) -> str:
        """The end of the child's output, for failure messages."""
        return f"{self.out.read_text()[-2000:]}\n{self.err.read_text()[-3000:]}"


def click_rows(commit: int) -> list[tuple[int, str, str, datetime]]:
    """The clicks of ``commit`` (0..2): two per user, ten minutes apart per user."""
    rows = []
    for u, (user, types) in enumerate(CLICKS.items()):
        for k in (2 * commit, 2 * commit + 1):
            rows.append((100 * u + k, user, types[k], START + timedelta(minutes=10 * k + u)))
    return rows


@pytest.fixture(scope="module")
def bi_table(spark, settings: Settings) -> BiTable:
    """``bi_clicks`` written in three commits under the test warehouse, registered here."""
    location = settings.warehouse_dir / TABLE
    shutil.rmtree(location, ignore_errors=True)
    for commit in range(3):
        frame = spark.createDataFrame(
            click_rows(commit), "id BIGINT, user_id STRING, type STRING, ts TIMESTAMP")
        frame.write.format("delta").mode("append").save(str(location))
    conf = TableConf(TABLE, location)
    register_table(spark, conf)
    latest = current_version(spark, conf)
    assert latest is not None
    return BiTable(latest - 2)


def in_process(spark, sql: str) -> Result:
    """``sql`` run in this process's session."""
    frame = spark.sql(sql)
    return Result(tuple(frame.columns), [tuple(str(v) for v in row) for row in frame.collect()])


@pytest.fixture(scope="module")
def expected(spark, bi_table: BiTable) -> dict[str, Result]:
    """Every client statement run in this process, by name."""
    return {name: in_process(spark, sql) for name, sql in bi_table.queries().items()}


def child_env(settings: Settings) -> dict[str, str]:
    """This run's warehouse, settings and caches for a child process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CEP_", "PYSPARK_SUBMIT"))}
    env.update(CEP_WAREHOUSE=str(settings.warehouse_dir), CEP_CONF_DIR=str(settings.conf_dir),
               CEP_DATA_DIR=str(settings.data_dir), PYTHONUNBUFFERED="1",
               JAVA_TOOL_OPTIONS=jvm.FAST_START)
    return env


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the child, then SIGKILL to its process group if it does not exit."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(STOP_TIMEOUT)


def start_child(settings: Settings, logs: Path, flags: list[str],
                wait_for: Callable[[], object] | None = None) -> Server:
    """``python -m jobs serve --port 0 <flags>`` over the test warehouse with the module's
    user, once it prints its ready line (``wait_for`` runs while its JVM starts)."""
    out, err = logs / "serve.out", logs / "serve.err"
    users = logs / "server" / "users"
    env = {**child_env(settings), USERS_ENV: str(users)}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(USERS_ENV, str(users))
        add_user(settings, USER, PASSWORD)
    with out.open("wb") as stdout, err.open("wb") as stderr:
        # A session of its own: a Ctrl-C on pytest is not also a stop request to the server.
        proc = subprocess.Popen([sys.executable, "-m", "jobs", "serve", "--port", "0", *flags],
                                cwd=ROOT, env=env, stdout=stdout, stderr=stderr,
                                start_new_session=True)
    try:
        if wait_for is not None:
            wait_for()
        deadline = time.monotonic() + START_TIMEOUT
        while not (ready := READY.search(out.read_text())):
            assert proc.poll() is None, f"serve exited with {proc.returncode}:\n" \
                                        f"{out.read_text()}\n{err.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"serve not ready:\n{err.read_text()[-3000:]}"
            time.sleep(0.5)
        assert ready.group(1) == "127.0.0.1"
    except BaseException:
        stop_group(proc)
        raise
    return Server(proc, int(ready.group(2)), ready.group(3), out, err, users)


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest, settings: Settings, bi_table: BiTable,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``python -m jobs serve --port 0`` over the test warehouse, until the module ends."""
    # The in-process answers are computed while the server's JVM starts.
    child = start_child(settings, tmp_path_factory.mktemp("serve"), [],
                        lambda: request.getfixturevalue("expected"))
    try:
        yield child
    finally:
        stop_group(child.proc)


def beeline(server: Server, statements: list[str], home: Path) -> subprocess.CompletedProcess:
    """Run ``statements`` in one beeline call (CSV output with headers)."""
    return run_beeline(server, ["--outputformat=csv2", "--showHeader=true", "-e",
                                "; ".join(statements)], home)


def beeline_script(server: Server, statements: list[str], home: Path, *,
                   as_user: ProbeUser | None = None) -> subprocess.CompletedProcess:
    """Run ``statements`` as one beeline script that goes on after a failed statement."""
    script = home / "statements.sql"
    script.write_text("".join(f"{statement};\n" for statement in statements), encoding="utf-8")
    if as_user is not None:
        os.chown(script, as_user.uid, as_user.gid)
    return run_beeline(server, ["--force=true", "-f", str(script)], home, as_user=as_user)


def run_beeline(server: Server, args: list[str], home: Path, *,
                credentials: tuple[str, ...] = ("-n", USER, "-p", PASSWORD),
                as_user: ProbeUser | None = None) -> subprocess.CompletedProcess:
    """beeline connected to ``server`` as ``analyst`` (or ``credentials``), silent, with
    ``args``; run by ``as_user`` when given."""
    # beeline keeps its history under the JVM's user.home (not $HOME); the C1 compiler: see
    # child_env.
    env = dict(os.environ, JAVA_TOOL_OPTIONS=f"{jvm.FAST_START} -Duser.home={home}",
               HOME=str(home))
    if as_user is not None:
        command = [*reachable_beeline(as_user), "-u", server.url, *credentials,
                   "--silent=true", *args]
        return as_user.run(command, env=env, timeout=CLIENT_TIMEOUT)
    command = [str(BEELINE), "-u", server.url, *credentials, "--silent=true", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True,
                          timeout=CLIENT_TIMEOUT, check=False)


def connect(server: Server, password: str = PASSWORD):  # noqa: ANN201 - PyHive's Connection
    """A PyHive connection to ``server`` as ``analyst``."""
    from pyhive import hive

    return hive.connect(host="127.0.0.1", port=server.port, username=USER, password=password,
                        auth="CUSTOM")


def cep_message(text: str, code: str) -> str:
    """The CEP error in ``text``: from its code to the end of its caret line, if it has one."""
    start = text.index(f"{code}: ")
    lines = text[start:].splitlines()
    if re.search(r"^[^:]*: line \d+, column \d+: ", lines[0]):
        caret = next(i for i, line in enumerate(lines) if line.strip().startswith("^"))
        lines = lines[:caret + 1]
        lines[-1] = lines[-1][:lines[-1].index("^") + 1]
    else:
        lines = lines[:1]
    # What Spark appends to the message (" SQLSTATE: ...") is not part of it.
    lines[-1] = lines[-1].split(" SQLSTATE: ")[0].rstrip()
    return "\n".join(lines)


def split_results(stdout: str, headers: dict[str, tuple[str, ...]]
                  ) -> dict[str, list[tuple[str, ...]]]:
    """beeline's CSV output of several statements, split at their header lines."""
    by_header = {header: name for name, header in headers.items()}
    results: dict[str, list[tuple[str, ...]]] = {}
    current = None
    for row in csv.reader(io.StringIO(stdout)):
        if not row:
            continue
        # beeline prints its prompt in front of the first line it writes
        row[0] = re.sub(r"^\d+: jdbc:hive2://\S*> ", "", row[0])
        if tuple(row) in by_header:
            current = by_header[tuple(row)]
            results[current] = []
        elif current is not None:
            results[current].append(tuple(row))
    return results


def test_the_server_listens_on_loopback_only(server: Server) -> None:
    # Issue 21: the server's JVM bound the driver's RPC and block-manager ports on the
    # machine's address. Every listener of the child and its JVM is on 127.0.0.1 now.
    listening = [a for pid in descendants(server.proc.pid) for a in listening_addresses(pid)]
    assert f"127.0.0.1:{server.port}" in listening, (listening, server.log())
    assert all(a.startswith("127.0.0.1:") for a in listening), listening


def test_beeline_gets_the_in_process_rows(server: Server, bi_table: BiTable,
                                          expected: dict[str, Result], tmp_path: Path) -> None:
    assert expected["matches"].rows, "the pattern must match something in bi_clicks"
    # As of the second commit every user has 4 of the 6 clicks the latest version has.
    assert {row[1] for row in expected["as_of"].rows} == {"4"}, expected["as_of"]
    # u1's 09:00 login only: the 09:50 one's window is still open (the session's zone is UTC)
    assert [r[1][11:16] for r in expected["absences"].rows if r[0] == "u1"] == ["09:00"], \
        expected["absences"]

    proc = beeline(server, list(bi_table.queries().values()), tmp_path)

    assert proc.returncode == 0, f"{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    got = split_results(proc.stdout, {name: r.columns for name, r in expected.items()})
    assert got == {name: r.rows for name, r in expected.items()}, proc.stdout


def test_dbapi_client_gets_the_in_process_rows(server: Server, bi_table: BiTable,
                                               expected: dict[str, Result]) -> None:
    with connect(server) as conn:
        cursor = conn.cursor()
        for name, sql in bi_table.queries().items():
            cursor.execute(sql)
            rows = [tuple(str(v) for v in row) for row in cursor.fetchall()]
            assert rows == expected[name].rows, name
            assert tuple(d[0] for d in cursor.description) == expected[name].columns, name


def test_bad_pattern_reaches_the_client_with_its_code(spark, server: Server) -> None:
    from pyhive import exc

    with pytest.raises(Exception) as here:
        spark.sql(BAD_PATTERN).collect()
    code = CODE.search(str(here.value))
    assert code is not None and code.group().startswith("CEP-PAT-"), str(here.value)
    with connect(server) as conn:
        cursor = conn.cursor()
        with pytest.raises(exc.OperationalError) as there:
            cursor.execute(BAD_PATTERN)
        # The connection stays usable after a failed statement.
        cursor.execute("SELECT 1")
        assert cursor.fetchall() == [(1,)]
    assert code.group() in str(there.value)


def test_every_functions_errors_reach_beeline_as_in_process(spark, server: Server,
                                                           tmp_path: Path) -> None:
    """At plan time and at run time, a JDBC client gets the message a notebook gets: the code,
    ``line L, column C`` and the caret under the pattern text when there is a position, with one
    Python frame (the shell's) around it."""
    expected = {}
    for name, (sql, code) in ERRORS.items():
        with pytest.raises(Exception) as here:
            spark.sql(sql).collect()
        expected[name] = cep_message(str(here.value), code)
        assert expected[name].startswith(f"{code}: "), (name, str(here.value))
    assert "line 2, column 15: " in expected["predict_match"], expected["predict_match"]
    assert all("^" in expected[name] for name in ERRORS if ERRORS[name][1].startswith("CEP-PAT-"))

    proc = beeline_script(server, [sql for sql, _ in ERRORS.values()], tmp_path)

    assert proc.returncode == 0, proc.stderr[-3000:]
    # One "Error: ..." block per failed statement, in the script's order.
    blocks = re.split(r"^Error: ", proc.stderr, flags=re.M)[1:]
    assert len(blocks) == len(ERRORS), proc.stderr[-5000:]
    for (name, (_, code)), block in zip(ERRORS.items(), blocks):
        assert cep_message(block, code) == expected[name], (name, block[:3000])
        # The server's own part of the error (before Java's "Caused by" repeats it).
        first = block.split("Caused by:")[0]
        if name in ("match_recognize", "match_recognize unknown column", "table partition by"):
            # refused by the parser or the analyser, before any Python worker
            assert first.count('File "') == 0 and "__mr_" not in block, (name, first[:3000])
            continue
        # no Python traceback in front of it (conf/spark.toml, docs/sql.md "Errors")
        assert first.count('File "') == 0 and "udfs.shell.CallFailed: CEP-" in first, \
            (name, first[:3000])


def test_delta_still_loads_after_a_synchronous_client_left(spark, server: Server) -> None:
    # PyHive runs statements synchronously; when such a session closes, Hive's session code
    # closes the class loader of spark.jars. DESCRIBE HISTORY needs Delta classes that
    # nothing has loaded before (NoClassDefFoundError when the server does not also put the
    # Delta jars on the JVM's class path).
    with connect(server) as conn:
        conn.cursor().execute("SELECT 1")
    with connect(server) as conn:
        cursor = conn.cursor()
        cursor.execute(f"DESCRIBE HISTORY {TABLE}")
        versions = sorted(int(row[0]) for row in cursor.fetchall())
    assert versions == sorted(row[0] for row in spark.sql(f"DESCRIBE HISTORY {TABLE}").collect())


REFUSED_LOGIN = "Error validating the login"


def test_clients_without_the_password_are_refused(server: Server, tmp_path: Path) -> None:
    from pyhive import hive

    for credentials in [("-n", USER), ("-n", USER, "-p", "wrong-password-1"),
                        ("-n", "nobody", "-p", PASSWORD)]:
        proc = run_beeline(server, ["--outputformat=csv2", "-e", "SELECT 'in' AS door"],
                           tmp_path, credentials=credentials)
        assert REFUSED_LOGIN in proc.stderr and "door" not in proc.stdout, (credentials,
                                                                            proc.stderr[-2000:])
    for password in ("wrong-password-1", ""):
        with pytest.raises(Exception, match=REFUSED_LOGIN):
            hive.connect(host="127.0.0.1", port=server.port, username=USER, password=password,
                         auth="CUSTOM")
    # The server logs which check failed (the client learns only that the login failed).
    assert "CEP-JOB-063: wrong user name or password" in server.err.read_text()


def test_users_added_and_removed_count_from_the_next_connection(server: Server) -> None:
    # The server reads the file at every connection; the JVM's PBKDF2 must agree with
    # Python's on a password beyond ASCII.
    from pyhive import hive

    def login() -> list[tuple[int]]:
        with hive.connect(host="127.0.0.1", port=server.port, username="ops",
                          password="pässwörd-ß-9", auth="CUSTOM") as conn:
            cursor = conn.cursor()
            cursor.execute("SELECT 1")
            return cursor.fetchall()

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(USERS_ENV, str(server.users))
        add_user(load_settings(), "ops", "pässwörd-ß-9")
        assert login() == [(1,)]
        remove_user(load_settings(), "ops")
    with pytest.raises(Exception, match=REFUSED_LOGIN):
        login()


@pytest.fixture(scope="module")
def prober() -> ProbeUser:
    """A local OS user other than the server's."""
    user = probe_user()
    if user is None:
        pytest.skip("acting as another local user needs root (or a `cep-probe` account and root)")
    return user


def test_another_local_user_cannot_reach_past_the_warehouse(server: Server, prober: ProbeUser,
                                                            settings: Settings) -> None:
    # The hashes are the server user's alone (the module's file is where `users add` puts it:
    # a folder of mode 0700, a file of 0600).
    assert (server.users.stat().st_mode & 0o777, server.users.parent.stat().st_mode & 0o777) \
        == (0o600, 0o700)
    shown = prober.run(["cat", str(server.users)])
    assert shown.returncode != 0 and "Permission denied" in shown.stderr, shown
    # No password, no session.
    proc = run_beeline(server, ["-e", "SELECT 'in' AS door"], prober.home,
                       credentials=("-n", USER), as_user=prober)
    assert REFUSED_LOGIN in proc.stderr, proc.stderr[-2000:]
    # With the password, nothing beyond the warehouse: every probe is refused before it runs,
    # and the server still answers afterwards.
    outside = Path(tempfile.mkdtemp(prefix="cep-outside-"))
    statements = [part.strip() for sql in REFUSED_SQL.values()
                  for part in sql.format(outside=outside).split(";")]
    proc = beeline_script(server, [*statements, "SELECT 'still serving' AS alive"],
                          prober.home, as_user=prober)

    refused = re.findall(r"^Error: .*?(CEP-SQL-\d{3})", proc.stderr, flags=re.M)
    assert refused == ["CEP-SQL-090"] * len(REFUSED_SQL), proc.stderr[-6000:]
    assert "still serving" in proc.stdout, (proc.stdout[-2000:], proc.stderr[-3000:])
    assert list(outside.iterdir()) == [], list(outside.iterdir())
    assert server.proc.poll() is None


IDLE_CONNECTIONS = 505
"""Issue 46's probe: 505 connections that never log in held all 500 of HiveServer2's worker
threads, and every later login waited for as long as they stayed open."""
LOGIN_BOUND = 120
"""A bound on one login and ``SELECT 1`` under that load (a hang fails, no timing is asserted)."""


def test_idle_connections_that_never_log_in_do_not_lock_out_a_login(server: Server) -> None:
    idle = [socket.create_connection(("127.0.0.1", server.port), timeout=30)
            for _ in range(IDLE_CONNECTIONS)]
    try:
        # In a child, so that a login that hangs is ended (PyHive has no login timeout).
        login = subprocess.run([sys.executable, "-c", pyhive_client(
            server, "SELECT 'in' AS door", "print(c.fetchall())")], capture_output=True,
            text=True, timeout=LOGIN_BOUND, check=False)
        assert login.stdout.strip() == "[('in',)]", login.stderr[-2000:]
        # The server closes the ones that never logged in (the login timeout, or the cap on
        # connections logging in at once): each reads end-of-stream, within a bound.
        deadline = time.monotonic() + 120
        open_ = list(idle)
        while open_ and time.monotonic() < deadline:
            still = []
            for sock in open_:
                sock.settimeout(0.05)
                try:
                    if sock.recv(1) != b"":
                        still.append(sock)
                except TimeoutError:
                    still.append(sock)
                except OSError:  # reset by the server
                    pass
            open_ = still
            time.sleep(1 if open_ else 0)
        assert not open_, f"{len(open_)} of {IDLE_CONNECTIONS} idle connections still open"
    finally:
        for sock in idle:
            sock.close()
    assert server.proc.poll() is None


def pyhive_client(server: Server, sql: str, then: str = "") -> str:
    """A Python program that logs in as ``analyst`` with PyHive and runs ``sql``."""
    return (f"from pyhive import hive\n"
            f"c = hive.connect(host='127.0.0.1', port={server.port}, username={USER!r}, "
            f"password={PASSWORD!r}, auth='CUSTOM').cursor()\n"
            f"c.execute({sql!r})\n{then}\n")


def test_a_killed_clients_query_stops(server: Server) -> None:
    # Issue 46: a PyHive client (synchronous statements) killed in the middle of a query left
    # it running on both cores for minutes. The statement here runs ~200 s when left alone.
    client = pyhive_client(server, "SELECT count(*) FROM range(0, 200000000000) WHERE id % 7 = 3")
    kill_mid_query_and_wait_for_idle(server.proc.pid, [sys.executable, "-c", client])
    with connect(server) as conn:
        cursor = conn.cursor()
        cursor.execute("SELECT 'still serving' AS alive")
        assert cursor.fetchall() == [("still serving",)]


def non_loopback_address() -> str | None:
    """An address of this machine that is not loopback, or None (IPv4 first)."""
    found: list[str] = []
    try:
        found += subprocess.run(["hostname", "-I"], capture_output=True, text=True,
                                timeout=30, check=False).stdout.split()
    except OSError:  # no hostname command
        pass
    try:
        # Connecting a UDP socket sends nothing; it picks the interface of the default route.
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))
            found.append(probe.getsockname()[0])
    except OSError:  # no route
        pass
    usable = [ipaddress.ip_address(a) for a in found if "%" not in a]
    usable = [a for a in usable if not (a.is_loopback or a.is_link_local or a.is_unspecified)]
    usable.sort(key=lambda a: a.version)
    return str(usable[0]) if usable else None


def test_other_hosts_are_refused_loopback_is_accepted(server: Server) -> None:
    address = non_loopback_address()
    if address is None:
        pytest.skip("this machine has no non-loopback address to connect to")
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((address, server.port), timeout=30).close()
    socket.create_connection(("127.0.0.1", server.port), timeout=30).close()


def test_taken_port_is_a_typed_error_before_any_jvm(server: Server, settings: Settings) -> None:
    with pytest.raises(ServerStartError, match=rf"CEP-JOB-061: cannot listen on "
                                               rf"127\.0\.0\.1:{server.port}: "):
        start_server(settings, ServerConf("127.0.0.1", server.port))


def test_sigterm_stops_cleanly_and_frees_the_port(server: Server) -> None:
    # Last test of the module: it stops the module's server.
    server.proc.send_signal(signal.SIGTERM)
    code = server.proc.wait(STOP_TIMEOUT)

    assert code == 0, server.log()
    assert f"SQL server on 127.0.0.1:{server.port} stopped" in server.out.read_text()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", server.port), timeout=30).close()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as again:
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        again.bind(("127.0.0.1", server.port))


# ---- TLS (a server of its own, after the module's has stopped) ------------------------------


@pytest.fixture(scope="module")
def tls_server(settings: Settings, bi_table: BiTable,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, TlsFiles]]:
    """``python -m jobs serve --tls`` with a self-signed set made by ``python -m jobs tls``
    (its tests come after the module's server has stopped: one server JVM at a time)."""
    env = child_env(settings)
    made = subprocess.run([sys.executable, "-m", "jobs", "tls", "init", "--name", "127.0.0.1",
                           "--name", "localhost", "--replace"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=CLIENT_TIMEOUT, check=False)
    assert made.returncode == 0, made.stderr
    files = tls_files(settings)
    child = start_child(settings, tmp_path_factory.mktemp("serve-tls"), ["--tls"])
    try:
        yield child, files
    finally:
        stop_group(child.proc)


def test_tls_server_speaks_tls_only(tls_server: tuple[Server, TlsFiles], bi_table: BiTable,
                                    expected: dict[str, Result], tmp_path: Path) -> None:
    # Issue 21, optional TLS: with the truststore beeline gets the in-process rows; a
    # client without TLS is refused; a Python client verifies the certificate (cert.pem, the
    # address in the certificate); the keystore's password is not in the session.
    server, files = tls_server
    assert server.url.endswith(";ssl=true") and str(files.truststore) in server.out.read_text()
    trusted = dataclasses.replace(server, url=f"{server.url};sslTrustStore={files.truststore};"
                                              f"trustStorePassword={TRUSTSTORE_PASSWORD}")
    proc = beeline(trusted, [bi_table.queries()["matches"]], tmp_path)
    assert proc.returncode == 0, f"{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    assert split_results(proc.stdout, {"matches": expected["matches"].columns})["matches"] == \
        expected["matches"].rows
    # The session holds the keystore's password (Hive copies its settings into every
    # connection's); Spark redacts it wherever SQL could show it, and a client cannot turn
    # the redaction off.
    probes = beeline_script(trusted, [
        "SET spark.redaction.regex=nothing", "SET spark.sql.redaction.options.regex=nothing",
        "SET spark.sql.redaction.string.regex=nothing", "SET hive.server2.keystore.password",
        "SET", "SET -v", "SELECT '${hive.server2.keystore.password}' AS leaked"], tmp_path)
    assert "*********(redacted)" in probes.stdout, probes.stdout[-3000:]
    secret = files.password_file.read_text().strip()
    assert secret not in probes.stdout + probes.stderr
    plain = dataclasses.replace(server, url=server.url.removesuffix(";ssl=true"))
    refused = beeline(plain, ["SELECT 1"], tmp_path)
    assert refused.returncode != 0 and "Could not open client transport" in refused.stdout + \
        refused.stderr, refused.stderr[-2000:]
    context = ssl.create_default_context(cafile=str(files.cert))
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            assert tls.version() in ("TLSv1.2", "TLSv1.3")
    with pytest.raises(ssl.SSLCertVerificationError):
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as raw:
            ssl.create_default_context().wrap_socket(raw, server_hostname="127.0.0.1")


def test_tls_without_a_keystore_is_a_typed_error_before_any_jvm(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = load_settings(overrides={"data_dir": str(tmp_path)})
    with pytest.raises(TlsError, match=r"CEP-JOB-065: TLS is on and the keystore .*server\.p12 "
                                       r"is missing: make a self-signed one with `python -m jobs "
                                       r"tls init --name HOST`"):
        thrift_settings(settings, ServerConf("127.0.0.1", 0, tls=True))
    create_self_signed(settings, ["localhost"])
    files = tls_files(settings)
    assert {p.name: oct(p.stat().st_mode & 0o777) for p in files.folder.iterdir()} == {
        "server.p12": "0o600", "server.p12.password": "0o600", "key.pem": "0o600",
        "cert.pem": "0o644", "truststore.p12": "0o644"}
    with pytest.raises(TlsError, match="exists; pass --replace"):
        create_self_signed(settings, ["localhost"])
    os.chmod(files.password_file, 0o644)
    with pytest.raises(TlsError, match=r"may be read by other users \(mode 644\); chmod 600"):
        thrift_settings(settings, ServerConf("127.0.0.1", 0, tls=True))
    for bad in (["a b"], [], ["x/y"]):
        with pytest.raises(TlsError, match="CEP-JOB-065: tls init"):
            create_self_signed(settings, bad, replace=True)


# ---- settings: typed errors, no JVM --------------------------------------------------------


def conf_dir_with(tmp_path: Path, server_toml: str | None) -> Settings:
    """Settings whose conf folder is the project's plus the given ``server.toml``."""
    conf = tmp_path / "conf"
    shutil.copytree(ROOT / "conf", conf)
    (conf / "server.toml").unlink()
    if server_toml is not None:
        (conf / "server.toml").write_text(server_toml, encoding="utf-8")
    return load_settings(conf)


def test_defaults_file_and_flags(tmp_path: Path) -> None:
    assert load_server_conf(load_settings()) == ServerConf("127.0.0.1", 10000)
    assert load_server_conf(conf_dir_with(tmp_path / "a", None)) == ServerConf("127.0.0.1", 10000)
    settings = conf_dir_with(tmp_path / "b", '[server]\nhost = "localhost"\nport = 10001\n')
    conf = load_server_conf(settings)
    assert (conf, conf.is_loopback, conf.jdbc_url) == (
        ServerConf("localhost", 10001), True, "jdbc:hive2://localhost:10001/")
    flagged = load_server_conf(settings, host="0.0.0.0", port="0")
    assert flagged == ServerConf("0.0.0.0", 0) and not flagged.is_loopback


@pytest.mark.parametrize("toml, message", [
    ('[server]\nport = "ten"\n', "server.toml: server.port: expected a port number from 0 to "
                                 "65535, found 'ten'"),
    ('[server]\nport = 70000\n', "server.port: expected a port number from 0 to 65535, found "
                                 "70000"),
    ('[server]\nhost = "127.0.0.1; rm -rf /"\n', "server.host: expected an IP address or a "
                                                 "host name"),
    ('[server]\nhosts = "127.0.0.1"\n', "unknown key server.hosts; expected host, port, tls"),
    ('[server]\ntls = "yes"\n', "server.tls: expected true or false, found 'yes'"),
    ('[serve]\nhost = "127.0.0.1"\n', "unknown section [serve]; expected [server]"),
    ('[server\n', "cannot read"),
])
def test_bad_file_is_a_typed_error(tmp_path: Path, toml: str, message: str) -> None:
    with pytest.raises(ServerConfError, match=re.escape(message)) as caught:
        load_server_conf(conf_dir_with(tmp_path, toml))
    assert str(caught.value).startswith("CEP-JOB-060: ")


def test_no_user_is_a_typed_error_before_any_jvm(settings: Settings, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(USERS_ENV, str(tmp_path / "users"))
    with pytest.raises(UsersError, match=r"CEP-JOB-063: the SQL server authenticates every "
                                         r"client and .* holds no user: add one with "
                                         r"`python -m jobs users add NAME`"):
        start_server(settings, ServerConf("127.0.0.1", 0))


@pytest.mark.parametrize("flags, message", [
    (["--port", "-1"], "CEP-JOB-060: --port: expected a port number from 0 to 65535, found '-1'"),
    (["--host", "not a host"], "CEP-JOB-060: --host: expected an IP address or a host name"),
])
def test_bad_flag_exits_2_with_the_code(capsys: pytest.CaptureFixture[str], flags: list[str],
                                        message: str) -> None:
    assert main(["serve", *flags]) == 2
    assert message in capsys.readouterr().err
