"""The synthetic P-ToPSS workload and the precision/recall/MCC scoring, against direct computation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cep.oracles.predict_oracle import match_ends
from cep.predict import PredictArgumentError, compile_subscription
from cep.predict.evaluate import NO_MATCH, confusion, next_distance, state_histogram
from cep.predict.many import alphabet, compile_many, run_many
from cep.datasets.predict_workload import synthetic_workload


def test_workload_shape_and_determinism() -> None:
    w = synthetic_workload(200, 5000, seed=11)
    assert len(w.subscriptions) == 200 and w.values.shape == (200, 10) and w.followed.shape == (200, 9)
    assert (w.followed.sum(axis=1) == 2).all()
    assert w.values.min() >= 0 and w.values.max() <= 49 and w.items.min() >= 0 and w.items.max() <= 49
    again = synthetic_workload(200, 5000, seed=11)
    assert again.subscriptions == w.subscriptions and np.array_equal(again.items, w.items)
    assert synthetic_workload(200, 5000, seed=12).subscriptions != w.subscriptions
    for text, values, links in zip(w.subscriptions[:20], w.values, w.followed):
        sub = compile_subscription(text)
        leaf = sub.leaves[0]
        assert [int(sub.primitives[p].text.split("= ")[1]) for p in leaf.steps] == values.tolist()
        assert [link == "followed" for link in leaf.links] == links.tolist()
    # uniform: every value about 1/50 of the events (5000 events: 100 expected, sd about 10)
    counts = np.bincount(w.items, minlength=50)
    assert counts.min() > 50 and counts.max() < 150


def test_gaussian_is_centred_and_clipped() -> None:
    w = synthetic_workload(100, 20000, distribution="gaussian", sigma=5.0, seed=3)
    assert abs(w.items.mean() - 24.5) < 0.3 and abs(w.items.std() - 5.0) < 0.3
    assert w.values.min() >= 0 and w.values.max() <= 49
    wide = synthetic_workload(10, 20000, distribution="gaussian", sigma=100.0, seed=3)
    assert wide.items.min() == 0 and wide.items.max() == 49       # clipped, not wrapped
    assert synthetic_workload(10, 10, distribution="gaussian").sigma == 5.0


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(["uniform", "gaussian"]))
def test_matches_equal_the_oracle(seed: int, distribution: str) -> None:
    w = synthetic_workload(5, 18, length=4, pool=3, followed=1, distribution=distribution, sigma=0.8, seed=seed)
    work = compile_many(w.subscriptions)
    seen: list[np.ndarray] = []
    r = run_many(work, w.events, chunk=5,
                 on_chunk=lambda _, states: seen.append(states.copy()))
    ends = r.flat.accepting[np.concatenate(seen)]
    for j, text in enumerate(w.subscriptions):
        sub = compile_subscription(text)
        truth = [[bool(item == int(p.text.split("= ")[1])) for p in sub.primitives] for item in w.items.tolist()]
        oracle = match_ends(sub.leaves[0], truth, list(range(len(truth))))
        assert ends[:, j].tolist() == oracle
        assert r.matches[j] == sum(oracle)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_confusion_equals_per_event_scoring(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 25))
    m = data.draw(st.integers(1, 3))
    n_states = data.draw(st.integers(1, 5))
    n_max = data.draw(st.integers(1, 6))
    ends = np.array(data.draw(st.lists(st.lists(st.booleans(), min_size=m, max_size=m), min_size=n, max_size=n)))
    states = np.array(data.draw(st.lists(st.lists(st.integers(0, n_states - 1), min_size=m, max_size=m),
                                         min_size=n, max_size=n)))
    beta = np.sort(np.array(data.draw(st.lists(st.lists(st.sampled_from([0.0, 0.2, 0.5, 0.7, 1.0]),
                                                        min_size=n_states, max_size=n_states),
                                               min_size=n_max + 1, max_size=n_max + 1))), axis=0)
    thresholds = [0.2, 0.5, 0.9]
    dist = next_distance(ends)
    for t in range(n):
        for j in range(m):
            later = [u for u in range(t + 1, n) if ends[u, j]]
            assert dist[t, j] == (later[0] - t if later else NO_MATCH)
    c = confusion(state_histogram(states, dist, n_states, n_max), beta, thresholds)
    for k in range(1, n_max + 1):
        for i, th in enumerate(thresholds):
            tp = fp = fn = tn = 0
            for t in range(n):
                for j in range(m):
                    truth = any(ends[u, j] for u in range(t + 1, min(n, t + k + 1)))
                    pred = beta[k, states[t, j]] >= th
                    tp += truth and pred
                    fp += (not truth) and pred
                    fn += truth and not pred
                    tn += (not truth) and not pred
            assert (c.tp[k - 1, i], c.fp[k - 1, i], c.fn[k - 1, i], c.tn[k - 1, i]) == (tp, fp, fn, tn)
            denom = math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
            mcc = c.mcc()[k - 1, i]
            assert (math.isnan(mcc) if denom == 0 else mcc == pytest.approx((tp * tn - fp * fn) / denom))


@pytest.mark.parametrize("kwargs, what", [
    ({"length": 3, "followed": 3}, "followed"),
    ({"distribution": "zipf"}, "distribution"),
    ({"distribution": "gaussian", "sigma": 0.0}, "sigma"),
    ({"pool": 0}, "pool"),
    ({"n_events": -1}, "n_events"),
])
def test_bad_parameters(kwargs: dict, what: str) -> None:
    args = {"n_subscriptions": 2, "n_events": 10, **kwargs}
    with pytest.raises(PredictArgumentError, match=f"argument {what}"):
        synthetic_workload(**args)


def test_alphabet_of_the_workload_is_the_pool() -> None:
    w = synthetic_workload(30, 3000, seed=5)
    work = compile_many(w.subscriptions)
    # one primitive per distinct value used, events of unused values are the empty symbol
    assert len(work.primitives) == len(np.unique(w.values))
    alph = alphabet(work, w.events)
    assert alph.n_symbols == len(np.unique(w.items[np.isin(w.items, w.values)])) + \
        int((~np.isin(w.items, w.values)).any())
