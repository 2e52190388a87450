"""Brute-force definitions of the process-mining functions (docs/process-mining.md).

An event is ``(key, type, ts, id)`` with ``ts`` a number (seconds, or raw units). A case is
the events of one key (NULL is one key, as ``GROUP BY`` has it), ordered by ``(ts, id)``.

* directly-follows pairs: each event of a case with the next one;
* eventually-follows pairs: each event with every later one of its case, at most ``within``
  apart when a bound is given;
* the graph: per (source, target) the pairs' count, distinct cases, smallest key, and the
  min / median / mean / max of their durations (``statistics.median``: the mean of the two
  middle values of an even count);
* a variant: a case's tuple of types; its cases, share of all cases, smallest key and the
  statistics of its cases' durations; ranked by cases (descending), then the tuple;
* case statistics: first and last event by ``(ts, id)``, duration, events.

Example:
    >>> events = [("c1", "A", 0, 1), ("c1", "B", 5, 2), ("c2", "A", 0, 3), ("c2", "B", 1, 4)]
    >>> graph(pairs(events))[("A", "B")]
    {'n': 2, 'cases': 2, 'key': 'c1', 'min': 1, 'median': 3.0, 'mean': 3.0, 'max': 5}
    >>> [(v["rank"], v["variant"], v["cases"]) for v in variants(events)]
    [(1, ('A', 'B'), 2)]
"""

from __future__ import annotations

import statistics
from typing import Any, Iterable, Sequence

__all__ = ["case_stats", "cases", "graph", "pairs", "variants"]

Event = tuple[Any, Any, float, int]


def cases(events: Iterable[Event]) -> dict[Any, list[Event]]:
    """Each key's events, ordered by ``(ts, id)``."""
    out: dict[Any, list[Event]] = {}
    for e in events:
        out.setdefault(e[0], []).append(e)
    return {k: sorted(v, key=lambda e: (e[2], e[3])) for k, v in out.items()}


def pairs(events: Iterable[Event], eventual: bool = False,
          within: float | None = None) -> list[tuple[Event, Event]]:
    """Every (earlier, later) pair of one case: neighbours, or all later events."""
    out = []
    for seq in cases(events).values():
        for i, first in enumerate(seq):
            later = seq[i + 1:] if eventual else seq[i + 1:i + 2]
            out.extend((first, e) for e in later
                       if within is None or e[2] - first[2] <= within)
    return out


def _smallest(keys: Iterable[Any]) -> Any:
    present = [k for k in keys if k is not None]
    return min(present) if present else None


def _stats(values: Sequence[float]) -> dict[str, float]:
    return {"min": min(values), "median": statistics.median(values),
            "mean": statistics.fmean(values), "max": max(values)}


def graph(found: Iterable[tuple[Event, Event]]) -> dict[tuple[Any, Any], dict[str, Any]]:
    """The pairs grouped by (source type, target type)."""
    groups: dict[tuple[Any, Any], list[tuple[Event, Event]]] = {}
    for a, b in found:
        groups.setdefault((a[1], b[1]), []).append((a, b))
    return {edge: {"n": len(ps), "cases": len({a[0] for a, _ in ps}),
                   "key": _smallest(a[0] for a, _ in ps),
                   **_stats([b[2] - a[2] for a, b in ps])}
            for edge, ps in groups.items()}


def _order(variant: tuple[Any, ...]) -> tuple[Any, ...]:
    """Spark's ascending order of arrays of strings: NULL first, then by value, element-wise;
    a prefix before the longer array."""
    return tuple((v is not None, v or "") for v in variant)


def variants(events: Iterable[Event]) -> list[dict[str, Any]]:
    """Each distinct type sequence with its statistics, ranked."""
    by_key = cases(events)
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for key, seq in by_key.items():
        groups.setdefault(tuple(e[1] for e in seq), []).append(key)
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), _order(kv[0])))
    total = len(by_key)
    return [{"rank": rank, "variant": variant, "length": len(variant), "cases": len(keys),
             "share": len(keys) / total, "key": _smallest(keys),
             **_stats([by_key[k][-1][2] - by_key[k][0][2] for k in keys])}
            for rank, (variant, keys) in enumerate(ranked, start=1)]


def case_stats(events: Iterable[Event]) -> dict[Any, dict[str, Any]]:
    """Per key: start, end, duration, events, first and last type and id."""
    return {key: {"start": seq[0][2], "end": seq[-1][2], "duration": seq[-1][2] - seq[0][2],
                  "n_events": len(seq), "first_type": seq[0][1], "last_type": seq[-1][1],
                  "first_id": seq[0][3], "last_id": seq[-1][3]}
            for key, seq in cases(events).items()}
