"""The pre-filter: start events (no predecessor) and end events (no successor), vectorised.

Mei et al., ICPP 2021, section 5.4, Algorithm 3: a complete trend starts at an event no
event of the window can precede and ends at one no event can follow, so before any trend is
counted or extracted, the *start* and *end* vertices are found from the ABI graph alone,
without materialising edges. Here, for ``k`` (start test) and ``j`` (end test):

- ``=`` predicates only (one join key): ``k`` has a predecessor iff the first event offering
  ``key_in[k]`` comes before ``k``'s tie group; ``j`` has a successor iff the last event
  asking ``key_out[j]`` comes after ``j``'s tie group (``np.minimum.at`` / ``np.maximum.at``);
- plus one order comparator: a running minimum (maximum) of the range coordinate per key in
  time order, by one ``lexsort`` and one accumulate;
- plus one ``<>``: running minimum and maximum of the excluded value per key (a predecessor
  exists unless every earlier candidate holds exactly ``lval(k)``);
- two or more range predicates: from the enumerated edges (:mod:`cep.trends.edges`).

An event that is both a start and an end is a complete trend of length 1.

Example:
    >>> import numpy as np
    >>> from cep.trends.graph import build_graph
    >>> g = build_graph("PATTERN s+ WHERE s[i].p > s[i-1].p", np.arange(4), {"p": np.array([3, 1, 2, 5])})
    >>> starts, ends = endpoints(g)
    >>> starts.tolist(), ends.tolist()
    ([True, True, False, False], [False, False, False, True])
"""

from __future__ import annotations

import numpy as np

from cep.trends.graph import POINTS_AND_GAPS, TrendGraph
from cep.trends.links import Links, links, point_of, range_coordinates, segmented_running


