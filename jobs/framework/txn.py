"""Idempotent Delta writes and the plumbing the incremental jobs share (sketch, predict, graph).

Every write of the state jobs (:mod:`jobs.state`, through :class:`jobs.framework.incremental.Run`)
carries Delta's
idempotent-write identity: a ``txnAppId`` (``cep-<job>-<name>-<table>``) and a ``txnVersion``
(the source version the run processes up to). Delta skips a write whose ``txnVersion`` is not
above the last one it recorded for that ``txnAppId``, so a rerun after a crash repeats no write.
A DataFrameWriter takes them as options (:func:`save`); a MERGE takes them from the session
confs :data:`TXN_APP_CONF` / :data:`TXN_VERSION_CONF`, set around it by :class:`TxnConfs`
(:func:`merge`). The run's record for the commit's ``userMetadata`` travels the same way.

The rest is what the jobs do alike around those writes: create and register their state
tables, read their one-row meta table and their commits' records, turn a worker's coded error
back into its class and print progress. The protocol that uses them is
:mod:`jobs.framework.incremental`.

Example:
    >>> from cep.errors import CepError
    >>> class JobError(CepError):
    ...     code = "CEP-JOB-040"
    >>> class StateError(CepError):
    ...     code = "CEP-JOB-041"
    >>> found = worker_error(RuntimeError("PythonException: CEP-JOB-041: two rows\\n  at ..."),
    ...                      {StateError.code: StateError}, JobError)
    >>> type(found).__name__, found.message
    ('StateError', 'two rows')
    >>> worker_error(RuntimeError("CEP-XYZ-001: other"), {}, JobError).message
    'CEP-XYZ-001: other'
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cep.errors import CepError, ConfigError
from delta_tables.catalog import is_delta_table, read_table, register_table
from delta_tables.delta_log import commit_records, latest_metadata, log_version
from delta_tables.settings import TableConf
from delta_tables.sketch_state import spark_schema
from jobs.framework.meta_row import logged_row

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["TXN_APP_CONF", "TXN_VERSION_CONF", "USER_METADATA_CONF", "TxnConfs",
           "CommitMetadata", "merge", "save", "ensure_table", "check_kind", "register_existing",
           "read_meta_row", "worker_error", "say", "log_version", "commit_records"]

TXN_APP_CONF = "spark.databricks.delta.write.txnAppId"
"""Session conf: the ``txnAppId`` of the next write (a MERGE has no writer options)."""
TXN_VERSION_CONF = "spark.databricks.delta.write.txnVersion"
"""Session conf: the ``txnVersion`` of the next write."""
USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"
"""Session conf: the ``userMetadata`` of the next commit."""

_WORKER_CODE = re.compile(r"(CEP-[A-Z]+-\d{3}): ([^\n]*)")


class TxnConfs:
    """Sets the idempotent-write session confs (and the commit's userMetadata) around a MERGE.

    On entry the confs are set in the order ``txnAppId``, ``txnVersion``, ``userMetadata``; on
    exit (also after an error) they are unset again, so no later write of the session inherits
    them.

    Args:
        spark: The session whose confs are set.
        app_id: The ``txnAppId``.
        version: The ``txnVersion``.
        metadata: The commit's ``userMetadata``; None leaves that conf alone.
    """

    def __init__(self, spark: "SparkSession", app_id: str, version: int,
                 metadata: str | None = None) -> None:
        self.spark = spark
        self.values = {TXN_APP_CONF: app_id, TXN_VERSION_CONF: str(version)}
        if metadata is not None:
            self.values[USER_METADATA_CONF] = metadata

    def __enter__(self) -> None:
        for key, value in self.values.items():
            self.spark.conf.set(key, value)

    def __exit__(self, *exc: object) -> None:
        for key in self.values:
            self.spark.conf.unset(key)


class CommitMetadata:
    """Sets only the commit ``userMetadata`` session conf around writes that take no writer
    options (table creation), so they too carry the run's record; unset on exit.

    Args:
        spark: The session whose conf is set.
        metadata: The commits' ``userMetadata``.
    """

    def __init__(self, spark: "SparkSession", metadata: str) -> None:
        self.spark, self.metadata = spark, metadata

    def __enter__(self) -> None:
        self.spark.conf.set(USER_METADATA_CONF, self.metadata)

    def __exit__(self, *exc: object) -> None:
        self.spark.conf.unset(USER_METADATA_CONF)


def merge(spark: "SparkSession", table: TableConf, source: "DataFrame", keys: Iterable[str],
          app_id: str, version: int, metadata: str | None = None, *, update: bool = True) -> None:
    """MERGE ``source`` into ``table`` on ``keys`` as one idempotent write.

    A matched row is replaced by the source row (unless ``update`` is False: then it is left
    as it is), an unmatched one is inserted.

    Args:
        spark: The session.
        table: The target Delta table (aliased ``t``; the source is ``s``).
        source: The rows to merge; they have the target's columns.
        keys: The columns that identify a row (equal in ``t`` and ``s``).
        app_id: The write's ``txnAppId``.
        version: The write's ``txnVersion``.
        metadata: The commit's ``userMetadata`` (None: none).
        update: Whether matched rows are updated.
    """
    from delta.tables import DeltaTable

    condition = " AND ".join(f"t.{key} = s.{key}" for key in keys)
    with TxnConfs(spark, app_id, version, metadata):
        builder = (DeltaTable.forPath(spark, str(table.location)).alias("t")
                   .merge(source.alias("s"), condition))
        if update:
            builder = builder.whenMatchedUpdateAll()
        builder.whenNotMatchedInsertAll().execute()


def save(frame: "DataFrame", table: TableConf, mode: str, app_id: str, version: int,
         metadata: str | None = None) -> None:
    """Write ``frame`` to ``table`` (``append`` or ``overwrite``) as one idempotent write.

    Args:
        frame: The rows; they have the table's columns.
        table: The target Delta table.
        mode: The DataFrameWriter's save mode.
        app_id: The write's ``txnAppId``.
        version: The write's ``txnVersion``.
        metadata: The commit's ``userMetadata`` (None: none).
    """
    writer = (frame.write.format("delta").mode(mode)
              .option("txnAppId", app_id).option("txnVersion", version))
    if metadata is not None:
        writer = writer.option("userMetadata", metadata)
    writer.save(str(table.location))


def add_missing_columns(spark: "SparkSession", table: TableConf,
                        columns: tuple[tuple[str, str], ...], metadata: str | None) -> None:
    """Give an existing ``table`` the ``columns`` it lacks (rows written before read NULL).

    A state table written by an older version of its job, before its row grew a column: an
    empty append with ``mergeSchema`` adds the columns, so a later overwrite with the full row
    fits. Nothing is written when every column is there.
    """
    have = set(read_table(spark, table).columns)
    if all(name in have for name, _ in columns):
        return
    writer = (spark.createDataFrame([], spark_schema(columns)).write.format("delta")
              .mode("append").option("mergeSchema", "true"))
    if metadata is not None:
        writer = writer.option("userMetadata", metadata)
    writer.save(str(table.location))


def ensure_table(spark: "SparkSession", table: TableConf, columns: tuple[tuple[str, str], ...],
                 properties: Mapping[str, str]) -> None:
    """Create ``table`` empty with ``columns`` unless it exists, then register it by name.

    An existing table must carry the ``cep.table`` property of ``properties`` (when that names
    one): a setting that points the run manifest at a source or state table is refused before
    anything is written to it.

    Args:
        spark: The session.
        table: The Delta table.
        columns: ``(name, SQL type)`` pairs (:func:`delta_tables.sketch_state.spark_schema`).
        properties: Table properties of a new table, in this order.

    Raises:
        ConfigError: the table exists with another ``cep.table`` property, or none.
    """
    if not is_delta_table(spark, table):
        from delta.tables import DeltaTable

        builder = (DeltaTable.createIfNotExists(spark).location(str(table.location))
                   .addColumns(spark_schema(columns)))
        for key, value in properties.items():
            builder = builder.property(key, value)
        builder.execute()
    elif "cep.table" in properties:
        check_kind(spark, table, properties["cep.table"])
    register_table(spark, table)


def check_kind(spark: "SparkSession", table: TableConf, kind: str) -> None:
    """Refuse ``table`` when it exists and its ``cep.table`` property is not ``kind``.

    Raises:
        ConfigError: naming the table, its location and the property it has.
    """
    if log_version(table) is None and not is_delta_table(spark, table):
        return
    meta = latest_metadata(table)
    if meta is not None:
        found = (meta.get("configuration") or {}).get("cep.table")
    else:  # the commits that set it were cleaned up after a checkpoint: ask Delta
        from delta.tables import DeltaTable

        detail = DeltaTable.forPath(spark, str(table.location)).detail().first()
        found = (detail["properties"] or {}).get("cep.table")
    if found != kind:
        what = "no cep.table property" if found is None else f"cep.table = {found!r}"
        raise ConfigError(f"table {table.name} ({table.location}) exists and is not a {kind} "
                          f"table ({what}); nothing was written to it. Give it a table of its "
                          "own in tables.toml (a source or state table is never a "
                          f"{kind})")


def register_existing(spark: "SparkSession", tables: Iterable[TableConf]) -> None:
    """Make those of ``tables`` that exist queryable by name in this session.

    Another process (the demo, a scheduler) may have built them; registration writes nothing
    to Delta.
    """
    for table in tables:
        if is_delta_table(spark, table):
            register_table(spark, table)


def read_meta_row(spark: "SparkSession", table: TableConf,
                  error: Callable[[str], Exception],
                  columns: Sequence[tuple[str, str]] | None = None) -> dict[str, Any] | None:
    """The one row of a job's meta table as a dict, or None before the first complete run.

    Args:
        spark: The session.
        table: The meta table.
        error: Makes the error raised when the table has more than one row (a class, or a
            function of the message).
        columns: The meta table's ``(name, SQL type)``: when given, the row the newest
            commit recorded is taken from the Delta log without a Spark job
            (:mod:`jobs.framework.meta_row`), and Spark reads the table only when the log
            cannot say.

    Raises:
        error: The table holds several rows.
    """
    if columns is not None:
        logged = logged_row(table, columns)
        if logged is not None:
            return logged
    if not is_delta_table(spark, table):
        return None
    rows = read_table(spark, table).collect()
    if len(rows) > 1:
        raise error(f"{table.name}: {len(rows)} rows, expected one")
    return rows[0].asDict(recursive=True) if rows else None


def worker_error(exc: Exception, classes: Mapping[str, type[CepError]],
                 fallback: Callable[[str], Exception]) -> Exception:
    """A typed error raised in a Python worker, rebuilt on the driver from Spark's message.

    Spark wraps worker exceptions (``PythonException``); the first ``CEP-XXX-NNN: message`` in
    the message names the class.

    Args:
        exc: What the Spark action raised.
        classes: The error class of each code the job can rebuild.
        fallback: Makes the error of any other code (a class, or a function of the message);
            it carries ``"<code>: <message>"``.

    Returns:
        ``exc`` itself when it is a :class:`~cep.errors.CepError` already or has no code,
        else ``classes[code](message)`` or ``fallback("<code>: <message>")``.
    """
    if isinstance(exc, CepError):
        return exc
    found = _WORKER_CODE.search(str(exc))
    if found is None:
        return exc
    code, message = found.group(1), found.group(2).strip()
    if code in classes:
        return classes[code](message)
    return fallback(f"{code}: {message}")


def say(quiet: bool, message: str) -> None:
    """Print a progress line to stderr unless ``quiet``."""
    if not quiet:
        print(message, file=sys.stderr, flush=True)
