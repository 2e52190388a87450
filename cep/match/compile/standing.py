"""A standing pattern compiled: the pattern and its prefixes, for matches kept current.

A standing pattern (docs/standing.md) is matched run after run over a key's new events; its
program is the compiled pattern (:class:`StandingProgram`), which must have a ``WITHIN``
window, and the prefixes of its top-level sequence. A standing pattern reports a *timeout* for a start event whose ``WITHIN``
window closed without a match: how far it got is the longest prefix of the pattern's top-level
sequence that matches from that start. Prefix ``k`` is the first ``k`` components with the
conditions that mention only their aliases (a condition about a later component cannot be
decided yet, so it does not hold a prefix back), the DEFINE of their classes, the same
policy and the same window. A prefix that ends in ``NOT`` is not one (absence is decided only
by what follows it), nor is one whose ``@(...)`` conditions mention a later alias.

Example:
    >>> program = compile_standing("PATTERN A a; B b; C c WHERE c.x > a.x WITHIN 5 EVENTS")
    >>> [(p.components, p.compiled.query.to_text()) for p in program.prefixes]
    [(1, 'PATTERN A a WITHIN 5 EVENTS'), (2, 'PATTERN A a; B b WITHIN 5 EVENTS')]
    >>> compile_standing("PATTERN A; B")
    Traceback (most recent call last):
    ...
    cep.match.errors.StandingPatternError: CEP-MATCH-005: line 1, column 1: a standing pattern needs a WITHIN window: without one a partial match never times out and every key's events would be kept forever
        PATTERN A; B
        ^~~~~~~~~~~~
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from collections.abc import Sequence

from cep.lang.ast import Not, PatternNode, Seq, Timed, events, walk
from cep.lang.errors import PatternError
from cep.lang.pipeline import parse_pattern
from cep.lang.query import Query
from cep.match.compile.compiler import compile_query
from cep.match.compile.program import CompiledQuery
from cep.match.errors import StandingPatternError, UnsupportedPatternError


@dataclass(frozen=True)
class Prefix:
    """One prefix of a pattern: its first ``components`` components, compiled."""

    components: int
    compiled: CompiledQuery


@dataclass(frozen=True)
class StandingProgram:
    """A standing pattern, compiled once: the pattern and its prefixes (shortest first)."""

    compiled: CompiledQuery
    prefixes: tuple[Prefix, ...]

    @property
    def components(self) -> int:
        """The components of the pattern's top-level sequence (1 when it is not one)."""
        pattern = self.compiled.query.pattern
        return len(pattern.parts) if isinstance(pattern, Seq) else 1


def compile_standing(query: Query | str, *, policy: str | None = None,
                     columns: Sequence[str] | None = None) -> StandingProgram:
    """Compile a standing pattern (the pattern language of ``match_seq``, every policy).

    Raises:
        PatternError: the text does not parse or fails validation.
        StandingPatternError: no ``WITHIN``, or ``WINDOW`` bounds (CEP-MATCH-005).
        UnsupportedPatternError, PolicyConflictError: as :func:`compile_query`.
    """
    parsed = parse_pattern(query) if isinstance(query, str) else query
    compiled = compile_query(parsed, policy=policy, columns=columns)
    everything = (0, max(len(parsed.text.rstrip()), 1))
    if parsed.within is None:
        raise StandingPatternError.at(
            parsed.text, everything, "a standing pattern needs a WITHIN window: without one a "
            "partial match never times out and every key's events would be kept forever")
    if parsed.window is not None:
        raise StandingPatternError.at(
            parsed.text, parsed.window.span if parsed.window.span != (0, 0) else everything,
            "a standing pattern cannot have WINDOW bounds: they "
            "number the events from the start of a key's whole history, which a standing "
            "pattern does not keep; use WITHIN n EVENTS")
    return StandingProgram(compiled, prefix_queries(compiled))


def prefix_queries(compiled: CompiledQuery) -> tuple[Prefix, ...]:
    """The proper prefixes of ``compiled``'s top-level sequence that can stand alone, shortest
    first (none for a pattern that is not a sequence: a single component has no prefix)."""
    query = compiled.query
    pattern = query.pattern
    if not isinstance(pattern, Seq):
        return ()
    found = []
    for k in range(1, len(pattern.parts)):
        part = _bare(pattern.parts[k - 1])
        if isinstance(part, Not):
            continue
        head: PatternNode = (pattern.parts[0] if k == 1
                             else Seq(pattern.parts[:k], pattern.links[:k - 1]))
        prefix = _prefix_query(query, head)
        if prefix is None:
            continue
        try:
            program = compile_query(prefix, policy=compiled.policy, limits=compiled.limits)
        except (PatternError, UnsupportedPatternError):
            continue  # e.g. a prefix whose only positive part is under a quantifier it refuses
        found.append(Prefix(k, program))
    return tuple(found)


def _bare(node: PatternNode) -> PatternNode:
    """``node`` without its ``@(...)`` conditions."""
    while isinstance(node, Timed):
        node = node.part
    return node


def _prefix_query(query: Query, head: PatternNode) -> Query | None:
    """``query`` cut to the pattern ``head``; None when an ``@(...)`` inside ``head`` reads an
    alias after it."""
    aliases = {e.alias for e in events(head)}
    classes = {e.cls for e in events(head)}
    for node in walk(head):
        if isinstance(node, Timed) and any(not c.aliases <= aliases for c in node.conditions):
            return None
    return replace(query, pattern=head,
                   conditions=tuple(c for c in query.conditions if c.aliases <= aliases),
                   defines=tuple(d for d in query.defines if d.cls in classes))
