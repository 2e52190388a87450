"""Sketch queries (cep/sketch/query.py, units.py, evaluate.py) against docs/sketch.md section 4.

- fixed vectors with hand-derived answers for every operator and policy;
- golden errors for every construct a sketch cannot answer (code, line, column);
- hypothesis: the vectorised evaluation over exact units == the brute-force oracle
  (cep/oracles/sketch_oracle.py), at leaf level and over cuts at levels 0..2;
- over trees (``cep.sketch.tree.SketchTree``, and a stand-in built by the same rule over a toy
  Bloom filter whose collisions the test controls): the twin == the oracle over the cut, pruning
  == no pruning, no false negatives for NOT-free patterns, sketch answer == oracle over the Bloom
  membership sets.

The stream of the fixed vectors (C = 2, ts = 10 * pos)::

    pos    0 1 | 2 3 | 4 5 | 6 7 | 8 9
    name   A x | B x | C A | B C | x B
    leaf   L0  | L1  | L2  | L3  | L4
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cep.lang import PatternError
from cep.oracles.sketch_oracle import OracleUnit, leaf_sets, oracle_sketch_matches
from cep.sketch.evaluate import SketchLimits, SketchMatches, evaluate_sketch, evaluate_units
from cep.sketch.query import (
    SketchArgumentError,
    SketchLimitError,
    SketchPolicyError,
    UnsupportedSketchPatternError,
    compile_sketch_query,
)
from cep.sketch.config import SketchConfig
from cep.sketch.tree import SketchTree
from cep.sketch.units import LEVEL_SHIFT, Units, cut, leaf_units, make_node_id

ANY = "skip-till-any-match"
NEXT = "skip-till-next-match"
STRICT = "strict-contiguity"
POLICIES = (STRICT, NEXT, ANY)

NAMES = ["A", "x", "B", "x", "C", "A", "B", "C", "x", "B"]
TS = [10 * i for i in range(10)]

SETTINGS = settings(max_examples=int(os.environ.get("SKETCH_EXAMPLES", "150")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def records(result: SketchMatches) -> list[tuple]:
    return [(m.pos_start, m.pos_end, m.ts_start, m.ts_end, m.node_ids) for m in result.rows()]


# ---------------------------------------------------------------------------------------------
# Fixed vectors (derived by hand; the same stream as tests/cep/oracles/test_sketch_oracle.py)
# ---------------------------------------------------------------------------------------------

VECTORS = [
    ("PATTERN SEQ(A, B, C)", NEXT, [(0, 5, 0, 50, (0, 1, 2))]),
    ("PATTERN SEQ(A, B, C)", STRICT, [(0, 5, 0, 50, (0, 1, 2))]),
    ("PATTERN SEQ(A, B, C)", ANY, [(0, 5, 0, 50, (0, 1, 2)), (0, 7, 0, 70, (0, 1, 3))]),
    ("PATTERN SEQ(A, OR(B, C))", NEXT, [(0, 3, 0, 30, (0, 1)), (4, 7, 40, 70, (2, 3))]),
    ("PATTERN SEQ(A, OR(B, C))", STRICT, [(0, 3, 0, 30, (0, 1)), (4, 7, 40, 70, (2, 3))]),
    ("PATTERN SEQ(A, OR(B, C))", ANY, [(0, 3, 0, 30, (0, 1)), (0, 5, 0, 50, (0, 2)), (0, 7, 0, 70, (0, 3)),
                                       (0, 9, 0, 90, (0, 4)), (4, 7, 40, 70, (2, 3)), (4, 9, 40, 90, (2, 4))]),
    ("PATTERN SEQ(A, AND(B, C))", NEXT, [(0, 5, 0, 50, (0, 1, 2)), (4, 7, 40, 70, (2, 3, 3))]),
    ("PATTERN SEQ(A, AND(B, C))", STRICT, [(0, 5, 0, 50, (0, 1, 2)), (4, 7, 40, 70, (2, 3, 3)),
                                           (4, 9, 40, 90, (2, 4, 3))]),
    ("PATTERN SEQ(A, AND(B, C))", ANY, [(0, 5, 0, 50, (0, 1, 2)), (0, 7, 0, 70, (0, 1, 3)),
                                        (0, 7, 0, 70, (0, 3, 2)), (0, 7, 0, 70, (0, 3, 3)),
                                        (0, 9, 0, 90, (0, 4, 2)), (0, 9, 0, 90, (0, 4, 3)),
                                        (4, 7, 40, 70, (2, 3, 3)), (4, 9, 40, 90, (2, 4, 3))]),
    ("PATTERN SEQ(A, NOT(B), C)", NEXT, [(4, 7, 40, 70, (2, 3))]),
    ("PATTERN SEQ(A, NOT(B), C)", STRICT, [(4, 7, 40, 70, (2, 3))]),
    ("PATTERN SEQ(A, NOT(B), C)", ANY, [(4, 7, 40, 70, (2, 3))]),
    ("PATTERN AND(B, C)", NEXT, [(2, 5, 20, 50, (1, 2)), (4, 7, 40, 70, (3, 2)), (6, 7, 60, 70, (3, 3))]),
    ("PATTERN AND(B, C)", STRICT, [(2, 5, 20, 50, (1, 2)), (4, 7, 40, 70, (3, 2)), (6, 7, 60, 70, (3, 3)),
                                   (6, 9, 60, 90, (4, 3))]),
    ("PATTERN AND(B, C)", ANY, [(2, 5, 20, 50, (1, 2)), (2, 7, 20, 70, (1, 3)), (4, 7, 40, 70, (3, 2)),
                                (4, 9, 40, 90, (4, 2)), (6, 7, 60, 70, (3, 3)), (6, 9, 60, 90, (4, 3))]),
    ("PATTERN A; B; C WITHIN 30 UNITS", ANY, []),
    ("PATTERN A; B; C WITHIN 31 UNITS", ANY, [(0, 5, 0, 50, (0, 1, 2))]),
    ("PATTERN A; B; C WITHIN 31 MICROSECONDS", ANY, [(0, 5, 0, 50, (0, 1, 2))]),
    ("PATTERN A; B; C WITHIN 3 EVENTS", ANY, []),
    ("PATTERN A; B; C WITHIN 4 EVENTS", ANY, [(0, 5, 0, 50, (0, 1, 2))]),
    ("PATTERN A; B; !C WITHIN 50 UNITS", NEXT, [(4, 7, 40, 70, (2, 3))]),
    ("PATTERN A; B; !C WITHIN 50 UNITS", ANY, [(4, 7, 40, 70, (2, 3)), (4, 9, 40, 90, (2, 4))]),
    ("PATTERN A; B WINDOW [5, 9]", ANY, [(4, 7, 40, 70, (2, 3)), (4, 9, 40, 90, (2, 4))]),
    ("PATTERN A; B WINDOW [6, 9]", ANY, []),
    ("PATTERN A; B WINDOW ['1970-01-01 00:00:00.000050', '1970-01-01 00:00:00.000090']", ANY,
     [(4, 7, 40, 70, (2, 3)), (4, 9, 40, 90, (2, 4))]),
    # Infix forms mean the same as the prefix ones.
    ("PATTERN A; (B & C)", NEXT, [(0, 5, 0, 50, (0, 1, 2)), (4, 7, 40, 70, (2, 3, 3))]),
    ("PATTERN A; !B; C", NEXT, [(4, 7, 40, 70, (2, 3))]),
    ("PATTERN A; (B | C) WHERE strict-contiguity", None, [(0, 3, 0, 30, (0, 1)), (4, 7, 40, 70, (2, 3))]),
]


@pytest.mark.parametrize(("query", "policy", "expected"), VECTORS)
def test_fixed_vectors(query: str, policy: str | None, expected: list) -> None:
    q = compile_sketch_query(query, policy)
    units = leaf_units(NAMES, TS, 2)
    assert records(evaluate_units(q, units)) == expected
    assert evaluate_units(q, units, mode="exists") is bool(expected)


def test_match_inside_one_leaf_is_not_detected() -> None:
    for policy in POLICIES:
        q = compile_sketch_query("PATTERN A; B", policy)
        assert not evaluate_units(q, leaf_units(["A", "B"], [0, 1], 2), mode="exists")
        assert records(evaluate_units(q, leaf_units(["A", "B"], [0, 1], 1))) == [(0, 1, 0, 1, (0, 1))]


def test_empty_stream_and_absent_names() -> None:
    for policy in POLICIES:
        q = compile_sketch_query("PATTERN A; (B & C); !D; E WITHIN 5 UNITS", policy)
        empty = evaluate_units(q, leaf_units([], [], 2))
        assert len(empty) == 0 and empty.node_ids.shape == (0, 4)
        assert not evaluate_units(q, leaf_units(list("AAAA"), range(4), 2), mode="exists")


def test_strict_contiguity_needs_neighbouring_units() -> None:
    names, ts = ["A", "x", "x", "x", "B", "x"], list(range(6))
    strict = compile_sketch_query("PATTERN A; B", STRICT)
    assert records(evaluate_units(strict, leaf_units(names, ts, 2))) == []
    assert records(evaluate_units(strict, leaf_units(names, ts, 3))) == [(0, 5, 0, 5, (0, 1))]
    nxt = compile_sketch_query("PATTERN A; B", NEXT)
    assert records(evaluate_units(nxt, leaf_units(names, ts, 2))) == [(0, 5, 0, 5, (0, 2))]


def test_results_are_deduplicated_and_sorted() -> None:
    # Under skip-till-any, OR(B, B2) and repeated names must not produce duplicate records.
    q = compile_sketch_query("PATTERN A; OR(B, B); C", ANY)
    got = records(evaluate_units(q, leaf_units(NAMES, TS, 2)))
    assert got == sorted(set(got))


def test_limit_names_itself() -> None:
    q = compile_sketch_query("PATTERN A; B", ANY)
    units = leaf_units(list("AB" * 20), range(40), 1)
    with pytest.raises(SketchLimitError, match="max_partial_matches=50") as info:
        evaluate_units(q, units, limits=SketchLimits(max_partial_matches=50))
    assert info.value.code == "CEP-SKETCH-039"
    assert len(evaluate_units(q, units)) == 20 * 21 // 2


# ---------------------------------------------------------------------------------------------
# Compilation: accepted forms and golden errors
# ---------------------------------------------------------------------------------------------


def test_prefix_and_infix_compile_alike() -> None:
    a = compile_sketch_query("PATTERN SEQ(A, OR(B, C), NOT(D), AND(E, F), NOT(OR(G, H))) WITHIN 5 SECONDS")
    b = compile_sketch_query("PATTERN A; (B | C); !D; (E & F); !(G | H) WITHIN 5 SECONDS")
    assert (a.components, a.gaps, a.trailing, a.within) == (b.components, b.gaps, b.trailing, b.within)
    assert [(c.kind, c.names) for c in a.components] == [("name", ("A",)), ("or", ("B", "C")),
                                                          ("and", ("E", "F"))]
    assert a.gaps == ((), ("D",)) and a.trailing == ("G", "H") and a.within.amount == 5_000_000
    assert a.names == ("A", "B", "C", "E", "F", "D", "G", "H") and a.slots == 4


def test_accepted_extras() -> None:
    assert compile_sketch_query("PATTERN A").components[0].names == ("A",)
    assert compile_sketch_query("PATTERN A | B").components[0].kind == "or"
    assert compile_sketch_query("PATTERN A & B").components[0].kind == "and"
    assert compile_sketch_query("PATTERN A x; B y").positive_names == ("A", "B")  # aliases are ignored
    assert compile_sketch_query("PATTERN A; !B; !C; D").gaps == (("B", "C"),)
    assert compile_sketch_query('PATTERN "O_Sent (mail)"; B').positive_names == ("O_Sent (mail)", "B")
    q = compile_sketch_query("PATTERN A; B WHERE skip-till-any-match WITHIN 3 EVENTS WINDOW [2, 40]")
    assert (q.policy, q.within.kind, q.within.amount, q.window.start, q.window.end) == (ANY, "EVENTS", 3, 2, 40)
    assert compile_sketch_query("PATTERN A; B").policy == NEXT


GOLDEN_ERRORS = [
    ("PATTERN A; B WHERE A.x > 1", "CEP-SKETCH-020", 1, 20),
    ("PATTERN A; B @(t(B) - t(A) < 5 SECONDS)", "CEP-SKETCH-020", 1, 16),
    ("PATTERN A;\n  B\nWHERE A.x > 1", "CEP-SKETCH-020", 3, 7),
    ("PATTERN A; B DEFINE A AS x > 1", "CEP-SKETCH-021", 1, 21),
    ("PATTERN A; B+", "CEP-SKETCH-022", 1, 13),
    ("PATTERN A*; B", "CEP-SKETCH-022", 1, 10),
    ("PATTERN A; B[3]", "CEP-SKETCH-022", 1, 13),
    ("PATTERN A; B{2,3}", "CEP-SKETCH-022", 1, 13),
    ("PATTERN SEQ(A, B) WHERE [id]", "CEP-SKETCH-023", 1, 26),
    ("PATTERN A; B WHERE A.x = $v", "CEP-SKETCH-024", 1, 26),
    ("PATTERN A, B", "CEP-SKETCH-025", 1, 10),
    ("PATTERN A; (B, C)", "CEP-SKETCH-025", 1, 14),
    ("PATTERN AND(A, SEQ(B, C))", "CEP-SKETCH-026", 1, 16),
    ("PATTERN (A; B) & C", "CEP-SKETCH-026", 1, 9),
    ("PATTERN A; AND(B, NOT(C)) WITHIN 5 SECONDS", "CEP-SKETCH-026", 1, 19),
    ("PATTERN OR(A, AND(B, C))", "CEP-SKETCH-027", 1, 15),
    ("PATTERN (A; B) | C", "CEP-SKETCH-027", 1, 9),
    ("PATTERN A; OR(B, NOT(C)); D", "CEP-SKETCH-027", 1, 18),
    ("PATTERN A; NOT(AND(B, C)); D", "CEP-SKETCH-028", 1, 16),
    ("PATTERN A; NOT(SEQ(B, C)); D", "CEP-SKETCH-028", 1, 16),
    ("PATTERN A; B WITHIN 5 SECONDS SLIDE 1 SECOND", "CEP-SKETCH-029", 1, 37),
    # Several unsupported constructs: the first one in the text is reported.
    ("PATTERN A+; B WHERE A.x > 1", "CEP-SKETCH-022", 1, 10),
    ("PATTERN A; B DEFINE B AS y = 1 WHERE A.x > 1", "CEP-SKETCH-021", 1, 21),
]


@pytest.mark.parametrize(("text", "code", "line", "column"), GOLDEN_ERRORS)
def test_golden_errors(text: str, code: str, line: int, column: int) -> None:
    with pytest.raises(UnsupportedSketchPatternError) as info:
        compile_sketch_query(text)
    err = info.value
    assert (err.code, err.line, err.column) == (code, line, column)
    assert isinstance(err, PatternError)
    assert str(err).startswith(f"{code}: line {line}, column {column}: a sketch cannot answer")
    assert "^" in err.snippet


def test_parse_errors_stay_pattern_errors() -> None:
    with pytest.raises(PatternError) as info:
        compile_sketch_query("PATTERN A; !B")  # NOT at the end without WITHIN
    assert info.value.code == "CEP-PAT-206"


def test_argument_errors() -> None:
    with pytest.raises(SketchPolicyError) as info:
        compile_sketch_query("PATTERN A; B WHERE strict-contiguity", ANY)
    assert info.value.code == "CEP-SKETCH-037"
    with pytest.raises(SketchArgumentError, match="unknown policy"):
        compile_sketch_query("PATTERN A; B", "greedy")
    with pytest.raises(SketchArgumentError, match="grouped Kleene"):  # needs every event
        compile_sketch_query("PATTERN A; B WHERE skip-till-any-match-grouped")
    q = compile_sketch_query("PATTERN A; B")
    with pytest.raises(SketchArgumentError, match="mode"):
        evaluate_units(q, leaf_units(NAMES, TS, 2), mode="count")
    with pytest.raises(SketchArgumentError, match="level"):
        cut(FakeTree.build(NAMES, TS, 2), ["A"], -1)
    with pytest.raises(SketchArgumentError, match="membership"):
        cut(FakeTree.build(NAMES, TS, 2), ["A"], 0, membership="exact")


# ---------------------------------------------------------------------------------------------
# A stand-in tree: the rule of docs/sketch.md section 3 over a toy Bloom filter
# ---------------------------------------------------------------------------------------------


@dataclass
class FakeLeaf:
    """The open leaf of a :class:`FakeTree`."""

    index: int
    pos_start: int
    pos_end: int
    ts_start: int
    ts_end: int
    n_events: int
    bits: int
    exact: frozenset[str]
    bits_of: dict[str, int]

    def member(self, name: str) -> bool:
        b = self.bits_of.get(name, 0)
        return b != 0 and self.bits & b == b

    def twin_member(self, name: str) -> bool:
        return name in self.exact


class FakeTree:
    """Columnar tree with the API of ``cep.sketch.tree``: node (L, g) exists when its ``fanout``
    children exist and the OR of their bits has at most ``m / 2`` bits set."""

    def __init__(self, rows: list[tuple[int, int, int, int, int, int, int, frozenset[str]]], fanout: int,
                 bits_of: dict[str, int], open_leaf: FakeLeaf | None) -> None:
        self.fanout = fanout
        self.bits_of = bits_of
        self.level = np.array([r[0] for r in rows], dtype=np.int8)
        self.index = np.array([r[1] for r in rows], dtype=np.int64)
        self.node_id = make_node_id(self.level, self.index)
        self.pos_start, self.pos_end, self.ts_start, self.ts_end, = (
            np.array([r[i] for r in rows], dtype=np.int64) for i in (2, 3, 4, 5))
        self.bits = [r[6] for r in rows]
        self.exact = [r[7] for r in rows]
        ids = set(self.node_id.tolist())
        parent = make_node_id(self.level.astype(np.int64) + 1, self.index // fanout)
        self.is_top = np.array([int(p) not in ids for p in parent], dtype=bool)
        self.open_leaf = open_leaf

    def member(self, name: str) -> np.ndarray:
        b = self.bits_of.get(name, 0)
        return np.array([b != 0 and bits & b == b for bits in self.bits], dtype=bool)

    def twin_member(self, name: str) -> np.ndarray:
        return np.array([name in s for s in self.exact], dtype=bool)

    def rows_of(self, ids: np.ndarray) -> np.ndarray:
        where = {int(i): r for r, i in enumerate(self.node_id.tolist())}
        return np.array([where.get(int(i), -1) for i in np.asarray(ids).tolist()], dtype=np.int64)

    def top_rows(self) -> np.ndarray:
        rows = np.flatnonzero(self.is_top)
        return rows[np.argsort(self.pos_start[rows], kind="stable")]

    def child_rows(self, rows: np.ndarray, offset: np.ndarray) -> np.ndarray:
        level = self.level[rows].astype(np.int64)
        return self.rows_of(make_node_id(level - 1, self.index[rows] * self.fanout + offset))

    @staticmethod
    def build(names: Sequence[str], ts: Sequence[int], window: int, fanout: int = 2, m: int = 16,
              bits_of: dict[str, int] | None = None) -> FakeTree:
        alphabet = sorted(set(names))
        if bits_of is None:
            bits_of = {n: 1 << (i % m) for i, n in enumerate(alphabet)}
        n_full = len(names) // window
        nodes: dict[tuple[int, int], tuple] = {}
        for j in range(n_full):
            s, e = j * window, j * window + window - 1
            exact = frozenset(names[s:e + 1])
            bits = 0
            for name in exact:
                bits |= bits_of[name]
            nodes[(0, j)] = (0, j, s, e, int(ts[s]), int(ts[e]), bits, exact)
        level, count = 0, n_full
        while count >= fanout:
            level += 1
            made = 0
            for g in range(count // fanout):
                kids = [nodes.get((level - 1, g * fanout + c)) for c in range(fanout)]
                if any(k is None for k in kids):
                    continue
                bits = 0
                for k in kids:
                    bits |= k[6]
                if bin(bits).count("1") > m // 2:
                    continue
                nodes[(level, g)] = (level, g, kids[0][2], kids[-1][3], kids[0][4], kids[-1][5], bits,
                                     frozenset().union(*(k[7] for k in kids)))
                made += 1
            if not made:
                break
            count = count // fanout
        leaf = None
        if len(names) % window:
            s, e = n_full * window, len(names) - 1
            exact = frozenset(names[s:])
            bits = 0
            for name in exact:
                bits |= bits_of[name]
            leaf = FakeLeaf(n_full, s, e, int(ts[s]), int(ts[e]), e - s + 1, bits, exact, bits_of)
        return FakeTree(list(nodes.values()), fanout, bits_of, leaf)


def test_fake_tree_cut_by_hand() -> None:
    # 8 events, C = 2, fanout 2, 4 bits: A, B, C, x each one bit; merges need <= 2 bits set.
    names = ["A", "A", "B", "B", "x", "x", "C", "x"]
    tree = FakeTree.build(names, range(8), 2, m=4, bits_of={"A": 1, "B": 2, "C": 4, "x": 8})
    # Leaves {A} {B} {x} {C,x}; (1,0) = {A,B} (2 bits), (1,1) = {x,C} (2 bits); (2,0) has 4 bits: no.
    assert sorted((int(a), int(b)) for a, b in zip(tree.level, tree.index)) == [
        (0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1)]
    top = cut(tree, ["A", "B"], 1, prune=False)
    assert [int(i) >> LEVEL_SHIFT for i in top.node_id] == [1, 1]
    full = cut(tree, ["A"], 0, prune=False)
    assert full.pos_start.tolist() == [0, 2, 4, 6] and full.has("A").tolist() == [True, False, False, False]
    pruned = cut(tree, ["A"], 0)
    # (1,0) holds A: expanded; (1,1) holds no A: stays one unit.
    assert pruned.node_id.tolist() == [0, 1, (1 << LEVEL_SHIFT) | 1]
    assert pruned.has("A").tolist() == [True, False, False]


def test_open_leaf_is_the_last_unit() -> None:
    tree = FakeTree.build(list("ABABA"), [0, 1, 2, 3, 4], 2)
    units = cut(tree, ["A", "B"], 0)
    assert units.pos_start.tolist() == [0, 2, 4] and units.pos_end.tolist() == [1, 3, 4]
    assert units.node_id.tolist()[-1] == 2 and units.has("A").tolist() == [True, True, True]
    q = compile_sketch_query("PATTERN B; A", ANY)
    assert records(evaluate_sketch(q, tree, membership="twin")) == [(0, 3, 0, 3, (0, 1)), (0, 4, 0, 4, (0, 2)),
                                                                     (2, 4, 2, 4, (1, 2))]


def test_real_tree_by_hand() -> None:
    # C = 2, f = 2: leaves {A,B} {A,C} merge into (1,0); {B,D} is the leaf (0,2); E is open.
    tree = SketchTree.build(["A", "B", "A", "C", "B", "D", "E"], range(7), SketchConfig(m=64, k=2, C=2))
    one = (1 << LEVEL_SHIFT) | 0

    def twin(text: str, level: int) -> list[tuple]:
        return records(evaluate_sketch(compile_sketch_query(text, ANY), tree, level=level, membership="twin"))

    assert twin("PATTERN A; D", 0) == [(0, 5, 0, 5, (0, 2)), (2, 5, 2, 5, (1, 2))]
    assert twin("PATTERN A; D", 1) == [(0, 5, 0, 5, (one, 2))]
    # B and C are in different leaves, but in one unit at level 1: not detected there.
    assert twin("PATTERN B; C", 0) == [(0, 3, 0, 3, (0, 1))]
    assert twin("PATTERN B; C", 1) == []
    # The open leaf is the last unit (node id 3).
    assert twin("PATTERN A; E", 0) == [(0, 6, 0, 6, (0, 3)), (2, 6, 2, 6, (1, 3))]
    assert cut(tree, ["D"], 0).node_id.tolist() == [one, 2, 3]  # (1,0) holds no D: not expanded
    assert cut(tree, ["D"], 0, prune=False).node_id.tolist() == [0, 1, 2, 3]
    for text in ("PATTERN A; D", "PATTERN B; C", "PATTERN A; E"):
        for level in (0, 1):
            sketch = records(evaluate_sketch(compile_sketch_query(text, ANY), tree, level=level))
            assert set(twin(text, level)) <= set(sketch)


# ---------------------------------------------------------------------------------------------
# Property tests
# ---------------------------------------------------------------------------------------------

TEMPLATES = [
    "{X}",
    "{X}; {Y}",
    "{X}; {Y}; {Z}",
    "{X}; ({Y} | {Z})",
    "({X} | {Y}); {Z}",
    "{X}; ({Y} & {Z})",
    "({X} & {Y}); {Z}",
    "AND({X}, {Y})",
    "{X}; !{Y}; {Z}",
    "{X}; !({Y} | {W}); {Z}",
    "{X}; !{Y}; !{W}; {Z}",
    "SEQ({X}, OR({Y}, {Z}), NOT({W}), {X})",
    "{X}; ({Y} & {Z}); !{W}; {X}",
    "{X}; {Y}; !{Z}",
    "{X}; !{Y}",
]


@st.composite
def streams(draw: Callable) -> tuple[list[str], list[int], str]:
    alphabet = draw(st.sampled_from(["ABC", "ABCD", "ABCDE"]))
    n = draw(st.integers(0, 60))
    names = draw(st.lists(st.sampled_from(alphabet), min_size=n, max_size=n))
    steps = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    return names, list(itertools.accumulate(steps)), alphabet


@st.composite
def queries(draw: Callable, alphabet: str, n_events: int) -> str:
    template = draw(st.sampled_from(TEMPLATES))
    fill = {k: draw(st.sampled_from(alphabet)) for k in "XYZW"}
    text = "PATTERN " + template.format(**fill)
    trailing = template.rstrip().endswith(("!{Z}", "!{Y}"))
    if trailing or draw(st.booleans()):
        if draw(st.booleans()):
            text += f" WITHIN {draw(st.integers(1, 40))} UNITS"
        else:
            text += f" WITHIN {draw(st.integers(1, 30))} EVENTS"
    if draw(st.integers(0, 3)) == 0:
        a = draw(st.integers(0, max(n_events, 1)))
        b = draw(st.integers(a, max(n_events, 1) + 2))
        text += f" WINDOW [{a}, {b}]"
    return text


def oracle_or_reject(query: Any, units: list[OracleUnit]) -> list[tuple]:
    """The oracle's answer; the example is rejected when the oracle would enumerate too much."""
    found = oracle_or_none(query, units)
    assume(found is not None)
    return found  # type: ignore[return-value]


