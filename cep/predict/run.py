"""Algorithms Match and Prune: running sequence machines over instances of events.

Muthusamy et al. (DEBS 2010), section 4.2. Each instance (a partition, or a binding of the join
variables, :func:`cep.predict.events.instances`) runs every sequence machine of the
subscription from the state it was left in (the start state, or the state persisted by the last
batch). Two matchers:

* **table** (no time conditions): the machine's transition table over the symbols present
  (:meth:`cep.predict.machine.SequenceMachine.table`), one lookup per event;
* **time lists** (``@`` conditions): the paper's time lists and time-compatibility sets. A live
  partial match is a *configuration* ``(position, times)`` where ``times`` holds the timestamps
  bound to the steps that some time condition reads. An event extends every configuration whose
  next primitive it satisfies and whose time conditions hold (Algorithm Match); configurations
  that can no longer satisfy a pending ``<`` / ``<=`` condition (events come in time order) and
  configurations dominated by another of the same position (a later binding is never worse for
  ``<`` bounds, an earlier one never worse for ``>`` bounds) are dropped (Algorithm Prune). The
  machine's state is the reduced mask of the live positions.

Both loop over events in Python: the recurrence is sequential per instance, and a list lookup
per event (about 0.1 us) was measured faster than vectorised alternatives (an associative scan
over transition functions costs ``O(n S log n)``); see BENCHMARKS.md "predict_match core".

Training counts come out of the same pass: how often each ``(state, signature)`` was followed by
each state, which is what a Markov chain needs (:mod:`cep.predict.markov`).

Example:
    >>> import numpy as np
    >>> from cep.predict.subscription import compile_subscription
    >>> from cep.predict.machine import SequenceMachine
    >>> leaf = compile_subscription("PATTERN A, B").leaves[0]
    >>> m = SequenceMachine.from_sequence(leaf)
    >>> sigs = np.array([0, 1, 2])                      # symbols: other, A, B
    >>> r = run_leaf(m, leaf, np.array([1, 2, 1, 1, 2]), sigs, np.arange(5), np.array([0]))
    >>> r.masks.tolist(), r.accepted.tolist()
    ([3, 5, 3, 3, 5], [False, True, False, False, True])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cep.predict.errors import PredictLimitError
from cep.predict.machine import SequenceMachine
from cep.predict.subscription import Sequence, TimeCondition

MAX_CONFIGS = 10_000

Config = tuple[int, tuple]  # (position, timestamps of the steps time conditions read, None if unbound)


@dataclass(frozen=True, eq=False)
class LeafResult:
    """One machine run over all instances.

    Attributes:
        masks: the state mask after each event.
        accepted: whether a match ends at each event.
        end_masks: the state mask at the end of each instance.
        end_configs: for machines with time conditions, the live configurations at the end of
            each instance (else None).
        counts: transitions as columns ``(from_mask, sig, to_mask, count)``.
    """

    masks: np.ndarray
    accepted: np.ndarray
    end_masks: np.ndarray
    end_configs: list[list[Config]] | None
    counts: "TransitionCounts"


@dataclass(frozen=True, eq=False)
class TransitionCounts:
    """How often state ``from_mask`` read signature ``sig`` and went to ``to_mask`` (sorted, unique)."""

    from_mask: np.ndarray
    sig: np.ndarray
    to_mask: np.ndarray
    count: np.ndarray

    @classmethod
    def empty(cls) -> "TransitionCounts":
        """No transitions."""
        z = np.zeros(0, dtype=np.int64)
        return cls(z, z, z, z)

    @classmethod
    def from_triples(cls, f: np.ndarray, s: np.ndarray, t: np.ndarray,
                     c: np.ndarray | None = None) -> "TransitionCounts":
        """Aggregate (possibly repeated) triples, each counted ``c`` times (default once)."""
        f = np.asarray(f, dtype=np.int64)
        s = np.asarray(s, dtype=np.int64)
        t = np.asarray(t, dtype=np.int64)
        c = np.ones(len(f), dtype=np.int64) if c is None else np.asarray(c, dtype=np.int64)
        if len(f) == 0:
            return cls.empty()
        rows = np.stack([f, s, t], axis=1)
        uniq, inv = np.unique(rows, axis=0, return_inverse=True)
        total = np.bincount(inv.ravel(), weights=c, minlength=len(uniq)).astype(np.int64)
        keep = total != 0
        return cls(uniq[keep, 0].copy(), uniq[keep, 1].copy(), uniq[keep, 2].copy(), total[keep])

    def merge(self, other: "TransitionCounts") -> "TransitionCounts":
        """The sum of two count tables (training on two batches)."""
        return TransitionCounts.from_triples(np.r_[self.from_mask, other.from_mask],
                                             np.r_[self.sig, other.sig],
                                             np.r_[self.to_mask, other.to_mask],
                                             np.r_[self.count, other.count])

    @property
    def total(self) -> int:
        """Number of transitions counted."""
        return int(self.count.sum())

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TransitionCounts)
                and all(np.array_equal(a, b) for a, b in zip(self.columns(), other.columns())))

    def columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The four columns."""
        return self.from_mask, self.sig, self.to_mask, self.count


