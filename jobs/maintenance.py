"""The maintenance job (``python -m jobs maintain``): OPTIMIZE and VACUUM of the registered tables.

The job touches exactly the registered state tables (:func:`jobs.framework.registry.state_tables`) and the
run manifest (``conf/jobs.toml`` ``[manifest]``), never a source table or a table named only by
a user string. For each of them that exists it

1. compacts small files with OPTIMIZE (when ``[maintenance] optimize`` is true), and
2. runs VACUUM with a retention of at least ``[maintenance] time_travel_hours``, so every
   ``VERSION AS OF`` / ``TIMESTAMP AS OF`` within that window still finds its files.

A shorter retention is refused before anything is touched (:class:`RetentionTooShortError`).
Table properties are read, never changed: a table whose ``delta.logRetentionDuration`` or
``delta.deletedFileRetentionDuration`` is shorter than the window gets a warning in the result,
because Delta then drops the log (or refuses time travel) before the window ends.

Session settings are changed around our own VACUUM call only, and restored afterwards (also
on error): ``spark.databricks.delta.vacuum.retentionWindowIgnore.enabled = false``, since Delta 4
otherwise ignores any ``RETAIN n HOURS`` but 0 and uses the table's
``delta.deletedFileRetentionDuration`` instead, which could delete files the window still needs;
and, when the retention is shorter than that table property (default 7 days),
``spark.databricks.delta.retentionDurationCheck.enabled = false``, since our own check has
already guaranteed that the retention covers the window. Unless the session set it, VACUUM also
lists files with the cluster's parallelism instead of Spark's 10,000 tasks
(``spark.sql.sources.parallelPartitionDiscovery.parallelism``).

Example:
    >>> from jobs.maintenance import maintain                           # doctest: +SKIP
    >>> result = maintain(spark, settings, dry_run=True, quiet=True)    # doctest: +SKIP
    >>> print(result)                                                   # doctest: +SKIP
    maintain (dry run): VACUUM retention 168 h (time-travel window 168 h), 31 tables, 9.8 s
      app_sketch_nodes: 4 files; VACUUM RETAIN 168 HOURS would delete 0 files
      ...
      cep_runs: does not exist yet; skipped
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cep.errors import CepError
from delta_tables.catalog import is_delta_table
from delta_tables.settings import Settings, TableConf, check_locations
from jobs.framework.registry import state_tables
from jobs.framework.run_conf import load_run_conf
from jobs.framework.txn import say
from jobs.session import session_confs

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["RetentionTooShortError", "NotMaintainedTableError", "TableMaintenance",
           "MaintenanceResult", "VacuumPlan", "maintain", "maintained_tables", "vacuum_plan",
           "interval_hours", "delta_path_sql", "CHECK_CONF", "WINDOW_IGNORE_CONF", "LISTING_CONF"]

CHECK_CONF = "spark.databricks.delta.retentionDurationCheck.enabled"
"""Delta's refusal of a VACUUM retention below the table's deletedFileRetentionDuration."""
WINDOW_IGNORE_CONF = "spark.databricks.delta.vacuum.retentionWindowIgnore.enabled"
"""Delta 4: when true (the default), VACUUM ignores ``RETAIN n HOURS`` unless n is 0."""
LISTING_CONF = "spark.sql.sources.parallelPartitionDiscovery.parallelism"
"""Tasks VACUUM lists the table's folders with; Spark's default is 10,000."""

DELETED_FILE_PROPERTY = "delta.deletedFileRetentionDuration"
LOG_PROPERTY = "delta.logRetentionDuration"
DEFAULT_DELETED_FILE_HOURS = 7 * 24.0
"""Delta's default ``delta.deletedFileRetentionDuration`` (1 week)."""
DEFAULT_LOG_HOURS = 30 * 24.0
"""Delta's default ``delta.logRetentionDuration`` (30 days)."""

