"""End-to-end benchmark of ``match_seq`` from Spark SQL against the baselines analysts use.

For each size N (synthetic stream, 1,000 keys, 50 Zipf types, written to Delta once) and each
query, it times in ONE run, on the same data and machine:

* ``match_seq`` through Spark SQL (``key_col`` form, results written to Spark's ``noop`` sink
  so every output column is computed): the one function, ``analyze`` plus Arrow batches, the
  keys of each of its 64 buckets matched together as segments (``udfs/match_seq.py``); and
  the same call with the JVM shim's row filter turned off (``spark.cep.keepRows.enabled =
  false``: every row crosses into Python, as before the shim);
* the same question in plain Spark SQL as an analyst writes it (window functions for
  positions, self-joins, ``min`` to pick the next event);
* Flink SQL ``MATCH_RECOGNIZE`` through PyFlink (batch mode, parallelism 2, same data as CSV),
  run in its own virtual environment (``make flink-venv``; PyFlink pins numpy/pyarrow versions
  that differ from ours), where MATCH_RECOGNIZE can express the query.

Every baseline's match count is printed next to ours, so a disagreement is visible; the
ratios are wall-clock time of the baseline divided by ours.

Run from the project root::

    python -m benchmarks.bench_match_sql [--sizes 10000 100000 1000000] [--json PATH]

Example:
    >>> QUERIES["seq3_next"]["pattern"].startswith("PATTERN T01; T02; T03")
    True
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import bench_session, cached_events, flink_csv, run_flink
from benchmarks.summary import record

WINDOW = "1 MINUTE"

# Positions per key, shared by the plain-SQL baselines.
POSITIONS = ("SELECT key, id, type, ts, v0, "
             "row_number() OVER (PARTITION BY key ORDER BY ts, id) AS pos FROM bench_events")

QUERIES: dict[str, dict[str, Any]] = {
    "seq3_next": {
        "pattern": f"PATTERN T01; T02; T03 WHERE T03.v0 > T01.v0 WITHIN {WINDOW}",
        "policy": "skip-till-next-match",
        # For each T01: the first T02 after it, then the first T03 after that with a larger v0,
        # all within one minute of the T01.
        "sql": f"""
WITH e AS ({POSITIONS}),
a AS (SELECT * FROM e WHERE type = 'T01'),
ab AS (SELECT a.key, a.pos AS apos, a.ts AS ats, a.v0 AS av0, min(b.pos) AS bpos
       FROM a JOIN e b ON b.key = a.key AND b.type = 'T02' AND b.pos > a.pos
                        AND b.ts < a.ts + INTERVAL {WINDOW}
       GROUP BY a.key, a.pos, a.ts, a.v0),
abc AS (SELECT ab.key, ab.apos, min(c.pos) AS cpos
        FROM ab JOIN e c ON c.key = ab.key AND c.type = 'T03' AND c.pos > ab.bpos
                         AND c.v0 > ab.av0 AND c.ts < ab.ats + INTERVAL {WINDOW}
        GROUP BY ab.key, ab.apos)
SELECT * FROM abc""",
        # Reluctant gaps give "the next T02, then the next qualifying T03" from each T01 row.
        "flink": f"""
SELECT count(*) FROM ev MATCH_RECOGNIZE (
  PARTITION BY k ORDER BY ts MEASURES A.id AS aid, C.id AS cid
  ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
  PATTERN (A X1*? B X2*? C) WITHIN INTERVAL '1' MINUTE
  DEFINE A AS A.type = 'T01', B AS B.type = 'T02', C AS C.type = 'T03' AND C.v0 > A.v0)""",
    },
    "seq3_any": {
        "pattern": f"PATTERN T01; T02; T03 WHERE T03.v0 > T01.v0 WITHIN {WINDOW}",
        "policy": "skip-till-any-match",
        "sql": f"""
