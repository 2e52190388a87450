"""MATCH_RECOGNIZE through Spark SQL against the brute-force oracle of the standard.

Random row patterns (seeded) over random partitions: per match, its number, first row, length
and labels (ALL ROWS PER MATCH, CLASSIFIER per row) must be what the oracle enumerates. The
queries of one batch run as one statement (UNION ALL), as in the conformance suite.
"""

from __future__ import annotations

import json
import random

import pytest

from cep.oracles.row_pattern_oracle import oracle_row_matches
from cep.recognize.parser import parse_row_pattern

SEED = 20261125
PATTERNS = 24
PARTITIONS = 12
BATCH = 8
QUANTIFIERS = ["", "", "", "*", "+", "?", "{2}", "{1,2}", "+?", "*?", "??", "{0,2}?"]


def _pattern(rng: random.Random, depth: int = 0) -> str:
    parts = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(["var"] * 4 + (["group", "alt", "permute"] if depth < 2 else []))
        if kind == "var":
            text = rng.choice("ABC")
        elif kind == "group":
            text = "(" + _pattern(rng, depth + 1) + ")"
        elif kind == "alt":
            text = "(" + _pattern(rng, depth + 1) + " | " + _pattern(rng, depth + 1) + ")"
        else:
            text = "PERMUTE(" + ", ".join(rng.choice("ABC") for _ in range(2)) + ")"
        parts.append(text + rng.choice(QUANTIFIERS))
    return " ".join(parts)


def _cases() -> list[tuple[str, list[list[str]]]]:
    rng = random.Random(SEED)
    cases = []
    for _ in range(PATTERNS):
        partitions = [[rng.choice(["a", "b", "c", "ab", "bc", "abc", ""])
                       for _ in range(rng.randint(0, 7))] for _ in range(PARTITIONS)]
        cases.append((_pattern(rng), partitions))
    return cases


CASES = _cases()


@pytest.fixture(scope="module")
def oracle_view(spark):
    rows = [(k, f"p{j}", ts, row) for k, (_, parts) in enumerate(CASES)
            for j, part in enumerate(parts) for ts, row in enumerate(part, start=1)]
    spark.createDataFrame(rows, "c INT, p STRING, ts INT, v STRING") \
        .createOrReplaceTempView("mr_oracle_rows")
    return "mr_oracle_rows"


def _statement(k: int, pattern: str) -> str:
    return (f"SELECT {k} AS c, to_json(struct(*)) AS r FROM (SELECT p, ts, m, cls FROM "
            f"(SELECT p, ts, v FROM mr_oracle_rows WHERE c = {k}) MATCH_RECOGNIZE ("
            "PARTITION BY p ORDER BY ts MEASURES MATCH_NUMBER() AS m, CLASSIFIER() AS cls "
            f"ALL ROWS PER MATCH OMIT EMPTY MATCHES PATTERN ({pattern}) DEFINE "
            + ", ".join(f"{v} AS v LIKE '%{v.lower()}%'" for v in "ABC" if v in pattern) + "))")


def _expected(pattern: str, partitions: list[list[str]]) -> list[tuple]:
    out = []
    node = parse_row_pattern(pattern)
    for j, part in enumerate(partitions):
        rows = [{v.upper() for v in row} for row in part]
        for number, (start, labels, _) in enumerate(oracle_row_matches(node, rows), start=1):
            out += [(f"p{j}", start + i + 1, number, label) for i, label in enumerate(labels)]
    return sorted(out)


@pytest.mark.parametrize("batch", range(0, PATTERNS, BATCH), ids=lambda b: f"patterns_{b}")
def test_random_patterns_equal_the_oracle(spark, oracle_view, batch: int) -> None:
    chosen = list(range(batch, min(batch + BATCH, PATTERNS)))
    sql = " UNION ALL ".join(_statement(k, CASES[k][0]) for k in chosen)
    found: dict[int, list[tuple]] = {k: [] for k in chosen}
    for row in spark.sql(sql).collect():
        r = json.loads(row.r)
        found[row.c].append((r["p"], r["ts"], r["m"], r["cls"]))
    for k in chosen:
        pattern, partitions = CASES[k]
        assert sorted(found[k]) == _expected(pattern, partitions), pattern
