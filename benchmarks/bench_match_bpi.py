"""Benchmark of ``match_seq`` on the real BPI Challenge 2017 logs against the analysts' baselines.

Process-mining questions on ``bpi2017_applications`` (771,148 events, 15,930 applications)
and ``bpi2017_offers`` (193,849 events, 42,995 offers), matched per ``case_id``:

* a SEQ of three with a cross-event predicate under each selection policy: on the application
  log, an offer created, registered and sent by mail less than a minute after registration
  (a time difference); on the offer log, an offer sent, returned and accepted by another
  employee than the one who sent it (the four-eyes principle, an attribute comparison);
* a Kleene query: applications that became incomplete at least twice before going to pending;
* NOT queries: an application accepted, then an offer accepted with no offer cancelled in
  between; an offer created, sent and accepted with no cancellation between sending and
  accepting (the demo's query).

In ONE run, on the same data and machine, it measures for every query:

1. the core engine in one process: ``cep.match.compile_query`` once, ``find_matches`` per case
   (events per second per core), and the segmented matcher (``cep.match.run.segments``) over all
   cases laid end to end as one stream;
2. ``match_seq`` (``key_col``: ``analyze`` plus Arrow batches, the cases of each of 64 key
   buckets matched as segments) end to end through Spark SQL, written to the ``noop`` sink;
3. the same question in plain Spark SQL as an analyst writes it (``row_number`` positions,
   self-joins with ``min`` for "the next event", ``lead`` for contiguity, a running count for
   "the second incomplete", ``NOT EXISTS``), whose match count must equal ours;
4. Flink SQL ``MATCH_RECOGNIZE`` through PyFlink (batch mode, parallelism 2, the same events
   exported as CSV in this run; ``make flink-venv``) for the queries it can express.

Ratios are the baseline's wall time divided by our end-to-end time (above 1: we are
faster). The events are read from Delta once and cached; every Spark query reads the cached
view. A disagreement between our match counts (core, segmented, ``match_seq``) and
plain Spark SQL ends the run with exit code 1 after the table is printed.

Every query has a WITHIN clause: without one, Flink returned fewer matches than ours and Spark
SQL (668 of 701 on a sample of the application log), apparently dropping a key's later
matches while an earlier partial match stays open. Flink's gap variables exclude the class of
the next event (``X1 AS X1.type <> 'O_Created'``), so its first match per start row binds the
same events as our skip-till-next-match run.

Run from the project root::

    python -m benchmarks.bench_match_bpi [--json PATH] [--queries NAME ...] [--sample PCT]

Example:
    >>> import pyarrow as pa
    >>> events = pa.table({"id": [0, 1, 2, 3], "case_id": ["b", "a", "b", "a"],
    ...                    "type": ["X", "Y", "Y", "X"], "ts": [5, 9, 6, 1]})
    >>> [s.ids.tolist() for s in split_cases(events, [])]
    [[3, 1], [0, 2]]
    >>> sorted({q["log"] for q in QUERIES.values()}), len(QUERIES)
    (['applications', 'offers'], 9)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from benchmarks.bench_match_core import segmented, time_ours, time_segmented
from benchmarks.common import count_and_time, ratio, run_flink
from cep.match import EventStream

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from delta_tables.settings import Settings

# One cached view per log, with the columns the queries read.
LOGS: dict[str, dict[str, Any]] = {
    "applications": {"table": "bpi2017_applications", "view": "bpi_apps",
                     "columns": ["id", "case_id", "type", "ts"], "flink_v0": None},
    "offers": {"table": "bpi2017_offers", "view": "bpi_offers",
               "columns": ["id", "case_id", "type", "ts", "org_resource"],
               "flink_v0": "org_resource"},
}

# Positions per case, shared by the plain-SQL baselines.
APPS_POS = ("SELECT case_id, id, type, ts, "
            "row_number() OVER (PARTITION BY case_id ORDER BY ts, id) AS pos FROM bpi_apps")
OFFERS_POS = ("SELECT case_id, id, type, ts, org_resource, "
              "row_number() OVER (PARTITION BY case_id ORDER BY ts, id) AS pos FROM bpi_offers")

SENT_MAIL = "O_Sent (mail and online)"
OFFER_SENT = ('PATTERN "O_Create Offer" c; O_Created d; "O_Sent (mail and online)" s '
              "WHERE t(s) - t(d) < 1 MINUTE WITHIN 1 DAY")
FOUR_EYES = ("PATTERN sent; returned; accepted "
             "DEFINE sent AS type LIKE 'O_Sent%', returned AS type = 'O_Returned', "
             "accepted AS type = 'O_Accepted' "
             "WHERE accepted.org_resource <> sent.org_resource WITHIN 30 DAYS")

# For each created offer: the next registration within a day, then the next mailing less than
# a minute after that registration (and within the day).
_OFFER_SENT_NEXT_SQL = f"""
WITH e AS ({APPS_POS}),
cd AS (SELECT c.case_id, c.pos AS cpos, c.ts AS cts, min(d.pos) AS dpos, min(d.ts) AS dts
       FROM e c JOIN e d ON d.case_id = c.case_id AND d.type = 'O_Created' AND d.pos > c.pos
                          AND d.ts < c.ts + INTERVAL 1 DAY
       WHERE c.type = 'O_Create Offer' GROUP BY c.case_id, c.pos, c.ts)
