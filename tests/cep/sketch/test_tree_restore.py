"""Twin-less trees restored from stored columns (SketchTree.restore / frontier), no JVM.

The incremental job keeps only the top-level rows and the open leaf of each stream in memory:
appending to that frontier must add exactly the rows (and clear exactly the ``is_top`` flags)
that appending to the full tree does.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cep.sketch.config import SketchConfig
from cep.sketch.errors import CorruptSketchError, TwinUnavailableError
from cep.sketch.tree import SketchTree
from cep.sketch.units import cut
from tests.cep.sketch.test_tree import CONFIGS, EVENTS, _stream

NODE_COLUMNS = ("level", "index", "node_id", "pos_start", "pos_end", "ts_start", "ts_end",
                "n_events", "bits", "is_top")
RESTORE_COLUMNS = ("level", "index", "pos_start", "pos_end", "ts_start", "ts_end", "n_events",
                   "is_top", "bits")


def new_rows(before: SketchTree, after: SketchTree) -> dict[str, list]:
    """The rows an append added, and the node ids whose is_top it cleared (with parents)."""
    n0 = before.n_nodes
    rows = {name: np.asarray(getattr(after, name))[n0:].tolist() for name in NODE_COLUMNS}
    rows["parent_id"] = after.parent_ids()[n0:].tolist()
    cleared = np.flatnonzero(np.asarray(before.is_top) & ~np.asarray(after.is_top)[:n0])
    rows["cleared"] = sorted(zip(after.node_id[cleared].tolist(),
                                 after.parent_ids()[cleared].tolist()))
    leaf = after.open_leaf
    rows["open"] = [leaf.index, leaf.pos_start, leaf.names, leaf.ts.tolist(),
                    leaf.bits.tolist()]
    return rows


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(EVENTS, CONFIGS, st.integers(0, 200), st.integers(0, 200))
def test_frontier_append_rows_equal_full_append_rows(events, cfg: SketchConfig, a: int,
                                                     b: int) -> None:
    names, ts = _stream(events)
    lo, hi = sorted((min(a, len(names)), min(b, len(names))))
    full = SketchTree.build(names[:lo], ts[:lo], cfg)
    front = full.frontier()
    assert front.n_nodes == int(full.is_top.sum()) and not front.has_twin
    assert front.is_top.all() and front.open_leaf == full.open_leaf
    grown_full = full.append(names[lo:hi], ts[lo:hi])
    grown_front = front.append(names[lo:hi], ts[lo:hi])
    assert new_rows(front, grown_front) == new_rows(full, grown_full)
    # And the frontier of the result is the frontier of the full result.
    assert grown_front.frontier() == grown_full.frontier()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(EVENTS, CONFIGS, st.lists(st.integers(0, 200), max_size=6))
def test_chained_frontier_appends_give_the_one_pass_tree(events, cfg: SketchConfig,
                                                         cuts: list[int]) -> None:
    """Restoring the frontier before each batch (as the job does), then applying each batch's
    rows by node id, gives every row of the one-pass tree."""
    names, ts = _stream(events)
    bounds = [0] + sorted(min(c, len(names)) for c in cuts) + [len(names)]
    table: dict[int, tuple] = {}
    front = SketchTree.empty(cfg).frontier()
    for lo, hi in zip(bounds, bounds[1:]):
        grown = front.append(names[lo:hi], ts[lo:hi])
        n0 = front.n_nodes
        changed = np.flatnonzero(np.asarray(front.is_top) & ~np.asarray(grown.is_top)[:n0])
        parent = grown.parent_ids()
        for row in list(changed) + list(range(n0, grown.n_nodes)):
            table[int(grown.node_id[row])] = tuple(
                np.asarray(getattr(grown, name))[row].tolist() for name in NODE_COLUMNS
            ) + (int(parent[row]),)
        front = grown.frontier()
    whole = SketchTree.build(names, ts, cfg)
    parent = whole.parent_ids()
    expected = {int(whole.node_id[r]): tuple(np.asarray(getattr(whole, name))[r].tolist()
                                             for name in NODE_COLUMNS) + (int(parent[r]),)
                for r in range(whole.n_nodes)}
    assert table == expected
    assert front.open_leaf == whole.open_leaf


def columns_of(tree: SketchTree, rows: np.ndarray | None = None) -> dict[str, np.ndarray]:
    rows = np.arange(tree.n_nodes) if rows is None else rows
    return {name: np.asarray(getattr(tree, name))[rows] for name in RESTORE_COLUMNS}


def test_query_tree_restored_from_all_rows_cuts_like_the_original() -> None:
    cfg = SketchConfig(m=64, k=2, C=3)
    rng = np.random.default_rng(3)
    names = [str(x) for x in rng.choice(list("ABCDEFGHIJ"), 301)]
    ts = np.sort(rng.integers(0, 10_000, 301))
    tree = SketchTree.build(names, ts, cfg)
    leaf = tree.open_leaf
    # Rows in any order: restore puts them in post-order.
    shuffled = rng.permutation(tree.n_nodes)
    restored = SketchTree.restore(
        cfg, columns_of(tree, shuffled), open_index=tree.n_full_leaves,
        open_summary=(leaf.n_events, leaf.ts_start, leaf.ts_end, leaf.bits))
    assert np.array_equal(restored.node_id, tree.node_id)
    assert np.array_equal(restored.bits, tree.bits)
    assert restored.open_leaf.names is None and restored.open_leaf.n_events == leaf.n_events
    assert restored.n_stream_events == 301
    for level in (0, 1, 3):
        for name in ("A", "J", "nope"):
            a, b = cut(tree, [name], level), cut(restored, [name], level)
            assert np.array_equal(a.node_id, b.node_id) and np.array_equal(a.has(name), b.has(name))
            assert np.array_equal(a.ts_end, b.ts_end)
    with pytest.raises(TwinUnavailableError, match="CEP-SKETCH-004"):
        restored.twin_member("A")
    with pytest.raises(TwinUnavailableError):
        restored.twin_names(0)
    with pytest.raises(TwinUnavailableError):
        restored.open_leaf.twin_member("A")
    with pytest.raises(TwinUnavailableError, match="open leaf"):
        restored.append(["A"], [ts[-1] + 1])
    assert restored.append([], []) is restored


def test_twin_less_trees_stay_twin_less() -> None:
    cfg = SketchConfig(m=64, k=2, C=2)
    grown = SketchTree.build(list("ABCD"), range(4), cfg).frontier().append(list("EF"), [4, 5])
    assert not grown.has_twin and grown.stats()["twin_pairs"] == 0
    with pytest.raises(TwinUnavailableError, match="twin_member"):
        grown.twin_member_matrix(["A"])
    assert grown.member("E").any()


def test_restore_rejects_columns_that_are_not_one_tree() -> None:
    cfg = SketchConfig(m=16, k=2, C=2)
    tree = SketchTree.build(list("ABCDEFGHI"), range(9), cfg)
    tops = tree.top_rows()
    assert len(tops) == 2

    def restore(cols: dict, open_index: int = tree.n_full_leaves, **kw) -> SketchTree:
        kw.setdefault("open_names", ["I"])
        kw.setdefault("open_ts", [8])
        return SketchTree.restore(cfg, cols, open_index=open_index, **kw)

    assert restore(columns_of(tree, tops)) == tree.frontier()
    bad = columns_of(tree, tops)
    bad["pos_end"] = bad["pos_end"] + 1
    with pytest.raises(CorruptSketchError, match="level and index say"):
        restore(bad)
    with pytest.raises(CorruptSketchError, match="cover positions"):
        restore(columns_of(tree, tops[1:]))
    with pytest.raises(CorruptSketchError, match="cover positions"):
        restore(columns_of(tree, tops), open_index=tree.n_full_leaves + 1)
    with pytest.raises(CorruptSketchError, match="appears twice"):
        restore(columns_of(tree, np.concatenate((tops, tops[:1]))))
    short = columns_of(tree, tops)
    short["bits"] = short["bits"][:, :1]
    with pytest.raises(CorruptSketchError, match="bits must have shape"):
        restore(short)
    with pytest.raises(CorruptSketchError, match="full at C=2"):
        restore(columns_of(tree, tops), open_names=["I", "J"], open_ts=[8, 9])
    with pytest.raises(CorruptSketchError, match="before the last node ends"):
        restore(columns_of(tree, tops), open_ts=[0])
    with pytest.raises(CorruptSketchError, match="last_ts"):
        restore(columns_of(tree, tops), last_ts=3)
    with pytest.raises(TwinUnavailableError, match="not both"):
        restore(columns_of(tree, tops), open_summary=(0, None, None, bytes(2)))
    with pytest.raises(CorruptSketchError, match="no node rows"):
        SketchTree.restore(cfg, columns_of(tree, np.zeros(0, dtype=np.int64)), open_index=2)
    # Filters may come as stored byte strings.
    blobs = columns_of(tree, tops)
    blobs["bits"] = [row.tobytes() for row in blobs["bits"]]
    assert restore(blobs) == tree.frontier()
    # A later append may not go back before last_ts.
    front = restore(columns_of(tree, tops), last_ts=20)
    with pytest.raises(Exception, match="CEP-SKETCH-003"):
        front.append(["Z"], [19])
