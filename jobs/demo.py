"""The README demo: real BPI logs into the local Delta warehouse, SQL over them, time travel.

``make demo`` runs :func:`run_demo`. Each step prints what it does and the result; the demo is
rerunnable (loads are skipped when the tables already hold the same files).

Example:
    >>> from jobs.demo import run_demo   # doctest: +SKIP
    >>> run_demo()                       # doctest: +SKIP
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from cep.synthetic import SyntheticSpec
from delta_tables.catalog import current_version, read_table
from delta_tables.settings import Settings, load_settings
from jobs.generate import write_synthetic
from jobs.load_logs import load_log
from jobs.session import build_session
from sql_ext import register_all

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Offers created before this instant arrive in the first commit of the demo's feed table.
FEED_CUTOFF = "2016-07-01 00:00:00"

QUERIES: tuple[tuple[str, str], ...] = (
    ("Events per table",
     "SELECT 'bpi2017_offers' AS log, count(*) AS events, count(DISTINCT case_id) AS cases "
     "FROM bpi2017_offers UNION ALL "
     "SELECT 'bpi2017_applications', count(*), count(DISTINCT case_id) FROM bpi2017_applications "
     "UNION ALL SELECT 'bpi2012', count(*), count(DISTINCT case_id) FROM bpi2012"),
    ("Offer activities (BPI 2017)",
     "SELECT type, count(*) AS events, min(ts) AS first_seen, max(ts) AS last_seen "
     "FROM bpi2017_offers GROUP BY type ORDER BY events DESC"),
    ("Offers accepted after being sent, as an analyst writes it today (window functions)",
     "WITH ordered AS (SELECT case_id, type, ts, "
     "lead(type) OVER (PARTITION BY case_id ORDER BY ts, id) AS next_type, "
     "lead(ts) OVER (PARTITION BY case_id ORDER BY ts, id) AS next_ts FROM bpi2017_offers) "
     "SELECT count(*) AS offers, round(percentile(datediff(next_ts, ts), 0.5), 1) AS median_days "
     "FROM ordered WHERE type = 'O_Returned' AND next_type = 'O_Accepted'"),
)

MATCH_QUERIES: tuple[tuple[str, str], ...] = (
    ("match_seq: offers created, sent, then accepted within 30 days with no cancellation between",
     "SELECT case_id, match_id, start_ts, end_ts, variables FROM match_seq(\n"
     "  pattern => 'PATTERN created; sent; NOT(cancelled); accepted\n"
     "    DEFINE created AS type = ''O_Create Offer'', sent AS type LIKE ''O_Sent%'',\n"
     "           cancelled AS type = ''O_Cancelled'', accepted AS type = ''O_Accepted''\n"
     "    WITHIN 30 DAYS',\n"
     "  key_col => 'case_id', events => TABLE(bpi2017_offers))\n"
     "ORDER BY start_ts LIMIT 10"),
    ("match_seq: how many of those per month (the same pattern, aggregated in SQL)",
     "SELECT date_trunc('MONTH', start_ts) AS month, count(*) AS accepted_without_cancel,\n"
     "       round(avg(unix_seconds(end_ts) - unix_seconds(start_ts)) / 86400, 1) AS avg_days\n"
     "FROM match_seq(\n"
     "  pattern => 'PATTERN created; sent; NOT(cancelled); accepted\n"
     "    DEFINE created AS type = ''O_Create Offer'', sent AS type LIKE ''O_Sent%'',\n"
     "           cancelled AS type = ''O_Cancelled'', accepted AS type = ''O_Accepted''\n"
     "    WITHIN 30 DAYS',\n"
     "  key_col => 'case_id', events => TABLE(bpi2017_offers))\n"
     "GROUP BY 1 ORDER BY 1"),
    ("match_seq Kleene: applications incomplete at least twice before pending",
     "SELECT n_events - 2 AS incomplete_rounds, count(*) AS applications FROM match_seq(\n"
     "  pattern => 'PATTERN created; incomplete{2,}; pending\n"
     "    DEFINE created AS type = ''A_Create Application'',\n"
     "           incomplete AS type = ''A_Incomplete'', pending AS type = ''A_Pending''\n"
     "    WITHIN 60 DAYS',\n"
     "  key_col => 'case_id', events => TABLE(bpi2017_applications))\n"
     "GROUP BY 1 ORDER BY 1"),
)


def _banner(title: str) -> None:
    print(f"\n=== {title} ===", flush=True)


def _feed_time_travel(spark: "SparkSession", settings: Settings) -> None:
    """Write the offer log into ``offer_feed`` in two commits and read both versions back."""
    feed = settings.table("offer_feed")
    offers = read_table(spark, settings.table("bpi2017_offers"))
    early = offers.where(offers.ts < FEED_CUTOFF)
    late = offers.where(offers.ts >= FEED_CUTOFF)
    (early.writeTo(feed.name).using("delta").tableProperty("location", str(feed.location))
     .tableProperty("delta.enableChangeDataFeed", "true").createOrReplace())
    before = int(current_version(spark, feed) or 0)
    late.write.format("delta").mode("append").save(str(feed.location))
    after = int(current_version(spark, feed) or 0)
    print(f"offer_feed: version {before} holds offers before {FEED_CUTOFF}; "
          f"version {after} after the append holds them all.")
    # Versions are integers we just read from the Delta log, so formatting them is safe.
    query = (f"SELECT 'VERSION AS OF {before}' AS read, count(*) AS events, max(ts) AS latest "
             f"FROM offer_feed VERSION AS OF {before} UNION ALL "
             f"SELECT 'current (version {after})', count(*), max(ts) FROM offer_feed")
    print(query)
    spark.sql(query).show(truncate=False)
    spark.sql("DESCRIBE HISTORY offer_feed").select("version", "operation", "operationMetrics") \
        .orderBy("version", ascending=False).show(3, truncate=60)


def run_demo(settings: Settings | None = None) -> None:
    """Run every demo step against the configured warehouse, printing results."""
    started = time.monotonic()
    settings = settings or load_settings()
    _banner("Session")
    spark = build_session(settings)
    print(f"Spark {spark.version}, master {settings.master}, Delta jars {settings.delta_package}, "
          f"warehouse {settings.warehouse_dir}")
    print("registered SQL functions:", ", ".join(register_all(spark)))

    _banner("Load the real event logs into Delta (skipped when already loaded)")
    for name in ("bpi2017_offers", "bpi2017_applications", "bpi2012"):
        result = load_log(spark, settings, name)
        print(f"{name}: {result.events:,} events, Delta version {result.version}, "
              f"{'written' if result.written else 'up to date'}")

    for title, sql in QUERIES:
        _banner(title)
        print(sql)
        spark.sql(sql).show(20, truncate=False)

    for title, sql in MATCH_QUERIES:
        _banner(title)
        print(sql)
        spark.sql(sql).show(10, truncate=False)

    _banner("Time travel: an append, then VERSION AS OF the version before it")
    _feed_time_travel(spark, settings)

    _banner("Synthetic stream: 100,000 events, 1,000 keys, 50 Zipf-distributed types")
    spec = SyntheticSpec(n_events=100_000, n_keys=1000, n_types=50, seed=42)
    result = write_synthetic(spark, settings, spec, quiet=True)
    print(f"synthetic_events: {result.events:,} events at version {result.version}")
    spark.sql("SELECT type, count(*) AS events FROM synthetic_events GROUP BY type "
              "ORDER BY events DESC LIMIT 5").show()

    _banner("CEP SQL functions")
    spark.sql("SELECT name, status, signature FROM cep_functions()").show(truncate=False)
    print(f"demo finished in {time.monotonic() - started:.0f}s")
