"""The paper's worked example (Sugiura et al., DASFAA 2015, Figs. 1, 2 and 9, pattern ``a b+ c``) exactly.

Line numbers are those of the paper's plain text, ``../shared/seeds/002_cc1ed863d7a1915b.txt``:

- Fig. 1 (lines 28-31) prints the stream: t1 a 1.0; t2 a 0.3, b 0.7; t3 a 0.1, b 0.8, c 0.1;
  t4 a 0.1, b 0.7, c 0.2; t5 b 0.9, c 0.1; t6 c 1.0 (``FIGURE_1``);
- Fig. 2 (lines 35-38) prints four of its matches: m1 = [1, 3] 0.07, m2 = [1, 6] 0.3528,
  m3 = [2, 5] 0.0168, m4 = [4, 6] 0.09;
- Fig. 9 (lines 228-232) prints the state vector St of the group g = (1, 6, p) after each time
  point, for the four states of the Fig. 8 transducer; its last entry is the group probability
  0.9437.

Before the paper's text was available the stream was reconstructed from the Fig. 2 numbers and
0.9437 (``python -m benchmarks.reconstruct_figure1``); one of the candidates found is the
printed stream, the other (``RECONSTRUCTION``, t3 = {a 0.2, b 0.7, c 0.1}, t4 = {a 0.1, b 0.8,
c 0.1}) agrees on those five numbers but not on Fig. 9. It is kept here only to show that Fig. 9
tells the two apart.
"""

from __future__ import annotations

import numpy as np
import pytest

from cep.oracles.prob_oracle import oracle_matches, oracle_prefix_probabilities
from cep.prob import build_transducer, compile_prob, from_wide, match_prob, state_vectors

PATTERN = "PATTERN a, b+, c"
# Fig. 1, lines 28-31.
FIGURE_1 = [{"a": 1.0}, {"a": 0.3, "b": 0.7}, {"a": 0.1, "b": 0.8, "c": 0.1},
            {"a": 0.1, "b": 0.7, "c": 0.2}, {"b": 0.9, "c": 0.1}, {"c": 1.0}]
# The pre-paper reconstruction (docs/prob.md, "Paper vs ours"): same Fig. 2 numbers, other Fig. 9.
RECONSTRUCTION = [{"a": 1.0}, {"a": 0.3, "b": 0.7}, {"a": 0.2, "b": 0.7, "c": 0.1},
                  {"a": 0.1, "b": 0.8, "c": 0.1}, {"b": 0.9, "c": 0.1}, {"c": 1.0}]
# Fig. 2, lines 35-38.
PAPER_MATCHES = {"m1": (1, 3, 0.07), "m2": (1, 6, 0.3528), "m3": (2, 5, 0.0168), "m4": (4, 6, 0.09)}
# Fig. 9, lines 228-232: St[0..3] at init and after t = 1..6 (columns init, 1, ..., 6).
FIGURE_9 = {
    0: [1.0, 0, 0, 0.03, 0.047, 0.0563, 0.0563],
    1: [0, 1.0, 0.3, 0.10, 0.093, 0, 0],
    2: [0, 0, 0.7, 0.80, 0.630, 0.6507, 0],
    3: [0, 0, 0, 0.07, 0.230, 0.2930, 0.9437],
}
# The paper's states 0..3 (Fig. 8) by the names of our paper-mode transducer.
PAPER_STATE = {0: "{}", 1: "{q1}", 2: "{q2}", 3: "MATCHED"}
# Our window-aware transducer (w = 6) on the printed stream: MATCHED, {} and the youngest
# partial run (q1 = after a, q2 = after b; the number is its length so far). Its {q2:*} entries
# add up to the paper's St[2] and the rest are the paper's St[0], St[1], St[3].
WINDOWED = {
    1: {"{q1:1}": 1.0},
    2: {"{q1:1}": 0.3, "{q2:2}": 0.7},
    3: {"MATCHED": 0.07, "{}": 0.03, "{q1:1}": 0.1, "{q2:2}": 0.24, "{q2:3}": 0.56},
    4: {"MATCHED": 0.23, "{}": 0.047, "{q1:1}": 0.093, "{q2:2}": 0.07, "{q2:3}": 0.168, "{q2:4}": 0.392},
    5: {"MATCHED": 0.293, "{}": 0.0563, "{q2:2}": 0.0837, "{q2:3}": 0.063, "{q2:4}": 0.1512, "{q2:5}": 0.3528},
    6: {"MATCHED": 0.9437, "{}": 0.0563},
}


def _stream(maps: list[dict[str, float]]):  # noqa: ANN202
    return from_wide(list(range(1, 7)), maps)


