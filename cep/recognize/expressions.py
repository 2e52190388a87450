"""DEFINE and MEASURES expressions of MATCH_RECOGNIZE, translated to plain Spark SQL.

Both are parsed with sqlglot's Spark dialect after the navigation words are renamed at the
token level (``FIRST``/``LAST`` would otherwise become Spark's own aggregates, and ``RUNNING``
/``FINAL`` are no Spark syntax), then rewritten:

* **DEFINE** conditions become boolean columns Spark computes before the matcher runs: the
  current row's columns as they are, ``PREV(e, n)``/``NEXT(e, n)`` as ``lag``/``lead`` over the
  partition's window. A condition that reads other rows of the match (``A.price`` in the
  DEFINE of ``B``, ``FIRST``/``LAST``, aggregates, ``CLASSIFIER(U)``, ``MATCH_NUMBER()``,
  ``PREV(CLASSIFIER())``) becomes a condition tree the matcher asks per thread
  (:mod:`cep.recognize.condition`); every part of it that reads one row only is still
  computed by Spark, as a value column ``__mr_x<j>``.
* **MEASURES** become expressions over the matcher's output rows (one row per matched row,
  with ``__mr_match``, ``__mr_seq``, ``__mr_label``, ``__mr_kind``): ``LAST(A.x, n)`` and
  ``FIRST`` are ``max_by``/``min_by`` (or a sorted ``collect_list``) over the rows labelled
  ``A``; any Spark aggregate (:mod:`cep.recognize.aggregates`) becomes ``agg(...) FILTER (WHERE
  <A's rows>)``; ``CLASSIFIER(U)`` is the label of the last row mapped to ``U``,
  ``MATCH_NUMBER()`` is ``__mr_match``, and ``PREV``/``NEXT`` read a ``lag``/``lead`` column
  computed before the matcher (around CLASSIFIER: the label at that position of the match).
  With ONE ROW PER MATCH they aggregate over the match's group; with ALL ROWS PER MATCH each
  becomes a window over the match, up to the current row (RUNNING, the default) or over all
  of it (FINAL).

Trino's documentation ("Row pattern recognition expressions") decides what the standard
leaves open; docs/match-recognize.md lists each construct.

Example:
    >>> from cep.recognize.clause import Item
    >>> t = Translator("PARTITION BY k ORDER BY ts", ("A", "B"), {})
    >>> t.define("B", Item("price < PREV(price)", (0, 0)), "x")
    'COALESCE(price < LAG(price, 1) OVER __mr_w, FALSE)'
    >>> t.measure(Item("LAST(B.price) - FIRST(A.price)", (0, 0), "drop"), "one", "x")
    "MAX_BY(price, CASE WHEN __mr_label = 'B' THEN __mr_seq END) - MIN_BY(price, CASE WHEN __mr_label = 'A' THEN __mr_seq END)"
    >>> t.measure(Item("stddev_pop(B.price)", (0, 0), "spread"), "one", "x")
    "STDDEV_POP(price) FILTER(WHERE __mr_label = 'B')"
"""

from __future__ import annotations

from typing import Any

from cep.lang.spark_sql import quoted
from cep.recognize.aggregates import COLUMNS, DEFINE_AGGREGATES, FRAMELESS, PARAMETERS
from cep.recognize.calls import (LABELS, argument, called, has_labels, map_children,
                                 outside_subqueries, parse, prepared)
from cep.recognize.clause import Item
from cep.recognize.errors import (E_BAD_EXPRESSION, E_UNKNOWN_VARIABLE, E_UNSUPPORTED,
                                  RowPatternSemanticError, RowPatternSyntaxError)
from cep.recognize.scalar_tree import FUNCTION_NODES, OPERATORS, scalar_tree

__all__ = ["Translator", "WINDOW"]

WINDOW = "__mr_w"
"""The name of the partition's window (``WINDOW __mr_w AS (PARTITION BY ... ORDER BY ...)``)."""

