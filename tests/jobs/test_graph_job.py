"""The graph job (``python -m jobs graph``): incremental == from scratch, idempotent, crash-safe,
the persisted ABI graph links exactly the pairs the brute-force oracle links, the meta row
records the versions of a run, and the watermark sets late events aside.

A source of check-like events (with an out-of-order event and a duplicate timestamp) is
appended in three commits; one graph is built run by run (with a crash in the middle, healed by
a rerun that first finishes the crashed run, then reads on), another once over the last
version. Without a lateness nothing is late: their four graph tables must hold the same rows; a
rerun with nothing new writes nothing; every window's edges, read back from the range-form
tables, equal :func:`cep.oracles.trend_oracle.oracle_trend_windows` on the same events; every
commit carries the run's record and the meta row the versions the run left. A second source of
four commits (late, boundary and incomplete events) feeds a graph with a lateness of 30
minutes, run over two commits, then over two more with a crash right after the late append,
then rerun: the late table holds each set-aside event once, the state equals the oracle over
the applied events, and the meta row's versions read the first run back ``VERSION AS OF``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from cep.oracles.trend_oracle import oracle_trend_windows
from delta_tables.catalog import current_version, read_table
from delta_tables.graph_state import COLUMNS, STATE_SUFFIXES, GraphConf
from delta_tables.settings import TableConf
from jobs.framework.txn import log_version as _version
from jobs.state.graph import METADATA_KEY, _baseline, _ensure_tables, read_meta, run_graph

EPOCH = 1_704_067_200_000_000  # 2024-01-01 in microseconds
TS = pa.timestamp("us", tz="UTC")
SCHEMA = pa.schema([("id", pa.int64()), ("bank", pa.string()), ("ts", TS), ("src", pa.string()),
                    ("dest", pa.string()), ("amount", pa.float64())])
PATTERN = ("PATTERN check+ c[] WHERE c[i].src = c[i-1].dest AND c[i].amount > c[i-1].amount "
           "WITHIN 2 HOURS SLIDE 1 HOUR")


def events(seed: int, n: int, first_id: int, start_min: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    minutes = start_min + np.sort(rng.integers(0, 180, n))
    return pa.table({"id": np.arange(first_id, first_id + n, dtype=np.int64),
                     "bank": [f"b{k}" for k in rng.integers(0, 2, n)],
                     "ts": pa.array(EPOCH + minutes * 60_000_000, pa.int64()).cast(TS),
                     "src": [str(x) for x in rng.choice(list("xyz"), n)],
                     "dest": [str(x) for x in rng.choice(list("xyz"), n)],
                     "amount": rng.integers(1, 6, n).astype(np.float64)}, schema=SCHEMA)


@pytest.fixture(scope="module")
def source(spark, settings) -> dict[str, Any]:
    from delta.tables import DeltaTable

    location = settings.location_under_warehouse("graph_src")
    (DeltaTable.createIfNotExists(spark).location(str(location))
     .addColumns(spark.createDataFrame(SCHEMA.empty_table()).schema)
     .property("delta.enableChangeDataFeed", "true").execute())
    table = TableConf("graph_src", location)
    first = events(1, 40, 0, 0)
    late = events(2, 25, 100, 120)
    # a late event (back in the first hour) and a timestamp tie with an existing event
    late = pa.concat_tables([late, pa.table({
        "id": [500, 501], "bank": ["b0", "b0"], "ts": pa.array(
            [EPOCH + 5 * 60_000_000, first.column("ts")[3].value], pa.int64()).cast(TS),
        "src": ["x", "y"], "dest": ["y", "z"], "amount": [2.0, 3.0]}, schema=SCHEMA)])
    third = events(3, 30, 200, 240)
    versions = []
    for part in (first, late, third):
        spark.createDataFrame(part).write.format("delta").mode("append").save(str(location))
        versions.append(int(current_version(spark, table)))
    return {"table": table, "versions": versions,
            "all": pa.concat_tables([first, late, third])}


def conf(settings, name: str, source: str = "graph_src", **extra: Any) -> GraphConf:
    return GraphConf.from_mapping(settings, name, {"source": source, "pattern": PATTERN,
                                                   "key_col": "bank", **extra})


GRAPH_TABLES = ("event_vertices", "attribute_vertices", "from_edges", "to_edges")


def state(spark, c: GraphConf, versions: dict[str, int] | None = None) -> dict[str, list]:
    """The rows of the four graph tables (as of ``versions`` if given)."""
    return {suffix: sorted(tuple(r) for r in read_table(
                spark, c.tables()[suffix],
                version=None if versions is None else versions[suffix]).collect())
            for suffix in GRAPH_TABLES}


def records(spark, table: TableConf) -> list[tuple[int, Any]]:
    """``(version, parsed userMetadata)`` of every commit of ``table``: the ``commitInfo`` of
    each commit file of its Delta log (what ``DESCRIBE HISTORY`` shows, without a Spark job)."""
    out = []
    for path in sorted((table.location / "_delta_log").glob("*.json")):
        for line in path.read_text(encoding="utf-8").splitlines():
            info = json.loads(line).get("commitInfo")
            if info is not None:
                meta = info.get("userMetadata")
                out.append((int(path.stem), json.loads(meta) if meta else None))
    assert [v for v, _ in out] == list(range(len(out))), "a commit without commitInfo"
    return out


def check_meta_versions(spark, c: GraphConf, result: Any) -> dict[str, Any]:
    """The meta row records the version every table is at, and the run's result says the same."""
    meta = read_meta(spark, c)
    tables = c.tables()
    for suffix in STATE_SUFFIXES:
        assert meta[f"{suffix}_version"] == current_version(spark, tables[suffix]) \
            == result.versions[suffix], suffix
    assert result.versions["meta"] == current_version(spark, tables["meta"])
    span = f"{result.source_from}-{result.source_version}"
    assert meta["run_id"] == result.run_id == f"{c.name}:{span}"
    assert (meta["source_from"], meta["source_version"]) == (result.source_from,
                                                             result.source_version)
    return meta


