"""Event edges from the ABI graph: every ``j -> k`` with ``ts(j) < ts(k)`` and all predicates true.

An edge needs ``from_vertex[k]`` inside ``j``'s range for every predicate (the intersection of
the predicates' range edges, Mei et al., ICPP 2021, section 4.3) and ``k`` after ``j``'s tie
group. Enumeration is output-sensitive and vectorised (no Python loop per event):

- with an ``=`` predicate: the events are sorted by (join key, position); the successors of
  ``j`` through the key are one contiguous slice, found with two ``np.searchsorted``;
- with only order comparators: a segment tree over positions stores the minimum and maximum
  from-vertex of every node; all sources descend it together, level by level, keeping the
  nodes that lie after ``j``'s tie group, in its window, and whose values can meet ``j``'s
  range. A one-sided range (every comparator's range is one-sided inside its window; ``<>``
  is two) makes the descent visit ``O((E + n) log n)`` nodes for ``E`` edges;
- the other predicates then filter the candidates (``AttributeIndex.holds``).

The graph itself never needs the edges (counting and the pre-filter work on the ranges); they
are for extraction and for tests. ``E`` can be quadratic in the window.

Example:
    >>> import numpy as np
    >>> from cep.trends.graph import build_graph
    >>> g = build_graph("PATTERN s+ WHERE s[i].p > s[i-1].p", np.arange(4), {"p": np.array([3, 1, 2, 5])})
    >>> src, dst = enumerate_edges(g)
    >>> list(zip(src.tolist(), dst.tolist()))
    [(0, 3), (1, 2), (1, 3), (2, 3)]
"""

from __future__ import annotations

import numpy as np

from cep.trends.graph import POINTS, POINTS_AND_GAPS, TrendGraph
from cep.trends.links import Links, links

_CHUNK = 1 << 15


def enumerate_edges(graph: TrendGraph, link: Links | None = None) -> tuple[np.ndarray, np.ndarray]:
    """All event edges, as two int64 arrays ``(src, dst)`` sorted by ``(src, dst)``.

    Args:
        graph: the ABI graph.
        link: its :func:`cep.trends.links.links` (computed when not given).

    Complexity:
        ``O(n log n + E)`` with an ``=`` predicate, ``O((n + E') log n)`` otherwise, where
        ``E'`` counts the pairs the first range predicate alone links; memory ``O(E)``.
    """
    ln = links(graph) if link is None else link
    n = graph.n_events
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    bounds = graph.window_slices()
    window_end = bounds[1:][graph.window]
    sources = np.flatnonzero((ln.key_out >= 0) & (ln.tie_end < window_end)).astype(np.int64)
    equal = [ix for ix in graph.indexes if ix.shape == POINTS]
    pieces: list[tuple[np.ndarray, np.ndarray]] = []
    if equal or not graph.indexes:
        generate = _by_key(ln, n) if equal else _by_window(ln, window_end)
        for start in range(0, len(sources), _CHUNK):
            src, dst = generate(sources[start:start + _CHUNK])
            pieces.append(_filter(ln, src, dst))
    else:
        first = ln.ranges[0]
        tree = _Tree(first.from_vertex)
        rest = Links(ln.tie_start, ln.tie_end, ln.key_in, ln.key_out, ln.n_keys, ln.ranges[1:])
        for start in range(0, len(sources), _CHUNK):
            js = sources[start:start + _CHUNK]
            found = [tree.report(js, ln.tie_end[js], window_end[js], first.to_lo[js], first.to_hi[js])]
            if first.shape == POINTS_AND_GAPS:
                found.append(tree.report(js, ln.tie_end[js], window_end[js], first.to_lo2[js], first.to_hi2[js]))
            src = np.concatenate([f[0] for f in found])
            dst = np.concatenate([f[1] for f in found])
            pieces.append(_filter(rest, src, dst))
    src = np.concatenate([p[0] for p in pieces]) if pieces else np.zeros(0, dtype=np.int64)
    dst = np.concatenate([p[1] for p in pieces]) if pieces else np.zeros(0, dtype=np.int64)
    order = np.lexsort((dst, src))
    return src[order], dst[order]


def _by_key(ln: Links, n: int):  # noqa: ANN202 -- returns a closure
    """Successors through the join key: one contiguous slice of the (key, position) order."""
    valid = np.flatnonzero(ln.key_in >= 0).astype(np.int64)
    width = np.int64(n + 1)
    codes = ln.key_in[valid] * width + valid
    order = np.argsort(codes, kind="stable")
    codes, members = codes[order], valid[order]

    def generate(js: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        key = ln.key_out[js]
        lo = np.searchsorted(codes, key * width + ln.tie_end[js])
        hi = np.searchsorted(codes, (key + 1) * width)
        return _expand(js, lo, hi, members)

    return generate


def _by_window(ln: Links, window_end: np.ndarray):  # noqa: ANN202 -- returns a closure
    """No predicate at all: every later event of the window is a successor."""
    members = np.arange(len(window_end), dtype=np.int64)

    def generate(js: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _expand(js, ln.tie_end[js], window_end[js], members)

    return generate


def _expand(js: np.ndarray, lo: np.ndarray, hi: np.ndarray, members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs ``(j, members[i])`` for ``i`` in ``[lo[j], hi[j])``, vectorised."""
    counts = np.maximum(hi - lo, 0)
    total = int(counts.sum())
    src = np.repeat(js, counts)
    starts = np.repeat(lo - (np.cumsum(counts) - counts), counts)
    idx = starts + np.arange(total, dtype=np.int64)
    return src, members[idx]


def _filter(ln: Links, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keep the pairs every range predicate of ``ln`` links."""
    keep = np.ones(len(src), dtype=bool)
    for ix in ln.ranges:
        keep &= ix.holds(src, dst)
    return src[keep], dst[keep]


class _Tree:
    """A segment tree of min and max from-vertex over event positions (module docstring)."""

    def __init__(self, values: np.ndarray) -> None:
        n = len(values)
        self.levels = max(1, (n - 1).bit_length())
        size = 1 << self.levels
        big = np.iinfo(np.int64).max
        mx = np.full(size, -1, dtype=np.int64)
        mn = np.full(size, big, dtype=np.int64)
        mx[:n] = values
        mn[:n] = np.where(values >= 0, values, big)
        self.mx, self.mn = [mx], [mn]
        for _ in range(self.levels):
            mx = np.maximum(mx[0::2], mx[1::2])
            mn = np.minimum(mn[0::2], mn[1::2])
            self.mx.append(mx)
            self.mn.append(mn)

    def report(self, js: np.ndarray, qa: np.ndarray, qb: np.ndarray, qlo: np.ndarray, qhi: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        """Pairs ``(j, k)`` with ``qa <= k < qb`` and ``qlo <= values[k] < qhi`` (per query)."""
        alive = (qa < qb) & (qlo < qhi)
        q = np.flatnonzero(alive).astype(np.int64)
        node = np.zeros(len(q), dtype=np.int64)
        for level in range(self.levels, -1, -1):
            first = node << level
            keep = ((first < qb[q]) & (first + (1 << level) > qa[q])
                    & (self.mx[level][node] >= qlo[q]) & (self.mn[level][node] < qhi[q]))
            q, node = q[keep], node[keep]
            if level:
                q = np.repeat(q, 2)
                node = np.repeat(node * 2, 2)
                node[1::2] += 1
        return js[q], node
