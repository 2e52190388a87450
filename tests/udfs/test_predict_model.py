"""``predict_model`` through ``spark.sql``: the prediction job's model, the core's on random
tables, and what ``predict_match`` does with it.

The reference of a random case is the core trained once on the case's rows as collected from
the table, ordered by ``(key, ts, id)`` in Python (docs/predict.md, "Models from SQL": the model
of the whole input is the sum of every key's counts). The SQL side reaches every path of the
adapter: no key, a STRING or INT key with a NULL key, ties in ``ts`` broken by the id, every
timestamp type, chunks of 1-5 rows (a key cut at a chunk's end waits for the next), and
subscriptions with join variables, time conditions and ``&`` / ``|`` steps.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings as hsettings
from hypothesis import strategies as st

from cep.predict import Events, Model, compile_subscription, predict
from cep.predict.model import LeafModel
from sql_ext.quoting import sql_string

pytestmark = pytest.mark.spark

SUBSCRIPTIONS = [
    "PATTERN A, B",
    "PATTERN A; B; A",
    "PATTERN A, B DEFINE A AS v > 1, B AS v <= 1",
    "PATTERN A ; B @(t(B) - t(A) < 2 UNITS)",
    "PATTERN A, B WHERE [v]",
    "PATTERN A, B DEFINE A AS type = 'A' AND v = $x, B AS type = 'B' AND v = $x",
    "PATTERN A; (B & C)",
    "PATTERN (A, B) | (C, D)",
]
TS_TYPES = ["TIMESTAMP", "TIMESTAMP_NTZ", "DATE", "BIGINT", "DOUBLE"]


def ts_sql(kind: str, t: int) -> str:
    """The SQL literal of time point ``t`` in the column type ``kind``."""
    if kind == "BIGINT":
        return f"CAST({t} AS BIGINT)"
    if kind == "DOUBLE":
        return f"CAST({t} AS DOUBLE)"
    if kind == "DATE":
        return f"DATE_ADD(DATE'2024-01-01', {t})"
    return f"{kind}'{dt.datetime(2024, 1, 1) + dt.timedelta(seconds=t)}'"


def ts_value(kind: str, t: int) -> int | float:
    """What the core reads for ``t``: UTC microseconds, or the number itself."""
    if kind == "BIGINT":
        return t
    if kind == "DOUBLE":
        return float(t)
    if kind == "DATE":
        return t * 86_400_000_000
    return (dt.datetime(2024, 1, 1) - dt.datetime(1970, 1, 1)).days * 86_400_000_000 + t * 1_000_000


def core_model(text: str, rows: list[tuple], kind: str) -> Model:
    """The reference: the core trained once on every row, keys apart, in (key, ts, id) order."""
    order = sorted(rows, key=lambda r: (r[0] is None, repr(r[0]), r[1], r[2]))
    codes = {k: i for i, k in enumerate(dict.fromkeys(r[0] for r in order))}
    events = Events.from_columns(
        ts=np.array([ts_value(kind, r[1]) for r in order],
                    dtype=np.float64 if kind == "DOUBLE" else np.int64),
        keys=np.array([codes[r[0]] for r in order], dtype=np.int64),
        ids=np.array([r[2] for r in order], dtype=np.int64),
        types=np.array([r[3] for r in order], dtype=object),
        attrs={"v": np.array([np.nan if r[4] is None else float(r[4]) for r in order])})
    trained = predict(compile_subscription(text), events, lookahead=1).trained
    return Model(trained.subscription,
                 tuple(LeafModel.empty() for _ in trained.leaves)).merge(trained)


EVENT = st.tuples(st.sampled_from(["k1", "k2", "k3", None]), st.integers(0, 6),
                  st.sampled_from("ABCDX"), st.one_of(st.none(), st.integers(0, 3)))


@hsettings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=st.sampled_from(SUBSCRIPTIONS), kind=st.sampled_from(TS_TYPES),
       key=st.sampled_from([None, "STRING", "INT"]), chunk=st.integers(1, 5),
       events=st.lists(EVENT, min_size=1, max_size=14))
def test_the_model_is_the_cores_over_every_key(spark, text: str, kind: str, key: str | None,
                                               chunk: int, events: list[tuple]) -> None:
    if "UNITS" in text and kind not in ("BIGINT", "DOUBLE"):
        kind = "BIGINT"  # UNITS are a numeric ts_col's raw units
    rows = []
    for i, (k, t, typ, v) in enumerate(events):
        k_value = None if key is None else (k if key == "STRING" or k is None
                                            else int(k[1:]))
        rows.append((k_value, t, i, typ, v))
    values = ", ".join(
        f"({'NULL' if r[0] is None else sql_string(r[0]) if key == 'STRING' else r[0]}, "
        f"{ts_sql(kind, r[1])}, {r[2]}, {sql_string(r[3])}, {'NULL' if r[4] is None else r[4]})"
        for r in rows)
    cast = {"STRING": "STRING", "INT": "INT", None: "STRING"}[key]
    table = (f"SELECT CAST(k AS {cast}) AS k, t AS ts, id, type, CAST(v AS INT) AS v "
             f"FROM VALUES {values} AS x(k, t, id, type, v)")
    key_arg = "'k', " if key is not None else ""
    got = spark.sql(f"SELECT * FROM predict_model({sql_string(text)}, {key_arg}TABLE({table}), "
                    f"chunk_rows => {chunk}, allow_absent => true)").collect()
    assert len(got) == 1, got
    if key is None:
        rows = [(None, *r[1:]) for r in rows]
    want = core_model(text, rows, kind)
    found = Model.from_bytes(got[0]["model"], text)
    assert found == want, f"{text} over {rows}: expected {want}, found {found}"
    assert bytes(got[0]["model"]) == want.to_bytes()
    assert got[0]["events"] == want.events
    assert got[0]["keys"] == len({r[0] for r in rows})


def test_the_model_from_sql_is_the_prediction_jobs(spark, predicted_heat) -> None:
    """conf/predictions.toml's set ``heat``: the job's ``heat_models`` blob, byte for byte."""
    from delta_tables.predict_state import load_prediction
    from delta_tables.settings import load_settings

    conf = load_prediction(load_settings(), "heat")
    assert len(conf.subscriptions) == 2
    for sub, text in conf.subscriptions:
        stored = spark.sql(f"SELECT model FROM heat_models WHERE sub = {sql_string(sub)}").first()
        for chunk in ("", ", chunk_rows => 97"):
            got = spark.sql(f"SELECT * FROM predict_model({sql_string(text)}, 'city', "
                            f"TABLE(daily_temperatures){chunk})").first()
            assert bytes(got["model"]) == bytes(stored["model"]), (sub, chunk)
            assert got["keys"] == spark.sql("SELECT count(DISTINCT city) FROM "
                                            "daily_temperatures").first()[0]
            assert got["events"] == Model.from_bytes(stored["model"]).events > 0


def test_a_table_of_models_feeds_predict_match(spark, loaded_temperatures) -> None:
    """CREATE TABLE ... AS SELECT, then ``model => (SELECT model FROM ...)``: the answers of
    the same model passed as a literal blob, and not those of per-city training."""
    text = "PATTERN N, N, N DEFINE N AS tmin_c >= 20"
    spark.sql("DROP TABLE IF EXISTS pm_sql_models")
    spark.sql(f"CREATE TABLE pm_sql_models USING delta AS SELECT 'nights' AS name, * FROM "
              f"predict_model({sql_string(text)}, 'city', TABLE(daily_temperatures))")
    blob = bytes(spark.sql("SELECT model FROM pm_sql_models").first()["model"])
    call = (f"SELECT * FROM predict_match({sql_string(text)}, 'city', TABLE(daily_temperatures), "
            "lookahead => 5{model}) ORDER BY city")
    from_table = spark.sql(call.format(
        model=", model => (SELECT model FROM pm_sql_models WHERE name = 'nights')")).collect()
    literal = spark.sql(call.format(model=f", model => X'{blob.hex()}'")).collect()
    own = spark.sql(call.format(model="")).collect()
    assert from_table == literal
    assert [r["probability"] for r in from_table] != [r["probability"] for r in own]


@pytest.mark.parametrize("sql, code, snippet", [
    ("SELECT * FROM predict_model('PATTERN A, Bx', TABLE(SELECT 1 AS ts, 'A' AS type))",
     "CEP-PAT-219", "Bx"),
    ("SELECT * FROM predict_model('PATTERN A,, B', TABLE(SELECT 1 AS ts, 'A' AS type))",
     "CEP-PAT", "^"),
    ("SELECT * FROM predict_model('PATTERN A, B', 'k', TABLE(SELECT 1 AS k, "
     "CAST(NULL AS BIGINT) AS ts, 'A' AS type, 7 AS id), allow_absent => true)", "CEP-PRED-010",
     "with id 7 of key 1"),
    ("SELECT * FROM predict_model('PATTERN A, B', TABLE(SELECT 1 AS t, 'A' AS type))",
     "CEP-SQL-050", "ts_col 'ts' is not a column"),
    ("SELECT * FROM predict_model('PATTERN A, B', TABLE(SELECT 1 AS ts, 'A' AS type), "
     "chunk_rows => 0)", "CEP-SQL", "chunk_rows"),
])
def test_bad_calls_name_their_code(spark, sql: str, code: str, snippet: str) -> None:
    with pytest.raises(Exception) as err:
        spark.sql(sql).collect()
    message = str(err.value)
    assert code in message and snippet in message, message


def test_allow_absent_trains_a_model_that_never_saw_the_class(spark) -> None:
    row = spark.sql("SELECT * FROM predict_model('PATTERN A, Bx', TABLE(SELECT 1 AS ts, "
                    "'A' AS type), allow_absent => true)").first()
    assert (row["events"], row["keys"]) == (1, 1)
    assert Model.from_bytes(row["model"], "PATTERN A, Bx").events == 1


def test_an_empty_input_gives_no_row_and_predict_match_refuses_its_null_model(spark) -> None:
    empty = "SELECT 1L AS ts, 'A' AS type, 'k' AS k WHERE false"
    spark.sql("DROP TABLE IF EXISTS pm_empty_models")
    spark.sql(f"CREATE TABLE pm_empty_models USING delta AS SELECT model FROM predict_model("
              f"'PATTERN A, B', 'k', TABLE({empty}), allow_absent => true)")
    assert spark.sql("SELECT * FROM pm_empty_models").collect() == []
    with pytest.raises(Exception) as err:
        spark.sql("SELECT * FROM predict_match('PATTERN A, B', TABLE(SELECT 1L AS ts, 'A' AS "
                  "type), lookahead => 2, model => (SELECT model FROM pm_empty_models))").collect()
    assert "CEP-SQL-050" in str(err.value) and "model is NULL" in str(err.value), \
        str(err.value)[:800]


def test_a_key_longer_than_many_chunks_trains_as_one_call() -> None:
    """The task's stream alone (no Spark): one key of 600 events in batches of 7 rows with
    chunks of 10 rows waits whole for the end, and another key's rows after it are trained;
    the model is the core's over both keys in one call."""
    import pyarrow as pa

    from udfs.predict_model import ModelCallPlan, Training

    text = "PATTERN A; B, A"
    plan = ModelCallPlan(text, 1, 0.0, "keys", "independent", 0.0, "int", True, True, "k", (),
                         chunk_rows=10)
    rng = np.random.default_rng(7)
    n = 900
    keys = ["k1"] * 600 + ["k2"] * 300
    types = rng.choice(list("ABX"), n).tolist()
    table = pa.table({"__ts": pa.array(np.arange(n) // 3, pa.int64()),
                      "__id": pa.array(np.arange(n), pa.int64()),
                      "__type": pa.array(types), "__key": pa.array(keys)})
    training = Training(plan)
    out = []
    for batch in table.to_batches(max_chunksize=7):
        out += list(training.add(batch))
    out += list(training.finish())
    assert len(out) == 1 and out[0].column("keys").to_pylist() == [2]
    rows = [(k, t, i, c, None) for k, t, i, c in zip(keys, (np.arange(n) // 3).tolist(),
                                                     range(n), types)]
    assert Model.from_bytes(out[0].column("model")[0].as_py()) == core_model(text, rows, "BIGINT")
