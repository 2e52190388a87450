"""The incremental sketch job on real Spark + Delta (small data; jobs/state/sketch.py).

Every state is checked against ``SketchTree.build`` per stream in the pure core, converted with
``delta_tables.sketch_state`` (bits included): incremental over any split of the source equals
one run, reruns write nothing, late events are kept and counted, damaged state and non-append
sources are typed errors, and time travel gives the tree of an earlier source version. Crashes
between the writes are the crash suite's (tests/jobs/test_crash_safety.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from cep.sketch import CorruptSketchError, SketchConfig, SketchTree
from delta_tables.catalog import current_version, read_table
from delta_tables.delta_log import DeltaLogError
from delta_tables.settings import TableConf
from delta_tables.sketch_conf import SketchConf, sketch_from_mapping
from delta_tables.sketch_state import (META_COLUMNS, OpenState, open_to_arrow, spark_schema,
                                       tree_to_arrow)
from jobs.framework.errors import SourceNotAppendOnlyError, SourceReplacedError, SourceVersionError
from jobs.state.sketch import read_meta, run_sketch

CONFIG = {"m": 64, "k": 2, "C": 3, "fanout": 2, "seeds": [5, 9]}
CFG = SketchConfig(m=64, k=2, C=3, fanout=2, seeds=(5, 9))
TS = pa.timestamp("us", tz="UTC")
EPOCH = 1_600_000_000_000_000
SOURCE_SCHEMA = pa.schema([("id", pa.int64()), ("case_id", pa.string()), ("type", pa.string()),
                           ("ts", TS)])


# ---- data and helpers ---------------------------------------------------------------------------

def make_events(seed: int, n: int = 600, streams: int = 7) -> pa.Table:
    """Events sorted by (ts, id): timestamps with ties, unique ids, Zipf-ish names."""
    rng = np.random.default_rng(seed)
    ts = EPOCH + np.sort(rng.integers(0, n // 2, n)) * 1_000_000
    ids = rng.permutation(n).astype(np.int64)
    keys = [f"s{k}" for k in rng.integers(0, streams, n)]
    names = [f"T{t}" for t in np.minimum(rng.zipf(1.6, n), 9)]
    table = pa.table({"id": ids, "case_id": keys, "type": names,
                      "ts": pa.array(ts, pa.int64()).cast(TS)}, schema=SOURCE_SCHEMA)
    return table.sort_by([("ts", "ascending"), ("id", "ascending")])


def create_source(spark, settings, name: str) -> TableConf:
    from delta.tables import DeltaTable

    location = settings.location_under_warehouse(name)
    (DeltaTable.create(spark).location(str(location))
     .addColumns(spark.createDataFrame(SOURCE_SCHEMA.empty_table()).schema)
     .property("delta.enableChangeDataFeed", "true").execute())
    return TableConf(name, location)


def append(spark, table: TableConf, rows: pa.Table) -> int:
    spark.createDataFrame(rows).write.format("delta").mode("append").save(str(table.location))
    return int(current_version(spark, table))


def sketch(settings, name: str, source: str) -> SketchConf:
    return sketch_from_mapping(settings, name, {"source": source, "stream_col": "case_id",
                                                "type_col": "type", "ts_col": "ts",
                                                "id_col": "id", **CONFIG})


def run(spark, settings, conf: SketchConf, **kw: Any):
    return run_sketch(spark, settings, conf, quiet=True, **kw)


def rows(spark, table: TableConf, keys: tuple[str, ...], version: int | None = None) -> list:
    data = read_table(spark, table, version=version).toArrow().to_pylist()
    return sorted(data, key=lambda r: tuple("" if r[k] is None else r[k] for k in keys))


def nodes_of(spark, conf: SketchConf, version: int | None = None) -> list:
    return rows(spark, conf.nodes, ("stream", "node_id"), version)


def open_of(spark, conf: SketchConf) -> list:
    return rows(spark, conf.open, ("stream",))


def late_of(spark, conf: SketchConf) -> list:
    return rows(spark, conf.late, ("source_version", "stream", "ts", "id", "type"))


def versions(spark, conf: SketchConf) -> dict[str, int | None]:
    return {k: current_version(spark, t) for k, t in conf.state_tables().items()}


def core_state(events: pa.Table, cfg: SketchConfig = CFG) -> tuple[list, list]:
    """Nodes and open rows of ``SketchTree.build`` per stream over accepted events."""
    nodes, opened = [], []
    events = events.sort_by([("ts", "ascending"), ("id", "ascending")])
    for stream in sorted(set(events.column("case_id").to_pylist())):
        sub = events.filter(pc.equal(events.column("case_id"), stream))
        ts = np.asarray(sub.column("ts").cast(pa.int64()).to_numpy())
        ids = sub.column("id").to_pylist()
        tree = SketchTree.build(sub.column("type").to_pylist(), ts, cfg)
        nodes += tree_to_arrow(stream, tree).to_pylist()
        n_open = tree.open_leaf.n_events
        opened.append(OpenState(stream, tree.n_full_leaves, tree.open_leaf.names,
                                tuple(tree.open_ts.tolist()),
                                tuple(ids[len(ids) - n_open:]) if n_open else (),
                                int(ts[-1]), int(ids[-1])))
    return (sorted(nodes, key=lambda r: (r["stream"], r["node_id"])),
            open_to_arrow(opened, cfg).to_pylist())


def assert_state_is_core(spark, conf: SketchConf, events: pa.Table) -> None:
    nodes, opened = core_state(events)
    got = nodes_of(spark, conf)
    assert len(got) == len(nodes) and got == nodes
    assert open_of(spark, conf) == opened


# ---- incremental == one run == the core -----------------------------------------------------------

def test_any_split_equals_one_run_and_the_core_and_time_travel(spark, settings) -> None:
    events = make_events(1)
    states = {}
    history: list[tuple[int, int, int]] = []  # (commits so far, source version, nodes version)
    for parts in (1, 5):
        source = create_source(spark, settings, f"sk_src_split{parts}")
        conf = sketch(settings, f"sk_split{parts}", source.name)
        bounds = np.linspace(0, events.num_rows, parts + 1).astype(int)
        for i, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
            version = append(spark, source, events.slice(lo, hi - lo))
            result = run(spark, settings, conf)
            assert result.written and result.source_version == version
            assert result.events_read == result.events_accepted == hi - lo and result.late == 0
            assert_state_is_core(spark, conf, events.slice(0, hi))
            if parts == 5:
                history.append((int(hi), version, int(read_meta(spark, conf)["nodes_version"])))
        states[parts] = (nodes_of(spark, conf), open_of(spark, conf))
        meta = read_meta(spark, conf)
        assert meta["events_total"] == events.num_rows and meta["late_total"] == 0
        assert (meta["m"], meta["k"], meta["C"], meta["fanout"], meta["seeds"]) == (64, 2, 3, 2,
                                                                                   [5, 9])
    assert states[1] == states[5]
    assert len({(r["stream"], r["node_id"]) for r in states[5][0]}) == len(states[5][0])
    # Time travel: the nodes table as of an earlier run is the tree of the source as of then.
    for hi, source_version, nodes_version in history[:-1]:
        expected, _ = core_state(events.slice(0, hi))
        assert nodes_of(spark, sketch(settings, "sk_split5", "sk_src_split5"),
                        nodes_version) == expected
        sql = spark.sql(f"SELECT stream, node_id, bits FROM sk_split5_nodes VERSION AS OF "
                        f"{nodes_version}").toArrow().to_pylist()
        assert sorted((r["stream"], r["node_id"], r["bits"]) for r in sql) == \
            [(r["stream"], r["node_id"], r["bits"]) for r in expected]
        source = read_table(spark, TableConf("sk_src_split5", settings.location_under_warehouse(
            "sk_src_split5")), version=source_version).toArrow()
        assert core_state(source)[0] == expected

    # A rerun with nothing new writes nothing.
    conf = sketch(settings, "sk_split1", "sk_src_split1")
    before = versions(spark, conf)
    again = run(spark, settings, conf)
    assert not again.written and versions(spark, conf) == before


@pytest.mark.parametrize("chunk_rows", [7])
def test_streams_cut_into_chunks_equal_the_core(spark, settings, chunk_rows: int) -> None:
    # A task appends chunk_rows work rows at a time and carries the stream still arriving
    # (jobs/state/sketch_chunks.py); with a few long streams every stream is cut many times,
    # in the first run and in the incremental one that starts from stored state.
    events = make_events(3, n=500, streams=3)
    source = create_source(spark, settings, f"sk_src_chunks{chunk_rows}")
    conf = sketch(settings, f"sk_chunks{chunk_rows}", source.name)
    for lo, hi in ((0, 320), (320, events.num_rows)):
        append(spark, source, events.slice(lo, hi - lo))
        result = run(spark, settings, conf, chunk_rows=chunk_rows)
        assert result.events_accepted == hi - lo and result.late == 0
        assert_state_is_core(spark, conf, events.slice(0, hi))


# ---- late events --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def late_source(spark, settings) -> dict[str, Any]:
    """A source of three commits; commits 2 and 3 carry late events and an exact duplicate.

    Crashes between the sketch's writes, on sources with late rows like this one, are the
    crash suite's (tests/jobs/test_crash_safety.py: a kill before the nodes commit, stops
    before the open, late and meta commits, each rerun compared with a from-scratch build).
    """
    events = make_events(2, n=500)
    cut1, cut2 = 200, 350
    first = events.slice(0, cut1)
    late = first.slice(20, 4)
    late = pa.table({"id": pc.add(late.column("id"), 10_000), "case_id": late.column("case_id"),
                     "type": late.column("type"), "ts": late.column("ts")}, schema=SOURCE_SCHEMA)
    duplicate = first.slice(cut1 - 1, 1)
    second = pa.concat_tables([events.slice(cut1, cut2 - cut1), late, duplicate])
    late3 = pa.table({"id": pa.array([20_000], pa.int64()),
                      "case_id": events.slice(cut1, 1).column("case_id"),
                      "type": pa.array(["T1"]), "ts": events.slice(0, 1).column("ts")},
                     schema=SOURCE_SCHEMA)
    third = pa.concat_tables([events.slice(cut2, events.num_rows - cut2), late3])
    source = create_source(spark, settings, "sk_src_late")
    versions_ = [append(spark, source, part) for part in (first, second, third)]
    ref = sketch(settings, "sk_ref", source.name)
    for v in versions_:
        run(spark, settings, ref, until_version=v)
    return {"source": source, "versions": versions_,
            "accepted": pa.concat_tables([first, events.slice(cut1, events.num_rows - cut1)])}


def test_reference_sketch_keeps_and_counts_late_events(spark, settings, late_source) -> None:
    ref = sketch(settings, "sk_ref", "sk_src_late")
    v1, v2, v3 = late_source["versions"]
    late = late_of(spark, ref)
    assert [r["reason"] for r in late] == ["late"] * 6
    assert [r["source_version"] for r in late] == [v2] * 5 + [v3]
    assert {r["run_id"] for r in late} == {f"sk_ref:{v2}-{v2}", f"sk_ref:{v3}-{v3}"}
    # Every late event is not after the bound it is reported against.
    assert all((r["ts"], r["id"]) <= (r["last_ts"], r["last_id"]) for r in late)
    meta = read_meta(spark, ref)
    assert meta["late_total"] == 6
    assert meta["events_total"] == late_source["accepted"].num_rows
    assert_state_is_core(spark, ref, late_source["accepted"])


# ---- typed errors ------------------------------------------------------------------------------

def first_run(spark, settings, name: str, events: pa.Table, first: int | None = None):  # noqa: ANN201
    """A source ``sk_src_<name>`` holding ``events`` (or their first ``first`` rows) and the
    sketch ``sk_<name>`` after its first run: ``(events, source, conf)``."""
    source = create_source(spark, settings, f"sk_src_{name}")
    append(spark, source, events if first is None else events.slice(0, first))
    conf = sketch(settings, f"sk_{name}", source.name)
    run(spark, settings, conf)
    return events, source, conf


def test_corrupt_bits_fail_the_next_run_naming_stream_and_node(spark, settings) -> None:
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    events, source, conf = first_run(spark, settings, "corrupt", make_events(3, n=200, streams=3),
                                     first=150)
    tops = [r for r in nodes_of(spark, conf) if r["is_top"] and not r["is_open"]]
    top = [r for r in tops if r["stream"] == "s1"][0]
    other = [r for r in tops if r["stream"] != "s1"][0]
    blob = bytearray(top["bits"])
    blob[15] ^= 0x10
    append(spark, source, events.slice(150, 50))
    # Damage the state the next run reads: the row's bits (a flipped bit, then another top's
    # valid blob), and the meta pointing at that version.
    for bits, found in ((bytes(blob), "checksum mismatch"), (other["bits"], "another row")):
        (DeltaTable.forPath(spark, str(conf.nodes.location))
         .update(f"stream = 's1' AND node_id = {top['node_id']}", {"bits": F.lit(bits)}))
        meta = read_meta(spark, conf)
        meta["nodes_version"] = current_version(spark, conf.nodes)
        (spark.createDataFrame([tuple(meta[name] for name, _ in META_COLUMNS)],
                               spark_schema(META_COLUMNS))
         .write.format("delta").mode("overwrite").save(str(conf.meta.location)))
        before = versions(spark, conf)
        with pytest.raises(CorruptSketchError) as info:
            run(spark, settings, conf)
        message = str(info.value)
        assert message.startswith(f"CEP-SKETCH-002: table {conf.nodes.name}: stream 's1'")
        assert f"node_id {top['node_id']}" in message and found in message, message
        assert versions(spark, conf) == before


def test_update_in_the_source_is_a_typed_error(spark, settings) -> None:
    from delta.tables import DeltaTable

    _, source, conf = first_run(spark, settings, "update", make_events(4, n=100, streams=2))
    DeltaTable.forPath(spark, str(source.location)).update("id = 0", {"type": "'X'"})
    before = versions(spark, conf)
    with pytest.raises(SourceNotAppendOnlyError, match="CEP-SKETCH-042.*update_preimage"):
        run(spark, settings, conf)
    assert versions(spark, conf) == before
    with pytest.raises(SourceVersionError, match="CEP-SKETCH-043"):
        run(spark, settings, conf, until_version=99)


def test_a_replaced_source_is_refused_not_read_as_a_continuation(spark, settings) -> None:
    # Issue 46: the source folder removed and created again with 4 commits; the next run read
    # versions 2..4 of the new table as if they followed the old one and left a sketch of
    # 8,000 events over a source of 4,000 (1,000 new rows never read).
    import shutil

    events = make_events(8, n=120, streams=2)
    _, source, conf = first_run(spark, settings, "replaced", events, first=60)
    append(spark, source, events.slice(60, 30))
    run(spark, settings, conf)
    before = versions(spark, conf)
    shutil.rmtree(source.location)
    create_source(spark, settings, source.name)
    for part in range(4):
        append(spark, source, events.slice(part * 30, 30))
    with pytest.raises(SourceReplacedError, match=r"CEP-SKETCH-043: .* is not the table the "
                                                  r"state was built from .*drop the state tables"):
        run(spark, settings, conf)
    assert versions(spark, conf) == before
    # The advice works: without the state tables the job builds from the new table.
    for table in conf.state_tables().values():
        spark.sql(f"DROP TABLE IF EXISTS {table.name}")
        shutil.rmtree(table.location)
    assert run(spark, settings, conf).written
    assert sum(r["n_events"] for r in nodes_of(spark, conf) if r["is_top"]) + sum(
        len(r["ids"]) for r in open_of(spark, conf)) == 120


def test_a_damaged_delta_log_is_a_typed_error_before_anything_is_written(spark, settings) -> None:
    events, source, conf = first_run(spark, settings, "damaged", make_events(6, n=80, streams=2),
                                     first=40)
    append(spark, source, events.slice(40))
    nodes = conf.state_tables()["nodes"]
    version = current_version(spark, nodes)
    commit = nodes.location / "_delta_log" / f"{version:020d}.json"
    intact = commit.read_bytes()
    before = versions(spark, conf)
    commit.write_bytes(intact + b'{"add": {"path": "part-0\n')  # a torn last line
    try:
        with pytest.raises(DeltaLogError, match=rf"CEP-DELTA-001: table {nodes.name}: commit "
                                                rf"{version} of its Delta log .* line \d+ is not JSON"):
            run(spark, settings, conf)
        assert versions(spark, conf) == before
    finally:
        commit.write_bytes(intact)
    assert run(spark, settings, conf).written


def test_incomplete_rows_are_rejected_not_dropped(spark, settings) -> None:
    events = make_events(5, n=60, streams=2)
    source = create_source(spark, settings, "sk_src_nulls")
    broken = pa.table({"id": pa.array([900, 901], pa.int64()),
                       "case_id": pa.array(["s0", None]), "type": pa.array([None, "T1"]),
                       "ts": events.slice(0, 2).column("ts")}, schema=SOURCE_SCHEMA)
    append(spark, source, pa.concat_tables([events, broken]))
    conf = sketch(settings, "sk_nulls", source.name)
    result = run(spark, settings, conf)
    assert result.events_read == 62 and result.late == 2 and result.events_accepted == 60
    late = late_of(spark, conf)
    assert {(r["stream"], r["id"], r["reason"]) for r in late} == \
        {(None, 901, "incomplete"), ("s0", 900, "incomplete")}
    assert_state_is_core(spark, conf, events)


def test_nothing_new_still_registers_state_built_elsewhere(spark, settings) -> None:
    # The demo (another process) may build a sketch; a later "nothing new" run in this session
    # must make its tables queryable by name without writing anything.
    events, source, conf = first_run(spark, settings, "register", make_events(6, n=60, streams=2))
    before = versions(spark, conf)
    for table in conf.state_tables().values():
        spark.sql(f"DROP TABLE IF EXISTS {table.name}")  # external: the catalog entry only
    assert not spark.catalog.tableExists(conf.nodes.name)
    result = run(spark, settings, conf)
    assert not result.written and versions(spark, conf) == before
    assert spark.catalog.tableExists(conf.nodes.name) and spark.catalog.tableExists(conf.meta.name)
    assert spark.table(conf.nodes.name).count() > 0


# ---- the thesis's merge rule (Baltus 2021, Algorithm 2) -------------------------------------------

def test_neighbours_sketch_runs_incrementally_and_answers_in_sql(spark, settings) -> None:
    from cep.sketch import evaluate_sketch

    cfg = SketchConfig(m=16, k=2, C=2, fanout=2, seeds=(5, 9), merge="neighbours")
    events = make_events(4, n=400, streams=3)
    source = create_source(spark, settings, "sk_src_nb")
    conf = sketch_from_mapping(settings, "sk_nb", {
        "source": source.name, "stream_col": "case_id", "type_col": "type", "ts_col": "ts",
        "id_col": "id", "m": 16, "k": 2, "C": 2, "seeds": [5, 9], "merge": "neighbours"})
    for lo, hi in ((0, 150), (150, 400)):
        append(spark, source, events.slice(lo, hi - lo))
        assert run(spark, settings, conf).written
    nodes, opened = core_state(events, cfg)
    assert nodes_of(spark, conf) == nodes and open_of(spark, conf) == opened
    # Some pair merged where aligned groups could not (a node not starting at a multiple of 2^L).
    assert any(r["level"] >= 1 and r["idx"] % (1 << r["level"]) for r in nodes)
    assert read_meta(spark, conf)["merge"] == "neighbours"
    # The nodes table alone tells the SQL function the rule: its answers are the core's.
    got = spark.sql("SELECT stream, pos_start, pos_end FROM approx_match_seq(pattern => "
                    "'PATTERN T1; T2; T1', mode => 'intervals', level => 1, "
                    "sketch => TABLE(sk_nb_nodes))").collect()
    expected = []
    events = events.sort_by([("ts", "ascending"), ("id", "ascending")])
    for stream in sorted(set(events.column("case_id").to_pylist())):
        sub = events.filter(pc.equal(events.column("case_id"), stream))
        tree = SketchTree.build(sub.column("type").to_pylist(),
                                np.asarray(sub.column("ts").cast(pa.int64()).to_numpy()), cfg)
        found = evaluate_sketch("PATTERN T1; T2; T1", tree, level=1)
        expected += [(stream, m.pos_start, m.pos_end) for m in found.rows()]
    assert sorted(tuple(r) for r in got) == sorted(expected) and expected
    # The rule is frozen: registering the sketch as aligned later is refused.
    aligned = sketch_from_mapping(settings, "sk_nb", {
        "source": source.name, "stream_col": "case_id", "type_col": "type", "ts_col": "ts",
        "id_col": "id", "m": 16, "k": 2, "C": 2, "seeds": [5, 9]})
    with pytest.raises(Exception, match="merge='aligned'.*froze merge='neighbours'"):
        run(spark, settings, aligned)