@pytest.fixture(scope="module")
def built(spark, settings, source) -> dict[str, Any]:
    """``g_one`` built once over the last version; ``g_inc`` run by run with a crash."""
    v1, v2, _ = source["versions"]
    one = conf(settings, "g_one")
    assert run_graph(spark, settings, one, quiet=True).written
    inc = conf(settings, "g_inc")
    assert run_graph(spark, settings, inc, until_version=v1, quiet=True).written
    with pytest.raises(RuntimeError, match="injected crash after the from_edges write"):
        run_graph(spark, settings, inc, until_version=v2, quiet=True, crash_after="from_edges")
    # The rerun reads to the newest version: it first finishes the crashed run at v2 (the
    # record in the committed tables says where), then runs v3.
    last = run_graph(spark, settings, inc, quiet=True)
    assert last.written and last.resumed and (last.source_from, last.source_version) == (v2 + 1,
                                                                                        v2 + 1)
    return {"one": one, "inc": inc, "last": last}


def test_incremental_crash_and_rerun_equal_one_pass(spark, settings, source, built) -> None:
    v3 = source["versions"][2]
    one, inc = built["one"], built["inc"]
    assert state(spark, inc) == state(spark, one)
    before = {s: _version(t) for s, t in inc.tables().items()}
    again = run_graph(spark, settings, inc, quiet=True)
    assert not again.written and again.versions == {} and again.source_from is None
    assert {s: _version(t) for s, t in inc.tables().items()} == before
    meta = check_meta_versions(spark, inc, built["last"])
    assert meta["source_version"] == v3 and meta["events"] >= source["all"].num_rows
    # Without a lateness nothing is late, not even the event back in the first hour (id 500):
    # its windows were rebuilt whole. The late table exists, empty, and the meta says so.
    assert built["last"].late == 0 and meta["late_total"] == 0 and meta["watermark"] is None
    assert meta["events_read_total"] == source["all"].num_rows and meta["lateness"] is None
    assert read_table(spark, inc.tables()["late"]).count() == 0
    assert 500 in {i for r in read_table(spark, inc.tables()["event_vertices"]).collect()
                   for i in r.event_id}


