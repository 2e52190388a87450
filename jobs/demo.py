"""The README demo: real BPI logs into the local Delta warehouse, SQL over them, time travel,
sketches, and the trend queries Q1 (generated checks) and Q2 (real daily stock prices).

``make demo`` runs :func:`run_demo`. Each step prints what it does and the result; the demo is
rerunnable (loads are skipped when the tables already hold the same files).

Example:
    >>> from jobs.demo import run_demo   # doctest: +SKIP
    >>> run_demo()                       # doctest: +SKIP
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from cep.datasets.synthetic import SyntheticSpec
from delta_tables.catalog import current_version, read_table, table_properties
from delta_tables.settings import Settings, load_settings
from jobs.loaders.checks import DEMO_SPEC, write_checks
from jobs.loaders.generate import write_synthetic
from jobs.loaders.load_logs import load_log
from jobs.session import build_session
from jobs.loaders.sensors import load_sensors
from jobs.loaders.stocks import load_stocks
from jobs.loaders.temperatures import load_temperatures
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

MINING_QUERIES: tuple[tuple[str, str], ...] = (
    ("variants: the most common paths of an offer (BPI 2017)",
     "SELECT rank, array_join(variant, ' > ') AS path, cases, round(share, 3) AS share,\n"
     "       round(median_duration / 86400, 1) AS median_days\n"
     "FROM variants('case_id', TABLE(bpi2017_offers)) WHERE rank <= 5 ORDER BY rank"),
    ("follows: the directly-follows graph of the offers, most frequent pairs first",
     "SELECT source, target, n, cases, round(median_duration / 86400, 2) AS median_days\n"
     "FROM follows('case_id', TABLE(bpi2017_offers)) ORDER BY n DESC LIMIT 8"),
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
    ("MATCH_RECOGNIZE: offers created, sent, then accepted; how many days it took",
     "SELECT count(*) AS offers, round(avg(days), 1) AS avg_days, max(days) AS max_days\n"
     "FROM bpi2017_offers MATCH_RECOGNIZE (\n"
     "  PARTITION BY case_id ORDER BY ts, id\n"
     "  MEASURES datediff(LAST(A.ts), FIRST(C.ts)) AS days\n"
     "  PATTERN (C X*? S+ X*? A)\n"
     "  DEFINE C AS type = 'O_Create Offer', S AS type LIKE 'O_Sent%',\n"
     "         A AS type = 'O_Accepted')"),
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


def _mining(spark: "SparkSession", settings: Settings) -> None:
    """Variants and the directly-follows graph of the offer log, as tables and as pictures."""
    from viz import plot_follows, plot_variants

    for title, sql in MINING_QUERIES:
        _banner(title)
        print(sql)
        spark.sql(sql).show(10, truncate=False)
    folder = settings.data_dir / "demo"
    folder.mkdir(parents=True, exist_ok=True)
    graph = spark.sql("SELECT * FROM follows('case_id', TABLE(bpi2017_offers))")
    cases = spark.sql("SELECT first_type, last_type FROM case_stats('case_id', "
                      "TABLE(bpi2017_offers))")
    plot_follows(graph, case_stats=cases).savefig(folder / "offers_process_map.png", dpi=120)
    plot_variants(spark.sql("SELECT * FROM variants('case_id', TABLE(bpi2017_offers))")
                  ).savefig(folder / "offers_variants.png", dpi=120)
    print(f"pictures: {folder / 'offers_process_map.png'}, {folder / 'offers_variants.png'}")


def write_offer_feed(spark: "SparkSession", settings: Settings) -> tuple[int, int]:
    """Write the offer log into ``offer_feed`` in two commits (once): the offers before
    :data:`FEED_CUTOFF`, then the rest; returns the two versions.

    A feed an earlier run wrote (its ``cep.demo_feed_cutoff`` property says so) is reused, so
    the state built from it (``offer_sketch``, ``unanswered_offers``) stays an append-only
    history.
    """
    feed = settings.table("offer_feed")
    if table_properties(spark, feed).get("cep.demo_feed_cutoff") == FEED_CUTOFF and \
            int(current_version(spark, feed) or 0) >= 1:
        after = int(current_version(spark, feed) or 0)
        return after - 1, after
    offers = read_table(spark, settings.table("bpi2017_offers"))
    early = offers.where(offers.ts < FEED_CUTOFF)
    late = offers.where(offers.ts >= FEED_CUTOFF)
    (early.writeTo(feed.name).using("delta").tableProperty("location", str(feed.location))
     .tableProperty("delta.enableChangeDataFeed", "true")
     .tableProperty("cep.demo_feed_cutoff", FEED_CUTOFF).createOrReplace())
    before = int(current_version(spark, feed) or 0)
    late.write.format("delta").mode("append").save(str(feed.location))
    return before, int(current_version(spark, feed) or 0)


def _feed_time_travel(spark: "SparkSession", settings: Settings) -> int:
    """Write the offer feed (:func:`write_offer_feed`), read both versions back; returns the
    version before the append."""
    before, after = write_offer_feed(spark, settings)
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
    return before


SKETCH_QUERIES: tuple[tuple[str, str], ...] = (
    ("sketch_stats: the Bloom-filter trees of the application log (one per case)",
     "SELECT count(*) AS applications, sum(nodes) AS nodes, max(levels) AS max_levels,\n"
     "       sum(bytes) AS bytes, round(avg(fill), 3) AS mean_fill\n"
     "FROM sketch_stats(TABLE(app_sketch_nodes))"),
    ("approx_match_seq against exact match_seq: incomplete, then pending (per application; "
     "sketch_missed = matches inside one leaf, which a sketch cannot order)",
     "WITH approx AS (SELECT stream AS case_id FROM approx_match_seq(\n"
     "                  'PATTERN A_Incomplete; A_Pending',\n"
     "                  TABLE(app_sketch_nodes)) WHERE matched),\n"
     "     exact AS (SELECT DISTINCT case_id FROM match_seq(\n"
     "                  pattern => 'PATTERN A_Incomplete; A_Pending',\n"
     "                  key_col => 'case_id', events => TABLE(bpi2017_applications)))\n"
     "SELECT (SELECT count(*) FROM exact) AS exact_cases, (SELECT count(*) FROM approx) AS sketch_cases,\n"
     "       (SELECT count(*) FROM approx LEFT ANTI JOIN exact USING (case_id)) AS sketch_only,\n"
     "       (SELECT count(*) FROM exact LEFT ANTI JOIN approx USING (case_id)) AS sketch_missed"),
    ("approx_match_seq intervals on the Zipf word stream (synthetic_events, one tree per key)",
     "SELECT stream, match_id, pos_start, pos_end, ts_start, ts_end, node_ids\n"
     "FROM approx_match_seq(pattern => 'PATTERN T01; T02; NOT(T00); T03 WITHIN 10 MINUTES',\n"
     "                      mode => 'intervals', level => 1,\n"
     "                      sketch => TABLE(word_sketch_nodes))\n"
     "ORDER BY stream, match_id LIMIT 10"),
)


def _sketches(spark: "SparkSession", settings: Settings, feed_before: int) -> None:
    """Sketch the application log, the synthetic stream and the offer feed; query them."""
    from jobs.state.sketch import run_sketch

    for name in ("app_sketch", "word_sketch"):
        result = run_sketch(spark, settings, name, quiet=True)
        print(f"{name}: {'ran' if result.written else 'nothing new'} "
              f"({result.events_read:,} events read, {result.node_rows:,} node rows written, "
              f"{result.seconds:.0f}s)")
    for title, sql in SKETCH_QUERIES:
        _banner(title)
        print(sql)
        spark.sql(sql).show(10, truncate=False)
    _banner("approx_match_seq over an older version of the sketch (offer feed, per clerk)")
    first = run_sketch(spark, settings, "offer_sketch", until_version=feed_before, quiet=True)
    now = run_sketch(spark, settings, "offer_sketch", quiet=True)
    meta = spark.sql("SELECT nodes_version FROM offer_sketch_meta").first()
    history = [int(r.version) for r in spark.sql("DESCRIBE HISTORY offer_sketch_nodes")
               .select("version").collect()]
    print(f"offer_sketch: first run {first.run_id}, latest {now.run_id}; nodes versions "
          f"{sorted(history)}")
    current = int(meta.nodes_version)
    older = max((v for v in history if v < current), default=current)
    # Versions are integers read from the Delta log, so formatting them is safe.
    pattern = "'PATTERN \"O_Create Offer\"; O_Cancelled'"
    query = (f"SELECT 'nodes VERSION AS OF {older}' AS sketch, count_if(matched) AS clerks "
             f"FROM approx_match_seq({pattern}, TABLE(SELECT * FROM offer_sketch_nodes "
             f"VERSION AS OF {older})) UNION ALL "
             f"SELECT 'current (version {current})', count_if(matched) "
             f"FROM approx_match_seq({pattern}, TABLE(offer_sketch_nodes))")
    print(query)
    spark.sql(query).show(truncate=False)


STANDING_ALERTS = (
    "SELECT date(closed_at) AS window_closed, count(*) AS unanswered_offers,\n"
    "       min(start_ts) AS oldest_sent\n"
    "FROM unanswered_offers_timeouts GROUP BY date(closed_at) ORDER BY window_closed DESC")
"""The alert query a BI tool runs over the standing pattern's timeouts (docs/standing.md)."""


