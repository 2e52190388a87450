"""The row pattern constructs of issue 49 through ``spark.sql``, both plans, against the oracle.

Random row patterns (seeded; half plain concatenations, which the native plan may answer) over
random partitions whose ``x`` values are distinct (so ``max_by`` has no ties). The oracle
(:mod:`cep.oracles.row_pattern_oracle`) gives each match's labels; the measures are then
computed here from their definitions in Trino's documentation ("Row pattern recognition
expressions"): ``CLASSIFIER(U)`` the label of the last row mapped to ``U`` (RUNNING: up to the
current row), ``PREV``/``NEXT`` around ``CLASSIFIER`` the label of a row of the match at a
physical offset (NULL outside it), ``array_agg(CLASSIFIER())`` the labels in order,
``max_by``/``stddev_pop``/``count_if`` over one variable's rows. DEFINE reads
``MATCH_NUMBER()`` and ``CLASSIFIER(U)`` of the match so far. Each statement runs as the
rewriter plans it and with the matcher's plan forced; both must equal the oracle.
"""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest

from cep.oracles.row_pattern_oracle import OracleBudgetExceeded, oracle_row_matches
from cep.recognize.parser import parse_row_pattern
from cep.recognize.rewrite import rewrite_statement
from tests.sql_ext.test_match_recognize_oracle import _pattern

SEED = 20261127
PATTERNS = 16
PARTITIONS = 8
BATCH = 8
U = ("A", "B")

ONE = ("CLASSIFIER(U) AS cu, PREV(CLASSIFIER()) AS pc, NEXT(FIRST(CLASSIFIER(U))) AS nfu, "
       "array_agg(CLASSIFIER()) AS cls, max_by(U.ts, U.x) AS tmax, stddev_pop(U.x) AS sd, "
       "count_if(x > 5) AS big, MATCH_NUMBER() AS m")
ALL = ("CLASSIFIER(U) AS cu, FINAL CLASSIFIER(U) AS fcu, PREV(CLASSIFIER()) AS pc, "
       "collect_list(x) AS xs, MATCH_NUMBER() AS m")
# B only in odd-numbered matches; C only when the last A-or-B row so far was a B.
DEFINE = {"A": "A AS v LIKE '%a%'", "B": "B AS v LIKE '%b%' AND MATCH_NUMBER() % 2 = 1",
          "C": "C AS v LIKE '%c%' AND CLASSIFIER(U) = 'B'"}


def _cases() -> list[tuple[str, str, list[list[tuple[str, int]]]]]:
    rng = random.Random(SEED)
    cases = []
    for k in range(PATTERNS):
        pattern = (" ".join(rng.choice("ABC") for _ in range(rng.randint(1, 3))) if k % 2
                   else _pattern(rng))
        for letter in U:  # SUBSET U = (A, B) needs both in the pattern
            if letter not in pattern:
                pattern += f" {letter}?"
        partitions = []
        for _ in range(PARTITIONS):
            n = rng.randint(0, 7)
            xs = rng.sample(range(1, 20), n)
            partitions.append([(rng.choice(["a", "b", "c", "ab", "bc", "abc", ""]), x)
                               for x in xs])
        cases.append((pattern, rng.choice(["one", "all"]), partitions))
    return cases


CASES = _cases()


@pytest.fixture(scope="module")
def standard_view(spark):
    rows = [(k, f"p{j}", ts, v, x) for k, (_, _, parts) in enumerate(CASES)
            for j, part in enumerate(parts) for ts, (v, x) in enumerate(part, start=1)]
    spark.createDataFrame(rows, "c INT, p STRING, ts INT, v STRING, x INT") \
        .createOrReplaceTempView("mr_standard_rows")
    return "mr_standard_rows"


def _statement(k: int, pattern: str, rows: str) -> str:
    measures, shape = (ONE, "ONE ROW PER MATCH") if rows == "one" else (ALL, "ALL ROWS PER MATCH")
    return (f"SELECT {k} AS c, to_json(struct(*), map('ignoreNullFields', 'false')) AS r FROM "
            f"(SELECT p, ts, v, x FROM mr_standard_rows WHERE c = {k}) MATCH_RECOGNIZE ("
            f"PARTITION BY p ORDER BY ts MEASURES {measures} {shape} PATTERN ({pattern}) "
            "SUBSET U = (A, B) DEFINE " + ", ".join(d for v, d in DEFINE.items() if v in pattern)
            + ")")


