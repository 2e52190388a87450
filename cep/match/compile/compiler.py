"""Compiling a pattern query once into an immutable value the matcher runs on every partition.

``compile_query`` validates the query (with the table's columns when given), normalises it
(``normal.py``: alternatives of flat components, the selection policy resolved), analyses every
condition once (``predicates.py``) and sorts each condition into the role it plays in each
alternative (the Flink CEP style: compile once into an immutable structure, keep all run-time
state explicit). The result is the program of :mod:`cep.match.compile.program`, which the planner stage
(:mod:`cep.match.compile.planner`) completes with shapes and run plans; the compiler imports nothing of
the runtime:

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
from typing import Sequence

from cep.lang import Query, parse_pattern, validate_pattern
from cep.lang.ast import EVENTS, MAX_SPAN, Condition
from cep.lang.policy import GROUPED
from cep.lang.rewrite import on_alias, split_define
from cep.match.compile.grouping import Expansion, check_conditions, expand
from cep.match.compile.normal import Alternative, NormalPattern, normalize
from cep.match.compile.planner import plan_query
from cep.match.compile.predicates import Predicate, analyse
from cep.match.compile.program import CompiledAlternative, CompiledQuery, Negation, Slot, WindowSpec
from cep.match.errors import UnsupportedPatternError
from cep.match.limits import MatchLimits


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
    grouping: tuple[Expansion, ...] = ()
    if norm.policy == GROUPED:
        # FAEM's grouped closures run as any-match alternatives whose rows are then grouped.
        check_conditions(predicates, norm.kleene_aliases, parsed.text)
        norm, grouping = expand(norm)
    alternatives = tuple(_compile_alternative(alt, predicates) for alt in norm.alternatives)
    program = CompiledQuery(parsed, norm, norm.policy, limits, predicates, defines, alias_classes,
                            alternatives, _window(norm), grouping)
    # The planner stage adds what both evaluation strategies derive from the program.
    return plan_query(program)


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
        # EVENTS and UNITS saturate as time does (Span.microseconds): ts + width stays in int64.
        value = min(span.value, MAX_SPAN)  # type: ignore[attr-defined]
        return int(us) if us is not None else _number(value)

    return WindowSpec(by_events, length(within), None if slide is None else length(slide))
