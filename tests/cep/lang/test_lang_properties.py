"""Property tests: nothing but PatternError ever escapes, and text <-> AST round trips.

- random text, random token soup and random mutations of valid patterns either parse or raise a
  PatternError with a sane position and a caret snippet (never IndexError, RecursionError,
  a sqlglot error, ...); whatever parses also survives validation, printing and re-parsing, and
  its conditions contain only allow-listed SQL;
- random valid ASTs printed as text parse back to the same AST.
"""

from __future__ import annotations

import pickle
import re
from dataclasses import replace

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sqlglot import exp

from cep.lang import (
    FOLLOWED,
    NEXT,
    POLICIES,
    And,
    Condition,
    Define,
    Equivalence,
    Event,
    Kleene,
    Not,
    Or,
    PatternError,
    PatternLimitError,
    PatternNode,
    Query,
    Seq,
    Span,
    Timed,
    WindowBounds,
    events,
    format_query,
    parse_condition,
    parse_pattern,
    validate_pattern,
)
from cep.lang.conditions import _ALLOWED_NODES
from cep.lang.validate import iterable_aliases, nullable

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ROUND_TRIP = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SEEDS = [
    "PATTERN SEQ(A, OR(B, C), NOT(D), E) WHERE skip-till-next-match WITHIN 100 EVENTS",
    "PATTERN Google; Microsoft+ WHERE Google.value > 100 AND Google.value < Microsoft.value WITHIN 5 UNITS",
    "PATTERN Google; (Microsoft[3] & Del) WHERE Google.value > 1.12 * Microsoft.value WITHIN 10 SECONDS",
    "PATTERN check+ c[] WHERE c.type = 'not covered' AND c[i].src = c[i-1].dest WITHIN 1 WEEK SLIDE 1 DAY",
    "PATTERN stock+ s[] WHERE [id] AND s[i].price > 1.05 * s[i-1].price WITHIN 60 MINUTES SLIDE 10 MINUTES",
    "PATTERN a, b+, c   -- contiguous, for probabilistic streams",
    "PATTERN F, F, F @(t(F3) - t(F1) < 5 MINUTES) ; S DEFINE F AS status = 'denied', S AS status = 'success' WHERE [ip]",
    'PATTERN "O_Sent (mail)"; b{2,4} x[] WHERE `O_Sent (mail)`.amount BETWEEN 1 AND 5 AND x[i].v > avg(x[..i-1].v)',
    "PATTERN a; !(b | c); d @(CAST(d.x AS DOUBLE) IN (1.5, 2)) WHERE a.u = $u AND d.u = $u WINDOW [0, 99]",
    "PATTERN x;\n  (a; b?)+ ;\n  y WHERE lower(x.s) LIKE 'a%' OR y.n IS NOT NULL WITHIN 2 HOURS WINDOW ['2020-01-01', '2020-02-01']",
]

VOCAB = [
    "PATTERN", "DEFINE", "WHERE", "WITHIN", "SLIDE", "WINDOW", "SEQ", "AND", "OR", "NOT", "AS", "SELECT",
    "skip-till-any-match", "strict-contiguity", "MINUTES", "EVENTS", "UNITS", "a", "b", "c", "Seq", "i",
    "t", "avg", "count", "cast", "abs", "(", ")", "[", "]", "{", "}", ",", ";", "|", "&", "!", "@", "*",
    "+", "?", ".", "..", "-", "=", "<", ">=", "<>", "'x'", "'", '"', "`", '"q q"', "`b b`", "$v", "$", "0",
    "1", "3", "1.5", "1e400", "99999999999", "--", "/*", "*/", "\n", "\t", "\r\n", "#", "[]", "[i-1]",
    "[..i-1]", "a.x", "b[i].y", "t(a)", "@(", "NULL", "IN", "BETWEEN", "LIKE", "IS", "\\", "é", "\u2028",
]  # fmt: skip


# ---------------------------------------------------------------------------------------------
# The invariant every outcome must satisfy
# ---------------------------------------------------------------------------------------------


