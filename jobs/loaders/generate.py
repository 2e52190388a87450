"""Generator job: a seeded synthetic event stream into a Delta table (``python -m jobs generate``).

Batches from :func:`cep.datasets.synthetic.generate_batches` are staged as Parquet files and written in
one Delta commit, so memory stays bounded at 10^7 events and a reader never sees half a
table. The spec is stored as table properties; rerunning with the same spec writes nothing.

Example:
    >>> from cep.errors import InputDataError
from cep.datasets.synthetic import SyntheticSpec
    >>> spec = SyntheticSpec(n_events=1000, n_keys=10, n_types=5, seed=7)
    >>> spec_properties(spec)["cep.synthetic.n_events"]
    '1000'
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from cep.errors import InputDataError
from cep.datasets.synthetic import EventColumns, SyntheticSpec, generate_batches
from delta_tables.settings import Settings, TableConf, check_identifier
from jobs.loaders.load_logs import LoadResult
from jobs.loaders.staging import replace_table, version_if_holding

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PREFIX = "cep.synthetic."


def spec_properties(spec: SyntheticSpec) -> dict[str, str]:
    """The table properties that identify the stream ``spec`` generates."""
    return {PREFIX + f.name: repr(getattr(spec, f.name)) if isinstance(getattr(spec, f.name), float)
            else str(getattr(spec, f.name)) for f in dataclasses.fields(spec)}


def columns_to_arrow(batch: EventColumns) -> Any:
    """A pyarrow Table ``(id, key, type, ts, v0, v1, ...)`` of one generated batch."""
    import pyarrow as pa

    names = pa.array(batch.type_names, pa.string())
    arrays = {
        "id": pa.array(batch.id, pa.int64()),
        "key": pa.array(batch.key, pa.int64()),
        # Dictionary-decode in Arrow (vectorised) instead of building Python strings.
        "type": names.take(pa.array(batch.type_code.astype("int32"))),
        "ts": pa.array(batch.ts_us, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
    }
    for name, values in batch.attrs.items():
        arrays[name] = pa.array(values, pa.float64())
    return pa.table(arrays)


def synthetic_table(settings: Settings, name: str) -> TableConf:
    """The configured table ``name``, or a new one under the warehouse if it is not configured."""
    check_identifier(name, what="table name")
    if name in settings.tables:
        return settings.tables[name]
    return TableConf(name, settings.location_under_warehouse(name), None, "synthetic events")


def write_synthetic(spark: "SparkSession", settings: Settings, spec: SyntheticSpec,
                    table_name: str = "synthetic_events", *, batch_size: int = 1_000_000,
                    quiet: bool = False) -> LoadResult:
    """Generate ``spec`` into ``table_name`` in one Delta commit; skip if already there."""
    started = time.monotonic()
    if spec.n_events < 1:
        raise InputDataError(f"n_events: expected at least 1 event to write, found {spec.n_events}")
    table = synthetic_table(settings, table_name)
    props = spec_properties(spec)
    version = version_if_holding(spark, table, props)
    if version is not None:
        if not quiet:
            print(f"{table_name}: already holds this stream at version {version}; nothing written",
                  file=sys.stderr, flush=True)
        return LoadResult(table_name, version, spec.n_events, False, time.monotonic() - started)

    def batches() -> Iterator[Any]:
        done = 0
        for batch in generate_batches(spec, batch_size):
            yield columns_to_arrow(batch)
            done += len(batch)
            if not quiet:
                print(f"{table_name}: generated {done:,} / {spec.n_events:,} events",
                      file=sys.stderr, flush=True)

    version = replace_table(spark, settings, table, batches(), props)
    return LoadResult(table_name, version, spec.n_events, True, time.monotonic() - started)
