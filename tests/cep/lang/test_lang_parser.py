"""Parser, tokenizer, condition and error-object behaviour, one rule per test."""

from __future__ import annotations

import pickle
import sys

import pytest
from sqlglot import exp

from cep.errors import CepError
from cep.lang import (
    FOLLOWED,
    NEXT,
    AggRef,
    And,
    AttrRef,
    Event,
    Index,
    IterRef,
    Kleene,
    Limits,
    Not,
    Or,
    PatternError,
    PatternLimitError,
    PatternSemanticError,
    PatternSyntaxError,
    Seq,
    Span,
    Timed,
    TsRef,
    VarRef,
    dump,
    parse_condition,
    parse_pattern,
)
from cep.lang.errors import Location
from cep.lang.tokens import tokenize


def pattern(text: str):  # type: ignore[no-untyped-def]
    return parse_pattern(text).pattern


def code_of(text: str, **kwargs: object) -> str:
    with pytest.raises(PatternError) as info:
        parse_pattern(text, **kwargs)  # type: ignore[arg-type]
    return info.value.code


# ---------------------------------------------------------------------------------------------
# Keywords, names, aliases
# ---------------------------------------------------------------------------------------------


def test_keywords_are_case_insensitive() -> None:
    upper = parse_pattern("PATTERN SEQ(a, b) WHERE a.x < b.x WITHIN 5 MINUTES SLIDE 1 MINUTE")
    lower = parse_pattern("pattern seq(a, b) where a.x < b.x within 5 minutes slide 1 minute")
    assert upper == lower


def test_class_names_are_case_sensitive() -> None:
    q = parse_pattern("PATTERN Login; login")
    assert [(e.cls, e.alias) for e in q.pattern.parts] == [("Login", "Login"), ("login", "login")]  # type: ignore[union-attr]


def test_default_alias_is_the_class_name() -> None:
    assert parse_pattern("PATTERN a; b").aliases() == ["a", "b"]


def test_repeated_class_gets_numbered_aliases_in_order() -> None:
    q = parse_pattern("PATTERN F, F, F @(t(F3) - t(F1) < 5 MINUTES) ; S")
    assert q.aliases() == ["F1", "F2", "F3", "S"]


def test_numbering_ignores_explicitly_aliased_occurrences() -> None:
    assert parse_pattern("PATTERN F x; F; F y").aliases() == ["x", "F", "y"]
    assert parse_pattern("PATTERN F; F x; F").aliases() == ["F1", "x", "F2"]


def test_numbering_counts_across_nesting() -> None:
    assert parse_pattern("PATTERN Del; (Microsoft[3] & Del)").aliases() == ["Del1", "Microsoft", "Del2"]


def test_quoted_class_names_with_spaces() -> None:
    q = parse_pattern('PATTERN "O_Sent (mail and online)"; `A "B"` x; "say ""hi"""')
    assert [(e.cls, e.alias) for e in q.pattern.parts] == [  # type: ignore[union-attr]
        ("O_Sent (mail and online)", "O_Sent (mail and online)"),
        ('A "B"', "x"),
        ('say "hi"', 'say "hi"'),
    ]


def test_quoted_alias_is_usable_in_conditions() -> None:
    q = parse_pattern(
        'PATTERN "O_Sent (mail)"; B WHERE `O_Sent (mail)`.amount > 5 AND "O_Sent (mail)".x = B.x'
    )
    assert [sorted(c.aliases) for c in q.conditions] == [["O_Sent (mail)"], ["B", "O_Sent (mail)"]]


def test_operator_words_are_classes_unless_followed_by_paren() -> None:
    q = parse_pattern("PATTERN Seq; And; Or; Not WHERE Or.x = And.y")
    assert [e.cls for e in q.pattern.parts] == ["Seq", "And", "Or", "Not"]  # type: ignore[union-attr]
    assert isinstance(pattern("PATTERN X; SEQ (A, B)"), Seq)


def test_reserved_words_need_quotes_as_class_names() -> None:
    assert code_of("PATTERN A; Where") == "CEP-PAT-106"
    assert pattern('PATTERN A; "Where"').parts[1].cls == "Where"  # type: ignore[union-attr]


def test_alias_directly_after_class() -> None:
    node = pattern("PATTERN Stock s+")
    assert isinstance(node, Kleene) and node.part == Event("Stock", "s")


