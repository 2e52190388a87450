"""Units: the cut of a sketch tree at an accuracy level, with membership per query name.

docs/sketch.md section 4: a query at level ``λ`` is answered over the *cut* at ``λ``: start
from the top-level nodes and the open leaf, replace every node above level ``λ`` by its children,
recursively. The result is a sequence of units covering the stream in position order. Each unit
answers "does it contain name X?" from its Bloom filter (the sketch) or from its exact set (the
twin), so the same evaluation code answers both.

**Pruning.** A node that contains none of the query's names (positive or negated) is not
expanded: its children would contain none of them either (a parent's filter is the OR of its
children's, its exact set their union), so it stays one nameless unit. Every unit that contains a
query name is the same in the pruned and in the full cut, nameless stretches stay nameless and
neighbouring named units stay neighbours, so the answer does not change (tested); only the
number of units does.

:class:`Units` is a plain columnar value; :func:`cut` builds one from a tree and
:meth:`Units.from_sets` from explicit unit sets (tests, oracles, hand-built examples).

Example:
    >>> u = Units.from_sets([{"A"}, {"B", "C"}, set()], pos_start=[0, 2, 4], pos_end=[1, 3, 4],
    ...                     ts_start=[0, 20, 40], ts_end=[10, 30, 40])
    >>> len(u), u.has("B").tolist(), u.has("Z").tolist()
    (3, [False, True, False], [False, False, False])
    >>> u.node_id.tolist()  # leaves (0, j) by default: (level << 48) | index
    [0, 1, 2]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cep.sketch.query import SketchArgumentError

LEVEL_SHIFT = 48
MEMBERSHIPS = ("bloom", "twin")


def make_node_id(level: Any, index: Any) -> Any:
    """The node id ``(level << 48) | index`` (scalars or numpy arrays).

    Example:
        >>> int(make_node_id(2, 5)) == (2 << 48) | 5
        True
    """
    return (np.asarray(level, dtype=np.int64) << LEVEL_SHIFT) | np.asarray(index, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class Units:
    """A sequence of units in position order (columnar), with membership per name.

    Attributes:
        node_id: ``(level << 48) | index`` of each unit.
        level: tree level of each unit (0 for leaves and the open leaf).
        pos_start, pos_end: first and last position covered (inclusive).
        ts_start, ts_end: timestamps of the first and last event covered.
        membership: name -> bool array: the unit (possibly) contains the name. A name missing
            from the mapping is absent from every unit.
    """

    node_id: np.ndarray
    level: np.ndarray
    pos_start: np.ndarray
    pos_end: np.ndarray
    ts_start: np.ndarray
    ts_end: np.ndarray
    membership: Mapping[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.node_id.shape[0])

    def has(self, name: str) -> np.ndarray:
        """Bool array over units: the unit (possibly) contains ``name``."""
        col = self.membership.get(name)
        return np.zeros(len(self), dtype=bool) if col is None else col

    def slice(self, lo: int, hi: int) -> Units:
        """Units ``lo .. hi - 1`` (a contiguous stretch, still in position order)."""
        return Units(self.node_id[lo:hi], self.level[lo:hi], self.pos_start[lo:hi], self.pos_end[lo:hi],
                     self.ts_start[lo:hi], self.ts_end[lo:hi],
                     {k: v[lo:hi] for k, v in self.membership.items()})

    def take(self, rows: np.ndarray) -> Units:
        """The units at ``rows`` (indices in increasing order keep the position order)."""
        return Units(self.node_id[rows], self.level[rows], self.pos_start[rows], self.pos_end[rows],
                     self.ts_start[rows], self.ts_end[rows],
                     {k: v[rows] for k, v in self.membership.items()})

    @staticmethod
    def from_sets(sets: Sequence[Iterable[str]], *, pos_start: Sequence[int], pos_end: Sequence[int],
                  ts_start: Sequence[int], ts_end: Sequence[int], node_id: Sequence[int] | None = None,
                  level: Sequence[int] | None = None) -> Units:
        """Units from explicit name sets (one per unit, in position order).

        Args:
            sets: the names of each unit.
            pos_start, pos_end, ts_start, ts_end: the unit intervals.
            node_id: node ids; default: leaves ``(0, j)``.
            level: levels; default: derived from ``node_id``.
        """
        n = len(sets)
        frozen = [frozenset(s) for s in sets]
        names = sorted(set().union(*frozen)) if frozen else []
        membership = {name: np.fromiter((name in s for s in frozen), dtype=bool, count=n) for name in names}
        ids = np.arange(n, dtype=np.int64) if node_id is None else np.asarray(node_id, dtype=np.int64)
        lev = (ids >> LEVEL_SHIFT).astype(np.int8) if level is None else np.asarray(level, dtype=np.int8)
        return Units(ids, lev, *(np.asarray(a, dtype=np.int64).reshape(n)
                                 for a in (pos_start, pos_end, ts_start, ts_end)), membership)


def leaf_units(names: Sequence[str], ts: Sequence[int], window: int) -> Units:
    """The exact leaf units (level 0) of one stream, straight from its events (no tree).

    Leaf ``j`` holds positions ``j*C .. j*C + C - 1``; the last one may be the open leaf.

    Args:
        names: event names in position order.
        ts: timestamps in position order (non-decreasing).
        window: the leaf size ``C``.

    Example:
        >>> u = leaf_units(list("ABCAB"), [0, 1, 2, 3, 4], 2)
        >>> u.pos_start.tolist(), u.pos_end.tolist(), u.has("A").tolist()
        ([0, 2, 4], [1, 3, 4], [True, True, False])
    """
    if window < 1:
        raise SketchArgumentError(f"the leaf size C must be at least 1, not {window}")
    n = len(names)
    ts_arr = np.asarray(ts, dtype=np.int64).reshape(n)
    starts = np.arange(0, n, window, dtype=np.int64)
    ends = np.minimum(starts + window - 1, n - 1)
    leaf_of = np.arange(n, dtype=np.int64) // window
    membership: dict[str, np.ndarray] = {}
    names_arr = np.asarray(names, dtype=object)
    for name in dict.fromkeys(names):
        col = np.zeros(starts.shape[0], dtype=bool)
        col[leaf_of[names_arr == name]] = True
        membership[name] = col
    return Units(make_node_id(0, np.arange(starts.shape[0])), np.zeros(starts.shape[0], dtype=np.int8),
                 starts, ends, ts_arr[starts] if n else starts, ts_arr[ends] if n else ends, membership)


def cut(tree: Any, names: Sequence[str], level: int = 0, *, membership: str = "bloom",
        prune: bool = True) -> Units:
    """The units of ``tree`` at accuracy level ``level``, with membership for ``names``.

    Args:
        tree: a sketch tree of one stream (:class:`cep.sketch.tree.SketchTree`): columnar node
            arrays (``level``, ``index``, ``node_id``, intervals), ``fanout``, ``member`` /
            ``twin_member`` (bool per node), ``top_rows()`` (in position order),
            ``child_rows(rows, offset)`` (the row of one child per row, -1 when absent) and
            ``open_leaf``.
        names: the names the query mentions (positive and negated).
        level: the accuracy level ``λ >= 0``; nodes above it are replaced by their children.
        membership: ``"bloom"`` (the sketch: possibly present) or ``"twin"`` (exact sets).
        prune: do not expand nodes that contain none of ``names`` (same answer, fewer units).

    Returns:
        The units in position order, the open leaf (if any) last.

    Raises:
        SketchArgumentError: negative level or unknown membership.
    """
    if isinstance(level, bool) or not isinstance(level, (int, np.integer)) or level < 0:
        raise SketchArgumentError(f"the accuracy level must be an integer >= 0, not {level!r}")
    if membership not in MEMBERSHIPS:
        raise SketchArgumentError(f"membership must be one of {', '.join(MEMBERSHIPS)}, not {membership!r}")
    names = list(dict.fromkeys(names))
    test = tree.member if membership == "bloom" else tree.twin_member
    node_member = {name: np.asarray(test(name), dtype=bool) for name in names}
    n_nodes = int(np.asarray(tree.node_id).shape[0])
    needed = np.zeros(n_nodes, dtype=bool)
    for col in node_member.values():
        needed |= col

    node_level = np.asarray(tree.level, dtype=np.int64)
    node_ids = np.asarray(tree.node_id, dtype=np.int64)
    fanout = int(tree.fanout)

    def children(parents: np.ndarray, offset: np.ndarray) -> np.ndarray:
        # child_rows knows the tree's merge rule (aligned groups or the thesis's neighbours).
        found = np.asarray(tree.child_rows(parents, offset), dtype=np.int64)
        if (found < 0).any():
            raise SketchArgumentError("the tree is missing children of an existing node")
        return found

    rows = expand_rows(np.asarray(tree.top_rows(), dtype=np.int64), node_level, needed if prune
                       else None, level, fanout, children)

    units = Units(node_ids[rows], node_level[rows].astype(np.int8),
                  *(np.asarray(getattr(tree, a), dtype=np.int64)[rows]
                    for a in ("pos_start", "pos_end", "ts_start", "ts_end")),
                  {name: col[rows] for name, col in node_member.items()})
    return _with_open_leaf(units, tree, names, membership)


def expand_rows(rows: np.ndarray, node_level: np.ndarray, needed: np.ndarray | None, level: int,
                fanout: int, children: Any) -> np.ndarray:
    """The cut's loop: replace every row above ``level`` (and ``needed``, when given) by its
    ``fanout`` children, in place, until none is left to expand.

    Args:
        rows: The starting rows (the top-level nodes), in position order.
        node_level: The level of every row.
        needed: Rows worth expanding (holding a query name), or None for all.
        level: The accuracy level.
        fanout: Children per node.
        children: ``children(parents, offset)``: the row of child ``offset`` of each parent.

    Example:
        >>> levels = np.array([0, 0, 1])  # two leaves under one parent, post-order
        >>> expand_rows(np.array([2]), levels, None, 0, 2, lambda p, o: p - 2 + o).tolist()
        [0, 1]
    """
    while rows.size:
        expand = node_level[rows] > level
        if needed is not None:
            expand &= needed[rows]
        if not expand.any():
            break
        counts = np.where(expand, fanout, 1)
        parent = np.repeat(rows, counts)
        split = np.repeat(expand, counts)
        offset = np.arange(parent.shape[0]) - np.repeat(np.cumsum(counts) - counts, counts)
        rows = parent.copy()
        rows[split] = children(parent[split], offset[split])
    return rows


def _with_open_leaf(units: Units, tree: Any, names: Sequence[str], membership: str) -> Units:
    """Append the open leaf of ``tree`` (if it holds events) as the last unit."""
    leaf = getattr(tree, "open_leaf", None)
    if leaf is None or not int(getattr(leaf, "n_events", 0)):
        return units
    test = leaf.member if membership == "bloom" else leaf.twin_member
    extra = {name: np.array([bool(test(name))]) for name in names}

    def add(a: np.ndarray, v: int) -> np.ndarray:
        return np.concatenate([a, np.array([v], dtype=a.dtype)])

    return Units(add(units.node_id, int(make_node_id(0, leaf.index))), add(units.level, 0),
                 add(units.pos_start, int(leaf.pos_start)), add(units.pos_end, int(leaf.pos_end)),
                 add(units.ts_start, int(leaf.ts_start)), add(units.ts_end, int(leaf.ts_end)),
                 {name: np.concatenate([units.has(name), extra[name]]) for name in names})
