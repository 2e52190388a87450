"""The configuration rule of the Bloom-filter-tree thesis, exactly as printed (Baltus 2021, 4.4.1).

Equations 4.1-4.18 of the thesis (``../shared/seeds/000_ba105111c3328901.txt``), binary
fanout, for a query of ``s`` names (``s - 1`` pairs, each probing every top-level filter
twice):

* leaves ``L = N / C`` (4.9); a fully merged sub-tree of height ``h`` has ``l = 2**(h-1)``
  leaves (4.10) and ``d = 2**h - 1`` nodes (4.11); top-level nodes ``t = L / l`` (4.8), all
  nodes ``T = t * d`` (4.7, 4.12);
* probes ``q = 2 (s - 1) t`` (the end of 4.4.1: "probed six times" for three pairs);
* distinct names of a top-level node by Heaps' law, ``n = K (l C)**beta`` with ``K = 60``,
  ``beta = 0.5`` (4.16);
* per-filter target ``fp = 1 - (1 - fpq)**(1/q)`` (4.5, the q-th root the typesetting of 4.14
  lost), ``m = -n ln(fp) / (ln 2)**2`` (4.13-4.14), ``k = ln 2 * m / n`` (4.18);
* memory ``T * m <= M`` bits (4.6, 4.15, 4.17), maximising ``q``: the smallest ``h`` that fits.

Under these equations a tree's memory grows with its height (``T`` doubles towards ``2L`` while
``n`` grows by sqrt(2) per level and ``q`` halves; the thesis's Fig. 4.9 shows the growth), so
the rule picks ``h = 1``, every leaf its own top-level node and nothing merged, whenever any
height fits, and nothing fits when ``h = 1`` does not.

:mod:`cep.sketch.solver` is our own model (density-bounded heights, per-level node counts,
a per-node overhead); docs/sketch.md, "Paper vs ours", compares the two on the same inputs.

Example (the thesis's own inputs: M = 2 GB, N = 10^6, C = 100, fpq = 10^-4, s = 3):
    >>> c = thesis_solve(fpq=1e-4, memory_bits=2 * 8 * 2**30, n_events=1_000_000, window=100,
    ...                  query_length=3)
    >>> c.height, c.m, c.k, round(c.probes)
    (1, 24736, 29, 40000)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from cep.sketch.solver import BudgetTooSmallError

__all__ = ["ThesisConfiguration", "thesis_solve"]

_LN2 = math.log(2.0)


@dataclass(frozen=True)
class ThesisConfiguration:
    """The thesis's choice and the quantities of its equations at that height."""

    height: int
    m: int
    k: int
    leaves: float
    top_nodes: float
    nodes: float
    probes: float
    distinct: float
    filter_fp: float
    memory_bits: float


def thesis_solve(fpq: float, memory_bits: float, n_events: int, window: int,
                 query_length: int, heaps_k: float = 60.0, heaps_beta: float = 0.5
                 ) -> ThesisConfiguration:
    """The smallest height whose tree fits ``memory_bits`` (the most top-level probes).

    Raises:
        BudgetTooSmallError: no height up to a single sub-tree fits.
    """
    if not 0 < fpq < 1 or query_length < 2 or window < 1 or n_events < window:
        raise ValueError("need 0 < fpq < 1, query_length >= 2 and n_events >= window >= 1")
    leaves = n_events / window
    height, cheapest = 1, None
    while 2 ** (height - 1) <= leaves:
        per_tree = 2 ** (height - 1)
        top = leaves / per_tree
        nodes = (2 ** height - 1) * top
        probes = 2 * (query_length - 1) * top
        distinct = heaps_k * (per_tree * window) ** heaps_beta
        fp = -math.expm1(math.log1p(-fpq) / probes)  # 1 - (1 - fpq)**(1/q), without rounding
        m = -distinct * math.log(fp) / _LN2 ** 2
        if cheapest is None or nodes * m < cheapest[1]:
            cheapest = (height, nodes * m)
        if nodes * m <= memory_bits:
            return ThesisConfiguration(height, math.ceil(m), max(1, round(_LN2 * m / distinct)),
                                       leaves, top, nodes, probes, distinct, fp, nodes * m)
        height += 1
    assert cheapest is not None  # height 1 always exists: n_events >= window
    raise BudgetTooSmallError(int(math.ceil(cheapest[1] / 8)), int(memory_bits // 8),
                              cheapest[0])
