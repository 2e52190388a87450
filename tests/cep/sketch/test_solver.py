"""The configuration solver (cep/sketch/solver.py): budget, constraints, figure 4.9's shape, errors.

The constraints are recomputed here from the formulas of docs/sketch.md ("Configuration
solver"), written out again with ``math`` rather than through the solver's helpers.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cep.errors import CepError
from cep.sketch.config import SketchConfig
from cep.sketch.errors import SketchConfigError
from cep.sketch.solver import (
    BudgetTooSmallError,
    SolverError,
    SolverResult,
    memory_table,
    solve,
)

# Figure 4.9's setting: N = 10^6 events, fpq = 10^-4, leaves of C = 64 events, queries of 2 names.
FIG = {"fpq": 1e-4, "n_events": 1_000_000, "window": 64, "query_length": 2}
UNLIMITED = 10**15
REL = 1e-12  # floating-point slack for the recomputed inequalities


def distinct(events: float, heaps_k: float = 60.0, heaps_beta: float = 0.5) -> float:
    return min(events, heaps_k * events**heaps_beta)


def expected_nodes(n_events: int, window: int, fanout: int, height: int) -> int:
    return sum(math.ceil(n_events / (window * fanout**level)) for level in range(height + 1))


def top_level(n_events: int, window: int, fanout: int) -> int:
    return max(h for h in range(64) if window * fanout**h <= n_events) if n_events >= window else 0


def check_constraints(
    m: int,
    k: int,
    height: int,
    *,
    fpq: float,
    n_events: int,
    window: int,
    query_length: int = 2,
    fanout: int = 2,
    heaps_k: float = 60.0,
    heaps_beta: float = 0.5,
) -> None:
    """The leaf FP target, the top-level density and the stop rule, from the formulas."""
    assert m % 8 == 0 and m > 0 and 1 <= k <= 32
    d_leaf = distinct(window, heaps_k, heaps_beta)
    p_leaf = (1.0 - math.exp(-k * d_leaf / m)) ** k
    target = -math.expm1(math.log1p(-fpq) / query_length)  # 1-(1-fpq)**(1/s) without cancellation
    assert p_leaf <= target * (1 + 1e-9)
    assert 1.0 - (1.0 - p_leaf) ** query_length <= fpq * (1 + 1e-9)
    d_top = distinct(window * fanout**height, heaps_k, heaps_beta)
    assert k * d_top / m <= math.log(2) * (1 + REL)
    if height < top_level(n_events, window, fanout):
        d_next = distinct(window * fanout ** (height + 1), heaps_k, heaps_beta)
        assert k * d_next / m > math.log(2) * (1 - REL)


# ------------------------------------------------------------------------------------------------
# Figure 4.9: memory versus height for N = 10^6, fpq = 10^-4.


def test_figure_4_9_memory_grows_with_height() -> None:
    result = solve(memory_bytes=UNLIMITED, **FIG)
    heights = [row.height for row in result.table]
    assert heights == list(range(14))  # 64 * 2**13 <= 10^6 < 64 * 2**14
    assert all(row.feasible for row in result.table)
    memory = [row.predicted_bytes for row in result.table]
    assert all(a < b for a, b in zip(memory, memory[1:]))
    # The leaf level is sized by the false-positive target (the classic optimum: k = 14,
    # about 20.6 bits per name, density just under 1/2) ...
    leaf = result.table[0]
    assert (leaf.k, leaf.m, leaf.binding) == (14, 1320, "leaf-fp")
    # ... high trees by the density of their top level, so m grows like D_h ~ sqrt(C 2**h).
    top = result.table[-1]
    assert top.binding == "density"
    assert top.m is not None and top.m > 50 * leaf.m
    # Every row meets its constraints, and nodes and bytes follow the formula.
    for row in result.table:
        assert row.m is not None and row.k is not None
        check_constraints(row.m, row.k, row.height, **FIG)
        assert row.nodes == expected_nodes(1_000_000, 64, 2, row.height)
        assert row.predicted_bytes == (row.m // 8 + 64) * row.nodes


def test_figure_4_9_table_prints() -> None:
    result = solve(memory_bytes=30_000_000, **FIG)
    text = memory_table(result)
    lines = text.splitlines()
    assert len(lines) == 2 + 14
    assert lines[0].startswith("| height |")
    chosen = [line for line in lines if "<-" in line]
    assert chosen == [line for line in lines if line.startswith(f"| {result.height} <-")]


# ------------------------------------------------------------------------------------------------
# Budget.


BUDGETS = [3_578_125, 4_000_000, 6_000_000, 10**7, 2 * 10**7, 5 * 10**7, 10**8, 10**9]


@pytest.mark.parametrize("budget", BUDGETS)
def test_chosen_config_stays_within_budget_and_is_highest_fitting(budget: int) -> None:
    result = solve(memory_bytes=budget, **FIG)
    assert result.predicted_bytes <= budget
    assert result.predicted_query_fp <= 1e-4
    check_constraints(result.m, result.k, result.height, **FIG)
    fitting = [row.height for row in result.table if row.feasible and row.fits]
    assert result.height == max(fitting)
    assert all(
        row.predicted_bytes is not None and row.predicted_bytes > budget
        for row in result.table
        if row.height > result.height
    )


def test_more_memory_never_gives_a_lower_height() -> None:
    budgets = [int(3_578_125 * 1.25**i) for i in range(40)]
    heights = [solve(memory_bytes=budget, **FIG).height for budget in budgets]
    assert heights == sorted(heights)
    assert heights[0] == 0 and heights[-1] == 13


def test_m_is_the_smallest_for_its_k() -> None:
    # One multiple of 8 less breaks the leaf target or the top-level density.
    for row in solve(memory_bytes=UNLIMITED, **FIG).table:
        assert row.m is not None and row.k is not None
        with pytest.raises(AssertionError):
            check_constraints(row.m - 8, row.k, row.height, **FIG)


# ------------------------------------------------------------------------------------------------
# Monotone in fpq.


FPQS = [0.3, 0.1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-8, 1e-10, 1e-12]


def test_smaller_fpq_never_gives_smaller_m() -> None:
    tables = [solve(fpq=f, memory_bytes=UNLIMITED, n_events=10**6, window=64).table for f in FPQS]
    for height in range(14):
        ms = [table[height].m for table in tables]
        feasible = [m for m in ms if m is not None]
        assert feasible == sorted(feasible), (height, ms)
        # Once a height is infeasible (leaf filters too sparse to stop there) it stays so.
        first_none = next((i for i, m in enumerate(ms) if m is None), len(ms))
        assert all(m is None for m in ms[first_none:]), (height, ms)
    chosen = [solve(fpq=f, memory_bytes=UNLIMITED, n_events=10**6, window=64).m for f in FPQS]
    assert chosen == sorted(chosen)


def test_a_tiny_fpq_makes_low_heights_infeasible() -> None:
    # Leaves need filters so sparse that even k = 32 keeps merging past heights 0 and 1.
    result = solve(fpq=1e-30, memory_bytes=UNLIMITED, n_events=10**6, window=64)
    assert [row.feasible for row in result.table[:3]] == [False, False, True]
    with pytest.raises(SolverError, match="max_height") as raised:
        solve(fpq=1e-30, memory_bytes=UNLIMITED, n_events=10**6, window=64, max_height=1)
    assert raised.value.code == "CEP-SKETCH-010"


# ------------------------------------------------------------------------------------------------
# Other inputs.


def test_max_height_caps_the_table() -> None:
    result = solve(memory_bytes=UNLIMITED, max_height=3, **FIG)
    assert len(result.table) == 4 and result.height == 3
    assert result.inputs.max_height == 3
    # Above the stream's natural height there is nothing to build.
    assert len(solve(memory_bytes=UNLIMITED, max_height=99, **FIG).table) == 14
    small = solve(fpq=1e-3, memory_bytes=UNLIMITED, n_events=10, window=64)
    assert [row.height for row in small.table] == [0] and small.table[0].nodes == 1


@settings(max_examples=60, deadline=None)
@given(
    fpq=st.floats(min_value=1e-12, max_value=0.5),
    n_events=st.integers(min_value=1, max_value=10**8),
    window=st.sampled_from([1, 8, 64, 1000]),
    query_length=st.integers(min_value=1, max_value=5),
    fanout=st.integers(min_value=2, max_value=8),
    heaps_k=st.floats(min_value=1.0, max_value=300.0),
    heaps_beta=st.floats(min_value=0.1, max_value=1.0),
    slack=st.floats(min_value=1.0, max_value=100.0),
)
def test_property_constraints_and_budget(
    fpq: float,
    n_events: int,
    window: int,
    query_length: int,
    fanout: int,
    heaps_k: float,
    heaps_beta: float,
    slack: float,
) -> None:
    params = dict(
        fpq=fpq,
        n_events=n_events,
        window=window,
        query_length=query_length,
        fanout=fanout,
        heaps_k=heaps_k,
        heaps_beta=heaps_beta,
    )
    cheapest = min(
        row.predicted_bytes
        for row in solve(memory_bytes=UNLIMITED, **params).table
        if row.predicted_bytes is not None
    )
    budget = int(cheapest * slack)
    result = solve(memory_bytes=budget, **params)
    assert result.predicted_bytes <= budget
    check_constraints(result.m, result.k, result.height, **params)
    assert result.predicted_bytes == (result.m // 8 + 64) * expected_nodes(
        n_events, window, fanout, result.height
    )
    with pytest.raises(BudgetTooSmallError) as raised:
        solve(memory_bytes=cheapest - 1, **params)
    assert raised.value.needed_bytes == cheapest


# ------------------------------------------------------------------------------------------------
# Errors.


def test_budget_too_small_names_the_memory_needed() -> None:
    with pytest.raises(BudgetTooSmallError) as raised:
        solve(memory_bytes=3_578_124, **FIG)
    error = raised.value
    assert isinstance(error, SolverError) and isinstance(error, CepError)
    assert error.code == "CEP-SKETCH-010"
    assert error.needed_bytes == 3_578_125 and error.budget_bytes == 3_578_124
    assert "3578125" in str(error) and str(error).startswith("CEP-SKETCH-010: memory_bytes")
    assert solve(memory_bytes=3_578_125, **FIG).height == 0


GOOD = {"fpq": 1e-4, "memory_bytes": 10**8, "n_events": 10**6, "window": 64}


@pytest.mark.parametrize(
    "name, value",
    [
        ("fpq", 0),
        ("fpq", 1),
        ("fpq", -0.1),
        ("fpq", float("nan")),
        ("fpq", "0.01"),
        ("fpq", True),
        ("memory_bytes", 0),
        ("memory_bytes", 1.5e9),
        ("n_events", 0),
        ("n_events", -5),
        ("window", 0),
        ("window", 64.0),
        ("query_length", 0),
        ("fanout", 1),
        ("heaps_k", 0.0),
        ("heaps_k", float("inf")),
        ("heaps_beta", 0.0),
        ("heaps_beta", 1.5),
        ("max_height", -1),
        ("max_height", 2.0),
        ("node_overhead_bytes", -1),
    ],
)
def test_bad_input_raises_typed_error_naming_the_argument(name: str, value: object) -> None:
    with pytest.raises(SolverError) as raised:
        solve(**{**GOOD, name: value})  # type: ignore[arg-type]
    assert raised.value.code == "CEP-SKETCH-010"
    assert str(raised.value).startswith(f"CEP-SKETCH-010: {name}: expected")


# ------------------------------------------------------------------------------------------------
# Configuration.


def test_to_config_is_the_sketch_config() -> None:
    result = solve(memory_bytes=10**7, **FIG)
    assert isinstance(result, SolverResult)
    assert result.to_config() == SketchConfig(m=2160, k=5, C=64, fanout=2, target_fpq=1e-4)
    explicit = result.to_config(seeds=[11, 22, 33, 44, 55], config_version=3)
    assert explicit.seeds == (11, 22, 33, 44, 55) and explicit.config_version == 3
    # The config's own checks apply (CEP-SKETCH-001).
    with pytest.raises(SketchConfigError, match="seeds"):
        result.to_config(seeds=[1, 2, 3])
