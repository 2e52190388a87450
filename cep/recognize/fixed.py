"""Native plan of fixed-length patterns: ``PATTERN (A B C)`` as one window pass of ``lead()``.

When the pattern is a concatenation of variables only (no quantifier, alternation, anchor,
exclusion or ``PERMUTE``), every match has the same length L and holds a known variable at
each position. A row starts a match exactly when, for every position k, the DEFINE of the
k-th variable holds at the row k places later (and that row exists). Every DEFINE that reads
one row and physical offsets of it (``PREV``/``NEXT``) can be read k rows on with
``lead``/``lag`` over the same window, so Spark finds the starts itself, in the window pass
the hand-written query would make, and nothing crosses into Python.

That is the whole answer when matches cannot compete for rows: ``AFTER MATCH SKIP TO NEXT
ROW`` (each start is a match), or ``SKIP PAST LAST ROW`` when no two starts can share a row
(:func:`never_overlap`: one variable, or DEFINEs such as ``type = 'T00'`` / ``type = 'T01'``
that exclude each other at every overlap). ``ONE ROW PER MATCH`` measures read fixed positions
too: ``FIRST``/``LAST`` of a variable (with offsets, ``RUNNING`` or ``FINAL``: the same in one
row), a plain column (its last row), ``PREV``/``NEXT`` around them, ``CLASSIFIER()`` (the
last variable), ``count`` (a constant or a sum of ``IS NOT NULL`` tests), ``min``/``max``
(``least``/``greatest``, which skip NULLs as the aggregates do). Anything else (``sum``,
``avg``: their result types depend on the input's, which a text rewrite does not know;
``MATCH_NUMBER()``; ``WITHIN``; DEFINE that reads the match; ALL ROWS PER MATCH) keeps the
matcher's plan (:mod:`cep.recognize.rewrite`), whose answers these equal (tests/sql_ext/
test_match_recognize_fixed.py compares the two on random patterns).

Example:
    >>> from cep.recognize.parser import parse_row_pattern
    >>> positions(parse_row_pattern("A (B C)"))
    ('A', 'B', 'C')
    >>> positions(parse_row_pattern("A B+")) is None
    True
    >>> never_overlap(("A", "A", "C"), {"A": "COALESCE(t = 'a', FALSE)",
    ...                                 "C": "COALESCE(t = 'c' AND x > 0, FALSE)"})
    True
    >>> never_overlap(("A", "A"), {"A": "COALESCE(t = 'a', FALSE)"})
    False
    >>> shift("COALESCE(x < LAG(x, 1) OVER __mr_w, FALSE)", 2)
    'COALESCE(LEAD(x, 2) OVER __mr_w < LEAD(x, 1) OVER __mr_w, FALSE)'
"""

from __future__ import annotations

from typing import Any

from cep.recognize.ast import Concatenation, Empty, Node, Variable
from cep.recognize.clause import Clause, Item
from cep.recognize.expressions import WINDOW, Translator, quoted, string_literal

__all__ = ["MAX_FILTERED", "fixed_query", "never_overlap", "positions", "shift", "start_test",
           "window_filter"]


class _NotFixed(Exception):
    """Raised inside the translation when a measure needs the matcher's plan."""


def positions(node: Node) -> tuple[str, ...] | None:
    """The variable at each position when ``node`` is a concatenation of variables only."""
    found = _positions(node)
    return found or None  # the empty pattern is not of fixed length here: it matches no row


def _positions(node: Node) -> tuple[str, ...] | None:
    if isinstance(node, Variable):
        return (node.name,)
    if isinstance(node, Empty):
        return ()
    if isinstance(node, Concatenation):
        out: list[str] = []
        for item in node.items:
            inner = _positions(item)
            if inner is None:
                return None
            out.extend(inner)
        return tuple(out)
    return None


def shift(sql: str, k: int) -> str:
    """The SQL of ``sql``'s value at the row ``k`` places on, evaluated at this row.

    ``sql`` reads the current row's columns and ``LAG``/``LEAD(e, n) OVER __mr_w`` (what
    DEFINE's ``PREV``/``NEXT`` become); each becomes one ``LEAD``/``LAG`` of ``e`` by the summed
    offset. At a row whose k-th successor exists, both read the same rows (a ``lag`` from
    there reads a row that exists iff it does from here), so callers check that row exists.
    """
    return _shifted(_parse(sql), k).sql(dialect="spark")


def _parse(sql: str) -> Any:
    import sqlglot

    return sqlglot.parse_one(sql, read="spark")


