"""Command line of the project: ``spark-cep <command>`` (the same as ``python -m jobs <command>``).

The data folder, the warehouse and the conf folder come from ``--data-dir``, ``--warehouse``
and ``--conf-dir`` or from ``CEP_DATA_DIR``, ``CEP_WAREHOUSE`` and ``CEP_CONF_DIR``; an
installed package defaults to ``./data`` of the current folder and its packaged conf
(docs/install.md), a checkout to its own ``data/`` and ``conf/``.

Commands: ``submit-args`` (the ``spark-submit`` options a user's script needs), ``fetch-jars`` (resolve the Delta jars once), ``fetch-data`` (download the pm4py
sdist once and extract the logs; the skfolio wheel once and take the stock prices out),
``load-bpi`` (real logs into Delta), ``load-stocks`` (daily stock prices into Delta),
``load-sensors`` (hourly temperature changes as a probabilistic stream into Delta),
``load-temperatures`` (daily city temperatures into Delta, for heat-wave prediction),
``generate`` (synthetic stream into Delta), ``generate-checks`` (checks with kiting rings into
Delta), ``sketch`` (bring a registered sketch's Delta state up to date), ``graph`` (the same
for a trend graph), ``predict`` (the same for a prediction set), ``match`` (the same for a
standing pattern: its matches and timeouts), ``patterns`` (the standing patterns of the
``cep_patterns`` table, checked), ``run-all`` (every job of
``conf/jobs.toml``, each recorded in the run manifest), ``runs`` (the manifest's runs of a
job), ``maintain`` (OPTIMIZE and VACUUM of the registered state tables), ``demo``
(the README demo), ``sql`` (run one SQL statement and show it), ``connect-server`` (a Spark
Connect server over the warehouse, in the foreground until SIGTERM or Ctrl-C), ``users`` (the
SQL server's user names and passwords), ``tls init`` (the SQL server's TLS key and self-signed
certificate).

``serve`` runs the SQL server for BI tools (Spark's Thrift JDBC/ODBC server sharing the
session that holds the CEP functions; docs/bi.md) in the foreground until SIGTERM or Ctrl-C.

The three state jobs run through :func:`jobs.framework.runner.run_job` (retries on Delta concurrency
conflicts, then a run-manifest row).

Example:
    >>> main(["--help"])  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

from jobs.cli_errors import Parser, spark_error_logs
from jobs.cli_errors import report as report_error

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from delta_tables.settings import Settings


def _parser() -> argparse.ArgumentParser:
    """The command line's parser: the global options and one sub-command per entry of
    :data:`COMMANDS`."""
    parser = Parser(prog=_program(), description=__doc__.split("\n")[0])
    _add_global_options(parser)
    sub = parser.add_subparsers(dest="command", required=True)
    # `--help` lists the commands in the order they are added.
    _add_setup_commands(sub)
    _add_load_commands(sub)
    _add_state_commands(sub)
    _add_sql_server_commands(sub)
    sub.add_parser("demo", help="the README demo")
    _add_warehouse_commands(sub)
    return parser


def _add_global_options(parser: argparse.ArgumentParser) -> None:
    """Add the options every command takes: where the data and the conf are, how to report."""
    parser.add_argument("--data-dir", help="override conf/spark.toml [session] data_dir "
                        "(default $CEP_DATA_DIR, else ./data)")
    parser.add_argument("--warehouse", help="root of every Delta table (default $CEP_WAREHOUSE, "
                        "else <data-dir>/warehouse)")
    parser.add_argument("--conf-dir", help="folder of spark.toml, tables.toml, ... (default "
                        "$CEP_CONF_DIR, else the packaged defaults)")
    parser.add_argument("--verbose", action="store_true",
                        help="after an error's short message, print the whole traceback and the "
                             "Java stack")
    parser.add_argument("--master", help="override the Spark master (e.g. spark://host:7077)")


def _add_setup_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``submit-args``, ``fetch-jars`` and ``fetch-data``: what a machine needs once."""
    sub.add_parser("submit-args", help="print the spark-submit options a submitted script needs "
                   "(spark-submit $(spark-cep submit-args) my_script.py; docs/install.md)")
    sub.add_parser("fetch-jars", help="resolve the Delta Lake jars from Maven Central once and "
                   "record the class archive that makes later sessions start faster")
    sub.add_parser("fetch-data", help="download the pm4py sdist and the skfolio wheel once and "
                   "extract the BPI logs and the stock prices")


