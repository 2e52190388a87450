"""A user's own script: a session built from ``SparkSession.builder``, the front door, a Delta
table, ``match_seq``, MATCH_RECOGNIZE and a ``VERSION AS OF`` read (tests/install).

It imports nothing of the checkout's tests and runs as ``python user_script.py OUT`` or
``spark-submit user_script.py OUT`` from an empty folder, in a virtual environment that has
only the wheel of the project; ``OUT`` receives the answers as JSON. The test runs the same
``QUERIES`` in the checkout's session and compares.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime, timedelta, timezone

QUERIES = {
    "match_seq": "SELECT key, match_id, event_ids FROM match_seq(pattern => 'PATTERN A; B WITHIN "
                 "30 MINUTES', key_col => 'key', events => TABLE(user_events))",
    "match_recognize": "SELECT * FROM user_events MATCH_RECOGNIZE (PARTITION BY key ORDER BY ts, "
                       "id MEASURES FIRST(A.id) AS a_id, LAST(B.id) AS b_id ONE ROW PER MATCH "
                       "PATTERN (A B+) DEFINE A AS type = 'A', B AS type = 'B')",
    "version_as_of": "SELECT count(*) AS n, max(id) AS last_id FROM delta.`{table}` VERSION AS OF 0",
}
"""The statements whose answers must equal the checkout's (``{table}``: the table's folder)."""


def rows(n: int, first_id: int) -> list[tuple[int, int, str, datetime]]:
    """``n`` events over three keys and the classes A, B, C, five minutes apart."""
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    return [(first_id + i, (first_id + i) % 3, "ABCAB"[(first_id + i) * 7 % 5],
             start + timedelta(minutes=5 * (first_id + i))) for i in range(n)]


def answers(spark, table: str) -> dict[str, list[list[str]]]:
    """Every query's rows as sorted lists of strings, over the events view of ``table``."""
    spark.read.format("delta").load(table).createOrReplaceTempView("user_events")
    out = {}
    for name, sql in QUERIES.items():
        found = spark.sql(sql.format(table=table)).collect()
        out[name] = sorted([[str(v) for v in row] for row in found])
    return out


def main(out: str) -> None:
    from pyspark.sql import SparkSession

    import sql_ext

    builder = SparkSession.builder.master("local[2]").appName("a user's script")
    if os.environ.get("CEP_TEST_IVY"):  # the jars this machine resolved already (no network)
        builder = builder.config("spark.jars.ivy", os.environ["CEP_TEST_IVY"])
    spark = sql_ext.configure(builder).getOrCreate()
    enabled = sql_ext.enable(spark)
    table = os.path.abspath("data/warehouse/synthetic_events")
    schema = "id BIGINT, key BIGINT, type STRING, ts TIMESTAMP"
    spark.createDataFrame(rows(40, 0), schema).write.format("delta").save(table)
    spark.createDataFrame(rows(20, 40), schema).write.format("delta").mode("append").save(table)
    result = {"functions": list(enabled.functions), "match_recognize": enabled.match_recognize,
              "answers": answers(spark, table)}
    with open(out, "w", encoding="utf-8") as sink:
        json.dump(result, sink)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
