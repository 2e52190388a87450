"""Generator job: seeded check transactions with kiting rings into Delta (``python -m jobs
generate-checks``), the data of trend query Q1.

:func:`cep.datasets.checks.generate_checks` draws the checks; they are staged as one Parquet file and
written in ONE Delta commit with change data feed enabled. The spec and the generator version
are stored as table properties (``cep.checks.*``): rerunning the same spec writes nothing,
``force`` rewrites in one commit, and a new spec replaces the table in one commit (older
versions stay readable with time travel). The table name is validated as an identifier and
the location resolves under the warehouse.

Columns: ``id BIGINT, ts TIMESTAMP, bank STRING, src BIGINT, dest BIGINT, amount DOUBLE,
type STRING, ring BIGINT`` (``ring`` is the planted ring's number, NULL for ordinary checks:
the ground truth; docs/data.md).

Example:
    >>> from cep.datasets.checks import CheckSpec
    >>> check_properties(CheckSpec(n_checks=1000, seed=7))["cep.checks.n_checks"]
    '1000'
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

from cep.datasets.checks import CheckSpec, Checks, generate_checks
from delta_tables.settings import Settings, TableConf, check_identifier
from jobs.loaders.staging import replace_table, version_if_holding
from jobs.loaders.load_logs import LoadResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PREFIX = "cep.checks."
GENERATOR_VERSION = "1"
TABLE = "checks"

# The table of the demo and of the docs' examples (tests/conftest.py writes the same one):
# 20,000 checks of 2,000 accounts at 5 banks over 30 days from 2024-01-01, 20 rings.
DEMO_SPEC = CheckSpec(n_checks=20_000, n_accounts=2_000, n_banks=5, ring_rate=0.001, seed=42)


def check_properties(spec: CheckSpec) -> dict[str, str]:
    """The table properties that identify the checks ``spec`` generates."""
    props = {PREFIX + name: repr(value) if isinstance(value, float) else str(value)
             for name, value in spec.as_dict().items()}
    props[PREFIX + "generator_version"] = GENERATOR_VERSION
    return props


def checks_to_arrow(checks: Checks) -> Any:
    """A pyarrow Table ``(id, ts, bank, src, dest, amount, type, ring)`` of ``checks``."""
    import pyarrow as pa

    ring = pa.array(checks.ring, pa.int64(), mask=checks.ring < 0)
    return pa.table({
        "id": pa.array(checks.id, pa.int64()),
        "ts": pa.array(checks.ts_us, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        "bank": pa.array(checks.bank, pa.string()),
        "src": pa.array(checks.src, pa.int64()),
        "dest": pa.array(checks.dest, pa.int64()),
        "amount": pa.array(checks.amount, pa.float64()),
        "type": pa.array(checks.type, pa.string()),
        "ring": ring,
    })


def checks_table(settings: Settings, name: str) -> TableConf:
    """The configured table ``name``, or a new one under the warehouse if it is not configured."""
    check_identifier(name, what="table name")
    if name in settings.tables:
        return settings.tables[name]
    return TableConf(name, settings.location_under_warehouse(name), None, "generated checks")


def write_checks(spark: "SparkSession", settings: Settings, spec: CheckSpec = DEMO_SPEC,
                 table_name: str = TABLE, *, force: bool = False,
                 quiet: bool = False) -> LoadResult:
    """Generate ``spec`` into ``table_name`` in one Delta commit; skip if already there.

    Args:
        spark: a session from :func:`jobs.session.build_session`.
        settings: resolved settings (the warehouse root).
        spec: the generator's parameters (default :data:`DEMO_SPEC`).
        table_name: a plain SQL identifier; the table lives at ``<warehouse>/<name>`` unless
            ``conf/tables.toml`` configures it.
        force: rewrite even if the table already holds this spec.
        quiet: print nothing on stderr.

    Returns:
        A :class:`jobs.loaders.load_logs.LoadResult` (``events`` is the number of checks).

    Raises:
        ConfigError: ``table_name`` is not an identifier.
    """
    started = time.monotonic()
    table = checks_table(settings, table_name)
    props = check_properties(spec)
    version = None if force else version_if_holding(spark, table, props)
    if version is not None:
        if not quiet:
            print(f"{table_name}: already holds these checks at version {version}; nothing "
                  "written", file=sys.stderr, flush=True)
        return LoadResult(table_name, version, spec.n_checks, False, time.monotonic() - started)
    checks = generate_checks(spec)
    version = replace_table(spark, settings, table, checks_to_arrow(checks), props)
    seconds = time.monotonic() - started
    if not quiet:
        print(f"{table_name}: wrote {len(checks):,} checks ({checks.n_rings} planted rings) as "
              f"version {version} in {seconds:.1f}s", file=sys.stderr, flush=True)
    return LoadResult(table_name, version, len(checks), True, seconds)
