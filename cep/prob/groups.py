"""Grouping matches whose time intervals overlap (Sugiura et al., DASFAA 2015, section 4.4).

In a probabilistic stream one real occurrence shows up as many overlapping matches (``[1,3]``,
``[1,6]``, ``[2,5]`` ...); a **group** merges them. Two matches *overlap* when their intervals
share a time point. Two groupings (the paper's Fig. 5 and Fig. 7):

- **single overlap**: a group is a connected component of the overlap relation (each match
  overlaps at least one other member); groups are disjoint in time. Sort by start and cut
  where a start passes the running maximum of the ends (vectorised).
- **complete overlap**: a group is a *maximal* set of matches that pairwise overlap. For
  intervals that is a maximal set sharing one common time point (Helly property), so every
  group has a **core** ``[L, R]`` = (latest start, earliest end) that all members contain.
  The candidates are the sets ``C(R) = {m : start <= R <= end}`` for every distinct match end
  ``R``; ``C(R)`` is maximal exactly when some member starts after the previous distinct end.

Every group has a span ``[t_start, t_end]`` (earliest start, latest end), a core ``[L, R]``
(for single overlap ``L = t_end`` and ``R = t_start``: no constraint) and its member count.
Its probability (:mod:`cep.prob.transducer`) is that of the union of the possible worlds of
*every* match inside the span whose start is ``<= L`` and end ``>= R``, pruned or not.

Example:
    >>> import numpy as np
    >>> g = single_groups(np.array([1, 1, 2, 4, 9]), np.array([3, 6, 5, 6, 11]))
    >>> g.t_start.tolist(), g.t_end.tolist(), g.n_matches.tolist()
    ([1, 9], [6, 11], [4, 1])
    >>> c = complete_groups(np.array([1, 1, 2, 4]), np.array([3, 6, 5, 6]), window=6)
    >>> list(zip(c.t_start.tolist(), c.t_end.tolist(), c.core_start.tolist(), c.core_end.tolist(), c.n_matches.tolist()))
    [(1, 6, 2, 3, 3), (1, 6, 4, 5, 3)]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class Groups:
    """Groups of one stream (positions or time points, whatever the inputs were), by span start.

    Attributes:
        t_start, t_end: the span (earliest start, latest end of the members).
        core_start, core_end: the interval every counted match must cover (``L``, ``R``).
        n_matches: the members (matches at or above the threshold).
    """

    t_start: np.ndarray
    t_end: np.ndarray
    core_start: np.ndarray
    core_end: np.ndarray
    n_matches: np.ndarray

    def __len__(self) -> int:
        return len(self.t_start)


def single_groups(start: np.ndarray, end: np.ndarray) -> Groups:
    """Connected components of overlapping intervals (single overlap, Fig. 7); inputs sorted by start."""
    start = np.asarray(start, dtype=np.int64)
    end = np.asarray(end, dtype=np.int64)
    if len(start) == 0:
        e = np.zeros(0, dtype=np.int64)
        return Groups(e, e, e, e, e)
    reach = np.maximum.accumulate(end)
    new = np.ones(len(start), dtype=bool)
    new[1:] = start[1:] > reach[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:], len(start)) - 1
    g_start = start[first]
    g_end = reach[last]
    return Groups(g_start, g_end, g_end.copy(), g_start.copy(), (last - first + 1).astype(np.int64))


def complete_groups(start: np.ndarray, end: np.ndarray, window: int) -> Groups:
    """Maximal sets of pairwise overlapping intervals (complete overlap, Fig. 5).

    Args:
        start, end: the intervals (any order); every one at most ``window`` long.
        window: the longest interval, bounding how far back a member of ``C(R)`` can start.

    Complexity:
        ``O(m log m + window * r)`` numpy work for ``m`` matches and ``r`` distinct ends.
    """
    start = np.asarray(start, dtype=np.int64)
    end = np.asarray(end, dtype=np.int64)
    if len(start) == 0:
        e = np.zeros(0, dtype=np.int64)
        return Groups(e, e, e, e, e)
    ends = np.unique(end)
    # Per start point: the latest end of the intervals starting there (-1: none start there).
    base = int(start.min())
    span = int(max(end.max(), start.max())) - base + 1
    latest_end = np.full(span, -1, dtype=np.int64)
    np.maximum.at(latest_end, start - base, end)
    # For each distinct end R, scan the starts R, R-1, ..., R-window+1: members have end >= R.
    max_start = np.full(len(ends), np.iinfo(np.int64).min)
    min_start = np.full(len(ends), np.iinfo(np.int64).max)
    max_end = np.full(len(ends), np.iinfo(np.int64).min)
    for d in range(window):
        s = ends - d
        inside = s >= base
        le = np.where(inside, latest_end[np.clip(s - base, 0, span - 1)], -1)
        member = inside & (le >= ends)
        max_start = np.where(member & (s > max_start), s, max_start)
        min_start = np.where(member, np.minimum(min_start, s), min_start)
        max_end = np.where(member, np.maximum(max_end, le), max_end)
    previous = np.concatenate([[np.iinfo(np.int64).min], ends[:-1]])
    maximal = max_start > previous
    sorted_start = np.sort(start)
    sorted_end = np.sort(end)
    count = (np.searchsorted(sorted_start, ends, side="right")
             - np.searchsorted(sorted_end, ends, side="left"))
    R = ends[maximal]
    return Groups(min_start[maximal], max_end[maximal], max_start[maximal], R, count[maximal].astype(np.int64))
