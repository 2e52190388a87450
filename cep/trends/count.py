"""Counting complete trends without enumerating them: a path-counting DP over the ABI graph.

The number of complete trends of a window is the number of paths of its event DAG from a
start event (no predecessor) to an end event (no successor). With ``f[k]`` the number of paths
from a start event to ``k``::

    f[k] = 1                                  if k has no predecessor
    f[k] = sum of f[j] over the edges j -> k  otherwise

and the count is the sum of ``f`` over the end events (:mod:`cep.trends.prefilter`). Every
event has ``f >= 1``, so "no predecessor" is exactly "the sum is 0": ``f[k] = (sum) or 1``.
Counts are exact Python ints (they grow exponentially with the window; no float, no overflow).

The sum over the predecessors is never taken edge by edge. Events are visited in (window, ts)
order and the sums come from prefix sums over the attribute vertices (Mei et al., ICPP 2021,
section 4.3: an event's to-edges are ranges, so its contribution is one deposit):

- **join keys only** (``=`` predicates, ``[attr]``): the predecessors of ``k`` are the events
  that offered ``key_in[k]`` before ``k``'s tie group, a prefix of that key's deposits, so
  ``f[k] = P[key][b] - P[key][0]`` with ``P`` the running prefix sums per key and ``b`` found
  vectorised by ``np.searchsorted``. ``O(n log n)`` numpy plus ``O(1)`` Python per event;
- **plus one order comparator whose coordinate is monotone in time within each key** (e.g.
  ``t(c[i]) > t(c[i-1]) + 5 MINUTES``, an attribute that only grows): still a contiguous run
  of the key's deposits, same ``O(1)`` per event;
- **plus one general order comparator**: a Fenwick tree (binary indexed tree) per key over the
  distinct deposit coordinates, ``O(log n)`` per event;
- **plus one ``<>``**: every earlier deposit of the key minus those of the same value, two
  prefix sums, ``O(1)`` per event;
- **two or more range predicates**: over the enumerated edges (:mod:`cep.trends.edges`),
  ``O(n + E)``.

The per-event Python loop is the one part that is not vectorised: ``f[k]`` depends on
``f[j]`` for earlier ``j`` along chains as long as the window (a DAG of depth up to ``n``), so
the order of evaluation is inherently sequential; the loop body is a few list operations
(measured on one core, 10**6 events, CPython 3.11: 0.2 to 0.4 s for the ``O(1)`` bodies,
5 to 6 s for the Fenwick body with 500-bit counts, 3.5 s with small ones; docs/trends.md,
section 6, has the table). A divide-and-conquer over time with numpy prefix sums per node
(the offline alternative to the Fenwick tree) measured 4.7 s against 6.3 s, and a base-16
tree with C-level slice sums 6.6 s against 8.2 s: neither is worth its complexity.
Everything around the loop (keys, coordinates, slots, end events) is numpy.

Example:
    >>> import numpy as np
    >>> from cep.trends.graph import build_graph
    >>> g = build_graph("PATTERN s+ WHERE s[i].p > s[i-1].p", np.arange(4), {"p": np.array([3, 1, 2, 5])})
    >>> path_counts(g), count_trends(g)
    ([1, 1, 1, 3], 3)
"""

from __future__ import annotations

import numpy as np

from cep.trends.graph import POINTS_AND_GAPS, TrendGraph
from cep.trends.links import Links, links, point_of, range_coordinates
from cep.trends.maximal import DEFAULT_COMPLETENESS, MAXIMAL, check_completeness, maximal_path_counts
from cep.trends.prefilter import end_events


def count_trends(graph: TrendGraph, completeness: str = DEFAULT_COMPLETENESS) -> int:
    """The number of complete trends in all windows of ``graph`` (an exact Python int).

    ``completeness`` chooses the reading of "complete" (:mod:`cep.trends.maximal`): ``'ends'``
    (the default, extendable at neither end) or ``'maximal'`` (a sub-sequence of no other trend).

    Example:
        >>> import numpy as np
        >>> from cep.trends.graph import build_graph
        >>> g = build_graph("PATTERN s+ WHERE [id]", np.arange(5), {"id": np.array([1, 1, 2, 1, 2])})
        >>> count_trends(g)  # id 1: 0-1-3, 0-3; id 2: 2-4
        3
    """
    return sum(count_by_window(graph, completeness).values())


