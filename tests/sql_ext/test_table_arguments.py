"""``TABLE(t) PARTITION BY k`` (Spark's own call form for table functions) in a CEP call: refused
by the shim's parser with CEP-SQL-003, which names ``key_col`` to write (issue 48; the decision
is in docs/decisions.md). The same statements through beeline: tests/server/test_server.py."""

from __future__ import annotations

import pytest

EVENTS = ("SELECT * FROM VALUES (1L, 'k1', TIMESTAMP'2024-01-01 00:00:00', 'a'), "
          "(2L, 'k1', TIMESTAMP'2024-01-01 00:01:00', 'b') AS t(id, key, ts, type)")
PSTREAM = "SELECT * FROM VALUES ('s', 1, map('a', 1.0D)) AS t(stream, t, probs)"
CALLS = {
    "match_seq": "match_seq('PATTERN a; b', events => TABLE({src}){tail})",
    "cet_trends": "cet_trends('PATTERN a+', events => TABLE({src}){tail})",
    "predict_match": "predict_match('PATTERN a, b', events => TABLE({src}){tail})",
    "predict_model": "predict_model('PATTERN a, b', events => TABLE({src}){tail})",
    "match_prob": "match_prob('PATTERN a', TABLE({psrc}){tail})",
    "sketch_stats": "sketch_stats(TABLE({src}){tail})",
}
TAILS = [" PARTITION BY key", " PARTITION BY key ORDER BY ts", " WITH SINGLE PARTITION"]


@pytest.mark.parametrize("tail", TAILS)
@pytest.mark.parametrize("function", sorted(CALLS))
def test_a_partitioned_table_argument_is_refused_naming_key_col(spark, function, tail) -> None:
    sql = "SELECT * FROM " + CALLS[function].format(src=EVENTS, psrc=PSTREAM, tail=tail)
    with pytest.raises(Exception) as info:
        spark.sql(sql).collect()
    message = str(info.value)
    assert "CEP-SQL-003: line 1, column " in message, message[:2000]
    assert f"{function} brings each key's rows together" in message
    if tail.startswith(" PARTITION BY"):
        assert "write key_col => 'key'" in message
    column = int(message.split("column ")[1].split(":")[0])
    assert sql[column - 1:].startswith("TABLE("), (column, sql)


def test_nested_calls_are_checked_and_plain_ones_run(spark) -> None:
    nested = ("WITH m AS (SELECT * FROM match_seq('PATTERN a; b', key_col => 'key', events => "
              f"TABLE({EVENTS}) PARTITION BY key)) SELECT count(*) FROM m")
    with pytest.raises(Exception, match="CEP-SQL-003"):
        spark.sql(nested).collect()
    inside = (f"SELECT * FROM ({EVENTS}) WHERE id IN (SELECT explode(event_ids) FROM "
              f"match_seq('PATTERN a; b', events => TABLE({EVENTS}) PARTITION BY key))")
    with pytest.raises(Exception, match="CEP-SQL-003"):
        spark.sql(inside).collect()
    plain = spark.sql("SELECT event_ids FROM match_seq('PATTERN a; b', key_col => 'key', "
                      f"events => TABLE({EVENTS}))").collect()
    assert [list(r.event_ids) for r in plain] == [[1, 2]]
