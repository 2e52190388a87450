"""The two readings of "complete" in Mei et al., ICPP 2021, and the second one's algorithm.

The paper defines a complete event trend twice (docs/trends.md, "Paper vs ours"):

- ``'ends'`` (section 3, "Complete Event Trend", seed text line 119): no event of the window
  can be added *at either end* (before the first or after the last event). With
  skip-till-any edges these are the source-to-sink paths of the window's event DAG. It is
  what Definition 1 (a CET path runs from a start vertex to an end vertex), the pre-filter
  (Algorithm 3) and both extraction algorithms compute, and the default here;
- ``'maximal'`` (section 1, line 43, and again section 5.4, line 397): a trend that is "not a
  sub-sequence of any other event trend". Events may then also be inserted *in the middle*:
  with ``s[i].p > s[i-1].p`` over the prices ``1, 3, 2, 4`` the trend ``(1, 4)`` cannot be
  extended at either end, yet it is a sub-sequence of ``(1, 3, 4)``.

Every ``'maximal'`` trend is an ``'ends'`` trend. A source-to-sink path ``p1 .. pk`` is a
proper sub-sequence of another trend exactly when one of its edges ``p_i -> p_{i+1}`` is
*implied*: some path of two or more edges also leads from ``p_i`` to ``p_{i+1}`` (the events
of that detour can be inserted). So the ``'maximal'`` trends are the source-to-sink paths of
the **transitive reduction** of the DAG (the edges that no longer path implies), which keeps
the sources, the sinks and the reachability. :func:`reduced_edges` computes it with one
reachability bitset per event (Python ints over the window's positions), visiting the events
backwards; :func:`maximal_path_counts` is the path-counting DP over the reduced edges.

Cost: ``O(E)`` big-integer operations on ``n``-bit sets, ``O(n E / 64)`` word operations and
``O(n^2 / 8)`` bytes for a window of ``n`` events with ``E`` event edges, against the
``O(n log n)`` counting of ``'ends'`` (which never enumerates an edge for ``=`` predicates and
one range predicate). It is therefore an option, not the default.

Example:
    >>> import numpy as np
    >>> from cep.trends.graph import build_graph
    >>> g = build_graph("PATTERN s+ WHERE s[i].p > s[i-1].p", np.arange(4), {"p": np.array([1, 3, 2, 4])})
    >>> [e.tolist() for e in reduced_edges(g)]  # 0 -> 3 is implied by 0 -> 1 -> 3 and 0 -> 2 -> 3
    [[0, 0, 1, 2], [1, 2, 3, 3]]
    >>> maximal_path_counts(g)
    [1, 1, 1, 2]
"""

from __future__ import annotations

import numpy as np

from cep.trends.edges import enumerate_edges
from cep.trends.errors import TrendOptionError
from cep.trends.graph import TrendGraph
from cep.trends.links import Links, links

ENDS = "ends"
MAXIMAL = "maximal"
COMPLETENESS = (ENDS, MAXIMAL)
DEFAULT_COMPLETENESS = ENDS


def check_completeness(value: object) -> str:
    """``value`` if it names a reading of "complete", else a :class:`TrendOptionError`.

    Example:
        >>> check_completeness("maximal")
        'maximal'
        >>> check_completeness("longest")
        Traceback (most recent call last):
        ...
        cep.trends.errors.TrendOptionError: CEP-TREND-011: completeness: expected one of 'ends', 'maximal', found 'longest'
    """
    if value not in COMPLETENESS:
        raise TrendOptionError(f"completeness: expected one of {', '.join(map(repr, COMPLETENESS))}, "
                               f"found {value!r}")
    return str(value)


def reduced_edges(graph: TrendGraph, link: Links | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The edges of the transitive reduction of every window's event DAG.

    Args:
        graph: the ABI graph.
        link: its :func:`cep.trends.links.links` (computed when not given).

    Returns:
        ``(src, dst)`` int64 arrays sorted by ``(src, dst)``: the event edges ``j -> k`` for
        which no path of two or more edges leads from ``j`` to ``k``.
    """
    ln = links(graph) if link is None else link
    src, dst = enumerate_edges(graph, ln)
    n = graph.n_events
    if not len(src):
        return src, dst
    base = graph.window_slices()[:-1][graph.window].tolist()  # first position of each window
    offsets = np.searchsorted(src, np.arange(n + 1)).tolist()
    local = (dst - np.asarray(base, dtype=np.int64)[dst]).tolist()
    targets = dst.tolist()
    keep = np.ones(len(src), dtype=bool)
    reach = [0] * n  # positions (relative to the window) reachable by one edge or more
    for j in range(n - 1, -1, -1):
        a, b = offsets[j], offsets[j + 1]
        if a == b:
            continue
        below = 0
        for i in range(a, b):
            below |= reach[targets[i]]
        direct = 0
        for i in range(a, b):
            bit = 1 << local[i]
            if below & bit:
                keep[i] = False
            direct |= bit
        reach[j] = below | direct
    return src[keep], dst[keep]


def maximal_path_counts(graph: TrendGraph, link: Links | None = None,
                        edges: tuple[np.ndarray, np.ndarray] | None = None) -> list[int]:
    """``f[k]``: the paths from a start event to ``k`` over the reduced edges (exact ints).

    Args:
        graph: the ABI graph.
        link: its :func:`cep.trends.links.links` (computed when not given).
        edges: its :func:`reduced_edges` (computed when not given).
    """
    ln = links(graph) if link is None else link
    src, dst = reduced_edges(graph, ln) if edges is None else edges
    n = graph.n_events
    order = np.lexsort((src, dst))  # by destination: the predecessors of k are one slice
    by_dst, from_src = dst[order], src[order].tolist()
    cuts = np.searchsorted(by_dst, np.arange(n + 1)).tolist()
    f: list[int] = []
    for k in range(n):  # sources come before their successors (positions follow ts)
        total = 0
        for i in range(cuts[k], cuts[k + 1]):
            total += f[from_src[i]]
        f.append(total or 1)
    return f
