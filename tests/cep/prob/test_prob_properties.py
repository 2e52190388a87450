"""The probabilistic matcher against the naive possible-worlds oracle on random small streams.

Matches (Def. 5), groups under both overlaps, and group probabilities (Def. 9) must equal the
literal enumeration of possible worlds (:mod:`cep.oracles.prob_oracle`) to 1e-12, for windows
up to 10, with and without a threshold; pruning never changes a group's probability.
"""

from __future__ import annotations

import math
import os

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cep.oracles.prob_oracle import oracle_group_probability, oracle_groups, oracle_matches
from cep.prob import (build_transducer, compile_prob, find_matches, from_wide, group_probabilities,
                      match_prob, state_vectors)
from cep.prob.answer import group_matches

SETTINGS = settings(max_examples=int(os.environ.get("PROB_EXAMPLES", "150")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
PATTERNS = [
    "PATTERN a, b+, c",
    "PATTERN a, b*, c",
    "PATTERN a+",
    "PATTERN a, b?, c{1,2}",
    "PATTERN b{2}, c",
    "PATTERN a, b+, c DEFINE b AS value IN ('b', 'd')",
    "PATTERN a, a+",
    "PATTERN x, b+ DEFINE x AS value IN ('a', 'b')",
    "PATTERN b, c{2,}, b",
]
VALUES = ["a", "b", "c", "d"]
TENTHS = [0.1 * k for k in range(1, 10)]


@st.composite
def streams(draw: st.DrawFn, max_len: int = 10):  # noqa: ANN201
    n = draw(st.integers(1, max_len))
    maps = []
    for _ in range(n):
        support = draw(st.lists(st.sampled_from(VALUES), min_size=1, max_size=3, unique=True))
        if len(support) == 1:
            maps.append({support[0]: 1.0})
            continue
        cuts = sorted(draw(st.lists(st.sampled_from(TENTHS), min_size=len(support) - 1,
                                    max_size=len(support) - 1, unique=True)))
        edges = [0.0, *cuts, 1.0]
        maps.append({v: edges[i + 1] - edges[i] for i, v in enumerate(support)})
    assume(math.prod(len(m) for m in maps) <= 2048)
    return from_wide(list(range(100, 100 + n)), maps)


def _same_matches(text, stream, window, threshold):  # noqa: ANN001, ANN202
    got = find_matches(compile_prob(text), stream, window=window, threshold=threshold)
    mine = {(int(got.start[i]), int(got.end[i]), got.values_of(i)): float(got.probability[i]) for i in range(len(got))}
    expected = oracle_matches(text, stream, window=window, threshold=threshold)
    # The oracle sums worlds, the engine multiplies: they may differ in the last bit, which
    # decides a match lying exactly on the threshold. Those are left out of the comparison.
    edge = {k for k, p in {**oracle_matches(text, stream, window=window), **mine}.items()
            if threshold and abs(p - threshold) <= 1e-9}
    assume(not edge)
    assert mine.keys() == expected.keys()
    for key, p in expected.items():
        assert abs(mine[key] - p) <= 1e-12, key
    order = [(int(got.start[i]), int(got.end[i]), got.values_of(i)) for i in range(len(got))]
    assert order == sorted(order)  # match_id order: (start, end, values)
    return got, expected


@SETTINGS
@given(streams(), st.sampled_from(PATTERNS), st.integers(1, 10), st.sampled_from([0.0, 0.01, 0.05, 0.2]))
def test_matches_equal_the_oracle(stream, text, window, threshold) -> None:  # noqa: ANN001
    _same_matches(text, stream, window, threshold)


@SETTINGS
@given(streams(), st.sampled_from(PATTERNS), st.integers(1, 10), st.sampled_from([0.0, 0.01, 0.05, 0.2]),
       st.sampled_from(["single", "complete"]))
def test_groups_and_probabilities_equal_the_oracle(stream, text, window, threshold, overlap) -> None:  # noqa: ANN001
    got, expected = _same_matches(text, stream, window, threshold)
    groups = group_matches(got, overlap, window)
    want = oracle_groups(expected, overlap)
    mine = sorted(zip(groups.t_start.tolist(), groups.t_end.tolist(), groups.core_start.tolist(),
                      groups.core_end.tolist(), groups.n_matches.tolist()))
    assert mine == [(s, e, cs, ce, len(members)) for s, e, cs, ce, members in want]
    tr = build_transducer(compile_prob(text), window)
    probs = group_probabilities(tr, stream, groups.t_start, groups.t_end, groups.core_start, groups.core_end)
    for i in range(len(groups)):
        truth = oracle_group_probability(text, stream, window=window, start=int(groups.t_start[i]),
                                         end=int(groups.t_end[i]), core_start=int(groups.core_start[i]),
                                         core_end=int(groups.core_end[i]))
        assert abs(probs[i] - truth) <= 1e-12


@SETTINGS
@given(streams(), st.sampled_from(PATTERNS), st.integers(1, 10), st.sampled_from([0.01, 0.05, 0.2]),
       st.sampled_from(["single", "complete"]))
def test_pruning_never_changes_a_group_probability(stream, text, window, threshold, overlap) -> None:  # noqa: ANN001
    p = compile_prob(text)
    tr = build_transducer(p, window)

    def answer(th: float) -> dict[tuple[int, int, int, int], float]:
        g = group_matches(find_matches(p, stream, window=window, threshold=th), overlap, window)
        pr = group_probabilities(tr, stream, g.t_start, g.t_end, g.core_start, g.core_end)
        return dict(zip(zip(g.t_start.tolist(), g.t_end.tolist(), g.core_start.tolist(), g.core_end.tolist()),
                        pr.tolist()))
    full, pruned = answer(0.0), answer(threshold)
    for key in full.keys() & pruned.keys():
        assert full[key] == pruned[key]


@SETTINGS
@given(streams(), st.sampled_from(PATTERNS), st.integers(1, 10))
def test_state_vectors_are_distributions(stream, text, window) -> None:  # noqa: ANN001
    tr = build_transducer(compile_prob(text), window)
    for v in state_vectors(tr, stream, 0, len(stream) - 1, len(stream) - 1, 0):
        assert (v >= -1e-15).all()
        assert abs(v.sum() - 1.0) <= 1e-12


@SETTINGS
@given(streams(), st.sampled_from(PATTERNS), st.integers(1, 10), st.sampled_from([0.0, 0.01, 0.2]))
def test_matches_without_values_have_the_same_intervals_and_probabilities(
        stream, text, window, threshold) -> None:  # noqa: ANN001
    # Groups ask for the intervals only (issue 21: the values made memory cubic in the stream).
    p = compile_prob(text)
    full = find_matches(p, stream, window=window, threshold=threshold)
    bare = find_matches(p, stream, window=window, threshold=threshold, values=False)
    assert bare.codes.size == 0 and len(bare.offsets) == len(bare) + 1
    got = sorted(zip(bare.t_start.tolist(), bare.t_end.tolist(), bare.probability.tolist()))
    assert got == sorted(zip(full.t_start.tolist(), full.t_end.tolist(), full.probability.tolist()))


def ambiguous(n: int):  # noqa: ANN201
    """``n`` time points where ``a`` and ``b`` are equally likely: ``a+, b`` matches every
    interval, ~n^2/2 matches of ~n/3 values each."""
    return from_wide(list(range(n)), [{"a": 0.5, "b": 0.5}] * n)


def test_groups_of_a_long_ambiguous_stream_need_no_values() -> None:
    # The probe of issue 21: 1,000 such points took 5.2 GB and 12.6 s (an untyped MemoryError
    # on a smaller machine); the one group needs the intervals only.
    rows = match_prob("PATTERN a+, b", ambiguous(1000), window=1000)
    assert [(r.t_start, r.t_end, r.n_matches) for r in rows] == [(0, 999, 1000 * 999 // 2)]


def test_listing_matches_is_bounded_by_max_values() -> None:
    import pytest

    from cep.prob.errors import ProbLimitError

    stream = ambiguous(60)
    listed = find_matches(compile_prob("PATTERN a+, b"), stream, window=60)
    held = int(listed.offsets[-1])
    assert held == sum((e - s + 1) for s, e in zip(listed.start.tolist(), listed.end.tolist()))
    find_matches(compile_prob("PATTERN a+, b"), stream, window=60, max_values=held)
    with pytest.raises(ProbLimitError, match=r"CEP-PROB-020: the matches found up to offset \d+ "
                                             r"hold [\d,]+ values, more than max_values="):
        find_matches(compile_prob("PATTERN a+, b"), stream, window=60, max_values=held - 1)
    with pytest.raises(ProbLimitError, match="ask for groups"):
        match_prob("PATTERN a+, b", ambiguous(1000), window=1000, output="matches")
