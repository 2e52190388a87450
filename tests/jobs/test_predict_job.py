"""The prediction job (``python -m jobs predict``) on real Spark + Delta (small data; jobs/state/predict.py).

A source of three commits (the second with late events and a row without a key, the third with
timestamp ties across commits) runs through three subscriptions: a plain sequence, one with a
join variable and a time condition, and a Boolean one. One set is built in one pass, another run
by run with two injected crashes (data files written without a commit; a crash after the models
commit, rerun after the source has grown); the first runs in Spark (``mapInArrow``, every key
streamed in chunks of 16 rows), the second on the driver. Both must hold the same rows in every state table,
the same as the core (:func:`cep.predict.predict` commit by commit, late rows left out), and the
models as of earlier versions must be the core's models of the source as of then.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from cep.predict import Events, InstanceState, Model, ModelFormatError, predict
from delta_tables.catalog import read_table
from delta_tables.predict_state import PredictionConf, instance_text
from delta_tables.settings import TableConf
from jobs.framework.errors import InjectedCrash
from jobs.framework.errors import SettingsChangedError as PredictSettingsChangedError
from jobs.framework.txn import log_version as _version
from jobs.state.predict import read_meta, run_predict
from jobs.state.predict_bucket import process_bucket

TS = pa.timestamp("us", tz="UTC")
HOUR = 3_600_000_000
EPOCH = 1_704_067_200_000_000  # 2024-01-01
SCHEMA = pa.schema([("id", pa.int64()), ("user", pa.string()), ("ts", TS), ("type", pa.string()),
                    ("temp", pa.float64()), ("status", pa.string()), ("ip", pa.string())])
SUBS = {
    "hot3": "PATTERN H, H, H DEFINE H AS temp > 30",
    "login": "PATTERN F, F @(t(F2) - t(F1) < 2 HOURS) ; S DEFINE F AS status = 'denied' AND "
             "ip = $x, S AS status = 'ok' AND ip = $x",
    "either": "PATTERN (A, B) & (C ; D) | E",
}
STATE_SUFFIXES = ("subscriptions", "states", "models", "instances", "late")


def events(seed: int, n: int, first_id: int, start_hour: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    hours = start_hour + np.sort(rng.integers(0, 60, n))  # ties within a key happen
    return pa.table({
        "id": np.arange(first_id, first_id + n, dtype=np.int64),
        "user": [f"u{k}" for k in rng.integers(0, 4, n)],
        "ts": pa.array(EPOCH + hours * HOUR, pa.int64()).cast(TS),
        "type": [str(x) for x in rng.choice(list("ABCDEX"), n)],
        "temp": np.round(rng.normal(28, 4, n), 1),
        "status": [str(x) for x in rng.choice(["denied", "ok", "other"], n, p=[.5, .3, .2])],
        "ip": [str(x) for x in rng.choice(["i1", "i2"], n)]}, schema=SCHEMA)


def rows(**columns: list) -> pa.Table:
    n = len(next(iter(columns.values())))
    full = {"type": ["X"] * n, "temp": [20.0] * n, "status": ["other"] * n, "ip": ["i1"] * n,
            **columns}
    full["ts"] = pa.array([EPOCH + h * HOUR for h in full["ts"]], pa.int64()).cast(TS)
    return pa.table({f.name: full[f.name] for f in SCHEMA}, schema=SCHEMA)


@pytest.fixture(scope="module")
def source(spark, settings) -> dict[str, Any]:
    from delta.tables import DeltaTable

    location = settings.location_under_warehouse("pred_src")
    (DeltaTable.createIfNotExists(spark).location(str(location))
     .addColumns(spark.createDataFrame(SCHEMA.empty_table()).schema)
     .property("delta.enableChangeDataFeed", "true").execute())
    first = events(1, 160, 0, 0)
    # Late: two rows of u0 / u1 back at hour 1 (before their newest hour in commit 1); a NULL key.
    odd = rows(id=[900, 901, 902], user=["u0", "u1", None], ts=[1, 2, 70],
               type=["A", "E", "A"], temp=[35.0, 35.0, 35.0])
    second = pa.concat_tables([events(2, 160, 1000, 60), odd])
    # A tie with u2's newest hour of commit 2 (accepted: not before it), then a late u3 row.
    newest = pc.max(pc.filter(second.column("ts"), pc.equal(second.column("user"), "u2"))).value
    hour = (newest - EPOCH) // HOUR
    third = pa.concat_tables([events(3, 160, 2000, 120),
                              rows(id=[903, 904], user=["u2", "u3"], ts=[hour, 3],
                                   type=["B", "C"], temp=[31.0, 31.0])])
    commits = [first, second, third]
    versions = []
    for part in commits:
        spark.createDataFrame(part).write.format("delta").mode("append").save(str(location))
        versions.append(int(_version(TableConf("pred_src", location))))
    return {"versions": versions, "commits": commits, "location": location}


def conf(settings, name: str, subs: dict[str, str] = SUBS) -> PredictionConf:
    return PredictionConf.from_mapping(settings, name, {
        "source": "pred_src", "key_col": "user", "ts_col": "ts", "id_col": "id",
        "type_col": "type", "subscriptions": subs})


def table_rows(spark, c: PredictionConf, suffix: str, version: int | None = None) -> list:
    data = read_table(spark, c.tables()[suffix], version=version).toArrow().to_pylist()
    for row in data:
        row.pop("run_id", None)
    return sorted(data, key=lambda r: tuple(str(v) for v in r.values()))


def versions(c: PredictionConf) -> dict[str, int | None]:
    return {suffix: _version(t) for suffix, t in c.tables().items()}


# ---- the core, commit by commit (the oracle of the job) -------------------------------------------

def core(commits: list[pa.Table], first_version: int = 1) -> dict[str, Any]:
    """Run the subscriptions with :func:`predict` commit by commit, leaving out what the job
    must set aside: rows without key, and rows before their key's newest earlier timestamp."""
    newest: dict[str, int] = {}
    states: dict[str, dict] = {sub: {} for sub in SUBS}
    models: dict[str, Any] = {}
    late = []
    for version, part in enumerate(commits, start=first_version):
        part = part.filter(pc.is_valid(part.column("user")))
        ts = part.column("ts").cast(pa.int64()).to_numpy()
        users = part.column("user").to_pylist()
        keep = np.array([u not in newest or t >= newest[u] for u, t in zip(users, ts)], dtype=bool)
        late += [(version, u, int(t)) for u, t, k in zip(users, ts, keep) if not k]
        for u, t in zip(users, ts):
            newest[u] = max(newest.get(u, t), int(t))
        run = part.filter(pa.array(keep)).sort_by([("user", "ascending"), ("ts", "ascending"),
                                                   ("id", "ascending")])
        ev = Events.from_columns(
            ts=run.column("ts").cast(pa.int64()).to_numpy(), keys=run.column("user").to_pylist(),
            types=run.column("type").to_pylist(),
            attrs={c: run.column(c).to_numpy(zero_copy_only=False) for c in ("temp", "status", "ip")})
        for sub, text in SUBS.items():
            result = predict(text, ev, lookahead=1, start=states[sub])
            states[sub].update(result.states)
            models[sub] = result.trained if sub not in models else models[sub].merge(result.trained)
    return {"states": states, "models": models, "late": sorted(late)}


