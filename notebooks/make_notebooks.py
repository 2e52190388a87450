"""Writes the walkthrough notebooks of this folder from the cells below (docs/notebooks.md).

The ``.ipynb`` files are generated, committed without outputs, and checked against this
script by ``tests/test_notebooks.py``; edit the cells here and rerun::

    .venv/bin/python notebooks/make_notebooks.py

Every notebook starts its own Spark session in its kernel (``jobs.session.build_session`` +
``sql_ext.register_all``) on the warehouse that ``conf/`` and the environment choose
(``CEP_WAREHOUSE``, ``CEP_DATA_DIR``), loads what it needs with the project's idempotent
loaders and jobs (no-ops when the data is already there), queries, reads an earlier version
(``VERSION AS OF``) and draws with :mod:`viz`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from textwrap import dedent

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

SETUP = '''
%matplotlib inline
from delta_tables.settings import load_settings
from jobs.session import build_session
from sql_ext import register_all
from sql_ext.quoting import sql_string

# conf/ plus the environment: CEP_WAREHOUSE (or CEP_DATA_DIR) chooses the warehouse.
settings = load_settings()
spark = build_session(settings)
register_all(spark)
print(f"Spark {spark.version}, warehouse {settings.warehouse_dir}")
'''

STOP = '''
spark.stop()  # frees the JVM; rerun the first cell to start again
'''

# The offer feed of the README demo: the BPI 2017 offer log in two commits (jobs/demo.py).
FEED = '''
from delta_tables.catalog import current_version, read_table, table_properties
from jobs.demo import FEED_CUTOFF

feed = settings.table("offer_feed")
if not (table_properties(spark, feed).get("cep.demo_feed_cutoff") == FEED_CUTOFF
        and (current_version(spark, feed) or 0) >= 1):
    offers = read_table(spark, settings.table("bpi2017_offers"))
    (offers.where(offers.ts < FEED_CUTOFF).writeTo("offer_feed").using("delta")
     .tableProperty("location", str(feed.location))
     .tableProperty("delta.enableChangeDataFeed", "true")
     .tableProperty("cep.demo_feed_cutoff", FEED_CUTOFF).createOrReplace())
    offers.where(offers.ts >= FEED_CUTOFF).write.format("delta").mode("append").save(str(feed.location))
latest = current_version(spark, feed)
before = latest - 1
spark.sql("DESCRIBE HISTORY offer_feed").select("version", "operation").toPandas()
'''

MATCH_SEQ = [
    ("md", '''
# `match_seq` on the BPI Challenge 2017 offers

Exact pattern matches in one SQL call ([docs/sql.md](../docs/sql.md#match_seq-exact-pattern-matches)):
offers that were created, sent, then accepted within 30 days with no cancellation in between.
This notebook loads the real offer log into Delta, draws the process (its variants and its
directly-follows graph), runs the pattern with Spark's progress shown live, draws the matches per offer on a timeline, and asks the same question of an earlier
version of a table that grew by an append (time travel).
'''),
    ("code", SETUP),
    ("md", '''
## Load

`load_log` reads the offer log from the pm4py 2.5.3 source distribution (downloaded once into
`data/cache`) and writes it into the Delta table `bpi2017_offers` in one commit; when the table
already holds the same file it writes nothing (`python -m jobs load-bpi` does the same for all
three logs).
'''),
    ("code", '''
from jobs.loaders.load_logs import load_log

loaded = load_log(spark, settings, "bpi2017_offers")
loaded
'''),
    ("md", '''
## Before the pattern: what the process looks like

The paths offers take (`variants`) and which step follows which, how often and how fast
(`follows`, the directly-follows graph), from Python on the DataFrame: the same functions as in
SQL, run by Spark as window and aggregate plans ([docs/process-mining.md](../docs/process-mining.md),
[docs/python.md](../docs/python.md)).
'''),
    ("code", '''
import sql_ext
from viz import plot_follows

offers = spark.table("bpi2017_offers")
print(sql_ext.variants(offers, "case_id").where("rank <= 5").orderBy("rank")
      .selectExpr("rank", "array_join(variant, ' > ') AS path", "cases").toPandas())
plot_follows(sql_ext.follows(offers, "case_id"),
             case_stats=sql_ext.case_stats(offers, "case_id").select("first_type", "last_type"))
'''),
    ("md", '''
## Query, with progress

One offer in ten (by a hash of its id) keeps the walkthrough quick; drop the `WHERE` for all
43,000. `spark_progress` shows the stages of the block's Spark jobs while they run and a
summary at the end. The pattern is quoted with `sql_string`: Spark does not bind parameters
inside table-function arguments.
'''),
    ("code", '''
from viz import spark_progress

PATTERN = """PATTERN created; sent; NOT(cancelled); accepted
DEFINE created AS type = 'O_Create Offer', sent AS type LIKE 'O_Sent%',
       cancelled AS type = 'O_Cancelled', accepted AS type = 'O_Accepted'