_UNIT_HOURS = {"week": 168.0, "day": 24.0, "hour": 1.0, "minute": 1 / 60, "second": 1 / 3600,
               "millisecond": 1 / 3_600_000, "microsecond": 1 / 3_600_000_000}
_INTERVAL = re.compile(r"^\s*(?:interval\s+)?((?:\d+(?:\.\d+)?\s*[a-z]+\s*)+)$")
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]+)")


class RetentionTooShortError(CepError):
    """A VACUUM retention below ``conf/jobs.toml`` ``[maintenance] time_travel_hours``: files
    that time travel within the window needs would be deleted, so nothing is done."""

    code = "CEP-JOB-050"


class NotMaintainedTableError(CepError):
    """A table named for maintenance is neither a registered state table nor the run manifest
    (a source table, say); maintenance never touches it."""

    code = "CEP-JOB-051"


@dataclass(frozen=True)
class TableMaintenance:
    """What maintenance did (or, on a dry run, would do) to one table.

    Attributes:
        name: The table's SQL name.
        existed: False when the table does not exist yet: it was skipped.
        files_before: Data files of the current version before (``DESCRIBE DETAIL`` numFiles).
        files_after: Data files of the current version afterwards.
        optimized: Whether OPTIMIZE ran.
        files_compacted: Small files OPTIMIZE rewrote into larger ones (0 if it did not run).
        vacuum_retention_hours: The retention VACUUM used (None: skipped).
        files_deleted: Files and directories VACUUM deleted (on a dry run: would delete); None
            when Delta did not log the VACUUM (``spark.databricks.delta.vacuum.logging.enabled``).
        warnings: Table settings that cut time travel short of the window, and the like.
    """

    name: str
    existed: bool
    files_before: int | None = None
    files_after: int | None = None
    optimized: bool = False
    files_compacted: int = 0
    vacuum_retention_hours: int | None = None
    files_deleted: int | None = None
    warnings: tuple[str, ...] = ()

    def line(self, dry_run: bool) -> str:
        """One summary line, e.g. ``heat_models: 12 -> 1 files (OPTIMIZE compacted 12); ...``."""
        if not self.existed:
            return f"{self.name}: does not exist yet; skipped"
        files = (f"{self.files_before} files" if self.files_after == self.files_before
                 else f"{self.files_before} -> {self.files_after} files")
        if self.optimized:
            files += f" (OPTIMIZE compacted {self.files_compacted})"
        deleted = "?" if self.files_deleted is None else str(self.files_deleted)
        verb = "would delete" if dry_run else "deleted"
        text = (f"{self.name}: {files}; VACUUM RETAIN {self.vacuum_retention_hours} HOURS "
                f"{verb} {deleted} files")
        return "".join([text, *(f"\n    warning: {w}" for w in self.warnings)])


@dataclass(frozen=True)
class MaintenanceResult:
    """The outcome of :func:`maintain`; ``str()`` of it is the summary, one line per table.

    Attributes:
        tables: One entry per table considered, in the order maintained.
        retention_hours: The retention asked for (a table may keep longer, see its entry).
        time_travel_hours: The configured time-travel window.
        dry_run: True when nothing was changed.
        seconds: Wall-clock time of the whole run.
    """

    tables: tuple[TableMaintenance, ...]
    retention_hours: int
    time_travel_hours: int
    dry_run: bool
    seconds: float

    def table(self, name: str) -> TableMaintenance:
        """The entry of table ``name``; KeyError if it was not considered."""
        for entry in self.tables:
            if entry.name == name:
                return entry
        raise KeyError(name)

    def __str__(self) -> str:
        mode = " (dry run)" if self.dry_run else ""
        head = (f"maintain{mode}: VACUUM retention {self.retention_hours} h (time-travel window "
                f"{self.time_travel_hours} h), {len(self.tables)} tables, {self.seconds:.1f} s")
        return "\n".join([head, *(f"  {t.line(self.dry_run)}" for t in self.tables)])