def _shifted(tree: Any, k: int) -> Any:
    from sqlglot import exp

    def move(node: Any) -> Any:
        if isinstance(node, (exp.Lambda, exp.Subquery, exp.Select)):
            raise _NotFixed  # names that are not the row's columns
        if isinstance(node, exp.Window):
            func, name = node.this, node.args.get("alias")
            if str(getattr(name, "this", "")) != WINDOW or not isinstance(func, (exp.Lag,
                                                                               exp.Lead)):
                raise _NotFixed
            if func.args.get("default") is not None:
                raise _NotFixed
            step = _literal_int(func.args.get("offset"), 1)
            return _at(func.this.copy(), k + (step if isinstance(func, exp.Lead) else -step))
        if isinstance(node, exp.Column):
            return _at(node.copy(), k)
        return node

    # transform() does not descend into a node it replaced: a window's argument or a
    # column is moved once.
    return tree.copy().transform(move, copy=False)


def _literal_int(node: Any, default: int) -> int:
    from sqlglot import exp

    if node is None:
        return default
    if isinstance(node, exp.Literal) and not node.is_string and str(node.this).isdigit():
        return int(node.this)
    raise _NotFixed


def _at(value: Any, k: int) -> Any:
    """``value`` (a row's expression) at the row ``k`` places on (back when negative)."""
    from sqlglot import exp

    if k == 0:
        return value
    func = exp.Lead if k > 0 else exp.Lag
    return exp.Window(this=func(this=value, offset=exp.Literal.number(abs(k))),
                      alias=exp.to_identifier(WINDOW), over="OVER")


class _FixedTranslator(Translator):
    """MEASURES over fixed positions, read with ``lead`` from the match's first row."""

    def __init__(self, base: Translator, order: tuple[str, ...]) -> None:
        super().__init__(base.window_sql, base.variables, base.subsets, base.partition)
        self.order = order

    def _places(self, target: str | None) -> list[int]:
        members = self._members(target)
        return [k for k, v in enumerate(self.order) if members is None or v in members]

    def _read(self, value_sql: str, k: int) -> Any:
        navigated = dict(self.navigations).get(value_sql)  # PREV/NEXT of a logical row
        return _shifted(_parse(navigated or value_sql), k)

    def _measure_node(self, node: Any, rows: str, item: Item, statement: str) -> Any:
        from sqlglot import exp

        from cep.recognize.calls import called as _call, has_labels as _has_labels

        call = _call(node)
        if call is not None and call[1] == "CLASSIFIER":
            places = self._places(self._classifier_target(node, item, statement))
            return _parse(string_literal(self.order[places[-1]]) if places
                          else "CAST(NULL AS STRING)")
        if call is not None and call[1] == "MATCH_NUMBER":
            raise _NotFixed
        if (call is not None and _has_labels(node)) or isinstance(node, exp.WithinGroup):
            raise _NotFixed  # labels read at other rows, ordered aggregates: the matcher's plan
        return super()._measure_node(node, rows, item, statement)

    def _logical(self, name: str, target: str | None, value_sql: str, offset: int,
                 final: bool, rows: str) -> Any:
        places = self._places(target)
        if offset >= len(places):  # no such row: NULL of the value's type
            return _parse(f"IF(FALSE, {self._read(value_sql, 0).sql(dialect='spark')}, NULL)")
        return self._read(value_sql, places[-(offset + 1)] if name == "LAST" else places[offset])

    def _aggregate(self, node: Any, name: str, final: bool, rows: str, item: Item,
                   statement: str) -> Any:
        if name not in ("COUNT", "MIN", "MAX"):
            raise _NotFixed
        target, args = self._aggregated(node, name, item, statement)
        places = self._places(target)
        if name == "COUNT" and args is None:
            return _parse(f"CAST({len(places)} AS BIGINT)")
        if args is None or len(args) != 1:
            raise _NotFixed
        value = args[0]
        values = [_shifted(value, k).sql(dialect="spark") for k in places]
        if name == "COUNT":
            tests = " + ".join(f"CASE WHEN ({v}) IS NULL THEN 0 ELSE 1 END" for v in values)
            return _parse(f"CAST({tests} AS BIGINT)")
        if len(values) == 1:
            return _parse(values[0])
        return _parse(f"{'LEAST' if name == 'MIN' else 'GREATEST'}({', '.join(values)})")


def start_test(order: tuple[str, ...], defined: dict[str, str], at: int = 0) -> str:
    """The SQL of "a match starts ``at`` rows on from this row" (``at`` <= 0: before it).

    Raises:
        _NotFixed: a DEFINE cannot be read from another row (see :func:`shift`).
    """
    first, last = at, at + len(order) - 1
    exists = ([f"LAG(1, {-first}) OVER {WINDOW} IS NOT NULL"] if first < 0 else []) + \
        ([f"LEAD(1, {last}) OVER {WINDOW} IS NOT NULL"] if last > 0 else [])
    tests = [shift(defined[v], at + k) for k, v in enumerate(order) if v in defined]
    return "(" + " AND ".join(exists + tests or ["TRUE"]) + ")"


