"""Run and match generation over a probabilistic stream (Sugiura et al., DASFAA 2015, section 4).

A **match** (Def. 5) is a time interval ``[t_start, t_end]`` together with one value per time
point that spells a word of the pattern; as a set of possible worlds it is every world having
those values there, so its probability is the product of their probabilities (time points are
independent). For ``PATTERN a, b+, c`` an interval has at most one such word.

The NFA/stack method of section 4.2 keeps, for every start time point, the partial runs of the
pattern's automaton with their probabilities. Here all starts advance **together**: at offset
``k`` every live run reads the time point ``start + k``, one numpy step per (offset, value)
over all runs of the partition; only runs that survive are kept. The deterministic automaton
(:mod:`cep.prob.pattern`) gives each run one state, and a run branches only when several values
of one time point continue it.

**Threshold pruning** (section 4.3): a run's probability can only fall as it grows, so a run
below the match threshold can never become a match above it and is dropped at once. **Window**:
a match spans at most ``window`` time points (the paper's ``w``), so runs stop at that length.

Example:
    >>> import numpy as np
    >>> from cep.prob.pattern import compile_prob
    >>> from cep.prob.stream import from_wide
    >>> s = from_wide([1, 2, 3, 4], [{"a": 1.0}, {"b": 0.6, "c": 0.4}, {"b": 0.5, "c": 0.5}, {"c": 1.0}])
    >>> m = find_matches(compile_prob("PATTERN a, b+, c"), s, window=4)
    >>> list(zip(m.t_start.tolist(), m.t_end.tolist(), np.round(m.probability, 4).tolist()))
    [(1, 3, 0.3), (1, 4, 0.3)]
    >>> m.values_of(1)
    ('a', 'b', 'b', 'c')
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cep.prob.errors import ProbArgumentError, ProbLimitError
from cep.prob.pattern import ProbPattern
from cep.prob.stream import ProbStream

MAX_RUNS = 20_000_000
MAX_VALUES = 20_000_000
"""Bound on the values the listed matches of one stream hold together (one per time point of
each match): ``a+, b`` over ``n`` time points with both values possible everywhere has ~n^2/2
matches of ~n/3 values each, 1.7 * 10^8 values (5.2 GB) at n = 1000."""
MAX_MATCHES = 20_000_000
"""Bound on the matches of one stream, listed or only counted into groups (issue 46): without
values a match costs 24 bytes, but ``a*, b+`` over 1,000 time points with both values possible
everywhere has 1.7 * 10^8 of them (14.7 GB measured before this bound)."""


@dataclass(frozen=True, eq=False)
class Matches:
    """The matches of one stream, ordered by ``(t_start, t_end, values)``; ``match_id`` is 1-based.

    Attributes:
        t_start, t_end: the interval of each match (time points, inclusive), int64.
        start, end: the same as positions in the stream (0-based), int64.
        probability: float64, the product of the values' probabilities.
        codes: the value codes (indexes into ``value_names``) of all matches, concatenated
            (empty when the matches were found without their values).
        offsets: match ``i`` has ``codes[offsets[i]:offsets[i + 1]]``.
        value_names: the stream's values.
    """

    t_start: np.ndarray
    t_end: np.ndarray
    start: np.ndarray
    end: np.ndarray
    probability: np.ndarray
    codes: np.ndarray
    offsets: np.ndarray
    value_names: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.start)

    def values_of(self, i: int) -> tuple[str, ...]:
        """The values of match ``i`` (0-based), one per time point."""
        return tuple(self.value_names[c] for c in self.codes[self.offsets[i]:self.offsets[i + 1]].tolist())


def check_window(window: object) -> int:
    """The window as a positive int, or a ``CEP-PROB-011`` error naming what was found."""
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or int(window) < 1:
        raise ProbArgumentError(f"window must be a positive number of time points; found {window!r}")
    return int(window)


def check_threshold(threshold: object) -> float:
    """The threshold as a float in [0, 1], or a ``CEP-PROB-011`` error naming what was found."""
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.integer, np.floating)) \
            or not 0.0 <= float(threshold) <= 1.0:
        raise ProbArgumentError(f"threshold must be a number in [0, 1]; found {threshold!r}")
    return float(threshold)


def find_matches(pattern: ProbPattern, stream: ProbStream, *, window: int, threshold: float = 0.0,
                 max_runs: int = MAX_RUNS, values: bool = True,
                 max_values: int = MAX_VALUES, max_matches: int = MAX_MATCHES) -> Matches:
    """Every match of ``pattern`` with probability >= ``threshold`` (and > 0) and at most ``window`` time points.

    Args:
        pattern: the compiled pattern.
        stream: one probabilistic stream.
        window: the longest match, in time points (the paper's ``w``).
        threshold: the match threshold of section 4.3 (0 keeps every possible match).
        max_runs: bound on the partial runs alive at one offset (``CEP-PROB-020``).
        values: keep each match's values (one per time point). Groups need only the
            intervals: without values the memory is linear in the matches, not in their total
            length, and ``codes`` is empty.
        max_values: bound on the values the matches hold together, with ``values``
            (``CEP-PROB-020``).
        max_matches: bound on the matches found, with or without ``values``
            (``CEP-PROB-020``).

    Returns:
        The matches (:class:`Matches`).

    Raises:
        ProbArgumentError: window or threshold out of range (``CEP-PROB-011``).
        ProbLimitError: more than ``max_runs`` partial runs at once, or matches holding more
            than ``max_values`` values, or more than ``max_matches`` matches
            (``CEP-PROB-020``).

    Complexity:
        ``O(window * values)`` numpy steps, each linear in the runs alive at that offset.
    """
    window = check_window(window)
    threshold = check_threshold(threshold)
    n = len(stream)
    dfa = np.array(pattern.dfa, dtype=np.int64).reshape(len(pattern.dfa), pattern.n_symbols)
    accepting = np.array(pattern.dfa_accepting, dtype=bool)
    symbols = np.array(pattern.symbols_of(stream.values), dtype=np.int64)
    other = pattern.n_symbols - 1
    useful = [v for v in range(len(stream.values)) if symbols[v] != other]
    # Per offset: the value code and the parent (index at the previous offset) of every run.
    hist_code: list[np.ndarray] = []
    hist_parent: list[np.ndarray] = []
    found: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]] = []  # (offset, run idx, start, prob)
    runs = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0))
    held = 0  # values of the matches found so far (each holds one per time point)
    n_found = 0
    for k in range(min(window, n)):
        step = _advance(k, runs, dfa, symbols, useful, stream, threshold)
        if step is None:
            break
        runs, codes, parents = step
        start, state, prob = runs
        if len(start) > max_runs:
            raise ProbLimitError(f"{len(start):,} partial runs are alive at offset {k + 1}, more than max_runs="
                                 f"{max_runs:,}; raise the threshold or shorten the window")
        if values:
            hist_code.append(np.concatenate(codes))
            hist_parent.append(np.concatenate(parents))
        acc = np.flatnonzero(accepting[state])
        if len(acc):
            found.append((k, acc, start[acc], prob[acc]))
            held += len(acc) * (k + 1)
            n_found += len(acc)
            _check_found(k, n_found, held, values, max_matches, max_values)
    return _assemble(found, hist_code, hist_parent, stream, values)


def _advance(k: int, runs: tuple[np.ndarray, np.ndarray, np.ndarray], dfa: np.ndarray,
             symbols: np.ndarray, useful: list[int], stream: ProbStream, threshold: float
             ) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], list[np.ndarray],
                        list[np.ndarray]] | None:
    """Every run reads its time point ``start + k`` (section 4.2, all starts together): one
    numpy step per value over all runs.

    Args:
        k: the offset; at 0 every time point starts a run (``runs`` is then unused).
        runs: ``(start, state, prob)`` of the runs alive after offset ``k - 1``.
        dfa: ``(states, symbols)`` next state, -1 where the run dies.
        symbols: the pattern's symbol of each value of the stream.
        useful: the values whose symbol can continue a run.
        stream: the probabilistic stream.
        threshold: runs below it are dropped at once (section 4.3).

    Returns:
        The surviving runs ``(start, state, prob)``, and in parts (one per value, to be
        concatenated only when the values are kept) each one's value code and parent (its
        run's index at offset ``k - 1``, -1 at offset 0); None when no run survives.
    """
    n = len(stream)
    probs = stream.probs
    if k == 0:
        base_start = np.arange(n, dtype=np.int64)
        base_state = np.zeros(n, dtype=np.int64)
        base_prob = np.ones(n)
        base_idx = np.full(n, -1, dtype=np.int64)
    else:
        start, state, prob = runs
        ok = start + k < n
        base_idx = np.flatnonzero(ok)
        base_start, base_state, base_prob = start[ok], state[ok], prob[ok]
    pos = base_start + k
    parts_start, parts_state, parts_prob, parts_code, parts_parent = [], [], [], [], []
    for v in useful:
        nxt = dfa[base_state, symbols[v]]
        p = base_prob * probs[pos, v]
        keep = (nxt >= 0) & (p > 0.0) & (p >= threshold)
        if not keep.any():
            continue
        parts_start.append(base_start[keep])
        parts_state.append(nxt[keep])
        parts_prob.append(p[keep])
        parts_code.append(np.full(int(keep.sum()), v, dtype=np.int64))
        parts_parent.append(base_idx[keep])
    if not parts_start:
        return None
    runs = (np.concatenate(parts_start), np.concatenate(parts_state), np.concatenate(parts_prob))
    return runs, parts_code, parts_parent


def _check_found(k: int, n_found: int, held: int, values: bool, max_matches: int,
                 max_values: int) -> None:
    """``CEP-PROB-020`` when the matches found up to offset ``k`` are too many, or (when
    ``values`` are kept) hold too many values."""
    if n_found > max_matches:
        raise ProbLimitError(
            f"{n_found:,} matches are found up to offset {k + 1}, more than "
            f"max_matches={max_matches:,}; raise the threshold or shorten the window")
    if values and held > max_values:
        raise ProbLimitError(
            f"the matches found up to offset {k + 1} hold {held:,} values, more than "
            f"max_values={max_values:,}; raise the threshold, shorten the window, or ask "
            "for groups (output => 'groups'), which need no values")


def _assemble(found: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]], hist_code: list[np.ndarray],
              hist_parent: list[np.ndarray], stream: ProbStream, values: bool = True) -> Matches:
    """Matches from the accepted runs: values by walking parents back, then sorted."""
    if not found:
        empty = np.zeros(0, dtype=np.int64)
        return Matches(empty, empty, empty, empty, np.zeros(0), empty, np.zeros(1, dtype=np.int64), stream.values)
    t0 = int(stream.t[0]) if len(stream.t) else 0
    if not values:
        start = np.concatenate([st for _, _, st, _ in found])
        end = np.concatenate([st + k for k, _, st, _ in found])
        prob = np.concatenate([pr for _, _, _, pr in found])
        order = np.lexsort((end, start))
        start, end = start[order], end[order]
        return Matches(start + t0, end + t0, start, end, prob[order], np.zeros(0, dtype=np.int64),
                       np.zeros(len(start) + 1, dtype=np.int64), stream.values)
    starts, ends, probs_out, words = [], [], [], []
    for k, idx, st, pr in found:
        word = np.empty((len(idx), k + 1), dtype=np.int64)
        cur = idx
        for j in range(k, -1, -1):
            word[:, j] = hist_code[j][cur]
            cur = hist_parent[j][cur]
        starts.append(st)
        ends.append(st + k)
        probs_out.append(pr)
        words.append(word)
    start = np.concatenate(starts)
    end = np.concatenate(ends)
    prob = np.concatenate(probs_out)
    src_codes = np.concatenate([w.reshape(-1) for w in words])
    src_offsets = np.concatenate([[0], np.cumsum(end - start + 1)]).astype(np.int64)
    order = _order(start, end, words)
    start, end, prob = start[order], end[order], prob[order]
    lengths = end - start + 1
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    # Gather each match's codes from its source slice into its sorted slot, without a loop.
    take = np.repeat(src_offsets[order] - offsets[:-1], lengths) + np.arange(int(offsets[-1]))
    return Matches(start + t0, end + t0, start, end, prob, src_codes[take], offsets, stream.values)


def _order(start: np.ndarray, end: np.ndarray, words: list[np.ndarray]) -> np.ndarray:
    """Permutation sorting matches by (start, end, values)."""
    base = np.lexsort((end, start))
    s, e = start[base], end[base]
    same = (np.diff(s) == 0) & (np.diff(e) == 0)
    if not same.any():
        return base
    # Rare: several words on one interval (classes with several values); sort those by values.
    rows = [tuple(r) for w in words for r in w.tolist()]
    return np.array(sorted(range(len(start)), key=lambda i: (int(start[i]), int(end[i]), rows[i])), dtype=np.int64)