def maintained_tables(settings: Settings) -> dict[str, TableConf]:
    """Every table maintenance may touch, by SQL name: the registered state tables, then the
    run manifest.

    Example:
        >>> from delta_tables.settings import load_settings
        >>> names = maintained_tables(load_settings(overrides={"data_dir": "/tmp/cep-doc"}))
        >>> "heat_models" in names, "cep_runs" in names, "daily_temperatures" in names
        (True, True, False)
    """
    allowed = dict(state_tables(settings))
    manifest = load_run_conf(settings).manifest
    allowed[manifest.name] = manifest
    return allowed


@dataclass(frozen=True)
class VacuumPlan:
    """How VACUUM runs on one table, decided from its properties before anything is touched.

    Attributes:
        hours: The retention VACUUM uses.
        lift_check: Whether Delta's retention check must be lifted for the call (the retention
            is below the table's ``delta.deletedFileRetentionDuration``).
        warnings: Table settings that cut time travel short of the window, and a note when the
            table keeps files longer than asked.
    """

    hours: int
    lift_check: bool
    warnings: tuple[str, ...]


def vacuum_plan(properties: Mapping[str, str], retention: int, window: int) -> VacuumPlan:
    """The VACUUM of a table with these Delta ``properties``, retention and time-travel window.

    The retention is used as it is, except that a ``delta.deletedFileRetentionDuration`` set on
    the table and longer than it is honoured (its owner asked to keep the files that long).
    A retention below the table's deleted-file retention (set or default 7 days) needs Delta's
    check lifted; the caller has already checked ``retention >= window``. A log retention or a
    deleted-file retention (set or default) shorter than the window is a warning: Delta drops
    the log, or refuses time travel, before the window ends.

    Example:
        >>> vacuum_plan({}, 24, 24)
        VacuumPlan(hours=24, lift_check=True, warnings=())
        >>> kept = {"delta.deletedFileRetentionDuration": "interval 10 days"}
        >>> plan = vacuum_plan(kept, 24, 24)
        >>> plan.hours, plan.lift_check, plan.warnings[0].split(": ")[-1]
        (240, False, 'VACUUM keeps 240 hours')
        >>> [w[:45] for w in vacuum_plan({}, 720, 720).warnings]
        ['delta.deletedFileRetentionDuration is 168 hou']
    """
    warnings: list[str] = []
    log_hours = _hours_property(properties, LOG_PROPERTY, DEFAULT_LOG_HOURS, warnings)
    if log_hours < window:
        warnings.append(
            f"{LOG_PROPERTY} is {log_hours:g} hours, shorter than the time-travel window of "
            f"{window} hours: Delta drops older log entries at checkpoints, so VERSION AS OF "
            f"further back fails; set the table property to at least the window")
    file_hours = _hours_property(properties, DELETED_FILE_PROPERTY, DEFAULT_DELETED_FILE_HOURS,
                                 warnings)
    if file_hours < window:
        warnings.append(
            f"{DELETED_FILE_PROPERTY} is {file_hours:g} hours, shorter than the time-travel "
            f"window of {window} hours: Delta refuses time travel further back than that; set "
            f"the table property to at least the window")
    hours = retention
    if DELETED_FILE_PROPERTY in properties and file_hours > retention:
        hours = math.ceil(file_hours)
        warnings.append(f"{DELETED_FILE_PROPERTY} of the table is {file_hours:g} hours, longer "
                        f"than {retention}: VACUUM keeps {hours} hours")
    return VacuumPlan(hours, hours < file_hours, tuple(warnings))


def interval_hours(text: str) -> float | None:
    """Hours of a Delta interval property such as ``"interval 30 days"``; None if unreadable.

    Example:
        >>> interval_hours("interval 1 week"), interval_hours("36 hours")
        (168.0, 36.0)
        >>> interval_hours("interval 1 day 12 hours"), interval_hours("forever")
        (36.0, None)
    """
    found = _INTERVAL.match(text.lower())
    if found is None:
        return None
    hours = 0.0
    for number, unit in _PART.findall(found.group(1)):
        factor = _UNIT_HOURS.get(unit[:-1] if unit.endswith("s") else unit)
        if factor is None:
            return None
        hours += float(number) * factor
    return hours