def _add_load_commands(sub: argparse._SubParsersAction) -> None:
    """Add the commands that write source tables: real data sets and seeded generators."""
    load = sub.add_parser("load-bpi", help="load the BPI logs into Delta tables")
    load.add_argument("--dataset", action="append",
                      help="dataset name (repeatable); default: every configured dataset")
    load.add_argument("--force", action="store_true", help="rewrite even if up to date")
    gen = sub.add_parser("generate", help="write a seeded synthetic stream to a Delta table")
    gen.add_argument("--events", type=int, required=True)
    gen.add_argument("--keys", type=int, default=1000)
    gen.add_argument("--types", type=int, default=50)
    gen.add_argument("--zipf", type=float, default=1.1)
    gen.add_argument("--rate", type=float, default=1000.0, help="events per second")
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("--table", default="synthetic_events")
    stocks = sub.add_parser("load-stocks", help="load the daily stock prices into stock_prices")
    stocks.add_argument("--force", action="store_true", help="rewrite even if up to date")
    sensors = sub.add_parser("load-sensors", help="load the hourly temperatures (Seattle 2010) "
                             "as a probabilistic stream of changes into sensor_pstream")
    sensors.add_argument("--force", action="store_true", help="rewrite even if up to date")
    temps = sub.add_parser("load-temperatures", help="load the daily maximum and minimum "
                           "temperatures of five cities (aquacrop 3.1.0) into daily_temperatures")
    temps.add_argument("--force", action="store_true", help="rewrite even if up to date")
    checks = sub.add_parser("generate-checks", help="write seeded checks with planted kiting "
                            "rings to a Delta table (defaults: the demo's table)")
    checks.add_argument("--rows", type=int, default=20_000, help="number of checks")
    checks.add_argument("--accounts", type=int, default=2_000)
    checks.add_argument("--banks", type=int, default=5)
    checks.add_argument("--ring-rate", type=float, default=0.001,
                        help="planted kiting rings per check")
    checks.add_argument("--seed", type=int, default=42)
    checks.add_argument("--table", default="checks")
    checks.add_argument("--force", action="store_true", help="rewrite even if up to date")


def _add_state_commands(sub: argparse._SubParsersAction) -> None:
    """Add the state jobs' commands: one run of each kind, all of them, their runs, upkeep."""
    _add_state_job(sub, "sketch", "update a registered sketch (conf/sketches.toml) with the "
                   "source's new events", "the sketch's name in conf/sketches.toml")
    _add_state_job(sub, "graph", "update a registered trend graph (conf/graphs.toml): the ABI "
                   "graph of every window with new events", "the graph's name in conf/graphs.toml")
    _add_state_job(sub, "predict", "update a registered prediction set (conf/predictions.toml): "
                   "run its subscriptions over the source's new events, merge the Markov counts "
                   "and instance states", "the set's name in conf/predictions.toml")
    match = _add_state_job(sub, "match", "update a registered standing pattern "
                           "(conf/matches.toml or the cep_patterns table): append the matches "
                           "and timeouts whose windows the source's new events closed",
                           "the standing pattern's name in conf/matches.toml or in the "
                           "cep_patterns table")
    match.add_argument("--stream", action="store_true", help="run as a streaming query: a run "
                       "for each micro-batch of the source's commits, until stopped")
    match.add_argument("--trigger", default="10s", help="with --stream: how often a micro-batch "
                       "starts (10s, 500ms, 2min)")
    match.add_argument("--available-now", action="store_true", help="with --stream: process "
                       "what the source holds, then stop")
    match.add_argument("--checkpoint", default=None, help="with --stream: the checkpoint folder "
                       "(default <data>/checkpoints/match/NAME)")
    patterns = sub.add_parser("patterns", help="list the standing patterns of the cep_patterns "
                              "table: each row checked, with its generation and job")
    patterns.add_argument("--create", action="store_true",
                          help="create the empty cep_patterns table first (if missing)")
    run_all = sub.add_parser("run-all", help="run the state jobs of conf/jobs.toml [run_all] in "
                             "order, each recorded in the run manifest; exit 1 if any failed")
    run_all.add_argument("--job", action="append", metavar="KIND/NAME",
                         help="run only this job (repeatable), e.g. predict/heat")
    runs = sub.add_parser("runs", help="list the run manifest's runs of a job")
    runs.add_argument("--job", required=True, metavar="KIND/NAME")
    maintain = sub.add_parser("maintain", help="OPTIMIZE and VACUUM the registered state tables "
                              "(never below conf/jobs.toml [maintenance] time_travel_hours)")
    maintain.add_argument("--table", action="append", help="only this state table (repeatable)")
    maintain.add_argument("--retention-hours", type=int, default=None,
                          help="VACUUM retention; refused below the time-travel window")
    maintain.add_argument("--dry-run", action="store_true",
                          help="show what VACUUM would delete; change nothing")


