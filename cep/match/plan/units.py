"""Units: how a shape's Kleene closures are grouped with their event neighbours into plan leaves.

A plan for skip-till-any-match and strict contiguity (``plans.py``) joins *units*: an event
slot with the closures grouped with it. A closure is grouped ``left`` (grown forwards from the
event before it), ``right`` (grown backwards from the event after it) or ``late`` (in no unit:
combined between its two neighbours, ``late.py``). This module turns a requested grouping into
one that applies to the shape and the grouping into units; the planner (``planner.py``) and the
cost model (``estimator.py``) choose groupings, the runtime (``any_match.py``) evaluates them.

Example:
    >>> from cep.match.compile.compiler import compile_query
    >>> cq = compile_query("PATTERN A; B+; C", policy="skip-till-any-match")
    >>> shape = cq.alternatives[0].shapes[0]
    >>> units_of(shape, "left"), units_of(shape, "right"), units_of(shape, "late")
    ([(0, 1), (2, 2)], [(0, 0), (1, 2)], [(0, 1), (2, 2)])
    >>> shape = compile_query("PATTERN A; B{2}; C", policy="skip-till-any-match").alternatives[0].shapes[0]
    >>> units_of(shape, "late")  # B{2} is inserted by the join of A with C
    [(0, 0), (2, 2)]
    >>> resolve_grouping(cq.alternatives[0].shapes[0], "late")[1]
    {1: 'fell back from late to left: its size has no upper bound'}
"""

from __future__ import annotations

from typing import Mapping, Sequence, Union

from cep.match.compile.shapes import Shape
from cep.match.plan.late import late_blocker
from cep.match.plan.plans import GROUPINGS

# What a caller may ask for: one grouping for every closure, or one per slot (a sequence
# indexed by slot, or a mapping slot -> grouping); event slots are ignored.
GroupingRequest = Union[str, Sequence[Union[str, None]], Mapping[int, str], None]


def normal_grouping(shape: Shape, requested: GroupingRequest = None) -> tuple[str | None, ...]:
    """Per slot, the grouping a request amounts to (None for event slots).

    A closure can be grouped ``right`` only when the slot after it is an event or a closure
    grouped ``right``, and ``late`` only when :func:`cep.match.plan.late.late_blocker` finds
    nothing against it; otherwise it is ``left``. None requests ``left`` everywhere.

    Raises:
        ValueError: an unknown grouping name.
    """
    return resolve_grouping(shape, requested)[0]


def resolve_grouping(shape: Shape, requested: GroupingRequest = None
                     ) -> tuple[tuple[str | None, ...], dict[int, str]]:
    """:func:`normal_grouping` and, per closure whose requested grouping could not be used,
    why it fell back to ``left`` (for ``explain``).

    Raises:
        ValueError: an unknown grouping name.
    """
    n = len(shape.slots)
    if requested is None or isinstance(requested, str):
        want: list[str | None] = [requested or "left"] * n
    elif isinstance(requested, Mapping):
        want = [requested.get(k, "left") for k in range(n)]
    else:
        want = list(requested) + ["left"] * (n - len(requested))
    out: list[str | None] = [None] * n
    notes: dict[int, str] = {}
    can_right = False
    for k in reversed(range(n)):
        if shape.slots[k].kind == "event":
            can_right = True
            continue
        wanted = want[k]
        if wanted not in GROUPINGS:
            raise ValueError(f"unknown grouping {wanted!r}; expected one of {', '.join(GROUPINGS)}")
        got = wanted
        if wanted == "late":
            blocker = late_blocker(shape, k)
            if blocker is not None:
                got = "left"
                notes[k] = f"fell back from late to left: {blocker}"
        elif wanted == "right" and not can_right:
            got = "left"
            notes[k] = "fell back from right to left: no event or closure grouped right after it"
        out[k] = got
        can_right = got == "right"
    return tuple(out), notes


def units_of(shape: Shape, grouping: GroupingRequest = None) -> list[tuple[int, int]]:
    """Slot ranges ``(first, last)`` of the units under ``grouping`` (see ``plans.py``).

    A unit is an event slot with the closures grouped ``right`` before it and those grouped
    ``left`` after it; a leading run of closures grouped ``left`` is a unit of its own. A
    closure grouped ``late`` is in no unit (it lies between two units).
    """
    g = normal_grouping(shape, grouping)
    units: list[tuple[int, int]] = []
    start: int | None = None
    for k, slot in enumerate(shape.slots):
        if slot.kind == "event":
            units.append((k if start is None else start, k))
            start = None
        elif g[k] == "late":
            continue  # in no unit: the join of its two neighbours' units inserts it
        elif g[k] == "right":
            start = k if start is None else start
        elif not units:
            units.append((k, k))
        else:
            units[-1] = (units[-1][0], k)
    return units


def anchor_of(shape: Shape, unit: tuple[int, int]) -> int:
    """The slot a unit is built from: its event slot (its first slot when it has none)."""
    first, last = unit
    for k in range(first, last + 1):
        if shape.slots[k].kind == "event":
            return k
    return first
