"""Benchmark grid of ``match_seq`` against the hand-written Spark SQL, over data shapes.

One stream (``bench_match_sql``: 1,000 keys, 50 Zipf types) hid how the lead over the
analyst's SQL moves with the data. This grid varies, at ``n`` events each (synthetic stream,
1,000 events/s, seed 2026, Delta, cached before timing):

* **types**: 5, 20 or 100, uniform (``u``) or Zipf with s = 1.1 (``z``);
* **keys**: 10, 1,000 or 100,000;
* **pattern length**: 2 to 5 components, types of rank 1, 2, ... after the first;
* **first component**: the most frequent type (``common``) or the rarest (``rare``; Zipf
  shapes only, where the two differ);
* **policy**: ``strict`` (``,`` links, strict contiguity), ``next`` (skip-till-next-match),
  ``any`` (skip-till-any-match), ``not`` (skip-till-next-match with ``NOT(X)`` after the first
  component, X the type of rank ``length``).

The full product is 500+ cells of several seconds each, so the grid is a star around the
centre shape ``z20`` with 1,000 keys (decision in docs/decisions.md, "The shapes benchmark is a
star"): every data shape runs every policy at length 3 with each first component; the centre
also runs lengths 2, 4 and 5 with the common first component.

Every pattern has a window of about 20 events per key (``WITHIN`` ``20 * keys`` milliseconds at
1,000 events/s), so skip-till-any stays bounded on every shape. The baselines, written as an
analyst would (reviewed for fairness: one window ``PARTITION BY key ORDER BY ts, id``, the
window bound on every join, the matched positions or ids returned):

* ``strict``: ``lead(type, j)`` and ``lead(ts, length - 1)`` over one window;
* ``next``: positions by ``row_number()``, then per component a join to the later events of the
  next type and ``min(pos)`` per partial match;
* ``any``: the same joins without ``min``: every combination;
* ``not``: ``next`` with ``NOT EXISTS`` an X between the first two events.

Each query (ours through ``spark.sql``, and its baseline) is counted once (warm-up), then
written to Spark's ``noop`` sink once; the ratio is baseline / ours (above 1: ours is faster).
Counts that differ are reported in the row (``agree``) and at the end.

``--recognize`` runs the MATCH_RECOGNIZE cells instead: on every shape, three statements (types
of rank 0, 1, 2; AFTER MATCH SKIP PAST LAST ROW; no WITHIN, which Flink and we both accept)
through ``spark.sql`` and through PyFlink 2.3's MATCH_RECOGNIZE on the same rows (batch,
parallelism 2, time measured inside Flink's process, as in ``bench_match_recognize``):

* ``strict``: ``PATTERN (A B C)``, each variable one type (Spark's own ``lead()`` pass);
* ``gaps``: ``PATTERN (A X1*? B X2*? C)``, the reluctant gaps that spell skip-till-next-match
  in MATCH_RECOGNIZE (our determinised matcher);
* ``price_down``: ``START_ROW DOWN+ UP`` on ``v0``, whose DEFINE reads the match (our Pike VM
  with per-thread histories).

Run from the project root::

    python -m benchmarks.bench_shapes [--events 1000000] [--only z20/next] [--json PATH]
    python -m benchmarks.bench_shapes --only /strict/ --allow-absent  # no class check
    python -m benchmarks.bench_shapes --recognize [--only z5] [--json PATH]
    python -m benchmarks.bench_shapes --markdown PATH   # BENCHMARKS.md's table of a run

Example:
    >>> [c.name for c in cells() if c.shape.name == "z20-k1000"][:3]
    ['z20-k1000/strict/L3/common', 'z20-k1000/strict/L3/rare', 'z20-k1000/next/L3/common']
    >>> len(cells())
    64
    >>> print(baseline_sql(Cell(SHAPES[0], "strict", 2, "common"), "t"))  # doctest: +NORMALIZE_WHITESPACE
    WITH e AS (SELECT key, id, type, ts, lead(id, 1) OVER w AS id1, lead(type, 1) OVER w AS t1,
    lead(ts, 1) OVER w AS ts1 FROM t WINDOW w AS (PARTITION BY key ORDER BY ts, id))
    SELECT key, id, id1 FROM e WHERE type = 'T00' AND t1 = 'T01' AND ts1 < ts + INTERVAL 20000 MILLISECONDS
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from typing import Any

from benchmarks.common import ratio, report, timed
from sql_ext.quoting import sql_string as _q

POLICIES = {"strict": "strict-contiguity", "next": "skip-till-next-match",
            "any": "skip-till-any-match", "not": "skip-till-next-match"}
EVENTS_PER_WINDOW = 20
RATE_PER_S = 1000.0


@dataclass(frozen=True)
class Shape:
    """One synthetic stream of the grid."""

    types: int
    zipf: bool
    keys: int

    @property
    def name(self) -> str:
        return f"{'z' if self.zipf else 'u'}{self.types}-k{self.keys}"

    @property
    def window_ms(self) -> int:
        """About ``EVENTS_PER_WINDOW`` events of one key at ``RATE_PER_S`` over all keys."""
        return round(EVENTS_PER_WINDOW * self.keys * 1000 / RATE_PER_S)

    def type_name(self, rank: int) -> str:
        """The generator's name of the type of frequency rank ``rank`` (0: most frequent)."""
        return f"T{rank:0{len(str(self.types - 1))}d}"


