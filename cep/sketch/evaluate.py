"""Evaluation of a sketch query over units (docs/sketch.md section 4), vectorised with numpy.

Partial matches are columns of unit indices (one row per partial match): the first unit of the
match, the last unit bound so far and one column per binding slot. Each positive component
extends them with ``searchsorted`` over the sorted indices of the units that satisfy it:

- **skip-till-next-match**: one row per unit satisfying the first component; the next
  component takes, per row, the first candidate after the row's last unit (``searchsorted(...,
  side='right')``); an ``AND`` does that per name. The first component ``AND(X, Y)`` starts a
  run at every unit holding any of its names and binds each name to its first unit at or after
  the start.
- **skip-till-any-match**: every candidate after the last unit (and, with ``WITHIN``, before the
  last unit the window allows): rows are repeated by their candidate counts (``repeat`` /
  ``cumsum``), after checking the total against ``SketchLimits.max_partial_matches``.
- **strict-contiguity**: the next component must hold in the unit right after the last one. An
  ``AND`` of ``n`` names binds its names to a gapless run of ``1..n`` consecutive units starting
  there, in any order, several names to a unit (Baltus 2021, section 4.2: "all events in the
  Bloom filter of a single node", or the disjunction of the permutations over strictly
  contiguous nodes, section 4.3.4). The layouts are enumerated name by name over the offsets
  ``0..n-1`` from the run's start, vectorised over the rows, dropping a partial layout as soon
  as its unused offsets can no longer be filled; ``n`` is at most
  :data:`cep.sketch.query.MAX_STRICT_AND_NAMES`.
- ``NOT(X)`` between components: prefix counts of the units holding ``X`` give, per row, the
  number of them strictly between the two components, which must be 0. At the end (with
  ``WITHIN``): none after the last unit among the units whose start is inside the window.
- ``WINDOW`` keeps the contiguous stretch of units that intersect it; ``WITHIN`` compares
  ``ts_start(last unit) - ts_end(first unit)`` (or positions, for ``EVENTS``) with the span.
- ``resume``: ``"every-start"`` (default) answers a match for every start unit, so matches may
  overlap (as in the thesis's section 2.3 example); ``"after-match"`` is the thesis's search of
  sections 4.3.1 and 4.3.2, which saves a match and "continues starting from the leaf that
  contains the last event": of the sorted records, per stream, the first is kept and each next
  kept one is the first record whose first unit is at or after the kept one's last unit and
  after its first unit. The chain is followed by pointer doubling over the records, not by a
  loop per match.

A loop runs per component (and per name of an ``AND``, and per name and offset of an ``AND``
under strict-contiguity; per doubling step of ``resume``), never per unit, per event or per
stream: :func:`evaluate_streams` answers the units of many streams laid end to end in the same
steps (every candidate search stops at the end of the match's stream), and
:func:`evaluate_units` is its one-stream case.

Example:
    >>> from cep.sketch.units import Units
    >>> u = Units.from_sets([{"A"}, {"B"}, {"A", "C"}, {"B"}, {"C"}],
    ...                     pos_start=[0, 2, 4, 6, 8], pos_end=[1, 3, 5, 7, 9],
    ...                     ts_start=[0, 2, 4, 6, 8], ts_end=[1, 3, 5, 7, 9])
    >>> q = compile_sketch_query("PATTERN A; B; C")
    >>> [(m.pos_start, m.pos_end, m.node_ids) for m in evaluate_units(q, u).rows()]
    [(0, 5, (0, 1, 2)), (4, 9, (2, 3, 4))]
    >>> evaluate_units(compile_sketch_query("PATTERN A; !C; B; C"), u, mode="exists")
    True
    >>> len(evaluate_units(q, u.slice(3, 5)))
    0
    >>> strict = compile_sketch_query("PATTERN A; AND(B, C)", "strict-contiguity")
    >>> [(m.pos_start, m.pos_end, m.node_ids) for m in evaluate_units(strict, u).rows()]
    [(0, 5, (0, 1, 2)), (4, 9, (2, 3, 4))]
    >>> nxt = compile_sketch_query("PATTERN A; B")
    >>> [m.node_ids for m in evaluate_units(nxt, u, resume="after-match").rows()]
    [(0, 1), (2, 3)]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cep.lang.policy import ANY_MATCH, NEXT_MATCH, STRICT
from cep.sketch.query import (
    SketchArgumentError,
    SketchComponent,
    SketchLimitError,
    SketchQuery,
    compile_sketch_query,
)
from cep.sketch.units import Units, cut

MODES = ("exists", "intervals")
EVERY_START = "every-start"
AFTER_MATCH = "after-match"
RESUMES = (EVERY_START, AFTER_MATCH)


@dataclass(frozen=True)
class SketchLimits:
    """Bounds on the work of one sketch query over one stream.

    Attributes:
        max_partial_matches: rows (partial matches) alive after one skip-till-any-match step.
    """

    max_partial_matches: int = 10_000_000


DEFAULT_LIMITS = SketchLimits()


@dataclass(frozen=True)
class SketchMatch:
    """One match: ``pos_start`` / ``ts_start`` of its first unit, ``pos_end`` / ``ts_end`` of its
    last unit, and the node id bound to each slot (one per name / OR component, one per name of
    an AND component, in pattern order)."""

    pos_start: int
    pos_end: int
    ts_start: int
    ts_end: int
    node_ids: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class SketchMatches:
    """The matches of a query over one stream, deduplicated and sorted (columnar).

    Sorted by ``(pos_start, pos_end, ts_start, ts_end, node_ids)``.

    Attributes:
        pos_start, pos_end, ts_start, ts_end: int64 arrays, one entry per match.
        node_ids: int64 array of shape ``(matches, slots)``.
    """

    pos_start: np.ndarray
    pos_end: np.ndarray
    ts_start: np.ndarray
    ts_end: np.ndarray
    node_ids: np.ndarray

    def __len__(self) -> int:
        return int(self.pos_start.shape[0])

    def rows(self) -> list[SketchMatch]:
        """The matches as :class:`SketchMatch` values, in order."""
        ids = self.node_ids.tolist()
        return [SketchMatch(int(a), int(b), int(c), int(d), tuple(int(x) for x in i))
                for a, b, c, d, i in zip(self.pos_start.tolist(), self.pos_end.tolist(),
                                         self.ts_start.tolist(), self.ts_end.tolist(), ids)]


def evaluate_sketch(query: SketchQuery | str, tree: Any, *, level: int = 0, mode: str = "intervals",
                    membership: str = "bloom", prune: bool = True, policy: str | None = None,
                    limits: SketchLimits = DEFAULT_LIMITS, resume: str = EVERY_START
                    ) -> bool | SketchMatches:
    """Answer ``query`` over one stream's tree at accuracy ``level`` (sketch or twin membership).

    Args:
        query: a compiled query or query text.
        tree: the stream's sketch tree (see :func:`cep.sketch.units.cut`).
        level: accuracy level (0: walk to the leaves).
        mode: ``"exists"`` (bool) or ``"intervals"`` (:class:`SketchMatches`).
        membership: ``"bloom"`` (the sketch) or ``"twin"`` (exact sets).
        prune: skip nodes holding none of the query's names (the answer is the same).
        policy: the policy when ``query`` is text that names none.
        limits: enumeration bounds.
        resume: where the next match may start, ``"every-start"`` or ``"after-match"``
            (see :func:`evaluate_streams`).
    """
    q = compile_sketch_query(query, policy) if isinstance(query, str) else query
    units = cut(tree, q.names, level, membership=membership, prune=prune)
    return evaluate_units(q, units, mode=mode, limits=limits, resume=resume)


def evaluate_units(query: SketchQuery, units: Units, *, mode: str = "intervals",
                   limits: SketchLimits = DEFAULT_LIMITS, resume: str = EVERY_START
                   ) -> bool | SketchMatches:
    """Answer ``query`` over a sequence of units (docs/sketch.md section 4).

    Args:
        query: the compiled query.
        units: the units in position order (a cut, possibly pruned).
        mode: ``"exists"`` or ``"intervals"``.
        limits: enumeration bounds.
        resume: where the next match may start, ``"every-start"`` or ``"after-match"``
            (see :func:`evaluate_streams`).

    Returns:
        A bool for ``"exists"``; the deduplicated, sorted matches for ``"intervals"``.

    Raises:
        SketchArgumentError: unknown mode or resume.
        SketchLimitError: skip-till-any-match (or the layouts of a strict ``AND``) would create
            more than ``limits.max_partial_matches`` partial matches in one step.
    """
    bounds = np.array([0, len(units)], dtype=np.int64)
    answer = evaluate_streams(query, units, bounds, mode=mode, limits=limits, resume=resume)
    if mode == "exists":
        return bool(answer[0])
    return answer.matches


@dataclass(frozen=True, eq=False)
class StreamMatches:
    """The matches of a query over many streams at once (columnar).

    Attributes:
        stream: int64, the stream (0-based, in the order of the bounds) of each match.
        matches: the matches, sorted by stream, then as :class:`SketchMatches` sorts them.
    """

    stream: np.ndarray
    matches: SketchMatches

    def __len__(self) -> int:
        return int(self.stream.shape[0])


def evaluate_streams(query: SketchQuery, units: Units, bounds: np.ndarray, *,
                     mode: str = "intervals", limits: SketchLimits = DEFAULT_LIMITS,
                     resume: str = EVERY_START) -> np.ndarray | StreamMatches:
    """Answer ``query`` over the units of many streams laid end to end, in one pass.

    Stream ``s`` owns units ``bounds[s] .. bounds[s + 1] - 1`` (in position order). A match
    never crosses a stream boundary: every step's candidates, the ``WITHIN`` and ``WINDOW``
    bounds and a trailing ``NOT`` stop at the end of the stream of the match's first unit. The
    answer of each stream is exactly :func:`evaluate_units` over its own units (tested), but
    the numpy steps run once over all of them: a process-mining table holds ~10^5 streams of
    ~10 events, where a call per stream costs more than the evaluation itself.

    Args:
        query: the compiled query.
        units: the units of every stream, stream after stream.
        bounds: ``S + 1`` non-decreasing unit offsets (``bounds[0] == 0``,
            ``bounds[-1] == len(units)``); a stream may have no unit.
        mode: ``"exists"`` or ``"intervals"``.
        limits: enumeration bounds (per step, over all streams together).
        resume: ``"every-start"`` (default): every start unit that begins a match gives its
            matches, which may overlap. ``"after-match"``: the thesis's search (Baltus 2021,
            sections 4.3.1, 4.3.2: the interval "is saved and the search continues starting
            from the leaf that contains the last event"): per stream, of the sorted records,
            the first is kept, and each next kept record is the first one whose first unit is
            at or after the last unit of the record kept before it, and after that record's
            first unit (a match inside one unit would otherwise be found again). Existence
            does not change (the first match is always kept).

    Returns:
        ``"exists"``: a bool array, one entry per stream; ``"intervals"``: the
        :class:`StreamMatches`.

    Example:
        >>> u = Units.from_sets([{"A"}, {"B"}, {"A"}, {"C"}, {"B"}],
        ...                     pos_start=[0, 1, 0, 1, 2], pos_end=[0, 1, 0, 1, 2],
        ...                     ts_start=[0, 1, 0, 1, 2], ts_end=[0, 1, 0, 1, 2])
        >>> q = compile_sketch_query("PATTERN A; B")
        >>> evaluate_streams(q, u, np.array([0, 2, 5]), mode="exists").tolist()
        [True, True]
        >>> evaluate_streams(q, u, np.array([0, 1, 5]), mode="exists").tolist()
        [False, True]
        >>> found = evaluate_streams(q, u, np.array([0, 2, 5]))
        >>> found.stream.tolist(), found.matches.pos_end.tolist()
        ([0, 1], [1, 2])
    """
    if mode not in MODES:
        raise SketchArgumentError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if resume not in RESUMES:
        raise SketchArgumentError(f"resume must be one of {', '.join(RESUMES)}, not {resume!r}")
    bounds = np.asarray(bounds, dtype=np.int64)
    units, bounds = _window_units(query, units, bounds)
    evaluation = _Evaluation(query, units, limits, bounds)
    rows = evaluation.run()
    if mode == "exists":
        found = np.zeros(len(bounds) - 1, dtype=bool)
        found[evaluation.stream[rows.first]] = True
        return found
    return _matches(units, rows, query.slots, evaluation.stream, resume)


def _window_units(query: SketchQuery, units: Units, bounds: np.ndarray
                  ) -> tuple[Units, np.ndarray]:
    """The units that intersect the ``WINDOW`` (all without one) and the streams' new bounds.

    Within a stream the units are in position order, so both interval ends are sorted and the
    kept units are one contiguous stretch per stream, as a ``searchsorted`` slice would give.
    """
    w = query.window
    if w is None:
        return units, bounds
    starts, ends = (units.pos_start, units.pos_end) if w.kind == "POSITION" else (units.ts_start, units.ts_end)
    keep = (ends >= w.start) & (starts <= w.end)
    kept = np.flatnonzero(keep)
    before = np.concatenate(([0], np.cumsum(keep, dtype=np.int64)))
    return units.take(kept), before[bounds]


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
class _Rows:
    """Partial matches as columns of unit indices."""

    first: np.ndarray
    last: np.ndarray
    slots: list[np.ndarray]

    def keep(self, mask: np.ndarray) -> _Rows:
        return _Rows(self.first[mask], self.last[mask], [s[mask] for s in self.slots])

    def take(self, index: np.ndarray) -> _Rows:
        return _Rows(self.first[index], self.last[index], [s[index] for s in self.slots])


_EMPTY = np.zeros(0, dtype=np.int64)


class _Evaluation:
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

    def run(self) -> _Rows:
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

    def keep_within(self, rows: _Rows) -> _Rows:
        w = self.q.within
        if w is None or not rows.first.shape[0]:
            return rows
        if w.on_positions:
            span = self.u.pos_start[rows.last] - self.u.pos_end[rows.first]
        else:
            span = self.u.ts_start[rows.last] - self.u.ts_end[rows.first]
        return rows.keep(span < w.amount)

    def nothing_after(self, rows: _Rows) -> np.ndarray:
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

    def next_first(self, comp: SketchComponent) -> _Rows:
        starts = self.cand(comp.names)
        if comp.kind != "and":
            return _Rows(starts, starts, [starts])
        slots, ok = self.first_at_or_after(comp.names, starts - 1, self.end[starts])
        rows = _Rows(starts, starts, slots).keep(ok)
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

    def next_step(self, rows: _Rows, comp: SketchComponent) -> tuple[_Rows, np.ndarray, np.ndarray]:
        picked, ok = [], np.ones(rows.last.shape, dtype=bool)
        end = self.end[rows.last]
        for group in _groups(comp):
            chosen, found = self.next_candidate(self.cand(group), rows.last, end)
            ok &= found
            picked.append(chosen)
        return self._extend(rows, picked, ok)

    def _extend(self, rows: _Rows, picked: list[np.ndarray], ok: np.ndarray) -> tuple[_Rows, np.ndarray, np.ndarray]:
        """Append slot columns ``picked`` to ``rows`` where ``ok``; return rows, component first, previous last."""
        rows = rows.keep(ok)
        picked = [p[ok] for p in picked]
        stacked = np.stack(picked)
        cfirst, clast = stacked.min(axis=0), stacked.max(axis=0)
        prev_last = rows.last
        return _Rows(rows.first, clast, rows.slots + picked), cfirst, prev_last

    # strict-contiguity

    def strict_first(self, comp: SketchComponent) -> _Rows:
        """The first component under strict-contiguity: a run starts at every unit holding it
        (for an ``AND``, any of its names: the first unit of a layout holds at least one)."""
        starts = self.cand(comp.names)
        if comp.kind != "and":
            return _Rows(starts, starts, [starts])
        which, slots, last = self.strict_and(starts, comp, 0)
        return _Rows(starts[which], last, slots)

    def strict_step(self, rows: _Rows, comp: SketchComponent, index: int
                    ) -> tuple[_Rows, np.ndarray, np.ndarray]:
        """The next component under strict-contiguity: in the unit right after the row's last
        one (an ``AND``: a layout whose run starts there)."""
        nxt = rows.last + 1
        ok = nxt < self.end[rows.last]
        if comp.kind == "and":
            rows, nxt = rows.keep(ok), nxt[ok]
            which, slots, _ = self.strict_and(nxt, comp, index)
            return self._extend(rows.take(which), slots, np.ones(which.shape, dtype=bool))
        at = np.minimum(nxt, self.n - 1)  # rows exist, so n >= 1
        groups = _groups(comp)
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

    def any_first(self, comp: SketchComponent) -> _Rows:
        """Every binding of the first component (skip-till-any-match): one seed row per stream,
        just before its first unit, bounded by its end."""
        before = self.bounds[:-1] - 1
        seed = _Rows(before, before, [])
        streams = np.arange(len(self.bounds) - 1, dtype=np.int64)
        rows, cfirst, _ = self.any_step(seed, comp, 0, hi_unit=self.bounds[1:], row_stream=streams)
        return _Rows(cfirst, rows.last, rows.slots)

    def any_step(self, rows: _Rows, comp: SketchComponent, index: int,
                 hi_unit: np.ndarray | None = None, row_stream: np.ndarray | None = None
                 ) -> tuple[_Rows, np.ndarray, np.ndarray]:
        """Every binding of ``comp`` after each row's last unit (before the WITHIN bound and
        the stream's end; ``hi_unit`` instead, when given, for rows of streams ``row_stream``)."""
        prev_last = rows.last
        if hi_unit is None:
            hi_unit = self.window_end(rows.first)
        if row_stream is None:
            row_stream = self.stream[rows.first]
        first, slots, new = rows.first, rows.slots, []
        for group in _groups(comp):
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
        return _Rows(first, stacked.max(axis=0), slots + new), stacked.min(axis=0), prev_last