def test_every_commit_carries_the_runs_record(spark, built) -> None:
    for c in (built["one"], built["inc"]):
        for suffix, table in c.tables().items():
            found = records(spark, table)
            assert found and all(r is not None and r[METADATA_KEY] == c.name for _, r in found), \
                (suffix, found)
            for _, r in found:
                start, end = r["run_id"].split(":")[1].split("-")
                assert int(end) == r["source_version"] and int(start) <= int(end)
    # g_inc: the creation, the first run, the crashed run (its writes up to from_edges) and
    # the two runs after it; its meta table was written by three runs only.
    runs = [r["run_id"] for _, r in records(spark, built["inc"].tables()["meta"])]
    assert runs == ["g_inc:0-1", "g_inc:0-1", "g_inc:2-2", "g_inc:3-3"]


def persisted_edges(spark, c: GraphConf) -> dict[tuple[str, int], set[tuple[int, int]]]:
    """Every window's edges (as event-id pairs) from the range-form tables, in Python."""
    ev = {(r.key, r.window_start): r for r in read_table(spark, c.tables()["event_vertices"]).collect()}
    frm = {(r.key, r.window_start, r.predicate): r for r in read_table(spark, c.tables()["from_edges"]).collect()}
    out = {}
    groups: dict[tuple[str, int], list] = {}
    for r in read_table(spark, c.tables()["to_edges"]).collect():
        groups.setdefault((r.key, r.window_start), []).append(r)
    for w, rows in groups.items():
        ids, ts = ev[w].event_id, ev[w].ts
        sets = []
        for r in rows:
            vertex = dict(zip(frm[(*w, r.predicate)].event, frm[(*w, r.predicate)].vertex))
            pairs = {(ids[i], ids[j]) for i, lo, hi in zip(r.event, r.lo, r.hi)
                     for j in range(len(ids)) if j in vertex and lo <= vertex[j] < hi and ts[i] < ts[j]}
            sets.append(pairs)
        out[w] = set.intersection(*sets)
    return out


def oracle_by_window(table: pa.Table) -> dict[tuple[str, int], tuple[np.ndarray, Any]]:
    """(bank, window start) -> (the bank's event ids, the oracle's window over them)."""
    table = table.filter(pa.compute.is_valid(table.column("ts")))
    out = {}
    for bank in ("b0", "b1"):
        mine = table.filter(pa.compute.equal(table.column("bank"), bank))
        ts = mine.column("ts").cast(pa.int64()).to_numpy()
        ids = mine.column("id").to_numpy()
        cols = {c: mine.column(c).to_numpy(zero_copy_only=False).astype(object)
                for c in ("src", "dest")}
        cols["amount"] = mine.column("amount").to_numpy()
        for start, w in oracle_trend_windows(PATTERN, ts, cols, tiebreak=ids,
                                             types=np.array(["check"] * len(ids))).items():
            out[(bank, int(start))] = (ids, w)
    return out


def test_persisted_graph_links_what_the_oracle_links(spark, settings, source, built) -> None:
    one = built["one"]
    got = persisted_edges(spark, one)
    expected = {k: {(int(ids[a]), int(ids[b])) for a, b in w.edges}
                for k, (ids, w) in oracle_by_window(source["all"]).items()}
    assert set(got) == set(expected)
    assert got == expected
    assert sum(len(e) for e in expected.values()) > 20


