"""The standing-pattern job (``python -m jobs match``): run by run (with a crash at every commit
point, healed by a rerun) it leaves the tables of one run over all of the source; its matches
are ``match_seq``'s rows whose windows have closed, with the same ``match_id``; its timeouts
are the core's; a rerun with nothing new writes nothing; late and incomplete events are set
aside once; a pattern that cannot stand is a config error before anything runs.

The source: events of four keys in four commits, each commit later in time than the one
before, plus (in the last commit) one event back in time (late) and one without a type
(incomplete).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from cep.errors import ConfigError
from cep.match.columnar.stream import EventStream
from cep.match.run.standing import advance
from delta_tables.catalog import current_version, read_table
from delta_tables.match_state import MatchConf
from delta_tables.settings import TableConf
from jobs.framework.txn import log_version, read_meta_row
from jobs.state.match import MatchJob, read_meta, run_match

EPOCH = 1_704_067_200_000_000  # 2024-01-01 in microseconds
MINUTE = 60_000_000
TS = pa.timestamp("us", tz="UTC")
SCHEMA = pa.schema([("id", pa.int64()), ("case_id", pa.string()), ("ts", TS),
                    ("type", pa.string()), ("amount", pa.float64())])
PATTERNS = {
    "next": ("PATTERN A a; B b WHERE b.amount >= a.amount WITHIN 30 MINUTES", None),
    "any": ("PATTERN A a; C+ c[]; B b WITHIN 40 MINUTES", "skip-till-any-match"),
    "strict": ("PATTERN A, B, C WITHIN 3 EVENTS", "strict-contiguity"),
}
WINDOW = {"next": 30 * MINUTE, "any": 40 * MINUTE, "strict": None}


def commit_events(seed: int, n: int, first_id: int, start_min: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    minutes = start_min + np.sort(rng.integers(0, 60, n))
    return pa.table({"id": np.arange(first_id, first_id + n, dtype=np.int64),
                     "case_id": [f"k{k}" for k in rng.integers(0, 4, n)],
                     "ts": pa.array(EPOCH + minutes * MINUTE, pa.int64()).cast(TS),
                     "type": [str(x) for x in rng.choice(list("AABBC"), n)],
                     "amount": rng.integers(1, 5, n).astype(np.float64)}, schema=SCHEMA)


@pytest.fixture(scope="module")
def source(spark, settings) -> dict[str, Any]:
    from delta.tables import DeltaTable

    location = settings.location_under_warehouse("standing_src")
    (DeltaTable.createIfNotExists(spark).location(str(location))
     .addColumns(spark.createDataFrame(SCHEMA.empty_table()).schema)
     .property("delta.enableChangeDataFeed", "true").execute())
    table = TableConf("standing_src", location)
    parts = [commit_events(k, 30, 100 * k, 60 * k) for k in range(4)]
    odd = pa.table({"id": [900, 901], "case_id": ["k0", "k1"],
                    "ts": pa.array([EPOCH + 5 * MINUTE, EPOCH + 200 * MINUTE], pa.int64()).cast(TS),
                    "type": ["A", None], "amount": [1.0, 1.0]}, schema=SCHEMA)
    parts[3] = pa.concat_tables([parts[3], odd])
    versions = []
    for part in parts:
        spark.createDataFrame(part.to_pandas()).write.format("delta").mode("append").save(
            str(location))
        versions.append(int(current_version(spark, table)))
    return {"table": table, "versions": versions, "parts": parts}


def conf(settings, name: str, kind: str) -> MatchConf:
    pattern, policy = PATTERNS[kind]
    entry = {"source": "standing_src", "pattern": pattern, "key_col": "case_id"}
    if policy:
        entry["policy"] = policy
    return MatchConf.from_mapping(settings, name, entry)


def rows(spark, table: TableConf, drop: tuple[str, ...] = ("run_id",)) -> list[tuple]:
    frame = read_table(spark, table)
    return sorted(tuple(r) for r in frame.drop(*drop).collect())


def tables(spark, c: MatchConf) -> dict[str, list[tuple]]:
    t = c.tables()
    return {"matches": rows(spark, t["matches"]), "timeouts": rows(spark, t["timeouts"]),
            "late": rows(spark, t["late"]), "open": rows(spark, t["open"], ())}


@pytest.fixture(scope="module", params=sorted(PATTERNS))
def built(request, spark, settings, source) -> dict[str, Any]:
    kind = request.param
    one = conf(settings, f"st_one_{kind}", kind)
    assert run_match(spark, settings, one, quiet=True).written
    inc = conf(settings, f"st_inc_{kind}", kind)
    # One pattern's runs are killed at every commit point (each run but the first once, the
    # last twice: its rerun is killed again), then rerun; the others run run by run.
    crashes = ({1: ["matches"], 2: ["timeouts"], 3: ["open", "late"]} if kind == "next"
               else {})
    assert set(MatchJob.crash_points) <= {p for ps in crashes.values() for p in ps} or crashes == {}
    for k, version in enumerate(source["versions"]):
        for point in crashes.get(k, ()):
            with pytest.raises(RuntimeError, match=f"injected crash after the {point} write"):
                run_match(spark, settings, inc, until_version=version, quiet=True,
                          crash_after=point)
        assert run_match(spark, settings, inc, until_version=version, quiet=True).written
    return {"kind": kind, "one": one, "inc": inc}


def test_run_by_run_with_crashes_equals_one_run(spark, settings, built) -> None:
    one, inc = built["one"], built["inc"]
    assert tables(spark, inc) == tables(spark, one)
    before = {s: log_version(t) for s, t in inc.tables().items()}
    again = run_match(spark, settings, inc, quiet=True)
    assert not again.written and {s: log_version(t) for s, t in inc.tables().items()} == before


def _micros(frame, *names: str):
    """``frame`` with its TIMESTAMP columns ``names`` as microseconds (no Python time zones)."""
    from pyspark.sql import functions as F

    return frame.select(*(F.unix_micros(c).alias(c) if c in names else F.col(c)
                          for c in frame.columns))


def _applied(source) -> dict[str, Any]:
    """The events the job applies (all but the late and the incomplete one), per key in
    ``(ts, id)`` order: each id's position and each key's count."""
    table = pa.concat_tables(source["parts"])
    whole = table.append_column("us", table.column("ts").cast(pa.int64())).to_pandas()
    whole = whole[whole["type"].notna() & (whole["id"] != 900)].copy()
    whole = whole.sort_values(["case_id", "us", "id"])
    whole["pos"] = whole.groupby("case_id").cumcount()
    return {"frame": whole, "pos": dict(zip(whole["id"], whole["pos"])),
            "n": whole.groupby("case_id").size().to_dict()}


def test_matches_are_match_seqs_rows_whose_windows_closed(spark, built, source) -> None:
    kind, one = built["kind"], built["one"]
    pattern, policy = PATTERNS[kind]
    watermark = read_meta(spark, one)["watermark"]
    applied = _applied(source)
    spark.read.format("delta").load(str(source["table"].location)).where(
        "id NOT IN (900, 901)").createOrReplaceTempView("standing_applied")
    quoted = pattern.replace("'", "''")
    sql = (f"SELECT * FROM match_seq('{quoted}', 'case_id', TABLE(standing_applied)"
           + (f", policy => '{policy}'" if policy else "") + ")")
    want = []
    for r in _micros(spark.sql(sql), "start_ts", "end_ts").collect():
        if WINDOW[kind] is not None:
            closed = r.start_ts + WINDOW[kind] <= watermark
        else:  # WITHIN 3 EVENTS: closed once the key holds the event two places on
            closed = applied["pos"][r.event_ids[0]] + 2 < applied["n"][r.case_id]
        if closed:
            want.append((r.case_id, r.match_id, r.start_ts, r.end_ts, list(r.event_ids),
                         list(r.variables), r.n_events))
    got = [(*r[:4], list(r[4]), list(r[5]), r[6]) for r in sorted(
        tuple(x) for x in _micros(read_table(spark, one.tables()["matches"]).drop("run_id"),
                                  "start_ts", "end_ts").collect())]
    assert got == sorted(want)
    assert got, "the source must give some matches"


def test_timeouts_are_the_cores_over_each_whole_key(spark, built, source) -> None:
    one = built["one"]
    program = one.program
    watermark = read_meta(spark, one)["watermark"]
    want = []
    for key, part in _applied(source)["frame"].groupby("case_id"):
        stream = EventStream.from_columns(ids=part["id"].to_numpy(), ts=part["us"].to_numpy(),
                                          types=part["type"].tolist(),
                                          attrs={"amount": part["amount"].to_numpy()})
        step = advance(program, stream, open_from=0, emitted=0, watermark=watermark)
        for t in step.timeouts:
            want.append((key, int(stream.ts[t.start]), int(np.ceil(t.closed_at)),
                         [int(stream.ids[p]) for p in t.positions], list(t.variables),
                         t.components))
    got = [(r[0], r[1], r[2], list(r[3]), list(r[4]), r[5]) for r in
           _micros(read_table(spark, one.tables()["timeouts"]).drop("run_id"), "start_ts",
                   "closed_at").collect()]
    assert sorted(got) == sorted(want) and got


def test_late_and_incomplete_events_are_set_aside_once(spark, built) -> None:
    late = rows(spark, built["inc"].tables()["late"])
    assert [(r[3], r[4]) for r in late] == [(900, "late"), (901, "incomplete")]
    meta = read_meta(spark, built["inc"])
    assert meta["late_total"] == 2 and meta["events_read_total"] == 122
    # Read from the meta commit's record (jobs/framework/meta_row.py): what Spark reads.
    table = MatchJob(built["inc"]).tables["meta"]
    assert meta == read_meta_row(spark, table, AssertionError) and meta["updated_at"] is not None


def test_a_pattern_that_cannot_stand_is_a_config_error(settings) -> None:
    entry = {"source": "standing_src", "key_col": "case_id", "pattern": "PATTERN A; B"}
    with pytest.raises(ConfigError, match="CEP-MATCH-005: .*needs a WITHIN window"):
        MatchConf.from_mapping(settings, "bad", entry)
    with pytest.raises(ConfigError, match="unknown keys"):
        MatchConf.from_mapping(settings, "bad", {**entry, "patern": "x"})
    with pytest.raises(ConfigError, match="policy 'any'"):
        MatchConf.from_mapping(settings, "bad", {**entry, "pattern": "PATTERN A WITHIN 1 HOUR",
                                                 "policy": "any"})


def test_the_picture_reads_the_jobs_tables(spark, built) -> None:
    from tests.viz.render import png
    from viz import plot_standing

    t = built["one"].tables()
    matches, timeouts = read_table(spark, t["matches"]), read_table(spark, t["timeouts"])
    fig = plot_standing(matches, timeouts, bins=5)
    png(fig)
    bars = fig.axes[0].containers
    assert sum(b.get_height() for b in bars[0]) == matches.count()
    assert sum(b.get_height() for b in bars[1]) == timeouts.count()
