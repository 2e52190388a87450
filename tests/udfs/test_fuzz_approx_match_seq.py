"""``approx_match_seq`` and ``sketch_stats`` through ``spark.sql`` against ``cep.sketch`` and the
exact-set oracle, on random sketch trees (issue 47).

Each case is a few random streams (a stream of one event, streams with ties, a case with no
stream at all), each built into a sketch tree with small Bloom filters (so the sketch has false
positives), written as the ``<name>_nodes`` rows the sketch job writes, in one view with a case
column. Each case's call draws its pattern, policy, mode, level and resume; its rows must be
:func:`cep.sketch.evaluate_sketch` over the same trees, and for NOT-free patterns contain the
brute-force oracle's answer over the exact-set twin (docs/sketch.md, "No false negatives, per
policy"); ``sketch_stats`` over the same rows must give each tree's own counts. The harness
is :mod:`tests.sql_fuzz`.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from cep.sketch import SketchConfig, SketchTree, compile_sketch_query, evaluate_sketch
from delta_tables.sketch_state import (NODES_ARROW_SCHEMA, NODES_COLUMNS, spark_schema,
                                       tree_to_arrow)
from sql_ext.quoting import sql_string
from tests.sql_fuzz import SQL_FUZZ, Batch, batches, by_key, describe, rows_by_case, union_sql
from tests.udfs.test_approx_match_seq import assert_contains_twin, records, twin_oracle

PATTERNS = ["PATTERN A; B", "PATTERN A; OR(B, C); D", "PATTERN AND(A, B); C",
            "PATTERN A; B; C WITHIN 4 SECONDS", "PATTERN A; B WINDOW [2, 6]", "PATTERN A; !C; B",
            "PATTERN A; B; NOT(E) WITHIN 3 SECONDS", "PATTERN AND(A, B, C)", "PATTERN B"]
POLICIES = ["skip-till-next-match", "skip-till-any-match", "strict-contiguity"]
CONFIG = SketchConfig(m=16, k=2, C=2, fanout=2, seeds=(5, 6))
COLUMNS = ", ".join(name for name, _ in NODES_COLUMNS)


@st.composite
def calls(draw: st.DrawFn) -> dict[str, Any]:
    return {"pattern": draw(st.sampled_from(PATTERNS)), "policy": draw(st.sampled_from(POLICIES)),
            "mode": draw(st.sampled_from(["exists", "intervals"])), "level": draw(st.integers(0, 2)),
            "resume": draw(st.sampled_from(["every-start", "after-match"]))}


def trees(batch: Batch, case: int) -> dict[str, SketchTree]:
    """One tree per key of the case (the stream name is the key; NULL keys are stream 'none')."""
    out = {}
    for key, mine in by_key(batch.of_case(case), keyed=True).items():
        mine = sorted(mine, key=lambda e: (e.steps, e.id))
        out[str(key).lower()] = SketchTree.build([e.type or "E" for e in mine],
                                                 [e.steps * 1_000_000 for e in mine], CONFIG)
    return out


def sql_call(case: int, call: dict[str, Any]) -> tuple[str, str]:
    args = [f"pattern => {sql_string(call['pattern'])}", f"policy => '{call['policy']}'",
            f"mode => '{call['mode']}'", f"level => {call['level']}",
            f"resume => '{call['resume']}'",
            f"sketch => TABLE(SELECT {COLUMNS} FROM fuzz_am WHERE c = {case})"]
    if call["mode"] == "exists":
        columns = ("stream, matched, CAST(NULL AS BIGINT) AS match_id, CAST(NULL AS BIGINT) AS "
                   "pos_start, CAST(NULL AS BIGINT) AS pos_end, CAST(NULL AS BIGINT) AS t0, "
                   "CAST(NULL AS BIGINT) AS t1, CAST(NULL AS ARRAY<BIGINT>) AS node_ids")
    else:
        columns = ("stream, CAST(NULL AS BOOLEAN) AS matched, match_id, pos_start, pos_end, "
                   "unix_micros(ts_start) AS t0, unix_micros(ts_end) AS t1, node_ids")
    return f"approx_match_seq({', '.join(args)})", columns


@SQL_FUZZ
@given(batch=batches(types="ABCDE", keys=("s1", "s2", "s3", None)), data=st.data())
def test_approx_match_seq_through_sql_equals_the_sketch_and_contains_the_oracle(
        spark, batch: Batch, data: st.DataObject) -> None:
    chosen = [data.draw(calls()) for _ in range(batch.cases)]
    forests = [trees(batch, case) for case in range(batch.cases)]
    rows = [dict(r, c=case) for case, forest in enumerate(forests)
            for stream, tree in forest.items() for r in tree_to_arrow(stream, tree).to_pylist()]
    schema = pa.schema([pa.field("c", pa.int32()), *NODES_ARROW_SCHEMA])
    frame = pa.Table.from_pylist(rows, schema)
    spark.createDataFrame(frame, spark_schema((("c", "INT"), *NODES_COLUMNS))) \
        .createOrReplaceTempView("fuzz_am")
    got = rows_by_case(spark.sql(union_sql([sql_call(case, call)
                                            for case, call in enumerate(chosen)])).collect(),
                       batch.cases, lambda r: r)
    for case, call in enumerate(chosen):
        where = f"case {case} {call} [{describe(batch.of_case(case))}]"
        q = compile_sketch_query(call["pattern"], call["policy"])
        for stream, tree in forests[case].items():
            mine = [r for r in got[case] if r.stream == stream]
            answer = evaluate_sketch(q, tree, level=call["level"], mode=call["mode"],
                                     resume=call["resume"])
            if call["mode"] == "exists":
                assert [r.matched for r in mine] == [answer], f"{where}: stream {stream}"
                continue
            mine.sort(key=lambda r: r.match_id)
            assert [r.match_id for r in mine] == list(range(1, len(mine) + 1)), where
            found = [(r.pos_start, r.pos_end, r.t0, r.t1, tuple(r.node_ids)) for r in mine]
            assert found == records(answer), f"{where}: stream {stream}"
            if not q.negated_names and call["resume"] == "every-start":
                assert_contains_twin(q, twin_oracle(q, tree, call["level"]), found)
        assert {r.stream for r in got[case]} <= set(forests[case]), where
    # sketch_stats over the same rows: one row per stream, the tree's own counts
    stats = rows_by_case(spark.sql(" UNION ALL ".join(
        f"SELECT {case} AS c, * FROM sketch_stats(TABLE(SELECT {COLUMNS} FROM fuzz_am "
        f"WHERE c = {case}))" for case in range(batch.cases))).collect(), batch.cases,
        lambda r: r)
    for case, forest in enumerate(forests):
        assert sorted(r.stream for r in stats[case]) == sorted(forest), case
        for r in stats[case]:
            tree = forest[r.stream]
            want = tree.stats()
            blobs = sum(len(row["bits"]) for row in tree_to_arrow(r.stream, tree).to_pylist())
            assert (r.nodes, r.levels, r.top_level, r.open_events, r.bytes, r.m, r.k) == (
                want["nodes"], want["levels"], want["top_level"], want["open_events"], blobs,
                CONFIG.m, CONFIG.k), (case, r.stream)
            assert abs(r.fill - want["mean_fill"]) <= 1e-12, (case, r.stream)
