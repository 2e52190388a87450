"""The cost model's statistics: sampled sizes of one shape on one partition.

The planner (``planner.py``) picks, per shape and partition, the grouping of each Kleene closure
and the join tree with ZStream's cost model (``plans.py``: Mei & Madden, SIGMOD 2009); this
module supplies the numbers it compares. On a prefix of the partition (``SAMPLE_EVENTS``
events) it counts, for neighbouring slots, the pairs that satisfy order, link and window (the
same candidate ranges the evaluation uses, ``ranges.py``) and the selectivity of the conditions
between the two on up to ``SAMPLE_PAIRS`` sampled pairs; for a closure that could be combined
late (``late.py``) it also counts the rows each way of building it would produce. On partitions
of fewer than ``SMALL_PARTITION`` events it uses buffer sizes alone.

Nothing here evaluates a plan: the runtime (``any_match.py``) does, with the plan the planner
chose.

Example:
    >>> from cep.match.compile.compiler import compile_query
    >>> from cep.match.columnar.data import StreamData
    >>> from cep.match.columnar.stream import EventStream
    >>> cq = compile_query("PATTERN A; B+; C", policy="skip-till-any-match")
    >>> s = EventStream.from_columns(ids=range(6), ts=range(6), types=list("AAABBC"))
    >>> est = ShapeEstimator(cq, cq.alternatives[0].shapes[0], StreamData(s, None))
    >>> [(c.grouping, c.reason) for c in est.grouping_choices()]
    [('right', 'the event after it leaves fewer partial matches')]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from cep.match.columnar.bindings import View, holds
from cep.match.columnar.buffers import alias_buffer
from cep.match.columnar.data import StreamData
from cep.match.columnar.joins import count_between, expand_ranges
from cep.match.plan.late import binomial_sum, combination_sums, late_blocker
from cep.match.plan.plans import (SAMPLE_EVENTS, SAMPLE_PAIRS, SMALL_PARTITION, Estimates, GroupingChoice,
                             choose_grouping)
from cep.match.columnar.ranges import Ranges
from cep.match.compile.predicates import backward_monotone
from cep.match.compile.program import CompiledQuery
from cep.match.compile.shapes import Shape
from cep.match.plan.units import anchor_of


class ShapeEstimator:
    """Sampled statistics of one shape on one partition, for the cost model.

    Args:
        cq: the compiled query.
        shape: the shape to estimate.
        data: the partition.
    """

    def __init__(self, cq: CompiledQuery, shape: Shape, data: StreamData) -> None:
        self.cq = cq
        self.shape = shape
        self.data = data
        self.window = cq.window
        # The constraints checked on partial matches: those that can prune a join.
        self.active = tuple(c for c in shape.constraints if c.scope and not c.deferred)
        self.ranges = Ranges(cq.window, data, tuple(cq.normal.equivalences), self.buffer)
        self._late_cache: dict[int, LateEstimate | None] = {}

    def buffer(self, alias: str) -> np.ndarray:
        """The buffer of ``alias`` (shared with the evaluation through ``data``'s cache)."""
        return alias_buffer(self.cq, alias, self.data)

    def estimates(self, units: Sequence[tuple[int, int]]) -> Estimates:
        """Sampled unit sizes, pair fractions and selectivities (see ``plans.py``) of ``units``."""
        sizes = []
        for unit in units:
            anchor = anchor_of(self.shape, unit)
            size = float(self._slot_size(anchor))
            for k in range(unit[0], unit[1] + 1):
                if k != anchor:
                    size *= 1.0 + min(self._slot_size(k), 8)
            sizes.append(max(size, 1.0))
        raw, sel, grow = [], [], []
        for u in range(len(units) - 1):
            a_slot, b_slot = units[u][1], units[u + 1][0]
            r, s = self._pair_stats(a_slot, b_slot)
            raw.append(r)
            sel.append(s)
            # A late closure between the two units turns each joined pair into its combinations.
            late = self._late_estimate(a_slot + 1) if b_slot == a_slot + 2 else None
            grow.append(late.per_pair if late is not None else 1.0)
        return Estimates(tuple(sizes), tuple(raw), tuple(sel), tuple(grow))

    def _slot_size(self, k: int) -> int:
        return sum(len(self.buffer(a)) for a in self.shape.slots[k].aliases)

    def _pair_stats(self, a_slot: int, b_slot: int) -> tuple[float, float]:
        """``(raw fraction, selectivity)`` of (slot ``a_slot`` event, next slot event) pairs,
        sampled on the first ``SAMPLE_EVENTS`` events."""
        limit = self.data.lo + SAMPLE_EVENTS
        left = self._sample_buffer(a_slot, limit)
        right_s = self._sample_buffer(b_slot, limit)
        if not len(left) or not len(right_s):
            return 1.0, 1.0
        lo, hi = self.ranges.after(right_s, left, left, self.shape.slots[b_slot].link, ())
        counts = np.maximum(hi - lo, 0)
        raw = float(counts.sum()) / (len(left) * len(right_s))
        return raw, self._sample_selectivity(a_slot, b_slot, left, right_s, lo, counts)

    def _sample_buffer(self, k: int, limit: int) -> np.ndarray:
        """Sorted positions before ``limit`` that can fill slot ``k`` (buffers are sorted, so
        each is cut with one ``searchsorted``; only an OR of aliases needs a sort)."""
        parts = [b[:np.searchsorted(b, limit, side="left")]
                 for b in (self.buffer(a) for a in self.shape.slots[k].aliases)]
        return parts[0] if len(parts) == 1 else np.sort(np.concatenate(parts))

    def _pair_rows(self, a_slot: int, b_slot: int) -> float:
        """Estimated (slot ``a_slot``, slot ``b_slot``) pairs that satisfy order, link, window
        and the conditions reading just the two: the first round of a closure grouped with
        that neighbour. On a partition of fewer than ``SMALL_PARTITION`` events, half of all
        pairs (sampling would cost more than a poor choice there)."""
        if self.data.hi - self.data.lo < SMALL_PARTITION:
            raw, sel = 0.5, 1.0
        else:
            raw, sel = self._pair_stats(a_slot, b_slot)
        return float(self._slot_size(a_slot)) * self._slot_size(b_slot) * raw * sel

    def grouping_choices(self) -> list[GroupingChoice]:
        """Per run of consecutive Kleene slots, the cost model's grouping (``plans.py``)."""
        slots = self.shape.slots
        runs: list[list[int]] = []
        for k, slot in enumerate(slots):
            if slot.kind == "kleene":
                if runs and runs[-1][-1] == k - 1:
                    runs[-1].append(k)
                else:
                    runs.append([k])
        out = []
        for run in runs:
            first, last = run[0], run[-1]
            if last + 1 >= len(slots):
                out.append(GroupingChoice(tuple(run), "left", None, None, "no event after the closure"))
                continue
            aliases = [a for k in run for a in slots[k].aliases]
            forward_pruning = any(
                c.kind == "pred" and c.pred is not None and c.scope & set(run)
                and all(c.pred.monotone_in(a) for a in aliases if a in c.pred.aliases)
                and not backward_monotone(c.pred, aliases)
                for c in self.active)
            left_rows = self._pair_rows(first - 1, first) if first > 0 else None
            right_rows = self._pair_rows(last, last + 1)
            late = None
            if len(run) == 1 and late_blocker(self.shape, first) is None:
                late = self._late_estimate(first)
            late_rows = late.rows if late is not None else None
            round_rows = late.rounds if late is not None else None
            grouping, reason = choose_grouping(left_rows, right_rows, forward_pruning,
                                               late_rows, round_rows)
            out.append(GroupingChoice(tuple(run), grouping, left_rows, right_rows, reason,
                                      late_rows, round_rows))
        return out

    def _late_estimate(self, k: int) -> LateEstimate | None:
        """Rows built by combining Kleene slot ``k`` late, and by growing it round by round,
        counted on the first ``SAMPLE_EVENTS`` events and scaled to the partition, or on a
        partition of fewer than ``SMALL_PARTITION`` events from buffer sizes alone (None when
        the sample lacks a neighbour or the closure's events).

        Late: the (left, right) neighbour pairs in order and window, times the selectivity
        of the conditions between the two, plus per pair the sum of ``comb(count, r)`` over
        the allowed ``r`` (the mean over up to ``SAMPLE_PAIRS`` sampled pairs). Round by
        round: every partial closure of ``1..max`` iterations after each left neighbour
        within the window (grouped left) or before each right one (grouped right), plus
        the same complete combinations once the other neighbour is joined. Conditions on the
        iterations are not counted (both evaluations apply them to single iterations).
        """
        if k in self._late_cache:
            return self._late_cache[k]
        if self.data.hi - self.data.lo < SMALL_PARTITION:
            out = self._late_estimate_uniform(k)
        else:
            out = self._late_estimate_sampled(k)
        self._late_cache[k] = out
        return out

    def _late_estimate_sampled(self, k: int) -> LateEstimate | None:
        """:meth:`_late_estimate` counted on the sample."""
        slot = self.shape.slots[k]
        assert slot.max is not None
        limit = self.data.lo + SAMPLE_EVENTS
        xs = self._sample_buffer(k - 1, limit)
        ys = self._sample_buffer(k + 1, limit)
        bs = self._sample_buffer(k, limit)
        out = None
        if len(xs) and len(ys) and len(bs):
            scale = (self.data.hi - self.data.lo) / max(min(self.data.hi, limit) - self.data.lo, 1)
            lo, hi = self.ranges.after(ys, xs, xs, self.shape.slots[k + 1].link, ())
            counts = np.maximum(hi - lo, 0)
            pairs = float(counts.sum())
            per_pair = 0.0
            if pairs:
                rows, idx = _sample_pairs(lo, counts)
                between = count_between(bs, xs[rows], ys[idx])
                per_pair = float(combination_sums(between, slot.min, slot.max).mean())
            joined = pairs * self._sample_selectivity(k - 1, k + 1, xs, ys, lo, counts)
            complete = joined * per_pair
            after_lo, after_hi = self.ranges.after(bs, xs, xs, slot.link, ())
            before_lo, before_hi = self.ranges.before(bs, ys, ys, self.shape.slots[k + 1].link, ())
            left = float(combination_sums(np.maximum(after_hi - after_lo, 0), 1, slot.max).sum())
            right = float(combination_sums(np.maximum(before_hi - before_lo, 0), 1, slot.max).sum())
            out = LateEstimate((joined + complete) * scale, per_pair,
                               ((left + complete) * scale, (right + complete) * scale))
        return out

    def _late_estimate_uniform(self, k: int) -> LateEstimate | None:
        """:meth:`_late_estimate` from buffer sizes alone, for partitions of fewer than
        ``SMALL_PARTITION`` events (sampling costs more than a poor choice there, as for
        ``left``/``right``): events spread uniformly, the window a fraction ``f`` of the
        partition. An ordered pair of neighbours falls in the window with probability
        ``f - f^2/2`` and then lies ``(f^2/2 - f^3/3) / (f - f^2/2)`` of the partition apart on
        average; a neighbour sees ``f - f^2/2`` of it within the window on one side."""
        slot = self.shape.slots[k]
        assert slot.max is not None
        nx, nb, ny = (float(self._slot_size(j)) for j in (k - 1, k, k + 1))
        if not (nx and nb and ny):
            return None
        f = self._window_fraction()
        within = f - f * f / 2
        if within <= 0:
            return None  # a window of width 0 holds no match
        per_pair = binomial_sum(nb * (f * f / 2 - f ** 3 / 3) / within, slot.min, slot.max)
        pairs = nx * ny * within
        complete = pairs * per_pair
        side = binomial_sum(nb * within, 1, slot.max)
        return LateEstimate(pairs + complete, per_pair, (nx * side + complete, ny * side + complete))

    def _window_fraction(self) -> float:
        """The share of the partition one window spans (1.0 without a window)."""
        width = self.window.width
        n = self.data.hi - self.data.lo
        if width is None or n == 0:
            return 1.0
        if self.window.by_events:
            span = float(n)
        else:
            span = float(self.data.ts[self.data.hi - 1] - self.data.ts[self.data.lo]) + 1.0
        return min(1.0, float(width) / max(span, 1.0))

    def _sample_selectivity(self, a_slot: int, b_slot: int, left: np.ndarray, right: np.ndarray,
                            lo: np.ndarray, counts: np.ndarray) -> float:
        preds = [c.pred for c in self.active if c.kind == "pred" and c.scope == {a_slot, b_slot}]
        total = int(counts.sum())
        if not preds or total == 0:
            return 1.0
        rows, idx = _sample_pairs(lo, counts)
        a_alias = self.shape.slots[a_slot].aliases[0]
        b_alias = self.shape.slots[b_slot].aliases[0]
        view = View.of_columns(len(rows), {a_alias: [left[rows]], b_alias: [right[idx]]})
        ok = np.ones(len(rows), dtype=bool)
        for p in preds:
            assert p is not None
            ok &= holds(p, view, self.data)
        return max(float(ok.mean()), 1.0 / SAMPLE_PAIRS)


@dataclass(frozen=True)
class LateEstimate:
    """Sampled sizes behind the choice of late combination for one closure (scaled to the
    partition).

    Attributes:
        rows: rows built by combining it late (neighbour pairs plus their combinations).
        per_pair: mean combinations per neighbour pair.
        rounds: rows built by growing it round by round, grouped ``(left, right)``.
    """

    rows: float
    per_pair: float
    rounds: tuple[float, float]


def _sample_pairs(lo: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Up to ``SAMPLE_PAIRS`` of the pairs (row ``i``, index ``lo[i] + j`` for ``j <
    counts[i]``), uniformly without replacement (a fixed seed: estimates are repeatable)."""
    total = int(counts.sum())
    if total <= SAMPLE_PAIRS:
        # Every pair: what sorting a full sample without replacement gives, without the rng.
        return expand_ranges(lo, lo + counts)
    rng = np.random.default_rng(0)
    pick = np.sort(rng.choice(total, size=min(total, SAMPLE_PAIRS), replace=False))
    ends = np.cumsum(counts)
    rows = np.searchsorted(ends, pick, side="right")
    return rows, lo[rows] + (pick - (ends - counts)[rows])
