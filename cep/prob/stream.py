"""Probabilistic event streams: per time point a probability distribution over values.

Sugiura, Ishikawa and Sasaki (DASFAA 2015), section 3: a probabilistic data stream gives, at
each time point ``t``, every value the event at ``t`` may have with its probability; time
points are independent, so a *possible world* picks one value per time point and has the
product of their probabilities. :class:`ProbStream` holds one stream as a dense matrix
``probs[i, j] = P(value at t[i] is values[j])`` over consecutive integer time points.

Two table layouts feed it (docs/prob.md):

- **long**: one row per ``(t, value, p)`` (:func:`from_long`); values missing at a time point
  have probability 0;
- **wide**: one row per ``t`` with a ``{value: p}`` map (:func:`from_wide`).

Validation (:class:`cep.prob.errors.ProbStreamError`, ``CEP-PROB-010``) rejects what would make
the probabilities meaningless: NULLs, a probability outside [0, 1] or not finite, a time point
whose probabilities do not sum to 1 within ``tolerance``, a value listed twice at one time
point (long) or a time point listed twice (wide), non-integer time points, and gaps (a missing
time point would silently join its neighbours into one contiguous match).

Example:
    >>> s = from_long([1, 1, 2], ["a", "b", "b"], [0.4, 0.6, 1.0])
    >>> s.values, s.t.tolist(), s.probs.tolist()
    (('a', 'b'), [1, 2], [[0.4, 0.6], [0.0, 1.0]])
    >>> from_wide([1, 2], [{"a": 0.4, "b": 0.6}, {"b": 1.0}]) == s
    True
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from cep.prob.errors import ProbStreamError

TOLERANCE = 1e-6


@dataclass(frozen=True, eq=False)
class ProbStream:
    """One probabilistic stream over consecutive integer time points (module docstring).

    Attributes:
        t: the time points, int64, ascending, consecutive (``t[i] = t[0] + i``).
        values: the distinct values (sorted); the columns of ``probs``.
        probs: float64 matrix ``(len(t), len(values))``; each row sums to 1 (within tolerance).
        stream: the stream's key, used in messages only.
    """

    t: np.ndarray
    values: tuple[str, ...]
    probs: np.ndarray
    stream: str = field(default="")

    def __len__(self) -> int:
        return len(self.t)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ProbStream):
            return NotImplemented
        return (self.values == other.values and np.array_equal(self.t, other.t)
                and np.array_equal(self.probs, other.probs))

    def column(self, value: str) -> np.ndarray:
        """``P(value)`` at every time point (zeros for a value the stream never has)."""
        if value in self.values:
            return self.probs[:, self.values.index(value)]
        return np.zeros(len(self.t))

    def slice(self, start: int, stop: int) -> ProbStream:
        """The time points ``t[start:stop]`` (positions, not time values) as a stream."""
        return ProbStream(self.t[start:stop], self.values, self.probs[start:stop], self.stream)


def _where(stream: str) -> str:
    return f"stream {stream!r}: " if stream else ""


def from_long(t: Sequence[object] | np.ndarray, value: Sequence[object] | np.ndarray,
              p: Sequence[object] | np.ndarray, *, tolerance: float = TOLERANCE,
              stream: str = "") -> ProbStream:
    """A :class:`ProbStream` from long rows ``(t, value, p)``, validated (module docstring).

    Args:
        t: the time point of each row (integers; several rows per time point).
        value: the value of each row (strings).
        p: the probability of each row.
        tolerance: how far a time point's probabilities may sum from 1.
        stream: the stream's key, for messages.

    Raises:
        ProbStreamError: NULLs, probabilities outside [0, 1], sums off, a value twice at one
            time point, non-integer time points, gaps (``CEP-PROB-010``).

    Example:
        >>> from_long([5, 6], ["a", "a"], [1.0, 0.5])
        Traceback (most recent call last):
        ...
        cep.prob.errors.ProbStreamError: CEP-PROB-010: time point 6: probabilities sum to 0.5, expected 1 (tolerance 1e-06)
    """
    where = _where(stream)
    n = len(t)
    if len(value) != n or len(p) != n:
        raise ProbStreamError(f"{where}t, value and p have {n}, {len(value)} and {len(p)} entries; expected equal lengths")
    if n == 0:
        return ProbStream(np.zeros(0, dtype=np.int64), (), np.zeros((0, 0)), stream)
    times = _times(t, where)
    uniq_v, v_idx = np.unique(_names(value, times, where), return_inverse=True)
    return _build(times, v_idx.astype(np.int64), uniq_v, _probabilities(p, times, where),
                  tolerance, stream)


def from_codes(t: np.ndarray, codes: np.ndarray, names: Sequence[str], p: np.ndarray, *,
               tolerance: float = TOLERANCE, stream: str = "") -> ProbStream:
    """:func:`from_long` for values given as codes into ``names``, validated the same way.

    The Arrow adapters hold a partition's values dictionary-encoded; sorting the strings again
    (``np.unique``) was the largest cost of building a stream from them.

    Args:
        t: integer time points, numpy.
        codes: each row's value as an index into ``names`` (which may hold unused names).
        names: distinct value names.
        p: float probabilities, numpy.

    Example:
        >>> s = from_codes(np.array([1, 1, 2]), np.array([2, 0, 2]), ["b", "x", "a"],
        ...                np.array([0.25, 0.75, 1.0]))
        >>> s.values, s.probs.tolist()
        (('a', 'b'), [[0.25, 0.75], [1.0, 0.0]])
    """
    where = _where(stream)
    if not len(t) == len(codes) == len(p):
        raise ProbStreamError(f"{where}t, value and p have {len(t)}, {len(codes)} and {len(p)} "
                              "entries; expected equal lengths")
    if len(t) == 0:
        return ProbStream(np.zeros(0, dtype=np.int64), (), np.zeros((0, 0)), stream)
    times = _times(t, where)
    codes = np.asarray(codes, dtype=np.int64)
    used = np.flatnonzero(np.bincount(codes, minlength=len(names)))
    used_names = np.array([str(names[i]) for i in used.tolist()])
    order = np.argsort(used_names, kind="stable")  # the names' sorted order, as np.unique gives
    rank = np.empty(len(names), dtype=np.int64)
    rank[used[order]] = np.arange(len(used))
    return _build(times, rank[codes], used_names[order], _probabilities(p, times, where),
                  tolerance, stream)


def _build(times: np.ndarray, v_idx: np.ndarray, uniq_v: np.ndarray, probs: np.ndarray,
           tolerance: float, stream: str) -> ProbStream:
    """The checked stream of rows ``(times, uniq_v[v_idx], probs)`` (``from_long``'s checks)."""
    where = _where(stream)
    steps = np.diff(times)
    if (steps >= 0).all():  # sorted, as a partition usually is
        change = np.flatnonzero(steps) + 1
        uniq_t = times[np.concatenate(([0], change))]
        t_idx = np.zeros(len(times), dtype=np.int64)
        t_idx[change] = 1
        t_idx = np.cumsum(t_idx)
    else:
        uniq_t, t_idx = np.unique(times, return_inverse=True)
    gaps = np.flatnonzero(np.diff(uniq_t) != 1)
    if len(gaps):
        g = int(gaps[0])
        raise ProbStreamError(f"{where}time points jump from {int(uniq_t[g])} to {int(uniq_t[g + 1])}; "
                              f"expected consecutive integers (every time point needs a row, "
                              f"with probability 1 for a value meaning 'nothing')")
    key = t_idx.astype(np.int64) * len(uniq_v) + v_idx
    counts = np.bincount(key, minlength=len(uniq_t) * len(uniq_v))
    if (counts > 1).any():
        dup = int(np.argmax(counts > 1))
        raise ProbStreamError(f"{where}time point {int(uniq_t[dup // len(uniq_v)])} lists value "
                              f"{str(uniq_v[dup % len(uniq_v)])!r} twice; expected one row per (t, value)")
    matrix = np.zeros((len(uniq_t), len(uniq_v)))
    matrix[t_idx, v_idx] = probs
    sums = matrix.sum(axis=1)
    off = np.flatnonzero(np.abs(sums - 1.0) > tolerance)
    if len(off):
        i = int(off[0])
        raise ProbStreamError(f"{where}time point {int(uniq_t[i])}: probabilities sum to {sums[i]:.12g}, "
                              f"expected 1 (tolerance {tolerance:g})")
    return ProbStream(uniq_t.astype(np.int64), tuple(str(v) for v in uniq_v), matrix, stream)


def from_wide(t: Sequence[object] | np.ndarray, probs: Sequence[Mapping[str, object] | None], *,
              tolerance: float = TOLERANCE, stream: str = "") -> ProbStream:
    """A :class:`ProbStream` from wide rows ``(t, {value: p})``, validated like :func:`from_long`.

    Raises:
        ProbStreamError: as :func:`from_long`, and a time point listed twice or a NULL map.

    Example:
        >>> from_wide([1, 1], [{"a": 1.0}, {"a": 1.0}])
        Traceback (most recent call last):
        ...
        cep.prob.errors.ProbStreamError: CEP-PROB-010: time point 1 appears in 2 rows; expected one row per time point
    """
    where = _where(stream)
    if len(probs) != len(t):
        raise ProbStreamError(f"{where}t and probs have {len(t)} and {len(probs)} entries; expected equal lengths")
    times = _times(t, where) if len(t) else np.zeros(0, dtype=np.int64)
    uniq, counts = np.unique(times, return_counts=True)
    if (counts > 1).any():
        raise ProbStreamError(f"{where}time point {int(uniq[np.argmax(counts > 1)])} appears in "
                              f"{int(counts.max())} rows; expected one row per time point")
    rows_t: list[int] = []
    rows_v: list[object] = []
    rows_p: list[object] = []
    for ti, dist in zip(times.tolist(), probs):
        if dist is None:
            raise ProbStreamError(f"{where}time point {ti}: the probability map is NULL")
        if len(dist) == 0:
            raise ProbStreamError(f"{where}time point {ti}: the probability map is empty; expected "
                                  f"probabilities summing to 1")
        for v, pv in dist.items():
            rows_t.append(ti)
            rows_v.append(v)
            rows_p.append(pv)
    return from_long(rows_t, rows_v, rows_p, tolerance=tolerance, stream=stream)


def _times(t: Sequence[object] | np.ndarray, where: str) -> np.ndarray:
    arr = np.asarray(t, dtype=object) if not isinstance(t, np.ndarray) else t
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64)
    out = np.empty(len(arr), dtype=np.int64)
    for i, x in enumerate(arr.tolist()):
        if x is None or isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
            raise ProbStreamError(f"{where}row {i}: time point {x!r} is not an integer")
        if isinstance(x, (float, np.floating)) and (not math.isfinite(x) or not float(x).is_integer()):
            raise ProbStreamError(f"{where}row {i}: time point {x!r} is not an integer")
        out[i] = int(x)
    return out