SELECT cd.case_id, cd.cpos, cd.dpos, min(s.pos) AS spos
FROM cd JOIN e s ON s.case_id = cd.case_id AND s.type = '{SENT_MAIL}' AND s.pos > cd.dpos
                 AND s.ts < cd.dts + INTERVAL 1 MINUTE AND s.ts < cd.cts + INTERVAL 1 DAY
GROUP BY cd.case_id, cd.cpos, cd.dpos"""

_OFFER_SENT_ANY_SQL = f"""
WITH e AS ({APPS_POS})
SELECT c.case_id, c.pos, d.pos, s.pos FROM e c
JOIN e d ON d.case_id = c.case_id AND d.type = 'O_Created' AND d.pos > c.pos
JOIN e s ON s.case_id = c.case_id AND s.type = '{SENT_MAIL}' AND s.pos > d.pos
         AND s.ts < d.ts + INTERVAL 1 MINUTE AND s.ts < c.ts + INTERVAL 1 DAY
WHERE c.type = 'O_Create Offer'"""

_OFFER_SENT_STRICT_SQL = f"""
WITH e AS (SELECT type, ts, lead(type, 1) OVER w AS t1, lead(ts, 1) OVER w AS ts1,
                  lead(type, 2) OVER w AS t2, lead(ts, 2) OVER w AS ts2
           FROM bpi_apps WINDOW w AS (PARTITION BY case_id ORDER BY ts, id))
SELECT * FROM e WHERE type = 'O_Create Offer' AND t1 = 'O_Created' AND t2 = '{SENT_MAIL}'
                  AND ts2 < ts1 + INTERVAL 1 MINUTE AND ts2 < ts + INTERVAL 1 DAY"""

_OFFER_SENT_FLINK = """
SELECT count(*) FROM ev MATCH_RECOGNIZE (
  PARTITION BY k ORDER BY ts MEASURES A.id AS aid
  ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
  PATTERN ({pattern}) WITHIN INTERVAL '1' DAY
  DEFINE A AS A.type = 'O_Create Offer', X1 AS X1.type <> 'O_Created', B AS B.type = 'O_Created',
         C AS C.type = 'O_Sent (mail and online)' AND C.ts < B.ts + INTERVAL '1' MINUTE)"""

# For each sending: the next return within 30 days, then the next acceptance by someone else.
_FOUR_EYES_NEXT_SQL = f"""
WITH e AS ({OFFERS_POS}),
sr AS (SELECT s.case_id, s.pos AS spos, s.ts AS sts, s.org_resource AS sres, min(r.pos) AS rpos
       FROM e s JOIN e r ON r.case_id = s.case_id AND r.type = 'O_Returned' AND r.pos > s.pos
                          AND r.ts < s.ts + INTERVAL 30 DAYS
       WHERE s.type LIKE 'O_Sent%' GROUP BY s.case_id, s.pos, s.ts, s.org_resource)
SELECT sr.case_id, sr.spos, sr.rpos, min(a.pos) AS apos
FROM sr JOIN e a ON a.case_id = sr.case_id AND a.type = 'O_Accepted' AND a.pos > sr.rpos
                 AND a.org_resource <> sr.sres AND a.ts < sr.sts + INTERVAL 30 DAYS