@pytest.mark.parametrize("text", ["PATTERN check+ c[]", "PATTERN check c[]+", "PATTERN check c+ ", "PATTERN check+ c"])
def test_alias_before_or_after_quantifier(text: str) -> None:
    node = pattern(text)
    assert isinstance(node, Kleene) and (node.part.cls, node.part.alias) == ("check", "c")  # type: ignore[union-attr]
    assert node.part.iter_alias == ("[]" in text)  # type: ignore[union-attr]


def test_iteration_marker_on_the_class_name() -> None:
    node = pattern("PATTERN check[]+")
    assert node == Kleene(Event("check", "check", True), 1, None)


def test_brackets_with_number_are_an_exact_quantifier() -> None:
    assert pattern("PATTERN Microsoft[3]") == Kleene(Event("Microsoft", "Microsoft"), 3, 3)
    assert pattern("PATTERN Stock s[][2]") == Kleene(Event("Stock", "s", True), 2, 2)


# ---------------------------------------------------------------------------------------------
# Operators, links, flattening
# ---------------------------------------------------------------------------------------------


def test_comma_is_next_and_semicolon_is_followed_by() -> None:
    node = pattern("PATTERN a, b; c")
    assert node == Seq((Event("a", "a"), Event("b", "b"), Event("c", "c")), (NEXT, FOLLOWED))


def test_seq_arguments_are_followed_by_and_groups_keep_their_links() -> None:
    node = pattern("PATTERN SEQ((a, b), c)")
    assert node == Seq((Event("a", "a"), Event("b", "b"), Event("c", "c")), (NEXT, FOLLOWED))


def test_nested_sequences_are_flattened() -> None:
    assert pattern("PATTERN a; (b; (c, d))") == pattern("PATTERN a; b; c, d")
    assert pattern("PATTERN SEQ(a, SEQ(b, c))") == pattern("PATTERN a; b; c")


def test_precedence_or_below_and_below_sequence() -> None:
    node = pattern("PATTERN a | b & c; d, e")
    assert isinstance(node, Or)
    right = node.parts[1]
    assert isinstance(right, And)
    assert right.parts[1] == Seq((Event("c", "c"), Event("d", "d"), Event("e", "e")), (FOLLOWED, NEXT))


def test_infix_and_function_forms_are_equal() -> None:
    assert pattern("PATTERN x; (a & b & c)") == pattern("PATTERN x; AND(a, AND(b, c))")
    assert pattern("PATTERN x; (a | b)") == pattern("PATTERN x; OR(a, b)")
    assert pattern("PATTERN x; !a; y") == pattern("PATTERN x; NOT(a); y")


def test_single_argument_functions_and_parentheses_vanish() -> None:
    assert pattern("PATTERN SEQ(a)") == pattern("PATTERN OR((a))") == Event("a", "a")


def test_function_arguments_do_not_split_on_inner_commas() -> None:
    node = pattern("PATTERN SEQ(a, (b, c), d)")
    assert node == Seq(tuple(Event(x, x) for x in "abcd"), (FOLLOWED, NEXT, FOLLOWED))


@pytest.mark.parametrize(
    ("quant", "bounds"),
    [("*", (0, None)), ("+", (1, None)), ("?", (0, 1)), ("{4}", (4, 4)), ("[4]", (4, 4)), ("{2,}", (2, None)), ("{2,5}", (2, 5))],
)
def test_quantifiers(quant: str, bounds: tuple[int, int | None]) -> None:
    node = pattern(f"PATTERN x; a{quant}; y").parts[1]  # type: ignore[union-attr]
    assert isinstance(node, Kleene) and (node.min, node.max) == bounds


def test_quantifier_on_group() -> None:
    node = pattern("PATTERN x; (a; b)+; y").parts[1]  # type: ignore[union-attr]
    assert node == Kleene(Seq((Event("a", "a"), Event("b", "b")), (FOLLOWED,)), 1, None)


def test_at_conditions_bind_to_the_previous_item_and_merge() -> None:
    node = pattern("PATTERN a, b @(a.x < b.x AND b.y > 1) @(t(b) - t(a) < 1 HOUR)")
    assert isinstance(node, Seq)
    timed = node.parts[1]
    assert isinstance(timed, Timed) and timed.part == Event("b", "b")
    assert [c.text for c in timed.conditions] == ["a.x < b.x", "b.y > 1", "t(b) - t(a) < 1 HOUR"]


def test_at_condition_on_kleene_and_group() -> None:
    node = pattern("PATTERN x; (a; b)+ @(a.v > 1); y").parts[1]  # type: ignore[union-attr]
    assert isinstance(node, Timed) and isinstance(node.part, Kleene)


