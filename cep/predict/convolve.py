"""Completion-time distributions of composite subscriptions: the paper's ``p + q + r`` convolution.

Muthusamy, Liu and Jacobsen (DEBS 2010), section 5.2.3: the probability that a composite
subscription matches within ``n`` events sums, over ``p + q + r = n``, the probability that the
active children complete in ``p`` events, the master's own steps in ``q`` and the last child in
``r``. We compute it as a distribution of *completion times* (``F[m]``, the probability of
completing within ``m`` events, ``m = 0..n``), assuming, like the paper, that the machines'
futures are independent:

* a *segment* (a child sequence, or a maximal run of the master's primitive steps) has its own
  chain, trained like any machine's: per standalone state, which signatures followed
  (:class:`SegmentModel`); its first completion from a state is a first passage over the
  segment's live positions (with ``,`` before it, position 0 does not loop: no restart);
* steps of a sequence run one after the other: their times add (a convolution, ``p + q + r``);
* ``|`` completes with its first part: the minimum of the parts' times;
* ``&`` completes with its last part: the **maximum**, ``F = F_1 F_2``. The paper's worked
  example multiplies both children's ``Pr^p`` at the *same* ``p``, the probability that both end
  at exactly the same event; ``&`` completes when the later one does, which is the maximum;
* ``,`` before an ``&`` asks that some part start at the very next event:
  ``F = prod F_i - prod (F_i - G_i)`` with ``G_i`` the part's distribution when it must start there.

Example:
    >>> import numpy as np
    >>> a = np.array([0.0, 0.5, 0.75])          # within 0, 1, 2 events
    >>> b = np.array([0.0, 0.2, 0.4])
    >>> then(a, b).round(3).tolist(), both(a, b).round(3).tolist(), either(a, b).round(3).tolist()
    ([0.0, 0.0, 0.1], [0.0, 0.1, 0.3], [0.0, 0.6, 0.85])
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from cep.lang.ast import FOLLOWED
from cep.predict.machine import SequenceMachine
from cep.predict.run import TransitionCounts


def then(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The distribution of the sum of two independent completion times (CDFs on ``0..n``)."""
    n = len(a) - 1
    da = np.diff(a, prepend=0.0)
    db = np.diff(b, prepend=0.0)
    return np.clip(np.cumsum(np.convolve(da, db)[: n + 1]), 0.0, 1.0)


def both(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The maximum of two independent completion times (``&``)."""
    return a * b


def either(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The minimum of two independent completion times (``|``)."""
    return 1.0 - (1.0 - a) * (1.0 - b)


@dataclass
class SegmentModel:
    """The trained chain of one segment: which signatures followed each standalone state.

    Attributes:
        machine: the segment's machine (its standalone states are the ``run.py`` masks).
        rows: per standalone mask, ``(signatures, probabilities)``.
        fallback: ``(signatures, probabilities)`` of all training events, for unseen states.
    """

    machine: SequenceMachine
    rows: dict[int, tuple[np.ndarray, np.ndarray]]
    fallback: tuple[np.ndarray, np.ndarray]
    cache: dict = field(default_factory=dict, repr=False)

    @classmethod
    def train(cls, machine: SequenceMachine, counts: TransitionCounts, freq_sig: np.ndarray,
              freq_count: np.ndarray) -> "SegmentModel":
        """Rows from ``(from_mask, sig)`` counts (departures, like :func:`cep.predict.markov.build_chain`)."""
        grouped: dict[int, dict[int, float]] = {}
        for f, s, c in zip(counts.from_mask.tolist(), counts.sig.tolist(), counts.count.tolist()):
            row = grouped.setdefault(f, {})
            row[s] = row.get(s, 0.0) + c
        rows = {f: _normal(r) for f, r in grouped.items()}
        freq = {int(s): float(c) for s, c in zip(freq_sig, freq_count) if c > 0}
        return cls(machine, rows, _normal(freq))

    def row(self, mask: int) -> tuple[np.ndarray, np.ndarray]:
        """The next-signature distribution in a state (its standalone state's row)."""
        key = self.machine.reduce(mask | 1)
        return self.rows.get(key, self.fallback)

    def completion(self, mask: int, link: str, n: int) -> np.ndarray:
        """``F[m]``: probability that a live partial match set ``mask`` completes within ``m`` events.

        Args:
            mask: live positions of the segment (bit ``j``: ``j`` steps matched).
            link: the link before the segment (``,``: position 0 does not loop, no restart).
            n: the horizon.
        """
        key = (mask, link, n)
        if key in self.cache:
            return self.cache[key]
        m = self.machine
        loops = m.loops if link == FOLLOWED else m.loops & ~1
        out = np.zeros(n + 1)
        dist = {mask: 1.0}
        done = 0.0
        for t in range(1, n + 1):
            nxt: dict[int, float] = {}
            for mk, p in dist.items():
                sigs, probs = self.row(mk)
                for s, q in zip(sigs.tolist(), probs.tolist()):
                    to = _advance(m, loops, mk, s)
                    if to & m.accept_bit:
                        done += p * q
                    elif to:
                        nxt[to] = nxt.get(to, 0.0) + p * q
            dist = nxt
            out[t] = done
        self.cache[key] = out
        return out


def _advance(m: SequenceMachine, loops: int, mask: int, sig: int) -> int:
    """One event on the live positions: self links where they loop, primary links where it matches."""
    nxt = 0
    for j in range(m.k):
        if mask >> j & 1:
            if loops >> j & 1:
                nxt |= 1 << j
            if sig >> m.prims[j] & 1:
                nxt |= 1 << (j + 1)
    return nxt


def _normal(row: dict[int, float]) -> tuple[np.ndarray, np.ndarray]:
    total = sum(row.values())
    sigs = np.array(sorted(row), dtype=np.int64)
    probs = np.array([row[s] / total for s in sorted(row)]) if total > 0 else np.zeros(0)
    return sigs, probs


def start_next(parts_fol: list[np.ndarray], parts_next: list[np.ndarray]) -> np.ndarray:
    """``&`` after ``,``: all parts complete and some part started at the very next event."""
    all_done = np.prod(parts_fol, axis=0)
    # A next-started match is one of the part's matches; the two chains are read from different
    # states, so G <= F is enforced rather than assumed.
    none_next = np.prod([f - np.minimum(g, f) for f, g in zip(parts_fol, parts_next)], axis=0)
    return np.clip(all_done - none_next, 0.0, 1.0)


