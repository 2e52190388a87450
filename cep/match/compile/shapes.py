"""Shapes: an alternative with each optional Kleene component either absent or present.

Under skip-till-any-match and strict contiguity a Kleene component with ``min = 0`` binds
either no event or ``1..max`` of them. With no event, docs/semantics.md makes the component
vanish: the next bound component's link applies to the previous bound event, a NOT next to it
ranges to the next bound event (or, at the end, to the close of the window), a condition on its
alias is ignored. So the matches of an alternative are the union of the matches of its
*shapes*, one per choice of present optional components, in each of which every Kleene
component binds at least one event. Matches of different shapes differ in their variables, so
the union has no duplicates.

Each shape fixes the *constraints* a match must meet and the bound slots each one reads (its
*scope*): the plan checks a constraint as soon as a partial match covers its scope.

Example:
    >>> from cep.match.compile.compiler import compile_query
    >>> cq = compile_query("PATTERN a; b*; NOT(d); c", policy="skip-till-any-match")
    >>> [(len(s.slots), [len(g) for g in s.gaps]) for s in shapes_of(cq.alternatives[0])]
    [(3, [0, 1]), (2, [1])]
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Mapping

from cep.match.compile.predicates import Predicate
from cep.match.compile.program import CompiledAlternative, Negation, Slot


@dataclass(frozen=True)
class Gap:
    """A NOT of a shape: between slots ``after`` and ``after + 1``, or trailing (``after`` last).

    Attributes:
        negation: the NOT component.
        after: ordinal of the slot before it.
        trailing: no bound slot after it: no violating event until the window closes.
        conditions: per negated alias, the conditions deciding whether an event violates.
    """

    negation: Negation
    after: int
    trailing: bool
    conditions: Mapping[str, tuple[Predicate, ...]]

    @property
    def simple(self) -> bool:
        """True when any event in its buffers violates (no conditions with bound events)."""
        return not any(self.conditions.values())


@dataclass(frozen=True)
class Constraint:
    """Something a match must satisfy, with the slots it reads.

    Attributes:
        kind: ``"pred"`` (a cross condition) or ``"not"`` (a NOT).
        scope: ordinals of the slots it reads.
        pred: the condition (``kind == "pred"``).
        gap: the NOT (``kind == "not"``).
        deferred: checked only on whole matches (join variables need every binder).
    """

    kind: str
    scope: frozenset[int]
    pred: Predicate | None = None
    gap: Gap | None = None
    deferred: bool = False

    def label(self) -> str:
        """Short text for ``explain``."""
        if self.pred is not None:
            return self.pred.text
        assert self.gap is not None
        return "NOT(" + "|".join(self.gap.negation.aliases) + ")"


@dataclass(frozen=True)
class Shape:
    """One shape of an alternative (see the module docstring).

    Attributes:
        slots: bound slots present, each binding at least one event.
        gaps: ``gaps[k]``: the NOTs between slot ``k`` and ``k + 1``.
        trailing: the NOTs after the last slot.
        constraints: every cross condition and NOT with its scope.
        kleene: ordinals of Kleene slots.
    """

    slots: tuple[Slot, ...]
    gaps: tuple[tuple[Gap, ...], ...]
    trailing: tuple[Gap, ...]
    constraints: tuple[Constraint, ...]
    kleene: frozenset[int]

    def slot_of(self, alias: str) -> int:
        """Ordinal of the slot that has ``alias`` as a choice."""
        for k, slot in enumerate(self.slots):
            if alias in slot.aliases:
                return k
        raise KeyError(alias)


def shapes_of(alt: CompiledAlternative) -> tuple[Shape, ...]:
    """Every shape of ``alt`` (optional Kleene components present first)."""
    optional = [k for k, s in enumerate(alt.bound) if s.kind == "kleene" and s.min == 0]
    out = []
    for absent in itertools.product((False, True), repeat=len(optional)):
        gone = {k for k, a in zip(optional, absent) if a}
        kept = [k for k in range(len(alt.bound)) if k not in gone]
        if kept:
            out.append(_shape(alt, kept))
    return tuple(out)


def _shape(alt: CompiledAlternative, kept: list[int]) -> Shape:
    slots = tuple(replace(alt.bound[k], min=max(1, alt.bound[k].min)) for k in kept)
    ordinal = {k: i for i, k in enumerate(kept)}
    aliases = {a for s in slots for a in s.aliases}
    alias_slot = {a: i for i, s in enumerate(slots) for a in s.aliases}
    gaps: list[list[Gap]] = [[] for _ in range(len(slots) - 1)]
    trailing: list[Gap] = []
    constraints: list[Constraint] = []
    for neg in alt.negations:
        before = [ordinal[k] for k in kept if k <= neg.after]
        if not before:
            continue  # nothing bound before it: the oracle's range is empty
        after = before[-1]
        conds = {a: tuple(p for p in ps if p.aliases - {a} <= aliases)
                 for a, ps in neg.conditions.items()}
        gap = Gap(neg, after, after == len(slots) - 1, conds)
        (trailing if gap.trailing else gaps[after]).append(gap)
        scope = {after, 0 if gap.trailing else after + 1}
        scope |= {alias_slot[x] for ps in conds.values() for p in ps for x in p.aliases
                  if x in alias_slot}
        deferred = any(p.variables for ps in conds.values() for p in ps)
        constraints.append(Constraint("not", frozenset(scope), gap=gap, deferred=deferred))
    for p in alt.cross:
        if p.aliases <= aliases:
            scope = frozenset(alias_slot[a] for a in p.aliases)
            constraints.append(Constraint("pred", scope, pred=p, deferred=bool(p.variables)))
    kleene = frozenset(i for i, s in enumerate(slots) if s.kind == "kleene")
    return Shape(slots, tuple(tuple(g) for g in gaps), tuple(trailing), tuple(constraints), kleene)
