"""approx_match_seq_arrow == approx_match_seq (row UDTF) == cep.sketch on the same Delta table.

The row UDTF is checked against ``cep.sketch.evaluate_sketch`` and the twin oracle in
``test_approx_match_seq``; here the Arrow variant must give exactly its rows (both modes, every
policy, two levels, several streams per partition) and report bad input the same way.
"""

from __future__ import annotations

from typing import Any

import pytest

from cep.sketch import SketchTree, compile_sketch_query, evaluate_sketch
from sql_ext.quoting import sql_string
from tests.udfs.test_approx_match_seq import (CONFIG, PATTERNS, POLICIES, node_rows, random_streams,
                                              records, write_nodes)

TABLE = "amsa_nodes"


@pytest.fixture(scope="module")
def trees(spark, settings) -> dict[str, SketchTree]:
    """Trees of random streams written as ``amsa_nodes`` (version 0 prefixes, 1 whole streams)."""
    streams = random_streams(5)
    prefix = {s: SketchTree.build(n[: len(n) // 2], t[: len(t) // 2], CONFIG)
              for s, (n, t) in streams.items()}
    full = {s: prefix[s].append(n[len(n) // 2:], t[len(t) // 2:]) for s, (n, t) in streams.items()}
    write_nodes(spark, settings, TABLE, [r for s, t in prefix.items() for r in node_rows(s, t)])
    write_nodes(spark, settings, TABLE, [r for s, t in full.items() for r in node_rows(s, t)])
    return full


def arrow_call(pattern: str, policy: str | None, mode: str | None, level: int | None,
               table: str = f"TABLE({TABLE}) PARTITION BY stream") -> str:
    def lit(v: Any) -> str:
        return "NULL" if v is None else sql_string(v) if isinstance(v, str) else str(v)
    return (f"approx_match_seq_arrow({sql_string(pattern)}, {lit(policy)}, {lit(mode)}, "
            f"{lit(level)}, {table})")


def row_call(pattern: str, policy: str | None, mode: str, level: int) -> str:
    args = [f"pattern => {sql_string(pattern)}", f"mode => {sql_string(mode)}", f"level => {level}"]
    if policy is not None:
        args.append(f"policy => {sql_string(policy)}")
    return f"approx_match_seq({', '.join(args)}, sketch => TABLE({TABLE}) PARTITION BY stream)"


INTERVAL_COLUMNS = ("stream, match_id, pos_start, pos_end, unix_micros(ts_start) AS t0, "
                    "unix_micros(ts_end) AS t1, node_ids, level")


@pytest.mark.parametrize("level", [0, 1])
@pytest.mark.parametrize("policy", POLICIES)
def test_intervals_equal_the_row_udtf(spark, trees, policy: str, level: int) -> None:
    arrow = " UNION ALL ".join(
        f"SELECT {i} AS q, matched, {INTERVAL_COLUMNS} FROM "
        f"{arrow_call(p, policy, 'intervals', level)}" for i, p in enumerate(PATTERNS))
    row = " UNION ALL ".join(
        f"SELECT {i} AS q, true AS matched, {INTERVAL_COLUMNS} FROM "
        f"{row_call(p, policy, 'intervals', level)}" for i, p in enumerate(PATTERNS))
    got, expected = spark.sql(arrow).collect(), spark.sql(row).collect()
    assert sorted(got) == sorted(expected)
    assert len({(r.q, r.stream) for r in got}) >= 5  # not a comparison of two empty answers
    # and the row UDTF's answer is cep's (checked against the oracle in test_approx_match_seq)
    q = compile_sketch_query(PATTERNS[0], policy)
    mine = sorted((r.pos_start, r.pos_end, r.t0, r.t1, tuple(r.node_ids)) for r in got
                  if r.q == 0 and r.stream == "s0")
    assert mine == records(evaluate_sketch(q, trees["s0"], level=level))


@pytest.mark.parametrize("policy", POLICIES)
def test_exists_equals_the_row_udtf(spark, trees, policy: str) -> None:
    arrow = " UNION ALL ".join(
        f"SELECT {i} AS q, stream, matched, match_id, node_ids FROM "
        f"{arrow_call(p, policy, 'exists', 0)}" for i, p in enumerate(PATTERNS))
    row = " UNION ALL ".join(f"SELECT {i} AS q, stream, matched FROM "
                             f"{row_call(p, policy, 'exists', 0)}" for i, p in enumerate(PATTERNS))
    got = spark.sql(arrow).collect()
    assert all(r.match_id is None and r.node_ids is None for r in got)
    assert sorted((r.q, r.stream, r.matched) for r in got) == sorted(
        tuple(r) for r in spark.sql(row).collect())
    assert {r.matched for r in got} == {True, False}


def test_defaults_buckets_and_time_travel(spark, trees) -> None:
    pattern = "PATTERN A; OR(B, C); D"
    one = spark.sql(f"SELECT * FROM {arrow_call(pattern, None, 'intervals', None)}").collect()
    bucketed = spark.sql("SELECT * FROM " + arrow_call(
        pattern, None, "intervals", None,
        f"TABLE({TABLE}) PARTITION BY pmod(hash(stream), 2)")).collect()
    assert sorted(one) == sorted(bucketed) and one
    default = spark.sql(f"SELECT stream, matched FROM {arrow_call(pattern, None, None, None)}")
    assert sorted(default.collect()) == sorted(
        spark.sql(f"SELECT * FROM {row_call(pattern, None, 'exists', 0)}").collect())
    old = spark.sql("SELECT stream, pos_start, pos_end FROM " + arrow_call(
        pattern, None, "intervals", 0,
        f"TABLE(SELECT * FROM {TABLE} VERSION AS OF 0) PARTITION BY stream")).collect()
    old_row = spark.sql(
        "SELECT stream, pos_start, pos_end FROM approx_match_seq(pattern => "
        f"{sql_string(pattern)}, mode => 'intervals', sketch => TABLE(SELECT * FROM {TABLE} "
        "VERSION AS OF 0) PARTITION BY stream)").collect()
    assert sorted(old) == sorted(old_row) and sorted(old) != sorted(
        (r.stream, r.pos_start, r.pos_end) for r in one)


def sql_error(spark: Any, sql: str) -> str:
    with pytest.raises(Exception) as info:
        spark.sql(sql).collect()
    return str(info.value)


@pytest.mark.parametrize("pattern, policy, mode, level, expected", [
    ("PATTERN A; (B", None, None, None, "CEP-PAT-"),
    ("PATTERN A; B+ WITHIN 1 MINUTE", None, None, None, "CEP-SKETCH-022: line 1, column 13"),
    ("PATTERN A; B", None, "all", None,
     "CEP-SQL-020: argument mode: expected one of 'exists', 'intervals', found 'all'"),
    ("PATTERN A; B", "greedy", None, None, "CEP-SQL-020: argument policy"),
    ("PATTERN A; B", None, None, -1, "CEP-SQL-020: argument level"),
])
def test_bad_arguments_are_typed_errors(spark, trees, pattern, policy, mode, level,
                                        expected) -> None:
    assert expected in sql_error(spark, f"SELECT * FROM {arrow_call(pattern, policy, mode, level)}")


def test_bad_tables_and_damaged_rows(spark, settings, trees) -> None:
    message = sql_error(spark, "SELECT * FROM " + arrow_call(
        "PATTERN A; B", None, None, None, f"TABLE(SELECT stream, bits FROM {TABLE}) "
        "PARTITION BY stream"))
    assert "CEP-SQL-023" in message and "missing columns" in message and "'node_id'" in message
    tree = trees["s1"]
    write_nodes(spark, settings, "amsa_corrupt", node_rows("s1", tree, corrupt=3))
    message = sql_error(spark, "SELECT * FROM " + arrow_call(
        "PATTERN A; B", None, None, None, "TABLE(amsa_corrupt) PARTITION BY stream"))
    assert "CEP-SKETCH-002" in message and "checksum mismatch" in message
    assert f"stream 's1', node_id {int(tree.node_id[3])}" in message
    message = sql_error(spark, "SELECT * FROM " + arrow_call(
        "PATTERN A; B", None, None, None, f"TABLE(SELECT * FROM {TABLE} VERSION AS OF 0 "
        f"UNION ALL SELECT * FROM {TABLE}) PARTITION BY stream"))
    assert "CEP-SKETCH-002" in message and "read one version of the table" in message