def _standing(spark: "SparkSession", settings: Settings, feed_before: int) -> None:
    """The standing pattern ``unanswered_offers`` (conf/matches.toml) run over the offer feed's
    two commits: the first run sees the offers before the cut-off, the second the rest."""
    from jobs.framework.runner import run_job

    for until in (feed_before, None):
        r = run_job(spark, settings, "match/unanswered_offers", until_version=until,
                    quiet=True).result
        if r.written:
            print(f"unanswered_offers: source versions {r.source_from}..{r.source_version}: "
                  f"{r.events_read:,} events read; {r.matches:,} offers answered within 20 "
                  f"days, {r.timeouts:,} unanswered (timeouts) over {r.keys:,} cases")
        else:
            print(f"unanswered_offers: nothing new up to source version {r.source_version}")
    spark.sql("SELECT run_id, count(*) AS matches FROM unanswered_offers_matches "
              "GROUP BY run_id ORDER BY run_id").show(truncate=False)
    print(STANDING_ALERTS)
    spark.sql(STANDING_ALERTS).show(5, truncate=False)


TREND_QUERIES: tuple[tuple[str, str], ...] = (
    ("cet_trends Q1: check kiting per bank (trends of 3+ uncovered checks, each drawn on the "
     "account the previous one paid into, within a week) against the planted rings",
     "WITH flagged AS (\n"
     "  SELECT DISTINCT explode(event_ids) AS id\n"
     "  FROM cet_trends(pattern => 'PATTERN check+ c[] WHERE c.type = ''not covered''\n"
     "                                AND c[i].src = c[i-1].dest WITHIN 1 WEEK SLIDE 1 DAY',\n"
     "                  key_col => 'bank', events => TABLE(checks))\n"
     "  WHERE length >= 3)\n"
     "SELECT (SELECT count(DISTINCT ring) FROM checks) AS rings_planted,\n"
     "       count(DISTINCT c.ring) AS rings_found, count(*) AS checks_in_trends,\n"
     "       count_if(c.ring IS NULL) AS ordinary_checks_in_trends\n"
     "FROM flagged JOIN checks c USING (id)"),
    ("cet_trends Q2: daily closes rising by more than 5 % from one to the next, 3+ times within "
     "10 days (S&P 500 stocks since 2020)",
     "WITH rises AS (\n"
     "  SELECT * FROM cet_trends(\n"
     "    pattern => 'PATTERN stock+ s[] WHERE s[i].price > 1.05 * s[i-1].price\n"
     "                WITHIN 10 DAYS SLIDE 5 DAYS',\n"
     "    key_col => 'stock',\n"
     "    events  => TABLE(SELECT id, stock, ts, price FROM stock_prices "
     "WHERE ts >= '2020-01-01'))\n"
     "  WHERE length >= 3)\n"
     "SELECT r.stock, r.length, r.first_ts, r.last_ts, f.price AS first_price, "
     "l.price AS last_price,\n"
     "       round(100 * (l.price / f.price - 1), 1) AS rise_pct, r.event_ids\n"
     "FROM rises r JOIN stock_prices f ON f.id = r.event_ids[0]\n"
     "             JOIN stock_prices l ON l.id = element_at(r.event_ids, -1)\n"
     "ORDER BY r.length DESC, rise_pct DESC, r.stock LIMIT 10"),
)


