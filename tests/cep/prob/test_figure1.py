"""The paper's worked example (Sugiura et al., DASFAA 2015, Fig. 1, pattern ``a b+ c``) exactly.

The paper's text is not available to us; its figure-1 stream is reconstructed from the numbers
DESIGN.md quotes (docs/prob.md section 6, ``python -m benchmarks.reconstruct_figure1``): every
six-point stream with probabilities in tenths was searched; four produce matches of probability
0.07, 0.3528, 0.0168 and 0.09 and the single-overlap group [1, 6] with probability 0.9437. In
two of them the matches numbered by (start, end), as DESIGN.md numbers them, come in the quoted
order (m1..m4 = [1,3], [1,6], [2,5], [4,6]); the other two are mirror images. Both of the two
are tested; FIGURE_1 is the one the docs show.
"""

from __future__ import annotations

import numpy as np
import pytest

from cep.oracles.prob_oracle import oracle_matches, oracle_prefix_probabilities
from cep.prob import build_transducer, compile_prob, from_wide, match_prob, state_vectors

PATTERN = "PATTERN a, b+, c"
FIGURE_1 = [{"a": 1.0}, {"a": 0.3, "b": 0.7}, {"a": 0.2, "b": 0.7, "c": 0.1},
            {"a": 0.1, "b": 0.8, "c": 0.1}, {"b": 0.9, "c": 0.1}, {"c": 1.0}]
OTHER_CANDIDATE = [{"a": 1.0}, {"a": 0.3, "b": 0.7}, {"a": 0.1, "b": 0.8, "c": 0.1},
                   {"a": 0.1, "b": 0.7, "c": 0.2}, {"b": 0.9, "c": 0.1}, {"c": 1.0}]
PAPER_MATCHES = {"m1": (1, 3, 0.07), "m2": (1, 6, 0.3528), "m3": (2, 5, 0.0168), "m4": (4, 6, 0.09)}
# The state distribution after each time point of group [1, 6] (our Fig. 9): MATCHED, {} and the
# youngest partial run (q1 = after a, q2 = after b; the number is its length so far).
FIGURE_9 = {
    1: {"{q1:1}": 1.0},
    2: {"{q1:1}": 0.3, "{q2:2}": 0.7},
    3: {"MATCHED": 0.07, "{}": 0.03, "{q1:1}": 0.2, "{q2:2}": 0.21, "{q2:3}": 0.49},
    4: {"MATCHED": 0.14, "{}": 0.047, "{q1:1}": 0.093, "{q2:2}": 0.16, "{q2:3}": 0.168, "{q2:4}": 0.392},
    5: {"MATCHED": 0.212, "{}": 0.0563, "{q2:2}": 0.0837, "{q2:3}": 0.144, "{q2:4}": 0.1512, "{q2:5}": 0.3528},
    6: {"MATCHED": 0.9437, "{}": 0.0563},
}


def _stream(maps: list[dict[str, float]]):  # noqa: ANN202
    return from_wide(list(range(1, 7)), maps)


@pytest.mark.parametrize("maps", [FIGURE_1, OTHER_CANDIDATE], ids=["figure-1", "other-candidate"])
def test_match_probabilities_are_the_papers(maps: list[dict[str, float]]) -> None:
    rows = match_prob(PATTERN, _stream(maps), window=6, output="matches")
    got = {(r.t_start, r.t_end): r.probability for r in rows}
    for name, (s, e, p) in PAPER_MATCHES.items():
        assert got[(s, e)] == pytest.approx(p, abs=1e-12), name
    assert len(rows) == 10  # every interval of length >= 3 in [1, 6] can spell a b+ c


@pytest.mark.parametrize("maps", [FIGURE_1, OTHER_CANDIDATE], ids=["figure-1", "other-candidate"])
def test_single_overlap_group_probability_is_0_9437(maps: list[dict[str, float]]) -> None:
    groups = match_prob(PATTERN, _stream(maps), window=6, overlap="single")
    assert [(g.t_start, g.t_end, g.n_matches) for g in groups] == [(1, 6, 10)]
    assert groups[0].probability == pytest.approx(0.9437, abs=1e-12)
    # The same group with the pruning threshold at 0.05: 5 members, same probability.
    pruned = match_prob(PATTERN, _stream(maps), window=6, overlap="single", threshold=0.05)
    assert [(g.t_start, g.t_end) for g in pruned] == [(1, 6)]
    assert pruned[0].probability == pytest.approx(0.9437, abs=1e-12)


def test_state_vectors_of_figure_9() -> None:
    s = _stream(FIGURE_1)
    tr = build_transducer(compile_prob(PATTERN), 6)
    vectors = state_vectors(tr, s, 0, 5, 5, 0)
    for t, expected in FIGURE_9.items():
        got = {tr.describe(i): float(p) for i, p in enumerate(vectors[t - 1]) if abs(p) > 1e-15}
        assert got.keys() == expected.keys(), t
        for state, p in expected.items():
            assert got[state] == pytest.approx(p, abs=1e-12), (t, state)
        assert sum(got.values()) == pytest.approx(1.0, abs=1e-12)
    # Independently: the MATCHED entry after t is P(some match inside [1, t]) over all worlds.
    prefix = oracle_prefix_probabilities(PATTERN, s, window=6, start=0, end=5)
    assert np.allclose([v[0] for v in vectors], prefix, atol=1e-12)


def test_oracle_agrees_on_the_match_probabilities() -> None:
    found = oracle_matches(PATTERN, _stream(FIGURE_1), window=6)
    by_interval = {(s + 1, e + 1): p for (s, e, _), p in found.items()}
    for s, e, p in PAPER_MATCHES.values():
        assert by_interval[(s, e)] == pytest.approx(p, abs=1e-12)
