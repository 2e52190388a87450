"""The brute-force oracle of sketch queries: docs/sketch.md section 4 read literally.

No tree and no numpy: the leaves are computed straight from the events (leaf ``j`` holds
positions ``j*C .. j*C + C - 1``, the last one possibly open), or the caller gives the units
(e.g. a cut at a higher level, with exact name sets). Then:

- **skip-till-any-match** and **strict-contiguity** enumerate every tuple of units for the
  binding slots (``itertools.product`` over the units that hold each slot's names) and keep
  the tuples the definitions accept;
- **skip-till-next-match** starts a run at every unit satisfying the first component and scans
  the units one by one for each next component, then checks ``NOT`` and ``WITHIN``.

Under strict-contiguity an ``AND`` component is the thesis's reading (Baltus 2021, section 4.2,
and 4.3.4: "the disjunction of all permutations"): some order of its names puts each next name
in the same unit as the one before or in the unit right after it. With every name in one unit
that is case (1), "all events occur in the Bloom filter of a single node"; with every name in
its own unit it is case (2), a permutation as a sequence over strictly contiguous nodes; names
sharing a unit inside such a sequence are the mixed forms between the two (docs/sketch.md
section 4).

A match is ``(pos_start of the first unit, pos_end of the last unit, ts_start of the first unit,
ts_end of the last unit, node ids bound per slot)``; the answer is the sorted set of them. With
``resume="after-match"`` (the thesis's sections 4.3.1 and 4.3.2: the interval "is saved and the
search continues starting from the leaf that contains the last event") the sorted set is then
walked from the left: the first record is kept, and each later record is kept when its first
unit is at or after the last unit of the record kept before it and after that record's first
unit. Small inputs only: it is meant to be obviously right, not fast.

Example:
    >>> units = leaf_sets(list("ABxCBAC"), ts=range(7), window=2)
    >>> [sorted(u.names) for u in units]
    [['A', 'B'], ['C', 'x'], ['A', 'B'], ['C']]
    >>> oracle_sketch_matches("PATTERN A; C", units)
    [(0, 3, 0, 3, (0, 1)), (4, 6, 4, 6, (2, 3))]
    >>> oracle_sketch_matches("PATTERN A; C", units, policy="skip-till-any-match")
    [(0, 3, 0, 3, (0, 1)), (0, 6, 0, 6, (0, 3)), (4, 6, 4, 6, (2, 3))]
    >>> oracle_sketch_matches("PATTERN A; C", units, policy="strict-contiguity")
    [(0, 3, 0, 3, (0, 1)), (4, 6, 4, 6, (2, 3))]
    >>> oracle_sketch_matches("PATTERN AND(B, C)", units, policy="strict-contiguity")
    [(0, 3, 0, 3, (0, 1)), (2, 5, 2, 5, (2, 1)), (4, 6, 4, 6, (2, 3))]
    >>> oracle_sketch_matches("PATTERN A; C", units, policy="skip-till-any-match",
    ...                       resume="after-match")
    [(0, 3, 0, 3, (0, 1)), (4, 6, 4, 6, (2, 3))]
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from cep.lang.policy import ANY_MATCH, NEXT_MATCH, STRICT
from cep.sketch.query import (
    SketchArgumentError,
    SketchLimitError,
    SketchQuery,
    compile_sketch_query,
)

DEFAULT_MAX_CANDIDATES = 2_000_000
RESUMES = ("every-start", "after-match")

Record = tuple[int, int, int, int, tuple[int, ...]]


@dataclass(frozen=True)
class OracleUnit:
    """One unit: its exact set of names, its intervals and its node id."""

    names: frozenset[str]
    pos_start: int
    pos_end: int
    ts_start: int
    ts_end: int
    node_id: int


def leaf_sets(names: Sequence[str], ts: Sequence[int], window: int) -> list[OracleUnit]:
    """The exact leaves of one stream: leaf ``j`` holds positions ``j*C .. j*C + C - 1``.

    Node ids are ``(0 << 48) | j``; the last leaf may hold fewer than ``C`` events (the open leaf).

    Example:
        >>> [(u.pos_start, u.pos_end, sorted(u.names)) for u in leaf_sets("ABC", [5, 6, 9], 2)]
        [(0, 1, ['A', 'B']), (2, 2, ['C'])]
    """
    names, ts = list(names), list(ts)
    out = []
    for j, start in enumerate(range(0, len(names), window)):
        end = min(start + window, len(names)) - 1
        out.append(OracleUnit(frozenset(names[start:end + 1]), start, end, int(ts[start]), int(ts[end]), j))
    return out


def oracle_sketch_events(query: SketchQuery | str, names: Sequence[str], ts: Sequence[int], window: int, *,
                         policy: str | None = None, max_candidates: int = DEFAULT_MAX_CANDIDATES,
                         resume: str = "every-start") -> list[Record]:
    """The leaf-level answer straight from the events (see :func:`oracle_sketch_matches`)."""
    return oracle_sketch_matches(query, leaf_sets(names, ts, window), policy=policy,
                                 max_candidates=max_candidates, resume=resume)


def oracle_sketch_exists(query: SketchQuery | str, units: Sequence[OracleUnit], *, policy: str | None = None,
                         max_candidates: int = DEFAULT_MAX_CANDIDATES) -> bool:
    """Whether the query has a match over ``units`` (the same under either ``resume``)."""
    return bool(oracle_sketch_matches(query, units, policy=policy, max_candidates=max_candidates))


def oracle_sketch_matches(query: SketchQuery | str, units: Sequence[OracleUnit], *, policy: str | None = None,
                          max_candidates: int = DEFAULT_MAX_CANDIDATES,
                          resume: str = "every-start") -> list[Record]:
    """Every match of ``query`` over ``units`` (in position order), by brute force.

    Args:
        query: a compiled sketch query or its text.
        units: the units in position order, each with its exact name set.
        policy: the policy when ``query`` is text naming none.
        max_candidates: the most unit tuples skip-till-any / strict may enumerate.
        resume: ``"every-start"`` (every match) or ``"after-match"`` (the matches the thesis's
            search keeps; see the module docstring).

    Returns:
        The sorted, distinct match records ``(pos_start, pos_end, ts_start, ts_end, node_ids)``.

    Raises:
        SketchLimitError: more than ``max_candidates`` tuples to enumerate.
        SketchArgumentError: an unknown ``resume``.
    """
    if resume not in RESUMES:
        raise SketchArgumentError(f"resume must be one of {', '.join(RESUMES)}, not {resume!r}")
    q = compile_sketch_query(query, policy) if isinstance(query, str) else query
    us = [u for u in units if _in_window(q, u)]
    # One slot per name/OR component and per name of an AND component: (component, names).
    slots: list[tuple[int, tuple[str, ...]]] = []
    for c, comp in enumerate(q.components):
        if comp.kind == "and":
            slots.extend((c, (name,)) for name in comp.names)
        else:
            slots.append((c, comp.names))

    def holds(i: int, group: tuple[str, ...]) -> bool:
        return any(name in us[i].names for name in group)

    found: dict[Record, tuple[int, int]] = {}  # record -> (its first unit, its last unit)
    if q.policy == NEXT_MATCH:
        bindings = _runs(q, us, slots, holds)
    else:
        assert q.policy in (ANY_MATCH, STRICT)
        lists = [[i for i in range(len(us)) if holds(i, group)] for _, group in slots]
        total = 1
        for lst in lists:
            total *= len(lst)
        if total > max_candidates:
            raise SketchLimitError(f"the sketch oracle would enumerate {total} unit tuples, more than "
                                   f"max_candidates={max_candidates}")
        bindings = (list(t) for t in itertools.product(*lists))
    for binding in bindings:
        if _accept(q, us, slots, binding):
            first, last = min(binding), max(binding)
            found[(us[first].pos_start, us[last].pos_end, us[first].ts_start, us[last].ts_end,
                   tuple(us[i].node_id for i in binding))] = (first, last)
    if resume == "every-start":
        return sorted(found)
    kept: list[Record] = []
    for record in sorted(found):
        first, _ = found[record]
        if kept:
            kept_first, kept_last = found[kept[-1]]
            # The search resumes at the unit holding the kept match's last event; a match
            # starting in the kept match's own first unit is not a new find.
            if first < kept_last or first <= kept_first:
                continue
        kept.append(record)
    return kept


def _in_window(q: SketchQuery, u: OracleUnit) -> bool:
    """``WINDOW [a, b]``: the unit's interval intersects ``[a, b]``."""
    if q.window is None:
        return True
    if q.window.kind == "POSITION":
        return u.pos_end >= q.window.start and u.pos_start <= q.window.end
    return u.ts_end >= q.window.start and u.ts_start <= q.window.end


