"""Whether one (possibly partial) binding of an alternative satisfies docs/semantics.md.

A *binding* gives, for every component of an :class:`~cep.match.compile.normal.Alternative`, the
events bound to it as ``(pos, alias)`` pairs in increasing position order (``not`` components
bind nothing; a ``kleene`` component binds its iterations; an ``event`` component one event).
:meth:`BindingChecker.check` tests a binding against every rule of the contract, written out
one by one so each can be read next to the page:

1. positions strictly increase and lie inside ``WINDOW [a, b]``; iteration counts in bounds;
2. links: a ``next`` link means the event directly follows the previous bound event;
3. the ``WITHIN`` (and ``SLIDE``) window over the first and last bound events;
4. ``[attr]`` equivalences (null-safe: NULL equals NULL, as Spark groups and partitions);
5. class membership (``DEFINE`` condition TRUE, else the type column equals the class);
6. every condition whose aliases are all bound, under the iteration rules of the page;
7. ``NOT`` components: no violating event in their range.

Join variables (``$x``): a binding is accepted when there is one value per variable, taken
from an equality ``expr = $x`` evaluated over the bound events, for which rules 5-7 all hold
(no candidate value: the variable is NULL). When every mention is such an equality this is
exactly "all events give ``$x`` the same value". A ``DEFINE`` may use ``$x`` too: then class
membership (rule 5) is decided under the assignment, for every bound event of the class (each
Kleene iteration), and the equalities of the DEFINE of every bound event are candidates; a
negated event is of the class when its DEFINE holds under the assignment (its own equalities
give no candidates: it is not part of the match).

A partial binding (``final=False``, used by skip-till-next-match runs) is checked the same way,
except that iteration minimums are not yet required and a ``NOT`` with no bound event after it
is not yet checked; conditions mentioning an alias that has no event yet are ignored.

Decisions where docs/semantics.md is silent (reported for the page):

- a Kleene component with zero iterations binds nothing: conditions mentioning its alias are
  ignored, the next component's own link is measured from the last bound event before it, and
  a NOT next to it reaches to the nearest non-empty component (none before: no constraint;
  none after: the rule of a pattern ending in NOT, up to the stream's end without WITHIN);
- a fixed index ``b[k]`` or ``agg(b[..k])`` beyond the iterations makes the whole condition
  FALSE; ``i`` ranges over iterations ``1..r`` of the indexed alias;
- the ending-NOT horizon is ``ts(X) - ts(first) < w`` even with SLIDE; SLIDE instances of an
  EVENTS window are counted in positions;
- an ``OR`` component in a Kleene chooses per iteration; ``B[k]`` numbers the iterations bound
  to ``B``.

Example:
    >>> from cep.lang import parse_pattern
    >>> from cep.match.compile.normal import normalize
    >>> from cep.match.columnar.stream import EventStream
    >>> norm = normalize(parse_pattern("PATTERN a; NOT(d); b WHERE a.v < b.v"))
    >>> s = EventStream.from_columns(ids=[0, 1, 2, 3], ts=[0, 1, 2, 3], types=["a", "b", "d", "b"],
    ...                              attrs={"v": [1, 2, 0, 3]})
    >>> checker = BindingChecker(norm, s)
    >>> alt = norm.alternatives[0]
    >>> checker.check(alt, (((0, "a"),), (), ((1, "b"),)), final=True)
    True
    >>> checker.check(alt, (((0, "a"),), (), ((3, "b"),)), final=True)  # the d at 2 is between
    False
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from sqlglot import exp

from cep.lang.ast import EVENTS, NEXT, AggRef, AttrRef, Condition, IterRef, Ref, TsRef, VarRef
from cep.match.columnar.stream import EventStream
from cep.match.compile.normal import Alternative, Component, NormalPattern
from cep.match.errors import StreamError, UnsupportedPatternError
from cep.oracles.values import Value, compare, evaluate, null_safe_equal, to_value

# One component's events, and a whole binding (one entry per component, NOT ones empty).
Part = tuple[tuple[int, str], ...]
Binding = tuple[Part, ...]
# alias -> positions bound to it, in order (one position for a single event).
Env = Mapping[str, Sequence[int]]


@dataclass(frozen=True)
class _CondInfo:
    """A condition with what the checker needs to know about it, computed once."""

    cond: Condition
    refs: dict[str, Ref]
    aliases: frozenset[str]
    variables: frozenset[str]
    relative: tuple[Ref, ...]  # references indexed relative to i (b[i], b[i-1], t(b[i]), agg(b[..i-1]))
    absolute: tuple[tuple[str, int], ...]  # (alias, k) of every fixed index b[k]
    unindexed: tuple[str, ...]  # aliases read without an index (every iteration in turn)
    binders: tuple[tuple[str, exp.Expression], ...]  # (variable, expr) of each "expr = $var"


def _analyse(cond: Condition) -> _CondInfo:
    relative: list[Ref] = []
    absolute: list[tuple[str, int]] = []
    unindexed: list[str] = []
    for ref in cond.refs:
        index = ref.upto if isinstance(ref, AggRef) else getattr(ref, "index", None)
        if isinstance(ref, VarRef) or ref.alias is None:
            continue
        if isinstance(ref, AggRef) and index is None:
            continue  # over all iterations: no index to range over
        if index is None:
            if ref.alias not in unindexed:
                unindexed.append(ref.alias)
        elif index.relative:
            relative.append(ref)
        else:
            absolute.append((ref.alias, index.offset))
    names = {r.name: r for r in cond.refs}
    binders: list[tuple[str, exp.Expression]] = []
    for node in cond.expr.walk():
        if not isinstance(node, (exp.EQ, exp.NullSafeEQ)):
            continue
        for var_side, other in ((node.this, node.expression), (node.expression, node.this)):
            var_side = var_side.unnest() if isinstance(var_side, exp.Paren) else var_side
            ref = names.get(var_side.name) if isinstance(var_side, exp.Column) else None
            mentions_var = any(isinstance(names.get(c.name), VarRef) for c in other.find_all(exp.Column))
            if isinstance(ref, VarRef) and not mentions_var:
                binders.append((ref.var, other))
    return _CondInfo(cond, names, cond.aliases, cond.variables, tuple(relative), tuple(absolute),
                     tuple(unindexed), tuple(binders))


def _aggregate(func: str, values: list[Value], count_rows: int) -> Value:
    """SQL aggregate over iteration values: NULLs are ignored; empty input gives NULL (count: 0)."""
    present = [v for v in values if v is not None]
    if func == "count":
        return count_rows if not values else len(present)
    if not present:
        return None
    if func == "sum":
        return sum(present)  # type: ignore[arg-type]
    if func == "avg":
        return sum(present) / len(present)  # type: ignore[arg-type]
    best = present[0]
    for v in present[1:]:
        c = compare(v, best)
        if c is not None and ((func == "min" and c < 0) or (func == "max" and c > 0)):
            best = v
    return best


class _Scope:
    """Values of a condition's placeholder columns for one choice of ``i`` and iterations."""

    def __init__(self, checker: BindingChecker, info: _CondInfo, env: Env, i: int | None,
                 chosen: Mapping[str, int], variables: Mapping[str, Value], subject: int | None):
        self.checker, self.info, self.env, self.i = checker, info, env, i
        self.chosen, self.variables, self.subject = chosen, variables, subject

    def _position(self, alias: str, index: Any) -> int:
        positions = self.env[alias]
        if index is None:
            return positions[self.chosen[alias]]
        k = (self.i or 0) + index.offset if index.relative else index.offset
        # Callers only ask for iterations that exist (the i range and the fixed-index test).
        return positions[k - 1]

    def lookup(self, name: str) -> Value:
        ref = self.info.refs[name]
        c = self.checker
        if isinstance(ref, VarRef):
            return self.variables.get(ref.var)
        if isinstance(ref, AttrRef):
            pos = self.subject if ref.alias is None else self._position(ref.alias, None)
            return c.attr(pos, ref.attr)  # type: ignore[arg-type]
        if isinstance(ref, TsRef):
            pos = self.subject if ref.alias is None else self._position(ref.alias, ref.index)
            return int(c.stream.ts[pos])  # type: ignore[index]
        if isinstance(ref, IterRef):
            return c.attr(self._position(ref.alias, ref.index), ref.attr)
        assert isinstance(ref, AggRef)
        positions = list(self.env[ref.alias])
        if ref.upto is not None:
            k = (self.i or 0) + ref.upto.offset if ref.upto.relative else ref.upto.offset
            positions = positions[:k]
        values = [] if ref.attr is None else [c.attr(p, ref.attr) for p in positions]
        return _aggregate(ref.func, values, len(positions))