def test_graph_conf_errors(settings) -> None:
    from cep.errors import ConfigError
    from cep.lang import PatternError

    assert conf(settings, "g", lateness="30 DAYS").lateness_amount(False) == 30 * 86_400_000_000
    assert conf(settings, "g", lateness="90 minutes").lateness_amount(False) == 5_400_000_000
    units = GraphConf.from_mapping(settings, "g", {
        "source": "s", "pattern": "PATTERN c+ c[] WHERE c[i].x > c[i-1].x WITHIN 10 UNITS",
        "key_col": "k", "ts_col": "n", "lateness": 3})
    assert units.lateness_amount(True) == 3
    with pytest.raises(ConfigError, match="does not fit the TIMESTAMP column"):
        units.lateness_amount(False)
    for bad, message in (("30 EVENTS", "expected a number and a unit"), ("soon", "expected a"),
                         ("-1 DAYS", "expected a"), (True, "must be a duration"),
                         (2.5, "must be whole"), (7, "is in UNITS but the pattern's WITHIN")):
        with pytest.raises(ConfigError, match=message):
            conf(settings, "g", lateness=bad)

    with pytest.raises(ConfigError, match="invalid graph name"):
        GraphConf.from_mapping(settings, "bad name", {"source": "s", "pattern": PATTERN,
                                                      "key_col": "k"})
    with pytest.raises(ConfigError, match="unknown keys"):
        GraphConf.from_mapping(settings, "g", {"source": "s", "pattern": PATTERN, "key_col": "k",
                                               "windows": 3})
    with pytest.raises(PatternError, match="CEP-TREND-001"):
        GraphConf.from_mapping(settings, "g", {"source": "s", "pattern": "PATTERN a; b+",
                                               "key_col": "k"})


def test_join_based_extraction_equals_the_oracle(spark, settings, source, built) -> None:
    from delta_tables.graph_trends import graph_counts, graph_trends

    one = built["one"]
    trends = graph_trends(spark, one).cache()
    got: dict[tuple[str, int], list] = {}
    for r in trends.collect():
        assert r.length == len(r.event_ids) and r.window_end - r.window_start == 2 * 3_600_000_000
        got.setdefault((r.key, r.window_start), []).append(tuple(r.event_ids))
    expected = {k: sorted(tuple(int(ids[e]) for e in t) for t in w.trends)
                for k, (ids, w) in oracle_by_window(source["all"]).items()}
    assert {k: sorted(v) for k, v in got.items()} == expected
    assert max(len(t) for v in expected.values() for t in v) >= 3
    counts = {(r.key, r.window_start): r.n_trends for r in graph_counts(trends).collect()}
    assert counts == {k: len(v) for k, v in expected.items()}
    # as of the first run of the incremental graph: the windows of the first commit only
    inc = built["inc"]
    early = graph_trends(spark, inc, version=1).select("key", "window_start").distinct().count()
    assert 0 < early < len(expected)


# ---- the watermark -----------------------------------------------------------------------------

MINUTE = 60_000_000
LATENESS = 30 * MINUTE


def designed(first_id: int, minutes: list[int | None], seed: int, *,
             banks: list[str | None] | None = None,
             ids: list[int | None] | None = None) -> pa.Table:
    """One commit of the watermark source: ``id``s from ``first_id``, events at ``minutes``."""
    rng = np.random.default_rng(seed)
    n = len(minutes)
    ts = [None if m is None else EPOCH + m * MINUTE for m in minutes]
    return pa.table({
        "id": pa.array(ids if ids is not None else list(range(first_id, first_id + n)),
                       pa.int64()),
        "bank": banks if banks is not None else [f"b{k % 2}" for k in range(n)],
        "ts": pa.array(ts, pa.int64()).cast(TS),
        "src": [str(x) for x in rng.choice(list("xy"), n)],
        "dest": [str(x) for x in rng.choice(list("xy"), n)],
        "amount": rng.integers(1, 6, n).astype(np.float64)}, schema=SCHEMA)


def expected_late(commits: list[tuple[int, pa.Table]]) -> dict[int, tuple[int, str, int | None]]:
    """id (-1: NULL) -> (commit, reason, watermark) by the documented rule, commit by commit."""
    out, newest = {}, None
    for version, part in commits:
        bound = None if newest is None else newest - LATENESS
        ts = part.column("ts").cast(pa.int64()).to_pylist()
        complete = []
        for row, t in zip(part.to_pylist(), ts):
            if row["bank"] is None or t is None or row["id"] is None:
                out[-1 if row["id"] is None else row["id"]] = (version, "incomplete", None)
                continue
            complete.append(t)
            if bound is not None and t < bound:
                out[row["id"]] = (version, "late", bound)
        if complete:
            newest = max(complete) if newest is None else max(newest, max(complete))
    return out


