"""MATCH_RECOGNIZE whose DEFINE reads the match, through ``spark.sql``, against the oracle: the
unrolled program (:mod:`cep.recognize.context`) on every kind of value it compares.

Flink's ``START_ROW DOWN+ UP`` (``LAST(DOWN.x, 1)``, ``START_ROW.x``) and a pattern with
``FIRST`` and ``PREV`` of a logical row, over seeded random partitions with NULLs and ties
(several keys, empty and one-row partitions), for INT, DOUBLE, STRING, DATE, TIMESTAMP and
TIMESTAMP_NTZ values: the matches must be the brute-force oracle's, whichever of the
unrolled program and the per-thread matcher answers a partition (a NULL where a condition
needs a row further back than the unrolling places sends that partition to the latter).
"""

from __future__ import annotations

import datetime as dt
import json
import random
from typing import Any, Callable

import pytest

from cep.oracles.row_pattern_oracle import oracle_row_matches
from cep.recognize.parser import parse_row_pattern

SEED = 20261129
KEYS = 12

TYPES: dict[str, Callable[[int], Any]] = {
    "INT": lambda k: k,
    "DOUBLE": lambda k: k * 0.5,
    "STRING": lambda k: f"s{k}",
    "DATE": lambda k: dt.date(2026, 1, 1) + dt.timedelta(days=k),
    "TIMESTAMP": lambda k: dt.datetime(2026, 1, 1, 0, 0, k),
    "TIMESTAMP_NTZ": lambda k: dt.datetime(2026, 1, 1, 0, 0, k),
}


def _lt(a: Any, b: Any) -> bool | None:
    return None if a is None or b is None else a < b


def _or(*xs: bool | None) -> bool | None:
    return True if True in xs else (None if None in xs else False)


def _and(*xs: bool | None) -> bool | None:
    return False if False in xs else (None if None in xs else True)


def _rows_of(i: int, var: str, labels: tuple[str, ...], name: str) -> list[int]:
    start = i - len(labels)
    return [start + k for k, v in enumerate(labels + (var,)) if v == name]


def _price_down(x: list[Any], var: str, i: int, labels: tuple[str, ...]) -> bool | None:
    downs = _rows_of(i, var, labels, "DOWN")
    last1 = x[downs[-2]] if len(downs) >= 2 else None
    if var == "DOWN":
        start = x[_rows_of(i, var, labels, "START_ROW")[-1]]
        return _or(_and(last1 is None, _lt(x[i], start)), _lt(x[i], last1))
    if var == "UP":
        return _lt(last1, x[i])
    return True


def _rebound(x: list[Any], var: str, i: int, labels: tuple[str, ...]) -> bool | None:
    if var == "B":  # B AS B.x <= FIRST(A.x) AND (PREV(B.x) IS NULL OR B.x <> PREV(B.x))
        first_a = x[_rows_of(i, var, labels, "A")[0]]
        prev = x[i - 1] if i >= 1 else None
        differs = None if prev is None or x[i] is None else x[i] != prev
        return _and(_or(_lt(x[i], first_a), None if x[i] is None or first_a is None
                        else x[i] == first_a), _or(prev is None, differs))
    if var == "C":  # C AS C.x > PREV(LAST(B.x), 1), the row before the last B
        bs = _rows_of(i, var, labels, "B")
        return _lt(x[bs[-1] - 1], x[i])
    return True


QUERIES = {
    "price_down": ("START_ROW DOWN+ UP",
                   "DOWN AS (LAST(DOWN.x, 1) IS NULL AND DOWN.x < START_ROW.x) "
                   "OR DOWN.x < LAST(DOWN.x, 1), UP AS UP.x > LAST(DOWN.x, 1)", _price_down),
    "rebound": ("A B{1,3} C",
                "B AS B.x <= FIRST(A.x) AND (PREV(B.x) IS NULL OR B.x <> PREV(B.x)), "
                "C AS C.x > PREV(LAST(B.x), 1)", _rebound),
}


def _partitions(rng: random.Random) -> list[list[int | None]]:
    # Every other key without NULLs: a partition with a NULL where a condition needs a row
    # further back than the unrolling places is answered per thread, the others unrolled.
    out = []
    for j in range(KEYS):
        n = rng.choice([0, 1, 2, 5, 9, 14, 20, 20])
        nulls = 0.08 if j % 2 else 0.0
        out.append([None if rng.random() < nulls else rng.randint(0, 3) for _ in range(n)])
    return out


@pytest.mark.parametrize("kind", sorted(TYPES) + ["INT in batches of 3 rows"])
def test_reading_conditions_of_every_type_equal_the_oracle(spark, kind: str) -> None:
    rng = random.Random(f"{SEED}-{kind}")
    if kind.endswith("of 3 rows"):  # a task's columns arrive in many Arrow chunks
        kind = kind.split()[0]
        previous = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "3")
        try:
            _check(spark, rng, kind)
        finally:
            spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", previous)
        return
    _check(spark, rng, kind)


