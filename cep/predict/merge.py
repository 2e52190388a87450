"""Merging equivalent states across many subscriptions (P-ToPSS section 4.3, as we reconstruct it).

Muthusamy, Liu and Jacobsen (DEBS 2010), section 4.3, merge the state machines of many
subscriptions so that states they have in common are stored, matched and trained once, and
report the *commonality* of a workload. The paper's text is not available to us; this is our
reconstruction, and the definition it rests on is ours:

    Two states are **equivalent** when they have the same future behaviour: they are both
    matched states or both not, and for every symbol their next states are equivalent.

This is the Myhill-Nerode / Moore equivalence of the machines read as one automaton over a
common alphabet of symbols (the signatures of :mod:`cep.predict.events`): from equivalent
states every future sequence of events produces the same sequence of "a match ends here"
answers, so a Markov chain over the merged states predicts the same way for all of them (under
an i.i.d. event model exactly, :mod:`cep.predict.many`). Sharing a *prefix* is not
equivalence: after ``A, B`` the subscriptions ``A, B, C`` and ``A, B, D`` wait for different
events, so their states have different futures and stay apart. What does merge is a common
*future*: a state waiting at a ``;`` forgets how it got there (its machine drops the positions
below a live self-looping one), so ``X ; A, B`` after ``X``, ``Y ; A, B`` after ``Y`` and the start
of ``A, B`` are one state, as are the states of identical subscriptions. Equivalence is relative
to the alphabet given: symbols that never occur cannot tell states apart.

:func:`flat_table` puts every machine's :class:`~cep.predict.machine.TransitionTable` into one
flat table over the common symbols (machine ``j``'s states are rows ``offsets[j]`` ..
``offsets[j + 1] - 1``, its start state row ``offsets[j]``); :func:`partition` computes the
coarsest equivalence by Moore's partition refinement, vectorised: the classes start as
"matched or not", and each round gives every state the row ``(class, class of next state under
each symbol)`` and renumbers the distinct rows with ``np.unique`` (over exact-checked row
hashes, :func:`partition`), until a round splits no class (at most one round more than the
longest word needed to tell two states apart). :func:`merge_states` returns a :class:`MergeReport` with the states before and after
merging and the commonality ``1 - merged / unmerged``.

Example:
    >>> import numpy as np
    >>> from cep.predict.machine import SequenceMachine
    >>> # primitives X, Y, A, B are bits 0..3; the machines X ; A, B  and  Y ; A, B  and  A, B
    >>> ms = [SequenceMachine(3, (0, 2, 3), 0b011, ("X", "A", "B")),
    ...       SequenceMachine(3, (1, 2, 3), 0b011, ("Y", "A", "B")),
    ...       SequenceMachine(2, (2, 3), 0b001, ("A", "B"))]
    >>> r = merge_states(ms, np.array([0, 1, 2, 4, 8]))      # no match, X, Y, A, B
    >>> r.unmerged, r.merged, round(r.commonality, 3)
    (11, 5, 0.545)
    >>> r.classes.tolist()
    [0, 1, 2, 3, 4, 1, 2, 3, 1, 2, 3]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from cep.predict.errors import PredictArgumentError
from cep.predict.machine import MAX_STATES, SequenceMachine, TransitionTable

__all__ = ["FlatTable", "MergeReport", "first_order", "flat_table", "merge_states", "partition"]


@dataclass(frozen=True, eq=False)
class FlatTable:
    """The transition tables of many machines in one table over a common alphabet.

    Attributes:
        next: ``(S, G)`` int32: ``next[s, g]`` is the flat state after flat state ``s`` reads
            symbol ``g``.
        accepting: ``(S,)`` whether a flat state means "a match ended here".
        masks: ``(S,)`` int64 mask of each flat state in its own machine.
        owner: ``(S,)`` int32 machine of each flat state.
        offsets: ``(M + 1,)`` int64: machine ``j`` owns rows ``offsets[j]`` .. ``offsets[j+1]-1``,
            its start state is row ``offsets[j]``.
        local: ``(M, G)`` int32: machine ``j``'s own symbol number of each common symbol.
        tables: each machine's :class:`TransitionTable` over its own symbols.
        local_sigs: per machine, the signature of each of its own symbols.
    """

    next: np.ndarray
    accepting: np.ndarray
    masks: np.ndarray
    owner: np.ndarray
    offsets: np.ndarray
    local: np.ndarray
    tables: tuple[TransitionTable, ...]
    local_sigs: tuple[np.ndarray, ...]

    @property
    def n_states(self) -> int:
        """Flat states ``S`` (all machines)."""
        return int(self.next.shape[0])

    @property
    def n_symbols(self) -> int:
        """Common symbols ``G``."""
        return int(self.next.shape[1])

    @property
    def n_machines(self) -> int:
        """Machines ``M``."""
        return len(self.tables)

    @property
    def starts(self) -> np.ndarray:
        """``(M,)`` flat start state of each machine."""
        return self.offsets[:-1].copy()

    def state_ids(self, masks: np.ndarray) -> np.ndarray:
        """Flat states of masks given per machine: ``masks`` is ``(..., M)``, each a state of its
        machine's table (a ``KeyError`` otherwise)."""
        masks = np.asarray(masks, dtype=np.int64)
        out = np.empty(masks.shape, dtype=np.int64)
        flat = masks.reshape(-1, self.n_machines)
        res = out.reshape(-1, self.n_machines)
        for j, table in enumerate(self.tables):
            base = int(self.offsets[j])
            res[:, j] = [base + table.index[int(m)] for m in flat[:, j].tolist()]
        return out


