"""DEFINE conditions that read the match so far, evaluated per thread while the matcher runs.

Most DEFINE conditions read only the current row and rows at physical offsets (``PREV``,
``NEXT``); Spark computes those as boolean columns before the matcher runs. A condition that
reads *other rows of the match* (``B.price > A.price``, ``LAST(A.price, 1)``, ``FIRST(price)``,
``avg(A.price)``, ``count(*)``, ``PREV(CLASSIFIER())``) has a different value in each partial
match, so the matcher asks it per thread (SQL:2016 running semantics, as Trino documents them):
the row being tested counts as already mapped to the variable being defined, and the rows
before it are the thread's history.

The translator (:mod:`cep.recognize.expressions`) writes such a condition as a small JSON tree
whose leaves Spark has computed as columns (everything that depends only on one row):

* ``["col", name]``: the column ``name`` at the current row;
* ``["num", text]``, ``["str", text]``, ``["bool", b]``, ``["null"]``: literals;
* ``["nav", "FIRST"|"LAST", members, k, column, m]``: the ``k``-th first/last row of the match
  mapped to one of ``members`` (None: any row), then ``m`` rows further (physical, negative
  for PREV), and there ``column`` (None: the row's label, i.e. CLASSIFIER);
* ``["agg", func, members, column, *more]``: the running aggregate ``func`` (a key of
  :data:`cep.recognize.summaries.SUMMARIES`) over the rows mapped to ``members`` (None: every
  row of the match); ``column`` None means ``count(*)``; ``more`` holds further column names
  (``max_by``'s ordering, ``corr``'s x), then literal trees (``percentile``'s fraction);
* ``["number"]``: MATCH_NUMBER(), the number the match being tried will get;
* ``["op", name, *args]``: SQL with three-valued logic: ``and or not neg isnull notnull
  coalesce between case``, the binary operators of
  :data:`cep.recognize.functions.BINARY` and the scalar functions of
  :data:`cep.recognize.functions.FUNCTIONS`; ``case`` takes test, value pairs and then the
  ELSE value.

Per thread the history is a chain of nodes ``(row, label, excluded, previous, memo)``; running
summaries (the last k rows of a set of labels, the first k, aggregates) are cached in each
node's ``memo``, so a long match costs O(1) per evaluation, not O(length).

Example:
    >>> c = Conditions({"B": ["op", ">", ["col", "price"],
    ...                       ["nav", "LAST", ["A"], 0, "price", 0]]}, ("A", "B"))
    >>> cols = {"price": [10, 12, 9]}
    >>> a0 = (0, 0, False, None, {})           # row 0 mapped to A
    >>> c.accepts(cols, 3, 1, 1, a0), c.accepts(cols, 3, 1, 2, a0)
    (True, False)
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Callable

from cep.recognize.functions import BINARY, FUNCTIONS
from cep.recognize.summaries import SUMMARIES

__all__ = ["Conditions", "NUMBER"]

NUMBER = "__mr_number"
"""The key under which :meth:`Conditions.bind` passes the match number to the trees."""

_Node = Any  # (row, label, excluded, previous, memo) or None
_Eval = Callable[[dict[str, list[Any]], int, int, int, _Node], Any]


class Conditions:
    """The per-thread DEFINE conditions of one clause, compiled once.

    Args:
        trees: variable name -> its condition tree (the module docstring's form).
        variables: the primary variables in the program's order (labels are their indexes).
    """

    def __init__(self, trees: dict[str, Any], variables: tuple[str, ...]) -> None:
        self.variables = variables
        self._index = {name: i for i, name in enumerate(variables)}
        self._summaries: dict[tuple[Any, ...], int] = {}
        self._inits: list[Any] = []
        self._steps: list[Callable[..., Any]] = []
        self._by_variable: dict[int, _Eval] = {
            self._index[name]: self._compile(tree) for name, tree in trees.items()}
        self.mask = sum(1 << v for v in self._by_variable)
        """Bit ``v`` set when variable ``v`` has a condition evaluated here."""

    def accepts(self, columns: dict[str, list[Any]], n: int, v: int, i: int,
                history: _Node) -> bool:
        """Whether row ``i`` (of ``n`` in the partition) may be variable ``v`` after ``history``.

        ``columns`` holds the partition's values of every column the trees name.
        """
        return self._by_variable[v](columns, n, v, i, history) is True

    def bind(self, columns: dict[str, list[Any]], n: int) -> Callable[[int, int, _Node], bool]:
        """:meth:`accepts` for one partition's values: ``ask(v, i, history)``.

        The returned function has an attribute ``number``, a one-item list holding the number
        of the match being tried (MATCH_NUMBER() in DEFINE); the matcher sets it
        (:class:`cep.recognize.matcher.Reads`).
        """
        by_variable = self._by_variable
        number = [1]
        values = {**columns, NUMBER: number}

        def ask(v: int, i: int, history: _Node) -> bool:
            return by_variable[v](values, n, v, i, history) is True

        ask.number = number  # type: ignore[attr-defined]
        return ask

    # --- compilation -----------------------------------------------------------------------

    def _compile(self, tree: list[Any]) -> _Eval:
        kind = tree[0]
        if kind == "col":
            name = tree[1]
            return lambda cols, n, v, i, h: cols[name][i]
        if kind in ("num", "str", "bool", "null"):
            value = _literal(tree)
            return lambda cols, n, v, i, h: value
        if kind == "nav":
            return self._navigation(*tree[1:])
        if kind == "agg":
            return self._aggregate(*tree[1:])
        if kind == "number":
            return lambda cols, n, v, i, h: cols[NUMBER][0]
        if kind == "op":
            return _operator(tree[1], [self._compile(t) for t in tree[2:]])
        raise ValueError(f"not a condition tree: {kind!r}")

    def _members(self, names: list[str] | None) -> frozenset[int] | None:
        return None if names is None else frozenset(self._index.get(m, -1) for m in names)

    def _navigation(self, logical: str, names: list[str] | None, k: int,
                    column: str | None, physical: int) -> _Eval:
        members = self._members(names)
        last = logical == "LAST"
        keep = k + 1
        if last:
            def step(state: tuple[int, ...], row: int, label: int, cols: Any) -> Any:
                if members is None or label in members:
                    return ((row,) + state)[:keep]
                return state
        else:
            def step(state: tuple[int, ...], row: int, label: int, cols: Any) -> Any:
                if len(state) < keep and (members is None or label in members):
                    return state + (row,)
                return state
        j = self._summary(("nav", logical, members, keep), (), step)

        def evaluate(cols: dict[str, list[Any]], n: int, v: int, i: int, h: _Node) -> Any:
            rows = step(self._state(j, h, cols), i, v, cols)
            if len(rows) < keep:
                return None
            at = rows[k] + physical
            if not 0 <= at < n:
                return None
            if column is not None:
                return cols[column][at]
            return self._label_at(at, i, v, h)

        return evaluate

    def _label_at(self, at: int, i: int, v: int, h: _Node) -> str | None:
        """CLASSIFIER of row ``at``: None outside the match so far."""
        if at == i:
            return self.variables[v]
        while h is not None and h[0] > at:
            h = h[3]
        if h is None or h[0] != at:
            return None
        return self.variables[h[1]]

    def _aggregate(self, func: str, names: list[str] | None, column: str | None,
                   *more: Any) -> _Eval:
        """A running aggregate (:data:`cep.recognize.summaries.SUMMARIES`): ``more`` holds
        the further column names, then literal trees (``percentile``'s fraction, ``listagg``'s
        separator)."""
        members = self._members(names)
        family, pick = SUMMARIES[func]
        names_read = tuple(c for c in (column, *more) if isinstance(c, str))
        params = [_literal(t) for t in more if isinstance(t, list)]
        update = family.update

        def step(state: Any, row: int, label: int, cols: Any) -> Any:
            if members is not None and label not in members:
                return state
            return update(state, tuple(cols[c][row] for c in names_read))

        j = self._summary((family.name, members, names_read), family.init, step)

        def evaluate(cols: dict[str, list[Any]], n: int, v: int, i: int, h: _Node) -> Any:
            return pick(step(self._state(j, h, cols), i, v, cols), *params)

        return evaluate

    def _summary(self, key: tuple[Any, ...], init: Any, step: Callable[..., Any]) -> int:
        if key not in self._summaries:
            self._summaries[key] = len(self._inits)
            self._inits.append(init)
            self._steps.append(step)
        return self._summaries[key]

    def _state(self, j: int, node: _Node, cols: dict[str, list[Any]]) -> Any:
        """Summary ``j`` of the history ending at ``node``, folded forward from the newest
        node that already holds it (each node's value is kept in its memo)."""
        chain = []
        while node is not None and j not in node[4]:
            chain.append(node)
            node = node[3]
        state = self._inits[j] if node is None else node[4][j]
        step = self._steps[j]
        for nd in reversed(chain):
            state = step(state, nd[0], nd[1], cols)
            nd[4][j] = state
        return state


def _literal(tree: list[Any]) -> Any:
    kind = tree[0]
    if kind == "num":
        text = tree[1]
        return int(text) if text.lstrip("-").isdigit() else Decimal(text)
    if kind == "str":
        return tree[1]
    if kind == "bool":
        return bool(tree[1])
    return None


def _operator(name: str, args: list[_Eval]) -> _Eval:
    if name in BINARY:
        func = BINARY[name]
        left, right = args
        return lambda cols, n, v, i, h: func(left(cols, n, v, i, h), right(cols, n, v, i, h))
    if name in ("and", "or"):
        return _connective(name == "or", args)
    (first, *rest) = args
    if name == "not":
        return lambda cols, n, v, i, h: _not(first(cols, n, v, i, h))
    if name == "neg":
        return lambda cols, n, v, i, h: _negate(first(cols, n, v, i, h))
    if name == "isnull":
        return lambda cols, n, v, i, h: first(cols, n, v, i, h) is None
    if name == "notnull":
        return lambda cols, n, v, i, h: first(cols, n, v, i, h) is not None
    if name == "coalesce":
        def coalesce(cols: Any, n: int, v: int, i: int, h: _Node) -> Any:
            for arg in args:
                x = arg(cols, n, v, i, h)
                if x is not None:
                    return x
            return None
        return coalesce
    if name in FUNCTIONS:
        func = FUNCTIONS[name]
        return lambda cols, n, v, i, h: func([arg(cols, n, v, i, h) for arg in args])
    if name == "case":
        def case(cols: Any, n: int, v: int, i: int, h: _Node) -> Any:
            for k in range(0, len(args) - 1, 2):
                if args[k](cols, n, v, i, h) is True:
                    return args[k + 1](cols, n, v, i, h)
            return args[-1](cols, n, v, i, h)
        return case
    if name == "between":
        low, high = rest
        at_least, at_most = BINARY[">="], BINARY["<="]

        def between(cols: Any, n: int, v: int, i: int, h: _Node) -> Any:
            x = first(cols, n, v, i, h)
            above = at_least(x, low(cols, n, v, i, h))
            below = at_most(x, high(cols, n, v, i, h))
            if above is False or below is False:
                return False
            return None if above is None or below is None else True
        return between
    raise ValueError(f"not a condition operator: {name!r}")


def _connective(decisive: bool, args: list[_Eval]) -> _Eval:
    """AND (``decisive`` False) or OR (True) with SQL's unknown: one argument equal to
    ``decisive`` settles it, else any NULL makes it NULL."""
    def apply(cols: Any, n: int, v: int, i: int, h: _Node) -> Any:
        unknown = False
        for arg in args:
            x = arg(cols, n, v, i, h)
            if x is decisive:
                return decisive
            unknown = unknown or x is None
        return None if unknown else not decisive
    return apply


def _not(x: Any) -> Any:
    return None if x is None else not x


def _negate(x: Any) -> Any:
    return None if x is None else -x
