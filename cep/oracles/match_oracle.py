"""The brute-force oracle of exact matching: docs/semantics.md implemented literally.

For each alternative of the normal form:

- **skip-till-any-match** and **strict-contiguity** enumerate every candidate binding (every
  increasing choice of positions for the bound components, every iteration count ``r`` in
  ``[min, max]``, every choice of an ``OR``) and keep the ones :class:`BindingChecker` accepts.
  Strict contiguity differs only in its links, which ``normalize`` already made all ``next``.
  The enumeration skips positions that cannot be part of any match (wrong class, beyond the
  window, not adjacent under a ``next`` link); the checker tests those rules again anyway.
- **skip-till-next-match** simulates one run per start event, scanning events one by one in
  position order, exactly as the step-by-step procedure of the page says.
- **skip-till-any-match-grouped** (FAEM) keeps the skip-till-any-match bindings to which no
  event can be added to an unbounded closure (every closure holds its whole group).

The answer is the union over alternatives, in ``match_id`` order. Small inputs only (streams of
about a dozen events): it is meant to be obviously right, not fast.

Example:
    >>> from cep.match.columnar.stream import EventStream
    >>> s = EventStream.from_columns(ids=range(6), ts=range(6), types=list("ABABCB"))
    >>> [m.positions for m in oracle_matches("PATTERN SEQ(A, B)", s, policy="skip-till-any-match")]
    [(0, 1), (0, 3), (0, 5), (2, 3), (2, 5)]
    >>> [m.positions for m in oracle_matches("PATTERN A; B", s)]  # the default: skip-till-next
    [(0, 1), (2, 3)]
    >>> [(m.positions, m.variables) for m in oracle_matches("PATTERN A; B{2}", s)]
    [((0, 1, 3), ('A', 'B[1]', 'B[2]')), ((2, 3, 5), ('A', 'B[1]', 'B[2]'))]
"""

from __future__ import annotations

from collections.abc import Iterator

from cep.lang import Query, parse_pattern
from cep.lang.ast import NEXT
from cep.lang.policy import GROUPED, NEXT_MATCH
from cep.match.columnar.stream import EventStream
from cep.match.compile.grouping import check_conditions
from cep.match.compile.normal import Alternative, normalize
from cep.match.compile.predicates import analyse
from cep.match.errors import MatchLimitError
from cep.match.result import Match, order_matches
from cep.oracles.check import Binding, BindingChecker, Part

DEFAULT_MAX_CANDIDATES = 2_000_000


def oracle_matches(query: Query | str, stream: EventStream, *, policy: str | None = None,
                   max_candidates: int = DEFAULT_MAX_CANDIDATES) -> list[Match]:
    """Every match of ``query`` in one partition, by brute force (docs/semantics.md).

    Args:
        query: a parsed query or pattern text.
        stream: the events of one partition. Precomputed ``masks`` are ignored: the oracle
            evaluates every condition itself.
        policy: the selection policy when the pattern does not name one (they must agree when
            both do); default skip-till-next-match.
        max_candidates: the most candidate bindings the oracle may examine.

    Returns:
        The distinct matches in ``match_id`` order (``order_matches``).

    Raises:
        MatchLimitError: more than ``max_candidates`` candidate bindings would be examined.
        PatternError: ``query`` is text that does not parse.
        UnsupportedPatternError, PolicyConflictError: from ``normalize``.

    Example:
        >>> s = EventStream.from_columns(ids=range(5), ts=range(5), types=list("ABBCB"),
        ...                              attrs={"v": [0, 5, 3, 0, 9]})
        >>> q = "PATTERN A; B+; C WHERE B[i].v < B[i-1].v"
        >>> [m.positions for m in oracle_matches(q, s, policy="skip-till-any-match")]
        [(0, 1, 2, 3), (0, 1, 3), (0, 2, 3)]
    """
    parsed = parse_pattern(query) if isinstance(query, str) else query
    norm = normalize(parsed, policy)
    checker = BindingChecker(norm, stream)
    found: list[Match] = []
    if norm.policy == GROUPED:
        predicates = [analyse(c) for c in norm.conditions]
        predicates += [analyse(d) for d in norm.defines.values() if d.variables]
        check_conditions(predicates, norm.kleene_aliases, parsed.text)
    for alt in norm.alternatives:
        if norm.policy == NEXT_MATCH:
            bindings = _runs(alt, checker, max_candidates)
        else:
            bindings = (b for b in _candidates(alt, checker, max_candidates)
                        if checker.check(alt, b, final=True))
        if norm.policy == GROUPED:
            bindings = (b for b in bindings if _whole_groups(alt, b, checker))
        found.extend(_to_match(alt, b) for b in bindings)
    return order_matches(found)


