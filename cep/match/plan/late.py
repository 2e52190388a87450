"""Late combination of a Kleene closure with a specified size (FAEM's kleene-num, applied late).

FAEM (Behravesh, Shamsuddin, Sim & Chizari, "Optimizing Expressibility and Performance of
Kleene Operators on Binary Tree-based Directed Graph in Complex Event Processing", Res. J.
Appl. Sci. Eng. Technol. 8(13):1531-1543, 2014) evaluates a kleene with a specified size
lazily: "dynamically switching to an optimal plan and late applying combination for kleene
with specified size". Under skip-till-any-match the iterations of ``B{n}`` between two bound
neighbours ``x`` and ``y`` are every ``n``-combination of the ``B`` events strictly between
them, so instead of growing the closure one iteration per round (``left``/``right``
grouping, which builds every partial closure whether or not a neighbour on the other side
completes it), the plan

1. joins the neighbours first (partial matches ending at ``x`` with partial matches starting
   at ``y``: order, window, the conditions between the two sides);
2. takes, per joined row, the closure's candidates: the contiguous slice of its buffer
   strictly between ``x`` and ``y`` (two ``searchsorted`` calls), narrowed by the conditions
   that read each iteration on its own (``B.v > A.v``, ``[attr]``);
3. keeps the rows with at least ``n`` candidates;
4. expands every ``r``-combination, ``n <= r <= m``, of each row's candidates from one index
   table per ``r`` (:func:`combination_table`, fancy indexing, no loop over rows), after the
   total, a sum of binomial coefficients, was checked against ``max_partial_matches``;
5. checks what is left (the NOTs next to the closure) on the combined rows.

This module holds the combinatorics and the rule of when it applies (:func:`late_blocker`);
``any_match.py`` runs the join, and the cost model (``plans.py``) chooses it per closure.

Example:
    >>> combination_table(4, 2).tolist()
    [[0, 1], [0, 2], [1, 2], [0, 3], [1, 3], [2, 3]]
    >>> combination_table(3, 2).tolist()  # a prefix of the table for 4 (colex order)
    [[0, 1], [0, 2], [1, 2]]
    >>> rows, combos = expand_combinations(np.array([3, 1, 2]), np.array([0, 3, 4]),
    ...                                    np.array([10, 11, 12, 20, 30, 31]), 2)
    >>> rows.tolist(), combos.tolist()
    ([0, 0, 0, 2], [[10, 11], [10, 12], [11, 12], [30, 31]])
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from cep.lang.ast import NEXT
from cep.match.columnar.joins import expand_ranges
from cep.match.compile.predicates import Predicate
from cep.match.compile.shapes import Shape

# Index tables up to this many entries stay cached between calls (one per ``r``; 8 MB).
_CACHE_ENTRIES = 1 << 20
_TABLES: dict[int, np.ndarray] = {}


def reads_each_iteration(pred: Predicate, alias: str) -> bool:
    """Whether ``pred`` reads ``alias`` only without an index (``b.v``), so that it holds for a
    set of iterations exactly when it holds for each of them on its own: no ``b[i]``,
    ``b[i-1]``, ``b[k]``, and no aggregate over the iterations."""
    return (alias in pred.unindexed and pred.monotone_in(alias)
            and not any(getattr(r, "alias", None) == alias for r in pred.relative))


def late_blocker(shape: Shape, k: int) -> str | None:
    """Why Kleene slot ``k`` of ``shape`` cannot be combined late (None: it can).

    Late combination needs a single event on each side (the neighbours it joins), a bounded
    size (``{n}``, ``{n,m}``, ``[n]``, ``?``), one class (an OR lets every iteration pick its
    branch, which the static layout of a block cannot hold in one table), links that let the
    iterations skip events (under ``,`` and strict contiguity the iterations are the
    contiguous run between the neighbours: at most one combination per pair, nothing to
    gain), and conditions that read the iterations only one at a time.
    """
    slots = shape.slots
    slot = slots[k]
    if slot.kind != "kleene":
        return "not a Kleene closure"
    if k == 0 or k + 1 >= len(slots) or slots[k - 1].kind != "event" or slots[k + 1].kind != "event":
        return "it needs a single event on each side"
    if slot.max is None:
        return "its size has no upper bound"
    if len(slot.aliases) != 1:
        return "it is an OR of classes"
    if NEXT in (slot.link, slot.iter_link, slots[k + 1].link):
        return "its iterations are contiguous (at most one combination per pair of neighbours)"
    alias = slot.aliases[0]
    for c in shape.constraints:
        if c.kind == "pred" and c.pred is not None and alias in c.pred.aliases \
                and not reads_each_iteration(c.pred, alias):
            return f"{c.pred.text} reads its iterations individually"
    return None


def combination_table(count: int, r: int) -> np.ndarray:
    """Every ``r``-subset of ``range(count)``, one per row, in colex order.

    Colex order (by largest element, then the next largest, ...) makes the table for a smaller
    count the prefix of the table for a larger one (its first ``comb(c, r)`` rows), so one
    table per ``r``, for the largest count seen so far, serves every count: it is built once
    with ``itertools.combinations`` (lexicographic order, reversed into colex order) and cached
    while it is small.

    Args:
        count: the number of candidates (>= ``r``).
        r: the subset size (>= 1).

    Returns:
        int64 array of shape ``(comb(count, r), r)``, each row increasing.
    """
    rows = math.comb(count, r)
    cached = _TABLES.get(r)
    if cached is not None and len(cached) >= rows:
        return cached[:rows]
    lex = np.fromiter(itertools.chain.from_iterable(itertools.combinations(range(count), r)),
                      dtype=np.int64, count=rows * r).reshape(rows, r)
    # Reversing the lexicographic list and mirroring each subset (v -> count-1-v) gives colex.
    table = np.ascontiguousarray((count - 1) - lex[::-1, ::-1])
    if table.size <= _CACHE_ENTRIES:
        _TABLES[r] = table
    return table


def combination_total(counts: np.ndarray, r_lo: int, r_hi: int) -> int:
    """Exactly ``sum over rows of sum_{r=r_lo}^{r_hi} comb(count, r)`` (a Python int: binomial
    coefficients overflow int64 long before a limit check could stop them)."""
    if len(counts) == 0 or r_hi < r_lo:
        return 0
    values, multiplicity = np.unique(counts, return_counts=True)
    return sum(int(m) * sum(math.comb(int(v), r) for r in range(r_lo, min(r_hi, int(v)) + 1))
               for v, m in zip(values, multiplicity))


def combination_sums(counts: np.ndarray, r_lo: int, r_hi: int) -> np.ndarray:
    """Per element, ``sum_{r=r_lo}^{r_hi} comb(count, r)`` as float64 (for estimates).

    The product formula, one vectorised step per ``r`` (no sort of the counts, which costs
    more than the rest of an estimate): ``comb(c, r) = comb(c, r - 1) * (c - r + 1) / r`` is
    exactly 0 from ``r = c + 1`` on.
    """
    c = np.asarray(counts, dtype=np.float64)
    total = np.zeros(len(c))
    term = np.ones(len(c))
    if r_lo <= 0:
        total += term
    for r in range(1, r_hi + 1):
        term = term * np.maximum(c - r + 1, 0.0) / r
        if r >= r_lo:
            total += term
        if not term.any():
            break
    return total


def binomial_sum(c: float, r_lo: int, r_hi: int) -> float:
    """``sum_{r=r_lo}^{r_hi} comb(c, r)`` for a real ``c >= 0`` (the product formula; terms with
    ``r > c`` are 0): the cost model's count of combinations of an *expected* number of
    candidates, in pure Python because it runs once per closure on tiny partitions."""
    total, term = 0.0, 1.0
    for r in range(1, min(r_hi, int(c)) + 1):
        term *= (c - r + 1) / r
        if r >= r_lo:
            total += term
    return total + (1.0 if r_lo <= 0 else 0.0)


def expand_combinations(counts: np.ndarray, offsets: np.ndarray, flat: np.ndarray,
                        r: int) -> tuple[np.ndarray, np.ndarray]:
    """Every ``r``-combination of each row's candidates.

    Row ``i`` has the candidates ``flat[offsets[i] : offsets[i] + counts[i]]`` (increasing).
    The caller has bounded the output (:func:`combination_total`); this only materialises it.

    Returns:
        ``(rows, combos)``: the row of each combination and an ``(N, r)`` array of the chosen
        candidates, rows in order, each row's combinations in colex order.
    """
    rows_r = np.flatnonzero(counts >= r)
    if len(rows_r) == 0:
        return rows_r.astype(np.int64), np.zeros((0, r), dtype=flat.dtype)
    have = counts[rows_r]
    values, inverse = np.unique(have, return_inverse=True)
    sizes = np.array([math.comb(int(v), r) for v in values], dtype=np.int64)[inverse.reshape(-1)]
    which, t = expand_ranges(np.zeros(len(rows_r), dtype=np.int64), sizes)
    table = combination_table(int(values[-1]), r)
    src = rows_r[which]
    return src, flat[offsets[src][:, None] + table[t]]
