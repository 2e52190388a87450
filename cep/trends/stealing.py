"""Anchor-based extraction on worker processes, the DFS split into tasks pulled from a queue.

Mei et al., ICPP 2021, section 5.2: the BFS between anchors runs in parallel, and the DFS that
concatenates the pieces runs "in a work-stealing manner": a DFS task is a current ``path`` and
the next vertex ``v``; when an idle unit asks, the busy one splits its task at ``v``, the idle
one takes the forwarding state (the vertices behind ``v``) and the busy one keeps the backing
state (line 340). Here, on a process pool (the paper's thread pool; Python threads share one
interpreter lock, so processes):

1. **BFS stage**: the sources (start events and anchor events, as in
   :func:`cep.trends.anchored_trends`) are cut into chunks; each chunk is one task computing
   its pieces with :func:`cep.trends.extract.trie_paths` (the graph's edge arrays are given to
   the workers once, when they start: the paper's broadcast);
2. **DFS stage**: one task per small group of start events, pulled by idle workers from the
   pool's shared queue (*work pulling*). A task that has made ``budget`` concatenations stops
   and hands back its unexplored stack; the driver cuts that stack into parts and queues them,
   so idle workers take them over. This is the paper's split of a DFS task into disjoint
   states (each stack entry is a forwarding state: a path and the pieces still to visit), but
   triggered by a budget, not by a signal from an idle worker: there is no shared memory
   between processes to signal through cheaply. It is therefore *work pulling with task
   splitting*, not true work stealing (docs/trends.md, section 10).

The answer equals :func:`cep.trends.extract_trends` (property-tested).

Example:
    >>> import numpy as np
    >>> from cep.trends.graph import build_graph
    >>> g = build_graph("PATTERN s+ WHERE s[i].p > s[i-1].p", np.arange(5), {"p": np.array([1, 2, 3, 4, 5])})
    >>> r = stealing_trends(g, anchors=1, workers=0, budget=2)  # workers=0: the queue in this process
    >>> len(r.trends), r.splits > 0
    (8, True)
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass

import numpy as np

from cep.trends.anchors import anchor_events
from cep.trends.edges import enumerate_edges
from cep.trends.extract import DEFAULT_MAX_TRENDS, check_limit, trie_paths
from cep.trends.graph import TrendGraph
from cep.trends.links import links
from cep.trends.maximal import DEFAULT_COMPLETENESS, MAXIMAL, reduced_edges
from cep.trends.parallel import pool_context
from cep.trends.prefilter import endpoints

DEFAULT_BUDGET = 20_000
Flat = tuple[np.ndarray, np.ndarray]

# What a worker process was given when it started (set by the pool's initializer).
_SHARED: dict[str, object] = {}


@dataclass(frozen=True)
class StealingResult:
    """The trends and how the work was shared.

    Attributes:
        trends: every complete trend, as :func:`cep.trends.extract_trends` returns them.
        pieces: sub-sequences of the BFS stage.
        bfs_tasks: BFS tasks (chunks of sources).
        dfs_tasks: DFS tasks run, the split-off ones included.
        splits: DFS tasks that ran out of budget and were split.
        bfs_seconds, dfs_seconds: wall time of the two stages.
    """

    trends: list[np.ndarray]
    pieces: int
    bfs_tasks: int
    dfs_tasks: int
    splits: int
    bfs_seconds: float = 0.0
    dfs_seconds: float = 0.0


def bfs_task(sources: np.ndarray) -> Flat:
    """One BFS task: the pieces from ``sources`` to their first anchor or end event, flattened."""
    g = _SHARED
    paths, _ = trie_paths(sources, g["first_stop"], g["stop"], g["offsets"], g["dst"])  # type: ignore[arg-type]
    return _flatten(paths)


def dfs_task(roots: Sequence[int], stack: Sequence[list[int]], budget: int) -> tuple[Flat, list[list[int]], int]:
    """One DFS task: concatenate pieces from ``roots`` (start events) and from ``stack`` (paths).

    Returns:
        The complete trends found (flattened), the unexplored stack when ``budget``
        concatenations were made first (else empty), and the concatenations made.
    """
    pieces: list[list[int]] = _SHARED["pieces"]  # type: ignore[assignment]
    first: np.ndarray = _SHARED["by_first"]  # type: ignore[assignment]
    end: list[bool] = _SHARED["end"]  # type: ignore[assignment]
    todo = list(stack)
    for s in roots:
        todo.extend(pieces[first[s]:first[s + 1]])
    found: list[list[int]] = []
    steps = 0
    while todo and steps < budget:
        path = todo.pop()
        last = path[-1]
        if end[last]:
            found.append(path)
            continue
        for piece in pieces[first[last]:first[last + 1]]:
            todo.append(path + piece[1:])
            steps += 1
    return _flatten(found), todo, steps


def stealing_trends(graph: TrendGraph, anchors: int = 0, workers: int = 2, *, budget: int = DEFAULT_BUDGET,
                    chunks_per_worker: int = 4, max_trends: int = DEFAULT_MAX_TRENDS,
                    completeness: str = DEFAULT_COMPLETENESS) -> StealingResult:
    """Every complete trend, with the anchored extraction's two stages on ``workers`` processes.

    Args:
        graph: the ABI graph.
        anchors: intermediate anchor vertices, as for :func:`cep.trends.anchored_trends`.
        workers: worker processes; 0 runs the same tasks and queue in this process.
        budget: concatenations a DFS task makes before it is split.
        chunks_per_worker: initial tasks per worker in each stage (more: finer balance).
        max_trends, completeness: as for :func:`cep.trends.extract_trends`.

    Raises:
        TrendLimitError: more than ``max_trends`` trends (``CEP-TREND-020``), before any work.
        TrendOptionError: an unknown ``completeness`` (``CEP-TREND-011``).
    """
    check_limit(graph, max_trends, completeness)
    n = graph.n_events
    if n == 0:
        return StealingResult([], 0, 0, 0, 0)
    ln = links(graph)
    is_start, is_end = endpoints(graph, ln)
    src, dst = reduced_edges(graph, ln) if completeness == MAXIMAL else enumerate_edges(graph, ln)
    offsets = np.searchsorted(src, np.arange(n + 1)).astype(np.int64)
    cut = anchor_events(graph, anchors) & ~is_start
    n_tasks = max(1, workers) * chunks_per_worker
    started = time.perf_counter()
    sources = np.array_split(np.flatnonzero(is_start | cut).astype(np.int64), n_tasks)
    sources = [s for s in sources if len(s)]
    graph_arrays = {"first_stop": is_end, "stop": cut | is_end, "offsets": offsets, "dst": dst}
    flats = _run_map(bfs_task, sources, workers, graph_arrays)
    pieces = sorted(p for flat in flats for p in _unflatten(flat))
    bfs_done = time.perf_counter()
    by_first = np.searchsorted(np.array([p[0] for p in pieces], dtype=np.int64), np.arange(n + 1))
    shared = {"pieces": pieces, "by_first": by_first, "end": is_end.tolist()}
    roots = [r.tolist() for r in np.array_split(np.flatnonzero(is_start), n_tasks) if len(r)]
    trends, tasks, splits = _run_dfs(roots, workers, budget, shared)
    trends.sort()
    dfs_done = time.perf_counter()
    return StealingResult([np.array(t, dtype=np.int64) for t in trends], len(pieces), len(sources), tasks,
                          splits, bfs_done - started, dfs_done - bfs_done)


def _run_map(fn, tasks: list[np.ndarray], workers: int, shared: dict[str, object]) -> list[Flat]:  # noqa: ANN001
    """``fn`` over ``tasks`` with ``shared`` installed, in this process or on a pool."""
    if workers <= 0:
        _install(shared)
        try:
            return [fn(t) for t in tasks]
        finally:
            _SHARED.clear()
    with ProcessPoolExecutor(max_workers=workers, mp_context=pool_context(), initializer=_install, initargs=(shared,)) as pool:
        return list(pool.map(fn, tasks))


def _run_dfs(roots: list[list[int]], workers: int, budget: int,
             shared: dict[str, object]) -> tuple[list[list[int]], int, int]:
    """The DFS stage: tasks pulled from a queue; a task out of budget is split and re-queued."""
    trends: list[list[int]] = []
    tasks = splits = 0
    parts = max(2, workers)
    if workers <= 0:
        _install(shared)
        try:
            queue: deque[tuple[list[int], list[list[int]]]] = deque((r, []) for r in roots)
            while queue:
                r, stack = queue.popleft()
                flat, rest, _ = dfs_task(r, stack, budget)
                tasks += 1
                trends.extend(_unflatten(flat))
                if rest:
                    splits += 1
                    queue.extend(([], part) for part in _split_stack(rest, parts))
        finally:
            _SHARED.clear()
        return trends, tasks, splits
    with ProcessPoolExecutor(max_workers=workers, mp_context=pool_context(), initializer=_install, initargs=(shared,)) as pool:
        running: set[Future] = {pool.submit(dfs_task, r, [], budget) for r in roots}
        while running:
            done, running = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                flat, rest, _ = future.result()
                tasks += 1
                trends.extend(_unflatten(flat))
                if rest:
                    # Hand the unexplored states to whichever workers are idle next.
                    splits += 1
                    running |= {pool.submit(dfs_task, [], part, budget) for part in _split_stack(rest, parts)}
    return trends, tasks, splits


def _split_stack(stack: list[list[int]], parts: int) -> list[list[list[int]]]:
    """Cut a DFS stack into up to ``parts`` disjoint stacks (each entry is an independent state)."""
    return [stack[i::parts] for i in range(parts) if stack[i::parts]]


def _install(shared: dict[str, object]) -> None:
    _SHARED.clear()
    _SHARED.update(shared)


def _flatten(paths: list[list[int]]) -> Flat:
    lengths = np.array([len(p) for p in paths], dtype=np.int64)
    flat = np.fromiter((v for p in paths for v in p), dtype=np.int64, count=int(lengths.sum()))
    return flat, lengths


def _unflatten(flat: Flat) -> list[list[int]]:
    values, lengths = flat[0].tolist(), flat[1].tolist()
    out, at = [], 0
    for size in lengths:
        out.append(values[at:at + size])
        at += size
    return out