def _check_error(err: PatternError, text: str) -> None:
    assert isinstance(err, PatternError)
    assert re.fullmatch(r"CEP-PAT-\d{3}", err.code)
    assert err.line >= 1 and err.column >= 1
    assert 0 <= err.offset <= len(text)
    assert "^" in err.snippet and err.snippet.count("\n") == 1
    rendered = str(err)
    assert rendered.startswith(f"{err.code}: line {err.line}, column {err.column}: ")
    assert pickle.loads(pickle.dumps(err)).line == err.line


def _check_conditions_allowed(query: Query) -> None:
    for cond in query.all_conditions():
        names = {r.name for r in cond.refs}
        for node in cond.expr.walk():
            assert isinstance(node, _ALLOWED_NODES), type(node)
            if isinstance(node, exp.Column):
                assert node.name in names and not node.table


def check_text(text: str) -> None:
    """Parse, validate, print and re-parse ``text``; only PatternError may come out."""
    try:
        query = parse_pattern(text)
    except PatternError as err:
        _check_error(err, text)
        return
    _check_conditions_allowed(query)
    try:
        validate_pattern(query, columns=["x", "y", "type", "ts"], classes=["a", "b", "A"])
    except PatternError as err:
        _check_error(err, text)
    assert query.dump()
    printed = format_query(query)
    again = parse_pattern(printed)
    assert format_query(again) == printed


@FUZZ
@given(st.text(max_size=120))
def test_random_text_never_escapes(text: str) -> None:
    check_text(text)


@FUZZ
@given(st.text(max_size=120))
def test_random_text_after_pattern_never_escapes(text: str) -> None:
    check_text("PATTERN " + text)


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(VOCAB), st.sampled_from([" ", "", "\n"])), max_size=30))
def test_token_soup_never_escapes(items: list[tuple[str, str]]) -> None:
    check_text("PATTERN " + "".join(tok + sep for tok, sep in items))


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 12)))
        op = draw(st.sampled_from(["delete", "insert", "replace", "duplicate", "char"]))
        if op == "delete":
            text = text[:i] + text[j:]
        elif op == "insert":
            text = text[:i] + draw(st.sampled_from(VOCAB)) + text[i:]
        elif op == "replace":
            text = text[:i] + draw(st.sampled_from(VOCAB)) + text[j:]
        elif op == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        else:
            text = text[:i] + draw(st.characters()) + text[i:]
    return text


@FUZZ
@given(mutated())
def test_mutated_valid_patterns_never_escape(text: str) -> None:
    check_text(text)


@settings(max_examples=30, deadline=None)
@given(st.integers(65, 10_000), st.sampled_from(["(", "[", "{", "SEQ(", "!("]))
def test_deep_nesting_is_a_limit_error(n: int, opener: str) -> None:
    text = "PATTERN " + opener * n + "A"
    try:
        parse_pattern(text)
    except PatternLimitError as err:
        _check_error(err, text)
    else:
        raise AssertionError("deep nesting must be rejected")


@settings(max_examples=30, deadline=None)
@given(st.integers(17, 3_000), st.sampled_from(["NOT ", "- ", "+ ", "NOT (", "abs("]))
def test_deep_conditions_are_limit_errors(n: int, prefix: str) -> None:
    text = "PATTERN a; b WHERE a.x = " + prefix * n + "1"
    try:
        parse_pattern(text)
    except PatternError as err:
        _check_error(err, text)
    else:
        raise AssertionError("deep condition must be rejected")


# ---------------------------------------------------------------------------------------------
# Random valid ASTs -> text -> the same AST
# ---------------------------------------------------------------------------------------------

CLASSES = ["A", "B", "Stock", "check", "Seq", "Or", "Where", "O_Sent (mail and online)", "ünï", 'say "hi"']
EXTRA_ALIASES = ["x", "k", "my alias", "And", "Où"]
_PLAIN_UNSAFE = {
    "PATTERN", "DEFINE", "WHERE", "WITHIN", "SLIDE", "WINDOW", "AS", "AND", "OR", "NOT", "IN", "IS", "NULL",
    "TRUE", "FALSE", "BETWEEN", "LIKE", "ILIKE", "SEQ",
}  # fmt: skip


