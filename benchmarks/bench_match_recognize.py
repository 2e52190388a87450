"""End-to-end benchmark of MATCH_RECOGNIZE in Spark SQL against what an analyst would write.

For each size N (the synthetic stream of ``bench_match_sql``: 1,000 keys, 50 Zipf types,
written to Delta once) it times in ONE run, on the same cached data, results to Spark's
``noop`` sink:

* ``abc_next``: ``PATTERN (A B C)`` (types T00, T00, T01) with AFTER MATCH SKIP TO NEXT ROW,
  against the hand-written ``lead()`` query and against ``match_seq`` under strict
  contiguity (all three find every run of the three types; the counts are printed);
* ``abc_past``: the same pattern under the default AFTER MATCH SKIP PAST LAST ROW: the
  DEFINEs prove that two runs of T00 T00 T01 cannot overlap, so it too is Spark's window pass
  alone (docs/match-recognize.md, "How it runs") and ``lead()`` counts the same matches;
* ``abc_sum``: abc_past with a ``sum`` measure, which the native plan does not compute: Spark
  keeps the rows of possible matches and the matcher runs on those (against ``lead()``
  summing the three rows);
* ``v_shape``: ``PATTERN (A B+ C+)`` with B falling and C rising ``v0`` (PREV), no plain-SQL
  baseline an analyst would write (gaps and islands over two run kinds);
* ``price_down``: Flink's documented logical-offset pattern ``START_ROW DOWN+ UP`` on ``v0``,
  whose DEFINE reads the match so far (``LAST(DOWN.v0, 1)``, ``START_ROW.v0``), so the
  matcher asks it per thread;
* ``v_shape_aggregates`` (issue 49): v_shape with the measures of the standard that Spark's
  aggregates give (``array_agg(CLASSIFIER())``, ``stddev_pop``, ``max_by``,
  ``percentile_cont ... WITHIN GROUP``, ``CLASSIFIER(U)``), against v_shape with its four
  plain measures: what the richer measures cost;
* ``running_stddev`` (issue 49): ``A B+`` where B keeps the running ``stddev_pop`` of the
  match's ``v0`` under a bound (a per-thread summary of the matcher), against the same
  pattern with the running ``avg`` the matcher had before;
* ``running_median`` and ``running_scalars`` (issue 49): the same ``A B+`` with B's bound
  on the running ``median(v0)`` (every value of the thread kept, O(rows so far) per test),
  and on ``sqrt(power(round(avg(v0), 3), 2))`` (Spark's scalar functions computed by the
  matcher around a running aggregate), each against the running ``avg``;
* ``flat``: ``A+ B+`` over 10^5 rows of one key that satisfy both variables, the shape on
  which a backtracking matcher explodes (trinodb/trino#18036: 49 s for 5,000 rows).

Each query with a Flink form also runs through PyFlink's MATCH_RECOGNIZE (batch mode,
parallelism 2, the same rows as CSV, ``ORDER BY`` the rowtime ``ts``; ``make flink-venv``),
timed inside the Flink process as ours is inside the Spark session. Flink orders by ``ts``
alone (its ORDER BY must be a time attribute), we by ``ts, id``: a tie in ``ts`` can make the
counts differ by one; and Flink's default skip is TO NEXT ROW, so the Flink forms write the
AFTER MATCH clause out.

Run from the project root (not beside the test suite: two cores)::

    python -m benchmarks.bench_match_recognize [--sizes 10000 100000 1000000]

Example:
    >>> sorted(QUERIES)[:5]
    ['abc_next', 'abc_past', 'abc_sum', 'price_down', 'running_median']
"""

from __future__ import annotations

import argparse
from typing import Any

from benchmarks.common import (bench_session, cached_events, count_and_time, flink_csv, ratio,
                               run_flink)
from benchmarks.summary import record

ABC = """SELECT * FROM bench_events MATCH_RECOGNIZE (
  PARTITION BY key ORDER BY ts, id
  MEASURES FIRST(A.id) AS a_id, LAST(C.ts) AS c_ts
  AFTER MATCH SKIP TO NEXT ROW
  PATTERN (A B C) DEFINE A AS type = 'T00', B AS type = 'T00', C AS type = 'T01')"""
ABC_PAST = ABC.replace("AFTER MATCH SKIP TO NEXT ROW", "AFTER MATCH SKIP PAST LAST ROW")
ABC_SUM = ABC_PAST.replace("LAST(C.ts) AS c_ts", "SUM(v0) AS total")
ABC_SUM_SQL = """WITH e AS (SELECT key, id, type, lead(type, 1) OVER w AS t1, lead(type, 2) OVER w AS t2,
                  v0 + lead(v0, 1) OVER w + lead(v0, 2) OVER w AS total
           FROM bench_events WINDOW w AS (PARTITION BY key ORDER BY ts, id))
SELECT key, id AS a_id, total FROM e WHERE type = 'T00' AND t1 = 'T00' AND t2 = 'T01'"""
ABC_SQL = """WITH e AS (SELECT key, id, type, lead(type, 1) OVER w AS t1, lead(type, 2) OVER w AS t2,
                  lead(ts, 2) OVER w AS ts2
           FROM bench_events WINDOW w AS (PARTITION BY key ORDER BY ts, id))
SELECT key, id AS a_id, ts2 AS c_ts FROM e WHERE type = 'T00' AND t1 = 'T00' AND t2 = 'T01'"""
ABC_MATCH_SEQ = ("SELECT * FROM match_seq(pattern => 'PATTERN a, b, c DEFINE a AS type = "
                 "''T00'', b AS type = ''T00'', c AS type = ''T01''', "
                 "policy => 'strict-contiguity', key_col => 'key', events => TABLE(bench_events))")
