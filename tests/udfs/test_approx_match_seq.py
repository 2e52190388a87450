"""approx_match_seq / sketch_stats from Spark SQL == cep.sketch on the same trees == the oracle.

Node rows of a few random streams are written to a real Delta table with the fixed
``<name>_nodes`` schema (version 0: a prefix of every stream, version 1: the whole streams), then
queried through SQL, also ``VERSION AS OF 0``. The Spark answer must equal
:func:`cep.sketch.evaluate_sketch` over the same trees (Bloom membership), and for NOT-free
patterns contain the brute-force oracle's answer over the exact-set twin (docs/sketch.md,
"No false negatives, per policy"). Errors must reach the SQL caller with code and position.
"""

from __future__ import annotations

import random
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from cep.oracles.sketch_oracle import OracleUnit, oracle_sketch_matches
from cep.sketch import SketchConfig, SketchTree, compile_sketch_query, cut, evaluate_sketch
from delta_tables.sketch_state import NODES_ARROW_SCHEMA, NODES_COLUMNS, spark_schema, tree_to_arrow
from sql_ext.quoting import sql_string

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
T0_US = int(T0.timestamp()) * 1_000_000
POLICIES = ["skip-till-next-match", "skip-till-any-match", "strict-contiguity"]
PATTERNS = [
    "PATTERN A; B",
    "PATTERN A; OR(B, C); D",
    "PATTERN AND(A, B); C",
    "PATTERN A; B; C WITHIN 40 SECONDS",
    "PATTERN A; B WINDOW [8, 60]",
    "PATTERN A; !C; B",
    "PATTERN A; B; NOT(E) WITHIN 30 SECONDS",
]
# Small filters, so the sketch has Bloom false positives the twin has not (checked below).
CONFIG = SketchConfig(m=24, k=2, C=3, fanout=2, seeds=(11, 12))


def random_streams(seed: int) -> dict[str, tuple[list[str], list[int]]]:
    """A few streams of names over a small alphabet with non-decreasing timestamps (us)."""
    rng = random.Random(seed)
    out = {}
    for s, n in enumerate([50, 37, 23, 2]):
        t, names, ts = T0_US, [], []
        for _ in range(n):
            t += rng.choice([0, 1, 2, 3]) * 1_000_000
            names.append(rng.choice("ABCDEFGHIJ"))
            ts.append(t)
        out[f"s{s}"] = (names, ts)
    return out


def node_rows(stream: str, tree: SketchTree, corrupt: int | None = None) -> list[dict]:
    """The ``<name>_nodes`` rows of one tree, written by ``delta_tables.sketch_state``.

    ``corrupt``: flip one payload byte of that row's blob.
    """
    rows = tree_to_arrow(stream, tree).to_pylist()
    if corrupt is not None:
        blob = bytearray(rows[corrupt]["bits"])
        blob[20] ^= 0x10
        rows[corrupt]["bits"] = bytes(blob)
    return rows


def write_nodes(spark: Any, settings: Any, name: str, rows: list[dict]) -> None:
    """Write ``rows`` as the Delta table ``name`` under the test warehouse (one commit each)."""
    location = settings.warehouse_dir / name
    frame = spark.createDataFrame(pa.Table.from_pylist(rows, NODES_ARROW_SCHEMA),
                                  spark_schema(NODES_COLUMNS))
    frame.write.format("delta").mode("overwrite").save(str(location))
    if not spark.catalog.tableExists(name):
        spark.catalog.createTable(name, path=str(location), source="delta")