# ---------------------------------------------------------------------------------------------
# Clauses
# ---------------------------------------------------------------------------------------------


def test_define_splits_only_before_name_as() -> None:
    q = parse_pattern(
        "PATTERN F; S DEFINE F AS coalesce(status, 'x') IN ('a', 'b'), S AS CAST(code AS INT) = 1 WHERE [ip]"
    )
    assert [(d.cls, d.condition.text) for d in q.defines] == [
        ("F", "coalesce(status, 'x') IN ('a', 'b')"),
        ("S", "CAST(code AS INT) = 1"),
    ]
    assert [e.attr for e in q.equivalences] == ["ip"]


def test_define_normalises_the_class_prefix() -> None:
    q = parse_pattern("PATTERN F; S DEFINE F AS F.status = 'denied' AND t(F) > 0")
    refs = q.defines[0].condition.refs
    assert refs == (AttrRef(None, "status"), TsRef(None))
    assert q.defines[0].condition.single_event


def test_define_of_a_quoted_class() -> None:
    q = parse_pattern('PATTERN "A b"; C DEFINE "A b" AS x = 1, C AS y = 2')
    assert [d.cls for d in q.defines] == ["A b", "C"]


def test_where_splits_top_level_and_but_not_between() -> None:
    q = parse_pattern("PATTERN a; b WHERE a.x BETWEEN 1 AND 5 AND (b.y = 1 AND b.z = 2) AND a.w NOT BETWEEN 0 AND 1")
    assert [c.text for c in q.conditions] == ["a.x BETWEEN 1 AND 5", "(b.y = 1 AND b.z = 2)", "a.w NOT BETWEEN 0 AND 1"]


def test_top_level_or_keeps_the_where_clause_whole() -> None:
    q = parse_pattern("PATTERN a; b WHERE a.x = 1 AND b.y = 2 OR a.z = 3")
    assert len(q.conditions) == 1
    assert isinstance(q.conditions[0].expr, exp.Or)


def test_policies_and_equivalences() -> None:
    q = parse_pattern("PATTERN a; b WHERE [id, `user id`] AND Skip-Till-Any-Match AND a.x = b.x AND [ip]")
    assert q.policy == "skip-till-any-match"
    assert [e.attr for e in q.equivalences] == ["id", "user id", "ip"]
    assert [c.text for c in q.conditions] == ["a.x = b.x"]


def test_where_ends_at_clause_keywords_but_not_at_attributes_named_like_them() -> None:
    q = parse_pattern("PATTERN a; b WHERE a.window = 1 AND b.`within` = 2 WITHIN 5 EVENTS WINDOW [0, 99]")
    assert len(q.conditions) == 2 and q.within is not None and q.window is not None


@pytest.mark.parametrize(
    ("unit", "micros"),
    [
        ("MICROSECOND", 1),
        ("milliseconds", 1_000),
        ("Second", 1_000_000),
        ("MINUTES", 60_000_000),
        ("hour", 3_600_000_000),
        ("DAYS", 86_400_000_000),
        ("week", 604_800_000_000),
    ],
)
def test_time_units(unit: str, micros: int) -> None:
    q = parse_pattern(f"PATTERN a; b WITHIN 2 {unit}")
    assert q.within is not None and q.within.kind == "TIME" and q.within.microseconds() == 2 * micros


def test_events_and_units_spans() -> None:
    events_q = parse_pattern("PATTERN a; b WITHIN 10 EVENTS SLIDE 5 EVENTS")
    assert events_q.within == Span(10, "EVENTS") and events_q.slide == Span(5, "EVENTS")
    assert events_q.within.microseconds() is None  # type: ignore[union-attr]
    units_q = parse_pattern("PATTERN a; b WITHIN 2.5 UNITS")
    assert units_q.within == Span(2.5, "UNITS") and units_q.within.kind == "UNITS"  # type: ignore[union-attr]


def test_window_positions_and_timestamps() -> None:
    q = parse_pattern("PATTERN a; b WINDOW [10, 20]")
    assert q.window is not None and (q.window.start, q.window.end, q.window.kind) == (10, 20, "POSITION")
    q = parse_pattern("PATTERN a; b WINDOW ['2020-01-01 00:00:00', '2020-01-01T00:00:01']")
    assert q.window is not None and q.window.kind == "TIMESTAMP"
    assert q.window.microseconds() == (1_577_836_800_000_000, 1_577_836_801_000_000)