def _last_in(labels: list[str], members: tuple[str, ...]) -> str | None:
    return next((v for v in reversed(labels) if v in members), None)


def _reads(part: list[tuple[str, int]]) -> Any:
    def reads(var: str, i: int, before: tuple[str, ...], number: int) -> bool:
        if var == "B":
            return number % 2 == 1
        if var == "C":
            return _last_in(list(before), U) == "B"
        return True
    return reads


def _expected(pattern: str, rows: str, partitions: list[list[tuple[str, int]]]) -> list[Any]:
    out: list[Any] = []
    node = parse_row_pattern(pattern)
    for j, part in enumerate(partitions):
        letters = [{v.upper() for v in row} for row, _ in part]
        xs = [x for _, x in part]
        matches = oracle_row_matches(node, letters, reads=_reads(part))
        for number, (start, labels, _) in enumerate(matches, start=1):
            mine = xs[start:start + len(labels)]
            if rows == "one":
                if not labels:
                    out.append([f"p{j}", None, None, None, [], None, None, 0, number])
                    continue
                first_u = next((i for i, v in enumerate(labels) if v in U), None)
                u_rows = [i for i, v in enumerate(labels) if v in U]
                u_x = [mine[i] for i in u_rows]
                mean = sum(u_x) / len(u_x) if u_x else 0
                out.append([
                    f"p{j}", _last_in(labels, U),
                    labels[-2] if len(labels) >= 2 else None,
                    labels[first_u + 1] if first_u is not None and first_u + 1 < len(labels)
                    else None,
                    list(labels),
                    start + 1 + u_rows[u_x.index(max(u_x))] if u_x else None,
                    math.sqrt(sum((x - mean) ** 2 for x in u_x) / len(u_x)) if u_x else None,
                    sum(1 for x in mine if x > 5), number])
            elif not labels:  # an empty match shows its starting row, every measure NULL
                out.append([f"p{j}", start + 1, None, None, None, [], number, *part[start]])
            else:
                for i, label in enumerate(labels):
                    out.append([f"p{j}", start + 1 + i, _last_in(list(labels[:i + 1]), U),
                                _last_in(list(labels), U), labels[i - 1] if i else None,
                                mine[:i + 1], number, *part[start + i]])
    return sorted(out, key=json.dumps)


def _found(spark: Any, sql: str, chosen: list[int]) -> dict[int, list[Any]]:
    found: dict[int, list[Any]] = {k: [] for k in chosen}
    for row in spark.sql(sql).collect():
        found[row.c].append(list(json.loads(row.r).values()))
    return {k: sorted(v, key=json.dumps) for k, v in found.items()}


def _close(found: list[Any], want: list[Any]) -> bool:
    """Equal, with floats (stddev_pop) compared to 1e-9."""
    if len(found) != len(want):
        return False
    for a, b in zip(found, want):
        for x, y in zip(a, b):
            if isinstance(x, float) or isinstance(y, float):
                if x is None or y is None or not math.isclose(x, y, abs_tol=1e-9):
                    return False
            elif x != y:
                return False
    return len(a) == len(b) if found else True


@pytest.mark.parametrize("batch", range(0, PATTERNS, BATCH), ids=lambda b: f"patterns_{b}")
def test_standard_constructs_both_plans_equal_the_oracle(spark, standard_view,
                                                         batch: int) -> None:
    chosen = []
    want = {}
    for k in range(batch, min(batch + BATCH, PATTERNS)):
        pattern, rows, partitions = CASES[k]
        try:
            want[k] = _expected(pattern, rows, partitions)
        except OracleBudgetExceeded:
            continue
        chosen.append(k)
    sql = " UNION ALL ".join(_statement(k, *CASES[k][:2]) for k in chosen)
    planned = _found(spark, sql, chosen)
    matcher = _found(spark, rewrite_statement(sql, native=False), chosen)
    for k in chosen:
        where = f"{CASES[k][0]!r} {CASES[k][1]} {CASES[k][2]}"
        assert _close(planned[k], want[k]), f"planned {where}:\n{planned[k]}\n!=\n{want[k]}"
        assert _close(matcher[k], want[k]), f"matcher {where}:\n{matcher[k]}\n!=\n{want[k]}"