def _trends(spark: "SparkSession", settings: Settings) -> None:
    """Write the generated checks and load the real stock prices (once), then Q1 and Q2."""
    started = time.monotonic()
    checks = write_checks(spark, settings, DEMO_SPEC, quiet=True)
    print(f"checks: {checks.events:,} generated checks with {DEMO_SPEC.n_rings} planted kiting "
          f"rings, Delta version {checks.version}"
          f"{'' if checks.written else ' (already written)'}")
    stocks = load_stocks(spark, settings, quiet=True)
    print(f"stock_prices: {stocks.events:,} daily closes of 20 S&P 500 stocks, 1990-2022, "
          f"Delta version {stocks.version}{'' if stocks.written else ' (already loaded)'}")
    for title, sql in TREND_QUERIES:
        _banner(title)
        print(sql)
        spark.sql(sql).show(10, truncate=False)
    print(f"trend data and queries: {time.monotonic() - started:.0f}s")


# The paper's figure 1 (Sugiura et al., DASFAA 2015) as reconstructed in docs/prob.md section 6,
# in the long layout (stream, t, value, p), as a temporary view.
FIGURE_1_VIEW = (
    "CREATE OR REPLACE TEMPORARY VIEW figure_1 AS SELECT * FROM VALUES\n"
    "  ('fig1', 1, 'a', 1.0), ('fig1', 2, 'a', 0.3), ('fig1', 2, 'b', 0.7),\n"
    "  ('fig1', 3, 'a', 0.1), ('fig1', 3, 'b', 0.8), ('fig1', 3, 'c', 0.1),\n"
    "  ('fig1', 4, 'a', 0.1), ('fig1', 4, 'b', 0.7), ('fig1', 4, 'c', 0.2),\n"
    "  ('fig1', 5, 'b', 0.9), ('fig1', 5, 'c', 0.1), ('fig1', 6, 'c', 1.0) AS v(stream, t, value, p)")

