"""Sections 4 and 5 of Sugiura et al., DASFAA 2015, as fixed tests, and the paper's transducer
(``transducer_mode='paper'``) against a brute-force oracle written from the paper's definitions.

Line numbers are those of ``../shared/seeds/002_cc1ed863d7a1915b.txt``. The stream is the
printed Fig. 1 (lines 28-31, tests/cep/prob/test_figure1.py).
"""

from __future__ import annotations

import itertools
import random
import re

import numpy as np
import pytest

from cep.prob import ProbArgumentError, build_transducer, compile_prob, complete_groups, from_wide, match_prob
from cep.prob.transducer import group_probabilities, symbol_masses

FIGURE_1 = [{"a": 1.0}, {"a": 0.3, "b": 0.7}, {"a": 0.1, "b": 0.8, "c": 0.1},
            {"a": 0.1, "b": 0.7, "c": 0.2}, {"b": 0.9, "c": 0.1}, {"c": 1.0}]


def _figure_1():  # noqa: ANN202
    return from_wide(list(range(1, 7)), FIGURE_1)


def _product(maps: list[dict[str, float]], t_start: int, values: tuple[str, ...]) -> float:
    """P(s) of Def. 3: the product of the values' probabilities from ``t_start`` (1-based) on."""
    return float(np.prod([maps[t_start - 1 + i][v] for i, v in enumerate(values)]))


def paper_group_probability(regex: str, maps: list[dict[str, float]], start: int, end: int,
                            t_f: int | None = None) -> float:
    """Def. 9 by brute force: the total probability of the worlds of ``[start, end]`` (1-based)
    holding an occurrence of ``regex`` inside the span (of any length: the paper's transducer
    has no window), and for complete overlap one that contains ``t_f`` (section 5.2: ``T^A``
    before ``t_f``, ``T`` at ``t_f``, ``T^B`` after)."""
    pattern = re.compile(regex)
    span = maps[start - 1:end]
    total = 0.0
    for world in itertools.product(*[[(v, p) for v, p in d.items() if p > 0] for d in span]):
        text = "".join(v for v, _ in world)
        if t_f is None:
            hit = pattern.search(text) is not None
        else:
            f = t_f - start
            hit = any(pattern.fullmatch(text, i, j + 1) for i in range(f + 1) for j in range(f, len(text)))
        if hit:
            total += float(np.prod([p for _, p in world]))
    return total


# --- section 4.3: the threshold example --------------------------------------------------------

def test_threshold_0_1_keeps_three_matches_in_one_group() -> None:
    # Line 188: theta = 0.1, single overlap, a b+ c: "Ten matches are found from Fig. 1, but
    # matches satisfying theta are <a1 b2 b3 c4>, <a1 b2 b3 b4 b5 c6>, and <a2 b3 b4 b5 c6>.
    # Therefore, we construct a group from these three matches." Line 190: the pruned ones
    # (e.g. <a1 b2 c3>, <a1 b2 b3 b4 c5>) still count in the group probability.
    s = _figure_1()
    assert len(match_prob("PATTERN a, b+, c", s, window=6, output="matches")) == 10
    kept = match_prob("PATTERN a, b+, c", s, window=6, output="matches", threshold=0.1)
    assert [(m.t_start, m.t_end, m.values) for m in kept] == [
        (1, 4, ("a", "b", "b", "c")), (1, 6, ("a", "b", "b", "b", "b", "c")),
        (2, 6, ("a", "b", "b", "b", "c"))]
    for m in kept:  # the product of the printed probabilities (Def. 3)
        assert m.probability == pytest.approx(_product(FIGURE_1, m.t_start, m.values), abs=1e-12)
    assert [round(m.probability, 12) for m in kept] == [0.112, 0.3528, 0.1512]
    pruned = {(m.t_start, m.t_end) for m in match_prob("PATTERN a, b+, c", s, window=6, output="matches")} \
        - {(m.t_start, m.t_end) for m in kept}
    assert {(1, 3), (1, 5)} <= pruned
    for mode in ("window", "paper"):
        [group] = match_prob("PATTERN a, b+, c", s, window=6, threshold=0.1, transducer_mode=mode)
        assert (group.t_start, group.t_end, group.n_matches) == (1, 6, 3)
        assert group.probability == pytest.approx(0.9437, abs=1e-12)  # Fig. 9, with or without pruning


# --- section 4.1 / 4.2: <a b c> over Fig. 1 --------------------------------------------------

ABC_MATCHES = [(1, 3, 0.07), (2, 4, 0.048), (3, 5, 0.007), (4, 6, 0.09)]


