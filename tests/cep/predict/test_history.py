"""The full history model against direct counting and path enumeration on small models."""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cep.predict import PredictArgumentError
from cep.predict.history import history_states, temperature_classes, train_history


def _contexts(series: list[list[int]], order: int) -> dict[tuple[int, ...], dict[int, int]]:
    """For every context (tuple of the previous 0..order days within a series), the next classes."""
    out: dict[tuple[int, ...], dict[int, int]] = {}
    for s in series:
        for t, c in enumerate(s):
            for k in range(min(t, order) + 1):
                ctx = tuple(s[t - k:t])
                row = out.setdefault(ctx, {})
                row[c] = row.get(c, 0) + 1
    return out


def _prob(ctx: dict, history: tuple[int, ...], c: int, n_classes: int, order: int) -> float:
    h = history[-order:] if order else ()
    for k in range(len(h), -1, -1):
        row = ctx.get(h[len(h) - k:])
        if row:
            return row.get(c, 0) / sum(row.values())
    return 1.0 / n_classes


def _enumerate(ctx: dict, history: tuple[int, ...], n: int, n_classes: int, order: int, hot: int,
               run: int) -> float:
    """P(some day of the next n ends run hot days in a row), summing over all n-day class paths."""
    total = 0.0
    for path in product(range(n_classes), repeat=n):
        p = 1.0
        h = history
        hit = False
        for c in path:
            p *= _prob(ctx, h, c, n_classes, order)
            h = (h + (c,))[-order:]
            if len(h) >= run and all(x == hot for x in h[-run:]):
                hit = True
        if hit:
            total += p
    return total


def _history_of(state: int, n_classes: int, order: int) -> tuple[int, ...]:
    bases = [sum(n_classes ** m for m in range(k)) for k in range(order + 2)]
    k = max(i for i in range(order + 1) if bases[i] <= state)
    code = state - bases[k]
    return tuple((code // n_classes ** (k - 1 - i)) % n_classes for i in range(k))


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 3), st.integers(1, 3), st.data())
def test_first_passage_equals_path_enumeration(n_classes: int, order: int, data: st.DataObject) -> None:
    run = data.draw(st.integers(1, order))
    series = data.draw(st.lists(st.lists(st.integers(0, n_classes - 1), max_size=12), min_size=1, max_size=2))
    flat = np.array([c for s in series for c in s], dtype=np.int64)
    starts = np.cumsum([0] + [len(s) for s in series[:-1]])
    m = train_history(flat, starts=starts, n_classes=n_classes, order=order, run=run)
    n = data.draw(st.integers(1, 4))
    beta = m.first_passage(n)[1]
    ctx = _contexts(series, order)
    for state in range(m.n_states):
        h = _history_of(state, n_classes, order)
        for k in range(1, n + 1):
            assert beta[k][state] == pytest.approx(_enumerate(ctx, h, k, n_classes, order, n_classes - 1, run),
                                                   abs=1e-12)
    assert np.allclose(m.rows().sum(axis=1), 1.0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=30), st.integers(0, 30))
def test_states_follow_the_transition_table(days: list[int], cut: int) -> None:
    c = np.array(days, dtype=np.int64)
    starts = np.array(sorted({0, min(cut, max(len(days) - 1, 0))}), dtype=np.int64)
    m = train_history(c, starts=starts, order=3, run=2)
    states = m.states(c, starts)
    nxt = m.next_states()
    for t in range(len(days)):
        before = 0 if t in starts.tolist() else int(states[t - 1])
        assert states[t] == nxt[before, days[t]]
        assert _history_of(int(states[t]), 4, 3) == tuple(days[max(starts[starts <= t].max(), t - 2):t + 1])


def test_paper_size_and_hand_counts() -> None:
    m = train_history(np.array([3, 3, 0, 3]))
    assert m.n_states == 1365 == 1 + 4 + 16 + 64 + 256 + 1024
    assert m.matched.sum() == 1  # only "hot x 5"
    # contexts: "" -> 3, 3, 0, 3; "3" -> 3, 0; "33" -> 0; "0" -> 3; "30" -> 3; "330" -> 3
    assert m.counts[0].tolist() == [1, 0, 0, 3]
    assert m.counts[1 + 3].tolist() == [1, 0, 0, 1]
    assert m.counts[5 + 3 * 4 + 3].tolist() == [1, 0, 0, 0]
    assert m.counts[21 + (3 * 16 + 3 * 4 + 0)].tolist() == [0, 0, 0, 1]
    assert m.counts.sum() == 4 + 2 + 1 + 1 + 1 + 1 + 0
    assert history_states(np.array([3, 3, 0, 3]), 4, 5).tolist() == [4, 20, 81, 1 + 4 + 16 + 64 + 3 * 64 + 3 * 16 + 3]


def test_classes_and_errors() -> None:
    assert temperature_classes(np.array([-5.0, 20.0, 22.0, 25.0, 29.99, 30.0, 30.01])).tolist() == [0, 0, 1, 1, 2, 2, 3]
    with pytest.raises(PredictArgumentError, match="run"):
        train_history(np.array([0]), order=2, run=3)
    with pytest.raises(PredictArgumentError, match="classes"):
        train_history(np.array([4]))
    with pytest.raises(PredictArgumentError, match="starts"):
        history_states(np.array([1, 2]), 4, 2, np.array([1]))
