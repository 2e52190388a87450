"""The thesis's merge rule (``merge="neighbours"``, Baltus 2021 section 4.1, Algorithm 2).

The oracle below is Algorithm 2 read literally: leaves are added one by one as children of the
root, and after each one any two neighbouring children of one level whose OR has at most
``m/2`` bits set become the children of a new node, until no pair merges. The columnar tree
(`cep/sketch/tree.py`) must build exactly that tree, in one pass and in any batches, and the
readers of stored rows (`cep/sketch/stored.py`, `cep/sketch/forest.py`) must find the rule
from the rows alone.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
import pytest

from cep.sketch import SketchConfig, SketchTree
from cep.sketch.errors import CorruptSketchError, SketchConfigError
from cep.sketch.evaluate import compile_sketch_query, evaluate_sketch
from cep.sketch.forest import cut_forest, restore_forest, stored_columns
from cep.sketch.hashing import positions_of
from cep.sketch.stored import config_of_rows, merge_of_rows, stored_tree
from cep.sketch.units import cut


@dataclass(frozen=True)
class Node:
    """A node of the oracle's tree: level, first and last leaf, filter bits as an int."""

    level: int
    first: int
    last: int
    bits: int


def algorithm2(names: list[str], c: int, m: int, k: int) -> tuple[list[Node], list[Node]]:
    """Every node and the root's children of the thesis's Algorithm 1 and 2, leaf by leaf."""
    positions = positions_of(None, sorted(set(names)), m, tuple(range(k)))
    bit = {name: sum(1 << int(p) for p in set(positions[i].tolist()))
           for i, name in enumerate(sorted(set(names)))}
    nodes: list[Node] = []
    root: list[Node] = []
    for j in range(len(names) // c):
        leaf_bits = 0
        for name in names[j * c:(j + 1) * c]:
            leaf_bits |= bit[name]
        leaf = Node(0, j, j, leaf_bits)
        nodes.append(leaf)
        root.append(leaf)
        merged = True
        while merged:  # Algorithm 2's loop over neighbouring pairs, until none merges
            merged = False
            for i in range(len(root) - 1):
                a, b = root[i], root[i + 1]
                if a.level == b.level and bin(a.bits | b.bits).count("1") <= m // 2:
                    parent = Node(a.level + 1, a.first, b.last, a.bits | b.bits)
                    nodes.append(parent)
                    root[i:i + 2] = [parent]
                    merged = True
                    break
    return nodes, root


def shape(tree: SketchTree) -> set[tuple[int, int, int, int, bool]]:
    return {(int(lv), int(ix), int(a), int(b), bool(t)) for lv, ix, a, b, t in
            zip(tree.level, tree.index, tree.pos_start, tree.pos_end, tree.is_top)}


def oracle_shape(names: list[str], c: int, m: int, k: int) -> set[tuple[int, int, int, int, bool]]:
    nodes, root = algorithm2(names, c, m, k)
    tops = set(root)
    return {(n.level, n.first, n.first * c, (n.last + 1) * c - 1, n in tops) for n in nodes}


def random_names(rng: random.Random, n: int, vocabulary: int) -> list[str]:
    return [f"e{min(int(rng.paretovariate(1.1)), vocabulary)}" for _ in range(n)]


def test_unaligned_pair_merges_where_aligned_groups_cannot() -> None:
    # m = 16, k = 1: each name one bit. Leaves {a..e} {f..j} {a} {b}: leaves 0 and 1 together
    # set 10 bits > 8, so aligned groups keep them apart for ever, while the thesis merges
    # leaves 1 and 2.
    cfg = dict(m=16, k=1, C=5)
    bits = {n: i for i, n in enumerate("abcdefghij")}

    def hasher(values: list[str], m: int, seeds: tuple[int, ...]) -> np.ndarray:
        return np.array([[bits[v]] for v in values], dtype=np.int64)

    names = list("abcde") + list("fghij") + ["a"] * 5 + ["b"] * 5
    aligned = SketchTree.build(names, range(20), SketchConfig(**cfg), hasher)
    thesis = SketchTree.build(names, range(20), SketchConfig(**cfg, merge="neighbours"), hasher)
    # aligned: (0,1) has 10 bits > 8: no (1,0); (1,1) = leaves 2, 3 = {a, b}.
    assert sorted(shape(aligned)) == [(0, 0, 0, 4, True), (0, 1, 5, 9, True), (0, 2, 10, 14, False),
                                      (0, 3, 15, 19, False), (1, 1, 10, 19, True)]
    # neighbours: leaves 1 and 2 ({f..j} | {a}: 6 bits) merge first, leaf 3 is left alone.
    assert sorted(shape(thesis)) == [(0, 0, 0, 4, True), (0, 1, 5, 9, False), (0, 2, 10, 14, False),
                                     (0, 3, 15, 19, True), (1, 1, 5, 14, True)]
    # Rows in post-order: leaves 0, 1, 2, then (1, 1), then leaf 3.
    assert thesis.children(3).tolist() == [1, 2]
    assert thesis.parent_rows().tolist() == [-1, 3, 3, -1, -1]
    assert thesis.parent_ids().tolist()[1:3] == [(1 << 48) | 1] * 2


def test_same_level_nodes_with_a_top_between_them_never_merge() -> None:
    # C = 7, m = 16, one bit per name. Leaves: {a} {b} {c..i} {j, k} {a}. Leaves 0, 1 merge;
    # 2 with 3 is 9 bits (too dense); 3 with 4 merges. The level-1 nodes (1, 0) and (1, 3)
    # would fit together (4 bits) but leaf 2 stands between them: they are not neighbours.
    bits = {n: i for i, n in enumerate("abcdefghijk")}

    def hasher(values: list[str], m: int, seeds: tuple[int, ...]) -> np.ndarray:
        return np.array([[bits[v]] for v in values], dtype=np.int64)

    names = ["a"] * 7 + ["b"] * 7 + list("cdefghi") + ["j"] + ["k"] * 6 + ["a"] * 7
    cfg = SketchConfig(m=16, k=1, C=7, merge="neighbours")
    tree = SketchTree.build(names, range(35), cfg, hasher)
    tops = [(int(lv), int(ix)) for lv, ix in zip(tree.level[tree.is_top], tree.index[tree.is_top])]
    assert tops == [(1, 0), (0, 2), (1, 3)]
    for cut_at in range(36):
        grown = SketchTree.build(names[:cut_at], range(cut_at), cfg, hasher).frontier()
        grown = grown.append(names[cut_at:], range(cut_at, 35))
        assert [(int(lv), int(ix)) for lv, ix in zip(grown.level[grown.is_top],
                                                     grown.index[grown.is_top])] == tops


@pytest.mark.parametrize("seed", range(12))
def test_build_is_algorithm_2_leaf_by_leaf(seed: int) -> None:
    rng = random.Random(seed)
    c, m, k = rng.choice([1, 2, 3, 5]), rng.choice([16, 32, 64]), rng.choice([1, 2, 3])
    names = random_names(rng, rng.randrange(0, 400), rng.choice([4, 12, 40]))
    tree = SketchTree.build(names, range(len(names)), SketchConfig(m=m, k=k, C=c, merge="neighbours"))
    assert shape(tree) == oracle_shape(names, c, m, k)
    # Exact sets follow the shape: a node's twin is the union of its leaves' names.
    for row in range(len(tree)):
        a, b = int(tree.pos_start[row]), int(tree.pos_end[row])
        assert tree.twin_names(row) == tuple(sorted(set(names[a:b + 1])))


@pytest.mark.parametrize("seed", range(8))
def test_appends_and_frontier_give_the_one_pass_tree(seed: int) -> None:
    rng = random.Random(100 + seed)
    cfg = SketchConfig(m=32, k=2, C=rng.choice([1, 2, 4]), merge="neighbours")
    names = random_names(rng, 300, 20)
    whole = SketchTree.build(names, range(len(names)), cfg)
    grown, front, at = SketchTree.empty(cfg), SketchTree.empty(cfg), 0
    while at < len(names):
        step = rng.randrange(1, 40)
        batch = names[at:at + step]
        grown = grown.append(batch, range(at, at + len(batch)))
        front = front.frontier().append(batch, range(at, at + len(batch)))
        at += len(batch)
        assert front.n_nodes >= 0
    assert grown == whole
    assert front.node_id[front.is_top].tolist() == whole.node_id[whole.is_top].tolist()
    assert front.bits[front.is_top].tobytes() == whole.bits[whole.is_top].tobytes()


def test_config_refuses_other_fanouts_and_unknown_rules() -> None:
    with pytest.raises(SketchConfigError, match="fanout must be 2"):
        SketchConfig(m=64, k=2, C=4, fanout=3, merge="neighbours")
    with pytest.raises(SketchConfigError, match="merge: expected one of aligned, neighbours"):
        SketchConfig(m=64, k=2, C=4, merge="pairs")
    cfg = SketchConfig(m=64, k=2, C=4, merge="neighbours")
    assert SketchConfig.from_dict(cfg.to_dict()) == cfg


def records(result: object) -> list[tuple]:
    return [(m.pos_start, m.pos_end, m.ts_start, m.ts_end, m.node_ids)
            for m in result.rows()]  # type: ignore[attr-defined]


def stored(trees: list[SketchTree]) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    return stored_columns(trees)


@pytest.mark.parametrize("seed", range(6))
def test_stored_rows_say_which_rule_and_restore_the_tree(seed: int) -> None:
    rng = random.Random(200 + seed)
    cfg = SketchConfig(m=32, k=2, C=3, merge="neighbours")
    trees = []
    for _ in range(3):
        names = random_names(rng, rng.randrange(1, 200), 16)
        trees.append(SketchTree.build(names, range(len(names)), cfg))
    cols, bits, bounds = stored(trees)
    queries = ["PATTERN e1; e2", "PATTERN e2; e1; e3"]
    for s, tree in enumerate(trees):
        lo, hi = int(bounds[s]), int(bounds[s + 1])
        part = {name: np.asarray(values)[lo:hi] for name, values in cols.items()}
        found = config_of_rows(s, m=part["m"], k=part["k"], seeds=part["seeds"],
                               config_version=part["config_version"], level=part["level"],
                               n_events=part["n_events"], is_open=part["is_open"],
                               idx=part["idx"], pos_start=part["pos_start"])
        full = ~part["is_open"]
        if merge_of_rows(part["level"][full], part["idx"][full], part["pos_start"][full], 3, 2) \
                == "aligned":
            # Only trees whose inner nodes are all index 0 at level 1 read as aligned: the two
            # rules give those the same ids and children.
            assert set(tree.index[tree.level >= 1].tolist()) <= {0} and tree.n_levels <= 2
            continue
        assert found == cfg
        back = stored_tree(s, found, part, bits[lo:hi])
        assert back.node_id.tolist() == tree.node_id.tolist()
        assert back.parent_ids().tolist() == tree.parent_ids().tolist()
        for text in queries:
            q = compile_sketch_query(text, "skip-till-any-match")
            for level in (0, 1, 2):
                assert records(evaluate_sketch(q, back, level=level)) == \
                    records(evaluate_sketch(q, tree, level=level))
    forest = restore_forest(cols, bits, bounds)
    assert forest is not None and forest.config.merge in ("neighbours", "aligned")
    for level in (0, 1):
        units, ubounds = cut_forest(forest, ["e1", "e2"], level)
        for s, tree in enumerate(trees):
            one = cut(tree, ["e1", "e2"], level)
            got = units.slice(int(ubounds[s]), int(ubounds[s + 1]))
            assert got.node_id.tolist() == one.node_id.tolist()
            assert got.has("e1").tolist() == one.has("e1").tolist()


def test_a_deleted_row_of_a_neighbours_tree_is_named() -> None:
    names = ["a", "b"] * 4 + ["c"] * 8 + ["a"] * 2
    tree = SketchTree.build(names, range(len(names)), SketchConfig(m=64, k=1, C=2, merge="neighbours"))
    cols, bits, _ = stored([tree])
    inner = np.flatnonzero((cols["level"] == 0) & ~cols["is_top"] & ~cols["is_open"])
    drop = int(inner[-1])
    keep = np.ones(len(bits), dtype=bool)
    keep[drop] = False
    part = {name: np.asarray(values)[keep] for name, values in cols.items()}
    cfg = config_of_rows("s", m=part["m"], k=part["k"], seeds=part["seeds"],
                         config_version=part["config_version"], level=part["level"],
                         n_events=part["n_events"], is_open=part["is_open"], idx=part["idx"],
                         pos_start=part["pos_start"])
    with pytest.raises(CorruptSketchError, match=rf"node \(level 0, index {int(cols['idx'][drop])}\) is missing"):
        stored_tree("s", cfg, part, bits[keep])


def test_level_zero_answers_do_not_depend_on_the_rule() -> None:
    rng = random.Random(7)
    names = random_names(rng, 500, 30)
    q = compile_sketch_query("PATTERN e1; e3; e2", "skip-till-next-match")
    answers = [evaluate_sketch(q, SketchTree.build(names, range(500), SketchConfig(
        m=64, k=2, C=4, merge=rule)), membership="twin") for rule in ("aligned", "neighbours")]
    assert records(answers[0]) == records(answers[1])
