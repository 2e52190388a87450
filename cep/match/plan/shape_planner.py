"""Plans of one shape on one partition: the grouping of its Kleene closures and the join tree.

The second half of the planner stage (the first, ``planner.py``, runs once per query). For
skip-till-any-match and strict contiguity a shape is evaluated by a tree of SEQ joins over
units (``plans.py``, ``units.py``); which grouping and which tree are cheapest depends on the
partition, so :class:`ShapePlanner` decides per partition with ZStream's cost model
(``plans.py``: Mei & Madden, SIGMOD 2009) from sampled statistics (``estimator.py``), unless
the caller forces them. The runtime (``any_match.py``) evaluates the :class:`~cep.match.plan.plans.Plan`
it returns and imports this module; this module imports no evaluator.

Example:
    >>> from cep.match.compile.compiler import compile_query
    >>> from cep.match.columnar.data import StreamData
    >>> from cep.match.columnar.stream import EventStream
    >>> cq = compile_query("PATTERN A; B; C; D", policy="skip-till-any-match")
    >>> s = EventStream.from_columns(ids=range(8), ts=range(8), types=list("ABCDABCD"))
    >>> planner = ShapePlanner(cq, cq.alternatives[0].shapes[0], StreamData(s, None))
    >>> planner.units, planner.plan("bushy").tree
    ([(0, 0), (1, 1), (2, 2), (3, 3)], Join(Join(Unit(0), Unit(1)), Join(Unit(2), Unit(3))))
"""

from __future__ import annotations

from functools import cached_property
from typing import Sequence

from cep.match.columnar.data import StreamData
from cep.match.compile.program import CompiledQuery
from cep.match.compile.shapes import Shape
from cep.match.plan.estimator import ShapeEstimator
from cep.match.plan.plans import Estimates, GroupingChoice, Plan, build_plan, choose_plan, split_kind
from cep.match.plan.units import GroupingRequest, normal_grouping, units_of


class ShapePlanner:
    """Plans of one shape on one partition: the closures' grouping and the join tree.

    Args:
        cq: the compiled query.
        shape: the shape to plan.
        data: the partition (the cost model samples it).
        grouping: force the grouping of the Kleene closures (``"left"``, ``"right"``,
            ``"late"``, or per slot, see :func:`cep.match.plan.units.normal_grouping`); None lets
            the cost model choose.
    """

    def __init__(self, cq: CompiledQuery, shape: Shape, data: StreamData,
                 grouping: GroupingRequest = None) -> None:
        self.shape = shape
        self.estimator = ShapeEstimator(cq, shape, data)
        self._requested = grouping

    @cached_property
    def choices(self) -> tuple[GroupingChoice, ...]:
        """The cost model's grouping decisions (empty when the grouping was forced)."""
        if self._requested is not None:
            return ()
        return tuple(self.estimator.grouping_choices())

    @cached_property
    def grouping(self) -> tuple[str | None, ...]:
        """Per slot, the grouping of each Kleene closure (None for event slots)."""
        if self._requested is not None:
            return normal_grouping(self.shape, self._requested)
        want = {k: c.grouping for c in self.choices for k in c.slots}
        return normal_grouping(self.shape, want)

    @cached_property
    def units(self) -> list[tuple[int, int]]:
        """The units under :attr:`grouping`."""
        return units_of(self.shape, self.grouping)

    def estimates(self, units: Sequence[tuple[int, int]] | None = None) -> Estimates:
        """Sampled unit sizes, pair fractions and selectivities of ``units`` (default:
        :attr:`units`)."""
        return self.estimator.estimates(self.units if units is None else units)

    def plan(self, kind: str) -> Plan:
        """The plan of ``kind`` for this shape (sizes sampled for ``inner``).

        ``kind`` is a tree kind, with this planner's grouping, or ``tree:grouping`` with every
        closure grouped that way (see :data:`cep.match.plan.plans.PLAN_KINDS`).
        """
        tree_kind, forced = split_kind(kind)
        if forced is None:
            grouping, units = self.grouping, self.units
        else:
            grouping = normal_grouping(self.shape, forced)
            units = units_of(self.shape, grouping)
        est = self.estimates(units) if tree_kind == "inner" and len(units) > 2 else None
        tree = build_plan(tree_kind, len(units), est.pair_sizes() if est else None,
                          est.unit_sizes if est else None)
        return Plan(tree_kind, tree, grouping, tuple(units))

    def choose_kind(self) -> str:
        """The plan kind the cost model picks (left-deep when there is no choice)."""
        if len(self.units) <= 2:
            return "left-deep"
        kind, _, _ = choose_plan(self.estimates(), len(self.units))
        return kind
