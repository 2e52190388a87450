"""Sketch registrations and state rows without a JVM (delta_tables/sketch_conf.py, sketch_state.py)."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pyarrow as pa
import pytest

from cep.errors import ConfigError
from cep.sketch import CorruptSketchError, SketchConfig, SketchTree, decode_bits, encode_bits
from cep.sketch.units import cut
from delta_tables.settings import load_settings
from delta_tables.sketch_conf import load_sketch, load_sketches, sketch_from_mapping
from delta_tables.sketch_state import (NODES_ARROW_SCHEMA, NODES_COLUMNS, OPEN_ARROW_SCHEMA,
                                       OpenState, SketchStateError, append_rows,
                                       config_from_nodes, ddl, frontier_from_arrow,
                                       open_to_arrow, tree_from_arrow, tree_to_arrow)

SPEC = {"source": "events", "stream_col": "key", "type_col": "type", "ts_col": "ts",
        "id_col": "id", "m": 64, "k": 2, "C": 3}


@pytest.fixture(scope="module")
def conf_settings(tmp_path_factory):
    return load_settings(overrides={"data_dir": str(tmp_path_factory.mktemp("data"))})


def test_registered_sketches_load(conf_settings) -> None:
    sketches = load_sketches(conf_settings)
    assert {"app_sketch", "word_sketch"} <= set(sketches)
    app = sketches["app_sketch"]
    assert app.source.name == "bpi2017_applications" and app.config is None
    assert app.initial_config() == app.solver.solve()
    assert app.initial_config().C == 4
    for suffix, table in app.state_tables().items():
        assert table.name == f"app_sketch_{suffix}"
        assert table.location == conf_settings.warehouse_dir / f"app_sketch_{suffix}"
    with pytest.raises(ConfigError, match="unknown sketch 'nope'.*app_sketch"):
        load_sketch(conf_settings, "nope")


@pytest.mark.parametrize("change, message", [
    ({"stream_col": "key; DROP TABLE x"}, "invalid .*stream_col"),
    ({"source": "../outside"}, r"invalid .*source "),
    ({"fpq": 0.1}, "not both"),
    ({"m": 63}, "multiple of 8"),
    ({"seeds": [1, 2 ** 31]}, "seeds"),
    ({"seeds": [1, 1]}, "distinct"),
    ({"colour": "red"}, "unknown keys"),
    ({"type_col": "key"}, "must differ"),
    ({"C": 0}, "'C'"),
])
def test_bad_registrations_are_config_errors(conf_settings, change, message) -> None:
    with pytest.raises(ConfigError, match=message):
        sketch_from_mapping(conf_settings, "sk", {**SPEC, **change})


def test_bad_names_and_solver_inputs(conf_settings) -> None:
    with pytest.raises(ConfigError, match="invalid sketch name"):
        sketch_from_mapping(conf_settings, "a-b", SPEC)
    with pytest.raises(ConfigError, match="at most 122"):
        sketch_from_mapping(conf_settings, "a" * 123, SPEC)
    solver = {k: v for k, v in SPEC.items() if k not in ("m", "k")}
    with pytest.raises(ConfigError, match="missing keys"):
        sketch_from_mapping(conf_settings, "sk", solver)
    with pytest.raises(ConfigError, match="fpq"):
        sketch_from_mapping(conf_settings, "sk", {**solver, "fpq": 2, "memory_bytes": 10,
                                                  "expected_events": 10})
    ok = sketch_from_mapping(conf_settings, "sk", {**solver, "fpq": 0.01, "memory_bytes": 4096,
                                                   "expected_events": 50})
    assert ok.initial_config().C == 3 and ok.source.name == "events"


def test_merge_rule_and_thesis_configuration_rule(conf_settings) -> None:
    from cep.sketch.thesis_solver import thesis_solve

    assert sketch_from_mapping(conf_settings, "sk", {**SPEC, "merge": "neighbours"}).config.merge \
        == "neighbours"
    with pytest.raises(ConfigError, match="key 'merge' expected one of aligned, neighbours"):
        sketch_from_mapping(conf_settings, "sk", {**SPEC, "merge": "pairs"})
    with pytest.raises(ConfigError, match="fanout must be 2"):
        sketch_from_mapping(conf_settings, "sk", {**SPEC, "merge": "neighbours", "fanout": 4})
    solver = {k: v for k, v in SPEC.items() if k not in ("m", "k")}
    inputs = {**solver, "fpq": 1e-4, "memory_bytes": 1 << 23, "expected_events": 10_000,
              "query_length": 3}
    thesis = sketch_from_mapping(conf_settings, "sk", {**inputs, "rule": "thesis",
                                                       "merge": "neighbours"}).initial_config()
    want = thesis_solve(1e-4, 8.0 * (1 << 23), 10_000, 3, 3)
    # The thesis's m rounded up to whole bytes, its k, the registration's merge rule.
    assert (thesis.m, thesis.k, thesis.merge) == (-(-want.m // 8) * 8, want.k, "neighbours")
    ours = sketch_from_mapping(conf_settings, "sk", inputs).initial_config()
    assert ours.merge == "aligned" and (ours.m, ours.k) != (thesis.m, thesis.k)
    with pytest.raises(ConfigError, match="key 'rule' expected one of ours, thesis"):
        sketch_from_mapping(conf_settings, "sk", {**inputs, "rule": "paper"})


def build(names: str, cfg: SketchConfig) -> SketchTree:
    return SketchTree.build(list(names), np.arange(len(names)) * 10, cfg)


def test_rows_round_trip_and_the_query_tree_cuts_like_the_tree() -> None:
    cfg = SketchConfig(m=64, k=2, C=3, seeds=(7, 8))
    tree = build("ABCABDEFGHABCXYZQ", cfg)
    rows = tree_to_arrow("s", tree)
    assert rows.schema == NODES_ARROW_SCHEMA and rows.num_rows == tree.n_nodes + 1
    assert ddl(NODES_COLUMNS).startswith("stream STRING, node_id BIGINT, level INT, idx BIGINT")
    assert config_from_nodes(rows) == cfg
    query = tree_from_arrow(rows, cfg)
    for level in (0, 1, 2):
        for name in "AQZ":
            a, b = cut(tree, [name], level), cut(query, [name], level)
            assert np.array_equal(a.node_id, b.node_id) and np.array_equal(a.has(name), b.has(name))
    with pytest.raises(SketchStateError, match="other m"):
        tree_from_arrow(rows, SketchConfig(m=128, k=2, C=3, seeds=(7, 8)))
    with pytest.raises(SketchStateError, match="other seeds"):
        tree_from_arrow(rows, SketchConfig(m=64, k=2, C=3))
    with pytest.raises(SketchStateError, match="one stream"):
        tree_from_arrow(pa.concat_tables([rows, tree_to_arrow("t", tree)]), cfg)


def test_corrupt_blobs_name_the_stream_and_the_node() -> None:
    cfg = SketchConfig(m=64, k=2, C=3)
    rows = tree_to_arrow("case-9", build("ABCDEFGHI", cfg))
    blobs = rows.column("bits").to_pylist()
    bad = bytearray(blobs[1])
    bad[16] ^= 1
    blobs[1] = bytes(bad)
    damaged = rows.set_column(rows.schema.get_field_index("bits"), "bits",
                              pa.array(blobs, pa.binary()))
    node = rows.column("node_id")[1].as_py()
    with pytest.raises(CorruptSketchError, match=rf"CEP-SKETCH-002: stream 'case-9', node_id "
                                                 rf"{node} .*checksum mismatch"):
        tree_from_arrow(damaged, cfg)
    state = OpenState("case-9", 3, (), (), (), 80, 8)
    with pytest.raises(CorruptSketchError, match="stream 'case-9'"):
        frontier_from_arrow(damaged, state, cfg)


def _with_column(rows: pa.Table, name: str, values: list) -> pa.Table:
    at = rows.schema.get_field_index(name)
    return rows.set_column(at, rows.schema.field(at), pa.array(values, rows.schema.field(at).type))


def test_blobs_are_bound_to_their_rows() -> None:
    # Issue 21: valid blobs swapped between nodes, an edited interval or count, or rows copied
    # to another stream fail naming the stream and the node; the open row is bound too.
    cfg = SketchConfig(m=64, k=2, C=3)
    rows = tree_to_arrow("case-9", build("ABCDEFGHIJKLMNOPQ", cfg))
    assert {blob[4] for blob in rows.column("bits").to_pylist()} == {2}  # version 2, bound
    level = rows.column("level").to_pylist()
    is_open = rows.column("is_open").to_pylist()
    a, b = [i for i in range(rows.num_rows) if level[i] == 0 and not is_open[i]][:2]
    node = rows.column("node_id")[a].as_py()
    blobs = rows.column("bits").to_pylist()
    blobs[a], blobs[b] = blobs[b], blobs[a]
    message = rf"stream 'case-9', node_id {node} .*written for another row"
    with pytest.raises(CorruptSketchError, match=message):
        tree_from_arrow(_with_column(rows, "bits", blobs), cfg)
    for name, delta in (("ts_end", timedelta(microseconds=1)), ("pos_end", 1), ("n_events", -1)):
        values = rows.column(name).to_pylist()
        values[a] = values[a] + delta
        with pytest.raises(CorruptSketchError, match=message):
            tree_from_arrow(_with_column(rows, name, values), cfg)
    with pytest.raises(CorruptSketchError, match="stream 'case-8', node_id .*another row"):
        tree_from_arrow(_with_column(rows, "stream", ["case-8"] * rows.num_rows), cfg)
    opened = is_open.index(True)
    ts = rows.column("ts_start").to_pylist()
    ts[opened] = ts[opened] - timedelta(seconds=1)
    with pytest.raises(CorruptSketchError, match=r"node_id \d+ .*another row"):
        tree_from_arrow(_with_column(rows, "ts_start", ts), cfg)
    # The job's path: a swapped top-level blob fails its frontier restore.
    top = rows.column("is_top").to_pylist()
    tops = [i for i in range(rows.num_rows) if top[i] and not is_open[i]]
    if len(tops) >= 2:
        blobs = rows.column("bits").to_pylist()
        blobs[tops[0]], blobs[tops[1]] = blobs[tops[1]], blobs[tops[0]]
        state = OpenState("case-9", 5, ("P", "Q"), (150, 160), (15, 16), 160, 16)
        with pytest.raises(CorruptSketchError, match="another row"):
            frontier_from_arrow(_with_column(rows, "bits", blobs), state, cfg)


def test_unbound_blobs_of_older_tables_still_read() -> None:
    cfg = SketchConfig(m=64, k=2, C=3)
    tree = build("ABCDEFGHIJKLMNOPQ", cfg)
    rows = tree_to_arrow("s", tree)
    old = [encode_bits(decode_bits(blob, 64), 64) for blob in rows.column("bits").to_pylist()]
    assert {blob[4] for blob in old} == {1}
    query = tree_from_arrow(_with_column(rows, "bits", old), cfg)
    assert np.array_equal(query.bits, tree_from_arrow(rows, cfg).bits)


def test_frontier_rows_applied_by_node_id_give_the_one_pass_rows() -> None:
    cfg = SketchConfig(m=32, k=2, C=2)
    rng = np.random.default_rng(4)
    names = [str(x) for x in rng.choice(list("ABCDEFG"), 120)]
    ts = np.sort(rng.integers(0, 500, 120))
    table: dict[int, dict] = {}
    state = None
    nodes = NODES_ARROW_SCHEMA.empty_table()
    for lo, hi in ((0, 1), (1, 40), (40, 41), (41, 90), (90, 120)):
        front = frontier_from_arrow(nodes.filter(pa.compute.field("is_top")), state, cfg)
        grown = front.append(names[lo:hi], ts[lo:hi])
        for row in append_rows("s", front, grown).to_pylist():
            table[row["node_id"]] = row
        table = {k: v for k, v in table.items() if not v["is_open"] or k == grown.n_full_leaves}
        nodes = pa.Table.from_pylist(list(table.values()), schema=NODES_ARROW_SCHEMA)
        state = OpenState("s", grown.n_full_leaves, grown.open_leaf.names,
                          tuple(grown.open_ts.tolist()), tuple(range(grown.open_leaf.n_events)),
                          int(ts[hi - 1]), hi - 1)
        state = OpenState.from_arrow(open_to_arrow([state], cfg))[0]
        assert open_to_arrow([state], cfg).schema == OPEN_ARROW_SCHEMA
    whole = tree_to_arrow("s", SketchTree.build(names, ts, cfg)).to_pylist()
    assert sorted(table.values(), key=lambda r: r["node_id"]) == \
        sorted(whole, key=lambda r: r["node_id"])