def _names(value: Sequence[object] | np.ndarray, times: np.ndarray, where: str) -> np.ndarray:
    if isinstance(value, np.ndarray) and value.dtype.kind == "U":
        return value  # already strings, no NULL possible (the Arrow adapters pass these)
    arr = np.asarray(value, dtype=object)
    for i, v in enumerate(arr.tolist()):
        if not isinstance(v, str):
            raise ProbStreamError(f"{where}time point {int(times[i])}: value {v!r} is not a string")
    return arr.astype(str)


def _probabilities(p: Sequence[object] | np.ndarray, times: np.ndarray, where: str) -> np.ndarray:
    arr = np.asarray(p, dtype=object) if not isinstance(p, np.ndarray) or p.dtype == object else p
    if arr.dtype == object:
        bad = [i for i, x in enumerate(arr.tolist())
               if x is None or isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating))]
        if bad:
            i = bad[0]
            raise ProbStreamError(f"{where}time point {int(times[i])}: probability {arr[i]!r} is not a number")
        arr = arr.astype(np.float64)
    out = arr.astype(np.float64)
    wrong = np.flatnonzero(~np.isfinite(out) | (out < 0.0) | (out > 1.0))
    if len(wrong):
        i = int(wrong[0])
        raise ProbStreamError(f"{where}time point {int(times[i])}: probability {float(out[i])!r} is outside [0, 1]")
    return out
