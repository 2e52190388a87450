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


# --- DEFINE conditions that read the match, written in SQL --------------------------------------
# Each: (SQL condition after the letter test, plain function of (x, i, var, labels before i)).
def _reads(kind: int, c: int) -> tuple[str, object]:
    def seq(var: str, labels: tuple) -> tuple:
        return labels + (var,)  # the row tested counts as mapped to its variable

    def rows_of(i: int, var: str, labels: tuple, names: set | None) -> list[int]:
        start = i - len(labels)
        return [start + k for k, v in enumerate(seq(var, labels)) if names is None or v in names]

    if kind == 0:
        return (f"COUNT(A.*) <= {c}", lambda x, i, var, labels: seq(var, labels).count("A") <= c)
    if kind == 1:
        return ("x >= FIRST(x)", lambda x, i, var, labels: x[i] >= x[i - len(labels)])
    if kind == 2:
        def sum_b(x, i, var, labels):
            hits = rows_of(i, var, labels, {"B"})
            return bool(hits) and sum(x[r] for r in hits) < c + 3
        return (f"SUM(B.x) < {c + 3}", sum_b)
    if kind == 3:
        return ("COALESCE(PREV(CLASSIFIER()), 'A') = 'A'",
                lambda x, i, var, labels: not labels or labels[-1] == "A")
    if kind == 4:
        def above_last_c(x, i, var, labels):
            hits = rows_of(i, var, labels, {"C"})
            return len(hits) >= 2 and x[i] > x[hits[-2]]
        return ("x > LAST(C.x, 1)", above_last_c)
    return (f"AVG(x) * 2 <= {c + 2}",
            lambda x, i, var, labels: 2 * sum(x[r] for r in rows_of(i, var, labels, None))
            <= (c + 2) * (len(labels) + 1))


def _reading_cases() -> list[tuple[str, dict[str, tuple[int, int]], list[list[tuple]]]]:
    rng = random.Random(SEED + 1)
    cases = []
    for _ in range(30):
        partitions = [[(rng.choice(["a", "b", "c", "ab", "abc", "abc", "abc"]), rng.randint(0, 3))
                       for _ in range(rng.randint(0, 7))] for _ in range(PARTITIONS)]
        pattern = _pattern(rng)
        reads = {v: (rng.randint(0, 5), rng.randint(0, 3)) for v in "ABC"
                 if v in pattern and rng.random() < 0.9}
        # A condition may only name variables of the pattern (CEP-MR-201 otherwise).
        named = {0: "A", 2: "B", 4: "C"}
        reads = {v: (kind, c) if named.get(kind, v) in pattern else (kind + 1, c)
                 for v, (kind, c) in reads.items()}
        cases.append((pattern, reads, partitions))
    return cases


READING = _reading_cases()


@pytest.fixture(scope="module")
def reading_view(spark):
    rows = [(k, f"p{j}", ts, v, x) for k, (_, _, parts) in enumerate(READING)
            for j, part in enumerate(parts) for ts, (v, x) in enumerate(part, start=1)]
    spark.createDataFrame(rows, "c INT, p STRING, ts INT, v STRING, x INT") \
        .createOrReplaceTempView("mr_reading_rows")
    return "mr_reading_rows"


def test_define_reading_the_match_equals_the_oracle(spark, reading_view) -> None:
    """The translator's condition trees (SQL text -> tree -> per-thread evaluation) against
    plain Python functions of the labels, through the oracle, on seeded random patterns."""
    parts = []
    for k, (pattern, reads, _) in enumerate(READING):
        defines = ", ".join(
            f"{v} AS v LIKE '%{v.lower()}%'" + (f" AND {_reads(*reads[v])[0]}" if v in reads
                                                else "")
            for v in "ABC" if v in pattern)
        parts.append(
            f"SELECT {k} AS c, to_json(struct(*)) AS r FROM (SELECT p, ts, m, cls FROM "
            f"(SELECT p, ts, v, x FROM mr_reading_rows WHERE c = {k}) MATCH_RECOGNIZE ("
            "PARTITION BY p ORDER BY ts MEASURES MATCH_NUMBER() AS m, CLASSIFIER() AS cls "
            f"ALL ROWS PER MATCH OMIT EMPTY MATCHES PATTERN ({pattern}) DEFINE {defines}))")
    found: dict[int, list[tuple]] = {k: [] for k in range(len(READING))}
    for row in spark.sql(" UNION ALL ".join(parts)).collect():
        r = json.loads(row.r)
        found[row.c].append((r["p"], r["ts"], r["m"], r["cls"]))
    failures = []
    for k, (pattern, reads, partitions) in enumerate(READING):
        expected = []
        node = parse_row_pattern(pattern)
        for j, part in enumerate(partitions):
            rows = [{v.upper() for v in letters} for letters, _ in part]
            x = [value for _, value in part]
            plain = {v: _reads(*reads[v])[1] for v in reads}

            def check(var: str, i: int, labels: tuple, number: int, x=x, plain=plain) -> bool:
                return var not in plain or plain[var](x, i, var, labels) is True

            for number, (start, labels, _) in enumerate(
                    oracle_row_matches(node, rows, reads=check), start=1):
                expected += [(f"p{j}", start + i + 1, number, label)
                             for i, label in enumerate(labels)]
        if sorted(found[k]) != sorted(expected):
            failures.append(f"{pattern} {reads}: expected {sorted(expected)[:6]}, found "
                            f"{sorted(found[k])[:6]}")
    assert not failures, "\n".join(failures)


# --- tiny inputs of the one-pass plan (issue 53: the determinised matcher under the SQL layer) ---

@pytest.mark.parametrize("rows", [
    [],                                                        # an empty table: every task empty
    [("k", 1, "a"), ("k", 2, "c"), ("k", 3, "b")],             # one key, no match
    [("k", 1, "a"), ("k", 2, "b"), ("k", 3, "x"), ("k", 4, "b"), ("k", 5, "c")],  # a gap
    [("k", 1, "a"), ("k", 2, "b"), ("k", 3, "b"), ("k", 4, "c"),
     ("j", 1, "b"), ("j", 2, "c"), ("i", 1, "a"), ("i", 2, "b"), ("i", 3, "c")],
], ids=["empty", "one_key_no_match", "gap", "three_keys"])
def test_tiny_inputs_of_the_one_pass_plan_equal_the_oracle(spark, rows) -> None:
    """``A B+ C`` with every variable defined: rows no variable accepts (``x``) are dropped by
    Spark and every partition of a task goes through one matcher call, the determinised one."""
    spark.createDataFrame(rows, "p STRING, ts INT, v STRING").repartition(4) \
        .createOrReplaceTempView("mr_tiny_rows")
    found = sorted(tuple(r) for r in spark.sql(
        "SELECT p, first_ts, n FROM mr_tiny_rows MATCH_RECOGNIZE (PARTITION BY p ORDER BY ts "
        "MEASURES FIRST(A.ts) AS first_ts, COUNT(*) AS n PATTERN (A B+ C) "
        "DEFINE A AS v = 'a', B AS v = 'b', C AS v = 'c')").collect())
    node = parse_row_pattern("A B+ C")
    expected = []
    for key in sorted({p for p, _, _ in rows}):
        part = sorted((ts, v) for p, ts, v in rows if p == key)
        names = [{v.upper()} if v in "abc" else set() for _, v in part]
        expected += [(key, part[start][0], len(labels))
                     for start, labels, _ in oracle_row_matches(node, names)]
    assert found == sorted(expected)