def endpoints(graph: TrendGraph, link: Links | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(is_start, is_end)``: events without a predecessor, events without a successor.

    Args:
        graph: the ABI graph.
        link: its :func:`cep.trends.links.links` (computed when not given).

    Returns:
        Two boolean arrays over the event vertices.

    Complexity:
        ``O(n log n)`` numpy work for at most one range predicate; with two or more, the cost
        of enumerating the edges.
    """
    ln = links(graph) if link is None else link
    if len(ln.ranges) >= 2:
        src, dst = _edges(graph, ln)
        n = graph.n_events
        return np.bincount(dst, minlength=n) == 0, np.bincount(src, minlength=n) == 0
    return start_events(graph, ln), end_events(graph, ln)


def start_events(graph: TrendGraph, link: Links | None = None) -> np.ndarray:
    """Boolean mask of the events no event of their window can precede (Algorithm 3)."""
    ln = links(graph) if link is None else link
    n = graph.n_events
    pos = np.arange(n, dtype=np.int64)
    vin, vout = ln.key_in >= 0, ln.key_out >= 0
    has_pred = np.zeros(n, dtype=bool)
    if not ln.ranges:
        first_out = np.full(max(ln.n_keys, 1), n, dtype=np.int64)
        np.minimum.at(first_out, ln.key_out[vout], pos[vout])
        has_pred = vin & (first_out[np.where(vin, ln.key_in, 0)] < ln.tie_start)
    elif len(ln.ranges) == 1 and ln.ranges[0].shape != POINTS_AND_GAPS:
        dep, qry = range_coordinates(ln.ranges[0])
        # k has a predecessor: min(dep[j]) over earlier j of its key is <= qry[k].
        low, found = _scan(ln.key_out[vout], 2 * pos[vout] + 1, dep[vout],
                           ln.key_in[vin], 2 * ln.tie_start[vin], ("min",))[0]
        has_pred[vin] = found & (low <= qry[vin])
    elif len(ln.ranges) == 1:
        point, frm = point_of(ln.ranges[0]), ln.ranges[0].from_vertex
        # k has a predecessor unless every earlier candidate of its key holds exactly lval(k).
        (lo, found), (hi, _) = _scan(ln.key_out[vout], 2 * pos[vout] + 1, point[vout],
                                     ln.key_in[vin], 2 * ln.tie_start[vin], ("min", "max"))
        has_pred[vin] = found & ((lo != frm[vin]) | (hi != frm[vin]))
    else:
        has_pred = np.bincount(_edges(graph, ln)[1], minlength=n) > 0
    return ~has_pred


def end_events(graph: TrendGraph, link: Links | None = None) -> np.ndarray:
    """Boolean mask of the events no event of their window can follow (Algorithm 3)."""
    ln = links(graph) if link is None else link
    n = graph.n_events
    pos = np.arange(n, dtype=np.int64)
    vin, vout = ln.key_in >= 0, ln.key_out >= 0
    has_succ = np.zeros(n, dtype=bool)
    if not ln.ranges:
        last_in = np.full(max(ln.n_keys, 1), -1, dtype=np.int64)
        np.maximum.at(last_in, ln.key_in[vin], pos[vin])
        has_succ = vout & (last_in[np.where(vout, ln.key_out, 0)] >= ln.tie_end)
    elif len(ln.ranges) == 1 and ln.ranges[0].shape != POINTS_AND_GAPS:
        dep, qry = range_coordinates(ln.ranges[0])
        # j has a successor: max(qry[k]) over later k of its key is >= dep[j].
        high, found = _scan(ln.key_in[vin], -2 * pos[vin], qry[vin],
                            ln.key_out[vout], -(2 * ln.tie_end[vout] - 1), ("max",))[0]
        has_succ[vout] = found & (high >= dep[vout])
    elif len(ln.ranges) == 1:
        point, frm = point_of(ln.ranges[0]), ln.ranges[0].from_vertex
        (lo, found), (hi, _) = _scan(ln.key_in[vin], -2 * pos[vin], frm[vin],
                                     ln.key_out[vout], -(2 * ln.tie_end[vout] - 1), ("min", "max"))
        has_succ[vout] = found & ((lo != point[vout]) | (hi != point[vout]))
    else:
        has_succ = np.bincount(_edges(graph, ln)[0], minlength=n) > 0
    return ~has_succ


def _edges(graph: TrendGraph, ln: Links) -> tuple[np.ndarray, np.ndarray]:
    from cep.trends.edges import enumerate_edges

    return enumerate_edges(graph, ln)


def _scan(dep_key: np.ndarray, dep_t: np.ndarray, dep_val: np.ndarray, q_key: np.ndarray,
          q_t: np.ndarray, kinds: tuple[str, ...]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per query and per kind: min/max of ``dep_val`` over deposits with the same key and
    ``dep_t < q_t``, and whether any deposit qualified.

    Times of deposits and queries never coincide (callers use odd and even times), so one
    ``argsort`` of ``key * T + time`` orders everything by (key, time).
    """
    nd, nq = len(dep_key), len(q_key)
    if nq == 0 or nd == 0:
        return [(np.zeros(nq, dtype=np.int64), np.zeros(nq, dtype=bool)) for _ in kinds]
    keys = np.concatenate([dep_key, q_key]).astype(np.int64)
    times = np.concatenate([dep_t, q_t]).astype(np.int64)
    t0 = int(times.min())
    width = np.int64(int(times.max()) - t0 + 1)
    order = np.argsort(keys * width + (times - t0))
    sorted_keys = keys[order]
    out = []
    for kind in kinds:
        neutral = int(dep_val.max()) + 1 if kind == "min" else int(dep_val.min()) - 1
        values = np.concatenate([dep_val.astype(np.int64), np.full(nq, neutral, dtype=np.int64)])
        run = segmented_running(sorted_keys, values[order], kind)
        res = np.empty(nd + nq, dtype=np.int64)
        res[order] = run
        res = res[nd:]
        out.append((res, (res < neutral) if kind == "min" else (res > neutral)))
    return out