def test_abc_matches() -> None:
    rows = match_prob("PATTERN a, b, c", _figure_1(), window=6, output="matches")
    assert [(m.t_start, m.t_end) for m in rows] == [(s, e) for s, e, _ in ABC_MATCHES]
    assert [m.probability for m in rows] == pytest.approx([p for _, _, p in ABC_MATCHES], abs=1e-12)


@pytest.mark.parametrize("mode", ["window", "paper"])
def test_abc_complete_overlap_groups(mode: str) -> None:
    # Lines 151-157: g1 is copied at time 3 (when m1 = <a1 b2 c3> is found) and output at time 5
    # as {<a1 b2 c3>, <a2 b3 c4>, <a3 b4 c5>}; the process continues (line 157). The next copy
    # (time 4) is {<a2 b3 c4>, <a3 b4 c5>, <a4 b5 c6>}; the copies at times 5 and 6 are subsets
    # of it and are not groups (Def. 8: a group is no subset of another group).
    groups = match_prob("PATTERN a, b, c", _figure_1(), window=6, overlap="complete", transducer_mode=mode)
    assert [(g.t_start, g.t_end, g.core_start, g.core_end, g.n_matches) for g in groups] == [
        (1, 5, 3, 3, 3), (2, 6, 4, 4, 3)]
    # Probabilities (not printed in the paper): Def. 9 by brute force, t_f = 3 and 4.
    assert groups[0].probability == pytest.approx(paper_group_probability("abc", FIGURE_1, 1, 5, 3), abs=1e-12)
    assert groups[1].probability == pytest.approx(paper_group_probability("abc", FIGURE_1, 2, 6, 4), abs=1e-12)
    # g1: t3 = c, b or a for its three members, so they are disjoint: 0.07 + 0.048 + 0.007.
    assert [round(g.probability, 12) for g in groups] == [0.125, 0.145]


@pytest.mark.parametrize("mode", ["window", "paper"])
def test_abc_single_overlap_group(mode: str) -> None:
    # Line 182: g1 = {<a1 b2 c3>, <a2 b3 c4>, <a3 b4 c5>, <a4 b5 c6>} is output at time 6.
    [group] = match_prob("PATTERN a, b, c", _figure_1(), window=6, overlap="single", transducer_mode=mode)
    assert (group.t_start, group.t_end, group.n_matches) == (1, 6, 4)
    assert group.probability == pytest.approx(paper_group_probability("abc", FIGURE_1, 1, 6), abs=1e-12)
    assert round(group.probability, 12) == 0.2087


def test_figure_2_complete_overlap_groups_of_the_four_named_matches() -> None:
    # Section 4.1 (line 149) and 5.2: with m1..m4 of Fig. 2, complete overlap gives
    # g1 = {m1, m2, m3} and g2 = {m2, m3, m4} (g1 lacks m4: it does not overlap m1).
    c = complete_groups(np.array([1, 1, 2, 4]), np.array([3, 6, 5, 6]), window=6)
    members = [{name for name, (s, e) in {"m1": (1, 3), "m2": (1, 6), "m3": (2, 5), "m4": (4, 6)}.items()
                if s <= int(c.core_start[i]) and e >= int(c.core_end[i])} for i in range(len(c))]
    assert members == [{"m1", "m2", "m3"}, {"m2", "m3", "m4"}]
    assert c.core_end.tolist() == [3, 5]  # t_f: g1 finds m1 at time 3, g2 finds m3 at time 5


