"""skip-till-any-match and strict contiguity: a plan of vectorised SEQ joins over buffers.

One shape (``shapes.py``) of one alternative is evaluated on one partition by a plan tree
(``plans.py``). Leaves are units; ``Join(X, Unit)`` *extends* the partial matches of ``X``
by the unit's components one event at a time (a SEQ join with the component's buffer);
``Join(X, Y)`` with a composite ``Y`` joins two sets of partial matches (``joins.py``).

Kleene closures follow the left-grouped Kleene operator of FAEM (the seed paper of
``match_seq``, DESIGN.md section 1; ``{n}`` is its kleene-num case: exactly ``n`` rounds): the
partial matches with ``r`` iterations are extended by one more iteration per round, and every round with ``min <= r <= max`` is a set of
completed partial matches. The number of rounds is bounded by ``max`` and by
``MatchLimits.max_kleene_iterations``; every round's size is checked against
``max_partial_matches`` before it is built, so the exponential outputs of skip-till-any-match
Kleene closures end in a :class:`MatchLimitError`, not in an exhausted machine.

Constraints are placed as early as possible (predicate placement): a condition or NOT is
checked on the first partial matches that cover every slot it reads, and, inside a Kleene
closure, at each round when appending iterations can only add failures (``monotone_in``),
otherwise once the closure is complete.

Example:
    >>> from cep.match.compiler import compile_query
    >>> from cep.match.data import StreamData
    >>> from cep.match.shapes import shapes_of
    >>> from cep.match.stream import EventStream
    >>> cq = compile_query("PATTERN A; B", policy="skip-till-any-match")
    >>> s = EventStream.from_columns(ids=range(4), ts=range(4), types=list("ABAB"))
    >>> m = AnyMatch(cq, shapes_of(cq.alternatives[0])[0], StreamData(s, None))
    >>> [b.pos.tolist() for b in m.run(m.plan("left-deep"))]
    [[[0, 1], [0, 3], [2, 3]]]
"""

from __future__ import annotations

import itertools
from typing import Mapping, Sequence

import numpy as np

from cep.lang.ast import NEXT
from cep.match.bindings import View, holds
from cep.match.buffers import alias_buffer
from cep.match.compiler import CompiledQuery
from cep.match.data import StreamData
from cep.match.expr import Value, null_safe_equal
from cep.match.joins import Block, expand_ranges, next_after
from cep.match.limits import check_iterations, check_partial
from cep.match.negation import violated, window_close
from cep.match.plans import Estimates, Join, Node, Unit, build_plan, SAMPLE_EVENTS, SAMPLE_PAIRS
from cep.match.shapes import Constraint, Shape
from cep.match.variables import exists_assignment

_NONE = np.iinfo(np.int64).max // 4


def units_of(shape: Shape) -> list[tuple[int, int]]:
    """Slot ranges ``(first, last)`` of the units: an event slot with the Kleene slots after it
    (a leading run of Kleene slots is a unit of its own)."""
    units: list[tuple[int, int]] = []
    for k, slot in enumerate(shape.slots):
        if k == 0 or slot.kind == "event":
            units.append((k, k))
        else:
            units[-1] = (units[-1][0], k)
    return units