def _per_machine(sigs: np.ndarray, n_machines: int) -> np.ndarray:
    sigs = np.asarray(sigs, dtype=np.int64)
    if sigs.ndim == 1:
        return np.broadcast_to(sigs, (n_machines, len(sigs)))
    if sigs.ndim == 2 and sigs.shape[0] == n_machines:
        return sigs
    raise PredictArgumentError(f"argument sigs: expected one signature per symbol (shape (G,)) or one "
                               f"row per machine (shape ({n_machines}, G)), found shape {sigs.shape}")


def flat_table(machines: Sequence[SequenceMachine], sigs: np.ndarray,
               extra: Sequence[Sequence[int]] | np.ndarray | None = None,
               max_states: int = MAX_STATES) -> FlatTable:
    """The machines' tables in one flat table over common symbols (module docstring).

    Args:
        machines: the machines.
        sigs: the signature of each common symbol, ``(G,)`` when all machines number their
            primitives alike, or ``(M, G)``: machine ``j``'s signature of each symbol.
        extra: per machine, masks that must be states (e.g. carried over from a run); an
            ``(n, M)`` array gives column ``j`` to machine ``j``.
        max_states: the most states of one machine.

    Raises:
        PredictArgumentError: ``sigs`` of the wrong shape (``CEP-PRED-011``).
        PredictLimitError: a machine with more than ``max_states`` states (``CEP-PRED-020``).
    """
    per = _per_machine(sigs, len(machines))
    n_sym = per.shape[1]
    if isinstance(extra, np.ndarray):
        extra = [extra[..., j].ravel().tolist() for j in range(len(machines))] if extra.size else None
    blocks: list[np.ndarray] = []
    tables: list[TransitionTable] = []
    local_sigs: list[np.ndarray] = []
    local = np.zeros((len(machines), n_sym), dtype=np.int32)
    offsets = np.zeros(len(machines) + 1, dtype=np.int64)
    for j, machine in enumerate(machines):
        uniq, inv = np.unique(per[j], return_inverse=True)
        table = machine.table(uniq, tuple(int(m) for m in extra[j]) if extra is not None else (),
                              max_states=max_states)
        blocks.append(table.next[:, inv.ravel()].astype(np.int64) + offsets[j])
        tables.append(table)
        local_sigs.append(uniq)
        local[j] = inv.ravel()
        offsets[j + 1] = offsets[j] + table.n_states
    total = int(offsets[-1])
    next_ = (np.concatenate(blocks) if blocks else np.zeros((0, n_sym), dtype=np.int64)).astype(np.int32)
    accepting = np.concatenate([t.accepting for t in tables]) if tables else np.zeros(0, dtype=bool)
    masks = np.concatenate([t.masks for t in tables]) if tables else np.zeros(0, dtype=np.int64)
    owner = np.repeat(np.arange(len(machines), dtype=np.int32), np.diff(offsets))
    assert len(owner) == total
    return FlatTable(next_, accepting.astype(bool), masks.astype(np.int64), owner, offsets, local,
                     tuple(tables), tuple(local_sigs))


def first_order(labels: np.ndarray) -> np.ndarray:
    """Relabel ``labels`` ``0, 1, ...`` in order of first appearance.

    Example:
        >>> first_order(np.array([7, 3, 7, 9, 3])).tolist()
        [0, 1, 0, 2, 1]
    """
    labels = np.asarray(labels)
    if len(labels) == 0:
        return np.zeros(0, dtype=np.int64)
    _, first, inv = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inv.ravel()]


# Row hashing weights of :func:`partition` (fixed, so the partition is deterministic; odd, so that
# a single differing class id always changes the hash).
_WEIGHTS = np.random.default_rng(0x5EED).integers(1, np.iinfo(np.int64).max, size=4096, dtype=np.int64) | 1


