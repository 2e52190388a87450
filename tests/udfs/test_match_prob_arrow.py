"""match_prob_arrow == match_prob (row UDTF) on the same tables, both layouts, several streams
per partition; figure 1 gives 0.9437; bad arguments and tables are typed errors.

The row UDTF is checked against ``cep.prob.match_prob`` in ``test_match_prob``; here the Arrow
variant must give its rows (both overlaps, both outputs, thresholds 0 and 0.01) with the
columns the other output does not have NULL, and report bad input with the same codes.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from sql_ext.quoting import sql_string
from tests.udfs.test_match_prob import (FIG1, PATTERN, long_rows, random_streams, same, sql_error,
                                        wide_rows)

pytestmark = pytest.mark.spark

P = sql_string(PATTERN)
MATCHES = sql_string("matches")
GROUP_COLUMNS = "stream, t_start, t_end, probability, n_matches, core_start, core_end"
MATCH_COLUMNS = "stream, match_id, t_start, t_end, probability, values"


def arrow_call(args: str, table: str,
               partition: str = "PARTITION BY pmod(hash(stream), 2) ORDER BY t") -> str:
    return f"match_prob_arrow({args}, TABLE({table}) {partition})"


@pytest.fixture(scope="module")
def streams(spark) -> dict[str, tuple[int, list[dict[str, float]]]]:
    """Ten seeded random streams as ``mpa_long`` and ``mpa_wide`` (stream STRING)."""
    found = random_streams(23, n_streams=10)
    spark.createDataFrame(long_rows(found), "stream STRING, t BIGINT, value STRING, p DOUBLE") \
        .createOrReplaceTempView("mpa_long")
    spark.createDataFrame(wide_rows(found), "stream STRING, t INT, probs MAP<STRING, DOUBLE>") \
        .createOrReplaceTempView("mpa_wide")
    return found


CASES = [(lay, "groups", ov, th) for lay in ("long", "wide") for ov in ("single", "complete")
         for th in ("0.0", "0.01")] + [(lay, "matches", "single", th) for lay in ("long", "wide")
                                       for th in ("0.0", "0.01")]
ALL_COLUMNS = ("match_id", "values", "stream", "t_start", "t_end", "probability", "n_matches",
               "core_start", "core_end")
ROW_COLUMNS = {"groups": GROUP_COLUMNS.split(", "), "matches": MATCH_COLUMNS.split(", ")}


def union(call: Any, columns: Any) -> str:
    """One query over every case of :data:`CASES`: a label ``c`` and :data:`ALL_COLUMNS`."""
    return " UNION ALL ".join(f"SELECT '{' '.join(case)}' AS c, {', '.join(columns(case))} "
                              f"FROM {call(*case)}" for case in CASES)


def test_equals_the_row_udtf(spark, streams) -> None:
    got = spark.sql(union(
        lambda lay, out, ov, th: arrow_call(f"{P}, '{ov}', {th}, 5, '{out}'", f"mpa_{lay}"),
        lambda case: ALL_COLUMNS)).collect()
    expected = spark.sql(union(
        lambda lay, out, ov, th: f"match_prob({P}, TABLE(mpa_{lay}), overlap => '{ov}', "
                                 f"threshold => {th}, window => 5, output => '{out}')",
        lambda case: [c if c in ROW_COLUMNS[case[1]] else f"NULL AS {c}"
                      for c in ALL_COLUMNS])).collect()
    for case in [" ".join(c) for c in CASES]:  # the NULL columns of the other output included
        mine = [tuple(r)[1:] for r in got if r.c == case]
        theirs = [tuple(r)[1:] for r in expected if r.c == case]
        assert len({r[2] for r in theirs}) > 2, case  # several streams, so shared partitions
        same(mine, theirs, prob_at=5)
    # complete overlap carries cores, single overlap not; the threshold pruned matches
    assert any(r.core_start is not None for r in got if r.c == "long groups complete 0.0")
    assert all(r.core_start is None for r in got if r.c == "long groups single 0.0")
    assert sum(r.c == "long matches single 0.01" for r in got) < sum(
        r.c == "long matches single 0.0" for r in got)


def test_figure_1_decimal_probabilities_and_int_stream(spark) -> None:
    long_values = ", ".join(f"(7, {t}, {sql_string(v)}, {p})" for _, t, v, p in
                            long_rows({7: (1, FIG1)}))
    wide_values = ", ".join(
        f"(7, {i + 1}, map({', '.join(f'{sql_string(v)}, {p}' for v, p in d.items())}))"
        for i, d in enumerate(FIG1))
    by_stream = "PARTITION BY stream ORDER BY t"
    long_table = f"SELECT * FROM VALUES {long_values} AS v(stream, t, value, p)"
    wide_table = f"SELECT 1 AS extra, * FROM VALUES {wide_values} AS v(stream, t, probs)"
    float_table = ("SELECT stream, t, value, CAST(p AS FLOAT) AS p FROM VALUES "
                   f"{long_values} AS v(stream, t, value, p)")
    within = sql_string(PATTERN + " WITHIN 6 EVENTS")
    rows = spark.sql(
        f"SELECT 'long' AS layout, * FROM "
        f"{arrow_call(f'{P}, NULL, NULL, 6, NULL', long_table, by_stream)} UNION ALL "
        f"SELECT 'wide', * FROM "
        f"{arrow_call(f'{within}, NULL, NULL, NULL, NULL', wide_table, by_stream)} UNION ALL "
        f"SELECT 'float', * FROM "
        f"{arrow_call(f'{P}, NULL, 0.05, 6, {MATCHES}', float_table, by_stream)}"
    ).collect()
    groups = [r for r in rows if r.layout != "float"]
    assert sorted(r.layout for r in groups) == ["long", "wide"]
    for r in groups:
        assert (r.stream, r.t_start, r.t_end, r.n_matches, r.match_id) == ("7", 1, 6, 10, None)
        assert r.probability == pytest.approx(0.9437, abs=1e-12)
    matches = sorted((r.t_start, r.t_end, round(r.probability, 4)) for r in rows
                     if r.layout == "float")
    assert matches == [(1, 3, 0.07), (1, 6, 0.3528), (2, 6, 0.1512), (3, 6, 0.144), (4, 6, 0.09)]


def test_a_partition_of_shuffled_batches_answers_every_stream() -> None:
    # No JVM: interleaved rows of several streams (one with a NULL key) cut into small Arrow
    # batches give the row UDTF's answer of each stream on its own.
    import pyarrow as pa

    from udfs.match_prob import answer_stream, check_arguments
    from udfs.match_prob_arrow import answer_batches

    found = random_streams(5, n_streams=4)
    rows = long_rows(found) + [(None, t, v, p) for _, t, v, p in long_rows({"x": (1, FIG1)})]
    random.Random(1).shuffle(rows)
    table = pa.table({"stream": [r[0] for r in rows], "t": pa.array([r[1] for r in rows], pa.int32()),
                      "value": [r[2] for r in rows], "p": [r[3] for r in rows]})
    for output in ("groups", "matches"):
        plan = check_arguments(PATTERN, "complete", 0.01, 5, output)
        got = answer_batches(table.to_batches(max_chunksize=7), plan).to_pylist()
        expected = [r for key in [*found, None] for r in answer_stream(
            plan, key, [(t, v, p) for k, t, v, p in rows if k == key])]
        columns = (GROUP_COLUMNS if output == "groups" else MATCH_COLUMNS).split(", ")
        assert any(r["stream"] is None for r in got)
        same([("<null>" if r["stream"] is None else r["stream"], *(r[c] for c in columns[1:]))
              for r in got], [("<null>" if r[0] is None else r[0], *r[1:]) for r in expected],
             prob_at=3 if output == "groups" else 4)


FIG1_TABLE = ("SELECT * FROM VALUES " + ", ".join(
    f"('f', {t}, {sql_string(v)}, {p}D)" for _, t, v, p in long_rows({"f": (1, FIG1)}))
    + " AS v(stream, t, value, p)")
W6 = f"{P}, NULL, NULL, 6, NULL"
S1 = "('s1', 1, 'a', 1.0D), ('s1', 2, 'b', 1.0D)"
BAD_CALLS = [  # (arguments, table, what the message must contain)
    (f"{sql_string('PATTERN a; b+, c')}, NULL, NULL, 6, NULL", FIG1_TABLE,
     ["CEP-PROB-001: line 1, column 9", "^"]),
    (f"{sql_string('PATTERN a, b+,')}, NULL, NULL, 6, NULL", FIG1_TABLE, ["CEP-PAT-", "^"]),
    (f"{P}, 'partial', NULL, 6, NULL", FIG1_TABLE, ["CEP-PROB-011: overlap must be one of"]),
    (f"{P}, NULL, NULL, 6, 'worlds'", FIG1_TABLE, ["CEP-PROB-011: output must be one of"]),
    (f"{P}, NULL, 1.5, 6, NULL", FIG1_TABLE,
     ["CEP-PROB-011: threshold must be a number in [0, 1]"]),
    (f"{P}, NULL, NULL, 0, NULL", FIG1_TABLE, ["CEP-PROB-011: window must be a positive number"]),
    (f"{P}, NULL, NULL, NULL, NULL", FIG1_TABLE, ["CEP-PROB-011: match_prob needs a window"]),
    (W6, f"SELECT stream, t, value FROM ({FIG1_TABLE})",
     ["CEP-SQL-041: match_prob_arrow needs the columns stream, t, value, p",
      "missing: p; the table has: stream string, t int32, value string"]),
    (W6, f"SELECT stream, CAST(t AS STRING) AS t, value, p FROM ({FIG1_TABLE})",
     ["CEP-SQL-041", "column 't' must be an integer type"]),
    (W6, f"SELECT * FROM VALUES {S1}, ('s2', 1, 'a', 0.5D), ('s2', 1, 'b', 0.4D) "
         "AS v(stream, t, value, p)",
     ["CEP-PROB-010: stream 's2': time point 1: probabilities sum to 0.9, expected 1"]),
    (W6, "SELECT * FROM VALUES ('w', 1, map('a', 1.0D)), ('w', 2, map('b', 1.0D)), "
         "('w', 2, map('c', 1.0D)) AS v(stream, t, probs)",
     ["CEP-PROB-010: stream 'w': time point 2 appears in 2 rows"]),
    (W6, "SELECT * FROM VALUES ('w', 1, map('a', 1.0D)), "
         "('w', 2, CAST(NULL AS MAP<STRING, DOUBLE>)) AS v(stream, t, probs)",
     ["CEP-PROB-010: stream 'w': time point 2: the probability map is NULL"]),
]


@pytest.mark.parametrize("args, table, needles", BAD_CALLS)
def test_errors_reach_the_caller_with_their_code(spark, args: str, table: str,
                                                 needles: list[str]) -> None:
    message = sql_error(spark, "SELECT * FROM " + arrow_call(
        args, table, "PARTITION BY stream ORDER BY t"))
    assert all(needle in message for needle in needles), message[-2000:]
