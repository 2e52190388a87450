"""The graph job (``python -m jobs graph``): incremental == from scratch, idempotent, crash-safe,
and the persisted ABI graph links exactly the pairs the brute-force oracle links.

A source of check-like events (with a late event and a duplicate timestamp) is appended in three
commits; one graph is built run by run (and with a crash in the middle), another once over the
last version. Their four state tables must hold the same rows; a rerun with nothing new writes
nothing; every window's edges, read back from the range-form tables, equal
:func:`cep.oracles.trend_oracle.oracle_trend_windows` on the same events.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from cep.oracles.trend_oracle import oracle_trend_windows
from delta_tables.catalog import current_version, read_table
from delta_tables.graph_state import GraphConf
from delta_tables.settings import TableConf
from jobs.graph import run_graph

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


def conf(settings, name: str) -> GraphConf:
    return GraphConf.from_mapping(settings, name, {"source": "graph_src", "pattern": PATTERN,
                                                   "key_col": "bank"})


def state(spark, c: GraphConf) -> dict[str, list]:
    out = {}
    for suffix, table in c.tables().items():
        if suffix == "meta":
            continue
        out[suffix] = sorted(tuple(r) for r in read_table(spark, table).collect())
    return out


@pytest.fixture(scope="module")
def built(spark, settings, source) -> dict[str, GraphConf]:
    """``g_one`` built once over the last version; ``g_inc`` run by run with a crash."""
    v1, v2, _ = source["versions"]
    one = conf(settings, "g_one")
    assert run_graph(spark, settings, one, quiet=True).written
    inc = conf(settings, "g_inc")
    assert run_graph(spark, settings, inc, until_version=v1, quiet=True).written
    with pytest.raises(RuntimeError, match="injected crash after the from_edges write"):
        run_graph(spark, settings, inc, until_version=v2, quiet=True, crash_after="from_edges")
    assert run_graph(spark, settings, inc, until_version=v2, quiet=True).written
    assert run_graph(spark, settings, inc, quiet=True).written
    return {"one": one, "inc": inc}


def test_incremental_crash_and_rerun_equal_one_pass(spark, settings, source, built) -> None:
    v3 = source["versions"][2]
    one, inc = built["one"], built["inc"]
    assert state(spark, inc) == state(spark, one)
    before = current_version(spark, inc.tables()["event_vertices"])
    again = run_graph(spark, settings, inc, quiet=True)
    assert not again.written and current_version(spark, inc.tables()["event_vertices"]) == before
    meta = read_table(spark, inc.tables()["meta"]).first()
    assert meta.source_version == v3 and meta.events >= source["all"].num_rows


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
