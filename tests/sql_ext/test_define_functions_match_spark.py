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
from typing import Any

import pytest

from cep.recognize.aggregates import DEFINE_AGGREGATES
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
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9,
                                                                 abs_tol=1e-12)
    return a == b


@pytest.mark.parametrize("name", sorted(DEFINE_AGGREGATES))
def test_each_running_aggregate_of_define_is_sparks_window_aggregate(spark, name: str) -> None:
    rng = random.Random(name)
    x = _column(rng)
    flags = [None if v is None else v % 2 == 0 for v in x]
    keys = rng.sample(range(100), ROWS)  # max_by / min_by: no ties
    func = DEFINE_AGGREGATES[name]
    boolean = func in ("count_if", "bool_and", "bool_or")
    column = "b" if boolean else "x"
    tree = ["agg", func, None, column, *(["k"] if func in ("max_by", "min_by") else [])]
    found = _running(tree, {"x": x, "b": flags, "k": keys})
    args = f"{column}, k" if func in ("max_by", "min_by") else column
    rows = spark.sql(
        f"SELECT {name}({args}) OVER (ORDER BY i ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT "
        "ROW) AS r FROM VALUES " + ", ".join(
            f"({i}, {'NULL' if x[i] is None else x[i]}, "
            f"{'NULL' if flags[i] is None else str(flags[i]).upper()}, {keys[i]})"
            for i in range(ROWS)) + " AS t(i, x, b, k) ORDER BY i").collect()
    want = [r.r for r in rows]
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
]


def _literal(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    if value is None:
        return ["null"]
    if isinstance(value, bool):
        return ["bool", value]
    if isinstance(value, int):
        return ["num", str(value)]
    return ["str", value]


def test_each_scalar_function_of_define_is_sparks(spark) -> None:
    found = [Conditions({}, ("A",))._compile(["op", op, *map(_literal, args)])({}, 1, 0, 0, None)
             for op, args, _ in SCALARS]
    row = spark.sql("SELECT " + ", ".join(f"{sql} AS c{k}" for k, (_, _, sql)
                                          in enumerate(SCALARS))).collect()[0]
    wrong = [(sql, mine, row[k]) for k, ((_, _, sql), mine) in enumerate(zip(SCALARS, found))
             if mine != row[k]]
    assert not wrong, f"(SQL, ours, Spark's): {wrong}"
