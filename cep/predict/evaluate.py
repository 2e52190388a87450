"""Scoring "a match within the next n events" predictions: precision, recall and MCC.

The evaluation of P-ToPSS (Muthusamy, Liu and Jacobsen, DEBS 2010, figures 10 and 11, as we
reconstruct them) asks, after every event and for every subscription, *will it match within the
next n events?* The prediction is positive when ``beta(n) >= theta`` in the subscription's
current state; the truth is positive when a match really ends at one of the next ``n`` events.
Precision, recall and the Matthews correlation coefficient (MCC) of these yes/no answers are
reported over lookahead ``n`` and threshold ``theta``.

Every answer depends on the current state only, so the evaluation never stores per-event
predictions: :func:`state_histogram` counts, per state, how far away the next match was
(``1 .. n_max`` events, or further); :func:`confusion` then scores any number of models (any
``beta`` table over the same states) for every ``(n, theta)`` at once. Events whose next
``n_max`` events are not all known (the end of the test data) are left out by the caller.

Example:
    >>> ends = np.array([False, False, True, False, True, False])
    >>> next_distance(ends).tolist()[:4], bool(next_distance(ends)[4] == NO_MATCH)
    ([2, 1, 2, 1], True)
    >>> h = state_histogram(np.array([0, 1, 0, 1]), next_distance(ends)[:4], 2, n_max=2)
    >>> h.tolist()                                          # state 0: d = 2, 2; state 1: d = 1, 1
    [[0, 2, 0], [2, 0, 0]]
    >>> beta = np.array([[0.0, 0.0], [0.1, 0.9], [0.5, 0.95]])    # beta(0), beta(1), beta(2)
    >>> c = confusion(h, beta, [0.5])
    >>> c.tp[:, 0].tolist(), c.fp[:, 0].tolist(), c.fn[:, 0].tolist(), c.tn[:, 0].tolist()
    ([2, 4], [0, 0], [0, 0], [2, 0])
    >>> c.precision()[:, 0].tolist(), c.recall()[:, 0].tolist(), c.mcc()[:, 0].tolist()
    ([1.0, 1.0], [1.0, 1.0], [1.0, nan])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = ["NO_MATCH", "Confusion", "calibration", "confusion", "next_distance", "state_histogram"]

NO_MATCH = np.int64(1 << 62)
"""The distance of an event after which no match ends."""


def next_distance(ends: np.ndarray) -> np.ndarray:
    """Per event (row), how many events until the next match ends (``u - t`` for the first
    ``u > t`` with ``ends[u]``); ``NO_MATCH`` when there is none. Columns are independent series.

    Example:
        >>> d = next_distance(np.array([[True, False], [False, False], [True, True]]))
        >>> d[:2].tolist(), bool((d[2] == NO_MATCH).all())
        ([[2, 2], [1, 1]], True)
    """
    ends = np.asarray(ends, dtype=bool)
    n = ends.shape[0]
    t = np.arange(n).reshape((n,) + (1,) * (ends.ndim - 1))
    at = np.where(ends, t, NO_MATCH)
    nxt = np.full(ends.shape, NO_MATCH, dtype=np.int64)
    if n > 1:
        # the nearest match at or after u, for u = t + 1
        nxt[:-1] = np.minimum.accumulate(at[::-1], axis=0)[::-1][1:]
    return np.where(nxt == NO_MATCH, NO_MATCH, nxt - t)


def state_histogram(states: np.ndarray, distance: np.ndarray, n_states: int, n_max: int) -> np.ndarray:
    """``(n_states, n_max + 1)`` counts: column ``k < n_max`` holds the events in each state whose
    next match was ``k + 1`` events later, column ``n_max`` those with none within ``n_max``.

    ``states`` and ``distance`` are arrays of the same shape (one entry per event and
    subscription).
    """
    d = np.minimum(np.asarray(distance, dtype=np.int64), n_max + 1) - 1
    idx = np.asarray(states, dtype=np.int64) * (n_max + 1) + d
    return np.bincount(idx.ravel(), minlength=n_states * (n_max + 1)).reshape(n_states, n_max + 1)


@dataclass(frozen=True, eq=False)
class Confusion:
    """Counts of ``(n_max, len(thresholds))`` predictions; row ``n - 1`` is lookahead ``n``."""

    thresholds: tuple[float, ...]
    tp: np.ndarray
    fp: np.ndarray
    fn: np.ndarray
    tn: np.ndarray

    def precision(self) -> np.ndarray:
        """``tp / (tp + fp)``; NaN without positive predictions."""
        return _ratio(self.tp, self.tp + self.fp)

    def recall(self) -> np.ndarray:
        """``tp / (tp + fn)``; NaN without positive truths."""
        return _ratio(self.tp, self.tp + self.fn)

    def mcc(self) -> np.ndarray:
        """``(tp tn - fp fn) / sqrt((tp + fp)(tp + fn)(tn + fp)(tn + fn))``; NaN when a factor is 0."""
        tp, fp, fn, tn = (x.astype(np.float64) for x in (self.tp, self.fp, self.fn, self.tn))
        denom = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
        return _ratio(tp * tn - fp * fn, denom)

    def positives(self) -> np.ndarray:
        """Events with a true match within ``n``, per ``n`` (the same for every threshold)."""
        return (self.tp + self.fn)[:, 0]

    def __add__(self, other: "Confusion") -> "Confusion":
        if self.thresholds != other.thresholds:
            raise ValueError("confusions over different thresholds")
        return Confusion(self.thresholds, self.tp + other.tp, self.fp + other.fp, self.fn + other.fn,
                         self.tn + other.tn)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out


def confusion(hist: np.ndarray, beta: np.ndarray, thresholds: Sequence[float]) -> Confusion:
    """Score ``beta(n) >= theta`` against the histogram's truths for ``n = 1 .. n_max``.

    Args:
        hist: ``(S, n_max + 1)`` from :func:`state_histogram`.
        beta: ``(>= n_max + 1, S)``: ``beta[n, s]`` is state ``s``'s probability of a match
            within ``n`` events.
        thresholds: the thresholds ``theta``.
    """
    hist = np.asarray(hist, dtype=np.int64)
    n_max = hist.shape[1] - 1
    th = np.asarray(list(thresholds), dtype=np.float64)
    within = np.cumsum(hist[:, :n_max], axis=1)               # (S, n_max): true within n
    total = hist.sum(axis=1)
    shape = (n_max, len(th))
    tp, fp, fn, tn = (np.zeros(shape, dtype=np.int64) for _ in range(4))
    for n in range(1, n_max + 1):
        pos = within[:, n - 1]
        neg = total - pos
        pred = beta[n][:, None] >= th[None, :]                 # (S, thresholds)
        tp[n - 1] = pos @ pred
        fp[n - 1] = neg @ pred
        fn[n - 1] = pos.sum() - tp[n - 1]
        tn[n - 1] = neg.sum() - fp[n - 1]
    return Confusion(tuple(float(x) for x in th), tp, fp, fn, tn)


def calibration(hist: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per lookahead ``n = 1 .. n_max``: the expected number of events with a match within ``n``
    (the sum of ``beta(n)`` over the scored events) and the observed number.

    Example:
        >>> h = np.array([[0, 2, 0], [2, 0, 0]])
        >>> e, o = calibration(h, np.array([[0.0, 0.0], [0.1, 0.9], [0.5, 0.95]]))
        >>> e.round(2).tolist(), o.tolist()
        ([2.0, 2.9], [2, 4])
    """
    hist = np.asarray(hist, dtype=np.int64)
    n_max = hist.shape[1] - 1
    total = hist.sum(axis=1).astype(np.float64)
    expected = np.array([float(total @ beta[n]) for n in range(1, n_max + 1)])
    observed = np.cumsum(hist[:, :n_max], axis=1).sum(axis=0)
    return expected, observed
