"""cep.sketch.forest + evaluate_streams: many streams at once == one stream at a time.

The per-stream path (``stored_tree`` + ``evaluate_sketch``) is the reference: it is itself
tested against the exact-set oracle. On random streams, rows in random order, every policy,
windows, NOT, AND/OR and levels, the batch answers each stream exactly as it does; on rows
damaged at random, the batch either refuses them (``None``: the caller takes the per-stream
path, which names the fault) or every stream is accepted by the per-stream path too and
answered the same.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cep.sketch import CorruptSketchError, SketchConfig, SketchTree, compile_sketch_query, evaluate_sketch
from cep.sketch.evaluate import evaluate_streams
from cep.sketch.forest import cut_forest, restore_forest, stored_columns
from cep.sketch.stored import config_of_rows, stored_tree

QUERIES = (
    "PATTERN A; B",
    "PATTERN A; B; C",
    "PATTERN SEQ(A, OR(B, C), NOT(D), E)",
    "PATTERN A; (B & C)",
    "PATTERN (A & B); C",
    "PATTERN A; !D; B WITHIN 5 EVENTS",
    "PATTERN A; B; !C WITHIN 6 EVENTS",
    "PATTERN A; B WITHIN 4 SECONDS",
    "PATTERN A; C; !E WITHIN 3 SECONDS",
    "PATTERN A; B; C WINDOW [3, 20]",
    "PATTERN (B | C); A; D",
)
POLICIES = ("skip-till-next-match", "skip-till-any-match", "strict-contiguity")
ROW_COLUMNS = ("node_id", "level", "idx", "pos_start", "pos_end", "ts_start", "ts_end", "n_events",
               "is_top", "is_open")


def make_streams(rnd: random.Random) -> tuple[list[SketchTree], SketchConfig]:
    cfg = SketchConfig(m=rnd.choice((32, 64)), k=2, C=rnd.choice((2, 3)),
                       fanout=rnd.choice((2, 3)), seeds=tuple(rnd.sample(range(100), 2)))
    trees = []
    for _ in range(rnd.randint(1, 6)):
        n = rnd.randint(1, 40)
        names = rnd.choices("ABCDE", weights=(4, 3, 2, 2, 1), k=n)
        ts = np.cumsum([rnd.choice((0, 1, 1, 2)) * 1_000_000 for _ in range(n)])
        trees.append(SketchTree.build(names, ts, cfg))
    return trees, cfg


def shuffled(cols: dict[str, np.ndarray], bits: np.ndarray, bounds: np.ndarray,
             rnd: random.Random) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The rows in a random order within each stream (the table has no row order)."""
    order = np.concatenate([lo + np.array(rnd.sample(range(hi - lo), hi - lo), dtype=np.int64)
                            for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist())])
    return {c: v[order] for c, v in cols.items()}, bits[order]


def per_stream(cols: dict[str, np.ndarray], bits: np.ndarray, bounds: np.ndarray, query: str,
               policy: str, level: int, mode: str) -> list:
    """The reference answers, one stream at a time (raises on rows it refuses)."""
    answers = []
    for s, (lo, hi) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist())):
        config = config_of_rows(s, m=cols["m"][lo:hi], k=cols["k"][lo:hi],
                                seeds=cols["seeds"][lo:hi],
                                config_version=cols["config_version"][lo:hi],
                                level=cols["level"][lo:hi], n_events=cols["n_events"][lo:hi],
                                is_open=cols["is_open"][lo:hi])
        tree = stored_tree(s, config, {c: cols[c][lo:hi] for c in ROW_COLUMNS}, bits[lo:hi],
                           ts_valid=cols["ts_valid"][lo:hi])
        answers.append(evaluate_sketch(query, tree, level=level, mode=mode, policy=policy))
    return answers


def batch(forest, query: str, policy: str, level: int, mode: str) -> list:
    q = compile_sketch_query(query, policy)
    units, unit_bounds = cut_forest(forest, q.names, level)
    found = evaluate_streams(q, units, unit_bounds, mode=mode)
    if mode == "exists":
        return [bool(x) for x in found]
    out = []
    for s in range(forest.n_streams):
        rows = found.stream == s
        m = found.matches
        out.append([(a, b, c, d, tuple(i)) for a, b, c, d, i in zip(
            m.pos_start[rows].tolist(), m.pos_end[rows].tolist(), m.ts_start[rows].tolist(),
            m.ts_end[rows].tolist(), m.node_ids[rows].tolist())])
    return out