def _add_state_job(sub: argparse._SubParsersAction, command: str, summary: str,
                   name_help: str) -> argparse.ArgumentParser:
    """Add the command of one kind of state job (``sketch``, ``graph``, ``predict``, ``match``);
    returns its parser.

    Args:
        sub: The parser's sub-commands.
        command: The command, the job's kind.
        summary: What the command does (its line in ``--help``).
        name_help: Where the job's ``--name`` is registered.
    """
    job = sub.add_parser(command, help=summary)
    job.add_argument("--name", required=True, help=name_help)
    job.add_argument("--until-version", type=int, default=None,
                     help="process the source only up to this Delta version")
    return job


def _add_sql_server_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``serve`` (the SQL server for BI tools) and ``tls`` and ``users`` (its access)."""
    serve = sub.add_parser("serve", help="serve the warehouse and the CEP functions to JDBC/ODBC "
                           "clients (BI tools, beeline) until SIGTERM or Ctrl-C "
                           "(conf/server.toml [server])")
    # Strings, not type=int: a bad value is a typed CEP-JOB-060 error like a bad conf value.
    serve.add_argument("--host", help="address to bind (default 127.0.0.1: loopback only)")
    serve.add_argument("--port", help="port (default 10000; 0: any free port, printed)")
    serve.add_argument("--tls", action="store_true", default=None,
                       help="speak TLS with the keystore of <data_dir>/server/tls (python -m "
                            "jobs tls init); also [server] tls = true")
    tls = sub.add_parser("tls", help="make the SQL server's TLS key and self-signed certificate "
                         "(<data_dir>/server/tls)")
    tls.add_argument("action", choices=["init"], help="init: make a new set")
    tls.add_argument("--name", action="append", default=[], metavar="HOST",
                     help="a host name or address clients connect to (repeatable; the "
                          "certificate is valid for these)")
    tls.add_argument("--days", type=int, default=825, help="validity in days (at most 825)")
    tls.add_argument("--replace", action="store_true", help="replace an existing set")
    users = sub.add_parser("users", help="manage the SQL server's users (user names and salted "
                           "password hashes in <data_dir>/server/users)")
    users.add_argument("action", choices=["add", "remove", "list"],
                       help="add (or set a new password), remove, or list the users")
    users.add_argument("name", nargs="?", help="the user name (add, remove)")


def _add_warehouse_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``connect-server`` (the warehouse to Spark Connect clients) and ``sql`` (one
    statement against it)."""
    connect = sub.add_parser("connect-server", help="serve the warehouse to Spark Connect "
                             "clients until SIGTERM or Ctrl-C (conf/connect.toml [connect])")
    # Strings, not type=int: a bad value is a typed CEP-JOB-070 error like a bad conf value.
    connect.add_argument("--host", help="address to bind (default 127.0.0.1: loopback only)")
    connect.add_argument("--port", help="port (default 15002; 0: any free port, printed)")
    connect.add_argument("--tls", action="store_true", default=None,
                         help="clients connect with TLS (cert.pem and key.pem of "
                              "<data_dir>/server/tls, python -m jobs tls init); also "
                              "[connect] tls = true")
    sql = sub.add_parser("sql", help="run one SQL statement against the warehouse and show it")
    sql.add_argument("statement")
    sql.add_argument("--rows", type=int, default=50)
    sql.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                     help="bind :NAME in the statement to VALUE as an escaped string literal "
                          "(repeatable; the safe way to pass a user's pattern or value)")