def count_by_window(graph: TrendGraph, completeness: str = DEFAULT_COMPLETENESS) -> dict[int | float, int]:
    """Window start -> number of complete trends, for every window of ``graph``.

    Every window with an event has at least one trend (an event alone is a trend). With
    ``completeness='maximal'`` the DP runs over the transitive reduction of the event DAG
    (:func:`cep.trends.maximal.maximal_path_counts`); the end events are the same.

    Raises:
        TrendOptionError: ``completeness`` is neither ``'ends'`` nor ``'maximal'``.
    """
    ln = links(graph)
    if check_completeness(completeness) == MAXIMAL:
        f = maximal_path_counts(graph, ln)
    else:
        f = path_counts(graph, ln)
    ends = np.flatnonzero(end_events(graph, ln))
    cuts = np.searchsorted(graph.window[ends], np.arange(graph.n_windows + 1)).tolist()
    ends_list = ends.tolist()
    get = f.__getitem__
    totals = [sum(map(get, ends_list[a:b])) for a, b in zip(cuts[:-1], cuts[1:])]
    return dict(zip(graph.window_starts.tolist(), totals))


def path_counts(graph: TrendGraph, link: Links | None = None) -> list[int]:
    """``f[k]``: the number of paths from a start event to event ``k`` (module docstring).

    Args:
        graph: the ABI graph.
        link: its :func:`cep.trends.links.links` (computed when not given).

    Returns:
        One exact Python int per event vertex, in position order.
    """
    ln = links(graph) if link is None else link
    n = graph.n_events
    if n == 0:
        return []
    if not ln.ranges:
        return _run_keys(ln)
    if len(ln.ranges) == 1 and ln.ranges[0].shape == POINTS_AND_GAPS:
        ix = ln.ranges[0]
        every = _prefix_plan(ln.key_out, ln.key_in, ln.tie_start)
        point = point_of(ix)
        sub_out, sub_in = _pair_keys(ln.key_out, point, ln.key_in, ix.from_vertex)
        same = _prefix_plan(sub_out, sub_in, ln.tie_start)
        return _run_prefix([every], [same])
    if len(ln.ranges) == 1:
        dep, qry = range_coordinates(ln.ranges[0])
        direction = _monotone(ln.key_out, dep)
        if direction:
            plan = _prefix_plan(ln.key_out, ln.key_in, ln.tie_start, dep, qry, direction)
            return _run_prefix([plan])
        return _run_fenwick(ln, dep, qry)
    return _run_edges(graph, ln)


# ---------------------------------------------------------------------------------------------
# Join keys only: one running sum per key
# ---------------------------------------------------------------------------------------------


def _run_keys(ln: Links) -> list[int]:
    """The DP when every predicate is ``=``: ``acc[key]`` is the sum of ``f`` over the events
    that offered ``key`` so far, so ``f[k] = acc[key_in[k]] or 1``; ``O(1)`` per event.

    An event's deposit waits until its tie group is over (equal timestamps never link). About
    0.3 s for 10**6 events (CPython 3.11, one core).
    """
    n_keys = ln.n_keys
    acc = [0] * (n_keys + 2)  # slot n_keys: read by events without a key (always 0); n_keys + 1: written
    reads = np.where(ln.key_in >= 0, ln.key_in, n_keys).tolist()
    writes = np.where(ln.key_out >= 0, ln.key_out, n_keys + 1).tolist()
    f: list[int] = []
    append = f.append
    if not ln.has_ties:
        for a, b in zip(reads, writes):
            v = acc[a] or 1
            append(v)
            acc[b] += v
        return f
    n = len(reads)
    starts = np.flatnonzero(np.r_[True, ln.tie_start[1:] != ln.tie_start[:-1]]).tolist() + [n]
    for s0, s1 in zip(starts[:-1], starts[1:]):
        if s1 == s0 + 1:
            v = acc[reads[s0]] or 1
            append(v)
            acc[writes[s0]] += v
            continue
        group = [acc[a] or 1 for a in reads[s0:s1]]
        f.extend(group)
        for b, v in zip(writes[s0:s1], group):
            acc[b] += v
    return f


# ---------------------------------------------------------------------------------------------
# Prefix-sum plans: the predecessors are a contiguous run of one key's deposits
# ---------------------------------------------------------------------------------------------


class _Plan:
    """Slots of a flat prefix-sum list: per key ``c`` deposits own ``c + 1`` slots.

    ``hi[k]``/``lo[k]``: the slots whose difference is the sum over ``k``'s predecessors;
    ``write[j]``: the slot event ``j``'s deposit completes (``write - 1`` holds the sum before
    it); ``size``: slots in use (two spare slots after them absorb events that deposit nothing).
    """

    def __init__(self, hi: np.ndarray, lo: np.ndarray, write: np.ndarray, size: int) -> None:
        self.hi, self.lo, self.write, self.size = hi, lo, write, size