class BindingChecker:
    """Checks bindings of one normal pattern on one stream (see the module docstring).

    Args:
        norm: the pattern in normal form.
        stream: the partition's events.

    Attributes:
        lo, hi: the positions ``WINDOW [a, b]`` keeps (``hi < lo`` when it keeps none).
        examined: how many bindings :meth:`check` was asked about (the candidate limit).
    """

    def __init__(self, norm: NormalPattern, stream: EventStream) -> None:
        self.norm = norm
        self.stream = stream
        self.conds = [_analyse(c) for c in norm.conditions]
        self.defines = {cls: _analyse(c) for cls, c in norm.defines.items()}
        self.examined = 0
        self._columns: dict[str, list[Value]] = {}
        self._static_member: dict[tuple[int, str], bool] = {}
        self._may_be: dict[tuple[int, str], bool] = {}
        self.lo, self.hi = self._restriction()
        within, slide = norm.within, norm.slide
        self._by_events = within is not None and within.kind == EVENTS
        self._width = None if within is None else _span_length(within)
        self._slide = None if slide is None else _span_length(slide)

    # -- data -------------------------------------------------------------------------------------
    def attr(self, pos: int, name: str) -> Value:
        """Attribute ``name`` of the event at ``pos`` (``ts``: timestamp, ``type``: type column)."""
        key = name.lower()
        if key == "ts":
            return int(self.stream.ts[pos])
        if key == "type":
            return to_value(self.stream.types[pos])
        column = self._columns.get(key)
        if column is None:
            try:
                raw = self.stream.attr(name)
            except KeyError as err:
                raise StreamError(str(err.args[0])) from None
            column = self._columns[key] = [to_value(v) for v in raw]
        return column[pos]

    def _restriction(self) -> tuple[int, int]:
        n = len(self.stream)
        win = self.norm.window
        if win is None:
            return 0, n - 1
        if win.kind == "POSITION":
            return max(0, int(win.start)), min(n - 1, int(win.end))
        lo_ts, hi_ts = win.microseconds()  # type: ignore[misc]
        ts = [int(t) for t in self.stream.ts]
        # ts is sorted, so the events with lo_ts <= ts <= hi_ts are one run of positions.
        return bisect.bisect_left(ts, lo_ts), bisect.bisect_right(ts, hi_ts) - 1

    # -- windows ----------------------------------------------------------------------------------
    def _coord(self, pos: int) -> int:
        return pos if self._by_events else int(self.stream.ts[pos])

    def window_ok(self, first: int, last: int) -> bool:
        """``WITHIN`` (and ``SLIDE``) for a match whose first and last bound events are given."""
        if self._width is None:
            return True
        a, b = self._coord(first), self._coord(last)
        if not b - a < self._width:
            return False
        if self._slide is not None:
            # Instances are [k*s, k*s + w). Among those starting at or before a, the latest
            # one (k = floor(a / s)) ends last, so the match fits some instance iff it fits it.
            k = math.floor(Fraction(a) / self._slide)
            if not b < k * self._slide + self._width:
                return False
        return True

    def before_close(self, first: int, pos: int) -> bool:
        """For a pattern ending in NOT: is ``pos`` before the window of ``first`` closes?"""
        if self._width is None:
            return True  # no window (only reachable after an empty Kleene): to the stream's end
        return self._coord(pos) - self._coord(first) < self._width

    # -- classes ----------------------------------------------------------------------------------
    def member(self, pos: int, cls: str, variables: Mapping[str, Value]) -> bool:
        """Whether the event at ``pos`` is of class ``cls`` (given the join variables)."""
        info = self.defines.get(cls)
        if info is None:
            return to_value(self.stream.types[pos]) == cls
        if info.variables:
            return self.holds(info, {}, variables, subject=pos)
        key = (pos, cls)
        if key not in self._static_member:
            self._static_member[key] = self.holds(info, {}, {}, subject=pos)
        return self._static_member[key]

    def may_be(self, pos: int, cls: str) -> bool:
        """False only when ``pos`` is of class ``cls`` under no value of the join variables.

        Only prunes the enumeration (every binding is still checked in full): a DEFINE with
        variables can be TRUE only where its top-level conjuncts without variables are.
        """
        info = self.defines.get(cls)
        if info is not None and info.variables:
            key = (pos, cls)
            if key not in self._may_be:
                self._may_be[key] = all(
                    evaluate(part, _Scope(self, info, {}, None, {}, {}, pos).lookup) is True
                    for part in _variable_free_conjuncts(info))
            return self._may_be[key]
        return self.member(pos, cls, {})

    # -- conditions -------------------------------------------------------------------------------
    def _i_values(self, info: _CondInfo, env: Env) -> list[int | None]:
        """The values of ``i``: every i for which all iterations the condition mentions exist."""
        if not info.relative:
            return [None]
        top = max(len(env[r.alias]) for r in info.relative)  # type: ignore[union-attr]
        out: list[int | None] = []
        for i in range(1, top + 1):
            ok = True
            for ref in info.relative:
                n = len(env[ref.alias])  # type: ignore[union-attr]
                if isinstance(ref, AggRef):
                    # agg(b[..i-k]): iterations 1..i-k, with i itself an iteration (i >= k+1).
                    ok = ok and i + ref.upto.offset >= 1 and i <= n  # type: ignore[union-attr]
                else:
                    k = i + ref.index.offset  # type: ignore[union-attr]
                    ok = ok and 1 <= k <= n
            if ok:
                out.append(i)
        return out

    def scopes(self, info: _CondInfo, env: Env, variables: Mapping[str, Value],
               subject: int | None = None) -> Iterator[_Scope]:
        """One scope per instance the condition must hold for (each i, each unindexed iteration)."""
        ranges = [range(len(env[a])) for a in info.unindexed]
        for i in self._i_values(info, env):
            for combo in itertools.product(*ranges):
                yield _Scope(self, info, env, i, dict(zip(info.unindexed, combo)), variables, subject)

    def holds(self, info: _CondInfo, env: Env, variables: Mapping[str, Value],
              subject: int | None = None) -> bool:
        """Whether a condition is TRUE for every instance (its aliases must all be in ``env``)."""
        if any(k > len(env[alias]) for alias, k in info.absolute):
            return False  # a fixed index beyond the iterations makes the condition unsatisfied
        return all(evaluate(info.cond.expr, s.lookup) is True
                   for s in self.scopes(info, env, variables, subject))

    # -- join variables ---------------------------------------------------------------------------
    def _assignments(self, env: Env, events: list[tuple[int, str, int, int]],
                     comps: Sequence[Component]) -> Iterator[dict[str, Value]]:
        """Every assignment of the join variables to the values the bound events give them."""
        names: set[str] = set()
        candidates: dict[str, list[Value]] = {}

        def add(var: str, value: Value) -> None:
            pool = candidates.setdefault(var, [])
            if value is not None and not any(null_safe_equal(value, v) for v in pool):
                pool.append(value)

        for info in self.conds:
            if not info.variables or not info.aliases <= env.keys():
                continue
            names |= info.variables
            for var, side in info.binders:
                for scope in self.scopes(info, env, {}):
                    if all(k <= len(env[a]) for a, k in info.absolute):
                        add(var, evaluate(side, scope.lookup))
        for pos, alias, ci, _ in events:
            info = self.defines.get(_cls_of(comps[ci], alias))
            if info is None or not info.variables:
                continue
            names |= info.variables
            for var, side in info.binders:
                for scope in self.scopes(info, {}, {}, subject=pos):
                    add(var, evaluate(side, scope.lookup))
        ordered = sorted(names)
        pools = [candidates.get(v) or [None] for v in ordered]
        for values in itertools.product(*pools):
            yield dict(zip(ordered, values))

    # -- the check ----------------------------------------------------------------------------------
    def check(self, alt: Alternative, binding: Binding, final: bool) -> bool:
        """Whether ``binding`` satisfies every rule (``final``: as a whole match)."""
        self.examined += 1
        comps = alt.components
        if len(binding) != len(comps):
            raise ValueError("a binding needs one entry per component")
        # (pos, alias, component index, iteration index within the component), in order.
        events = [(pos, alias, ci, k) for ci, part in enumerate(binding)
                  for k, (pos, alias) in enumerate(part)]
        if not events:
            return not final  # a match binds at least one event
        # 1. structure, positions, WINDOW [a, b]
        for ci, comp in enumerate(comps):
            n = len(binding[ci])
            if any(alias not in comp.aliases for _, alias in binding[ci]):
                return False
            if comp.kind == "not":
                if n:
                    return False
                continue
            if comp.max is not None and n > comp.max:
                return False
            if final and n < comp.min:
                return False
        positions = [e[0] for e in events]
        if any(b <= a for a, b in zip(positions, positions[1:])):
            return False
        if positions[0] < self.lo or positions[-1] > self.hi:
            return False
        # 2. links: into a component (its first event) or between its iterations
        for (prev, *_), (pos, _, ci, k) in zip(events, events[1:]):
            link = comps[ci].link if k == 0 else comps[ci].iter_link
            if link == NEXT and pos != prev + 1:
                return False
        # 3. WITHIN / SLIDE
        if not self.window_ok(positions[0], positions[-1]):
            return False
        # 4. [attr] equivalences among the bound events
        for attr in self.norm.equivalences:
            first = self.attr(positions[0], attr)
            if not all(null_safe_equal(first, self.attr(p, attr)) for p in positions[1:]):
                return False
        env: dict[str, list[int]] = {}
        for pos, alias, _, _ in events:
            env.setdefault(alias, []).append(pos)
        # 5-7 under some assignment of the join variables
        return any(self._holds_all(comps, binding, events, env, variables, final)
                   for variables in self._assignments(env, events, comps))

    def _holds_all(self, comps: Sequence[Component], binding: Binding,
                   events: list[tuple[int, str, int, int]], env: Env,
                   variables: Mapping[str, Value], final: bool) -> bool:
        # 5. classes
        for pos, alias, ci, _ in events:
            if not self.member(pos, _cls_of(comps[ci], alias), variables):
                return False
        # 6. conditions; one that mentions an alias without events here is ignored
        for info in self.conds:
            if info.aliases <= env.keys() and not self.holds(info, env, variables):
                return False
        # 7. NOT components
        first = events[0][0]
        for ti, comp in enumerate(comps):
            if comp.kind != "not":
                continue
            before = [part for part in binding[:ti] if part]
            after = [part for part in binding[ti + 1:] if part]
            if not before:
                continue  # nothing bound before it (only after an empty Kleene): no range
            left = before[-1][-1][0]
            if after:
                span = range(left + 1, after[0][0][0])
            elif final:
                # Nothing bound after it: no violating event until the window closes.
                span = range(left + 1, self.hi + 1)
            else:
                continue  # the run has not reached the right neighbour yet
            for pos in span:
                if not after and not self.before_close(first, pos):
                    break
                if self._violates(comp, pos, events, env, variables):
                    return False
        return True

    def _violates(self, comp: Component, pos: int, events: list[tuple[int, str, int, int]],
                  env: Env, variables: Mapping[str, Value]) -> bool:
        """Whether the event at ``pos`` violates the NOT ``comp`` for these bound events."""
        for attr in self.norm.equivalences:
            if not null_safe_equal(self.attr(pos, attr), self.attr(events[0][0], attr)):
                return False  # another [attr] value: not this match's event
        for choice in comp.choices:
            if not self.member(pos, choice.cls, variables):
                continue
            scope = dict(env)
            scope[choice.alias] = [pos]
            if all(self.holds(info, scope, variables) for info in self.conds
                   if choice.alias in info.aliases and info.aliases <= scope.keys()):
                return True
        return False


def _variable_free_conjuncts(info: _CondInfo) -> list[exp.Expression]:
    """The top-level AND operands of a condition (through parentheses) that use no variable."""
    out: list[exp.Expression] = []
    stack = [info.cond.expr]
    while stack:
        node = stack.pop()
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.And):
            stack += [node.expression, node.this]
        elif not any(isinstance(info.refs.get(c.name), VarRef) for c in node.find_all(exp.Column)):
            out.append(node)
    return out


def _cls_of(comp: Component, alias: str) -> str:
    for choice in comp.choices:
        if choice.alias == alias:
            return choice.cls
    raise ValueError(f"alias {alias!r} is not a choice of this component")


def _span_length(span: Any) -> Fraction | int:
    us = span.microseconds()
    if us is not None:
        return int(us)
    if not math.isfinite(span.value):
        raise UnsupportedPatternError(f"window length {span} is not finite")
    return Fraction(span.value)
