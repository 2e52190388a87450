"""The thesis's configuration rule (cep/sketch/thesis_solver.py) against its equations."""

from __future__ import annotations

import math

import pytest

from cep.sketch.solver import BudgetTooSmallError
from cep.sketch.thesis_solver import thesis_solve

GB_BITS = 8 * 2 ** 30


def test_the_thesis_inputs_by_hand() -> None:
    # M = 2 GB, N = 10^6, C = 100, fpq = 10^-4, s = 3 (section 5.2.1).
    c = thesis_solve(fpq=1e-4, memory_bits=2 * GB_BITS, n_events=10 ** 6, window=100,
                     query_length=3)
    # h = 1: L = 10^4 leaves, each top-level; q = 2 * 2 * 10^4 probes; n = 60 * 100**0.5.
    assert (c.height, c.leaves, c.top_nodes, c.nodes, c.probes, c.distinct) == \
        (1, 1e4, 1e4, 1e4, 4e4, 600.0)
    fp = 1 - (1 - 1e-4) ** (1 / 4e4)  # (4.5)
    assert c.filter_fp == pytest.approx(fp, rel=1e-6)
    m = -600 * math.log(fp) / math.log(2) ** 2  # (4.13)
    assert c.m == math.ceil(m) == 24736 and c.k == round(math.log(2) * m / 600) == 29  # (4.18)
    assert c.memory_bits == pytest.approx(1e4 * m)  # (4.6) with T = L at h = 1


def test_memory_grows_with_height_so_the_rule_never_merges() -> None:
    costs = []
    for h in range(1, 10):
        per_tree, top = 2 ** (h - 1), 1e4 / 2 ** (h - 1)
        n = 60 * (per_tree * 100) ** 0.5
        fp = 1 - (1 - 1e-4) ** (1 / (4 * top))
        costs.append((2 ** h - 1) * top * (-n * math.log(fp) / math.log(2) ** 2))
    assert costs == sorted(costs)  # Fig. 4.9: storage grows with the height
    c = thesis_solve(fpq=1e-4, memory_bits=costs[0], n_events=10 ** 6, window=100,
                     query_length=3)
    assert c.height == 1
    with pytest.raises(BudgetTooSmallError) as caught:
        thesis_solve(fpq=1e-4, memory_bits=costs[0] * 0.99, n_events=10 ** 6, window=100,
                     query_length=3)
    assert "height 1" in str(caught.value)


def test_longer_queries_need_bigger_filters() -> None:
    sizes = [thesis_solve(fpq=1e-4, memory_bits=2 * GB_BITS, n_events=10 ** 6, window=100,
                          query_length=s).m for s in (2, 3, 4, 8)]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
