"""Group probabilities with a transducer over possible worlds (Sugiura et al., DASFAA 2015, section 5).

The probability of a group is that of the **union** of its matches' sets of possible worlds
(Def. 9). Matches of one group overlap, so the union is not a sum, and enumerating worlds is
exponential in the span. The paper reads the span once with a *transducer*: a deterministic
automaton over the time point's value whose state says what matters for the future, and
whose distribution over states evolves by one matrix-vector product per time point
(equation 4: ``v(t) = v(t-1) M(t)``, ``M(t)[s, s'] = P(value at t moves s to s')``). The
probability of the absorbing state MATCHED at the end of the span is the group's probability.

Our transducer, built from the pattern's NFA (:mod:`cep.prob.pattern`) and the window ``w``:

- a state records, for every NFA state, the **youngest** live partial run in it (its length
  so far, or none). A younger run in the same NFA state has the same future and more of the
  window left, so older ones never matter; runs that can no longer accept within ``w`` are
  dropped. States are enumerated lazily from the empty one (section 5.1);
- two per-time-point flags restrict which matches count, which is what the paper's extra
  transducers for complete overlap do (section 5.2): a match may only **start** while
  ``t <= L`` (``T^A``: after ``L`` no new run starts) and only **ends** that are ``>= R``
  reach MATCHED (``T^B``: before ``R`` an accepting run keeps running instead). For single
  overlap ``L`` and ``R`` are the span's end and start, so neither flag restricts anything;
- a value that no class accepts is one symbol, so ``M(t)`` is a sum over a handful of 0/1
  matrices weighted by the symbol probabilities at ``t``.

**The paper's transducer** (``window=None``, what ``transducer_mode='paper'`` of :func:`cep.prob.match_prob`
builds): no window, so a state only records *which* NFA states hold a live run (the subset
construction of "any prefix, then the pattern", with MATCHED absorbing). For ``a, b+, c`` that
is the paper's Fig. 8 with ``|p| + 1 = 4`` states (MATCHED = the paper's state 3, ``{}`` = 0,
``{q1}`` = 1, ``{q2}`` = 2) and its matrix is equation (4); every match inside the span counts,
however long. The paper builds it from the NFA by three rules (section 5); for patterns whose
first class recurs (``a, a, b``) those rules lose runs, the subset construction does not
(docs/prob.md, "Paper vs ours").

:func:`group_probabilities` evolves the vectors of **all groups at once**: at offset ``k``
every group whose span is longer than ``k`` reads its time point ``t_start + k``; the update is
a gather-and-sum over states (``np.add.reduceat``) per flag combination and symbol, so the
cost is ``O(max span)`` numpy steps, each linear in (open groups x states).

Example:
    >>> import numpy as np
    >>> from cep.prob.pattern import compile_prob
    >>> from cep.prob.stream import from_wide
    >>> s = from_wide([1, 2, 3], [{"a": 0.5, "b": 0.5}, {"b": 1.0}, {"c": 0.8, "d": 0.2}])
    >>> tr = build_transducer(compile_prob("PATTERN a, b+, c"), window=3)
    >>> group_probabilities(tr, s, np.array([0]), np.array([2]), np.array([2]), np.array([0])).round(4).tolist()
    [0.4]
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from cep.prob.errors import ProbLimitError
from cep.prob.pattern import ProbPattern
from cep.prob.stream import ProbStream

MAX_STATES = 100_000
MATCHED = 0
EMPTY = 1
# Flag combinations (may a run start here?, does an accepting run count here?) -> table index.
PHASES = ((True, False), (True, True), (False, True), (False, False))


@dataclass(frozen=True, eq=False)
class Transducer:
    """The compiled transducer of a pattern and window (module docstring); immutable.

    Attributes:
        pattern: the compiled pattern.
        window: the longest match, in time points; None for the paper's transducer (no window).
        states: per state, the youngest run length in each NFA state 1..Q (0 = none; without
            a window 1 = a run is there);
            state 0 is MATCHED (absorbing), state 1 the empty state.
        table: ``table[phase][s, symbol]`` = next state (phases as in ``PHASES``).
        order, bounds, targets: per (phase, symbol), the source states sorted by target, the
            ``reduceat`` boundaries and the distinct targets (the sparse matrix, precomputed).
    """

    pattern: ProbPattern
    window: int | None
    states: tuple[tuple[int, ...], ...]
    table: np.ndarray
    order: tuple[tuple[np.ndarray, ...], ...]
    bounds: tuple[tuple[np.ndarray, ...], ...]
    targets: tuple[tuple[np.ndarray, ...], ...]

    @property
    def n_states(self) -> int:
        return len(self.states)

    def describe(self, state: int) -> str:
        """A readable name: ``MATCHED``, ``{}`` or the live runs, e.g. ``{q2:3}`` (``{q2}`` without a window)."""
        if state == MATCHED:
            return "MATCHED"
        runs = [f"q{q + 1}" if self.window is None else f"q{q + 1}:{ln}"
                for q, ln in enumerate(self.states[state]) if ln]
        return "{" + ", ".join(runs) + "}"


def build_transducer(pattern: ProbPattern, window: int | None, *, max_states: int = MAX_STATES) -> Transducer:
    """Enumerate the reachable transducer states of ``pattern`` under ``window`` (module docstring).

    Args:
        pattern: the compiled pattern.
        window: the longest match that counts, in time points; None builds the paper's
            transducer (no window: every match counts; states are sets of NFA states).
        max_states: the bound on the states (``CEP-PROB-020``).

    Raises:
        ProbLimitError: more than ``max_states`` states (``CEP-PROB-020``).
    """
    q_count = len(pattern.accepting) - 1
    n_sym = pattern.n_symbols
    accepting = pattern.accepting
    reach = _steps_to_accept(pattern)
    unbounded = window is None
    limit = 1 << 30 if window is None else window
    empty = (0,) * q_count
    index: dict[tuple[int, ...], int] = {(-1,): MATCHED, empty: EMPTY}
    states: list[tuple[int, ...]] = [(-1,), empty]
    rows: list[list[list[int]]] = [[[MATCHED] * n_sym, []] for _ in PHASES]
    queue = deque([EMPTY])
    while queue:
        s = queue.popleft()
        cur = states[s]
        for p, (can_start, counts) in enumerate(PHASES):
            row = []
            for sym in range(n_sym):
                nxt = [0] * q_count
                for q, ln in enumerate(cur):
                    if ln and ln < limit:
                        grown = 1 if unbounded else ln + 1  # without a window: presence only
                        for q2 in pattern.nfa[q + 1][sym]:
                            if nxt[q2 - 1] == 0 or grown < nxt[q2 - 1]:
                                nxt[q2 - 1] = grown
                if can_start:
                    for q2 in pattern.nfa[0][sym]:
                        nxt[q2 - 1] = 1
                if counts and any(ln and accepting[q + 1] for q, ln in enumerate(nxt)):
                    row.append(MATCHED)
                    continue
                # Drop runs that cannot reach an accepting state within the window any more.
                key = tuple(ln if ln and ln + reach[q + 1] <= limit else 0 for q, ln in enumerate(nxt))
                if key not in index:
                    if len(states) >= max_states:
                        where = ("without a window (the paper's transducer)" if unbounded
                                 else f"under window {window}; shorten the window")
                        raise ProbLimitError(f"the pattern needs more than {max_states:,} transducer states {where}")
                    index[key] = len(states)
                    states.append(key)
                    for r in rows:
                        r.append([])
                    queue.append(index[key])
                row.append(index[key])
            rows[p][s] = row
    table = np.array([[r if r else [0] * n_sym for r in phase_rows] for phase_rows in rows], dtype=np.int64)
    order, bounds, targets = [], [], []
    for p in range(len(PHASES)):
        po, pb, pt = [], [], []
        for sym in range(n_sym):
            dest = table[p][:, sym]
            o = np.argsort(dest, kind="stable")
            uniq, first = np.unique(dest[o], return_index=True)
            po.append(o)
            pb.append(first)
            pt.append(uniq)
        order.append(tuple(po))
        bounds.append(tuple(pb))
        targets.append(tuple(pt))
    return Transducer(pattern, window, tuple(states), table, tuple(order), tuple(bounds), tuple(targets))


def _steps_to_accept(pattern: ProbPattern) -> list[int]:
    """Per NFA state, the fewest further symbols (>= 1) to an accepting state (large if none)."""
    n = len(pattern.accepting)
    big = 1 << 30
    dist = [big] * n
    for _ in range(n + 1):  # Bellman-Ford on a tiny graph
        changed = False
        for q in range(n):
            for sym_targets in pattern.nfa[q]:
                for q2 in sym_targets:
                    d = 1 if pattern.accepting[q2] else dist[q2] + 1
                    if d < dist[q]:
                        dist[q] = d
                        changed = True
        if not changed:
            break
    return dist


def symbol_masses(tr: Transducer, stream: ProbStream) -> np.ndarray:
    """``(len(stream), n_symbols)``: the probability of each symbol at each time point."""
    onehot = np.zeros((len(stream.values), tr.pattern.n_symbols))
    onehot[np.arange(len(stream.values)), tr.pattern.symbols_of(stream.values)] = 1.0
    return stream.probs @ onehot


def group_probabilities(tr: Transducer, stream: ProbStream, start: np.ndarray, end: np.ndarray,
                        core_start: np.ndarray, core_end: np.ndarray, *,
                        masses: np.ndarray | None = None) -> np.ndarray:
    """P(some match inside ``[start, end]`` starts at or before ``core_start`` and ends at or after ``core_end``).

    All arguments are positions in ``stream`` (0-based, inclusive), one entry per group; the
    matches counted have any probability (the threshold does not apply) and at most
    ``tr.window`` time points (any number for the paper's transducer, ``tr.window`` None).
    """
    return _evolve(tr, stream, start, end, core_start, core_end, masses, keep=False)[0]


def state_vectors(tr: Transducer, stream: ProbStream, start: int, end: int, core_start: int,
                  core_end: int) -> list[np.ndarray]:
    """The state distribution after each time point of one group's span (the paper's Fig. 9)."""
    return _evolve(tr, stream, np.array([start]), np.array([end]), np.array([core_start]),
                   np.array([core_end]), None, keep=True)[1]


def _evolve(tr: Transducer, stream: ProbStream, start: np.ndarray, end: np.ndarray, core_start: np.ndarray,
            core_end: np.ndarray, masses: np.ndarray | None, keep: bool) -> tuple[np.ndarray, list[np.ndarray]]:
    start = np.asarray(start, dtype=np.int64)
    end = np.asarray(end, dtype=np.int64)
    core_start = np.asarray(core_start, dtype=np.int64)
    core_end = np.asarray(core_end, dtype=np.int64)
    g = len(start)
    sm = symbol_masses(tr, stream) if masses is None else masses
    v = np.zeros((g, tr.n_states))
    v[:, EMPTY] = 1.0
    history: list[np.ndarray] = []
    if g == 0:
        return np.zeros(0), history
    length = end - start + 1
    # Groups sorted by decreasing length: the open ones at offset k are a prefix.
    by_len = np.argsort(-length, kind="stable")
    v = v[by_len]
    st, ln, cs, ce = start[by_len], length[by_len], core_start[by_len], core_end[by_len]
    n_open = np.searchsorted(-ln, -np.arange(1, int(ln.max()) + 1), side="right")
    for k in range(int(ln.max())):
        m = int(n_open[k])
        pos = st[:m] + k
        phase = np.where(pos <= cs[:m], np.where(pos >= ce[:m], 1, 0), np.where(pos >= ce[:m], 2, 3))
        new = np.zeros((m, tr.n_states))
        for p in np.unique(phase).tolist():
            rows = np.flatnonzero(phase == p) if m > 1 else np.zeros(1, dtype=np.int64)
            vp = v[rows]
            masses_p = sm[pos[rows]]
            acc = np.zeros_like(vp)
            for sym in range(tr.pattern.n_symbols):
                w = masses_p[:, sym]
                if not w.any():
                    continue
                moved = np.add.reduceat((vp * w[:, None])[:, tr.order[p][sym]], tr.bounds[p][sym], axis=1)
                acc[:, tr.targets[p][sym]] += moved
            new[rows] = acc
        v[:m] = new
        if keep:
            history.append(v[0].copy())
    out = np.empty(g)
    out[by_len] = v[:, MATCHED]
    return out, history
