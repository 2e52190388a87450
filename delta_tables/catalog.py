"""Configured Delta tables: catalog registration, writes with table properties, time travel.

Tables are external Delta tables at the locations of ``conf/tables.toml``; the session
catalog (in-memory by default) learns them at every session start, so SQL can say
``SELECT * FROM bpi2012 VERSION AS OF 0`` without paths. No user string is pasted into SQL
text here: names are validated identifiers and paths go through the DataFrame API.

Example:
    >>> from jobs.session import build_session                          # doctest: +SKIP
    >>> spark = build_session()                                         # doctest: +SKIP
    >>> read_table(spark, load_settings().table("bpi2012"), version=0).count()  # doctest: +SKIP
    262200
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from delta_tables.settings import IDENTIFIER, Settings, TableConf, check_identifier, load_settings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["discover_tables", "register_tables", "register_table", "read_table", "current_version",
           "table_properties", "is_delta_table", "load_settings"]


def is_delta_table(spark: "SparkSession", table: TableConf) -> bool:
    """True when ``table``'s location holds a Delta transaction log."""
    return (table.location / "_delta_log").is_dir()


def register_table(spark: "SparkSession", table: TableConf) -> bool:
    """Make ``table`` known to the session catalog; False if its location has no Delta table."""
    check_identifier(table.name, what="table name")
    if not is_delta_table(spark, table):
        return False
    if not spark.catalog.tableExists(table.name):
        spark.catalog.createTable(table.name, path=str(table.location), source="delta")
    return True


def discover_tables(settings: Settings) -> list[TableConf]:
    """Configured tables plus every other Delta table directly under the warehouse.

    Tables written by jobs under a validated name (``jobs generate --table NAME``) are not in
    ``conf/tables.toml``; a folder name that is not a plain identifier is ignored.
    """
    found = dict(settings.tables)
    if settings.warehouse_dir.is_dir():
        for child in sorted(settings.warehouse_dir.iterdir()):
            if (child.name not in found and IDENTIFIER.match(child.name)
                    and (child / "_delta_log").is_dir()):
                found[child.name] = TableConf(child.name, child.resolve(), None, "discovered")
    return list(found.values())


def register_tables(spark: "SparkSession", settings: Settings) -> list[str]:
    """Register every table of :func:`discover_tables` that exists on disk; returns the names."""
    return [t.name for t in discover_tables(settings) if register_table(spark, t)]


def read_table(
    spark: "SparkSession", table: TableConf, *, version: int | None = None,
    timestamp: str | None = None,
) -> "DataFrame":
    """Read ``table``, optionally as of a Delta ``version`` or ``timestamp`` (time travel)."""
    reader = spark.read.format("delta")
    if version is not None and timestamp is not None:
        raise ValueError("give version or timestamp, not both")
    if version is not None:
        reader = reader.option("versionAsOf", int(version))
    if timestamp is not None:
        reader = reader.option("timestampAsOf", str(timestamp))
    return reader.load(str(table.location))


def current_version(spark: "SparkSession", table: TableConf) -> int | None:
    """Latest committed version of ``table``, or None if it does not exist yet."""
    if not is_delta_table(spark, table):
        return None
    from delta.tables import DeltaTable

    row = DeltaTable.forPath(spark, str(table.location)).history(1).select("version").first()
    return None if row is None else int(row[0])


def table_properties(spark: "SparkSession", table: TableConf) -> Mapping[str, str]:
    """The Delta table properties (``TBLPROPERTIES``) of ``table``; empty if it does not exist."""
    if not is_delta_table(spark, table):
        return {}
    from delta.tables import DeltaTable

    detail = DeltaTable.forPath(spark, str(table.location)).detail().select("properties").first()
    return dict(detail[0] or {}) if detail is not None else {}
