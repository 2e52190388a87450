"""Helpers shared by the end-to-end benchmarks: timing, Spark's noop sink, PyFlink, ratios.

``run_flink`` runs ``benchmarks/flink_runner.py`` with the interpreter of ``.venv-flink``
(``make flink-venv``): PyFlink pins numpy and pyarrow versions that clash with the project's,
so Flink runs in its own process and reports its query time on stdout.

Example:
    >>> value, seconds = timed(lambda: sum(range(10)))
    >>> value, seconds >= 0
    (45, True)
    >>> ratio(3.0, 1.5), ratio(None, 1.0)
    ('2.00x', '-')
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypeVar

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

ROOT = Path(__file__).resolve().parent.parent
FLINK_PYTHON = ROOT / ".venv-flink" / "bin" / "python"
FLINK_RUNNER = ROOT / "benchmarks" / "flink_runner.py"

T = TypeVar("T")


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    """``fn()`` and its wall time in seconds."""
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def best_of(fn: Callable[[], T], repeats: int) -> tuple[T, float]:
    """``fn()`` and its best wall time in seconds over ``repeats`` runs (at least one)."""
    value, best = timed(fn)
    for _ in range(repeats - 1):
        value, seconds = timed(fn)
        best = min(best, seconds)
    return value, best


def noop_seconds(frame: "DataFrame") -> float:
    """Wall time of writing ``frame`` to Spark's ``noop`` sink (every output column computed)."""
    _, seconds = timed(lambda: frame.write.format("noop").mode("overwrite").save())
    return seconds


def count_and_time(frame: "DataFrame") -> tuple[int, float]:
    """``frame.count()`` (which also warms the plan up), then the noop write's wall time."""
    return frame.count(), noop_seconds(frame)


def run_flink(query: str, csv_dir: Path, timeout_s: float = 3600
              ) -> tuple[int | None, float | None, str]:
    """Run a counting Flink SQL query over the CSV folder (table ``ev``) in PyFlink batch mode.

    Returns:
        ``(count, seconds, note)``: the query's count and execution time as measured inside the
        Flink process (JVM start-up excluded), or ``(None, None, reason)`` when Flink is not
        installed or the query failed (the last line of its error output).
    """
    if not FLINK_PYTHON.exists():
        return None, None, "no .venv-flink (run `make flink-venv`)"
    try:
        proc = subprocess.run([str(FLINK_PYTHON), str(FLINK_RUNNER), str(csv_dir), query],
                              capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, None, f"timed out after {timeout_s:.0f} s"
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        return None, None, lines[-1][:200] if lines else f"exit code {proc.returncode}"
    count, seconds = proc.stdout.strip().splitlines()[-1].split()
    return int(count), float(seconds), ""


class NoopTable:
    """An Arrow UDTF handler that takes its batches and returns nothing: the transport floor."""

    def eval(self, table: object) -> object:
        return iter(())


def cached_events(spark: object, settings: object, n: int) -> "DataFrame":
    """The end-to-end benchmarks' synthetic stream of ``n`` events (1,000 keys, 50 Zipf types,
    seed 2024) in Delta as ``bench_events_<n>``, cached and registered as ``bench_events``."""
    from cep.datasets.synthetic import SyntheticSpec
    from jobs.loaders.generate import write_synthetic

    table = f"bench_events_{n}"
    write_synthetic(spark, settings, SyntheticSpec(n_events=n, n_keys=1000, n_types=50,
                                                   seed=2024), table, quiet=True)
    frame = spark.table(table)
    frame.cache().count()
    frame.createOrReplaceTempView("bench_events")
    return frame


def bench_session() -> tuple[object, object]:
    """The benchmarks' Spark session over the project's warehouse, the CEP functions
    registered, progress bars off; returns ``(spark, settings)``."""
    from delta_tables.settings import load_settings
    from jobs.session import build_session
    from sql_ext import register_all

    settings = load_settings(overrides={"show_progress": False})
    spark = build_session(settings)
    register_all(spark)
    return spark, settings


def flink_csv(frame: "DataFrame", settings: object, n: int) -> Path:
    """The folder of ``frame`` (the synthetic stream of ``n`` events) as one CSV file with
    columns ``id, k, type, ts, v0``: the table ``ev`` of ``flink_runner.py``; written once."""
    csv_dir = settings.scratch_dir / f"bench_csv_{n}"  # type: ignore[attr-defined]
    if not csv_dir.exists():
        (frame.selectExpr("id", "CAST(key AS STRING) AS k", "type",
                          "date_format(ts, 'yyyy-MM-dd HH:mm:ss.SSS') AS ts", "v0")
         .coalesce(1).write.mode("overwrite").option("header", "false").csv(str(csv_dir)))
    return csv_dir


def register_noop(spark: object, name: str = "noop_arrow") -> str:
    """Register :class:`NoopTable` as the Arrow UDTF ``name`` (returns ``x INT``, no rows)."""
    from pyspark.sql.functions import arrow_udtf

    spark.udtf.register(name, arrow_udtf(NoopTable, returnType="x INT"))  # type: ignore[attr-defined]
    return name


def sql_best(spark: object, sql: str, repeats: int = 2) -> tuple[int, float]:
    """The row count of ``sql`` (its run also warms the plan up), then the best wall time of
    ``repeats`` runs to Spark's ``noop`` sink."""
    count = spark.sql(sql).count()  # type: ignore[attr-defined]
    best = float("inf")
    for _ in range(repeats):
        _, seconds = timed(lambda: spark.sql(sql).write.format("noop")  # type: ignore[attr-defined]
                           .mode("overwrite").save())
        best = min(best, seconds)
    return count, best


def sql_session(prefix: str) -> tuple[object, Path]:
    """A session over a fresh warehouse in a temporary folder named ``prefix...``, with the CEP
    functions and ``noop_arrow`` registered; returns the session and the folder."""
    import tempfile

    from delta_tables.settings import load_settings
    from jobs.session import build_session
    from sql_ext import register_all

    root = Path(tempfile.mkdtemp(prefix=prefix))
    spark = build_session(load_settings(overrides={"warehouse": str(root),
                                                   "show_progress": False}))
    register_all(spark)
    register_noop(spark)
    return spark, root


def ratio(base: float | None, ours: float) -> str:
    """``base / ours`` as ``"1.23x"`` (above 1: ours is faster), ``"-"`` without a baseline."""
    return "-" if base is None else f"{base / ours:.2f}x"


def report(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A run's rows with the machine and Python that made them (the ``--json`` file)."""
    import platform
    import sys

    return {"rows": rows, "machine": platform.platform(), "python": sys.version.split()[0]}


def events_cli(run: Callable[[int], dict[str, Any]], description: str,
               argv: list[str] | None = None) -> None:
    """The command line of a benchmark of one size: ``--events N [--json PATH]``."""
    import argparse
    import json

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--json", default=None, help="write the rows here too")
    args = parser.parse_args(argv)
    result = run(args.events)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(result, out, indent=2)