ABC_PAST_FLINK = """SELECT count(*) FROM ev MATCH_RECOGNIZE (
  PARTITION BY k ORDER BY ts MEASURES A.id AS a_id AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A B C) DEFINE A AS A.type = 'T00', B AS B.type = 'T00', C AS C.type = 'T01')"""
V_SHAPE = """SELECT * FROM bench_events MATCH_RECOGNIZE (
  PARTITION BY key ORDER BY ts, id
  MEASURES FIRST(A.v0) AS start_v, LAST(B.v0) AS bottom_v, LAST(C.v0) AS top_v, COUNT(*) AS n
  PATTERN (A B+ C+) DEFINE B AS v0 < PREV(v0), C AS v0 > PREV(v0))"""
V_SHAPE_AGGREGATES = """SELECT * FROM bench_events MATCH_RECOGNIZE (
  PARTITION BY key ORDER BY ts, id
  MEASURES array_agg(CLASSIFIER()) AS path, stddev_pop(B.v0) AS spread,
           max_by(C.ts, C.v0) AS peak_ts,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY v0) AS median_v,
           CLASSIFIER(U) AS last_move
  PATTERN (A B+ C+) SUBSET U = (B, C) DEFINE B AS v0 < PREV(v0), C AS v0 > PREV(v0))"""
RUNNING_AVG = """SELECT * FROM bench_events MATCH_RECOGNIZE (
  PARTITION BY key ORDER BY ts, id
  MEASURES FIRST(A.id) AS a_id, COUNT(*) AS n
  PATTERN (A B+) DEFINE A AS type = 'T00', B AS avg(v0) < 100)"""
RUNNING_STDDEV = RUNNING_AVG.replace("avg(v0) < 100", "stddev_pop(v0) < 15")
RUNNING_MEDIAN = RUNNING_AVG.replace("avg(v0) < 100", "median(v0) < 100")
RUNNING_SCALARS = RUNNING_AVG.replace("avg(v0) < 100", "sqrt(power(round(avg(v0), 3), 2)) < 100")
ABC_FLINK = """SELECT count(*) FROM ev MATCH_RECOGNIZE (
  PARTITION BY k ORDER BY ts MEASURES A.id AS a_id AFTER MATCH SKIP TO NEXT ROW
  PATTERN (A B C) DEFINE A AS A.type = 'T00', B AS B.type = 'T00', C AS C.type = 'T01')"""
PRICE_DOWN_DEFINE = """DEFINE DOWN AS (LAST(DOWN.v0, 1) IS NULL AND DOWN.v0 < START_ROW.v0)
                 OR DOWN.v0 < LAST(DOWN.v0, 1),
         UP AS UP.v0 > LAST(DOWN.v0, 1))"""
PRICE_DOWN = f"""SELECT * FROM bench_events MATCH_RECOGNIZE (
  PARTITION BY key ORDER BY ts, id
  MEASURES FIRST(START_ROW.id) AS start_id, LAST(DOWN.id) AS bottom_id, LAST(UP.id) AS up_id
  AFTER MATCH SKIP PAST LAST ROW
  PATTERN (START_ROW DOWN+ UP)
  {PRICE_DOWN_DEFINE}"""
PRICE_DOWN_FLINK = f"""SELECT count(*) FROM ev MATCH_RECOGNIZE (
  PARTITION BY k ORDER BY ts
  MEASURES FIRST(START_ROW.id) AS start_id, LAST(DOWN.id) AS bottom_id, LAST(UP.id) AS up_id
  AFTER MATCH SKIP PAST LAST ROW
  PATTERN (START_ROW DOWN+ UP)
  {PRICE_DOWN_DEFINE}"""
FLAT = """SELECT * FROM bench_flat MATCH_RECOGNIZE (
  PARTITION BY p ORDER BY ts MEASURES COUNT(A.*) AS na, COUNT(B.*) AS nb
  PATTERN (A+ B+) DEFINE A AS x = 1, B AS x = 1)"""

