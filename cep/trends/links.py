"""How events of an ABI graph can link: tie groups, join keys and range coordinates.

The counter, the pre-filter and the edge enumerator all reduce a conjunction of predicates to
the same three ingredients (vectorised, ``O(n log n)``):

- **tie groups**: events of one window with equal timestamps; an edge ``j -> k`` needs
  ``ts(j) < ts(k)``, i.e. ``j < tie_start[k]`` (positions are sorted by (window, ts)), and the
  successors of ``j`` start at ``tie_end[j]``;
- **join keys**: every ``=`` predicate and the window together form one key: ``key_out[j]``
  (the vertex of ``rval(j)`` in each ``=`` index, and ``j``'s window) must equal
  ``key_in[k]`` (the vertex holding ``lval(k)`` in each index, and ``k``'s window). -1 marks
  an event that cannot link that way (a NULL value, no matching value, an empty range);
- **range predicates** (every comparator other than ``=``): kept as attribute indexes; a
  single one is turned into coordinates ``dep[j] <= qry[k]`` (:func:`range_coordinates`).

Example:
    >>> import numpy as np
    >>> from cep.trends.graph import build_graph
    >>> g = build_graph("PATTERN s+ WHERE s[i].a = s[i-1].b", np.array([1, 1, 2]),
    ...                 {"a": np.array([7, 8, 9]), "b": np.array([9, 7, 0])})
    >>> ln = links(g)
    >>> ln.tie_start.tolist(), ln.tie_end.tolist(), ln.key_in.tolist(), ln.key_out.tolist()
    ([0, 0, 2], [2, 2, 3], [1, -1, 2], [2, 1, 0])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cep.trends.graph import LEFT_OPEN, POINTS, POINTS_AND_GAPS, RIGHT_OPEN, AttributeIndex, TrendGraph


@dataclass(frozen=True)
class Links:
    """Tie groups, join keys and the range predicates of a graph (module docstring).

    Attributes:
        tie_start: per event, the first position of its (window, ts) group.
        tie_end: per event, one past the last position of its group.
        key_in: per event, the key a predecessor must offer (-1: no predecessor possible).
        key_out: per event, the key it offers successors (-1: no successor possible).
        n_keys: keys are ``0 .. n_keys - 1``.
        ranges: the attribute indexes of the predicates other than ``=``.
    """

    tie_start: np.ndarray
    tie_end: np.ndarray
    key_in: np.ndarray
    key_out: np.ndarray
    n_keys: int
    ranges: tuple[AttributeIndex, ...]

    @property
    def has_ties(self) -> bool:
        """True when some tie group holds more than one event."""
        return bool(np.any(self.tie_end - self.tie_start > 1))


def links(graph: TrendGraph) -> Links:
    """Compute the :class:`Links` of ``graph``."""
    n = graph.n_events
    tie_start, tie_end = tie_groups(graph.window, graph.ts)
    equal = [ix for ix in graph.indexes if ix.shape == POINTS]
    ranges = tuple(ix for ix in graph.indexes if ix.shape != POINTS)
    if not equal:
        key_in = graph.window.astype(np.int64).copy()
        key_out = graph.window.astype(np.int64).copy()
        n_keys = graph.n_windows
    elif len(equal) == 1:
        # The vertex numbers already tell windows apart (each window has its own block).
        key_in = equal[0].from_vertex.copy()
        key_out = np.where(equal[0].to_lo < equal[0].to_hi, equal[0].to_lo, -1)
        n_keys = equal[0].n_vertices
    else:
        key_in, key_out, n_keys = _joint_keys(equal)
    bad_in = np.zeros(n, dtype=bool)
    bad_out = np.zeros(n, dtype=bool)
    for ix in graph.indexes:
        bad_in |= ix.from_vertex < 0
        bad_out |= (ix.to_lo >= ix.to_hi) & (ix.to_lo2 >= ix.to_hi2)
    key_in = np.where(bad_in, -1, key_in).astype(np.int64)
    key_out = np.where(bad_out, -1, key_out).astype(np.int64)
    return Links(tie_start, tie_end, key_in, key_out, int(n_keys), ranges)


def tie_groups(window: np.ndarray, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(tie_start, tie_end)`` of events sorted by (window, ts)."""
    n = len(ts)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    new = np.ones(n, dtype=bool)
    new[1:] = (window[1:] != window[:-1]) | (ts[1:] != ts[:-1])
    starts = np.flatnonzero(new)
    group = np.cumsum(new) - 1
    ends = np.append(starts[1:], n)
    return starts[group].astype(np.int64), ends[group].astype(np.int64)