PROB_QUERIES: tuple[tuple[str, str], ...] = (
    ("match_prob: the paper's figure 1, PATTERN a, b+, c - every match with its probability "
     "(m1..m4 of the paper are [1,3], [1,6], [2,5], [4,6])",
     "SELECT match_id, t_start, t_end, round(probability, 4) AS probability, values\n"
     "FROM match_prob(pattern => 'PATTERN a, b+, c', window => 6, output => 'matches',\n"
     "                pstream => TABLE(figure_1))"),
    ("match_prob: the matches as one single-overlap group (the paper's 0.9437) and as "
     "complete-overlap groups, with matches below 0.05 pruned",
     "SELECT 'single' AS overlap, * FROM match_prob(pattern => 'PATTERN a, b+, c', window => 6,\n"
     "    threshold => 0.05, pstream => TABLE(figure_1))\n"
     "UNION ALL\n"
     "SELECT 'complete', * FROM match_prob(pattern => 'PATTERN a, b+, c', window => 6,\n"
     "    threshold => 0.05, overlap => 'complete', pstream => TABLE(figure_1))"),
)


SENSOR_QUERY = (
    "match_prob on a real sensor: hourly Seattle temperatures (2010) as fall/steady/rise "
    "probabilities; the most probable nights where the temperature fell, levelled off, then rose",
    "SELECT g.t_start, g.t_end, round(g.probability, 4) AS probability, g.n_matches\n"
    "FROM match_prob(pattern => 'PATTERN fall, steady+, rise', window => 10, threshold => 0.01,\n"
    "                pstream => TABLE(sensor_pstream)) AS g\n"
    "ORDER BY probability DESC LIMIT 5")


def _prob(spark: "SparkSession", settings: Settings) -> None:
    """The paper's figure 1 end to end in SQL, then the real sensor series."""
    print(FIGURE_1_VIEW)
    spark.sql(FIGURE_1_VIEW)
    for title, sql in PROB_QUERIES:
        _banner(title)
        print(sql)
        spark.sql(sql).show(20, truncate=False)
    sensors = load_sensors(spark, settings, quiet=True)
    _banner(SENSOR_QUERY[0])
    print(f"sensor_pstream: {sensors.events:,} (t, value, p) rows, Delta version {sensors.version}"
          f"{'' if sensors.written else ' (already loaded)'}")
    print(SENSOR_QUERY[1])
    spark.sql(SENSOR_QUERY[1]).show(truncate=False)


