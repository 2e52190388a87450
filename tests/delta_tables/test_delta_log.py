"""The Delta log read from its files answers what Spark and Delta answer (delta_tables.delta_log)."""

from __future__ import annotations

import datetime as _dt
import json
import os
import time

from delta_tables.delta_log import commit_records, commit_timestamp, latest_metadata, log_version
from delta_tables.settings import TableConf


def _history(spark, table: TableConf) -> dict[int, _dt.datetime]:
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    epoch = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
    rows = (DeltaTable.forPath(spark, str(table.location)).history()
            .select("version", F.unix_micros("timestamp")).collect())
    return {int(v): epoch + _dt.timedelta(microseconds=int(us)) for v, us in rows}


def _version_at(spark, table: TableConf, when: _dt.datetime) -> int:
    """The version ``TIMESTAMP AS OF when`` reads (its one row says which commit wrote it)."""
    frame = (spark.read.format("delta").option("timestampAsOf", when.isoformat())
             .load(str(table.location)))
    return int(frame.agg({"v": "max"}).first()[0])


def test_versions_ids_properties_and_timestamps_agree_with_spark(spark, settings) -> None:
    from delta.tables import DeltaTable

    table = TableConf("log_t", settings.location_under_warehouse("log_t"))
    assert log_version(table) is None and latest_metadata(table) is None
    assert commit_timestamp(table, 0) is None and commit_records(table, None) == []
    for v in range(4):
        writer = (spark.range(1).selectExpr(f"{v} AS v").write.format("delta")
                  .mode("overwrite" if v == 0 else "append")
                  .option("userMetadata", json.dumps({"step": v})))
        writer.save(str(table.location))
        if v == 0:
            spark.sql(f"ALTER TABLE delta.`{table.location}` SET TBLPROPERTIES "
                      "('cep.test' = 'yes')")
    # Version 1 is the ALTER: 5 commits in all, and the newest metaData action is the ALTER's.
    assert log_version(table) == 4
    detail = DeltaTable.forPath(spark, str(table.location)).detail().first()
    meta = latest_metadata(table)
    assert meta is not None and meta["id"] == detail["id"]
    assert meta["configuration"] == dict(detail["properties"]) == {"cep.test": "yes"}
    assert [r.get("step") for r in commit_records(table, 2)] == [2, 3]

    # The commit files' times out of order (a clock set back): Delta counts a commit whose
    # file is not newer than the previous one's as one millisecond after it.
    log = table.location / "_delta_log"
    base = (int(time.time()) - 3_600) * 1000  # time travel refuses older than a week
    for version, millis in [(0, base), (1, base + 5_000), (2, base + 3_000), (3, base + 5_000),
                            (4, base + 9_000)]:
        seconds = millis / 1000
        os.utime(log / f"{version:020d}.json", (seconds, seconds))
    history = _history(spark, table)
    for version in range(5):
        mine = commit_timestamp(table, version)
        assert mine == history[version], (version, mine, history[version])
    assert commit_timestamp(table, 2) == commit_timestamp(table, 1) + _dt.timedelta(milliseconds=1)
    assert commit_timestamp(table, 5) is None
    # Time travel to each of them reads that version's rows.
    for version, step in [(0, 0), (2, 1), (3, 2), (4, 3)]:
        assert _version_at(spark, table, commit_timestamp(table, version)) == step, version