def _whole_groups(alt: Alternative, binding: Binding, checker: BindingChecker) -> bool:
    """Whether every unbounded closure of ``binding`` holds every event that could join it.

    ``skip-till-any-match-grouped`` (docs/semantics.md): a closure binds every event that
    could be one of its iterations given the rest; so an any-match binding is a match only
    when no event between the closure's neighbours can be added to it and still pass every
    check. Exact closures ``{n}`` give every n of those events: any binding of them stands.
    """
    comps = alt.components
    for ci, comp in enumerate(comps):
        if comp.kind != "kleene" or comp.max is not None:
            continue
        before = [p for part in binding[:ci] for p, _ in part]
        after = [p for part in binding[ci + 1:] for p, _ in part]
        lo = max(before) + 1 if before else checker.lo
        hi = min(after) - 1 if after else checker.hi
        taken = {p for p, _ in binding[ci]}
        for p in range(lo, hi + 1):
            if p in taken:
                continue
            for choice in comp.choices:
                if not checker.may_be(p, choice.cls):
                    continue
                grown = tuple(sorted(binding[ci] + ((p, choice.alias),)))
                if checker.check(alt, binding[:ci] + (grown,) + binding[ci + 1:], final=True):
                    return False
    return True


def _reserve(checker: BindingChecker, max_candidates: int) -> None:
    """Raise before the binding that would exceed the limit is examined."""
    if checker.examined + 1 > max_candidates:
        raise MatchLimitError(
            f"the oracle would examine more than max_candidates={max_candidates} candidate "
            "bindings; use a shorter stream or pass a larger max_candidates")


def _to_match(alt: Alternative, binding: Binding) -> Match:
    """Positions in order, each named by its alias, or ``alias[k]`` for Kleene iterations."""
    positions: list[int] = []
    variables: list[str] = []
    for comp, part in zip(alt.components, binding):
        counts: dict[str, int] = {}
        for pos, alias in part:
            positions.append(pos)
            if comp.kind == "kleene":
                # k counts the iterations bound to this alias (an OR component may mix aliases).
                counts[alias] = counts.get(alias, 0) + 1
                variables.append(f"{alias}[{counts[alias]}]")
            else:
                variables.append(alias)
    return Match(tuple(positions), tuple(variables))


# ---------------------------------------------------------------------------------------------
# skip-till-any-match and strict-contiguity: enumerate candidates
# ---------------------------------------------------------------------------------------------


def _candidates(alt: Alternative, checker: BindingChecker, max_candidates: int) -> Iterator[Binding]:
    """Every candidate binding of ``alt`` (then checked one by one by the caller)."""
    comps = alt.components
    bound = [ci for ci, c in enumerate(comps) if c.kind != "not"]
    parts: list[Part] = [() for _ in comps]
    stream_positions = range(checker.lo, checker.hi + 1)
    # Which aliases each position may be bound to, per component (class membership).
    options = {ci: {p: [ch.alias for ch in comps[ci].choices if checker.may_be(p, ch.cls)]
                    for p in stream_positions} for ci in bound}

    def fits(p: int, last: int | None, first: int | None, link: str) -> bool:
        if last is not None and (p <= last or (link == NEXT and p != last + 1)):
            return False
        return first is None or checker.window_ok(first, p)

    def iterations(ci: int, last: int | None, first: int | None, r_max: int | None
                   ) -> Iterator[tuple[tuple[int, str], ...]]:
        """Every non-empty increasing run of iterations of component ``ci`` (any count)."""
        comp = comps[ci]

        def extend(chosen: tuple[tuple[int, str], ...]) -> Iterator[tuple[tuple[int, str], ...]]:
            if chosen:
                yield chosen
            if r_max is not None and len(chosen) >= r_max:
                return
            prev = chosen[-1][0] if chosen else last
            link = comp.iter_link if chosen else comp.link
            start = chosen[0][0] if chosen and first is None else first
            for p in stream_positions:
                if fits(p, prev, start, link):
                    for alias in options[ci][p]:
                        yield from extend(chosen + ((p, alias),))

        yield from extend(())

    def rec(b: int, last: int | None, first: int | None) -> Iterator[Binding]:
        if b == len(bound):
            _reserve(checker, max_candidates)  # check() counts the candidate it examines
            yield tuple(parts)
            return
        ci = bound[b]
        comp = comps[ci]
        if comp.kind == "event":
            for p in stream_positions:
                if fits(p, last, first, comp.link):
                    for alias in options[ci][p]:
                        parts[ci] = ((p, alias),)
                        yield from rec(b + 1, p, p if first is None else first)
            parts[ci] = ()
            return
        if comp.min == 0:
            parts[ci] = ()
            yield from rec(b + 1, last, first)
        for run in iterations(ci, last, first, comp.max):
            if len(run) >= comp.min:
                parts[ci] = run
                yield from rec(b + 1, run[-1][0], run[0][0] if first is None else first)
        parts[ci] = ()

    yield from rec(0, None, None)