def _prefix_plan(dep_key: np.ndarray, q_key: np.ndarray, q_limit: np.ndarray,
                 dep: np.ndarray | None = None, qry: np.ndarray | None = None, direction: int = 0) -> _Plan:
    """Vectorised slots for ``sum f[j]`` over deposits ``j`` of key ``q_key[k]`` with
    ``j < q_limit[k]`` (and, with a coordinate, ``dep[j] <= qry[k]``; ``direction`` +1 when
    ``dep`` never decreases within a key in position order, -1 when it never increases)."""
    n = len(dep_key)
    dpos = np.flatnonzero(dep_key >= 0).astype(np.int64)
    order = np.argsort(dep_key[dpos], kind="stable")
    spos = dpos[order]
    skey = dep_key[spos]
    m = len(spos)
    new = np.ones(m, dtype=bool)
    new[1:] = skey[1:] != skey[:-1]
    ordinal = np.cumsum(new) - 1
    spare = m + int(new.sum())
    write = np.full(n, spare + 1, dtype=np.int64)
    write[spos] = np.arange(m, dtype=np.int64) + ordinal + 1
    width = np.int64(n + 1)
    codes = skey * width + spos
    valid = q_key >= 0
    qk = np.where(valid, q_key, 0)
    # Per key: its first deposit in sorted order and the first slot of its block.
    n_keys = int(max(q_key.max(initial=-1), dep_key.max(initial=-1))) + 1
    first_of = np.searchsorted(skey, np.arange(n_keys + 1))
    ordinal_of = np.cumsum(np.r_[0, np.diff(first_of) > 0])[:n_keys + 1] if n_keys else np.zeros(1, dtype=np.int64)
    first = first_of[qk]
    b = np.searchsorted(codes, qk * width + q_limit) - first
    base = first + ordinal_of[qk]
    hi = base + b
    lo = base.copy()
    if dep is not None and qry is not None and m:
        d = dep[spos]
        shift = int(min(d.min(), qry[valid].min(initial=int(d.min()))))
        span = np.int64(max(int(d.max()), int(qry[valid].max(initial=int(d.max())))) - shift + 1)
        q = np.clip(qry - shift, 0, span - 1)
        if direction > 0:
            c2 = skey * span + (d - shift)
            a = np.searchsorted(c2, qk * span + q, side="right") - first
            hi = base + np.minimum(a, b)
        else:
            c2 = skey * span + (span - 1 - (d - shift))
            a = np.searchsorted(c2, qk * span + (span - 1 - q), side="left") - first
            lo = base + np.minimum(a, b)
    hi = np.where(valid, hi, 0)
    lo = np.where(valid, np.minimum(lo, hi), 0)
    return _Plan(hi, lo, write, spare + 2)


def _run_prefix(plus: list[_Plan], minus: tuple[_Plan, ...] | list[_Plan] = ()) -> list[int]:
    """The DP with prefix-sum plans: ``f[k] = sum(plus) - sum(minus) or 1``; O(1) per event."""
    f: list[int] = []
    append = f.append
    if len(plus) == 1 and not minus:
        p = plus[0]
        cells = [0] * p.size
        for h, lo, w in zip(p.hi.tolist(), p.lo.tolist(), p.write.tolist()):
            v = cells[h] - cells[lo] or 1
            append(v)
            cells[w] = cells[w - 1] + v
        return f
    a, b = plus[0], minus[0]
    ca, cb = [0] * a.size, [0] * b.size
    for ha, la, wa, hb, lb, wb in zip(a.hi.tolist(), a.lo.tolist(), a.write.tolist(),
                                      b.hi.tolist(), b.lo.tolist(), b.write.tolist()):
        v = (ca[ha] - ca[la]) - (cb[hb] - cb[lb]) or 1
        append(v)
        ca[wa] = ca[wa - 1] + v
        cb[wb] = cb[wb - 1] + v
    return f


