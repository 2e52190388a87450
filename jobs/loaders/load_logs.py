"""Loader job: the real BPI event logs into Delta tables (``python -m jobs load-bpi``).

Each log is flattened by :func:`cep.datasets.xes.read_xes`, staged as Parquet with pyarrow and written
in ONE Delta commit (``CREATE OR REPLACE TABLE ... AS SELECT`` through the DataFrameWriterV2)
with change data feed enabled and the SHA-256 of the source file and the loader version as
table properties. A rerun over the same file finds those properties and writes nothing, so
loading twice never duplicates events; a changed file or loader replaces the table in one
commit (older versions stay readable with time travel).

Example:
    >>> from jobs.session import build_session                      # doctest: +SKIP
    >>> result = load_log(build_session(), load_settings(), "bpi2012")  # doctest: +SKIP
    >>> result.events                                                # doctest: +SKIP
    262200
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cep.errors import InputDataError
from cep.datasets.xes import EventLog, read_xes
from delta_tables.catalog import current_version, table_properties
from delta_tables.settings import Settings, load_settings
from jobs.loaders.datasets import extract_log, sha256_of

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

LOADER_VERSION = "1"
PROP_SHA = "cep.source.sha256"
PROP_LOADER = "cep.loader.version"
PROP_SOURCE = "cep.source.member"

__all__ = ["LoadResult", "load_log", "event_log_to_arrow", "load_settings"]


@dataclass(frozen=True)
class LoadResult:
    """What one load did: the table, its version, the event count and whether it wrote."""

    table: str
    version: int
    events: int
    written: bool
    seconds: float


def event_log_to_arrow(log: EventLog) -> Any:
    """A pyarrow Table of ``log`` with Spark-friendly types (timestamps in UTC microseconds)."""
    import pyarrow as pa

    types = {"string": pa.string(), "int": pa.int64(), "float": pa.float64(),
             "boolean": pa.bool_()}
    arrays = []
    for name, values in log.columns.items():
        kind = log.kinds[name]
        if kind == "date":
            arrays.append(pa.array(values, pa.int64()).cast(pa.timestamp("us", tz="UTC")))
        else:
            arrays.append(pa.array(values, types[kind]))
    return pa.Table.from_arrays(arrays, names=list(log.columns))


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def load_log(spark: "SparkSession", settings: Settings, name: str, *,
             force: bool = False, quiet: bool = False) -> LoadResult:
    """Load the configured dataset ``name`` into the Delta table of the same name.

    Args:
        spark: a session from :func:`jobs.session.build_session`.
        settings: resolved settings (tables and datasets).
        name: a dataset of ``conf/datasets.toml`` that is also a table of ``conf/tables.toml``.
        force: rewrite even if the table already holds this file.

    Returns:
        A :class:`LoadResult`; ``written`` is False when the table was already up to date.
    """
    started = time.monotonic()
    table = settings.table(name)
    source = extract_log(settings, table.source or name, quiet=quiet)
    digest = sha256_of(source)
    props = table_properties(spark, table)
    if (not force and props.get(PROP_SHA) == digest
            and props.get(PROP_LOADER) == LOADER_VERSION):
        version = current_version(spark, table)
        count = spark.read.format("delta").load(str(table.location)).count()
        if not quiet:
            _say(f"{name}: up to date at version {version} ({count:,} events); nothing written")
        return LoadResult(name, int(version or 0), count, False, time.monotonic() - started)

    def progress(n: int) -> None:
        if not quiet:
            _say(f"{name}: parsed {n:,} events ...")

    if not quiet:
        _say(f"{name}: reading {source.name}")
    log = read_xes(source, progress=progress)
    expected = settings.datasets[table.source or name].events
    if log.n_events != expected:
        raise InputDataError(f"{source.name}: expected {expected:,} events, found {log.n_events:,}")
    import pyarrow.parquet as pq

    settings.scratch_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"stage-{name}-", dir=settings.scratch_dir))
    try:
        pq.write_table(event_log_to_arrow(log), staging / "part-0.parquet")
        frame = spark.read.parquet(str(staging))
        (frame.writeTo(name).using("delta")
         .tableProperty("location", str(table.location))
         .tableProperty("delta.enableChangeDataFeed", "true")
         .tableProperty(PROP_SHA, digest)
         .tableProperty(PROP_LOADER, LOADER_VERSION)
         .tableProperty(PROP_SOURCE, Path(settings.datasets[table.source or name].member).name)
         .createOrReplace())
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    version = int(current_version(spark, table) or 0)
    seconds = time.monotonic() - started
    if not quiet:
        _say(f"{name}: wrote {log.n_events:,} events of {log.n_cases:,} cases as version "
             f"{version} in {seconds:.1f}s")
    return LoadResult(name, version, log.n_events, True, seconds)
