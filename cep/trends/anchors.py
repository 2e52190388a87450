"""Anchor-based extraction with intermediate anchors (Mei et al., ICPP 2021, section 5.2).

:func:`cep.trends.extract_trends` uses the start and end events as its only anchors. Here, as
in the paper, some **attribute vertices** are anchors too: a trend passing through an anchor
vertex (an edge ``j -> av -> k`` whose ``k`` hangs from ``av``, the first predicate's from-edge)
is cut at ``k``. Two stages, one process:

1. **BFS between anchors**: from every start event and every anchor event, all partial paths
   advance together (numpy arrays, one level per step) until they reach an anchor event or an
   end event; each such path is a *piece* ``sub_xy`` (Fig. 5(b));
2. **DFS concatenation**: from every start event, the pieces are chained at their shared
   anchor events until an end event is reached (the cross products of Fig. 5(b)).

The answer equals ``extract_trends`` for every choice of anchors (property-tested); only the
split of the work between the two stages moves, which is what the paper's Fig. 18 sweeps. The
paper runs the BFS pieces on a thread pool and the DFS with work stealing; here both stages run
in one Python process. :func:`cep.trends.stealing.stealing_trends` runs the same two stages on
worker processes, the DFS as small tasks pulled from a shared queue and split when they run
long (work pulling with task splitting, not signal-driven stealing; docs/trends.md, "Paper vs
ours").

Example:
    >>> import numpy as np
    >>> from cep.trends.graph import build_graph
    >>> from cep.trends.extract import extract_trends
    >>> g = build_graph("PATTERN s+ WHERE s[i].p > s[i-1].p", np.arange(4), {"p": np.array([1, 2, 3, 4])})
    >>> result = anchored_trends(g, anchors=1)  # the vertex holding event 2 (p = 3) is the anchor
    >>> [t.tolist() for t in result.trends]
    [[0, 1, 2, 3], [0, 1, 3], [0, 2, 3], [0, 3]]
    >>> [t.tolist() for t in extract_trends(g)] == [t.tolist() for t in result.trends]
    True
    >>> result.anchor_events, result.pieces
    (1, 5)
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from cep.trends.edges import enumerate_edges
from cep.trends.extract import DEFAULT_MAX_TRENDS, check_limit, trie_paths
from cep.trends.graph import TrendGraph
from cep.trends.links import links
from cep.trends.maximal import DEFAULT_COMPLETENESS, MAXIMAL, reduced_edges
from cep.trends.prefilter import endpoints


@dataclass(frozen=True)
class AnchoredResult:
    """The trends and what each stage did.

    Attributes:
        trends: every complete trend, as :func:`cep.trends.extract_trends` returns them.
        anchor_events: events cut by an anchor vertex (start events are not counted).
        pieces: sub-sequences the BFS stage produced (``sub_xy`` of Fig. 5(b)).
        bfs_nodes: nodes of the BFS tries (the BFS stage's memory, in event references).
        dfs_steps: concatenations the DFS stage made.
        dfs_peak: the most partial trends the DFS stack held at once.
        bfs_seconds, dfs_seconds: wall time of the two stages (for the benchmark of Fig. 18).
    """

    trends: list[np.ndarray]
    anchor_events: int
    pieces: int
    bfs_nodes: int
    dfs_steps: int
    dfs_peak: int
    bfs_seconds: float = 0.0
    dfs_seconds: float = 0.0


def anchor_events(graph: TrendGraph, anchors: int) -> np.ndarray:
    """Boolean mask of the events hanging from one of ``anchors`` attribute vertices.

    The anchors are spread evenly (by vertex number, so by window and value) over the vertices
    of the first predicate that hold an event: the ``i``-th of ``k`` is at ``i / (k + 1)`` of
    them; no predicate or ``anchors <= 0``: none.
    """
    n = graph.n_events
    if anchors <= 0 or not graph.indexes:
        return np.zeros(n, dtype=bool)
    frm = graph.indexes[0].from_vertex
    used = np.unique(frm[frm >= 0])
    if not len(used):
        return np.zeros(n, dtype=bool)
    k = min(anchors, len(used))
    picks = used[np.unique(np.arange(1, k + 1, dtype=np.int64) * len(used) // (k + 1))]
    return np.isin(frm, picks)


def anchored_trends(graph: TrendGraph, anchors: int = 0, max_trends: int = DEFAULT_MAX_TRENDS,
                    completeness: str = DEFAULT_COMPLETENESS) -> AnchoredResult:
    """Every complete trend, extracted between ``anchors`` intermediate anchor vertices.

    Args:
        graph: the ABI graph.
        anchors: the number of attribute vertices to cut trends at (0: start and end only).
        max_trends: the most trends to return; more raises before enumerating.
        completeness: ``'ends'`` or ``'maximal'`` (:mod:`cep.trends.maximal`).

    Returns:
        The trends (equal to ``extract_trends(graph, max_trends, completeness)``) and the
        work of each stage.

    Raises:
        TrendLimitError: more than ``max_trends`` trends (``CEP-TREND-020``).
        TrendOptionError: an unknown ``completeness`` (``CEP-TREND-011``).
    """
    check_limit(graph, max_trends, completeness)
    n = graph.n_events
    if n == 0:
        return AnchoredResult([], 0, 0, 0, 0, 0)
    ln = links(graph)
    is_start, is_end = endpoints(graph, ln)
    src, dst = reduced_edges(graph, ln) if completeness == MAXIMAL else enumerate_edges(graph, ln)
    offsets = np.searchsorted(src, np.arange(n + 1)).astype(np.int64)
    started = time.perf_counter()
    cut = anchor_events(graph, anchors) & ~is_start
    pieces, nodes = trie_paths(np.flatnonzero(is_start | cut).astype(np.int64), is_end,
                               cut | is_end, offsets, dst)
    bfs_done = time.perf_counter()
    by_first: dict[int, list[list[int]]] = {}
    for piece in pieces:
        by_first.setdefault(piece[0], []).append(piece)
    trends: list[list[int]] = []
    end = is_end.tolist()
    steps = peak = 0
    for s in np.flatnonzero(is_start).tolist():
        stack = list(by_first.get(s, []))
        while stack:
            peak = max(peak, len(stack))
            path = stack.pop()
            if end[path[-1]]:
                trends.append(path)
                continue
            for piece in by_first[path[-1]]:
                stack.append(path + piece[1:])
                steps += 1
    trends.sort()
    dfs_done = time.perf_counter()
    return AnchoredResult([np.array(t, dtype=np.int64) for t in trends], int(cut.sum()),
                          len(pieces), nodes, steps, peak, bfs_done - started, dfs_done - bfs_done)
