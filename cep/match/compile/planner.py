"""The planner stage: what the evaluation strategies derive from the compiled program, once.

The compiler (``compiler.py``) builds the plan-free program (``program.py``) and hands it here;
:func:`plan_query` adds what each strategy needs before it sees any event:

* the *shapes* of every alternative (``shapes.py``), for skip-till-any-match and strict
  contiguity;
* the *run plan* of every alternative (:class:`RunPlan`), for skip-till-next-match.

The plans that depend on a partition, the join trees of skip-till-any-match chosen by the cost
model, are the second half of this stage: ``shape_planner.py`` (with ``estimator.py``). Neither
imports the runtime's evaluators; the runtime (``next_match.py``, ``any_match.py``) imports them.

Example:
    >>> from cep.match.compile.compiler import compile_query
    >>> alt = compile_query("PATTERN a; b; NOT(d); c WHERE a.v < b.v").alternatives[0]
    >>> alt.run_plan.slot_of, [p.text for p in alt.run_plan.preds_of["b"]]
    ({'a': 0, 'b': 1, 'c': 2}, ['a.v < b.v'])
    >>> len(alt.shapes)
    1
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping

from cep.match.compile.predicates import Predicate
from cep.match.compile.program import CompiledAlternative, CompiledQuery, Negation
from cep.match.compile.shapes import shapes_of


def plan_query(cq: CompiledQuery) -> CompiledQuery:
    """``cq`` with the shapes and the run plan of every alternative filled in."""
    alternatives = tuple(replace(a, shapes=shapes_of(a), run_plan=run_plan(a)) for a in cq.alternatives)
    return replace(cq, alternatives=alternatives)


@dataclass(frozen=True)
class RunPlan:
    """What the runs of one alternative need, computed once at compile time.

    Attributes:
        slot_of: alias -> ordinal of its bound slot.
        comp_of_slot: component index of each bound slot.
        preds_of: alias -> cross conditions (without join variables) that mention it.
        var_preds: cross conditions with join variables.
        constants: conditions that mention no alias.
        plain_negations, var_negations: NOTs without / with join variables in their conditions.
        reads_of: alias -> aliases whose events the checks of binding it read.
    """

    slot_of: Mapping[str, int]
    comp_of_slot: tuple[int, ...]
    preds_of: Mapping[str, tuple[Predicate, ...]]
    var_preds: tuple[Predicate, ...]
    constants: tuple[Predicate, ...]
    plain_negations: tuple[Negation, ...]
    var_negations: tuple[Negation, ...]
    reads_of: Mapping[str, tuple[str, ...]]


def run_plan(alt: CompiledAlternative) -> RunPlan:
    """The compile-time part of the skip-till-next-match runs of ``alt`` (``next_match.py``)."""
    aliases = alt.aliases
    preds_of = {a: tuple(p for p in alt.cross if a in p.aliases and not p.variables)
                for a in aliases}
    constants = tuple(p for p in alt.cross if not p.aliases and not p.variables)
    uses_vars = [any(p.variables for ps in n.conditions.values() for p in ps) for n in alt.negations]
    if alt.negations or alt.variables or constants:
        # NOTs and join variables read every bound alias.
        reads_of = {a: aliases for a in aliases}
    else:
        reads_of = {a: tuple(dict.fromkeys([a] + [x for p in preds_of[a] for x in sorted(p.aliases)]))
                    for a in aliases}
    return RunPlan(
        slot_of={a: k for k, s in enumerate(alt.bound) for a in s.aliases},
        comp_of_slot=tuple(s.component for s in alt.bound),
        preds_of=preds_of,
        var_preds=tuple(p for p in alt.cross if p.variables),
        constants=constants,
        plain_negations=tuple(n for n, v in zip(alt.negations, uses_vars) if not v),
        var_negations=tuple(n for n, v in zip(alt.negations, uses_vars) if v),
        reads_of=reads_of,
    )
