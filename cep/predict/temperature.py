"""P-ToPSS's real-data experiment as the paper states it: daily mean classes and its full model.

Muthusamy, Liu and Jacobsen (DEBS 2010), section 6, "Realistic workload": real *average*
daily temperatures, the subscription ``s = (T > 30)``, ``cs = s, s, s, s, s`` (five consecutive
days above 30 degrees), and a hand-crafted *full* Markov model: "we divide the temperature into
4 categories separated by 30, 20, 10 degrees and manually build a full Markov model consisting
of all temperature combinations from 1 day to 5 days. There are 1365 states in total."

What this module adds to :mod:`cep.predict.history` (whose classes are split at 20/25/30 of the
daily *maximum*, our earlier reconstruction made without the text):

* :data:`PAPER_BOUNDS` and :func:`paper_classes`: the paper's split, classes ``T <= 10``,
  ``10 < T <= 20``, ``20 < T <= 30`` and ``T > 30`` (the text gives the cut points, not which
  side a boundary day falls on; the top class must be the subscription's ``T > 30``, and we put
  every boundary on the lower side the same way);
* :func:`daily_mean`: ``(tmax + tmin) / 2``, the closest we can get to the paper's average
  daily temperature from data that has only the daily extremes;
* :func:`history_pairs` and :func:`paper_full_chain`: the full model trained as the paper trains
  every model (section 5.2.1, line 387: transition counts divided by the arrivals at a state,
  :func:`cep.predict.paper.paper_chain`). The states are the histories of 0 to 5 days
  (``4 + 16 + 64 + 256 + 1024 = 1364`` histories of 1 to 5 days, plus the empty history before
  a series' first day: 1365, the paper's count); the matched state is "the last 5 days hot". A
  state never left in training gets the row of the class frequencies (the paper does not say;
  :mod:`cep.predict.history` backs off to shorter histories instead).

Example:
    >>> paper_classes(np.array([10.0, 10.5, 20.0, 25.0, 30.0, 30.1])).tolist()
    [0, 1, 1, 2, 2, 3]
    >>> daily_mean(np.array([34.0, 31.0]), np.array([27.0, 28.0])).tolist()
    [30.5, 29.5]
"""

from __future__ import annotations

import numpy as np

from cep.predict.errors import PredictArgumentError
from cep.predict.history import HistoryModel, history_states, temperature_classes
from cep.predict.markov import Chain
from cep.predict.paper import paper_chain

__all__ = ["PAPER_BOUNDS", "daily_mean", "history_pairs", "paper_classes", "paper_full_chain"]

PAPER_BOUNDS = (10.0, 20.0, 30.0)
"""The paper's class boundaries (degrees C): ``<= 10``, ``(10, 20]``, ``(20, 30]``, ``> 30``."""


def paper_classes(temps: np.ndarray) -> np.ndarray:
    """The paper's temperature class of each day: 0 for ``T <= 10`` .. 3 for ``T > 30``.

    Example:
        >>> paper_classes(np.array([-5.0, 15.0, 29.99, 35.0])).tolist()
        [0, 1, 2, 3]
    """
    t = np.asarray(temps, dtype=np.float64)
    if np.isnan(t).any():
        raise PredictArgumentError("argument temps: a temperature is NaN")
    return temperature_classes(t, PAPER_BOUNDS)


def daily_mean(tmax: np.ndarray, tmin: np.ndarray) -> np.ndarray:
    """``(tmax + tmin) / 2`` per day (degrees C); refuses missing values and unequal lengths."""
    hi = np.asarray(tmax, dtype=np.float64)
    lo = np.asarray(tmin, dtype=np.float64)
    if hi.shape != lo.shape:
        raise PredictArgumentError(f"arguments tmax/tmin: expected equal lengths, found {hi.shape} and {lo.shape}")
    if np.isnan(hi).any() or np.isnan(lo).any():
        raise PredictArgumentError("arguments tmax/tmin: a daily maximum or minimum is missing")
    return (hi + lo) / 2.0


def history_pairs(classes: np.ndarray, n_classes: int = 4, order: int = 5) -> np.ndarray:
    """``(n_states, n_classes)``: how often each history state read each class (one series).

    The state before day ``t`` is the history after day ``t - 1`` (the empty state 0 before
    the first day); states are numbered as in :mod:`cep.predict.history`.

    Example:
        >>> history_pairs(np.array([1, 0, 1]), n_classes=2, order=1).tolist()   # states: empty, "0", "1"
        [[0, 1], [0, 1], [1, 0]]
    """
    c = np.asarray(classes, dtype=np.int64)
    if len(c) and (c.min() < 0 or c.max() >= n_classes):
        raise PredictArgumentError(f"argument classes: expected classes in [0, {n_classes}), found "
                                   f"{int(c.min())} .. {int(c.max())}")
    n_states = int(sum(n_classes ** k for k in range(order + 1)))
    before = np.zeros(len(c), dtype=np.int64)
    if len(c) > 1:
        before[1:] = history_states(c, n_classes, order)[:-1]
    counts = np.bincount(before * n_classes + c, minlength=n_states * n_classes)
    return counts.reshape(n_states, n_classes)


def paper_full_chain(classes: np.ndarray, n_classes: int = 4, order: int = 5, run: int = 5,
                     hot: int | None = None) -> Chain:
    """The paper's full model trained on ``classes`` (module docstring): the history states,
    transitions counted and divided by the arrivals at each state (line 387), matched states
    those whose last ``run`` days are in class ``hot`` (default the last class).

    Example:
        >>> c = paper_full_chain(np.array([1, 1, 0, 1, 1]), n_classes=2, order=2, run=2)
        >>> c.n_states, c.accepting.nonzero()[0].tolist()
        (7, [6])
    """
    hot = n_classes - 1 if hot is None else hot
    model = HistoryModel(n_classes, order, hot, run, np.zeros((1, n_classes), dtype=np.int64))
    pairs = history_pairs(classes, n_classes, order)
    freq = np.bincount(np.asarray(classes, dtype=np.int64), minlength=n_classes)
    return paper_chain(model.next_states(), model.matched, pairs, freq)
