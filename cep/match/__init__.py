"""The exact matcher (``match_seq``): compile a pattern once, find its matches per partition.

``compile_query`` turns pattern text into an immutable :class:`CompiledQuery`;
``find_matches`` evaluates it on one partition (:class:`EventStream`) and returns columnar
:class:`MatchArrays` in ``match_id`` order; ``explain`` describes the plan. The semantics are
those of ``docs/semantics.md``, implemented literally by ``cep.oracles`` and property-tested
against it.

Example:
    >>> s = EventStream.from_columns(ids=range(6), ts=range(6), types=list("ABABCB"),
    ...                              attrs={"v": [1, 5, 2, 1, 0, 3]})
    >>> cq = compile_query("PATTERN A; B WHERE B.v > A.v", policy="skip-till-any-match")
    >>> find_matches(cq, s).to_matches()
    [Match(positions=(0, 1), variables=('A', 'B')), Match(positions=(0, 5), variables=('A', 'B')), Match(positions=(2, 5), variables=('A', 'B'))]
"""

from __future__ import annotations

from cep.match.columnar.arrays import MatchArrays
from cep.match.columnar.stream import EventStream
from cep.match.compile.compiler import compile_query
from cep.match.compile.program import CompiledQuery
from cep.match.errors import MatchLimitError, PolicyConflictError, StreamError, UnsupportedPatternError
from cep.match.limits import MatchLimits
from cep.match.plan.explain import explain
from cep.match.result import Match, order_matches
from cep.match.run.engine import find_matches

__all__ = [
    "CompiledQuery",
    "EventStream",
    "Match",
    "MatchArrays",
    "MatchLimitError",
    "MatchLimits",
    "PolicyConflictError",
    "StreamError",
    "UnsupportedPatternError",
    "compile_query",
    "explain",
    "find_matches",
    "order_matches",
]

# One vocabulary for every engine (docs/architecture.md, "One vocabulary"): ``compile`` turns
# pattern text into the engine's frozen program, ``run`` evaluates a program over its input.
# Not in __all__: a star import would shadow the builtin ``compile``.
compile = compile_query
run = find_matches
