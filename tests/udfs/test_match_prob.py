"""match_prob from Spark SQL == cep.prob.match_prob on the same streams, both table layouts.

The paper's figure 1 as printed (Sugiura et al., DASFAA 2015, lines 28-31 of the seed text;
DESIGN.md section 4) and its section 4 examples (the theta = 0.1 group, the ``<a b c>`` groups)
come out exactly in SQL, in both transducer modes; seeded random small streams (several per
table) give the core's answer for both overlaps, both outputs and two thresholds; a Delta table read ``VERSION AS OF`` an older version gives
the old answer; typed errors reach the SQL caller with their codes; user strings stay data.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from cep.prob import from_long, match_prob
from sql_ext.quoting import sql_string

pytestmark = pytest.mark.spark

PATTERN = "PATTERN a, b+, c"
FIG1 = [{"a": 1.0}, {"a": 0.3, "b": 0.7}, {"a": 0.1, "b": 0.8, "c": 0.1},
        {"a": 0.1, "b": 0.7, "c": 0.2}, {"b": 0.9, "c": 0.1}, {"c": 1.0}]  # Fig. 1, as printed
PAPER_MATCHES = {(1, 3): 0.07, (1, 6): 0.3528, (2, 5): 0.0168, (4, 6): 0.09}


def long_rows(streams: dict[Any, tuple[int, list[dict[str, float]]]]) -> list[tuple[Any, ...]]:
    """``(stream, t, value, p)`` rows of streams given as ``key -> (first t, distributions)``."""
    return [(key, t0 + i, v, p) for key, (t0, dists) in streams.items()
            for i, dist in enumerate(dists) for v, p in sorted(dist.items())]


def wide_rows(streams: dict[Any, tuple[int, list[dict[str, float]]]]) -> list[tuple[Any, ...]]:
    return [(key, t0 + i, dict(dist)) for key, (t0, dists) in streams.items()
            for i, dist in enumerate(dists)]


def random_streams(seed: int, n_streams: int = 6) -> dict[str, tuple[int, list[dict[str, float]]]]:
    """Small streams over {a, b, c, d}: at each time point 3 values (1 to 4 at one time point
    in five) with random probabilities summing to 1 (up to rounding); random lengths (1 to 16)
    and first time points."""
    rng = random.Random(seed)
    out = {}
    for k in range(n_streams):
        dists = []
        for _ in range(rng.randint(1, 16)):
            values = rng.sample("abcd", rng.randint(1, 4) if rng.random() < 0.2 else 3)
            weights = [rng.random() + 0.05 for _ in values]
            dists.append({v: w / sum(weights) for v, w in zip(values, weights)})
        out[f"r{k}"] = (rng.randint(-5, 50), dists)
    return out


def core(streams: dict[Any, tuple[int, list[dict[str, float]]]], **kwargs: Any) -> list[tuple]:
    """The core's answer, as the SQL rows (stream first)."""
    rows = []
    for key in streams:
        mine = [r for r in long_rows(streams) if r[0] == key]
        s = from_long([r[1] for r in mine], [r[2] for r in mine], [r[3] for r in mine])
        for r in match_prob(PATTERN, s, **kwargs):
            rows.append((key, *(list(x) if isinstance(x, tuple) else x
                                for x in r.__dict__.values())))
    return rows


def same(got: list[tuple], expected: list[tuple], prob_at: int) -> None:
    """Equal as sets of rows, probabilities within 1e-12."""
    def key(r: tuple) -> tuple:
        return tuple(x for i, x in enumerate(r) if i != prob_at) + (r[prob_at],)
    got, expected = sorted(got, key=key), sorted(expected, key=key)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert key(g)[:-1] == key(e)[:-1] and g[prob_at] == pytest.approx(e[prob_at], abs=1e-12)


def sql_error(spark: Any, sql: str) -> str:
    with pytest.raises(Exception) as info:
        spark.sql(sql).collect()
    return str(info.value)