def test_comments_are_whitespace() -> None:
    q = parse_pattern("PATTERN a, /* inline */ b+, c  -- trailing\n WHERE b.x > 1 -- why\n")
    assert q.aliases() == ["a", "b", "c"] and len(q.conditions) == 1


# ---------------------------------------------------------------------------------------------
# Spans and positions
# ---------------------------------------------------------------------------------------------


def test_spans_index_into_the_original_text() -> None:
    text = "PATTERN Google;\n  Microsoft+\nWHERE Google.value < Microsoft.value"
    q = parse_pattern(text)
    seq = q.pattern
    assert isinstance(seq, Seq)
    assert text[slice(*seq.parts[0].span)] == "Google"
    assert text[slice(*seq.parts[1].span)] == "Microsoft+"
    cond = q.conditions[0]
    assert text[slice(*cond.span)] == cond.text == "Google.value < Microsoft.value"
    assert [text[slice(*r.span)] for r in cond.refs] == ["Google.value", "Microsoft.value"]


def test_errors_on_later_lines_report_that_line() -> None:
    with pytest.raises(PatternSyntaxError) as info:
        parse_pattern("PATTERN a;\r\n  b\r\nWHERE a.x = = 1")
    assert (info.value.line, info.value.column) == (3, 13)


def test_location_handles_tabs_and_line_endings() -> None:
    loc = Location.of("PATTERN\ta;\r\n\tb )", 15, 16)
    assert (loc.line, loc.column) == (2, 4)
    assert loc.snippet == "\tb )\n\t  ^"
    assert Location.of("", 0).snippet == "\n^"


# ---------------------------------------------------------------------------------------------
# Conditions
# ---------------------------------------------------------------------------------------------


def test_condition_reference_kinds() -> None:
    c = parse_condition("b[i].x > avg(b[..i-1].x) AND b[1].y = $v AND t(b[i]) - t(a) < 5 MINUTES AND count(b) > 2")
    kinds = [type(r).__name__ for r in c.refs]
    assert kinds == ["IterRef", "AggRef", "IterRef", "VarRef", "TsRef", "TsRef", "AggRef"]
    assert c.iter_refs == (IterRef("b", "x", Index(True, 0)), IterRef("b", "y", Index(False, 1)))
    assert c.aggregates == (AggRef("avg", "b", "x", Index(True, -1)), AggRef("count", "b", None, None))
    assert c.variables == frozenset({"v"})
    assert c.aliases == frozenset({"a", "b"})
    assert not c.single_event
    assert "INTERVAL '5' MINUTE" in c.sql


def test_every_placeholder_column_maps_to_a_reference() -> None:
    c = parse_condition("s[i].price > 1.05 * s[i-1].price AND `a b`.`c d` = 'x'")
    columns = [col.name for col in c.expr.find_all(exp.Column)]
    assert sorted(columns) == sorted(r.name for r in c.refs)
    assert c.ref('"a b"."c d"') == AttrRef("a b", "c d")


@pytest.mark.parametrize(
    ("text", "single"),
    [
        ("a.x > 1", True),
        ("a.x > 1 AND a.y < a.z", True),
        ("t(a) > 100", True),
        ("lower(a.name) LIKE 'x%'", True),
        ("a.x > b.x", False),
        ("a[i].x > 1", False),
        ("a[1].x > 1", False),
        ("a.x = $v", False),
        ("a.x > avg(a[..i-1].x)", False),
    ],
)
def test_single_event_conditions(text: str, single: bool) -> None:
    assert parse_condition(text).single_event is single


def test_attributes_per_alias() -> None:
    c = parse_condition("a.x > b.y AND b[i].z = avg(b[..i-1].w) AND t(a) > 0")
    assert c.attributes == {"a": frozenset({"x"}), "b": frozenset({"y", "z", "w"})}


def test_time_literals_and_units_in_conditions() -> None:
    assert parse_condition("t(b) - t(a) < 90 SECONDS").sql == "`t(b)` - `t(a)` < INTERVAL '90' SECOND"
    assert parse_condition("t(b) - t(a) < 7 UNITS").sql == "`t(b)` - `t(a)` < 7"


def test_double_quotes_are_strings_in_conditions_and_strings_are_re_escaped() -> None:
    c = parse_condition("""a.x = "it's" AND a.y = 'back\\\\slash' AND a.z = 'q''uote'""")
    values = sorted(lit.this for lit in c.expr.find_all(exp.Literal))
    assert values == ["back\\slash", "it's", "q'uote"]