GROUP BY sr.case_id, sr.spos, sr.rpos"""

_FOUR_EYES_ANY_SQL = f"""
WITH e AS ({OFFERS_POS})
SELECT s.case_id, s.pos, r.pos, a.pos FROM e s
JOIN e r ON r.case_id = s.case_id AND r.type = 'O_Returned' AND r.pos > s.pos
JOIN e a ON a.case_id = s.case_id AND a.type = 'O_Accepted' AND a.pos > r.pos
         AND a.org_resource <> s.org_resource AND a.ts < s.ts + INTERVAL 30 DAYS
WHERE s.type LIKE 'O_Sent%'"""

_FOUR_EYES_STRICT_SQL = """
WITH e AS (SELECT type, ts, org_resource, lead(type, 1) OVER w AS t1, lead(type, 2) OVER w AS t2,
                  lead(ts, 2) OVER w AS ts2, lead(org_resource, 2) OVER w AS res2
           FROM bpi_offers WINDOW w AS (PARTITION BY case_id ORDER BY ts, id))
SELECT * FROM e WHERE type LIKE 'O_Sent%' AND t1 = 'O_Returned' AND t2 = 'O_Accepted'
                  AND res2 <> org_resource AND ts2 < ts + INTERVAL 30 DAYS"""

# Flink's CSV has one numeric attribute, v0: here the dense rank of org_resource, so that
# comparing codes is comparing resources.
_FOUR_EYES_FLINK = """
SELECT count(*) FROM ev MATCH_RECOGNIZE (
  PARTITION BY k ORDER BY ts MEASURES A.id AS aid
  ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
  PATTERN ({pattern}) WITHIN INTERVAL '30' DAY
  DEFINE A AS A.type LIKE 'O_Sent%', X1 AS X1.type <> 'O_Returned', B AS B.type = 'O_Returned',
         C AS C.type = 'O_Accepted' AND C.v0 <> A.v0)"""

QUERIES: dict[str, dict[str, Any]] = {
    "apps_seq3_next": {
        "log": "applications", "pattern": OFFER_SENT, "policy": "skip-till-next-match",
        "sql": _OFFER_SENT_NEXT_SQL,
        # X1 skips anything but a registration, so B is the first one, as in our run; the
        # reluctant X2 gives the first qualifying mailing.
        "flink": _OFFER_SENT_FLINK.format(pattern="A X1*? B X2*? C"),
    },
    "apps_seq3_strict": {
        "log": "applications", "pattern": OFFER_SENT, "policy": "strict-contiguity",
        "sql": _OFFER_SENT_STRICT_SQL,
        "flink": _OFFER_SENT_FLINK.format(pattern="A B C"),
    },
    "apps_seq3_any": {
        "log": "applications", "pattern": OFFER_SENT, "policy": "skip-till-any-match",
        "sql": _OFFER_SENT_ANY_SQL,
        "flink": None,  # MATCH_RECOGNIZE returns one match per start row, not every combination
    },
    "apps_kleene_next": {
        "log": "applications",
        "pattern": ("PATTERN created; incomplete{2,}; pending "
                    "DEFINE created AS type = 'A_Create Application', "
                    "incomplete AS type = 'A_Incomplete', pending AS type = 'A_Pending' "
                    "WITHIN 60 DAYS"),
        "policy": "skip-till-next-match",
        # Under skip-till-next-match the run takes every incomplete after the creation until
        # the first pending after the second incomplete; a running count of incompletes finds
        # the second one without a self-join per iteration.
        "sql": """
WITH e AS (SELECT case_id, type, ts, row_number() OVER w AS pos,
                  sum(CASE WHEN type = 'A_Incomplete' THEN 1 ELSE 0 END) OVER w AS n_inc
           FROM bpi_apps WINDOW w AS (PARTITION BY case_id ORDER BY ts, id)),
c2 AS (SELECT c.case_id, c.pos AS cpos, c.ts AS cts, i.pos AS ipos
       FROM e c JOIN e i ON i.case_id = c.case_id AND i.type = 'A_Incomplete'
                          AND i.n_inc = c.n_inc + 2
       WHERE c.type = 'A_Create Application')
SELECT c2.case_id, c2.cpos, min(p.pos) AS ppos
FROM c2 JOIN e p ON p.case_id = c2.case_id AND p.type = 'A_Pending' AND p.pos > c2.ipos
                 AND p.ts < c2.cts + INTERVAL 60 DAYS
GROUP BY c2.case_id, c2.cpos""",
        # Two single incompletes with gaps that cannot hold the next one, then a gap without
        # a pending: the same matches per creation (Flink counts them; its greedy Kleene
        # quantifiers do not backtrack, so I{2,} would need contiguous incompletes).
        "flink": """