QUERIES: dict[str, dict[str, Any]] = {
    "abc_next": {"sql": ABC, "baselines": {"lead()": ABC_SQL, "match_seq": ABC_MATCH_SEQ},
                 "flink": ABC_FLINK},
    "abc_past": {"sql": ABC_PAST, "baselines": {"lead()": ABC_SQL}, "flink": ABC_PAST_FLINK},
    "abc_sum": {"sql": ABC_SUM, "baselines": {"lead()": ABC_SUM_SQL}, "flink": None},
    # Flink refuses a greedy quantifier at the end of the pattern (C+): no Flink form.
    "v_shape": {"sql": V_SHAPE, "baselines": {}, "flink": None},
    "price_down": {"sql": PRICE_DOWN, "baselines": {}, "flink": PRICE_DOWN_FLINK},
    "v_shape_aggregates": {"sql": V_SHAPE_AGGREGATES, "baselines": {"v_shape": V_SHAPE},
                           "flink": None},
    "running_stddev": {"sql": RUNNING_STDDEV, "baselines": {"running avg": RUNNING_AVG},
                       "flink": None},
    "running_median": {"sql": RUNNING_MEDIAN, "baselines": {"running avg": RUNNING_AVG},
                       "flink": None},
    "running_scalars": {"sql": RUNNING_SCALARS, "baselines": {"running avg": RUNNING_AVG},
                        "flink": None},
}


def run(sizes: list[int], flat_rows: int = 100_000, flink: bool = True,
        queries: list[str] | None = None) -> list[dict[str, Any]]:
    """Measure every query at every size, then the flat run; one dict per line."""

    spark, settings = bench_session()
    rows: list[dict[str, Any]] = []
    for n in sizes:
        frame = cached_events(spark, settings, n)
        csv_dir = flink_csv(frame, settings, n) if flink else None
        for name, q in QUERIES.items():
            if queries and name not in queries:
                continue
            matches, seconds = count_and_time(spark.sql(q["sql"]))
            row: dict[str, Any] = {"events": n, "query": name, "matches": matches,
                                   "ours_s": seconds}
            for base, sql in q["baselines"].items():
                row[base] = count_and_time(spark.sql(sql))
            if csv_dir is not None and q["flink"]:
                count, flink_s, note = run_flink(q["flink"], csv_dir)
                row["flink"] = (count, flink_s) if flink_s is not None else note
            rows.append(row)
            print(_line(row), flush=True)
        frame.unpersist()
    spark.range(flat_rows).selectExpr("'p' AS p", "id AS ts", "1 AS x") \
        .createOrReplaceTempView("bench_flat")
    matches, seconds = count_and_time(spark.sql(FLAT))
    row = {"events": flat_rows, "query": "flat A+ B+", "matches": matches, "ours_s": seconds}
    rows.append(row)
    print(_line(row), flush=True)
    return rows


def _line(row: dict[str, Any]) -> str:
    parts = [f"| {row['events']:,} | {row['query']} | {row['ours_s']:.2f} s ({row['matches']:,})"]
    for base in ("lead()", "match_seq", "v_shape", "running avg", "flink"):
        if isinstance(row.get(base), str):
            parts.append(f"{base}: {row[base]}")
        elif base in row:
            count, seconds = row[base]
            parts.append(f"{base} {seconds:.2f} s ({count:,}), {ratio(seconds, row['ours_s'])}")
    return " | ".join(parts) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--flat-rows", type=int, default=100_000)
    parser.add_argument("--queries", nargs="+", choices=sorted(QUERIES))
    parser.add_argument("--no-flink", action="store_true", help="skip the PyFlink baseline")
    parser.add_argument("--record", action="store_true",
                        help="write benchmarks/results/bench_match_recognize.json for the "
                             "headline of BENCHMARKS.md (make bench-summary)")
    args = parser.parse_args()
    print("| events | query | MATCH_RECOGNIZE (matches) | baselines: time (matches), "
          "baseline/ours |")
    rows = run(args.sizes, args.flat_rows, not args.no_flink, args.queries)
    if args.record:
        record("bench_match_recognize", rows, headline(rows))


BASELINE_NAMES = {"lead()": "hand-written Spark SQL (lead)", "match_seq": "match_seq",
                  "flink": "Flink MATCH_RECOGNIZE"}
"""The baselines a user would pick, as the headline names them (the others compare two of our
own queries and stay in the section below)."""


def headline(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The headline entries of a run: each query at the largest size against the baselines a
    user would pick.

    Example:
        >>> [e["baseline"] for e in headline([{"events": 10, "query": "abc_sum",
        ...     "ours_s": 1.0, "lead()": (3, 2.0), "flink": "not installed"}])]
        ['hand-written Spark SQL (lead)']
    """
    largest = max((r["events"] for r in rows if r["query"] in QUERIES), default=0)
    out = []
    for r in rows:
        if r["events"] != largest or r["query"] not in QUERIES:
            continue
        for key, name in BASELINE_NAMES.items():
            if isinstance(r.get(key), (tuple, list)) and r[key][1]:
                out.append({"function": "MATCH_RECOGNIZE", "question": f"`{r['query']}`",
                            "shape": f"{largest:,} events, 1,000 keys, 50 Zipf types",
                            "ours_s": r["ours_s"], "baseline": name, "baseline_s": r[key][1]})
    return out


if __name__ == "__main__":
    main()
