"""Compiling a pattern query once into an immutable value the matcher runs on every partition.

``compile_query`` validates the query (with the table's columns when given), normalises it
(``normal.py``: alternatives of flat components, the selection policy resolved), analyses every
condition once (``predicates.py``) and sorts each condition into the role it plays in each
alternative (the Flink CEP style: compile once into an immutable structure, keep all run-time
state explicit):

* **filters** (one alias, one event at a time) go into the alias's buffer;
* **cross conditions** (every alias bound by the alternative) are checked on partial matches
  as soon as their aliases are bound;
* **negation conditions** (a negated alias and bound ones) decide which events violate a NOT;
* conditions on an alias the alternative does not have are ignored there.

A ``DEFINE`` that mentions a join variable ``$x`` is split first (``cep/lang/rewrite.py``): its
variable-free conjuncts are the class test, and each conjunct with ``$x`` becomes a condition on
every alias of the class, sorted into the roles above like a WHERE condition (a cross condition
for a bound alias, a negation condition for a negated one); it is never a filter.

Example:
    >>> cq = compile_query("PATTERN a; NOT(d); b WHERE a.v < b.v AND d.v > 0 AND b.w = 1",
    ...                    columns=["type", "ts", "v", "w"])
    >>> cq.policy, cq.attributes
    ('skip-till-next-match', ('v', 'w'))
    >>> {alias: [c.text for c in conds] for alias, conds in cq.pushdown.items()}
    {'a': [], 'd': ['d.v > 0'], 'b': ['b.w = 1']}
    >>> [p.text for p in cq.alternatives[0].cross]
    ['a.v < b.v']
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import numpy as np

from cep.lang import Query, parse_pattern, validate_pattern
from cep.lang.ast import EVENTS, AttrRef, Condition, IterRef, AggRef
from cep.lang.rewrite import on_alias, split_define
from cep.match.errors import UnsupportedPatternError
from cep.match.limits import MatchLimits
from cep.match.normal import Alternative, NormalPattern, normalize
from cep.match.predicates import Predicate, analyse

_SPECIAL_COLUMNS = ("ts", "type")


@dataclass(frozen=True)
class Slot:
    """A bound component of an alternative as the matcher sees it.

    Attributes:
        component: index of the component in the alternative.
        kind: ``"event"`` or ``"kleene"``.
        aliases: the aliases of its choices, in written order (OR of events: several).
        min, max: iteration bounds (1 and 1 for an event; ``max`` None: unbounded).
        link: ``"next"`` or ``"followed"`` from the previous bound event.
        iter_link: how iterations follow each other (Kleene).
    """

    component: int
    kind: str
    aliases: tuple[str, ...]
    min: int
    max: int | None
    link: str
    iter_link: str


@dataclass(frozen=True)
class Negation:
    """A NOT component: ``after`` is the ordinal of the bound slot before it (-1 if none).

    Attributes:
        component: index of the component in the alternative.
        aliases: the aliases of the negated classes.
        after: ordinal (index into ``bound``) of the bound slot just before it.
        conditions: per negated alias, the conditions that decide whether an event violates.
    """

    component: int
    aliases: tuple[str, ...]
    after: int
    conditions: Mapping[str, tuple[Predicate, ...]]


@dataclass(frozen=True)
class WindowSpec:
    """``WITHIN`` / ``SLIDE`` in one unit: positions for EVENTS, raw timestamps otherwise.

    ``width`` and ``slide`` are ints when integral, else floats (fractional UNITS or EVENTS).
    """

    by_events: bool
    width: int | float | None
    slide: int | float | None

    def coord(self, positions: np.ndarray, ts: np.ndarray) -> np.ndarray:
        """The coordinate a window measures: positions (EVENTS) or timestamps."""
        return positions if self.by_events else ts[positions]

    def fits(self, first: np.ndarray, last: np.ndarray, ts: np.ndarray) -> np.ndarray:
        """Rows whose first and last bound positions fit the window (and one slide instance)."""
        if self.width is None:
            return np.ones(len(first), dtype=bool)
        a = self.coord(first, ts)
        b = self.coord(last, ts)
        ok = (b - a) < self.width
        if self.slide is not None:
            if isinstance(self.slide, int):
                k = a // self.slide
            else:
                k = np.floor(a / self.slide)
            ok &= b < k * self.slide + self.width
        return ok


@dataclass(frozen=True)
class CompiledAlternative:
    """One alternative of the normal form, with every condition in its role.

    Attributes:
        alternative: the normal-form alternative.
        bound: its bound components in order.
        negations: its NOT components.
        cross: conditions checked on bindings (all their aliases are bound aliases here).
        filters: alias -> single-event conditions folded into that alias's buffer.
        variables: True when some cross condition uses a join variable.
        shapes: its shapes (``shapes.py``), for skip-till-any-match and strict contiguity.
        run_plan: the compile-time part of its skip-till-next-match runs (``next_match.py``).
    """

    alternative: Alternative
    bound: tuple[Slot, ...]
    negations: tuple[Negation, ...]
    cross: tuple[Predicate, ...]
    filters: Mapping[str, tuple[Predicate, ...]]
    variables: bool
    shapes: tuple = ()
    run_plan: Any = None

    @property
    def aliases(self) -> tuple[str, ...]:
        """Every bound alias, in component order."""
        return tuple(a for s in self.bound for a in s.aliases)

    def slot_of(self, alias: str) -> int:
        """Ordinal of the bound slot that has ``alias`` as a choice."""
        for k, slot in enumerate(self.bound):
            if alias in slot.aliases:
                return k
        raise KeyError(alias)

    def describe(self) -> str:
        """The alternative in pattern-like notation (for ``explain``)."""
        parts: list[str] = []
        comps = self.alternative.components
        for k, comp in enumerate(comps):
            name = comp.aliases[0] if len(comp.aliases) == 1 else "OR(" + ", ".join(comp.aliases) + ")"
            if comp.kind == "not":
                name = f"NOT({name})"
            elif comp.kind == "kleene":
                hi = "" if comp.max is None else str(comp.max)
                name += f"{{{comp.min},{hi}}}"
            if k:
                parts.append(", " if comp.link == "next" and comp.kind != "not" else "; ")
            parts.append(name)
        return "".join(parts)


@dataclass(frozen=True)
class CompiledQuery:
    """A query compiled for the exact matcher (immutable; run it with ``find_matches``).

    Attributes:
        query: the validated query.
        normal: its normal form.
        policy: the selection policy in force.
        limits: per-partition resource limits.
        predicates: WHERE and ``@(...)`` conditions, then the join-variable conjuncts of the
            DEFINE conditions, one per alias of their class (``F1.ip = $x``), analysed.
        defines: class -> analysed class test: the DEFINE condition, or for a DEFINE with join
            variables the conjunction of its variable-free conjuncts (``TRUE`` if none).
        alias_classes: alias -> class name, for every alias of the pattern.
        alternatives: the compiled alternatives.
        window: WITHIN / SLIDE.
    """

    query: Query
    normal: NormalPattern
    policy: str
    limits: MatchLimits
    predicates: tuple[Predicate, ...]
    defines: Mapping[str, Predicate]
    alias_classes: Mapping[str, str]
    alternatives: tuple[CompiledAlternative, ...]
    window: WindowSpec

    @property
    def attributes(self) -> tuple[str, ...]:
        """Attribute columns the matcher reads (``ts`` and ``type`` come from their own columns)."""
        seen: dict[str, str] = {}
        conds: list[Condition] = [p.condition for p in self.predicates]
        conds += [p.condition for p in self.defines.values()]
        for cond in conds:
            for ref in cond.refs:
                if isinstance(ref, (AttrRef, IterRef, AggRef)) and ref.attr is not None:
                    if ref.attr.lower() not in _SPECIAL_COLUMNS:
                        seen.setdefault(ref.attr.lower(), ref.attr)
        for attr in self.normal.equivalences:
            if attr.lower() not in _SPECIAL_COLUMNS:
                seen.setdefault(attr.lower(), attr)
        return tuple(seen.values())

    @property
    def pushdown(self) -> Mapping[str, tuple[Condition, ...]]:
        """Per alias, the single-event conditions (its class's DEFINE first) Spark may evaluate.

        A mask passed back as ``EventStream.masks[alias]`` must be: the event is of the alias's
        class as far as the event alone can tell (the class test of ``defines`` TRUE, or type
        column equal to the class when there is no DEFINE) AND every condition listed here is
        TRUE. A condition with a join variable is never listed: only the variable-free
        conjuncts of a DEFINE with ``$x`` are.
        """
        out: dict[str, tuple[Condition, ...]] = {}
        for alias, cls in self.alias_classes.items():
            conds: list[Condition] = []
            define = self.defines.get(cls)
            if define is not None:
                conds.append(define.condition)
            conds += [p.condition for p in self.predicates if p.filter_alias == alias]
            out[alias] = tuple(conds)
        return out

    def filters_of(self, alias: str) -> tuple[Predicate, ...]:
        """The single-event conditions of ``alias`` (without its DEFINE)."""
        return tuple(p for p in self.predicates if p.filter_alias == alias)


def compile_query(query: Query | str, *, policy: str | None = None,
                  columns: Sequence[str] | None = None,
                  limits: MatchLimits = MatchLimits()) -> CompiledQuery:
    """Validate, normalise and compile a pattern query for ``find_matches``.

    Args:
        query: pattern text or a parsed query.
        policy: selection policy when the pattern names none (they must agree when both do).
        columns: the event table's columns; unknown attributes are reported against them.
        limits: per-partition resource limits.

    Returns:
        The compiled query.

    Raises:
        PatternError: the query does not parse or fails validation.
        PolicyConflictError: ``policy`` disagrees with the pattern.
        UnsupportedPatternError: a construct the matcher does not evaluate.

    Example:
        >>> cq = compile_query("PATTERN A; B+ WITHIN 5 MINUTES", policy="skip-till-any-match")
        >>> cq.policy, [s.kind for s in cq.alternatives[0].bound], cq.window.width
        ('skip-till-any-match', ['event', 'kleene'], 300000000)
    """
    parsed = parse_pattern(query) if isinstance(query, str) else query
    validate_pattern(parsed, columns=list(columns) if columns is not None else None)
    norm = normalize(parsed, policy)
    alias_classes = {e.alias: e.cls for alt in norm.alternatives for comp in alt.components
                     for e in comp.choices}
    # A DEFINE with $x is a class test (its variable-free conjuncts) plus, per alias of the
    # class, WHERE-like conditions (its conjuncts with variables): see cep/lang/rewrite.py.
    defines: dict[str, Predicate] = {}
    define_conditions: list[Condition] = []
    for cls, cond in norm.defines.items():
        static, variable = split_define(cond)
        defines[cls] = analyse(static)
        define_conditions += [on_alias(c, alias) for alias, of in alias_classes.items()
                              if of == cls for c in variable]
    predicates = tuple(analyse(c) for c in (*norm.conditions, *define_conditions))
    # Plans of both evaluation strategies are built from the compiled alternatives.
    from cep.match.next_match import run_plan
    from cep.match.shapes import shapes_of

    alternatives = tuple(_compile_alternative(alt, predicates) for alt in norm.alternatives)
    alternatives = tuple(replace(a, shapes=shapes_of(a), run_plan=run_plan(a)) for a in alternatives)
    return CompiledQuery(parsed, norm, norm.policy, limits, predicates, defines, alias_classes,
                         alternatives, _window(norm))


def _compile_alternative(alt: Alternative, predicates: tuple[Predicate, ...]) -> CompiledAlternative:
    bound: list[Slot] = []
    negs: list[tuple[int, tuple[str, ...], int]] = []
    for index, comp in enumerate(alt.components):
        if comp.kind == "not":
            negs.append((index, comp.aliases, len(bound) - 1))
        else:
            bound.append(Slot(index, comp.kind, comp.aliases, comp.min, comp.max, comp.link,
                              comp.iter_link))
    bound_aliases = {a for s in bound for a in s.aliases}
    negated = {a for _, aliases, _ in negs for a in aliases}
    cross = tuple(p for p in predicates if p.filter_alias is None and p.aliases <= bound_aliases)
    filters = {a: tuple(p for p in predicates if p.filter_alias == a)
               for a in bound_aliases | negated}
    negations = []
    for index, aliases, after in negs:
        conds = {a: tuple(p for p in predicates if p.filter_alias is None and a in p.aliases
                          and p.aliases - {a} <= bound_aliases) for a in aliases}
        negations.append(Negation(index, aliases, after, conds))
    uses_vars = any(p.variables for p in cross) or any(
        p.variables for n in negations for ps in n.conditions.values() for p in ps)
    return CompiledAlternative(alt, tuple(bound), tuple(negations), cross, filters, uses_vars)


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else float(value)


def _window(norm: NormalPattern) -> WindowSpec:
    within, slide = norm.within, norm.slide
    if within is None:
        return WindowSpec(False, None, None)
    for span in (within, slide):
        if span is not None and not math.isfinite(span.value):
            raise UnsupportedPatternError(f"window length {span} is not finite")
    by_events = within.kind == EVENTS

    def length(span: object) -> int | float:
        us = span.microseconds()  # type: ignore[attr-defined]
        return int(us) if us is not None else _number(span.value)  # type: ignore[attr-defined]

    return WindowSpec(by_events, length(within), None if slide is None else length(slide))