SELECT count(*) FROM ev MATCH_RECOGNIZE (
  PARTITION BY k ORDER BY ts MEASURES C.id AS cid
  ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
  PATTERN (C X1*? I1 X2*? I2 X3*? P) WITHIN INTERVAL '60' DAY
  DEFINE C AS C.type = 'A_Create Application', X1 AS X1.type <> 'A_Incomplete',
         I1 AS I1.type = 'A_Incomplete', X2 AS X2.type <> 'A_Incomplete',
         I2 AS I2.type = 'A_Incomplete', X3 AS X3.type <> 'A_Pending',
         P AS P.type = 'A_Pending')""",
    },
    "apps_not_next": {
        "log": "applications",
        "pattern": "PATTERN A_Accepted a; NOT(O_Cancelled); O_Accepted o WITHIN 30 DAYS",
        "policy": "skip-till-next-match",
        "sql": f"""
WITH e AS ({APPS_POS}),
ao AS (SELECT a.case_id, a.pos AS apos, min(o.pos) AS opos
       FROM e a JOIN e o ON o.case_id = a.case_id AND o.type = 'O_Accepted' AND o.pos > a.pos
                          AND o.ts < a.ts + INTERVAL 30 DAYS
       WHERE a.type = 'A_Accepted' GROUP BY a.case_id, a.pos)
SELECT * FROM ao WHERE NOT EXISTS (
  SELECT 1 FROM e x WHERE x.case_id = ao.case_id AND x.type = 'O_Cancelled'
                      AND x.pos > ao.apos AND x.pos < ao.opos)""",
        "flink": """
SELECT count(*) FROM ev MATCH_RECOGNIZE (
  PARTITION BY k ORDER BY ts MEASURES A.id AS aid
  ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
  PATTERN (A X*? B) WITHIN INTERVAL '30' DAY
  DEFINE A AS A.type = 'A_Accepted', X AS X.type <> 'O_Cancelled', B AS B.type = 'O_Accepted')""",
    },
    "offers_seq3_next": {
        "log": "offers", "pattern": FOUR_EYES, "policy": "skip-till-next-match",
        "sql": _FOUR_EYES_NEXT_SQL,
        "flink": _FOUR_EYES_FLINK.format(pattern="A X1*? B X2*? C"),
    },
    "offers_seq3_strict": {
        "log": "offers", "pattern": FOUR_EYES, "policy": "strict-contiguity",
        "sql": _FOUR_EYES_STRICT_SQL,
        "flink": _FOUR_EYES_FLINK.format(pattern="A B C"),
    },
    "offers_seq3_any": {
        "log": "offers", "pattern": FOUR_EYES, "policy": "skip-till-any-match",
        "sql": _FOUR_EYES_ANY_SQL,
        "flink": None,
    },
    "offers_not_next": {
        "log": "offers",
        "pattern": ("PATTERN created; sent; NOT(cancelled); accepted "
                    "DEFINE created AS type = 'O_Create Offer', sent AS type LIKE 'O_Sent%', "
                    "cancelled AS type = 'O_Cancelled', accepted AS type = 'O_Accepted' "
                    "WITHIN 30 DAYS"),
        "policy": "skip-till-next-match",
        "sql": f"""
WITH e AS ({OFFERS_POS}),
cs AS (SELECT c.case_id, c.pos AS cpos, c.ts AS cts, min(s.pos) AS spos
       FROM e c JOIN e s ON s.case_id = c.case_id AND s.type LIKE 'O_Sent%' AND s.pos > c.pos
                          AND s.ts < c.ts + INTERVAL 30 DAYS
       WHERE c.type = 'O_Create Offer' GROUP BY c.case_id, c.pos, c.ts),
csa AS (SELECT cs.case_id, cs.cpos, cs.spos, min(a.pos) AS apos
        FROM cs JOIN e a ON a.case_id = cs.case_id AND a.type = 'O_Accepted' AND a.pos > cs.spos
                         AND a.ts < cs.cts + INTERVAL 30 DAYS
        GROUP BY cs.case_id, cs.cpos, cs.spos)
SELECT * FROM csa WHERE NOT EXISTS (
  SELECT 1 FROM e x WHERE x.case_id = csa.case_id AND x.type = 'O_Cancelled'
                      AND x.pos > csa.spos AND x.pos < csa.apos)""",
        "flink": """
