"""Plan switching within a partition (``cep/match/columnar/spans.py``): the answer never changes.

Under a window the engine cuts a partition into spans of start positions and plans each on
its own sample. Cut into spans of 2-5 events (so every match crosses span borders somewhere),
every windowed template gives the oracle's answer under skip-till-any-match, strict contiguity
and FAEM's grouped policy; on a stream whose mix of classes changes halfway, explain shows
two different plans and the matches equal those of one plan.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from match_cases import TEMPLATES, random_stream, streams

from cep.match import EventStream, compile_query, explain, find_matches
from cep.oracles import oracle_matches

WINDOWED = [t for t in TEMPLATES if " WITHIN " in t]
GROUPED = ["PATTERN A; B+; C WITHIN 6 UNITS", "PATTERN AND(A, B+) WITHIN 4 EVENTS",
           "PATTERN B*; C WHERE C.v >= B.v WITHIN 5 UNITS", "PATTERN A; B{2}; C WITHIN 7 UNITS"]
CASES = [(t, p) for t in WINDOWED for p in ("skip-till-any-match", "strict-contiguity")] + \
    [(t, "skip-till-any-match-grouped") for t in GROUPED]


def check(text: str, policy: str, stream: EventStream, every: int) -> None:
    cq = compile_query(text, policy=policy)
    got = find_matches(cq, stream, switch_every=every).to_matches()
    expected = oracle_matches(text, stream, policy=policy)
    assert got == expected, f"{text} [{policy}, spans of {every}]\ngot {got}\noracle {expected}"


@pytest.mark.parametrize(("text", "policy"), CASES)
def test_spans_on_a_sweep_of_streams(text: str, policy: str) -> None:
    for seed in range(4):
        check(text, policy, random_stream(seed * 11 + len(text)), 2 + seed)


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(stream=streams(), case=st.sampled_from(CASES), every=st.integers(1, 6))
def test_spans_equal_the_oracle(stream: EventStream, case: tuple[str, str], every: int) -> None:
    check(*case, stream, every)


def test_the_plan_switches_when_the_mix_changes() -> None:
    rng = np.random.default_rng(3)
    n = 4000
    first = rng.choice(list("AAAABCDx"), n)  # the first half is full of A
    second = rng.choice(list("ABCCCCDx"), n)  # the second half of C
    types = np.where(np.arange(n) < n // 2, first, second).tolist()
    stream = EventStream.from_columns(ids=range(n), ts=range(n), types=types)
    cq = compile_query("PATTERN A; B; C; D WITHIN 6 EVENTS", policy="skip-till-any-match")
    text = explain(cq, stream, switch_every=1000)
    line = next(x for x in text.splitlines() if "plan switching" in x)
    assert "4 spans of 1000 start positions" in line
    runs = line.split("own sample: ")[1].split("; ")
    assert runs[0].endswith("for starts 0..999") and runs[-1].endswith("for starts 2000..3999")
    assert runs[0].split()[0] != runs[-1].split()[0], line  # A-heavy and C-heavy differ
    switched = find_matches(cq, stream, switch_every=1000).to_matches()
    assert switched and switched == find_matches(cq, stream, switch_every=None).to_matches()
    assert "plan switching" not in explain(cq, stream, switch_every=None)