@pytest.fixture(scope="module")
def sketches(spark, settings) -> dict[str, Any]:
    """Trees of random streams; ``ams_nodes`` version 0 = prefixes, version 1 = whole streams."""
    streams = random_streams(3)
    prefix = {s: SketchTree.build(names[: len(names) // 2], ts[: len(ts) // 2], CONFIG)
              for s, (names, ts) in streams.items()}
    full = {s: prefix[s].append(names[len(names) // 2:], ts[len(ts) // 2:])
            for s, (names, ts) in streams.items()}
    write_nodes(spark, settings, "ams_nodes", [r for s, t in prefix.items() for r in node_rows(s, t)])
    write_nodes(spark, settings, "ams_nodes", [r for s, t in full.items() for r in node_rows(s, t)])
    assert max(t.n_levels for t in full.values()) >= 3  # levels 0 and 1 differ
    return {"streams": streams, "prefix": prefix, "full": full}


def call(pattern: str, policy: str | None = None, mode: str | None = None, level: int | None = None,
         table: str = "TABLE(ams_nodes)", resume: str | None = None) -> str:
    """The SQL text of one approx_match_seq call (named arguments, the table last)."""
    args = [f"pattern => {sql_string(pattern)}"]
    if policy is not None:
        args.append(f"policy => {sql_string(policy)}")
    if mode is not None:
        args.append(f"mode => {sql_string(mode)}")
    if level is not None:
        args.append(f"level => {level}")
    if resume is not None:
        args.append(f"resume => {sql_string(resume)}")
    args.append(f"sketch => {table}")
    return f"approx_match_seq({', '.join(args)})"


def records(result: Any) -> list[tuple]:
    return [(m.pos_start, m.pos_end, m.ts_start, m.ts_end, m.node_ids) for m in result.rows()]


def twin_oracle(q: Any, tree: SketchTree, level: int) -> list[tuple]:
    """The brute-force oracle over the exact-set twin's cut at ``level``."""
    units = cut(tree, q.names, level, membership="twin", prune=False)
    exact = [OracleUnit(frozenset(n for n in q.names if units.has(n)[i]), int(units.pos_start[i]),
                        int(units.pos_end[i]), int(units.ts_start[i]), int(units.ts_end[i]),
                        int(units.node_id[i])) for i in range(len(units))]
    return oracle_sketch_matches(q, exact)


def assert_contains_twin(q: Any, twin: list[tuple], sketch: list[tuple]) -> None:
    """docs/sketch.md "No false negatives, per policy" (NOT-free patterns)."""
    if q.policy == "skip-till-next-match":
        for t in twin:
            assert any(s[4][0] == t[4][0] and s[1] <= t[1] for s in sketch), (t, sketch)
    else:
        assert set(twin) <= set(sketch)


@pytest.mark.parametrize("level", [0, 1])
@pytest.mark.parametrize("policy", POLICIES)
def test_intervals_equal_cep_and_contain_the_oracle(spark, sketches, policy: str, level: int) -> None:
    # One statement for every pattern: the calls are UNION ALLed, tagged with the pattern index.
    sql = " UNION ALL ".join(
        f"SELECT {i} AS q, stream, match_id, pos_start, pos_end, unix_micros(ts_start) AS t0, "
        f"unix_micros(ts_end) AS t1, node_ids, level FROM {call(p, policy, 'intervals', level)}"
        for i, p in enumerate(PATTERNS))
    got: dict[tuple[int, str], list] = {}
    for r in spark.sql(sql).collect():
        assert r.level == level
        got.setdefault((r.q, r.stream), []).append(
            (r.match_id, (r.pos_start, r.pos_end, r.t0, r.t1, tuple(r.node_ids))))
    for i, pattern in enumerate(PATTERNS):
        q = compile_sketch_query(pattern, policy)
        for stream, tree in sketches["full"].items():
            expected = records(evaluate_sketch(q, tree, level=level, mode="intervals"))
            rows = sorted(got.get((i, stream), []))
            assert [m for m, _ in rows] == list(range(1, len(rows) + 1))
            assert [rec for _, rec in rows] == expected, (pattern, stream)
            if not q.negated_names:
                twin = twin_oracle(q, tree, level)
                assert twin == records(evaluate_sketch(q, tree, level=level, membership="twin"))
                assert_contains_twin(q, twin, expected)


@pytest.mark.parametrize("level", [0, 1])
@pytest.mark.parametrize("policy", POLICIES)
def test_exists_equals_cep_and_has_no_false_negatives(spark, sketches, policy: str, level: int) -> None:
    sql = " UNION ALL ".join(
        f"SELECT {i} AS q, * FROM {call(p, policy, 'exists', level)}" for i, p in enumerate(PATTERNS))
    got = {(r.q, r.stream): r.matched for r in spark.sql(sql).collect()}
    assert len(got) == len(PATTERNS) * len(sketches["full"])  # one row per stream, matched or not
    for i, pattern in enumerate(PATTERNS):
        q = compile_sketch_query(pattern, policy)
        for stream, tree in sketches["full"].items():
            assert got[(i, stream)] is evaluate_sketch(q, tree, level=level, mode="exists")
            if not q.negated_names:
                assert got[(i, stream)] >= bool(twin_oracle(q, tree, level))


def test_strict_and_across_units_and_resume_after_match(spark, sketches) -> None:
    # Issue 23, in one statement: a strict AND whose names lie in neighbouring units (Baltus
    # 2021, section 4.2, case (2)), and resume => 'after-match' (sections 4.3.1, 4.3.2).
    calls = [("PATTERN AND(A, B, C)", "strict-contiguity", None),
             ("PATTERN A; B", "skip-till-next-match", "after-match"),
             ("PATTERN A; AND(B, C)", "strict-contiguity", "after-match")]
    sql = " UNION ALL ".join(
        f"SELECT {i} AS q, stream, match_id, pos_start, pos_end, unix_micros(ts_start) AS t0, "
        f"unix_micros(ts_end) AS t1, node_ids FROM {call(p, policy, 'intervals', resume=resume)}"
        for i, (p, policy, resume) in enumerate(calls))
    got: dict[tuple[int, str], list] = {}
    for r in sorted(spark.sql(sql).collect(), key=lambda r: (r.q, r.stream, r.match_id)):
        got.setdefault((r.q, r.stream), []).append((r.pos_start, r.pos_end, r.t0, r.t1, tuple(r.node_ids)))
    for i, (pattern, policy, resume) in enumerate(calls):
        q = compile_sketch_query(pattern, policy)
        for stream, tree in sketches["full"].items():
            expected = records(evaluate_sketch(q, tree, resume=resume or "every-start"))
            assert got.get((i, stream), []) == expected, (pattern, stream)
    # The data shows what is new: AND records over more than one unit, which the twin (exact
    # sets) finds too; and overlapping skip-till-next matches that after-match drops.
    across = [(s, rec) for (i, s), recs in got.items() if i == 0 for rec in recs if len(set(rec[4])) > 1]
    assert across
    for stream, rec in across:
        assert rec in twin_oracle(compile_sketch_query(calls[0][0], calls[0][1]),
                                  sketches["full"][stream], 0)
    assert any(len(got.get((1, s), [])) < len(evaluate_sketch("PATTERN A; B", t))
               for s, t in sketches["full"].items())
    message = sql_error(spark, f"SELECT * FROM {call('PATTERN A; B', resume='after')}")
    assert "CEP-SQL-020: argument resume: expected one of 'every-start', 'after-match'" in message


def test_the_data_has_bloom_false_positives(sketches) -> None:
    differ = [(p, s) for p in PATTERNS for s, t in sketches["full"].items()
              if records(evaluate_sketch(p, t, level=0)) != records(evaluate_sketch(p, t, membership="twin"))]
    assert differ  # else the tests above could not tell the sketch from the twin


def test_default_mode_policy_level(spark, sketches) -> None:
    rows = spark.sql("SELECT * FROM approx_match_seq('PATTERN A; B', "
                     "TABLE(ams_nodes))").collect()
    assert set(rows[0].asDict()) == {"stream", "matched"}
    q = compile_sketch_query("PATTERN A; B")
    assert {r.stream: r.matched for r in rows} == {
        s: evaluate_sketch(q, t, mode="exists") for s, t in sketches["full"].items()}


def test_short_form_with_named_arguments_after_the_table(spark, sketches) -> None:
    short = spark.sql("SELECT * FROM approx_match_seq('PATTERN A; B', TABLE(ams_nodes), "
                      "mode => 'intervals', level => 1)").collect()
    named = spark.sql(f"SELECT * FROM {call('PATTERN A; B', None, 'intervals', 1)}").collect()
    assert sorted(short) == sorted(named) and short


def test_a_partition_by_of_the_caller_is_refused(spark, sketches) -> None:
    # The function partitions the rows by stream itself; Spark refuses a second partitioning.
    for sql in (call("PATTERN A; B", table="TABLE(ams_nodes) PARTITION BY stream"),
                "sketch_stats(TABLE(ams_nodes) PARTITION BY stream)"):
        with pytest.raises(Exception, match="PARTITION BY"):
            spark.sql(f"SELECT * FROM {sql}").collect()


def test_stream_keeps_its_type(spark, settings, sketches) -> None:
    # The stream column comes back with the nodes table's own name and type (a view that
    # casts keys "7", "12" to INT: the same text, so each blob's row tag still matches).
    rows = [r for s, key in (("s0", "7"), ("s1", "12")) for r in
            node_rows(key, sketches["full"][s])]
    write_nodes(spark, settings, "ams_numbered", rows)
    frame = spark.sql("SELECT * FROM approx_match_seq('PATTERN A; B', TABLE(SELECT "
                      "CAST(stream AS INT) AS stream, * EXCEPT (stream) FROM ams_numbered))")
    assert frame.schema["stream"].dataType.simpleString() == "int"
    assert {r.stream for r in frame.collect()} == {7, 12}


def test_rows_moved_swapped_or_edited_are_refused(spark, settings, sketches) -> None:
    # Issue 21: every blob is bound to its stream, node, interval and count, so valid blobs in
    # the wrong row fail naming the stream and the node, in both functions, instead of
    # changing the answer.
    tree = sketches["full"]["s0"]
    rows = node_rows("s0", tree)
    a, b = [i for i, r in enumerate(rows) if r["level"] == 0 and not r["is_open"]][:2]
    rows[a]["bits"], rows[b]["bits"] = rows[b]["bits"], rows[a]["bits"]
    write_nodes(spark, settings, "ams_swapped", rows)
    node = f"stream 's0', node_id {rows[a]['node_id']} (level 0, index {rows[a]['idx']})"
    edited = (f"SELECT * EXCEPT (ts_end), CASE WHEN node_id = {rows[a]['node_id']} THEN ts_end + "
              "INTERVAL 1 SECOND ELSE ts_end END AS ts_end FROM ams_nodes WHERE stream = 's0'")
    renamed = "SELECT * EXCEPT (stream), 'x' || stream AS stream FROM ams_nodes WHERE stream = 's0'"
    for table, where in (("ams_swapped", node), (edited, node), (renamed, "stream 'xs0', node_id")):
        for function in ("sketch_stats(", "approx_match_seq('PATTERN A; B', "):
            message = sql_error(spark, f"SELECT * FROM {function}TABLE({table}))")
            assert "CEP-SKETCH-002" in message and where in message, message
            assert "written for another row" in message, message


def test_unbound_blobs_of_an_older_table_answer_the_same(spark, settings, sketches) -> None:
    # Tables written before the row tag hold version-1 blobs: still read, same answers.
    from cep.sketch import decode_bits, encode_bits

    rows = [r for s, t in sketches["full"].items() for r in node_rows(s, t)]
    for r in rows:
        r["bits"] = encode_bits(decode_bits(r["bits"], CONFIG.m), CONFIG.m)
    write_nodes(spark, settings, "ams_unbound", rows)
    query = "SELECT * FROM approx_match_seq('PATTERN A; OR(B, C); D', {}, mode => 'intervals')"
    old = spark.sql(query.format("TABLE(ams_unbound)")).collect()
    assert sorted(old) == sorted(spark.sql(query.format("TABLE(ams_nodes)")).collect())
    assert len(old) > 0


def test_version_as_of_answers_from_the_earlier_tree(spark, sketches) -> None:
    pattern = "PATTERN A; OR(B, C); D"
    table = "TABLE(SELECT * FROM ams_nodes VERSION AS OF 0)"
    rows = spark.sql(f"SELECT * FROM {call(pattern, None, 'intervals', 0, table)}").collect()
    q = compile_sketch_query(pattern)
    for name, trees in (("prefix", sketches["prefix"]), ("full", sketches["full"])):
        expected = sorted((s, *rec[:2], rec[4]) for s, t in trees.items()
                          for rec in records(evaluate_sketch(q, t)))
        got = sorted((r.stream, r.pos_start, r.pos_end, tuple(r.node_ids)) for r in rows)
        assert (got == expected) is (name == "prefix")


def test_sketch_stats_equal_the_trees(spark, sketches) -> None:
    rows = spark.sql("SELECT * FROM sketch_stats(TABLE(ams_nodes))").collect()
    assert [r.stream for r in sorted(rows)] == sorted(sketches["full"])
    for r in rows:
        tree = sketches["full"][r.stream]
        s = tree.stats()
        blobs = sum(len(row["bits"]) for row in node_rows(r.stream, tree))
        assert (r.nodes, r.levels, r.top_level, r.open_events, r.bytes, r.m, r.k) == (
            s["nodes"], s["levels"], s["top_level"], s["open_events"], blobs, CONFIG.m, CONFIG.k)
        assert r.fill == pytest.approx(s["mean_fill"])
    old = spark.sql("SELECT stream, nodes FROM sketch_stats("
                    "TABLE(SELECT * FROM ams_nodes VERSION AS OF 0))").collect()
    assert {r.stream: r.nodes for r in old} == {s: len(t) for s, t in sketches["prefix"].items()}


# ---- errors reach the SQL caller ---------------------------------------------------------------

def sql_error(spark: Any, sql: str) -> str:
    with pytest.raises(Exception) as info:
        spark.sql(sql).collect()
    return str(info.value)


def test_bad_pattern_has_code_and_caret(spark, sketches) -> None:
    message = sql_error(spark, f"SELECT * FROM {call('PATTERN A; (B')}")
    assert "CEP-PAT-" in message and "line 1, column" in message and "^" in message


def test_unsupported_construct_has_code_and_caret(spark, sketches) -> None:
    message = sql_error(spark, f"SELECT * FROM {call('PATTERN A; B+ WITHIN 1 MINUTE')}")
    assert "CEP-SKETCH-022: line 1, column 13" in message and "PATTERN A; B+" in message
    assert "            ^" in message
    message = sql_error(spark, f"SELECT * FROM {call('PATTERN A; B WHERE A.x > 1')}")
    assert "CEP-SKETCH-020: line 1, column 20" in message


@pytest.mark.parametrize("args, expected", [
    ("mode => 'all'", "CEP-SQL-020: argument mode: expected one of 'exists', 'intervals', found 'all'"),
    ("level => -1", "CEP-SQL-020: argument level: expected an integer >= 0"),
    ("level => 'x'", "CEP-SQL-020: argument level"),
    ("policy => 'greedy'", "CEP-SQL-020: argument policy"),
    ("policy => 'strict-contiguity'", "CEP-SKETCH-037"),
])
def test_bad_arguments_are_typed_errors(spark, sketches, args: str, expected: str) -> None:
    message = sql_error(spark, "SELECT * FROM approx_match_seq(pattern => "
                               "'PATTERN A; B WHERE skip-till-any-match', "
                               f"{args}, sketch => TABLE(ams_nodes))")
    assert expected in message


def test_not_a_sketch_table(spark, sketches) -> None:
    message = sql_error(spark, "SELECT * FROM approx_match_seq('PATTERN A; B', "
                               "TABLE(SELECT stream, bits FROM ams_nodes))")
    assert "CEP-SQL-021" in message and "'node_id' is missing" in message
    message = sql_error(spark, "SELECT * FROM sketch_stats(TABLE(SELECT stream, CAST(level AS STRING) "
                               "AS level FROM ams_nodes))")
    assert "CEP-SQL-021" in message


def test_injection_through_the_pattern_stays_data(spark, sketches) -> None:
    pattern = "PATTERN A; \"B') UNION SELECT * FROM ams_nodes; DROP TABLE ams_nodes; --\""
    rows = spark.sql(f"SELECT * FROM {call(pattern, None, 'intervals')}").collect()
    q = compile_sketch_query(pattern)
    assert q.components[1].names == ("B') UNION SELECT * FROM ams_nodes; DROP TABLE ams_nodes; --",)
    assert len(rows) == sum(len(evaluate_sketch(q, t)) for t in sketches["full"].values())
    assert spark.catalog.tableExists("ams_nodes")
    assert spark.sql("SELECT count(*) FROM ams_nodes").first()[0] == sum(
        len(node_rows(s, t)) for s, t in sketches["full"].items())


def test_corrupt_bits_reach_the_sql_caller(spark, settings, sketches) -> None:
    tree = sketches["full"]["s0"]
    write_nodes(spark, settings, "ams_corrupt", node_rows("s0", tree, corrupt=2))
    message = sql_error(spark, "SELECT * FROM approx_match_seq('PATTERN A; B', "
                               "TABLE(ams_corrupt))")
    assert "CEP-SKETCH-002" in message and "checksum mismatch" in message
    assert f"stream 's0', node_id {int(tree.node_id[2])}" in message
    message = sql_error(spark, "SELECT * FROM sketch_stats(TABLE(ams_corrupt))")
    assert "CEP-SKETCH-002" in message


def test_a_missing_node_row_reaches_the_sql_caller(spark, sketches) -> None:
    # A leaf under a top of stream s0 left out (as a DELETE would): both functions name it
    # instead of counting one node fewer (issue 21).
    tree = sketches["full"]["s0"]
    leaf = int(np.flatnonzero((tree.level == 0) & ~tree.is_top)[0])
    rows = f"SELECT * FROM ams_nodes WHERE stream = 's0' AND node_id <> {int(tree.node_id[leaf])}"
    expected = f"CEP-SKETCH-002: stream 's0': node (level 0, index {int(tree.index[leaf])}) is missing"
    for function in ("sketch_stats(", "approx_match_seq('PATTERN A; B', "):
        message = sql_error(spark, f"SELECT * FROM {function}TABLE({rows}))")
        assert expected in message, message


def test_rows_of_two_versions_are_rejected(spark, sketches) -> None:
    # One stream, so the message is that stream's (streams of a bucket fail in any order).
    message = sql_error(spark, "SELECT * FROM approx_match_seq('PATTERN A; B', TABLE("
                               "SELECT * FROM ams_nodes VERSION AS OF 0 WHERE stream = 's0' "
                               "UNION ALL SELECT * FROM ams_nodes WHERE stream = 's0'))")
    assert "CEP-SQL-022" in message and "read one version of the table" in message
    # The same rows without the open rows: the repeated nodes are not one tree.
    message = sql_error(spark, "SELECT * FROM approx_match_seq('PATTERN A; B', TABLE("
                               "SELECT * FROM ams_nodes VERSION AS OF 0 WHERE NOT is_open AND "
                               "stream = 's0' UNION ALL "
                               "SELECT * FROM ams_nodes WHERE NOT is_open AND stream = 's0'))")
    assert "CEP-SKETCH-002: stream 's0'" in message


@pytest.mark.parametrize("mode", ["exists", "intervals"])
def test_a_task_answers_streams_of_two_configurations_as_each_alone(mode: str) -> None:
    # One task may hold streams of two sketches (a UNION in the TABLE argument): the batch
    # path refuses mixed settings and the per-stream path answers; both give each stream's
    # own answer.
    from udfs.approx_match_seq import answer_table, check_arguments, selected_columns as selected

    other = SketchConfig(m=32, k=3, C=2, fanout=3, seeds=(1, 2, 3))
    streams = random_streams(7)
    tables = [tree_to_arrow(s, SketchTree.build(names, ts, CONFIG if i % 2 else other))
              for i, (s, (names, ts)) in enumerate(streams.items())]
    for resume in ("every-start", "after-match"):
        plan = check_arguments("PATTERN A; B", None, mode, 0, resume)
        together = answer_table(plan, selected(pa.concat_tables(tables))).to_pylist()
        alone = [row for t in tables for row in answer_table(plan, selected(t)).to_pylist()]
        assert sorted(together, key=str) == sorted(alone, key=str)
        if mode == "exists":
            assert len(together) == len(streams), together


def test_sketch_stats_of_all_streams_at_once_equal_one_at_a_time() -> None:
    import numpy as np

    from udfs.approx_match_seq import node_columns, partition_forest, selected_columns
    from udfs.sketch_stats import forest_stats, stream_stats

    rng = random.Random(3)
    tables = []
    for s in range(40):  # short streams, some with only an open leaf, some with three levels
        n = rng.choice([1, 2, 5, 9, 30, 80])
        names = [rng.choice("ABCDEFGHIJ") for _ in range(n)]
        tables.append(tree_to_arrow(f"c{s:02d}", SketchTree.build(names, list(range(n)), CONFIG)))
    cols = node_columns(selected_columns(pa.concat_tables(tables)))
    bounds = cols["bounds"]
    stored = np.diff(cols["bits_offsets"].astype(np.int64))
    forest = partition_forest(cols, bounds)
    assert forest is not None
    batch, alone = forest_stats(forest, stored, bounds), stream_stats(cols, stored)
    for name in alone:
        assert np.asarray(batch[name]).tolist() == np.asarray(alone[name]).tolist(), name
