"""The calls of a MATCH_RECOGNIZE expression: navigation and aggregates found at the token
level, the expression parsed, and small helpers over sqlglot trees.

``FIRST``/``LAST`` would otherwise parse as Spark's own aggregates, ``RUNNING``/``FINAL`` are no
Spark syntax, and sqlglot knows only some aggregates: so each navigation or aggregate call is
renamed before parsing to ``MR_{NAV|AGG}_{NAME}_{SEMANTICS}``, a plain function node that
:func:`called` reads back. The translator (:mod:`cep.recognize.expressions`) works on the tree.

Example:
    >>> from cep.recognize.clause import Item
    >>> text, tree = prepared(Item("FINAL max_by(A.x, A.ts) + FIRST(x)", (0, 0)), "s")
    >>> text  # the keyword RUNNING or FINAL leaves its space
    ' MR_AGG_MAX_BY_FINAL(A.x, A.ts) + MR_NAV_FIRST_DEFAULT(x)'
    >>> sorted(called(n) for n in outside_subqueries(tree) if called(n))
    [('AGG', 'MAX_BY', 'FINAL'), ('NAV', 'FIRST', 'DEFAULT')]
"""

from __future__ import annotations

from typing import Any

from cep.recognize.aggregates import AGGREGATES, REFUSED
from cep.recognize.clause import Item
from cep.recognize.errors import (E_BAD_EXPRESSION, E_UNSUPPORTED, RowPatternSemanticError,
                                  RowPatternSyntaxError)

__all__ = ["LABELS", "NAVIGATION", "argument", "called", "has_labels", "map_children",
           "outside_subqueries", "parse", "prepared"]

NAVIGATION = ("PREV", "NEXT", "FIRST", "LAST", "CLASSIFIER", "MATCH_NUMBER")
AGGREGATE_NAMES = frozenset(name.upper() for name in AGGREGATES) - set(NAVIGATION)
LABELS = ("CLASSIFIER", "MATCH_NUMBER")
"""Calls that read the matcher's labels, not the input's columns."""


_LOG10 = "CEPFN_LOG10"
"""What ``log10`` is renamed to until sqlglot has parsed the expression (see prepared)."""


def prepared(item: Item, statement: str) -> tuple[str, Any]:
    """``item``'s text with navigation and aggregate calls renamed, and its sqlglot tree.

    ``FIRST(`` becomes ``MR_NAV_FIRST_DEFAULT(``, ``FINAL max_by(`` ``MR_AGG_MAX_BY_FINAL(``:
    sqlglot then keeps every such call as a plain function node with its name and semantics,
    whether or not it knows the aggregate. Calls inside a subquery keep their Spark meaning.
    """
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    text = _renamed(item, statement)
    try:
        tree = sqlglot.parse_one(text, read="spark")
    except SqlglotError as err:
        raise RowPatternSyntaxError(E_BAD_EXPRESSION, f"not a valid expression: "
                                    f"{str(err).splitlines()[0]}", statement, *item.span) from None
    tree = tree.transform(lambda n: exp.Anonymous(this="log10", expressions=n.expressions)
                          if isinstance(n, exp.Anonymous) and str(n.this) == _LOG10 else n)
    _refuse_modifiers(tree, item, statement)
    return text, tree


