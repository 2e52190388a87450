"""P-ToPSS as published (cep/predict/paper.py, Chain.occupancy, definition='paper').

Fixed values come from the paper (Fig. 6: three machines with 10 states, merged into 6); the
rest is compared with brute force written from the paper's definitions.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cep.predict import (Chain, Events, PredictArgumentError, SequenceMachine, TransitionCounts,
                         build_chain, compile_subscription, predict)
from cep.predict.paper import (STAR, PaperMachine, build_state_machine, merge_graph, merge_prefix,
                               paper_chain, paper_tables)


def _machine(text: str) -> PaperMachine:
    sub = compile_subscription(text)
    return build_state_machine(sub.root, tuple(sub.primitives[i].cls for i in sub.root.steps))


# ---------------------------------------------------------------- Fig. 6 and BuildStateMachine


def test_build_state_machine_links_of_fig_4() -> None:
    # Fig. 4's shape F, F, S ; F, S ; F, S: self and secondary links at the ends of terms 1 and 2
    m = _machine("PATTERN F, F, S ; F, S ; F, S")
    assert m.k == 7 and m.loops == (False, False, False, True, False, True, False, False)
    loops = [(s, t, lab) for s, t, lab in m.edges() if s == t]
    assert loops == [(3, 3, "S"), (3, 3, STAR), (5, 5, "S"), (5, 5, STAR)]
    assert len(m.edges()) == 7 + 2 * 2          # k primary links, two more per ';' (section 4.1)


def test_fig_6_merges_ten_states_into_six() -> None:
    """Fig. 6: a;b;c, a;b;d and a. M1, M2 are shared by the first two; M5 (after `a` in cs3) is
    not merged with M1, whose `*` edge is an extra incoming transition."""
    ms = [_machine("PATTERN a ; b ; c"), _machine("PATTERN a ; b ; d"), _machine("PATTERN a")]
    r = merge_prefix(ms)
    assert (r.unmerged, r.merged) == (10, 6)
    cls = r.classes.tolist()
    cs1, cs2, cs3 = cls[0:4], cls[4:8], cls[8:10]
    assert cs1[0] == cs2[0] == cs3[0]                # initial states: no incoming transitions
    assert cs1[1] == cs2[1] and cs1[2] == cs2[2]     # M1 (after a), M2 (after a;b)
    assert cs1[3] != cs2[3]                          # after c vs after d
    assert cs3[1] != cs1[1]                          # M5 != M1
    assert r.commonality == pytest.approx(0.4)


def test_prefix_merging_keeps_fig_6_apart_under_future_merging() -> None:
    # the same three subscriptions under our (Moore) merging: 10 states stay 10 (docs/predict.md)
    from cep.predict.events import Events
    from cep.predict.many import run_many
    from cep.predict.merge import merge_tables

    ev = Events.from_columns(ts=list(range(6)), types=list("abcdab"))
    r = run_many(["PATTERN a ; b ; c", "PATTERN a ; b ; d", "PATTERN a"], ev)
    assert r.flat.n_states == 10 and merge_tables(r.flat).merged == 10


def _equivalent_oracle(n: int, edges: list[tuple[int, int, int]]) -> list[list[bool]]:
    """The paper's definition read literally, as the greatest fixed point over pairs: N1 ~ N2
    unless their incoming counts differ, or an incoming (source, label) of one has no incoming
    (source', label) of the other with source ~ source' (either way round)."""
    inc = [[(s, lab) for s, t, lab in edges if t == v] for v in range(n)]
    eq = [[len(inc[p]) == len(inc[q]) for q in range(n)] for p in range(n)]
    changed = True
    while changed:
        changed = False
        for p in range(n):
            for q in range(n):
                if not eq[p][q]:
                    continue
                ok = all(any(l2 == l1 and eq[s1][s2] for s2, l2 in inc[q]) for s1, l1 in inc[p]) and \
                    all(any(l2 == l1 and eq[s2][s1] for s2, l2 in inc[p]) for s1, l1 in inc[q])
                if not ok:
                    eq[p][q] = False
                    changed = True
    return eq


@st.composite
def graphs(draw: st.DrawFn) -> tuple[int, list[tuple[int, int, int]]]:
    n = draw(st.integers(1, 7))
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.integers(0, 2)),
                          max_size=12))
    return n, edges


@settings(max_examples=200, deadline=None)
@given(graphs())
def test_merge_graph_equals_the_definition(graph: tuple[int, list[tuple[int, int, int]]]) -> None:
    n, edges = graph
    arr = np.array(edges, dtype=np.int64).reshape(-1, 3)
    classes, _ = merge_graph(n, arr[:, 0], arr[:, 1], arr[:, 2])
    eq = _equivalent_oracle(n, edges)
    for p in range(n):
        for q in range(n):
            assert (classes[p] == classes[q]) == eq[p][q]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from("abc"), min_size=1, max_size=4),
                          st.lists(st.booleans(), min_size=3, max_size=3)), min_size=1, max_size=5))
def test_prefix_merging_is_the_trie_of_labels_and_links(subs: list[tuple[list[str], list[bool]]]) -> None:
    """On BuildStateMachine graphs the paper's rule merges exactly the states with the same
    prefix of (label, has self links)."""
    machines = []
    paths = []
    for labels, followed in subs:
        k = len(labels)
        loops = (False, *followed[:k - 1], False)
        machines.append(PaperMachine(tuple(labels), loops))
        paths.extend(tuple(zip(labels[:j], loops[1:j + 1])) for j in range(k + 1))
    r = merge_prefix(machines)
    assert r.merged == len(set(paths))
    for a, b in itertools.combinations(range(len(paths)), 2):
        assert (r.classes[a] == r.classes[b]) == (paths[a] == paths[b])


# ---------------------------------------------------------------- the paper's chain


def _run_paper_rule(m: PaperMachine, events: list[str]) -> list[int]:
    """One instance of the paper's machine, event by event (module docstring of paper.py)."""
    state, out = 0, []
    for e in events:
        if state < m.k and e == m.labels[state]:
            state += 1
        elif 0 < state < m.k and m.loops[state]:
            pass
        else:
            state = 1 if e == m.labels[0] else 0
        out.append(state)
    return out


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from("abx"), min_size=1, max_size=4), st.lists(st.booleans(), min_size=3, max_size=3),
       st.lists(st.sampled_from("abx"), max_size=20))
