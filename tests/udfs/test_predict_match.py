"""predict_match from Spark SQL == cep.predict.predict on the same events collected to Python.

Seeded random events of several users (ties in timestamps, arrival order shuffled) answer three
subscriptions (`,` and `;`; a time condition with a join variable; Boolean `&` / `|` over type
classes and a DEFINE) in both outputs, in the ``key_col`` and the one-stream forms, with a
TIMESTAMP and a BIGINT timestamp; a persisted model read through a scalar subquery over a Delta
table ``VERSION AS OF`` gives each version's answer; every error reaches the SQL caller with its
code (and, for the subscription, line, column and caret); user strings stay data.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import numpy as np
import pytest

from cep.predict import Events, Model, predict
from sql_ext.quoting import sql_string
from udfs.facts import class_questions, facts_sql

pytestmark = pytest.mark.spark

T0 = datetime(2024, 3, 1, tzinfo=timezone.utc)
SCHEMA = "id BIGINT, user STRING, type STRING, ts TIMESTAMP, status STRING, ip STRING, v DOUBLE"
SEQ = "PATTERN A, B; C"
TIMED = ("PATTERN F, F, F @(t(F3) - t(F1) < 5 MINUTES) ; S "
         "DEFINE F AS status = 'denied' AND ip = $x, S AS status = 'success' AND ip = $x")
BOOL = "PATTERN (A, B) & (C; D) | (H, H) DEFINE H AS v > 3"
SUBSCRIPTIONS = {"seq": SEQ, "timed": TIMED, "bool": BOOL}
KEY_COLUMNS = ["instance", "state", "progress", "probability", "p_exact", "matched", "matches",
               "events", "last_ts"]
EVENT_COLUMNS = ["instance", "id", "ts", "state", "progress", "probability", "p_exact", "matched"]


def random_events(seed: int, n_users: int = 4, per_user: int = 40) -> list[tuple]:
    rng = random.Random(seed)
    rows, next_id = [], 0
    for u in range(n_users):
        t = 0
        for _ in range(per_user):
            t += rng.choice([0, 30, 60, 90, 120])  # seconds; zero gaps: ties in timestamps
            rows.append((next_id, f"u{u}", rng.choice("ABCDE"), T0 + timedelta(seconds=t),
                         rng.choice(["denied", "denied", "success", "other"]),
                         rng.choice(["10.0.0.1", "10.0.0.2"]), float(rng.randint(0, 5))))
            next_id += 1
    rng.shuffle(rows)  # arrival order must not matter
    return rows


def micros(dt: datetime) -> int:
    return (dt - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(microseconds=1)


def user_events(rows: list[tuple], user: str | None = None, seconds: bool = False) -> Events:
    """The core's events of one user (all users as keys when None), in ``(ts, id)`` order."""
    mine = sorted((r for r in rows if user is None or r[1] == user), key=lambda r: (r[3], r[0]))
    ts = [micros(r[3]) // (1_000_000 if seconds else 1) for r in mine]
    return Events.from_columns(
        ts=ts, keys=None if user is not None else [r[1] for r in mine], ids=[r[0] for r in mine],
        types=[r[2] for r in mine],
        attrs={"status": np.array([r[4] for r in mine], dtype=object),
               "ip": np.array([r[5] for r in mine], dtype=object),
               "v": np.array([r[6] for r in mine])})


def core(subscription: str, rows: list[tuple], *, output: str = "keys", model: Model | None = None,
         seconds: bool = False, **kwargs: Any) -> list[tuple]:
    """The core's answer per user, as SQL rows ``(user, columns...)``."""
    out = []
    for user in sorted({r[1] for r in rows}):
        found = predict(subscription, user_events(rows, user, seconds), output=output,
                        model=model, **kwargs).rows
        names = KEY_COLUMNS if output == "keys" else EVENT_COLUMNS
        out += [(user, *(found[c][i] for c in names)) for i in range(len(found["state"]))]
    return out


def same(got: list[tuple], expected: list[tuple], prob_at: tuple[int, ...]) -> None:
    """Equal as multisets of rows; probabilities within 1e-12."""
    def key(r: tuple) -> tuple:
        return tuple("" if x is None else x for i, x in enumerate(r) if i not in prob_at)
    got, expected = sorted(got, key=key), sorted(expected, key=key)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert key(g) == key(e)
        for i in prob_at:
            assert (g[i] is None) == (e[i] is None) and (g[i] is None or g[i] == pytest.approx(e[i], abs=1e-12))


def sql_error(spark: Any, sql: str) -> str:
    with pytest.raises(Exception) as info:
        spark.sql(sql).collect()
    return str(info.value)


@pytest.fixture(scope="module")
def pm_events(spark) -> list[tuple]:
    rows = random_events(3)
    spark.createDataFrame(rows, SCHEMA).createOrReplaceTempView("pm_events")
    return rows


def keys_sql(tag: str, subscription: str, extra: str = "", table: str = "TABLE(pm_events)") -> str:
    return (f"SELECT '{tag}' AS c, user, {', '.join(KEY_COLUMNS[:-1])}, unix_micros(last_ts) AS last_ts "
            f"FROM predict_match(subscription => {sql_string(subscription)}, key_col => 'user'"
            f"{extra}, events => {table})")


def events_sql(tag: str, subscription: str, extra: str = "") -> str:
    return (f"SELECT '{tag}' AS c, user, instance, id, unix_micros(ts) AS ts, "
            f"{', '.join(EVENT_COLUMNS[3:])} FROM predict_match(subscription => "
            f"{sql_string(subscription)}, key_col => 'user', output => 'events'{extra}, "
            "events => TABLE(pm_events))")


CASES = [("seq", SEQ, {"lookahead": 3}), ("timed", TIMED, {"lookahead": 4}),
         ("bool", BOOL, {"lookahead": 2}), ("bool-sum", BOOL, {"lookahead": 2, "combine": "sum"}),
         ("seq-0.2", SEQ, {"lookahead": 5, "threshold": 0.2, "smoothing": 0.5})]


def sql_args(kwargs: dict[str, Any]) -> str:
    return "".join(f", {k} => {sql_string(v) if isinstance(v, str) else v}" for k, v in kwargs.items())


def test_keys_and_events_equal_the_core(spark, pm_events) -> None:
    keys = spark.sql(" UNION ALL ".join(keys_sql(tag, sub, sql_args(kw))
                                        for tag, sub, kw in CASES)).collect()
    events = spark.sql(" UNION ALL ".join(events_sql(tag, sub, sql_args(kw))
                                          for tag, sub, kw in CASES)).collect()
    for tag, sub, kw in CASES:
        expected = core(sub, pm_events, **kw)
        same([tuple(r)[1:] for r in keys if r.c == tag], expected, prob_at=(4, 5))
        assert len(expected) >= (1 if "0.2" in tag else 4), tag
        expected = core(sub, pm_events, output="events", **kw)
        same([tuple(r)[1:] for r in events if r.c == tag], expected, prob_at=(6, 7))
        if "0.2" not in tag:
            assert len(expected) == len(pm_events), tag
        else:
            assert 0 < len(expected) < len(pm_events) and min(r[6] for r in expected) >= 0.2
    # the data exercises what the subscriptions read: instances of the join variable, matches,
    # a p_exact only for a single sequence, and Boolean states
    timed = [r for r in keys if r.c == "timed"]
    assert {r.instance for r in timed} == {"10.0.0.1", "10.0.0.2"}
    assert sum(r.matches for r in keys if r.c == "seq") > 0 and any(r.matched for r in events)
    assert all(r.p_exact is None for r in keys if r.c.startswith("bool"))
    assert any("&" in r.state and "|" in r.state for r in keys if r.c == "bool")
    summed = {(r.user, r.instance): r.probability for r in keys if r.c == "bool-sum"}
    assert any(summed[(r.user, r.instance)] > r.probability + 1e-9 for r in keys if r.c == "bool")


def test_paper_definition_equals_the_core(spark, pm_events) -> None:
    # definition => 'paper': P-ToPSS's beta(n) = alpha(1) + ... + alpha(n), trained by arrivals
    cases = [("p-seq", SEQ, {"lookahead": 3, "definition": "paper"}),
             ("p-bool", BOOL, {"lookahead": 2, "definition": "paper", "combine": "sum"})]
    keys = spark.sql(" UNION ALL ".join(keys_sql(tag, sub, sql_args(kw)) for tag, sub, kw in cases)).collect()
    for tag, sub, kw in cases:
        expected = core(sub, pm_events, **kw)
        assert expected != core(sub, pm_events, lookahead=kw["lookahead"]), tag   # another number
        same([tuple(r)[1:] for r in keys if r.c == tag], expected, prob_at=(4, 5))


def test_one_stream_form_and_a_numeric_timestamp(spark, pm_events) -> None:
    # Without key_col the table is one stream and the output has no key column. ts as BIGINT
    # seconds: the time condition is then in raw units and the timestamps come back as BIGINT.
    timed_units = TIMED.replace("5 MINUTES", "300")
    spark.sql("SELECT id, user, type, unix_seconds(ts) AS t, status, ip, v FROM pm_events") \
        .createOrReplaceTempView("pm_events_s")
    u0 = [r for r in pm_events if r[1] == "u0"]
    keys = spark.sql(f"SELECT * FROM predict_match({sql_string(SEQ)}, "
                     "TABLE(SELECT * FROM pm_events WHERE user = 'u0'), lookahead => 3)")
    assert keys.columns == KEY_COLUMNS and dict(keys.dtypes)["last_ts"] == "timestamp"
    rows = keys.selectExpr(*KEY_COLUMNS[:-1], "unix_micros(last_ts)").collect()
    same([tuple(r) for r in rows], [r[1:] for r in core(SEQ, u0, lookahead=3)], prob_at=(3, 4))
    found = spark.sql(
        f"SELECT * FROM predict_match({sql_string(timed_units)}, 'user', TABLE(pm_events_s), "
        "lookahead => 4, ts_col => 't', output => 'events')")
    assert dict(found.dtypes)["ts"] == "bigint" and found.columns[0] == "user"
    expected = core(timed_units, pm_events, output="events", lookahead=4, seconds=True)
    same([tuple(r) for r in found.collect()], expected, prob_at=(6, 7))


def test_a_partition_by_of_the_caller_is_refused(spark, pm_events) -> None:
    with pytest.raises(Exception, match="PARTITION BY"):
        spark.sql(f"SELECT * FROM predict_match({sql_string(SEQ)}, "
                  "TABLE(pm_events) PARTITION BY user ORDER BY ts, lookahead => 3)").collect()


def write_models(spark, settings, rows: list[tuple]) -> tuple[Model, Model]:
    """``pm_models``: version 0 trained on the first 60 events, version 1 on all of them (one
    core call over every user: a shared model), plus a corrupt and a foreign model."""
    early = sorted(rows, key=lambda r: r[0])[:60]
    m0 = predict(SEQ, user_events(early), lookahead=1).trained
    m1 = predict(SEQ, user_events(rows), lookahead=1).trained
    assert m0.events == 60 and m1.events == len(rows) and m0 != m1
    other = predict(BOOL, user_events(rows), lookahead=1).trained.to_bytes()
    broken = bytearray(m1.to_bytes())
    broken[-3] ^= 0xFF  # payload changed: the checksum no longer matches
    location = str(settings.warehouse_dir / "pm_models")
    schema = "name STRING, model BINARY"
    for version in ([("seq", m0.to_bytes())],
                    [("seq", m1.to_bytes()), ("broken", bytes(broken)), ("bool", other)]):
        spark.createDataFrame([(n, bytearray(b)) for n, b in version], schema) \
            .write.format("delta").mode("overwrite").save(location)
    if not spark.catalog.tableExists("pm_models"):
        spark.catalog.createTable("pm_models", path=location, source="delta")
    return m0, m1


def test_a_persisted_model_with_time_travel_and_its_errors(spark, settings, pm_events) -> None:
    m0, m1 = write_models(spark, settings, pm_events)
    model = "model => (SELECT model FROM pm_models{} WHERE name = '{}')"
    rows = spark.sql(" UNION ALL ".join([
        keys_sql("v0", SEQ, ", lookahead => 3, " + model.format(" VERSION AS OF 0", "seq")),
        keys_sql("v1", SEQ, ", lookahead => 3, " + model.format("", "seq")),
        keys_sql("v1 literal", SEQ, f", lookahead => 3, model => X'{m1.to_bytes().hex()}'"),
        # one stream (no key column) with the model: one user's events
        keys_sql("v0 one stream", SEQ, ", lookahead => 3, " + model.format(" VERSION AS OF 0", "seq"),
                 "TABLE(SELECT * FROM pm_events WHERE user = 'u1')").replace(
                     "user, ", "CAST(NULL AS STRING) AS user, ", 1).replace(", key_col => 'user'", "")
    ])).collect()
    answers = {}
    for tag, m in (("v0", m0), ("v1", m1), ("v1 literal", m1)):
        expected = core(SEQ, pm_events, lookahead=3, model=m)
        same([tuple(r)[1:] for r in rows if r.c == tag], expected, prob_at=(4, 5))
        answers[tag] = sorted((r[0], r[4]) for r in expected)
    same([tuple(r)[2:] for r in rows if r.c == "v0 one stream"],
         [r[1:] for r in core(SEQ, [e for e in pm_events if e[1] == "u1"], lookahead=3, model=m0)],
         prob_at=(3, 4))
    assert answers["v0"] != answers["v1"]  # the two versions' counts give other probabilities
    assert answers["v1"] != sorted((r[0], r[4]) for r in core(SEQ, pm_events, lookahead=3))
    # a corrupt blob and no model row, while the query runs; a corrupt constant, in analyze
    for name, needle in [("broken", "CEP-PRED-012: model checksum mismatch: the blob is corrupt"),
                         ("missing", "CEP-SQL-050: argument model is NULL")]:
        message = sql_error(spark, call(SEQ, ", lookahead => 3, " + model.format("", name)))
        assert needle in message, (name, message)
    message = sql_error(spark, call(SEQ, ", lookahead => 3, model => X'00112233'"))
    assert "CEP-PRED-012: not a predict_match model (bad magic)" in message


def call(subscription: str, extra: str = ", lookahead => 3, key_col => 'user'",
         table: str = "TABLE(pm_events)") -> str:
    return (f"SELECT * FROM predict_match(subscription => {sql_string(subscription)}{extra}, "
            f"events => {table})")


def test_errors_reach_the_sql_caller(spark, pm_events) -> None:
    # at analysis: the subscription's code, line, column and caret; a core argument check; an
    # adapter check. While the query runs: a NULL timestamp, named by the event's id and key.
    message = sql_error(spark, call("PATTERN A,\n  B+"))
    assert "CEP-PRED-001: line 2, column 3: quantifiers" in message and "^" in message
    message = sql_error(spark, call(SEQ, ", lookahead => 3, threshold => 1.5"))
    assert "CEP-PRED-011: argument threshold: expected a number in [0, 1], found 1.5" in message
    message = sql_error(spark, call(SEQ, ", lookahead => 3, ts_col => 'when'"))
    assert ("CEP-SQL-050: ts_col 'when' is not a column of the events table; columns found: "
            "id bigint, user string, type string, ts timestamp") in message
    message = sql_error(spark, call(SEQ, ", lookahead => 3, key_col => 'user'",
                                    "TABLE(SELECT id, user, type, IF(id = 7, NULL, ts) AS ts FROM pm_events)"))
    assert "CEP-PRED-010: event with id 7 of key 'u0' has a NULL timestamp" in message


def struct(ddl: str) -> Any:
    """A StructType from ``name type, ...`` (the few types these tests use; no JVM needed)."""
    from pyspark.sql.types import (DecimalType, DoubleType, LongType, StringType, StructField,
                                   StructType, TimestampType)

    simple = {"bigint": LongType(), "string": StringType(), "timestamp": TimestampType(),
              "double": DoubleType(), "decimal": DecimalType(10, 2)}
    return StructType([StructField(name, simple[typ]) for name, typ in
                       (part.split() for part in ddl.split(", "))])


EVENTS_TYPE = "id bigint, user string, type string, ts timestamp, status string, ip string, v double"


def analyze(subscription: Any = SEQ, table: str = EVENTS_TYPE, **named: Any) -> Any:
    """``PredictMatch.analyze`` as Spark calls it: constants, a table, or ``EXPR`` (a
    non-constant expression such as a scalar subquery, given as its type)."""
    from pyspark.sql.types import BinaryType, DecimalType, IntegerType, NullType, StringType
    from pyspark.sql.udtf import AnalyzeArgument

    from udfs.predict_match import PredictMatch

    def arg(v: Any) -> AnalyzeArgument:
        if isinstance(v, tuple) and v[0] == "EXPR":
            return AnalyzeArgument(dataType=v[1], value=None, isTable=False, isConstantExpression=False)
        kind = (NullType() if v is None else StringType() if isinstance(v, str)
                else BinaryType() if isinstance(v, bytes)
                else DecimalType(3, 2) if isinstance(v, Decimal) else IntegerType())
        return AnalyzeArgument(dataType=kind, value=v, isTable=False, isConstantExpression=True)

    events = AnalyzeArgument(dataType=struct(table), value=None, isTable=True,
                             isConstantExpression=False)
    return PredictMatch.analyze(arg(subscription), events,
                                     **{k: arg(v) for k, v in named.items()})


def test_arguments_are_checked_in_analyze() -> None:
    # Spark runs analyze() in a Python process of its own; called directly, every check is
    # exercised without a query. CallFailed carries what the SQL caller reads.
    from pyspark.sql.types import BinaryType, StringType

    from udfs.shell import CallFailed as PredictMatchFailed

    cases = [
        (dict(subscription="PATTERN A, B WITHIN 5 MINUTES", lookahead=3), "CEP-PRED-002: line 1, column"),
        (dict(subscription="PATTERN A; B @(t(A) - t(B) < 5 MINUTES)", lookahead=3), "CEP-PRED-003: line 1, column"),
        (dict(subscription="PATTERN A, (B", lookahead=3), "CEP-PAT-1"),
        (dict(subscription="PATTERN A;\n  B DEFINE B AS price > 3", lookahead=3),
         "CEP-PAT-203: line 2, column 17: unknown attribute 'price'; the events table has columns: "
         "id, user, type, ts, status, ip, v"),
        (dict(lookahead=0), "CEP-PRED-011: argument lookahead: expected an integer in [1, "),
        (dict(), "CEP-PRED-011: argument lookahead: expected an integer"),
        (dict(lookahead=3, output="rows"), "CEP-PRED-011: argument output: expected one of keys, events"),
        (dict(lookahead=3, combine="max"), "CEP-PRED-011: argument combine"),
        (dict(lookahead=3, smoothing=-1), "CEP-PRED-011: argument smoothing"),
        (dict(lookahead=3, definition="occupancy"),
         "CEP-PRED-011: argument definition: expected one of first_passage, paper, found 'occupancy'"),
        (dict(lookahead=3, ts_col="status"), "CEP-SQL-050: ts_col 'status' must be a TIMESTAMP, TIMESTAMP_NTZ, DATE or a number, found string"),
        (dict(lookahead=3, id_col="nope"), "CEP-SQL-050: id_col 'nope' is not a column"),
        (dict(lookahead=3, key_col="who"), "CEP-SQL-050: key_col 'who' is not a column"),
        (dict(lookahead=3, model="abc"), "CEP-SQL-050: argument model: expected BINARY"),
        (dict(lookahead=3, model=("EXPR", StringType())), "CEP-SQL-050: argument model: expected BINARY"),
        (dict(lookahead=3, model=b"CEPPRM-not-a-model"), "CEP-PRED-012: not a predict_match model"),
        (dict(lookahead=("EXPR", StringType())), "CEP-SQL-050: argument lookahead must be a constant"),
        (dict(subscription=("EXPR", StringType()), lookahead=3), "CEP-SQL-050: argument subscription must be a constant"),
        (dict(subscription=3, lookahead=3), "CEP-SQL-050: argument subscription: expected a string"),
        (dict(lookahead=3, ts_col="ts`; DROP TABLE pm_events; --"),
         "CEP-SQL-050: ts_col 'ts`; DROP TABLE pm_events; --' is not a column"),
    ]
    for named, needle in cases:
        with pytest.raises(PredictMatchFailed) as info:
            analyze(**named)
        assert needle in str(info.value), (named, str(info.value))
    with pytest.raises(PredictMatchFailed, match="CEP-SQL-050: class 'A' has no DEFINE, so the "
                                                 "events need a type column"):
        analyze(table="id bigint, user string, ts timestamp", lookahead=3)
    with pytest.raises(PredictMatchFailed, match="CEP-SQL-050: key_col 'state' has the name of an "
                                                 "output column"):
        analyze(table=EVENTS_TYPE + ", state string", lookahead=3, key_col="state")
    # what is selected: only the columns the subscription reads, never a filter
    result = analyze(TIMED, lookahead=3, threshold=Decimal("0.25"), key_col="user",
                     model=("EXPR", BinaryType()))
    assert [(c.name, c.alias) for c in result.select] == [
        ("unix_micros(CAST(`ts` AS TIMESTAMP))", "__ts"), ("`id`", "__id"), ("`user`", "__key"),
        ("`status`", "__a0"), ("`ip`", "__a1")]
    assert result.plan.threshold == 0.25 and result.plan.model_given and result.plan.model_blob is None
    assert [f.name for f in result.schema.fields][:2] == ["user", "instance"]
    assert [p.name for p in result.partitionBy] == ["pmod(hash(`user`), 64)"]
    result = analyze(BOOL, table="id string, type string, t decimal, v decimal",
                     lookahead=2, output="events", ts_col="t")
    # ... and, trained on the input, the facts that its classes occur (udfs.facts)
    assert [(c.name, c.alias) for c in result.select] == [
        ("CAST(`t` AS DOUBLE)", "__ts"), ("`id`", "__id"), ("`type`", "__type"),
        (facts_sql(class_questions(result.plan.classes, "`type`")), "__cep_facts"),
        ("CAST(`v` AS DOUBLE)", "__a0")]
    assert result.plan.classes == ("A", "B", "C", "D")
    assert result.schema.simpleString() == (
        "struct<instance:string,id:string,ts:double,state:string,progress:int,"
        "probability:double,p_exact:double,matched:boolean>")
    assert not result.partitionBy and result.withSinglePartition
    assert analyze(lookahead=3, model=None).plan.model_given is False


def test_user_strings_stay_data(spark, pm_events) -> None:
    quoted = "PATTERN A, B DEFINE A AS status = 'x''); DROP TABLE pm_events; --', B AS v > 1"
    rows = spark.sql(call(quoted, ", lookahead => 2, key_col => 'user'", "TABLE(pm_events)")).collect()
    assert {r.user for r in rows} == {"u0", "u1", "u2", "u3"} and all(r.state == "-" for r in rows)
    message = sql_error(spark, call("PATTERN A'; DROP TABLE pm_events; --"))
    assert "CEP-PAT-101" in message and "^" in message
    assert spark.sql("SELECT count(*) FROM pm_events").first()[0] == len(pm_events)


def selected(rows: list[tuple], key: bool = True) -> Any:
    """The columns the function selects (``__ts``, ``__id``, ``__type``, ``__key``) of rows."""
    import pyarrow as pa

    columns = {"__ts": pa.array([micros(r[3]) for r in rows], pa.int64()),
               "__id": pa.array([r[0] for r in rows], pa.int64()),
               "__type": pa.array([r[2] for r in rows], pa.string())}
    if key:
        columns["__key"] = pa.array([r[1] for r in rows], pa.string())
    return pa.table(columns)


def test_a_task_given_keys_in_any_order_answers_each_key() -> None:
    # No JVM: a task of the key_col form receives a bucket of keys, rows interleaved.
    from udfs.predict_match import PredictCallPlan, answer_table

    rows = random_events(9, n_users=3, per_user=25)
    plan = PredictCallPlan(SEQ, 3, 0.0, "keys", "independent", 0.0, "timestamp", True, True,
                           "user", ())
    got = [(*r[:-1], micros(r[-1])) for r in
           (tuple(d.values()) for d in answer_table(plan, selected(rows)).to_pylist())]
    same(got, core(SEQ, rows, lookahead=3), prob_at=(4, 5))


def test_a_model_of_another_subscription_is_refused() -> None:
    from cep.errors import CepError
    from udfs.predict_match import PredictCallPlan, answer_table

    rows = random_events(9, n_users=2, per_user=10)
    other = predict(BOOL, user_events(rows), lookahead=1).trained.to_bytes()
    plan = PredictCallPlan(SEQ, 3, 0.0, "keys", "independent", 0.0, "timestamp", True, True, None,
                           (), model_given=True)
    with pytest.raises(CepError, match=r"CEP-PRED-012: the model was trained for "
                                       r"'PATTERN \(A, B\) & \(C; D\)"):
        answer_table(plan, selected(rows, key=False), bytearray(other))


def test_the_fig5_composite_subscription(spark) -> None:
    # P-ToPSS Fig. 5: a master sequence with an '&' and an '|' child (docs/predict.md section
    # 5.1). By hand: (s2, s3) completes at 4, (s4, s5) at 7, so the '&' at 7; the s6 at 5 and the
    # s7 at 8 come too early; after the s6 at 9, s8 at 10 and s7 at 11 each complete a match.
    from cep.oracles.predict_oracle import composite_match_ends
    from cep.predict import compile_subscription

    fig5 = "PATTERN s1 ; ((s2, s3) & (s4, s5)) ; s6 ; (s7 | s8)"
    types = "x s1 s4 s2 s3 s6 s4 s5 s7 s6 s8 s7".split()
    values = ", ".join(f"({i}, '{t}')" for i, t in enumerate(types))
    rows = spark.sql(f"SELECT ts, state, progress, probability, matched FROM predict_match("
                     f"subscription => {sql_string(fig5)}, lookahead => 3, output => 'events', "
                     f"events => TABLE(SELECT * FROM VALUES {values} AS t(ts, type))) ORDER BY ts").collect()
    assert [r.ts for r in rows if r.matched] == [10, 11]
    sub = compile_subscription(fig5)
    truth = [[p.cls == t for p in sub.primitives] for t in types]
    assert [r.matched for r in rows] == composite_match_ends(sub, truth, list(range(len(types))))
    core_rows = predict(fig5, Events.from_columns(ts=list(range(len(types))), types=types), lookahead=3,
                        output="events").rows
    assert [r.state for r in rows] == core_rows["state"]
    assert [r.probability for r in rows] == pytest.approx(core_rows["probability"], abs=1e-12)
    assert rows[9].state == "s1 ; ((s2, s3) & (s4, s5)) ; s6 ; [(- | -)]" and rows[9].progress == 3


def test_a_composite_refuses_smoothing_and_paper_before_any_task(spark) -> None:
    # Found writing issue 47's fuzz: the core refuses both for a composite subscription, but only
    # once a task has events, so on an empty table (or key) the query answered no rows.
    empty = "TABLE(SELECT * FROM VALUES (1, 'A', 'k') AS t(ts, type, k) WHERE ts > 1)"
    for extra, needle in [(", smoothing => 0.5, key_col => 'k'",
                           "CEP-PRED-011: argument smoothing: not supported for a composite"),
                          (", definition => 'paper'",
                           "CEP-PRED-011: argument definition: a composite subscription")]:
        message = sql_error(spark, call("PATTERN A ; ((B, C) & D)", ", lookahead => 2" + extra,
                                        empty))
        assert needle in message, (extra, message)


def test_ntz_and_date_timestamps_are_read_as_utc_in_any_session_time_zone(spark) -> None:
    # Issue 47's fuzz: both were CAST to TIMESTAMP, so read in the session time zone (last_ts
    # moved by its offset). Across New York's change to summer time (2024-03-10) a day had 23
    # hours and 01:30 to 03:10 was 40 minutes: each time condition below held.
    from tests.sql_fuzz import session_conf

    def one(tag: str, a: str, b: str, unit: str) -> str:
        return (f"SELECT '{tag}' AS c, matched, unix_micros(last_ts) AS last FROM predict_match("
                f"subscription => 'PATTERN A ; B @(t(B) - t(A) < 1 {unit})', lookahead => 1, "
                f"events => TABLE(SELECT * FROM VALUES (1, 'A', {a}), (2, 'B', {b}) "
                "AS t(id, type, ts)))")

    with session_conf(spark, {"spark.sql.session.timeZone": "America/New_York"}):
        rows = spark.sql(one("date", "DATE'2024-03-10'", "DATE'2024-03-11'", "DAYS") + " UNION ALL "
                         + one("ntz", "TIMESTAMP_NTZ'2024-03-10 01:30:00'",
                               "TIMESTAMP_NTZ'2024-03-10 03:10:00'", "HOURS")).collect()
    assert {r.c: (r.matched, r.last) for r in rows} == {
        "date": (False, micros(datetime(2024, 3, 11, tzinfo=timezone.utc))),
        "ntz": (False, micros(datetime(2024, 3, 10, 3, 10, tzinfo=timezone.utc)))}


def test_floating_keys_group_as_group_by_does(spark) -> None:
    # Issue 47: NaNs of different bits, and -0.0 beside 0.0, are one key each for GROUP BY;
    # Arrow's dictionary made four keys of them, each with its own history.
    from tests.udfs.test_match_seq import NAN_KEYS

    rows = spark.sql(f"SELECT key, events, matches FROM predict_match(subscription => "
                     f"'PATTERN A , A', lookahead => 1, key_col => 'key', "
                     f"events => TABLE({NAN_KEYS}))").collect()
    assert sorted((str(r.key), r.events, r.matches) for r in rows) == [
        ("0.0", 2, 1), ("nan", 2, 1)], rows