def oracle_or_none(query: Any, units: list[OracleUnit]) -> list[tuple] | None:
    """The oracle's answer, or None when it would enumerate more than 100,000 unit tuples."""
    try:
        return oracle_sketch_matches(query, units, max_candidates=100_000)
    except SketchLimitError:
        return None


@SETTINGS
@given(data=st.data(), stream=streams(), window=st.integers(1, 5), policy=st.sampled_from(POLICIES))
def test_leaf_level_equals_oracle(data: st.DataObject, stream: tuple, window: int, policy: str) -> None:
    names, ts, alphabet = stream
    q = compile_sketch_query(data.draw(queries(alphabet, len(names))), policy)
    expected = oracle_or_reject(q, leaf_sets(names, ts, window))
    units = leaf_units(names, ts, window)
    assert records(evaluate_units(q, units)) == expected
    assert evaluate_units(q, units, mode="exists") is bool(expected)


def exact_units(names: Sequence[str], units: Units) -> list[OracleUnit]:
    """Oracle units with the exact name sets read from the events (not from any tree)."""
    return [OracleUnit(frozenset(names[s:e + 1]), s, e, ts0, ts1, i) for s, e, ts0, ts1, i in
            zip(units.pos_start.tolist(), units.pos_end.tolist(), units.ts_start.tolist(),
                units.ts_end.tolist(), units.node_id.tolist())]


