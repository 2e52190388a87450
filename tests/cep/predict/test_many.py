"""run_many against one subscription at a time (run_leaf, predict) and pooled chains against unmerged ones."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cep.predict import Events, PredictArgumentError, SequenceMachine, compile_subscription, predict, run_leaf
from cep.predict.events import signatures
from cep.predict.many import alphabet, beta_table, compile_many, pair_chain, run_many, walk
from cep.predict.merge import merge_tables

# A and P are the same condition under two class names (one global primitive); A and B overlap.
DEFS = {"A": "v <= 1", "B": "v >= 1", "C": "v = 3", "P": "v <= 1"}


@st.composite
def subscriptions(draw: st.DrawFn) -> str:
    k = draw(st.integers(1, 4))
    classes = draw(st.lists(st.sampled_from("ABCP"), min_size=k, max_size=k))
    links = draw(st.lists(st.sampled_from([",", ";"]), min_size=k - 1, max_size=k - 1))
    body = classes[0] + "".join(f"{link} {c}" if link == "," else f" ; {c}" for link, c in zip(links, classes[1:]))
    used = [c for c in DEFS if c in classes]
    return f"PATTERN {body} DEFINE " + ", ".join(f"{c} AS {DEFS[c]}" for c in used)


workloads = st.lists(subscriptions(), min_size=1, max_size=5)
streams = st.lists(st.tuples(st.integers(0, 3), st.sampled_from("xy")), max_size=14)


def _events(stream: list[tuple[int, str]]) -> Events:
    return Events.from_columns(ts=np.arange(len(stream), dtype=np.int64), keys=[k for _, k in stream],
                               attrs={"v": np.array([v for v, _ in stream], dtype=np.int64)})


def _one_at_a_time(text: str, ev: Events, start_masks: np.ndarray | None = None):
    sub = compile_subscription(text)
    leaf = sub.leaves[0]
    sym, sigs = signatures(sub, ev)
    return run_leaf(SequenceMachine.from_sequence(leaf), leaf, sym, sigs, ev.ts, ev.key_starts, start_masks)


@settings(max_examples=120, deadline=None)
@given(workloads, streams, st.sampled_from([None, 1, 3]))
def test_run_many_equals_run_leaf_per_subscription(texts: list[str], stream: list, chunk: int | None) -> None:
    ev = _events(stream)
    r = run_many(texts, ev, chunk=chunk)
    counts = r.transition_counts()
    for j, text in enumerate(texts):
        one = _one_at_a_time(text, ev)
        assert counts[j] == one.counts, text
        assert r.matches[j] == int(one.accepted.sum())
        if len(ev):
            assert r.end_masks[:, j].tolist() == one.end_masks.tolist()
    # Without pair counts, the matches come from the states themselves.
    assert run_many(texts, ev, count=False, chunk=chunk).matches.tolist() == r.matches.tolist()


@settings(max_examples=60, deadline=None)
@given(workloads, streams, st.integers(1, 4), st.sampled_from([0.0, 0.5]))
def test_run_many_probabilities_and_models_equal_predict(texts: list[str], stream: list, n: int,
                                                         smoothing: float) -> None:
    ev = _events(stream)
    if not len(ev):
        return
    r = run_many(texts, ev, lookahead=n, smoothing=smoothing)
    models = r.models()
    for j, text in enumerate(texts):
        p = predict(text, ev, lookahead=n, smoothing=smoothing)
        assert models[j] == p.trained
        assert r.probability[:, j].tolist() == pytest.approx(p.rows["probability"], abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(workloads, streams, st.integers(0, 14))
def test_two_batches_equal_one_pass(texts: list[str], stream: list, cut: int) -> None:
    # One instance, so that the second batch continues exactly where the first one stopped.
    stream = [(v, "x") for v, _ in stream]
    ev = _events(stream)
    work = compile_many(texts)
    alph = alphabet(work, ev)
    whole = run_many(work, alph.symbol, sigs=alph.sigs)
    cut = min(cut, len(stream))
    first = run_many(work, alph.symbol[:cut], sigs=alph.sigs)
    second = run_many(work, alph.symbol[cut:], sigs=alph.sigs, start_masks=first.end_masks)
    assert second.end_masks.tolist() == whole.end_masks.tolist()
    assert (first.matches + second.matches).tolist() == whole.matches.tolist()
    for a, b, c in zip(first.transition_counts(), second.transition_counts(), whole.transition_counts()):
        assert a.merge(b) == c
    for j, text in enumerate(texts):
        part = _one_at_a_time(text, _events(stream[cut:]), first.end_masks[:, j]) if cut < len(stream) else None
        if part is not None:
            assert second.transition_counts()[j] == part.counts


@settings(max_examples=80, deadline=None)
@given(workloads, streams, st.integers(1, 5))
def test_pooled_chain_is_the_lumped_unmerged_chain(texts: list[str], stream: list, n: int) -> None:
    ev = _events(stream)
    r = run_many(texts, ev)
    report = merge_tables(r.flat)
    _, merged = beta_table(r.flat, r.pairs, r.symbol_count, n, merged=report)
    # Every flat state trained on its class's pooled counts: the same first passage, computed
    # on the unmerged table (a wrong class would send some state elsewhere).
    pooled = np.zeros((report.merged, r.flat.n_symbols), dtype=np.int64)
    np.add.at(pooled, report.classes, r.pairs)
    lumped = pair_chain(r.flat.next, r.flat.accepting, pooled[report.classes], r.symbol_count)
    assert np.allclose(lumped.first_passage(n)[1], merged, atol=1e-12)
    # Rows from symbol frequencies only (an i.i.d. event model): merging changes nothing.
    none = np.zeros_like(r.pairs)
    _, beta_u = beta_table(r.flat, none, r.symbol_count, n)
    _, beta_m = beta_table(r.flat, none, r.symbol_count, n, merged=report)
    assert np.allclose(beta_u, beta_m, atol=1e-12)
    assert ((merged >= 0) & (merged <= 1)).all()


def test_identical_subscriptions_pool_without_changing_predictions() -> None:
    text = "PATTERN A, B ; C DEFINE A AS v <= 1, B AS v >= 1, C AS v = 3"
    rng = np.random.default_rng(3)
    ev = Events.from_columns(ts=np.arange(300), attrs={"v": rng.integers(0, 4, 300)})
    r = run_many([text, text, text], ev, lookahead=4)
    report = merge_tables(r.flat)
    assert report.merged * 3 == report.unmerged  # the copies' states, and nothing else, merge
    merged = run_many([text, text, text], ev, lookahead=4, merged=True)
    assert np.allclose(merged.beta, r.beta, atol=1e-12)
    assert np.allclose(merged.probability, r.probability, atol=1e-12)


def test_walk_counts_pairs_by_hand() -> None:
    # Two machines over symbols 0, 1: machine 0 remembers the last symbol, machine 1 counts 1s mod 2.
    nxt = np.array([[0, 1], [0, 1], [2, 3], [3, 2]])
    end, pairs = walk(nxt, np.array([1, 0, 1, 1]), np.array([0]), np.array([[0, 2]]), chunk=2)
    # before each event: machine 0 in 0, 1, 0, 1; machine 1 in 2, 3, 3, 2
    assert end.tolist() == [[1, 3]]
    assert pairs.tolist() == [[0, 2], [1, 1], [0, 2], [1, 1]]


def test_primitives_are_evaluated_once_across_subscriptions() -> None:
    work = compile_many(["PATTERN A, B DEFINE A AS v <= 1, B AS v >= 1",
                         "PATTERN P ; Q DEFINE P AS v <= 1, Q AS v = 3", "PATTERN X, A"])
    assert [p.text for p in work.primitives] == ["v <= 1", "v >= 1", "v = 3", "type = 'X'", "type = 'A'"]
    assert work.local == ((0, 1), (0, 2), (3, 4))
    ev = Events.from_columns(ts=[0, 1, 2], types=["A", "X", "A"], attrs={"v": [1, 3, 0]})
    alph = alphabet(work, ev)
    # symbols in increasing order of their bits: {v>=1, v=3, type X} (2 + 4 + 8),
    # {v<=1, type A} (1 + 16), {v<=1, v>=1, type A} (1 + 2 + 16)
    assert alph.truth.astype(int).tolist() == [[0, 1, 1, 1, 0], [1, 0, 0, 0, 1], [1, 1, 0, 0, 1]]
    assert alph.symbol.tolist() == [2, 0, 1]
    # each subscription's own bits: A/P is its bit 0, B/Q/A its bit 1
    assert alph.sigs.tolist() == [[2, 1, 3], [2, 1, 1], [1, 2, 2]]


@pytest.mark.parametrize("text, what", [
    ("PATTERN (A ; B) | C", "'&' and '|'"),
    ("PATTERN A ; B @(t(B) - t(A) < 5)", "time conditions"),
    ("PATTERN A ; B DEFINE A AS ip = $x, B AS ip = $x", "join variables"),
])
def test_run_many_refuses_what_it_does_not_run(text: str, what: str) -> None:
    with pytest.raises(PredictArgumentError, match=f"subscription 1 .*{what}") as info:
        compile_many(["PATTERN A", text])
    assert info.value.code == "CEP-PRED-011"


def test_run_many_argument_errors() -> None:
    m = SequenceMachine.from_sequence(compile_subscription("PATTERN A, B").leaves[0])
    with pytest.raises(PredictArgumentError, match="sigs: required"):
        run_many([m], np.array([0, 1]))
    with pytest.raises(PredictArgumentError, match=r"symbols must be in \[0, 3\)"):
        run_many([m], np.array([0, 3]), sigs=np.array([0, 1, 2]))
    with pytest.raises(PredictArgumentError, match="shape"):
        run_many([m], np.array([0, 1]), sigs=np.zeros((2, 3), dtype=np.int64))
    with pytest.raises(PredictArgumentError, match="chunk"):
        run_many([m], np.array([0, 1]), sigs=np.array([0, 1, 2]), chunk=0)
    with pytest.raises(PredictArgumentError, match="count=True"):
        run_many([m], np.array([0, 1]), sigs=np.array([0, 1, 2]), lookahead=2, count=False)
    r = run_many([m, m], np.array([1, 2, 1, 2]), sigs=np.array([0, 1, 2]))
    assert r.matches.tolist() == [2, 2]
    with pytest.raises(PredictArgumentError, match="models need subscriptions"):
        r.models()
