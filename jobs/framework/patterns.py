"""Standing patterns registered in the patterns table: read, checked and given their generation.

``run-all`` calls :func:`read_patterns` at the start of each run (docs/standing.md, "The patterns
table"). For each row of ``cep_patterns`` (as of its current version):

1. **Checked** as a ``conf/matches.toml`` entry is, before anything runs: a plain name that
   no TOML entry and no other row uses and that does not end like a later generation
   (``_g2``), a source under the warehouse, the pattern compiled (its error keeps its code,
   line, column and caret). A row that fails is reported as a failed job ``match/<name>``;
   the other rows still run.
2. **Disabled** rows (``enabled = false``, or a deleted row) are not run; their tables stay.
3. **Generation.** An enabled row whose fingerprint (:func:`delta_tables.pattern_table
   .fingerprint`) differs from its last generation's starts a new one, appended to
   ``cep_patterns_generations`` as one idempotent write (``txnVersion`` = the patterns
   table's version, ``txnAppId`` naming the patterns table's Delta id, so a table created
   again starts afresh). Generation ``n`` runs as the job ``match/<name>_g<n>`` with tables of
   its own: old and new outputs are never mixed.

Example:
    >>> from delta_tables.settings import load_settings
    >>> read_patterns(spark, load_settings())                                   # doctest: +SKIP
    [TablePattern(name='slow_offers', enabled=True, generation=1, ...)]
"""

from __future__ import annotations

import datetime as _dt
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cep.errors import CepError, ConfigError
from delta_tables.catalog import is_delta_table, read_table, register_table
from delta_tables.delta_log import latest_metadata, log_version
from delta_tables.match_state import MatchConf
from delta_tables.pattern_table import (GENERATION_SUFFIX, GENERATIONS, PATTERNS, entry,
                                        fingerprint, generations_table, job_name, patterns_table)
from delta_tables.settings import Settings, TableConf, check_identifier
from delta_tables.sketch_state import spark_schema
from jobs.framework.registry import StateJob, job_from_mapping, registered_names
from jobs.framework.txn import ensure_table, save

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["TablePattern", "read_patterns", "create_patterns_table", "find_table_job"]

TABLE_KIND = "cep-patterns"
"""The ``cep.table`` property of the patterns table and of its generations table."""


@dataclass(frozen=True)
class TablePattern:
    """One row of ``cep_patterns`` as ``run-all`` sees it.

    Attributes:
        name: The row's name.
        enabled: False when the row says ``enabled = false``.
        generation: Its current generation (None for a disabled or a bad row).
        job: The job that runs it (None for a disabled or a bad row).
        error: Why the row cannot run (None when it can).
    """

    name: str
    enabled: bool
    generation: int | None = None
    job: StateJob | None = None
    error: CepError | None = None

    @property
    def key(self) -> str:
        """``match/<job name>``: how the manifest and ``run-all`` name it."""
        return self.job.key if self.job is not None else f"match/{self.name}"

    def line(self) -> str:
        """One line for ``python -m jobs patterns``."""
        if self.error is not None:
            return f"{self.name}: ERROR {self.error}"
        if not self.enabled:
            return f"{self.name}: disabled"
        return f"{self.name}: generation {self.generation}, job {self.key}"


def create_patterns_table(spark: "SparkSession", settings: Settings) -> TableConf:
    """Create ``cep_patterns`` (empty) unless it exists, and register it by name."""
    table = patterns_table(settings)
    ensure_table(spark, table, PATTERNS, {"cep.table": TABLE_KIND})
    return table