def test_paper_tables_follow_the_rule(labels: list[str], followed: list[bool], events: list[str]) -> None:
    m = PaperMachine(tuple("abx".index(c) for c in labels), (False, *followed[:len(labels) - 1], False))
    nxt, acc, off = paper_tables([m], np.eye(3, dtype=bool))
    state, got = 0, []
    for e in events:
        state = int(nxt[state, "abx".index(e)])
        got.append(state)
    named = PaperMachine(tuple(labels), m.loops)
    assert got == _run_paper_rule(named, events)
    assert acc.tolist() == [False] * m.k + [True] and off.tolist() == [0, m.k + 1]


def test_paper_chain_divides_by_arrivals() -> None:
    # a, b over the stream a b x a a b: states 1 2 0 1 1 2 (see _run_paper_rule)
    m = PaperMachine((0, 1), (False, False, False))
    nxt, acc, _ = paper_tables([m], np.eye(3, dtype=bool))
    states = [0] + _run_paper_rule(PaperMachine(("a", "b"), m.loops), list("abxaab"))
    syms = ["abx".index(c) for c in "abxaab"]
    pairs = np.zeros((3, 3), dtype=np.int64)
    for s, g in zip(states[:-1], syms):
        pairs[s, g] += 1
    P = paper_chain(nxt, acc, pairs, np.bincount(syms, minlength=3)).matrix()
    # transitions: 0->1, 1->2, 2->0, 0->1, 1->1, 1->2; arrivals at 0: once (+ the first placement:
    # max(1, 2 departures)), at 1: three times, at 2: twice (left once: the stream ends there)
    assert P.tolist() == [[0.0, 1.0, 0.0], [0.0, 1 / 3, 2 / 3], [1 / 2, 0.0, 0.0]]


# ---------------------------------------------------------------- alpha(n), beta(n), line 387


