"""The pattern AST: immutable values the parser produces and every engine compiles from.

Every node carries ``span = (start, end)``, half-open character offsets into the query text.
Spans (and other source positions) are excluded from equality, so two parses of differently
formatted but equivalent text compare equal. The root of the tree, :class:`cep.lang.query.Query`
(the pattern and its clauses), has its own module: it renders itself through
:mod:`cep.lang.printer`, which imports the nodes defined here. Pattern nodes:

- ``Event(cls, alias, iter_alias)``: one event of class ``cls`` bound to ``alias``;
  ``iter_alias`` is True when written ``c[]``;
- ``Seq(parts, links)``: parts in order; ``links[i]`` joins ``parts[i]`` and ``parts[i+1]``:
  ``"next"`` (``,``, strict contiguity) or ``"followed"`` (``;`` and ``SEQ(...)`` arguments, the
  selection policy applies). Nested sequences are flattened (concatenation is associative);
- ``And(parts)`` (all occur, any order), ``Or(parts)`` (one occurs), ``Not(part)`` (absence);
- ``Kleene(part, min, max)``: ``max`` None means unbounded;
- ``Timed(part, conditions)``: ``part @(cond) @(cond)``.

Conditions are SQL (sqlglot) expressions in which every reference to event data has been
replaced by a backtick-quoted column named by the reference's canonical text (the column
``c[i-1].dest`` stands for ``c[i-1].dest``); ``Condition.ref(name)`` explains each such column.
A compiler walks ``exp.Column`` nodes and looks each name up; nothing else in the expression
refers to data.

Example:
    >>> from cep.lang import parse_pattern
    >>> q = parse_pattern("PATTERN a; b+ WITHIN 5 MINUTES")
    >>> q.pattern.links, q.within.microseconds()
    (('followed',), 300000000)
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Union

from sqlglot import exp

from cep.timestamps import iso_to_micros

Loc = tuple[int, int]

NEXT = "next"
FOLLOWED = "followed"

GROUPED = "skip-till-any-match-grouped"
"""FAEM's grouped Kleene closure (Behravesh et al., docs/semantics.md)."""
POLICIES = ("strict-contiguity", "skip-till-next-match", "skip-till-any-match", GROUPED)
"""The selection policies (docs/semantics.md)."""

# Canonical time units and their length in microseconds.
MAX_SPAN = 2 ** 62
"""Where a WITHIN or SLIDE length saturates (in microseconds, events or raw units): 146,000
years, half of int64, so a timestamp plus a length cannot overflow."""

TIME_UNITS: dict[str, int] = {
    "MICROSECONDS": 1,
    "MILLISECONDS": 1_000,
    "SECONDS": 1_000_000,
    "MINUTES": 60_000_000,
    "HOURS": 3_600_000_000,
    "DAYS": 86_400_000_000,
    "WEEKS": 604_800_000_000,
}
TIME = "TIME"
EVENTS = "EVENTS"
UNITS = "UNITS"


def span_field() -> Loc:
    """The ``span`` field of every node: a keyword-only source position left out of equality."""
    return field(default=(0, 0), compare=False, kw_only=True)  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------
# References inside conditions
# ---------------------------------------------------------------------------------------------


def quote_name(name: str) -> str:
    """Write ``name`` as it appears inside a canonical reference, quoting it when needed.

    Example:
        >>> quote_name("price"), quote_name("O_Sent (mail)")
        ('price', '"O_Sent (mail)"')
    """
    simple = bool(name) and (name[0] == "_" or name[0].isalpha()) and all(c == "_" or c.isalnum() for c in name)
    return name if simple else '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class Index:
    """An iteration index: ``i`` / ``i-k`` (relative) or a 1-based constant ``k`` (absolute)."""

    relative: bool
    offset: int

    def __str__(self) -> str:
        if not self.relative:
            return str(self.offset)
        if self.offset == 0:
            return "i"
        return f"i{self.offset:+d}"


@dataclass(frozen=True)
class AttrRef:
    """``alias.attr``; ``alias`` is None for a bare attribute in ``DEFINE`` (the defined event)."""

    alias: str | None
    attr: str
    span: Loc = span_field()

    @property
    def name(self) -> str:
        """The placeholder column name standing for this reference in ``Condition.expr``."""
        return quote_name(self.attr) if self.alias is None else f"{quote_name(self.alias)}.{quote_name(self.attr)}"


@dataclass(frozen=True)
class IterRef:
    """``alias[index].attr``: an attribute of one iteration of a Kleene alias."""

    alias: str
    attr: str
    index: Index
    span: Loc = span_field()

    @property
    def name(self) -> str:
        """The placeholder column name standing for this reference in ``Condition.expr``."""
        return f"{quote_name(self.alias)}[{self.index}].{quote_name(self.attr)}"


