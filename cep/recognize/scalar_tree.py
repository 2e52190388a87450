"""The scalar part of a DEFINE condition tree: SQL operators and the functions the matcher
computes itself around references to the match (:mod:`cep.recognize.functions` has their
Python twins, compared with Spark by ``tests/sql_ext/test_define_functions_match_spark.py``).

Example:
    >>> from cep.recognize.calls import parse
    >>> scalar_tree(parse("round(x, 1)"), lambda n: ["col", n.sql()])
    ['op', 'round', ['col', 'x'], ['col', '1']]
"""

from __future__ import annotations

from typing import Any

__all__ = ["FUNCTION_NODES", "OPERATORS", "scalar_tree"]


def _operators() -> dict[type, str]:
    from sqlglot import exp

    return {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">",
            exp.GTE: ">=", exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/",
            exp.Mod: "%", exp.And: "and", exp.Or: "or"}


OPERATORS = _operators()


def _function_nodes() -> dict[type, tuple[str, tuple[str, ...]]]:
    """sqlglot's node of each scalar function the matcher computes in DEFINE
    (:data:`cep.recognize.functions.FUNCTIONS`): its name there and its argument keys."""
    from sqlglot import exp

    one, two = ("this",), ("this", "expression")
    return {
        exp.Upper: ("upper", one), exp.Lower: ("lower", one), exp.Length: ("length", one),
        exp.Abs: ("abs", one), exp.Round: ("round", ("this", "decimals")),
        exp.Floor: ("floor", one), exp.Ceil: ("ceil", one), exp.Sqrt: ("sqrt", one),
        exp.Exp: ("exp", one), exp.Ln: ("ln", one), exp.Log: ("log", two),
        exp.Pow: ("power", two), exp.Sign: ("sign", one), exp.IntDiv: ("div", two),
        exp.Nullif: ("nullif", two), exp.Nvl2: ("nvl2", ("this", "true", "false")),
        exp.IsNan: ("isnan", one), exp.Nanvl: ("nanvl", two),
        exp.Substring: ("substring", ("this", "start", "length")),
        exp.Left: ("left", two), exp.Right: ("right", two), exp.Reverse: ("reverse", one),
        exp.StartsWith: ("startswith", two), exp.EndsWith: ("endswith", two),
        exp.Contains: ("contains", two), exp.StrPosition: ("instr", ("this", "substr")),
        exp.Replace: ("replace", ("this", "expression", "replacement")),
        exp.RegexpLike: ("rlike", two), exp.ArraySize: ("size", one),
        exp.ArrayContains: ("array_contains", two),
    }


FUNCTION_NODES = _function_nodes()



def scalar_tree(node: Any, again: Any) -> Any:
    """The condition tree of CASE, IF, LIKE, IN, || and the scalar functions the matcher
    evaluates itself (None for any other node)."""
    from sqlglot import exp

    if isinstance(node, exp.If):
        return ["op", "case", again(node.this), again(node.args["true"]),
                again(node.args["false"]) if node.args.get("false") else ["null"]]
    if isinstance(node, exp.Case):
        parts: list[Any] = []
        subject = node.this
        for branch in node.args.get("ifs") or []:
            test = again(branch.this)
            if subject is not None:
                test = ["op", "=", again(subject), test]
            parts += [test, again(branch.args["true"])]
        default = node.args.get("default")
        return ["op", "case", *parts, again(default) if default is not None else ["null"]]
    if isinstance(node, (exp.Like, exp.ILike)):
        return ["op", "like" if isinstance(node, exp.Like) else "ilike", again(node.this),
                again(node.expression)]
    if isinstance(node, exp.In) and node.expressions and not node.args.get("query"):
        return ["op", "in", again(node.this), *[again(e) for e in node.expressions]]
    if isinstance(node, exp.DPipe):
        return ["op", "concat", again(node.this), again(node.expression)]
    if isinstance(node, exp.Concat):
        return ["op", "concat", *[again(e) for e in node.expressions]]
    if isinstance(node, (exp.Greatest, exp.Least)):
        name = "greatest" if isinstance(node, exp.Greatest) else "least"
        return ["op", name, again(node.this), *[again(e) for e in node.expressions]]
    if isinstance(node, exp.Trim) and node.args.get("expression") is None:
        side = str(node.args.get("position") or "").upper()
        name = {"LEADING": "ltrim", "TRAILING": "rtrim"}.get(side, "trim")
        return ["op", name, again(node.this)]
    if isinstance(node, exp.Anonymous) and str(node.this).lower() in ("bround", "pmod",
                                                                      "log10"):
        return ["op", str(node.this).lower(), *[again(e) for e in node.expressions]]
    known = FUNCTION_NODES.get(type(node))
    if known is None:
        return None
    name, keys = known
    if any(isinstance(value, exp.Expression) and not isinstance(value, exp.Boolean)
           for key, value in node.args.items() if key not in keys):
        return None  # a form the Python function does not take (floor(x, d), ...)
    return ["op", name, *[again(node.args[k]) for k in keys if node.args.get(k) is not None]]