def assert_state_is_core(spark, c: PredictionConf, expected: dict[str, Any]) -> None:
    stored = read_table(spark, c.tables()["models"]).collect()
    assert {r["sub"] for r in stored} == set(SUBS)
    for r in stored:
        assert bytes(r["model"]) == expected["models"][r["sub"]].to_bytes()
        assert r["events"] == expected["models"][r["sub"]].events
    got = {(r["sub"], r["key"], r["instance"]): bytes(r["state"])
           for r in read_table(spark, c.tables()["instances"]).collect()}
    want = {(sub, key, instance_text(values)): state.to_bytes()
            for sub, states in expected["states"].items() for (key, values), state in states.items()}
    assert got == want
    late = [(r["source_version"], r["key"], r["ts"]) for r in table_rows(spark, c, "late")
            if r["reason"] == "late"]
    assert sorted(late) == expected["late"]


# ---- builds --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def built(spark, settings, source) -> dict[str, Any]:
    """``p_one``: one pass over the last version in Spark (chunks of 16 rows: every key is cut
    many times), killed once inside its instances MERGE (data files written, no commit) and
    rerun. ``p_inc``: run by run on the driver, killed
    once after its models commit (no meta) and rerun after the source has grown."""
    v1, v2, v3 = source["versions"]
    one = conf(settings, "p_one")
    log: dict[str, Any] = {}
    with pytest.raises(InjectedCrash, match="CEP-PRED-045"):
        run_predict(spark, settings, one, quiet=True, local_rows=0, chunk_rows=16,
                    crash_after="instances-files")
    log["orphans"] = list(one.tables()["instances"].location.glob("*.parquet"))
    log["after_files_crash"] = versions(one)
    first = run_predict(spark, settings, one, quiet=True, local_rows=0, chunk_rows=16)
    assert first.written and first.read == "commits from version 0"
    inc = conf(settings, "p_inc")
    run_predict(spark, settings, inc, until_version=v1, quiet=True)
    log["clean_v1"] = versions(inc)
    with pytest.raises(InjectedCrash, match="after the models write"):
        run_predict(spark, settings, inc, until_version=v2, quiet=True, crash_after="models")
    log["after_models_crash"] = versions(inc)
    log["meta_after_crash"] = read_meta(spark, inc)
    # The rerun (the source has grown to v3 meanwhile) resumes v2, then runs v3.
    log["resumed"] = run_predict(spark, settings, inc, quiet=True)
    log["final"] = versions(inc)
    return {"one": one, "inc": inc, "first": first, "log": log}


