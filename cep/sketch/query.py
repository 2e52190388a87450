"""Sketch queries: the part of the pattern language a Bloom-filter tree can answer (docs/sketch.md 4).

A sketch holds event *names* only, so :func:`compile_sketch_query` accepts a ``SEQ`` of
components, each a class name, ``OR`` of names or ``AND`` of names, with ``NOT(name)`` /
``NOT(OR(names))`` between components (or at the end, with ``WITHIN``), in prefix or infix form
(``;``, ``|``, ``&``, ``!``), plus ``WINDOW [a, b]``, ``WITHIN`` and a selection policy. Every
other construct is an :class:`UnsupportedSketchPatternError` that names the construct and points
at it (code, line, column, caret snippet), like every :class:`cep.lang.PatternError`:

=============  ===============================================================================
code           construct the sketch cannot answer
=============  ===============================================================================
CEP-SKETCH-020 a condition on attributes (``WHERE a.x > 1``, ``@(...)``)
CEP-SKETCH-021 ``DEFINE`` (an event class defined by a predicate)
CEP-SKETCH-022 a Kleene closure or count quantifier (``* + ? {n} {n,m} [n]``)
CEP-SKETCH-023 an ``[attr]`` equivalence
CEP-SKETCH-024 a join variable ``$x``
CEP-SKETCH-025 ``,`` (next-event contiguity)
CEP-SKETCH-026 an ``AND`` argument that is not a class name (nested ``SEQ``, ``OR``, ``NOT``)
CEP-SKETCH-027 an ``OR`` argument that is not a class name (nested ``SEQ``, ``AND``, ``NOT``)
CEP-SKETCH-028 ``NOT`` over something else than a class name or an ``OR`` of class names
CEP-SKETCH-029 ``SLIDE``
CEP-SKETCH-030 an ``AND`` of more than :data:`MAX_STRICT_AND_NAMES` names under strict-contiguity
=============  ===============================================================================

Errors without a position: CEP-SKETCH-036 (:class:`SketchArgumentError`, a bad argument such as
an unknown policy, mode or level), CEP-SKETCH-037 (:class:`SketchPolicyError`, the pattern and
the argument name different policies) and CEP-SKETCH-039 (:class:`SketchLimitError`, a
skip-till-any-match enumeration above its limit). When a query has several unsupported
constructs, the error names the first one in the text.

Example:
    >>> q = compile_sketch_query("PATTERN SEQ(A, OR(B, C), NOT(D), AND(E, F)) WITHIN 1 MINUTE")
    >>> [(c.kind, c.names) for c in q.components]
    [('name', ('A',)), ('or', ('B', 'C')), ('and', ('E', 'F'))]
    >>> q.gaps, q.trailing, q.policy, q.within
    (((), ('D',)), (), 'skip-till-next-match', Within(kind='TIME', amount=60000000))
    >>> q.names
    ('A', 'B', 'C', 'E', 'F', 'D')
    >>> compile_sketch_query("PATTERN A; B+")
    Traceback (most recent call last):
    ...
    cep.sketch.query.UnsupportedSketchPatternError: CEP-SKETCH-022: line 1, column 13: a sketch cannot answer a Kleene closure or count quantifier ('+'): it keeps only which names occur in each leaf, not how many
        PATTERN A; B+
                    ^
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cep.errors import CepError
from cep.lang import ast
from cep.lang.errors import PatternSemanticError
from cep.lang.pipeline import parse_pattern
from cep.lang.policy import STRICT
from cep.lang.policy import resolve_policy as resolve
from cep.lang.query import Query
from cep.lang.tokens import OP, tokenize

E_CONDITION = "CEP-SKETCH-020"
E_DEFINE = "CEP-SKETCH-021"
E_KLEENE = "CEP-SKETCH-022"
E_EQUIVALENCE = "CEP-SKETCH-023"
E_VARIABLE = "CEP-SKETCH-024"
E_CONTIGUITY = "CEP-SKETCH-025"
E_AND_ARGUMENT = "CEP-SKETCH-026"
E_OR_ARGUMENT = "CEP-SKETCH-027"
E_NOT_ARGUMENT = "CEP-SKETCH-028"
E_SLIDE = "CEP-SKETCH-029"
E_AND_ARITY = "CEP-SKETCH-030"
E_ARGUMENT = "CEP-SKETCH-036"
E_POLICY = "CEP-SKETCH-037"
E_LIMIT = "CEP-SKETCH-039"

_NAMES_ONLY = "a sketch keeps only the names of the events"

# The most names one AND may have under strict-contiguity. There its names may lie in any order
# over consecutive units, several names to a unit (Baltus 2021, sections 4.2 and 4.3.4: the
# disjunction of the permutations, plus "all in a single node"), so one start unit has up to
# Fubini(n) layouts: 1, 3, 13, 75, 541, 4683 for n = 1..6, 47293 for 7. Six is also the
# largest AND the exact matcher expands into permutations (6! = 720, under its limit of 1024).
# The other policies bind each name on its own (linear in n) and need no such bound.
MAX_STRICT_AND_NAMES = 6


class UnsupportedSketchPatternError(PatternSemanticError):
    """The pattern is valid but uses a construct a sketch cannot answer (CEP-SKETCH-020..030).

    Carries ``code``, ``line``, ``column`` and ``snippet`` like every ``PatternError``.

    Example:
        >>> try:
        ...     compile_sketch_query("PATTERN A; B WHERE A.x > 1")
        ... except UnsupportedSketchPatternError as err:
        ...     print(err.code, err.line, err.column)
        CEP-SKETCH-020 1 20
    """


class SketchArgumentError(CepError):
    """An argument of a sketch query is out of range (unknown policy, mode, level, ...)."""

    code = E_ARGUMENT


class SketchPolicyError(CepError):
    """The pattern's WHERE names one selection policy and the ``policy`` argument another."""

    code = E_POLICY