WITHIN 30 DAYS"""
SAMPLE = "pmod(hash(case_id), 10) = 0"

with spark_progress(spark):
    matches = spark.sql(f"""
        SELECT case_id, match_id, start_ts, end_ts, variables
        FROM match_seq(pattern => {sql_string(PATTERN)}, key_col => 'case_id',
                       events => TABLE(SELECT * FROM bpi2017_offers WHERE {SAMPLE}))""").toArrow()
print(f"{matches.num_rows:,} matches")
matches.slice(0, 5).to_pandas()
'''),
    ("md", '''
## The same log in MATCH_RECOGNIZE

SQL's own row pattern syntax works in the same session ([docs/match-recognize.md](../docs/match-recognize.md)):
offers created, sent, then accepted with no cancellation after the sending, and the days that
took (MATCH_RECOGNIZE has no `WITHIN`: this counts every such offer, however long it took).
'''),
    ("code", '''
spark.sql(f"""
    SELECT count(*) AS offers, round(avg(days), 1) AS avg_days
    FROM (SELECT * FROM bpi2017_offers WHERE {SAMPLE}) MATCH_RECOGNIZE (
      PARTITION BY case_id ORDER BY ts, id
      MEASURES datediff(LAST(A.ts), FIRST(C.ts)) AS days
      PATTERN (C X*? S N*? A)
      DEFINE C AS type = 'O_Create Offer', S AS type LIKE 'O_Sent%',
             N AS type <> 'O_Cancelled', A AS type = 'O_Accepted')""").toPandas()
'''),
    ("md", '''
## Timeline of matches

One row per offer (the first 25 by their first match), one bar per match from its first to its
last event. `plot_match_timeline` takes the Arrow table above, a pandas DataFrame or the Spark
DataFrame itself (then it collects at most `max_rows` rows).
'''),
    ("code", '''
from viz import plot_match_timeline

plot_match_timeline(matches, key_col="case_id", max_keys=25)
'''),
    ("md", '''
## Time travel

`offer_feed` is the offer log arriving in two commits, as in the README demo: version
`before` holds the offers created before July 2016, the append brings the rest. The same
question asked of both versions; the older one cannot see offers accepted after the cut.
'''),
    ("code", FEED),
    ("code", '''
def accepted(version_clause: str):
    return f"""
        SELECT count(*) AS matches, count(DISTINCT case_id) AS offers, max(end_ts) AS last_accepted
        FROM match_seq(pattern => {sql_string(PATTERN)}, key_col => 'case_id',
                       events => TABLE(SELECT * FROM offer_feed {version_clause} WHERE {SAMPLE}))"""

spark.sql(f"""
    SELECT 'VERSION AS OF {before}' AS read, * FROM ({accepted(f"VERSION AS OF {before}")})
    UNION ALL
    SELECT 'current (version {latest})', * FROM ({accepted("")})""").toPandas()
'''),
    ("code", STOP),
]

SKETCH = [
    ("md", '''
# Sketches: `python -m jobs sketch` and `approx_match_seq`

A sketch keeps a Bloom-filter tree per stream instead of the raw events
([docs/sketch.md](../docs/sketch.md)); `approx_match_seq` answers names-only patterns from it.
This notebook sketches the BPI 2017 offers per clerk (`offer_sketch` of `conf/sketches.toml`,
over the README demo's `offer_feed`) in two runs, one per commit of the feed, draws the trees'
levels and fill, compares approximate with exact answers, and reads the sketch as the first
run left it.
'''),
    ("code", SETUP),
    ("md", '''
## Load: the offer log, then the feed in two commits
'''),
    ("code", '''
from jobs.loaders.load_logs import load_log

load_log(spark, settings, "bpi2017_offers")
'''),
    ("code", FEED),
    ("md", '''
## The sketch job, once per commit

`run_sketch` is what `python -m jobs sketch --name offer_sketch [--until-version V]` runs: it
reads only the source's new commits (the change data feed) and merges the changed nodes. A rerun
with nothing new writes nothing.
'''),
    ("code", '''
from jobs.state.sketch import run_sketch

first = run_sketch(spark, settings, "offer_sketch", until_version=before)
now = run_sketch(spark, settings, "offer_sketch")
spark.sql("SELECT sketch, source_version, nodes_version, events_total, m, k, C FROM offer_sketch_meta").toPandas()
'''),
    ("md", '''
## Levels and fill

Summed over every clerk, then three clerks side by side: leaves hold 16 events, a parent exists
while the OR of its two children is at most half full, so each level has about half the nodes
of the one below.
'''),
    ("code", '''
from viz import plot_sketch_levels

nodes = spark.table("offer_sketch_nodes")
plot_sketch_levels(nodes)
'''),
    ("code", '''
busiest = [r.stream for r in spark.sql(
    "SELECT stream, count(*) AS n FROM offer_sketch_nodes GROUP BY stream ORDER BY n DESC, stream LIMIT 3").collect()]
plot_sketch_levels(nodes, streams=busiest)
'''),
    ("code", '''
spark.sql("""
    SELECT count(*) AS clerks, sum(nodes) AS nodes, max(levels) AS max_levels,
           sum(bytes) AS bytes, round(avg(fill), 3) AS mean_fill
    FROM sketch_stats(TABLE(offer_sketch_nodes))""").toPandas()
'''),
    ("md", '''
## Approximate against exact

Which clerks returned an offer that was later accepted? The sketch answers from the trees;
`match_seq` from the events (one clerk in three here, by a hash of the name, to stay quick). A
sketch never misses a match across leaves (no false negatives for patterns without `NOT`), but
it cannot order events inside one leaf.
'''),
    ("code", '''
from viz import spark_progress

with spark_progress(spark):
    compared = spark.sql("""
        WITH approx AS (SELECT stream AS clerk FROM approx_match_seq('PATTERN O_Returned; O_Accepted',
                            TABLE(SELECT * FROM offer_sketch_nodes WHERE pmod(hash(stream), 3) = 0)) WHERE matched),
             exact AS (SELECT DISTINCT org_resource AS clerk FROM match_seq(
                            pattern => 'PATTERN O_Returned; O_Accepted', key_col => 'org_resource',
                            events => TABLE(SELECT id, org_resource, type, ts FROM offer_feed
                                            WHERE pmod(hash(org_resource), 3) = 0)))
        SELECT (SELECT count(*) FROM exact) AS exact_clerks, (SELECT count(*) FROM approx) AS sketch_clerks,
               (SELECT count(*) FROM approx LEFT ANTI JOIN exact USING (clerk)) AS sketch_only,
               (SELECT count(*) FROM exact LEFT ANTI JOIN approx USING (clerk)) AS sketch_missed""").toPandas()
compared
'''),
    ("md", '''
## Time travel: the sketch as the first run left it

Each run records the nodes version it wrote in `offer_sketch_meta`; the history of the nodes
table maps versions to runs. The first run's version only knows the offers before the cut.
'''),
    ("code", '''
history = sorted(int(r.version) for r in spark.sql("DESCRIBE HISTORY offer_sketch_nodes").select("version").collect())
current = int(spark.sql("SELECT nodes_version FROM offer_sketch_meta").first().nodes_version)
older = max((v for v in history if v < current), default=current)
spark.sql(f"""
    SELECT 'nodes VERSION AS OF {older}' AS sketch, count_if(matched) AS clerks_created_then_cancelled
    FROM approx_match_seq('PATTERN "O_Create Offer"; O_Cancelled',
                          TABLE(SELECT * FROM offer_sketch_nodes VERSION AS OF {older}))
    UNION ALL
    SELECT 'current (version {current})', count_if(matched)
    FROM approx_match_seq('PATTERN "O_Create Offer"; O_Cancelled',
                          TABLE(offer_sketch_nodes))""").toPandas()
'''),
    ("code", '''
plot_sketch_levels(spark.sql(f"SELECT * FROM offer_sketch_nodes VERSION AS OF {older}"), streams=busiest,
                   title=f"the same clerks as of nodes version {older}")
'''),
    ("code", STOP),
]

TRENDS = [
    ("md", '''
# `cet_trends`: complete event trends, and the trend graph in Delta

Chains of events linked by a predicate between neighbours ([docs/trends.md](../docs/trends.md)).
The paper's Q1, check kiting, runs on the `checks` table: 20,000 **generated** checks with 20
planted kiting rings (the BPI logs have no such chains). The graph job keeps the ABI graph of
every bank and window in Delta; this notebook draws one window of it with the longest trend on
top, and reads the graph as a recorded run left it.
'''),
    ("code", SETUP),
    ("md", '''
## Load: the generated checks (`python -m jobs generate-checks`)
'''),
    ("code", '''
from jobs.loaders.checks import write_checks

write_checks(spark, settings)
'''),
    ("md", '''
## Q1: trends of uncovered checks, each drawn on the account the previous one paid into

Counted per bank and window without listing them, then the longest trends themselves.
'''),
    ("code", '''
Q1 = """PATTERN check+ c[] WHERE c.type = 'not covered'
        AND c[i].src = c[i-1].dest WITHIN 1 WEEK SLIDE 1 DAY"""
spark.sql(f"""
    SELECT bank, window_start, n_trends
    FROM cet_trends(pattern => {sql_string(Q1)}, output => 'count', key_col => 'bank',
                    events => TABLE(checks))
    ORDER BY n_trends DESC, bank, window_start LIMIT 5""").toPandas()
'''),
    ("code", '''
longest = spark.sql(f"""
    SELECT bank, window_start, unix_micros(window_start) AS window_us, length, event_ids
    FROM cet_trends(pattern => {sql_string(Q1)}, key_col => 'bank', events => TABLE(checks))
    ORDER BY length DESC, bank, window_start LIMIT 5""").toPandas()
longest
'''),
    ("md", '''
## The graph job and one window of the graph

`run_graph` is `python -m jobs graph --name checks_graph`. The picture reads its tables: the
window's checks at their time and at their depth (the longest chain reaching them), an arrow
for every pair the predicate links, the longest trend in orange.
'''),
    ("code", '''
from delta_tables.graph_state import load_graph
from jobs.state.graph import run_graph
from viz import plot_trend_graph

conf = load_graph(settings, "checks_graph")
run = run_graph(spark, settings, conf)
best = longest.iloc[0]
tables = {suffix: spark.table(f"checks_graph_{suffix}") for suffix in ("event_vertices", "from_edges", "to_edges")}
plot_trend_graph(tables["event_vertices"], tables["from_edges"], tables["to_edges"],
                 key=best.bank, window_start=int(best.window_us), highlight=list(best.event_ids))
'''),
    ("md", '''
## Time travel: the graph as the recorded run left it

The meta row names the version of every state table after the last complete run; reading each
table `VERSION AS OF` that version gives one consistent graph, whatever a later run is writing.
'''),
    ("code", '''
meta = spark.sql("SELECT * FROM checks_graph_meta").first()
versions = {suffix: int(meta[f"{suffix}_version"]) for suffix in tables}
print(meta.run_id, versions)
as_of = {suffix: spark.sql(f"SELECT * FROM checks_graph_{suffix} VERSION AS OF {v}")
         for suffix, v in versions.items()}
spark.sql(f"""
    SELECT count(*) AS windows, sum(size(event_id)) AS events
    FROM checks_graph_event_vertices VERSION AS OF {versions['event_vertices']}""").toPandas()
'''),
    ("code", '''
plot_trend_graph(as_of["event_vertices"], as_of["from_edges"], as_of["to_edges"], key=best.bank,
                 window_start=int(best.window_us), max_vertices=40,
                 title=f"{best.bank}: the first 40 checks of the window, graph as of run {meta.run_id}")
'''),
    ("code", STOP),
]

PROB = [
    ("md", '''
# `match_prob`: matches and match groups over probabilistic streams

Where did `a, b+, c` happen in a stream whose values are uncertain, and how likely is it
([docs/prob.md](../docs/prob.md))? Probabilistic streams are not event logs, so this notebook
uses the paper's figure 1 (as a Delta table in two versions, for time travel) and the real
hourly Seattle temperatures of 2010 turned into fall / steady / rise probabilities
(`sensor_pstream`, [docs/prob-data.md](../docs/prob-data.md)).
'''),
    ("code", SETUP),
    ("md", '''
## Figure 1 in Delta, in two versions

Version 0 is the stream as the paper prints it (docs/prob.md section 6), version 1 the
reconstruction used before the paper's text was at hand, which gives the same match
probabilities of figure 2 but other state vectors (docs/prob.md, "Paper vs ours").
'''),
    ("code", '''
from delta_tables.catalog import current_version, register_table
from delta_tables.settings import TableConf

readings = TableConf("fig1_readings", settings.location_under_warehouse("fig1_readings"))
PAPER = {1: {"a": 1.0}, 2: {"a": 0.3, "b": 0.7}, 3: {"a": 0.1, "b": 0.8, "c": 0.1},
         4: {"a": 0.1, "b": 0.7, "c": 0.2}, 5: {"b": 0.9, "c": 0.1}, 6: {"c": 1.0}}
OTHER = {**PAPER, 3: {"a": 0.2, "b": 0.7, "c": 0.1}, 4: {"a": 0.1, "b": 0.8, "c": 0.1}}
if current_version(spark, readings) is None:
    for stream in (PAPER, OTHER):  # version 0, then version 1
        rows = [("fig1", t, v, p) for t, probs in stream.items() for v, p in probs.items()]
        (spark.createDataFrame(rows, "stream STRING, t INT, value STRING, p DOUBLE")
         .write.format("delta").mode("overwrite").save(str(readings.location)))
register_table(spark, readings)
spark.sql("DESCRIBE HISTORY fig1_readings").select("version", "operation").toPandas()
'''),
    ("code", '''
def matches_as_of(version: int) -> str:
    return f"""
        SELECT {version} AS version, match_id, t_start, t_end, round(probability, 4) AS probability, values
        FROM match_prob(pattern => 'PATTERN a, b+, c', window => 6, output => 'matches', threshold => 0.05,
                        pstream => TABLE(SELECT * FROM fig1_readings VERSION AS OF {version}))"""

both = spark.sql(f"{matches_as_of(0)} UNION ALL {matches_as_of(1)} ORDER BY version, match_id").toPandas()
both
'''),
    ("md", '''
Each match is an interval of time points: one row per match, labelled with its version and
probability, the two versions' matches of the same interval next to each other.
'''),
    ("code", '''
from viz import plot_match_timeline, plot_probability

both["match"] = ("v" + both["version"].astype(str) + " [" + both["t_start"].astype(str) + ", "
                 + both["t_end"].astype(str) + "]  p = " + both["probability"].astype(str))
plot_match_timeline(both, key_col="match", start_col="t_start", end_col="t_end",
                    title="matches of a, b+, c with probability >= 0.05, versions 0 and 1")
'''),
    ("md", '''
## A real sensor: Seattle 2010, hour by hour
'''),
    ("code", '''
from jobs.loaders.sensors import load_sensors

load_sensors(spark, settings)
'''),
    ("code", '''
groups = spark.sql("""
    SELECT stream, t_start, t_end, probability, n_matches
    FROM match_prob(pattern => 'PATTERN fall, steady+, rise', window => 10, threshold => 0.01,
                    pstream => TABLE(sensor_pstream))""").toArrow()
print(f"{groups.num_rows:,} groups")
groups.sort_by([("probability", "descending")]).slice(0, 5).to_pandas()
'''),
    ("md", '''
The probability of each group (that the temperature fell, levelled off and rose again somewhere
in it), at the hour the group starts:
'''),
    ("code", '''
plot_probability(groups, key_col="stream", ts_col="t_start", threshold=0.5,
                 title="P(fall, steady+, rise) per group, by its first hour of 2010")
'''),
    ("code", STOP),
]

PREDICT = [
    ("md", '''
# `predict_match`: will a heat wave start within the next days?

The probability that a subscription matches within the next `n` events, from a Markov chain
over its state machine ([docs/predict.md](../docs/predict.md)). BPI offers are too short to
train a chain each, so this notebook uses the real daily temperatures of five cities
(`daily_temperatures`, [docs/predict-data.md](../docs/predict-data.md)) and the prediction set
`heat` of `conf/predictions.toml`: five days in a row above 30 degrees C.
'''),
    ("code", SETUP),
    ("md", '''
## Load, and the prediction job through the job framework

`run_job` is `python -m jobs predict --name heat` with retries and a row in the run manifest
`cep_runs` ([docs/jobs.md](../docs/jobs.md)).
'''),
    ("code", '''
from delta_tables.manifest import find_run
from jobs.framework.run_conf import load_run_conf
from jobs.framework.runner import run_job
from jobs.loaders.temperatures import load_temperatures

load_temperatures(spark, settings)
summary = run_job(spark, settings, "predict/heat")
run = find_run(spark, load_run_conf(settings).manifest, "predict/heat")
models_version = int(run.version_of("heat_models"))
spark.sql("""SELECT run_id, status, source_version, state_versions['heat_models'] AS models_version
             FROM cep_runs WHERE job = 'predict/heat' ORDER BY source_version""").toPandas()
'''),
    ("md", '''
## Per city, now

The state of each city's machine after its last day and the probability of a heat wave within
the next five days, with the model read `VERSION AS OF` the run recorded in the manifest (time
travel on the model table).
'''),
    ("code", '''
HEAT = "PATTERN H, H, H, H, H DEFINE H AS tmax_c > 30"
spark.sql(f"""
    SELECT city, state, progress, round(probability, 4) AS p_heatwave_within_5_days, matches, events
    FROM predict_match(subscription => {sql_string(HEAT)}, lookahead => 5, key_col => 'city',
                       events => TABLE(daily_temperatures),
                       model => (SELECT model FROM heat_models VERSION AS OF {models_version}
                                 WHERE sub = 'heatwave'))
    ORDER BY city""").toPandas()
'''),
    ("md", '''
## A model trained in SQL

The job keeps its model current as days arrive; an analyst can also train one in a single
statement with `predict_model` (the same blob format) and keep it in a table of their own. Here
the model of the years before 2000 only, kept with `CREATE TABLE ... AS SELECT`, beside the
job's model of every year.
'''),
    ("code", '''
spark.sql("DROP TABLE IF EXISTS my_heat_models")
spark.sql(f"""
    CREATE TABLE my_heat_models USING delta AS
    SELECT 'before_2000' AS name, *
    FROM predict_model({sql_string(HEAT)}, 'city',
                       TABLE(SELECT * FROM daily_temperatures WHERE ts < '2000-01-01'))""")
spark.sql(f"""
    SELECT mine.city, round(mine.probability, 4) AS p_model_before_2000,
           round(job.probability, 4) AS p_job_model
    FROM predict_match({sql_string(HEAT)}, 'city', TABLE(daily_temperatures), lookahead => 5,
                       model => (SELECT model FROM my_heat_models WHERE name = 'before_2000')) mine
    JOIN predict_match({sql_string(HEAT)}, 'city', TABLE(daily_temperatures), lookahead => 5,
                       model => (SELECT model FROM heat_models VERSION AS OF {models_version}
                                 WHERE sub = 'heatwave')) job
      ON mine.city = job.city
    ORDER BY city""").toPandas()
'''),
    ("md", '''
## Over a summer, day by day

`output => 'events'` gives the probability after every day. The stars mark the days a heat wave
was under way (the subscription matched).
'''),
    ("code", '''
from viz import plot_probability, spark_progress

with spark_progress(spark):
    days = spark.sql(f"""
        SELECT city, ts, state, probability, matched
        FROM predict_match(subscription => {sql_string(HEAT)}, lookahead => 5, output => 'events',
                           key_col => 'city',
                           events => TABLE(SELECT * FROM daily_temperatures
                                           WHERE ts >= '2001-05-01' AND ts < '2001-10-01'),
                           model => (SELECT model FROM heat_models VERSION AS OF {models_version}
                                     WHERE sub = 'heatwave'))""").toArrow()
plot_probability(days, key_col="city", threshold=0.5,
                 title="P(heat wave within 5 days), summer 2001")
'''),
    ("code", STOP),
]

NOTEBOOKS = {
    "01_match_seq": MATCH_SEQ,
    "02_sketch_approx_match_seq": SKETCH,
    "03_cet_trends": TRENDS,
    "04_match_prob": PROB,
    "05_predict_match": PREDICT,
}


def build(stem: str, cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    """The notebook ``stem`` from its cells, with stable cell ids (so regenerating changes nothing)."""
    nb = new_notebook(metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)",
                       "language": "python"},
        "language_info": {"name": "python"},
    })
    for i, (kind, text) in enumerate(cells):
        source = dedent(text).strip("\n")
        make = new_markdown_cell if kind == "md" else new_code_cell
        nb.cells.append(make(source, id=f"{stem.replace('_', '-')}-{i:02d}"))
    return nb


def render(stem: str) -> str:
    """The committed text of notebook ``stem``."""
    return nbformat.writes(build(stem, NOTEBOOKS[stem])) + "\n"


def main() -> int:
    """Write every notebook next to this script; print what changed."""
    for stem in NOTEBOOKS:
        path = HERE / f"{stem}.ipynb"
        text = render(stem)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
