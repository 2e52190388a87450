"""Semantic validation: structure rules (no schema) and schema rules (columns, classes)."""

from __future__ import annotations

import pytest

from cep.lang import PatternError, PatternSemanticError, parse_pattern, validate_pattern
from cep.lang.validate import iterable_aliases, nullable

COLUMNS = ["type", "ts", "id", "price", "Value", "src", "dest", "status", "ip"]


def code_of(text: str, columns: list[str] | None = None, classes: list[str] | None = None) -> str:
    with pytest.raises(PatternError) as info:
        validate_pattern(text, columns=columns, classes=classes)
    return info.value.code


# -- accepted patterns ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "PATTERN a; !b; c",
        "PATTERN a; NOT(b | c); d",
        "PATTERN a; (b; !c; d)+; e",
        "PATTERN a; (b | !c); d",
        "PATTERN a; NOT(b) WITHIN 10 MINUTES",
        "PATTERN a; b* ; c",
        "PATTERN a; (b?; c)+",
        "PATTERN a; b{0,3}",
        "PATTERN a; b WITHIN 1 HOUR SLIDE 1 HOUR",
        "PATTERN a; b WINDOW [3, 3]",
        "PATTERN a; b+ WHERE b[i].price > avg(b[..i-1].price) AND b[1].price > a.price",
        "PATTERN a; (x b)+ WHERE b[i].price > b[i-1].price",
        "PATTERN a; b[3] WHERE b[3].price > b[1].price",
        "PATTERN a; b+ WHERE sum(b.price) > 100 AND count(b) > 2 AND t(b[i]) - t(b[i-1]) < 1 MINUTE",
        "PATTERN a; b+ DEFINE a AS status = 'x' AND ip = $v, b AS price > $p AND b.ip = $v WHERE a.price = $p",
    ],
)
def test_valid_patterns(text: str) -> None:
    assert validate_pattern(text, columns=COLUMNS) is not None


def test_validate_returns_the_query_unchanged() -> None:
    q = parse_pattern("PATTERN a; b")
    assert validate_pattern(q, columns=COLUMNS, classes=["a", "b"]) is q


# -- structure ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("PATTERN a; b WHERE c.x = 1", "CEP-PAT-202"),
        ("PATTERN a; b @(a.x < z.x)", "CEP-PAT-202"),
        ("PATTERN a; b WHERE t(z) > 0", "CEP-PAT-202"),
        ("PATTERN a; b? WHERE b[i].x > 1", "CEP-PAT-204"),
        ("PATTERN a; b{1} WHERE b[i].x > 1", "CEP-PAT-204"),
        ("PATTERN a; b WHERE t(b[i]) > 0", "CEP-PAT-204"),
        ("PATTERN !a; b", "CEP-PAT-205"),
        ("PATTERN (!a | c); b", "CEP-PAT-205"),
        ("PATTERN a; !b", "CEP-PAT-206"),
        ("PATTERN a; b; (c, !d)", "CEP-PAT-206"),
        ("PATTERN a{-2}", "CEP-PAT-207"),
        ("PATTERN a{0,0}; b", "CEP-PAT-207"),
        ("PATTERN a{4,2}; b", "CEP-PAT-207"),
        ("PATTERN (a*)*; b", "CEP-PAT-208"),
        ("PATTERN (a?)+; b", "CEP-PAT-208"),
        ("PATTERN (a*; b?){2}; c", "CEP-PAT-208"),
        ("PATTERN c; (a* | b)+", "CEP-PAT-208"),
        ("PATTERN a; b SLIDE 1 DAY", "CEP-PAT-209"),
        ("PATTERN a; b WITHIN 10 EVENTS SLIDE 11 EVENTS", "CEP-PAT-210"),
        ("PATTERN a; b WITHIN 10 UNITS SLIDE 1 DAY", "CEP-PAT-211"),
        ("PATTERN a; b WITHIN 10 EVENTS SLIDE 0 EVENTS", "CEP-PAT-212"),
        ("PATTERN a; b WINDOW ['2021-01-02', '2021-01-01']", "CEP-PAT-213"),
        ("PATTERN a; b DEFINE c AS x = 1", "CEP-PAT-214"),
        ("PATTERN a; b WHERE strict-contiguity AND strict-contiguity", "CEP-PAT-215"),
        ("PATTERN a; b WHERE x = 1", "CEP-PAT-216"),
        ("PATTERN a; b DEFINE a AS b.x = 1", "CEP-PAT-217"),
        ("PATTERN a; b+ DEFINE b AS b[i].x = 1", "CEP-PAT-217"),
        ("PATTERN a; b+ DEFINE b AS x > avg(b[..i-1].x)", "CEP-PAT-217"),
        ("PATTERN a; b DEFINE b AS x = $v AND a.x = $v", "CEP-PAT-217"),
        ("PATTERN a; b+ DEFINE b AS x = $v AND t(b[i]) > 0", "CEP-PAT-217"),
        ("PATTERN a; b DEFINE a AS x = 1, a AS x = 2", "CEP-PAT-218"),
        ("PATTERN a a[]; b", "CEP-PAT-220"),
        ("PATTERN a; (b c[])?", "CEP-PAT-220"),
        ("PATTERN a; (!b)+; c", "CEP-PAT-221"),
        ("PATTERN a; NOT(NOT(b)); c", "CEP-PAT-221"),
        ("PATTERN a?", "CEP-PAT-222"),
        ("PATTERN a*; b*", "CEP-PAT-222"),
        ("PATTERN a; b WHERE a.x > max(b.x)", "CEP-PAT-223"),
        ("PATTERN a; b WITHIN 0.5 EVENTS", "CEP-PAT-224"),
        ("PATTERN a; b+ WHERE b[0].x > 1", "CEP-PAT-225"),
        ("PATTERN a+; b+ WHERE a[i].x < b[i-1].x", "CEP-PAT-225"),
        ("PATTERN a; b{2,4} WHERE b[5].x > 1", "CEP-PAT-225"),
    ],
)
def test_structure_rules(text: str, code: str) -> None:
    assert code_of(text) == code