def _groups(comp: SketchComponent) -> list[tuple[str, ...]]:
    """The slot groups of a component: each name of an AND alone; the names of a name/OR together."""
    return [(name,) for name in comp.names] if comp.kind == "and" else [comp.names]


def _matches(units: Units, rows: _Rows, n_slots: int, stream: np.ndarray,
             resume: str = EVERY_START) -> StreamMatches:
    """Deduplicated match records of ``rows`` (unit indices into ``units``), sorted by stream
    (``stream`` gives each unit's) and then as :class:`SketchMatches` sorts them; with
    ``resume="after-match"`` only the chain :func:`after_match` keeps."""
    if not rows.first.shape[0]:
        empty = SketchMatches(_EMPTY, _EMPTY, _EMPTY, _EMPTY, np.zeros((0, n_slots), dtype=np.int64))
        return StreamMatches(_EMPTY, empty)
    # The first and last unit ride along as the last two columns: within a stream they are
    # functions of pos_start and pos_end (the units partition the positions), so they change
    # neither the deduplication nor the order.
    table = np.column_stack([stream[rows.first], units.pos_start[rows.first], units.pos_end[rows.last],
                             units.ts_start[rows.first], units.ts_end[rows.last]]
                            + [units.node_id[s] for s in rows.slots]
                            + [rows.first, rows.last]).astype(np.int64)
    table = np.unique(table, axis=0)
    if resume == AFTER_MATCH:
        table = table[after_match(table[:, 0], table[:, -2], table[:, -1])]
    return StreamMatches(table[:, 0].copy(), SketchMatches(
        table[:, 1].copy(), table[:, 2].copy(), table[:, 3].copy(), table[:, 4].copy(),
        table[:, 5:-2].copy()))


