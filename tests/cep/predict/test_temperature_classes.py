"""P-ToPSS's real-data definitions (cep/predict/temperature.py): classes, daily mean, full model."""

from __future__ import annotations

import numpy as np
import pytest

from cep.predict import PredictArgumentError
from cep.predict.temperature import PAPER_BOUNDS, daily_mean, history_pairs, paper_classes, paper_full_chain


def _state_of(history: tuple[int, ...], n_classes: int) -> int:
    """The state number of a history (oldest day first), counted directly."""
    base = sum(n_classes ** m for m in range(len(history)))
    code = 0
    for c in history:
        code = code * n_classes + c
    return base + code


def test_classes_split_at_10_20_30_with_boundaries_below() -> None:
    temps = np.array([-40.0, 0.0, 10.0, 10.01, 15.0, 20.0, 20.5, 29.99, 30.0, 30.01, 45.0])
    assert PAPER_BOUNDS == (10.0, 20.0, 30.0)
    assert paper_classes(temps).tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3]


def test_the_hot_class_is_the_subscription_t_above_30() -> None:
    temps = np.linspace(-10.0, 45.0, 1101)
    assert np.array_equal(paper_classes(temps) == 3, temps > 30)


def test_classes_refuse_nan() -> None:
    with pytest.raises(PredictArgumentError):
        paper_classes(np.array([12.0, np.nan]))


def test_daily_mean() -> None:
    assert daily_mean(np.array([34.0, 31.0, -2.0]), np.array([27.0, 28.0, -9.0])).tolist() == [30.5, 29.5, -5.5]
    with pytest.raises(PredictArgumentError):
        daily_mean(np.array([30.0]), np.array([np.nan]))
    with pytest.raises(PredictArgumentError):
        daily_mean(np.array([30.0, 31.0]), np.array([20.0]))


@pytest.mark.parametrize("n_classes,order", [(2, 1), (2, 3), (3, 2), (4, 5)])
def test_history_pairs_equal_direct_counts(n_classes: int, order: int) -> None:
    classes = np.random.default_rng(24).integers(0, n_classes, 300)
    pairs = history_pairs(classes, n_classes, order)
    expected = np.zeros_like(pairs)
    for t, c in enumerate(classes.tolist()):
        before = tuple(classes[max(0, t - order):t].tolist())
        expected[_state_of(before, n_classes), c] += 1
    assert pairs.shape == (sum(n_classes ** k for k in range(order + 1)), n_classes)
    assert np.array_equal(pairs, expected)


def test_full_model_has_the_papers_1365_states_and_one_matched_state() -> None:
    classes = paper_classes(np.array([35.0, 31.0, 32.0, 33.0, 34.0, 36.0, 25.0, 15.0, 5.0, 31.0]))
    chain = paper_full_chain(classes)
    assert chain.n_states == 1 + 4 + 16 + 64 + 256 + 1024 == 1365
    assert chain.accepting.nonzero()[0].tolist() == [_state_of((3, 3, 3, 3, 3), 4)]


def test_full_model_rows_are_divided_by_arrivals() -> None:
    # states: 0 empty, 1 "0", 2 "1"; before-states [0, 2, 2, 1] reading [1, 1, 0, 1]
    chain = paper_full_chain(np.array([1, 1, 0, 1]), n_classes=2, order=1, run=1)
    third = 1.0 / 3.0
    assert np.allclose(chain.matrix(), [[0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [0.0, third, third]])
    assert chain.accepting.tolist() == [False, False, True]


def test_full_model_unseen_states_get_the_class_frequencies() -> None:
    chain = paper_full_chain(np.array([0, 0, 0, 1]), n_classes=2, order=1, run=1)
    # state 2 ("1") was never left: its row is the class frequencies 3/4, 1/4
    assert np.allclose(chain.matrix()[2], [0.0, 0.75, 0.25])
