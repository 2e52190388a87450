"""FAEM's grouped Kleene closure (``skip-till-any-match-grouped``): the compile half.

Behravesh et al., "Optimizing Expressibility and Performance of Kleene Operators on Binary
Tree-based Directed Graph" (seed 001), sections "Kleene star and plus" (Algorithms 1 and 2,
the Fig. 3 walk-through) and "Kleene num" (Algorithm 3): a closure joined with a single event
collects *every* event of its class that satisfies the constraints with that event into one
composite event, so the composites "never exceed the number of events" on the other side;
only the closure events that fail a later constraint are dropped from a composite (the
ZStream critique, Fig. 5), and ``X[num]`` yields every ``num`` events of the group (the
combination step). docs/semantics.md, "Selection policies", states the definition this module
computes:

    the single-event components bind as under skip-till-any-match; each closure binds every
    event that could be one of its iterations given them (class, conditions, window, between
    its neighbours); the match exists when the closure has at least ``min`` such events, and
    an exact closure ``{n}`` gives one match per ``n`` of them.

How: :func:`expand` turns each closure into one single event (and, for a closure that may be
empty, also drops it), the any-match engine finds every (single events, one closure event)
binding, and :func:`group_blocks` groups those by their single events. The structural limits
that make "every qualifying event" one set are checked by ``normal.py`` (``_check_grouped``);
:func:`check_conditions` adds the condition limits.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Sequence

from cep.lang.policy import GROUPED
from cep.match.compile.normal import Alternative, Component, NormalPattern
from cep.match.compile.predicates import Predicate
from cep.match.errors import MatchLimitError, UnsupportedPatternError

__all__ = ["Expansion", "check_conditions", "expand"]

MAX_OPTIONAL = 8
"""The most closures that may be empty (``*``) in one alternative: each doubles the work."""


@dataclass(frozen=True)
class Expansion:
    """One any-match alternative made from a grouped one.

    Attributes:
        base: the index of the grouped alternative it comes from.
        components: the component (of the base alternative) each bound slot comes from.
        closures: ``(bound slot, component, min, max)`` of each closure compiled as one event.
        dropped: components of the empty-able closures left out here.
        optional: components of every empty-able closure of the base alternative.
        one_alias: every closure has one alias (no ``OR(B, D)+``).
    """

    base: int
    components: tuple[int, ...]
    closures: tuple[tuple[int, int, int, int | None], ...]
    dropped: frozenset[int]
    optional: frozenset[int]
    one_alias: bool = True


def check_conditions(predicates: Sequence[Predicate], kleene: frozenset[str],
                     text: str) -> None:
    """Refuse the conditions under which a closure's group is not one set.

    FAEM's constraints compare a closure event with the single events; a condition between
    iterations (``b[i]``, ``b[1]``, aggregates), one over two closures, or a join variable
    would make which events qualify depend on which others are taken.
    """
    for p in predicates:
        closures = p.aliases & kleene
        reason = None
        if p.relative or p.absolute or p.agg_all:
            reason = "iterations read by index or aggregated"
        elif p.variables:
            reason = "join variables"
        elif len(closures) > 1:
            reason = "one condition over two closures"
        if reason is not None:
            span = p.condition.span or (0, len(text))
            raise UnsupportedPatternError.at(
                text, span, f"{GROUPED}: a closure's group is every event that fits the single "
                f"events; {reason} would make it depend on the others taken")


def expand(norm: NormalPattern) -> tuple[NormalPattern, tuple[Expansion, ...]]:
    """The any-match alternatives whose matches :func:`group_blocks` groups."""
    alternatives: list[Alternative] = []
    expansions: list[Expansion] = []
    for base, alt in enumerate(norm.alternatives):
        optional = [i for i, c in enumerate(alt.components) if c.kind == "kleene" and c.min == 0]
        if len(optional) > MAX_OPTIONAL:
            raise MatchLimitError(f"{GROUPED}: more than {MAX_OPTIONAL} closures that may be "
                                  "empty in one alternative")
        for r in range(len(optional) + 1):
            for dropped in itertools.combinations(optional, r):
                components: list[Component] = []
                origins: list[int] = []
                closures = []
                for i, comp in enumerate(alt.components):
                    if i in dropped:
                        continue
                    if comp.kind == "kleene":
                        closures.append((len(components), i, comp.min, comp.max))
                    components.append(Component("event", comp.choices, 1, 1, comp.link,
                                                comp.link))
                    origins.append(i)
                alternatives.append(Alternative(tuple(components)))
                expansions.append(Expansion(
                    base, tuple(origins), tuple(closures), frozenset(dropped),
                    frozenset(optional), all(len(alt.components[c].choices) == 1
                                             for _, c, _, _ in closures)))
    return replace(norm, alternatives=tuple(alternatives), kleene_aliases=frozenset()), \
        tuple(expansions)
