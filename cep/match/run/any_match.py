"""skip-till-any-match and strict contiguity: a plan of vectorised SEQ joins over buffers.

One shape (``shapes.py``) of one alternative is evaluated on one partition by a plan tree
(``plans.py``) that the planner chose (``shape_planner.py``: the grouping of the closures into
units, ``units.py``, and the tree, by the cost model); this module only runs it. Leaves are units; ``Join(X, Unit)`` *extends* the partial matches of ``X``
by the unit's components one event at a time (a SEQ join with the component's buffer);
``Join(X, Y)`` with a composite ``Y`` joins two sets of partial matches (``joins.py``).

Kleene closures follow the twin Kleene operators of FAEM (the seed paper of ``match_seq``,
DESIGN.md section 1; Behravesh et al. 2014 on the BTDG, see ``plans.py``). A closure grouped
``left`` is grown from its left neighbour: the partial matches with ``r`` iterations are
extended by one later iteration per round. A closure grouped ``right`` is grown from its right
neighbour: each round prepends one earlier iteration before the current first one (the
iteration link, the window from the new first event to the unit's last, and, for the first
prepended iteration, the link and the NOTs towards the right neighbour narrow the
``searchsorted`` ranges). In both directions every round with ``min <= r <= max`` is a set of
completed partial matches (``{n}``, kleene-num: exactly ``n`` rounds). The number of rounds
is bounded by ``max`` and by ``MatchLimits.max_kleene_iterations``; every round's size is checked
against ``max_partial_matches`` before it is built, so the exponential outputs of
skip-till-any-match Kleene closures end in a :class:`MatchLimitError`, not in an exhausted
machine. A closure grouped ``late`` (the paper's late combination for a kleene with a specified
size, ``late.py``) is in no unit and not grown at all: the join of the units on its two sides
joins the neighbours first, then inserts every combination of the closure's events between
each pair, after their number, a sum of binomial coefficients, was checked against the same
limits (:meth:`AnyMatch._late_join`).

Constraints are placed as early as possible (predicate placement): a condition or NOT is
checked on the first partial matches that cover every slot it reads, and, inside a Kleene
closure, at each round when adding iterations can only add failures, otherwise once the
closure is complete. Appending only adds instances unless a condition aggregates over all
iterations or reads a fixed index (``Predicate.monotone_in``); prepending renumbers the
iterations, which relative references (``b[i]``, ``b[i-1]``) and unindexed ones do not notice,
but every aggregate ``agg(b[..i-1])`` and every fixed index ``b[1]`` does, so those wait for the
complete closure (:func:`cep.match.compile.predicates.backward_monotone`). The new instances of a prepended iteration are
those within the first few iterations (the span of the relative offsets), so a step checks the
condition on those columns only.

Example:
    >>> from cep.match.compile.compiler import compile_query
    >>> from cep.match.columnar.data import StreamData
    >>> from cep.match.compile.shapes import shapes_of
    >>> from cep.match.columnar.stream import EventStream
    >>> cq = compile_query("PATTERN A; B", policy="skip-till-any-match")
    >>> s = EventStream.from_columns(ids=range(4), ts=range(4), types=list("ABAB"))
    >>> m = AnyMatch(cq, shapes_of(cq.alternatives[0])[0], StreamData(s, None))
    >>> [b.pos.tolist() for b in m.run(m.plan("left-deep"))]
    [[[0, 1], [0, 3], [2, 3]]]
    >>> cq = compile_query("PATTERN A; B{2}; C", policy="skip-till-any-match")
    >>> m = AnyMatch(cq, shapes_of(cq.alternatives[0])[0], StreamData(s, None), grouping="late")
    >>> m.units  # B{2} is in no unit: the join of A with C inserts it
    [(0, 0), (2, 2)]
"""

from __future__ import annotations

import itertools
from typing import Mapping, Sequence

import numpy as np