class SketchLimitError(CepError):
    """A sketch query would enumerate more partial matches than its limit allows.

    The message names the limit (``SketchLimits.max_partial_matches``) and its value.
    """

    code = E_LIMIT


@dataclass(frozen=True)
class SketchComponent:
    """One positive component of a sketch query.

    Attributes:
        kind: ``"name"`` (one class), ``"or"`` (any of ``names``) or ``"and"`` (every name).
        names: the class names; for ``"and"`` one binding slot per name, in the written order.
        span: half-open character offsets of the component in the query text (not compared).
    """

    kind: str
    names: tuple[str, ...]
    span: tuple[int, int] = field(default=(0, 0), compare=False)

    @property
    def slots(self) -> int:
        """How many units a match binds for this component (one per name of an ``AND``)."""
        return len(self.names) if self.kind == "and" else 1


@dataclass(frozen=True)
class Within:
    """A ``WITHIN`` span: ``kind`` is ``"TIME"`` (``amount`` in microseconds), ``"UNITS"`` (raw
    timestamp units) or ``"EVENTS"`` (positions)."""

    kind: str
    amount: int | float

    @property
    def on_positions(self) -> bool:
        """True when the span counts events (positions) rather than timestamps."""
        return self.kind == ast.EVENTS


@dataclass(frozen=True)
class Window:
    """``WINDOW [start, end]``: ``kind`` ``"POSITION"`` or ``"TIMESTAMP"`` (microseconds), inclusive."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class SketchQuery:
    """A compiled sketch query (docs/sketch.md section 4).

    Attributes:
        text: the query text the spans refer to.
        components: the positive components in order (at least one).
        gaps: ``gaps[i]`` is the tuple of names negated between ``components[i]`` and
            ``components[i + 1]`` (empty when there is no ``NOT`` there); ``len(components) - 1``
            entries.
        trailing: names negated after the last component (only with ``within``).
        policy: the resolved selection policy.
        within: the ``WITHIN`` span, or None.
        window: the ``WINDOW`` bounds, or None.
    """

    text: str
    components: tuple[SketchComponent, ...]
    gaps: tuple[tuple[str, ...], ...]
    trailing: tuple[str, ...]
    policy: str
    within: Within | None = None
    window: Window | None = None

    @property
    def positive_names(self) -> tuple[str, ...]:
        """Names some positive component needs, in order of first appearance."""
        return tuple(dict.fromkeys(n for c in self.components for n in c.names))

    @property
    def negated_names(self) -> tuple[str, ...]:
        """Names under a ``NOT``, in order of first appearance."""
        return tuple(dict.fromkeys([n for g in self.gaps for n in g] + list(self.trailing)))

    @property
    def names(self) -> tuple[str, ...]:
        """Every name the query mentions (positive first, then negated ones), without repeats."""
        return tuple(dict.fromkeys(self.positive_names + self.negated_names))

    @property
    def slots(self) -> int:
        """Units bound by one match: one per ``name`` / ``or`` component, one per ``and`` name."""
        return sum(c.slots for c in self.components)


def resolve_policy(query: Query, policy: str | None) -> str:
    """The policy of a sketch query: the pattern's, the argument's, or skip-till-next-match.

    Example:
        >>> resolve_policy(parse_pattern("PATTERN A; B"), "strict-contiguity")
        'strict-contiguity'
    """
    chosen = resolve(query.policy, policy, unknown=SketchArgumentError, conflict=SketchPolicyError)
    if chosen == ast.GROUPED:
        raise SketchArgumentError(f"the sketch does not answer {chosen} (FAEM's grouped Kleene "
                                  "closure needs every event of a group); use match_seq")
    return chosen


def compile_sketch_query(text: str | Query, policy: str | None = None) -> SketchQuery:
    """Parse ``text`` and compile it into a :class:`SketchQuery`, rejecting what a sketch cannot answer.

    Args:
        text: the query text (or an already parsed :class:`cep.lang.Query`).
        policy: the selection policy when the pattern names none (they must agree when both do);
            default skip-till-next-match.

    Returns:
        The compiled query.

    Raises:
        PatternError: the text does not parse (``CEP-PAT-...``).
        UnsupportedSketchPatternError: a construct a sketch cannot answer (``CEP-SKETCH-020..029``),
            or an ``AND`` of more than :data:`MAX_STRICT_AND_NAMES` names under
            strict-contiguity (``CEP-SKETCH-030``).
        SketchArgumentError, SketchPolicyError: an unknown or conflicting policy.

    Example:
        >>> q = compile_sketch_query("PATTERN A; !(B | C); (D & E) WINDOW [0, 99]", "skip-till-any-match")
        >>> [(c.kind, c.names) for c in q.components], q.gaps, q.window
        ([('name', ('A',)), ('and', ('D', 'E'))], (('B', 'C'),), Window(kind='POSITION', start=0, end=99))
    """
    query = parse_pattern(text) if isinstance(text, str) else text
    source = query.text
    _reject_unsupported(query)
    chosen = resolve_policy(query, policy)

    parts = list(query.pattern.parts) if isinstance(query.pattern, ast.Seq) else [query.pattern]
    components: list[SketchComponent] = []
    negated: list[list[str]] = [[]]  # negated[i]: names negated before positive component i
    for part in parts:
        if isinstance(part, ast.Not):
            negated[-1].extend(_event_names(part.part))
            continue
        components.append(_component(part))
        negated.append([])
    if chosen == STRICT:
        _check_strict_and(source, components)
    gaps = tuple(tuple(dict.fromkeys(g)) for g in negated[1:-1])
    trailing = tuple(dict.fromkeys(negated[-1]))
    # The parser already rejects NOT first (CEP-PAT-205) and NOT last without WITHIN (CEP-PAT-206).
    assert components and not negated[0]

    within = None
    if query.within is not None:
        span = query.within
        if span.kind == ast.TIME:
            within = Within(ast.TIME, int(span.microseconds() or 0))
        elif span.kind == ast.EVENTS:
            within = Within(ast.EVENTS, int(span.value))
        else:
            within = Within(span.kind, span.value)
    window = None
    if query.window is not None:
        w = query.window
        if w.kind == "TIMESTAMP":
            lo, hi = w.microseconds()  # type: ignore[misc]
            window = Window("TIMESTAMP", int(lo), int(hi))
        else:
            window = Window("POSITION", int(w.start), int(w.end))
    return SketchQuery(source, tuple(components), gaps, trailing, chosen, within, window)


def _component(node: ast.PatternNode) -> SketchComponent:
    if isinstance(node, ast.Event):
        return SketchComponent("name", (node.cls,), node.span)
    if isinstance(node, ast.Or):
        return SketchComponent("or", tuple(dict.fromkeys(_event_names(node))), node.span)
    assert isinstance(node, ast.And)
    return SketchComponent("and", tuple(p.cls for p in node.parts), node.span)  # type: ignore[union-attr]


def _check_strict_and(source: str, components: list[SketchComponent]) -> None:
    """Refuse an ``AND`` with more than :data:`MAX_STRICT_AND_NAMES` names under strict-contiguity.

    Raises:
        UnsupportedSketchPatternError: CEP-SKETCH-030, pointing at the first such ``AND``.
    """
    for comp in components:
        if comp.kind == "and" and len(comp.names) > MAX_STRICT_AND_NAMES:
            raise UnsupportedSketchPatternError(
                E_AND_ARITY,
                f"a sketch answers an AND of at most {MAX_STRICT_AND_NAMES} names under "
                f"strict-contiguity, this one has {len(comp.names)}: its names may lie over "
                "consecutive units in any order, which is up to 4683 layouts per start unit for "
                "6 names and 47293 for 7; use fewer names or skip-till-next-match",
                source, comp.span[0], comp.span[1])


def _event_names(node: ast.PatternNode) -> list[str]:
    if isinstance(node, ast.Event):
        return [node.cls]
    assert isinstance(node, ast.Or)
    return [p.cls for p in node.parts]  # type: ignore[union-attr]


# ---------------------------------------------------------------------------------------------
# Rejection of what a sketch cannot answer
# ---------------------------------------------------------------------------------------------

# One unsupported construct: (start, end, code, message).
_Problem = tuple[int, int, str, str]


def _reject_unsupported(query: Query) -> None:
    """Raise for the first unsupported construct of ``query`` in text order, if any."""
    problems: list[_Problem] = []
    _pattern_problems(query, problems)
    for define in query.defines:
        problems.append((define.span[0], define.span[1], E_DEFINE,
                         f"a sketch cannot answer DEFINE ({define.cls} defined by a predicate): "
                         f"{_NAMES_ONLY}, so a class is always its name"))
    for cond in query.conditions:
        problems.append(_condition_problem(cond))
    for eq in query.equivalences:
        problems.append((eq.span[0], eq.span[1], E_EQUIVALENCE,
                         f"a sketch cannot answer the equivalence [{eq.attr}]: {_NAMES_ONLY}, "
                         "not their attributes"))
    if query.slide is not None:
        problems.append((query.slide.span[0], query.slide.span[1], E_SLIDE,
                         "a sketch cannot answer SLIDE: use WITHIN alone, or WINDOW [a, b] "
                         "for one window"))
    if problems:
        start, end, code, message = min(problems, key=lambda p: (p[0], p[1]))
        raise UnsupportedSketchPatternError(code, message, query.text, start, end)


def _condition_problem(cond: ast.Condition) -> _Problem:
    variables = [r for r in cond.refs if isinstance(r, ast.VarRef)]
    if variables:
        var = variables[0]
        return (var.span[0], var.span[1], E_VARIABLE,
                f"a sketch cannot answer the join variable ${var.var}: {_NAMES_ONLY}, "
                "not their attributes")
    return (cond.span[0], cond.span[1], E_CONDITION,
            f"a sketch cannot answer a condition on attributes ({cond.text}): {_NAMES_ONLY}")


def _pattern_problems(query: Query, problems: list[_Problem]) -> None:
    text = query.text
    for node in ast.walk(query.pattern):
        if isinstance(node, ast.Kleene):
            start, end = node.quant_span or node.span
            problems.append((start, end, E_KLEENE,
                             f"a sketch cannot answer a Kleene closure or count quantifier "
                             f"({text[start:end]!r}): it keeps only which names occur in each "
                             "leaf, not how many"))
        elif isinstance(node, ast.Timed):
            problems.extend(_condition_problem(c) for c in node.conditions)
        elif isinstance(node, ast.Seq):
            for i, link in enumerate(node.links):
                if link == ast.NEXT:
                    start = _comma_between(text, node.parts[i].span[1], node.parts[i + 1].span[0])
                    problems.append((start, start + 1, E_CONTIGUITY,
                                     "a sketch cannot answer ',' (the very next event): events "
                                     "inside one leaf have no known order; use ';' (followed by) "
                                     "or the strict-contiguity policy (neighbouring leaves)"))
        elif isinstance(node, (ast.And, ast.Or)):
            code, op = (E_AND_ARGUMENT, "AND") if isinstance(node, ast.And) else (E_OR_ARGUMENT, "OR")
            for part in node.parts:
                what = _nested_name(part)
                if what is not None:
                    problems.append((part.span[0], part.span[1], code,
                                     f"a sketch cannot answer {what} inside {op}: the arguments "
                                     f"of {op} must be event names"))
        elif isinstance(node, ast.Not):
            inner = node.part
            ok = isinstance(inner, ast.Event) or (
                isinstance(inner, ast.Or) and all(isinstance(p, ast.Event) for p in inner.parts))
            if not ok and not isinstance(inner, (ast.Kleene, ast.Timed)):
                what = _nested_name(inner) or "this"
                problems.append((inner.span[0], inner.span[1], E_NOT_ARGUMENT,
                                 f"a sketch cannot answer {what} inside NOT: NOT takes an event "
                                 "name or an OR of event names"))
    # Nested positive structure in the top-level sequence is already covered: Seq is flattened,
    # And/Or arguments are checked above; a Not part inside And/Or is reported there.


def _nested_name(node: ast.PatternNode) -> str | None:
    """How to name a non-name argument of AND / OR (None for names and constructs reported elsewhere)."""
    if isinstance(node, ast.Seq):
        return "a nested sequence (SEQ or ';')"
    if isinstance(node, ast.And):
        return "a nested AND"
    if isinstance(node, ast.Or):
        return "a nested OR"
    if isinstance(node, ast.Not):
        return "NOT"
    return None


def _comma_between(text: str, start: int, end: int) -> int:
    """Offset of the ',' token in ``text[start:end]`` (``start`` when none is found)."""
    for tok in tokenize(text[:end]):
        if tok.kind == OP and tok.text == "," and tok.start >= start:
            return tok.start
    return start
