"""Malformed patterns: golden files pin the code, the position and the exact caret snippet.

Each case is parsed (and validated against ``columns`` / ``classes`` when given); the error must
be a PatternError whose string carries everything a SQL caller needs. ``UPDATE_GOLDEN=1``
rewrites ``golden/errors/NN_name.txt``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest
from lang_golden import GOLDEN, check_golden, stale_files, updating

import cep.lang.errors as errors_module
from cep.errors import CepError
from cep.lang import PatternError, PatternLimitError, PatternSemanticError, PatternSyntaxError, parse_pattern
from cep.lang import validate_pattern

COLUMNS = ["type", "ts", "id", "price", "value", "status", "user_id"]


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    columns: tuple[str, ...] | None = None
    classes: tuple[str, ...] | None = None
    shown: str | None = None  # how the golden file shows a huge generated pattern
    kind: type[PatternError] = field(default=PatternError)


CASES: list[Case] = [
    # -- structure of the text --------------------------------------------------------------
    Case("missing_pattern_keyword", "A; B", kind=PatternSyntaxError),
    Case("empty_text", "", kind=PatternSyntaxError),
    Case("nothing_after_pattern", "PATTERN   WHERE A.x > 1", kind=PatternSyntaxError),
    Case("dangling_semicolon", "PATTERN A; B;", kind=PatternSyntaxError),
    Case("dangling_comma_multiline", "PATTERN A,\n  B,\n", kind=PatternSyntaxError),
    Case("missing_separator", "PATTERN A x B", kind=PatternSyntaxError),
    Case("infix_word_or", "PATTERN A OR B", kind=PatternSyntaxError),
    Case("pattern_twice", "PATTERN A; B PATTERN C", kind=PatternSyntaxError),
    Case("reserved_word_as_class", "PATTERN A; Within; B", kind=PatternSyntaxError),
    Case("single_quoted_class", "PATTERN 'A'; B", kind=PatternSyntaxError),
    Case("bad_character", "PATTERN A # B", kind=PatternSyntaxError),
    Case("unterminated_block_comment", "PATTERN A; B /* a note", kind=PatternSyntaxError),
    # -- brackets and quotes ---------------------------------------------------------------
    Case("unclosed_paren", "PATTERN (A; B", kind=PatternSyntaxError),
    Case("unclosed_seq_multiline", "PATTERN SEQ(A,\n  B,\n  C", kind=PatternSyntaxError),
    Case("unknown_unit_line_3", "PATTERN A;\n  B\nWITHIN 5 FORTNIGHTS", kind=PatternSyntaxError),
    Case("unmatched_close_paren", "PATTERN A; B)", kind=PatternSyntaxError),
    Case("mismatched_bracket", "PATTERN (A; B]", kind=PatternSyntaxError),
    Case("unclosed_paren_in_where", "PATTERN A; B WHERE (A.x > 1 WITHIN 5 MINUTES", kind=PatternSyntaxError),
    Case(
        "unterminated_string_line_2",
        "PATTERN A; B\nWHERE A.name = 'abc\nWITHIN 5 MINUTES",
        kind=PatternSyntaxError,
    ),
    Case("unterminated_quoted_class", 'PATTERN "O_Sent (mail; B', kind=PatternSyntaxError),
    Case("unterminated_backtick", "PATTERN A; B WHERE `A.x > 1", kind=PatternSyntaxError),
    # -- operators and quantifiers -----------------------------------------------------------
    Case("empty_seq", "PATTERN SEQ()", kind=PatternSyntaxError),
    Case("empty_group", "PATTERN A; (); B", kind=PatternSyntaxError),
    Case("not_with_two_arguments", "PATTERN A; NOT(B, C); D", kind=PatternSyntaxError),
    Case("empty_braces_quantifier", "PATTERN A{}; B", kind=PatternSyntaxError),
    Case("non_numeric_quantifier", "PATTERN A{x}; B", kind=PatternSyntaxError),
    Case("quantifier_without_lower_bound", "PATTERN A{,3}; B", kind=PatternSyntaxError),
    Case("two_quantifiers", "PATTERN A+*; B", kind=PatternSyntaxError),
    Case("reversed_bounds", "PATTERN A{3,1}; B", kind=PatternSemanticError),
    Case("zero_max_bound", "PATTERN A{0}; B", kind=PatternSemanticError),
    Case("negative_bound", "PATTERN A{-1,2}; B", kind=PatternSemanticError),
    Case("repeat_above_limit", "PATTERN A{5000}; B", kind=PatternLimitError),
    Case("nested_kleene_star_star", "PATTERN (A*)*; B", kind=PatternSemanticError),
    Case("nested_kleene_optional_plus", "PATTERN X;\n  (A?)+; B", kind=PatternSemanticError),
    Case("pattern_matches_empty", "PATTERN A*", kind=PatternSemanticError),
    Case("not_of_not", "PATTERN A; !!B; C", kind=PatternSemanticError),
    Case("quantified_not", "PATTERN A; !B+; C", kind=PatternSemanticError),
    Case("not_at_start", "PATTERN !A; B", kind=PatternSemanticError),
    Case("not_at_end_without_window", "PATTERN A; NOT(B)", kind=PatternSemanticError),
    Case("not_at_end_nested", "PATTERN A; (B; !C) | D", kind=PatternSemanticError),
    # -- aliases -----------------------------------------------------------------------------
    Case("duplicate_explicit_alias", "PATTERN A x; B x", kind=PatternSemanticError),
    Case("automatic_alias_collision", "PATTERN F, F, F1", kind=PatternSemanticError),
    Case("alias_on_group", "PATTERN (A; B)+ x", kind=PatternSyntaxError),
    Case("alias_twice", "PATTERN A x+ y", kind=PatternSyntaxError),
    Case("marker_not_repeated", "PATTERN A a[]; B", kind=PatternSemanticError),
    # -- clauses -------------------------------------------------------------------------------
    Case("clause_out_of_order", "PATTERN A; B WITHIN 5 EVENTS WHERE A.x > 1", kind=PatternSyntaxError),
    Case("clause_twice", "PATTERN A; B WHERE A.x > 1 WHERE B.y > 1", kind=PatternSyntaxError),
    Case("empty_where", "PATTERN A; B WHERE", kind=PatternSyntaxError),
    Case("trailing_and", "PATTERN A; B WHERE A.x > 1 AND\nWITHIN 5 EVENTS", kind=PatternSyntaxError),
    Case("empty_at_condition", "PATTERN A @(); B", kind=PatternSyntaxError),
    Case("unknown_unit", "PATTERN A; B WITHIN 5 FORTNIGHTS", kind=PatternSyntaxError),
    Case("missing_unit", "PATTERN A; B WITHIN 5", kind=PatternSyntaxError),
    Case("huge_number", "PATTERN A; B WITHIN 1e400 SECONDS", kind=PatternSyntaxError),
    Case("zero_within", "PATTERN A; B WITHIN 0 SECONDS", kind=PatternSemanticError),
    Case("negative_within", "PATTERN A; B WITHIN -5 SECONDS", kind=PatternSemanticError),
    Case("fractional_events", "PATTERN A; B WITHIN 2.5 EVENTS", kind=PatternSemanticError),
    Case("slide_without_within", "PATTERN A; B SLIDE 1 DAY", kind=PatternSemanticError),
    Case("slide_larger_than_within", "PATTERN A; B WITHIN 1 HOUR SLIDE 2 HOURS", kind=PatternSemanticError),
    Case("slide_kind_differs", "PATTERN A; B WITHIN 1 HOUR SLIDE 2 EVENTS", kind=PatternSemanticError),
    Case("window_reversed", "PATTERN A; B WINDOW [5, 2]", kind=PatternSemanticError),
    Case("window_negative", "PATTERN A; B WINDOW [-1, 5]", kind=PatternSemanticError),
    Case("window_mixed_kinds", "PATTERN A; B WINDOW [0, '2020-01-01']", kind=PatternSemanticError),
    Case("window_bad_timestamp", "PATTERN A; B WINDOW ['2020-13-45', '2021-01-01']", kind=PatternSyntaxError),
    Case("window_missing_bracket", "PATTERN A; B WINDOW 0, 5", kind=PatternSyntaxError),
    Case("define_unused_class", "PATTERN A; B DEFINE C AS status = 'x'", kind=PatternSemanticError),
    Case("define_twice", "PATTERN F; S DEFINE F AS status = 'a', F AS status = 'b'", kind=PatternSemanticError),
    Case("define_mentions_other_event", "PATTERN F; S DEFINE F AS S.status = 'a'", kind=PatternSemanticError),
    Case("define_missing_as", "PATTERN F; S DEFINE F status = 'a'", kind=PatternSyntaxError),
    # -- WHERE: policies and equivalences ------------------------------------------------------
    Case("two_policies", "PATTERN A; B WHERE skip-till-any-match AND strict-contiguity", kind=PatternSemanticError),
    Case("unknown_policy", "PATTERN A; B WHERE skip-till-first-match", kind=PatternSyntaxError),
    Case("policy_inside_or", "PATTERN A; B WHERE A.x = 1 OR skip-till-any-match", kind=PatternSyntaxError),
    Case("equivalence_inside_or", "PATTERN A; B WHERE A.x > 1 OR B.y < 2 AND [id]", kind=PatternSyntaxError),
    Case("malformed_equivalence", "PATTERN A; B WHERE [id ip]", kind=PatternSyntaxError),
    Case("equivalence_in_at_condition", "PATTERN A ; B @(A.x < B.x AND [id])", kind=PatternSyntaxError),
    # -- conditions: references ------------------------------------------------------------------
    Case("undefined_alias_line_3", "PATTERN a; b\nWHERE a.x > 1\n  AND c.y < 2", kind=PatternSemanticError),
    Case("undefined_alias_wrong_case", "PATTERN Google; Microsoft+ WHERE google.value > 1", kind=PatternSemanticError),
    Case("attribute_without_alias", "PATTERN A; B WHERE price > 5", kind=PatternSemanticError),
    Case("iteration_on_plain_alias", "PATTERN a; b+ WHERE a[i].x > 1", kind=PatternSemanticError),
    Case("aggregate_on_plain_alias", "PATTERN a; b WHERE a.x > avg(b[..i-1].x)", kind=PatternSemanticError),
    Case("aggregate_without_range", "PATTERN a; b+ WHERE a.x > avg(b[i].x)", kind=PatternSyntaxError),
    Case("iteration_lookahead", "PATTERN a; b+ WHERE b[i+1].x > 1", kind=PatternSyntaxError),
    Case("iteration_index_zero", "PATTERN a; b+ WHERE b[0].x > 1", kind=PatternSemanticError),
    Case("iteration_index_beyond_count", "PATTERN a; b[3] WHERE b[4].x > 1", kind=PatternSemanticError),
    Case("two_iteration_variables", "PATTERN a+; b+ WHERE a[i].x = b[i].x", kind=PatternSemanticError),
    Case("range_outside_aggregate", "PATTERN a; b+ WHERE b[..i].x > 1", kind=PatternSyntaxError),
    Case("nested_field", "PATTERN A; B WHERE A.addr.city = 'x'", kind=PatternSyntaxError),
    Case("bare_dollar", "PATTERN A; B WHERE A.x = $", kind=PatternSyntaxError),
    Case("events_unit_in_condition", "PATTERN A; B @(t(B) - t(A) < 5 EVENTS)", kind=PatternSyntaxError),
    # -- conditions: SQL level (positions map back into the original text) -------------------------
    Case("sql_error_on_line_2", "PATTERN A; B\nWHERE A.x > 1 AND B.y = = 2", kind=PatternSyntaxError),
    Case("sql_between_missing_high", "PATTERN A; B WHERE A.x BETWEEN 1 WITHIN 5 EVENTS", kind=PatternSyntaxError),
    Case("sql_missing_operand", "PATTERN A; B WHERE A.x >\n  WITHIN 5 EVENTS", kind=PatternSyntaxError),
    Case("sql_trailing_alias", "PATTERN A; B WHERE A.x = 1 B.y", kind=PatternSyntaxError),
    Case("sql_bad_cast_type", "PATTERN A; B WHERE CAST(A.x AS FOO) > 1", kind=PatternSyntaxError),
    Case("not_boolean", "PATTERN A; B WHERE A.x + 1", kind=PatternSyntaxError),
    Case("unexpected_pipe_in_condition", "PATTERN A; B WHERE A.x = 1 | B.y = 2", kind=PatternSyntaxError),
    # -- conditions: forbidden SQL -----------------------------------------------------------------
    Case("forbidden_subquery", "PATTERN A; B WHERE A.x IN (SELECT id FROM t)", kind=PatternSyntaxError),
    Case("forbidden_statement_after_semicolon", "PATTERN A; B WHERE A.x > 1; DROP TABLE x", kind=PatternSyntaxError),
    Case("forbidden_function", "PATTERN A; B WHERE A.x = reflect('java.lang.Runtime', 'exec', 'ls')", kind=PatternSyntaxError),
    Case("forbidden_alias_as", "PATTERN A; B WHERE A.x = 1 AS y", kind=PatternSyntaxError),
    Case("forbidden_case", "PATTERN A; B WHERE CASE WHEN A.x THEN 1 END = 1", kind=PatternSyntaxError),
    Case("forbidden_quoted_function", "PATTERN A; B WHERE `java_method`(A.x) = 1", kind=PatternSyntaxError),
    # -- schema -------------------------------------------------------------------------------------
    Case("unknown_column", "PATTERN a; b WHERE a.prce < b.price", columns=tuple(COLUMNS), kind=PatternSemanticError),
    Case(
        "unknown_column_multiline_iteration",
        "PATTERN check+ c[]\nWHERE c[i].src = c[i-1].dest",
        columns=tuple(COLUMNS),
        kind=PatternSemanticError,
    ),
    Case("unknown_equivalence_column", "PATTERN a; b WHERE [user]", columns=tuple(COLUMNS), kind=PatternSemanticError),
    Case("unknown_class", "PATTERN login; buy+; logut", classes=("login", "buy", "logout"), kind=PatternSemanticError),
    # -- limits -----------------------------------------------------------------------------------
    Case(
        "text_too_long",
        "PATTERN " + "; ".join(["Abc"] * 4000),
        shown="PATTERN Abc; Abc; ... (4000 times, 19998 characters)",
        kind=PatternLimitError,
    ),
    Case("nesting_too_deep", "PATTERN " + "(" * 65 + "A" + ")" * 65, kind=PatternLimitError),
    Case(
        "ten_thousand_open_parens",
        "PATTERN " + "(" * 10_000,
        shown="PATTERN ((((... (10000 '(')",
        kind=PatternLimitError,
    ),
    Case(
        "too_many_components",
        "PATTERN " + "; ".join(f"E{i}" for i in range(300)),
        shown="PATTERN E0; E1; ...; E299",
        kind=PatternLimitError,
    ),
    Case("condition_too_deep", "PATTERN A; B WHERE " + "NOT " * 17 + "A.flag", kind=PatternLimitError),
    # -- late additions (appended so that earlier golden file numbers stay stable) ----------------
    Case("junk_after_clause", "PATTERN A; B WITHIN 5 MINUTES 5", kind=PatternSyntaxError),
    Case("junk_after_window_multiline", "PATTERN A; B\nWINDOW [0, 9]\n  extra", kind=PatternSyntaxError),
    # $x is allowed in DEFINE; another event next to it is still CEP-PAT-217.
    Case("define_variable_and_other_event", "PATTERN F; S DEFINE F AS ip = $x AND S.ip = $x",
         kind=PatternSemanticError),
    # Strings and LIKE patterns as Spark reads them (cep.lang.strings, cep.lang.like).
    Case("escape_no_character", "PATTERN A; B WHERE A.status = 'x\\uD800'", kind=PatternSyntaxError),
    Case("like_escape_before_letter", "PATTERN A; B\nWHERE A.status LIKE 'a\\\\b%'",
         kind=PatternSyntaxError),
    Case("double_quoted_backslash", 'PATTERN A; B WHERE A.status = "a\\tb"', kind=PatternSyntaxError),
    # 1,000 chained operators reached a RecursionError in the engine before the limit (issue 21).
    Case(
        "condition_too_many_operators",
        "PATTERN A; B WHERE A.price" + " + A.price" * 1000 + " > 1",
        shown="PATTERN A; B WHERE A.price + A.price + ... (1000 times) > 1",
        kind=PatternLimitError,
    ),
]

assert len({c.name for c in CASES}) == len(CASES), "case names must be unique"


def _file_name(index: int, case: Case) -> str:
    return f"{index + 1:03d}_{case.name}.txt"


def _raise(case: Case) -> PatternError:
    with pytest.raises(PatternError) as info:
        query = parse_pattern(case.text)
        validate_pattern(
            query,
            columns=list(case.columns) if case.columns is not None else None,
            classes=list(case.classes) if case.classes is not None else None,
        )
    return info.value


def _render(case: Case, err: PatternError) -> str:
    lines = ["pattern:", case.shown if case.shown is not None else case.text, ""]
    if case.columns is not None:
        lines.append(f"columns: {', '.join(case.columns)}")
    if case.classes is not None:
        lines.append(f"classes: {', '.join(case.classes)}")
    lines += [
        f"error: {type(err).__name__}",
        f"code: {err.code}",
        f"line: {err.line}",
        f"column: {err.column}",
        "",
        str(err),
    ]
    return "\n".join(lines)


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c.name for c in CASES])
def test_malformed_pattern_matches_golden_error(index: int) -> None:
    case = CASES[index]
    err = _raise(case)
    assert isinstance(err, case.kind), f"expected {case.kind.__name__}, got {type(err).__name__}: {err}"
    check_golden(GOLDEN / "errors" / _file_name(index, case), _render(case, err))


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c.name for c in CASES])
def test_error_string_carries_everything(index: int) -> None:
    case = CASES[index]
    err = _raise(case)
    text = str(err)
    assert isinstance(err, CepError)
    assert text.startswith(f"{err.code}: line {err.line}, column {err.column}: {err.message}")
    for snippet_line in err.snippet.split("\n"):
        assert snippet_line in text
    assert err.line >= 1 and err.column >= 1
    caret = err.snippet.split("\n")[1]
    assert re.fullmatch(r"[ \t]*\^~*", caret), caret
    # The caret sits under the reported column (snippets of long lines are windowed).
    source_line = case.text.split("\n")[err.line - 1]
    if len(source_line) <= 100:
        assert err.snippet.split("\n")[0] == source_line
        assert caret.index("^") == err.column - 1


def test_no_stale_error_golden_files() -> None:
    if updating():
        pytest.skip("rewriting golden files")
    assert stale_files(GOLDEN / "errors", {_file_name(i, c) for i, c in enumerate(CASES)}) == []


def test_at_least_thirty_cases_and_multiline_ones() -> None:
    assert len(CASES) >= 30
    assert sum(1 for c in CASES if "\n" in c.text) >= 5


def _all_codes() -> set[str]:
    return {v for k, v in vars(errors_module).items() if k.startswith("E_") and isinstance(v, str)}


def test_every_error_code_is_documented_in_the_table() -> None:
    doc = errors_module.__doc__ or ""
    table = set(re.findall(r"^(CEP-PAT-\d{3})\s", doc, flags=re.MULTILINE))
    assert table == _all_codes()


def test_every_error_code_is_exercised() -> None:
    """Every code but the non-string one (tested in test_lang_parser) has a golden case."""
    seen = {_raise(c).code for c in CASES}
    assert _all_codes() - seen == {"CEP-PAT-100"}
