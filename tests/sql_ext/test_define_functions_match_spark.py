"""The functions a DEFINE evaluates in Python give Spark's answers (issue 49).

A DEFINE that reads the match is evaluated per partial match by the matcher
(:mod:`cep.recognize.condition`), so every aggregate and scalar function allowed there is
written once more in Python. Here each is compared with Spark itself on the same values:
the running aggregates with Spark's window aggregate up to each row, the scalar functions
with a ``SELECT`` of the same expression, NULLs included.
"""

from __future__ import annotations

import math
import random
from decimal import Decimal
from typing import Any

import pytest

from cep.recognize.aggregates import COLUMNS, DEFINE_AGGREGATES
from cep.recognize.condition import Conditions

ROWS = 9


def _column(rng: random.Random) -> list[Any]:
    return [None if rng.random() < 0.2 else rng.randint(-5, 9) for _ in range(ROWS)]


def _running(tree: list[Any], columns: dict[str, list[Any]]) -> list[Any]:
    """The tree's value at each row, every earlier row already mapped to variable 0."""
    evaluate = Conditions({}, ("A",))._compile(tree)
    out, history = [], None
    for i in range(ROWS):
        out.append(evaluate(columns, ROWS, 0, i, history))
        history = (i, 0, False, history, {})
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9,
                                                                 abs_tol=1e-12)
    return a == b


