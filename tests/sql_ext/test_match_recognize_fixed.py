"""Fixed-length patterns: Spark's native plan equals the matcher's plan, row for row.

``cep.recognize.fixed`` answers ``PATTERN (A B C)``-shaped clauses without the matcher (SKIP
TO NEXT ROW, ONE ROW PER MATCH, the measures it can read at fixed positions) or drops every
row outside a possible match before the matcher runs (any other skip or output mode). Random
seeded clauses over random partitions (ties in ORDER BY, NULLs, PREV/NEXT in DEFINE and
MEASURES) run both ways, ``rewrite_statement(sql)`` and ``rewrite_statement(sql,
native=False)`` (the matcher over every row), and must give the same rows.
"""

from __future__ import annotations

import json
import random

import pytest

from cep.recognize.rewrite import rewrite_statement

SEED = 20261126
CLAUSES = 48
BATCH = 24
DEFINES = ["v = '{l}'", "v = '{l}' AND x > PREV(x)", "v <> '{l}' OR NEXT(x) IS NULL",
           "x IS NULL OR x % 2 = 0", "x >= PREV(x, 2)", "v = '{l}' OR NEXT(v, 2) = 'c'", None]
MEASURES_NATIVE = ["FIRST(A.x) AS m{i}", "LAST({V}.ts) AS m{i}", "LAST({V}.x, 1) AS m{i}",
                   "FIRST({V}.x, 2) AS m{i}", "x AS m{i}", "PREV(FIRST({V}.x), 2) AS m{i}",
                   "NEXT(LAST({V}.ts)) AS m{i}", "COUNT(*) AS m{i}", "COUNT({V}.*) AS m{i}",
                   "COUNT({V}.x) AS m{i}", "MIN({V}.x) AS m{i}", "MAX(x) + 1 AS m{i}",
                   "CLASSIFIER() AS m{i}", "LAST({V}.x) - FIRST(x) AS m{i}"]
MEASURES_MATCHER = ["SUM({V}.x) AS m{i}", "AVG(x) AS m{i}", "MATCH_NUMBER() AS m{i}"]


def _clause(rng: random.Random, k: int) -> tuple[str, str]:
    """``(statement over case k's rows, the plan expected: native, filtered or matcher)``."""
    order = [rng.choice("ABC") for _ in range(rng.randint(1, 4))]
    used = sorted(set(order))
    defines = []
    for v in used:
        text = rng.choice(DEFINES)
        if text is not None:
            defines.append(f"{v} AS " + text.format(l=rng.choice("abc")))
    rows = rng.choice(["one", "one", "all"])
    skips = ["TO NEXT ROW", "TO NEXT ROW", "PAST LAST ROW"]
    skips += [f"TO FIRST {v}" for v in used if order.index(v) > 0]
    skips += [f"TO LAST {v}" for v in used if len(order) - 1 - order[::-1].index(v) > 0]
    skip = rng.choice(skips)
    pool = MEASURES_NATIVE + (MEASURES_MATCHER if rng.random() < 0.25 else [])
    measures = [rng.choice(pool).format(V=rng.choice(used), i=i) for i in range(rng.randint(1, 4))]
    measures = [m.replace("A.", f"{used[0]}.") for m in measures]
    pattern = " ".join(order) if rng.random() < 0.7 else f"{order[0]} ({' '.join(order[1:])})"
    # (A ()) is A: the empty pattern inside a concatenation matches without a row
    sql = (f"SELECT * FROM (SELECT p, ts, v, x FROM mr_fixed_rows WHERE c = {k}) "
           f"MATCH_RECOGNIZE (PARTITION BY p ORDER BY ts MEASURES {', '.join(measures)} "
           f"{'ALL ROWS PER MATCH' if rows == 'all' else 'ONE ROW PER MATCH'} "
           f"AFTER MATCH SKIP {skip} PATTERN ({pattern}) "
           f"{'DEFINE ' + ', '.join(defines) if defines else ''})")
    native = (rows == "one" and (skip == "TO NEXT ROW" or skip == "PAST LAST ROW"
                                 and _disjoint(order, defines))
              and not any(m in " ".join(measures) for m in ("SUM", "AVG", "MATCH_NUMBER")))
    return sql, "native" if native else "filtered"


def _disjoint(order: list[str], defines: list[str]) -> bool:
    """Whether no two starts can overlap: at every overlap, some row needs two letters."""
    letter = {d[0]: d[10] for d in defines if d[5:10] == "v = '"}  # "A AS v = 'a'..."
    return all(any(letter.get(order[j + m], "?") != letter.get(order[m], "?") != "?"
                   and "?" != letter.get(order[j + m], "?") for m in range(len(order) - j))
               for j in range(1, len(order)))


def _cases() -> list[tuple[str, str, list[tuple]]]:
    rng = random.Random(SEED)
    out = []
    for k in range(CLAUSES):
        sql, plan = _clause(rng, k)
        rows = []
        for j in range(rng.randint(1, 4)):
            ts = 0
            for _ in range(rng.randint(0, 12)):
                ts += rng.choice([0, 1, 1, 2])  # equal ts: the tiebreak orders them
                rows.append((k, f"p{j}", ts, rng.choice("abc"),
                             None if rng.random() < 0.15 else rng.randint(0, 9)))
        out.append((sql, plan, rows))
    return out


CASES = _cases()


@pytest.fixture(scope="module")
def fixed_view(spark):
    rows = [row for _, _, part in CASES for row in part]
    spark.createDataFrame(rows, "c INT, p STRING, ts INT, v STRING, x INT") \
        .createOrReplaceTempView("mr_fixed_rows")
    return "mr_fixed_rows"


def _answers(spark, sqls: list[str]) -> list[list[str]]:
    union = " UNION ALL ".join(
        f"SELECT {k} AS k, to_json(struct(*), map('ignoreNullFields', 'false')) AS r "
        f"FROM ({sql})" for k, sql in enumerate(sqls))
    found: list[list[str]] = [[] for _ in sqls]
    for row in spark.sql(union).collect():
        found[row.k].append(row.r)
    return [sorted(rows) for rows in found]


def test_plans_are_the_expected_ones() -> None:
    kinds = {"native": 0, "filtered": 0}
    for sql, plan, _ in CASES:
        text = rewrite_statement(sql)
        found = "filtered" if "cep_match_recognize" in text else "native"
        assert found == plan, f"{sql}\nexpected the {plan} plan, found the {found} plan"
        assert plan == "native" or "__mr_keep" in text, f"{sql}: no window filter"
        kinds[plan] += 1
    assert min(kinds.values()) >= 10, f"too few clauses of one plan: {kinds}"


@pytest.mark.parametrize("batch", range(0, CLAUSES, BATCH), ids=lambda b: f"clauses_{b}")
def test_native_plan_equals_the_matcher(spark, fixed_view, batch: int) -> None:
    cases = CASES[batch:batch + BATCH]
    ours = _answers(spark, [rewrite_statement(sql) for sql, _, _ in cases])
    matcher = _answers(spark, [rewrite_statement(sql, native=False) for sql, _, _ in cases])
    failures = [f"{sql} ({plan} plan)\nmatcher: {json.dumps(m)}\nfound:   {json.dumps(o)}"
                for (sql, plan, _), o, m in zip(cases, ours, matcher) if o != m]
    assert not failures, "\n\n".join(failures)
    assert sum(len(m) for m in matcher) > 0, "no batch should be without matches"
