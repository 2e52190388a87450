"""Benchmark of a standing pattern: a run over 1 % new events against ``match_seq`` over all.

The synthetic stream of ``n`` events (1,000 keys, 50 Zipf types; ``benchmarks.common``) is
copied, sorted by time, into a source table with its change data feed on, in two commits: the
oldest 99 % of the rows, then the newest 1 %. Then, in one process:

1. **first run**: the match job over the first commit (everything matched so far);
2. **incremental**: the match job over the second commit: what a scheduled refresh costs;
3. **full**: ``match_seq`` over the whole source to Spark's ``noop`` sink: what an analyst
   would run each time without the job (the baseline);

for two patterns: ``T01; T02`` (frequent types) and ``T01; T05; T09`` (three components,
rarer), skip-till-next-match, each ``WITHIN 60 SECONDS`` (the stream has about 1,000 events a
second, one a second per key). The ratio is full / incremental: how much a refresh saves.

Run from the project root::

    python -m benchmarks.bench_standing [--events 1000000] [--json PATH]

Example:
    >>> sorted(PATTERNS)
    ['rare3', 'seq2']
"""

from __future__ import annotations

import tempfile
from typing import Any

from benchmarks.common import cached_events, events_cli, ratio, report, sql_best, timed

PATTERNS = {
    "seq2": "PATTERN T01 a; T02 b WITHIN 60 SECONDS",
    "rare3": "PATTERN T01 a; T05 b; T09 c WITHIN 60 SECONDS",
}
NEW_SHARE = 0.01


def _source(spark: Any, settings: Any, n: int) -> tuple[Any, str]:
    """The synthetic stream in a CDF-enabled table of two commits; returns its conf and name."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    from delta_tables.settings import TableConf

    events = cached_events(spark, settings, n).select("id", "key", "type", "ts")
    cut = events.select(F.percentile_approx("ts", 1 - NEW_SHARE)).first()[0]
    name = f"standing_src_{n}"
    location = settings.location_under_warehouse(name)
    (DeltaTable.createOrReplace(spark).location(str(location)).addColumns(events.schema)
     .property("delta.enableChangeDataFeed", "true").execute())
    for part in (events.where(F.col("ts") < cut), events.where(F.col("ts") >= cut)):
        part.write.format("delta").mode("append").save(str(location))
    spark.read.format("delta").load(str(location)).createOrReplaceTempView(name)
    return TableConf(name, location), name


def run(n: int) -> dict[str, Any]:
    """Every measurement of one size; returns the rows of the report."""
    from delta_tables.match_state import MatchConf
    from delta_tables.settings import load_settings
    from jobs.session import build_session
    from jobs.state.match import run_match
    from sql_ext import register_all

    root = tempfile.mkdtemp(prefix="bench_standing_")
    settings = load_settings(overrides={"warehouse": root, "show_progress": False})
    spark = build_session(settings)
    register_all(spark)
    table, name = _source(spark, settings, n)
    first_version = 1  # version 0 created the table, 1 and 2 are the two commits
    rows = []
    for label, pattern in PATTERNS.items():
        conf = MatchConf.from_mapping(settings, f"st_{label}", {
            "source": name, "pattern": pattern, "key_col": "key"})
        first, t_first = timed(lambda: run_match(spark, settings, conf, quiet=True,
                                                 until_version=first_version))
        inc, t_inc = timed(lambda: run_match(spark, settings, conf, quiet=True))
        quoted = pattern.replace("'", "''")
        count, t_full = sql_best(spark, f"SELECT * FROM match_seq('{quoted}', 'key', "
                                        f"TABLE({name}))")
        rows.append({"pattern": label, "events": n, "first_run_s": round(t_first, 2),
                     "incremental_s": round(t_inc, 2), "full_match_seq_s": round(t_full, 2),
                     "full_matches": count, "job_matches": first.matches + inc.matches,
                     "new_events": inc.events_read, "ratio": ratio(t_full, t_inc)})
        print(f"{label}: first run {t_first:.2f}s, incremental ({inc.events_read:,} new) "
              f"{t_inc:.2f}s, match_seq over all {t_full:.2f}s: {ratio(t_full, t_inc)}",
              flush=True)
    spark.stop()
    return report(rows)


def main(argv: list[str] | None = None) -> None:
    events_cli(run, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main()