def delta_path_sql(location: Path) -> str:
    """``delta.`<location>``` for SQL text, with any backtick in the path doubled.

    Only locations from the settings (under the warehouse) reach this; doubling is Spark's own
    escape inside a back-quoted identifier, so the path cannot end the quoting early.

    Example:
        >>> delta_path_sql(Path("/w/heat_models"))
        'delta.`/w/heat_models`'
        >>> delta_path_sql(Path("/w/odd`name"))
        'delta.`/w/odd``name`'
    """
    return "delta.`" + str(location).replace("`", "``") + "`"


def maintain(spark: "SparkSession", settings: Settings, *, tables: Sequence[str] | None = None,
             retention_hours: int | None = None, dry_run: bool = False,
             quiet: bool = False) -> MaintenanceResult:
    """OPTIMIZE and VACUUM the registered state tables and the run manifest.

    Every check runs before any table is touched: the retention against the time-travel window
    (``conf/jobs.toml`` ``[maintenance] time_travel_hours``), then the names in ``tables``
    against :func:`maintained_tables`. Tables that do not exist yet are skipped and reported.

    Args:
        spark: The session.
        settings: Where the tables are and which are registered (``settings.conf_dir``).
        tables: SQL names of the tables to maintain; None: every maintained table.
        retention_hours: VACUUM retention; None: the time-travel window. Never shorter than
            the window.
        dry_run: Report what VACUUM would delete; change nothing (no OPTIMIZE either).
        quiet: No progress lines on stderr.

    Returns:
        What was done per table; ``print(result)`` shows the summary.

    Raises:
        ConfigError: two maintained tables, or one and a table of tables.toml, share a folder
            (or one lies inside another's).
        RetentionTooShortError: ``retention_hours`` is below the window.
        NotMaintainedTableError: A name in ``tables`` is not a maintained table.
        TypeError: ``retention_hours`` is not a whole number.

    Example:
        >>> result = maintain(spark, settings, tables=["heat_models"],  # doctest: +SKIP
        ...                   dry_run=True, quiet=True)
        >>> result.table("heat_models").files_deleted                   # doctest: +SKIP
        0
    """
    started = time.monotonic()
    rules = load_run_conf(settings)
    window = rules.time_travel_hours
    retention = window if retention_hours is None else _whole_hours(retention_hours)
    if retention < window:
        raise RetentionTooShortError(
            f"VACUUM retention of {retention} hours is shorter than the time-travel window of "
            f"{window} hours (conf/jobs.toml [maintenance] time_travel_hours): VERSION AS OF "
            f"within the window needs those files; nothing was changed")
    allowed = maintained_tables(settings)
    # VACUUM deletes by folder: a state table sharing one with any other table (a source of
    # tables.toml, another job's state) is refused before anything is touched.
    others = {t.name: t for t in settings.tables.values() if t.name not in allowed}
    check_locations(settings.warehouse_dir, [*allowed.values(), *others.values()],
                    where="maintain (state tables, the run manifest and tables.toml)")
    chosen = _chosen_tables(allowed, tables)
    mode = ", dry run: nothing is changed" if dry_run else ""
    say(quiet, f"maintain: {len(chosen)} tables, VACUUM retention {retention} h{mode}")
    done = [_maintain_table(spark, table, retention, window,
                            optimize=rules.optimize and not dry_run, dry_run=dry_run, quiet=quiet)
            for table in chosen]
    return MaintenanceResult(tuple(done), retention, window, dry_run,
                             round(time.monotonic() - started, 3))


def _whole_hours(value: Any) -> int:
    # bool is an int to Python, but `--retention-hours true` is a mistake, not 1 hour.
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"retention_hours: expected a whole number of hours, found {value!r}")
    return value