from cep.lang.ast import AggRef
from cep.match.columnar.bindings import View, holds
from cep.match.columnar.buffers import alias_buffer
from cep.match.columnar.data import StreamData
from cep.match.columnar.joins import Block, count_between, expand_ranges
from cep.match.columnar.negation import violated, window_close
from cep.match.columnar.ranges import Ranges
from cep.match.columnar.variables import exists_assignment
from cep.match.compile.expr import Value, null_safe_equal
from cep.match.compile.predicates import Predicate, backward_monotone
from cep.match.compile.program import CompiledQuery
from cep.match.compile.shapes import Constraint, Shape
from cep.match.limits import check_cells, check_iterations, check_partial
from cep.match.plan.late import combination_total, expand_combinations
from cep.match.plan.plans import Estimates, GroupingChoice, Join, Node, Plan, Unit
from cep.match.plan.shape_planner import ShapePlanner
from cep.match.plan.units import GroupingRequest, anchor_of


def front_width(pred: Predicate, alias: str) -> int | None:
    """How many leading iterations of ``alias`` hold every instance that involves the first
    one, for a condition that is ``backward_monotone``; None when all must be checked."""
    if not pred.incremental_in(alias):
        return None
    if pred.rel_alias != alias:
        return 1  # unindexed: one instance per iteration
    offsets = [r.index.offset for r in pred.relative  # type: ignore[union-attr]
               if r.alias == alias and not isinstance(r, AggRef)]
    return max(offsets) - min(offsets) + 1