@dataclass(frozen=True)
class AggRef:
    """``func(alias[..upto].attr)``: aggregate over iterations; ``upto`` None means all of them."""

    func: str
    alias: str
    attr: str | None
    upto: Index | None
    span: Loc = span_field()

    @property
    def name(self) -> str:
        """The placeholder column name standing for this reference in ``Condition.expr``."""
        rng = "" if self.upto is None else f"[..{self.upto}]"
        attr = "" if self.attr is None else f".{quote_name(self.attr)}"
        return f"{self.func}({quote_name(self.alias)}{rng}{attr})"


@dataclass(frozen=True)
class TsRef:
    """``t(alias)`` or ``t(alias[index])``: the event's timestamp; alias None in ``DEFINE``."""

    alias: str | None
    index: Index | None = None
    span: Loc = span_field()

    @property
    def name(self) -> str:
        """The placeholder column name standing for this reference in ``Condition.expr``."""
        if self.alias is None:
            return "t()"
        idx = "" if self.index is None else f"[{self.index}]"
        return f"t({quote_name(self.alias)}{idx})"


@dataclass(frozen=True)
class VarRef:
    """``$name``: a join variable; every event whose condition uses it shares one value."""

    var: str
    span: Loc = span_field()

    @property
    def name(self) -> str:
        """The placeholder column name standing for this reference in ``Condition.expr``."""
        return f"${self.var}"


Ref = Union[AttrRef, IterRef, AggRef, TsRef, VarRef]


@dataclass(frozen=True)
class Condition:
    """One SQL boolean condition, parsed by sqlglot over placeholder columns.

    Attributes:
        text: the condition exactly as written.
        sql: ``expr`` rendered in the Spark dialect (stable; used for equality).
        refs: every reference in order of appearance (repeats included, each with its span).
        expr: the sqlglot expression; each ``exp.Column`` in it is named by a ref's ``name``.
            Treat it as read-only (``expr.copy()`` before transforming it).
    """

    text: str
    sql: str
    refs: tuple[Ref, ...]
    expr: exp.Expression = field(compare=False, repr=False, hash=False, kw_only=True)
    span: Loc = span_field()

    @property
    def aliases(self) -> frozenset[str]:
        """Aliases the condition mentions (None, the DEFINE subject, is left out)."""
        return frozenset(r.alias for r in self.refs if not isinstance(r, VarRef) and r.alias is not None)

    @property
    def attributes(self) -> dict[str | None, frozenset[str]]:
        """Attributes read per alias (key None: the DEFINE subject); timestamps via t() excluded."""
        out: dict[str | None, set[str]] = {}
        for r in self.refs:
            if isinstance(r, (AttrRef, IterRef)) or (isinstance(r, AggRef) and r.attr is not None):
                out.setdefault(r.alias, set()).add(r.attr)  # type: ignore[arg-type]
        return {k: frozenset(v) for k, v in out.items()}

    @property
    def iter_refs(self) -> tuple[IterRef, ...]:
        """The ``b[i].attr`` style references."""
        return tuple(r for r in self.refs if isinstance(r, IterRef))

    @property
    def aggregates(self) -> tuple[AggRef, ...]:
        """The ``avg(b[..i-1].attr)`` style references."""
        return tuple(r for r in self.refs if isinstance(r, AggRef))

    @property
    def variables(self) -> frozenset[str]:
        """Join variables (``$x`` gives ``"x"``)."""
        return frozenset(r.var for r in self.refs if isinstance(r, VarRef))

    @property
    def single_event(self) -> bool:
        """True when the condition reads one event only, so Spark can evaluate it as a filter."""
        if self.iter_refs or self.aggregates or self.variables:
            return False
        if any(isinstance(r, TsRef) and r.index is not None for r in self.refs):
            return False
        subjects = {r.alias for r in self.refs}
        return len(subjects) <= 1

    def ref(self, name: str) -> Ref:
        """Return the reference behind placeholder column ``name`` (KeyError if none)."""
        for r in self.refs:
            if r.name == name:
                return r
        raise KeyError(name)


# ---------------------------------------------------------------------------------------------
# Pattern nodes
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    """One event of class ``cls`` bound to ``alias``; ``iter_alias`` marks ``c[]``.

    ``span`` runs from the class name to the end of the alias (and its ``[]``), so in
    ``check+ c[]`` it covers the whole text; ``alias_span`` is the alias alone.
    """

    cls: str
    alias: str
    iter_alias: bool = False
    span: Loc = span_field()
    alias_span: Loc | None = field(default=None, compare=False, repr=False, kw_only=True)