_MATCHED = "__mr_kind = 0"
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
        self.verbatim: dict[str, str] = {}  # placeholder column -> SQL sqlglot must not rewrite

    # --- DEFINE ---------------------------------------------------------------------------

    def define(self, variable: str, item: Item, statement: str) -> str:
        """The boolean SQL column of ``variable``'s condition (NULL counts as false).

        A condition that reads other rows of the match is kept in :attr:`conditions` as a
        tree, and its column is ``TRUE`` (the matcher decides).
        """
        _, tree = prepared(item, statement)
        if self._reads_match(tree, variable, item, statement):
            self.conditions[variable] = self._tree(tree, variable, item, statement)
            return "TRUE"
        body = self._define_node(tree, variable, item, statement)
        return f"COALESCE({body.sql(dialect='spark')}, FALSE)"

    def _define_node(self, node: Any, variable: str, item: Item, statement: str) -> Any:
        from sqlglot import exp

        call = called(node)
        if call is not None:
            kind, name, _ = call
            if kind == "NAV" and name in ("PREV", "NEXT"):
                args = node.expressions
                argument(args, name, item, statement)
                inner = self._define_node(args[0].copy(), variable, item, statement)
                offset = self._offset(args[1:], item, statement, 1)
                func = "LAG" if name == "PREV" else "LEAD"
                return parse(f"{func}({inner.sql(dialect='spark')}, {offset}) OVER {WINDOW}")
            if name == "CLASSIFIER":  # only reached when U holds `variable` (_reads_match)
                return exp.Literal.string(variable)  # the row tested is mapped to `variable`
            raise AssertionError(f"{name} reads the match: _reads_match sends it to _tree")
        if isinstance(node, (exp.Subquery, exp.Select)):
            return node  # a subquery's columns are its own tables'
        if isinstance(node, exp.Column) and node.table:
            # Only reached for the tested row's own variable (or a SUBSET holding it): other
            # qualifiers make the condition a per-thread tree (_reads_match).
            self._qualifier(node, item, statement)
            return exp.column(node.this.copy())
        return map_children(node, lambda child: self._define_node(child, variable, item,
                                                                   statement))

    def _reads_match(self, node: Any, variable: str, item: Item, statement: str) -> bool:
        """Whether ``node`` reads rows of the match other than the one tested."""
        from sqlglot import exp

        for sub in outside_subqueries(node):
            call = called(sub)
            if call is not None:
                kind, name, _ = call
                if kind == "AGG" or name in ("FIRST", "LAST", "MATCH_NUMBER"):
                    return True
                if name == "CLASSIFIER" and variable not in (
                        self._members(self._classifier_target(sub, item, statement))
                        or (variable,)):
                    return True
                if name in ("PREV", "NEXT") and has_labels(sub):
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
        operator = OPERATORS.get(type(node))
        if operator is not None:
            return ["op", operator, again(node.this), again(node.expression)]
        if isinstance(node, exp.Not):
            return ["op", "not", again(node.this)]
        if isinstance(node, exp.Neg):
            return ["op", "neg", again(node.this)]
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            return ["op", "isnull", again(node.this)]
        if isinstance(node, exp.Coalesce):
            return ["op", "coalesce", again(node.this), *[again(e) for e in node.expressions]]
        if isinstance(node, exp.Between):
            return ["op", "between", again(node.this), again(node.args["low"]),
                    again(node.args["high"])]
        scalar = scalar_tree(node, again)
        if scalar is not None:
            return scalar
        if isinstance(node, exp.Column):
            target, value = self._scoped(node, item, statement)
            return ["nav", "LAST", self._members(target), 0,
                    self._value(value.sql(dialect="spark")), 0]
        call = called(node)
        if call is not None:
            kind, name, semantics = call
            if semantics == "FINAL":
                raise RowPatternSyntaxError(E_BAD_EXPRESSION, f"DEFINE of {variable}: FINAL is "
                                            "for MEASURES only (DEFINE sees the match so far)",
                                            statement, *item.span)
            if kind == "AGG":
                if name.lower() not in DEFINE_AGGREGATES:
                    raise RowPatternSemanticError(
                        E_UNSUPPORTED, f"DEFINE of {variable}: {name.lower()}() is not "
                        "available in DEFINE, where the matcher keeps each aggregate running "
                        f"per partial match itself (there: {', '.join(sorted(DEFINE_AGGREGATES))}"
                        "); every Spark aggregate works in MEASURES", statement, *item.span)
                return self._define_aggregate(node, name, item, statement)
            if name == "MATCH_NUMBER":
                return ["number"]
            if name == "CLASSIFIER":
                return ["nav", "LAST",
                        self._members(self._classifier_target(node, item, statement)), 0,
                        None, 0]
            if name in ("FIRST", "LAST", "PREV", "NEXT"):
                return self._define_navigation(node, name, item, statement)
        what = node.key.upper()
        raise RowPatternSemanticError(
            E_UNSUPPORTED, f"DEFINE of {variable}: {what} around a reference to other rows of "
            "the match is not supported (there: comparisons, + - * / % div, ||, AND, OR, NOT, "
            "IS [NOT] NULL, BETWEEN, IN, LIKE, ILIKE, CASE, IF, COALESCE, " + ", ".join(sorted(
                {name.upper() for name, _ in FUNCTION_NODES.values()} | {
                    "GREATEST", "LEAST", "TRIM", "LTRIM", "RTRIM", "BROUND", "PMOD", "LOG10"})) + ", "
            "FIRST, LAST, PREV, NEXT, CLASSIFIER, MATCH_NUMBER and the aggregates "
            + ", ".join(sorted(DEFINE_AGGREGATES)) + "); compute it on the "
            "current row, or in MEASURES", statement, *item.span)

    def _define_navigation(self, node: Any, name: str, item: Item, statement: str) -> Any:
        """``["nav", ...]`` of FIRST/LAST, or of PREV/NEXT over a logical position."""
        args = node.expressions
        argument(args, name, item, statement)
        physical = 0
        if name in ("PREV", "NEXT"):
            step = self._offset(args[1:], item, statement, 1)
            physical = -step if name == "PREV" else step
            inner = args[0]
            inner_call = called(inner)
            logical, k = "LAST", 0
            if inner_call is not None and inner_call[1] in ("FIRST", "LAST"):
                logical = inner_call[1]
                k = self._offset(inner.expressions[1:], item, statement, 0)
                argument(inner.expressions, inner_call[1], item, statement)
                inner = inner.expressions[0]
        else:
            logical, k, inner = name, self._offset(args[1:], item, statement, 0), args[0]
        inner_call = called(inner)
        if inner_call is not None and inner_call[1] == "CLASSIFIER":
            target = self._classifier_target(inner, item, statement)
            return ["nav", logical, self._members(target), k, None, physical]
        target, value = self._scoped(inner, item, statement)
        return ["nav", logical, self._members(target), k,
                self._value(value.sql(dialect="spark")), physical]

    def _define_aggregate(self, node: Any, name: str, item: Item, statement: str) -> Any:
        """``["agg", ...]`` of a running aggregate in DEFINE."""
        from sqlglot import exp

        target, args = self._aggregated(node, name, item, statement)
        if args is None:
            return ["agg", "count", self._members(target), None]
        func = DEFINE_AGGREGATES[name.lower()]
        columns = COLUMNS.get(func, 1)
        fewest, most = PARAMETERS.get(func, (0, 0))
        if not columns + fewest <= len(args) <= columns + most:
            wanted = f"{columns + fewest}" + (f" to {columns + most}" if most > fewest else "")
            raise RowPatternSyntaxError(E_BAD_EXPRESSION, f"{name.lower()} takes {wanted} "
                                        f"argument{'s' if columns + most > 1 else ''} in "
                                        "DEFINE", statement, *item.span)
        params = []
        for arg in args[columns:]:
            literal = arg.this if isinstance(arg, exp.Neg) else arg
            if not isinstance(literal, (exp.Literal, exp.Boolean)):
                raise RowPatternSyntaxError(E_BAD_EXPRESSION, f"{name.lower()}() in DEFINE "
                                            f"takes a literal after its column, found "
                                            f"{arg.sql(dialect='spark')}", statement,
                                            *item.span)
            params.append(["num", "-" + str(literal.this)] if literal is not arg
                          else self._tree(arg, "", item, statement))
        return ["agg", func, self._members(target),
                *[self._value(a.sql(dialect="spark")) for a in args[:columns]], *params]

    def _aggregated(self, node: Any, name: str, item: Item, statement: str,
                    labels: bool = False, extra: tuple[Any, ...] = ()
                    ) -> tuple[str | None, list[Any] | None]:
        """``(variable or None, arguments)`` of an aggregate: every argument (and ``extra``,
        an ordering's expressions) reads one variable, one SUBSET or the whole match (Trino's
        rule); arguments None for ``count(*)`` / ``count(A.*)``. ``labels``: CLASSIFIER() and
        MATCH_NUMBER() may appear (MEASURES), read from the matcher's labels."""
        from sqlglot import exp

        args = node.expressions
        if len(args) == 1 and (isinstance(args[0], exp.Star) or (
                isinstance(args[0], exp.Column) and isinstance(args[0].this, exp.Star))):
            arg = args[0]
            if name != "COUNT":
                raise RowPatternSyntaxError(E_BAD_EXPRESSION, f"{name.lower()}(*) is not an "
                                            "aggregate; only count(*) is", statement,
                                            *item.span)
            return (self._qualifier(arg, item, statement) if isinstance(arg, exp.Column)
                    else None), None
        if not args and name == "COUNT":
            return None, None  # count(): Trino's spelling of count(*)
        targets: set[str] = set()
        out = []
        for arg in [*args, *extra]:
            if any((called(sub) or ("", "", ""))[1] in ("PREV", "NEXT", "FIRST", "LAST")
                   for sub in outside_subqueries(arg)):
                raise RowPatternSyntaxError(E_BAD_EXPRESSION, f"the arguments of "
                                            f"{name.lower()}() cannot navigate (PREV, NEXT, "
                                            "FIRST, LAST), as SQL:2016 has it; CLASSIFIER() and "
                                            "MATCH_NUMBER() can be read", statement,
                                            *item.span)
            target, value = self._scoped(arg, item, statement, labels=labels)
            if target is not None:
                targets.add(target)
            out.append(value)
        if len(targets) > 1:
            raise RowPatternSemanticError(E_BAD_EXPRESSION, f"the arguments of {name.lower()}() "
                                          "must read one pattern variable, found "
                                          f"{', '.join(sorted(targets))}", statement,
                                          *item.span)
        return (targets.pop() if targets else None), out[:len(args)] + out[len(args):]

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
        _, tree = prepared(item, statement)
        sql = self._measure_node(tree, rows, item, statement).sql(dialect="spark")
        for name, text in self.verbatim.items():
            sql = sql.replace(name, f"({text})")
        return sql

    def _measure_node(self, node: Any, rows: str, item: Item, statement: str) -> Any:
        from sqlglot import exp

        if isinstance(node, (exp.Subquery, exp.Select)):
            return node  # a subquery's columns are its own tables'
        if isinstance(node, exp.WithinGroup) and (called(node.this) or ("",))[0] == "AGG":
            kind, name, semantics = called(node.this)  # type: ignore[misc]
            return self._ordered_aggregate(node, name, semantics == "FINAL" or rows == "one",
                                           rows, item, statement)
        call = called(node)
        if call is not None:
            kind, name, semantics = call
            final = semantics == "FINAL" or rows == "one"
            if kind == "AGG":
                return self._aggregate(node, name, final, rows, item, statement)
            if name == "MATCH_NUMBER":
                return exp.column("__mr_match")
            if name == "CLASSIFIER":
                target = self._classifier_target(node, item, statement)
                return self._logical("LAST", target, "__mr_label", 0, final, rows)
            if name in ("FIRST", "LAST"):
                args = node.expressions
                argument(args, name, item, statement)
                offset = self._offset(args[1:], item, statement, 0)
                target, value = self._scoped(args[0], item, statement, labels=True)
                return self._logical(name, target, value.sql(dialect="spark"), offset, final,
                                     rows)
            # PREV / NEXT: a physical offset from a logical position (LAST by default).
            args = node.expressions
            argument(args, name, item, statement)
            offset = self._offset(args[1:], item, statement, 1)
            inner, logical, logical_offset = args[0], "LAST", 0
            inner_call = called(inner)
            if inner_call is not None and inner_call[1] in ("FIRST", "LAST"):
                logical = inner_call[1]
                logical_offset = self._offset(inner.expressions[1:], item, statement, 0)
                final = final or inner_call[2] == "FINAL"
                argument(inner.expressions, inner_call[1], item, statement)
                inner = inner.expressions[0]
            if has_labels(inner):
                return self._physical_label(name, inner, logical, logical_offset, offset, final,
                                            rows, item, statement)
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
        return map_children(node, lambda child: self._measure_node(child, rows, item,
                                                                    statement))

    def _aggregate(self, node: Any, name: str, final: bool, rows: str, item: Item,
                   statement: str) -> Any:
        """Any Spark aggregate over the rows of one variable (or the match), as
        ``agg(...) FILTER (WHERE <those rows>)``."""
        target, args = self._aggregated(node, name, item, statement, labels=True)
        if args is None:
            return self._framed(f"COUNT(CASE WHEN {self._condition(target)} THEN 1 END)",
                                final, rows)
        cond = self._condition(target)
        listed = ", ".join(a.sql(dialect="spark") for a in args)
        ordered = name in ("COLLECT_LIST", "ARRAY_AGG") and len(args) == 1
        joined = name in ("LISTAGG", "STRING_AGG") and len(args) in (1, 2)
        if ordered or joined:
            # In the match's order (Trino's array_agg): a GROUP BY keeps no order by itself,
            # and Spark allows no window frame with listagg's WITHIN GROUP.
            value = args[0].sql(dialect="spark")
            pairs = self._framed_text(f"COLLECT_LIST(NAMED_STRUCT('s', __mr_seq, 'v', "
                                      f"{value})) FILTER (WHERE {cond} AND ({value}) IS NOT "
                                      "NULL)", final, rows)
            values = f"TRANSFORM(ARRAY_SORT({pairs}), __mr_e -> __mr_e.v)"
            if ordered:
                return parse(values)
            separator = args[1].sql(dialect="spark") if len(args) == 2 else "''"
            return parse(f"CASE WHEN SIZE({pairs}) > 0 THEN ARRAY_JOIN({values}, "
                          f"{separator}) END")
        sql = f"{name}({listed}) FILTER (WHERE {cond})"
        if name.lower() in FRAMELESS:
            return self._frameless(sql, name, final, rows, item, statement)
        return self._framed(sql, final, rows)

    def _frameless(self, sql: str, name: str, final: bool, rows: str, item: Item,
                   statement: str) -> Any:
        """An aggregate Spark allows over a whole window only: FINAL, or ONE ROW PER MATCH."""
        if rows == "one":
            return self._verbatim(sql)
        if not final:
            raise RowPatternSemanticError(E_UNSUPPORTED, f"RUNNING {name.lower()}(...) in ALL "
                                          "ROWS PER MATCH is not supported (Spark allows no "
                                          "window frame for it); write FINAL, or use ONE ROW "
                                          "PER MATCH", statement, *item.span)
        keys = ", ".join([*self.partition, "__mr_match"])
        return self._verbatim(f"{sql} OVER (PARTITION BY {keys})")

    def _ordered_aggregate(self, node: Any, name: str, final: bool, rows: str, item: Item,
                           statement: str) -> Any:
        """``percentile_cont(0.5) WITHIN GROUP (ORDER BY A.x)`` and the like: the ordering
        reads the same rows as the arguments."""
        from sqlglot import exp

        order = node.expression
        keys = [o.this if isinstance(o, exp.Ordered) else o for o in order.expressions]
        target, values = self._aggregated(node.this, name, item, statement, labels=True,
                                          extra=tuple(keys))
        assert values is not None
        count = len(node.this.expressions)
        order = order.copy()
        for ordered, value in zip(order.expressions, values[count:]):
            if isinstance(ordered, exp.Ordered):
                ordered.set("this", value)
        listed = ", ".join(a.sql(dialect="spark") for a in values[:count])
        sql = (f"{name}({listed}) WITHIN GROUP ({order.sql(dialect='spark')}) FILTER (WHERE "
               f"{self._condition(target)})")
        return self._frameless(sql, name, final, rows, item, statement)

    def _verbatim(self, sql: str) -> Any:
        """A placeholder column for ``sql``, put back by :meth:`measure` after sqlglot wrote
        the rest (its Spark dialect would turn WITHIN GROUP into other functions)."""
        from sqlglot import exp

        name = f"__mr_verbatim{len(self.verbatim)}_"
        self.verbatim[name] = sql
        return exp.column(name)

    def _physical_label(self, name: str, inner: Any, logical: str, logical_offset: int,
                        offset: int, final: bool, rows: str, item: Item, statement: str) -> Any:
        """``PREV``/``NEXT`` around CLASSIFIER: the label of the row ``offset`` rows from the
        logical position, NULL outside the match (or, RUNNING, beyond the current row)."""
        from sqlglot import exp

        target, value = self._scoped(inner, item, statement, labels=True)
        if any(c.name not in ("__mr_label", "__mr_match") for c in value.find_all(exp.Column)):
            raise RowPatternSemanticError(E_UNSUPPORTED, f"{name.lower()}() of an expression "
                                          "that mixes CLASSIFIER() with columns is not "
                                          "supported; navigate to each separately", statement,
                                          *item.span)
        position = self._logical(logical, target, "__mr_seq", logical_offset, final, rows)
        at = f"({position.sql(dialect='spark')}) {'-' if name == 'PREV' else '+'} {offset}"
        listed = self._framed(f"COLLECT_LIST(CASE WHEN {_MATCHED} THEN NAMED_STRUCT('s', "
                              "__mr_seq, 'v', __mr_label) END)", final, rows)
        # __mr_seq counts 1, 2, ... through the match: the sorted list's k-th entry is row k.
        label = parse(f"CASE WHEN {at} >= 1 THEN TRY_ELEMENT_AT(ARRAY_SORT("
                       f"{listed.sql(dialect='spark')}), {at}).v END")
        return value.transform(lambda n: label.copy() if isinstance(n, exp.Column)
                               and n.name == "__mr_label" else n)

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
        return parse(f"TRY_ELEMENT_AT(ARRAY_SORT({collected.sql(dialect='spark')}), "
                      f"{index}).v")

    def _framed(self, sql: str, final: bool, rows: str) -> Any:
        return parse(self._framed_text(sql, final, rows))

    def _framed_text(self, sql: str, final: bool, rows: str) -> str:
        """``sql``, an aggregate, over the match's group (ONE ROW) or its window up to the
        current row (RUNNING) or over all of it (FINAL)."""
        if rows == "one":
            return sql
        bound = "UNBOUNDED FOLLOWING" if final else "CURRENT ROW"
        keys = ", ".join([*self.partition, "__mr_match"])
        return (f"{sql} OVER (PARTITION BY {keys} ORDER BY __mr_seq ROWS BETWEEN "
                f"UNBOUNDED PRECEDING AND {bound})")

    def _condition(self, target: str | None) -> str:
        if target is None:
            return _MATCHED
        members = self.subsets.get(target, (target,))
        labels = ", ".join(string_literal(m) for m in members)
        return f"__mr_label IN ({labels})" if len(members) > 1 else f"__mr_label = {labels}"

    def _scoped(self, node: Any, item: Item, statement: str, labels: bool = False
                ) -> tuple[str | None, Any]:
        """The one variable ``node``'s columns are qualified with (None: the universal one),
        and ``node`` with the qualifiers removed. With ``labels`` (MEASURES), CLASSIFIER(U)
        reads U's rows' labels (``__mr_label``) and MATCH_NUMBER() is ``__mr_match``."""
        from sqlglot import exp

        node = node.copy()
        targets = set()
        for column in [c for c in outside_subqueries(node) if isinstance(c, exp.Column)]:
            if column.table:
                targets.add(self._qualifier(column, item, statement))
            column.set("table", None)
        for sub in list(outside_subqueries(node)):
            call = called(sub)
            if call is None:
                continue
            if call[1] in LABELS and labels:
                if call[1] == "CLASSIFIER":
                    target = self._classifier_target(sub, item, statement)
                    if target is not None:
                        targets.add(target)
                replacement = exp.column("__mr_label" if call[1] == "CLASSIFIER"
                                         else "__mr_match")
                if sub is node:
                    node = replacement
                else:
                    sub.replace(replacement)
                continue
            if call[0] == "AGG":
                raise RowPatternSyntaxError(E_BAD_EXPRESSION, "an aggregate cannot be nested "
                                            "in navigation or in another aggregate (SQL:2016)",
                                            statement, *item.span)
            where = "DEFINE" if not labels else "this place"
            raise RowPatternSemanticError(E_UNSUPPORTED, f"{call[1].lower()}() cannot be read "
                                          f"inside navigation or an aggregate in {where} (PREV "
                                          "and NEXT may hold FIRST or LAST; in MEASURES, "
                                          "CLASSIFIER() and MATCH_NUMBER() may be read inside "
                                          "FIRST, LAST and aggregates)", statement, *item.span)
        if len(targets) > 1:
            raise RowPatternSemanticError(E_BAD_EXPRESSION, "one navigation or aggregate can "
                                          f"read one pattern variable, found "
                                          f"{', '.join(sorted(targets))}", statement,
                                          *item.span)
        return (targets.pop() if targets else None), node

    def _classifier_target(self, node: Any, item: Item, statement: str) -> str | None:
        """The variable or SUBSET of ``CLASSIFIER(U)`` (None for ``CLASSIFIER()``)."""
        from sqlglot import exp

        args = node.expressions
        if not args:
            return None
        if len(args) == 1 and isinstance(args[0], exp.Column) and not args[0].table and \
                isinstance(args[0].this, exp.Identifier):
            ident = args[0].this
            name = ident.this if ident.quoted else str(ident.this).upper()
            if name not in self.variables and name not in self.subsets:
                known = ", ".join([*self.variables, *self.subsets])
                raise RowPatternSemanticError(E_UNKNOWN_VARIABLE, f"CLASSIFIER({name}): not a "
                                              f"pattern variable or SUBSET (known: {known})",
                                              statement, *item.span)
            return name
        raise RowPatternSyntaxError(E_BAD_EXPRESSION, "CLASSIFIER takes nothing or one pattern "
                                    "variable or SUBSET name", statement, *item.span)

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


def string_literal(text: str) -> str:
    """``text`` as a Spark SQL string literal (sqlglot escapes quotes and backslashes)."""
    from sqlglot import exp

    return exp.Literal.string(text).sql(dialect="spark")


