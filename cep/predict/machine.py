"""BuildStateMachine: the state machine of one sequence subscription, and its transition table.

Muthusamy et al. (DEBS 2010), section 4.1, build one machine per sequence ``s1 op s2 ... sk``:
states ``0..k`` (state ``j``: the first ``j`` primitives matched), a *primary* link ``j -> j+1``
on events matching ``s(j+1)``, the sequence split into *terms* at the non-contiguous ``;``, a
*self* link on every state that starts a term (state 0 and each state followed by ``;``: any
other event keeps it), and *secondary* links from the other states back into their term when the
next event breaks contiguity.

We build the same machine exactly (no match is lost when primitives overlap, e.g. ``A, B, A, C``
on ``A B A B A C``) by letting a state be the *set* of positions that are live, as bits of an
int64 ``mask``: the secondary link of a mid-term state is then the subset construction itself
(the longest restart the last events allow, like KMP's failure links). Two reductions keep the
sets small and canonical, so a state is the same value in every run, batch and model:

* a self-looping position ``b`` subsumes every position below it (any match that the lower
  positions can still complete passes ``b`` later, and ``b`` can wait for it), so positions
  below the highest live self-looping one are dropped;
* position ``k`` (matched) has no self link: a state containing it means "a match ends at this
  event", and the next event moves on (overlapping matches are all reported).

For a sequence whose primitives cannot match the same event, the reachable masks are exactly
the paper's ``k + 1`` states, and the secondary links are the paper's: back to the term's start,
or one past it when the event matches the term's first primitive.

Events reach the machine as *signatures*: bit ``p`` set when the event satisfies primitive ``p``
of the subscription (:func:`cep.predict.events.signatures`). :meth:`SequenceMachine.table` builds the
deterministic transition table over the signatures that occur (states discovered breadth-first
from the start, in canonical mask order), which is what the matchers and the Markov chain use.

Example:
    >>> from cep.predict.subscription import compile_subscription
    >>> seq = compile_subscription("PATTERN A, B ; C").leaves[0]
    >>> m = SequenceMachine.from_sequence(seq)
    >>> A, B, C = 1, 2, 4
    >>> s = m.step(m.start, A); bin(s), m.progress(s)
    ('0b11', 1)
    >>> s = m.step(s, B); bin(s), m.progress(s)
    ('0b100', 2)
    >>> s = m.step(s, A); bin(s)
    '0b100'
    >>> s = m.step(s, C); bin(s), m.accepting(s)
    ('0b1100', True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cep.lang.ast import FOLLOWED
from cep.predict.errors import PredictLimitError
from cep.predict.subscription import Sequence

MAX_STATES = 4096


@dataclass(frozen=True)
class SequenceMachine:
    """The state machine of one sequence (module docstring); immutable.

    Attributes:
        k: the number of steps (state masks have bits ``0..k``).
        prims: the primitive index of each step (bit of the signature it reads).
        loops: mask of the self-looping positions (term starts).
        aliases: the step aliases, for labels.
    """

    k: int
    prims: tuple[int, ...]
    loops: int
    aliases: tuple[str, ...]

    @classmethod
    def from_sequence(cls, seq: Sequence) -> "SequenceMachine":
        """Algorithm BuildStateMachine: terms split at ``;``, self links at term starts."""
        loops = 1
        for j, link in enumerate(seq.links, start=1):
            if link == FOLLOWED:
                loops |= 1 << j
        return cls(len(seq.steps), seq.steps, loops, seq.aliases)

    @property
    def start(self) -> int:
        """The start state: only position 0 live."""
        return 1

    @property
    def accept_bit(self) -> int:
        """The bit of position ``k`` (matched)."""
        return 1 << self.k

    def reduce(self, mask: int) -> int:
        """Drop positions below the highest live self-looping position (they are subsumed)."""
        looping = mask & self.loops
        if looping:
            b = looping.bit_length() - 1
            mask &= ~((1 << b) - 1)
        return mask

    def step(self, mask: int, sig: int) -> int:
        """The state after one event with signature ``sig`` (primary, self and secondary links)."""
        nxt = 0
        m = mask
        while m:
            low = m & -m
            j = low.bit_length() - 1
            m ^= low
            if self.loops & low:
                nxt |= low
            if j < self.k and (sig >> self.prims[j]) & 1:
                nxt |= low << 1
        return self.reduce(nxt | 1 if not nxt & self.loops else nxt)

    def accepting(self, mask: int) -> bool:
        """Whether a match ends at the event that led to ``mask``."""
        return bool(mask & self.accept_bit)

    def progress(self, mask: int) -> int:
        """The paper's state number: the most primitives a live partial match has matched."""
        return mask.bit_length() - 1

    def label(self, mask: int) -> str:
        """Readable state: the aliases matched by the furthest live partial match (``-`` for none)."""
        j = self.progress(mask)
        return " ".join(self.aliases[:j]) if j else "-"

    def table(self, sigs: np.ndarray, extra: tuple[int, ...] = (),
              max_states: int = MAX_STATES) -> "TransitionTable":
        """The transition table over the signatures ``sigs`` (one per symbol).

        States are every mask reachable from the start and from ``extra`` (states carried from
        an earlier batch or a model) on those signatures.

        Raises:
            PredictLimitError: more than ``max_states`` states (``CEP-PRED-020``).
        """
        sig_list = [int(s) for s in np.asarray(sigs, dtype=np.int64)]
        states = StateNumbers(f"the state machine of {' '.join(self.aliases)!r}", max_states)
        for mask in (self.start, *(int(e) for e in extra)):
            states.add(mask)
        rows: list[list[int]] = []
        i = 0
        while i < len(states.masks):
            rows.append([states.add(self.step(states.masks[i], sig)) for sig in sig_list])
            i += 1
        masks, index = states.masks, states.index
        table = np.array(rows, dtype=np.int32).reshape(len(masks), len(sig_list))
        mask_arr = np.array(masks, dtype=np.int64)
        return TransitionTable(mask_arr, table, (mask_arr & self.accept_bit) != 0, index)


class StateNumbers:
    """Numbers state masks in order of discovery, refusing more than ``limit`` of them.

    Example:
        >>> n = StateNumbers("m", 2)
        >>> n.add(1), n.add(3), n.add(1), n.masks
        (0, 1, 0, [1, 3])
    """

    def __init__(self, what: str, limit: int) -> None:
        self.what, self.limit = what, limit
        self.masks: list[int] = []
        self.index: dict[int, int] = {}

    def add(self, mask: int) -> int:
        """The number of ``mask``, a new one when it is new.

        Raises:
            PredictLimitError: more than ``limit`` states (``CEP-PRED-020``).
        """
        j = self.index.get(mask)
        if j is None:
            if len(self.masks) >= self.limit:
                raise PredictLimitError(f"{self.what} has more than {self.limit} states")
            j = self.index[mask] = len(self.masks)
            self.masks.append(mask)
        return j


@dataclass(frozen=True, eq=False)
class TransitionTable:
    """A machine's deterministic table over a set of symbols.

    Attributes:
        masks: the state masks, indexed by state number (0 is the start).
        next: ``next[state, symbol]`` = next state number.
        accepting: per state, whether it means "a match ended here".
        index: mask -> state number.
    """

    masks: np.ndarray
    next: np.ndarray
    accepting: np.ndarray
    index: dict[int, int]

    @property
    def n_states(self) -> int:
        """Number of states."""
        return len(self.masks)