def bloom_units(q: Any, units: Units) -> list[OracleUnit]:
    """Oracle units whose sets are the Bloom memberships of the query's names."""
    return [OracleUnit(frozenset(n for n in q.names if units.has(n)[i]), int(units.pos_start[i]),
                       int(units.pos_end[i]), int(units.ts_start[i]), int(units.ts_end[i]),
                       int(units.node_id[i])) for i in range(len(units))]


def _toy_bits(alphabet: Sequence[str], m: int, seed: int) -> dict[str, int]:
    rng = np.random.default_rng(seed)
    out = {}
    for name in alphabet:
        bits = rng.choice(m, size=2, replace=False)
        out[name] = int((1 << int(bits[0])) | (1 << int(bits[1])))
    return out


def _fake_tree(names: Sequence[str], ts: Sequence[int], window: int, m: int, seed: int) -> FakeTree:
    return FakeTree.build(names, ts, window, m=m, bits_of=_toy_bits(sorted(set(names)), m, seed))


def _real_tree(names: Sequence[str], ts: Sequence[int], window: int, m: int, seed: int) -> SketchTree:
    config = SketchConfig(m=m, k=2, C=window, fanout=2, seeds=(seed, seed + 1))
    return SketchTree.build(list(names), np.asarray(ts, dtype=np.int64), config)


