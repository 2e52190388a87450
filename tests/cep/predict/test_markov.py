"""Markov chains: rows sum to 1, probabilities in [0, 1], first passage == path enumeration."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cep.oracles.predict_oracle import hit_probability
from cep.predict import (Chain, Events, InstanceState, Model, ModelFormatError, SequenceMachine,
                         TransitionCounts, build_chain, compile_subscription, predict)


@st.composite
def chains(draw: st.DrawFn) -> Chain:
    S = draw(st.integers(2, 4))
    weights = draw(st.lists(st.lists(st.integers(0, 3), min_size=S, max_size=S), min_size=S, max_size=S))
    acc = draw(st.lists(st.booleans(), min_size=S, max_size=S))
    src, dst, p = [], [], []
    for i, row in enumerate(weights):
        total = sum(row)
        row = row if total else [1 if j == i else 0 for j in range(S)]
        total = sum(row)
        for j, w in enumerate(row):
            if w:
                src.append(i)
                dst.append(j)
                p.append(w / total)
    return Chain(np.arange(S, dtype=np.int64), np.array(src), np.array(dst), np.array(p), np.array(acc))


@settings(max_examples=100, deadline=None)
@given(chains(), st.integers(1, 4))
def test_first_passage_equals_path_enumeration(chain: Chain, n: int) -> None:
    alpha, beta = chain.first_passage(n)
    P = chain.matrix()
    assert np.allclose(P.sum(axis=1), 1.0)
    for s in range(chain.n_states):
        assert beta[n, s] == pytest.approx(hit_probability(P, chain.accepting.tolist(), s, n), abs=1e-12)
        assert alpha[1:, s].sum() == pytest.approx(beta[n, s], abs=1e-12)
    assert ((beta >= 0) & (beta <= 1)).all()
    assert (np.diff(beta, axis=0) >= -1e-15).all()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from("ABX"), max_size=25), st.integers(1, 3), st.sampled_from([0.0, 0.5]))
def test_predict_equals_direct_computation(types: list[str], n: int, smoothing: float) -> None:
    text = "PATTERN A, B ; A"
    ev = Events.from_columns(ts=list(range(len(types))), keys=["k"] * len(types), types=types)
    r = predict(text, ev, lookahead=n, output="events", smoothing=smoothing)
    if not types:
        assert r.rows["probability"] == []
        return
    sub = compile_subscription(text)
    m = SequenceMachine.from_sequence(sub.leaves[0])
    leaf = r.model.leaves[0]
    masks = np.unique(np.r_[[m.start]])
    chain = build_chain(m, leaf.counts, leaf.freq_sig, leaf.freq_count, masks, smoothing=smoothing)
    P = chain.matrix()
    assert np.allclose(P.sum(axis=1), 1.0)
    # The state after each event, recomputed by stepping the machine over signatures.
    sig_of = {"A": 1, "B": 2, "X": 0}
    state = m.start
    for i, t in enumerate(types):
        state = m.step(state, sig_of[t])
        s = int(chain.index_of(np.array([state]))[0])
        assert chain.masks[s] == state
        assert r.rows["probability"][i] == pytest.approx(
            hit_probability(P, chain.accepting.tolist(), s, n), abs=1e-12)
        assert 0.0 <= r.rows["probability"][i] <= 1.0


def test_transition_counts_are_the_observed_pairs() -> None:
    ev = Events.from_columns(ts=list(range(6)), keys=["k"] * 6, types=list("ABXABA"))
    r = predict("PATTERN A, B", ev, lookahead=1)
    c = r.trained.leaves[0].counts
    pairs = {(f, s, t): n for f, s, t, n in zip(*(col.tolist() for col in c.columns()))}
    # states: 1 = start, 3 = after A, 5 = A B matched; signatures: 1 = A, 2 = B, 0 = X
    assert pairs == {(1, 1, 3): 2, (3, 2, 5): 2, (5, 0, 1): 1, (5, 1, 3): 1}
    assert c.total == 6


def test_chain_rows_for_unseen_states_use_symbol_frequencies() -> None:
    sub = compile_subscription("PATTERN A, B")
    m = SequenceMachine.from_sequence(sub.leaves[0])
    chain = build_chain(m, TransitionCounts.empty(), np.array([0, 1, 2]), np.array([2, 1, 1]))
    P = chain.matrix()
    start = int(chain.index_of(np.array([1]))[0])
    after_a = int(chain.index_of(np.array([3]))[0])
    assert P[start, after_a] == pytest.approx(0.25)
    assert P[start, start] == pytest.approx(0.75)
    assert np.allclose(P.sum(axis=1), 1.0)


def test_model_and_state_blobs_round_trip_and_refuse_corruption() -> None:
    ev = Events.from_columns(ts=[1, 2, 3, 4], keys=["a", "a", "b", "b"], types=list("ABAA"),
                             attrs={})
    r = predict("PATTERN A, B", ev, lookahead=2)
    blob = r.trained.to_bytes()
    assert Model.from_bytes(blob) == r.trained
    assert Model.from_bytes(blob, "PATTERN A, B") == r.trained
    with pytest.raises(ModelFormatError, match="trained for"):
        Model.from_bytes(blob, "PATTERN A ; B")
    flipped = bytearray(blob)
    flipped[-3] ^= 0x01
    with pytest.raises(ModelFormatError, match="checksum"):
        Model.from_bytes(bytes(flipped))
    versioned = bytearray(blob)
    versioned[7] = 9
    with pytest.raises(ModelFormatError, match="version"):
        Model.from_bytes(bytes(versioned))
    for state in r.states.values():
        assert InstanceState.from_bytes(state.to_bytes()) == state
    with pytest.raises(ModelFormatError, match="bad magic"):
        InstanceState.from_bytes(blob)
    with pytest.raises(ModelFormatError, match="trained for"):
        predict("PATTERN A ; B", ev, lookahead=2, model=r.trained)


def test_index_of_refuses_masks_that_are_not_states() -> None:
    c = Chain(np.array([1, 3]), np.array([0, 1]), np.array([1, 0]), np.array([1.0, 1.0]),
              np.array([False, True]))
    assert c.index_of(np.array([3, 1])).tolist() == [1, 0]
    with pytest.raises(ValueError, match=r"\[2, 99\] are not states"):
        c.index_of(np.array([2, 99]))


def test_start_states_must_fit_and_events_must_not_go_back() -> None:
    from cep.predict import PredictEventsError

    ev = Events.from_columns(ts=[1, 2], keys=["k", "k"], types=["A", "B"])
    states = predict("PATTERN A, B", ev, lookahead=1).states
    with pytest.raises(ModelFormatError, match="does not fit"):
        predict("PATTERN (A, B) | C", ev, lookahead=1, start=states)
    with pytest.raises(PredictEventsError, match="older than the instance's last event at 2"):
        predict("PATTERN A, B", Events.from_columns(ts=[0], keys=["k"], types=["A"]), lookahead=1,
                start=states)
    again = predict("PATTERN A, B", Events.from_columns(ts=[2], keys=["k"], types=["A"]), lookahead=1,
                    start=states)
    assert again.states[("k", ())].events == 3
