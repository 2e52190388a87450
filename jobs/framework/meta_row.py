"""A job's meta row, carried in the ``userMetadata`` of the commit that wrote it.

Every run reads its job's one-row meta table at least twice (what is done, then again after
a crash check); through Spark each read is a snapshot plus a scan, 0.5 s on 2 cores (34 reads,
18 s of tests/jobs/test_match_job.py). The framework overwrites the meta table with one row
in one commit, so that commit can say what it wrote: its record gets a ``meta_row`` entry
holding the row in Spark's internal form (a timestamp as microseconds, an array as a list),
the column names and their SQL types. The next read takes the row from the newest commit's
record, with no Spark job, when:

- the newest commit of the meta table carries a ``meta_row`` of this format (any other
  commit on top of it, a maintenance or a hand-made ``UPDATE``, does not, so the table is
  read through Spark then);
- its columns and types are those the job expects, and the table's schema has exactly those
  columns (Delta's newest ``metaData`` action).

Delta commits are atomic: a commit whose record holds the row wrote that row and nothing else
(``overwrite`` of a one-row frame). The record is JSON decoded into the row by pyspark's own
types (``StructType.fromInternal``, what ``collect`` uses), so both reads give equal dicts;
nothing is unpickled.

Example:
    >>> import datetime as dt
    >>> columns = (("name", "STRING"), ("n", "BIGINT"), ("at", "TIMESTAMP"), ("ks", "ARRAY<INT>"))
    >>> row = {"name": "j", "n": 3, "at": dt.datetime(2026, 1, 2, 3, 4, 5), "ks": [1, 2]}
    >>> record = encode_row(row, columns)
    >>> record["columns"], record["types"][2]
    (['name', 'n', 'at', 'ks'], 'TIMESTAMP')
    >>> decode_row(record, columns) == row
    True
    >>> decode_row({**record, "format": 2}, columns) is None
    True
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from delta_tables.delta_log import commit_records, latest_metadata, log_version
from delta_tables.settings import TableConf
from delta_tables.sketch_state import spark_schema

__all__ = ["KEY", "FORMAT", "encode_row", "decode_row", "logged_row"]

KEY = "meta_row"
"""The entry of the commit record that holds the row."""
FORMAT = 1
"""The version of the entry's layout; a reader that does not know it asks Spark."""


def encode_row(row: Mapping[str, Any], columns: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """The ``meta_row`` entry of ``row`` (a dict with every name of ``columns``)."""
    schema = spark_schema(columns)
    values = schema.toInternal(tuple(row[name] for name, _ in columns))
    return {"format": FORMAT, "columns": [name for name, _ in columns],
            "types": [kind for _, kind in columns], "values": list(values)}


def decode_row(entry: Any, columns: Sequence[tuple[str, str]]) -> dict[str, Any] | None:
    """The row of a ``meta_row`` entry, or None when it is not one of ``columns``."""
    if not isinstance(entry, dict) or entry.get("format") != FORMAT:
        return None
    names, kinds = [n for n, _ in columns], [k for _, k in columns]
    values = entry.get("values")
    if entry.get("columns") != names or entry.get("types") != kinds \
            or not isinstance(values, list) or len(values) != len(names):
        return None
    try:
        return spark_schema(columns).fromInternal(tuple(values)).asDict(recursive=True)
    except (TypeError, ValueError, OverflowError):
        return None


def logged_row(table: TableConf, columns: Sequence[tuple[str, str]]) -> dict[str, Any] | None:
    """The row ``table``'s newest commit wrote, or None when its log cannot say (ask Spark)."""
    version = log_version(table)
    if version is None:
        return None
    records = commit_records(table, version - 1)
    if not records:
        return None
    found = decode_row(records[-1].get(KEY), columns)
    if found is None or _schema_names(table) != list(found):
        return None
    return found


def _schema_names(table: TableConf) -> list[str] | None:
    """The column names of ``table``'s schema in its Delta log (None: not in the commits)."""
    metadata = latest_metadata(table)
    try:
        schema = json.loads(metadata["schemaString"]) if metadata else None
        return [field["name"] for field in schema["fields"]] if schema else None
    except (KeyError, TypeError, ValueError):
        return None