def main(argv: Sequence[str] | None = None, *, spark: "SparkSession | None" = None,
         settings: "Settings | None" = None) -> int:
    """Run one command; returns the process exit code (2: a user error, 1: another failure;
    :mod:`jobs.cli_errors`).

    Args:
        argv: The arguments after ``python -m jobs`` (default: ``sys.argv[1:]``).
        spark: A session to run the command in instead of building one (the docs test runs
            the docs' command lines this way, in its shared session). Commands that own
            their process (``serve``, ``connect-server``) refuse it.
        settings: The settings to use instead of loading ``conf/`` (with ``spark``).
    """
    from jobs.crash import arm

    arm()  # test hook (jobs/crash.py): does nothing unless CEP_KILL/PAUSE_BEFORE_COMMIT is set
    args = _parser().parse_args(argv)
    overrides = {k: v for k, v in (("data_dir", args.data_dir), ("master", args.master),
                                   ("warehouse", args.warehouse)) if v}
    if spark is not None and args.command in ("serve", "connect-server"):
        raise ValueError(f"`{args.command}` starts its own session; it cannot run in another")
    with spark_error_logs(shown=args.verbose):
        return _run(args, overrides, spark, settings)


def _program() -> str:
    """The name the command was called by: ``spark-cep`` (the console script) or ``python -m jobs``."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return "spark-cep" if name.startswith("spark-cep") else "python -m jobs"


@dataclass(frozen=True)
class Command:
    """One command of the table: what it runs and whether it needs a Spark session (the
    others start no JVM of their own, or start their own)."""

    run: Callable[[argparse.Namespace, "Settings", "SparkSession | None"], int | None]
    session: bool = True


def _run(args: argparse.Namespace, overrides: dict[str, str], spark: "SparkSession | None",
         settings: "Settings | None") -> int:
    """The command of ``args``; an error is reported and becomes the exit code."""
    from delta_tables.settings import load_settings

    try:
        settings = settings or load_settings(args.conf_dir, overrides=overrides)
        command = COMMANDS[args.command]
        if command.session and spark is None:
            spark = _session(settings, args)
        return command.run(args, settings, spark) or 0
    except Exception as exc:  # noqa: BLE001 - every failure is reported the same short way
        return report_error(exc, verbose=args.verbose)


# --- the commands, one small function each ---------------------------------------------------

def _submit_args(args: argparse.Namespace, settings: "Settings", spark: Any) -> None:
    import shlex

    from jobs.session.shim import build_shim
    from sql_ext.session_conf import submit_args

    print(shlex.join(submit_args(shim_jar=build_shim(settings, quiet=True))))


def _fetch_jars(args: argparse.Namespace, settings: "Settings", spark: Any) -> None:
    from jobs.session.class_archive import build_archive
    from jobs.session import ensure_delta_jars
    from jobs.session.shim import build_shim

    jars = ensure_delta_jars(settings)
    print(f"{len(jars)} Delta jars ready in {settings.ivy_dir}")
    archive = build_archive(settings, jars)
    print(f"class archive: {archive or 'none (sessions start without one)'}")
    shim = build_shim(settings)
    print(f"JVM shim: {shim or 'none (sessions start without it)'}")


def _fetch_data(args: argparse.Namespace, settings: "Settings", spark: Any) -> None:
    from jobs.loaders.datasets import extract_log
    from jobs.loaders.stocks import fetch_prices

    for name in settings.datasets:
        print(f"{name}: {extract_log(settings, name)}")
    print(f"stock_prices: {fetch_prices(settings)}")


def _connect_server(args: argparse.Namespace, settings: "Settings", spark: Any) -> int:
    from jobs.servers.connect_server import load_connect_conf, serve

    return serve(settings, load_connect_conf(settings, host=args.host, port=args.port,
                                             tls=args.tls))


def _serve(args: argparse.Namespace, settings: "Settings", spark: Any) -> int:
    from jobs.servers.server import load_server_conf, serve

    return serve(settings, load_server_conf(settings, host=args.host, port=args.port,
                                            tls=args.tls))


def _tls(args: argparse.Namespace, settings: "Settings", spark: Any) -> None:
    from jobs.servers.tls import create_self_signed

    files = create_self_signed(settings, args.name, days=args.days, replace=args.replace)
    print(f"TLS set in {files.folder}: the server's keystore {files.keystore.name}; for "
          f"clients {files.cert} (PEM) and {files.truststore} (PKCS#12, password "
          "cep-public). Start the server with --tls or [server] tls = true")


def _demo(args: argparse.Namespace, settings: "Settings", spark: Any) -> None:
    from jobs.demo import run_demo

    run_demo(settings, spark=spark)


def _load_bpi(args: argparse.Namespace, settings: "Settings", spark: Any) -> None:
    from jobs.loaders.load_logs import load_log

    for name in args.dataset or list(settings.datasets):
        load_log(spark, settings, name, force=args.force)


def _generate(args: argparse.Namespace, settings: "Settings", spark: Any) -> None:
    from cep.datasets.synthetic import SyntheticSpec
    from jobs.loaders.generate import write_synthetic

    spec = SyntheticSpec(n_events=args.events, n_keys=args.keys, n_types=args.types,
                         zipf_s=args.zipf, rate_per_s=args.rate, seed=args.seed)
    result = write_synthetic(spark, settings, spec, args.table)
    print(f"{result.table}: {result.events:,} events at version {result.version}")


def _loaded(what: str, result: Any, already: str = "already loaded") -> None:
    print(f"{result.table}: {result.events:,} {what} at version {result.version}"
          f"{'' if result.written else f' ({already}; nothing written)'}")


def _load_stocks(args: argparse.Namespace, settings: "Settings", spark: Any) -> None:
    from jobs.loaders.stocks import load_stocks

    _loaded("prices", load_stocks(spark, settings, force=args.force))


def _load_sensors(args: argparse.Namespace, settings: "Settings", spark: Any) -> None:
    from jobs.loaders.sensors import load_sensors

    _loaded("(t, value, p) rows", load_sensors(spark, settings, force=args.force))


def _load_temperatures(args: argparse.Namespace, settings: "Settings", spark: Any) -> None:
    from jobs.loaders.temperatures import load_temperatures

    _loaded("(city, day) rows", load_temperatures(spark, settings, force=args.force))


def _generate_checks(args: argparse.Namespace, settings: "Settings", spark: Any) -> None:
    from cep.datasets.checks import CheckSpec
    from jobs.loaders.checks import write_checks

    spec = CheckSpec(n_checks=args.rows, n_accounts=args.accounts, n_banks=args.banks,
                     ring_rate=args.ring_rate, seed=args.seed)
    _loaded("checks", write_checks(spark, settings, spec, args.table, force=args.force),
            already="already there")


def _state_job(args: argparse.Namespace, settings: "Settings", spark: Any) -> None:
    """``sketch``, ``graph``, ``predict`` or ``match``: one run of a registered state job (or,
    ``match --stream``, its streaming query)."""
    from jobs.framework.runner import run_job

    if getattr(args, "stream", False):
        _stream(args, settings, spark)
        return
    if getattr(args, "available_now", False):
        from cep.errors import ConfigError

        raise ConfigError("--available-now is a form of --stream; give both")
    summary = run_job(spark, settings, f"{args.command}/{args.name}",
                      until_version=args.until_version)
    print(_result_line(args.command, summary.result))
    if summary.run is not None:
        print(f"recorded run {summary.run.run_id} ({summary.run.status}) in the manifest")


def _stream(args: argparse.Namespace, settings: "Settings", spark: Any) -> None:
    """``match --stream``: the streaming query, until it stops, fails, or SIGTERM/Ctrl-C."""
    import signal
    from pathlib import Path

    from cep.errors import ConfigError
    from jobs.framework.stream import stream_job

    if args.until_version is not None:
        raise ConfigError("--until-version and --stream: a stream follows the source; give one")
    query = stream_job(spark, settings, f"{args.command}/{args.name}", trigger=args.trigger,
                       available_now=args.available_now,
                       checkpoint=None if args.checkpoint is None else Path(args.checkpoint))
    previous = signal.signal(signal.SIGTERM, lambda *_: query.stop())
    try:
        query.awaitTermination()
    except KeyboardInterrupt:
        query.stop()
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(f"{args.command} {args.name}: stream stopped")


def _run_all(args: argparse.Namespace, settings: "Settings", spark: Any) -> int:
    from jobs.framework.runner import run_all

    report = run_all(spark, settings, args.job)
    for summary in report.summaries:
        print(summary.line())
    for key, exc in report.failures.items():
        print(f"{key}: FAILED: {str(exc).splitlines()[0]}")
    return 0 if report.ok else 1


def _patterns(args: argparse.Namespace, settings: "Settings", spark: Any) -> int:
    from jobs.framework.patterns import create_patterns_table, read_patterns

    if args.create:
        table = create_patterns_table(spark, settings)
        print(f"{table.name} at {table.location}")
    rows = read_patterns(spark, settings)
    for row in rows:
        print(row.line())
    if not rows:
        print("no standing patterns in cep_patterns")
    return 1 if any(r.error is not None for r in rows) else 0


def _runs(args: argparse.Namespace, settings: "Settings", spark: Any) -> None:
    from delta_tables.manifest import read_runs
    from jobs.framework.registry import parse_key
    from jobs.framework.run_conf import load_run_conf

    parse_key(args.job)
    for run in read_runs(spark, load_run_conf(settings).manifest, args.job):
        versions = ", ".join(f"{t} v{v}" for t, v in sorted(run.state_versions.items()))
        done = "" if run.finished_at is None else f" at {run.finished_at:%Y-%m-%d %H:%M:%S}Z"
        read = ("" if run.rows_read is None
                else f", {run.rows_read:,} rows read, {run.late or 0:,} late")
        print(f"{run.run_id}  {run.status:<9} source {run.source_table} "
              f"v{run.source_version}{read}{done}  {versions}")


def _maintain(args: argparse.Namespace, settings: "Settings", spark: Any) -> None:
    from jobs.maintenance import maintain

    print(maintain(spark, settings, tables=args.table, retention_hours=args.retention_hours,
                   dry_run=args.dry_run))


def _sql(args: argparse.Namespace, settings: "Settings", spark: Any) -> None:
    from sql_ext import register_all

    register_all(spark)
    spark.sql(_bound(args)).show(args.rows, truncate=False)


def _users(args: argparse.Namespace, settings: "Settings", spark: Any) -> int:
    """``users add|remove|list``: the password of ``add`` is asked twice on a terminal, read
    from the first line of standard input otherwise (never from the command line, where other
    local users could see it in the process list)."""
    import getpass
    import sys

    from jobs.servers.users import UsersError, add_user, list_users, remove_user, users_file

    if args.action == "list":
        for name in list_users(settings):
            print(name)
        return 0
    if not args.name:
        raise UsersError(f"`users {args.action}` needs a user name")
    if args.action == "remove":
        remove_user(settings, args.name)
        print(f"removed {args.name!r} from {users_file(settings)}")
        return 0
    if sys.stdin.isatty():
        password = getpass.getpass(f"password for {args.name}: ")
        if getpass.getpass("again: ") != password:
            raise UsersError("the two passwords differ; nothing changed")
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    add_user(settings, args.name, password)
    print(f"{args.name!r} can connect to the SQL server ({users_file(settings)})")
    return 0


def _bound(args: argparse.Namespace) -> str:
    """The ``sql`` statement with its ``--param NAME=VALUE`` values bound as string literals."""
    from sql_ext.params import ParameterError, bind_parameters

    values = {}
    for item in args.param:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ParameterError(f"--param expects NAME=VALUE, found {item!r}")
        values[name] = value
    return bind_parameters(args.statement, values) if values else args.statement


def _session(settings: "Settings", args: argparse.Namespace) -> "SparkSession":
    """The command's own session, with the catalog holding only the tables it needs."""
    from jobs.session import build_session

    # A job registers the tables it reads and writes itself; `sql` needs those it names
    # (sqlglot is imported for `sql` only: every cron job starts here).
    words: set[str] | None = set()
    if args.command == "sql":
        from sql_ext.statement import statement_words

        words = statement_words(_bound(args))
    return build_session(settings, register=True if words is None else words)