WITH e AS ({POSITIONS})
SELECT a.key, a.pos, b.pos, c.pos FROM e a
JOIN e b ON b.key = a.key AND b.type = 'T02' AND b.pos > a.pos AND b.ts < a.ts + INTERVAL {WINDOW}
JOIN e c ON c.key = a.key AND c.type = 'T03' AND c.pos > b.pos AND c.v0 > a.v0
         AND c.ts < a.ts + INTERVAL {WINDOW}
WHERE a.type = 'T01'""",
        "flink": None,  # MATCH_RECOGNIZE cannot return every combination (no skip-till-any)
    },
    "seq3_strict": {
        "pattern": ("PATTERN a, b, c DEFINE a AS type = 'T00', b AS type = 'T00', "
                    f"c AS type = 'T01' WHERE c.v0 > a.v0 WITHIN {WINDOW}"),
        "policy": "strict-contiguity",
        "sql": f"""
WITH e AS (SELECT key, type, ts, v0, lead(type, 1) OVER w AS t1, lead(type, 2) OVER w AS t2,
                  lead(v0, 2) OVER w AS v2, lead(ts, 2) OVER w AS ts2
           FROM bench_events WINDOW w AS (PARTITION BY key ORDER BY ts, id))
SELECT * FROM e WHERE type = 'T00' AND t1 = 'T00' AND t2 = 'T01' AND v2 > v0
                  AND ts2 < ts + INTERVAL {WINDOW}""",
        "flink": """
SELECT count(*) FROM ev MATCH_RECOGNIZE (
  PARTITION BY k ORDER BY ts MEASURES A.id AS aid
  ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
  PATTERN (A B C) WITHIN INTERVAL '1' MINUTE
  DEFINE A AS A.type = 'T00', B AS B.type = 'T00', C AS C.type = 'T01' AND C.v0 > A.v0)""",
    },
    "not_next": {
        "pattern": f"PATTERN T01; NOT(T04); T02 WITHIN {WINDOW}",
        "policy": "skip-till-next-match",
        "sql": f"""
WITH e AS ({POSITIONS}),
ab AS (SELECT a.key, a.pos AS apos, min(b.pos) AS bpos FROM e a
       JOIN e b ON b.key = a.key AND b.type = 'T02' AND b.pos > a.pos
                AND b.ts < a.ts + INTERVAL {WINDOW}
       WHERE a.type = 'T01' GROUP BY a.key, a.pos)
SELECT * FROM ab WHERE NOT EXISTS (SELECT 1 FROM e d WHERE d.key = ab.key AND d.type = 'T04'
                                   AND d.pos > ab.apos AND d.pos < ab.bpos)""",
        "flink": f"""