@dataclass(frozen=True)
class Seq:
    """Parts in order; ``links[i]`` is ``"next"`` or ``"followed"`` between parts i and i+1."""

    parts: tuple[PatternNode, ...]
    links: tuple[str, ...]
    span: Loc = span_field()


@dataclass(frozen=True)
class And:
    """All parts occur, in any order."""

    parts: tuple[PatternNode, ...]
    span: Loc = span_field()


@dataclass(frozen=True)
class Or:
    """One of the parts occurs."""

    parts: tuple[PatternNode, ...]
    span: Loc = span_field()


@dataclass(frozen=True)
class Not:
    """No match of ``part`` occurs (between the neighbouring components)."""

    part: PatternNode
    span: Loc = span_field()


@dataclass(frozen=True)
class Kleene:
    """``part`` repeated ``min`` to ``max`` times (``max`` None: unbounded)."""

    part: PatternNode
    min: int
    max: int | None
    span: Loc = span_field()
    quant_span: Loc | None = field(default=None, compare=False, repr=False, kw_only=True)


@dataclass(frozen=True)
class Timed:
    """``part @(cond) ...``: conditions attached to an element (may mention any alias)."""

    part: PatternNode
    conditions: tuple[Condition, ...]
    span: Loc = span_field()


PatternNode = Union[Event, Seq, And, Or, Not, Kleene, Timed]


def children(node: PatternNode) -> tuple[PatternNode, ...]:
    """Return the direct sub-patterns of ``node``."""
    if isinstance(node, (Seq, And, Or)):
        return node.parts
    if isinstance(node, (Not, Kleene, Timed)):
        return (node.part,)
    return ()


def walk(node: PatternNode) -> Iterator[PatternNode]:
    """Yield ``node`` and every sub-pattern, pre-order, left to right (without recursion)."""
    stack = [node]
    while stack:
        cur = stack.pop()
        yield cur
        stack.extend(reversed(children(cur)))


def events(node: PatternNode) -> list[Event]:
    """Return the events of ``node`` in order of appearance."""
    return [n for n in walk(node) if isinstance(n, Event)]


# ---------------------------------------------------------------------------------------------
# Clauses
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Define:
    """``DEFINE cls AS condition``: events of ``cls`` are those satisfying ``condition``."""

    cls: str
    condition: Condition
    span: Loc = span_field()


@dataclass(frozen=True)
class Equivalence:
    """``[attr]`` in WHERE: all events of a match share the value of ``attr``."""

    attr: str
    span: Loc = span_field()


@dataclass(frozen=True)
class Span:
    """A WITHIN / SLIDE length: ``value`` in ``unit`` (canonical plural, e.g. ``"MINUTES"``).

    Example:
        >>> Span(1.5, "SECONDS").microseconds(), Span(100, "EVENTS").kind
        (1500000, 'EVENTS')
    """

    value: float
    unit: str
    span: Loc = span_field()

    @property
    def kind(self) -> str:
        """``"TIME"``, ``"EVENTS"`` or ``"UNITS"`` (raw units of a numeric ts column)."""
        return TIME if self.unit in TIME_UNITS else self.unit

    def microseconds(self) -> int | None:
        """Length in microseconds for a time unit; None for EVENTS and UNITS.

        A length beyond :data:`MAX_SPAN` saturates there: every timestamp Spark holds (years
        1 to 9999) lies within 3.2 * 10^17 microseconds of every other, so a longer window
        answers the same, and ``ts + length`` stays inside int64 (issue 46: ``WITHIN
        106000000 DAYS`` wrapped around near 9999-12-31 and lost its match).
        """
        if self.unit not in TIME_UNITS or not math.isfinite(self.value):
            return None
        return min(round(self.value * TIME_UNITS[self.unit]), MAX_SPAN)

    def magnitude(self) -> float:
        """Length in the smallest unit of its kind (microseconds for TIME), for comparisons."""
        us = self.microseconds()
        return float(us) if us is not None else float(self.value)

    def __str__(self) -> str:
        value = int(self.value) if float(self.value).is_integer() else self.value
        unit = self.unit[:-1] if value == 1 else self.unit
        return f"{value} {unit}"


@dataclass(frozen=True)
class WindowBounds:
    """``WINDOW [start, end]``: positions (ints, inclusive) or timestamps (ISO strings)."""

    start: int | str
    end: int | str
    kind: str  # "POSITION" or "TIMESTAMP"
    span: Loc = span_field()

    def microseconds(self) -> tuple[int, int] | None:
        """For timestamp bounds: both as microseconds since the epoch (naive means UTC)."""
        if self.kind != "TIMESTAMP":
            return None
        return (iso_to_micros(str(self.start)), iso_to_micros(str(self.end)))