def run_leaf(machine: SequenceMachine, leaf: Sequence, symbol: np.ndarray, sigs: np.ndarray,
             ts: np.ndarray, starts: np.ndarray, start_masks: np.ndarray | None = None,
             start_configs: list[list[Config]] | None = None,
             max_configs: int = MAX_CONFIGS) -> LeafResult:
    """Run one sequence machine over every instance (module docstring).

    Args:
        machine: the compiled machine of ``leaf``.
        leaf: the sequence (its time conditions).
        symbol: per event, its symbol; ``sigs[symbol]`` is its signature.
        sigs: signature of each symbol.
        ts: timestamps, in time order within each instance.
        starts: positions where instances start (the first is 0 when there are events).
        start_masks: per instance, the state to start from (default the start state).
        start_configs: per instance, the configurations to start from (time conditions only).
        max_configs: the most live configurations an instance may hold.

    Raises:
        PredictLimitError: more live configurations than ``max_configs`` (``CEP-PRED-020``).
    """
    if leaf.times:
        return _run_timed(machine, leaf, symbol, sigs, ts, starts, start_masks, start_configs,
                          max_configs)
    return _run_table(machine, symbol, sigs, starts, start_masks)


def _bounds(n: int, starts: np.ndarray) -> list[tuple[int, int]]:
    s = [int(x) for x in starts]
    return [(a, b) for a, b in zip(s, s[1:] + [n])]


def _run_table(machine: SequenceMachine, symbol: np.ndarray, sigs: np.ndarray, starts: np.ndarray,
               start_masks: np.ndarray | None) -> LeafResult:
    n = len(symbol)
    extra = () if start_masks is None else tuple(int(m) for m in start_masks)
    table = machine.table(sigs, extra)
    nxt = table.next.tolist()
    sym = symbol.tolist()
    out = [0] * n
    first_state = [0] * len(starts)
    ends = []
    for g, (a, b) in enumerate(_bounds(n, starts)):
        s = 0 if start_masks is None else table.index[int(start_masks[g])]
        first_state[g] = s
        for i in range(a, b):
            s = nxt[s][sym[i]]
            out[i] = s
        ends.append(s)
    idx = np.array(out, dtype=np.int64)
    masks = table.masks[idx] if n else np.zeros(0, dtype=np.int64)
    prev = np.empty(n, dtype=np.int64)
    if n:
        prev[1:] = idx[:-1]
        prev[np.asarray(starts, dtype=np.int64)] = first_state
    # Transitions are counted per (state, symbol) with one bincount, then named by masks.
    n_sym = table.next.shape[1]
    pair = np.bincount(prev * n_sym + symbol, minlength=table.n_states * n_sym) if n else np.zeros(0)
    nz = np.flatnonzero(pair)
    f_idx, s_idx = np.divmod(nz, n_sym)
    counts = TransitionCounts(table.masks[f_idx], np.asarray(sigs, dtype=np.int64)[s_idx],
                              table.masks[table.next[f_idx, s_idx]], pair[nz].astype(np.int64))
    order = np.lexsort((counts.to_mask, counts.sig, counts.from_mask))
    counts = TransitionCounts(*(c[order] for c in counts.columns()))
    end_masks = table.masks[np.array(ends, dtype=np.int64)] if ends else np.zeros(0, dtype=np.int64)
    return LeafResult(masks, table.accepting[idx] if n else np.zeros(0, bool), end_masks, None, counts)


# -- time lists -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _TimePlan:
    read: tuple[int, ...]                          # steps whose timestamps conditions read
    slot: dict[int, int]                           # step -> index in a configuration's times
    checks: dict[int, tuple[TimeCondition, ...]]   # later step -> its conditions
    prefer_late: tuple[bool | None, ...]           # per slot: later binding better / earlier / mixed


def _plan(leaf: Sequence) -> _TimePlan:
    read = tuple(sorted({c.earlier for c in leaf.times}))
    slot = {s: i for i, s in enumerate(read)}
    checks: dict[int, list[TimeCondition]] = {}
    prefs: dict[int, set[bool]] = {s: set() for s in read}
    for c in leaf.times:
        checks.setdefault(c.later, []).append(c)
        prefs[c.earlier].add(c.op in ("<", "<="))
    prefer = tuple(next(iter(prefs[s])) if len(prefs[s]) == 1 else None for s in read)
    return _TimePlan(read, slot, {k: tuple(v) for k, v in checks.items()}, prefer)