class AnyMatch:
    """Evaluates one shape on one partition (all mutable state of the evaluation lives here).

    Args:
        cq: the compiled query.
        shape: the shape to evaluate.
        data: the partition.
    """

    def __init__(self, cq: CompiledQuery, shape: Shape, data: StreamData) -> None:
        self.cq = cq
        self.shape = shape
        self.data = data
        self.limits = cq.limits
        self.window = cq.window
        self.equivalences = tuple(cq.normal.equivalences)
        self.units = units_of(shape)
        self.active = tuple(c for c in shape.constraints if c.scope and not c.deferred)
        self.deferred = tuple(c for c in shape.constraints if c.deferred)
        self.constants = tuple(c.pred for c in shape.constraints
                               if c.kind == "pred" and not c.scope and not c.deferred)
        self._transitive = {a: data.value(a)[0].dtype.kind != "O" for a in self.equivalences}

    # -- entry points -----------------------------------------------------------------------
    def plan(self, kind: str) -> Node:
        """The plan tree of ``kind`` for this shape (sizes sampled for ``inner``)."""
        est = self.estimates() if kind == "inner" and len(self.units) > 2 else None
        return build_plan(kind, len(self.units), est.pair_sizes() if est else None,
                          est.unit_sizes if est else None)

    def run(self, plan: Node) -> list[Block]:
        """Every match of the shape, as blocks of complete matches."""
        for pred in self.constants:
            if not holds(pred, View(1, {}, {}), self.data)[0]:
                return []
        blocks = self._evaluate(plan)
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
    def _evaluate(self, node: Node) -> list[Block]:
        if isinstance(node, Unit):
            return self._unit(node.index, None)
        assert isinstance(node, Join)
        left = self._evaluate(node.left)
        if not left:
            return []
        if isinstance(node.right, Unit):
            return self._unit(node.right.index, left)
        right = self._evaluate(node.right)
        if not right:
            return []
        out = []
        for lb, rb in itertools.product(left, right):
            joined = self._join(lb, rb)
            if joined is not None and len(joined):
                out.append(joined)
                check_partial(self.limits, _rows(out), "joining partial matches")
        return out

    def _unit(self, index: int, seed: list[Block] | None) -> list[Block]:
        """The partial matches of unit ``index``, appended to ``seed`` (None: standalone)."""
        first, last = self.units[index]
        blocks = seed
        for k in range(first, last + 1):
            if self.shape.slots[k].kind == "event":
                blocks = self._event_slot(blocks, k)
            else:
                blocks = self._kleene_slot(blocks, k)
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

    def _kleene_slot(self, blocks: list[Block] | None, k: int) -> list[Block]:
        """Grow Kleene slot ``k`` round by round; every round within bounds is an output."""
        slot = self.shape.slots[k]
        frontier: list[Block] = []
        for alias in slot.aliases:
            for block in self._append(blocks, k, alias, entering=True):
                frontier.append(self._apply(block, self._step_constraints(block, k, alias, 1)))
        frontier = [b for b in frontier if len(b)]
        done: list[Block] = []
        r = 1
        while frontier:
            if r >= slot.min:
                for block in frontier:
                    finished = self._apply(block, self._completion_constraints(block, k))
                    if len(finished):
                        done.append(finished)
            if slot.max is not None and r >= slot.max:
                break
            grown: list[Block] = []
            for block in frontier:
                for alias in slot.aliases:
                    for new in self._append([block], k, alias, entering=False):
                        new = self._apply(new, self._step_constraints(new, k, alias, r + 1))
                        if len(new):
                            grown.append(new)
            if grown:
                check_iterations(self.limits, r + 1)
                # Every completed round stays alive until the plan is done: bound them together.
                check_partial(self.limits, _rows(done) + _rows(grown),
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
            lo, hi = self._range(buf, block.start, block.end, link,
                                 self.shape.gaps[k - 1] if entering and k > 0 else ())
            rows, idx = expand_ranges(lo, hi, self.limits, f"appending {alias}")
            pos = np.concatenate([block.pos[rows], buf[idx].reshape(-1, 1)], axis=1)
            new = Block(block.first, k, block.layout + ((k, alias),), pos)
            new = new.rows(self._pair_checks(new, new.pos[:, 0], new.pos[:, -1:]))
            if len(new):
                out.append(new)
        return out

    def _range(self, starts: np.ndarray, first: np.ndarray, end: np.ndarray, link: str,
               gaps: Sequence) -> tuple[np.ndarray, np.ndarray]:
        """Per row, the index range of ``starts`` (sorted) that may follow ``end``."""
        lo = np.searchsorted(starts, end, side="right")
        if link == NEXT:
            hi = np.searchsorted(starts, end + 1, side="right")
            return lo, hi
        width = self.window.width
        if width is None:
            hi = np.full(len(end), len(starts), dtype=np.int64)
        elif self.window.by_events:
            hi = np.searchsorted(starts, first + width, side="left")
        else:
            hi = np.searchsorted(self.data.ts[starts], self.data.ts[first] + width, side="left")
        for gap in gaps:
            if gap.simple and not self.equivalences:
                for neg_alias in gap.negation.aliases:
                    nxt = next_after(self.buffer(neg_alias), end, _NONE)
                    hi = np.minimum(hi, np.searchsorted(starts, nxt, side="right"))
        return lo, hi

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
        lo, hi = self._range(starts, left.start, left.end, self.shape.slots[k].link,
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

    # -- statistics for the cost model ----------------------------------------------------------
    def estimates(self) -> Estimates:
        """Sampled unit sizes, pair fractions and selectivities (see ``plans.py``)."""
        data = self.data
        limit = data.lo + SAMPLE_EVENTS
        sizes = []
        for first, last in self.units:
            size = float(sum(len(self.buffer(a)) for a in self.shape.slots[first].aliases))
            for k in range(first + 1, last + 1):
                per_row = sum(len(self.buffer(a)) for a in self.shape.slots[k].aliases)
                size *= 1.0 + min(per_row, 8)
            sizes.append(max(size, 1.0))
        raw, sel = [], []
        for u in range(len(self.units) - 1):
            a_slot = self.units[u][1]
            b_slot = a_slot + 1
            left = np.concatenate([self.buffer(a) for a in self.shape.slots[a_slot].aliases])
            right = np.sort(np.concatenate([self.buffer(a) for a in self.shape.slots[b_slot].aliases]))
            left = np.sort(left[left < limit])
            right_s = right[right < limit]
            if not len(left) or not len(right_s):
                raw.append(1.0)
                sel.append(1.0)
                continue
            lo, hi = self._range(right_s, left, left, self.shape.slots[b_slot].link, ())
            counts = np.maximum(hi - lo, 0)
            raw.append(float(counts.sum()) / (len(left) * len(right_s)))
            sel.append(self._sample_selectivity(a_slot, b_slot, left, right_s, lo, counts))
        return Estimates(tuple(sizes), tuple(raw), tuple(sel))

    def _sample_selectivity(self, a_slot: int, b_slot: int, left: np.ndarray, right: np.ndarray,
                            lo: np.ndarray, counts: np.ndarray) -> float:
        preds = [c.pred for c in self.active if c.kind == "pred" and c.scope == {a_slot, b_slot}]
        total = int(counts.sum())
        if not preds or total == 0:
            return 1.0
        rng = np.random.default_rng(0)
        pick = np.sort(rng.choice(total, size=min(total, SAMPLE_PAIRS), replace=False))
        rows = np.searchsorted(np.cumsum(counts), pick, side="right")
        idx = lo[rows] + (pick - (np.cumsum(counts) - counts)[rows])
        a_alias = self.shape.slots[a_slot].aliases[0]
        b_alias = self.shape.slots[b_slot].aliases[0]
        view = View.of_columns(len(pick), {a_alias: [left[rows]], b_alias: [right[idx]]})
        ok = np.ones(len(pick), dtype=bool)
        for p in preds:
            assert p is not None
            ok &= holds(p, view, self.data)
        return max(float(ok.mean()), 1.0 / SAMPLE_PAIRS)


def _rows(blocks: list[Block]) -> int:
    return sum(len(b) for b in blocks)


def view_of(block: Block) -> View:
    """The bindings of a block, alias by alias."""
    columns: dict[str, list[np.ndarray]] = {}
    for c, (_, alias) in enumerate(block.layout):
        columns.setdefault(alias, []).append(block.pos[:, c])
    return View.of_columns(len(block), columns)
