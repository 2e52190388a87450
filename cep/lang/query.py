"""The root of the pattern AST: a whole query, its pattern tree and its clauses.

The nodes below the root (events, operators, conditions, spans) are in :mod:`cep.lang.ast`.
``Query`` lives apart from them because it renders itself (:meth:`Query.dump`,
:meth:`Query.to_text`) through :mod:`cep.lang.printer`, which needs the node classes: with
``Query`` here the imports run one way, ``query -> printer -> ast``.

Example:
    >>> from cep.lang import parse_pattern
    >>> q = parse_pattern("PATTERN a; b+ WITHIN 5 MINUTES")
    >>> q.aliases(), q.to_text()
    (['a', 'b'], 'PATTERN a; b+ WITHIN 5 MINUTES')
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cep.lang import printer
from cep.lang.ast import (Condition, Define, Equivalence, Loc, PatternNode, Span, Timed, WindowBounds, events,
                          span_field, walk)


@dataclass(frozen=True)
class Query:
    """A whole pattern query: the pattern and its DEFINE / WHERE / WITHIN / SLIDE / WINDOW clauses.

    Attributes:
        pattern: the pattern tree.
        defines: ``DEFINE`` entries in order.
        conditions: WHERE conjuncts (top-level ``AND`` splits them), policy and ``[attr]`` excluded.
        policy: ``"strict-contiguity"``, ``"skip-till-next-match"``, ``"skip-till-any-match"``, or None.
        equivalences: ``[attr]`` entries of WHERE.
        within: the WITHIN span, or None.
        slide: the SLIDE span, or None.
        window: the WINDOW bounds, or None.
        text: the original query text (all spans index into it).
    """

    pattern: PatternNode
    defines: tuple[Define, ...] = ()
    conditions: tuple[Condition, ...] = ()
    policy: str | None = None
    equivalences: tuple[Equivalence, ...] = ()
    within: Span | None = None
    slide: Span | None = None
    window: WindowBounds | None = None
    text: str = field(default="", compare=False)
    span: Loc = span_field()

    def all_conditions(self) -> list[Condition]:
        """Every condition of the query: DEFINE, ``@(...)`` and WHERE, in that order."""
        out = [d.condition for d in self.defines]
        for node in walk(self.pattern):
            if isinstance(node, Timed):
                out.extend(node.conditions)
        out.extend(self.conditions)
        return out

    def aliases(self) -> list[str]:
        """The aliases of the pattern's events in order of appearance."""
        return [e.alias for e in events(self.pattern)]

    def dump(self) -> str:
        """Render the query as the stable, readable tree used by the golden files."""
        return printer.dump(self)

    def to_text(self) -> str:
        """Render the query back as pattern text that parses to an equal query."""
        return printer.format_query(self)
