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
* ``["agg", func, members, column, *more]``: the aggregate ``func`` (the values of
  :data:`cep.recognize.aggregates.DEFINE_AGGREGATES`) over the rows mapped to ``members``
  (None: every row of the match); ``column`` None means ``count(*)``; ``max_by``/``min_by``
  name the ordering column after the value's;
* ``["number"]``: MATCH_NUMBER(), the number the match being tried will get;
* ``["op", name, *args]``: SQL operators with three-valued logic (``= <> < <= > >= + - * / %
  neg and or not isnull notnull coalesce abs between case like ilike in concat upper lower
  length greatest least``; ``case`` takes test, value pairs and then the ELSE value).

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
                   *more: str) -> _Eval:
        members = self._members(names)
        if func in _LOGICAL:
            return self._logical_aggregate(func, members, column)
        if func in _MOMENTS:
            return self._moments(func, members, column)
        if func in _FOLDS:
            return self._fold(func, members, column, *more)

        def step(state: tuple[int, Any, Any, Any], row: int, label: int, cols: Any) -> Any:
            if members is not None and label not in members:
                return state
            if column is None:
                return (state[0] + 1, None, None, None)
            x = cols[column][row]
            if x is None:
                return state
            count, total, low, high = state
            if count == 0:
                return (1, x, x, x)
            return (count + 1, _add(total, x), x if x < low else low, x if x > high else high)

        j = self._summary(("agg", members, column), (0, None, None, None), step)
        pick = {"count": lambda s: s[0], "sum": lambda s: s[1], "min": lambda s: s[2],
                "max": lambda s: s[3],
                "avg": lambda s: None if s[0] == 0 else _divide(s[1], s[0])}[func]

        def evaluate(cols: dict[str, list[Any]], n: int, v: int, i: int, h: _Node) -> Any:
            return pick(step(self._state(j, h, cols), i, v, cols))

        return evaluate

    def _moments(self, func: str, members: frozenset[int] | None, column: str | None) -> _Eval:
        """stddev and variance, sample and population: Welford's running count, mean and sum
        of squared distances (in doubles, as Spark's central moment aggregates)."""
        def step(state: tuple[int, float, float], row: int, label: int, cols: Any) -> Any:
            if members is not None and label not in members:
                return state
            x = cols[column][row]
            if x is None:
                return state
            n, mean, m2 = state
            n += 1
            delta = float(x) - mean
            mean += delta / n
            return (n, mean, m2 + delta * (float(x) - mean))

        j = self._summary(("moments", members, column), (0, 0.0, 0.0), step)
        pick = _MOMENTS[func]

        def evaluate(cols: dict[str, list[Any]], n: int, v: int, i: int, h: _Node) -> Any:
            return pick(step(self._state(j, h, cols), i, v, cols))

        return evaluate

    def _fold(self, func: str, members: frozenset[int] | None, column: str | None,
              *more: str) -> _Eval:
        """max_by, min_by, first_value, last_value and the bit aggregates: one running value
        (``(seen, value, key)``)."""
        combine = _FOLDS[func]
        key_column = more[0] if more else None

        def step(state: tuple[bool, Any, Any], row: int, label: int, cols: Any) -> Any:
            if members is not None and label not in members:
                return state
            x = cols[column][row]
            key = cols[key_column][row] if key_column is not None else None
            return combine(state, x, key)

        j = self._summary(("fold", func, members, column, key_column), (False, None, None), step)

        def evaluate(cols: dict[str, list[Any]], n: int, v: int, i: int, h: _Node) -> Any:
            return step(self._state(j, h, cols), i, v, cols)[1]

        return evaluate

    def _logical_aggregate(self, func: str, members: frozenset[int] | None,
                           column: str | None) -> _Eval:
        """count_if, bool_and, bool_or: counts of TRUE and FALSE values (NULLs skipped)."""
        def step(state: tuple[int, int], row: int, label: int, cols: Any) -> Any:
            if members is not None and label not in members:
                return state
            x = cols[column][row]
            if x is None:
                return state
            return (state[0] + 1, state[1]) if x else (state[0], state[1] + 1)

        j = self._summary(("logical", members, column), (0, 0), step)
        pick = _LOGICAL[func]

        def evaluate(cols: dict[str, list[Any]], n: int, v: int, i: int, h: _Node) -> Any:
            return pick(step(self._state(j, h, cols), i, v, cols))

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


def _numbers(a: Any, b: Any) -> tuple[Any, Any]:
    # Spark widens DECIMAL with DOUBLE to DOUBLE; Python refuses to mix them.
    if isinstance(a, Decimal) and isinstance(b, float):
        return float(a), b
    if isinstance(a, float) and isinstance(b, Decimal):
        return a, float(b)
    return a, b


def _add(a: Any, b: Any) -> Any:
    a, b = _numbers(a, b)
    return a + b


def _divide(a: Any, b: Any) -> Any:
    a, b = _numbers(a, b)
    if b == 0:
        return None  # as try_divide: a condition never fails the query
    return a / b


def _compare(test: Callable[[Any, Any], bool]) -> Callable[[Any, Any], Any]:
    def apply(a: Any, b: Any) -> Any:
        if a is None or b is None:
            return None
        a, b = _numbers(a, b)
        return test(a, b)
    return apply