def _renamed(item: Item, statement: str) -> str:
    """``item``'s text with each navigation or aggregate call (outside subqueries) renamed to
    ``MR_{NAV|AGG}_{NAME}_{SEMANTICS}``, its RUNNING or FINAL dropped, and log10 renamed.

    Raises:
        RowPatternSyntaxError: RUNNING or FINAL before a call that is neither.
        RowPatternSemanticError: a call that reads GROUP BY sets or a metric view.
    """
    from cep.recognize.clause import tokens_of

    tokens = tokens_of(item.text)
    out = []
    last = 0
    semantics = ""
    depth = 0
    subqueries: list[int] = []  # the bracket depths at which a subquery opened
    for k, tok in enumerate(tokens):
        word = tok.text.upper()
        nxt = tokens[k + 1].text if k + 1 < len(tokens) else ""
        if tok.text == "(":
            depth += 1
            if nxt.upper() in ("SELECT", "WITH"):
                subqueries.append(depth)
        elif tok.text == ")":
            if subqueries and subqueries[-1] == depth:
                subqueries.pop()
            depth -= 1
        if word == "LOG10" and nxt == "(" and tok.token_type.name not in ("IDENTIFIER",
                                                                          "STRING"):
            # sqlglot writes log10(x) back as LOG(10, x), which Spark computes as
            # ln(x) / ln(10): 2.9999999999999996 for 1000 where log10 gives 3.0.
            out.append(item.text[last:tok.start] + _LOG10)
            last = tok.end + 1
            semantics = ""
            continue
        if subqueries or tok.token_type.name in ("IDENTIFIER", "STRING"):
            semantics = ""
            continue
        if word in ("RUNNING", "FINAL") and k + 2 < len(tokens) and tokens[k + 2].text == "(":
            after = nxt.upper()
            if after not in NAVIGATION and after not in AGGREGATE_NAMES:
                raise RowPatternSyntaxError(
                    E_BAD_EXPRESSION, f"{word} goes before FIRST, LAST, CLASSIFIER, PREV, NEXT "
                    f"or an aggregate function, not before {nxt}(...)", statement,
                    item.span[0] + tok.start, item.span[0] + tok.end + 1)
            out.append(item.text[last:tok.start])
            last = tok.end + 1
            semantics = word
            continue
        if nxt == "(" and (word in NAVIGATION or word in AGGREGATE_NAMES) and not (
                word in ("ANY", "SOME") and k + 2 < len(tokens)
                and tokens[k + 2].text.upper() in ("SELECT", "WITH")):
            if word.lower() in REFUSED:
                raise RowPatternSemanticError(
                    E_BAD_EXPRESSION, f"{tok.text}() has no meaning inside MATCH_RECOGNIZE (it "
                    "reads GROUP BY sets or a metric view)", statement,
                    item.span[0] + tok.start, item.span[0] + tok.end + 1)
            out.append(item.text[last:tok.start])
            kind = "NAV" if word in NAVIGATION else "AGG"
            out.append(f"MR_{kind}_{word}_{semantics or 'DEFAULT'}")
            last = tok.end + 1
        semantics = ""
    out.append(item.text[last:])
    return "".join(out)


def _refuse_modifiers(tree: Any, item: Item, statement: str) -> None:
    """CEP-MR-205 for DISTINCT or IGNORE/RESPECT NULLS in ``tree`` (outside subqueries)."""
    from sqlglot import exp

    for node in outside_subqueries(tree):
        if isinstance(node, exp.Distinct):
            raise RowPatternSemanticError(E_UNSUPPORTED, "DISTINCT inside DEFINE or MEASURES is "
                                          "not supported (aggregate the MATCH_RECOGNIZE output "
                                          "instead)", statement, *item.span)
        if isinstance(node, (exp.IgnoreNulls, exp.RespectNulls)):
            raise RowPatternSemanticError(E_UNSUPPORTED, "IGNORE NULLS / RESPECT NULLS inside "
                                          "DEFINE or MEASURES is not supported (aggregates over "
                                          "a match skip NULLs; first_value(x, true) says it "
                                          "too)", statement, *item.span)


def outside_subqueries(tree: Any) -> Any:
    """Every node of ``tree`` that is not inside a subquery (whose columns are its own)."""
    from sqlglot import exp

    return tree.walk(prune=lambda node: isinstance(node, (exp.Subquery, exp.Select))
                     and node is not tree)


def has_labels(node: Any) -> bool:
    """Whether ``node`` calls CLASSIFIER or MATCH_NUMBER (outside subqueries)."""
    return any((called(sub) or ("", "", ""))[1] in LABELS for sub in outside_subqueries(node))


def called(node: Any) -> tuple[str, str, str] | None:
    """``(kind, NAME, semantics)`` of a renamed navigation or aggregate call."""
    from sqlglot import exp

    if isinstance(node, exp.Anonymous) and str(node.this).startswith("MR_"):
        _, kind, rest = str(node.this).split("_", 2)
        name, _, semantics = rest.rpartition("_")
        return kind, name, semantics
    return None


def argument(args: list[Any], name: str, item: Item, statement: str) -> None:
    """CEP-MR-207 when a navigation has nothing to read."""
    if not args:
        raise RowPatternSyntaxError(E_BAD_EXPRESSION, f"{name.lower()}() needs an expression "
                                    "to read", statement, *item.span)


def map_children(node: Any, rewrite: Any) -> Any:
    """``node`` with ``rewrite`` applied to each child expression (in place)."""
    from sqlglot import exp

    for key, value in list(node.args.items()):
        if isinstance(value, exp.Expression):
            node.set(key, rewrite(value))
        elif isinstance(value, list):
            node.set(key, [rewrite(v) if isinstance(v, exp.Expression) else v for v in value])
    return node


def parse(sql: str) -> Any:
    import sqlglot

    return sqlglot.parse_one(sql, read="spark")
