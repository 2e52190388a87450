"""The child process that records the class archive: one short, typical Spark session.

:func:`jobs.session.class_archive.build_archive` runs ``python -m jobs.session.class_archive_record FOLDER``
with ``CEP_CLASS_ARCHIVE_OUT`` set; the session's driver JVM then records the classes it
loaded when it exits (:func:`jobs.session.class_archive.java_options`). A module of its own because it
builds a session, and the session imports :mod:`jobs.session.class_archive`.

Example:
    >>> from jobs.session.class_archive import RECORD_ENV   # set for this child only
    >>> RECORD_ENV
    'CEP_CLASS_ARCHIVE_OUT'
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["record"]


def record(folder: Path) -> None:
    """The recording child's session: the kinds of work every job, server and query does."""
    from delta_tables.settings import load_settings
    from jobs.session import build_session
    from sql_ext import register_all

    settings = load_settings(overrides={"warehouse": str(folder / "warehouse"),
                                        "show_progress": False})
    spark = build_session(settings, register=False)
    register_all(spark)
    table = str(folder / "warehouse" / "events")
    rows = "SELECT id, concat('k', id % 3) AS k, IF(id % 2 = 0, 'A', 'B') AS type, " \
           "timestamp_seconds(id * 60) AS ts FROM range(40)"
    spark.sql(rows).write.format("delta").save(table)
    spark.sql(rows).write.format("delta").mode("append").save(table)
    from delta.tables import DeltaTable

    (DeltaTable.forPath(spark, table).alias("t").merge(spark.sql(rows).alias("s"), "t.id = s.id")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    spark.read.format("delta").option("versionAsOf", 1).load(table).groupBy("k").count().collect()
    spark.read.format("delta").option("versionAsOf", 0).load(table) \
        .createOrReplaceTempView("events")
    spark.sql("SELECT * FROM match_seq('PATTERN A; B', 'k', TABLE(events))").collect()
    gateway = spark.sparkContext._gateway
    spark.stop()
    # The JVM records the archive when it exits, which it does when its stdin closes.
    proc = getattr(gateway, "proc", None)
    if proc is not None:
        proc.stdin.close()
        proc.wait(timeout=600)


if __name__ == "__main__":
    record(Path(sys.argv[1]))