def test_section_5_2_formulas_are_the_paper_mode() -> None:
    # Lines 249-257: St6(g1) = St_init T^A T^A T T^B T^B T^B and St6(g2) = St_init T^A T^A T^A T^A
    # T T^B, with T equation (4) and T^A (no edges into the final state: its input falls back to
    # state 0, rule 3) and T^B (no edges into state 1: `a` falls back to state 0) of Fig. 10.
    def matrices(d: dict[str, float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a, b, c = d.get("a", 0.0), d.get("b", 0.0), d.get("c", 0.0)
        t = np.array([[1 - a, a, 0, 0], [1 - a - b, a, b, 0], [1 - a - b - c, a, b, c], [0, 0, 0, 1]])
        ta = np.array([[1 - a, a, 0, 0], [1 - a - b, a, b, 0], [1 - a - b, a, b, 0], [0, 0, 0, 1]])
        tb = np.array([[1, 0, 0, 0], [1 - b, 0, b, 0], [1 - b - c, 0, b, c], [0, 0, 0, 1]])
        return t, ta, tb

    s = _figure_1()
    tr = build_transducer(compile_prob("PATTERN a, b+, c"), None)
    for t_f in range(1, 7):
        st = np.array([1.0, 0, 0, 0])
        for t, d in enumerate(FIGURE_1, 1):
            full, before, after = matrices(d)
            st = st @ (before if t < t_f else full if t == t_f else after)
        got = group_probabilities(tr, s, np.array([0]), np.array([5]), np.array([t_f - 1]), np.array([t_f - 1]))
        assert float(got[0]) == pytest.approx(st[3], abs=1e-12), t_f
        assert st[3] == pytest.approx(paper_group_probability("ab+c", FIGURE_1, 1, 6, t_f), abs=1e-12)


def test_paper_transducer_matrix_is_equation_4() -> None:
    # Equation (4) (line 218) for every time point of Fig. 1, states 0..3 = {}, {q1}, {q2}, MATCHED.
    s = _figure_1()
    tr = build_transducer(compile_prob("PATTERN a, b+, c"), None)
    index = {tr.describe(i): i for i in range(tr.n_states)}
    order = [index[name] for name in ("{}", "{q1}", "{q2}", "MATCHED")]
    masses = symbol_masses(tr, s)
    for t, d in enumerate(FIGURE_1):
        a, b, c = d.get("a", 0.0), d.get("b", 0.0), d.get("c", 0.0)
        expected = np.array([[1 - a, a, 0, 0], [1 - a - b, a, b, 0], [1 - a - b - c, a, b, c], [0, 0, 0, 1]])
        m = np.zeros((tr.n_states, tr.n_states))
        for src in range(tr.n_states):
            for sym in range(tr.pattern.n_symbols):
                m[src, tr.table[1][src, sym]] += masses[t, sym]  # phase 1: T (may start, counts)
        assert m[np.ix_(order, order)] == pytest.approx(expected, abs=1e-12), t


# --- the paper's transducer == the definition, on random streams --------------------------------

PATTERNS = [  # (our pattern, the same as a Python regex over one letter per value)
    ("PATTERN a, b+, c", "ab+c"),
    ("PATTERN a, b, c", "abc"),
    ("PATTERN a, a, b", "aab"),      # the first class recurs: the paper's rule 2 would lose runs
    ("PATTERN a+, b", "a+b"),
    ("PATTERN a, b?, c{2}", "ab?c{2}"),
    ("PATTERN x, c+ DEFINE x AS value IN ('a', 'b')", "[ab]c+"),
]


def test_paper_mode_equals_the_brute_force_definition() -> None:
    rng = random.Random(24)
    checked = 0
    for case in range(240):
        text, regex = PATTERNS[case % len(PATTERNS)]
        maps = []
        for _ in range(rng.randint(3, 7)):
            values = rng.sample("abcd", rng.randint(1, 3))
            weights = [rng.random() + 0.05 for _ in values]
            maps.append({v: w / sum(weights) for v, w in zip(values, weights)})
        t0 = rng.randint(-3, 3)
        s = from_wide(list(range(t0, t0 + len(maps))), maps)
        window = rng.randint(1, len(maps))
        threshold = rng.choice([0.0, 0.0, 0.05, 0.2])
        for overlap in ("single", "complete"):
            groups = match_prob(text, s, window=window, threshold=threshold, overlap=overlap,
                                transducer_mode="paper")
            for g in groups:
                t_f = None if overlap == "single" else g.core_end - t0 + 1
                expected = paper_group_probability(regex, maps, g.t_start - t0 + 1, g.t_end - t0 + 1, t_f)
                assert g.probability == pytest.approx(expected, abs=1e-12), (text, maps, window, overlap, g)
                checked += 1
    assert checked > 100


def test_where_the_modes_differ() -> None:
    # 1. A single-overlap span longer than the window: [1, 3] (a b c) and [3, 5] (a b c) make the
    # group [1, 5] under window 3; the paper's transducer (no window) also counts the 5-point
    # a b b b c (t3 = b), which is no match under window 3 (docs/prob.md, "Paper vs ours").
    maps = [{"a": 1.0}, {"b": 1.0}, {"a": 0.3, "b": 0.4, "c": 0.3}, {"b": 1.0}, {"c": 1.0}]
    s = from_wide([1, 2, 3, 4, 5], maps)
    [ours] = match_prob("PATTERN a, b+, c", s, window=3)
    [paper] = match_prob("PATTERN a, b+, c", s, window=3, transducer_mode="paper")
    assert (ours.t_start, ours.t_end, ours.n_matches) == (paper.t_start, paper.t_end, paper.n_matches) == (1, 5, 2)
    assert ours.probability == pytest.approx(0.6, abs=1e-12)  # t3 = a or t3 = c
    assert paper.probability == pytest.approx(1.0, abs=1e-12)
    assert paper.probability == pytest.approx(paper_group_probability("ab+c", maps, 1, 5), abs=1e-12)
    # 2. Complete overlap with a threshold: ours counts the matches starting by the latest member
    # start L, the paper's those containing t_f = R (T^A before t_f). Fig. 1, theta = 0.1: the
    # members [1, 4], [1, 6], [2, 6] have core [2, 4]; the pruned [3, 5], [3, 6], [4, 6] contain
    # t_f = 4 and count only in the paper's mode.
    f1 = _figure_1()
    [ours] = match_prob("PATTERN a, b+, c", f1, window=6, overlap="complete", threshold=0.1)
    [paper] = match_prob("PATTERN a, b+, c", f1, window=6, overlap="complete", threshold=0.1,
                         transducer_mode="paper")
    assert (ours.core_start, ours.core_end) == (paper.core_start, paper.core_end) == (2, 4)
    assert paper.probability == pytest.approx(paper_group_probability("ab+c", FIGURE_1, 1, 6, 4), abs=1e-12)
    assert (round(ours.probability, 12), round(paper.probability, 12)) == (0.72, 0.88)


def test_a_bad_transducer_mode_is_a_typed_error() -> None:
    with pytest.raises(ProbArgumentError, match=r"^CEP-PROB-011: transducer_mode must be one of 'window', "
                                                 r"'paper'; found 'exact'$"):
        match_prob("PATTERN a, b+, c", _figure_1(), window=6, transducer_mode="exact")


def test_the_modes_agree_without_threshold_when_spans_fit_the_window() -> None:
    # docs/prob.md, "Paper vs ours": with theta = 0 and every group span at most w, both
    # transducers count the same matches.
    rng = random.Random(7)
    compared = 0
    for case in range(150):
        text, _ = PATTERNS[case % len(PATTERNS)]
        maps = []
        for _ in range(rng.randint(3, 9)):
            values = rng.sample("abcd", rng.randint(1, 3))
            weights = [rng.random() + 0.05 for _ in values]
            maps.append({v: w / sum(weights) for v, w in zip(values, weights)})
        s = from_wide(list(range(len(maps))), maps)
        window = rng.randint(1, len(maps))
        for overlap in ("single", "complete"):
            ours = match_prob(text, s, window=window, overlap=overlap)
            paper = match_prob(text, s, window=window, overlap=overlap, transducer_mode="paper")
            spans = [(g.t_start, g.t_end, g.n_matches) for g in ours]
            assert spans == [(g.t_start, g.t_end, g.n_matches) for g in paper]
            for a, b in zip(ours, paper):
                if a.t_end - a.t_start + 1 <= window:
                    assert a.probability == pytest.approx(b.probability, abs=1e-12), (text, maps, window, overlap)
                    compared += 1
    assert compared > 100


def _rules_1_to_3(chain: list[tuple[str, bool]], world: str) -> bool:
    """The paper's transducer built by its rules 1-3 (section 5, lines 204-206) from the NFA of a
    chain of classes (``(value, plus)``), run over one world: does it end in the final state?"""
    final, first = len(chain), chain[0][0]
    state = 0
    for v in world:
        if state == final:  # rule 1: the final state keeps every input
            continue
        moves = {chain[state][0]: state + 1}  # the NFA's forward edge
        if state > 0 and chain[state - 1][1]:
            moves.setdefault(chain[state - 1][0], state)  # the Kleene self-loop
        moves.setdefault(first, 1)  # rule 2: the first class goes to state 1 where no edge has it
        state = moves.get(v, 0)  # rule 3: every other input goes back to state 0
    return state == final


def test_the_papers_construction_rules_lose_runs_when_the_first_class_recurs() -> None:
    # docs/prob.md, "Paper vs ours": for a b+ c the rules give Fig. 8 (equation (4) above); for
    # a a b the world "a a a b" contains "a a b" but rule 2 sends the third a back to state 1.
    assert _rules_1_to_3([("a", False), ("b", True), ("c", False)], "abbbc")
    assert not _rules_1_to_3([("a", False), ("a", False), ("b", False)], "aaab")
    s = from_wide([1, 2, 3, 4], [{"a": 1.0}, {"a": 1.0}, {"a": 1.0}, {"b": 1.0}])
    [group] = match_prob("PATTERN a, a, b", s, window=4, transducer_mode="paper")
    assert group.probability == pytest.approx(1.0, abs=1e-12)
    # The rules agree with the definition for a b+ c on every world of Fig. 1.
    for world in itertools.product(*[[v for v, p in d.items() if p > 0] for d in FIGURE_1]):
        text = "".join(world)
        assert _rules_1_to_3([("a", False), ("b", True), ("c", False)], text) == bool(re.search("ab+c", text))
