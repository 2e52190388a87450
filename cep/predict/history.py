"""The hand-crafted *full* Markov model of the real-data experiment (our reconstruction).

P-ToPSS (Muthusamy, Liu and Jacobsen, DEBS 2010) compares the Markov chain generated from a
subscription's state machine with a hand-crafted "full" model on real daily temperatures, for
the event "five consecutive days above 30 degrees"; the paper reports that the full model has
1,365 states. The paper's text is not available to us. The model below is **our
reconstruction**, chosen because it has exactly that many states:

* each day is one of ``n_classes = 4`` *temperature classes* of its maximum,
  :func:`temperature_classes`: ``<= 20``, ``(20, 25]``, ``(25, 30]``, ``> 30`` degrees C (the
  last class is *hot*, the subscription's ``tmax_c > 30``);
* the state is the history of the last up to ``order = 5`` days' classes (shorter only in the
  first days of a series): ``sum(4^k for k in 0..5) = 1 + 4 + 16 + 64 + 256 + 1024 = 1365``
  states; state ``h`` reading class ``c`` goes to the last ``order`` days of ``h + c``;
* training counts, for every context of ``k = 0 .. order`` days, how often the next day was of
  each class (:func:`train_history`); the transition row of a state is the class distribution
  after its longest suffix that was observed (a variable-order *back-off*: a history never seen
  in training borrows the row of its last 4 days, and so on down to the class frequencies; with
  no training at all, classes are uniform);
* the *matched* states are those whose last ``run = 5`` days are hot; the prediction is the
  exact first-passage probability of entering one within ``n`` days
  (:meth:`cep.predict.markov.Chain.first_passage`), the same quantity as the generated model's
  ``beta(n)``.

The generated model of ``PATTERN H, H, H, H, H DEFINE H AS tmax_c > 30`` has 6 states (0 to 5
hot days in a row); this one knows how warm the non-hot days were and in what order, at 1365
states. BENCHMARKS.md "predict_match accuracy" compares the two.

States are numbered by length, then as base-``n_classes`` numbers with the oldest day first:
state ``base(k) + sum(c_i n^(k-1-i))`` for the history ``c_0 .. c_(k-1)``, ``base(k) = sum(n^m,
m < k)``; state 0 is the empty history. Everything is vectorised over days (the states of a
series come from a sliding window of its classes, the counts from ``np.bincount``).

Example:
    >>> m = train_history(np.array([3, 3, 3, 0, 3, 3]), n_classes=4, order=2, run=2)
    >>> m.n_states, m.matched.nonzero()[0].tolist()           # 1 + 4 + 16 states; "hot, hot"
    (21, [20])
    >>> m.states(np.array([3, 3, 0])).tolist()               # after each day
    [4, 20, 17]
    >>> beta = m.first_passage(2)[1]
    >>> round(float(beta[1][17]), 4), round(float(beta[2][17]), 4)  # from "hot, cool"
    (0.0, 1.0)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cep.predict.errors import PredictArgumentError
from cep.predict.markov import Chain

__all__ = ["HistoryModel", "history_states", "temperature_classes", "train_history"]

THRESHOLDS = (20.0, 25.0, 30.0)
"""Class boundaries of the daily maximum (degrees C): classes ``<= 20``, ``(20, 25]``,
``(25, 30]``, ``> 30``."""
ORDER = 5
RUN = 5
MAX_STATES = 1 << 22


def temperature_classes(tmax: np.ndarray, thresholds: tuple[float, ...] = THRESHOLDS) -> np.ndarray:
    """The class of each daily maximum: the number of thresholds it is *above* (so the last
    class is ``> thresholds[-1]``, the subscription's ``tmax_c > 30``).

    Example:
        >>> temperature_classes(np.array([12.0, 20.0, 20.1, 30.0, 30.5])).tolist()
        [0, 0, 1, 2, 3]
    """
    return np.searchsorted(np.asarray(thresholds, dtype=np.float64), np.asarray(tmax, dtype=np.float64),
                           side="left").astype(np.int64)


def _bases(n_classes: int, order: int) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(n_classes ** np.arange(order + 1, dtype=np.int64))])


def history_states(classes: np.ndarray, n_classes: int, order: int,
                   starts: np.ndarray | None = None) -> np.ndarray:
    """The state (history of the last up to ``order`` days) after each day, per series.

    Args:
        classes: the class of each day, the series one after the other.
        n_classes: number of classes.
        order: the longest history.
        starts: where each series starts (default one series).

    Example:
        >>> history_states(np.array([1, 0, 1, 1]), 2, 2).tolist()   # "1", "10", "01", "11"
        [2, 5, 4, 6]
    """
    c = np.asarray(classes, dtype=np.int64)
    n = len(c)
    starts = np.zeros(1, dtype=np.int64) if starts is None else np.asarray(starts, dtype=np.int64)
    if n and (len(starts) == 0 or starts[0] != 0 or (np.diff(starts) < 0).any()):
        raise PredictArgumentError("argument starts: expected increasing positions starting at 0")
    first = starts[np.searchsorted(starts, np.arange(n), side="right") - 1] if n else np.zeros(0, np.int64)
    pos = np.arange(n) - first                          # days since the series started
    length = np.minimum(pos + 1, order)
    code = np.zeros(n, dtype=np.int64)
    for i in range(order):                              # the day i back weighs n^i
        back = np.zeros(n, dtype=np.int64)
        back[i:] = c[:n - i] if i else c
        code += np.where(length > i, back, 0) * n_classes ** i
    return _bases(n_classes, order)[length] + code


@dataclass(frozen=True, eq=False)
class HistoryModel:
    """A trained full model (module docstring).

    Attributes:
        n_classes, order, hot, run: the classes, the longest history, the hot class and the run
            of hot days that is a match.
        counts: ``(n_states, n_classes)`` int64: how often each context (a history of 0 ..
            ``order`` days, numbered like the states) was followed by each class.
    """

    n_classes: int
    order: int
    hot: int
    run: int
    counts: np.ndarray

    @property
    def n_states(self) -> int:
        """``sum(n_classes^k, k = 0 .. order)``."""
        return int(_bases(self.n_classes, self.order)[-1])

    def _histories(self) -> tuple[np.ndarray, np.ndarray]:
        """Per state its length and its code (oldest day first)."""
        bases = _bases(self.n_classes, self.order)
        state = np.arange(self.n_states, dtype=np.int64)
        length = np.searchsorted(bases, state, side="right") - 1
        return length, state - bases[length]

    @property
    def matched(self) -> np.ndarray:
        """Per state, whether its last ``run`` days are hot."""
        length, code = self._histories()
        last = code % self.n_classes ** self.run
        hot_run = sum(self.hot * self.n_classes ** i for i in range(self.run))
        return (length >= self.run) & (last == hot_run)

    def next_states(self) -> np.ndarray:
        """``(n_states, n_classes)``: the state after each state reads each class."""
        bases = _bases(self.n_classes, self.order)
        length, code = self._histories()
        keep = np.where(length == self.order, code % self.n_classes ** (self.order - 1), code)
        new_len = np.minimum(length + 1, self.order)
        c = np.arange(self.n_classes, dtype=np.int64)
        return bases[new_len][:, None] + keep[:, None] * self.n_classes + c[None, :]

    def rows(self) -> np.ndarray:
        """``(n_states, n_classes)`` the class distribution after each state (back-off, module
        docstring)."""
        length, code = self._histories()
        bases = _bases(self.n_classes, self.order)
        probs = np.full((self.n_states, self.n_classes), 1.0 / self.n_classes)
        done = np.zeros(self.n_states, dtype=bool)
        # Longest suffix first: the context of the last k days of each state.
        for k in range(self.order, -1, -1):
            ctx = bases[k] + code % self.n_classes ** k
            total = self.counts[ctx].sum(axis=1)
            use = ~done & (length >= k) & (total > 0)
            probs[use] = self.counts[ctx[use]] / total[use, None]
            done |= use
        return probs

    def chain(self) -> Chain:
        """The Markov chain over the states (zero-probability transitions left out)."""
        nxt = self.next_states()
        p = self.rows()
        src = np.repeat(np.arange(self.n_states, dtype=np.int64), self.n_classes)
        keep = p.ravel() > 0
        return Chain(np.arange(self.n_states, dtype=np.int64), src[keep], nxt.ravel()[keep],
                     p.ravel()[keep], self.matched)

    def first_passage(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``(alpha, beta)`` of every state, shape ``(n + 1, n_states)``."""
        return self.chain().first_passage(n)

    def states(self, classes: np.ndarray, starts: np.ndarray | None = None) -> np.ndarray:
        """The state after each day (:func:`history_states`)."""
        return history_states(classes, self.n_classes, self.order, starts)


def train_history(classes: np.ndarray, *, starts: np.ndarray | None = None, n_classes: int = 4,
                  order: int = ORDER, hot: int | None = None, run: int = RUN) -> HistoryModel:
    """Count, for every context of 0 .. ``order`` days, the class of the next day.

    Args:
        classes: the class of each training day, series one after the other.
        starts: where each series starts (a context never spans two series).
        n_classes: number of classes.
        order: the longest history (``order >= run``).
        hot: the hot class (default the last).
        run: hot days in a row that make a match.

    Raises:
        PredictArgumentError: classes out of range, ``run > order`` or too many states.
    """
    hot = n_classes - 1 if hot is None else hot
    if not (1 <= run <= order) or not (0 <= hot < n_classes) or n_classes < 1:
        raise PredictArgumentError(f"argument run/order/hot: expected 1 <= run <= order and a hot class "
                                   f"in [0, {n_classes}), found run={run}, order={order}, hot={hot}")
    if int(_bases(n_classes, order)[-1]) > MAX_STATES:
        raise PredictArgumentError(f"a history model has at most {MAX_STATES:,} states")
    c = np.asarray(classes, dtype=np.int64)
    if len(c) and (c.min() < 0 or c.max() >= n_classes):
        raise PredictArgumentError(f"argument classes: expected classes in [0, {n_classes}), found "
                                   f"{int(c.min())} .. {int(c.max())}")
    n = len(c)
    starts = np.zeros(1, dtype=np.int64) if starts is None else np.asarray(starts, dtype=np.int64)
    bases = _bases(n_classes, order)
    size = int(bases[-1])
    counts = np.zeros(size * n_classes, dtype=np.int64)
    if n:
        # Before day t the full history is the state after day t - 1 (empty at a series start).
        after = history_states(c, n_classes, order, starts)
        before = np.empty(n, dtype=np.int64)
        before[0] = 0
        before[1:] = after[:-1]
        before[starts[starts < n]] = 0
        length = np.searchsorted(bases, before, side="right") - 1
        code = before - bases[length]
        for k in range(order + 1):                      # every suffix of the history is a context
            has = length >= k
            ctx = bases[k] + code[has] % n_classes ** k
            counts += np.bincount(ctx * n_classes + c[has], minlength=size * n_classes)
    return HistoryModel(n_classes, order, hot, run, counts.reshape(size, n_classes))
