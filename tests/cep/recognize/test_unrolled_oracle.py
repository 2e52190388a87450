"""The unrolled program (conditions that read the match as one-row conditions) against the
oracle and against the per-thread matcher it replaces.

The families of conditions are those of ``test_conditions_oracle`` that navigate (``LAST``,
``FIRST``, ``PREV`` of a logical position); where a partition holds an undecided row the
caller asks the conditions per thread, as the SQL adapter does, so every example is answered.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cep.recognize.condition import Conditions
from cep.recognize.context import contextualise, resolve
from cep.recognize.errors import RowPatternSemanticError
from cep.recognize.matcher import MatchColumns, Reads, Skip, find_matches, match_columns, row_masks
from cep.recognize.parser import parse_row_pattern
from cep.recognize.program import compile_pattern, compile_row_pattern
from cep.recognize.unrolled import match_unrolled, unroll
from cep.recognize.vector import Column
from tests.cep.recognize.test_conditions_oracle import _CHOICES, _family, _mostly_true, drawn_case
from tests.cep.recognize.test_matcher_oracle import VARS, patterns

_NAVIGATING = (1, 2, 5, 7)  # LAST(A.x, k), FIRST(x), PREV(LAST(B.x), 1), Flink's falling C


def _matches(program, accepts, plan: Skip, trees: dict[str, Any], x: list[Any],
             partition: np.ndarray) -> tuple[list[tuple[int, tuple[int, ...]]], int]:
    """Every partition's matches through the unrolled program where it decides, else per
    thread (the adapter's rule); and how many partitions the unrolled program answered."""
    shape = contextualise(program, trees)
    null = np.array([v is None for v in x], dtype=bool)
    column = Column(np.array([0 if v is None else v for v in x], dtype=np.int64), null, "number")
    # A product too large to build leaves every partition to the per-thread matcher.
    rows = None if shape is None else unroll(shape, accepts, {"x": column}, partition, plan)
    conditions = Conditions(trees, program.variables)
    out, fast = [], 0
    bounds = np.flatnonzero(np.r_[True, partition[1:] != partition[:-1]]).tolist() + [len(x)]
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        found = None if rows is None else match_unrolled(rows, lo, hi)
        if found is None:
            part = {"x": x[lo:hi]}
            reads = Reads(conditions.mask,
                          lambda v, i, h, part=part, n=hi - lo: conditions.accepts(part, n, v, i, h))
            found = match_columns(program, row_masks(accepts[lo:hi]), plan, reads=reads)
        else:
            fast += 1
        out.extend(_as_list(found, lo))
    return out, fast


def _as_list(found: MatchColumns, lo: int) -> list[tuple[int, tuple[int, ...]]]:
    out, at = [], 0
    for start, length in zip(found.starts, found.lengths):
        out.append((start + lo, tuple(found.labels[at:at + length])))
        at += length
    return out


@settings(max_examples=1000, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(text=patterns() | st.sampled_from(_CHOICES + ["B C+ A", "A B+ C"]),
       rows=st.lists(st.lists(_mostly_true, min_size=3, max_size=3), max_size=8),
       values=st.lists(st.integers(0, 3), min_size=8, max_size=8),
       kinds=st.lists(st.sampled_from((-1,) + _NAVIGATING), min_size=3, max_size=3),
       params=st.lists(st.integers(0, 3), min_size=3, max_size=3),
       skip=st.sampled_from([("past_last", None), ("next_row", None), ("last", "A")]))
def test_unrolled_equals_oracle(text: str, rows: list[list[bool]], values: list[int],
                                kinds: list[int], params: list[int], skip) -> None:
    program, trees, x, accepts, plan, expected = drawn_case(text, rows, values, kinds, params,
                                                            skip)
    if expected is None:
        with pytest.raises(RowPatternSemanticError):
            _matches(program, accepts, plan, trees, x, np.zeros(len(x), dtype=np.int64))
        return
    found, _ = _matches(program, accepts, plan, trees, x, np.zeros(len(x), dtype=np.int64))
    assert [(s, tuple(program.variables[v] for v in labels)) for s, labels in found] == \
        [(s, labels) for s, labels, _ in expected], f"pattern {text!r}, x {x}, conditions {trees}"


@settings(max_examples=400, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(text=st.sampled_from(_CHOICES + ["B C+ A", "A B+ C", "A (B | C)+", "(A C+)+ B"]),
       x=st.lists(st.integers(0, 3) | st.none(), max_size=14),
       cuts=st.lists(st.integers(0, 14), max_size=3),
       kinds=st.lists(st.sampled_from((-1,) + _NAVIGATING), min_size=3, max_size=3),
       params=st.lists(st.integers(0, 3), min_size=3, max_size=3))
def test_unrolled_equals_per_thread_matcher_with_nulls_and_partitions(
        text: str, x: list[Any], cuts: list[int], kinds: list[int], params: list[int]) -> None:
    """NULLs (three-valued logic over undecided rows) and several partitions in one task:
    the same matches as asking every condition per thread."""
    program = compile_pattern(parse_row_pattern(text))
    trees = {v: _family(k, c)[0] for v, k, c in zip(VARS, kinds, params)
             if k >= 0 and v in program.variables}
    n = len(x)
    partition = np.zeros(n, dtype=np.int64)
    for cut in cuts:
        partition[min(cut, n):] += 1
    accepts = np.ones((n, len(program.variables)), dtype=bool)
    conditions = Conditions(trees, program.variables)
    expected = []
    bounds = np.flatnonzero(np.r_[True, partition[1:] != partition[:-1]]).tolist() + [n] \
        if n else [0]
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        part = {"x": x[lo:hi]}
        reads = Reads(conditions.mask,
                      lambda v, i, h, part=part, n=hi - lo: conditions.accepts(part, n, v, i, h))
        expected.extend((m.start + lo, m.labels)
                        for m in find_matches(program, accepts[lo:hi], reads=reads))
    found, _ = _matches(program, accepts, Skip(), trees, x, partition)
    assert found == expected, f"pattern {text!r}, x {x}, partition {partition.tolist()}"


def test_price_down_is_decided_without_nulls_and_undecided_with_one() -> None:
    """Flink's ``START_ROW DOWN+ UP``: without NULLs every row is decided (the unrolled
    program answers); a NULL where DOWN's second condition needs START_ROW.v0, which lies
    further back than the context places, sends that partition to the per-thread matcher."""
    program = compile_row_pattern("START_ROW DOWN+ UP")
    last_down = ["nav", "LAST", ["DOWN"], 1, "x", 0]
    trees = {
        "DOWN": ["op", "or", ["op", "and", ["op", "isnull", last_down],
                              ["op", "<", ["col", "x"], ["nav", "LAST", ["START_ROW"], 0, "x", 0]]],
                 ["op", "<", ["col", "x"], last_down]],
        "UP": ["op", ">", ["col", "x"], last_down]}
    x = [9, 8, 7, 6, 8, 5, 4, 3, 6, 1]
    accepts = np.ones((len(x), 3), dtype=bool)
    found, fast = _matches(program, accepts, Skip(), trees, x, np.zeros(len(x), dtype=np.int64))
    assert fast == 1 and [(s, len(labels)) for s, labels in found] == [(0, 5), (5, 4)]
    with_null = x[:3] + [None] + x[4:]
    found, fast = _matches(program, accepts, Skip(), trees, with_null,
                           np.zeros(len(x), dtype=np.int64))
    assert fast == 0


def test_resolve_places_logical_rows() -> None:
    """LAST/FIRST counted as the standard counts them, the tested row included."""
    names = ("A", "B")
    last_a1 = ["nav", "LAST", ["A"], 1, "x", 0]
    assert resolve(last_a1, names, 0, (0, 1), True) == ["at", -2, "x"]
    assert resolve(last_a1, names, 1, (1, 1), True) == ["null"]
    assert resolve(last_a1, names, 1, (1, 1), False) == ["unknown"]
    first_b = ["nav", "FIRST", ["B"], 0, "x", 1]
    assert resolve(first_b, names, 1, (0, 1), True) == ["at", 0, "x"]
    assert resolve(first_b, names, 1, (0, 1), False) == ["unknown"]
    assert resolve(["nav", "LAST", None, 0, None, 0], names, 1, (), True) == ["str", "B"]
    assert resolve(["agg", "count", None, None], names, 1, (), True) is None