def test_structure_errors_come_from_parse_pattern_too() -> None:
    with pytest.raises(PatternSemanticError):
        parse_pattern("PATTERN a; !b")


def test_first_problem_in_text_order_is_reported() -> None:
    # Both the undefined alias (later) and the bad quantifier (earlier) are wrong.
    with pytest.raises(PatternError) as info:
        parse_pattern("PATTERN a{3,1}; b WHERE z.x = 1")
    assert info.value.code == "CEP-PAT-207"


def test_iterable_aliases_and_nullable() -> None:
    q = parse_pattern("PATTERN a; (b; c?)+; d{2}; e?; f{1}")
    assert sorted(iterable_aliases(q.pattern)) == ["b", "c", "d"]
    assert not nullable(q.pattern)
    assert nullable(parse_pattern("PATTERN a; b* WITHIN 1 HOUR").pattern.parts[1])  # type: ignore[union-attr]


# -- schema ---------------------------------------------------------------------------------------


def test_columns_are_matched_case_insensitively() -> None:
    validate_pattern("PATTERN a; b WHERE a.value < b.PRICE AND [IP]", columns=COLUMNS)


def test_unknown_attribute_lists_the_columns() -> None:
    with pytest.raises(PatternSemanticError) as info:
        validate_pattern("PATTERN a; b+ WHERE b[i].prise > avg(b[..i-1].price)", columns=COLUMNS)
    err = info.value
    assert err.code == "CEP-PAT-203"
    assert "type, ts, id, price, Value, src, dest, status, ip" in err.message
    assert "did you mean 'price'?" in err.message
    assert (err.line, err.column) == (1, 21)


@pytest.mark.parametrize(
    "text",
    [
        "PATTERN a; b WHERE a.nope = 1",
        "PATTERN a; b+ WHERE b[i].nope = 1",
        "PATTERN a; b+ WHERE a.x = 1 AND avg(b[..i].nope) > 1",
        "PATTERN a; b WHERE [nope]",
        "PATTERN a; b DEFINE a AS nope = 1",
        "PATTERN a; b @(b.nope > 1)",
    ],
)
def test_unknown_attributes_everywhere(text: str) -> None:
    assert code_of(text, columns=["x", "y"] if "a.x" not in text else ["x"]) == "CEP-PAT-203"


def test_timestamps_via_t_need_no_column() -> None:
    validate_pattern("PATTERN a; b WHERE t(b) - t(a) < 5 MINUTES", columns=["type"])


def test_long_column_lists_are_shortened() -> None:
    columns = [f"c{i}" for i in range(100)]
    with pytest.raises(PatternSemanticError) as info:
        validate_pattern("PATTERN a; b WHERE a.zzz = 1", columns=columns)
    assert "(70 more)" in info.value.message


def test_classes_are_checked_unless_defined() -> None:
    validate_pattern("PATTERN login; F DEFINE F AS status = 'x'", classes=["login"])
    assert code_of("PATTERN login; logut", classes=["login", "logout"]) == "CEP-PAT-219"


def test_unknown_class_caret_covers_quoted_name() -> None:
    with pytest.raises(PatternSemanticError) as info:
        validate_pattern('PATTERN a; "O_Sent (x)" s', classes=["a"])
    assert info.value.snippet.split("\n")[1] == " " * 11 + "^" + "~" * 11


def test_validate_accepts_text() -> None:
    q = validate_pattern("PATTERN a; b WHERE a.price < b.price", columns=COLUMNS)
    assert q.aliases() == ["a", "b"]
