"""One-commit replacement of a configured Delta table by a pyarrow table (the loaders' write path).

The loaders of real or generated data (``load-stocks``, ``load-sensors``, ``load-temperatures``,
``generate-checks``) all write a whole table at once and are idempotent through table
properties: the properties record what the table holds (a file's SHA-256, a loader version,
generator parameters), a rerun that finds them all equal writes nothing, and anything else
replaces the table in ONE Delta commit (``CREATE OR REPLACE``), so readers see the old table or
the new one, never a mix.

The pyarrow table is staged as one Parquet file under the scratch directory and read by Spark
(no Python rows cross the JVM boundary); the staging folder is removed afterwards.

Example:
    >>> from delta_tables.settings import load_settings                         # doctest: +SKIP
    >>> settings = load_settings()                                              # doctest: +SKIP
    >>> version = replace_table(spark, settings, settings.table("stock_prices"), arrow,
    ...                         {"cep.source.sha256": digest})                   # doctest: +SKIP
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from delta_tables.catalog import current_version, table_properties
from delta_tables.settings import Settings, TableConf, check_identifier

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def version_if_holding(spark: "SparkSession", table: TableConf, properties: Mapping[str, str]) -> int | None:
    """The table's current version when every one of ``properties`` has the given value, else None."""
    found = table_properties(spark, table)
    if all(found.get(key) == value for key, value in properties.items()):
        return int(current_version(spark, table) or 0)
    return None


def replace_table(spark: "SparkSession", settings: Settings, table: TableConf, arrow: Any,
                  properties: Mapping[str, str]) -> int:
    """Replace ``table`` (at its location) by ``arrow`` in one commit; returns the new version.

    ``arrow`` is a pyarrow Table or an iterable of them (staged as one Parquet file each, so a
    generator can produce a large table batch by batch). The table gets change data feed
    enabled and ``properties`` as table properties; staging goes under the scratch directory.
    """
    import pyarrow.parquet as pq

    name = check_identifier(table.name, what="table name")
    settings.scratch_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"stage-{name}-", dir=settings.scratch_dir))
    try:
        parts = [arrow] if hasattr(arrow, "num_rows") else arrow
        for i, part in enumerate(parts):
            pq.write_table(part, staging / f"part-{i:05d}.parquet")
        writer = (spark.read.parquet(str(staging)).writeTo(name).using("delta")
                  .tableProperty("location", str(table.location))
                  .tableProperty("delta.enableChangeDataFeed", "true"))
        for key, value in properties.items():
            writer = writer.tableProperty(key, value)
        writer.createOrReplace()
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return int(current_version(spark, table) or 0)
