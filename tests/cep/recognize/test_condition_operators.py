"""The operators of per-thread DEFINE conditions: SQL's three-valued logic and NULL rules.

Each boolean tree is evaluated on one row with an empty history; ``["col", "n"]`` reads NULL.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from cep.recognize.condition import Conditions

COLUMNS = {"n": [None], "one": [1], "zero": [0], "half": [0.5], "dec": [Decimal("1.5")],
           "s": ["x"], "yes": [True], "no": [False]}


def _value(tree: list[Any]) -> Any:
    """The truth value of the boolean ``tree``: True, False or None (unknown), read through
    ``accepts`` of ``tree IS NULL`` and ``tree = TRUE``."""
    if Conditions({"A": ["op", "isnull", tree]}, ("A",)).accepts(COLUMNS, 1, 0, 0, None):
        return None
    return Conditions({"A": ["op", "=", tree, ["bool", True]]}, ("A",)).accepts(
        COLUMNS, 1, 0, 0, None)


def col(name: str) -> list[Any]:
    return ["col", name]


@pytest.mark.parametrize("tree, expected", [
    # AND / OR / NOT with NULL (unknown)
    (["op", "and", col("no"), col("n")], False),
    (["op", "and", col("yes"), col("n")], None),
    (["op", "or", col("yes"), col("n")], True),
    (["op", "or", col("no"), col("n")], None),
    (["op", "not", col("n")], None),
    (["op", "not", col("no")], True),
    # comparisons with NULL are unknown; IS NULL is not
    (["op", "=", col("n"), col("n")], None),
    (["op", "<", col("one"), col("n")], None),
    (["op", "notnull", col("n")], False),
    # arithmetic: NULL propagates, division by zero is NULL, DECIMAL meets DOUBLE
    (["op", "=", ["op", "+", col("one"), col("n")], col("one")], None),
    (["op", "isnull", ["op", "/", col("one"), col("zero")]], True),
    (["op", "=", ["op", "*", col("dec"), col("half")], ["num", "0.75"]], True),
    (["op", "=", ["op", "%", ["num", "-7"], ["num", "3"]], ["num", "-1"]], True),
    (["op", "=", ["op", "neg", col("one")], ["num", "-1"]], True),
    (["op", "=", ["op", "abs", ["num", "-2"]], ["num", "2"]], True),
    # COALESCE, BETWEEN
    (["op", "=", ["op", "coalesce", col("n"), col("one")], col("one")], True),
    (["op", "between", col("one"), col("zero"), col("dec")], True),
    (["op", "between", col("one"), col("n"), col("zero")], False),
    (["op", "between", col("one"), col("n"), col("dec")], None),
    # strings compare with strings; with a number they are unequal (documented)
    (["op", "=", col("s"), ["str", "x"]], True),
    (["op", "=", col("s"), col("one")], False),
])
def test_operator(tree: list[Any], expected: Any) -> None:
    assert _value(tree) == expected


def test_navigation_outside_the_partition_is_null() -> None:
    """``PREV(LAST(A.x), 1)`` at the partition's first row reads nothing."""
    tree = ["op", "isnull", ["nav", "LAST", ["A"], 0, "one", -1]]
    assert Conditions({"A": tree}, ("A",)).accepts(COLUMNS, 1, 0, 0, None)


def test_a_condition_that_is_null_does_not_accept() -> None:
    assert not Conditions({"A": col("n")}, ("A",)).accepts(COLUMNS, 1, 0, 0, None)