@pytest.fixture(scope="module")
def fig1(spark) -> None:
    """Figure 1 as ``fig1_long`` (stream column ``sid INT``) and ``fig1_wide`` (DECIMAL map
    values, as SQL literals give them)."""
    spark.createDataFrame(long_rows({7: (1, FIG1)}),
                          "sid INT, t BIGINT, value STRING, p DOUBLE").createOrReplaceTempView("fig1_long")
    values = ", ".join(f"(7, {i + 1}, map({', '.join(f'{sql_string(v)}, {p}' for v, p in d.items())}))"
                       for i, d in enumerate(FIG1))
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW fig1_wide AS SELECT * FROM VALUES {values} "
              "AS v(sid, t, probs)")


def test_figure_1_long_and_wide(spark, fig1) -> None:
    assert dict((f.name, f.dataType.simpleString()) for f in spark.table("fig1_wide").schema) == \
        {"sid": "int", "t": "int", "probs": "map<string,decimal(2,1)>"}
    groups = spark.sql(
        f"SELECT 'long' AS layout, * FROM match_prob({sql_string(PATTERN)}, TABLE(fig1_long), "
        "window => 6, key_col => 'sid') UNION ALL "
        f"SELECT 'wide', * FROM match_prob(pattern => {sql_string(PATTERN)}, window => 6, "
        "overlap => 'single', key_col => 'sid', pstream => TABLE(fig1_wide))").collect()
    assert sorted(r.layout for r in groups) == ["long", "wide"]
    for r in groups:
        assert (r.sid, r.t_start, r.t_end, r.n_matches) == (7, 1, 6, 10)
        assert r.probability == pytest.approx(0.9437, abs=1e-12)
    matches = spark.sql(
        f"SELECT 'long' AS layout, * FROM match_prob(pstream => TABLE(fig1_long), window => 6, "
        f"pattern => {sql_string(PATTERN)}, output => 'matches', key_col => 'sid') UNION ALL "
        f"SELECT 'wide', * FROM match_prob({sql_string(PATTERN)}, TABLE(fig1_wide), window => 6, "
        "output => 'matches', key_col => 'SID')").collect()
    by_layout: dict[str, list] = {}
    for r in matches:
        by_layout.setdefault(r.layout, []).append(r)
    assert set(by_layout) == {"long", "wide"}
    for rows in by_layout.values():
        assert sorted(r.match_id for r in rows) == list(range(1, 11))
        spans = {(r.t_start, r.t_end): r for r in rows}
        for span, p in PAPER_MATCHES.items():
            assert spans[span].probability == pytest.approx(p, abs=1e-12)
        assert spans[(1, 6)]["values"] == ["a", "b", "b", "b", "b", "c"]
        assert all(len(r["values"]) == r.t_end - r.t_start + 1 and r.sid == 7 for r in rows)
    assert sorted(tuple(r)[1:] for r in by_layout["long"]) == \
        sorted(tuple(r)[1:] for r in by_layout["wide"])


def test_section_4_examples_in_one_query(spark, fig1) -> None:
    """Lines 151-157, 182 and 188 of the paper through SQL in one query (five calls, both layouts,
    both transducer modes); the expected values are those of the core tests
    (tests/cep/prob/test_paper_sections.py), where both modes give them."""
    abc, abpc = sql_string("PATTERN a, b, c"), sql_string(PATTERN)
    calls = {
        "theta groups paper": f"{abpc}, TABLE(fig1_wide), window => 6, threshold => 0.1, "
                              "transducer_mode => 'paper'",
        "theta matches": f"{abpc}, TABLE(fig1_long), window => 6, threshold => 0.1, output => 'matches'",
        "abc complete paper": f"{abc}, TABLE(fig1_wide), window => 6, overlap => 'complete', "
                              "transducer_mode => 'PAPER'",
        "abc single": f"{abc}, TABLE(fig1_long), window => 6",
        "theta complete paper": f"{abpc}, TABLE(fig1_long), window => 6, threshold => 0.1, "
                                "overlap => 'complete', transducer_mode => 'paper'",
    }
    parts = []
    for label, args in calls.items():
        cols = ("match_id, CAST(NULL AS BIGINT), CAST(NULL AS BIGINT)" if "matches" in label
                else "n_matches, core_start, core_end")
        parts.append(f"SELECT '{label}' AS c, sid, t_start, t_end, probability, {cols} "
                     f"FROM match_prob({args}, key_col => 'sid')")
    rows = spark.sql(" UNION ALL ".join(parts)).collect()
    got: dict[str, list[tuple]] = {}
    for r in rows:
        assert r.sid == 7
        got.setdefault(r.c, []).append((r.t_start, r.t_end, round(r.probability, 12), *tuple(r)[5:]))
    assert {k: sorted(v) for k, v in got.items()} == {
        "theta groups paper": [(1, 6, 0.9437, 3, None, None)],
        "theta matches": [(1, 4, 0.112, 1, None, None), (1, 6, 0.3528, 2, None, None),
                          (2, 6, 0.1512, 3, None, None)],
        "abc complete paper": [(1, 5, 0.125, 3, 3, 3), (2, 6, 0.145, 3, 4, 4)],
        "abc single": [(1, 6, 0.2087, 4, None, None)],
        "theta complete paper": [(1, 6, 0.88, 3, 2, 4)],
    }


