"""P-ToPSS as published: BuildStateMachine graphs, merging by prefix, the paper's chain.

Muthusamy, Liu and Jacobsen (DEBS 2010). Our own machines (:mod:`cep.predict.machine`) and our
merging (:mod:`cep.predict.merge`, by *future* equivalence) differ from the paper's; this module
implements the paper's definitions literally, beside ours, so that the two can be compared on
the same subscriptions (docs/predict.md, "Paper vs ours"):

* **BuildStateMachine** (section 4.1, the algorithm box): a sequence of ``k`` primitives has
  states ``N_0 .. N_k``; an edge ``s_j`` from ``N_(j-1)`` to ``N_j`` (the *primary* link); and
  at the end ``N_j`` of every term but the last (a step followed by ``;``) a *secondary* link
  ``s_j`` and a *self* link ``*`` from ``N_j`` to itself. :func:`build_state_machine` returns
  the graph as a :class:`PaperMachine`. An ``@`` time condition is "an additional predicate of
  the associated primitive subscription", so it is part of the step's label.
* **Merging** (section 4.3): states ``N1`` and ``N2`` are *equivalent* when (1) they have the
  same number of incoming transitions and (2) every incoming transition of one comes from a
  state equivalent to the source of an incoming transition of the other, triggered by the same
  events (and vice versa); initial states, which have no incoming transitions, are equivalent.
  Because of the self links (``N_j`` is a source of its own incoming transitions) the recursion
  only closes as the *greatest* fixed point: :func:`merge_prefix` starts from "all states
  equivalent" and splits by ``(class, number of incoming transitions, set of (class of source,
  label))`` until nothing splits. The ``*`` links all carry one label ``*``: strictly, the
  ``*`` of ``a ; b ; c`` after ``a ; b`` excludes ``b`` and ``c`` and that of ``a ; b ; d``
  excludes ``b`` and ``d``, but the paper's Fig. 6 merges these states, so ``*`` counts as the
  same trigger. On BuildStateMachine graphs the result is a trie: states with the same prefix
  of ``(label, has self links)`` merge, also when one is final and the other not.
* **The chain** (section 5.2): one instance per machine, deterministic over events: from
  ``N_j`` an event satisfying ``s_(j+1)`` moves to ``N_(j+1)``; otherwise a state with self
  links stays, and a state without (a ``,`` comes next) falls back to ``N_1`` if the event
  satisfies ``s_1``, else to ``N_0``; the final state ``N_k`` continues like ``N_0`` (a match
  ends, the machine restarts). Training normalises by *arrivals* (line 387: ``p_ij = N(e_ij) /
  sum_k N(e_ki)``, the number of times the chain arrived at ``i``), so a row sums to
  departures / arrivals, not always 1. ``alpha_i(n) = P^n[i, F]`` and ``beta_i(n) = sum_(k <= n)
  alpha_i(k)`` (lines 395-397) are :meth:`cep.predict.markov.Chain.occupancy`.

Example:
    >>> from cep.predict.subscription import compile_subscription
    >>> subs = [compile_subscription(t) for t in ("PATTERN a ; b ; c", "PATTERN a ; b ; d", "PATTERN a")]
    >>> ms = [build_state_machine(s.root, tuple(s.primitives[i].cls for i in s.root.steps)) for s in subs]
    >>> r = merge_prefix(ms)
    >>> r.unmerged, r.merged, r.classes.tolist()
    (10, 6, [0, 1, 2, 3, 0, 1, 2, 4, 0, 5])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Sequence

import numpy as np

from cep.predict.errors import PredictArgumentError
from cep.predict.markov import Chain
from cep.predict.subscription import Sequence as SequenceNode

__all__ = ["STAR", "PaperMachine", "PrefixMergeReport", "build_state_machine", "merge_graph", "merge_prefix",
           "paper_chain", "paper_tables"]

STAR = "*"
"""The label of the self links (every event not taking a primary or secondary link)."""


@dataclass(frozen=True)
class PaperMachine:
    """A BuildStateMachine graph (module docstring).

    Attributes:
        labels: the label of step ``j = 1 .. k`` (the primitive, with its time conditions).
        loops: per state ``N_0 .. N_k``, whether it has the secondary and self links.
    """

    labels: tuple[Hashable, ...]
    loops: tuple[bool, ...]

    @property
    def k(self) -> int:
        """Steps (the machine has ``k + 1`` states)."""
        return len(self.labels)

    def edges(self) -> list[tuple[int, int, Hashable]]:
        """Every link as ``(source, target, label)``: primary, then secondary and self."""
        out: list[tuple[int, int, Hashable]] = []
        for j, label in enumerate(self.labels, start=1):
            out.append((j - 1, j, label))
            if self.loops[j]:
                out.extend([(j, j, label), (j, j, STAR)])
        return out


def build_state_machine(seq: SequenceNode, labels: Sequence[Hashable] | None = None) -> PaperMachine:
    """Algorithm BuildStateMachine of the paper for one compiled sequence.

    Args:
        seq: the compiled sequence.
        labels: the label of each step (default: the primitive index of each step, as numbered
            by its own subscription; pass global primitive ids to compare across subscriptions).
            Time conditions on a step are added to its label.

    Returns:
        The graph: self and secondary links on every step followed by ``;``.
    """
    base = list(seq.steps if labels is None else labels)
    if len(base) != len(seq.steps):
        raise PredictArgumentError(f"argument labels: expected {len(seq.steps)} labels, found {len(base)}")
    conds: dict[int, list[str]] = {}
    for c in seq.times:
        conds.setdefault(c.later, []).append(c.text)
    full = tuple((b, tuple(sorted(conds[j]))) if j in conds else b for j, b in enumerate(base))
    loops = (False, *(link == "followed" for link in seq.links), False)
    return PaperMachine(full, loops)


@dataclass(frozen=True, eq=False)
class PrefixMergeReport:
    """What :func:`merge_prefix` found.

    Attributes:
        unmerged: states without merging (``sum(k + 1)``).
        merged: states after merging (equivalence classes).
        commonality: ``1 - merged / unmerged``.
        classes: class of every state, machine after machine (machine ``j``'s state ``i`` is
            ``offsets[j] + i``), numbered in order of first state.
        offsets: ``(M + 1,)`` first state of each machine.
        rounds: refinement rounds (the last split nothing).
    """

    unmerged: int
    merged: int
    commonality: float
    classes: np.ndarray
    offsets: np.ndarray
    rounds: int


def _first_order(labels: np.ndarray) -> np.ndarray:
    _, first, inv = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inv.ravel()]


def merge_graph(n_states: int, src: np.ndarray, dst: np.ndarray, label: np.ndarray) -> tuple[np.ndarray, int]:
    """The paper's equivalence (module docstring) on any graph given as labelled edges.

    Args:
        n_states: states ``0 .. n_states - 1``.
        src, dst: the edges.
        label: integer label of each edge.

    Returns:
        ``(classes, rounds)``: the class of every state in order of first state, and the rounds.

    Example:
        >>> # 0 -x-> 1, 2 -x-> 3, 3 -y-> 3: 1 and 3 differ (3 has two incoming transitions)
        >>> merge_graph(4, np.array([0, 2, 3]), np.array([1, 3, 3]), np.array([0, 0, 1]))
        (array([0, 1, 0, 2]), 2)
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    label = np.asarray(label, dtype=np.int64)
    if n_states == 0:
        return np.zeros(0, dtype=np.int64), 0
    indeg = np.bincount(dst, minlength=n_states)
    width = int(indeg.max()) if len(dst) else 0
    order = np.argsort(dst, kind="stable")
    slot = np.arange(len(dst)) - np.repeat(np.r_[0, np.cumsum(indeg)[:-1]], indeg)
    n_labels = int(label.max()) + 1 if len(label) else 1
    cls = np.zeros(n_states, dtype=np.int64)
    n_cls = 1
    rounds = 0
    while True:
        rounds += 1
        key = np.full((n_states, max(width, 1)), -1, dtype=np.int64)
        key[dst[order], slot] = cls[src[order]] * n_labels + label[order]
        key.sort(axis=1)
        # condition (2) compares the *sets* of (class of source, label): drop repeats in a row
        if width > 1:
            rep = np.zeros_like(key, dtype=bool)
            rep[:, 1:] = key[:, 1:] == key[:, :-1]
            key[rep] = -1
            key.sort(axis=1)
        rows = np.column_stack([cls, indeg, key])
        _, inv = np.unique(rows, axis=0, return_inverse=True)
        inv = inv.ravel()
        n_new = int(inv.max()) + 1
        if n_new == n_cls:
            break
        cls, n_cls = inv, n_new
    return _first_order(cls), rounds


