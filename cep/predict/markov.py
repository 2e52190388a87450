"""Markov prediction over a state machine: transition matrix, alpha(n), beta(n), first passage.

Muthusamy et al. (DEBS 2010), section 5: the events observed drive each subscription's machine;
counting how often state ``i`` was followed by state ``j`` trains a Markov chain ``P[i, j] =
n(i, j) / n(i)``, and the probability that the subscription matches within the next ``n`` events
is the probability that the chain, started in the current state, enters a *matched* state at
one of the next ``n`` steps: a first passage, computed exactly by the recurrence

    h_0 = 0,    h_m = P (a + (1 - a) h_(m-1))        (a: indicator of the matched states)

whose ``h_m(i)`` is the probability of entering a matched state within ``m`` steps from ``i``.

The paper's two quantities, as this project defines them (the paper's text was not available to
us; docs/predict.md section 4 says so and what was checked instead):

* ``alpha(n)``: the probability that the *first* match happens at exactly the ``n``-th next event,
  ``h_n - h_(n-1)``;
* ``beta(n)``: the probability of a match within the next ``n`` events, ``h_n`` (the sum of
  ``alpha(1..n)``). ``predict_match`` answers ``beta(lookahead)``.

The paper's own definitions (section 5.2.2, lines 395-397) are different quantities, offered as
:meth:`Chain.occupancy`: ``alpha_i(n) = P^n[i, F]``, the probability of *being* in a matched state
after exactly ``n`` events (not of entering one for the first time), and ``beta_i(n) = sum_(k <= n)
alpha_i(k)``, the expected number of the next ``n`` events after which the chain is in a matched
state: not a probability (it can exceed 1), and it counts a chain that stays in a matched state
once per event. ``normalise='arrivals'`` trains as the paper's line 387 (``p_ij = N(e_ij) /
sum_k N(e_ki)``: divided by the arrivals at ``i``, not the departures).

Rows of states never left during training are filled from the symbol frequencies of the
training events (an i.i.d. event model: ``P[i, step(i, s)] += freq(s)``); with no training events
at all a state stays where it is. ``smoothing`` > 0 mixes the frequency row into every row with
that weight (pseudo-counts). Every row sums to 1.

Example:
    >>> import numpy as np
    >>> c = Chain(np.array([1, 3]), np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]),
    ...           np.array([0.5, 0.5, 1.0, 0.0]), np.array([False, True]))
    >>> alpha, beta = c.first_passage(3)
    >>> beta[:, 0].round(4).tolist(), alpha[:, 0].round(4).tolist()
    ([0.0, 0.5, 0.75, 0.875], [0.0, 0.5, 0.25, 0.125])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cep.predict.errors import PredictLimitError
from cep.predict.machine import MAX_STATES, SequenceMachine, StateNumbers
from cep.predict.run import TransitionCounts


@dataclass(frozen=True, eq=False)
class Chain:
    """A Markov chain over machine states, as a sparse matrix.

    Attributes:
        masks: the state masks (state ``i`` is ``masks[i]``).
        src, dst, p: the non-zero entries ``P[src, dst] = p``.
        accepting: per state, whether it is a matched state.
    """

    masks: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    p: np.ndarray
    accepting: np.ndarray

    @property
    def n_states(self) -> int:
        """Number of states."""
        return len(self.masks)

    def matrix(self) -> np.ndarray:
        """The dense transition matrix (for small chains and tests)."""
        out = np.zeros((self.n_states, self.n_states))
        np.add.at(out, (self.src, self.dst), self.p)
        return out

    def index_of(self, masks: np.ndarray) -> np.ndarray:
        """State numbers of ``masks`` (each must be a state of the chain)."""
        order = np.argsort(self.masks, kind="stable")
        sorted_masks = self.masks[order]
        pos = np.minimum(np.searchsorted(sorted_masks, masks), len(order) - 1)
        found = sorted_masks[pos] == masks
        if not np.all(found):
            missing = np.asarray(masks)[~found][:5].tolist()
            raise ValueError(f"masks {missing} are not states of the chain")
        return order[pos]

    def first_passage(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``(alpha, beta)``, arrays of shape ``(n + 1, n_states)`` (row ``m`` is ``alpha(m)``,
        ``beta(m)``; row 0 is zero)."""
        S = self.n_states
        beta = np.zeros((n + 1, S))
        acc = self.accepting.astype(np.float64)
        h = np.zeros(S)
        for m in range(1, n + 1):
            g = acc + (1.0 - acc) * h
            h = np.bincount(self.src, weights=self.p * g[self.dst], minlength=S)
            beta[m] = h
        np.clip(beta, 0.0, 1.0, out=beta)
        alpha = np.zeros_like(beta)
        alpha[1:] = beta[1:] - beta[:-1]
        return alpha, beta

    def occupancy(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The paper's ``(alpha, beta)`` (lines 395-397), arrays of shape ``(n + 1, n_states)``.

        Row ``m`` of ``alpha`` is ``P^m[i, F]`` summed over the matched states ``F``; row ``m`` of
        ``beta`` is ``alpha(1) + ... + alpha(m)`` (row 0 of both is zero). Neither is clipped.

        Example:
            >>> c = Chain(np.array([1, 3]), np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]),
            ...           np.array([0.5, 0.5, 0.0, 1.0]), np.array([False, True]))
            >>> a, b = c.occupancy(3)
            >>> a[:, 0].tolist(), b[:, 0].tolist()
            ([0.0, 0.5, 0.75, 0.875], [0.0, 0.5, 1.25, 2.125])
        """
        S = self.n_states
        alpha = np.zeros((n + 1, S))
        v = self.accepting.astype(np.float64)
        for m in range(1, n + 1):
            v = np.bincount(self.src, weights=self.p * v[self.dst], minlength=S)
            alpha[m] = v
        beta = np.cumsum(alpha, axis=0)
        return alpha, beta


NORMALISE = ("departures", "arrivals")


def build_chain(machine: SequenceMachine, counts: TransitionCounts, freq_sig: np.ndarray,
                freq_count: np.ndarray, extra: np.ndarray | tuple = (), *, smoothing: float = 0.0,
                max_states: int = MAX_STATES, normalise: str = "departures") -> Chain:
    """Train the chain of ``machine`` from transition counts (module docstring).

    Args:
        machine: the sequence machine.
        counts: observed transitions ``(from_mask, sig, to_mask, count)``.
        freq_sig, freq_count: how often each signature occurred in training.
        extra: masks that must be states of the chain (the instances' current states).
        smoothing: weight of the frequency row mixed into observed rows (0: none).
        normalise: ``'departures'`` (ours: ``n(i, j) / n(i)``, rows sum to 1) or ``'arrivals'``
            (the paper's line 387: ``n(i, j)`` over the arrivals at ``i``, an instance's first
            placement counting as one: ``max(arrivals, departures)``; rows can sum to less than
            1, never more).

    Raises:
        PredictLimitError: more than ``max_states`` states (``CEP-PRED-020``).
    """
    freq_sig = np.asarray(freq_sig, dtype=np.int64)
    freq = np.asarray(freq_count, dtype=np.float64)
    freq = freq / freq.sum() if freq.sum() > 0 else freq
    observed: dict[int, dict[int, float]] = {}
    arrived: dict[int, float] = {}
    for f, t, c in zip(counts.from_mask.tolist(), counts.to_mask.tolist(), counts.count.tolist()):
        row = observed.setdefault(f, {})
        row[t] = row.get(t, 0.0) + c
        arrived[t] = arrived.get(t, 0.0) + c
    numbers = StateNumbers(f"the Markov chain of {' '.join(machine.aliases)!r}", max_states)
    states, add = numbers.masks, numbers.add
    for mask in [machine.start, *(int(e) for e in extra), *observed]:
        add(mask)
    src: list[int] = []
    dst: list[int] = []
    prob: list[float] = []
    i = 0
    while i < len(states):
        mask = states[i]
        row: dict[int, float] = {}
        seen = observed.get(mask)
        total = sum(seen.values()) if seen else 0.0
        if seen and normalise == "arrivals":
            total = max(total, arrived.get(mask, 0.0))
        if seen:
            w = total / (total + smoothing) if smoothing > 0 else 1.0
            for t, c in seen.items():
                row[t] = row.get(t, 0.0) + w * c / total
        if (not seen or smoothing > 0) and freq.sum() > 0:
            w = 1.0 if not seen else smoothing / (total + smoothing)
            for s, f in zip(freq_sig.tolist(), freq.tolist()):
                if f > 0:
                    t = machine.step(mask, s)
                    row[t] = row.get(t, 0.0) + w * f
        if not row:
            row[mask] = 1.0
        for t, p in row.items():
            src.append(i)
            dst.append(add(t))
            prob.append(p)
        i += 1
    masks = np.array(states, dtype=np.int64)
    return Chain(masks, np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64),
                 np.array(prob, dtype=np.float64), (masks & machine.accept_bit) != 0)
