"""The meta row read from its commit's record equals the row Spark reads, and a table changed
by any other commit is read through Spark (jobs/framework/meta_row.py)."""

from __future__ import annotations

import datetime as dt
import json
import math

import pytest

from delta_tables.settings import TableConf
from delta_tables.sketch_state import spark_schema
from jobs.framework.meta_row import KEY, encode_row, logged_row
from jobs.framework.txn import ensure_table, read_meta_row, save

COLUMNS = (("name", "STRING"), ("n", "BIGINT"), ("k", "INT"), ("x", "DOUBLE"),
           ("ok", "BOOLEAN"), ("at", "TIMESTAMP"), ("ks", "ARRAY<INT>"), ("none", "BIGINT"))
ROW = {"name": "it's \"quoted\" é", "n": -(2 ** 62), "k": 7, "x": 0.1 + 0.2, "ok": True,
       "at": dt.datetime(2026, 3, 29, 1, 30, 0, 123456), "ks": [3, None, 1], "none": None}


class TwoRows(Exception):
    pass


def _write(spark, table: TableConf, row: dict, version: int, record: bool = True) -> None:
    frame = spark.createDataFrame([tuple(row[n] for n, _ in COLUMNS)], spark_schema(COLUMNS))
    metadata = {"run_id": f"t:{version}"}
    if record:
        metadata[KEY] = encode_row(row, COLUMNS)
    save(frame, table, "overwrite", "meta-row-test", version, json.dumps(metadata))


@pytest.fixture
def table(spark, settings, tmp_path) -> TableConf:
    table = TableConf("meta_row_test", tmp_path / "meta_row_test")
    ensure_table(spark, table, COLUMNS, {})
    return table


def test_the_logged_row_equals_sparks_read_for_every_type(spark, table) -> None:
    assert logged_row(table, COLUMNS) is None  # created, never written: Spark says
    assert read_meta_row(spark, table, TwoRows, COLUMNS) is None
    _write(spark, table, ROW, 1)
    logged = logged_row(table, COLUMNS)
    assert logged == read_meta_row(spark, table, TwoRows) == ROW, (logged, ROW)
    assert list(logged) == [n for n, _ in COLUMNS]
    nan = {**ROW, "x": math.nan}
    _write(spark, table, nan, 2)
    assert math.isnan(logged_row(table, COLUMNS)["x"])


def test_any_other_commit_on_top_is_read_through_spark(spark, table) -> None:
    _write(spark, table, ROW, 1)
    spark.sql(f"UPDATE delta.`{table.location}` SET n = 5")
    assert logged_row(table, COLUMNS) is None
    assert read_meta_row(spark, table, TwoRows, COLUMNS)["n"] == 5
    _write(spark, table, ROW, 2, record=False)  # a writer that records nothing
    assert logged_row(table, COLUMNS) is None
    _write(spark, table, {**ROW, "k": 8}, 3)
    assert read_meta_row(spark, table, TwoRows, COLUMNS)["k"] == 8
    # A reader that expects other columns (a newer job) does not trust the record either.
    assert logged_row(table, COLUMNS[:-1]) is None
    assert logged_row(table, (*COLUMNS[:-1], ("none", "STRING"))) is None
    spark.sql(f"INSERT INTO delta.`{table.location}` SELECT * FROM delta.`{table.location}`")
    with pytest.raises(TwoRows):
        read_meta_row(spark, table, TwoRows, COLUMNS)