def test_allowed_sql_parses() -> None:
    c = parse_condition(
        "CAST(a.x AS DECIMAL(10, 2)) >= abs(a.y) AND upper(a.s) ILIKE 'x%' AND a.q IS NOT NULL "
        "AND a.r IN (1, 2, 3) AND NOT a.flag AND length(a.s) % 2 = 1 AND a.n <=> 1 AND -a.m < 0"
    )
    assert c.single_event


@pytest.mark.parametrize(
    "evil",
    [
        "a.x IN (SELECT id FROM users)",
        "a.x = 1; DROP TABLE events",
        "a.x = 1 UNION SELECT * FROM t",
        "EXISTS (a.x)",
        "a.x = reflect('java.lang.Runtime', 'getRuntime')",
        "a.x = java_method('java.lang.System', 'exit', 0)",
        "`java_method`('x') = 1",
        "a.x = 1 AS pwned",
        "a.x = 1 -- comment hides nothing\n OR 1 = 1) OR (1 = 1",
        "a.x = '1' OR ''='",
        "a.x = `sel` (1)",
        "a.x = current_user()",
        "a.x = TRANSFORM(a.y, v -> v)",
        "a.x = (a.y, a.z)",
        "a.x >> 1 = 0",
        "a.x || 'y' = 'z'",
        "a.x = a.y.z",
        "a.x = 1 /* ; DROP TABLE t */ ; DROP TABLE t",
        "CASE WHEN a.x THEN 1 END = 1",
        "a.x = INTERVAL 1 DAY",
    ],
)
def test_injection_attempts_are_rejected(evil: str) -> None:
    with pytest.raises(PatternError):
        parse_pattern(f"PATTERN a; b WHERE {evil}")


def test_disallowed_operator_is_reported_at_the_operator() -> None:
    with pytest.raises(PatternSyntaxError) as info:
        parse_pattern("PATTERN a; b WHERE a.x > > 1")
    assert (info.value.column, info.value.message) == (24, "operator '> >' is not allowed in a condition")


def test_standalone_condition_errors_point_into_the_condition() -> None:
    with pytest.raises(PatternSyntaxError) as info:
        parse_condition("a.x >\n  (b.y + ) = 1")
    assert (info.value.line, info.value.column) == (2, 10)


# ---------------------------------------------------------------------------------------------
# Errors and limits
# ---------------------------------------------------------------------------------------------


def test_pattern_errors_are_cep_errors_with_code_first() -> None:
    with pytest.raises(PatternError) as info:
        parse_pattern("PATTERN a; ")
    err = info.value
    assert isinstance(err, CepError)
    assert str(err).startswith(f"{err.code}: line 1, column 11: ")
    assert err.message in str(err) and err.snippet.split("\n")[1] in str(err)


def test_pattern_errors_survive_pickling() -> None:
    with pytest.raises(PatternError) as info:
        parse_pattern("PATTERN a;\n  b WHERE a.x >")
    err = info.value
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is type(err)
    assert (again.code, again.line, again.column, again.snippet, str(again)) == (
        err.code,
        err.line,
        err.column,
        err.snippet,
        str(err),
    )


@pytest.mark.parametrize("value", [None, b"PATTERN a", 42, ["PATTERN a"]])
def test_non_string_input_is_a_pattern_error(value: object) -> None:
    with pytest.raises(PatternSyntaxError) as info:
        parse_pattern(value)  # type: ignore[arg-type]
    assert info.value.code == "CEP-PAT-100" and info.value.line == 1 and info.value.column == 1


def test_non_string_condition_is_a_pattern_error() -> None:
    with pytest.raises(PatternSyntaxError) as info:
        parse_condition(None)  # type: ignore[arg-type]
    assert info.value.code == "CEP-PAT-100"


def test_ten_thousand_open_parens_is_a_limit_error_not_recursion() -> None:
    with pytest.raises(PatternLimitError) as info:
        parse_pattern("PATTERN " + "(" * 10_000)
    assert info.value.code == "CEP-PAT-002"
    with pytest.raises(PatternLimitError):
        parse_pattern("PATTERN " + "(" * 10_000 + "A" + ")" * 10_000)  # also too long
    with pytest.raises(PatternLimitError) as info:
        parse_pattern("PATTERN " + "(" * 10_000 + "A" + ")" * 10_000, limits=Limits(max_length=10**6))
    assert info.value.code == "CEP-PAT-002"