CENTRE = Shape(20, True, 1000)
SHAPES = (CENTRE, Shape(5, True, 1000), Shape(100, True, 1000), Shape(20, True, 10),
          Shape(20, True, 100_000), Shape(5, False, 1000), Shape(20, False, 1000),
          Shape(100, False, 1000))


@dataclass(frozen=True)
class Cell:
    """One pattern on one shape."""

    shape: Shape
    policy: str
    length: int
    first: str

    @property
    def name(self) -> str:
        return f"{self.shape.name}/{self.policy}/L{self.length}/{self.first}"

    def types(self) -> list[str]:
        """The type of each bound component, first one first."""
        first = 0 if self.first == "common" else self.shape.types - 1
        return [self.shape.type_name(first)] + [self.shape.type_name(r)
                                               for r in range(1, self.length)]

    def negated(self) -> str:
        return self.shape.type_name(self.length)

    def pattern(self) -> str:
        """The pattern text of ``match_seq``."""
        kinds = self.types()
        if self.policy == "strict":
            body = ", ".join(kinds)
        elif self.policy == "not":
            body = "; ".join([kinds[0], f"NOT({self.negated()})", *kinds[1:]])
        else:
            body = "; ".join(kinds)
        return f"PATTERN {body} WITHIN {self.shape.window_ms} MILLISECONDS"


def cells() -> list[Cell]:
    """The star: every shape x policy at length 3 (both first components on Zipf shapes),
    and the centre's other lengths with the common first component."""
    out = []
    for shape in SHAPES:
        for policy in POLICIES:
            for first in (("common", "rare") if shape.zipf else ("common",)):
                out.append(Cell(shape, policy, 3, first))
    for length in (2, 4, 5):
        for policy in POLICIES:
            out.append(Cell(CENTRE, policy, length, "common"))
    return out


def baseline_sql(cell: Cell, table: str) -> str:
    """The Spark SQL an analyst writes for ``cell`` over ``table``."""
    kinds, within = cell.types(), f"INTERVAL {cell.shape.window_ms} MILLISECONDS"
    last = cell.length - 1
    if cell.policy == "strict":
        leads = ", ".join(f"lead(id, {j}) OVER w AS id{j}, lead(type, {j}) OVER w AS t{j}"
                          for j in range(1, cell.length))
        conds = " AND ".join([f"type = {_q(kinds[0])}"]
                             + [f"t{j} = {_q(kinds[j])}" for j in range(1, cell.length)])
        ids = ", ".join(f"id{j}" for j in range(1, cell.length))
        return (f"WITH e AS (SELECT key, id, type, ts, {leads}, lead(ts, {last}) OVER w AS "
                f"ts{last} FROM {table} WINDOW w AS (PARTITION BY key ORDER BY ts, id))\n"
                f"SELECT key, id, {ids} FROM e WHERE {conds} AND ts{last} < ts + {within}")
    parts = [f"WITH e AS (SELECT key, id, type, ts, row_number() OVER (PARTITION BY key "
             f"ORDER BY ts, id) AS pos FROM {table}),\n"
             f"m0 AS (SELECT key, pos AS p0, ts AS ts0 FROM e WHERE type = {_q(kinds[0])})"]
    for j in range(1, cell.length):
        carried = ", ".join(f"m.p{i}" for i in range(j))
        join = (f"FROM m{j - 1} m JOIN e x ON x.key = m.key AND x.type = {_q(kinds[j])} "
                f"AND x.pos > m.p{j - 1} AND x.ts < m.ts0 + {within}")
        if cell.policy == "any":
            parts.append(f"m{j} AS (SELECT m.key, {carried}, m.ts0, x.pos AS p{j} {join})")
        else:
            parts.append(f"m{j} AS (SELECT m.key, {carried}, m.ts0, min(x.pos) AS p{j} {join} "
                         f"GROUP BY m.key, {carried}, m.ts0)")
    where = ""
    if cell.policy == "not":
        where = (f" WHERE NOT EXISTS (SELECT 1 FROM e d WHERE d.key = m{last}.key AND "
                 f"d.type = {_q(cell.negated())} AND d.pos > m{last}.p0 AND d.pos < m{last}.p1)")
    ids = ", ".join(f"p{i}" for i in range(cell.length))
    return ",\n".join(parts) + f"\nSELECT key, {ids} FROM m{last}{where}"