def test_one_pass_equals_the_core(spark, settings, source, built) -> None:
    one = built["one"]
    assert_state_is_core(spark, one, core(source["commits"]))
    first = built["first"]
    assert (first.events_read, first.late, first.incomplete) == (485, 3, 1)
    assert first.events_run == 481 and first.keys == 4
    late = table_rows(spark, one, "late")
    assert {r["reason"] for r in late} == {"late", "incomplete"}
    incomplete = [r for r in late if r["reason"] == "incomplete"]
    assert [(r["key"], r["id"], r["last_ts"]) for r in incomplete] == [(None, 902, None)]
    assert all(r["ts"] < r["last_ts"] for r in late if r["reason"] == "late")
    meta = read_meta(spark, one)
    assert (meta["events_total"], meta["late_total"]) == (481, 4)


def test_incremental_with_crashes_equals_one_pass(spark, settings, source, built) -> None:
    one, inc, log = built["one"], built["inc"], built["log"]
    v1, v2, v3 = source["versions"]
    # The first crash left data files in p_one's instances folder, but no commit there and no
    # meta; the rerun resumed that run (the subscriptions write was committed) and p_one equals
    # the core (test_one_pass_equals_the_core).
    assert log["orphans"] and log["after_files_crash"]["instances"] == 0
    assert log["after_files_crash"]["subscriptions"] == 1 and log["after_files_crash"]["meta"] == 0
    assert built["first"].resumed
    # The second: instances and models committed for v2, the meta table still at v1.
    assert log["meta_after_crash"]["source_version"] == v1
    crashed, clean, final = log["after_models_crash"], log["clean_v1"], log["final"]
    assert crashed["instances"] == clean["instances"] + 1 and crashed["models"] == clean["models"] + 1
    assert crashed["meta"] == clean["meta"]
    resumed = log["resumed"]
    assert resumed.resumed and resumed.source_version == v3
    # Delta ignored the repeated v2 writes (same txnAppId/txnVersion): one more version, v3's.
    assert final["instances"] == crashed["instances"] + 1 and final["models"] == crashed["models"] + 1
    for suffix in ("instances", "models", "states"):
        assert table_rows(spark, inc, suffix) == table_rows(spark, one, suffix), suffix
    assert table_rows(spark, inc, "late") == table_rows(spark, one, "late")
    # Models and instance states load back equal, byte for byte.
    for a, b in zip(table_rows(spark, inc, "models"), table_rows(spark, one, "models")):
        assert Model.from_bytes(a["model"]) == Model.from_bytes(b["model"])
        assert Model.from_bytes(a["model"]).to_bytes() == bytes(b["model"])
    for a, b in zip(table_rows(spark, inc, "instances"), table_rows(spark, one, "instances")):
        assert InstanceState.from_bytes(a["state"]).to_bytes() == bytes(b["state"])
    meta_inc, meta_one = read_meta(spark, inc), read_meta(spark, one)
    for meta in (meta_inc, meta_one):
        meta.pop("run_id")
        meta.pop("prediction")
        for suffix in STATE_SUFFIXES:
            meta.pop(f"{suffix}_version")
    assert meta_inc == meta_one
    # A rerun with nothing new writes nothing.
    again = run_predict(spark, settings, inc, quiet=True)
    assert not again.written and versions(inc) == final


