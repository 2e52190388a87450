"""The row pattern of a MATCH_RECOGNIZE clause as a tree (SQL:2016, ISO/IEC 9075-2 §7.6 ff.).

One frozen node class per construct of the PATTERN grammar (docs/match-recognize.md):
concatenation, alternation, ``PERMUTE``, a quantified term, the anchors ``^`` and ``$``, an
exclusion ``{- ... -}``, a primary variable and the empty pattern ``()``. Every node keeps the
half-open character range it was parsed from, so a later stage can point at it.

Example:
    >>> from cep.recognize.parser import parse_row_pattern
    >>> node = parse_row_pattern("A B+? | ()")
    >>> type(node).__name__, [type(p).__name__ for p in node.items]
    ('Alternation', ['Concatenation', 'Empty'])
    >>> show(node)
    'A B+? | ()'
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Alternation", "Anchor", "Concatenation", "Empty", "Exclusion", "Node", "Permute",
           "Quantified", "Variable", "can_be_empty", "has_anchor", "show", "variables"]


@dataclass(frozen=True)
class Node:
    """Base of every pattern node: ``span`` is ``(start, end)`` in the statement's text."""

    span: tuple[int, int]


@dataclass(frozen=True)
class Variable(Node):
    """A primary pattern variable; ``name`` is normalised (upper case unless quoted)."""

    name: str


@dataclass(frozen=True)
class Empty(Node):
    """The empty pattern ``()``: matches without consuming a row."""


@dataclass(frozen=True)
class Anchor(Node):
    """``^`` (``start``: the partition's first row is next) or ``$`` (``end``: no row is left)."""

    start: bool


@dataclass(frozen=True)
class Concatenation(Node):
    """``items`` one after the other."""

    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alternation(Node):
    """The first of ``items`` that leads to a match is preferred (left to right)."""

    items: tuple[Node, ...]


@dataclass(frozen=True)
class Permute(Node):
    """``PERMUTE(a, b, ...)``: every order of ``items``, preferred in lexicographic order of
    their positions in the list."""

    items: tuple[Node, ...]


@dataclass(frozen=True)
class Quantified(Node):
    """``item`` repeated ``low`` to ``high`` times (``high`` None: unbounded); ``greedy``
    prefers more repetitions, reluctant (``?`` suffix) fewer."""

    item: Node
    low: int
    high: int | None
    greedy: bool


@dataclass(frozen=True)
class Exclusion(Node):
    """``{- item -}``: rows it matches take part in the match but are not output by
    ALL ROWS PER MATCH."""

    item: Node


def variables(node: Node) -> list[str]:
    """The distinct primary variables of ``node``, in order of first appearance.

    Example:
        >>> from cep.recognize.parser import parse_row_pattern
        >>> variables(parse_row_pattern("A (B | A)* PERMUTE(C, B)"))
        ['A', 'B', 'C']
    """
    seen: dict[str, None] = {}

    def walk(n: Node) -> None:
        if isinstance(n, Variable):
            seen.setdefault(n.name, None)
        for child in _children(n):
            walk(child)

    walk(node)
    return list(seen)


def can_be_empty(node: Node) -> bool:
    """Whether ``node`` can match without consuming a row (``A*``, ``()``, ``^``).

    Example:
        >>> from cep.recognize.parser import parse_row_pattern
        >>> [can_be_empty(parse_row_pattern(t)) for t in ("A B*", "A* | B", "(A? B?){2}")]
        [False, True, True]
    """
    if isinstance(node, Variable):
        return False
    if isinstance(node, (Empty, Anchor)):
        return True
    if isinstance(node, Alternation):
        return any(can_be_empty(i) for i in node.items)
    if isinstance(node, (Concatenation, Permute)):
        return all(can_be_empty(i) for i in node.items)
    if isinstance(node, Quantified):
        return node.low == 0 or can_be_empty(node.item)
    assert isinstance(node, Exclusion)
    return can_be_empty(node.item)


def has_anchor(node: Node) -> bool:
    """Whether ``node`` contains ``^`` or ``$``."""
    return isinstance(node, Anchor) or any(has_anchor(c) for c in _children(node))


def _children(node: Node) -> tuple[Node, ...]:
    if isinstance(node, (Concatenation, Alternation, Permute)):
        return node.items
    if isinstance(node, (Quantified, Exclusion)):
        return (node.item,)
    return ()


def show(node: Node) -> str:
    """The pattern as text, fully bracketed where precedence would otherwise be unclear.

    Example:
        >>> from cep.recognize.parser import parse_row_pattern
        >>> show(parse_row_pattern('^ "b" {- C -} D{2,}? $'))
        '^ "b" {- C -} D{2,}? $'
    """
    if isinstance(node, Variable):
        return node.name if node.name.isupper() and node.name.isidentifier() else (
            '"' + node.name.replace('"', '""') + '"')
    if isinstance(node, Empty):
        return "()"
    if isinstance(node, Anchor):
        return "^" if node.start else "$"
    if isinstance(node, Concatenation):
        return " ".join(_bracketed(i, Alternation) for i in node.items)
    if isinstance(node, Alternation):
        return " | ".join(_bracketed(i, Alternation) for i in node.items)
    if isinstance(node, Permute):
        return "PERMUTE(" + ", ".join(show(i) for i in node.items) + ")"
    if isinstance(node, Exclusion):
        return "{- " + show(node.item) + " -}"
    assert isinstance(node, Quantified)
    inner = show(node.item)
    if isinstance(node.item, (Concatenation, Alternation, Quantified)):
        inner = f"({inner})"
    bound = {(0, None): "*", (1, None): "+", (0, 1): "?"}.get((node.low, node.high))
    if bound is None:
        bound = ("{%d}" % node.low if node.high == node.low
                 else "{%d,%s}" % (node.low, "" if node.high is None else node.high))
    return inner + bound + ("" if node.greedy else "?")


def _bracketed(node: Node, loose: type) -> str:
    text = show(node)
    return f"({text})" if isinstance(node, loose) else text
