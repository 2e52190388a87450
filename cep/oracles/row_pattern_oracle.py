"""Brute-force oracle of row pattern matching: the standard's definition, enumerated.

For each candidate starting row in turn, every way the pattern can map rows to variables is
enumerated by backtracking over the pattern tree, in the standard's preference order
(alternation left to right, greedy quantifiers more first, reluctant fewer first, PERMUTE in
lexicographic order of the item orders); the first mapping found is the match. Exponential,
for small inputs only; :mod:`cep.recognize.matcher` must agree with it everywhere.

It shares the matcher's one convention (docs/match-recognize.md, "Empty iterations"): an
iteration of an unbounded quantifier that maps no row ends that path.

Example:
    >>> from cep.recognize.parser import parse_row_pattern
    >>> rows = [{"A"}, {"A"}, {"A", "B"}, {"B"}]
    >>> oracle_row_matches(parse_row_pattern("A+? B"), rows)
    [(0, ('A', 'A', 'B'), (False, False, False))]
"""

from __future__ import annotations

from itertools import permutations
from typing import Callable, Iterator

from cep.recognize.ast import (Alternation, Anchor, Concatenation, Empty, Exclusion, Node,
                               Permute, Quantified, Variable)

__all__ = ["OracleBudgetExceeded", "oracle_row_matches"]


class OracleBudgetExceeded(Exception):
    """The enumeration took more steps than allowed (backtracking is exponential on some
    patterns); a test then draws another example."""

_Path = tuple[tuple[str, bool], ...]
Reads = Callable[[str, int, tuple[str, ...], int], bool]
"""``(variable, row, labels of the rows before it in the match, the number the match being
tried will get) -> bool``."""


def oracle_row_matches(pattern: Node, rows: list[set[str]], skip: str = "past_last",
                       skip_to: frozenset[str] = frozenset(),
                       times: list[int | None] | None = None, span: int = 0,
                       max_steps: int = 200_000, reads: Reads | None = None
                       ) -> list[tuple[int, tuple[str, ...], tuple[bool, ...]]]:
    """``(start, labels, excluded)`` of every match, in order.

    Args:
        pattern: the parsed row pattern.
        rows: per row, the variables it satisfies (a variable never named in DEFINE should be
            in every row's set).
        skip: ``past_last``, ``next_row``, ``first`` or ``last``.
        skip_to: for ``first``/``last``: the variables (a SUBSET's members) to skip to.
        times, span: our WITHIN extension: a mapping is a match only if its last row's time
            is less than ``span`` after its first's (no row with a None time).

        max_steps: how many pattern nodes the enumeration may visit in all.
        reads: DEFINE conditions that read the match so far, asked (after ``rows`` said yes)
            with the labels of the match's rows before the one tested and the match's number
            (MATCH_NUMBER(): matches found before it, plus one).

    Raises:
        ValueError: the skip target is missing from a match or would loop (the matcher raises
            its typed errors there).
        OracleBudgetExceeded: more than ``max_steps`` visits.
    """
    budget = [max_steps]
    n = len(rows)
    out = []
    pos = 0
    while pos < n:
        found = None
        number = len(out) + 1
        asked = None if reads is None else (
            lambda var, row, labels, r=reads, k=number: r(var, row, labels, k))
        for start in range(pos, n):
            for end, path in _walk(pattern, rows, start, (), False, budget, asked):
                if times is not None and path and not _within(times, start, end, span):
                    continue
                found = (start, path)
                break
            if found:
                break
        if found is None:
            break
        start, path = found
        labels = tuple(v for v, _ in path)
        out.append((start, labels, tuple(e for _, e in path)))
        if not path:
            pos = start + 1
        elif skip == "past_last":
            pos = start + len(path)
        elif skip == "next_row":
            pos = start + 1
        else:
            hits = [start + i for i, v in enumerate(labels) if v in skip_to]
            if not hits:
                raise ValueError("skip target matched no row")
            pos = hits[0] if skip == "first" else hits[-1]
            if pos == start:
                raise ValueError("skip would loop")
    return out


def _within(times: list[int | None], start: int, end: int, span: int) -> bool:
    window = times[start:end]
    return None not in window and window[-1] - window[0] < span


_Asked = Callable[[str, int, tuple[str, ...]], bool]


def _walk(node: Node, rows: list[set[str]], i: int, path: _Path, excluded: bool,
          budget: list[int], reads: _Asked | None = None) -> Iterator[tuple[int, _Path]]:
    """Every ``(next row, path)`` after matching ``node`` from row ``i``, preferred first."""
    budget[0] -= 1
    if budget[0] < 0:
        raise OracleBudgetExceeded()
    if isinstance(node, Variable):
        if i < len(rows) and node.name in rows[i] and (
                reads is None or reads(node.name, i, tuple(v for v, _ in path))):
            yield i + 1, path + ((node.name, excluded),)
    elif isinstance(node, Empty):
        yield i, path
    elif isinstance(node, Anchor):
        if (i == 0) if node.start else (i == len(rows)):
            yield i, path
    elif isinstance(node, Exclusion):
        yield from _walk(node.item, rows, i, path, True, budget, reads)
    elif isinstance(node, Concatenation):
        yield from _sequence(node.items, rows, i, path, excluded, budget, reads)
    elif isinstance(node, Alternation):
        for item in node.items:
            yield from _walk(item, rows, i, path, excluded, budget, reads)
    elif isinstance(node, Permute):
        for order in permutations(node.items):
            yield from _sequence(order, rows, i, path, excluded, budget, reads)
    else:
        assert isinstance(node, Quantified)
        yield from _repeat(node, rows, i, path, excluded, 0, budget, reads)


def _sequence(items: tuple[Node, ...], rows: list[set[str]], i: int, path: _Path,
              excluded: bool, budget: list[int], reads: _Asked | None
              ) -> Iterator[tuple[int, _Path]]:
    if not items:
        yield i, path
        return
    for j, p in _walk(items[0], rows, i, path, excluded, budget, reads):
        yield from _sequence(items[1:], rows, j, p, excluded, budget, reads)


def _repeat(node: Quantified, rows: list[set[str]], i: int, path: _Path, excluded: bool,
            count: int, budget: list[int], reads: _Asked | None
            ) -> Iterator[tuple[int, _Path]]:
    can_stop = count >= node.low
    can_go = node.high is None or count < node.high

    def more() -> Iterator[tuple[int, _Path]]:
        if not can_go:
            return
        for j, p in _walk(node.item, rows, i, path, excluded, budget, reads):
            if node.high is None and count >= node.low and j == i:
                continue  # an empty iteration of the unbounded part ends the path
            yield from _repeat(node, rows, j, p, excluded, count + 1, budget, reads)

    if node.greedy:
        yield from more()
        if can_stop:
            yield i, path
    else:
        if can_stop:
            yield i, path
        yield from more()
