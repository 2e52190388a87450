"""The normal form every matcher evaluates: alternatives of flat component sequences.

``normalize`` turns a parsed :class:`cep.lang.Query` into a :class:`NormalPattern` (rules in
``docs/semantics.md``):

* an ``Or`` of single events is ONE component with several choices (under skip-till-next
  "the next event of B or C" is one event, not one per alternative);
* any other ``Or`` is a union: its branches become separate alternatives;
* ``And(X, Y, ...)`` is the union of ``Seq`` over every order of its parts (followed-by links);
* ``Not`` and ``Kleene`` apply to a single event or an ``Or`` of single events;
* ``Seq`` concatenates; the link into a component is ``next`` when every link of the gap
  before it (NOT components included) is ``next``, else ``followed``; under the
  strict-contiguity policy every link is ``next``; a Kleene component's iterations use the
  link into it (the link out of it when it is first);
* ``Timed`` conditions join the WHERE conditions (they may mention any alias).

Example:
    >>> from cep.lang import parse_pattern
    >>> n = normalize(parse_pattern("PATTERN SEQ(A, OR(B, C), NOT(D), E)"))
    >>> [(c.kind, [x.alias for x in c.choices]) for c in n.alternatives[0].components]
    [('event', ['A']), ('event', ['B', 'C']), ('not', ['D']), ('event', ['E'])]
    >>> n.policy
    'skip-till-next-match'
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Mapping

from cep.lang import ast
from cep.lang.ast import FOLLOWED, NEXT, Condition, Span, WindowBounds
from cep.lang.policy import GROUPED, STRICT
from cep.lang.policy import resolve_policy as resolve
from cep.lang.query import Query
from cep.match.errors import MatchLimitError, PolicyConflictError, UnsupportedPatternError

MAX_ALTERNATIVES = 1024


@dataclass(frozen=True)
class Choice:
    """One way to bind a component: an event of class ``cls`` bound to ``alias``."""

    alias: str
    cls: str


@dataclass(frozen=True)
class Component:
    """A step of an alternative.

    Attributes:
        kind: ``"event"`` (one event), ``"kleene"`` (``min``..``max`` iterations) or ``"not"``
            (no such event between the neighbouring bound components).
        choices: the single events that can fill the step (several for ``OR(B, C)``).
        min, max: iteration bounds; 1 and 1 for ``event`` and ``not``; ``max`` None: unbounded.
        link: ``"next"`` or ``"followed"``: how this step follows the previous bound step
            (``"followed"`` for the first step).
        iter_link: for ``kleene``, how an iteration follows the previous iteration.
    """

    kind: str
    choices: tuple[Choice, ...]
    min: int = 1
    max: int | None = 1
    link: str = FOLLOWED
    iter_link: str = FOLLOWED

    @property
    def aliases(self) -> tuple[str, ...]:
        """The aliases of the choices."""
        return tuple(c.alias for c in self.choices)


@dataclass(frozen=True)
class Alternative:
    """One flat sequence of components; the pattern's matches are the union over alternatives."""

    components: tuple[Component, ...]


@dataclass(frozen=True)
class NormalPattern:
    """A query in normal form, with its selection policy resolved."""

    alternatives: tuple[Alternative, ...]
    conditions: tuple[Condition, ...]
    defines: Mapping[str, Condition]
    equivalences: tuple[str, ...]
    policy: str
    within: Span | None
    slide: Span | None
    window: WindowBounds | None
    kleene_aliases: frozenset[str]


def resolve_policy(query: Query, policy: str | None) -> str:
    """The policy to use: the pattern's, the argument's, or the default (skip-till-next)
    (:func:`cep.lang.policy.resolve_policy`, with the matcher's error)."""
    return resolve(query.policy, policy, unknown=PolicyConflictError,
                   conflict=PolicyConflictError)


def _single_events(node: ast.PatternNode) -> tuple[Choice, ...] | None:
    if isinstance(node, ast.Event):
        return (Choice(node.alias, node.cls),)
    if isinstance(node, ast.Or) and all(isinstance(p, ast.Event) for p in node.parts):
        return tuple(Choice(p.alias, p.cls) for p in node.parts)  # type: ignore[union-attr]
    return None


# A flat piece during normalisation: components plus the link that will precede each.
_Seq = list[tuple[str, Component]]


def _alternatives(node: ast.PatternNode, text: str) -> list[_Seq]:
    choices = _single_events(node)
    if choices is not None:
        return [[(FOLLOWED, Component("event", choices))]]
    if isinstance(node, ast.Timed):
        return _alternatives(node.part, text)
    if isinstance(node, ast.Or):
        out: list[_Seq] = []
        for part in node.parts:
            out.extend(_alternatives(part, text))
        return _check_count(out)
    if isinstance(node, ast.Not):
        inner = _single_events(node.part)
        if inner is None:
            raise UnsupportedPatternError.at(
                text, node.span, "NOT over a composite pattern is not supported; NOT takes one "
                "event class or an OR of event classes")
        return [[(FOLLOWED, Component("not", inner))]]
    if isinstance(node, ast.Kleene):
        inner = _single_events(node.part)
        if inner is None:
            raise UnsupportedPatternError.at(
                text, node.span, "a quantifier over a composite pattern is not supported; "
                "quantify one event class or an OR of event classes")
        return [[(FOLLOWED, Component("kleene", inner, node.min, node.max))]]
    if isinstance(node, ast.Seq):
        pieces = [_alternatives(p, text) for p in node.parts]
        out = []
        for combo in itertools.product(*pieces):
            seq: _Seq = list(combo[0])
            for link, piece in zip(node.links, combo[1:]):
                seq.append((link, piece[0][1]))
                seq.extend(piece[1:])
            out.append(seq)
        return _check_count(out)
    if isinstance(node, ast.And):
        out = []
        for order in itertools.permutations(node.parts):
            out.extend(_alternatives(ast.Seq(tuple(order), (FOLLOWED,) * (len(order) - 1)), text))
            _check_count(out)
        return out
    raise UnsupportedPatternError(f"unsupported pattern node {type(node).__name__}")