def _pair_keys(key_out: np.ndarray, point: np.ndarray, key_in: np.ndarray, frm: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """Dense keys of (key, vertex) pairs for deposits and queries (-1 stays -1)."""
    n = len(key_out)
    width = np.int64(max(int(point.max(initial=0)), int(frm.max(initial=0))) + 1)
    c_out = np.where(key_out >= 0, key_out * width + point, -1)
    c_in = np.where((key_in >= 0) & (frm >= 0), key_in * width + frm, -1)
    both = np.concatenate([c_out, c_in])
    _, inv = np.unique(both[both >= 0], return_inverse=True)
    dense = np.full(2 * n, -1, dtype=np.int64)
    dense[both >= 0] = inv
    return dense[:n], dense[n:]


def _monotone(key: np.ndarray, dep: np.ndarray) -> int:
    """+1 if ``dep`` never decreases within each key in position order, -1 if it never
    increases, 0 otherwise (valid deposits only)."""
    pos = np.flatnonzero(key >= 0)
    if len(pos) < 2:
        return 1
    order = np.argsort(key[pos], kind="stable")
    k, d = key[pos][order], dep[pos][order]
    same = k[1:] == k[:-1]
    step = np.diff(d)[same]
    if np.all(step >= 0):
        return 1
    if np.all(step <= 0):
        return -1
    return 0


# ---------------------------------------------------------------------------------------------
# Fenwick trees: one general order comparator
# ---------------------------------------------------------------------------------------------


def _run_fenwick(ln: Links, dep: np.ndarray, qry: np.ndarray) -> list[int]:
    """The DP with one Fenwick tree per key over its distinct deposit coordinates.

    ``O(log n)`` Python steps per event: about 3.5 microseconds an event at 10**6 events with
    small counts, 5 to 6 with 500-bit counts (CPython 3.11, one core). Events of a tie group
    query before any of them deposits (equal timestamps never link).
    """
    n = len(dep)
    vout, vin = ln.key_out >= 0, ln.key_in >= 0
    lo = int(dep[vout].min()) if vout.any() else 0
    span = np.int64((int(dep[vout].max()) if vout.any() else 0) - lo + 2)
    codes = np.where(vout, ln.key_out * span + (dep - lo), -1)
    uniq = np.unique(codes[vout])
    # Deposit: block of its key, 1-based place inside it, block size.
    kout = np.where(vout, ln.key_out, 0)
    ubase = np.searchsorted(uniq, kout * span)
    usize = np.searchsorted(uniq, (kout + 1) * span) - ubase
    uplace = np.searchsorted(uniq, codes) - ubase + 1
    usize = np.where(vout, usize, 0)
    uplace = np.where(vout, uplace, 1)
    # Query: block of its key, number of the key's coordinates <= qry.
    kin = np.where(vin, ln.key_in, 0)
    qbase = np.searchsorted(uniq, kin * span)
    q = np.clip(qry - lo, -1, span - 2)
    qlen = np.searchsorted(uniq, kin * span + q, side="right") - qbase
    qlen = np.where(vin, qlen, 0)
    # One list per key (1-based Fenwick arrays); a spare empty tree for events without a key.
    block_starts = np.flatnonzero(np.r_[True, (uniq[1:] // span) != (uniq[:-1] // span)]) if len(uniq) else \
        np.zeros(0, dtype=np.int64)
    sizes = np.diff(np.r_[block_starts, len(uniq)]).tolist()
    trees = [[0] * (size + 1) for size in sizes] + [[0]]
    spare = len(sizes)
    qtree = np.where(vin & (qlen > 0), np.searchsorted(block_starts, qbase, side="right") - 1, spare)
    utree = np.where(vout, np.searchsorted(block_starts, ubase, side="right") - 1, spare)
    f: list[int] = [0] * n
    columns = (qtree.tolist(), qlen.tolist(), utree.tolist(), uplace.tolist(), usize.tolist())
    if not ln.has_ties:
        k = 0
        for qt, ql, ut, up, us in zip(*columns):
            t = trees[qt]
            s = 0
            i = ql
            while i:
                s += t[i]
                i &= i - 1
            v = s or 1
            f[k] = v
            k += 1
            t = trees[ut]
            i = up
            while i <= us:
                t[i] += v
                i += i & -i
        return f
    qt_l, ql_l, ut_l, up_l, us_l = columns
    starts = np.flatnonzero(np.r_[True, ln.tie_start[1:] != ln.tie_start[:-1]]).tolist() + [n]
    for s0, s1 in zip(starts[:-1], starts[1:]):
        for k in range(s0, s1):  # every query of the tie group before any of its deposits
            t = trees[qt_l[k]]
            s = 0
            i = ql_l[k]
            while i:
                s += t[i]
                i &= i - 1
            f[k] = s or 1
        for k in range(s0, s1):
            v = f[k]
            t = trees[ut_l[k]]
            i, us = up_l[k], us_l[k]
            while i <= us:
                t[i] += v
                i += i & -i
    return f


# ---------------------------------------------------------------------------------------------
# Explicit edges: two or more range predicates
# ---------------------------------------------------------------------------------------------


def _run_edges(graph: TrendGraph, ln: Links) -> list[int]:
    """The DP over enumerated edges, grouped by their target: ``O(n + E)``.

    A sum per event over its predecessors (C-level ``sum(map(...))``): about 1 microsecond per
    edge (17.8 million edges of two order comparators over 20,000 events: 20 s), the price
    of conjunctions of two or more range predicates.
    """
    from cep.trends.edges import enumerate_edges

    n = graph.n_events
    src, dst = enumerate_edges(graph, ln)
    order = np.argsort(dst, kind="stable")
    preds = src[order].tolist()
    offsets = np.searchsorted(dst[order], np.arange(n + 1)).tolist()
    f: list[int] = []
    get = f.__getitem__
    for a, b in zip(offsets[:-1], offsets[1:]):
        f.append(sum(map(get, preds[a:b])) or 1)
    return f
