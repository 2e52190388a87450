"""The oracle's scalar SQL interpreter (cep/oracles/values.py): one case per rule."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cep.lang import parse_condition
from cep.match.errors import UnsupportedPatternError
from cep.oracles.values import and3, evaluate, not3, or3, to_value
from sqlglot import exp


def ev(text: str, **values: Any) -> Any:
    """Evaluate condition ``text`` with ``a.<name>`` bound to ``values[name]``."""
    cond = parse_condition(text)
    return evaluate(cond.expr, lambda name: values[name.split(".", 1)[1]] if "." in name else values[name])


@pytest.mark.parametrize("text, values, expected", [
    # comparisons and NULL
    ("a.x = 1", {"x": 1}, True),
    ("a.x <> 1", {"x": 1}, False),
    ("a.x != 2", {"x": 1}, True),
    ("a.x == 1.0", {"x": 1}, True),
    ("a.x < 2", {"x": None}, None),
    ("a.x <=> NULL", {"x": None}, True),
    ("a.x <=> 1", {"x": None}, False),
    ("a.s > 'abc'", {"s": "abd"}, True),
    ("a.s = 5", {"s": "5"}, True),         # the string is cast to a number
    ("a.s = 5", {"s": "five"}, None),      # and is NULL when it does not parse
    # three-valued logic
    ("a.x > 1 AND a.y > 1", {"x": None, "y": 0}, False),
    ("a.x > 1 AND a.y > 1", {"x": None, "y": 5}, None),
    ("a.x > 1 OR a.y > 1", {"x": None, "y": 5}, True),
    ("a.x > 1 OR a.y > 1", {"x": None, "y": 0}, None),
    ("NOT a.x > 1", {"x": None}, None),
    ("NOT a.x > 1", {"x": 0}, True),
    # arithmetic
    ("a.x + 2 * 3 = 7", {"x": 1}, True),
    ("a.x / 2 = 1.5", {"x": 3}, True),       # / is never integer division
    ("a.x / 0 IS NULL", {"x": 3}, True),     # division by zero is NULL
    ("a.x % 0 IS NULL", {"x": 3}, True),
    ("a.x % 3 = -1", {"x": -7}, True),       # the sign of the dividend (Java, Spark)
    ("a.x % 3 = 1", {"x": 7}, True),
    ("-a.x = -2", {"x": 2}, True),
    ("a.x - 1 IS NULL", {"x": None}, True),
    # IN, BETWEEN, LIKE, IS
    ("a.x IN (1, 2)", {"x": 2}, True),
    ("a.x IN (1, NULL)", {"x": 2}, None),
    ("a.x NOT IN (1, NULL)", {"x": 2}, None),
    ("a.x IN (1, NULL)", {"x": 1}, True),
    ("a.x BETWEEN 1 AND 3", {"x": 3}, True),
    ("a.x NOT BETWEEN 1 AND 3", {"x": 4}, True),
    ("a.x BETWEEN 1 AND a.y", {"x": 0, "y": None}, False),
    ("a.s LIKE 'a_c%'", {"s": "abcdef"}, True),
    ("a.s LIKE 'a_c'", {"s": "abcd"}, False),
    ("a.s NOT LIKE 'x%'", {"s": "abc"}, True),
    ("a.s LIKE '50\\%'", {"s": "50%"}, True),
    ("a.s LIKE 'a.c'", {"s": "abc"}, False),  # regex characters are literal
    ("a.s ILIKE 'ABC'", {"s": "abc"}, True),
    ("a.s LIKE 'a%'", {"s": None}, None),
    ("a.x IS NULL", {"x": None}, True),
    ("a.x IS NOT NULL", {"x": None}, False),
    ("a.x IS TRUE", {"x": None}, False),
    ("a.x IS NOT FALSE", {"x": None}, True),
    # functions and casts
    ("abs(a.x) = 2", {"x": -2}, True),
    ("lower(a.s) = 'ab'", {"s": "AB"}, True),
    ("upper(a.s) = 'AB'", {"s": "ab"}, True),
    ("length(a.s) = 3", {"s": "abc"}, True),
    ("coalesce(a.x, a.y, 7) = 7", {"x": None, "y": None}, True),
    ("coalesce(a.x, 7) = 1", {"x": 1}, True),
    ("CAST(a.s AS INT) = 12", {"s": "12.7"}, True),
    ("CAST(a.s AS INT) IS NULL", {"s": "x"}, True),
    ("CAST(a.x AS STRING) = '3'", {"x": 3}, True),
    ("CAST(a.x AS DOUBLE) = 3.0", {"x": 3}, True),
    ("CAST(a.s AS BOOLEAN)", {"s": "true"}, True),
    ("CAST(a.x AS DECIMAL(4, 1)) = 2.5", {"x": 2.46}, True),
    ("CAST(a.s AS TIMESTAMP) = 1000000", {"s": "1970-01-01 00:00:01"}, True),
    # intervals are microseconds
    ("a.t < 5 MINUTES", {"t": 299_999_999}, True),
    ("a.t < 5 MINUTES", {"t": 300_000_000}, False),
    ("a.t = 1.5 SECONDS", {"t": 1_500_000}, True),
    ("a.t = 2 DAYS", {"t": 2 * 86_400 * 10**6}, True),
    ("a.t < 5 UNITS", {"t": 4}, True),
    # literals
    ("a.x = 1.5e3", {"x": 1500}, True),
    ("a.b = TRUE", {"b": True}, True),
    ("a.x = NULL", {"x": None}, None),
])
def test_interpreter(text: str, values: dict[str, Any], expected: Any) -> None:
    assert ev(text, **values) is expected


def test_float_nan_from_data_is_null_but_nan_values_follow_spark() -> None:
    assert to_value(np.float64("nan")) is None
    assert to_value(None) is None
    assert to_value(np.datetime64("1970-01-01T00:00:02")) == 2_000_000
    assert ev("a.x = a.y", x=float("nan"), y=float("nan")) is True  # a computed NaN is a value
    assert ev("a.x > 1e300", x=float("nan")) is True


def test_unknown_node_is_rejected() -> None:
    with pytest.raises(UnsupportedPatternError):
        evaluate(exp.Anonymous(this="rand"), lambda name: None)


VALUES = st.one_of(st.booleans(), st.none())


@settings(max_examples=200, deadline=None)
@given(a=VALUES, b=VALUES)
def test_three_valued_logic_laws(a: Any, b: Any) -> None:
    # De Morgan and commutativity hold in SQL's Kleene logic.
    assert not3(and3(a, b)) == or3(not3(a), not3(b))
    assert and3(a, b) == and3(b, a) and or3(a, b) == or3(b, a)
    assert ev("a.p AND a.q", p=a, q=b) == and3(a, b)
    assert ev("a.p OR a.q", p=a, q=b) == or3(a, b)


@settings(max_examples=200, deadline=None)
@given(x=st.integers(-50, 50), y=st.integers(-50, 50))
def test_integer_comparisons_and_arithmetic_match_python(x: int, y: int) -> None:
    assert ev("a.x < a.y", x=x, y=y) == (x < y)
    assert ev("a.x + a.y = a.z", x=x, y=y, z=x + y) is True
    if y:
        assert ev("a.x / a.y = a.z", x=x, y=y, z=x / y) is True
