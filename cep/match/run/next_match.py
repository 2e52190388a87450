"""skip-till-next-match: every run advanced at once, in vectorised rounds.

docs/semantics.md defines the policy as one deterministic run per start event that scans the
events after its last bound one (SASE+'s skip-till-next-match, Agrawal et al., SIGMOD 2008;
a Kleene closure is closed by the first event that can fill the next component). Runs are independent, so instead of scanning event by event
per run, all runs advance together:

* a run waiting for an ``event`` component (followed-by link) needs the first event of the
  component's buffer after its cursor that passes the checks. The candidates are a
  contiguous slice of the buffer (``searchsorted`` from the cursor, up to the window's end);
  they are evaluated in chunks of growing size (1, 4, 16, ...) over every unresolved run at
  once, and each run takes its first passing candidate. Events that cannot change a run's
  state are skipped without being looked at, which is exactly what the scan would do;
* a run inside a Kleene component looks, the same way, for the first event that either
  closes the component (it can fill the next one) or is the next iteration, and then takes
  one step of the procedure (close first, then iterate, then the contiguity rule);
* a ``next`` link looks at the single event right after the last bound one.

Each step re-checks only what the new event can change (its class and filters, the link,
the window, ``[attr]``, the conditions that mention its alias, the NOTs it closes);
everything else was true before and stays true (conditions on Kleene aliases are checked
in full when appending an iteration could change an earlier instance). The final check adds
iteration minimums, trailing NOTs, and join variables (re-decided on the whole match).

Example:
    >>> from cep.match.compile.compiler import compile_query
    >>> from cep.match.columnar.data import StreamData
    >>> from cep.match.columnar.stream import EventStream
    >>> s = EventStream.from_columns(ids=range(7), ts=range(7), types=list("ABBCABC"))
    >>> cq = compile_query("PATTERN A; B+; C")
    >>> [(p.tolist(), v) for p, v in next_matches(cq, cq.alternatives[0], StreamData(s, None))]
    [([[0, 1, 2, 3]], ('A', 'B[1]', 'B[2]', 'C')), ([[4, 5, 6]], ('A', 'B[1]', 'C'))]
"""

from __future__ import annotations

import numpy as np

from cep.lang.ast import NEXT
from cep.match.columnar.bindings import View, holds
from cep.match.columnar.buffers import alias_buffer
from cep.match.columnar.data import StreamData
from cep.match.columnar.joins import expand_ranges
from cep.match.columnar.negation import violated, window_close
from cep.match.columnar.variables import exists_assignment
from cep.match.columnar.views import (after_first, append_to_view, distinct, first_of,
                                      first_per_group, member, union)
from cep.match.compile.expr import null_safe_equal
from cep.match.compile.planner import RunPlan
from cep.match.compile.program import CompiledAlternative, CompiledQuery, Negation
from cep.match.compile.shapes import Constraint, Gap
from cep.match.limits import check_bound, check_iterations

_GO, _FAIL, _DONE = 0, 1, 2
_FIRST_CHUNK = 1
_FIRST_CHUNK_CHECKED = 4
_CHUNK_GROWTH = 4


