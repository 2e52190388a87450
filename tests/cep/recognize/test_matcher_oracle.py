"""Both matchers against the brute-force oracle of the standard's definition.

Random row patterns over three variables (every construct of the grammar) on random partitions
of up to 9 rows, for every skip mode: the matches (start, labels, exclusions) must be equal,
and where the oracle finds a skip error the matcher raises its typed one. Each test runs the
determinised matcher (``engine="auto"``, :mod:`cep.recognize.dfa`) and the Pike VM it stands
in for (``engine="pike"``, the reference).
"""

from __future__ import annotations

from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from cep.oracles.row_pattern_oracle import OracleBudgetExceeded, oracle_row_matches
from cep.recognize.errors import RowPatternSemanticError
from cep.recognize import dfa as dfa_module
from cep.recognize import matcher
from cep.recognize.dfa import LazyDfa
from cep.recognize.matcher import ENGINES, Skip, find_matches, match_masks, row_masks
from cep.recognize.parser import parse_row_pattern
from cep.recognize.program import compile_pattern

VARS = ("A", "B", "C")


def _quantifier(draw) -> str:
    q = draw(st.sampled_from(["", "", "*", "+", "?", "{2}", "{0,2}", "{1,}", "{,2}", "{2,3}"]))
    return q + ("?" if q and draw(st.booleans()) else "")


@st.composite
def patterns(draw, depth: int = 0) -> str:
    kinds = ["var", "var", "var", "group", "alt", "permute", "empty", "anchor", "exclude"]
    if depth >= 2:
        kinds = ["var", "var", "empty", "anchor"]
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(kinds))
        if kind == "var":
            text = draw(st.sampled_from(VARS))
        elif kind == "group":
            text = "(" + draw(patterns(depth + 1)) + ")"
        elif kind == "alt":
            text = "(" + draw(patterns(depth + 1)) + " | " + draw(patterns(depth + 1)) + ")"
        elif kind == "permute":
            items = [draw(patterns(depth + 1)) for _ in range(draw(st.integers(1, 3)))]
            text = "PERMUTE(" + ", ".join(items) + ")"
        elif kind == "empty":
            text = "()"
        elif kind == "anchor":
            text = draw(st.sampled_from(["^", "$"]))
        else:
            text = "{- " + draw(patterns(depth + 1)) + " -}"
        if kind not in ("anchor",):
            text += _quantifier(draw)
        parts.append(text)
    return " ".join(parts)


def inputs(program, rows: list[list[bool]], skip: tuple[str, str | None]
           ) -> tuple[np.ndarray, list[set[str]], Skip, frozenset[str]]:
    """One drawn example in both forms: the matcher's accepts matrix (variables in the
    program's order of appearance) and skip plan, the oracle's name sets and skip targets."""
    accepts = np.array([[row[VARS.index(v)] for v in program.variables] for row in rows],
                       dtype=bool).reshape(len(rows), len(program.variables))
    names = [{v for v, ok in zip(VARS, row) if ok} for row in rows]
    mode, target = skip
    index = {v: i for i, v in enumerate(program.variables)}
    plan = Skip(mode, frozenset([index[target]] if target in index else []), target or "")
    return accepts, names, plan, frozenset([target] if target else [])


@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=500, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(text=patterns(), rows=st.lists(st.lists(st.booleans(), min_size=3, max_size=3),
                                      max_size=9),
       skip=st.sampled_from([("past_last", None), ("next_row", None), ("first", "B"),
                             ("last", "A"), ("last", "C")]))
def test_matcher_equals_oracle(engine: str, text: str, rows: list[list[bool]], skip) -> None:
    node = parse_row_pattern(text)
    program = compile_pattern(node)
    accepts, names, plan, targets = inputs(program, rows, skip)
    try:
        expected = oracle_row_matches(node, names, plan.mode, targets)
    except OracleBudgetExceeded:
        reject()  # backtracking is exponential on this one: draw another example
    except ValueError:
        with pytest.raises(RowPatternSemanticError):
            find_matches(program, accepts, plan, engine=engine)
        return
    found = [(m.start, tuple(program.variables[v] for v in m.labels), m.excluded)
             for m in find_matches(program, accepts, plan, engine=engine)]
    assert found == expected, f"pattern {text!r}\n{program.listing()}"


