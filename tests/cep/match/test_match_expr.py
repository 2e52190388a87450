"""The vectorised condition evaluator against the oracle's scalar SQL interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cep.lang import parse_condition
from cep.match.compile.expr import column_value, compile_expr, like_regex
from cep.oracles.values import evaluate, to_value

CONDITIONS = (
    "a.x > b.x",
    "a.x = b.x OR a.x IS NULL",
    "a.x + b.x * 2 >= 3",
    "a.x - b.x < -1 AND NOT a.x = 2",
    "a.x / b.x > 0.5",
    "a.x % b.x = 1",
    "a.x % 2 = -1",
    "abs(a.x - b.x) <= 1",
    "a.x IN (1, 2, NULL)",
    "a.x NOT IN (0, 3)",
    "a.x BETWEEN b.x AND 3",
    "a.x NOT BETWEEN 0 AND 1",
    "coalesce(a.x, b.x, 0) = 2",
    "a.x <=> b.x",
    "NOT (a.x <=> NULL)",
    "a.x IS NOT NULL AND b.x IS NULL",
    "(a.x > 1) IS TRUE",
    "(a.x > 1) IS FALSE",
    "cast(a.x AS INT) = 1",
    "cast(a.x AS DOUBLE) > 1.5",
    "cast(a.x AS STRING) = '2'",
    "cast(a.x AS DECIMAL(4, 1)) > 1.2",
    "a.s LIKE 'a%'",
    "a.s NOT LIKE '_b'",
    "a.s ILIKE 'A%'",
    "lower(a.s) = 'ab' OR upper(a.s) = 'B'",
    "length(a.s) = 2",
    "a.s = b.s",
    "a.s < b.s",
    "a.s > 'a'",
    "a.s = 1",
    "t(a) - t(b) < 2 MICROSECONDS",
    "a.x > 1 AND a.x < 3 OR b.x = 0",
)

# A column has one type, as a Spark column does: integers or doubles, with NULLs.
int_lists = st.lists(st.one_of(st.none(), st.integers(-3, 3)), min_size=6, max_size=6)
float_lists = st.lists(st.one_of(st.none(), st.sampled_from([0.5, 1.5, -2.25, 2.0, 0.0])),
                       min_size=6, max_size=6)
numbers = st.one_of(int_lists, float_lists)
texts = st.one_of(st.none(), st.sampled_from(["a", "ab", "b", "AB", "1", "2", "x1", ""]))


def column(values: list) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    if all(v is None or isinstance(v, int) for v in values) and any(v is not None for v in values):
        return out  # an object column of ints with NULLs, as Spark hands them over
    if all(isinstance(v, float) or v is None for v in values):
        return np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    return out


@settings(max_examples=600, deadline=None)
@given(text=st.sampled_from(CONDITIONS), ax=numbers, bx=numbers, as_=st.lists(texts, min_size=6, max_size=6),
       bs=st.lists(texts, min_size=6, max_size=6),
       ts=st.lists(st.integers(0, 5), min_size=6, max_size=6))
def test_match_expr_equals_oracle_interpreter(text: str, ax: list, bx: list, as_: list, bs: list,
                                              ts: list) -> None:
    cond = parse_condition(text)
    raw = {"a.x": column(ax), "b.x": column(bx), "a.s": column(as_), "b.s": column(bs),
           "t(a)": np.array(ts, dtype=np.int64), "t(b)": np.array(ts[::-1], dtype=np.int64)}
    env = {name: column_value(raw[name]) for name in raw}
    got = compile_expr(cond.expr).truth(env, 6).tolist()
    expected = []
    for row in range(6):
        result = evaluate(cond.expr, lambda name, row=row: to_value(raw[name][row]))
        expected.append(result is True)
    assert got == expected, text


@pytest.mark.parametrize("pattern, text, ok", [
    ("a%", "abc", True), ("a_c", "abc", True), ("a\\%", "a%", True), ("a\\%", "ab", False),
    ("%b", "abc", False), ("", "", True),
])
def test_match_like_patterns(pattern: str, text: str, ok: bool) -> None:
    assert (like_regex(pattern).fullmatch(text) is not None) is ok


def test_match_interval_and_division_by_zero() -> None:
    cond = parse_condition("a.x / 0 IS NULL AND t(a) < 5 MINUTES")
    env = {"a.x": column_value(np.array([1, 2])), "t(a)": column_value(np.array([0, 300_000_000]))}
    assert compile_expr(cond.expr).truth(env, 2).tolist() == [True, False]
