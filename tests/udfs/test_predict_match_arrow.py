"""predict_match_arrow == predict_match (row UDTF) on the same events; errors are typed.

The row UDTF is checked against ``cep.predict.predict`` in ``test_predict_match``; here the
Arrow variant must give its rows for both outputs, with several keys per partition (a hash
bucket of the key), a time condition with a join variable, a Boolean subscription, and a model
read through a scalar subquery, with the columns the other output does not have NULL; bad
input is reported with the same codes (``CEP-SQL-051`` for the table's columns).
"""

from __future__ import annotations

from typing import Any

import pytest

from sql_ext.quoting import sql_string
from tests.udfs.test_predict_match import (BOOL, EVENT_COLUMNS, KEY_COLUMNS, SEQ, TIMED, core,
                                           random_events, same, sql_error)

pytestmark = pytest.mark.spark

SCHEMA = "id BIGINT, user STRING, type STRING, ts TIMESTAMP, status STRING, ip STRING, v DOUBLE"
CASES = [("seq", SEQ, 3, "0.0"), ("timed", TIMED, 4, "0.0"), ("bool", BOOL, 2, "0.3")]


@pytest.fixture(scope="module")
def pma_events(spark) -> list[tuple]:
    rows = random_events(5, n_users=5, per_user=30)
    spark.createDataFrame(rows, SCHEMA).createOrReplaceTempView("pma_events")
    return rows


def arrow(subscription: str, lookahead: int, threshold: str, output: str,
          model: str = "NULL", table: str = "pma_events",
          partition: str = "PARTITION BY pmod(hash(user), 2)") -> str:
    return (f"predict_match_arrow({sql_string(subscription)}, {lookahead}, {threshold}, {model}, "
            f"'{output}', 'user', TABLE({table}) {partition})")


ALL = ("key, instance, id, unix_micros(ts) AS ts, state, progress, probability, p_exact, "
       "matched, matches, events, unix_micros(last_ts) AS last_ts")


def test_equals_the_row_udtf_and_the_core(spark, pma_events) -> None:
    got = spark.sql(" UNION ALL ".join(
        f"SELECT '{tag} {out}' AS c, {ALL} FROM {arrow(sub, n, th, out)}"
        for tag, sub, n, th in CASES for out in ("keys", "events"))).collect()
    for tag, sub, n, th in CASES:
        for out, names, blank in (("keys", KEY_COLUMNS, ("id", "ts")),
                                  ("events", EVENT_COLUMNS, ("matches", "events", "last_ts"))):
            mine = [r for r in got if r.c == f"{tag} {out}"]
            assert all(r[b] is None for r in mine for b in blank)
            expected = core(sub, pma_events, output=out, lookahead=n, threshold=float(th))
            prob = names.index("probability") + 1
            same([tuple(r[c] for c in ["key", *names]) for r in mine], expected,
                 prob_at=(prob, prob + 1))
            assert len(expected) >= (5 if th == "0.0" else 1), (tag, out)
    # and the row UDTF on one of them, through Spark on both sides
    row = spark.sql(f"SELECT user, {', '.join(KEY_COLUMNS)} FROM predict_match("
                    f"subscription => {sql_string(TIMED)}, lookahead => 4, key_col => 'user', "
                    "events => TABLE(pma_events))").collect()
    mine = spark.sql(f"SELECT key, {', '.join(KEY_COLUMNS)} FROM {arrow(TIMED, 4, 'NULL', 'keys')}"
                     ).collect()
    same([tuple(r) for r in mine], [tuple(r) for r in row], prob_at=(4, 5))


def test_a_model_through_a_scalar_subquery(spark, settings, pma_events) -> None:
    from cep.predict import predict
    from tests.udfs.test_predict_match import user_events

    model = predict(SEQ, user_events(pma_events[:50]), lookahead=1).trained
    spark.createDataFrame([("seq", bytearray(model.to_bytes()))], "name STRING, model BINARY") \
        .createOrReplaceTempView("pma_models")
    got = spark.sql(f"SELECT key, {', '.join(KEY_COLUMNS[:-1])} FROM "
                    + arrow(SEQ, 3, "NULL", "keys", "(SELECT model FROM pma_models WHERE name = 'seq')")
                    ).collect()
    expected = [r[:-1] for r in core(SEQ, pma_events, lookahead=3, model=model)]
    same([tuple(r) for r in got], expected, prob_at=(4, 5))
    assert expected != [r[:-1] for r in core(SEQ, pma_events, lookahead=3)]


def test_errors_reach_the_sql_caller(spark, pma_events) -> None:
    def message(sql: str) -> str:
        return sql_error(spark, f"SELECT * FROM {sql}")

    text = message(arrow("PATTERN A,\n  B+", 3, "NULL", "keys"))
    assert "CEP-PRED-001: line 2, column 3" in text and "^" in text
    assert "CEP-PRED-011: argument lookahead" in message(arrow(SEQ, 0, "NULL", "keys"))
    text = message(arrow(SEQ, 3, "NULL", "keys", table="SELECT id, user, ts FROM pma_events"))
    assert "CEP-SQL-051: class 'A' has no DEFINE, so predict_match_arrow needs a column type" in text
    text = message(arrow(SEQ, 3, "NULL", "keys", model="X'0011'"))
    assert "CEP-PRED-012: not a predict_match model (bad magic)" in text


def test_table_checks_without_spark() -> None:
    import pyarrow as pa

    from udfs.predict_match_arrow import PredictTableError, needed_columns

    schema = pa.schema([("id", pa.string()), ("user", pa.string()), ("type", pa.string()),
                        ("ts", pa.timestamp("us", tz="UTC")), ("status", pa.string()),
                        ("ip", pa.string())])
    for args, needle in [((SEQ, schema, None), "column id must be an integer type, found string"),
                         ((SEQ, schema.remove(0), "who"), "key_col 'who' is not a column"),
                         ((SEQ, schema.remove(0).remove(2), None), r"needs a TIMESTAMP column ts \(missing\)")]:
        with pytest.raises(PredictTableError, match=needle):
            needed_columns(*args)
    columns = needed_columns(TIMED, schema.remove(0), "user")
    assert (columns.key, columns.type, columns.attributes) == ("user", None, (("status", "status"), ("ip", "ip")))
