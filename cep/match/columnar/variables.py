"""Join variables (``$x``): is there one value per variable that satisfies every check?

docs/semantics.md: "every event whose condition mentions ``$x`` must give it the same value".
The oracle decides it existentially (``cep/oracles/check.py``): the candidate values of a
variable are the values of the equalities ``expr = $x`` of the conditions that apply to the
binding, evaluated on every instance; a binding is accepted when one assignment of candidates
(NULL for a variable without a non-NULL candidate) satisfies every check that uses a variable.
Here the candidates of all bindings are evaluated at once: for ``k`` candidates the checks run
``k`` times, vectorised over the bindings, and a binding is kept if any run accepts it.

Example:
    >>> import numpy as np
    >>> from cep.lang import parse_condition
    >>> from cep.match.columnar.bindings import View, holds
    >>> from cep.match.columnar.data import StreamData
    >>> from cep.match.compile.predicates import analyse
    >>> from cep.match.compile.shapes import Constraint
    >>> from cep.match.columnar.stream import EventStream
    >>> s = EventStream.from_columns(ids=range(4), ts=range(4), types=list("ABAB"),
    ...                              attrs={"u": [1, 1, 2, 3]})
    >>> data = StreamData(s, None)
    >>> preds = [analyse(parse_condition(t)) for t in ("a.u = $x", "b.u = $x")]
    >>> cs = [Constraint("pred", frozenset(), pred=p, deferred=True) for p in preds]
    >>> view = View.of_columns(2, {"a": [np.array([0, 2])], "b": [np.array([1, 3])]})
    >>> exists_assignment(view, data, cs, lambda c, v: holds(c.pred, view, data, v)).tolist()
    [True, False]
"""

from __future__ import annotations

import itertools
from typing import Callable, Mapping, Sequence

import numpy as np

from cep.match.columnar.bindings import View, instances
from cep.match.columnar.data import StreamData
from cep.match.compile.expr import Value
from cep.match.compile.shapes import Constraint

Check = Callable[[Constraint, Mapping[str, Value]], np.ndarray]


def exists_assignment(view: View, data: StreamData, constraints: Sequence[Constraint],
                      check: Check) -> np.ndarray:
    """Rows for which one assignment of the join variables makes every constraint hold.

    The candidate values of ``$x`` are those of the ``expr = $x`` equalities of the conditions
    that apply to the row, evaluated on every instance; a variable without any (non-NULL)
    candidate is NULL (the oracle's rule, ``cep/oracles/check.py``).
    """
    n = view.n
    names: list[str] = []
    pools: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    for c in constraints:
        p = c.pred
        if p is None or not p.variables or not p.aliases <= view.pos.keys():
            continue
        applicable = np.ones(n, dtype=bool)
        for alias in p.aliases:
            applicable &= view.count[alias] >= 1
        for alias, k in p.absolute:
            applicable &= view.count[alias] >= k
        for var in sorted(p.variables):
            if var not in names:
                names.append(var)
        for var, side in p.binders:
            for valid, env in instances(p, view, data):
                values, nulls = side.evaluate(env, n)
                pools.setdefault(var, []).append((values, valid & applicable & ~nulls))
    names.sort()
    ok = np.zeros(n, dtype=bool)
    options = []
    for var in names:
        cands = pools.get(var, [])
        none_valid = np.ones(n, dtype=bool)
        for _, valid in cands:
            none_valid &= ~valid
        opts = [((v, np.zeros(n, dtype=bool)), valid) for v, valid in cands]
        opts.append(((np.zeros(n), np.ones(n, dtype=bool)), none_valid))
        options.append(opts)
    for combo in itertools.product(*options):
        usable = np.ones(n, dtype=bool)
        for _, valid in combo:
            usable &= valid
        usable &= ~ok
        if not usable.any():
            continue
        variables = {var: value for var, (value, _) in zip(names, combo)}
        good = usable.copy()
        for c in constraints:
            good &= check(c, variables)
        ok |= good
    return ok
