"""Plan shapes for skip-till-any-match and strict contiguity, and the cost model that picks one.

Following ZStream (Mei & Madden, SIGMOD 2009: tree-based plans and their cost model) a
sequence pattern is evaluated by a binary tree of SEQ joins over per-component buffers; every tree over the same components
gives the same matches, only the size of the intermediate results differs. The leaves here are
*units*: an event component (the unit's *anchor*) with the Kleene closures grouped with it. A
Kleene closure is never built unanchored when it has an event neighbour: as in FAEM's twin
Kleene algorithms (Behravesh, Shamsuddin, Sim & Chizari, "Optimizing Expressibility and
Performance of Kleene Operators on Binary Tree-based Directed Graph in Complex Event
Processing", Res. J. Appl. Sci. Eng. Technol. 8(13):1531-1543, 2014, its kleene-operator
algorithms on the BTDG: a closure's events are grouped with one neighbour of the closure,
and for a kleene with a specified size the combination is applied late), a closure is grouped
either

* ``left``: with the event component before it, its iterations grown forwards, one per round
  (the partial matches with ``r`` iterations are extended by one later iteration); or
* ``right``: with the event component after it, its iterations grown backwards, one per round
  (each round prepends one earlier iteration before the current first one).

``{n}`` is the kleene-num case in both directions: exactly ``n`` rounds; the rounds before
the ``n``-th stay partial matches of the unit and only the ``n``-combinations leave it. A
shape that starts with Kleene closures grouped ``left`` has a first unit made of them alone; a
closure at the end of a shape can only be grouped ``left``, and a closure grouped ``right``
whose right neighbour is another closure needs that one grouped ``right`` too (else it is
``left``). The grouping is part of the plan (:class:`Plan`); the cost model picks it per run of
consecutive closures (:func:`choose_grouping`): ``left`` when the closure has conditions that
prune while growing forwards but not backwards (aggregates over earlier iterations such as
``avg(b[..i-1].v)``: a prepended iteration changes every one of them, so grown backwards they
are checked only once the closure is complete), otherwise the side whose first round,
the (neighbour, iteration) pairs that satisfy order, link, window and the pair's conditions,
is estimated smaller (sampled like the pair fractions below; from buffer sizes alone on
partitions of fewer than ``SMALL_PARTITION`` events).

The third grouping is the paper's late combination of a kleene with a specified size:

* ``late``: the closure belongs to no unit; the join of the units on its two sides inserts it,
  as every ``r``-combination (``min <= r <= max``) of the closure's events strictly between
  the two neighbours (``late.py``). It applies to a closure with a bounded size, one class,
  an event on each side, iterations that may skip events and conditions that read its
  iterations only one at a time (:func:`cep.match.plan.late.late_blocker`); a forced ``late``
  that does not apply falls back to ``left``. The cost model chooses it when the rows it
  builds, the neighbour pairs plus the sum of ``comb(count, r)`` over them, are estimated no
  more than the rows of growing the closure round by round from the side it would pick
  (every round's partial closures plus the same combinations in the end), both counted on
  the sample. It wins when the closure is dense and its neighbours are rare: round by round
  builds every partial closure after each left neighbour (or before each right one) within
  the window, late only those between two neighbours.

Tree kinds:

* ``left-deep``: ``((U1 U2) U3) ...``: each unit is appended to the growing partial matches;
* ``right-deep``: ``U1 (U2 (U3 ...))``;
* ``bushy``: balanced: pairs, then pairs of pairs;
* ``inner``: start from the adjacent pair with the smallest estimated result and extend
  outward, each time on the side whose join is estimated cheaper.

A plan kind is a tree kind, optionally with a forced grouping of every closure after a colon
(``bushy:right``); without one the grouping is the cost model's (:data:`PLAN_KINDS`).

The cost model estimates, on a prefix of the partition (``SAMPLE_EVENTS`` events), for each
pair of neighbouring units the fraction of (left, right) event pairs that satisfy order, link
and window, and the selectivity of the conditions that read just those two units (evaluated
on up to ``SAMPLE_PAIRS`` sampled pairs). A join's cost is the number of candidate pairs it
expands plus the rows it outputs; a plan's cost is the sum over its joins (ZStream's
cost model, with independence between neighbouring selectivities).

Example:
    >>> build_plan("bushy", 4)
    Join(Join(Unit(0), Unit(1)), Join(Unit(2), Unit(3)))
    >>> build_plan("inner", 4, pair_sizes=[9.0, 1.0, 5.0], unit_sizes=[3.0, 3.0, 3.0, 3.0])
    Join(Unit(0), Join(Join(Unit(1), Unit(2)), Unit(3)))
    >>> split_kind("bushy:right"), split_kind("inner")
    (('bushy', 'right'), ('inner', None))
    >>> choose_grouping(left_rows=5000.0, right_rows=40.0)[0]
    'right'
    >>> choose_grouping(5000.0, 40.0, late_rows=90.0, round_rows=(9000.0, 400.0))[0]
    'late'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, Union

TREE_KINDS = ("left-deep", "right-deep", "bushy", "inner")
GROUPINGS = ("left", "right", "late")
# Every name ``find_matches(plan=...)`` accepts: a tree kind (grouping by the cost model) or a
# tree kind with every Kleene closure's grouping forced.
PLAN_KINDS = TREE_KINDS + tuple(f"{t}:{g}" for t in TREE_KINDS for g in GROUPINGS)
SAMPLE_EVENTS = 4096
SAMPLE_PAIRS = 256
# Below this many events the grouping compares buffer sizes only: sampling costs tens of
# microseconds per closure, more than a poor grouping of a few dozen events can.
SMALL_PARTITION = 256


@dataclass(frozen=True)
class Unit:
    """A leaf of a plan: unit number ``index``."""

    index: int

    @property
    def first(self) -> int:
        """First unit covered."""
        return self.index

    @property
    def last(self) -> int:
        """Last unit covered."""
        return self.index

    def __repr__(self) -> str:
        return f"Unit({self.index})"


@dataclass(frozen=True)
class Join:
    """A SEQ join of the partial matches of ``left`` with those of ``right`` (right after left)."""

    left: "Node"
    right: "Node"

    @property
    def first(self) -> int:
        """First unit covered."""
        return self.left.first

    @property
    def last(self) -> int:
        """Last unit covered."""
        return self.right.last

    def __repr__(self) -> str:
        return f"Join({self.left!r}, {self.right!r})"


Node = Union[Unit, Join]


def build_plan(kind: str, n_units: int, pair_sizes: Sequence[float] | None = None,
               unit_sizes: Sequence[float] | None = None) -> Node:
    """The plan tree of ``kind`` over ``n_units`` units.

    Args:
        kind: one of :data:`PLAN_KINDS` (a grouping suffix does not change the tree).
        n_units: number of units (>= 1).
        pair_sizes: estimated result size of joining units ``k`` and ``k + 1`` (``inner``).
        unit_sizes: estimated size of each unit (``inner``).
    """
    kind, _ = split_kind(kind)
    units: list[Node] = [Unit(k) for k in range(n_units)]
    if n_units == 1:
        return units[0]
    if kind == "left-deep":
        node = units[0]
        for unit in units[1:]:
            node = Join(node, unit)
        return node
    if kind == "right-deep":
        node = units[-1]
        for unit in reversed(units[:-1]):
            node = Join(unit, node)
        return node
    if kind == "bushy":
        return _balanced(units)
    pairs = list(pair_sizes) if pair_sizes is not None else [1.0] * (n_units - 1)
    sizes = list(unit_sizes) if unit_sizes is not None else [1.0] * n_units
    start = min(range(n_units - 1), key=lambda k: (pairs[k], k))
    node = Join(units[start], units[start + 1])
    lo, hi = start, start + 1
    size = pairs[start]
    while lo > 0 or hi < n_units - 1:
        # The factor a neighbour multiplies the result by: its pair result over the unit size
        # of the shared neighbour (independence of neighbouring selectivities).
        left_cost = size * pairs[lo - 1] / max(sizes[lo], 1e-9) if lo > 0 else float("inf")
        right_cost = size * pairs[hi] / max(sizes[hi], 1e-9) if hi < n_units - 1 else float("inf")
        if left_cost <= right_cost:
            lo -= 1
            node = Join(units[lo], node)
            size = left_cost
        else:
            hi += 1
            node = Join(node, units[hi])
            size = right_cost
    return node


def _balanced(nodes: list[Node]) -> Node:
    while len(nodes) > 1:
        paired: list[Node] = []
        for k in range(0, len(nodes) - 1, 2):
            paired.append(Join(nodes[k], nodes[k + 1]))
        if len(nodes) % 2:
            paired.append(nodes[-1])
        nodes = paired
    return nodes[0]


@dataclass(frozen=True)
class Estimates:
    """Sampled statistics of one shape on one partition.

    Attributes:
        unit_sizes: estimated partial matches of each unit.
        raw_pairs: per neighbouring pair of units, the fraction of (left row, right row)
            pairs that satisfy order, link and window.
        selectivity: per neighbouring pair, the fraction of those pairs that satisfy the
            conditions reading just those two units (1.0 when there are none).
        expansion: per neighbouring pair, the rows each joined pair becomes: 1.0, or for a
            closure combined late between the two units, the mean number of its
            combinations per pair (empty: 1.0 everywhere).
    """

    unit_sizes: tuple[float, ...]
    raw_pairs: tuple[float, ...]
    selectivity: tuple[float, ...]
    expansion: tuple[float, ...] = ()

    def factor(self, k: int) -> float:
        """Selectivity times expansion of neighbouring pair ``k``."""
        grow = self.expansion[k] if self.expansion else 1.0
        return self.selectivity[k] * grow

    def pair_sizes(self) -> list[float]:
        """Estimated result size of joining each pair of neighbouring units."""
        return [self.unit_sizes[k] * self.unit_sizes[k + 1] * self.raw_pairs[k] * self.factor(k)
                for k in range(len(self.raw_pairs))]


def plan_cost(node: Node, est: Estimates) -> tuple[float, float]:
    """``(estimated rows, estimated work)`` of a plan tree under the estimates."""
    if isinstance(node, Unit):
        size = est.unit_sizes[node.index]
        return size, size
    left_size, left_work = plan_cost(node.left, est)
    right_size, right_work = plan_cost(node.right, est)
    gap = node.left.last
    candidates = left_size * right_size * est.raw_pairs[gap]
    size = candidates * est.factor(gap)
    return size, left_work + right_work + candidates + size


def choose_plan(est: Estimates, n_units: int) -> tuple[str, Node, dict[str, float]]:
    """The cheapest plan kind under the estimates, its tree and the cost of every kind."""
    costs: dict[str, float] = {}
    trees: dict[str, Node] = {}
    for kind in TREE_KINDS:
        tree = build_plan(kind, n_units, est.pair_sizes(), est.unit_sizes)
        trees[kind] = tree
        costs[kind] = plan_cost(tree, est)[1]
    best = min(TREE_KINDS, key=lambda k: (costs[k], TREE_KINDS.index(k)))
    return best, trees[best], costs


def split_kind(kind: str) -> tuple[str, str | None]:
    """``(tree kind, forced grouping or None)`` of a plan kind name.

    Raises:
        ValueError: ``kind`` is not one of :data:`PLAN_KINDS`.
    """
    if kind not in PLAN_KINDS:
        raise ValueError(f"unknown plan {kind!r}; expected one of {', '.join(PLAN_KINDS)}")
    tree, _, grouping = kind.partition(":")
    return tree, grouping or None


@dataclass(frozen=True)
class Plan:
    """A complete plan for one shape: the grouping of its Kleene closures and the join tree.

    Attributes:
        kind: the tree kind.
        tree: the join tree over ``units``.
        grouping: per slot of the shape, ``"left"``, ``"right"`` or ``"late"`` for a Kleene
            slot, None for an event slot.
        units: the slot range ``(first, last)`` of each unit under that grouping.
    """

    kind: str
    tree: Node
    grouping: tuple[str | None, ...]
    units: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class GroupingChoice:
    """The cost model's decision for one run of consecutive Kleene closures of a shape.

    Attributes:
        slots: the run's slots (decided together: a ``right`` closure needs its right
            neighbour closure ``right`` too).
        grouping: ``"left"``, ``"right"`` or ``"late"``.
        left_rows: estimated first-round partial matches when grouped with the event before
            the run (None: the run starts the shape; ``left`` makes it a unit of its own).
        right_rows: the same with the event after the run (None: the run ends the shape).
        reason: why, in words (for ``explain``).
        late_rows: estimated rows of combining the closure late (neighbour pairs plus their
            combinations); None when late combination does not apply.
        round_rows: estimated rows of growing it round by round ``(left, right)``: every
            round's partial closures plus the complete ones joined with the other neighbour;
            None when late combination does not apply.
    """

    slots: tuple[int, ...]
    grouping: str
    left_rows: float | None
    right_rows: float | None
    reason: str
    late_rows: float | None = None
    round_rows: tuple[float, float] | None = None


def choose_grouping(left_rows: float | None, right_rows: float | None,
                    forward_pruning: bool = False, late_rows: float | None = None,
                    round_rows: tuple[float, float] | None = None) -> tuple[str, str]:
    """``(grouping, reason)`` for one run of Kleene closures.

    Args:
        left_rows: estimated (left neighbour, first iteration) pairs, or None when the run
            starts the shape.
        right_rows: estimated (last iteration, right neighbour) pairs, or None when the run
            ends the shape.
        forward_pruning: the run has conditions that prune while iterations are appended but
            not while they are prepended (checked only on complete closures when grown
            backwards).
        late_rows: estimated rows of combining the closure late; None when it does not apply.
        round_rows: estimated rows of growing it round by round, grouped ``(left, right)``.

    Every later round multiplies both sides by about the same number of candidate
    iterations, so the first round decides between ``left`` and ``right``: the closure is
    grown from the neighbour that leaves fewer partial matches (ties: ``left``). A run that
    starts the shape has no left anchor: grouped ``left`` it enumerates every closure in the
    stream before any join, while grouped ``right`` it only builds closures that some right
    neighbour can follow. Late combination replaces that choice when it applies and its
    estimate is no larger than the rounds of the side chosen.
    """
    if right_rows is None:
        return "left", "no event after the closure"
    if forward_pruning:
        return "left", "its conditions prune only while growing forwards"
    if left_rows is None:
        return "right", "starts the shape: anchored on the event after it"
    if right_rows < left_rows:
        grouping, reason = "right", "the event after it leaves fewer partial matches"
    else:
        grouping, reason = "left", "the event before it leaves no more partial matches"
    if late_rows is not None and round_rows is not None:
        rounds = round_rows[0] if grouping == "left" else round_rows[1]
        if late_rows <= rounds:
            return "late", ("combining it late between its neighbours builds no more rows than "
                            f"growing it {grouping} round by round")
        reason += "; growing it round by round builds fewer rows than combining it late"
    return grouping, reason
