"""Plan shapes for skip-till-any-match and strict contiguity, and the cost model that picks one.

Following ZStream (Mei & Madden, SIGMOD 2009: tree-based plans and their cost model) a
sequence pattern is evaluated by a binary tree of SEQ joins over per-component buffers; every tree over the same components
gives the same matches, only the size of the intermediate results differs. The leaves here are
*units*: an event component with the Kleene components that follow it (a Kleene closure is
always grown from its left neighbour, one iteration per round, as FAEM's left-grouped Kleene
operator does, so the closure of all increasing subsequences is never built unanchored). A
shape that starts with Kleene components has a first unit made of them alone.

Plan kinds:

* ``left-deep``: ``((U1 U2) U3) ...``: each unit is appended to the growing partial matches;
* ``right-deep``: ``U1 (U2 (U3 ...))``;
* ``bushy``: balanced: pairs, then pairs of pairs;
* ``inner``: start from the adjacent pair with the smallest estimated result and extend
  outward, each time on the side whose join is estimated cheaper.

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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, Union

PLAN_KINDS = ("left-deep", "right-deep", "bushy", "inner")
SAMPLE_EVENTS = 4096
SAMPLE_PAIRS = 256


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
        kind: one of :data:`PLAN_KINDS`.
        n_units: number of units (>= 1).
        pair_sizes: estimated result size of joining units ``k`` and ``k + 1`` (``inner``).
        unit_sizes: estimated size of each unit (``inner``).
    """
    if kind not in PLAN_KINDS:
        raise ValueError(f"unknown plan {kind!r}; expected one of {', '.join(PLAN_KINDS)}")
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
    """

    unit_sizes: tuple[float, ...]
    raw_pairs: tuple[float, ...]
    selectivity: tuple[float, ...]

    def pair_sizes(self) -> list[float]:
        """Estimated result size of joining each pair of neighbouring units."""
        return [self.unit_sizes[k] * self.unit_sizes[k + 1] * self.raw_pairs[k] * self.selectivity[k]
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
    size = candidates * est.selectivity[gap]
    return size, left_work + right_work + candidates + size


def choose_plan(est: Estimates, n_units: int) -> tuple[str, Node, dict[str, float]]:
    """The cheapest plan kind under the estimates, its tree and the cost of every kind."""
    costs: dict[str, float] = {}
    trees: dict[str, Node] = {}
    for kind in PLAN_KINDS:
        tree = build_plan(kind, n_units, est.pair_sizes(), est.unit_sizes)
        trees[kind] = tree
        costs[kind] = plan_cost(tree, est)[1]
    best = min(PLAN_KINDS, key=lambda k: (costs[k], PLAN_KINDS.index(k)))
    return best, trees[best], costs
