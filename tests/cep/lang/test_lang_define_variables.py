"""Join variables inside DEFINE: parsing, validation, printing, and the split the matchers use."""

from __future__ import annotations

import pytest

from cep.lang import AttrRef, PatternSemanticError, TsRef, VarRef, parse_pattern, validate_pattern
from cep.lang.rewrite import conjuncts, on_alias, split_define

QUOTE_TRADE = ("PATTERN a; b DEFINE a AS type = 'quote' AND symbol = $s, "
               "b AS type = 'trade' AND symbol = $s")


def test_define_with_a_variable_parses() -> None:
    q = parse_pattern(QUOTE_TRADE)
    a, b = (d.condition for d in q.defines)
    assert a.refs == (AttrRef(None, "type"), AttrRef(None, "symbol"), VarRef("s"))
    assert a.variables == frozenset({"s"}) and b.variables == frozenset({"s"})
    assert a.sql == "`type` = 'quote' AND `symbol` = `$s`"
    # A variable makes the condition read more than one event: never a single-event filter.
    assert not a.single_event and a.aliases == frozenset()


def test_define_with_a_variable_round_trips_through_text() -> None:
    q = parse_pattern(QUOTE_TRADE)
    assert q.to_text() == QUOTE_TRADE
    assert parse_pattern(q.to_text()) == q
    assert "ref VarRef $s" in q.dump()


def test_variable_spans_point_into_the_query() -> None:
    q = parse_pattern(QUOTE_TRADE)
    (var,) = [r for r in q.defines[1].condition.refs if isinstance(r, VarRef)]
    assert QUOTE_TRADE[var.span[0]:var.span[1]] == "$s"


@pytest.mark.parametrize("text", [
    "PATTERN F; S DEFINE F AS ip = $x",
    "PATTERN F; S DEFINE F AS $x = ip",
    "PATTERN F; S DEFINE F AS F.ip = $x AND t(F) > $t",
    "PATTERN F+; S DEFINE F AS status = 'denied' AND (ip = $x OR $x IS NULL)",
    "PATTERN F; NOT(G); S DEFINE G AS ip = $x, S AS ip = $x WHERE F.ip = $x WITHIN 5 MINUTES",
    "PATTERN F, F, F @(t(F3) - t(F1) < 5 MINUTES); S DEFINE F AS ip = $x AND status = 'denied'",
])
def test_variables_are_accepted_anywhere_in_a_define(text: str) -> None:
    q = validate_pattern(text, columns=["type", "ts", "id", "ip", "status"])
    assert any(d.condition.variables for d in q.defines)


@pytest.mark.parametrize(("text", "column"), [
    # Still CEP-PAT-217: another event, an iteration or an aggregate next to the variable.
    ("PATTERN F; S DEFINE F AS ip = $x AND S.ip = $x", 38),
    ("PATTERN F+; S DEFINE F AS F[i].ip = $x", 27),
    ("PATTERN F+; S DEFINE F AS ip = $x AND ip > avg(F[..i-1].ip)", 44),
])
def test_define_scope_rules_still_hold_with_variables(text: str, column: int) -> None:
    with pytest.raises(PatternSemanticError) as info:
        parse_pattern(text)
    assert info.value.code == "CEP-PAT-217"
    assert (info.value.line, info.value.column) == (1, column)
    assert "^" in str(info.value)


def test_unknown_attribute_beside_a_variable_is_reported() -> None:
    with pytest.raises(PatternSemanticError) as info:
        validate_pattern("PATTERN a; b DEFINE b AS symbl = $s", columns=["type", "ts", "symbol"])
    assert info.value.code == "CEP-PAT-203" and "did you mean 'symbol'?" in info.value.message


# -- the split the matchers use (cep/lang/rewrite.py) ---------------------------------------------


def test_conjuncts_split_top_level_and_only() -> None:
    q = parse_pattern("PATTERN F; S DEFINE F AS (a = 1 AND b = $x) AND (c = 2 OR d = $y) AND e BETWEEN 1 AND 2")
    parts = conjuncts(q.defines[0].condition)
    assert [p.text for p in parts] == ["a = 1", "b = $x", "c = 2 OR d = $y", "e BETWEEN 1 AND 2"]
    assert [sorted(p.variables) for p in parts] == [[], ["x"], ["y"], []]


def test_split_define_without_variables_is_the_identity() -> None:
    cond = parse_pattern("PATTERN F; S DEFINE F AS a = 1 AND b = 2").defines[0].condition
    static, variable = split_define(cond)
    assert static is cond and variable == ()


def test_split_define_keeps_the_variable_free_conjuncts_as_the_class_test() -> None:
    cond = parse_pattern("PATTERN F; S DEFINE F AS a = 1 AND b = $x AND c > 2").defines[0].condition
    static, variable = split_define(cond)
    assert static.sql == "`a` = 1 AND `c` > 2" and static.single_event
    assert [v.text for v in variable] == ["b = $x"]


def test_split_define_of_variables_only_is_true() -> None:
    cond = parse_pattern("PATTERN F; S DEFINE F AS b = $x OR c = 1").defines[0].condition
    static, variable = split_define(cond)
    assert static.sql == "TRUE" and static.refs == ()
    assert [v.text for v in variable] == ["b = $x OR c = 1"]


def test_on_alias_reads_the_defined_event_as_the_alias() -> None:
    cond = parse_pattern("PATTERN F, F; S DEFINE F AS t(F) - $t < 5 AND ip = $x").defines[0].condition
    _, variable = split_define(cond)
    moved = [on_alias(v, "F2") for v in variable]
    assert [m.sql for m in moved] == ["`t(F2)` - `$t` < 5", "`F2.ip` = `$x`"]
    assert [m.text for m in moved] == ["t(F2) - $t < 5", "F2.ip = $x"]
    assert all(m.aliases == frozenset({"F2"}) for m in moved)
    assert moved[0].refs == (TsRef("F2"), VarRef("t"))


def test_on_alias_of_a_variable_only_conjunct_still_mentions_the_alias() -> None:
    # $x = 1 constrains a match only where the alias binds an event.
    cond = parse_pattern("PATTERN F; S DEFINE F AS $x = 1").defines[0].condition
    moved = on_alias(cond, "F")
    assert moved.aliases == frozenset({"F"}) and moved.sql == "`$x` = 1"
    assert moved.refs == (VarRef("x"), TsRef("F"))