def _result_line(kind: str, r: Any) -> str:
    """The job's own one-line account of what it read and wrote."""
    if not r.written:
        return (f"{kind} {_name(r)}: nothing new (source version {r.source_version}); "
                "nothing written")
    versions = ", ".join(f"{k} v{v}" for k, v in r.versions.items())
    if kind == "graph":
        return (f"{_name(r)}: source versions {r.source_from}..{r.source_version}: "
                f"{r.events_read:,} events read, {r.late:,} late, {r.incomplete:,} incomplete; "
                f"{r.windows:,} window(s) rebuilt; {versions}; {r.seconds:.1f}s")
    if kind == "match":
        return (f"{_name(r)}: source versions {r.source_from}..{r.source_version}: "
                f"{r.events_read:,} events read, {r.late:,} late, {r.incomplete:,} incomplete; "
                f"{r.matches:,} matches, {r.timeouts:,} timeouts over {r.keys:,} keys "
                f"(watermark {r.watermark}); {versions}; {r.seconds:.1f}s")
    if kind == "sketch":
        return (f"{_name(r)}: source versions {r.source_from}.."
                f"{r.source_version}: {r.events_read:,} events read, "
                f"{r.events_accepted:,} accepted, {r.late:,} late, "
                f"{r.streams:,} streams, {r.node_rows:,} node rows "
                f"merged; {versions}; {r.seconds:.1f}s")
    model_events = ", ".join(f"{k}={v:,}" for k, v in r.model_events.items())
    return (f"{_name(r)}: source versions {r.source_from}.."
            f"{r.source_version} ({r.read}): "
            f"{r.events_read:,} events read, {r.events_run:,} run in "
            f"{r.keys:,} keys, {r.late:,} late, "
            f"{r.incomplete:,} incomplete; {r.instance_rows:,} instance "
            f"rows, {r.state_rows:,} new states merged; model events {model_events}; "
            f"{versions}; {r.seconds:.1f}s")


