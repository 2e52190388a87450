"""No silent answer from facts of the whole input (issue 47): absent classes, open NOT windows.

``match_seq`` through ``spark.sql``: a class of the pattern that no event carries is CEP-PAT-219
with "did you mean" (also when every row of the input is filtered away before the tasks, and
for a name with a space read as a class and an alias); ``allow_absent => true`` answers instead.
A pattern that ends in NOT reports a match only once its window has closed: by the newest
event time of the whole input (another key's events count) or, for EVENTS, by the key's own
events. Without the JVM shim's facts a time window's trailing NOT is a typed error.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from tests.sql_fuzz import SHIM, session_conf

FACTS = "spark.cep.facts.enabled"
T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
OFFERS = [  # (id, key, type, days after T0)
    (1, "c1", "A_Incomplete", 0), (2, "c1", "A_Pending", 1), (3, "c1", "O_Create Offer", 2),
    (4, "c1", "O_Accepted", 5), (5, "c2", "O_Create Offer", 3), (6, "c3", "O_Create Offer", 25),
    (7, "c4", "A_Incomplete", 30),
]


@pytest.fixture(scope="module")
def offers(spark):
    rows = [(i, k, t, T0 + timedelta(days=d)) for i, k, t, d in OFFERS]
    spark.createDataFrame(rows, "id BIGINT, key STRING, type STRING, ts TIMESTAMP") \
        .createOrReplaceTempView("facts_offers")
    return "facts_offers"


def call(pattern: str, *extra: str, table: str = "TABLE(facts_offers)") -> str:
    args = ", ".join([f"pattern => '{pattern}'", *extra, f"events => {table}"])
    return f"SELECT * FROM match_seq({args})"


def failure(spark, sql: str) -> str:
    with pytest.raises(Exception) as caught:
        spark.sql(sql).collect()
    return str(caught.value)


@pytest.mark.parametrize("shim", [True, False])
@pytest.mark.parametrize("extra", [(), ("key_col => 'key'",), ("key_col => 'key'",
                                   "policy => 'strict-contiguity'"), ("chunk_rows => 0",)])
def test_a_misspelt_class_is_the_typed_error_with_did_you_mean(spark, offers, shim, extra):
    with session_conf(spark, {SHIM: str(shim).lower()}):
        message = failure(spark, call("PATTERN A_Incomplet; A_Pending", *extra))
    assert "CEP-PAT-219: line 1, column 9: no event of the input has class 'A_Incomplet' " \
           "(did you mean 'A_Incomplete'?)" in message, message
    assert "^~~~~~~~~~~" in message, message


def test_every_row_filtered_away_still_reports_the_absent_class(spark, offers):
    # No row is of either class, so the shim's row filter would leave every task empty.
    message = failure(spark, call("PATTERN A_Incomplet; A_Pendin", "key_col => 'key'"))
    assert "no event of the input has class 'A_Incomplet'" in message, message


def test_a_name_with_a_space_points_to_the_quoted_name(spark, offers):
    message = failure(spark, call("PATTERN O_Create Offer; O_Accepted"))
    assert "class 'O_Create' (did you mean 'O_Create Offer'? a name with spaces is written in " \
           "double quotes: \"O_Create Offer\")" in message, message
    rows = spark.sql(call('PATTERN "O_Create Offer"; O_Accepted', "key_col => 'key'")).collect()
    assert [(r.key, list(r.event_ids)) for r in rows] == [("c1", [3, 4])]


def test_a_negated_class_must_occur_too(spark, offers):
    message = failure(spark, call("PATTERN A_Pending; NOT(O_Acepted); O_Accepted"))
    assert "class 'O_Acepted' (did you mean 'O_Accepted'?)" in message, message


def test_allow_absent_answers_and_an_empty_input_is_no_error(spark, offers):
    assert spark.sql(call("PATTERN A_Incomplet; A_Pending", "allow_absent => true")).count() == 0
    empty = "TABLE(SELECT * FROM facts_offers WHERE id < 0)"
    assert spark.sql(call("PATTERN A_Incomplet; A_Pending", table=empty)).count() == 0
    message = failure(spark, call("PATTERN A_Pending", "allow_absent => 1"))
    assert "CEP-SQL-010" in message and "allow_absent" in message, message


@pytest.mark.parametrize("extra", [(), ("chunk_rows => 1",), ("policy => 'skip-till-any-match'",)])
def test_a_trailing_not_waits_for_its_window_to_close_over_every_key(spark, offers, extra):
    # Offers at days 2 (c1), 3 (c2) and 25 (c3); c1's is answered on day 5. The newest event
    # of the input (c4, day 30) closes the 20-day window of c2's offer, whose own key ends on
    # day 3, and not that of c3's.
    rows = spark.sql(call('PATTERN "O_Create Offer"; NOT(O_Accepted) WITHIN 20 DAYS',
                          "key_col => 'key'", *extra)).collect()
    assert sorted((r.key, list(r.event_ids), r.match_id) for r in rows) == [("c2", [5], 1)], rows
    # one stream of every key: c1's acceptance (day 5) also follows c2's offer (day 3)
    rows = spark.sql(call('PATTERN "O_Create Offer"; NOT(O_Accepted) WITHIN 20 DAYS',
                          *extra)).collect()
    assert rows == [], rows


def test_a_trailing_not_over_events_waits_for_the_keys_own_events(spark):
    rows = [(i, "k", t, T0 + timedelta(minutes=i)) for i, t in enumerate("ABXBAB")]
    spark.createDataFrame(rows, "id BIGINT, key STRING, type STRING, ts TIMESTAMP") \
        .createOrReplaceTempView("facts_events")
    got = spark.sql("SELECT event_ids FROM match_seq('PATTERN A; B; NOT(X) WITHIN 3 EVENTS', "
                    "'key', TABLE(facts_events))").collect()
    # A0 B1: X at 2 is inside the window. A0 B3: outside it (pos 3). A4 B5: only 2 events
    # from A4 on, the window of 3 is still open.
    assert sorted(list(r.event_ids) for r in got) == [], got
    got = spark.sql("SELECT event_ids FROM match_seq('PATTERN A; B; NOT(X) WITHIN 2 EVENTS', "
                    "'key', TABLE(facts_events))").collect()
    assert sorted(list(r.event_ids) for r in got) == [[0, 1], [4, 5]], got


def test_without_the_shims_facts_a_time_window_trailing_not_is_a_typed_error(spark, offers):
    with session_conf(spark, {FACTS: "false"}):
        message = failure(spark, call('PATTERN "O_Create Offer"; NOT(O_Accepted) WITHIN 20 DAYS'))
        assert "CEP-SQL-010" in message and "spark.sql.extensions" in message, message
        # what the shim cannot check without its facts: a misspelt class answers no match
        assert spark.sql(call("PATTERN A_Incomplet; A_Pending")).count() == 0