def test_random_streams_equal_the_core(spark) -> None:
    streams = random_streams(11)
    spark.createDataFrame(long_rows(streams), "stream STRING, t BIGINT, value STRING, p DOUBLE") \
        .createOrReplaceTempView("rand_long")
    spark.createDataFrame(wide_rows(streams), "stream STRING, t INT, probs MAP<STRING, DOUBLE>") \
        .createOrReplaceTempView("rand_wide")
    p, pw = sql_string(PATTERN), sql_string(PATTERN + " WITHIN 5 EVENTS")
    cases = [("long", "single", "0.0"), ("long", "complete", "0.0"), ("long", "single", "0.01"),
             ("long", "complete", "0.01"), ("wide", "complete", "0.01")]
    groups = spark.sql(" UNION ALL ".join(
        f"SELECT '{lay} {ov} {th}' AS c, * FROM match_prob({pw if lay == 'wide' else p}, "
        f"TABLE(rand_{lay}), overlap => '{ov}', threshold => {th}"
        f"{'' if lay == 'wide' else ', window => 5'})" for lay, ov, th in cases)).collect()
    matches = spark.sql(" UNION ALL ".join(
        f"SELECT '{lay} {th}' AS c, * FROM match_prob({p}, TABLE(rand_{lay}), window => 5, "
        f"output => 'matches', threshold => {th})"
        for lay, th in [("long", "0.0"), ("long", "0.01"), ("wide", "0.01")])).collect()
    for lay, ov, th in cases:
        expected = core(streams, overlap=ov, threshold=float(th), window=5)
        got = [tuple(r)[1:] for r in groups if r.c == f"{lay} {ov} {th}"]
        assert expected and len({r[0] for r in expected}) > 1
        same(got, expected, prob_at=3)
    for lay, th in [("long", "0.0"), ("long", "0.01"), ("wide", "0.01")]:
        expected = core(streams, output="matches", threshold=float(th), window=5)
        got = [tuple(r)[1:] for r in matches if r.c == f"{lay} {th}"]
        same(got, expected, prob_at=4)
    # the threshold pruned matches, and groups still exist with it
    assert sum(r.c == "long 0.01" for r in matches) < sum(r.c == "long 0.0" for r in matches)


def test_delta_time_travel_gives_the_old_answer(spark, settings) -> None:
    location = str(settings.warehouse_dir / "prob_fig1")
    schema = "stream STRING, t BIGINT, value STRING, p DOUBLE"
    changed = FIG1[:5] + [{"c": 0.5, "d": 0.5}]
    for dists in (FIG1, changed):  # version 0, then version 1
        spark.createDataFrame(long_rows({"s": (1, dists)}), schema) \
            .write.format("delta").mode("overwrite").save(location)
    if not spark.catalog.tableExists("prob_fig1"):
        spark.catalog.createTable("prob_fig1", path=location, source="delta")
    rows = spark.sql(
        f"SELECT 0 AS v, * FROM match_prob({sql_string(PATTERN)}, "
        "TABLE(SELECT * FROM prob_fig1 VERSION AS OF 0), window => 6) UNION ALL "
        f"SELECT 1, * FROM match_prob({sql_string(PATTERN)}, TABLE(prob_fig1), window => 6)"
    ).collect()
    old = [r for r in rows if r.v == 0]
    new = [r for r in rows if r.v == 1]
    assert len(old) == 1 and old[0].probability == pytest.approx(0.9437, abs=1e-12)
    expected = core({"s": (1, changed)}, window=6)
    assert expected[0][3] != pytest.approx(0.9437, abs=1e-6)
    same([tuple(r)[1:] for r in new], expected, prob_at=3)