def _expired(plan: _TimePlan, cfg: Config, now: float) -> bool:
    j, times = cfg
    for later, conds in plan.checks.items():
        if later < j:
            continue
        for c in conds:
            t = times[plan.slot[c.earlier]]
            if t is None:
                continue
            if (c.op == "<" and now - t >= c.bound) or (c.op == "<=" and now - t > c.bound):
                return True
    return False


def _prune(plan: _TimePlan, configs: list[Config], now: float) -> list[Config]:
    live = [c for c in configs if not _expired(plan, c, now)]
    by_pos: dict[int, list[Config]] = {}
    for c in live:
        by_pos.setdefault(c[0], []).append(c)
    kept: list[Config] = []
    for j in sorted(by_pos):
        group = list(dict.fromkeys(by_pos[j]))
        if len(group) > 1:
            group = [c for c in group if not any(o is not c and _dominates(plan, o, c) for o in group)]
        kept.extend(group)
    return kept


def _dominates(plan: _TimePlan, a: Config, b: Config) -> bool:
    """Whether ``a`` can complete every match ``b`` can (same position, better or equal times)."""
    strictly = False
    for k, prefer in enumerate(plan.prefer_late):
        ta, tb = a[1][k], b[1][k]
        if ta == tb:
            continue
        if ta is None or tb is None or prefer is None:
            return False
        if (ta > tb) != prefer:
            return False
        strictly = True
    return strictly


def _mask_of(machine: SequenceMachine, configs: list[Config]) -> int:
    mask = 0
    for j, _ in configs:
        mask |= 1 << j
    return machine.reduce(mask)


def _run_timed(machine: SequenceMachine, leaf: Sequence, symbol: np.ndarray, sigs: np.ndarray,
               ts: np.ndarray, starts: np.ndarray, start_masks: np.ndarray | None,
               start_configs: list[list[Config]] | None, max_configs: int) -> LeafResult:
    plan = _plan(leaf)
    n = len(symbol)
    empty_times = (None,) * len(plan.read)
    origin: Config = (0, empty_times)
    sig_of = [int(s) for s in sigs]
    sym = symbol.tolist()
    tlist = ts.tolist()
    masks = np.zeros(n, dtype=np.int64)
    accepted = np.zeros(n, dtype=bool)
    prev_masks = np.zeros(n, dtype=np.int64)
    end_masks: list[int] = []
    end_configs: list[list[Config]] = []
    k = machine.k
    loops = machine.loops
    for g, (a, b) in enumerate(_bounds(n, starts)):
        if start_configs is not None:
            configs = [(int(j), tuple(t)) for j, t in start_configs[g]]
        else:
            configs = [origin]
        if origin not in configs:
            configs.append(origin)
        # A persisted mask also remembers "a match ended at the last event" (position k).
        mask = _mask_of(machine, configs) if start_masks is None else int(start_masks[g])
        for i in range(a, b):
            sig = sig_of[sym[i]]
            now = tlist[i]
            nxt: list[Config] = []
            for j, times in configs:
                if loops >> j & 1:
                    nxt.append((j, times))
                if j < k and (sig >> machine.prims[j]) & 1:
                    ok = all(c.holds(now, times[plan.slot[c.earlier]]) for c in plan.checks.get(j, ()))
                    if ok:
                        s = plan.slot.get(j)
                        new_times = times if s is None else times[:s] + (now,) + times[s + 1:]
                        nxt.append((j + 1, new_times))
            matched = any(j == k for j, _ in nxt)
            # The match is reported at this event; position k has no self link, so drop it now.
            configs = _prune(plan, [c for c in nxt if c[0] != k], now)
            if origin not in configs:
                configs.append(origin)
            if len(configs) > max_configs:
                raise PredictLimitError(f"an instance holds more than {max_configs} live partial "
                                        f"matches of {leaf.text!r}; tighten the time conditions")
            prev_masks[i] = mask
            mask = _mask_of(machine, configs) | (machine.accept_bit if matched else 0)
            masks[i] = mask
            accepted[i] = matched
        end_masks.append(mask)
        end_configs.append(configs)
    counts = TransitionCounts.from_triples(prev_masks, np.asarray(sigs, dtype=np.int64)[symbol],
                                           masks) if n else TransitionCounts.empty()
    return LeafResult(masks, accepted, np.array(end_masks, dtype=np.int64), end_configs, counts)