def _check(spark, rng: random.Random, kind: str) -> None:
    convert = TYPES[kind]
    data = {name: _partitions(rng) for name in QUERIES}
    rows = [(name, f"k{j}", ts, None if k is None else convert(k))
            for name, parts in data.items() for j, part in enumerate(parts)
            for ts, k in enumerate(part, start=1)]
    spark.createDataFrame(rows, f"q STRING, key STRING, ts INT, x {kind}") \
        .createOrReplaceTempView("mr_unrolled_rows")
    parts = []
    for name, (pattern, define, _) in QUERIES.items():
        parts.append(
            f"SELECT '{name}' AS q, to_json(struct(*)) AS r FROM (SELECT key, ts, m, cls FROM "
            f"(SELECT key, ts, x FROM mr_unrolled_rows WHERE q = '{name}') MATCH_RECOGNIZE ("
            "PARTITION BY key ORDER BY ts MEASURES MATCH_NUMBER() AS m, CLASSIFIER() AS cls "
            f"ALL ROWS PER MATCH PATTERN ({pattern}) DEFINE {define}))")
    found: dict[str, list[tuple[Any, ...]]] = {name: [] for name in QUERIES}
    for row in spark.sql(" UNION ALL ".join(parts)).collect():
        r = json.loads(row.r)
        found[row.q].append((r["key"], r["ts"], r["m"], r["cls"]))
    for name, (pattern, _, plain) in QUERIES.items():
        node = parse_row_pattern(pattern)
        expected = []
        for j, part in enumerate(data[name]):
            x = [None if k is None else convert(k) for k in part]
            everything = [set(node_names(pattern))] * len(x)

            def check(var: str, i: int, labels: tuple, number: int, x=x) -> bool:
                return plain(x, var, i, labels) is True

            for number, (start, labels, _) in enumerate(
                    oracle_row_matches(node, everything, reads=check), start=1):
                expected += [(f"k{j}", start + i + 1, number, label)
                             for i, label in enumerate(labels)]
        assert sorted(found[name]) == sorted(expected), (
            f"{name} over {kind}: expected {sorted(expected)}, found {sorted(found[name])}, "
            f"data {data[name]}")


def node_names(pattern: str) -> list[str]:
    """The variables of ``pattern`` (every row may be any of them: the conditions decide)."""
    from cep.recognize.ast import variables

    return list(variables(parse_row_pattern(pattern)))


@pytest.mark.parametrize("rows", [
    [],                                                         # an empty table: every task empty
    [("k", 1, 3), ("k", 2, 4), ("k", 3, 5)],                    # one key, no match
    [("k", 1, 9), ("k", 2, 8), ("k", 3, 7), ("k", 4, 9)],       # one key, one match, unrolled
    [("k", 1, 10), ("k", 2, None), ("k", 3, 9), ("k", 4, 8), ("k", 5, 7), ("k", 6, 9)],  # NULL
    [("a", 1, 5), ("a", 2, 4), ("a", 3, 3), ("a", 4, 6), ("b", 1, 1), ("c", 1, 2),
     ("c", 2, 1), ("c", 3, 0), ("c", 4, 1)],                    # three keys over eight tasks
], ids=["empty", "one_key_no_match", "one_match", "null_falls_back", "three_keys"])
def test_tiny_inputs_of_reading_defines_equal_the_oracle(spark, rows) -> None:
    """price_down through ``spark.sql`` on the smallest inputs of the unrolled path: empty
    tasks (eight partitions for at most three keys), no match, and a partition the NULL sends
    to the per-thread matcher."""
    spark.createDataFrame(rows, "key STRING, ts INT, x INT").repartition(8) \
        .createOrReplaceTempView("mr_unrolled_tiny")
    pattern, define, plain = QUERIES["price_down"]
    found = sorted(tuple(r) for r in spark.sql(
        "SELECT key, ts, m, cls FROM mr_unrolled_tiny MATCH_RECOGNIZE (PARTITION BY key "
        "ORDER BY ts MEASURES MATCH_NUMBER() AS m, CLASSIFIER() AS cls ALL ROWS PER MATCH "
        f"PATTERN ({pattern}) DEFINE {define})").collect())
    node = parse_row_pattern(pattern)
    expected = []
    for key in sorted({k for k, _, _ in rows}):
        part = sorted((ts, x) for k, ts, x in rows if k == key)
        x = [value for _, value in part]

        def check(var: str, i: int, labels: tuple, number: int, x=x) -> bool:
            return plain(x, var, i, labels) is True

        for number, (start, labels, _) in enumerate(
                oracle_row_matches(node, [set(node_names(pattern))] * len(x), reads=check), 1):
            expected += [(key, part[start + i][0], number, label)
                         for i, label in enumerate(labels)]
    assert found == sorted(expected)
    assert bool(found) == (len(rows) > 3), "the cases with a match must find one"