def _name(result: object) -> str:
    for field in ("sketch", "graph", "prediction", "name"):
        if hasattr(result, field):
            return str(getattr(result, field))
    return "?"


COMMANDS: dict[str, Command] = {
    "submit-args": Command(_submit_args, session=False),
    "fetch-jars": Command(_fetch_jars, session=False),
    "fetch-data": Command(_fetch_data, session=False),
    "connect-server": Command(_connect_server, session=False),
    "serve": Command(_serve, session=False),
    "tls": Command(_tls, session=False),
    "users": Command(_users, session=False),
    "demo": Command(_demo, session=False),  # builds its own session unless given one
    "load-bpi": Command(_load_bpi),
    "generate": Command(_generate),
    "load-stocks": Command(_load_stocks),
    "load-sensors": Command(_load_sensors),
    "load-temperatures": Command(_load_temperatures),
    "generate-checks": Command(_generate_checks),
    "sketch": Command(_state_job),
    "graph": Command(_state_job),
    "predict": Command(_state_job),
    "match": Command(_state_job),
    "run-all": Command(_run_all),
    "runs": Command(_runs),
    "patterns": Command(_patterns),
    "maintain": Command(_maintain),
    "sql": Command(_sql),
}
"""Every command of the command line by name (the parser's sub-commands are the same names:
``tests/jobs/test_cli_commands.py`` checks it)."""

