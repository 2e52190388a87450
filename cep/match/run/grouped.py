"""FAEM's grouped Kleene closure, the run half: the any-match engine's bindings grouped
into composite events (:func:`group_blocks`); the definition, the paper's sections
and the expansion of each closure are in :mod:`cep.match.compile.grouping`.

Example:
    >>> from cep.match.compile.compiler import compile_query
    >>> from cep.match.run.engine import find_matches
    >>> from cep.match.columnar.stream import EventStream
    >>> s = EventStream.from_columns(ids=range(7), ts=range(7), types=list("MMGGMGM"))
    >>> cq = compile_query("PATTERN AND(G, M+) WITHIN 5 EVENTS",
    ...                    policy="skip-till-any-match-grouped")
    >>> [m.positions for m in find_matches(cq, s).to_matches()]  # m1m2g3 ... g6m7 of Fig. 3
    [(0, 1, 2), (0, 1, 3), (1, 4, 5), (2, 4, 6), (3, 4, 6), (5, 6)]
"""

from __future__ import annotations

import itertools
import math
from typing import Sequence

import numpy as np

from cep.match.columnar.arrays import Block
from cep.match.compile.grouping import Expansion
from cep.match.limits import MatchLimits, check_matches

__all__ = ["group_blocks"]

def group_blocks(expansions: Sequence[Expansion], found: Sequence[Sequence[Block]],
                 limits: MatchLimits = MatchLimits()) -> list[Block]:
    """The grouped matches, from the any-match blocks of each expansion (same order).

    Rows of one expansion that bind the same single events (and aliases) are one composite:
    each closure takes every event it was bound to in those rows. A composite that leaves an
    empty-able closure out is kept only when that closure has no event for those single
    events (the expansion with it present has no such row).
    """
    # Bases whose one closure is grouped with numpy (+ and *, one alias): their expansions
    # never reach the per-composite path below.
    simple = {e.base for e in expansions if not e.dropped and _simple(e)}
    fast: list[Block] = []
    present: dict[int, dict[tuple[str, ...], set[tuple[int, ...]]]] = {}
    slow: list[tuple[Expansion, dict[tuple, list[set[tuple[int, str]]]]]] = []
    for e, blocks in zip(expansions, found):
        if e.base in simple and not e.dropped:
            rows, keys = _whole_closure(e, blocks)
            fast += rows
            for names, seen in keys.items():
                present.setdefault(e.base, {}).setdefault(names, set()).update(seen)
        elif e.base not in simple:
            slow.append((e, _groups(e, blocks)))
    for e, blocks in zip(expansions, found):
        if e.base in simple and e.dropped:  # the * closure left out: where it has no event
            keys = present.get(e.base, {})
            for pos, variables in blocks:
                seen = keys.get(tuple(variables), set())
                keep = [tuple(row) not in seen for row in np.asarray(pos).tolist()]
                if any(keep):
                    fast.append((np.asarray(pos)[np.array(keep)], tuple(variables)))
    # The other expansions with a closure that may be empty compare their keys here.
    keys_of: dict[tuple[int, frozenset[int]], set[tuple]] = {}
    for e, g in slow:
        keys_of.setdefault((e.base, e.dropped), set()).update(g)
    kept = [(e, [(key, members) for key, members in g.items()
                 if not any(key in keys_of.get((e.base, e.dropped - {x}), ())
                            for x in e.dropped)])
            for e, g in slow]  # else that closure has events: those composites stand
    # Count before building: {n} closures give C(size, n) composites per group.
    check_matches(limits, sum(len(pos) for pos, _ in fast) + sum(
        _count(e, members) for e, rows in kept for _, members in rows))
    return fast + [block for e, rows in kept for key, members in rows
                   for block in _composites(e, key, members)]


def _simple(e: Expansion) -> bool:
    """One unbounded closure of one alias, the only closure that may be empty if any."""
    return (e.one_alias and len(e.closures) == 1 and e.closures[0][3] is None
            and e.optional <= {e.closures[0][1]})