def window_filter(order: tuple[str, ...] | None, base: Translator, defined: dict[str, str],
                  clause: Clause) -> str | None:
    """The SQL that keeps the rows of some possible match of a fixed-length pattern.

    A row is in a match only if a match starts at most L - 1 rows before it, whatever the
    skip mode; Spark drops the others before the matcher runs (the matcher sees the gaps in
    the row numbers and lets no match cross one). None when the pattern is not of fixed
    length, a DEFINE reads the match, unmatched rows are output, or L > :data:`MAX_FILTERED`
    (the test grows with L squared).
    """
    if order is None or base.conditions or clause.unmatched or len(order) > MAX_FILTERED:
        return None
    try:
        return " OR ".join(start_test(order, defined, -j) for j in range(len(order)))
    except _NotFixed:
        return None


MAX_FILTERED = 8
"""The longest fixed-length pattern :func:`window_filter` writes a test for."""


def never_overlap(order: tuple[str, ...], defined: dict[str, str]) -> bool:
    """Whether no two matches can share a row, so every skip mode gives every start.

    Two starts j rows apart (0 < j < L) share rows j..L-1 of the first; they are impossible
    when at one of those rows the two variables there require different constants of the
    same column (``type = 'T00'`` against ``type = 'T01'``), read off the DEFINEs' top-level
    ``AND``s. A pattern of one variable cannot overlap itself.
    """
    facts = {v: _equalities(defined[v]) if v in defined else {} for v in set(order)}
    length = len(order)
    for j in range(1, length):
        if not any(_clash(facts[order[j + m]], facts[order[m]]) for m in range(length - j)):
            return False
    return True


def _clash(a: dict[str, tuple[bool, Any]], b: dict[str, tuple[bool, Any]]) -> bool:
    # A string and a number may be equal after Spark's casts: only constants of one kind.
    return any(column in b and b[column][0] == kind and b[column][1] != value
               for column, (kind, value) in a.items())


def _equalities(sql: str) -> dict[str, tuple[bool, Any]]:
    """``column -> (is a string, constant)`` of the ``column = constant`` conjuncts of a
    DEFINE's ``COALESCE(condition, FALSE)``; numbers compare by value (1 = 1.0)."""
    from decimal import Decimal

    from sqlglot import exp

    tree = _parse(sql)
    if isinstance(tree, exp.Coalesce):
        tree = tree.this
    found: dict[str, tuple[bool, Any]] = {}
    for part in tree.flatten() if isinstance(tree, exp.And) else [tree]:
        if not isinstance(part, exp.EQ):
            continue
        column, constant = part.this, part.expression
        if isinstance(column, exp.Literal):
            column, constant = constant, column
        if isinstance(column, exp.Column) and isinstance(constant, exp.Literal):
            text = str(constant.this)
            found.setdefault(column.sql(dialect="spark").lower(), 
                             (True, text) if constant.is_string else (False, Decimal(text)))
    return found


def fixed_query(clause: Clause, order: tuple[str, ...] | None, base: Translator,
                defined: dict[str, str], source: str, window: str, statement: str
                ) -> str | None:
    """The native query of a fixed-length clause, or None when the matcher's plan is needed.

    Args:
        clause: the clause read by :func:`cep.recognize.clause.read_clause`.
        order: :func:`positions` of its pattern.
        base: the translator that checked DEFINE and MEASURES (its conditions tell whether a
            DEFINE reads the match).
        defined: variable -> its DEFINE's boolean SQL.
        source: the input (table or bracketed subquery).
        window: the partition's window specification, tiebreak included.
        statement: the statement, for the measures' error positions (already checked).
    """
    if (order is None or clause.rows != "one" or clause.within is not None or base.conditions
            or not (clause.skip == "next_row" or clause.skip == "past_last"
                    and never_overlap(order, defined))):
        return None
    fixed = _FixedTranslator(base, order)
    try:
        measures = [(m.name, fixed.measure(m, "one", statement)) for m in clause.measures]
        starts = start_test(order, defined)
    except _NotFixed:
        return None
    keys = list(base.partition)  # quoted already
    inner = ", ".join(keys + [f"{sql} AS __mr_m{i}" for i, (_, sql) in enumerate(measures)] +
                      [f"{starts} AS __mr_start"])
    outer = ", ".join(keys + [f"__mr_m{i} AS {quoted(name)}"
                              for i, (name, _) in enumerate(measures)])
    return (f"SELECT {outer} FROM (SELECT {inner} FROM (SELECT *, XXHASH64(*) AS __mr_tie "
            f"FROM {source}) WINDOW {WINDOW} AS ({window})) WHERE __mr_start")