def _arithmetic(func: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def apply(a: Any, b: Any) -> Any:
        if a is None or b is None:
            return None
        a, b = _numbers(a, b)
        return func(a, b)
    return apply


def _modulo(a: Any, b: Any) -> Any:
    if b == 0:
        return None
    result = abs(a) % abs(b)  # SQL's remainder takes the dividend's sign
    return -result if a < 0 else result


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "=": _compare(lambda a, b: a == b), "<>": _compare(lambda a, b: a != b),
    "<": _compare(lambda a, b: a < b), "<=": _compare(lambda a, b: a <= b),
    ">": _compare(lambda a, b: a > b), ">=": _compare(lambda a, b: a >= b),
    "+": _arithmetic(lambda a, b: a + b), "-": _arithmetic(lambda a, b: a - b),
    "*": _arithmetic(lambda a, b: a * b),
    "/": lambda a, b: None if a is None or b is None else _divide(a, b),
    "%": _arithmetic(_modulo),
}


def _operator(name: str, args: list[_Eval]) -> _Eval:
    if name in _BINARY:
        func = _BINARY[name]
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
    if name == "abs":
        return lambda cols, n, v, i, h: _absolute(first(cols, n, v, i, h))
    if name == "coalesce":
        def coalesce(cols: Any, n: int, v: int, i: int, h: _Node) -> Any:
            for arg in args:
                x = arg(cols, n, v, i, h)
                if x is not None:
                    return x
            return None
        return coalesce
    if name in _VARIADIC:
        func = _VARIADIC[name]
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
        at_least, at_most = _BINARY[">="], _BINARY["<="]

        def between(cols: Any, n: int, v: int, i: int, h: _Node) -> Any:
            x = first(cols, n, v, i, h)
            above = at_least(x, low(cols, n, v, i, h))
            below = at_most(x, high(cols, n, v, i, h))
            if above is False or below is False:
                return False
            return None if above is None or below is None else True
        return between
    raise ValueError(f"not a condition operator: {name!r}")


_LOGICAL: dict[str, Callable[[tuple[int, int]], Any]] = {
    "count_if": lambda s: s[0],
    "bool_and": lambda s: None if s == (0, 0) else s[1] == 0,
    "bool_or": lambda s: None if s == (0, 0) else s[0] > 0,
}


def _sqrt(x: float | None) -> float | None:
    return None if x is None else x ** 0.5


_MOMENTS: dict[str, Callable[[tuple[int, float, float]], Any]] = {
    "var_samp": lambda s: s[2] / (s[0] - 1) if s[0] > 1 else None,
    "var_pop": lambda s: s[2] / s[0] if s[0] else None,
    "stddev_samp": lambda s: _sqrt(s[2] / (s[0] - 1)) if s[0] > 1 else None,
    "stddev_pop": lambda s: _sqrt(s[2] / s[0]) if s[0] else None,
}


def _by(better: Callable[[Any, Any], bool]) -> Callable[..., tuple[bool, Any, Any]]:
    """max_by / min_by: the value at the best key so far (rows with a NULL key skipped; the
    first of equal keys kept)."""
    def combine(state: tuple[bool, Any, Any], x: Any, key: Any) -> tuple[bool, Any, Any]:
        if key is None:
            return state
        if not state[0] or better(*_numbers(key, state[2])):
            return (True, x, key)
        return state
    return combine


def _bits(func: Callable[[int, int], int]) -> Callable[..., tuple[bool, Any, Any]]:
    def combine(state: tuple[bool, Any, Any], x: Any, key: Any) -> tuple[bool, Any, Any]:
        if x is None:
            return state
        return (True, x if not state[0] else func(state[1], x), None)
    return combine


_FOLDS: dict[str, Callable[..., tuple[bool, Any, Any]]] = {
    "max_by": _by(lambda a, b: a > b), "min_by": _by(lambda a, b: a < b),
    # Spark's first_value/last_value (and any_value) keep NULLs unless told to ignore them.
    "first_value": lambda s, x, key: s if s[0] else (True, x, None),
    "last_value": lambda s, x, key: (True, x, None),
    "bit_and": _bits(lambda a, b: a & b), "bit_or": _bits(lambda a, b: a | b),
    "bit_xor": _bits(lambda a, b: a ^ b),
}


def _like(text: Any, pattern: Any, fold: bool) -> Any:
    """SQL LIKE with Spark's default escape (backslash): ``%`` any run, ``_`` one character."""
    import re

    if text is None or pattern is None:
        return None
    out, k = [], 0
    while k < len(pattern):
        ch = pattern[k]
        if ch == "\\" and k + 1 < len(pattern):
            out.append(re.escape(pattern[k + 1]))
            k += 2
            continue
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        k += 1
    flags = re.DOTALL | (re.IGNORECASE if fold else 0)
    return re.fullmatch("".join(out), str(text), flags) is not None


def _in(values: list[Any]) -> Any:
    x, *items = values
    if x is None:
        return None
    unknown = False
    for item in items:
        same = _BINARY["="](x, item)
        if same is True:
            return True
        unknown = unknown or same is None
    return None if unknown else False


def _extreme(pick: Callable[..., Any]) -> Callable[[list[Any]], Any]:
    def apply(values: list[Any]) -> Any:
        present = [x for x in values if x is not None]  # Spark's greatest/least skip NULLs
        return pick(present) if present else None
    return apply


def _text(func: Callable[[str], Any]) -> Callable[[list[Any]], Any]:
    return lambda values: None if values[0] is None else func(str(values[0]))


_VARIADIC: dict[str, Callable[[list[Any]], Any]] = {
    "like": lambda a: _like(a[0], a[1], False), "ilike": lambda a: _like(a[0], a[1], True),
    "in": _in,
    "concat": lambda a: None if any(x is None for x in a) else "".join(map(str, a)),
    "upper": _text(str.upper), "lower": _text(str.lower), "length": _text(len),
    "greatest": _extreme(max), "least": _extreme(min),
}


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


def _absolute(x: Any) -> Any:
    return None if x is None else abs(x)
