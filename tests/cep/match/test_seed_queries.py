"""The seed papers' example queries on golden fixtures: oracle and engine give the hand answers.

Fixtures are in ``seed_queries/`` (one JSON file per query, see its loader). For every fixture
and policy the brute-force oracle and the engine (for skip-till-any-match and strict
contiguity also every forced plan kind) must return exactly the hand-derived matches.
"""

from __future__ import annotations

from collections import Counter

import pytest
from seed_queries import POLICIES, IdMatch, SeedFixture, cases, id_matches, load_fixtures

from cep.match import PolicyConflictError, compile_query, find_matches
from cep.match.plan.plans import PLAN_KINDS
from cep.oracles import oracle_matches

CASES = cases()
PLAN_CASES = [(f, policy, plan) for f, policy in CASES
              if policy != "skip-till-next-match" for plan in (None, *PLAN_KINDS)]


def case_id(value: object) -> str:
    """Readable test ids: fixture name, policy, plan."""
    if isinstance(value, SeedFixture):
        return value.name
    return "auto-plan" if value is None else str(value)


def assert_same(got: list[IdMatch], expected: tuple[IdMatch, ...], label: str) -> None:
    """``got`` holds exactly the expected matches, each once."""
    duplicates = [m for m, n in Counter(got).items() if n > 1]
    assert not duplicates, f"{label}: duplicate matches {duplicates}"
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    assert not missing and not extra, f"{label}\nmissing {missing}\nextra {extra}"


def test_every_seed_query_has_a_fixture() -> None:
    """Every example query of DESIGN.md section 3 has a fixture with the exact text."""
    patterns = {f.pattern for f in load_fixtures()}
    design = [
        "PATTERN SEQ(A, OR(B, C), NOT(D), E) WHERE skip-till-next-match WITHIN 100 EVENTS",
        "PATTERN Google; Microsoft+ WHERE Google.value > 100 AND Google.value < Microsoft.value "
        "WITHIN 5 UNITS",
        "PATTERN Google; (Microsoft[3] & Del) WHERE Google.value > 1.12 * Microsoft.value "
        "WITHIN 10 SECONDS",
        "PATTERN check+ c[] WHERE c.type = 'not covered' AND c[i].src = c[i-1].dest "
        "WITHIN 1 WEEK SLIDE 1 DAY",
        "PATTERN stock+ s[] WHERE [id] AND s[i].price > 1.05 * s[i-1].price "
        "WITHIN 60 MINUTES SLIDE 10 MINUTES",
        "PATTERN a, b+, c",
        "PATTERN F, F, F @(t(F3) - t(F1) < 5 MINUTES) ; S DEFINE F AS status = 'denied', "
        "S AS status = 'success' WHERE [ip]",
    ]
    assert [p for p in design if p not in patterns] == []


@pytest.mark.parametrize("fixture", load_fixtures(), ids=case_id)
def test_fixture_is_well_formed(fixture: SeedFixture) -> None:
    """Size, unique ids, a timestamp tie, matches in stream order, every policy accounted for."""
    stream = fixture.event_stream()
    assert 10 <= len(stream) <= 25
    ids = [e.id for e in fixture.events]
    assert len(set(ids)) == len(ids), "event ids must be unique"
    assert len(set(stream.ts.tolist())) < len(stream), "the stream needs a tie in timestamps"
    position = {int(i): p for p, i in enumerate(stream.ids)}
    for policy, matches in fixture.expected.items():
        assert len(set(matches)) == len(matches), f"{policy}: a match is listed twice"
        for match in matches:
            spots = [position[i] for i, _ in match]
            assert spots == sorted(spots) and len(set(spots)) == len(spots), (policy, match)
    if len(fixture.expected) < len(POLICIES):
        assert set(fixture.expected) | set(fixture.conflicting_policies) == set(POLICIES)


@pytest.mark.parametrize(("fixture", "policy"), CASES, ids=case_id)
def test_oracle_gives_the_hand_answer(fixture: SeedFixture, policy: str) -> None:
    """The brute-force oracle returns exactly the hand-derived matches."""
    stream = fixture.event_stream()
    got = id_matches(oracle_matches(fixture.pattern, stream, policy=policy), stream)
    assert_same(got, fixture.expected[policy], f"oracle {fixture.name} [{policy}]")


NEXT_CASES = [c for c in CASES if c[1] == "skip-till-next-match"]


@pytest.mark.parametrize(("fixture", "policy"), NEXT_CASES, ids=case_id)
def test_engine_skip_till_next_gives_the_hand_answer(fixture: SeedFixture, policy: str) -> None:
    """The engine's skip-till-next-match runs return exactly the hand-derived matches."""
    stream = fixture.event_stream()
    result = find_matches(compile_query(fixture.pattern, policy=policy), stream)
    assert_same(id_matches(result.to_matches(), stream), fixture.expected[policy],
                f"engine {fixture.name} [{policy}]")


@pytest.mark.parametrize(("fixture", "policy", "plan"), PLAN_CASES, ids=case_id)
def test_engine_every_plan_gives_the_hand_answer(fixture: SeedFixture, policy: str,
                                                 plan: str | None) -> None:
    """Every plan kind (and the cost model's choice) returns exactly the hand-derived matches."""
    stream = fixture.event_stream()
    result = find_matches(compile_query(fixture.pattern, policy=policy), stream, plan=plan)
    assert_same(id_matches(result.to_matches(), stream), fixture.expected[policy],
                f"engine {fixture.name} [{policy}, plan {plan}]")


@pytest.mark.parametrize("fixture", [f for f in load_fixtures() if f.conflicting_policies],
                         ids=case_id)
def test_policy_in_where_rules_out_the_others(fixture: SeedFixture) -> None:
    """A policy in WHERE conflicts with any other policy argument and applies by default."""
    stream = fixture.event_stream()
    for policy in fixture.conflicting_policies:
        with pytest.raises(PolicyConflictError):
            compile_query(fixture.pattern, policy=policy)
        with pytest.raises(PolicyConflictError):
            oracle_matches(fixture.pattern, stream, policy=policy)
    # Without a policy argument the WHERE keyword decides.
    (only,) = fixture.expected
    default = id_matches(find_matches(compile_query(fixture.pattern), stream).to_matches(), stream)
    assert_same(default, fixture.expected[only], f"{fixture.name} [policy from WHERE]")