def as_lists(answers: list, mode: str) -> list:
    if mode == "exists":
        return [bool(a) for a in answers]
    return [[(r.pos_start, r.pos_end, r.ts_start, r.ts_end, r.node_ids) for r in a.rows()]
            for a in answers]


@given(st.randoms(use_true_random=False), st.sampled_from(QUERIES), st.sampled_from(POLICIES),
       st.integers(0, 2), st.sampled_from(("exists", "intervals")))
@settings(max_examples=300, deadline=None)
def test_many_streams_at_once_answer_as_one_at_a_time(rnd, query, policy, level, mode) -> None:
    trees, _ = make_streams(rnd)
    cols, bits, bounds = stored_columns(trees)
    cols, bits = shuffled(cols, bits, bounds, rnd)
    forest = restore_forest(cols, bits, bounds)
    assert forest is not None, "intact rows of one configuration take the batch path"
    expected = as_lists(per_stream(cols, bits, bounds, query, policy, level, mode), mode)
    assert batch(forest, query, policy, level, mode) == expected


def damage(cols: dict[str, np.ndarray], bits: np.ndarray, bounds: np.ndarray,
           rnd: random.Random) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """One random fault: a row deleted or repeated, a field moved by one, a flag flipped."""
    cols = {c: v.copy() for c, v in cols.items()}
    row = rnd.randrange(int(bounds[-1]))
    kind = rnd.choice(("delete", "repeat", "field", "flag", "config"))
    stream = int(np.searchsorted(bounds, row, side="right")) - 1
    if kind in ("delete", "repeat"):
        keep = np.arange(int(bounds[-1]))
        keep = np.delete(keep, row) if kind == "delete" else np.insert(keep, row, row)
        sizes = np.diff(bounds)
        sizes[stream] += -1 if kind == "delete" else 1
        if (sizes < 1).any():  # a stream with no row left is no stream
            sizes = sizes[sizes > 0]
        return ({c: v[keep] for c, v in cols.items()}, bits[keep],
                np.concatenate(([0], np.cumsum(sizes))).astype(np.int64))
    if kind == "field":
        name = rnd.choice(("idx", "level", "pos_start", "pos_end", "ts_start", "ts_end",
                           "n_events"))
        cols[name][row] += rnd.choice((-1, 1))
        if rnd.random() < 0.5 and name in ("idx", "level"):  # keep node_id consistent
            cols["node_id"][row] = (cols["level"][row] << 48) | cols["idx"][row]
    elif kind == "flag":
        name = rnd.choice(("is_top", "is_open"))
        cols[name][row] = ~cols[name][row]
    else:
        cols[rnd.choice(("m", "k", "config_version"))][row] += 1
    return cols, bits, bounds


@given(st.randoms(use_true_random=False), st.sampled_from(QUERIES), st.sampled_from(POLICIES),
       st.sampled_from(("exists", "intervals")))
@settings(max_examples=300, deadline=None)
def test_damaged_rows_are_refused_or_answered_as_one_at_a_time(rnd, query, policy, mode) -> None:
    trees, _ = make_streams(rnd)
    cols, bits, bounds = stored_columns(trees)
    cols, bits, bounds = damage(cols, bits, bounds, rnd)
    try:
        forest = restore_forest(cols, bits, bounds)
    except Exception as exc:  # noqa: BLE001 - the batch must never raise: it hands over
        pytest.fail(f"restore_forest raised {exc!r}")
    try:
        expected = as_lists(per_stream(cols, bits, bounds, query, policy, 0, mode), mode)
    except CorruptSketchError:
        assert forest is None, "the per-stream path refuses these rows; the batch must too"
        return
    if forest is not None:
        assert batch(forest, query, policy, 0, mode) == expected


def test_a_deleted_node_row_is_refused() -> None:
    tree = SketchTree.build(list("ABCDEABCDEAB"), range(12), SketchConfig(m=64, k=2, C=2))
    cols, bits, bounds = stored_columns([tree, tree])
    keep = np.delete(np.arange(int(bounds[-1])), 1)
    cut = {c: v[keep] for c, v in cols.items()}
    assert restore_forest(cut, bits[keep], bounds - np.array([0, 1, 1])) is None
    with pytest.raises(CorruptSketchError, match="is missing under the top-level node"):
        per_stream(cut, bits[keep], bounds - np.array([0, 1, 1]), "PATTERN A; B",
                   "skip-till-next-match", 0, "exists")