def ref(alias: str) -> str:
    """How a generated condition names ``alias``."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", alias) and alias.upper() not in _PLAIN_UNSAFE:
        return alias
    return "`" + alias.replace("`", "``") + "`"


def _templates(a: str, b: str) -> list[str]:
    ra, rb = ref(a), ref(b)
    return [
        f"{ra}.x > 5",
        f"{ra}.price < {rb}.price",
        f"t({rb}) - t({ra}) < 5 MINUTES",
        f"{ra}.name = 'it''s'",
        f"({ra}.x = 1 OR {rb}.y IS NULL)",
        f"{ra}.v = $v",
        f"{ra}.x BETWEEN 1 AND 5",
        f"lower({ra}.s) LIKE 'a%'",
        f"NOT {ra}.flag",
        f"({rb}.n IN (1, 2, 3) AND {ra}.n <> 0)",
    ]


def _kleene_templates(k: str) -> list[str]:
    rk = ref(k)
    return [f"{rk}[i].x > {rk}[i-1].x", f"{rk}[i].x > avg({rk}[..i-1].x)", f"count({rk}) >= 2", f"{rk}[1].y = 0"]


class _Builder:
    """Draws one valid pattern tree with unique aliases."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw
        self.used: set[str] = set()
        self.n = 0

    def event(self) -> Event:
        cls = self.draw(st.sampled_from(CLASSES))
        if cls not in self.used and self.draw(st.booleans()):
            alias = cls
        else:
            pool = [a for a in EXTRA_ALIASES if a not in self.used]
            self.n += 1
            alias = self.draw(st.sampled_from(pool)) if pool and self.draw(st.booleans()) else f"e{self.n}"
        self.used.add(alias)
        return Event(cls, alias)

    def conditions(self, scope: PatternNode, count: int) -> tuple[Condition, ...]:
        aliases = [e.alias for e in events(scope)]
        iterable = sorted(iterable_aliases(scope))
        out = []
        for _ in range(count):
            if iterable and self.draw(st.booleans()):
                text = self.draw(st.sampled_from(_kleene_templates(self.draw(st.sampled_from(iterable)))))
            else:
                a, b = self.draw(st.sampled_from(aliases)), self.draw(st.sampled_from(aliases))
                text = self.draw(st.sampled_from(_templates(a, b)))
            out.append(parse_condition(text))
        return tuple(out)

    def node(self, depth: int) -> PatternNode:
        kinds = ["event"] if depth == 0 else ["event", "seq", "seq", "and", "or", "kleene", "kleene", "timed"]
        kind = self.draw(st.sampled_from(kinds))
        if kind == "event":
            return self.event()
        if kind == "seq":
            parts = [self._not_a(Seq, self.node(depth - 1)) for _ in range(self.draw(st.integers(2, 3)))]
            if self.draw(st.booleans()):
                operand = self.event() if self.draw(st.booleans()) else Or((self.event(), self.event()))
                parts.insert(self.draw(st.integers(1, len(parts) - 1)), Not(operand))
            links = tuple(self.draw(st.sampled_from([NEXT, FOLLOWED])) for _ in parts[1:])
            return Seq(tuple(parts), links)
        if kind in ("and", "or"):
            cls = And if kind == "and" else Or
            parts = [self._not_a(cls, self.node(depth - 1)) for _ in range(self.draw(st.integers(2, 3)))]
            return cls(tuple(parts))
        if kind == "kleene":
            part = self.node(depth - 1)
            if nullable(part):
                part = self.event()
            lo, hi = self.draw(
                st.sampled_from([(0, None), (1, None), (0, 1), (2, 2), (3, None), (1, 4), (2, 5)])
            )
            if isinstance(part, Event) and (hi is None or hi > 1) and self.draw(st.booleans()):
                part = replace(part, iter_alias=True)
            return Kleene(part, lo, hi)
        part = self.node(depth - 1)
        if isinstance(part, Timed):
            return part
        return Timed(part, self.conditions(part, self.draw(st.integers(1, 2))))

    def _not_a(self, cls: type, node: PatternNode) -> PatternNode:
        # The parser flattens Seq-in-Seq, And-in-And and Or-in-Or; generate what it produces.
        return self.event() if isinstance(node, cls) else node


