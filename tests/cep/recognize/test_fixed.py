"""The text-level pieces of the native plan of fixed-length patterns (cep/recognize/fixed.py)."""

from __future__ import annotations

import pytest

from cep.recognize.fixed import never_overlap, positions, shift, start_test
from cep.recognize.parser import parse_row_pattern


@pytest.mark.parametrize("pattern, expected", [
    ("A", ("A",)), ("A B A", ("A", "B", "A")), ("(A (B)) C", ("A", "B", "C")), ("A ()", ("A",)),
    ("()", None), ("A B?", None), ("A | B", None), ("^A", None), ("A {- B -}", None),
    ("PERMUTE(A, B)", None), ("(A B){2}", None)])
def test_positions(pattern: str, expected: tuple[str, ...] | None) -> None:
    assert positions(parse_row_pattern(pattern)) == expected


def test_shift_sums_offsets_and_moves_every_column() -> None:
    assert shift("COALESCE(a + b > LEAD(a, 2) OVER __mr_w, FALSE)", 1) == \
        "COALESCE(LEAD(a, 1) OVER __mr_w + LEAD(b, 1) OVER __mr_w > LEAD(a, 3) OVER __mr_w, FALSE)"
    assert shift("LAG(a, 3) OVER __mr_w = a", 1) == "LAG(a, 2) OVER __mr_w = LEAD(a, 1) OVER __mr_w"
    assert shift("LAG(a, 1) OVER __mr_w < 0", 1) == "a < 0"
    assert shift("x = 1", 0) == "x = 1"


def test_start_test_checks_that_the_rows_exist() -> None:
    defined = {"A": "COALESCE(x = 1, FALSE)"}
    assert start_test(("A", "B"), defined, -1) == \
        "(LAG(1, 1) OVER __mr_w IS NOT NULL AND COALESCE(LAG(x, 1) OVER __mr_w = 1, FALSE))"
    assert start_test(("B",), defined) == "(TRUE)"


@pytest.mark.parametrize("order, defined, expected", [
    (("A", "B", "C"), {"A": "t = 'a'", "B": "t = 'a'", "C": "t = 'c'"}, True),
    (("A", "A"), {"A": "t = 'a'"}, False),
    (("A", "B"), {"A": "t = 'a'", "B": "'b' = t AND x > 0"}, True),  # constant on the left
    (("A", "B"), {"A": "t = 'a'", "B": "u = 'b'"}, False),  # other columns
    (("A", "B"), {"A": "x = 1", "B": "x = 1.0"}, False),  # numbers by value
    (("A", "B"), {"A": "x = 1", "B": "x = '2'"}, False),  # a string may cast to 1
    (("A", "B"), {"A": "t = 'a' OR x > 0", "B": "t = 'b'"}, False),  # OR proves nothing
    (("A", "B"), {"A": "t = 'a'"}, False),  # B undefined: any row
    (("A",), {}, True),
])
def test_never_overlap(order: tuple[str, ...], defined: dict[str, str], expected: bool) -> None:
    wrapped = {v: f"COALESCE({sql}, FALSE)" for v, sql in defined.items()}
    assert never_overlap(order, wrapped) is expected