@pytest.mark.parametrize("text, rows, expected", [
    # Trino's documentation: a greedy quantifier takes as many rows as it can ...
    ("A B+", ["A", "AB", "AB", "B"], [(0, "ABBB")]),
    # ... a reluctant one as few as lead to a match.
    ("A B+?", ["A", "AB", "AB", "B"], [(0, "AB"), (2, "AB")]),
    # Alternation prefers the left branch even when the right one is longer.
    ("(A | A B)", ["AB", "B"], [(0, "A")]),
    ("(A B | A)", ["AB", "B"], [(0, "AB")]),
    # PERMUTE prefers the order of its list.
    ("PERMUTE(A, B)", ["AB", "AB"], [(0, "AB")]),
    ("PERMUTE(B, A)", ["AB", "AB"], [(0, "BA")]),
    # Anchors: only at the partition's first row / after its last.
    ("^ A", ["A", "A"], [(0, "A")]),
    ("A $", ["A", "A", "A"], [(2, "A")]),
    # The empty pattern and A*: an empty match at every row where nothing longer matches.
    ("()", ["", ""], [(0, ""), (1, "")]),
    ("A*", ["B", "A", "A", "B"], [(0, ""), (1, "AA"), (3, "")]),
])
@pytest.mark.parametrize("engine", ENGINES)
def test_documented_preference(engine: str, text: str, rows: list[str], expected: list) -> None:
    node = parse_row_pattern(text)
    program = compile_pattern(node)
    accepts = np.array([[v in r for v in program.variables] for r in rows], dtype=bool)
    found = [(m.start, "".join(program.variables[v] for v in m.labels))
             for m in find_matches(program, accepts, engine=engine)]
    assert found == expected


@pytest.mark.parametrize("engine", ENGINES)
def test_one_pass_over_a_long_run(engine: str) -> None:
    """``A+ B+`` over rows that satisfy both (trinodb/trino#18036): linear, not exponential."""
    program = compile_pattern(parse_row_pattern("A+ B+"))
    matches = find_matches(program, np.ones((20_000, 2), dtype=bool), engine=engine)
    assert [(m.start, m.end, m.labels.count(0)) for m in matches] == [(0, 20_000, 19_999)]


def test_determinised_matcher_falls_back_when_full(monkeypatch) -> None:
    """Past its bound of states a search runs in the Pike VM and the steps are forgotten;
    the matches do not change. ``PERMUTE`` of four items over random rows needs many states."""
    program = compile_pattern(parse_row_pattern("PERMUTE(A, B+, C*, (A | B){2}) C?"))
    rng = np.random.default_rng(7)
    rows = row_masks(rng.random((400, 3)) < 0.5)
    reference = match_masks(program, rows, engine="pike")
    assert reference  # the pattern does match these rows
    unbounded = LazyDfa(program)
    monkeypatch.setitem(matcher._DFAS, program, unbounded)
    assert match_masks(program, rows) == reference
    assert unbounded.size > 3  # so a bound of 3 is reached
    monkeypatch.setitem(matcher._DFAS, program, LazyDfa(program, max_states=3))
    assert match_masks(program, rows) == reference
    # The bulk read-back hands over the matches found before the bound was reached.
    monkeypatch.setattr(matcher, "BULK_ROWS", 0)
    half = LazyDfa(program, max_states=unbounded.size // 2)
    monkeypatch.setitem(matcher._DFAS, program, half)
    assert match_masks(program, rows) == reference


@pytest.mark.parametrize("one_by_one", [1, 16, 10**9])
@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(text=patterns(), seed=st.integers(0, 2**16), density=st.sampled_from([0.3, 0.6, 0.9]))
def test_matches_read_back_in_bulk_equal_the_pike_vm(one_by_one: int, text: str, seed: int,
                                                     density: float) -> None:
    """SKIP PAST LAST ROW over 300 rows (tens of matches): the labels read back for all
    matches at once (a numpy step back each), and walked one by one below the threshold,
    equal the Pike VM's (the oracle cannot enumerate this many rows)."""
    program = compile_pattern(parse_row_pattern(text))
    rows = row_masks(np.random.default_rng(seed).random((300, 3)) < density)
    reference = match_masks(program, rows, engine="pike")
    with patch.object(dfa_module, "_ONE_BY_ONE", one_by_one), \
            patch.object(matcher, "BULK_ROWS", 0):
        matcher._DFAS.clear()
        assert match_masks(program, rows) == reference, text


@settings(max_examples=400, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(text=patterns(), rows=st.lists(st.lists(st.booleans(), min_size=3, max_size=3),
                                      max_size=9),
       gaps=st.lists(st.integers(0, 3), min_size=9, max_size=9), nulls=st.integers(0, 2),
       span=st.integers(1, 6),
       skip=st.sampled_from([("past_last", None), ("next_row", None), ("last", "A")]))
def test_within_equals_oracle(text: str, rows: list[list[bool]], gaps: list[int], nulls: int,
                              span: int, skip) -> None:
    """Our WITHIN extension: ascending times (ties allowed, NULLs first, as Spark sorts)."""
    from cep.recognize.matcher import Within

    node = parse_row_pattern(text)
    program = compile_pattern(node)
    times: list[int | None] = []
    clock = 0
    for k in range(len(rows)):
        clock += gaps[k]
        times.append(None if k < nulls else clock)
    accepts, names, plan, targets = inputs(program, rows, skip)
    try:
        expected = oracle_row_matches(node, names, plan.mode, targets, times=times, span=span)
    except OracleBudgetExceeded:
        reject()
    except ValueError:
        with pytest.raises(RowPatternSemanticError):
            find_matches(program, accepts, plan, within=Within(tuple(times), span))
        return
    found = [(m.start, tuple(program.variables[v] for v in m.labels), m.excluded)
             for m in find_matches(program, accepts, plan, within=Within(tuple(times), span))]
    assert found == expected, f"pattern {text!r}, times {times}, span {span}"