def _chosen_tables(allowed: Mapping[str, TableConf],
                   names: Sequence[str] | None) -> list[TableConf]:
    if names is None:
        return list(allowed.values())
    if isinstance(names, str):  # one name passed bare would otherwise be split into letters
        names = [names]
    for name in names:
        if name not in allowed:
            raise NotMaintainedTableError(
                f"table {name!r} is not a registered state table or the run manifest, so "
                f"maintenance does not touch it; maintained tables: {', '.join(sorted(allowed))}")
    return [allowed[name] for name in dict.fromkeys(names)]


def _maintain_table(spark: "SparkSession", table: TableConf, retention: int, window: int, *,
                    optimize: bool, dry_run: bool, quiet: bool) -> TableMaintenance:
    if not is_delta_table(spark, table):
        say(quiet, f"  {table.name}: does not exist yet; skipped")
        return TableMaintenance(table.name, existed=False)
    from delta.tables import DeltaTable

    delta = DeltaTable.forPath(spark, str(table.location))
    files_before, properties = _detail(delta)
    plan = vacuum_plan(properties, retention, window)
    compacted = 0
    if optimize:
        say(quiet, f"  {table.name}: OPTIMIZE ({files_before} files)")
        metrics = delta.optimize().executeCompaction().select("metrics").first()
        compacted = int(metrics[0]["numFilesRemoved"]) if metrics is not None else 0
    used = plan.hours
    confs = {WINDOW_IGNORE_CONF: "false"}
    if plan.lift_check:
        confs[CHECK_CONF] = "false"
    if spark.conf.get(LISTING_CONF, None) is None:
        # VACUUM repartitions its listing into this many tasks: Spark's default of 10,000 tasks
        # costs a minute on two cores for a table of a few files. The cluster's parallelism is
        # enough for state tables; a value the session set itself is kept.
        confs[LISTING_CONF] = str(max(1, spark.sparkContext.defaultParallelism))
    verb = "would delete" if dry_run else "deleted"
    say(quiet, f"  {table.name}: VACUUM RETAIN {used} HOURS{' DRY RUN' if dry_run else ''}")
    with session_confs(spark, confs):
        if dry_run:
            deleted: int | None = spark.sql(
                f"VACUUM {delta_path_sql(table.location)} RETAIN {used} HOURS DRY RUN").count()
        else:
            version = _latest_version(delta)
            delta.vacuum(float(used))
            deleted = _vacuum_deleted(delta, version)
    files_after = files_before if dry_run else _detail(delta)[0]
    say(quiet, f"  {table.name}: {files_before} -> {files_after} files, VACUUM {verb} "
               f"{'?' if deleted is None else deleted} files")
    return TableMaintenance(table.name, True, files_before, files_after, optimize, compacted,
                            used, deleted, plan.warnings)


def _detail(delta: Any) -> tuple[int, dict[str, str]]:
    row = delta.detail().select("numFiles", "properties").first()
    return int(row["numFiles"] or 0), dict(row["properties"] or {})


def _hours_property(properties: Mapping[str, str], key: str, default: float,
                    warnings: list[str]) -> float:
    """The property in hours (the default when unset or unreadable, with a warning then)."""
    if key not in properties:
        return default
    hours = interval_hours(properties[key])
    if hours is None:
        warnings.append(f"cannot read {key} = {properties[key]!r}; assumed {default:g} hours")
        return default
    return hours


def _latest_version(delta: Any) -> int:
    return int(delta.history(1).select("version").first()[0])


def _vacuum_deleted(delta: Any, since: int) -> int | None:
    """``numDeletedFiles`` of the VACUUM END commit after version ``since`` (None if unlogged)."""
    rows = (delta.history(10).where(f"version > {int(since)} AND operation = 'VACUUM END'")
            .select("operationMetrics").collect())
    if not rows or "numDeletedFiles" not in (rows[0][0] or {}):
        return None
    return int(rows[0][0]["numDeletedFiles"])