def read_patterns(spark: "SparkSession", settings: Settings) -> list[TablePattern]:
    """Every row of ``cep_patterns`` checked and given its generation (in name order); [] when
    the table does not exist. Records the new generations it finds."""
    table = patterns_table(settings)
    if not is_delta_table(spark, table):
        return []
    register_table(spark, table)
    version = int(log_version(table) or 0)
    rows = [r.asDict() for r in read_table(spark, table, version=version).collect()]
    checked = _check(settings, rows)
    fingerprints = {name: fingerprint(fields) for name, (fields, enabled) in checked.items()
                    if enabled and isinstance(fields, dict)}
    latest = _latest_generations(spark, settings)
    new = [(name, latest.get(name, (0, ""))[0] + 1, fp) for name, fp in sorted(fingerprints.items())
           if latest.get(name, (0, ""))[1] != fp]
    if new:
        _record(spark, settings, table, version, new, {n: checked[n][0] for n, _, _ in new})
        latest = _latest_generations(spark, settings)
    found = []
    for name, (fields, enabled) in sorted(checked.items()):
        if isinstance(fields, CepError):
            found.append(TablePattern(name, enabled, error=fields))
        elif not enabled:
            found.append(TablePattern(name, False))
        else:
            if name not in latest:
                found.append(TablePattern(name, True, error=ConfigError(
                    f"cep_patterns row {name!r}: its generation was not recorded in "
                    f"{generations_table(settings).name}; run again")))
                continue
            generation = latest[name][0]
            job = job_from_mapping(settings, "match", job_name(name, generation), fields)
            found.append(TablePattern(name, True, generation, job))
    return found


def find_table_job(spark: "SparkSession", settings: Settings, name: str) -> StateJob | None:
    """The job of the enabled row ``name`` of ``cep_patterns`` (its current generation), or of
    the generation whose job is called ``name``; None when no row has it.

    Raises:
        ConfigError: the row is there but cannot run (its own error).
    """
    for found in read_patterns(spark, settings):
        if found.error is not None and found.name == name:
            raise found.error
        if found.job is not None and name in (found.name, found.job.name):
            return found.job
    return None


def _check(settings: Settings, rows: list[dict[str, Any]]
           ) -> dict[str, tuple[dict[str, Any] | CepError, bool]]:
    """Each row's TOML entry (or why it cannot run) and whether it is enabled, by name."""
    toml = set(registered_names(settings, "match"))
    names = Counter(str(r.get("name")) for r in rows)
    checked: dict[str, tuple[dict[str, Any] | CepError, bool]] = {}
    for row in rows:
        name, enabled = str(row.get("name")), row.get("enabled") is not False
        fields: dict[str, Any] | CepError = entry(row)
        try:
            check_identifier(row.get("name"), what="standing pattern name")
            if names[name] > 1:
                raise ConfigError(f"{names[name]} rows of cep_patterns are named {name!r}; "
                                  "a name stands for one pattern")
            if name in toml:
                raise ConfigError(f"{name!r} is also a standing pattern of conf/matches.toml; "
                                  "rename one of them")
            if GENERATION_SUFFIX.search(name):
                raise ConfigError(f"{name!r} ends like a later generation's job name "
                                  "(<name>_g<n>); choose another name")
            if enabled:
                MatchConf.from_mapping(settings, name, fields)  # the pattern compiled now
        except CepError as err:
            fields = ConfigError(f"cep_patterns row {name!r}: {err.message}")
        checked[name] = (fields, enabled)
    return checked


def _latest_generations(spark: "SparkSession", settings: Settings) -> dict[str, tuple[int, str]]:
    """``name -> (generation, fingerprint)`` of each pattern's newest generation."""
    table = generations_table(settings)
    if not is_delta_table(spark, table):
        return {}
    latest: dict[str, tuple[int, str]] = {}
    for row in read_table(spark, table).select("name", "generation", "fingerprint").collect():
        if row[0] not in latest or int(row[1]) > latest[row[0]][0]:
            latest[row[0]] = (int(row[1]), str(row[2]))
    return latest


def _record(spark: "SparkSession", settings: Settings, patterns: TableConf, version: int,
            new: list[tuple[str, int, str]], fields: dict[str, Any]) -> None:
    """Append the new generations as one idempotent write."""
    table = generations_table(settings)
    ensure_table(spark, table, GENERATIONS, {"cep.table": TABLE_KIND})
    now = _dt.datetime.now(_dt.timezone.utc)
    rows = [(name, generation, job_name(name, generation), fp, fields[name]["source"],
             fields[name]["pattern"], fields[name].get("policy"), version, now)
            for name, generation, fp in new]
    table_id = (latest_metadata(patterns) or {}).get("id", "unknown")
    save(spark.createDataFrame(rows, spark_schema(GENERATIONS)), table, "append",
         f"cep-patterns-generations-{table_id}", version)