def merge_prefix(machines: Sequence[PaperMachine]) -> PrefixMergeReport:
    """Merge the states of BuildStateMachine graphs by the paper's rule (module docstring).

    Args:
        machines: the graphs; labels compare across machines (use global primitive ids).

    Returns:
        The report: states before and after, commonality, classes.
    """
    offsets = np.zeros(len(machines) + 1, dtype=np.int64)
    for j, m in enumerate(machines):
        offsets[j + 1] = offsets[j] + m.k + 1
    ids: dict[Hashable, int] = {STAR: 0}
    src: list[int] = []
    dst: list[int] = []
    lab: list[int] = []
    for j, m in enumerate(machines):
        base = int(offsets[j])
        for s, t, label in m.edges():
            src.append(base + s)
            dst.append(base + t)
            lab.append(ids.setdefault(label, len(ids)))
    total = int(offsets[-1])
    classes, rounds = merge_graph(total, np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64),
                                  np.array(lab, dtype=np.int64))
    merged = int(classes.max()) + 1 if total else 0
    return PrefixMergeReport(total, merged, 1.0 - merged / total if total else 0.0, classes, offsets, rounds)


def paper_tables(machines: Sequence[PaperMachine], truth: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The machines as one deterministic flat table over symbols (module docstring, the chain).

    Args:
        machines: the graphs; labels must be primitive ids (columns of ``truth``), without time
            conditions.
        truth: ``(G, P)`` which primitives each symbol satisfies.

    Returns:
        ``(next, accepting, offsets)``: ``(S, G)`` flat next state, ``(S,)`` final states,
        ``(M + 1,)`` first state of each machine.

    Example:
        >>> m = PaperMachine((0, 1), (False, False, False))           # a, b
        >>> nxt, acc, off = paper_tables([m], np.array([[False, False], [True, False], [False, True]]))
        >>> nxt.tolist(), acc.tolist()
        ([[0, 1, 0], [0, 1, 2], [0, 1, 0]], [False, False, True])
    """
    truth = np.asarray(truth, dtype=bool)
    n_sym = truth.shape[0]
    offsets = np.zeros(len(machines) + 1, dtype=np.int64)
    blocks: list[np.ndarray] = []
    acc: list[np.ndarray] = []
    for j, m in enumerate(machines):
        if not all(isinstance(x, (int, np.integer)) for x in m.labels):
            raise PredictArgumentError("paper_tables: labels must be primitive ids (no time conditions)")
        k = m.k
        hit = truth[:, list(m.labels)].T                     # (k, G): step j+1 holds on symbol g
        restart = hit[0].astype(np.int64)                    # N_0 (or N_k) reading g
        block = np.empty((k + 1, n_sym), dtype=np.int64)
        for i in range(k):
            other = np.full(n_sym, i, dtype=np.int64) if m.loops[i] and i > 0 else restart
            block[i] = np.where(hit[i], i + 1, other)
        block[k] = restart
        blocks.append(block + offsets[j])
        a = np.zeros(k + 1, dtype=bool)
        a[k] = True
        acc.append(a)
        offsets[j + 1] = offsets[j] + k + 1
    nxt = np.concatenate(blocks) if blocks else np.zeros((0, n_sym), dtype=np.int64)
    accepting = np.concatenate(acc) if acc else np.zeros(0, dtype=bool)
    return nxt, accepting, offsets


def paper_chain(next_: np.ndarray, accepting: np.ndarray, pairs: np.ndarray, freq: np.ndarray) -> Chain:
    """The chain of a flat table trained as on the paper's line 387 (normalised by arrivals).

    ``P[i, j] = N(i -> j) / sum_k N(k -> i)``, where an instance's first placement in its start
    state also counts as an arrival: the denominator is ``max(arrivals, departures)`` (without
    that, a start state left more often than entered would get a row summing to more than 1). A
    state never left gets the row of the symbol frequencies (as ours); with no training events
    at all a state stays where it is.

    Args:
        next_: ``(S, G)`` table.
        accepting: ``(S,)`` final states.
        pairs: ``(S, G)`` how often each state read each symbol.
        freq: ``(G,)`` training symbol counts.

    Example:
        >>> c = paper_chain(np.array([[0, 1], [0, 1]]), np.array([False, True]),
        ...                 np.array([[3, 1], [1, 0]]), np.array([4, 1]))
        >>> c.matrix().tolist()      # arrivals: state 0 four times (3 + 1), state 1 once
        [[0.75, 0.25], [1.0, 0.0]]
    """
    next_ = np.asarray(next_, dtype=np.int64)
    n_states, n_sym = next_.shape
    pairs = np.asarray(pairs, dtype=np.float64)
    src = np.repeat(np.arange(n_states, dtype=np.int64), n_sym)
    dst = next_.ravel()
    cnt = pairs.ravel()
    arrivals = np.bincount(dst, weights=cnt, minlength=n_states)
    departures = pairs.sum(axis=1)
    denom = np.maximum(arrivals, departures)
    seen = departures > 0
    freq = np.asarray(freq, dtype=np.float64)
    fr = freq / freq.sum() if freq.sum() > 0 else np.zeros(n_sym)
    weight = np.zeros((n_states, n_sym))
    weight[seen] = pairs[seen] / denom[seen, None]
    weight[~seen] = fr
    p = weight.ravel()
    keep = p > 0
    key, inv = np.unique(src[keep] * max(n_states, 1) + dst[keep], return_inverse=True)
    prob = np.bincount(inv.ravel(), weights=p[keep], minlength=len(key))
    src_k, dst_k = np.divmod(key, max(n_states, 1))
    stuck = np.flatnonzero(~seen & (freq.sum() <= 0))
    if len(stuck):
        src_k, dst_k, prob = np.r_[src_k, stuck], np.r_[dst_k, stuck], np.r_[prob, np.ones(len(stuck))]
    return Chain(np.arange(n_states, dtype=np.int64), src_k.astype(np.int64), dst_k.astype(np.int64),
                 prob, np.asarray(accepting, dtype=bool))
