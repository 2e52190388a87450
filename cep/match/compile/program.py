"""The compiled program of the exact matcher: immutable values, no plans, no run-time state.

Following Flink CEP's NFACompiler and Trino's row-pattern matcher, a query is compiled once into
an immutable program that every partition runs: :mod:`cep.match.compile.compiler` builds these values,
:mod:`cep.match.compile.planner` adds what the evaluation strategies derive from them (shapes, run
plans), and the runtime (``next_match.py``, ``any_match.py``, ``negation.py``, ``buffers.py``, ...)
reads them. This module imports nothing of either, so the compiler never imports the runtime.

Example:
    >>> from cep.match.compile.compiler import compile_query
    >>> cq = compile_query("PATTERN a; NOT(d); b+ WITHIN 5 EVENTS")
    >>> [(s.kind, s.aliases) for s in cq.alternatives[0].bound], cq.alternatives[0].negations[0].after
    ([('event', ('a',)), ('kleene', ('b',))], 0)
    >>> cq.window
    WindowSpec(by_events=True, width=5, slide=None)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from cep.lang import Query
from cep.lang import ast as pattern_ast
from cep.lang.ast import AttrRef, Condition, IterRef, AggRef
from cep.lang.policy import STRICT
from cep.match.compile.normal import Alternative, NormalPattern
from cep.match.compile.predicates import Predicate
from cep.match.limits import MatchLimits

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
        shapes: its shapes (:mod:`cep.match.compile.shapes`), for skip-till-any-match and strict
            contiguity; filled by the planner (:func:`cep.match.compile.planner.plan_query`).
        run_plan: the compile-time part of its skip-till-next-match runs
            (:class:`cep.match.compile.planner.RunPlan`); filled by the planner.
    """

    alternative: Alternative
    bound: tuple[Slot, ...]
    negations: tuple[Negation, ...]
    cross: tuple[Predicate, ...]
    filters: Mapping[str, tuple[Predicate, ...]]
    variables: bool
    # Typed loosely: Shape and RunPlan are built from this class, so naming them here would
    # make this module import the stages above it.
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
        grouping: under ``skip-till-any-match-grouped``, how each alternative's matches are
            grouped into FAEM's composites (:mod:`cep.match.run.grouped`); empty otherwise.
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
    grouping: tuple = ()  # cep.match.run.grouped.Expansion per alternative (grouped policy only)

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
    def class_events_suffice(self) -> bool:
        """Whether the matches are the same when every event of no alias's class is dropped.

        Under skip-till-next-match and skip-till-any-match an event that no alias (positive or
        under NOT) can bind never binds, never closes a Kleene run and never breaks a NOT: the
        matches of the class events alone are the matches (docs/semantics.md). Positions break
        this: strict contiguity and ``,`` mean the very next event of the partition, and an
        ``EVENTS`` span or a positional ``WINDOW`` counts every event. Callers (``match_seq``)
        then filter rows before they reach the engine, as Spark can do natively.

        Example:
            >>> from cep.match.compile.compiler import compile_query
            >>> compile_query("PATTERN A; B WITHIN 5 MINUTES").class_events_suffice
            True
            >>> compile_query("PATTERN A, B").class_events_suffice
            False
            >>> compile_query("PATTERN A; B WITHIN 3 EVENTS").class_events_suffice
            False
        """
        if self.policy == STRICT or self._counts_positions:
            return False
        return not any(isinstance(node, pattern_ast.Seq) and pattern_ast.NEXT in node.links
                       for node in pattern_ast.walk(self.query.pattern))

    @property
    def _counts_positions(self) -> bool:
        """An ``EVENTS`` span or a positional ``WINDOW``: every event of the partition counts."""
        bounds = self.query.window
        return self.window.by_events or (bounds is not None and bounds.kind != "TIMESTAMP")

    @property
    def runs_suffice(self) -> bool:
        """Whether every match is a run of consecutive events of the partition, all bound.

        Then the events no alias can bind only cut the stream: the matches are those of the
        bindable events, each run of events that were consecutive matched on its own. True when every link, Kleene iterations included, is ``next`` (the
        strict-contiguity policy, or ``,`` everywhere), no step is a ``NOT`` and neither an
        ``EVENTS`` span nor a positional ``WINDOW`` counts the dropped events.

        Example:
            >>> from cep.match.compile.compiler import compile_query
            >>> compile_query("PATTERN A, B+, C").runs_suffice
            True
            >>> compile_query("PATTERN A, B; C").runs_suffice
            False
        """
        if self._counts_positions:
            return False
        for alternative in self.normal.alternatives:
            for i, step in enumerate(alternative.components):
                if step.kind == "not" or (i and step.link != pattern_ast.NEXT):
                    return False
                if step.kind == "kleene" and step.iter_link != pattern_ast.NEXT:
                    return False
        return True

    @property
    def run_steps(self) -> tuple[tuple[str, ...], ...] | None:
        """The aliases that may bind each event when every match is exactly that many
        consecutive events (``runs_suffice``, one alternative, no Kleene step), else None.

        Example:
            >>> from cep.match.compile.compiler import compile_query
            >>> compile_query("PATTERN A, OR(B, C), D").run_steps
            (('A',), ('B', 'C'), ('D',))
            >>> compile_query("PATTERN A, B+").run_steps is None
            True
        """
        alternatives = self.normal.alternatives
        if not self.runs_suffice or len(alternatives) != 1:
            return None
        steps = alternatives[0].components
        if any(step.kind != "event" for step in steps):
            return None
        return tuple(step.aliases for step in steps)

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