def _joint_keys(equal: list[AttributeIndex]) -> tuple[np.ndarray, np.ndarray, int]:
    """Combine several ``=`` indexes into one key per event (in and out), densely numbered."""
    n = len(equal[0].from_vertex)
    ins = [ix.from_vertex for ix in equal]
    outs = [np.where(ix.to_lo < ix.to_hi, ix.to_lo, -1) for ix in equal]
    key_in = ins[0].astype(np.int64)
    key_out = outs[0].astype(np.int64)
    for a_in, a_out, ix in zip(ins[1:], outs[1:], equal[1:]):
        size = np.int64(ix.n_vertices + 1)
        c_in = np.where((key_in >= 0) & (a_in >= 0), key_in * size + a_in, -1)
        c_out = np.where((key_out >= 0) & (a_out >= 0), key_out * size + a_out, -1)
        both = np.concatenate([c_in, c_out])
        uniq, inv = np.unique(both[both >= 0], return_inverse=True)
        dense = np.full(2 * n, -1, dtype=np.int64)
        dense[both >= 0] = inv
        key_in, key_out = dense[:n], dense[n:]
    n_keys = int(max(key_in.max(initial=-1), key_out.max(initial=-1)) + 1)
    return key_in, key_out, n_keys


def range_coordinates(ix: AttributeIndex) -> tuple[np.ndarray, np.ndarray]:
    """``(dep, qry)`` with: the range of ``j`` holds ``from_vertex[k]`` iff ``dep[j] <= qry[k]``.

    Only for the one-sided shapes (``>``, ``>=``: ranges run to the end of the window's block;
    ``<``, ``<=``: ranges start at its beginning). Both arrays are meaningless where the event
    has no from-edge or an empty range (the keys of :class:`Links` are -1 there).
    """
    assert ix.shape in (LEFT_OPEN, RIGHT_OPEN)
    if ix.predicate.op in (">", ">="):
        return ix.to_lo.astype(np.int64), ix.from_vertex.astype(np.int64)
    # from < hi  <=>  1 - hi <= -from
    return (1 - ix.to_hi).astype(np.int64), (-ix.from_vertex).astype(np.int64)


def point_of(ix: AttributeIndex) -> np.ndarray:
    """For ``<>``: the vertex of ``rval(j)`` (the one vertex its two ranges leave out)."""
    assert ix.shape == POINTS_AND_GAPS
    return ix.to_hi.astype(np.int64)


def segmented_running(segments: np.ndarray, values: np.ndarray, kind: str) -> np.ndarray:
    """Running ``min`` / ``max`` of ``values`` restarting at every change of ``segments``.

    ``segments`` must be non-decreasing. Vectorised with one offset per segment so that a
    plain ``np.minimum.accumulate`` never carries a value across segments.

    Example:
        >>> segmented_running(np.array([0, 0, 1, 1]), np.array([5, 3, 9, 4]), "min").tolist()
        [5, 3, 9, 4]
    """
    if len(values) == 0:
        return values.astype(np.int64)
    v = values.astype(np.int64)
    lo, hi = int(v.min()), int(v.max())
    span = np.int64(hi - lo + 1)
    seg = segments.astype(np.int64) - int(segments[0])
    if kind == "min":
        # Later segments get smaller offsets, so an earlier segment never wins a minimum.
        shifted = (v - lo) + (int(seg[-1]) - seg) * span
        run = np.minimum.accumulate(shifted)
        return run - (int(seg[-1]) - seg) * span + lo
    shifted = (v - lo) + seg * span
    run = np.maximum.accumulate(shifted)
    return run - seg * span + lo
