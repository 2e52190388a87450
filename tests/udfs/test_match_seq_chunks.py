"""match_seq matching sorted partitions chunk by chunk (udfs/chunks.py) == the engine per key.

``chunk_rows => 3`` makes every partition many chunks, so each key's matches are cut at
chunk borders and carried over many times: the rows, their ``match_id`` and the limits must
be exactly those of the engine run over each key whole. (Under strict contiguity a pattern
whose class tests Spark evaluates takes the window-function path, which collects partitions
whole; the others stream.)
"""

from __future__ import annotations

import pytest

from cep.match import compile_query, find_matches
from sql_ext.quoting import sql_string
from tests.udfs.test_match_seq import PATTERNS, POLICIES, SCHEMA, random_events, streams_by_key

CHUNKED_PATTERNS = [*PATTERNS,
                    "PATTERN A; B; C WHERE C.v0 > A.v0",  # no window: keys are held whole
                    "PATTERN A; B+ WITHIN 12 SECONDS SLIDE 5 SECONDS",
                    "PATTERN A; NOT(D); B WITHIN 4 EVENTS"]


def engine_rows(pattern: str, policy: str, rows: list[tuple]) -> set:
    want = set()
    for key, stream in streams_by_key(rows).items():
        found = find_matches(compile_query(pattern, policy=policy), stream).to_matches()
        for match_id, m in enumerate(found, start=1):
            want.add((key, match_id, tuple(int(stream.ids[p]) for p in m.positions), m.variables))
    return want


@pytest.fixture(scope="module")
def long_keys(spark):
    rows = random_events(11, n_keys=3, per_key=90)
    spark.createDataFrame(rows, SCHEMA).createOrReplaceTempView("ms_long_keys")
    return rows


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("pattern", CHUNKED_PATTERNS)
def test_chunks_of_three_rows_give_the_engine_answer(spark, long_keys, pattern: str,
                                                     policy: str) -> None:
    got = spark.sql(f"SELECT key, match_id, event_ids, variables FROM match_seq("
                    f"pattern => {sql_string(pattern)}, policy => {sql_string(policy)}, "
                    "key_col => 'key', chunk_rows => 3, events => TABLE(ms_long_keys))").collect()
    assert {(r.key, r.match_id, tuple(r.event_ids), tuple(r.variables)) for r in got} == \
        engine_rows(pattern, policy, long_keys)


@pytest.mark.parametrize("chunk", [0, 1, 7])
def test_one_stream_in_chunks(spark, long_keys, chunk: int) -> None:
    one = [r for r in long_keys if r[1] == "k0"]
    spark.createDataFrame(one, SCHEMA).createOrReplaceTempView("ms_one_stream")
    pattern = "PATTERN A; B+ b[]; C WHERE b[i].v0 >= b[i-1].v0 WITHIN 25 SECONDS"
    got = spark.sql(f"SELECT 'k0' AS key, match_id, event_ids, variables FROM match_seq("
                    f"pattern => {sql_string(pattern)}, chunk_rows => {chunk}, "
                    "events => TABLE(ms_one_stream))").collect()
    want = engine_rows(pattern, "skip-till-next-match", one)
    assert want, "the case must have matches"
    assert {(r.key, r.match_id, tuple(r.event_ids), tuple(r.variables)) for r in got} == want


def test_max_matches_counts_across_chunks(spark, long_keys) -> None:
    pattern = "PATTERN A; B WITHIN 5 SECONDS"
    per_key = {}
    for key, match_id, *_ in engine_rows(pattern, "skip-till-any-match", long_keys):
        per_key[key] = max(per_key.get(key, 0), match_id)
    most = max(per_key.values())
    call = (f"SELECT count(*) AS n FROM match_seq(pattern => {sql_string(pattern)}, "
            "policy => 'skip-till-any-match', key_col => 'key', chunk_rows => 2, "
            "max_matches => {limit}, events => TABLE(ms_long_keys))")
    assert spark.sql(call.format(limit=most)).collect()[0].n == sum(per_key.values())
    with pytest.raises(Exception) as info:
        spark.sql(call.format(limit=most - 1)).collect()
    assert "CEP-MATCH-001" in str(info.value) and f"max_matches={most - 1}" in str(info.value)


def test_chunk_rows_must_be_a_count(spark, long_keys) -> None:
    with pytest.raises(Exception) as info:
        spark.sql("SELECT * FROM match_seq(pattern => 'PATTERN A; B', key_col => 'key', "
                  "chunk_rows => -1, events => TABLE(ms_long_keys))").collect()
    assert "CEP-SQL-010" in str(info.value) and "chunk_rows" in str(info.value)