def test_models_as_of_earlier_versions_are_the_core_models_of_then(spark, settings, source,
                                                                  built) -> None:
    inc = built["inc"]
    history = []
    for version in range(int(_version(inc.tables()["meta"])) + 1):
        meta = read_table(spark, inc.tables()["meta"], version=version).collect()
        if meta:
            history.append((meta[0]["source_version"], meta[0]["models_version"]))
    assert [s for s, _ in history] == source["versions"]
    for source_version, models_version in history:
        expected = core(source["commits"][:source["versions"].index(source_version) + 1])
        for sub in SUBS:
            blob = spark.sql(f"SELECT model FROM p_inc_models VERSION AS OF {models_version} "
                             f"WHERE sub = '{sub}'").first()["model"]
            assert Model.from_bytes(blob, subscription=SUBS[sub]) == expected["models"][sub]


def test_changed_registration_is_refused(spark, settings, source, built) -> None:
    changed = conf(settings, "p_inc", {**SUBS, "hot3": "PATTERN H, H DEFINE H AS temp > 30"})
    with pytest.raises(PredictSettingsChangedError, match="CEP-PRED-042.*new set name"):
        run_predict(spark, settings, changed, quiet=True)


def test_corrupt_model_blob_is_cep_pred_012(spark, settings, source, built) -> None:
    """Runs last among the Spark tests: it damages ``p_inc`` and appends a fourth commit."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    from delta_tables.predict_state import COLUMNS
    from delta_tables.sketch_state import spark_schema

    inc = built["inc"]
    blob = bytearray(spark.sql("SELECT model FROM p_inc_models WHERE sub = 'login'").first()[0])
    blob[-3] ^= 0x01
    # Damage the state the next run reads: the model, and the meta pointing at that version.
    (DeltaTable.forPath(spark, str(inc.tables()["models"].location))
     .update("sub = 'login'", {"model": F.lit(bytes(blob))}))
    meta = read_meta(spark, inc)
    meta["models_version"] = _version(inc.tables()["models"])
    (spark.createDataFrame([tuple(meta[n] for n, _ in COLUMNS["meta"])],
                           spark_schema(COLUMNS["meta"]))
     .write.format("delta").mode("overwrite").save(str(inc.tables()["meta"].location)))
    spark.createDataFrame(events(4, 20, 3000, 200)).write.format("delta").mode("append") \
        .save(str(source["location"]))
    before = versions(inc)
    with pytest.raises(ModelFormatError, match="CEP-PRED-012.*subscription login.*checksum mismatch"):
        run_predict(spark, settings, inc, quiet=True)
    assert versions(inc) == before
    stored = spark.sql("SELECT model FROM p_inc_models WHERE sub = 'login'").first()["model"]
    with pytest.raises(ModelFormatError, match="CEP-PRED-012"):
        Model.from_bytes(stored)


# ---- the per-bucket function without Spark -------------------------------------------------------

def bucket_input(key: list, ts: list, commit: list, temp: list,
                 states: list[tuple[str, str, str, bytes]] = ()) -> pa.Table:
    n, m = len(key), len(states)
    return pa.table({
        "key": key + [s[1] for s in states], "kind": [0] * n + [1] * m,
        "e_ts": pa.array(ts + [None] * m, pa.int64()), "e_id": pa.array([None] * (n + m), pa.int64()),
        "e_commit": pa.array(commit + [None] * m, pa.int64()),
        "e_type": pa.array([None] * (n + m), pa.string()),
        "a_0": pa.array(temp + [None] * m, pa.float64()),
        "i_sub": [None] * n + [s[0] for s in states], "i_instance": [None] * n + [s[2] for s in states],
        "i_state": pa.array([None] * n + [s[3] for s in states], pa.binary())})


SPEC = {"name": "t", "subscriptions": [("hot3", SUBS["hot3"])], "attributes": ["temp"],
        "has_type": False}


def test_bucket_late_rule_is_per_commit() -> None:
    # Commit 5: a at 10, 20; commit 6: a at 15 (late: before 20), 20 (a tie: not late), 30.
    out = process_bucket(bucket_input(["a"] * 5, [10, 20, 15, 20, 30], [5, 5, 6, 6, 6],
                                      [31.0] * 5), SPEC)
    late = out.filter(pc.equal(out.column("out"), 2)).to_pylist()
    assert [(r["l_ts"], r["l_version"], r["l_last_ts"], r["l_reason"]) for r in late] == \
        [(15, 6, 20, "late")]
    inst = out.filter(pc.equal(out.column("out"), 0)).to_pylist()
    assert [(r["events"], r["matches"], r["last_ts"]) for r in inst] == [(4, 2, 30)]
    # The same rows in one commit: nothing is late.
    out = process_bucket(bucket_input(["a"] * 5, [10, 20, 15, 20, 30], [5] * 5, [31.0] * 5), SPEC)
    assert out.filter(pc.equal(out.column("out"), 2)).num_rows == 0


def test_bucket_corrupt_instance_state_is_cep_pred_012() -> None:
    out = process_bucket(bucket_input(["a"] * 2, [10, 20], [1, 1], [31.0, 31.0]), SPEC)
    row = out.filter(pc.equal(out.column("out"), 0)).to_pylist()[0]
    blob = bytearray(row["state"])
    blob[-2] ^= 0x04
    # The persisted state also holds the key's newest timestamp: an older event is late.
    good = process_bucket(bucket_input(["a"], [5], [2], [31.0], [("hot3", "a", "[]", row["state"])]),
                          SPEC)
    assert good.filter(pc.equal(good.column("out"), 2)).column("l_last_ts").to_pylist() == [20]
    with pytest.raises(ModelFormatError, match="CEP-PRED-012.*subscription hot3, key 'a'.*checksum"):
        process_bucket(bucket_input(["a"], [30], [2], [31.0], [("hot3", "a", "[]", bytes(blob))]),
                       SPEC)


def test_conf_errors(settings) -> None:
    from cep.errors import ConfigError
    from cep.lang import PatternError

    base = {"source": "pred_src", "key_col": "user", "subscriptions": {"s": "PATTERN A, B"},
            "type_col": "type"}
    with pytest.raises(ConfigError, match="invalid prediction set name"):
        PredictionConf.from_mapping(settings, "bad name", base)
    with pytest.raises(ConfigError, match="unknown keys"):
        PredictionConf.from_mapping(settings, "p", {**base, "lookahead": 3})
    with pytest.raises(ConfigError, match="invalid subscription name"):
        PredictionConf.from_mapping(settings, "p", {**base, "subscriptions": {"a b": "PATTERN A"}})
    with pytest.raises(ConfigError, match="need a type_col"):
        PredictionConf.from_mapping(settings, "p", {**base, "type_col": None})
    with pytest.raises(ConfigError, match="invalid source table"):
        PredictionConf.from_mapping(settings, "p", {**base, "source": "x; DROP TABLE y"})
    with pytest.raises(PatternError, match="CEP-PRED-001"):
        PredictionConf.from_mapping(settings, "p", {**base, "subscriptions": {"s": "PATTERN A+, B"}})
    with pytest.raises(ConfigError, match="cannot keep its state"):  # composite: no states yet
        PredictionConf.from_mapping(settings, "p", {**base, "subscriptions": {
            "s": "PATTERN A ; ((B, C) & D)"}})
