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

from cep.sketch.query import SketchArgumentError, SketchQuery, compile_sketch_query
from cep.sketch.search import DEFAULT_LIMITS, EMPTY, Rows, Search, SketchLimits
from cep.sketch.units import Units, cut

MODES = ("exists", "intervals")
EVERY_START = "every-start"
AFTER_MATCH = "after-match"
RESUMES = (EVERY_START, AFTER_MATCH)




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
    evaluation = Search(query, units, limits, bounds)
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


def _matches(units: Units, rows: Rows, n_slots: int, stream: np.ndarray,
             resume: str = EVERY_START) -> StreamMatches:
    """Deduplicated match records of ``rows`` (unit indices into ``units``), sorted by stream
    (``stream`` gives each unit's) and then as :class:`SketchMatches` sorts them; with
    ``resume="after-match"`` only the chain :func:`after_match` keeps."""
    if not rows.first.shape[0]:
        empty = SketchMatches(EMPTY, EMPTY, EMPTY, EMPTY, np.zeros((0, n_slots), dtype=np.int64))
        return StreamMatches(EMPTY, empty)
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
