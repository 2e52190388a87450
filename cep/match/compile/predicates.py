"""Conditions analysed once for the matcher: which references they make and how they quantify.

docs/semantics.md gives a condition several readings at once; :func:`analyse` records them so
the evaluator (``bindings.py``) never re-inspects a sqlglot tree:

* ``relative``: references indexed by ``i`` (``b[i].x``, ``t(b[i-1])``, ``avg(b[..i-1].x)``):
  the condition must hold for every ``i`` for which all of them exist;
* ``absolute``: fixed iterations ``b[k]`` (beyond the iterations bound: unsatisfied);
* ``unindexed``: ``b.x`` on any alias, meaning each of its events in turn (one for an event);
* ``agg_all``: aliases aggregated over all their iterations (``avg(b.x)``);
* ``binders``: ``expr = $x`` equalities that give a join variable its candidate values.

A *filter* is a condition that reads one alias, one event at a time (``Condition.single_event``
and no join variable): it only decides which events can fill that alias, so it goes into the
alias's buffer (and is what Spark may evaluate as a pushed-down mask).

:func:`backward_monotone` tells whether a condition may be checked while a Kleene closure is
grown backwards; both the runtime (``any_match.py``) and the cost model (``estimator.py``) ask.

Example:
    >>> from cep.lang import parse_condition
    >>> p = analyse(parse_condition("b[i].v > avg(b[..i-1].v) AND a.v < b.v"))
    >>> p.rel_alias, p.unindexed, p.filter_alias
    ('b', ('a', 'b'), None)
    >>> analyse(parse_condition("a.v > 3")).filter_alias
    'a'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from sqlglot import exp

from cep.lang.ast import AggRef, AttrRef, Condition, Ref, TsRef, VarRef
from cep.match.compile.expr import CompiledExpr, compile_expr


@dataclass(frozen=True)
class Predicate:
    """One condition compiled for vectorised evaluation, with its quantification (see above).

    Attributes:
        condition: the parsed condition.
        expr: its vectorised evaluator.
        refs: placeholder column name -> reference.
        aliases: aliases it mentions (the DEFINE subject excluded).
        variables: join variables it mentions.
        relative: references indexed relative to ``i``.
        rel_alias: the alias ``i`` ranges over (validation allows one per condition).
        absolute: ``(alias, k)`` of every fixed index ``b[k]`` (and ``agg(b[..k])``).
        unindexed: aliases read without an index, in order of first mention.
        agg_all: aliases aggregated over all their iterations.
        binders: ``(variable, evaluator of the other side)`` of each ``expr = $variable``.
        filter_alias: the alias a single-event filter reads, else None.
    """

    condition: Condition
    expr: CompiledExpr
    refs: dict[str, Ref]
    aliases: frozenset[str]
    variables: frozenset[str]
    relative: tuple[Ref, ...]
    rel_alias: str | None
    absolute: tuple[tuple[str, int], ...]
    unindexed: tuple[str, ...]
    agg_all: frozenset[str]
    binders: tuple[tuple[str, CompiledExpr], ...]
    filter_alias: str | None

    @property
    def text(self) -> str:
        """The condition as written."""
        return self.condition.text

    def incremental_in(self, alias: str) -> bool:
        """Whether checking only the instances of ``alias``'s newest iteration suffices.

        True when every earlier instance stays what it was when an iteration is appended:
        ``alias`` is quantified by ``i`` alone or by its unindexed references alone, is never
        aggregated over all iterations and never read at a fixed index.
        """
        if alias in self.agg_all or any(a == alias for a, _ in self.absolute):
            return False
        by_i = self.rel_alias == alias
        by_each = alias in self.unindexed
        return by_i != by_each

    def monotone_in(self, alias: str) -> bool:
        """Whether a failure with some iterations of ``alias`` stays a failure with more.

        Appending iterations only adds instances unless the condition aggregates over all of
        them or reads a fixed index (which may come into existence later).
        """
        return alias not in self.agg_all and all(a != alias for a, _ in self.absolute)


def analyse(cond: Condition) -> Predicate:
    """Analyse one condition (see the module docstring)."""
    relative: list[Ref] = []
    absolute: list[tuple[str, int]] = []
    unindexed: list[str] = []
    agg_all: set[str] = set()
    for ref in cond.refs:
        if isinstance(ref, VarRef) or ref.alias is None:
            continue
        index = ref.upto if isinstance(ref, AggRef) else getattr(ref, "index", None)
        if isinstance(ref, AggRef) and index is None:
            agg_all.add(ref.alias)
        elif index is None:
            if ref.alias not in unindexed:
                unindexed.append(ref.alias)
        elif index.relative:
            relative.append(ref)
        else:
            absolute.append((ref.alias, index.offset))
    rel_aliases = {r.alias for r in relative}
    refs = {r.name: r for r in cond.refs}
    filter_alias = None
    if cond.single_event and not cond.variables and len(cond.aliases) == 1 and all(
            isinstance(r, (AttrRef, TsRef)) for r in cond.refs):
        filter_alias = next(iter(cond.aliases))
    return Predicate(
        condition=cond,
        expr=compile_expr(cond.expr),
        refs=refs,
        aliases=cond.aliases,
        variables=cond.variables,
        relative=tuple(relative),
        rel_alias=next(iter(rel_aliases)) if len(rel_aliases) == 1 else None,
        absolute=tuple(absolute),
        unindexed=tuple(unindexed),
        agg_all=frozenset(agg_all),
        binders=_binders(cond, refs),
        filter_alias=filter_alias,
    )


def _binders(cond: Condition, refs: dict[str, Ref]) -> tuple[tuple[str, CompiledExpr], ...]:
    """Every ``expr = $x`` (or ``<=>``) anywhere in the condition whose other side has no variable."""
    found: list[tuple[str, CompiledExpr]] = []
    for node in cond.expr.walk():
        if not isinstance(node, (exp.EQ, exp.NullSafeEQ)):
            continue
        for side, other in ((node.this, node.expression), (node.expression, node.this)):
            if isinstance(side, exp.Paren):
                side = side.unnest()
            ref = refs.get(side.name) if isinstance(side, exp.Column) else None
            if not isinstance(ref, VarRef):
                continue
            if any(isinstance(refs.get(c.name), VarRef) for c in other.find_all(exp.Column)):
                continue
            found.append((ref.var, compile_expr(other)))
    return tuple(found)


def backward_monotone(pred: Predicate, aliases: Sequence[str]) -> bool:
    """Whether a failure with some iterations of ``aliases`` stays a failure when earlier
    iterations are prepended: iterations are renumbered, so no aggregate over a prefix
    (``agg(b[..i-1])``, ``agg(b)``) and no fixed index may read them."""
    for alias in aliases:
        if alias not in pred.aliases:
            continue
        if not pred.monotone_in(alias):
            return False
        if any(isinstance(r, AggRef) and r.alias == alias for r in pred.relative):
            return False
    return True
