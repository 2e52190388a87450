"""Compiling trend queries: roles of conditions, normalisation, and the typed errors (golden messages)."""

from __future__ import annotations

import math
import pickle

import pytest

from cep.errors import CepError
from cep.lang import PatternError
from cep.trends import NeighbourPredicate, UnsupportedTrendPatternError, compile_trend

Q1 = "PATTERN check+ c[] WHERE c.type = 'not covered' AND c[i].src = c[i-1].dest WITHIN 1 WEEK SLIDE 1 DAY"
Q2 = "PATTERN stock+ s[] WHERE [id] AND s[i].price > 1.05 * s[i-1].price WITHIN 60 MINUTES SLIDE 10 MINUTES"


def test_the_seed_queries_compile() -> None:
    q1 = compile_trend(Q1)
    assert (q1.cls, q1.alias, q1.unit) == ("check", "c", "TIME")
    assert [f.text for f in q1.filters] == ["c.type = 'not covered'"]
    assert q1.predicates == (NeighbourPredicate("src", "=", "dest"),)
    assert (q1.within, q1.slide) == (7 * 86_400_000_000, 86_400_000_000)
    q2 = compile_trend(Q2)
    assert q2.predicates == (NeighbourPredicate("id", "=", "id"), NeighbourPredicate("price", ">", "price", 1.05))
    assert q2.attributes == ("id", "price")


@pytest.mark.parametrize("text, expected", [
    ("e[i].a > e[i-1].b", ("a", ">", "b", 1, 0, 1)),
    ("e[i-1].b < e[i].a", ("a", ">", "b", 1, 0, 1)),
    ("e[i-1].b >= e[i].a", ("a", "<=", "b", 1, 0, 1)),
    ("e[i].a <> e[i-1].b", ("a", "<>", "b", 1, 0, 1)),
    ("e[i].a != e[i-1].b", ("a", "<>", "b", 1, 0, 1)),
    ("e[i].a = 2 * e[i-1].b + 1", ("a", "=", "b", 2, 1, 1)),
    ("e[i].a = e[i-1].b * 2", ("a", "=", "b", 2, 0, 1)),
    ("e[i].a < e[i-1].b - 3", ("a", "<", "b", 1, -3, 1)),
    ("e[i].a < 3 + e[i-1].b", ("a", "<", "b", 1, 3, 1)),
    ("e[i].a < e[i-1].b / 4", ("a", "<", "b", 1, 0, 4)),
    ("e[i].a < -e[i-1].b / 3 - 2", ("a", "<", "b", -1, -2, 3)),
    ("e[i].a <= 5 - e[i-1].b", ("a", "<=", "b", -1, 5, 1)),
    ("e[i].a <= -1.5 * e[i-1].b", ("a", "<=", "b", -1.5, 0, 1)),
    ("e[i].a <= (2 * 3) * e[i-1].b", ("a", "<=", "b", 6, 0, 1)),
    ("t(e[i]) > t(e[i-1]) + 5 MINUTES", ("ts", ">", "ts", 1, 300_000_000, 1)),
    ("e[i].ts >= e[i-1].ts", ("ts", ">=", "ts", 1, 0, 1)),
])
def test_neighbour_predicates_are_normalised(text: str, expected: tuple) -> None:
    (p,) = compile_trend(f"PATTERN e+ WHERE {text}").predicates
    assert (p.attr, p.op, p.prev_attr, p.scale, p.offset, p.divisor) == expected


def test_conjunctions_inside_brackets_split_and_null_constants_never_hold() -> None:
    q = compile_trend("PATTERN e+ WHERE (e[i].a = e[i-1].b AND e[i].c <> e[i-1].d) AND e[i].x > e[i-1].y / 0")
    assert [(p.attr, p.op) for p in q.predicates] == [("a", "="), ("c", "<>"), ("x", ">")]
    assert math.isnan(q.predicates[2].scale) and math.isnan(q.predicates[2].offset)