@pytest.fixture(scope="module")
def watermarked(spark, settings) -> dict[str, Any]:
    """``g_late`` (lateness 30 minutes) over four commits: a first run over two, a run over the
    other two crashed right after its late append, the rerun that finishes it, a no-op."""
    from delta.tables import DeltaTable

    location = settings.location_under_warehouse("graph_late_src")
    (DeltaTable.createIfNotExists(spark).location(str(location))
     .addColumns(spark.createDataFrame(SCHEMA.empty_table()).schema)
     .property("delta.enableChangeDataFeed", "true").execute())
    table = TableConf("graph_late_src", location)
    parts = [
        designed(1000, list(range(0, 101, 7)) + [100], 1),  # newest 100: next bound 70
        # 50 and 60 are late; then a NULL timestamp, a NULL key and a NULL id (incomplete)
        pa.concat_tables([designed(2000, [90, 95, 104, 111, 118, 125, 130], 2),
                          designed(2050, [50], 3), designed(2060, [60], 4),
                          designed(2099, [None], 5), designed(2098, [112], 6, banks=[None]),
                          designed(0, [113], 7, ids=[None])]),
        # bound 100: 95 is late, 100 is not; 100 and 110 rebuild [0, 120), which holds the
        # 50 and 60 of the first run
        pa.concat_tables([designed(3000, [100, 110, 122, 133, 140, 150], 8),
                          designed(3095, [95], 9)]),
        # bound 120 (from the commit before, in the same run): 80 is late (in [60, 180),
        # with 95), 120 is not
        pa.concat_tables([designed(4000, [120, 128, 141, 155, 170], 10),
                          designed(4080, [80], 11)]),
    ]

    def append(part: pa.Table) -> int:
        spark.createDataFrame(part).write.format("delta").mode("append").save(str(location))
        return int(current_version(spark, table))

    versions = [append(p) for p in parts]
    g = conf(settings, "g_late", "graph_late_src", lateness="30 MINUTES")
    first = run_graph(spark, settings, g, until_version=versions[1], quiet=True)
    early = {"versions": dict(first.versions), "state": state(spark, g),
             "late": sorted((tuple(r) for r in read_table(spark, g.tables()["late"]).collect()),
                           key=str)}
    with pytest.raises(RuntimeError, match="injected crash after the late write"):
        run_graph(spark, settings, g, quiet=True, crash_after="late")
    resumed = run_graph(spark, settings, g, quiet=True)
    before = {s: _version(t) for s, t in g.tables().items()}
    again = run_graph(spark, settings, g, quiet=True)
    assert not again.written
    assert {s: _version(t) for s, t in g.tables().items()} == before
    return {"conf": g, "parts": parts, "versions": versions, "first": first, "early": early,
            "resumed": resumed}


def test_late_events_are_set_aside_once_and_counted(spark, watermarked) -> None:
    g, parts, versions = watermarked["conf"], watermarked["parts"], watermarked["versions"]
    first, resumed = watermarked["first"], watermarked["resumed"]
    expected = expected_late(list(zip(versions, parts)))
    assert {i for i, (_, reason, _) in expected.items() if reason == "late"} == \
        {2050, 2060, 3095, 4080}
    rows = read_table(spark, g.tables()["late"]).collect()
    got = {(r.id if r.id is not None else -1): (r.source_version, r.reason, r.watermark)
           for r in rows}
    assert len(rows) == len(got) == len(expected) == 7  # each once: the resume skipped the append
    assert got == expected
    assert {r.run_id for r in rows} == {f"g_late:0-{versions[1]}",
                                        f"g_late:{versions[2]}-{versions[3]}"}
    assert (first.source_from, first.late, first.incomplete) == (0, 2, 3)
    assert first.events_read == parts[0].num_rows + parts[1].num_rows
    assert resumed.resumed and (resumed.source_from, resumed.late) == (versions[2], 2)
    assert resumed.events_read == parts[2].num_rows + parts[3].num_rows
    meta = check_meta_versions(spark, g, resumed)
    newest = EPOCH + 170 * MINUTE
    assert (meta["max_ts"], meta["watermark"], resumed.watermark) == (newest, newest - LATENESS,
                                                                     newest - LATENESS)
    assert meta["late_total"] == 7 and meta["lateness"] == "30 MINUTES"
    assert meta["events_read_total"] == sum(p.num_rows for p in parts)


