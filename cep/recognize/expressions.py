"""DEFINE and MEASURES expressions of MATCH_RECOGNIZE, translated to plain Spark SQL.

Both are parsed with sqlglot's Spark dialect after the navigation words are renamed at the
token level (``FIRST``/``LAST`` would otherwise become Spark's own aggregates, and ``RUNNING``
/``FINAL`` are no Spark syntax), then rewritten:

* **DEFINE** conditions become boolean columns Spark computes before the matcher runs: the
  current row's columns as they are, ``PREV(e, n)``/``NEXT(e, n)`` as ``lag``/``lead`` over the
  partition's window. A condition that reads other rows of the match (``A.price`` in the
  DEFINE of ``B``, ``FIRST``/``LAST``, aggregates, ``PREV(CLASSIFIER())``) becomes a condition
  tree the matcher asks per thread (:mod:`cep.recognize.condition`); every part of it that
  reads one row only is still computed by Spark, as a value column ``__mr_x<j>``.
* **MEASURES** become expressions over the matcher's output rows (one row per matched row,
  with ``__mr_match``, ``__mr_seq``, ``__mr_label``, ``__mr_kind``): ``LAST(A.x, n)`` and
  ``FIRST`` are ``max_by``/``min_by`` (or a sorted ``collect_list``) over the rows labelled
  ``A``, aggregates take a ``CASE`` that keeps those rows, ``CLASSIFIER()`` is the label of the
  last row, ``MATCH_NUMBER()`` is ``__mr_match``, and ``PREV``/``NEXT`` read a ``lag``/``lead``
  column computed before the matcher. With ONE ROW PER MATCH they aggregate over the match's
  group; with ALL ROWS PER MATCH each becomes a window over the match, up to the current row
  (RUNNING, the default) or over all of it (FINAL).

Example:
    >>> from cep.recognize.clause import Item
    >>> t = Translator("PARTITION BY k ORDER BY ts", ("A", "B"), {})
    >>> t.define("B", Item("price < PREV(price)", (0, 0)), "x")
    'COALESCE(price < LAG(price, 1) OVER __mr_w, FALSE)'
    >>> t.measure(Item("LAST(B.price) - FIRST(A.price)", (0, 0), "drop"), "one", "x")
    "MAX_BY(price, CASE WHEN __mr_label = 'B' THEN __mr_seq END) - MIN_BY(price, CASE WHEN __mr_label = 'A' THEN __mr_seq END)"
"""

from __future__ import annotations

from typing import Any

from cep.recognize.clause import Item
from cep.recognize.errors import (E_BAD_EXPRESSION, E_UNKNOWN_VARIABLE, E_UNSUPPORTED,
                                  RowPatternSemanticError, RowPatternSyntaxError)

__all__ = ["Translator", "WINDOW"]

WINDOW = "__mr_w"
"""The name of the partition's window (``WINDOW __mr_w AS (PARTITION BY ... ORDER BY ...)``)."""

_NAVIGATION = ("PREV", "NEXT", "FIRST", "LAST", "CLASSIFIER", "MATCH_NUMBER")
_AGGREGATES = ("COUNT", "SUM", "AVG", "MIN", "MAX")
_MATCHED = "__mr_kind = 0"


def _prepared(item: Item, statement: str) -> tuple[str, Any]:
    """``item``'s text with navigation renamed, and its sqlglot tree."""
    import sqlglot
    from sqlglot.errors import SqlglotError

    from cep.recognize.clause import tokens_of

    tokens = tokens_of(item.text)
    out = []
    last = 0
    semantics = ""
    for k, tok in enumerate(tokens):
        word = tok.text.upper()
        nxt = tokens[k + 1].text if k + 1 < len(tokens) else ""
        if word in ("RUNNING", "FINAL") and k + 1 < len(tokens) and \
                tokens[k + 1].text.upper() in _NAVIGATION + _AGGREGATES:
            out.append(item.text[last:tok.start])
            last = tok.end + 1
            semantics = word
            continue
        if nxt == "(" and word in _NAVIGATION + _AGGREGATES:
            out.append(item.text[last:tok.start])
            kind = "NAV" if word in _NAVIGATION else "AGG"
            out.append(f"MR_{kind}_{word}_{semantics or 'DEFAULT'}")
            last = tok.end + 1
        semantics = ""
    out.append(item.text[last:])
    text = "".join(out)
    try:
        tree = sqlglot.parse_one(text, read="spark")
    except SqlglotError as err:
        raise RowPatternSyntaxError(E_BAD_EXPRESSION, f"not a valid expression: "
                                    f"{str(err).splitlines()[0]}", statement, *item.span) from None
    from sqlglot import exp

    if any(isinstance(node, exp.Distinct) for node in tree.walk()):
        raise RowPatternSemanticError(E_UNSUPPORTED, "DISTINCT inside DEFINE or MEASURES is not "
                                      "supported (aggregate the MATCH_RECOGNIZE output "
                                      "instead)", statement, *item.span)
    return text, tree