def after_match(stream: np.ndarray, first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Which of the sorted records ``resume="after-match"`` keeps (see :func:`evaluate_streams`).

    Records are sorted by stream, then first unit (unit indices grow with the stream). Per
    stream the first record is kept; from a kept record the next kept one is the first record
    whose first unit is at or after the kept one's last unit and after its first unit. Only the
    first record of each first unit can be that one, so those are the candidates, and
    ``next[i]`` (a ``searchsorted``) maps each candidate to its successor, always a later one.
    The kept records are the path from each stream's first candidate: with pointer doubling
    (``jump[k] = next`` applied ``2^k`` times) each candidate's distance to the end of its path
    is found in ``log2`` steps, and a candidate is on its stream head's path exactly when
    walking that many fewer steps from the head lands on it.

    Example:
        >>> # One stream; records (first, last): (0, 2) (1, 1) (2, 2) (2, 3) (3, 5) (4, 4) (5, 5)
        >>> after_match(np.zeros(7, dtype=np.int64), np.array([0, 1, 2, 2, 3, 4, 5]),
        ...             np.array([2, 1, 2, 3, 5, 4, 5])).tolist()
        [True, False, True, False, True, False, True]
    """
    n = first.shape[0]
    keep = np.zeros(n, dtype=bool)
    if not n:
        return keep
    cand = np.flatnonzero(np.concatenate(([True], (first[1:] != first[:-1]) | (stream[1:] != stream[:-1]))))
    f, l, st = first[cand], last[cand], stream[cand]
    m = cand.shape[0]
    nxt = np.searchsorted(f, np.maximum(l, f + 1), side="left").astype(np.int64)
    # Past the last candidate or into the next stream: the path ends (sentinel m).
    inside = np.flatnonzero(nxt < m)
    same = np.zeros(m, dtype=bool)
    same[inside] = st[nxt[inside]] == st[inside]
    nxt[~same] = m
    jump = [np.concatenate((nxt, [m]))]
    while (1 << len(jump)) <= m:
        jump.append(jump[-1][jump[-1]])
    # depth[i]: steps from candidate i to the last candidate of its path.
    depth = np.zeros(m + 1, dtype=np.int64)
    at = np.arange(m + 1, dtype=np.int64)
    for k in range(len(jump) - 1, -1, -1):
        ahead = jump[k][at]
        move = ahead != m
        at = np.where(move, ahead, at)
        depth += move.astype(np.int64) << k
    head = np.flatnonzero(np.concatenate(([True], st[1:] != st[:-1])))
    head_of = head[np.searchsorted(head, np.arange(m), side="right") - 1]
    steps = depth[head_of] - depth[:m]
    walk = head_of.copy()
    reach = np.maximum(steps, 0)
    for k in range(len(jump)):
        walk = np.where((reach >> k) & 1 == 1, jump[k][walk], walk)
    keep[cand[(steps >= 0) & (walk == np.arange(m))]] = True
    return keep