def test_late_events_stay_out_of_the_state(spark, watermarked) -> None:
    g, parts = watermarked["conf"], watermarked["parts"]
    applied = pa.concat_tables(parts)
    gone = [r.id for r in read_table(spark, g.tables()["late"]).collect()]
    applied = applied.filter(pa.compute.invert(pa.compute.is_in(
        applied.column("id"), value_set=pa.array([i for i in gone if i is not None], pa.int64()))))
    applied = applied.filter(pa.compute.and_(pa.compute.is_valid(applied.column("bank")),
                                             pa.compute.is_valid(applied.column("id"))))
    windows = {(r.key, r.window_start): set(r.event_id)
               for r in read_table(spark, g.tables()["event_vertices"]).collect()}
    held = set().union(*windows.values())
    assert not held & {2050, 2060, 3095, 4080, 2098, 2099}
    assert {3000, 4000} <= held  # the boundary events (at the watermark) are applied
    # b0's [0, 120) was rebuilt by the third commit (3000 at minute 100) without the late 50
    # and 60 of the second (an earlier run); its [60, 180) by the fourth (4000) without 95 and
    # 80 (this run's).
    assert 3000 in windows[("b0", EPOCH)] and 4000 in windows[("b0", EPOCH + 60 * MINUTE)]
    got = persisted_edges(spark, g)
    expected = {k: {(int(ids[a]), int(ids[b])) for a, b in w.edges}
                for k, (ids, w) in oracle_by_window(applied).items()}
    assert got == expected and sum(len(e) for e in expected.values()) > 5


def test_meta_versions_read_an_earlier_run_back(spark, watermarked) -> None:
    g, early = watermarked["conf"], watermarked["early"]
    assert state(spark, g, early["versions"]) == early["state"]
    late = read_table(spark, g.tables()["late"], version=early["versions"]["late"]).collect()
    assert sorted((tuple(r) for r in late), key=str) == early["late"]
    for suffix, table in g.tables().items():
        found = records(spark, table)
        assert found and all(r is not None and r[METADATA_KEY] == "g_late" for _, r in found)


def test_an_older_meta_table_is_upgraded(spark, settings, source) -> None:
    old = conf(settings, "g_old")
    meta = old.tables()["meta"]
    spark.createDataFrame([("g_old", "graph_src", PATTERN, "bank", 1, 3, 10, None)],
                          "graph STRING, source STRING, pattern STRING, key_col STRING, "
                          "source_version BIGINT, windows BIGINT, events BIGINT, "
                          "updated_at TIMESTAMP").write.format("delta").save(str(meta.location))
    _ensure_tables(spark, old, json.dumps({METADATA_KEY: "g_old", "run_id": "g_old:2-3",
                                           "source_version": 3}))
    row = read_meta(spark, old)
    assert list(row) == [name for name, _ in COLUMNS["meta"]]
    assert row["source_version"] == 1 and row["run_id"] is None
    assert records(spark, meta)[-1][1]["run_id"] == "g_old:2-3"
    # such a state's baseline comes from the source as of its version
    first = source["all"].slice(0, 40)
    newest = int(pa.compute.max(first.column("ts").cast(pa.int64())).as_py())
    assert _baseline(spark, old, row, source["versions"][0]) == (newest, 40, 0)