def _call(node: Any) -> tuple[str, str, str] | None:
    """``(kind, NAME, semantics)`` of a renamed navigation or aggregate call."""
    from sqlglot import exp

    if isinstance(node, exp.Anonymous) and str(node.this).startswith("MR_"):
        _, kind, rest = str(node.this).split("_", 2)
        name, _, semantics = rest.rpartition("_")
        return kind, name, semantics
    return None


class Translator:
    """Translates one clause's DEFINE and MEASURES (see the module docstring).

    Args:
        window_sql: the window specification, e.g. ``PARTITION BY k ORDER BY ts, __mr_tie``.
        variables: the primary pattern variables.
        subsets: SUBSET name -> its primary variables.
    """

    def __init__(self, window_sql: str, variables: tuple[str, ...],
                 subsets: dict[str, tuple[str, ...]], partition: tuple[str, ...] = ()) -> None:
        self.window_sql = window_sql
        self.variables = variables
        self.subsets = subsets
        self.partition = partition
        self.navigations: list[tuple[str, str]] = []  # (column, SQL over the input)
        self.values: dict[str, str] = {}  # SQL over the input -> its __mr_x<j> column
        self.conditions: dict[str, Any] = {}  # variable -> condition tree, asked per thread

    # --- DEFINE ---------------------------------------------------------------------------

    def define(self, variable: str, item: Item, statement: str) -> str:
        """The boolean SQL column of ``variable``'s condition (NULL counts as false).

        A condition that reads other rows of the match is kept in :attr:`conditions` as a
        tree, and its column is ``TRUE`` (the matcher decides).
        """
        _, tree = _prepared(item, statement)
        if self._reads_match(tree, variable, item, statement):
            self.conditions[variable] = self._tree(tree, variable, item, statement)
            return "TRUE"
        body = self._define_node(tree, variable, item, statement)
        return f"COALESCE({body.sql(dialect='spark')}, FALSE)"

    def _define_node(self, node: Any, variable: str, item: Item, statement: str) -> Any:
        from sqlglot import exp

        call = _call(node)
        if call is not None:
            kind, name, _ = call
            if kind == "NAV" and name in ("PREV", "NEXT"):
                args = node.expressions
                inner = self._define_node(args[0].copy(), variable, item, statement)
                offset = self._offset(args[1:], item, statement, 1)
                func = "LAG" if name == "PREV" else "LEAD"
                return _parse(f"{func}({inner.sql(dialect='spark')}, {offset}) OVER {WINDOW}")
            if name == "CLASSIFIER" and not node.expressions:
                return exp.Literal.string(variable)  # the row tested is mapped to `variable`
            raise RowPatternSemanticError(
                E_UNSUPPORTED, f"DEFINE of {variable}: {name.lower()}(...) with these "
                "arguments is not supported in DEFINE", statement, *item.span)
        if isinstance(node, exp.Column) and node.table:
            # Only reached for the tested row's own variable (or a SUBSET holding it): other
            # qualifiers make the condition a per-thread tree (_reads_match).
            self._qualifier(node, item, statement)
            return exp.column(node.this.copy())
        return _map_children(node, lambda child: self._define_node(child, variable, item,
                                                                   statement))

    def _reads_match(self, node: Any, variable: str, item: Item, statement: str) -> bool:
        """Whether ``node`` reads rows of the match other than the one tested."""
        from sqlglot import exp

        for sub in node.walk():
            call = _call(sub)
            if call is not None:
                kind, name, _ = call
                if kind == "AGG" or name in ("FIRST", "LAST", "MATCH_NUMBER"):
                    return True
                if name in ("PREV", "NEXT") and any(
                        (_call(c) or ("", "", ""))[1] == "CLASSIFIER" for c in sub.walk()):
                    return True
            elif isinstance(sub, exp.Column) and sub.table and not isinstance(sub.this, exp.Star):
                target = self._qualifier(sub, item, statement)
                if variable not in self.subsets.get(target, (target,)):
                    return True
        return False

    def _tree(self, node: Any, variable: str, item: Item, statement: str) -> Any:
        """The condition tree of a DEFINE that reads the match (:mod:`cep.recognize.condition`)."""
        from sqlglot import exp

        def again(child: Any) -> Any:
            return self._tree(child, variable, item, statement)

        if isinstance(node, exp.Literal):
            return ["str" if node.is_string else "num", str(node.this)]
        if isinstance(node, exp.Boolean):
            return ["bool", bool(node.this)]
        if isinstance(node, exp.Null):
            return ["null"]
        if not self._reads_match(node, variable, item, statement):
            sql = self._define_node(node.copy(), variable, item, statement).sql(dialect="spark")
            return ["col", self._value(sql)]
        if isinstance(node, exp.Paren):
            return again(node.this)
        operator = _OPERATORS.get(type(node))
        if operator is not None:
            return ["op", operator, again(node.this), again(node.expression)]
        if isinstance(node, exp.Not):
            return ["op", "not", again(node.this)]
        if isinstance(node, exp.Neg):
            return ["op", "neg", again(node.this)]
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            return ["op", "isnull", again(node.this)]
        if isinstance(node, exp.Abs):
            return ["op", "abs", again(node.this)]
        if isinstance(node, exp.Coalesce):
            return ["op", "coalesce", again(node.this), *[again(e) for e in node.expressions]]
        if isinstance(node, exp.Between):
            return ["op", "between", again(node.this), again(node.args["low"]),
                    again(node.args["high"])]
        if isinstance(node, exp.Column):
            target, value = self._scoped(node, item, statement)
            return ["nav", "LAST", self._members(target), 0,
                    self._value(value.sql(dialect="spark")), 0]
        call = _call(node)
        if call is not None:
            kind, name, semantics = call
            if semantics == "FINAL":
                raise RowPatternSyntaxError(E_BAD_EXPRESSION, f"DEFINE of {variable}: FINAL is "
                                            "for MEASURES only (DEFINE sees the match so far)",
                                            statement, *item.span)
            if kind == "AGG":
                return self._define_aggregate(node, name, item, statement)
            if name in ("FIRST", "LAST", "PREV", "NEXT"):
                return self._define_navigation(node, name, item, statement)
        what = call[1].lower() + "()" if call is not None else node.key.upper()
        raise RowPatternSemanticError(
            E_UNSUPPORTED, f"DEFINE of {variable}: {what} around a reference to other rows of "
            "the match is not supported (there: comparisons, + - * / %, AND, OR, NOT, IS [NOT] "
            "NULL, BETWEEN, COALESCE, ABS, FIRST, LAST, PREV, NEXT, count, sum, avg, min, max)",
            statement, *item.span)

    def _define_navigation(self, node: Any, name: str, item: Item, statement: str) -> Any:
        """``["nav", ...]`` of FIRST/LAST, or of PREV/NEXT over a logical position."""
        args = node.expressions
        physical = 0
        if name in ("PREV", "NEXT"):
            step = self._offset(args[1:], item, statement, 1)
            physical = -step if name == "PREV" else step
            inner = args[0]
            inner_call = _call(inner)
            logical, k = "LAST", 0
            if inner_call is not None and inner_call[1] in ("FIRST", "LAST"):
                logical = inner_call[1]
                k = self._offset(inner.expressions[1:], item, statement, 0)
                inner = inner.expressions[0]
        else:
            logical, k, inner = name, self._offset(args[1:], item, statement, 0), args[0]
        inner_call = _call(inner)
        if inner_call is not None and inner_call[1] == "CLASSIFIER" and not inner.expressions:
            return ["nav", logical, None, k, None, physical]
        target, value = self._scoped(inner, item, statement)
        return ["nav", logical, self._members(target), k,
                self._value(value.sql(dialect="spark")), physical]

    def _define_aggregate(self, node: Any, name: str, item: Item, statement: str) -> Any:
        """``["agg", ...]`` of a running aggregate in DEFINE."""
        target, value = self._aggregated(node, name, item, statement)
        if value is None:
            return ["agg", "count", self._members(target), None]
        return ["agg", name.lower(), self._members(target),
                self._value(value.sql(dialect="spark"))]

    def _aggregated(self, node: Any, name: str, item: Item, statement: str
                    ) -> tuple[str | None, Any]:
        """``(variable or None, value)`` of an aggregate's one argument; value None for
        ``count(*)`` / ``count(A.*)``."""
        from sqlglot import exp

        args = node.expressions
        if len(args) != 1:
            raise RowPatternSyntaxError(E_BAD_EXPRESSION, f"{name.lower()} takes one argument",
                                        statement, *item.span)
        arg = args[0]
        if isinstance(arg, exp.Star) or (isinstance(arg, exp.Column)
                                          and isinstance(arg.this, exp.Star)):
            if name != "COUNT":
                raise RowPatternSyntaxError(E_BAD_EXPRESSION, f"{name.lower()}(*) is not an "
                                            "aggregate; only count(*) is", statement,
                                            *item.span)
            return (self._qualifier(arg, item, statement) if isinstance(arg, exp.Column)
                    else None), None
        return self._scoped(arg, item, statement)

    def _members(self, target: str | None) -> list[str] | None:
        return None if target is None else list(self.subsets.get(target, (target,)))

    def _value(self, sql: str) -> str:
        """The ``__mr_x<j>`` column Spark computes ``sql`` into (one per distinct text)."""
        if sql not in self.values:
            self.values[sql] = f"__mr_x{len(self.values)}"
        return self.values[sql]

    # --- MEASURES ---------------------------------------------------------------------------

    def measure(self, item: Item, rows: str, statement: str) -> str:
        """The SQL of one measure over the matcher's output rows (``rows``: one or all)."""
        _, tree = _prepared(item, statement)
        return self._measure_node(tree, rows, item, statement).sql(dialect="spark")

    def _measure_node(self, node: Any, rows: str, item: Item, statement: str) -> Any:
        from sqlglot import exp

        call = _call(node)
        if call is not None:
            kind, name, semantics = call
            final = semantics == "FINAL" or rows == "one"
            if kind == "AGG":
                return self._aggregate(node, name, final, rows, item, statement)
            if name == "MATCH_NUMBER":
                return exp.column("__mr_match")
            if name == "CLASSIFIER":
                return self._framed(f"MAX_BY(__mr_label, CASE WHEN {_MATCHED} THEN __mr_seq END)",
                                    final, rows)
            if name in ("FIRST", "LAST"):
                args = node.expressions
                offset = self._offset(args[1:], item, statement, 0)
                target, value = self._scoped(args[0], item, statement)
                return self._logical(name, target, value.sql(dialect="spark"), offset, final,
                                     rows)
            # PREV / NEXT: a physical offset from a logical position (LAST by default).
            args = node.expressions
            offset = self._offset(args[1:], item, statement, 1)
            inner, logical, logical_offset = args[0], "LAST", 0
            inner_call = _call(inner)
            if inner_call is not None and inner_call[1] in ("FIRST", "LAST"):
                logical = inner_call[1]
                logical_offset = self._offset(inner.expressions[1:], item, statement, 0)
                final = final or inner_call[2] == "FINAL"
                inner = inner.expressions[0]
            target, value = self._scoped(inner, item, statement)
            func = "LAG" if name == "PREV" else "LEAD"
            column = f"__mr_nav{len(self.navigations)}"
            self.navigations.append(
                (column, f"{func}({value.sql(dialect='spark')}, {offset}) OVER {WINDOW}"))
            return self._logical(logical, target, column, logical_offset, final, rows)
        if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
            target, value = self._scoped(node, item, statement)
            return self._logical("LAST", target, value.sql(dialect="spark"), 0,
                                 rows == "one", rows)
        return _map_children(node, lambda child: self._measure_node(child, rows, item,
                                                                    statement))

    def _aggregate(self, node: Any, name: str, final: bool, rows: str, item: Item,
                   statement: str) -> Any:
        target, value = self._aggregated(node, name, item, statement)
        if value is None:
            return self._framed(f"COUNT(CASE WHEN {self._condition(target)} THEN 1 END)",
                                final, rows)
        return self._framed(f"{name}(CASE WHEN {self._condition(target)} THEN "
                            f"{value.sql(dialect='spark')} END)", final, rows)

    def _logical(self, name: str, target: str | None, value_sql: str, offset: int,
                 final: bool, rows: str) -> Any:
        cond = self._condition(target)
        if offset == 0:
            func = "MAX_BY" if name == "LAST" else "MIN_BY"
            return self._framed(f"{func}({value_sql}, CASE WHEN {cond} THEN __mr_seq END)",
                                final, rows)
        index = -(offset + 1) if name == "LAST" else offset + 1
        collected = self._framed(f"COLLECT_LIST(CASE WHEN {cond} THEN NAMED_STRUCT('s', "
                                 f"__mr_seq, 'v', {value_sql}) END)", final, rows)
        return _parse(f"TRY_ELEMENT_AT(ARRAY_SORT({collected.sql(dialect='spark')}), "
                      f"{index}).v")

    def _framed(self, sql: str, final: bool, rows: str) -> Any:
        if rows == "one":
            return _parse(sql)
        bound = "UNBOUNDED FOLLOWING" if final else "CURRENT ROW"
        keys = ", ".join([*self.partition, "__mr_match"])
        return _parse(f"{sql} OVER (PARTITION BY {keys} ORDER BY __mr_seq ROWS BETWEEN "
                      f"UNBOUNDED PRECEDING AND {bound})")

    def _condition(self, target: str | None) -> str:
        if target is None:
            return _MATCHED
        members = self.subsets.get(target, (target,))
        labels = ", ".join(string_literal(m) for m in members)
        return f"__mr_label IN ({labels})" if len(members) > 1 else f"__mr_label = {labels}"

    def _scoped(self, node: Any, item: Item, statement: str) -> tuple[str | None, Any]:
        """The one variable ``node``'s columns are qualified with (None: the universal one),
        and ``node`` with the qualifiers removed."""
        from sqlglot import exp

        node = node.copy()
        targets = set()
        for column in list(node.find_all(exp.Column)):
            if column.table:
                targets.add(self._qualifier(column, item, statement))
            column.set("table", None)
        if any(_call(n) is not None for n in node.walk()):
            raise RowPatternSemanticError(E_UNSUPPORTED, "navigation inside navigation other "
                                          "than PREV/NEXT(FIRST/LAST(...)) is not supported",
                                          statement, *item.span)
        if len(targets) > 1:
            raise RowPatternSemanticError(E_BAD_EXPRESSION, "one navigation or aggregate can "
                                          f"read one pattern variable, found "
                                          f"{', '.join(sorted(targets))}", statement,
                                          *item.span)
        return (targets.pop() if targets else None), node

    def _qualifier(self, column: Any, item: Item, statement: str) -> str:
        ident = column.args.get("table")
        name = ident.this if getattr(ident, "quoted", False) else str(ident.this).upper()
        if name not in self.variables and name not in self.subsets:
            known = ", ".join([*self.variables, *self.subsets])
            raise RowPatternSemanticError(E_UNKNOWN_VARIABLE, f"{name} is not a pattern "
                                          f"variable or SUBSET (known: {known})", statement,
                                          *item.span)
        return name

    def _offset(self, args: list[Any], item: Item, statement: str, default: int) -> int:
        from sqlglot import exp

        if not args:
            return default
        arg = args[0]
        if isinstance(arg, exp.Literal) and not arg.is_string and str(arg.this).isdigit():
            return int(arg.this)
        raise RowPatternSyntaxError(E_BAD_EXPRESSION, "a navigation offset must be a "
                                    "non-negative whole number", statement, *item.span)


def _operators() -> dict[type, str]:
    from sqlglot import exp

    return {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">",
            exp.GTE: ">=", exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/",
            exp.Mod: "%", exp.And: "and", exp.Or: "or"}


_OPERATORS = _operators()


def quoted(name: str) -> str:
    """``name`` as a Spark SQL identifier in backquotes."""
    return "`" + name.replace("`", "``") + "`"


def string_literal(text: str) -> str:
    """``text`` as a Spark SQL string literal (sqlglot escapes quotes and backslashes)."""
    from sqlglot import exp

    return exp.Literal.string(text).sql(dialect="spark")


def _map_children(node: Any, rewrite: Any) -> Any:
    """``node`` with ``rewrite`` applied to each child expression (in place)."""
    from sqlglot import exp

    for key, value in list(node.args.items()):
        if isinstance(value, exp.Expression):
            node.set(key, rewrite(value))
        elif isinstance(value, list):
            node.set(key, [rewrite(v) if isinstance(v, exp.Expression) else v for v in value])
    return node


def _parse(sql: str) -> Any:
    import sqlglot

    return sqlglot.parse_one(sql, read="spark")