@st.composite
def chains(draw: st.DrawFn) -> Chain:
    S = draw(st.integers(2, 4))
    w = draw(st.lists(st.lists(st.integers(0, 3), min_size=S, max_size=S), min_size=S, max_size=S))
    acc = draw(st.lists(st.booleans(), min_size=S, max_size=S))
    src, dst, p = [], [], []
    for i, row in enumerate(w):
        total = sum(row) + draw(st.integers(0, 2))      # rows need not sum to 1 (arrivals)
        for j, x in enumerate(row):
            if x and total:
                src.append(i)
                dst.append(j)
                p.append(x / total)
    return Chain(np.arange(S, dtype=np.int64), np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64),
                 np.array(p, dtype=np.float64), np.array(acc))


@settings(max_examples=100, deadline=None)
@given(chains(), st.integers(1, 4))
def test_occupancy_equals_path_sums(chain: Chain, n: int) -> None:
    """alpha_i(n) = P^(n)[i, F]: the sum over every path of n steps from i that ends in F of the
    product of its probabilities; beta_i(n) = sum over k <= n of alpha_i(k)."""
    alpha, beta = chain.occupancy(n)
    P = chain.matrix()
    S = chain.n_states
    for i in range(S):
        want = []
        for m in range(1, n + 1):
            total = 0.0
            for path in itertools.product(range(S), repeat=m):
                if chain.accepting[path[-1]]:
                    prob, cur = 1.0, i
                    for nxt in path:
                        prob *= P[cur, nxt]
                        cur = nxt
                    total += prob
            want.append(total)
        assert alpha[1:, i].tolist() == pytest.approx(want, abs=1e-12)
        assert beta[n, i] == pytest.approx(sum(want), abs=1e-12)


def _brute_chain(text: str, types: list[str], normalise: str) -> tuple[np.ndarray, list[int], int]:
    """Run the machine event by event, count transitions, divide by departures or arrivals."""
    sub = compile_subscription(text)
    m = SequenceMachine.from_sequence(sub.root)
    prims = [p.cls for p in sub.primitives]
    masks = [m.start]
    for t in types:
        sig = sum(1 << j for j, a in enumerate(sub.root.steps) if prims[a] == t)
        masks.append(m.step(masks[-1], sig))
    states = sorted(set(masks))
    S = len(states)
    n = np.zeros((S, S))
    for a, b in zip(masks[:-1], masks[1:]):
        n[states.index(a), states.index(b)] += 1
    dep, arr = n.sum(axis=1), n.sum(axis=0)
    P = np.zeros((S, S))
    for i in range(S):
        d = max(arr[i], dep[i]) if normalise == "arrivals" else dep[i]
        if d > 0:
            P[i] = n[i] / d
    acc = [i for i, s in enumerate(states) if s & m.accept_bit]
    return P, acc, states.index(masks[-1])


@pytest.mark.parametrize("types", ["ABXABAABXA", "AABABBXAB", "XAAXBABAXB"])
def test_predict_paper_definition_equals_brute_force(types: str) -> None:
    text = "PATTERN A, B"
    ev = Events.from_columns(ts=list(range(len(types))), keys=["k"] * len(types), types=list(types))
    for n in (1, 2, 4):
        P, acc, cur = _brute_chain(text, list(types), "arrivals")
        alphas = [np.linalg.matrix_power(P, m)[cur, acc].sum() for m in range(1, n + 1)]
        r = predict(text, ev, lookahead=n, definition="paper")
        assert r.rows["probability"][0] == pytest.approx(sum(alphas), abs=1e-12)
        assert r.rows["p_exact"][0] == pytest.approx(alphas[-1], abs=1e-12)


def test_build_chain_arrivals_equals_brute_force() -> None:
    text, types = "PATTERN A ; B", list("ABXABAABXAB")
    sub = compile_subscription(text)
    m = SequenceMachine.from_sequence(sub.root)
    ev = Events.from_columns(ts=list(range(len(types))), keys=["k"] * len(types), types=types)
    model = predict(text, ev, lookahead=1).trained.leaves[0]
    chain = build_chain(m, model.counts, model.freq_sig, model.freq_count, normalise="arrivals")
    P, _, _ = _brute_chain(text, types, "arrivals")
    order = np.argsort(chain.masks)
    assert np.allclose(chain.matrix()[np.ix_(order, order)], P)