SELECT count(*) FROM ev MATCH_RECOGNIZE (
  PARTITION BY k ORDER BY ts MEASURES A.id AS aid
  ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
  PATTERN (A X*? B) WITHIN INTERVAL '1' MINUTE
  DEFINE A AS A.type = 'T01', X AS X.type <> 'T04', B AS B.type = 'T02')""",
    },
    "kleene_next": {
        "pattern": f"PATTERN T01; T02+ b[]; T03 WHERE b[i].v0 > b[i-1].v0 WITHIN {WINDOW}",
        "policy": "skip-till-next-match",
        "sql": None,  # no honest plain-SQL formulation of a maximal run with iteration predicates
        "flink": None,  # Flink's greedy quantifiers do not backtrack: a different answer
    },
}


def _timed(fn: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def run(sizes: list[int], queries: list[str] | None = None) -> list[dict[str, Any]]:
    """Measure every query at every size; returns one dict per (size, query)."""
    from sql_ext.quoting import sql_string

    spark, settings = bench_session()
    rows: list[dict[str, Any]] = []
    for n in sizes:
        frame = cached_events(spark, settings, n)
        csv_dir = flink_csv(frame, settings, n)
        for name, q in QUERIES.items():
            if queries and name not in queries:
                continue
            ours_df = spark.sql(
                f"SELECT * FROM match_seq(pattern => {sql_string(q['pattern'])}, "
                f"policy => {sql_string(q['policy'])}, key_col => 'key', "
                "events => TABLE(bench_events))")
            ours_count = ours_df.count()
            _, ours_s = _timed(lambda: ours_df.write.format("noop").mode("overwrite").save())
            row: dict[str, Any] = {"events": n, "query": name, "matches": ours_count,
                                   "ours_s": ours_s, "events_per_s": n / ours_s}
            spark.conf.set("spark.cep.keepRows.enabled", "false")
            try:
                _, row["unfiltered_s"] = _timed(
                    lambda: ours_df.write.format("noop").mode("overwrite").save())
            finally:
                spark.conf.unset("spark.cep.keepRows.enabled")
            if q["sql"]:
                base = spark.sql(q["sql"])
                row["sql_matches"] = base.count()
                _, row["sql_s"] = _timed(lambda: base.write.format("noop").mode("overwrite").save())
            if q["flink"]:
                row["flink_matches"], row["flink_s"], row["flink_note"] = run_flink(q["flink"],
                                                                                    csv_dir)
            rows.append(row)
            print(_line(row), flush=True)
        frame.unpersist()
    return rows


def _ratio(base: float | None, ours: float) -> str:
    return "-" if base is None else f"{base / ours:.2f}x"


def _line(r: dict[str, Any]) -> str:
    sql = (f"{r['sql_s']:.2f} s ({r['sql_matches']:,})" if "sql_s" in r else "-")
    flink = (f"{r['flink_s']:.2f} s ({r['flink_matches']:,})" if r.get("flink_s") is not None
             else (r.get("flink_note") or "-"))
    ours = r["ours_s"]
    return (f"| {r['events']:,} | {r['query']} | {ours:.2f} s ({r['matches']:,}) | "
            f"{r['events'] / ours:,.0f} | {r['unfiltered_s']:.2f} s | {sql} | "
            f"{_ratio(r.get('sql_s'), ours)} | "
            f"{flink} | {_ratio(r.get('flink_s'), ours)} |")


def main() -> None:
    """Print the Markdown table; ``--json PATH`` also writes the numbers."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--record", action="store_true",
                        help="write benchmarks/results/bench_match_sql.json for the headline "
                             "of BENCHMARKS.md (make bench-summary)")
    parser.add_argument("--queries", nargs="+", choices=sorted(QUERIES),
                        help="only these questions (default: all)")
    args = parser.parse_args()
    print("| events | query | match_seq (matches) | events/s | match_seq, shim's filter off | "
          "Spark SQL (matches) | SQL/ours | Flink MATCH_RECOGNIZE (matches) | Flink/ours |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    rows = run(args.sizes, args.queries)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2, default=str))
    if args.record:
        record("bench_match_sql", rows, headline(rows))


def headline(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The headline entries of a run: each question at the largest size, against the
    hand-written Spark SQL and, where it ran, Flink's MATCH_RECOGNIZE.

    Example:
        >>> [e["baseline"] for e in headline([{"events": 10, "query": "seq3_next",
        ...     "ours_s": 1.0, "sql_s": 2.0, "flink_s": None}])]
        ['hand-written Spark SQL']
    """
    largest = max((r["events"] for r in rows), default=0)
    out = []
    for r in rows:
        if r["events"] != largest:
            continue
        q = QUERIES[r["query"]]
        question = f"`{r['query']}`: {q['pattern'].split(' WHERE')[0].split(' WITHIN')[0]}, " \
                   f"{q['policy']}"
        shape = f"{largest:,} events, 1,000 keys, 50 Zipf types"
        for name, key in (("hand-written Spark SQL", "sql_s"), ("Flink MATCH_RECOGNIZE",
                                                                 "flink_s")):
            if r.get(key):
                out.append({"function": "match_seq", "question": question, "shape": shape,
                            "ours_s": r["ours_s"], "baseline": name, "baseline_s": r[key]})
    return out


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    main()