SELECT count(*) FROM ev MATCH_RECOGNIZE (
  PARTITION BY k ORDER BY ts MEASURES A.id AS aid
  ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
  PATTERN (A X1*? S X2*? B) WITHIN INTERVAL '30' DAY
  DEFINE A AS A.type = 'O_Create Offer', X1 AS X1.type NOT LIKE 'O_Sent%',
         S AS S.type LIKE 'O_Sent%', X2 AS X2.type <> 'O_Cancelled',
         B AS B.type = 'O_Accepted')""",
    },
}


def split_cases(events: "pa.Table", attrs: list[str]) -> list[EventStream]:
    """One :class:`EventStream` per ``case_id``, sorted by ``(ts, id)``, cases in key order.

    ``ts`` may be a TIMESTAMP column (converted to microseconds) or integers; ``attrs`` are
    kept as attribute columns (strings as object arrays, as the UDTFs pass them).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    ts_col = events.column("ts")
    if pa.types.is_timestamp(ts_col.type):
        ts_col = ts_col.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
    ts = ts_col.to_numpy().astype(np.int64)
    ids = events.column("id").to_numpy().astype(np.int64)
    encoded = pc.dictionary_encode(events.column("case_id").combine_chunks())
    names = np.asarray(encoded.dictionary.to_pylist(), dtype=object)
    rank = np.argsort(np.argsort(names, kind="stable"))
    key = rank[encoded.indices.to_numpy()]  # each row's case_id as its rank among the cases
    order = np.lexsort((ids, ts, key))
    key, ids, ts = key[order], ids[order], ts[order]
    types = np.asarray(events.column("type").to_pylist(), dtype=object)[order]
    columns: dict[str, np.ndarray] = {}
    for name in attrs:
        values = events.column(name).to_numpy(zero_copy_only=False)
        columns[name] = (values.astype(object) if values.dtype.kind in "OUS" else values)[order]
    cuts = np.flatnonzero(np.diff(key)) + 1
    bounds = zip(np.concatenate(([0], cuts)), np.concatenate((cuts, [len(key)])))
    return [EventStream(ids[a:b], ts[a:b], types[a:b], {k: v[a:b] for k, v in columns.items()})
            for a, b in bounds]


def _prepare_log(spark: "SparkSession", settings: "Settings", log: str, sample_pct: float | None
                 ) -> tuple["DataFrame", int, Path]:
    """Cache the log's view, export its CSV for Flink; returns (frame, events, csv folder)."""
    conf = LOGS[log]
    where = ("" if sample_pct is None
             else f" WHERE pmod(hash(case_id), 10000) < {int(round(sample_pct * 100))}")
    frame = spark.sql(f"SELECT {', '.join(conf['columns'])} FROM {conf['table']}{where}")
    frame = frame.cache()
    events = frame.count()
    frame.createOrReplaceTempView(conf["view"])
    v0 = ("0.0D" if conf["flink_v0"] is None
          else f"CAST(dense_rank() OVER (ORDER BY {conf['flink_v0']}) AS DOUBLE)")
    csv_dir = settings.scratch_dir / f"bench_bpi_csv_{conf['view']}"
    (spark.sql(f"SELECT id, case_id AS k, type, date_format(ts, 'yyyy-MM-dd HH:mm:ss.SSS') AS ts, "
               f"{v0} AS v0 FROM {conf['view']}")
     .coalesce(1).write.mode("overwrite").option("header", "false").csv(str(csv_dir)))
    return frame, events, csv_dir


def _streams(frame: "DataFrame", log: str) -> list[EventStream]:
    """The cached log as one stream per case, with the attribute columns the queries read."""
    attrs = [c for c in LOGS[log]["columns"] if c not in ("id", "case_id", "type", "ts")]
    return split_cases(frame.toArrow(), attrs)