def _sql(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return str(value).upper()
    return f"'{value}'" if isinstance(value, str) else str(value)


# How each aggregate is called, here and in Spark: the columns it reads, the literal trees
# after them, and Spark's call when it differs (median and mode take no window frame, so
# Spark's answer comes from percentile and the deterministic mode).
_CALLS: dict[str, tuple[list[str], list[Any], str | None]] = {
    "count_if": (["b"], [], None), "bool_and": (["b"], [], None), "bool_or": (["b"], [], None),
    "max_by": (["x", "k"], [], None), "min_by": (["x", "k"], [], None),
    "percentile": (["x"], [["num", "0.3"]], "percentile(x, 0.3)"),
    "median": (["x"], [], "percentile(x, 0.5)"),
    "mode": (["x"], [], "mode(x, true)"),
    "listagg": (["s"], [["str", "|"]], "listagg(s, '|')"),
}


@pytest.mark.parametrize("name", sorted(DEFINE_AGGREGATES))
def test_each_running_aggregate_of_define_is_sparks_window_aggregate(spark, name: str) -> None:
    rng = random.Random(name)
    x, z = _column(rng), _column(rng)
    flags = [None if v is None else v % 2 == 0 for v in x]
    texts = [None if v is None else f"t{v}" for v in x]
    keys = rng.sample(range(100), ROWS)  # max_by / min_by: no ties
    func = DEFINE_AGGREGATES[name]
    columns, params, spark_call = _CALLS.get(
        func, (["x", "z"] if COLUMNS.get(func) == 2 else ["x"], [], None))
    if func == "listagg" and name != "listagg":
        params = [["str", "|"]]
    tree = ["agg", func, None, *columns, *params]
    found = _running(tree, {"x": x, "z": z, "b": flags, "k": keys, "s": texts})
    call = spark_call or f"{name}({', '.join(columns)})"
    if func == "listagg":
        call = f"{name}(s, '|')"
    rows = spark.sql(
        f"SELECT {call} OVER (ORDER BY i ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT "
        "ROW) AS r FROM VALUES " + ", ".join(
            f"({i}, {_sql(x[i])}, {_sql(z[i])}, {_sql(flags[i])}, {keys[i]}, {_sql(texts[i])})"
            for i in range(ROWS)) + " AS t(i, x, z, b, k, s) ORDER BY i").collect()
    want = [r.r for r in rows]
    if func == "collect_set":
        found, want = [sorted(a) for a in found], [sorted(b) for b in want]
    assert all(_same(a, b) for a, b in zip(found, want)), f"{name}: {found} != Spark's {want}"


SCALARS = [
    ("like", ["abc", "a%"], "'abc' LIKE 'a%'"),
    ("like", ["abc", "a_c"], "'abc' LIKE 'a_c'"),
    ("like", ["a%c", "a\\%c"], "'a%c' LIKE 'a\\\\%c'"),
    ("like", ["abc", "A%"], "'abc' LIKE 'A%'"),
    ("like", [None, "a%"], "NULL LIKE 'a%'"),
    ("ilike", ["abc", "A%"], "'abc' ILIKE 'A%'"),
    ("in", [2, 1, 2], "2 IN (1, 2)"),
    ("in", [3, 1, None], "3 IN (1, NULL)"),
    ("in", [None, 1], "NULL IN (1)"),
    ("concat", ["a", "b"], "'a' || 'b'"),
    ("concat", ["a", None], "'a' || NULL"),
    ("upper", ["aB"], "upper('aB')"),
    ("lower", ["aB"], "lower('aB')"),
    ("length", ["abc"], "length('abc')"),
    ("greatest", [1, None, 3], "greatest(1, NULL, 3)"),
    ("least", [1, None, 3], "least(1, NULL, 3)"),
    ("greatest", [None, None], "greatest(CAST(NULL AS INT), NULL)"),
    ("case", [False, 1, None, 2, 3], "CASE WHEN FALSE THEN 1 WHEN CAST(NULL AS BOOLEAN) THEN 2 ELSE 3 END"),
    ("case", [True, 1, ["null"]], "CASE WHEN TRUE THEN 1 END"),
    ("round", [2.5], "round(CAST(2.5 AS DOUBLE))"),
    ("round", [-2.5], "round(CAST(-2.5 AS DOUBLE))"),
    ("round", [1.005, 2], "round(CAST(1.005 AS DOUBLE), 2)"),
    ("round", [Decimal("2.345"), 2], "round(2.345, 2)"),
    ("round", [15, -1], "round(15, -1)"),
    ("round", [None, 1], "round(CAST(NULL AS DOUBLE), 1)"),
    ("bround", [2.5], "bround(CAST(2.5 AS DOUBLE))"),
    ("bround", [Decimal("3.45"), 1], "bround(3.45, 1)"),
    ("floor", [-2.5], "floor(CAST(-2.5 AS DOUBLE))"),
    ("floor", [Decimal("2.7")], "floor(2.7)"),
    ("ceil", [2.1], "ceil(CAST(2.1 AS DOUBLE))"),
    ("ceil", [-7], "ceil(-7)"),
    ("sqrt", [2], "sqrt(2)"),
    ("sqrt", [-1], "sqrt(-1)"),
    ("exp", [1], "exp(1)"),
    ("exp", [1000], "exp(1000)"),
    ("ln", [0], "ln(0)"),
    ("ln", [2.5], "ln(CAST(2.5 AS DOUBLE))"),
    ("log", [2, 8], "log(2, 8)"),
    ("log", [10, -1], "log(10, -1)"),
    ("log", [10, 1000], "log(10, 1000)"),
    ("log10", [1000], "log10(1000)"),
    ("log10", [0], "log10(0)"),
    ("log", [2, 1024], "log2(1024)"),
    ("power", [2, 10], "power(2, 10)"),
    ("power", [0, -1], "power(0, -1)"),
    ("power", [-8, Decimal("0.5")], "power(-8, 0.5)"),
    ("sign", [-3], "sign(-3)"),
    ("sign", [0], "sign(0)"),
    ("div", [7, 2], "7 div 2"),
    ("div", [-7, 2], "-7 div 2"),
    ("%", [-7, 3], "-7 % 3"),
    ("pmod", [-7, 3], "pmod(-7, 3)"),
    ("pmod", [7, -3], "pmod(7, -3)"),
    ("nullif", [1, 1], "nullif(1, 1)"),
    ("nullif", [1, None], "nullif(1, NULL)"),
    ("nvl2", [None, 1, 2], "nvl2(NULL, 1, 2)"),
    ("nvl2", [0, 1, 2], "nvl2(0, 1, 2)"),
    ("isnan", [None], "isnan(CAST(NULL AS DOUBLE))"),
    ("isnan", [float("nan")], "isnan(CAST('NaN' AS DOUBLE))"),
    ("nanvl", [float("nan"), 1.5], "nanvl(CAST('NaN' AS DOUBLE), CAST(1.5 AS DOUBLE))"),
    ("substring", ["Spark SQL", 5], "substring('Spark SQL', 5)"),
    ("substring", ["Spark SQL", -3], "substring('Spark SQL', -3)"),
    ("substring", ["Spark SQL", 0, 3], "substring('Spark SQL', 0, 3)"),
    ("substring", ["Spark SQL", -20, 13], "substring('Spark SQL', -20, 13)"),
    ("substring", ["Spark", 2, -1], "substring('Spark', 2, -1)"),
    ("left", ["Spark", 2], "left('Spark', 2)"),
    ("left", ["Spark", -1], "left('Spark', -1)"),
    ("right", ["Spark", 3], "right('Spark', 3)"),
    ("right", ["Spark", 9], "right('Spark', 9)"),
    ("trim", ["  a b  "], "trim('  a b  ')"),
    ("ltrim", ["  a b  "], "ltrim('  a b  ')"),
    ("rtrim", ["\t a \t"], "rtrim('\t a \t')"),
    ("reverse", ["abc"], "reverse('abc')"),
    ("startswith", ["Spark", "Sp"], "startswith('Spark', 'Sp')"),
    ("endswith", ["Spark", "Sp"], "endswith('Spark', 'Sp')"),
    ("contains", ["Spark", "ar"], "contains('Spark', 'ar')"),
    ("contains", ["Spark", ""], "contains('Spark', '')"),
    ("instr", ["Spark", "ar"], "instr('Spark', 'ar')"),
    ("instr", ["Spark", "x"], "instr('Spark', 'x')"),
    ("replace", ["a-b-c", "-", "+"], "replace('a-b-c', '-', '+')"),
    ("replace", ["a-b-c", "-"], "replace('a-b-c', '-')"),
    ("replace", ["abc", "", "x"], "replace('abc', '', 'x')"),
    ("rlike", ["abc123", "[0-9]+"], "'abc123' RLIKE '[0-9]+'"),
    ("rlike", ["abc", "^b"], "'abc' RLIKE '^b'"),
    ("size", [[1, 2, None]], "size(array(1, 2, NULL))"),
    ("size", [None], "size(CAST(NULL AS ARRAY<INT>))"),
    ("array_contains", [[1, None], 2], "array_contains(array(1, NULL), 2)"),
    ("array_contains", [[1, None], 1], "array_contains(array(1, NULL), 1)"),
    ("array_contains", [[1, 3], 2], "array_contains(array(1, 3), 2)"),
]


def _tree(value: Any, cols: dict[str, list[Any]]) -> list[Any]:
    """A literal tree of ``value``; doubles and arrays (no literal tree) as a column."""
    if isinstance(value, list) and value and isinstance(value[0], str) and value[0] == "null":
        return value
    if value is None:
        return ["null"]
    if isinstance(value, bool):
        return ["bool", value]
    if isinstance(value, int):
        return ["num", str(value)]
    if isinstance(value, Decimal):
        return ["num", str(value)]
    if isinstance(value, str):
        return ["str", value]
    name = f"c{len(cols)}"
    cols[name] = [value]
    return ["col", name]


def test_each_scalar_function_of_define_is_sparks(spark) -> None:
    found = []
    for op, args, _ in SCALARS:
        cols: dict[str, list[Any]] = {}
        tree = ["op", op, *[_tree(a, cols) for a in args]]
        found.append(Conditions({}, ("A",))._compile(tree)(cols, 1, 0, 0, None))
    row = spark.sql("SELECT " + ", ".join(f"{sql} AS c{k}" for k, (_, _, sql)
                                          in enumerate(SCALARS))).collect()[0]
    wrong = [(sql, mine, row[k]) for k, ((_, _, sql), mine) in enumerate(zip(SCALARS, found))
             if not (_same(mine, row[k]) and type(mine) is type(row[k]) or mine == row[k]
                     and not isinstance(row[k], float))]
    assert not wrong, f"(SQL, ours, Spark's): {wrong}"