def _check_count(alternatives: list[_Seq]) -> list[_Seq]:
    if len(alternatives) > MAX_ALTERNATIVES:
        raise MatchLimitError(
            f"the pattern expands to more than {MAX_ALTERNATIVES} alternatives (AND over many "
            "parts, or many ORs of sequences); limit max_alternatives")
    return alternatives


def _finish(seq: _Seq, policy: str) -> Alternative:
    components: list[Component] = []
    gap_next = True  # every link since the previous bound component is "next"
    last_link = FOLLOWED
    for index, (link, comp) in enumerate(seq):
        if index > 0:
            gap_next = gap_next and link == NEXT
        if comp.kind == "not":
            components.append(comp)
            continue
        into = FOLLOWED if index == 0 else (NEXT if gap_next or policy == STRICT else FOLLOWED)
        components.append(Component(comp.kind, comp.choices, comp.min, comp.max, into, into))
        last_link, gap_next = into, True
    del last_link
    # A first Kleene component takes the link out of it for its iterations.
    bound = [i for i, c in enumerate(components) if c.kind != "not"]
    if bound and components[bound[0]].kind == "kleene":
        first = components[bound[0]]
        after = components[bound[1]].link if len(bound) > 1 else (NEXT if policy == STRICT else FOLLOWED)
        components[bound[0]] = Component(first.kind, first.choices, first.min, first.max,
                                         FOLLOWED, after)
    return Alternative(tuple(components))


def _check_grouped(alternatives: tuple[Alternative, ...], query: Query) -> None:
    """The shapes FAEM's grouped Kleene closure defines one answer for (docs/semantics.md).

    Each closure must be bounded by a single event on both sides, or on one side and the
    window on the other, so that "every qualifying event" is one set; links are followed-by
    (FAEM has no contiguity); a closure is unbounded (``+``, ``*``, ``{n,}``) or exact (``{n}``:
    every n of the group, Algorithm 3).
    """
    spans = {e.alias: node.span for node in ast.walk(query.pattern)
             if isinstance(node, (ast.Kleene, ast.Not)) for e in ast.events(node.part)}
    whole = (0, len(query.text))

    def fail(comp: Component | None, message: str) -> UnsupportedPatternError:
        span = spans.get(comp.aliases[0], whole) if comp is not None else whole
        return UnsupportedPatternError.at(query.text, span, f"{GROUPED}: {message}")

    for alt in alternatives:
        bound = [c for c in alt.components if c.kind != "not"]
        for comp in alt.components:
            if comp.kind == "not":
                raise fail(comp, "NOT is not part of FAEM's operators")
            if comp.link == NEXT:
                raise fail(None, "',' (strict contiguity) is not part of FAEM's operators; "
                           "link with ';'")
            if comp.kind == "kleene" and comp.max is not None and comp.max != comp.min:
                raise fail(comp, "a closure is +, *, {n,} or exactly {n} (FAEM's kleene num)")
        kinds = [c.kind for c in bound]
        if all(k == "kleene" for k in kinds):
            raise fail(bound[0], "a closure needs a single event beside it")
        for left, right in zip(bound, bound[1:]):
            if left.kind == right.kind == "kleene":
                raise fail(right, "two closures side by side have no boundary between their "
                           "groups; put a single event between them")
        if kinds[0] == kinds[-1] == "kleene":
            raise fail(bound[-1], "closures at both ends make the group depend on the window's "
                       "placement; keep a single event at one end")


def normalize(query: Query, policy: str | None = None) -> NormalPattern:
    """The normal form of ``query`` under ``policy`` (see the module docstring)."""
    chosen = resolve_policy(query, policy)
    alternatives = tuple(dict.fromkeys(_finish(seq, chosen) for seq in _alternatives(query.pattern, query.text)))
    if chosen == GROUPED:
        _check_grouped(alternatives, query)
    timed = [c for node in ast.walk(query.pattern) if isinstance(node, ast.Timed)
             for c in node.conditions]
    kleene = frozenset(e.alias for node in ast.walk(query.pattern) if isinstance(node, ast.Kleene)
                       for e in ast.events(node.part))
    return NormalPattern(
        alternatives=alternatives,
        conditions=tuple(timed) + tuple(query.conditions),
        defines={d.cls: d.condition for d in query.defines},
        equivalences=tuple(e.attr for e in query.equivalences),
        policy=chosen,
        within=query.within,
        slide=query.slide,
        window=query.window,
        kleene_aliases=kleene,
    )
