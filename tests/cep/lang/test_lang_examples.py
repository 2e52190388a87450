"""Every example pattern of DESIGN.md parses, with golden AST dumps (UPDATE_GOLDEN=1 rewrites)."""

from __future__ import annotations

import pytest
from lang_golden import GOLDEN, check_golden, stale_files, updating

from cep.lang import parse_pattern, validate_pattern

# name -> pattern text, exactly as DESIGN.md writes it (sections 3 and 5).
EXAMPLES: dict[str, str] = {
    "01_seq_or_not_events": "PATTERN SEQ(A, OR(B, C), NOT(D), E) WHERE skip-till-next-match WITHIN 100 EVENTS",
    "02_google_microsoft_kleene": (
        "PATTERN Google; Microsoft+ WHERE Google.value > 100 AND Google.value < Microsoft.value WITHIN 5 UNITS"
    ),
    "03_google_microsoft_and": (
        "PATTERN Google; (Microsoft[3] & Del) WHERE Google.value > 1.12 * Microsoft.value WITHIN 10 SECONDS"
    ),
    "04_check_kiting": (
        "PATTERN check+ c[] WHERE c.type = 'not covered' AND c[i].src = c[i-1].dest WITHIN 1 WEEK SLIDE 1 DAY"
    ),
    "05_rising_stock": (
        "PATTERN stock+ s[] WHERE [id] AND s[i].price > 1.05 * s[i-1].price WITHIN 60 MINUTES SLIDE 10 MINUTES"
    ),
    "06_contiguous_with_comment": "PATTERN a, b+, c                                   -- contiguous, for probabilistic streams",
    "07_failed_logins_define": (
        "PATTERN F, F, F @(t(F3) - t(F1) < 5 MINUTES) ; S "
        "DEFINE F AS status = 'denied', S AS status = 'success' WHERE [ip]"
    ),
    "08_sql_login_buy_logout": "PATTERN SEQ(login, buy+, logout) WITHIN 30 MINUTES",
    "09_sql_check_kiting": "PATTERN check+ c[] WHERE c[i].src = c[i-1].dest WITHIN 1 WEEK SLIDE 1 DAY",
    "10_sql_seq_abc": "PATTERN SEQ(A, B, C)",
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_parses_to_golden_ast(name: str) -> None:
    text = EXAMPLES[name]
    query = parse_pattern(text)
    check_golden(GOLDEN / "asts" / f"{name}.txt", f"pattern: {text}\n\n{query.dump()}")


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_round_trips_through_text(name: str) -> None:
    query = parse_pattern(EXAMPLES[name])
    again = parse_pattern(query.to_text())
    assert again == query
    assert again.to_text() == query.to_text()


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_validates_against_a_plausible_schema(name: str) -> None:
    columns = ["type", "ts", "id", "value", "price", "src", "dest", "status", "ip", "user_id"]
    validate_pattern(parse_pattern(EXAMPLES[name]), columns=columns)


def test_no_stale_ast_golden_files() -> None:
    if updating():
        pytest.skip("rewriting golden files")
    assert stale_files(GOLDEN / "asts", {f"{n}.txt" for n in EXAMPLES}) == []


def test_examples_have_the_documented_shape() -> None:
    """Spot checks that make the golden files' meaning explicit."""
    q1 = parse_pattern(EXAMPLES["01_seq_or_not_events"])
    assert q1.policy == "skip-till-next-match"
    assert q1.within is not None and (q1.within.value, q1.within.unit, q1.within.kind) == (100, "EVENTS", "EVENTS")
    assert q1.pattern.links == ("followed",) * 3  # type: ignore[union-attr]

    q3 = parse_pattern(EXAMPLES["03_google_microsoft_and"])
    kleene = q3.pattern.parts[1].parts[0]  # type: ignore[union-attr]
    assert (kleene.min, kleene.max, kleene.part.cls) == (3, 3, "Microsoft")

    q4 = parse_pattern(EXAMPLES["04_check_kiting"])
    assert q4.pattern.part.alias == "c" and q4.pattern.part.iter_alias  # type: ignore[union-attr]
    single, cross = q4.conditions
    assert single.single_event and not cross.single_event
    assert [str(r.index) for r in cross.iter_refs] == ["i", "i-1"]

    q7 = parse_pattern(EXAMPLES["07_failed_logins_define"])
    assert q7.aliases() == ["F1", "F2", "F3", "S"]
    assert [d.cls for d in q7.defines] == ["F", "S"]
    assert [e.attr for e in q7.equivalences] == ["ip"]