_SPANS = [Span(100, "EVENTS"), Span(5, "UNITS"), Span(2.5, "UNITS"), Span(10, "SECONDS"), Span(1.5, "HOURS"), Span(1, "WEEKS")]
_SLIDES = {"EVENTS": [Span(10, "EVENTS"), Span(100, "EVENTS")], "UNITS": [Span(1, "UNITS"), Span(0.5, "UNITS")],
           "TIME": [Span(1, "SECONDS"), Span(10, "SECONDS"), Span(250, "MILLISECONDS")]}  # fmt: skip


@st.composite
def valid_queries(draw: st.DrawFn) -> Query:
    builder = _Builder(draw)
    pattern = builder.node(draw(st.integers(0, 3)))
    if nullable(pattern):
        tail = builder.event()
        pattern = Seq(pattern.parts + (tail,), pattern.links + (FOLLOWED,)) if isinstance(pattern, Seq) else Seq((pattern, tail), (NEXT,))
    aliases = [e.alias for e in events(pattern)]
    classes = sorted({e.cls for e in events(pattern)})
    defined = draw(st.lists(st.sampled_from(classes), unique=True, max_size=2))
    defines = tuple(
        Define(cls, parse_condition(text, kind="define", subject=cls))
        for cls in defined
        for text in [draw(st.sampled_from(["status = 'denied'", "amount > 10 AND lower(kind) = 'x'", f"{ref(cls)}.code IN (1, 2)"]))]
    )
    conditions = builder.conditions(pattern, draw(st.integers(0, 3))) if aliases else ()
    policy = draw(st.sampled_from((None,) + POLICIES))
    equivalences = tuple(Equivalence(a) for a in draw(st.lists(st.sampled_from(["id", "ip", "user id"]), max_size=2)))
    within = draw(st.sampled_from([None] + _SPANS))
    slide = None
    if within is not None and draw(st.booleans()):
        slide = draw(st.sampled_from([s for s in _SLIDES[within.kind] if s.magnitude() <= within.magnitude()]))
    window = draw(
        st.sampled_from(
            [None, WindowBounds(0, 99, "POSITION"), WindowBounds(7, 7, "POSITION"),
             WindowBounds("2020-01-01 00:00:00", "2020-01-02", "TIMESTAMP")]
        )
    )  # fmt: skip
    return Query(pattern, defines, conditions, policy, equivalences, within, slide, window)


@ROUND_TRIP
@given(valid_queries())
def test_printed_ast_parses_back_to_the_same_ast(query: Query) -> None:
    text = format_query(query)
    try:
        parsed = parse_pattern(text)
    except PatternError as err:  # pragma: no cover - a failure here is a generator or printer bug
        raise AssertionError(f"generated pattern does not parse:\n{text}\n{err}") from err
    assert parsed == query, text
    assert format_query(parsed) == text


@settings(max_examples=50, deadline=None)
@given(valid_queries())
def test_generated_queries_are_valid_against_their_schema(query: Query) -> None:
    assume(query.pattern is not None)
    columns = ["x", "y", "price", "name", "v", "s", "flag", "n", "status", "amount", "kind", "code", "id", "ip", "user id"]
    validate_pattern(parse_pattern(format_query(query)), columns=columns)


@st.composite
def mutated_generated(draw: st.DrawFn) -> str:
    """Text of a random valid query with a few random edits: reaches deeper code than the seeds."""
    text = format_query(draw(valid_queries()))
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 10)))
        token = draw(st.sampled_from(VOCAB))
        op = draw(st.sampled_from(["delete", "insert", "replace"]))
        if op == "delete":
            text = text[:i] + text[j:]
        elif op == "insert":
            text = text[:i] + token + text[i:]
        else:
            text = text[:i] + token + text[j:]
    return text


@FUZZ
@given(mutated_generated())
def test_mutated_generated_patterns_never_escape(text: str) -> None:
    check_text(text)