def test_paper_or_is_the_sum_and_is_not_clipped() -> None:
    rng = np.random.default_rng(3)
    types = list(rng.choice(list("ABCX"), 200))
    ev = Events.from_columns(ts=list(range(200)), keys=["k"] * 200, types=types)
    px = predict("PATTERN A ; B", ev, lookahead=6, definition="paper").rows["probability"][0]
    py = predict("PATTERN C ; A", ev, lookahead=6, definition="paper").rows["probability"][0]
    both = predict("PATTERN (A ; B) | (C ; A)", ev, lookahead=6, definition="paper", combine="sum")
    assert both.rows["probability"][0] == pytest.approx(px + py, abs=1e-12)
    assert px + py > 1.0                                  # beta(n) counts visits: not a probability


def test_bad_definition_is_cep_pred_011() -> None:
    ev = Events.from_columns(ts=[0, 1], keys=["k", "k"], types=["A", "B"])
    with pytest.raises(PredictArgumentError) as err:
        predict("PATTERN A, B", ev, lookahead=1, definition="occupancy")
    assert err.value.code == "CEP-PRED-011" and "definition" in str(err.value)
    assert "first_passage, paper" in str(err.value)


def test_transition_counts_unchanged_by_definition() -> None:
    ev = Events.from_columns(ts=list(range(6)), keys=["k"] * 6, types=list("ABABXB"))
    a = predict("PATTERN A, B", ev, lookahead=2).trained
    b = predict("PATTERN A, B", ev, lookahead=2, definition="paper").trained
    assert a == b and isinstance(a.leaves[0].counts, TransitionCounts)


# ---------------------------------------------------------------- the section-6 workload


@pytest.mark.parametrize("subs,pubs", [("uniform_cs", "uniform_pub"), ("gaussian_cs", "gaussian_pub")])
def test_paper_workload_plants_are_in_the_stream(subs: str, pubs: str) -> None:
    from cep.datasets.predict_paper_workload import paper_workload

    w = paper_workload(30, sub_distribution=subs, pub_distribution=pubs, seed=5)
    assert w.values.shape == (30, 10) and (w.followed.sum(axis=1) == 2).all()
    # 20 partial and 20 full plants per subscription, each where it says, not overlapping
    kinds = np.zeros((30, 2), dtype=np.int64)
    np.add.at(kinds, (w.plants[:, 1], w.plants[:, 3]), 1)
    assert (kinds == 20).all()
    covered = np.zeros(len(w.items), dtype=bool)
    for pos, s, n, full in w.plants.tolist():
        assert w.items[pos:pos + n].tolist() == w.values[s, :n].tolist()
        assert (n == 10) if full else (1 <= n <= 9)
        assert not covered[pos:pos + n].any()
        covered[pos:pos + n] = True
    # everything else is irrelevant: outside the pool (values 50..99), so no primitive matches it
    assert (w.items[~covered] >= 50).all() and (w.items[~covered] < 100).all()
    assert (w.items[covered] < 50).all() and (~covered).sum() > 0


def test_paper_workload_full_plants_match_their_subscription() -> None:
    from cep.datasets.predict_paper_workload import paper_workload
    from cep.predict.many import run_many

    w = paper_workload(8, seed=2)
    r = run_many(list(w.subscriptions), w.events)
    # each subscription matches at least at its 20 full plants (other plants may add matches)
    assert (r.matches >= 20).all()
    again = paper_workload(8, seed=2)
    assert again.subscriptions == w.subscriptions and np.array_equal(again.items, w.items)


def test_merge_counts_names_both_rules() -> None:
    from cep.predict.many import merge_counts

    ev = Events.from_columns(ts=list(range(6)), types=list("abcdab"))
    subs = ["PATTERN a ; b ; c", "PATTERN a ; b ; d", "PATTERN a"]
    assert merge_counts(subs, ev) == (10, 10, 0.0)                       # ours (default)
    assert merge_counts(subs, ev, rule="prefix")[:2] == (10, 6)          # the paper's Fig. 6
    with pytest.raises(PredictArgumentError) as err:
        merge_counts(subs, ev, rule="moore")
    assert err.value.code == "CEP-PRED-011" and "future, prefix" in str(err.value)