@pytest.mark.parametrize("factory", [_fake_tree, _real_tree], ids=["fake", "real"])
@SETTINGS
@given(data=st.data(), stream=streams(), window=st.integers(1, 4), level=st.integers(0, 2),
       policy=st.sampled_from(POLICIES), m=st.sampled_from([8, 16, 64]), seed=st.integers(0, 1000))
def test_tree_twin_sketch_and_pruning(factory: Callable, data: st.DataObject, stream: tuple, window: int,
                                      level: int, policy: str, m: int, seed: int) -> None:
    names, ts, alphabet = stream
    q = compile_sketch_query(data.draw(queries(alphabet, len(names))), policy)
    tree = factory(names, ts, window, m, seed)

    # The full cut covers the stream in order, without overlap, nothing above the level.
    full_twin = cut(tree, q.names, level, membership="twin", prune=False)
    assert full_twin.pos_start.tolist() == [0] + [e + 1 for e in full_twin.pos_end.tolist()[:-1]] \
        if len(full_twin) else not names
    assert not len(full_twin) or full_twin.pos_end[-1] == len(names) - 1
    assert (full_twin.level <= level).all()
    exact = exact_units(names, full_twin)
    for name in q.names:  # the twin's membership is the exact set of the events
        assert full_twin.has(name).tolist() == [name in u.names for u in exact]

    # Twin == brute-force oracle over the same cut (sets read from the events).
    twin = records(evaluate_sketch(q, tree, level=level, membership="twin"))
    assert twin == oracle_or_reject(q, exact)
    assert evaluate_sketch(q, tree, level=level, membership="twin", mode="exists") is bool(twin)

    # Pruning never changes the answer (twin and sketch).
    assert twin == records(evaluate_units(q, full_twin))
    full_bloom = cut(tree, q.names, level, membership="bloom", prune=False)
    sketch = records(evaluate_sketch(q, tree, level=level, membership="bloom"))
    assert sketch == records(evaluate_units(q, full_bloom))
    pruned = cut(tree, q.names, level, membership="bloom")
    assert len(pruned) <= len(full_bloom)
    named = np.zeros(len(pruned), dtype=bool)
    for name in q.names:
        named |= pruned.has(name)
    assert (pruned.level[named] <= level).all()

    # The sketch == the relaxed answer over the Bloom membership sets.
    relaxed = oracle_or_none(q, bloom_units(q, full_bloom))
    if relaxed is not None:
        assert sketch == relaxed
    if not q.negated_names:
        assert_no_false_negatives(q, twin, sketch)
        assert evaluate_sketch(q, tree, level=level, mode="exists") >= bool(twin)


def assert_no_false_negatives(q: Any, twin: list[tuple], sketch: list[tuple]) -> None:
    """NOT-free patterns: every twin match is found by the sketch (docs/sketch.md, Decisions).

    skip-till-any-match and strict-contiguity keep every binding the exact sets allow, so the
    twin's records are among the sketch's. skip-till-next-match binds the *first* unit that
    possibly holds each next component: a Bloom false positive before the true unit changes the
    binding, so the guarantee is per run: every twin match has a sketch match with the same first
    unit that ends no later.
    """
    if q.policy != NEXT:
        assert set(twin) <= set(sketch)
        return
    ends: dict[tuple[int, int], int] = {}
    for rec in sketch:
        key = (rec[0], rec[2])
        ends[key] = min(ends.get(key, rec[1]), rec[1])
    for rec in twin:
        assert (rec[0], rec[2]) in ends and ends[(rec[0], rec[2])] <= rec[1], rec
