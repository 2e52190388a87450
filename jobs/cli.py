"""Command line of the project: ``python -m jobs <command>``.

Commands: ``fetch-jars`` (resolve the Delta jars once), ``fetch-data`` (download the pm4py
sdist once and extract the logs; the skfolio wheel once and take the stock prices out),
``load-bpi`` (real logs into Delta), ``load-stocks`` (daily stock prices into Delta),
``load-sensors`` (hourly temperature changes as a probabilistic stream into Delta),
``load-temperatures`` (daily city temperatures into Delta, for heat-wave prediction),
``generate`` (synthetic stream into Delta), ``generate-checks`` (checks with kiting rings into
Delta), ``sketch`` (bring a registered sketch's Delta state up to date), ``graph`` (the same
for a trend graph), ``predict`` (the same for a prediction set), ``demo``
(the README demo), ``sql`` (run one SQL statement and show it).

Example:
    >>> main(["--help"])  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from cep.errors import CepError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m jobs", description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", help="override conf/spark.toml [session] data_dir")
    parser.add_argument("--master", help="override the Spark master (e.g. spark://host:7077)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("fetch-jars", help="resolve the Delta Lake jars from Maven Central once")
    sub.add_parser("fetch-data", help="download the pm4py sdist and the skfolio wheel once and "
                   "extract the BPI logs and the stock prices")
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
    sketch = sub.add_parser("sketch", help="update a registered sketch (conf/sketches.toml) "
                            "with the source's new events")
    sketch.add_argument("--name", required=True, help="the sketch's name in conf/sketches.toml")
    sketch.add_argument("--until-version", type=int, default=None,
                        help="process the source only up to this Delta version")
    graph = sub.add_parser("graph", help="update a registered trend graph (conf/graphs.toml): "
                           "the ABI graph of every window with new events")
    graph.add_argument("--name", required=True, help="the graph's name in conf/graphs.toml")
    graph.add_argument("--until-version", type=int, default=None,
                       help="process the source only up to this Delta version")
    predict = sub.add_parser("predict", help="update a registered prediction set "
                             "(conf/predictions.toml): run its subscriptions over the source's "
                             "new events, merge the Markov counts and instance states")
    predict.add_argument("--name", required=True, help="the set's name in conf/predictions.toml")
    predict.add_argument("--until-version", type=int, default=None,
                         help="process the source only up to this Delta version")
    sub.add_parser("demo", help="the README demo")
    sql = sub.add_parser("sql", help="run one SQL statement against the warehouse and show it")
    sql.add_argument("statement")
    sql.add_argument("--rows", type=int, default=50)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the process exit code (2 for a typed error)."""
    args = _parser().parse_args(argv)
    from delta_tables.settings import load_settings

    overrides = {k: v for k, v in (("data_dir", args.data_dir), ("master", args.master)) if v}
    try:
        settings = load_settings(overrides=overrides)
        if args.command == "fetch-jars":
            from jobs.session import ensure_delta_jars

            jars = ensure_delta_jars(settings)
            print(f"{len(jars)} Delta jars ready in {settings.ivy_dir}")
            return 0
        if args.command == "fetch-data":
            from jobs.datasets import extract_log

            for name in settings.datasets:
                print(f"{name}: {extract_log(settings, name)}")
            from jobs.stocks import fetch_prices

            print(f"stock_prices: {fetch_prices(settings)}")
            return 0
        if args.command == "demo":
            from jobs.demo import run_demo

            run_demo(settings)
            return 0
        from jobs.session import build_session

        spark = build_session(settings)
        if args.command == "load-bpi":
            from jobs.load_logs import load_log

            for name in args.dataset or list(settings.datasets):
                load_log(spark, settings, name, force=args.force)
        elif args.command == "generate":
            from cep.synthetic import SyntheticSpec
            from jobs.generate import write_synthetic

            spec = SyntheticSpec(n_events=args.events, n_keys=args.keys, n_types=args.types,
                                 zipf_s=args.zipf, rate_per_s=args.rate, seed=args.seed)
            result = write_synthetic(spark, settings, spec, args.table)
            print(f"{result.table}: {result.events:,} events at version {result.version}")
        elif args.command == "load-stocks":
            from jobs.stocks import load_stocks

            result = load_stocks(spark, settings, force=args.force)
            print(f"{result.table}: {result.events:,} prices at version {result.version}"
                  f"{'' if result.written else ' (already loaded; nothing written)'}")
        elif args.command == "load-sensors":
            from jobs.sensors import load_sensors

            result = load_sensors(spark, settings, force=args.force)
            print(f"{result.table}: {result.events:,} (t, value, p) rows at version "
                  f"{result.version}{'' if result.written else ' (already loaded; nothing written)'}")
        elif args.command == "load-temperatures":
            from jobs.temperatures import load_temperatures

            result = load_temperatures(spark, settings, force=args.force)
            print(f"{result.table}: {result.events:,} (city, day) rows at version "
                  f"{result.version}{'' if result.written else ' (already loaded; nothing written)'}")
        elif args.command == "generate-checks":
            from cep.checks import CheckSpec
            from jobs.checks import write_checks

            spec = CheckSpec(n_checks=args.rows, n_accounts=args.accounts, n_banks=args.banks,
                             ring_rate=args.ring_rate, seed=args.seed)
            result = write_checks(spark, settings, spec, args.table, force=args.force)
            print(f"{result.table}: {result.events:,} checks at version {result.version}"
                  f"{'' if result.written else ' (already there; nothing written)'}")
        elif args.command == "sketch":
            from jobs.sketch import run_sketch

            result = run_sketch(spark, settings, args.name, until_version=args.until_version)
            if result.written:
                print(f"{result.sketch}: source versions {result.source_from}.."
                      f"{result.source_version}: {result.events_read:,} events read, "
                      f"{result.events_accepted:,} accepted, {result.late:,} late, "
                      f"{result.streams:,} streams, {result.node_rows:,} node rows merged; "
                      + ", ".join(f"{k} v{v}" for k, v in result.versions.items())
                      + f"; {result.seconds:.1f}s")
            else:
                print(f"{result.sketch}: nothing new (source version {result.source_version}); "
                      "nothing written")
        elif args.command == "graph":
            from jobs.graph import run_graph

            done = run_graph(spark, settings, args.name, until_version=args.until_version)
            print(f"{done.graph}: {'%d window(s) rebuilt' % done.windows if done.written else 'nothing new'}"
                  f"; state complete up to source version {done.source_version} "
                  f"({done.seconds:.1f}s)")
        elif args.command == "predict":
            from jobs.predict import run_predict

            done = run_predict(spark, settings, args.name, until_version=args.until_version)
            if done.written:
                print(f"{done.prediction}: source versions {done.source_from}.."
                      f"{done.source_version} ({done.read}): {done.events_read:,} events read, "
                      f"{done.events_run:,} run in {done.keys:,} keys, {done.late:,} late, "
                      f"{done.incomplete:,} incomplete; {done.instance_rows:,} instance rows, "
                      f"{done.state_rows:,} new states merged; model events "
                      + ", ".join(f"{k}={v:,}" for k, v in done.model_events.items()) + "; "
                      + ", ".join(f"{k} v{v}" for k, v in done.versions.items())
                      + f"; {done.seconds:.1f}s")
            else:
                print(f"{done.prediction}: nothing new (source version {done.source_version}); "
                      "nothing written")
        elif args.command == "sql":
            from sql_ext import register_all

            register_all(spark)
            spark.sql(args.statement).show(args.rows, truncate=False)
        return 0
    except CepError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