def _runs(q: SketchQuery, us: list[OracleUnit], slots: list[tuple[int, tuple[str, ...]]], holds) -> list[list[int]]:
    """skip-till-next-match: one run per unit satisfying the first component."""
    runs = []
    first_names = q.components[0].names
    for start in range(len(us)):
        if not holds(start, first_names):
            continue
        binding: list[int] = []
        prev_last = start - 1  # the first component's names take their first unit at or after start
        ok = True
        for c in range(len(q.components)):
            groups = [group for comp, group in slots if comp == c]
            chosen = []
            for group in groups:
                j = prev_last + 1
                while j < len(us) and not holds(j, group):
                    j += 1
                if j == len(us):
                    ok = False
                    break
                chosen.append(j)
            if not ok:
                break
            binding.extend(chosen)
            prev_last = max(chosen)
        if ok:
            runs.append(binding)
    return runs


def _accept(q: SketchQuery, us: list[OracleUnit], slots: list[tuple[int, tuple[str, ...]]],
            binding: list[int]) -> bool:
    """Every rule of docs/sketch.md section 4 except the policy's choice of units."""
    k = len(q.components)
    units_of = [[u for (c, _), u in zip(slots, binding) if c == comp] for comp in range(k)]
    for (_, group), i in zip(slots, binding):
        if not any(name in us[i].names for name in group):
            return False
    for c in range(k - 1):
        # strictly increasing unit order between components
        if min(units_of[c + 1]) <= max(units_of[c]):
            return False
        if q.policy == STRICT and min(units_of[c + 1]) != max(units_of[c]) + 1:
            return False
        # NOT between: no unit strictly between the two components holds a negated name
        for v in range(max(units_of[c]) + 1, min(units_of[c + 1])):
            if any(name in us[v].names for name in q.gaps[c]):
                return False
    if q.policy == STRICT:
        # An AND component: some permutation of its names lies over consecutive units, each
        # next name in the same unit as the one before it or in the unit right after it.
        # (A name / OR component has one unit: always true.)
        for c in range(k):
            if not any(all(b - a in (0, 1) for a, b in zip(order, order[1:]))
                       for order in itertools.permutations(units_of[c])):
                return False
    first, last = min(binding), max(binding)
    w = q.within
    if w is not None:
        if w.on_positions:
            if not us[last].pos_start - us[first].pos_end < w.amount:
                return False
        elif not us[last].ts_start - us[first].ts_end < w.amount:
            return False
    if q.trailing:
        assert w is not None
        for v in range(last + 1, len(us)):
            before_close = (us[v].pos_start < us[first].pos_start + w.amount if w.on_positions
                            else us[v].ts_start < us[first].ts_start + w.amount)
            if before_close and any(name in us[v].names for name in q.trailing):
                return False
    return True
