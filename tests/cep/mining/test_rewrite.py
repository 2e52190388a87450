"""The process-mining calls in a statement: found, bound, refused with a position, rewritten."""

from __future__ import annotations

import pytest

from cep.mining import MiningError, contains_call, find_calls, rewrite_statement
from cep.mining.plans import micros_sql, within_seconds


def error(sql: str) -> MiningError:
    with pytest.raises(MiningError) as info:
        rewrite_statement(sql)
    return info.value


@pytest.mark.parametrize("sql, code, column, marked", [
    ("SELECT * FROM follows('k', TABLE(t), relaton => 'eventual')", "CEP-PM-102", 38, "relaton"),
    ("SELECT * FROM follows('k', TABLE(t), relation => 'x')", "CEP-PM-102", 50, "'x'"),
    ("SELECT * FROM variants('k', 'j', TABLE(t))", "CEP-PM-102", 15, "variants"),
    ("SELECT * FROM case_stats('k', TABLE(t) PARTITION BY k)", "CEP-PM-101", 40, "PARTITION BY k"),
    ("SELECT * FROM case_stats(key_col => 'k', TABLE(t))", "CEP-PM-101", 42, "TABLE(t)"),
    ("SELECT * FROM case_stats(TABLE(t), id_col => 3)", "CEP-PM-102", 46, "3"),
    ("SELECT * FROM follows('k', TABLE(t), within => '1 hour')", "CEP-PM-103", 48, "'1 hour'"),
    ("SELECT * FROM follows('k', TABLE(t), relation => 'eventual', within => 'soon')",
     "CEP-PM-103", 72, "'soon'"),
    ("SELECT * FROM follows('source', TABLE(t))", "CEP-PM-104", 23, "'source'"),
    ("SELECT * FROM variants('k', TABLE(t), ts_col => upper('x'))", "CEP-PM-101", 49,
     "upper('x')"),
    ("SELECT * FROM variants('k', TABLE(t)", "CEP-PM-101", 23, "("),
    ("SELECT * FROM variants('k', TABLE())", "CEP-PM-101", 34, "()"),
    ("SELECT * FROM variants(events => TABLE(t), EVENTS => TABLE(u))", "CEP-PM-102", 44,
     "EVENTS"),
])
def test_a_bad_call_is_refused_where_it_is_wrong(sql: str, code: str, column: int,
                                                 marked: str) -> None:
    err = error(sql)
    assert (err.code, err.line, err.column) == (code, 1, column), str(err)
    caret = err.snippet.splitlines()[-1]
    assert sql[caret.index("^"):][:len(marked)] == marked, str(err)


def test_only_calls_with_a_table_argument_are_taken() -> None:
    assert not contains_call("SELECT follows(x) FROM t")  # a scalar function of the user's
    assert not contains_call("SELECT 'variants(TABLE(t))' AS s -- case_stats(TABLE(t))")
    assert not contains_call("SELECT * FROM db.follows(TABLE(t))")
    assert contains_call("select * from CASE_STATS(table(t))")
    assert rewrite_statement("SELECT follows FROM t") == "SELECT follows FROM t"


def test_a_call_inside_another_calls_table_is_rewritten_too() -> None:
    sql = ("SELECT * FROM variants('c', TABLE(SELECT c, first_type AS type, start_ts AS ts, "
           "first_id AS id FROM case_stats('c', TABLE(log))))")
    out = rewrite_statement(sql)
    assert not contains_call(out)
    assert out.count("FROM (SELECT * FROM log)") == 1 and "min(struct(__pm_ts" in out


def test_names_and_strings_are_quoted_not_pasted() -> None:
    out = rewrite_statement("SELECT * FROM case_stats('we`ird', TABLE(t), type_col => 'a' 'b')")
    assert "`we``ird` AS __pm_k" in out and "`ab` AS __pm_t" in out  # Spark joins 'a' 'b'
    assert "the case we`ird = " in out  # inside a string literal of the NULL error
    out = rewrite_statement("SELECT * FROM case_stats(TABLE(t), type_col => 'it\\'s')")
    assert "`it's` AS __pm_t" in out
    out = rewrite_statement("SELECT * FROM case_stats(TABLE(t), type_col => 'it''s')")
    assert "`it's` AS __pm_t" in out  # as Spark reads it: a doubled quote
    out = rewrite_statement("SELECT * FROM variants('a{0}b}', TABLE(t))")  # no format template
    assert "`a{0}b}` AS __pm_k" in out and "the case a{0}b} = " in out


def test_calls_are_found_in_order_with_their_sources() -> None:
    sql = ("SELECT * FROM follows(TABLE(SELECT * FROM t WHERE x = ')')) a "
           "JOIN case_stats(key_col => 'k', events => TABLE(db.t)) b ON true")
    found = list(find_calls(sql))
    assert [c.function for c in found] == ["follows", "case_stats"]
    assert [c.source for c in found] == ["SELECT * FROM t WHERE x = ')'", "SELECT * FROM db.t"]
    assert found[0].values["key_col"] is None and found[1].values["key_col"] == "k"


def test_within_and_time_units() -> None:
    assert within_seconds("90 SECONDS") == 90.0 and within_seconds("1 day") == 86400.0
    assert within_seconds("2 UNITS") == 2.0
    for bad in ("", "1", "x SECONDS", "1 FORTNIGHT", "-1 DAYS", "nan DAYS", "1 2 3"):
        with pytest.raises(ValueError):
            within_seconds(bad)
    assert "typeof(`ts`)" in micros_sql("`ts`")
