"""The Bloom-filter tree and its exact-set twin (cep/sketch/tree.py), against hand-derived
examples and a brute-force re-derivation of docs/sketch.md section 3 (no JVM)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cep.sketch.bloom import BloomFilter
from cep.sketch.config import SketchConfig
from cep.sketch.errors import SketchConfigError, SketchInputError
from cep.sketch.hashing import bit_positions
from cep.sketch.tree import ID_SHIFT, OpenLeaf, SketchTree, node_ids, split_node_ids

# A toy hash for hand-derived trees (m = 16, k = 2): every name owns two known bits.
TOY = {"A": (0, 1), "B": (2, 3), "C": (4, 5), "D": (6, 7), "E": (8, 9), "F": (10, 11),
       "G": (12, 13), "H": (14, 15), "X": (0, 2)}


def _toy_bits(name: str) -> tuple[int, int]:
    code = sum(map(ord, name))
    return TOY.get(name, (code % 16, code * 7 % 16))


def toy(names: Sequence[str], m: int, seeds: Sequence[int]) -> np.ndarray:
    return np.array([[_toy_bits(n)[i] % m for i in range(len(seeds))] for n in names],
                    dtype=np.int64).reshape(len(names), len(seeds))


TOY_CFG = SketchConfig(m=16, k=2, C=2, fanout=2)


def columns(tree: SketchTree) -> dict[str, list]:
    names = ["level", "index", "pos_start", "pos_end", "ts_start", "ts_end", "n_events", "is_top"]
    return {name: getattr(tree, name).tolist() for name in names}


def bit_set(row: np.ndarray) -> set[int]:
    return set(np.flatnonzero(np.unpackbits(row, bitorder="little")).tolist())


# ---- hand-derived examples (C = 2, f = 2, m = 16, toy hash) -----------------------------------

def test_hand_derived_tree() -> None:
    # leaves: L0 {A,B} bits 0-3, L1 {A,C} bits 0,1,4,5, L2 {D,E} 6-9, L3 {F,G} 10-13, L4 {H,A}
    # 14,15,0,1; open leaf: B.  (1,0) = L0|L1: 6 bits <= 8 exists; (1,1) = L2|L3: exactly 8 bits,
    # exists (the bound is inclusive); (2,0) = 14 bits > 8: no; L4 has no sibling yet.
    names = list("ABACDEFGHAB")
    ts = [10, 10, 11, 12, 12, 12, 13, 14, 15, 16, 16]
    tree = SketchTree.build(names, ts, TOY_CFG, hasher=toy)
    assert columns(tree) == {
        "level": [0, 0, 1, 0, 0, 1, 0],
        "index": [0, 1, 0, 2, 3, 1, 4],
        "pos_start": [0, 2, 0, 4, 6, 4, 8],
        "pos_end": [1, 3, 3, 5, 7, 7, 9],
        "ts_start": [10, 11, 10, 12, 13, 12, 15],
        "ts_end": [10, 12, 12, 12, 14, 14, 16],
        "n_events": [2, 2, 4, 2, 2, 4, 2],
        "is_top": [False, False, True, False, False, True, True],
    }
    assert tree.node_id.tolist() == [0, 1, 1 << 48, 2, 3, (1 << 48) | 1, 4]
    assert [bit_set(row) for row in tree.bits] == [
        {0, 1, 2, 3}, {0, 1, 4, 5}, {0, 1, 2, 3, 4, 5}, {6, 7, 8, 9}, {10, 11, 12, 13},
        set(range(6, 14)), {14, 15, 0, 1}]
    assert [tree.twin_names(r) for r in range(7)] == [
        ("A", "B"), ("A", "C"), ("A", "B", "C"), ("D", "E"), ("F", "G"), ("D", "E", "F", "G"),
        ("A", "H")]
    assert tree.top_rows().tolist() == [2, 5, 6]
    assert tree.rows_at(0).tolist() == [0, 1, 3, 4, 6] and tree.rows_at(1).tolist() == [2, 5]
    assert tree.children(2).tolist() == [0, 1] and tree.children(5).tolist() == [3, 4]
    assert tree.children(0).tolist() == []
    assert tree.parent_rows().tolist() == [2, 2, -1, 5, 5, -1, -1]
    assert tree.parent_ids().tolist() == [1 << 48, 1 << 48, -1, (1 << 48) | 1,
                                          (1 << 48) | 1, -1, -1]
    leaf = tree.open_leaf
    assert (leaf.pos_start, leaf.pos_end, leaf.names, leaf.ts.tolist()) == (10, 10, ("B",), [16])
    assert leaf.index == leaf.node_id == 5 and tree.fanout == 2 and tree.leaf_size == 2
    assert (leaf.ts_start, leaf.ts_end, leaf.n_events) == (16, 16, 1)
    assert bit_set(leaf.bits) == {2, 3} and leaf.member("B") and leaf.twin_member("B")
    assert not leaf.twin_member("A") and not leaf.member("A")
    # X owns bits 0 and 2: a Bloom false positive wherever A and B are (or C... no: bits 0, 2).
    assert tree.member("X").tolist() == [True, False, True, False, False, False, False]
    assert tree.twin_member("X").tolist() == [False] * 7
    assert tree.member("A").tolist() == [True, True, True, False, False, False, True]
    assert tree.stats() == {"events": 11, "open_events": 1, "nodes": 7, "levels": 2,
                            "top_level": 3, "bytes": 14, "state_bytes": tree.stats()["state_bytes"],
                            "mean_fill": (4 + 4 + 6 + 4 + 4 + 8 + 4) / 7 / 16, "names": 8,
                            "twin_pairs": 17}

    # Appending C fills L5 = {B, C} (bits 2-5); (1,2) = L4|L5 has exactly 8 bits: it exists and
    # L4 is no longer top-level. (2,1) would need (1,3): not yet.
    grown = tree.append(["C"], [17])
    assert columns(grown)["level"] == [0, 0, 1, 0, 0, 1, 0, 0, 1]
    assert columns(grown)["index"] == [0, 1, 0, 2, 3, 1, 4, 5, 2]
    assert columns(grown)["is_top"] == [False, False, True, False, False, True, False, False, True]
    assert grown.twin_names(8) == ("A", "B", "C", "H")
    assert grown.open_leaf.names == () and grown.open_leaf.pos_start == 12
    assert grown.open_leaf.ts_start is None and grown.open_leaf.pos_end == 11
    assert grown == SketchTree.build(names + ["C"], ts + [17], TOY_CFG, hasher=toy)
    # The old value is untouched.
    assert columns(tree)["is_top"] == [False, False, True, False, False, True, True]
    assert tree.n_nodes == 7 and tree.open_leaf.names == ("B",)


def test_dense_children_get_no_parent() -> None:
    # {A,B,C} and {D,E,F}: 6 bits each, 12 together > 8: both leaves stay top-level.
    tree = SketchTree.build(list("ABCDEF"), range(6), SketchConfig(m=16, k=2, C=3), hasher=toy)
    assert columns(tree)["level"] == [0, 0] and columns(tree)["is_top"] == [True, True]
    # A fanout of 3 groups three leaves.
    tree3 = SketchTree.build(list("AABBCCA"), range(7), SketchConfig(m=16, k=2, C=2, fanout=3),
                             hasher=toy)
    assert columns(tree3)["level"] == [0, 0, 0, 1]
    assert columns(tree3)["pos_end"] == [1, 3, 5, 5]
    assert tree3.children(3).tolist() == [0, 1, 2]
    assert tree3.twin_names(3) == ("A", "B", "C") and tree3.open_leaf.names == ("A",)


def test_empty_and_tiny_streams() -> None:
    empty = SketchTree.build([], [], TOY_CFG, hasher=toy)
    assert empty.n_nodes == 0 and len(empty) == 0 and empty.n_levels == 0
    assert empty.top_rows().tolist() == [] and empty.member("A").tolist() == []
    assert empty.twin_member("A").tolist() == [] and empty.parent_rows().tolist() == []
    assert empty.rows_of([0]).tolist() == [-1] and empty.open_leaf.n_events == 0
    assert empty.stats()["mean_fill"] == 0.0 and empty.stats()["events"] == 0
    assert empty == SketchTree.empty(TOY_CFG) and empty.append([], []) is empty
    assert repr(empty) == "SketchTree(events=0, nodes=0, levels=0, top=0, open=0, names=0)"
    one = SketchTree.build(["A"], [5], TOY_CFG, hasher=toy)
    assert one.n_nodes == 0 and one.open_leaf.names == ("A",) and one.vocabulary == ("A",)


def test_node_id_encoding() -> None:
    ids = node_ids(np.array([0, 1, 47]), np.array([3, (1 << 48) - 1, 0]))
    assert ids.tolist() == [3, (1 << 49) - 1, 47 << ID_SHIFT]
    levels, index = split_node_ids(ids)
    assert levels.tolist() == [0, 1, 47] and index.tolist() == [3, (1 << 48) - 1, 0]


# ---- brute force: the rule of docs/sketch.md section 3, re-derived with sets and Python ints ---

def brute_force(names: list[str], ts: list[int], cfg: SketchConfig, hasher=None) -> dict:
    """{(level, g): (bits as int, name set, pos_start, pos_end, ts_start, ts_end, n_events)}."""
    hasher = hasher or bit_positions
    c, f, m = cfg.C, cfg.fanout, cfg.m

    def mask(group: list[str]) -> int:
        out = 0
        for name in group:
            for p in hasher([name], m, cfg.seeds)[0]:
                out |= 1 << int(p)
        return out

    nodes: dict[tuple[int, int], tuple] = {}
    for j in range(len(names) // c):
        part = names[j * c:(j + 1) * c]
        nodes[(0, j)] = (mask(part), set(part), j * c, j * c + c - 1, ts[j * c], ts[j * c + c - 1], c)
    level = 1
    while any(key[0] == level - 1 for key in nodes):
        top = max(g for (lv, g) in nodes if lv == level - 1)
        for g in range(top // f + 1):
            kids = [nodes.get((level - 1, g * f + i)) for i in range(f)]
            if any(kid is None for kid in kids):
                continue
            bits = 0
            for kid in kids:
                bits |= kid[0]
            if bin(bits).count("1") <= m // 2:
                nodes[(level, g)] = (bits, set().union(*(kid[1] for kid in kids)), kids[0][2],
                                     kids[-1][3], min(k[4] for k in kids), max(k[5] for k in kids),
                                     sum(k[6] for k in kids))
        level += 1
    return nodes


def assert_matches_brute_force(tree: SketchTree, names: list[str], ts: list[int],
                               cfg: SketchConfig, hasher=None) -> None:
    expected = brute_force(names, ts, cfg, hasher)
    got = {}
    for row in range(tree.n_nodes):
        key = (int(tree.level[row]), int(tree.index[row]))
        got[key] = (int.from_bytes(tree.bits[row].tobytes(), "little"), set(tree.twin_names(row)),
                    int(tree.pos_start[row]), int(tree.pos_end[row]), int(tree.ts_start[row]),
                    int(tree.ts_end[row]), int(tree.n_events[row]))
        assert int(tree.node_id[row]) == (key[0] << 48) | key[1]
        parent = (key[0] + 1, key[1] // cfg.fanout)
        assert bool(tree.is_top[row]) == (parent not in expected)
    assert got == expected
    # Rows in post-order: by (pos_end, level).
    order = list(zip(tree.pos_end.tolist(), tree.level.tolist()))
    assert order == sorted(order) and len(set(order)) == len(order)
    # The open leaf is the rest of the stream.
    cut = len(names) // cfg.C * cfg.C
    assert tree.open_leaf.names == tuple(names[cut:]) and tree.open_leaf.ts.tolist() == ts[cut:]
    assert tree.open_leaf.pos_start == cut
    assert tree.open_leaf.filter == BloomFilter.empty(cfg.m, cfg.seeds, hasher).add(names[cut:])


def assert_invariants(tree: SketchTree, names: list[str]) -> None:
    # The twin is the set of raw names under each node.
    for row in range(tree.n_nodes):
        lo, hi = int(tree.pos_start[row]), int(tree.pos_end[row])
        assert set(tree.twin_names(row)) == set(names[lo:hi + 1])
        assert int(tree.n_events[row]) == hi - lo + 1
    # Bloom membership contains twin membership at every node, for every name.
    for name in set(names) | {"never-seen", "Z"}:
        bloom, twin = tree.member(name), tree.twin_member(name)
        assert not np.any(twin & ~bloom)
        assert np.array_equal(tree.member_matrix([name])[:, 0], bloom)
        assert np.array_equal(tree.twin_member_matrix([name])[:, 0], twin)
    # The top-level nodes and the open leaf partition the positions in order.
    spans = [(int(tree.pos_start[r]), int(tree.pos_end[r])) for r in tree.top_rows()]
    leaf = tree.open_leaf
    if leaf.n_events:
        spans.append((leaf.pos_start, leaf.pos_end))
    covered = [p for lo, hi in spans for p in range(lo, hi + 1)]
    assert covered == list(range(len(names)))
    # Navigation agrees with the ids.
    parents = tree.parent_rows()
    for row in range(tree.n_nodes):
        kids = tree.children(row)
        if tree.level[row] == 0:
            assert len(kids) == 0
        else:
            assert len(kids) == tree.config.fanout and (parents[kids] == row).all()
            assert np.array_equal(tree.children_of([row])[0], kids)
    assert np.array_equal(tree.rows_of(tree.node_id), np.arange(tree.n_nodes))
    assert (parents == -1).tolist() == tree.is_top.tolist()


EVENTS = st.integers(0, 200).flatmap(lambda n: st.tuples(
    st.lists(st.sampled_from("ABCDEFGHIJKL"), min_size=n, max_size=n),
    st.lists(st.integers(0, 3), min_size=n, max_size=n)))
CONFIGS = st.builds(
    lambda m, k, c, f, s: SketchConfig(m=m, k=k, C=c, fanout=f, seeds=tuple(range(s, s + k))),
    st.sampled_from([8, 16, 32, 64, 128]), st.integers(1, 3), st.integers(1, 6),
    st.integers(2, 4), st.integers(0, 1000))


def _stream(events: tuple[list[str], list[int]]) -> tuple[list[str], list[int]]:
    names, gaps = events
    return names, np.cumsum(gaps, dtype=np.int64).tolist()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(EVENTS, CONFIGS)
def test_tree_rule_matches_brute_force(events, cfg: SketchConfig) -> None:
    names, ts = _stream(events)
    tree = SketchTree.build(names, ts, cfg)
    assert_matches_brute_force(tree, names, ts, cfg)
    assert_invariants(tree, names)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(EVENTS, st.integers(1, 4), st.sampled_from([2, 3]))
def test_tree_rule_with_the_toy_hash(events, c: int, f: int) -> None:
    names, ts = _stream(events)
    names = [n if n in TOY else "H" for n in names]
    cfg = SketchConfig(m=16, k=2, C=c, fanout=f)
    tree = SketchTree.build(np.array(names, dtype=str), np.array(ts), cfg, hasher=toy)
    assert_matches_brute_force(tree, names, ts, cfg, toy)
    assert_invariants(tree, names)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(EVENTS, CONFIGS, st.lists(st.integers(0, 200), max_size=8))
def test_incremental_equals_one_pass_for_any_split(events, cfg: SketchConfig,
                                                   cuts: list[int]) -> None:
    names, ts = _stream(events)
    bounds = [0] + sorted(min(c, len(names)) for c in cuts) + [len(names)]
    tree = SketchTree.empty(cfg)
    for lo, hi in zip(bounds, bounds[1:]):
        tree = tree.append(names[lo:hi], ts[lo:hi])
    whole = SketchTree.build(names, ts, cfg)
    assert tree == whole
    assert tree.stats() == whole.stats()
    assert_invariants(tree, names)


def test_append_never_changes_the_old_value() -> None:
    cfg = SketchConfig(m=64, k=2, C=2)
    rng = np.random.default_rng(5)
    names = [str(x) for x in rng.choice(list("ABCDEFG"), 300)]
    ts = list(range(300))
    base = SketchTree.build(names[:100], ts[:100], cfg)
    snapshot = {name: np.array(getattr(base, name)) for name in
                ("level", "index", "bits", "is_top", "twin_row", "twin_code", "open_codes")}
    left = base.append(names[100:200], ts[100:200])          # may extend base's buffers
    right = base.append(["new"] * 7 + names[107:150], ts[100:150])  # must not overwrite left's rows
    left2 = left.append(names[200:], ts[200:])
    for name, values in snapshot.items():
        assert np.array_equal(getattr(base, name), values)
    assert left == SketchTree.build(names[:200], ts[:200], cfg)
    assert right == SketchTree.build(names[:100] + ["new"] * 7 + names[107:150], ts[:150], cfg)
    assert left2 == SketchTree.build(names, ts, cfg)
    assert base == SketchTree.build(names[:100], ts[:100], cfg)
    with pytest.raises(ValueError):
        base.bits[0, 0] = 1
    with pytest.raises(ValueError):
        left.is_top[0] = True


def test_new_names_in_later_batches_keep_codes_sorted() -> None:
    cfg = SketchConfig(m=256, k=3, C=2)
    tree = SketchTree.build(["m", "n", "m", "n"], [0, 1, 2, 3], cfg)
    grown = tree.append(["a", "z", "b"], [4, 5, 6])
    assert grown.vocabulary == ("a", "b", "m", "n", "z")
    assert grown.twin_names(0) == ("m", "n") and grown.twin_names(grown.n_nodes - 1) == ("a", "z")
    assert grown.open_leaf.names == ("b",)
    assert np.array_equal(grown.name_positions, bit_positions(list(grown.vocabulary), 256, (0, 1, 2)))
    assert grown == SketchTree.build(["m", "n", "m", "n", "a", "z", "b"], range(7), cfg)


def test_member_uses_murmur3_positions() -> None:
    cfg = SketchConfig(m=128, k=3, C=4, seeds=(11, 22, 33))
    names = ["login", "buy", "logout", "login"] * 4
    tree = SketchTree.build(names, range(16), cfg)
    for name in ["login", "buy", "logout", "refund", "naïve"]:
        bf = BloomFilter.empty(128, (11, 22, 33))
        for row in range(tree.n_nodes):
            assert tree.filter(row) == bf.add(tree.twin_names(row))
            assert bool(tree.member(name)[row]) == tree.filter(row).contains(name)
    assert tree.positions("refund").tolist() == bit_positions(["refund"], 128, (11, 22, 33))[0].tolist()
    assert tree.code_of("buy") == 0 and tree.code_of("zzz") == -1


def test_datetime64_timestamps() -> None:
    ts = np.array(["2024-01-01T00:00:00", "2024-01-01T00:00:01"], dtype="datetime64[s]")
    tree = SketchTree.build(["A", "B"], ts, SketchConfig(m=16, k=1, C=2))
    assert tree.ts_start.tolist() == [1704067200_000000] and tree.ts_end.tolist() == [1704067201_000000]


@pytest.mark.parametrize("names, ts, expected", [
    (["A", "B"], [1], "expected 2 timestamps"),
    (["A", "B"], [2, 1], "event 1 of the batch has ts 1, before event 0"),
    (["A", "B"], [1.5, 2.0], "integer microseconds"),
    (["A", "B"], [[1, 2]], "1-d"),
    (["A", 1], [1, 2], "expected strings"),
    ("AB", [1, 2], "sequence of strings"),
])
def test_bad_input_is_a_typed_error(names, ts, expected: str) -> None:
    with pytest.raises(SketchInputError, match=expected):
        SketchTree.build(names, ts, TOY_CFG, hasher=toy)


def test_bad_config_and_hasher() -> None:
    with pytest.raises(SketchConfigError, match="config"):
        SketchTree.build(["A"], [1], {"m": 16})  # type: ignore[arg-type]
    with pytest.raises(SketchConfigError, match="hasher"):
        SketchTree.build(["A"], [1], TOY_CFG, hasher=lambda names, m, seeds: np.zeros((1, 1)))


def test_equality_compares_everything() -> None:
    a = SketchTree.build(list("ABAB"), range(4), TOY_CFG, hasher=toy)
    assert a != SketchTree.build(list("ABAB"), [0, 1, 2, 4], TOY_CFG, hasher=toy)
    assert a != SketchTree.build(list("ABAC"), range(4), TOY_CFG, hasher=toy)
    assert a != SketchTree.build(list("ABAB"), range(4), SketchConfig(m=16, k=2, C=2, seeds=(5, 6)),
                                 hasher=toy)
    assert a != SketchTree.build(list("ABABA"), range(5), TOY_CFG, hasher=toy)
    assert a != "tree" and isinstance(a.open_leaf, OpenLeaf)
    assert a.open_leaf == SketchTree.build(list("ABAB"), range(4), TOY_CFG, hasher=toy).open_leaf