# ---------------------------------------------------------------------------------------------
# skip-till-next-match: one run per start event
# ---------------------------------------------------------------------------------------------


class _Run:
    """One skip-till-next-match run of an alternative (the procedure of docs/semantics.md)."""

    def __init__(self, alt: Alternative, checker: BindingChecker, max_candidates: int) -> None:
        self.alt = alt
        self.comps = alt.components
        self.bound = [ci for ci, c in enumerate(self.comps) if c.kind != "not"]
        self.checker = checker
        self.max_candidates = max_candidates
        self.parts: list[list[tuple[int, str]]] = [[] for _ in self.comps]
        self.j = 0  # index into self.bound of the component being filled

    def binding(self) -> Binding:
        return tuple(tuple(p) for p in self.parts)

    def fill_alias(self, b: int, pos: int) -> str | None:
        """The first choice (written order) as which ``pos`` can join bound component ``b`` now."""
        ci = self.bound[b]
        for choice in self.comps[ci].choices:
            self.parts[ci].append((pos, choice.alias))
            _reserve(self.checker, self.max_candidates)
            ok = self.checker.check(self.alt, self.binding(), final=False)
            self.parts[ci].pop()
            if ok:
                return choice.alias
        return None

    def can_fill(self, b: int, pos: int) -> bool:
        """Whether ``pos`` can fill bound component ``b`` given the run so far.

        A Kleene component is filled by its first iteration, or, when it may be empty, by
        whatever can fill the component after it.
        """
        comp = self.comps[self.bound[b]]
        if self.fill_alias(b, pos) is not None:
            return True
        return (comp.kind == "kleene" and comp.min == 0 and b + 1 < len(self.bound)
                and self.can_fill(b + 1, pos))

    def step(self, pos: int) -> tuple[bool, str]:
        """Process the event at ``pos``; return (consumed, "go" | "fail" | "done")."""
        while True:
            if self.j >= len(self.bound):
                return False, "done"
            ci = self.bound[self.j]
            comp = self.comps[ci]
            r = len(self.parts[ci])
            has_bound = any(self.parts)
            if comp.kind == "event":
                alias = self.fill_alias(self.j, pos)
                if alias is not None:
                    self.parts[ci].append((pos, alias))
                    self.j += 1
                    return True, "done" if self.j == len(self.bound) else "go"
                if comp.link == NEXT and has_bound:
                    return False, "fail"  # only the event right after the last bound one counts
                return False, "go"
            # kleene, step 1: the event can close the component by filling the next one
            if r >= comp.min and self.j + 1 < len(self.bound) and self.can_fill(self.j + 1, pos):
                self.j += 1
                continue
            # step 2: the event is the next iteration
            if comp.max is None or r < comp.max:
                alias = self.fill_alias(self.j, pos)
                if alias is not None:
                    self.parts[ci].append((pos, alias))
                    if comp.max is not None and r + 1 == comp.max:
                        self.j += 1  # complete; the next component is searched from the next event
                    return True, "done" if self.j == len(self.bound) else "go"
            # step 3: contiguous iterations end at the first event that is not one
            link = comp.link if r == 0 else comp.iter_link
            if link == NEXT and has_bound:
                if r >= comp.min:
                    self.j += 1
                    continue  # the next component is searched from this event on
                return False, "fail"
            # step 4: followed-by iterations skip the event
            return False, "go"

    def run(self, start: int) -> Binding | None:
        """The run started by the event at ``start``: its match, or None."""
        checker = self.checker
        for pos in range(start, checker.hi + 1):
            if pos > start and not checker.window_ok(start, pos):
                break  # events beyond the window end the scan
            consumed, state = self.step(pos)
            if pos == start and not consumed:
                return None  # the start event cannot fill the first component: no run
            if state == "fail":
                return None
            if state == "done":
                break
        binding = self.binding()
        _reserve(checker, self.max_candidates)
        return binding if checker.check(self.alt, binding, final=True) else None


def _runs(alt: Alternative, checker: BindingChecker, max_candidates: int) -> Iterator[Binding]:
    """The match of every run of ``alt`` (at most one per start event)."""
    for start in range(checker.lo, checker.hi + 1):
        binding = _Run(alt, checker, max_candidates).run(start)
        if binding is not None:
            yield binding