def ours_sql(cell: Cell, table: str, allow_absent: bool = False) -> str:
    """The ``match_seq`` call for ``cell`` over ``table`` (``allow_absent``: without the check
    that every class of the pattern occurs, which costs a pass over the input)."""
    absent = "allow_absent => true, " if allow_absent else ""
    return (f"SELECT * FROM match_seq(pattern => {_q(cell.pattern())}, "
            f"policy => {_q(POLICIES[cell.policy])}, key_col => 'key', {absent}"
            f"events => TABLE({table}))")


def _table(spark: Any, settings: Any, shape: Shape, n: int) -> str:
    from cep.datasets.synthetic import SyntheticSpec
    from jobs.loaders.generate import write_synthetic

    name = f"shape_{shape.name.replace('-', '_')}_{n}"
    write_synthetic(spark, settings, SyntheticSpec(
        n_events=n, n_keys=shape.keys, n_types=shape.types, zipf_s=1.1 if shape.zipf else 0.0,
        rate_per_s=RATE_PER_S, seed=2026), name, quiet=True)
    spark.table(name).cache().count()
    return name


def _noop(spark: Any, sql: str) -> tuple[int, float]:
    count = spark.sql(sql).count()
    _, seconds = timed(lambda: spark.sql(sql).write.format("noop").mode("overwrite").save())
    return count, seconds


def run(n: int, only: list[str] | None = None, allow_absent: bool = False) -> dict[str, Any]:
    """Every cell whose name contains one of ``only`` (all by default); the report's rows
    (``allow_absent``: see :func:`ours_sql`)."""
    from benchmarks.common import bench_session

    spark, settings = bench_session()
    chosen = [c for c in cells() if not only or any(o in c.name for o in only)]
    rows: list[dict[str, Any]] = []
    tables: dict[Shape, str] = {}
    for cell in chosen:
        if cell.shape not in tables:
            for old in tables.values():
                spark.table(old).unpersist()
            tables = {cell.shape: _table(spark, settings, cell.shape, n)}
        table = tables[cell.shape]
        matches, ours = _noop(spark, ours_sql(cell, table, allow_absent))
        base_matches, base = _noop(spark, baseline_sql(cell, table))
        row = {"cell": cell.name, "events": n, "pattern": cell.pattern(),
               "policy": POLICIES[cell.policy], "matches": matches, "ours_s": round(ours, 2),
               "sql_matches": base_matches, "sql_s": round(base, 2),
               "ratio": ratio(base, ours), "agree": matches == base_matches}
        rows.append(row)
        print(f"{cell.name}: ours {ours:.2f} s ({matches:,}), SQL {base:.2f} s "
              f"({base_matches:,}), {row['ratio']}{'' if row['agree'] else '  DISAGREE'}",
              flush=True)
    spark.stop()
    worst = {}
    for policy in POLICIES:
        mine = [r for r in rows if f"/{policy}/" in r["cell"]]
        if mine:
            low = min(mine, key=lambda r: r["sql_s"] / r["ours_s"])
            worst[policy] = {"cell": low["cell"], "ratio": low["ratio"]}
            print(f"worst {policy}: {low['cell']} {low['ratio']}")
    result = report(rows)
    result["worst"] = worst
    result["disagree"] = [r["cell"] for r in rows if not r["agree"]]
    return result


