"""The matcher against the brute-force oracle: same set of matches on every input.

Every template of the pool runs under every policy on a fixed sweep of streams (so each is
exercised), then hypothesis draws streams and templates at random. Every forced plan gives
the oracle's answer, and masks computed from the pushed-down conditions change nothing. Random
patterns with ``$x`` inside DEFINE get the same three checks.
"""

from __future__ import annotations

from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from match_cases import (PLANS, POLICIES, TEMPLATES, define_var_patterns, oracle_masks, random_stream,
                         streams, with_masks)

from cep.match import CompiledQuery, EventStream, compile_query, find_matches
from cep.oracles import oracle_matches

PROPERTY = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@lru_cache(maxsize=None)
def compiled(text: str, policy: str) -> CompiledQuery:
    return compile_query(text, policy=policy)


def check(text: str, policy: str, stream: EventStream, plan: str | None = None) -> None:
    expected = set(oracle_matches(text, stream, policy=policy))
    result = find_matches(compiled(text, policy), stream, plan=plan)
    got = result.to_matches()
    assert len(got) == len(set(got)), "duplicate matches"
    assert got == sorted(got, key=lambda m: m.sort_key()), "not in match_id order"
    assert set(got) == expected, (
        f"{text} [{policy}, plan {plan}]\nmissing {sorted(expected - set(got))}\n"
        f"extra {sorted(set(got) - expected)}")


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("text", TEMPLATES)
def test_match_every_template_on_a_sweep_of_streams(text: str, policy: str) -> None:
    for seed in range(5):
        check(text, policy, random_stream(seed * 7 + len(text)))


@pytest.mark.parametrize("policy", POLICIES)
@PROPERTY
@given(stream=streams(), text=st.sampled_from(TEMPLATES))
def test_match_engine_equals_oracle(policy: str, stream: EventStream, text: str) -> None:
    check(text, policy, stream)


@pytest.mark.parametrize("policy", ["skip-till-any-match", "strict-contiguity"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream=streams(), text=st.sampled_from(TEMPLATES))
def test_match_every_plan_equals_oracle(policy: str, stream: EventStream, text: str) -> None:
    expected = set(oracle_matches(text, stream, policy=policy))
    for plan in PLANS:
        got = set(find_matches(compiled(text, policy), stream, plan=plan).to_matches())
        assert got == expected, f"plan {plan}: {text}"


@pytest.mark.parametrize("policy", POLICIES)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream=streams(), text=st.sampled_from(TEMPLATES))
def test_match_masks_give_the_same_matches(policy: str, stream: EventStream, text: str) -> None:
    masked = with_masks(stream, oracle_masks(text, stream, policy))
    plain = find_matches(compiled(text, policy), stream).to_matches()
    assert find_matches(compiled(text, policy), masked).to_matches() == plain


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("text", [
    "PATTERN A; B; C; D WHERE D.v > B.v AND C.v <> A.v",
    "PATTERN A; B; C; D WHERE D.v >= A.v AND C.v > B.v WITHIN 9 UNITS",
    "PATTERN A; B+; C; D WHERE D.v > A.v",
    "PATTERN A; NOT(B); C; D; NOT(B) WITHIN 9 UNITS",
    "PATTERN A; B; C; D WHERE [w]",
])
def test_match_forced_plans_on_longer_patterns(plan: str, text: str) -> None:
    for seed in range(6):
        stream = random_stream(seed, n=14)
        check(text, "skip-till-any-match", stream, plan)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream=streams(min_size=25, max_size=45), text=st.sampled_from(TEMPLATES))
def test_match_skip_till_next_on_longer_streams(stream: EventStream, text: str) -> None:
    # Runs that reject many candidates go through several rounds of the chunked search.
    check(text, "skip-till-next-match", stream)


@pytest.mark.parametrize("policy", POLICIES)
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(stream=streams(), text=define_var_patterns())
def test_match_define_variables_equal_oracle(policy: str, stream: EventStream, text: str) -> None:
    # Random patterns whose DEFINE conditions use $x / $y: the engine's split (class test plus
    # per-alias conditions) gives the oracle's literal reading, with and without pushed masks.
    check(text, policy, stream)
    masked = with_masks(stream, oracle_masks(text, stream, policy))
    assert find_matches(compiled(text, policy), masked).to_matches() == \
        find_matches(compiled(text, policy), stream).to_matches()


@pytest.mark.parametrize("policy", ["skip-till-any-match", "strict-contiguity"])
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(stream=streams(), text=define_var_patterns())
def test_match_define_variables_every_plan(policy: str, stream: EventStream, text: str) -> None:
    for plan in PLANS:
        check(text, policy, stream, plan)
