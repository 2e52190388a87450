"""DEFINE conditions that read the match so far: the matcher against the oracle.

Each variable may get a condition drawn from a family written twice: as the translator's tree
(run by :class:`cep.recognize.condition.Conditions` inside the matcher, per thread) and as a
plain Python function of the explicit labels before the tested row (run by the brute-force
oracle). Random patterns, random values, every skip mode: the matches must be equal.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from cep.oracles.row_pattern_oracle import OracleBudgetExceeded, oracle_row_matches
from cep.recognize.condition import Conditions
from cep.recognize.errors import RowPatternSemanticError
from cep.recognize.matcher import Reads, find_matches
from cep.recognize.parser import parse_row_pattern
from cep.recognize.program import compile_pattern
from tests.cep.recognize.test_matcher_oracle import VARS, inputs, patterns

# Each family member: (tree, python(x, i, var, labels) -> bool | None) for a parameter c.
_Plain = Callable[[list[int], int, str, tuple[str, ...]], Any]


def _family(kind: int, c: int) -> tuple[list[Any], _Plain]:
    def seq(var: str, labels: tuple[str, ...]) -> tuple[str, ...]:
        return labels + (var,)  # the tested row counts as mapped to its variable

    def rows_of(i: int, var: str, labels: tuple[str, ...], names: set[str] | None) -> list[int]:
        start = i - len(labels)
        return [start + k for k, v in enumerate(seq(var, labels)) if names is None or v in names]

    if kind == 0:  # count(A.*) <= c
        return (["op", "<=", ["agg", "count", ["A"], None], ["num", str(c)]],
                lambda x, i, var, labels: seq(var, labels).count("A") <= c)
    if kind == 1:  # x >= LAST(A.x, c % 2)
        k = c % 2

        def last_a(x: list[int], i: int, var: str, labels: tuple[str, ...]) -> Any:
            hits = rows_of(i, var, labels, {"A"})
            return None if len(hits) <= k else x[i] >= x[hits[-1 - k]]
        return (["op", ">=", ["col", "x"], ["nav", "LAST", ["A"], k, "x", 0]], last_a)
    if kind == 2:  # x > FIRST(x)
        return (["op", ">", ["col", "x"], ["nav", "FIRST", None, 0, "x", 0]],
                lambda x, i, var, labels: x[i] > x[i - len(labels)])
    if kind == 3:  # sum(B.x) < c + 2
        def sum_b(x: list[int], i: int, var: str, labels: tuple[str, ...]) -> Any:
            hits = rows_of(i, var, labels, {"B"})
            return None if not hits else sum(x[r] for r in hits) < c + 2
        return (["op", "<", ["agg", "sum", ["B"], "x"], ["num", str(c + 2)]], sum_b)
    if kind == 4:  # PREV(CLASSIFIER()) = 'A' (NULL outside the match)
        return (["op", "=", ["nav", "LAST", None, 0, None, -1], ["str", "A"]],
                lambda x, i, var, labels: bool(labels) and labels[-1] == "A")
    if kind == 5:  # x = PREV(LAST(B.x), 1): a physical step back from a logical position
        def prev_last_b(x: list[int], i: int, var: str, labels: tuple[str, ...]) -> Any:
            hits = rows_of(i, var, labels, {"B"})
            return bool(hits) and hits[-1] >= 1 and x[i] == x[hits[-1] - 1]
        return (["op", "=", ["col", "x"], ["nav", "LAST", ["B"], 0, "x", -1]], prev_last_b)
    if kind == 6:  # avg(x) * 2 <= c + 1 over the whole match (x as DECIMAL-free ints)
        return (["op", "<=", ["op", "*", ["agg", "avg", None, "x"], ["num", "2"]],
                 ["num", str(c + 1)]],
                lambda x, i, var, labels: sum(x[r] for r in rows_of(i, var, labels, None))
                * 2 / (len(labels) + 1) <= c + 1)
    if kind == 8:  # PREV(CLASSIFIER()) = 'B'
        return (["op", "=", ["nav", "LAST", None, 0, None, -1], ["str", "B"]],
                lambda x, i, var, labels: bool(labels) and labels[-1] == "B")
    if kind == 9:  # count(A.*) >= c - 1
        return (["op", ">=", ["agg", "count", ["A"], None], ["num", str(c - 1)]],
                lambda x, i, var, labels: seq(var, labels).count("A") >= c - 1)
    # Flink's documented decrease: LAST(C.x, 1) IS NULL OR x < LAST(C.x, 1)
    def falling(x: list[int], i: int, var: str, labels: tuple[str, ...]) -> Any:
        hits = rows_of(i, var, labels, {"C"})
        return len(hits) < 2 or x[i] < x[hits[-2]]
    return (["op", "or", ["op", "isnull", ["nav", "LAST", ["C"], 1, "x", 0]],
             ["op", "<", ["col", "x"], ["nav", "LAST", ["C"], 1, "x", 0]]], falling)


# Patterns where threads with different histories meet at one instruction: keeping only the
# preferred one would be wrong when a later condition reads the history.
_CHOICES = ["(A | B)+ C", "(B | A)* C", "A* B* C", "(A B?)+ C", "(A | B){2,3} C",
            "PERMUTE(A, B) C", "A+? B C+", "(A | B | A B)+ C"]

# Rows mostly accepted by the Spark-side masks, so the per-thread conditions decide.
_mostly_true = st.sampled_from([True, True, True, False])


def drawn_case(text: str, rows: list[list[bool]], values: list[int], kinds: list[int],
               params: list[int], skip) -> tuple[Any, ...]:
    """One drawn example: ``(program, trees, x, accepts, skip plan, expected)``, expected the
    oracle's matches or None when the oracle finds a skip error (an example over the oracle's
    budget is rejected)."""
    node = parse_row_pattern(text)
    program = compile_pattern(node)
    x = values[:len(rows)]
    drawn = {v: _family(k, c) for v, k, c in zip(VARS, kinds, params) if k >= 0}
    trees = {v: t for v, (t, _) in drawn.items() if v in program.variables}

    def plain(var: str, i: int, labels: tuple[str, ...], number: int = 1) -> bool:
        return var not in drawn or drawn[var][1](x, i, var, labels) is True

    accepts, names, plan, targets = inputs(program, rows, skip)
    try:
        expected = oracle_row_matches(node, names, plan.mode, targets, reads=plain)
    except OracleBudgetExceeded:
        reject()
    except ValueError:
        expected = None
    return program, trees, x, accepts, plan, expected


@settings(max_examples=1500, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(text=patterns() | st.sampled_from(_CHOICES), rows=st.lists(st.lists(_mostly_true, min_size=3, max_size=3),
                                      max_size=8),
       values=st.lists(st.integers(0, 3), min_size=8, max_size=8),
       kinds=st.lists(st.integers(-1, 9) | st.integers(0, 9), min_size=3, max_size=3),
       params=st.lists(st.integers(0, 3), min_size=3, max_size=3),
       skip=st.sampled_from([("past_last", None), ("next_row", None), ("last", "A")]))
def test_conditions_equal_oracle(text: str, rows: list[list[bool]], values: list[int],
                                 kinds: list[int], params: list[int], skip) -> None:
    program, trees, x, accepts, plan, expected = drawn_case(text, rows, values, kinds, params,
                                                            skip)
    conditions = Conditions(trees, program.variables)
    columns = {"x": x}
    reads = Reads(conditions.mask,
                  lambda v, i, h: conditions.accepts(columns, len(x), v, i, h))
    if expected is None:
        with pytest.raises(RowPatternSemanticError):
            find_matches(program, accepts, plan, reads=reads)
        return
    found = [(m.start, tuple(program.variables[v] for v in m.labels), m.excluded)
             for m in find_matches(program, accepts, plan, reads=reads)]
    assert found == expected, f"pattern {text!r}, x {x}, conditions {trees}"


def test_running_aggregate_over_a_long_match_is_linear() -> None:
    """``A+`` with ``avg(A.x)`` over 20,000 rows: each node caches its running sum."""
    program = compile_pattern(parse_row_pattern("A+ B"))
    n = 20_000
    x = [1] * (n - 1) + [5]
    conditions = Conditions({"A": ["op", "<", ["agg", "avg", ["A"], "x"], ["num", "2"]],
                             "B": ["op", ">", ["col", "x"], ["agg", "max", ["A"], "x"]]},
                            program.variables)
    reads = Reads(conditions.mask, lambda v, i, h: conditions.accepts({"x": x}, n, v, i, h))
    matches = find_matches(program, np.ones((n, 2), dtype=bool), reads=reads)
    assert [(m.start, m.end) for m in matches] == [(0, n)]


def test_a_less_preferred_history_wins_when_the_preferred_one_fails() -> None:
    """``(A | B)+ C`` with ``C AS count(A.*) = 0``: the all-A history is preferred but fails at
    C; merging threads by instruction alone would lose the all-B history that matches."""
    program = compile_pattern(parse_row_pattern("(A | B)+ C"))
    conditions = Conditions({"C": ["op", "=", ["agg", "count", ["A"], None], ["num", "0"]]},
                            program.variables)
    reads = Reads(conditions.mask, lambda v, i, h: conditions.accepts({}, 4, v, i, h))
    found = [(m.start, "".join(program.variables[v] for v in m.labels))
             for m in find_matches(program, np.ones((4, 3), dtype=bool), reads=reads)]
    assert found == [(0, "BBBC")]


def test_thread_steps_are_bounded(monkeypatch) -> None:
    """A DEFINE that reads the match tries starts one at a time: the work is bounded by
    MAX_THREAD_STEPS per partition, with CEP-MR-004 beyond."""
    import cep.recognize.matcher as matcher
    from cep.recognize.errors import RowPatternLimitError

    monkeypatch.setattr(matcher, "MAX_THREAD_STEPS", 1_000)
    program = compile_pattern(parse_row_pattern("A+ B"))
    conditions = Conditions({"B": ["op", "<", ["agg", "count", ["B"], None], ["num", "0"]]},
                            program.variables)
    reads = Reads(conditions.mask, lambda v, i, h: conditions.accepts({}, 200, v, i, h))
    with pytest.raises(RowPatternLimitError, match="CEP-MR-004"):
        find_matches(program, np.ones((200, 2), dtype=bool), reads=reads)