def test_match_probabilities_are_figure_2() -> None:
    rows = match_prob(PATTERN, _stream(FIGURE_1), window=6, output="matches")
    got = {(r.t_start, r.t_end): r.probability for r in rows}
    for name, (s, e, p) in PAPER_MATCHES.items():
        assert got[(s, e)] == pytest.approx(p, abs=1e-12), name
    assert len(rows) == 10  # "Ten matches are found from Fig. 1" (line 188)


@pytest.mark.parametrize("mode", ["window", "paper"])
def test_single_overlap_group_probability_is_0_9437(mode: str) -> None:
    groups = match_prob(PATTERN, _stream(FIGURE_1), window=6, overlap="single", transducer_mode=mode)
    assert [(g.t_start, g.t_end, g.n_matches) for g in groups] == [(1, 6, 10)]
    assert groups[0].probability == pytest.approx(0.9437, abs=1e-12)  # Fig. 9, line 232
    # The same group with the pruning threshold at 0.05: 6 members, same probability.
    pruned = match_prob(PATTERN, _stream(FIGURE_1), window=6, overlap="single", threshold=0.05,
                        transducer_mode=mode)
    assert [(g.t_start, g.t_end, g.n_matches) for g in pruned] == [(1, 6, 6)]
    assert pruned[0].probability == pytest.approx(0.9437, abs=1e-12)


def test_paper_transducer_gives_figure_9_literally() -> None:
    s = _stream(FIGURE_1)
    tr = build_transducer(compile_prob(PATTERN), None)
    assert tr.n_states == 4  # |p| + 1 (section 5, Fig. 8)
    index = {tr.describe(i): i for i in range(tr.n_states)}
    vectors = state_vectors(tr, s, 0, 5, 5, 0)
    for paper_state, row in FIGURE_9.items():
        ours = index[PAPER_STATE[paper_state]]
        assert row[0] == (1.0 if paper_state == 0 else 0)  # St_init: our empty state
        got = [float(v[ours]) for v in vectors]
        assert got == pytest.approx(row[1:], abs=1e-12), paper_state


def test_windowed_transducer_agrees_with_figure_9() -> None:
    s = _stream(FIGURE_1)
    tr = build_transducer(compile_prob(PATTERN), 6)
    vectors = state_vectors(tr, s, 0, 5, 5, 0)
    for t, expected in WINDOWED.items():
        got = {tr.describe(i): float(p) for i, p in enumerate(vectors[t - 1]) if abs(p) > 1e-15}
        assert got.keys() == expected.keys(), t
        for state, p in expected.items():
            assert got[state] == pytest.approx(p, abs=1e-12), (t, state)
        # Folded onto the paper's four states, the vector is Fig. 9's column t.
        folded = [got.get("{}", 0.0), got.get("{q1:1}", 0.0),
                  sum(p for k, p in got.items() if k.startswith("{q2")), got.get("MATCHED", 0.0)]
        assert folded == pytest.approx([FIGURE_9[q][t] for q in range(4)], abs=1e-12), t
    # Independently: the MATCHED entry after t is P(some match inside [1, t]) over all worlds,
    # i.e. Fig. 9's St[3] row 0, 0, 0.07, 0.23, 0.293, 0.9437.
    prefix = oracle_prefix_probabilities(PATTERN, s, window=6, start=0, end=5)
    assert prefix == pytest.approx(FIGURE_9[3][1:], abs=1e-12)
    assert np.allclose([v[0] for v in vectors], prefix, atol=1e-12)


def test_the_reconstruction_matches_figure_2_but_not_figure_9() -> None:
    s = _stream(RECONSTRUCTION)
    got = {(r.t_start, r.t_end): r.probability
           for r in match_prob(PATTERN, s, window=6, output="matches")}
    for s_, e, p in PAPER_MATCHES.values():
        assert got[(s_, e)] == pytest.approx(p, abs=1e-12)
    tr = build_transducer(compile_prob(PATTERN), None)
    st3 = [float(v[0]) for v in state_vectors(tr, s, 0, 5, 5, 0)]
    assert st3[-1] == pytest.approx(0.9437, abs=1e-12)
    assert st3[3] == pytest.approx(0.14, abs=1e-12) and FIGURE_9[3][4] == 0.23


def test_oracle_agrees_on_the_match_probabilities() -> None:
    found = oracle_matches(PATTERN, _stream(FIGURE_1), window=6)
    by_interval = {(s + 1, e + 1): p for (s, e, _), p in found.items()}
    for s, e, p in PAPER_MATCHES.values():
        assert by_interval[(s, e)] == pytest.approx(p, abs=1e-12)
