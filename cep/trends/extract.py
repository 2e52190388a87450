"""Extracting the complete trends themselves: anchor-based, vectorised breadth-first search.

Mei et al., ICPP 2021, section 5.2: trends are extracted between *anchors* by breadth-first
search, and the partial trends are concatenated by depth-first search. Here the anchors are
the start events and the end events of the pre-filter (:mod:`cep.trends.prefilter`):

1. **count first**: the number of trends comes from the path-counting DP
   (:mod:`cep.trends.count`); when it exceeds ``max_trends`` a :class:`TrendLimitError` is
   raised before anything is enumerated;
2. **BFS between anchors**: all start anchors advance together, one level per step, as numpy
   arrays (the frontier of partial trends); a partial trend that reaches an end anchor is
   complete, every other one is extended by each successor (:mod:`cep.trends.edges`). Every
   partial trend extends to at least one complete trend (a DAG has no dead ends short of an
   end event), so no work is wasted on prefixes that lead nowhere;
3. **concatenation**: partial trends are stored as a trie (each node: an event and its parent
   node), and the complete trends are read back by walking parent pointers, all of them at
   once, level by level (the paper's depth-first concatenation, vectorised).

Work and memory are proportional to the output (the sum of the trends' lengths).

Example:
    >>> import numpy as np
    >>> from cep.trends.graph import build_graph
    >>> g = build_graph("PATTERN s+ WHERE s[i].p > s[i-1].p", np.arange(4), {"p": np.array([3, 1, 2, 5])})
    >>> [t.tolist() for t in extract_trends(g)]
    [[0, 3], [1, 2, 3], [1, 3]]
"""

from __future__ import annotations

import numpy as np

from cep.trends.count import count_by_window
from cep.trends.edges import enumerate_edges
from cep.trends.errors import TrendLimitError
from cep.trends.graph import TrendGraph
from cep.trends.links import links
from cep.trends.maximal import DEFAULT_COMPLETENESS, MAXIMAL, reduced_edges
from cep.trends.prefilter import endpoints

DEFAULT_MAX_TRENDS = 1_000_000


def check_limit(graph: TrendGraph, max_trends: int, completeness: str = DEFAULT_COMPLETENESS) -> None:
    """Raise :class:`TrendLimitError` when the windows hold more than ``max_trends`` trends
    (counted by the DP, nothing enumerated)."""
    per_window = count_by_window(graph, completeness)
    total = sum(per_window.values())
    if total > max_trends:
        worst = max(per_window, key=per_window.__getitem__)
        raise TrendLimitError(
            f"the events hold {total} complete trends (the window starting at {worst} alone has "
            f"{per_window[worst]}), more than max_trends={max_trends}; ask for the number of "
            "trends instead (output => 'count') or raise max_trends")


def extract_trends(graph: TrendGraph, max_trends: int = DEFAULT_MAX_TRENDS,
                   completeness: str = DEFAULT_COMPLETENESS) -> list[np.ndarray]:
    """Every complete trend of every window of ``graph``, as arrays of event positions.

    Args:
        graph: the ABI graph.
        max_trends: the most trends to return; more raises before enumerating.
        completeness: ``'ends'`` (default: no event can be added at either end, the paper's
            section 3) or ``'maximal'`` (no other trend holds it as a sub-sequence, the
            paper's line 43): then the walk follows the transitive reduction of the event DAG
            (:mod:`cep.trends.maximal`).

    Returns:
        The trends in lexicographic order of their positions (so by window, then start event);
        each an int64 array of event positions in ts order (``graph.row[t]`` gives the rows,
        ``graph.window[t[0]]`` the window number).

    Raises:
        TrendLimitError: the windows hold more than ``max_trends`` trends (``CEP-TREND-020``).
        TrendOptionError: an unknown ``completeness`` (``CEP-TREND-011``).
    """
    check_limit(graph, max_trends, completeness)
    n = graph.n_events
    if n == 0:
        return []
    ln = links(graph)
    is_start, is_end = endpoints(graph, ln)
    src, dst = reduced_edges(graph, ln) if completeness == MAXIMAL else enumerate_edges(graph, ln)
    offsets = np.searchsorted(src, np.arange(n + 1)).astype(np.int64)
    paths, _ = trie_paths(np.flatnonzero(is_start).astype(np.int64), is_end, is_end, offsets, dst)
    trends = sorted(paths)
    return [np.array(t, dtype=np.int64) for t in trends]


def trie_paths(sources: np.ndarray, first_stop: np.ndarray, stop: np.ndarray,
               offsets: np.ndarray, dst: np.ndarray) -> tuple[list[list[int]], int]:
    """Every path from ``sources`` along the edges (CSR ``offsets``/``dst``) to its first stop
    event, all sources together, one level per numpy step; and the size of the trie walked.

    A source ends its path at once when ``first_stop`` holds for it; every later event ends
    one when ``stop`` holds. :func:`extract_trends` passes the end events for both;
    :mod:`cep.trends.anchors` stops at anchors too.

    Example:
        >>> offsets, dst = np.array([0, 2, 3, 3]), np.array([1, 2, 2])  # 0->1, 0->2, 1->2
        >>> ends = np.array([False, False, True])
        >>> trie_paths(np.array([0]), ends, ends, offsets, dst)
        ([[0, 2], [0, 1, 2]], 4)
    """
    # The trie: level by level, node ids are global positions in these lists.
    vertices = [sources]
    parents = [np.full(len(sources), -1, dtype=np.int64)]
    done_nodes: list[np.ndarray] = []
    done_depths: list[np.ndarray] = []
    first_id, depth, frontier = 0, 0, sources
    while len(frontier):
        ids = first_id + np.arange(len(frontier), dtype=np.int64)
        end = (first_stop if depth == 0 else stop)[frontier]
        done_nodes.append(ids[end])
        done_depths.append(np.full(int(end.sum()), depth, dtype=np.int64))
        grow_ids, grow_v = ids[~end], frontier[~end]
        lo, hi = offsets[grow_v], offsets[grow_v + 1]
        counts = hi - lo
        child_parent = np.repeat(grow_ids, counts)
        starts = np.repeat(lo - (np.cumsum(counts) - counts), counts)
        child_v = dst[starts + np.arange(int(counts.sum()), dtype=np.int64)]
        first_id += len(frontier)
        depth += 1
        vertices.append(child_v)
        parents.append(child_parent)
        frontier = child_v
    vertex = np.concatenate(vertices)
    parent = np.concatenate(parents)
    nodes = np.concatenate(done_nodes)
    depths = np.concatenate(done_depths)
    lengths = depths + 1
    out_start = np.cumsum(lengths) - lengths
    flat = np.empty(int(lengths.sum()), dtype=np.int64)
    cursor = nodes.copy()
    for step in range(int(depths.max(initial=-1)) + 1):
        active = depths >= step
        flat[out_start[active] + depths[active] - step] = vertex[cursor[active]]
        cursor[active] = parent[cursor[active]]
    bounds = np.r_[out_start, len(flat)].tolist()
    values = flat.tolist()
    return [values[a:b] for a, b in zip(bounds[:-1], bounds[1:])], len(vertex)