def call(pattern: str, table: str, extra: str = "") -> str:
    return (f"SELECT * FROM match_prob(pattern => {sql_string(pattern)}, "
            f"pstream => TABLE({table}){extra})")


def test_errors_reach_the_caller_with_their_code(spark, fig1) -> None:
    w6 = ", window => 6"
    message = sql_error(spark, call("PATTERN a; b+, c", "fig1_long", w6))
    assert "CEP-PROB-001: line 1, column 9" in message and "^" in message
    message = sql_error(spark, call("PATTERN a, b+,", "fig1_long", w6))
    assert "CEP-PAT-" in message and "^" in message
    for extra, needle in [(", window => 6, overlap => 'partial'", "overlap must be one of"),
                          (", window => 6, output => 'worlds'", "output must be one of"),
                          (", window => 6, threshold => 1.5", "threshold must be a number in [0, 1]"),
                          (", window => 0", "window must be a positive number"),
                          (", window => 6, transducer_mode => 'exact'",
                           "transducer_mode must be one of 'window', 'paper'; found 'exact'"),
                          ("", "match_prob needs a window")]:
        message = sql_error(spark, call(PATTERN, "fig1_long", extra + ", key_col => 'sid'"))
        assert f"CEP-PROB-011: {needle}" in message, extra
    # a missing column names what was expected and what was found
    message = sql_error(spark, call(PATTERN, "fig1_long", w6))
    assert "CEP-SQL-040: key_col 'stream'" in message and "columns found: sid int, t bigint" in message
    message = sql_error(spark, call(PATTERN, "SELECT sid AS stream, t, value FROM fig1_long", w6))
    assert "CEP-SQL-040: p_col 'p': expected a column of type DOUBLE" in message
    message = sql_error(spark, call(PATTERN, "SELECT sid AS stream, CAST(t AS STRING) AS t, value, "
                                             "p FROM fig1_long", w6))
    assert "CEP-SQL-040: t_col 't' must be an integer column" in message
    message = sql_error(spark, call(PATTERN, "fig1_long", w6 + ", key_col => 'sid', "
                                    "probs_col => 'value'"))
    assert "CEP-SQL-040: probs_col 'value' must be MAP<STRING, DOUBLE>, found string" in message
    # streams that are not probabilistic streams: the stream and the time point are named
    # (every class of the pattern occurs: an absent one is an error of its own, which another
    # task may report first, tests/udfs/test_facts_of_other_functions.py)
    base = "SELECT * FROM VALUES ('s1', 1, 'a', 1.0D), ('s1', 2, 'b', 1.0D), ('s1', 3, 'c', 1.0D), "
    for rows, needle in [
            ("('s2', 1, 'a', 0.5D), ('s2', 1, 'b', 0.4D)",
             "stream 's2': time point 1: probabilities sum to 0.9, expected 1"),
            ("('s2', 1, 'a', 1.0D), ('s2', 3, 'b', 1.0D)", "stream 's2': time points jump from 1 to 3"),
            ("('s2', 4, 'a', 1.0D), ('s2', 4, 'a', 1.0D)", "stream 's2': time point 4 lists value 'a' twice")]:
        message = sql_error(spark, call(PATTERN, base + rows + " AS v(stream, t, value, p)", w6))
        assert f"CEP-PROB-010: {needle}" in message, rows
    message = sql_error(spark, call(PATTERN, "SELECT sid AS stream, 1 AS t, probs FROM fig1_wide", w6))
    assert "CEP-PROB-010: stream '7': time point 1 appears in 6 rows" in message


