"""Contiguous patterns for probabilistic streams, compiled once into an NFA and its DFA.

Sugiura et al. (DASFAA 2015), section 4.1, match regular patterns such as ``a b+ c`` over
*consecutive* time points. In the common language (DESIGN.md section 3) that is a sequence
linked by ``,`` (the next event, no skipping) of classes with optional quantifiers::

    PATTERN a, b+, c
    PATTERN up, up+, down WITHIN 10 EVENTS
    PATTERN hi, (mid)*, lo DEFINE hi AS value IN ('high', 'peak')

A class matches the time point's value equal to its name, unless ``DEFINE`` gives it
``value = '...'`` or ``value IN ('...', ...)``. Quantifiers ``+ * ? {n} {n,} {n,m}`` repeat a
class; ``WITHIN n EVENTS`` (or ``UNITS``) bounds a match to ``n`` time points (the paper's window
size ``w``, which the SQL function may also pass as an argument).

Compilation (Flink CEP's ``NFACompiler`` shape: compile once, run with explicit state):

1. **slots**: the quantified classes expanded into single-symbol positions (``b{2,3}`` is
   ``b b b?``, ``b+`` is ``b`` looping); the NFA (Glushkov construction) has the start state 0
   and one state per slot;
2. **symbols**: values that belong to the same set of classes behave identically, so the
   alphabet is partitioned into symbols (the last one, ``OTHER``, matches no class);
3. **DFA**: the subset construction over symbols; a deterministic run per start position is
   what the NFA/stack method of the paper keeps (section 4.2).

Example:
    >>> p = compile_prob("PATTERN a, b+, c")
    >>> [s.cls for s in p.slots], p.slot_loops, p.accepting
    (['a', 'b', 'c'], (False, True, False), (False, False, False, True))
    >>> p.nfa_next(0, p.symbol_of("a")), p.nfa_next(2, p.symbol_of("b")), p.nfa_next(2, p.symbol_of("c"))
    ((1,), (2,), (3,))
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from cep.lang import parse_pattern
from cep.lang.ast import Event, Kleene, Seq
from cep.lang.query import Query
from cep.prob.errors import E_CLAUSE, E_DEFINE, E_SHAPE, ProbArgumentError, UnsupportedProbPatternError

MAX_SLOTS = 64
MAX_DFA_STATES = 4096


@dataclass(frozen=True)
class Slot:
    """One symbol position of the expanded pattern: a class and the values it accepts."""

    cls: str
    values: frozenset[str]


@dataclass(frozen=True)
class ProbPattern:
    """A compiled contiguous pattern (module docstring); immutable and shareable.

    Attributes:
        text: the query text.
        slots: the expanded positions.
        slot_optional: whether each slot may be skipped.
        slot_loops: whether each slot may repeat (``+`` / ``*`` / ``{n,}``).
        accepting: per NFA state (0 = start, ``i + 1`` = after slot ``i``), whether it ends a match.
        known_values: every value some class accepts, sorted; symbol ``j`` is ``known_values[j]``.
        nfa: ``nfa[q][sym]`` = the NFA states reached from ``q`` on symbol ``sym`` (tuple).
        dfa: ``dfa[d][sym]`` = next DFA state, ``-1`` when the run dies; state 0 is the start.
        dfa_accepting: per DFA state, whether it ends a match.
        window: the window from ``WITHIN n EVENTS`` / ``UNITS`` (time points), or None.
    """

    text: str
    slots: tuple[Slot, ...]
    slot_optional: tuple[bool, ...]
    slot_loops: tuple[bool, ...]
    accepting: tuple[bool, ...]
    known_values: tuple[str, ...]
    nfa: tuple[tuple[tuple[int, ...], ...], ...]
    dfa: tuple[tuple[int, ...], ...]
    dfa_accepting: tuple[bool, ...]
    window: int | None

    @property
    def n_symbols(self) -> int:
        """Symbols: one per known value, plus ``OTHER`` (the last) for every other value."""
        return len(self.known_values) + 1

    def symbol_of(self, value: str) -> int:
        """The symbol of a value (``OTHER`` for values no class accepts)."""
        try:
            return self.known_values.index(value)
        except ValueError:
            return len(self.known_values)

    def symbols_of(self, values: Iterable[str]) -> list[int]:
        """The symbol of each value, in order."""
        return [self.symbol_of(v) for v in values]

    def nfa_next(self, state: int, symbol: int) -> tuple[int, ...]:
        """NFA states reached from ``state`` on ``symbol``."""
        return self.nfa[state][symbol]


def compile_prob(text: str | Query) -> ProbPattern:
    """Compile a contiguous pattern for ``match_prob`` (module docstring); ``text`` may also be
    the already parsed :class:`cep.lang.Query`.

    Raises:
        PatternError: a syntax error (``CEP-PAT-...``).
        UnsupportedProbPatternError: ``;``/SEQ/AND/OR/NOT/``@`` (``CEP-PROB-001``), WHERE,
            policies, WINDOW, SLIDE or a time span (``CEP-PROB-002``), a DEFINE other than
            ``value = '..'`` / ``value IN (...)`` (``CEP-PROB-003``), a pattern matching the
            empty sequence or too long after expansion (``CEP-PROB-001``).

    Example:
        >>> compile_prob("PATTERN a; b").slots
        Traceback (most recent call last):
        ...
        cep.prob.errors.UnsupportedProbPatternError: CEP-PROB-001: line 1, column 9: a probabilistic pattern is a contiguous sequence of classes linked by ',' (e.g. PATTERN a, b+, c); found ';' (followed-by)
            PATTERN a; b
                    ^~~~
    """
    query = parse_pattern(text) if isinstance(text, str) else text
    return _Compiler(query).run()


class _Compiler:
    def __init__(self, query: Query) -> None:
        self.query = query
        self.text = query.text

    def fail(self, code: str, message: str, span: tuple[int, int] | None) -> UnsupportedProbPatternError:
        start, end = span if span is not None else (0, 0)
        return UnsupportedProbPatternError(code, message, self.text, start, end if end > start else None)

    def run(self) -> ProbPattern:
        items = self._items()
        window = self._clauses()
        classes = self._classes(items)
        slots, optional, loops = self._expand(items, classes)
        known = tuple(sorted(set().union(*(s.values for s in slots))))
        n_sym = len(known) + 1
        sym_in_slot = [[j < len(known) and known[j] in s.values for j in range(n_sym)] for s in slots]
        n_states = len(slots) + 1
        follow = [_follow(q, optional, loops) for q in range(n_states)]
        nfa = tuple(tuple(tuple(sorted(i + 1 for i in follow[q] if sym_in_slot[i][j])) for j in range(n_sym))
                    for q in range(n_states))
        accepting = tuple(all(optional[q:]) for q in range(n_states))
        if accepting[0]:
            raise self.fail(E_SHAPE, "the pattern matches the empty sequence (every class is optional); "
                            "at least one class must occur", self.query.pattern.span)
        dfa, dfa_acc = _determinise(nfa, accepting, n_sym)
        return ProbPattern(self.text, tuple(slots), tuple(optional), tuple(loops), accepting, known,
                           nfa, dfa, dfa_acc, window)

    def _items(self) -> list[tuple[Event, int, int | None]]:
        node = self.query.pattern
        parts = node.parts if isinstance(node, Seq) else (node,)
        if isinstance(node, Seq) and any(link != "next" for link in node.links):
            raise self.fail(E_SHAPE, "a probabilistic pattern is a contiguous sequence of classes linked by ',' "
                            "(e.g. PATTERN a, b+, c); found ';' (followed-by)", node.span)
        items: list[tuple[Event, int, int | None]] = []
        for part in parts:
            lo, hi, inner = 1, 1, part
            if isinstance(part, Kleene):
                lo, hi, inner = part.min, part.max, part.part
            if not isinstance(inner, Event):
                kind = type(inner).__name__.upper()
                raise self.fail(E_SHAPE, f"a probabilistic pattern is a contiguous sequence of classes with "
                                f"quantifiers (e.g. PATTERN a, b+, c); found {kind}", inner.span)
            items.append((inner, lo, hi))
        return items

    def _clauses(self) -> int | None:
        q = self.query
        if q.conditions or q.equivalences:
            span = (q.conditions[0].span if q.conditions else q.equivalences[0].span)
            raise self.fail(E_CLAUSE, "WHERE conditions are not supported by match_prob: a time point has a "
                            "value and a probability, nothing else; use DEFINE to give a class its values", span)
        if q.policy is not None:
            raise self.fail(E_CLAUSE, f"the policy {q.policy} does not apply: match_prob matches consecutive "
                            "time points (contiguity)", None)
        if q.slide is not None:
            raise self.fail(E_CLAUSE, "SLIDE is not supported by match_prob; the window bounds the length of a "
                            "match", q.slide.span)
        if q.window is not None:
            raise self.fail(E_CLAUSE, "WINDOW [a, b] is not supported by match_prob; filter the time points in "
                            "the TABLE query instead", q.window.span)
        if q.within is None:
            return None
        if q.within.kind not in ("EVENTS", "UNITS") or not float(q.within.value).is_integer() or q.within.value < 1:
            raise self.fail(E_CLAUSE, f"WITHIN must count time points (e.g. WITHIN 10 EVENTS); found {q.within}",
                            q.within.span)
        return int(q.within.value)

    def _classes(self, items: list[tuple[Event, int, int | None]]) -> dict[str, frozenset[str]]:
        classes = {ev.cls: frozenset([ev.cls]) for ev, _, _ in items}
        for d in self.query.defines:
            if d.cls not in classes:
                continue
            classes[d.cls] = self._define_values(d.condition.sql, d.condition.span)
        return classes

    def _define_values(self, sql: str, span: tuple[int, int]) -> frozenset[str]:
        hint = "DEFINE cls AS value = 'x' or value IN ('x', 'y')"
        try:
            tree = sqlglot.parse_one(sql, dialect="spark")
        except ParseError:
            raise self.fail(E_DEFINE, f"expected {hint}", span) from None
        column: exp.Expression | None = None
        literals: list[exp.Expression] = []
        if isinstance(tree, exp.EQ):
            column, literals = tree.this, [tree.expression]
        elif isinstance(tree, exp.In) and not tree.args.get("query"):
            column, literals = tree.this, list(tree.expressions)
        ok = (isinstance(column, exp.Column) and column.name.lower() == "value" and literals
              and all(isinstance(x, exp.Literal) and x.is_string for x in literals))
        if not ok:
            raise self.fail(E_DEFINE, f"expected {hint}; a time point has only a value", span)
        return frozenset(str(x.this) for x in literals)

    def _expand(self, items: list[tuple[Event, int, int | None]],
                classes: dict[str, frozenset[str]]) -> tuple[list[Slot], list[bool], list[bool]]:
        slots: list[Slot] = []
        optional: list[bool] = []
        loops: list[bool] = []
        for ev, lo, hi in items:
            count = max(lo, 1) if hi is None else hi
            if len(slots) + count > MAX_SLOTS:
                raise self.fail(E_SHAPE, f"the pattern expands to more than {MAX_SLOTS} positions; use a smaller "
                                "repetition count", ev.span)
            for k in range(count):
                slots.append(Slot(ev.cls, classes[ev.cls]))
                optional.append(k >= lo)
                loops.append(hi is None and k == count - 1)
        return slots, optional, loops


def _follow(state: int, optional: list[bool], loops: list[bool]) -> list[int]:
    """Slots that may come next after NFA ``state`` (0 = start, ``i + 1`` = after slot ``i``)."""
    out: list[int] = []
    if state > 0 and loops[state - 1]:
        out.append(state - 1)
    i = state
    while i < len(optional):
        out.append(i)
        if not optional[i]:
            break
        i += 1
    return out


def _determinise(nfa: tuple[tuple[tuple[int, ...], ...], ...], accepting: tuple[bool, ...],
                 n_sym: int) -> tuple[tuple[tuple[int, ...], ...], tuple[bool, ...]]:
    """Subset construction from NFA state 0; ``-1`` is the dead state."""
    index: dict[frozenset[int], int] = {frozenset([0]): 0}
    order: list[frozenset[int]] = [frozenset([0])]
    table: list[tuple[int, ...]] = []
    i = 0
    while i < len(order):
        cur = order[i]
        row = []
        for sym in range(n_sym):
            nxt = frozenset(q2 for q in cur for q2 in nfa[q][sym])
            if not nxt:
                row.append(-1)
                continue
            if nxt not in index:
                if len(order) >= MAX_DFA_STATES:
                    raise ProbArgumentError(f"the pattern needs more than {MAX_DFA_STATES} automaton states")
                index[nxt] = len(order)
                order.append(nxt)
            row.append(index[nxt])
        table.append(tuple(row))
        i += 1
    return tuple(table), tuple(any(accepting[q] for q in s) for s in order)
