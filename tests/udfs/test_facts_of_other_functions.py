"""A class no event carries is reported by ``cet_trends`` and ``predict_match`` too (issue 47).

Both read classes from the type column: ``cet_trends`` with ``type_col`` and a class without
DEFINE, ``predict_match`` for every class without DEFINE when it trains on the input itself.
A misspelt class would answer "no trend" or probability 0 without a word; through ``spark.sql``
it is CEP-PAT-219 with "did you mean" from the input's type values, and ``allow_absent =>
true`` answers instead. Not checked: a DEFINE'd class, ``cet_trends`` without ``type_col``
(every row is an event of the class), ``predict_match`` with a ``model`` (it may know classes
this input has not seen yet).
"""

from __future__ import annotations

import pytest

from tests.sql_fuzz import SHIM, session_conf

EVENTS = ("SELECT * FROM VALUES (1L, 'k1', TIMESTAMP'2024-01-01 00:00:00', 'Login', 1.0), "
          "(2L, 'k1', TIMESTAMP'2024-01-01 00:01:00', 'View Item', 2.0), "
          "(3L, 'k1', TIMESTAMP'2024-01-01 00:02:00', 'View Item', 3.0), "
          "(4L, 'k2', TIMESTAMP'2024-01-01 00:03:00', 'Login', 1.0) AS t(id, key, ts, type, v)")


def failure(spark, sql: str) -> str:
    with pytest.raises(Exception) as caught:
        spark.sql(sql).collect()
    return str(caught.value)


def trends(pattern: str, *extra: str, keyed: bool = True) -> str:
    key = ["key_col => 'key'"] if keyed else []
    args = ", ".join([f"pattern => '{pattern}'", *key, *extra, f"events => TABLE({EVENTS})"])
    return f"SELECT * FROM cet_trends({args})"


def predict(pattern: str, *extra: str) -> str:
    args = ", ".join([f"subscription => '{pattern}'", "lookahead => 2", "key_col => 'key'",
                      *extra, f"events => TABLE({EVENTS})"])
    return f"SELECT * FROM predict_match({args})"


@pytest.mark.parametrize("shim", [True, False])
def test_cet_trends_reports_a_misspelt_class(spark, shim):
    with session_conf(spark, {SHIM: str(shim).lower()}):
        message = failure(spark, trends("PATTERN Logn+ l[]", "type_col => 'type'"))
    assert ("CEP-PAT-219: line 1, column 9: no event of the input has class 'Logn' "
            "(did you mean 'Login'?)") in message, message


def test_cet_trends_allow_absent_answers_and_unchecked_forms_answer(spark):
    assert spark.sql(trends("PATTERN Logn+ l[]", "type_col => 'type'",
                            "allow_absent => true")).collect() == []
    # without type_col every row is an event of the class; a DEFINE'd class is not a type
    assert len(spark.sql(trends("PATTERN Logn+ l[]")).collect()) > 0
    assert len(spark.sql(trends("PATTERN Logn+ l[] DEFINE Logn AS v > 0",
                                "type_col => 'type'")).collect()) > 0
    rows = spark.sql(trends("PATTERN Login+ l[]", "type_col => 'type'")).collect()
    assert sorted(r.key for r in rows) == ["k1", "k2"]


def test_a_name_with_a_space_gets_the_quoting_advice(spark):
    # "did you mean" offers the reporting task's own type values: one stream, one task here
    message = failure(spark, trends("PATTERN View+ v[]", "type_col => 'type'", keyed=False))
    assert ("class 'View' (did you mean 'View Item'? a name with spaces is written in double "
            "quotes: \"View Item\")") in message, message


@pytest.mark.parametrize("shim", [True, False])
def test_predict_match_reports_a_misspelt_class(spark, shim):
    with session_conf(spark, {SHIM: str(shim).lower()}):
        message = failure(spark, predict("PATTERN Login ; Veiw"))
    assert ("CEP-PAT-219: line 1, column 17: no event of the input has class 'Veiw'"
            in message), message


def test_predict_match_allow_absent_and_a_model_answer(spark):
    rows = spark.sql(predict("PATTERN Login ; Veiw", "allow_absent => true")).collect()
    assert rows and all(r.probability == 0.0 for r in rows), rows
    from cep.predict import Events, predict as core_predict

    model = core_predict("PATTERN Login ; Veiw", Events.from_columns(
        ts=[1, 2, 3], types=["Login", "Veiw", "Login"]), lookahead=1).trained
    rows = spark.sql(predict("PATTERN Login ; Veiw", f"model => X'{model.to_bytes().hex()}'")
                     ).collect()
    assert rows, rows


LONG = ("SELECT * FROM VALUES ('s', 1L, 'open', 0.9D), ('s', 1L, 'closed', 0.1D), "
        "('s', 2L, 'closed', 1.0D) AS t(stream, t, value, p)")
WIDE = ("SELECT * FROM VALUES ('s', 1L, map('open', 0.9D, 'closed', 0.1D)), "
        "('s', 2L, map('closed', 1.0D)) AS t(stream, t, probs)")


@pytest.mark.parametrize("table", [LONG, WIDE], ids=["long", "wide"])
def test_match_prob_reports_a_misspelt_class_in_either_layout(spark, table):
    call = "match_prob('PATTERN open, closd WITHIN 3 EVENTS', TABLE({}){})"
    sql = "SELECT * FROM " + call.format(table, "")
    message = failure(spark, sql)
    assert ("CEP-PAT-219: line 1, column 15: no event of the input has class 'closd' "
            "(did you mean 'closed'?)") in message, message
    rows = spark.sql("SELECT * FROM " + call.format(table, ", allow_absent => true")).collect()
    assert rows == [], rows
    rows = spark.sql("SELECT * FROM " + call.replace("closd", "closed").format(table, "")
                     ).collect()
    assert len(rows) == 1 and abs(rows[0].probability - 0.9) < 1e-9, rows