def test_ten_thousand_negations_is_a_pattern_error_not_recursion() -> None:
    with pytest.raises(PatternError):
        parse_pattern("PATTERN x; " + "!" * 10_000 + "A; y")
    with pytest.raises(PatternError):
        parse_pattern("PATTERN x; y WHERE " + "NOT " * 10_000 + "x.a")
    with pytest.raises(PatternError):
        parse_pattern("PATTERN x; y WHERE x.a = " + "- " * 10_000 + "1")


def test_limits_are_exact() -> None:
    limits = Limits()
    ok_depth = "PATTERN x; " + "(" * 64 + "A" + ")" * 64
    parse_pattern(ok_depth)
    assert code_of("PATTERN x; " + "(" * 65 + "A" + ")" * 65) == "CEP-PAT-002"
    parse_pattern("PATTERN " + "; ".join(f"E{i}" for i in range(limits.max_components)))
    assert code_of("PATTERN " + "; ".join(f"E{i}" for i in range(limits.max_components + 1))) == "CEP-PAT-003"
    text = "PATTERN a; b WHERE a.s = '" + "x" * 10 + "'"
    parse_pattern(text, limits=Limits(max_length=len(text)))
    assert code_of(text, limits=Limits(max_length=len(text) - 1)) == "CEP-PAT-001"
    parse_pattern("PATTERN a{1000}")
    assert code_of("PATTERN a{1001}") == "CEP-PAT-005"


def test_depth_scan_skips_strings_and_comments() -> None:
    parse_pattern("PATTERN a; b WHERE a.s = '" + "(" * 100 + "' -- " + "(" * 100 + "\n AND b.`s` = 'x'")


def test_deepest_allowed_nesting_parses_with_little_stack_left() -> None:
    """Worst-case nesting at the limits must parse even when the caller is already deep."""
    condition = " WHERE " + "NOT (" * 8 + "X.a > 1" + ")" * 8
    worst_cases = [
        "PATTERN X; " + "".join(f"!(A{i} | (B{i} & (C{i}; " for i in range(21)) + "Z" + ")))" * 21 + " ; Y WITHIN 1 HOUR",
        "PATTERN X; " + "(A; " * 60 + "Z" + ")+ @(X.a > 1)" * 60 + "; Y" + condition,
        "PATTERN " + "SEQ(A, " * 63 + "Z" + ")" * 63,
    ]

    def depth() -> int:
        frame, n = sys._getframe(), 0
        while frame is not None:
            frame, n = frame.f_back, n + 1
        return n

    def at_depth(n: int, text: str) -> str:
        if n:
            return at_depth(n - 1, text)
        query = parse_pattern(text)
        return dump(query) + query.to_text()

    # The parser needs about 450 frames at worst; leave it 500 whatever the caller used.
    for text in worst_cases:
        assert at_depth(max(0, sys.getrecursionlimit() - depth() - 500), text)


def test_dump_of_every_node_kind() -> None:
    q = parse_pattern(
        "PATTERN a; (b | c & d); NOT(e); f{2,3} @(f.x > a.x); g WHERE $v = a.v WINDOW ['2020-01-01', '2020-01-02']"
    )
    text = q.dump()
    for word in ("Seq", "Or", "And", "Not", "Kleene min=2 max=3", "Timed", "VarRef $v", "TIMESTAMP"):
        assert word in text


def test_tokenizer_positions() -> None:
    toks = tokenize("a.b[..i-1] $x <=> 'q' `r`")
    assert [(t.kind, t.text) for t in toks] == [
        ("IDENT", "a"),
        ("OP", "."),
        ("IDENT", "b"),
        ("OP", "["),
        ("OP", ".."),
        ("IDENT", "i"),
        ("OP", "-"),
        ("NUMBER", "1"),
        ("OP", "]"),
        ("VAR", "$x"),
        ("OP", "<=>"),
        ("STRING", "'q'"),
        ("QIDENT", "`r`"),
        ("EOF", ""),
    ]


def test_not_node_and_semantic_error_kinds() -> None:
    node = pattern("PATTERN a; !b; c").parts[1]  # type: ignore[union-attr]
    assert node == Not(Event("b", "b"))
    with pytest.raises(PatternSemanticError):
        parse_pattern("PATTERN a; b WHERE c.x = 1")
    assert VarRef("x").name == "$x"
