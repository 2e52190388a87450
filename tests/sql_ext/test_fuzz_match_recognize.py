"""MATCH_RECOGNIZE through ``spark.sql`` against the standard's brute-force oracle, both plans
(issue 47).

Random row patterns (concatenations, which the native plan answers, and patterns with
quantifiers, alternation, groups and PERMUTE, which need the matcher) over random batches
(:mod:`tests.sql_fuzz`: NULL and empty partitions, ties in ``ts`` broken by ``id`` in ORDER
BY, every timestamp type). Each statement runs as the rewriter plans it and again with the
matcher's plan forced (``rewrite_statement(sql, native=False)``); both must give the oracle's
matches: ONE ROW PER MATCH (first row's id, row count, last label) after either skip to the
next row or past the last row, and ALL ROWS PER MATCH (each row's id, MATCH_NUMBER and
CLASSIFIER; an empty match shows as its starting row without a label).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from cep.oracles.row_pattern_oracle import OracleBudgetExceeded, oracle_row_matches
from cep.recognize.parser import parse_row_pattern
from cep.recognize.rewrite import rewrite_statement
from tests.sql_fuzz import (SQL_FUZZ, Batch, Event, batches, by_key, create_view, describe,
                            rows_by_case)

LETTERS = "ABC"
TYPES = ("a", "b", "c", "ab", "bc", "abc")
QUANTIFIERS = ["", "", "", "*", "+", "?", "{2}", "{1,2}", "+?", "*?", "??", "{0,2}?"]


@st.composite
def row_patterns(draw: st.DrawFn, depth: int = 0) -> str:
    """A row pattern over A, B, C; at depth 0 half are plain concatenations (native plan)."""
    if depth == 0 and draw(st.booleans()):
        return " ".join(draw(st.lists(st.sampled_from(LETTERS), min_size=1, max_size=4)))
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["var"] * 4 + (["group", "alt", "permute"] if depth < 2
                                                   else [])))
        if kind == "var":
            text = draw(st.sampled_from(LETTERS))
        elif kind == "group":
            text = "(" + draw(row_patterns(depth + 1)) + ")"
        elif kind == "alt":
            text = f"({draw(row_patterns(depth + 1))} | {draw(row_patterns(depth + 1))})"
        else:
            text = "PERMUTE(" + ", ".join(draw(st.lists(st.sampled_from(LETTERS), min_size=2,
                                                        max_size=2))) + ")"
        parts.append(text + draw(st.sampled_from(QUANTIFIERS)))
    return " ".join(parts)


@st.composite
def clauses(draw: st.DrawFn) -> dict[str, str]:
    return {"pattern": draw(row_patterns()),
            "rows": draw(st.sampled_from(["ONE ROW PER MATCH", "ALL ROWS PER MATCH"])),
            "skip": draw(st.sampled_from(["PAST LAST ROW", "TO NEXT ROW"]))}


def statement(case: int, clause: dict[str, str]) -> str:
    used = [v for v in LETTERS if v in clause["pattern"]]
    defines = ", ".join(f"{v} AS type LIKE '%{v.lower()}%'" for v in used)
    if clause["rows"] == "ONE ROW PER MATCH":
        measures, columns = "FIRST(id) AS first_id, COUNT(*) AS n, CLASSIFIER() AS cls", \
            "key, first_id, n, cls"
    else:
        measures, columns = "MATCH_NUMBER() AS m, CLASSIFIER() AS cls", "key, id, m, cls"
    return (f"SELECT {case} AS c, to_json(struct({columns})) AS r FROM (SELECT key, id, ts, type "
            f"FROM fuzz_mr WHERE c = {case}) MATCH_RECOGNIZE (PARTITION BY key ORDER BY ts, id "
            f"MEASURES {measures} {clause['rows']} AFTER MATCH SKIP {clause['skip']} "
            f"PATTERN ({clause['pattern']}) DEFINE {defines})")


def oracle(events: list[Event], clause: dict[str, str]) -> list[tuple]:
    node = parse_row_pattern(clause["pattern"])
    skip = "past_last" if clause["skip"] == "PAST LAST ROW" else "next_row"
    out = []
    for key, mine in by_key(events, keyed=True).items():
        mine = sorted(mine, key=lambda e: (e.steps, e.id))
        rows = [set((e.type or "").upper()) for e in mine]
        for number, (start, labels, _) in enumerate(oracle_row_matches(node, rows, skip=skip),
                                                    start=1):
            if clause["rows"] == "ONE ROW PER MATCH":
                out.append((key, mine[start].id if labels else None, len(labels),
                            labels[-1] if labels else None))
            elif labels:
                out += [(key, mine[start + i].id, number, label)
                        for i, label in enumerate(labels)]
            else:  # SHOW EMPTY MATCHES, the default: the row where it starts, no label
                out.append((key, mine[start].id, number, None))
    return sorted(out, key=str)


def found(rows: list[Any], cases: int) -> list[list[tuple]]:
    def project(row: Any) -> tuple:
        r = json.loads(row.r)
        if "first_id" in r or "n" in r:
            return (r.get("key"), r.get("first_id"), r["n"], r.get("cls"))
        return (r.get("key"), r["id"], r["m"], r.get("cls"))
    return [sorted(part, key=str) for part in rows_by_case(rows, cases, project)]


@SQL_FUZZ
@given(batch=batches(types=TYPES), data=st.data())
def test_match_recognize_both_plans_equal_the_oracle(spark, batch: Batch,
                                                     data: st.DataObject) -> None:
    chosen = [data.draw(clauses()) for _ in range(batch.cases)]
    try:
        want = [oracle(batch.of_case(case), clause) for case, clause in enumerate(chosen)]
    except OracleBudgetExceeded:
        return  # backtracking beyond the oracle's budget: no verdict on this batch
    create_view(spark, batch, "fuzz_mr")
    sql = " UNION ALL ".join(statement(case, clause) for case, clause in enumerate(chosen))
    planned = found(spark.sql(sql).collect(), batch.cases)
    matcher = found(spark.sql(rewrite_statement(sql, native=False)).collect(), batch.cases)
    for case, clause in enumerate(chosen):
        where = f"case {case} {clause} {batch.ts_type} [{describe(batch.of_case(case))}]"
        assert planned[case] == want[case], f"planned: {where}: {planned[case]} != {want[case]}"
        assert matcher[case] == want[case], f"matcher: {where}: {matcher[case]} != {want[case]}"
