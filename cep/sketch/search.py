"""The search of one sketch query over units, per selection policy: the vectorised steps
that :mod:`cep.sketch.evaluate` runs (its module docstring describes them, after docs/sketch.md
section 4 and Baltus 2021, sections 4.2-4.3). Partial matches are :class:`Rows` of unit
indices; :class:`Search` extends them one component at a time with ``searchsorted`` over the
units that satisfy it, never looping per unit, event or stream.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cep.lang.policy import ANY_MATCH, NEXT_MATCH, STRICT
from cep.sketch.query import SketchComponent, SketchLimitError, SketchQuery
from cep.sketch.units import Units


@dataclass(frozen=True)
class SketchLimits:
    """Bounds on the work of one sketch query over one stream.

    Attributes:
        max_partial_matches: rows (partial matches) alive after one skip-till-any-match step.
    """

    max_partial_matches: int = 10_000_000


DEFAULT_LIMITS = SketchLimits()


def first_at_least(values: np.ndarray, stream: np.ndarray, bound: np.ndarray,
                   bound_stream: np.ndarray) -> np.ndarray:
    """Per bound: the first unit of its stream whose value is ``>= bound`` (else the stream's end).

    ``values`` is sorted within each stream and ``stream`` (the stream of each unit) is sorted,
    so the pairs ``(stream, value)`` are sorted; both sides are ranked together (one
    ``np.unique``) and searched as one integer key ``stream * ranks + rank``. One stream is a
    plain ``searchsorted``.

    Example:
        >>> first_at_least(np.array([1, 5, 2, 3]), np.array([0, 0, 1, 1]),
        ...                np.array([4, 4, 9]), np.array([0, 1, 1])).tolist()
        [1, 4, 4]
    """
    if not len(values) or not len(bound):
        return np.zeros(len(bound), dtype=np.int64)
    if stream[0] == stream[-1] and bool(np.all(bound_stream == stream[0])):
        return np.searchsorted(values, bound, side="left").astype(np.int64)
    _, rank = np.unique(np.concatenate((values, bound)), return_inverse=True)
    rank = rank.reshape(-1).astype(np.int64)
    width = int(rank.max()) + 1
    keys = stream.astype(np.int64) * width + rank[:len(values)]
    wanted = bound_stream.astype(np.int64) * width + rank[len(values):]
    return np.searchsorted(keys, wanted, side="left").astype(np.int64)


@dataclass
class Rows:
    """Partial matches as columns of unit indices."""

    first: np.ndarray
    last: np.ndarray
    slots: list[np.ndarray]

    def keep(self, mask: np.ndarray) -> Rows:
        return Rows(self.first[mask], self.last[mask], [s[mask] for s in self.slots])

    def take(self, index: np.ndarray) -> Rows:
        return Rows(self.first[index], self.last[index], [s[index] for s in self.slots])


EMPTY = np.zeros(0, dtype=np.int64)


class Search:
    """One evaluation: candidate index arrays per name, prefix counts for NOT, the policy's steps."""

    def __init__(self, query: SketchQuery, units: Units, limits: SketchLimits,
                 bounds: np.ndarray) -> None:
        self.q = query
        self.u = units
        self.n = len(units)
        self.limits = limits
        self.bounds = bounds
        # The stream of each unit, and the first unit after its stream: no step goes past it.
        self.stream = np.repeat(np.arange(len(bounds) - 1, dtype=np.int64), np.diff(bounds))
        self.end = bounds[1:][self.stream]
        self._cand: dict[tuple[str, ...], np.ndarray] = {}
        self._prefix: dict[tuple[str, ...], np.ndarray] = {}

    # -- helpers -----------------------------------------------------------------------------

    def mask(self, names: tuple[str, ...]) -> np.ndarray:
        """Units holding any of ``names``."""
        out = np.zeros(self.n, dtype=bool)
        for name in names:
            out |= self.u.has(name)
        return out

    def cand(self, names: tuple[str, ...]) -> np.ndarray:
        """Sorted indices of the units holding any of ``names``."""
        key = tuple(sorted(set(names)))
        if key not in self._cand:
            self._cand[key] = np.flatnonzero(self.mask(key)).astype(np.int64)
        return self._cand[key]

    def prefix(self, names: tuple[str, ...]) -> np.ndarray:
        """``P[i]`` = units before ``i`` holding any of ``names`` (length ``n + 1``)."""
        key = tuple(sorted(set(names)))
        if key not in self._prefix:
            self._prefix[key] = np.concatenate([[0], np.cumsum(self.mask(key), dtype=np.int64)])
        return self._prefix[key]

    def none_between(self, names: tuple[str, ...], a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Per row: no unit strictly between ``a`` and ``b`` (``a < b``) holds any of ``names``."""
        p = self.prefix(names)
        return p[b] - p[a + 1] == 0

    def window_end(self, first: np.ndarray) -> np.ndarray:
        """Per row: the first unit index the ``WITHIN`` span (or the stream's end) excludes as a
        last unit."""
        w = self.q.within
        if w is None:
            return self.end[first]
        if w.on_positions:
            return self.at_least(self.u.pos_start, self.u.pos_end[first] + w.amount, first)
        return self.at_least(self.u.ts_start, self.u.ts_end[first] + w.amount, first)

    def at_least(self, values: np.ndarray, bound: np.ndarray, first: np.ndarray) -> np.ndarray:
        """Per row: the first unit of the stream of ``first`` whose value is ``>= bound``."""
        return first_at_least(values, self.stream, bound, self.stream[first])

    def check_limit(self, total: int, where: str) -> None:
        if total > self.limits.max_partial_matches:
            raise SketchLimitError(
                f"skip-till-any-match would create {total} partial matches at {where}, more than "
                f"max_partial_matches={self.limits.max_partial_matches}; narrow the pattern (WITHIN, "
                "WINDOW, skip-till-next-match) or raise SketchLimits.max_partial_matches")

    # -- the policies ------------------------------------------------------------------------

    def run(self) -> Rows:
        comps = self.q.components
        policy = self.q.policy
        if policy == NEXT_MATCH:
            rows = self.next_first(comps[0])
        elif policy == STRICT:
            rows = self.strict_first(comps[0])
        else:
            assert policy == ANY_MATCH
            rows = self.any_first(comps[0])
        rows = self.keep_within(rows)
        for i, comp in enumerate(comps[1:], start=1):
            if not rows.first.shape[0]:
                break
            if policy == NEXT_MATCH:
                rows, cfirst, prev_last = self.next_step(rows, comp)
            elif policy == STRICT:
                rows, cfirst, prev_last = self.strict_step(rows, comp, i)
            else:
                rows, cfirst, prev_last = self.any_step(rows, comp, i)
            gap = self.q.gaps[i - 1]
            if gap:
                ok = self.none_between(gap, prev_last, cfirst)
                rows = rows.keep(ok)
            rows = self.keep_within(rows)
        if self.q.trailing and rows.first.shape[0]:
            rows = rows.keep(self.nothing_after(rows))
        return rows

    def keep_within(self, rows: Rows) -> Rows:
        w = self.q.within
        if w is None or not rows.first.shape[0]:
            return rows
        if w.on_positions:
            span = self.u.pos_start[rows.last] - self.u.pos_end[rows.first]
        else:
            span = self.u.ts_start[rows.last] - self.u.ts_end[rows.first]
        return rows.keep(span < w.amount)

    def nothing_after(self, rows: Rows) -> np.ndarray:
        """Trailing NOT: no unit after the last one, starting inside the window, holds the names."""
        w = self.q.within
        assert w is not None
        if w.on_positions:
            hi = self.at_least(self.u.pos_start, self.u.pos_start[rows.first] + w.amount, rows.first)
        else:
            hi = self.at_least(self.u.ts_start, self.u.ts_start[rows.first] + w.amount, rows.first)
        p = self.prefix(self.q.trailing)
        a = rows.last + 1
        return p[np.maximum(hi, a)] - p[a] == 0

    # skip-till-next-match

    def next_first(self, comp: SketchComponent) -> Rows:
        starts = self.cand(comp.names)
        if comp.kind != "and":
            return Rows(starts, starts, [starts])
        slots, ok = self.first_at_or_after(comp.names, starts - 1, self.end[starts])
        rows = Rows(starts, starts, slots).keep(ok)
        rows.last = np.stack(rows.slots).max(axis=0)
        return rows

    def first_at_or_after(self, names: tuple[str, ...], after: np.ndarray, end: np.ndarray
                          ) -> tuple[list[np.ndarray], np.ndarray]:
        """Per name: the first unit holding it strictly after ``after`` and before ``end``; and
        whether all exist."""
        ok = np.ones(after.shape, dtype=bool)
        slots = []
        for name in names:
            picked, found = self.next_candidate(self.cand((name,)), after, end)
            ok &= found
            slots.append(picked)
        return slots, ok

    @staticmethod
    def next_candidate(c: np.ndarray, after: np.ndarray, end: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
        """Per row: the first of the sorted candidates ``c`` after ``after``, and whether it is
        before ``end`` (the row's stream end)."""
        if not c.shape[0]:
            return np.zeros_like(after), np.zeros(after.shape, dtype=bool)
        i = np.searchsorted(c, after, side="right")
        picked = c[np.minimum(i, c.shape[0] - 1)]
        return picked, (i < c.shape[0]) & (picked < end)

    def next_step(self, rows: Rows, comp: SketchComponent) -> tuple[Rows, np.ndarray, np.ndarray]:
        picked, ok = [], np.ones(rows.last.shape, dtype=bool)
        end = self.end[rows.last]
        for group in name_groups(comp):
            chosen, found = self.next_candidate(self.cand(group), rows.last, end)
            ok &= found
            picked.append(chosen)
        return self._extend(rows, picked, ok)

    def _extend(self, rows: Rows, picked: list[np.ndarray], ok: np.ndarray) -> tuple[Rows, np.ndarray, np.ndarray]:
        """Append slot columns ``picked`` to ``rows`` where ``ok``; return rows, component first, previous last."""
        rows = rows.keep(ok)
        picked = [p[ok] for p in picked]
        stacked = np.stack(picked)
        cfirst, clast = stacked.min(axis=0), stacked.max(axis=0)
        prev_last = rows.last
        return Rows(rows.first, clast, rows.slots + picked), cfirst, prev_last

    # strict-contiguity

    def strict_first(self, comp: SketchComponent) -> Rows:
        """The first component under strict-contiguity: a run starts at every unit holding it
        (for an ``AND``, any of its names: the first unit of a layout holds at least one)."""
        starts = self.cand(comp.names)
        if comp.kind != "and":
            return Rows(starts, starts, [starts])
        which, slots, last = self.strict_and(starts, comp, 0)
        return Rows(starts[which], last, slots)

    def strict_step(self, rows: Rows, comp: SketchComponent, index: int
                    ) -> tuple[Rows, np.ndarray, np.ndarray]:
        """The next component under strict-contiguity: in the unit right after the row's last
        one (an ``AND``: a layout whose run starts there)."""
        nxt = rows.last + 1
        ok = nxt < self.end[rows.last]
        if comp.kind == "and":
            rows, nxt = rows.keep(ok), nxt[ok]
            which, slots, _ = self.strict_and(nxt, comp, index)
            return self._extend(rows.take(which), slots, np.ones(which.shape, dtype=bool))
        at = np.minimum(nxt, self.n - 1)  # rows exist, so n >= 1
        groups = name_groups(comp)
        for group in groups:
            ok &= self.mask(group)[at]
        return self._extend(rows, [nxt] * len(groups), ok)

    def strict_and(self, start: np.ndarray, comp: SketchComponent, index: int
                   ) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
        """Every layout of an ``AND`` under strict-contiguity whose run starts at ``start``.

        A layout binds each name to a unit holding it, such that the bound units are exactly
        ``start .. start + L - 1`` for some ``L`` in ``1..n`` (a gapless run inside the
        stream; a unit may hold several of the names). This is Baltus 2021, section 4.2,
        case (1) ("all events occur in the Bloom filter of a single node", ``L = 1``) and case
        (2) (the permutations as sequences over strictly contiguous nodes, ``L = n``), and the
        mixed forms in between, where names that share a unit are case (1) inside case (2).

        Names are placed one at a time at offsets ``0..n-1`` from the start, every row of every
        start at once. A partial layout whose unused offsets below its highest used one
        outnumber the names still to place can never become gapless, so it is dropped at once;
        the last name leaves no gap at all.

        Args:
            start: the unit each run starts at (one entry per input row).
            comp: the ``AND`` component.
            index: the component's 0-based position (for the limit's message).

        Returns:
            ``(which, slots, last)``: per layout, the input row it extends, the unit bound to
            each name (written order) and the run's last unit.

        Raises:
            SketchLimitError: more than ``limits.max_partial_matches`` partial layouts of one
                stream after placing one name.
        """
        n_names = len(comp.names)
        which = np.arange(start.shape[0], dtype=np.int64)
        used = np.zeros(start.shape[0], dtype=np.int64)   # bit o: offset o is bound
        count = np.zeros(start.shape[0], dtype=np.int64)  # how many offsets are bound
        high = np.full(start.shape[0], -1, dtype=np.int64)  # the highest bound offset
        offsets: list[np.ndarray] = []
        for t, name in enumerate(comp.names):
            left = n_names - t - 1  # names still to place after this one
            has = self.u.has(name)
            s, end = start[which], self.end[start[which]]
            fits = []
            for o in range(n_names):
                at = s + o
                fresh = ((used >> o) & 1) == 0
                gaps = np.maximum(high, o) + 1 - (count + fresh)
                fits.append((at < end) & has[np.minimum(at, self.n - 1)] & (gaps <= left))
            # Row-major: the layouts of one row stay together, offsets in increasing order.
            row, off = (x.astype(np.int64) for x in np.nonzero(np.stack(fits, axis=1)))
            if row.shape[0]:
                most = int(np.bincount(self.stream[start[which[row]]]).max())
                self.check_limit(most, f"component {index + 1} ({', '.join(comp.names)})")
            count = count[row] + (((used[row] >> off) & 1) == 0)
            used = used[row] | (np.int64(1) << off)
            high = np.maximum(high[row], off)
            which = which[row]
            offsets = [x[row] for x in offsets] + [off]
        # The last name was placed with no name left to fill a gap, so every layout left is
        # gapless: its bound offsets are exactly 0 .. high.
        slots = [start[which] + x for x in offsets]
        return which, slots, start[which] + high

    # skip-till-any-match

    def any_first(self, comp: SketchComponent) -> Rows:
        """Every binding of the first component (skip-till-any-match): one seed row per stream,
        just before its first unit, bounded by its end."""
        before = self.bounds[:-1] - 1
        seed = Rows(before, before, [])
        streams = np.arange(len(self.bounds) - 1, dtype=np.int64)
        rows, cfirst, _ = self.any_step(seed, comp, 0, hi_unit=self.bounds[1:], row_stream=streams)
        return Rows(cfirst, rows.last, rows.slots)

    def any_step(self, rows: Rows, comp: SketchComponent, index: int,
                 hi_unit: np.ndarray | None = None, row_stream: np.ndarray | None = None
                 ) -> tuple[Rows, np.ndarray, np.ndarray]:
        """Every binding of ``comp`` after each row's last unit (before the WITHIN bound and
        the stream's end; ``hi_unit`` instead, when given, for rows of streams ``row_stream``)."""
        prev_last = rows.last
        if hi_unit is None:
            hi_unit = self.window_end(rows.first)
        if row_stream is None:
            row_stream = self.stream[rows.first]
        first, slots, new = rows.first, rows.slots, []
        for group in name_groups(comp):
            c = self.cand(group)
            lo = np.searchsorted(c, prev_last, side="right")
            hi = np.maximum(np.searchsorted(c, hi_unit, side="left"), lo)
            counts = hi - lo
            total = int(counts.sum())
            # The limit is per stream, as if each stream were evaluated alone.
            most = int(np.bincount(row_stream, weights=counts).max(initial=0)) if total else 0
            self.check_limit(most, f"component {index + 1} ({', '.join(comp.names)})")
            rep = np.repeat(np.arange(counts.shape[0]), counts)
            offset = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
            chosen = c[lo[rep] + offset]
            prev_last, hi_unit, first = prev_last[rep], hi_unit[rep], first[rep]
            row_stream = row_stream[rep]
            slots = [s[rep] for s in slots]
            new = [s[rep] for s in new] + [chosen]
        stacked = np.stack(new)
        return Rows(first, stacked.max(axis=0), slots + new), stacked.min(axis=0), prev_last


def name_groups(comp: SketchComponent) -> list[tuple[str, ...]]:
    """The slot groups of a component: each name of an AND alone; the names of a name/OR together."""
    return [(name,) for name in comp.names] if comp.kind == "and" else [comp.names]