def test_user_strings_stay_data(spark, fig1) -> None:
    pattern = "PATTERN a, b+, c DEFINE a AS value = 'x''); DROP VIEW fig1_long; --'"
    rows = spark.sql(call(pattern, "fig1_long", ", window => 6, key_col => 'sid'")).collect()
    assert rows == [] and spark.catalog.tableExists("fig1_long")
    message = sql_error(spark, call(PATTERN, "fig1_long", ", window => 6, key_col => 'sid', "
                                    "t_col => 't` FROM fig1_long; DROP VIEW fig1_long; --'"))
    assert "CEP-SQL-040: t_col 't` FROM fig1_long" in message
    assert spark.catalog.tableExists("fig1_long")
    # odd column names are quoted, not spliced: a backtick and a space in every column name
    odd = spark.table("fig1_long").toDF("s`id", "t `x", "v`al", "p p")
    odd.createOrReplaceTempView("fig1_odd")
    rows = spark.sql(call(PATTERN, "fig1_odd", ", window => 6, key_col => 's`id', "
                          "t_col => 't `x', value_col => 'v`al', p_col => 'p p'")).collect()
    assert [(r["s`id"], r.t_start, r.t_end, r.n_matches) for r in rows] == [(7, 1, 6, 10)]


def test_a_task_given_several_streams_keeps_them_apart() -> None:
    # A task answers every stream of its key buckets from one Arrow table of shuffled rows; each
    # stream is answered on its own. No JVM: the selected columns are built here.
    import pyarrow as pa

    from udfs.match_prob import ProbCallPlan, answer_table

    streams = random_streams(5, n_streams=3)
    rows = long_rows(streams)
    random.Random(1).shuffle(rows)
    table = pa.table({"__stream": [r[0] for r in rows], "__t": [r[1] for r in rows],
                      "__value": [r[2] for r in rows], "__p": [r[3] for r in rows]})
    for output, prob_at in (("groups", 3), ("matches", 4)):
        plan = ProbCallPlan(PATTERN, "complete", 0.01, 5, output, "long", 1e-6, "stream")
        got = [tuple(r.values()) for r in answer_table(plan, table).to_pylist()]
        same(got, core(streams, overlap="complete", threshold=0.01, window=5, output=output),
             prob_at=prob_at)


def test_a_partition_by_of_the_caller_is_refused(spark, fig1) -> None:
    with pytest.raises(Exception, match="PARTITION BY"):
        spark.sql(f"SELECT * FROM match_prob({sql_string(PATTERN)}, 'sid', "
                  "TABLE(fig1_long) PARTITION BY sid ORDER BY t, window => 6)").collect()


def test_groups_over_many_ambiguous_points_stop_at_a_typed_limit(spark) -> None:
    # Issue 46: `a*, b+` over 3,000 points where both values are possible has ~4.5 * 10^9
    # matches; counted into groups, the list of found matches had no bound (14.7 GB at 1,000
    # points) and ended in numpy's memory error. Now CEP-PROB-020, before that memory is taken.
    table = ("SELECT 's' AS stream, id + 1 AS t, map('a', 0.5D, 'b', 0.5D) AS probs "
             "FROM range(3000)")
    message = sql_error(spark, call("PATTERN a*, b+", table, ", window => 3000"))
    assert "CEP-PROB-020" in message and "max_matches=20,000,000" in message, message[:3000]


def test_a_floating_key_is_one_stream_whatever_its_sign(spark) -> None:
    # Issue 47 (tests/udfs/test_fuzz_match_prob.py): -0.0 = 0.0 and NaN = NaN in SQL, GROUP BY
    # makes one group of each and the key's hash sends them to one task, but Arrow's dictionary
    # told the bits apart: a stream was answered as two (here streams of one time point, no
    # match; a gap error, CEP-PROB-010, where the halves interleave). A NaN with its sign bit
    # set comes from Python (Spark's own NaN has none).
    spark.createDataFrame([(0.0, 1, "a", 1.0), (-0.0, 2, "b", 1.0), (math.nan, 1, "a", 1.0),
                           (-math.nan, 2, "b", 1.0)], "k DOUBLE, t INT, value STRING, p DOUBLE") \
        .createOrReplaceTempView("signed_keys")
    rows = spark.sql("SELECT * FROM match_prob('PATTERN a, b', 'k', TABLE(signed_keys), "
                     "window => 2, output => 'matches')").collect()
    assert sorted((str(r.k), r.t_start, r.t_end, r["values"]) for r in rows) == \
        [("0.0", 1, 2, ["a", "b"]), ("nan", 1, 2, ["a", "b"])]  # the keys as GROUP BY gives them