PREDICT_QUERY = (
    "SELECT city, state, progress, round(probability, 4) AS p_heatwave_within_5_days, matches, events\n"
    "FROM predict_match(\n"
    "  subscription => 'PATTERN H, H, H, H, H DEFINE H AS tmax_c > 30',\n"
    "  events => TABLE(daily_temperatures), lookahead => 5, key_col => 'city',\n"
    "  model => (SELECT model FROM heat_models VERSION AS OF {version} WHERE sub = 'heatwave'))\n"
    "ORDER BY city")
PREDICT_DAYS = (
    "SELECT city, CAST(ts AS DATE) AS day, state, round(probability, 3) AS p_within_3_days, matched\n"
    "FROM predict_match(\n"
    "  subscription => 'PATTERN H, H, H, H, H DEFINE H AS tmax_c > 30',\n"
    "  events => TABLE(SELECT * FROM daily_temperatures WHERE city = 'tunis' AND year(ts) = 2001),\n"
    "  lookahead => 3, threshold => 0.5, output => 'events', key_col => 'city')\n"
    "ORDER BY ts LIMIT 8")


MANIFEST_QUERY = (
    "SELECT run_id, status, source_version, state_versions['heat_models'] AS models_version\n"
    "FROM cep_runs WHERE job = 'predict/heat' ORDER BY source_version")


def _predict(spark: "SparkSession", settings: Settings) -> None:
    """Real daily temperatures, the prediction job, and predict_match with a persisted model."""
    temps = load_temperatures(spark, settings, quiet=True)
    print(f"daily_temperatures: {temps.events:,} days, Delta version {temps.version}"
          f"{'' if temps.written else ' (already loaded)'}")
    from delta_tables.manifest import find_run
    from jobs.framework.run_conf import load_run_conf
    from jobs.framework.runner import run_job

    # Through the job framework, so the run manifest cep_runs records the run.
    result = run_job(spark, settings, "predict/heat", quiet=True).result
    run = find_run(spark, load_run_conf(settings).manifest, "predict/heat")
    version = run.version_of("heat_models")
    print(f"python -m jobs predict --name heat: {result.events_run:,} events run, "
          f"{'written' if result.written else 'nothing new'}; manifest run {run.run_id}: "
          f"heat_models at version {version}")
    print(MANIFEST_QUERY)
    spark.sql(MANIFEST_QUERY).show(truncate=False)
    query = PREDICT_QUERY.format(version=int(version))
    print(query)
    spark.sql(query).show(truncate=False)
    print(PREDICT_DAYS)
    spark.sql(PREDICT_DAYS).show(truncate=False)


def run_demo(settings: Settings | None = None, *, spark: "SparkSession | None" = None) -> None:
    """Run every demo step against the configured warehouse, printing results.

    Args:
        settings: The project settings (default: loaded from ``conf/``).
        spark: A session to run in (default: one built from ``settings``, with every table
            of the warehouse registered); the demo test passes its shared session.
    """
    started = time.monotonic()
    settings = settings or load_settings()
    _banner("Session")
    spark = spark or build_session(settings)
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

    _mining(spark, settings)

    for title, sql in MATCH_QUERIES:
        _banner(title)
        print(sql)
        spark.sql(sql).show(10, truncate=False)

    _banner("Time travel: an append, then VERSION AS OF the version before it")
    feed_before = _feed_time_travel(spark, settings)

    _banner("Synthetic stream: 100,000 events, 1,000 keys, 50 Zipf-distributed types")
    spec = SyntheticSpec(n_events=100_000, n_keys=1000, n_types=50, seed=42)
    result = write_synthetic(spark, settings, spec, quiet=True)
    print(f"synthetic_events: {result.events:,} events at version {result.version}")
    spark.sql("SELECT type, count(*) AS events FROM synthetic_events GROUP BY type "
              "ORDER BY events DESC LIMIT 5").show()

    _sketches(spark, settings, feed_before)

    _banner("A standing pattern over the offer feed: offers sent and not answered within 20 days")
    _standing(spark, settings, feed_before)

    _banner("Complete event trends: the paper's Q1 and Q2 (generated checks, real stock prices)")
    _trends(spark, settings)

    _banner("Probabilistic streams: match_prob on the paper's example")
    _prob(spark, settings)

    _banner("Prediction: will a heat wave (5 days above 30 C) complete within the next days?")
    _predict(spark, settings)

    _banner("CEP SQL functions")
    spark.sql("SELECT name, status, signature FROM cep_functions()").show(truncate=False)
    print(f"demo finished in {time.monotonic() - started:.0f}s")
