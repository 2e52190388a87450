"""FAEM's grouped Kleene closure (``skip-till-any-match-grouped``): the paper's walk-throughs,
the limits, and the engine against the oracle.

Behravesh et al. (seed 001): Fig. 3 (conjunction ``G & M+`` over ``m1 m2 g3 g4 m5 g6 m7``,
window of 5 events), Fig. 4 / Algorithm 3 (Query 3 with ``Microsoft[3]``: every 3 of the
group, after ``d12`` dropped ``b3``), Fig. 5 (a later constraint drops one closure event, not
the composite).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from match_cases import random_stream, streams

from cep.match import (EventStream, MatchLimitError, MatchLimits, UnsupportedPatternError,
                       compile_query, explain, find_matches)
from cep.oracles import oracle_matches

GROUPED = "skip-till-any-match-grouped"


def matches(text: str, stream: EventStream) -> list[tuple[tuple[int, ...], tuple[str, ...]]]:
    found = find_matches(compile_query(text, policy=GROUPED), stream).to_matches()
    expected = oracle_matches(text, stream, policy=GROUPED)
    assert found == expected, f"{text}\nengine {found}\noracle {expected}"
    return [(m.positions, m.variables) for m in found]


def test_figure_3_conjunction_walk_through() -> None:
    # m1 m2 g3 g4 m5 g6 m7 at positions 0..6; "WITHIN 5 EVENTS": positions differ by < 5.
    stream = EventStream.from_columns(ids=range(7), ts=range(7), types=list("MMGGMGM"))
    found = matches("PATTERN AND(G, M+) WITHIN 5 EVENTS", stream)
    # The paper's buffer G & M+ after m7: m1m2g3, m1m2g4, m2m5g6 (m1 left the window),
    # g3m5m7 and g4m5m7 (g3m5, g4m5 grown by m7), g6m7.
    assert [p for p, _ in found] == [(0, 1, 2), (0, 1, 3), (1, 4, 5), (2, 4, 6), (3, 4, 6),
                                     (5, 6)]
    assert found[3][1] == ("G", "M[1]", "M[2]")
    # One composite per G and side: never more composites than events (6 against any-match's 16).
    any_match = oracle_matches("PATTERN AND(G, M+) WITHIN 5 EVENTS", stream,
                               policy="skip-till-any-match")
    assert len(any_match) == 16


def test_query_1_one_composite_per_google_event() -> None:
    # Query 1: Google; Microsoft+ with Google.value > 100 and Google.value < Microsoft.value.
    types = list("GMMGMM")
    value = [120, 130, 90, 150, 160, 125]
    stream = EventStream.from_columns(ids=range(6), ts=range(6), types=types,
                                      attrs={"value": value})
    found = matches("PATTERN G; M+ WHERE G.value > 100 AND G.value < M.value WITHIN 5 UNITS",
                    stream)
    # g0 (120): m1 130 and m4 160 (m2 90 fails; m5 is 5 units on, outside the window);
    # g3 (150): m4 only (m5 125 fails).
    assert [p for p, _ in found] == [(0, 1, 4), (3, 4)]


def test_figure_4_kleene_num_every_three_of_the_group() -> None:
    # Query 3 with Microsoft[3]: A = Google, B = Microsoft, C = Del, D = Intel (Fig. 4).
    # a2 b3 b4 x5 b6 b7 b8 b9 c10 x11 d12 with Intel.value > Microsoft.value: b3 is too
    # expensive for d12, so only b3 leaves the composite a2 b4 b6 b7 b8 b9 c10 d12.
    types = list("xxABBxBBBBCxD")
    value = [0, 0, 1, 50, 5, 0, 6, 7, 8, 9, 1, 0, 20]
    stream = EventStream.from_columns(ids=range(13), ts=range(13), types=types,
                                      attrs={"value": value})
    found = matches("PATTERN A; B{3}; C; D WHERE D.value > B.value WITHIN 200 UNITS", stream)
    groups = {p[1:4] for p, _ in found}
    assert len(found) == 10 and all(p[0] == 2 and p[4:] == (10, 12) for p, _ in found)
    assert groups == {(4, 6, 7), (4, 6, 8), (4, 6, 9), (4, 7, 8), (4, 7, 9), (4, 8, 9),
                      (6, 7, 8), (6, 7, 9), (6, 8, 9), (7, 8, 9)}
    # The same closure written + gives the whole group once.
    plus = matches("PATTERN A; B+; C; D WHERE D.value > B.value WITHIN 200 UNITS", stream)
    assert [p for p, _ in plus] == [(2, 4, 6, 7, 8, 9, 10, 12)]


def test_figure_5_a_later_constraint_drops_one_closure_event() -> None:
    # Fig. 5's shape: g m m m d then i with I.value > M.value. The i (14) is below one M (16):
    # ZStream drops the whole composite; FAEM drops that M only (m 12 and m 13 stay).
    types = list("xGMxxMMDI")
    value = [0, 12, 16, 0, 0, 12, 13, 18, 14]
    stream = EventStream.from_columns(ids=range(9), ts=range(9), types=types,
                                      attrs={"value": value})
    found = matches("PATTERN G; M*; D; I WHERE I.value > M.value", stream)
    assert [p for p, _ in found] == [(1, 5, 6, 7, 8)]


def test_combinations_are_counted_before_they_are_built() -> None:
    stream = EventStream.from_columns(ids=range(12), ts=range(12), types=list("ABBBBBBBBBBC"))
    cq = compile_query("PATTERN A; B{3}; C", policy=GROUPED, limits=MatchLimits(max_matches=100))
    with pytest.raises(MatchLimitError, match="120 matches, more than max_matches=100"):
        find_matches(cq, stream)  # C(10, 3) = 120


def test_the_match_limit_counts_composites_not_engine_rows() -> None:
    # 50 closure events: 50 any-match rows, one composite.
    stream = EventStream.from_columns(ids=range(52), ts=range(52), types=["A"] + ["B"] * 50 + ["C"])
    cq = compile_query("PATTERN A; B+; C", policy=GROUPED, limits=MatchLimits(max_matches=10))
    assert [len(m.positions) for m in find_matches(cq, stream).to_matches()] == [52]


def test_star_with_no_qualifying_event_is_the_single_events_alone() -> None:
    stream = EventStream.from_columns(ids=range(4), ts=range(4), types=list("ABCB"),
                                      attrs={"v": [5, 1, 0, 9]})
    found = matches("PATTERN A; B*; C WHERE B.v > A.v", stream)
    assert [p for p, _ in found] == [(0, 2)]  # b1 (1 < 5) does not qualify


@pytest.mark.parametrize("text", [
    "PATTERN G; M+; D+", "PATTERN M+; G; D+", "PATTERN M+", "PATTERN G, M+",
    "PATTERN G; M{1,3}", "PATTERN G; NOT(X); M+", "PATTERN G; M+ WHERE M[i].v > M[i-1].v",
    "PATTERN G; M+ WHERE avg(M.v) > 1", "PATTERN G; M+; D; N+ WHERE M.v = N.v",
    "PATTERN G; M+ DEFINE M AS v = $x"])
def test_shapes_without_one_group_are_refused_with_a_position(text: str) -> None:
    with pytest.raises(UnsupportedPatternError) as caught:
        compile_query(text, policy=GROUPED)
    assert caught.value.code == "CEP-MATCH-002" and caught.value.line == 1
    with pytest.raises(UnsupportedPatternError):
        oracle_matches(text, random_stream(1), policy=GROUPED)


def test_explain_names_the_grouping() -> None:
    text = explain(compile_query("PATTERN A; B*; C", policy=GROUPED))
    assert "alternative 1: A; B; C\n  grouped (FAEM): every qualifying event of B (at least 1)" \
        in text
    assert "alternative 2: A; C\n  grouped (FAEM): no closure here; kept only where" in text


TEMPLATES = [
    "PATTERN A; B+; C", "PATTERN A; B*; C", "PATTERN B+; C", "PATTERN A; B+",
    "PATTERN AND(A, B+)", "PATTERN A; B{2}; C", "PATTERN A; B+; C; D*",
    "PATTERN OR(A, D); B+; C", "PATTERN A; OR(B, D)+; C",
    "PATTERN A; B+; C WHERE B.v > A.v", "PATTERN A; B*; C WHERE C.v >= B.v AND A.w = 1",
    "PATTERN B+; C WITHIN 4 EVENTS", "PATTERN A; B+ WITHIN 5 UNITS",
    "PATTERN A; B{2,}; C WHERE B.v <> 2", "PATTERN AND(A, B*) WITHIN 3 EVENTS",
    "PATTERN A; B+; C WHERE [w]",
]


@pytest.mark.parametrize("text", TEMPLATES)
def test_every_template_on_a_sweep_of_streams(text: str) -> None:
    for seed in range(6):
        matches(text, random_stream(seed * 5 + len(text)))


@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(stream=streams(max_size=12), text=st.sampled_from(TEMPLATES))
def test_engine_equals_oracle(stream: EventStream, text: str) -> None:
    matches(text, stream)
