"""The counting path of the ABI construction (narrow integer ranges) against sort and search.

``cep.trends.graph._dense_ranks`` replaces ``np.unique`` and ``np.searchsorted`` for integer
values; the graph-level property tests exercise it against the brute-force oracle, and this
file checks it against the two numpy calls it replaces, including NULLs and values outside the
range of ``rval``.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cep.trends.graph import _dense_ranks
from cep.trends.operands import Operands


@st.composite
def operand_pairs(draw: st.DrawFn) -> tuple[Operands, np.ndarray, np.ndarray]:
    n = draw(st.integers(1, 40))
    span = draw(st.sampled_from([3, 50, 10_000]))
    lval = np.array(draw(st.lists(st.integers(-span, span), min_size=n, max_size=n)), dtype=np.int64)
    rval = np.array(draw(st.lists(st.integers(-span // 2, span // 2), min_size=n, max_size=n)), dtype=np.int64)
    lnull = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    rnull = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    return Operands(lval, lnull, rval, rnull, False), ~lnull, ~rnull


@settings(max_examples=300, deadline=None)
@given(operand_pairs())
def test_counting_equals_unique_and_searchsorted(case: tuple[Operands, np.ndarray, np.ndarray]) -> None:
    ops, valid_l, valid_r = case
    got = _dense_ranks(ops, valid_l, valid_r)
    if not valid_r.any():
        assert got is None
        return
    r = ops.rval[valid_r]
    if int(r.max()) - int(r.min()) > 4 * len(r) + 1024:
        assert got is None
        return
    assert got is not None
    bounds, r_pos, count_lt, count_le = got
    expected_bounds, inverse = np.unique(r, return_inverse=True)
    assert bounds.tolist() == expected_bounds.tolist()
    assert r_pos[valid_r].tolist() == inverse.tolist()
    assert (r_pos[~valid_r] == 0).all()
    lv = ops.lval[valid_l]
    assert count_lt[valid_l].tolist() == np.searchsorted(expected_bounds, lv, side="left").tolist()
    assert count_le[valid_l].tolist() == np.searchsorted(expected_bounds, lv, side="right").tolist()


def test_floats_and_wide_ranges_take_the_sort_path() -> None:
    ones = np.ones(3, dtype=bool)
    floats = Operands(np.array([1.0, 2.0, 3.0]), ~ones, np.array([1.0, 2.0, 3.0]), ~ones, False)
    wide = Operands(np.array([0, 1, 10**9]), ~ones, np.array([0, 1, 10**9]), ~ones, False)
    assert _dense_ranks(floats, ones, ones) is None
    assert _dense_ranks(wide, ones, ones) is None
