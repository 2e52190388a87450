"""The DataFrame API (``sql_ext.<function>(df, ...)``) against the SQL functions, differentially.

Every SQL table function has a case here (the test fails on one without): the same question
written as SQL by hand (the TABLE argument a query, the pattern quoted as SQL wants) and as a
DataFrame call (the pattern a plain Python string), on the same real data; the rows must be
equal. Errors keep their codes. The Connect side is in tests/connect/test_connect.py.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest

import sql_ext
from sql_ext import FRAME_FUNCTIONS

PROB_ROWS = ("VALUES ('fig1', 1, 'a', 1.0), ('fig1', 2, 'a', 0.3), ('fig1', 2, 'b', 0.7), "
             "('fig1', 3, 'a', 0.1), ('fig1', 3, 'b', 0.8), ('fig1', 3, 'c', 0.1), "
             "('fig1', 4, 'a', 0.1), ('fig1', 4, 'b', 0.7), ('fig1', 4, 'c', 0.2), "
             "('fig1', 5, 'b', 0.9), ('fig1', 5, 'c', 0.1), ('fig1', 6, 'c', 1.0) "
             "AS readings(stream, t, value, p)")
PREDICT_ROWS = ("SELECT * FROM VALUES (0, 'A'), (1, 'B'), (2, 'X'), (3, 'A'), (4, 'B'), "
                "(5, 'A'), (6, 'A'), (7, 'B'), (8, 'X'), (9, 'A') AS t(ts, type)")
TRENDS_ROWS = ("SELECT id, case_id, ts, org_resource FROM bpi2012 "
               "WHERE pmod(hash(case_id), 500) = 0")
OFFER = "O_Create Offer"

# name -> (fixtures, the SQL, the events query, the DataFrame call's arguments)
CASES: dict[str, list[tuple[tuple[str, ...], str, str, Callable[[Any], Any]]]] = {
    "match_seq": [
        ((), "SELECT * FROM match_seq(pattern => 'PATTERN c; a DEFINE c AS type = "
             "''O_Create Offer'', a AS type = ''O_Accepted'' WITHIN 30 DAYS', "
             "key_col => 'case_id', policy => 'skip-till-any-match', "
             "events => TABLE(bpi2017_offers))",
         "SELECT * FROM bpi2017_offers",
         lambda df: sql_ext.match_seq(
             df, f"PATTERN c; a DEFINE c AS type = '{OFFER}', a AS type = 'O_Accepted' "
                 "WITHIN 30 DAYS", key_col="case_id", policy="skip-till-any-match")),
        ((), "SELECT * FROM match_seq('PATTERN O_Returned; O_Accepted', TABLE(SELECT * FROM "
             "bpi2017_offers WHERE pmod(hash(case_id), 50) = 0))",
         "SELECT * FROM bpi2017_offers WHERE pmod(hash(case_id), 50) = 0",
         lambda df: sql_ext.match_seq(df, "PATTERN O_Returned; O_Accepted")),
    ],
    "approx_match_seq": [
        (("sketched_logs",), "SELECT * FROM approx_match_seq('PATTERN A_Incomplete; A_Pending', "
                             "TABLE(app_sketch_nodes), mode => 'intervals')",
         "SELECT * FROM app_sketch_nodes",
         lambda df: sql_ext.approx_match_seq(df, "PATTERN A_Incomplete; A_Pending",
                                             mode="intervals")),
    ],
    "sketch_stats": [
        (("sketched_logs",), "SELECT * FROM sketch_stats(TABLE(app_sketch_nodes))",
         "SELECT * FROM app_sketch_nodes", lambda df: sql_ext.sketch_stats(df)),
    ],
    "cet_trends": [
        ((), "SELECT * FROM cet_trends(pattern => 'PATTERN work+ w[] WHERE w[i].org_resource "
             "= w[i-1].org_resource', output => 'count', key_col => 'case_id', "
             f"events => TABLE({TRENDS_ROWS}))",
         TRENDS_ROWS,
         lambda df: sql_ext.cet_trends(
             df, "PATTERN work+ w[] WHERE w[i].org_resource = w[i-1].org_resource",
             key_col="case_id", output="count")),
    ],
    "match_prob": [
        ((), f"SELECT * FROM match_prob('PATTERN a, b+, c', TABLE({PROB_ROWS}), window => 6)",
         f"SELECT * FROM {PROB_ROWS}",
         lambda df: sql_ext.match_prob(df, "PATTERN a, b+, c", window=6)),
    ],
    "predict_match": [
        ((), "SELECT * FROM predict_match(subscription => 'PATTERN A, B', lookahead => 3, "
             f"definition => 'paper', events => TABLE({PREDICT_ROWS}))",
         PREDICT_ROWS,
         lambda df: sql_ext.predict_match(df, "PATTERN A, B", lookahead=3, definition="paper")),
    ],
    "predict_model": [
        ((), "SELECT * FROM predict_model('PATTERN O_Returned ; O_Accepted', 'case_id', "
             "TABLE(bpi2017_offers), id_col => 'id')",
         "SELECT * FROM bpi2017_offers",
         lambda df: sql_ext.predict_model(df, "PATTERN O_Returned ; O_Accepted", "case_id",
                                          id_col="id")),
    ],
    "follows": [
        ((), "SELECT * FROM follows('case_id', TABLE(bpi2012))", "SELECT * FROM bpi2012",
         lambda df: sql_ext.follows(df, "case_id")),
        ((), "SELECT * FROM follows(key_col => 'case_id', relation => 'eventual', "
             "within => '1 HOURS', events => TABLE(SELECT * FROM bpi2012 "
             "WHERE pmod(hash(case_id), 20) = 0))",
         "SELECT * FROM bpi2012 WHERE pmod(hash(case_id), 20) = 0",
         lambda df: sql_ext.follows(df, key_col="case_id", relation="eventual",
                                    within="1 HOURS")),
    ],
    "variants": [
        ((), "SELECT * FROM variants('case_id', TABLE(bpi2017_offers))",
         "SELECT * FROM bpi2017_offers", lambda df: sql_ext.variants(df, "case_id")),
    ],
    "case_stats": [
        ((), "SELECT * FROM case_stats('case_id', TABLE(bpi2012), type_col => 'org_resource')",
         "SELECT * FROM bpi2012",
         lambda df: sql_ext.case_stats(df, "case_id", type_col="org_resource")),
    ],
}
PARAMS = [pytest.param(name, *case, id=f"{name}-{k}")
          for name, cases in CASES.items() for k, case in enumerate(cases)]


def test_every_sql_table_function_has_a_dataframe_form_and_a_case() -> None:
    assert sorted(CASES) == sorted(FRAME_FUNCTIONS)
    assert all(getattr(sql_ext, name) is FRAME_FUNCTIONS[name] for name in FRAME_FUNCTIONS)


def rows(frame: Any) -> list[tuple]:
    return sorted((tuple(r) for r in frame.collect()), key=repr)


@pytest.mark.parametrize("name, fixtures, sql, events, python", PARAMS)
def test_the_dataframe_form_answers_as_the_sql(spark, loaded_logs, request, name: str,
                                               fixtures: tuple[str, ...], sql: str,
                                               events: str, python: Any) -> None:
    for fixture in fixtures:
        request.getfixturevalue(fixture)
    want = spark.sql(sql)
    got = python(spark.sql(events))
    assert got.columns == want.columns
    expected = rows(want)
    assert expected, f"{name}: the case finds nothing, so it proves nothing"
    assert rows(got) == expected


def test_errors_keep_their_codes(spark, loaded_logs) -> None:
    events = spark.table("bpi2017_offers")
    with pytest.raises(Exception, match="CEP-PAT-106: line 1, column 11"):
        sql_ext.match_seq(events, "PATTERN A;; B").collect()
    with pytest.raises(Exception, match="CEP-SQL-010: match_seq has no argument 'polcy'"):
        sql_ext.match_seq(events, "PATTERN A; B", polcy="x").collect()
    with pytest.raises(Exception, match="CEP-PM-102: line 1, column .*'relaton'"):
        sql_ext.follows(events, "case_id", relaton="eventual")
    with pytest.raises(TypeError, match="at most 1 more positional"):
        sql_ext.variants(events, "case_id", "type")


def test_user_strings_stay_literals(spark) -> None:
    # A pattern with quotes, backslashes and braces; a key column named with a backquote.
    events = spark.sql("SELECT * FROM VALUES (1L, 'x', 'it''s {a}\\\\', TIMESTAMP'2024-01-01 "
                       "00:00:00') AS t(id, `we``ird`, type, ts)")
    found = sql_ext.match_seq(events, "PATTERN a DEFINE a AS type = 'it\\'s {a}\\\\'",
                              key_col="we`ird").collect()
    assert [(r[0], r.event_ids) for r in found] == [("x", [1])]
    assert [r.n_events for r in sql_ext.case_stats(events, "we`ird").collect()] == [1]