def _whole_closure(e: Expansion, blocks: Sequence[Block]
                   ) -> tuple[list[Block], dict[tuple[str, ...], set[tuple[int, ...]]]]:
    """The composites of an expansion of :func:`_simple` shape, with numpy alone, and the
    single events (by their names) that have closure events at all.

    Rows are sorted by single events then closure event; each run of equal single events is
    one composite, whose closure events are the run's (between its neighbours, in order).
    Composites of equal size form one block. Measured on 10^6 events (BENCHMARKS.md, FAEM):
    the per-group Python step of :func:`_groups` cost ~25 µs per composite.
    """
    slot, _, low, _ = e.closures[0]
    by_names: dict[tuple[str, ...], list[np.ndarray]] = {}
    for pos, variables in blocks:
        if len(pos):
            by_names.setdefault(tuple(variables), []).append(np.asarray(pos, dtype=np.int64))
    out: list[Block] = []
    keys: dict[tuple[str, ...], set[tuple[int, ...]]] = {}
    for variables, parts in by_names.items():
        pos = np.unique(np.concatenate(parts), axis=0)
        width = pos.shape[1]
        before, after = list(range(slot)), list(range(slot + 1, width))
        # Single events first, the closure event last (lexsort: the last key is primary).
        pos = pos[np.lexsort([pos[:, slot]] + [pos[:, j] for j in reversed(before + after)])]
        head = pos[:, before + after]
        starts = np.flatnonzero(np.concatenate(([True], (head[1:] != head[:-1]).any(axis=1))))
        sizes = np.diff(np.append(starts, len(pos)))
        if e.optional:
            names = tuple(variables[j] for j in before + after)
            keys.setdefault(names, set()).update(map(tuple, head[starts].tolist()))
        for k in np.unique(sizes[sizes >= max(low, 1)]).tolist():
            first = starts[sizes == k]
            closure = pos[first[:, None] + np.arange(k), slot]
            rows = np.hstack([pos[first][:, before], closure, pos[first][:, after]])
            out.append((rows, tuple([variables[j] for j in before]
                                    + [f"{variables[slot]}[{i}]" for i in range(1, k + 1)]
                                    + [variables[j] for j in after])))
    return out, keys


def _count(e: Expansion, members: list[set[tuple[int, str]]]) -> int:
    total = 1
    for (_, _, low, high), group in zip(e.closures, members):
        if len(group) < max(low, 1):
            return 0
        total *= math.comb(len(group), low) if high == low else 1
    return total


def _groups(e: Expansion, blocks: Sequence[Block]) -> dict[tuple, list[set[tuple[int, str]]]]:
    """Single events ``((component, pos, alias), ...)`` -> per closure, its
    ``{(pos, alias)}`` (components, not slots, so that expansions compare keys)."""
    slots = [c[0] for c in e.closures]
    out: dict[tuple, list[set[tuple[int, str]]]] = {}
    for pos, variables in blocks:
        pos = np.unique(np.asarray(pos, dtype=np.int64), axis=0)  # sorted, anchors first
        if not len(pos):
            continue
        anchors = [j for j in range(pos.shape[1]) if j not in slots]
        # Rows sharing their single events are one group: find the group starts with numpy
        # (rows are sorted by every column), then one Python step per group, not per row.
        ordered = pos[np.lexsort([pos[:, j] for j in reversed(anchors + slots)])]
        head = ordered[:, anchors]
        starts = np.flatnonzero(np.concatenate(([True], (head[1:] != head[:-1]).any(axis=1))))
        bounds = np.append(starts, len(ordered)).tolist()
        names = [variables[j] for j in anchors]
        components = [e.components[j] for j in anchors]
        for a, b in zip(bounds[:-1], bounds[1:]):
            key = tuple(zip(components, ordered[a, anchors].tolist(), names))
            members = out.setdefault(key, [set() for _ in slots])
            for k, slot in enumerate(slots):
                members[k].update((p, variables[slot]) for p in set(ordered[a:b, slot].tolist()))
    return out


def _composites(e: Expansion, key: tuple, members: list[set[tuple[int, str]]]) -> list[Block]:
    """The composite events of one group: one, or one per choice of ``{n}`` closure events."""
    choices: list[list[tuple[tuple[int, str], ...]]] = []
    for (_, _, low, high), group in zip(e.closures, members):
        ordered = tuple(sorted(group))
        if len(ordered) < max(low, 1):
            return []
        if high is not None and high == low:
            choices.append(list(itertools.combinations(ordered, low)))
        else:
            choices.append([ordered])
    out: list[Block] = []
    for picked in itertools.product(*choices):
        events = [(pos, alias, False) for _, pos, alias in key]
        for taken in picked:
            events += [(pos, alias, True) for pos, alias in taken]
        events.sort()
        counts: dict[str, int] = {}
        names = []
        for _, alias, closure in events:
            if closure:
                counts[alias] = counts.get(alias, 0) + 1
                names.append(f"{alias}[{counts[alias]}]")
            else:
                names.append(alias)
        out.append((np.array([[pos for pos, _, _ in events]], dtype=np.int64), tuple(names)))
    return out