class AnyMatch:
    """Evaluates one shape on one partition (all mutable state of the evaluation lives here).

    Args:
        cq: the compiled query.
        shape: the shape to evaluate.
        data: the partition.
        grouping: force the grouping of the Kleene closures (``"left"``, ``"right"``,
            ``"late"``, or per slot, see :func:`cep.match.plan.units.normal_grouping`); None lets
            the cost model choose.

    The plan is the planner's (:class:`cep.match.plan.shape_planner.ShapePlanner`, held as
    :attr:`planner`): :attr:`choices`, :attr:`grouping`, :attr:`units`, :meth:`plan` and
    :meth:`estimates` ask it, for callers that hold a matcher; the evaluation only runs a plan.
    """

    def __init__(self, cq: CompiledQuery, shape: Shape, data: StreamData,
                 grouping: GroupingRequest = None) -> None:
        self.cq = cq
        self.shape = shape
        self.data = data
        self.limits = cq.limits
        self.window = cq.window
        self.equivalences = tuple(cq.normal.equivalences)
        self.active = tuple(c for c in shape.constraints if c.scope and not c.deferred)
        self.deferred = tuple(c for c in shape.constraints if c.deferred)
        self.constants = tuple(c.pred for c in shape.constraints
                               if c.kind == "pred" and not c.scope and not c.deferred)
        self._transitive = {a: data.value(a)[0].dtype.kind != "O" for a in self.equivalences}
        self.ranges = Ranges(cq.window, data, self.equivalences, self.buffer)
        self.planner = ShapePlanner(cq, shape, data, grouping)

    # -- the planner's decisions --------------------------------------------------------------
    @property
    def choices(self) -> tuple[GroupingChoice, ...]:
        """The cost model's grouping decisions (empty when the grouping was forced)."""
        return self.planner.choices

    @property
    def grouping(self) -> tuple[str | None, ...]:
        """Per slot, the grouping of each Kleene closure (None for event slots)."""
        return self.planner.grouping

    @property
    def units(self) -> list[tuple[int, int]]:
        """The units under :attr:`grouping`."""
        return self.planner.units

    def plan(self, kind: str) -> Plan:
        """The plan of ``kind`` for this shape (see :meth:`ShapePlanner.plan`)."""
        return self.planner.plan(kind)

    def estimates(self, units: Sequence[tuple[int, int]] | None = None) -> Estimates:
        """The cost model's sampled statistics of ``units`` (default: :attr:`units`)."""
        return self.planner.estimates(units)

    # -- entry point --------------------------------------------------------------------------

    def run(self, plan: Plan | Node) -> list[Block]:
        """Every match of the shape, as blocks of complete matches (a bare tree runs over
        :attr:`units`)."""
        for pred in self.constants:
            if not holds(pred, View(1, {}, {}), self.data)[0]:
                return []
        if isinstance(plan, Plan):
            blocks = self._evaluate(plan.tree, list(plan.units))
        else:
            blocks = self._evaluate(plan, self.units)
        out = []
        for block in blocks:
            block = self._final(block)
            if len(block):
                out.append(block)
        return out

    def buffer(self, alias: str) -> np.ndarray:
        """The buffer of ``alias`` (class and filters, or Spark's mask)."""
        return alias_buffer(self.cq, alias, self.data)

    # -- plan evaluation ----------------------------------------------------------------------
    def _evaluate(self, node: Node, units: list[tuple[int, int]]) -> list[Block]:
        if isinstance(node, Unit):
            return self._unit(units[node.index], None)
        assert isinstance(node, Join)
        left = self._evaluate(node.left, units)
        if not left:
            return []
        # Units cover every slot but the closures grouped late, so a slot between the two
        # sides' units is a late closure: this join inserts it.
        between = units[node.left.last][1] + 1
        late = between if between < units[node.right.first][0] else None
        if isinstance(node.right, Unit) and late is None:
            unit = units[node.right.index]
            if anchor_of(self.shape, unit) == unit[0]:
                # Grown forwards only: append the unit's slots to the left partial matches.
                return self._unit(unit, left)
        right = self._evaluate(node.right, units)
        if not right:
            return []
        out = []
        for lb, rb in itertools.product(left, right):
            joined = [self._join(lb, rb)] if late is None else self._late_join(lb, rb, late)
            for block in joined:
                if block is not None and len(block):
                    out.append(block)
            check_partial(self.limits, _rows(out), "joining partial matches")
        return out

    def _unit(self, unit: tuple[int, int], seed: list[Block] | None) -> list[Block]:
        """The partial matches of ``unit``, appended to ``seed`` (None: standalone).

        Built from the anchor: first the closures grouped ``right`` before it, nearest first,
        each grown backwards; then the closures grouped ``left`` after it, grown forwards.
        """
        first, last = unit
        anchor = anchor_of(self.shape, unit)
        assert seed is None or anchor == first
        blocks = seed
        order = [anchor] + list(range(anchor - 1, first - 1, -1)) + list(range(anchor + 1, last + 1))
        for k in order:
            if self.shape.slots[k].kind == "event":
                blocks = self._event_slot(blocks, k)
            else:
                blocks = self._kleene_slot(blocks, k, backward=k < anchor)
            if not blocks:
                return []
        return blocks  # type: ignore[return-value]

    def _event_slot(self, blocks: list[Block] | None, k: int) -> list[Block]:
        out = []
        for alias in self.shape.slots[k].aliases:
            for block in self._append(blocks, k, alias, entering=True):
                block = self._apply(block, self._step_constraints(block, k, alias, 1))
                if len(block):
                    out.append(block)
        return out

    def _kleene_slot(self, blocks: list[Block] | None, k: int, backward: bool = False) -> list[Block]:
        """Grow Kleene slot ``k`` round by round; every round within bounds is an output.

        Forwards each round appends a later iteration; ``backward`` (grouped ``right``) each
        round prepends an earlier one to ``blocks``, which then start at slot ``k + 1``.
        """
        slot = self.shape.slots[k]
        frontier: list[Block] = []
        for alias in slot.aliases:
            if backward:
                assert blocks is not None
                for block in self._prepend(blocks, k, alias, entering=True):
                    frontier.append(self._back_step(block, k, alias, 1))
            else:
                for block in self._append(blocks, k, alias, entering=True):
                    frontier.append(self._apply(block, self._step_constraints(block, k, alias, 1)))
        frontier = [b for b in frontier if len(b)]
        done: list[Block] = []
        r = 1
        while frontier:
            if r >= slot.min:
                for block in frontier:
                    todo = (self._back_completion_constraints(block, k) if backward
                            else self._completion_constraints(block, k))
                    finished = self._apply(block, todo)
                    if len(finished):
                        done.append(finished)
            if slot.max is not None and r >= slot.max:
                break
            grown: list[Block] = []
            for block in frontier:
                for alias in slot.aliases:
                    if backward:
                        for new in self._prepend([block], k, alias, entering=False):
                            new = self._back_step(new, k, alias, r + 1)
                            if len(new):
                                grown.append(new)
                        continue
                    for new in self._append([block], k, alias, entering=False):
                        new = self._apply(new, self._step_constraints(new, k, alias, r + 1))
                        if len(new):
                            grown.append(new)
            if grown:
                check_iterations(self.limits, r + 1)
                # Every completed round stays alive until the plan is done: bound them together,
                # by rows and by the events they bind (a strict run of n events binds n^2/2:
                # rows alone let 10^4 A's of `A+, B` reach a 10^4 x 10^4 array, issue 46).
                check_partial(self.limits, _rows(done) + _rows(grown),
                              f"growing {'|'.join(slot.aliases)} to {r + 1} iterations")
                check_cells(self.limits, _cells(done) + _cells(grown),
                            f"growing {'|'.join(slot.aliases)} to {r + 1} iterations")
            frontier = grown
            r += 1
        return done

    # -- one SEQ step: append an event of ``alias`` to every row -------------------------------
    def _append(self, blocks: list[Block] | None, k: int, alias: str, entering: bool) -> list[Block]:
        buf = self.buffer(alias)
        if blocks is None:
            return [Block(k, k, ((k, alias),), buf.reshape(-1, 1))] if len(buf) else []
        slot = self.shape.slots[k]
        link = slot.link if entering else slot.iter_link
        out = []
        for block in blocks:
            if not len(block) or not len(buf):
                continue
            lo, hi = self.ranges.after(buf, block.start, block.end, link,
                                 self.shape.gaps[k - 1] if entering and k > 0 else ())
            rows, idx = expand_ranges(lo, hi, self.limits, f"appending {alias}")
            pos = np.concatenate([block.pos[rows], buf[idx].reshape(-1, 1)], axis=1)
            new = Block(block.first, k, block.layout + ((k, alias),), pos)
            new = new.rows(self._pair_checks(new, new.pos[:, 0], new.pos[:, -1:]))
            if len(new):
                out.append(new)
        return out

    # -- one backward step: prepend an event of ``alias`` before every row's first event --------
    def _prepend(self, blocks: list[Block], k: int, alias: str, entering: bool) -> list[Block]:
        """Rows with one more iteration of Kleene slot ``k`` before their first event.

        ``entering``: the first iteration, linked to slot ``k + 1`` (its link and the NOTs
        between the two apply); otherwise one more earlier iteration (the iteration link).
        """
        buf = self.buffer(alias)
        slot = self.shape.slots[k]
        link = self.shape.slots[k + 1].link if entering else slot.iter_link
        gaps = self.shape.gaps[k] if entering else ()
        out = []
        for block in blocks:
            if not len(block) or not len(buf):
                continue
            lo, hi = self.ranges.before(buf, block.start, block.end, link, gaps)
            rows, idx = expand_ranges(lo, hi, self.limits, f"prepending {alias}")
            pos = np.concatenate([buf[idx].reshape(-1, 1), block.pos[rows]], axis=1)
            new = Block(k, block.last, ((k, alias),) + block.layout, pos)
            # Window from the new first event to the row's last; [attr] of the new event
            # against the row's (already equal) events.
            new = new.rows(self._pair_checks(new, new.pos[:, 0], new.pos[:, -1:]))
            if len(new):
                out.append(new)
        return out

    def _pair_checks(self, block: Block, first: np.ndarray, new: np.ndarray) -> np.ndarray:
        """Window (from the block's first event) and ``[attr]`` pruning for new columns."""
        ok = np.ones(len(block), dtype=bool)
        if self.window.width is not None:
            ok &= self.window.fits(first, new[:, -1], self.data.ts)
        for attr in self.equivalences:
            if not self._transitive[attr]:
                continue  # mixed-type column: equality may not be transitive; checked at the end
            base = self.data.at(attr, first)
            for c in range(new.shape[1]):
                ok &= null_safe_equal(self.data.at(attr, new[:, c]), base, len(block))
        return ok

    # -- joins of two composite sets of partial matches ---------------------------------------
    def _join(self, left: Block, right: Block) -> Block | None:
        k = right.first
        order = np.argsort(right.start, kind="stable")
        rpos = right.pos[order]
        starts = rpos[:, 0]
        lo, hi = self.ranges.after(starts, left.start, left.end, self.shape.slots[k].link,
                             self.shape.gaps[k - 1])
        rows, idx = expand_ranges(lo, hi, self.limits, "joining partial matches")
        pos = np.concatenate([left.pos[rows], rpos[idx]], axis=1)
        block = Block(left.first, right.last, left.layout + right.layout, pos)
        block = block.rows(self._pair_checks(block, block.pos[:, 0],
                                             block.pos[:, left.pos.shape[1]:]))
        todo = [c for c in self.active
                if c.scope <= set(range(block.first, block.last + 1))
                and not c.scope <= set(range(left.first, left.last + 1))
                and not c.scope <= set(range(right.first, right.last + 1))]
        return self._apply(block, todo)

    # -- late combination of a closure between two composite sets (late.py) -----------------
    def _late_join(self, left: Block, right: Block, k: int) -> list[Block]:
        """The rows of ``left`` (ending at slot ``k - 1``) joined with those of ``right``
        (starting at slot ``k + 1``) with every allowed combination of Kleene slot ``k``
        between them, one block per number of iterations.

        First the neighbours are joined (order with room for ``min`` iterations, window,
        ``[attr]``, the conditions between the two sides); then per joined row the closure's
        candidates are the buffer slice strictly between the neighbours, narrowed by the
        conditions that read one iteration at a time; the combinations are counted
        (binomial coefficients) and checked against the limits before they are expanded; the
        NOTs next to the closure are checked last.
        """
        slot = self.shape.slots[k]
        (alias,) = slot.aliases
        assert slot.max is not None
        buf = self.buffer(alias)
        if len(buf) < slot.min:
            return []
        order = np.argsort(right.start, kind="stable")
        rpos = right.pos[order]
        starts = rpos[:, 0]
        # The right row must start after the left row's end with room for min iterations.
        lo, hi = self.ranges.after(starts, left.start, left.end + slot.min, self.shape.slots[k + 1].link, ())
        rows, idx = expand_ranges(lo, hi, self.limits, f"joining the neighbours of {alias}")
        enough = count_between(buf, left.end[rows], starts[idx]) >= slot.min
        rows, idx = rows[enough], idx[enough]
        nl = left.pos.shape[1]
        pairs = Block(left.first, right.last, left.layout + right.layout,
                      np.concatenate([left.pos[rows], rpos[idx]], axis=1))
        pairs = pairs.rows(self._pair_checks(pairs, pairs.pos[:, 0], pairs.pos[:, nl:]))
        sides = set(range(left.first, left.last + 1)) | set(range(right.first, right.last + 1))
        pairs = self._apply(pairs, [c for c in self.active if c.scope <= sides
                                    and not c.scope <= set(range(left.first, left.last + 1))
                                    and not c.scope <= set(range(right.first, right.last + 1))])
        if not len(pairs):
            return []
        here = [c for c in self.active if k in c.scope and c.scope <= sides | {k}]
        filters = [c for c in here if c.kind == "pred"]
        counts, offsets, flat = self._late_candidates(pairs, nl, k, alias, buf, filters)
        top = min(slot.max, int(counts.max()))
        if top < slot.min:
            return []
        check_iterations(self.limits, top)
        check_partial(self.limits, combination_total(counts, slot.min, top),
                      f"combining {alias} late")
        layout_l, layout_r = pairs.layout[:nl], pairs.layout[nl:]
        out = []
        for r in range(slot.min, top + 1):
            src, combos = expand_combinations(counts, offsets, flat, r)
            if not len(src):
                continue
            pos = np.concatenate([pairs.pos[src, :nl], combos, pairs.pos[src, nl:]], axis=1)
            block = Block(left.first, right.last, layout_l + ((k, alias),) * r + layout_r, pos)
            # What is left reads the combination as a whole: the NOTs next to the closure.
            block = self._apply(block, [c for c in here if c.kind != "pred"])
            if len(block):
                out.append(block)
        return out

    def _late_candidates(self, pairs: Block, nl: int, k: int, alias: str, buf: np.ndarray,
                         filters: Sequence[Constraint]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per row of ``pairs`` (left columns ``:nl``, right columns after), the candidate
        iterations of late slot ``k``: ``(counts, offsets, flat)``, row ``i``'s candidates
        being ``flat[offsets[i]:offsets[i] + counts[i]]``.

        Without conditions on single iterations this is the buffer slice between the
        neighbours itself; otherwise the (row, candidate) pairs are expanded once and the
        conditions, each true for a set of iterations exactly when true for each
        (:func:`cep.match.plan.late.reads_each_iteration`), and the ``[attr]`` equivalences are
        checked on them.
        """
        lo = np.searchsorted(buf, pairs.pos[:, nl - 1], side="right")
        hi = np.searchsorted(buf, pairs.pos[:, nl], side="left")
        same = [a for a in self.equivalences if self._transitive[a]]
        if not filters and not same:
            return hi - lo, lo, buf
        rows, idx = expand_ranges(lo, hi, self.limits, f"filtering the candidates of {alias}")
        cand = buf[idx]
        ok = np.ones(len(cand), dtype=bool)
        first = pairs.pos[rows, 0]
        for attr in same:
            ok &= null_safe_equal(self.data.at(attr, cand), self.data.at(attr, first), len(cand))
        if filters:
            view = view_of(pairs).take(rows).with_alias(alias, cand)
            for c in filters:
                assert c.pred is not None
                ok &= holds(c.pred, view, self.data)
        rows, cand = rows[ok], cand[ok]
        counts = np.bincount(rows, minlength=len(pairs)).astype(np.int64)
        return counts, np.cumsum(counts) - counts, cand

    # -- constraint placement -----------------------------------------------------------------
    def _step_constraints(self, block: Block, k: int, alias: str, r: int) -> list[tuple[Constraint, str | None]]:
        """Constraints to check right after ``alias`` became iteration ``r`` of slot ``k``."""
        slot = self.shape.slots[k]
        covered = set(range(block.first, k + 1))
        out: list[tuple[Constraint, str | None]] = []
        for c in self.active:
            if k not in c.scope or not c.scope <= covered:
                continue
            if slot.kind == "event":
                out.append((c, None))
            elif c.kind == "pred":
                p = c.pred
                assert p is not None
                if alias in p.aliases and all(p.monotone_in(x) for x in slot.aliases if x in p.aliases):
                    out.append((c, alias))
            elif r == 1 and self._not_fixed_by_first(c, k):
                out.append((c, None))
        return out

    def _completion_constraints(self, block: Block, k: int) -> list[tuple[Constraint, str | None]]:
        """Constraints left for when Kleene slot ``k`` of ``block`` is complete."""
        slot = self.shape.slots[k]
        covered = set(range(block.first, k + 1))
        out: list[tuple[Constraint, str | None]] = []
        for c in self.active:
            if k not in c.scope or not c.scope <= covered:
                continue
            if c.kind == "pred":
                p = c.pred
                assert p is not None
                if not all(p.monotone_in(x) for x in slot.aliases if x in p.aliases):
                    out.append((c, None))
            elif not self._not_fixed_by_first(c, k):
                out.append((c, None))
        return out

    def _back_step(self, block: Block, k: int, alias: str, r: int) -> Block:
        """``block`` after the checks due once ``alias`` was prepended as the first of ``r``
        iterations of slot ``k``: conditions that stay failed under prepending, on the new
        instances only where that suffices, and at ``r = 1`` the NOTs towards slot ``k + 1``."""
        slot = self.shape.slots[k]
        covered = set(range(k, block.last + 1))
        for c in self.active:
            if not len(block):
                break
            if k not in c.scope or not c.scope <= covered:
                continue
            if c.kind == "pred":
                p = c.pred
                assert p is not None
                if alias not in p.aliases or not backward_monotone(p, slot.aliases):
                    continue
                width = front_width(p, alias)
                if width is None:
                    block = block.rows(self._check(block, c, None))
                else:
                    block = block.rows(holds(p, _front_view(block, k, alias, width), self.data))
            elif r == 1 and self._not_fixed_by_last(c, k):
                block = block.rows(self._check(block, c, None))
        return block

    def _back_completion_constraints(self, block: Block, k: int) -> list[tuple[Constraint, str | None]]:
        """Constraints left for when backward-grown Kleene slot ``k`` of ``block`` is complete."""
        slot = self.shape.slots[k]
        covered = set(range(k, block.last + 1))
        out: list[tuple[Constraint, str | None]] = []
        for c in self.active:
            if k not in c.scope or not c.scope <= covered:
                continue
            if c.kind == "pred":
                assert c.pred is not None
                if not backward_monotone(c.pred, slot.aliases):
                    out.append((c, None))
            elif not self._not_fixed_by_last(c, k):
                out.append((c, None))
        return out

    def _not_fixed_by_last(self, c: Constraint, k: int) -> bool:
        """A NOT right after Kleene slot ``k`` whose conditions do not read the slot is fully
        decided by the slot's last iteration (the first one prepended)."""
        gap = c.gap
        assert gap is not None
        slot_aliases = set(self.shape.slots[k].aliases)
        reads = {a for ps in gap.conditions.values() for p in ps for a in p.aliases}
        return not gap.trailing and gap.after == k and not reads & slot_aliases

    def _not_fixed_by_first(self, c: Constraint, k: int) -> bool:
        """A NOT right before Kleene slot ``k`` whose conditions do not read the slot is fully
        decided by the slot's first iteration."""
        gap = c.gap
        assert gap is not None
        slot_aliases = set(self.shape.slots[k].aliases)
        reads = {a for ps in gap.conditions.values() for p in ps for a in p.aliases}
        return not gap.trailing and gap.after == k - 1 and not reads & slot_aliases

    def _apply(self, block: Block, todo: Sequence) -> Block:
        for item in todo:
            if not len(block):
                break
            c, new_of = item if isinstance(item, tuple) else (item, None)
            block = block.rows(self._check(block, c, new_of))
        return block

    def _check(self, block: Block, c: Constraint, new_of: str | None,
               variables: Mapping[str, Value] | None = None) -> np.ndarray:
        view = view_of(block)
        if c.kind == "pred":
            assert c.pred is not None
            return holds(c.pred, view, self.data, variables, new_of)
        gap = c.gap
        assert gap is not None
        cols = [i for i, (s, _) in enumerate(block.layout) if s == gap.after]
        left = block.pos[:, cols[-1]]
        first = block.pos[:, 0]
        if gap.trailing:
            right = window_close(self.window, self.data, first)
        else:
            right = block.pos[:, cols[-1] + 1]
        return ~violated(gap.conditions, view, self.data, left, right, first, self.buffer,
                         self.equivalences, self.limits, variables)

    # -- whole matches --------------------------------------------------------------------------
    def _final(self, block: Block) -> Block:
        for attr in self.equivalences:
            if not self._transitive[attr] and len(block):
                base = self.data.at(attr, block.pos[:, 0])
                ok = np.ones(len(block), dtype=bool)
                for c in range(1, block.pos.shape[1]):
                    ok &= null_safe_equal(self.data.at(attr, block.pos[:, c]), base, len(block))
                block = block.rows(ok)
        if self.deferred and len(block):
            block = block.rows(self._with_variables(block))
        return block

    def _with_variables(self, block: Block) -> np.ndarray:
        """Rows for which some assignment of the join variables satisfies every constraint
        that uses them (candidates: the values of ``expr = $x`` over the bound events)."""
        return exists_assignment(view_of(block), self.data, self.deferred,
                                 lambda c, variables: self._check(block, c, None, variables))

def _rows(blocks: list[Block]) -> int:
    return sum(len(b) for b in blocks)


def _cells(blocks: list[Block]) -> int:
    """Events bound by the rows of ``blocks`` (rows times their widths)."""
    return sum(b.pos.size for b in blocks)


def _front_view(block: Block, k: int, alias: str, width: int) -> View:
    """The bindings of a block with only the first ``width`` iterations of ``alias`` in slot
    ``k`` (every other column kept): the instances a prepended first iteration adds."""
    keep = []
    seen = 0
    for c, (slot, a) in enumerate(block.layout):
        if slot == k and a == alias:
            seen += 1
            if seen > width:
                continue
        keep.append(c)
    return view_of(Block(block.first, block.last, tuple(block.layout[c] for c in keep),
                         block.pos[:, keep]))


def view_of(block: Block) -> View:
    """The bindings of a block, alias by alias."""
    columns: dict[str, list[np.ndarray]] = {}
    for c, (_, alias) in enumerate(block.layout):
        columns.setdefault(alias, []).append(block.pos[:, c])
    return View.of_columns(len(block), columns)
