"""What the facts about the whole input cost the SQL functions (issue 47, ``udfs/facts.py``).

Every ``match_seq`` call whose pattern reads classes from the type column (and every
``cet_trends`` call with ``type_col``, every ``predict_match`` call that trains on its input)
asks the JVM shim for facts about its whole input (does each class occur, and for a trailing NOT the newest
event time): one scalar subquery over the same Delta table, run before the tasks. This times,
in one run and on the same data (the benchmark stream of ``bench_match_sql``: 1,000 keys, 50
Zipf types, read from Delta, not cached), each call with the facts (the default) and with the
rule off (``spark.cep.facts.enabled = false``: no check), best of three, written to Spark's
``noop`` sink; the ratio is the cost of the check. A trailing NOT cannot run without its facts,
so it is timed with them only.

Run from the project root::

    python -m benchmarks.bench_facts [--sizes 1000000] [--json PATH]

Example:
    >>> sorted(QUERIES)
    ['not_next', 'predict_next', 'seq3_next', 'strict3', 'trailing_not', 'trends_count']
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from benchmarks.common import bench_session, cached_events

MATCH = ("match_seq(pattern => {pattern}, policy => {policy}, key_col => 'key', "
         "events => TABLE({table}))")
QUERIES = {
    "seq3_next": MATCH.format(pattern="'PATTERN T01; T02; T03 WHERE T03.v0 > T01.v0 WITHIN 1 "
                              "MINUTE'", policy="'skip-till-next-match'", table="{table}"),
    "not_next": MATCH.format(pattern="'PATTERN T01; NOT(T04); T02 WITHIN 1 MINUTE'",
                             policy="'skip-till-next-match'", table="{table}"),
    "strict3": MATCH.format(pattern="'PATTERN T00, T00, T01 WITHIN 1 MINUTE'",
                            policy="'strict-contiguity'", table="{table}"),
    "trailing_not": MATCH.format(pattern="'PATTERN T01; NOT(T02) WITHIN 1 MINUTE'",
                                 policy="'skip-till-next-match'", table="{table}"),
    "trends_count": ("cet_trends(pattern => 'PATTERN T01+ a[] WHERE a[i].v0 > a[i-1].v0 WITHIN "
                     "1 MINUTE', key_col => 'key', type_col => 'type', output => 'count', "
                     "events => TABLE({table}))"),
    "predict_next": ("predict_match(subscription => 'PATTERN T01, T02; T03', lookahead => 3, "
                     "key_col => 'key', events => TABLE({table}))"),
}
FACTS = "spark.cep.facts.enabled"


def best_of(spark: Any, sql: str, runs: int = 3) -> float:
    """The fastest of ``runs`` executions of ``sql`` into the noop sink, in seconds."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        spark.sql(sql).write.format("noop").mode("overwrite").save()
        times.append(time.perf_counter() - start)
    return min(times)


def run(sizes: list[int]) -> list[dict[str, Any]]:
    """Time every query with and without facts at every size."""
    spark, settings = bench_session()
    out = []
    for n in sizes:
        cached_events(spark, settings, n).unpersist()
        for name, call in QUERIES.items():
            sql = "SELECT * FROM " + call.format(table=f"bench_events_{n}")
            matches = spark.sql(sql).count()
            with_facts = best_of(spark, sql)
            without = None
            if name != "trailing_not":
                spark.conf.set(FACTS, "false")
                try:
                    without = best_of(spark, sql)
                finally:
                    spark.conf.unset(FACTS)
            row = {"n": n, "query": name, "matches": matches, "facts_s": round(with_facts, 2),
                   "no_facts_s": None if without is None else round(without, 2),
                   "ratio": None if without is None else round(with_facts / without, 2)}
            print(json.dumps(row), flush=True)
            out.append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--json", help="write the rows to this file")
    args = parser.parse_args()
    rows = run(args.sizes)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