def partition(next_: np.ndarray, accepting: np.ndarray, *, hashed: bool = True) -> tuple[np.ndarray, int]:
    """The coarsest partition into equivalent states (Moore refinement, module docstring).

    Each round groups the states by their row ``(class, class of next state under each symbol)``.
    With ``hashed`` (the default) the rows are grouped by ``np.unique`` over a 64-bit hash of
    the row (a weighted sum of its class ids, wrapping around), then every row is compared with
    the first row of its group; if a hash collision put different rows together, that round
    uses ``np.unique(rows, axis=0)`` instead, so the result is exact either way. Measured at
    33,000 states of 3,000 synthetic subscriptions (50 symbols, 11 rounds): 0.12 CPU-s hashed,
    2.4 CPU-s with ``np.unique(rows, axis=0)``.

    Args:
        next_: ``(S, G)`` transition table over states ``0 .. S-1``.
        accepting: ``(S,)`` matched states.
        hashed: group rows through hashes (exact, faster) or directly with ``np.unique(axis=0)``.

    Returns:
        ``(classes, rounds)``: the class of every state, numbered in order of first state, and
        the number of refinement rounds (the last one split nothing).

    Example:
        >>> nxt = np.array([[1, 0], [2, 0], [2, 0], [1, 0]])     # states 0 and 3 behave alike
        >>> partition(nxt, np.array([False, False, True, False]))
        (array([0, 1, 2, 0]), 2)
    """
    next_ = np.asarray(next_)
    n_states, n_sym = next_.shape
    if n_states == 0:
        return np.zeros(0, dtype=np.int64), 0
    weights = _WEIGHTS[np.arange(n_sym + 1) % len(_WEIGHTS)]
    cls = first_order(np.asarray(accepting, dtype=bool))
    n_cls = int(cls.max()) + 1
    rounds = 0
    while True:
        rounds += 1
        succ = cls[next_]
        inv = None
        if hashed:
            with np.errstate(over="ignore"):
                h = cls * weights[0] + (succ * weights[1:]).sum(axis=1)
            _, first, inv = np.unique(h, return_index=True, return_inverse=True)
            rep = first[inv.ravel()]
            if not ((cls[rep] == cls).all() and (succ[rep] == succ).all()):
                inv = None                              # a collision: group the rows themselves
        if inv is None:
            _, inv = np.unique(np.column_stack([cls, succ]), axis=0, return_inverse=True)
        inv = inv.ravel()
        n_new = int(inv.max()) + 1
        if n_new == n_cls:
            break
        cls, n_cls = inv, n_new
    return first_order(cls), rounds


@dataclass(frozen=True, eq=False)
class MergeReport:
    """What :func:`merge_states` found.

    Attributes:
        unmerged: states without merging (the flat table's rows, all machines).
        merged: states with merging (equivalence classes).
        commonality: ``1 - merged / unmerged`` (0 when there are no states).
        classes: ``(S,)`` class of each flat state.
        next: ``(merged, G)`` the merged table: ``next[c, g]`` is the class after class ``c``
            reads symbol ``g``.
        accepting: ``(merged,)`` matched classes.
        rounds: refinement rounds.
        flat: the flat table that was merged.
    """

    unmerged: int
    merged: int
    commonality: float
    classes: np.ndarray
    next: np.ndarray
    accepting: np.ndarray
    rounds: int
    flat: FlatTable


def merge_tables(flat: FlatTable) -> MergeReport:
    """Merge the equivalent states of a flat table (:func:`merge_states` for a built table)."""
    classes, rounds = partition(flat.next, flat.accepting)
    n_cls = int(classes.max()) + 1 if len(classes) else 0
    rep = np.zeros(n_cls, dtype=np.int64)
    if n_cls:
        _, first = np.unique(classes, return_index=True)
        rep = first.astype(np.int64)
    nxt = classes[flat.next[rep]].astype(np.int32) if n_cls else np.zeros((0, flat.n_symbols), np.int32)
    unmerged = flat.n_states
    common = 1.0 - n_cls / unmerged if unmerged else 0.0
    return MergeReport(unmerged, n_cls, common, classes, nxt, flat.accepting[rep], rounds, flat)


def merge_states(machines: Sequence[SequenceMachine], sigs: np.ndarray,
                 extra: Sequence[Sequence[int]] | np.ndarray | None = None,
                 max_states: int = MAX_STATES) -> MergeReport:
    """Merge equivalent states across ``machines`` over one alphabet (module docstring).

    Args:
        machines: the machines (one per subscription sequence).
        sigs: the common symbols' signatures, ``(G,)`` or ``(M, G)`` (:func:`flat_table`).
        extra: per machine, masks that must be states (:func:`flat_table`).
        max_states: the most states of one machine.

    Raises:
        PredictArgumentError, PredictLimitError: as :func:`flat_table`.
    """
    return merge_tables(flat_table(machines, sigs, extra, max_states))