RECOGNIZE = {
    "strict": ("MEASURES FIRST(A.id) AS a_id, LAST(C.id) AS c_id", "(A B C)",
               "A AS A.type = '{0}', B AS B.type = '{1}', C AS C.type = '{2}'"),
    "gaps": ("MEASURES FIRST(A.id) AS a_id, LAST(C.id) AS c_id", "(A X1*? B X2*? C)",
             "A AS A.type = '{0}', B AS B.type = '{1}', C AS C.type = '{2}'"),
    "price_down": ("MEASURES FIRST(START_ROW.id) AS start_id, LAST(UP.id) AS up_id",
                   "(START_ROW DOWN+ UP)",
                   "DOWN AS (LAST(DOWN.v0, 1) IS NULL AND DOWN.v0 < START_ROW.v0) OR "
                   "DOWN.v0 < LAST(DOWN.v0, 1), UP AS UP.v0 > LAST(DOWN.v0, 1)"),
}
"""The MATCH_RECOGNIZE cells: measures, pattern and DEFINE (``{k}``: the type of rank k)."""


def recognize_sql(shape: Shape, query: str, table: str, key: str = "key",
                  select: str = "*") -> str:
    """One MATCH_RECOGNIZE cell as a statement over ``table`` (Flink: ``ev``, key ``k``).

    Example:
        >>> print(recognize_sql(CENTRE, "strict", "t"))  # doctest: +NORMALIZE_WHITESPACE
        SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY key ORDER BY ts
        MEASURES FIRST(A.id) AS a_id, LAST(C.id) AS c_id AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B C) DEFINE A AS A.type = 'T00', B AS B.type = 'T01', C AS C.type = 'T02')
    """
    measures, pattern, define = RECOGNIZE[query]
    define = define.format(*(shape.type_name(r) for r in range(3)))
    return (f"SELECT {select} FROM {table} MATCH_RECOGNIZE (PARTITION BY {key} ORDER BY ts "
            f"{measures} AFTER MATCH SKIP PAST LAST ROW PATTERN {pattern} DEFINE {define})")


def recognize(n: int, only: list[str] | None = None,
              queries: list[str] | None = None) -> dict[str, Any]:
    """The MATCH_RECOGNIZE cells of every shape whose name contains one of ``only`` (the
    queries of :data:`RECOGNIZE` named in ``queries``, default all)."""
    from benchmarks.common import bench_session, run_flink

    spark, settings = bench_session()
    rows: list[dict[str, Any]] = []
    for shape in [s for s in SHAPES if not only or any(o in s.name for o in only)]:
        table = _table(spark, settings, shape, n)
        csv_dir = settings.scratch_dir / f"bench_shape_csv_{shape.name}_{n}"
        if not csv_dir.exists():
            (spark.table(table).selectExpr(
                "id", "CAST(key AS STRING) AS k", "type",
                "date_format(ts, 'yyyy-MM-dd HH:mm:ss.SSS') AS ts", "v0")
             .coalesce(1).write.mode("overwrite").option("header", "false").csv(str(csv_dir)))
        for query in [q for q in RECOGNIZE if not queries or q in queries]:
            matches, ours = _noop(spark, recognize_sql(shape, query, table))
            count, flink, note = run_flink(
                recognize_sql(shape, query, "ev", key="k", select="count(*)"), csv_dir)
            row = {"cell": f"{shape.name}/{query}", "events": n, "matches": matches,
                   "ours_s": round(ours, 2), "flink_matches": count,
                   "flink_s": None if flink is None else round(flink, 2),
                   "ratio": ratio(flink, ours) if flink is not None else note}
            rows.append(row)
            print(f"{row['cell']}: ours {ours:.2f} s ({matches:,}), Flink "
                  f"{'-' if flink is None else f'{flink:.2f} s'} ({count}), {row['ratio']}",
                  flush=True)
        spark.table(table).unpersist()
    spark.stop()
    return report(rows)