class NextMatch:
    """The runs of one alternative on one partition (all run state is in this object)."""

    def __init__(self, cq: CompiledQuery, alt: CompiledAlternative, data: StreamData) -> None:
        plan: RunPlan = alt.run_plan
        self.cq = cq
        self.alt = alt
        self.data = data
        self.limits = cq.limits
        self.window = cq.window
        self.equivalences = tuple(cq.normal.equivalences)
        self.slots = alt.bound
        self.nb = len(self.slots)
        self.aliases = alt.aliases
        self.slot_of = plan.slot_of
        self.comp_of_slot = np.array(plan.comp_of_slot, dtype=np.int64)
        self.preds_of = plan.preds_of
        self.var_preds = plan.var_preds
        self.constants = plan.constants
        self.plain_negations = plan.plain_negations
        self.var_negations = plan.var_negations
        self.reads_of = plan.reads_of
        self.buffers = {a: alias_buffer(cq, a, data) for a in self.aliases}
        self.unions = [union([self.buffers[a] for a in s.aliases]) for s in self.slots]
        self.fillers = [self._fillers(k) for k in range(self.nb)]
        self.kleene_union: dict[tuple[int, bool, bool], np.ndarray] = {}
        # Checks that use join variables, re-decided on every binding (the oracle's rule).
        self.var_constraints = [Constraint("pred", frozenset(), pred=p, deferred=True)
                                for p in self.var_preds]
        self.var_constraints += [Constraint("not", frozenset(), deferred=True,
                                            gap=Gap(n, -1, False, n.conditions))
                                 for n in self.var_negations]

    def _fillers(self, k: int) -> np.ndarray:
        """Positions that can fill slot ``k`` or, through empty optional Kleene slots, a later one."""
        parts = [self.unions[k]]
        while self.slots[k].kind == "kleene" and self.slots[k].min == 0 and k + 1 < self.nb:
            k += 1
            parts.append(self.unions[k])
        return union(parts)

    # -- run state -----------------------------------------------------------------------------
    def _init_state(self, starts: np.ndarray) -> None:
        n = len(starts)
        self.n = n
        self.bound = 0
        self.start = starts.copy()
        self.last = np.full(n, -1, dtype=np.int64)
        self.cursor = starts - 1
        self.j = np.zeros(n, dtype=np.int64)
        self.last_slot = np.full(n, -1, dtype=np.int64)
        self.view = View(n, {a: np.zeros((n, 1), dtype=np.int64) for a in self.aliases},
                         {a: np.zeros(n, dtype=np.int64) for a in self.aliases})

    def _slot_count(self, k: int, rows: np.ndarray) -> np.ndarray:
        total = np.zeros(len(rows), dtype=np.int64)
        for a in self.slots[k].aliases:
            total += self.view.count[a][rows]
        return total

    def _append(self, rows: np.ndarray, alias: str, pos: np.ndarray) -> None:
        """Bind ``pos`` as the next event of ``alias`` in runs ``rows``."""
        if not len(rows):
            return
        view = self.view
        counts = view.count[alias]
        need = int(counts[rows].max()) + 1
        check_iterations(self.limits, need)
        matrix = view.pos[alias]
        if need > matrix.shape[1]:
            grown = np.zeros((self.n, max(need, 2 * matrix.shape[1])), dtype=np.int64)
            grown[:, :matrix.shape[1]] = matrix
            view.pos[alias] = matrix = grown
        matrix[rows, counts[rows]] = pos
        counts[rows] += 1
        # Every run's bindings are kept until it ends: count them all, matches or not.
        self.bound += len(rows)
        check_bound(self.limits, self.bound)
        self.last[rows] = pos
        self.last_slot[rows] = self.slot_of[alias]

    # -- the checks of appending one event ------------------------------------------------------
    def _fill(self, rows: np.ndarray, pos: np.ndarray, k: int, initial: bool,
              candidates_of: np.ndarray | None = None) -> np.ndarray:
        """For runs ``rows`` (repeats allowed) and candidates ``pos``: the index of the first
        choice of slot ``k`` as which ``pos`` can be bound now, -1 if none.

        ``candidates_of`` is the array the candidates were taken from; when it is the slot's
        own buffer, class membership needs no check."""
        slot = self.slots[k]
        choice = np.full(len(rows), -1, dtype=np.int64)
        if not len(rows):
            return choice
        event = slot.kind == "event"
        count = np.zeros(len(rows), dtype=np.int64) if event else self._slot_count(k, rows)
        base = np.ones(len(rows), dtype=bool)
        if not initial:
            last = self.last[rows]
            if event:
                if slot.link == NEXT:
                    base &= pos == last + 1
            else:
                link = np.where(count == 0, slot.link == NEXT, slot.iter_link == NEXT)
                base &= ~link | (pos == last + 1)
            base &= pos > last
        if slot.max is not None and not event:
            base &= count < slot.max
        if self.window.width is not None:
            base &= self.window.fits(self.start[rows], pos, self.data.ts)
        for attr in self.equivalences:
            base &= null_safe_equal(self.data.at(attr, pos), self.data.at(attr, self.start[rows]),
                                    len(rows))
        single = len(slot.aliases) == 1 and candidates_of is self.unions[k]
        for index, alias in enumerate(slot.aliases):
            ok = base & (choice < 0)
            if not single:
                ok &= member(self.buffers[alias], pos)
            if not ok.any():
                continue
            if not self.preds_of[alias] and not self.constants and not self.alt.negations \
                    and not self.alt.variables:
                choice[ok] = index  # nothing but the checks above can fail
                continue
            sel = np.flatnonzero(ok)
            good = self._conditions(rows[sel], pos[sel], alias, k, count[sel] == 0, initial)
            choice[sel[good]] = index
        return choice

    def _conditions(self, rows: np.ndarray, pos: np.ndarray, alias: str, k: int,
                    entering: np.ndarray, initial: bool) -> np.ndarray:
        """Cross conditions, NOTs and join variables for binding ``pos`` as ``alias``."""
        view = self._view_for(rows, alias)
        append_to_view(view, alias, pos)
        ok = np.ones(len(rows), dtype=bool)
        for pred in self.preds_of[alias]:
            ok &= holds(pred, view, self.data, new_of=alias)
            if not ok.any():
                return ok
        for pred in self.constants:
            ok &= holds(pred, view, self.data)
        if not initial and self.plain_negations:
            last_comp = self.comp_of_slot[np.maximum(self.last_slot[rows], 0)]
            here = self.slots[k].component
            for neg in self.plain_negations:
                if neg.component > here:
                    continue
                sel = ok & entering & (self.last_slot[rows] >= 0) & (last_comp < neg.component)
                if not sel.any():
                    continue
                idx = np.flatnonzero(sel)
                bad = violated(neg.conditions, view.take(idx), self.data, self.last[rows[idx]], pos[idx],
                               self.start[rows[idx]], self._buffer, self.equivalences, self.limits)
                ok[idx[bad]] = False
        if self.alt.variables and ok.any():
            idx = np.flatnonzero(ok)
            sub = view.take(idx)
            constraints = self.var_constraints
            if constraints:
                good = exists_assignment(sub, self.data, constraints,
                                         lambda c, variables: self._var_check(
                                             sub, c, variables, rows[idx], pos[idx]))
                ok[idx[~good]] = False
        return ok

    def _view_for(self, rows: np.ndarray, alias: str) -> View:
        """The bindings of runs ``rows`` restricted to the aliases checks of ``alias`` read."""
        needed = self.reads_of[alias]
        full = self.view
        return View(len(rows), {a: full.pos[a][rows] for a in needed},
                    {a: full.count[a][rows] for a in needed})

    def _buffer(self, alias: str) -> np.ndarray:
        return alias_buffer(self.cq, alias, self.data)

    # -- join variables ------------------------------------------------------------------------------
    def _var_check(self, view: View, c: Constraint, variables: dict, rows: np.ndarray,
                   new_pos: np.ndarray | None) -> np.ndarray:
        """One join-variable constraint on whole (or partial) bindings, given the variables."""
        if c.pred is not None:
            return holds(c.pred, view, self.data, variables)
        neg = c.gap.negation  # type: ignore[union-attr]
        left, right, active = self._not_range(view, neg, new_pos)
        out = np.ones(view.n, dtype=bool)
        if active.any():
            idx = np.flatnonzero(active)
            sub_vars = {k: (np.broadcast_to(v[0], (view.n,))[idx], None if v[1] is None
                            else np.broadcast_to(v[1], (view.n,))[idx]) for k, v in variables.items()}
            bad = violated(neg.conditions, view.take(idx), self.data, left[idx], right[idx],
                           first_of(view, self.aliases)[idx], self._buffer, self.equivalences,
                           self.limits, sub_vars)
            out[idx[bad]] = False
        return out

    def _not_range(self, view: View, neg: Negation, new_pos: np.ndarray | None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Range of a NOT in each binding of ``view`` (None of ``new_pos``: whole matches)."""
        n = view.n
        before_last = np.full(n, -1, dtype=np.int64)
        after_first = np.full(n, -1, dtype=np.int64)
        for k, slot in enumerate(self.slots):
            for a in slot.aliases:
                cnt = view.count[a]
                has = cnt >= 1
                if not has.any():
                    continue
                firsts = view.pos[a][:, 0]
                lasts = view.pos[a][np.arange(n), np.maximum(cnt - 1, 0)]
                if slot.component < neg.component:
                    before_last = np.where(has, np.maximum(before_last, lasts), before_last)
                else:
                    cand = np.where(after_first < 0, firsts, np.minimum(after_first, firsts))
                    after_first = np.where(has, cand, after_first)
        active = before_last >= 0
        if new_pos is None:
            close = window_close(self.window, self.data, first_of(view, self.aliases))
            right = np.where(after_first >= 0, after_first, close)
        else:
            active &= after_first >= 0
            right = after_first
        return before_last, right, active

    # -- one step of the procedure -----------------------------------------------------------------
    def _can_fill(self, rows: np.ndarray, pos: np.ndarray, k: int, initial: bool) -> np.ndarray:
        return self._fill_choice(rows, pos, k, initial) != -1

    def _fill_choice(self, rows: np.ndarray, pos: np.ndarray, k: int, initial: bool) -> np.ndarray:
        """The procedure's ``can_fill``: the choice of slot ``k`` as which ``pos`` fills it,
        -2 when it fills a later slot through empty optional Kleene slots, -1 when neither."""
        choice = self._fill(rows, pos, k, initial)
        slot = self.slots[k]
        if slot.kind == "kleene" and slot.min == 0 and k + 1 < self.nb and (choice < 0).any():
            rest = np.flatnonzero(choice < 0)
            later = self._can_fill(rows[rest], pos[rest], k + 1, initial)
            choice[rest[later]] = -2
        return choice

    def _process(self, rows: np.ndarray, pos: np.ndarray, initial: bool) -> tuple[np.ndarray, np.ndarray]:
        """The procedure's step for runs ``rows`` (distinct) at events ``pos``.

        Returns ``(consumed, state)`` per row, state one of go / fail / done.
        """
        consumed = np.zeros(len(rows), dtype=bool)
        state = np.full(len(rows), _GO, dtype=np.int64)
        pending = np.arange(len(rows))
        while len(pending):
            r_rows = rows[pending]
            js = self.j[r_rows]
            still: list[np.ndarray] = []
            for k in distinct(js):
                sel = pending[js == k]
                if k >= self.nb:
                    state[sel] = _DONE
                    continue
                still.append(self._step_slot(int(k), rows[sel], pos[sel], sel, consumed, state, initial))
            pending = np.concatenate(still) if still else np.zeros(0, dtype=np.int64)
        self.cursor[rows] = np.maximum(self.cursor[rows], pos)
        return consumed, state

    def _step_slot(self, k: int, rows: np.ndarray, pos: np.ndarray, sel: np.ndarray,
                   consumed: np.ndarray, state: np.ndarray, initial: bool) -> np.ndarray:
        """Step runs at slot ``k``; returns the indexes (into the step) to process again."""
        slot = self.slots[k]
        if slot.kind == "event":
            choice = self._fill(rows, pos, k, initial)
            got = choice >= 0
            for index, alias in enumerate(slot.aliases):
                hit = choice == index
                self._append(rows[hit], alias, pos[hit])
            self.j[rows[got]] += 1
            consumed[sel[got]] = True
            state[sel[got]] = np.where(self.j[rows[got]] >= self.nb, _DONE, _GO)
            miss = ~got
            if slot.link == NEXT and not initial:
                state[sel[miss]] = _FAIL
            return np.zeros(0, dtype=np.int64)
        count = self._slot_count(k, rows)
        again = np.zeros(len(rows), dtype=bool)
        # 1. close: the event can fill the next component
        close = np.zeros(len(rows), dtype=bool)
        if k + 1 < self.nb:
            cand = np.flatnonzero(count >= slot.min)
            if len(cand):
                close[cand] = self._can_fill(rows[cand], pos[cand], k + 1, initial)
        self.j[rows[close]] += 1
        again |= close
        # 2. the next iteration
        rest = np.flatnonzero(~close & ((count < slot.max) if slot.max is not None else True))
        iterate = np.zeros(len(rows), dtype=bool)
        if len(rest):
            choice = self._fill(rows[rest], pos[rest], k, initial)
            for index, alias in enumerate(slot.aliases):
                hit = rest[choice == index]
                self._append(rows[hit], alias, pos[hit])
            iterate[rest[choice >= 0]] = True
        if slot.max is not None:
            full = iterate & (count + 1 >= slot.max)
            self.j[rows[full]] += 1
        consumed[sel[iterate]] = True
        state[sel[iterate]] = np.where(self.j[rows[iterate]] >= self.nb, _DONE, _GO)
        # 3. contiguous iterations end at the first event that is not one
        other = ~close & ~iterate
        if not initial:
            link = np.where(count == 0, slot.link == NEXT, slot.iter_link == NEXT)
            strict = other & link
            ends = strict & (count >= slot.min)
            self.j[rows[ends]] += 1
            again |= ends
            state[sel[strict & ~ends]] = _FAIL
        return sel[again]

    # -- the scan ---------------------------------------------------------------------------------
    def _window_end(self, rows: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        """Per run, one past the last index of ``candidates`` inside the run's window."""
        w = self.window
        if w.width is None:
            return np.full(len(rows), len(candidates), dtype=np.int64)
        first = self.start[rows]
        a = first if w.by_events else self.data.ts[first]
        bound = a + w.width
        if w.slide is not None:
            k = a // w.slide if isinstance(w.slide, int) else np.floor(a / w.slide)
            bound = np.minimum(bound, k * w.slide + w.width)
        if w.by_events:
            return np.searchsorted(candidates, bound, side="left")
        return np.searchsorted(self.data.ts[candidates], bound, side="left")

    def _candidates(self, k: int, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Candidate positions for runs at slot ``k`` and a test-kind key per run."""
        slot = self.slots[k]
        if slot.kind == "event":
            return self.unions[k], np.zeros(len(rows), dtype=np.int64)
        count = self._slot_count(k, rows)
        can_close = (count >= slot.min) & (k + 1 < self.nb)
        can_iter = (count < slot.max) if slot.max is not None else np.ones(len(rows), dtype=bool)
        return np.zeros(0, dtype=np.int64), can_close.astype(np.int64) * 2 + can_iter

    def _kleene_candidates(self, k: int, key: int) -> np.ndarray:
        cached = self.kleene_union.get((k, key & 2 > 0, key & 1 > 0))
        if cached is None:
            parts = []
            if key & 1:
                parts.append(self.unions[k])
            if key & 2 and k + 1 < self.nb:
                parts.append(self.fillers[k + 1])
            cached = union(parts) if parts else np.zeros(0, dtype=np.int64)
            self.kleene_union[(k, key & 2 > 0, key & 1 > 0)] = cached
        return cached

    def _apply_kleene_hits(self, k: int, rows: np.ndarray, pos: np.ndarray,
                           got: np.ndarray) -> np.ndarray:
        """Take the step at the first hits of runs in Kleene slot ``k`` with what the search
        already decided; returns the indexes of hits left to the general step procedure
        (closing into a Kleene slot or through empty optional ones)."""
        slot = self.slots[k]
        iterate = got <= -3
        if iterate.any():
            count = self._slot_count(k, rows[iterate])
            choice = -3 - got[iterate]
            for index, alias in enumerate(slot.aliases):
                h = choice == index
                self._append(rows[iterate][h], alias, pos[iterate][h])
            if slot.max is not None:
                full = rows[iterate][count + 1 >= slot.max]
                self.j[full] += 1
        direct = got >= 0
        if direct.any() and self.slots[k + 1].kind == "event":
            nxt = self.slots[k + 1]
            for index, alias in enumerate(nxt.aliases):
                h = direct & (got == index)
                self._append(rows[h], alias, pos[h])
            self.j[rows[direct]] += 2
            general = np.flatnonzero(got == -2)
        else:
            general = np.flatnonzero((got >= 0) | (got == -2))
        self.j[rows[general]] += 1
        return general

    def _rejects(self, k: int) -> bool:
        """Whether something besides the class can reject a candidate for slot ``k``."""
        slot = self.slots[k]
        return (slot.kind != "event" or bool(self.alt.negations) or self.alt.variables
                or bool(self.equivalences) or any(self.preds_of[a] for a in slot.aliases))

    def _is_strict(self, rows: np.ndarray) -> np.ndarray:
        """Runs whose next event must directly follow their last bound one."""
        out = np.zeros(len(rows), dtype=bool)
        js = self.j[rows]
        for k in distinct(js):
            if k >= self.nb:
                continue
            sel = js == k
            slot = self.slots[int(k)]
            count = self._slot_count(int(k), rows[sel])
            out[sel] = np.where(count == 0, slot.link == NEXT, slot.iter_link == NEXT)
        return out

    def _first_hits(self, rows: np.ndarray, k: int, key: int, candidates: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For runs ``rows`` (all at slot ``k``): the first candidate after each cursor that can
        change the run's state. Returns (found mask, positions, event choice or -1)."""
        n = len(rows)
        found = np.zeros(n, dtype=bool)
        where = np.zeros(n, dtype=np.int64)
        choice = np.full(n, -1, dtype=np.int64)
        if not len(candidates):
            return found, where, choice
        lo = np.searchsorted(candidates, self.cursor[rows], side="right")
        stop = self._window_end(rows, candidates)
        todo = np.flatnonzero(lo < stop)
        # Where only the class decides, the first candidate is the answer; where conditions
        # can reject candidates, start wider to save rounds.
        size = _FIRST_CHUNK if not self._rejects(k) else _FIRST_CHUNK_CHECKED
        event = self.slots[k].kind == "event"
        while len(todo):
            hi = np.minimum(lo[todo] + size, stop[todo])
            pr, idx = expand_ranges(lo[todo], hi, self.limits, "scanning runs")
            runs = rows[todo[pr]]
            pos = candidates[idx]
            if event:
                got = self._fill(runs, pos, k, False, candidates)
                hit = got >= 0
            else:
                # got: the choice of slot k+1 that closes (>= 0, or -2 further on), else
                # -3 - the choice of the next iteration, else -1.
                got = np.full(len(runs), -1, dtype=np.int64)
                if key & 2:
                    got = self._fill_choice(runs, pos, k + 1, False)
                if key & 1:
                    rest = np.flatnonzero(got == -1)
                    it = self._fill(runs[rest], pos[rest], k, False)
                    got[rest] = np.where(it >= 0, -3 - it, -1)
                hit = got != -1
            # The first hit of each run: pairs come grouped by run, in candidate order.
            hits = np.flatnonzero(hit)
            first_of = hits[first_per_group(pr[hits])]
            local = todo[pr[first_of]]
            found[local] = True
            where[local] = pos[first_of]
            choice[local] = got[first_of]
            resolved = np.zeros(len(todo), dtype=bool)
            resolved[pr[first_of]] = True
            lo[todo] = hi
            todo = todo[~resolved & (hi < stop[todo])]
            size *= _CHUNK_GROWTH
        return found, where, choice

    # -- driver ---------------------------------------------------------------------------------
    def run(self) -> list[tuple[np.ndarray, tuple[str, ...]]]:
        """The matches of every run, as blocks ``(positions, variables)``."""
        starts = self.fillers[0] if self.nb else np.zeros(0, dtype=np.int64)
        if not len(starts):
            return []
        self._init_state(starts)
        consumed, state = self._first_step(starts)
        alive = consumed & (state != _FAIL)
        finished = alive & (state == _DONE)
        active = np.flatnonzero(alive & (state == _GO))
        while len(active):
            strict = self._is_strict(active)
            next_rows: list[np.ndarray] = []
            ended: list[np.ndarray] = []
            self._advance_next(active[strict], finished, alive, next_rows, ended)
            self._advance_followed_by(active[~strict], finished, alive, next_rows, ended)
            for rows_ended in ended:
                finished[rows_ended] = True  # the scan is over: the final check decides
            active = np.concatenate(next_rows) if next_rows else np.zeros(0, dtype=np.int64)
        done_rows = np.flatnonzero(finished & alive)
        done_rows = done_rows[self._final(done_rows)]
        return self._blocks(done_rows)

    def _first_step(self, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The initial step of one run per start event; ``(consumed, state)`` per run."""
        all_rows = np.arange(self.n)
        first = self.slots[0]
        if (first.kind == "event" and len(first.aliases) == 1 and not self.constants
                and not self.alt.variables and not self.preds_of[first.aliases[0]]):
            # Every event of the first buffer starts a run and binds the first slot: the
            # initial step cannot fail (its class and filters are the buffer).
            self._append(all_rows, first.aliases[0], starts)
            self.cursor[:] = starts
            self.j[:] = 1
            consumed = np.ones(self.n, dtype=bool)
            state = np.full(self.n, _DONE if self.nb == 1 else _GO, dtype=np.int64)
            return consumed, state
        return self._process(all_rows, starts, initial=True)

    def _advance_next(self, rows: np.ndarray, finished: np.ndarray, alive: np.ndarray,
                      next_rows: list[np.ndarray], ended: list[np.ndarray]) -> None:
        """One round for runs ``rows`` behind a ``next`` link: the single event right after
        the last bound one. Marks ``finished`` and ``alive``; appends the runs that go on to
        ``next_rows`` and those whose scan is over to ``ended``."""
        if not len(rows):
            return
        pos = self.cursor[rows] + 1
        inside = (pos < self.data.hi) & self.window.fits(self.start[rows], np.minimum(
            pos, self.data.n - 1), self.data.ts)
        ended.append(rows[~inside])
        go = rows[inside]
        if len(go):
            _, st = self._process(go, pos[inside], initial=False)
            finished[go[st == _DONE]] = True
            alive[go[st == _FAIL]] = False
            next_rows.append(go[st == _GO])

    def _advance_followed_by(self, rows: np.ndarray, finished: np.ndarray, alive: np.ndarray,
                             next_rows: list[np.ndarray], ended: list[np.ndarray]) -> None:
        """One round for runs ``rows`` behind a followed-by link: each takes the first event
        that can change its state, grouped by slot and candidate set. Marks and appends as
        :meth:`_advance_next` does."""
        js = self.j[rows]
        for k in distinct(js):
            group = rows[js == k]
            cands, keys = self._candidates(int(k), group)
            for key in distinct(keys):
                sub = group[keys == key]
                if self.slots[int(k)].kind != "event":
                    cands = self._kleene_candidates(int(k), int(key))
                found, pos, choice = self._first_hits(sub, int(k), int(key), cands)
                ended.append(sub[~found])
                hit_rows, hit_pos = sub[found], pos[found]
                if not len(hit_rows):
                    continue
                if self.slots[int(k)].kind == "event":
                    self._take_event_hits(int(k), hit_rows, hit_pos, choice[found], finished,
                                          next_rows)
                else:
                    self._take_kleene_hits(int(k), hit_rows, hit_pos, choice[found], finished,
                                           alive, next_rows)

    def _take_event_hits(self, k: int, rows: np.ndarray, pos: np.ndarray, choice: np.ndarray,
                         finished: np.ndarray, next_rows: list[np.ndarray]) -> None:
        """Bind the first hits ``pos`` of runs ``rows`` in event slot ``k`` as the choices the
        search made; runs past the last slot are finished, the others go on."""
        for index, alias in enumerate(self.slots[k].aliases):
            h = choice == index
            self._append(rows[h], alias, pos[h])
        self.cursor[rows] = pos
        self.j[rows] += 1
        done = self.j[rows] >= self.nb
        finished[rows[done]] = True
        next_rows.append(rows[~done])

    def _take_kleene_hits(self, k: int, rows: np.ndarray, pos: np.ndarray, choice: np.ndarray,
                          finished: np.ndarray, alive: np.ndarray,
                          next_rows: list[np.ndarray]) -> None:
        """Step runs ``rows`` in Kleene slot ``k`` at their first hits ``pos``: what the search
        decided directly, the rest by the general procedure."""
        general = self._apply_kleene_hits(k, rows, pos, choice)
        if len(general):
            _, st = self._process(rows[general], pos[general], initial=False)
        self.cursor[rows] = pos
        done = self.j[rows] >= self.nb
        failed = np.zeros(len(rows), dtype=bool)
        if len(general):
            failed[general[st == _FAIL]] = True
            done[general] = st == _DONE
        finished[rows[done & ~failed]] = True
        alive[rows[failed]] = False
        next_rows.append(rows[~done & ~failed])

    def _final(self, rows: np.ndarray) -> np.ndarray:
        """The whole-match checks: minimums, NOTs with nothing bound after them, variables."""
        ok = np.ones(len(rows), dtype=bool)
        if not len(rows):
            return ok
        for k, slot in enumerate(self.slots):
            ok &= self._slot_count(k, rows) >= slot.min
        view = self.view.take(rows)
        for neg in self.plain_negations:
            plain = neg.conditions
            left, right, active = self._not_range(view, neg, None)
            after = after_first(view, self.slots, neg, self.aliases)
            trailing = active & (after < 0)
            sel = np.flatnonzero(ok & trailing)
            if len(sel):
                bad = violated(plain, view.take(sel), self.data, left[sel], right[sel],
                               self.start[rows[sel]], self._buffer, self.equivalences, self.limits)
                ok[sel[bad]] = False
        if self.alt.variables and ok.any():
            idx = np.flatnonzero(ok)
            sub = view.take(idx)
            constraints = self.var_constraints
            good = exists_assignment(sub, self.data, constraints,
                                     lambda c, variables: self._var_check(sub, c, variables, rows[idx], None))
            ok[idx[~good]] = False
        return ok

    def _blocks(self, rows: np.ndarray) -> list[tuple[np.ndarray, tuple[str, ...]]]:
        """Group finished runs by their variables and lay out their positions."""
        if not len(rows):
            return []
        n = len(rows)
        if all(s.kind == "event" and len(s.aliases) == 1 for s in self.slots):
            pos = np.stack([self.view.pos[a][rows, 0] for a in self.aliases], axis=1)
            return [(pos, self.aliases)]
        cols: list[np.ndarray] = []
        names: list[str] = []
        valid: list[np.ndarray] = []
        for slot in self.slots:
            for a in slot.aliases:
                matrix = self.view.pos[a][rows]
                cnt = self.view.count[a][rows]
                width = int(cnt.max()) if n else 0
                for c in range(width):
                    cols.append(matrix[:, c])
                    names.append(f"{a}[{c + 1}]" if slot.kind == "kleene" else a)
                    valid.append(c < cnt)
        pos = np.stack(cols, axis=1)
        ok = np.stack(valid, axis=1)
        name_idx = np.broadcast_to(np.arange(len(names)), pos.shape)
        big = np.iinfo(np.int64).max
        order = np.argsort(np.where(ok, pos, big), axis=1, kind="stable")
        pos_sorted = np.take_along_axis(np.where(ok, pos, big), order, axis=1)
        name_sorted = np.where(np.take_along_axis(ok, order, axis=1),
                               np.take_along_axis(name_idx, order, axis=1), -1)
        keys, inverse = np.unique(name_sorted, axis=0, return_inverse=True)
        out = []
        for g, key in enumerate(keys):
            members = np.flatnonzero(inverse.reshape(-1) == g)
            width = int((key >= 0).sum())
            out.append((pos_sorted[members, :width], tuple(names[i] for i in key[:width])))
        return out


def next_matches(cq: CompiledQuery, alt: CompiledAlternative, data: StreamData
                 ) -> list[tuple[np.ndarray, tuple[str, ...]]]:
    """The skip-till-next-match matches of one alternative, as blocks (positions, variables)."""
    return NextMatch(cq, alt, data).run()