def test_filters_and_define() -> None:
    q = compile_trend("PATTERN e+ DEFINE e AS kind = 'x' WHERE e.a > 1 AND e[i].b < 2 AND t(e) > 0")
    assert q.class_condition is not None and q.class_condition.text == "kind = 'x'"
    assert [f.text for f in q.filters] == ["e.a > 1", "e[i].b < 2", "t(e) > 0"]
    assert q.predicates == ()


def test_columns_are_validated() -> None:
    with pytest.raises(PatternError) as err:
        compile_trend("PATTERN e+ WHERE e[i].a > e[i-1].nope", columns=["ts", "type", "a"])
    assert err.value.code == "CEP-PAT-203"


# Golden messages: code, position and the full message (what was expected, what was found).
ERRORS = [
    ("PATTERN a; b+", "CEP-TREND-001", 1, 9,
     "expected one Kleene+ class, found a sequence (';' or SEQ) of 2 components; a trend query is one class "
     "under '+' with an iteration alias, e.g. PATTERN check+ c[]"),
    ("PATTERN OR(a, b)+", "CEP-TREND-001", 1, 9,
     "expected one class under '+', found OR of 2 parts under it; a trend query is one class under '+' with an "
     "iteration alias, e.g. PATTERN check+ c[]"),
    ("PATTERN AND(a+, b)", "CEP-TREND-001", 1, 9,
     "expected one Kleene+ class, found AND of 2 parts; a trend query is one class under '+' with an iteration "
     "alias, e.g. PATTERN check+ c[]"),
    ("PATTERN a", "CEP-TREND-002", 1, 9,
     "expected the quantifier '+' after a, found none; a trend query is one class under '+' with an iteration "
     "alias, e.g. PATTERN check+ c[]"),
    ("PATTERN a{2,5} x[]", "CEP-TREND-002", 1, 10,
     "expected the quantifier '+' (one or more), found '{2,5}'; a trend is every maximal run of one or more events"),
    ("PATTERN a+ WHERE a[i].x > avg(a[..i-1].x)", "CEP-TREND-003", 1, 27,
     "expected references to a[i] or a[i-1], found the aggregate avg(a[..i-1].x); a trend predicate compares "
     "neighbours only"),
    ("PATTERN a+ WHERE a[i].x = $v", "CEP-TREND-003", 1, 27,
     "expected references to a or a[i-1], found the join variable $v; link neighbours with a[i].attr = a[i-1].attr"),
    ("PATTERN a+ WHERE a[i].x > a[i-2].x", "CEP-TREND-003", 1, 27,
     "expected a[i] or a[i-1], found a[i-2].x; a trend predicate links neighbouring events only"),
    ("PATTERN a+ WHERE a[i].x > a[1].x", "CEP-TREND-003", 1, 27,
     "expected a[i] or a[i-1], found the fixed iteration a[1].x"),
    ("PATTERN a+ WHERE a[i].x * 2 > a[i-1].x", "CEP-TREND-004", 1, 18,
     "a predicate between neighbours must read c[i].A op f(c[i-1].B) with op one of = <> < <= > >= and f linear "
     "in one attribute (k * x + b, x * k, x / k, x + b, x - b); found a[i].x * 2 > a[i-1].x (one side must be "
     "a[i].attr alone)"),
    ("PATTERN a+ WHERE a[i].x > a[i-1].x * a[i-1].y", "CEP-TREND-004", 1, 18,
     "a predicate between neighbours must read c[i].A op f(c[i-1].B) with op one of = <> < <= > >= and f linear "
     "in one attribute (k * x + b, x * k, x / k, x + b, x - b); found a[i].x > a[i-1].x * a[i-1].y (f may use "
     "one attribute of the previous event, combined with constants)"),
    ("PATTERN a+ WHERE a[i].x > abs(a[i-1].x)", "CEP-TREND-004", 1, 18,
     "a predicate between neighbours must read c[i].A op f(c[i-1].B) with op one of = <> < <= > >= and f linear "
     "in one attribute (k * x + b, x * k, x / k, x + b, x - b); found a[i].x > ABS(a[i-1].x) (ABS is not a "
     "linear function)"),
    ("PATTERN a+ WHERE a[i].x > (a[i-1].x + 1) * 2", "CEP-TREND-004", 1, 18,
     "a predicate between neighbours must read c[i].A op f(c[i-1].B) with op one of = <> < <= > >= and f linear "
     "in one attribute (k * x + b, x * k, x / k, x + b, x - b); found a[i].x > (a[i-1].x + 1) * 2 (multiply "
     "first: f is evaluated as (x * k) / d + b)"),
    ("PATTERN a+ WHERE a[i].x > a[i-1].x OR a[i].y = 1", "CEP-TREND-004", 1, 18,
     "a predicate between neighbours must read c[i].A op f(c[i-1].B) with op one of = <> < <= > >= and f linear "
     "in one attribute (k * x + b, x * k, x / k, x + b, x - b); found a[i].x > a[i-1].x OR a[i].y = 1"),
    ("PATTERN a+ WHERE a.x > a[i-1].x", "CEP-TREND-004", 1, 18,
     "expected a[i] next to a[i-1], found the unindexed a.x; write a[i].x"),
    ("PATTERN a+ WHERE (a[i].x > a[i-1].x AND a.y = 1)", "CEP-TREND-004", 1, 18,
     "expected every part of a condition on a[i-1] to read a[i-1], found a.y = 1; write a condition on the "
     "current event alone as its own WHERE conjunct"),
    ("PATTERN a+ @(a.x > 1)", "CEP-TREND-005", 1, 9,
     "a trend query cannot have '@(...)' conditions; write them in WHERE (c.x for the current event, c[i-1].x "
     "for the previous one)"),
    ("PATTERN a+ WHERE skip-till-next-match", "CEP-TREND-007", 1, 18,
     "expected skip-till-any-match (the trend semantics), found skip-till-next-match; complete trends skip any "
     "events between neighbours"),
    ("PATTERN a+ WITHIN 10 EVENTS", "CEP-TREND-007", 1, 19,
     "expected a time span or UNITS, found 10 EVENTS; trend windows are time windows (use the timestamp, or a "
     "numeric ts with UNITS)"),
    ("PATTERN a+ WINDOW [0, 9]", "CEP-TREND-007", 1, 19,
     "expected WITHIN/SLIDE windows, found a WINDOW [a, b] clause; filter the events before calling cet_trends "
     "instead"),
    ("PATTERN a+ DEFINE a AS ip = $x", "CEP-TREND-008", 1, 24,
     "expected a DEFINE of a over its own attributes, found a join variable ($x); write the link between events "
     "as c[i].attr = c[i-1].attr in WHERE"),
]


@pytest.mark.parametrize("text, code, line, column, message", ERRORS, ids=[e[1] + ":" + e[0] for e in ERRORS])
def test_unsupported_patterns_raise_typed_errors(text: str, code: str, line: int, column: int, message: str) -> None:
    with pytest.raises(UnsupportedTrendPatternError) as info:
        compile_trend(text)
    err = info.value
    assert isinstance(err, CepError) and isinstance(err, PatternError)
    assert (err.code, err.line, err.column) == (code, line, column)
    assert err.message == message
    assert str(err).startswith(f"{code}: line {line}, column {column}: {message}\n")
    assert "^" in str(err)
    again = pickle.loads(pickle.dumps(err))
    assert (again.code, again.line, again.column, again.message) == (code, line, column, message)


def test_a_multi_line_pattern_reports_the_line() -> None:
    with pytest.raises(UnsupportedTrendPatternError) as info:
        compile_trend("PATTERN a+\nWHERE a[i].x >\n  a[i-2].x")
    assert (info.value.code, info.value.line, info.value.column) == ("CEP-TREND-003", 3, 3)