def profile(n: int, names: list[str], repeats: int = 3) -> dict[str, Any]:
    """Where a cell's time goes: best of ``repeats`` of the call, the call with the shim's row
    filter off, a no-op Arrow UDTF over the rows the filter keeps (same 64 key buckets: the
    transfer into Python and back, no matching), the kept rows shuffled by key alone, and the
    SQL baseline. The call minus the no-op is the matching itself."""
    from benchmarks.common import bench_session, register_noop
    from udfs.match_seq_plan import KEY_BUCKETS

    spark, settings = bench_session()
    register_noop(spark)
    rows = []
    for cell in [c for c in cells() if c.name in names]:
        table = _table(spark, settings, cell.shape, n)
        kinds = cell.types() + ([cell.negated()] if cell.policy == "not" else [])
        kept = (f"SELECT * FROM {table}" if cell.policy == "strict" else
                f"SELECT * FROM {table} WHERE type IN ({', '.join(_q(k) for k in kinds)})")
        queries = {
            "call": ours_sql(cell, table),
            "noop UDTF over the kept rows": (f"SELECT * FROM noop_arrow(TABLE({kept}) "
                                             f"PARTITION BY pmod(hash(key), {KEY_BUCKETS}))"),
            "kept rows shuffled by key": f"SELECT /*+ REPARTITION(2, key) */ * FROM ({kept})",
            "SQL baseline": baseline_sql(cell, table)}
        row: dict[str, Any] = {"cell": cell.name,
                               "kept_rows": spark.sql(f"SELECT count(*) FROM ({kept})").first()[0]}
        for label, sql in queries.items():
            spark.sql(sql).count()
            row[label] = round(min(timed(lambda: spark.sql(sql).write.format("noop")
                                         .mode("overwrite").save())[1]
                                   for _ in range(repeats)), 2)
        spark.conf.set("spark.cep.keepRows.enabled", "false")
        try:
            row["call, row filter off"] = round(min(
                timed(lambda: spark.sql(queries["call"]).write.format("noop")
                      .mode("overwrite").save())[1] for _ in range(repeats)), 2)
        finally:
            spark.conf.unset("spark.cep.keepRows.enabled")
        rows.append(row)
        print(row, flush=True)
        spark.table(table).unpersist()
    spark.stop()
    return report(rows)


def markdown(result: dict[str, Any]) -> str:
    """The rows of a run as BENCHMARKS.md's table: one line per cell, the ratio in bold when
    it misses the issue's target (2x of the SQL for next, any and NOT; 1x for strict).

    Example:
        >>> row = {"cell": "z5-k10/strict/L3/common", "matches": 3, "ours_s": 2.0,
        ...        "sql_matches": 3, "sql_s": 1.0, "ratio": "0.50x", "agree": True}
        >>> print(markdown({"rows": [row]}).splitlines()[-1])
        | z5-k10/strict/L3/common | 3 | 2.00 s | 1.00 s | **0.50x** |
    """
    lines = ["| cell | matches | `match_seq` | hand-written SQL | SQL / ours |",
             "|---|---:|---:|---:|---:|"]
    for r in result["rows"]:
        target = 1.0 if "/strict/" in r["cell"] else 2.0
        value = r["sql_s"] / r["ours_s"]
        shown = r["ratio"] if value >= target else f"**{r['ratio']}**"
        count = f"{r['matches']:,}" if r["agree"] else f"{r['matches']:,} (SQL {r['sql_matches']:,})"
        lines.append(f"| {r['cell']} | {count} | {r['ours_s']:.2f} s | {r['sql_s']:.2f} s | "
                     f"{shown} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """``--events N``, ``--only NAME ...`` (substrings of cell names), ``--json PATH``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--only", nargs="+", default=None)
    parser.add_argument("--json", default=None)
    parser.add_argument("--markdown", default=None,
                        help="print the table of an earlier run's --json file and stop")
    parser.add_argument("--profile", nargs="+", default=None, metavar="CELL",
                        help="break these cells' time down (profile()) instead of the grid")
    parser.add_argument("--recognize", action="store_true",
                        help="the MATCH_RECOGNIZE cells against PyFlink (recognize())")
    parser.add_argument("--queries", nargs="+", choices=sorted(RECOGNIZE), default=None,
                        help="with --recognize: only these queries")
    parser.add_argument("--allow-absent", action="store_true",
                        help="our calls without the check that every class occurs")
    args = parser.parse_args(argv)
    if args.recognize:
        result = recognize(args.events, args.only, args.queries)
    elif args.profile:
        result = profile(args.events, args.profile)
    elif args.markdown:
        with open(args.markdown, encoding="utf-8") as source:
            print(markdown(json.load(source)))
        return
    else:
        result = run(args.events, args.only, args.allow_absent)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(result, out, indent=2)


if __name__ == "__main__":
    main()