def run(names: list[str], sample_pct: float | None, repeats: int, flink: bool
        ) -> list[dict[str, Any]]:
    """Measure the named queries; one dict per query, printed as a table line when done."""
    from delta_tables.settings import load_settings
    from jobs.loaders.load_logs import load_log
    from jobs.session import build_session
    from sql_ext import register_all
    from sql_ext.quoting import sql_string

    settings = load_settings(overrides={"show_progress": False})
    spark = build_session(settings)
    register_all(spark)
    rows: list[dict[str, Any]] = []
    for log in LOGS:
        todo = [n for n in names if QUERIES[n]["log"] == log]
        if not todo:
            continue
        load_log(spark, settings, LOGS[log]["table"], quiet=True)
        frame, n_events, csv_dir = _prepare_log(spark, settings, log, sample_pct)
        streams = _streams(frame, log)
        joint = segmented(streams)
        view = LOGS[log]["view"]
        for name in todo:
            q = QUERIES[name]
            pattern, policy = q["pattern"], q["policy"]
            row: dict[str, Any] = {"query": name, "log": log, "events": n_events,
                                   "cases": len(streams), "pattern": pattern, "policy": policy,
                                   "load_start": os.getloadavg()[0]}
            row["core_s"], row["core_matches"] = time_ours(streams, pattern, policy, repeats)
            row["segmented_s"], row["segmented_matches"] = time_segmented(joint, pattern, policy,
                                                                          repeats)
            row["match_seq_matches"], row["match_seq_s"] = count_and_time(spark.sql(
                f"SELECT * FROM match_seq(pattern => {sql_string(pattern)}, "
                f"policy => {sql_string(policy)}, key_col => 'case_id', events => TABLE({view}))"))
            row["sql_matches"], row["sql_s"] = count_and_time(spark.sql(q["sql"]))
            if q["flink"] and flink:
                row["flink_matches"], row["flink_s"], row["flink_note"] = run_flink(q["flink"],
                                                                                    csv_dir)
            counts = {row[k] for k in ("core_matches", "segmented_matches", "match_seq_matches",
                                       "sql_matches")}
            row["agree"] = len(counts) == 1
            row["load_end"] = os.getloadavg()[0]
            rows.append(row)
            print(_line(row), flush=True)
        frame.unpersist()
    return rows


def _line(r: dict[str, Any]) -> str:
    best = r["match_seq_s"]
    flink = (f"{r['flink_s']:.2f} s ({r['flink_matches']:,})" if r.get("flink_s") is not None
             else (r.get("flink_note") or "-"))
    mark = "" if r["agree"] else " **DISAGREE**"
    return (f"| {r['query']} | {r['events']:,} | {r['match_seq_matches']:,}{mark} | "
            f"{r['core_s']:.2f} s | {r['events'] / r['core_s']:,.0f} | "
            f"{r['events'] / r['segmented_s']:,.0f} | {r['match_seq_s']:.2f} s | "
            f"{r['events'] / best:,.0f} | "
            f"{r['sql_s']:.2f} s ({r['sql_matches']:,}) | {ratio(r['sql_s'], best)} | "
            f"{flink} | {ratio(r.get('flink_s'), best)} |")


HEADER = ("| query | events | matches | core per case | core events/s | core segmented events/s | "
          "match_seq | end-to-end events/s | Spark SQL (matches) | SQL/ours | "
          "Flink MATCH_RECOGNIZE (matches) | Flink/ours |\n"
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")


def main(argv: list[str] | None = None) -> int:
    """Print the queries and the Markdown table; ``--json PATH`` also writes the numbers."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers here")
    parser.add_argument("--queries", nargs="+", choices=list(QUERIES), default=list(QUERIES),
                        metavar="NAME", help="run only these queries (default: all)")
    parser.add_argument("--sample", type=float, metavar="PCT",
                        help="keep about PCT percent of the cases (development runs)")
    parser.add_argument("--repeats", type=int, default=2,
                        help="core engine timings: best of this many runs")
    parser.add_argument("--no-flink", action="store_true", help="skip the Flink baseline")
    args = parser.parse_args(argv)
    for name in args.queries:
        print(f"- {name}: `{QUERIES[name]['pattern']}` ({QUERIES[name]['policy']})")
    print()
    print(HEADER, flush=True)
    rows = run(args.queries, args.sample, args.repeats, not args.no_flink)
    if rows:
        loads = [r[k] for r in rows for k in ("load_start", "load_end")]
        print(f"\n1-minute load average at the start and end of each row: {min(loads):.1f} to "
              f"{max(loads):.1f} ({os.cpu_count()} cores; other processes share the machine)")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"machine": platform.platform(),
                                         "python": sys.version.split()[0], "sample": args.sample,
                                         "rows": rows}, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    wrong = [r["query"] for r in rows if not r["agree"]]
    if wrong:
        print("match counts disagree (core, segmented, match_seq, Spark SQL): "
              f"{', '.join(wrong)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    raise SystemExit(main())
