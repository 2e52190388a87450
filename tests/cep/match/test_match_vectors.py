"""Hand-made vectors of the exact matcher: the thesis stream, Kleene, NOT, windows, the API."""

from __future__ import annotations

import numpy as np
import pytest

from cep.lang import PatternError
from cep.match import (
    EventStream,
    Match,
    MatchArrays,
    MatchLimitError,
    MatchLimits,
    PolicyConflictError,
    StreamError,
    UnsupportedPatternError,
    compile_query,
    explain,
    find_matches,
)

THESIS = "A1 B1 C1 B2 A2 A3 C2 B3 A4 D1 C3 B4 A5 B5 C4 B6".split()


def thesis_stream() -> EventStream:
    n = len(THESIS)
    return EventStream.from_columns(ids=range(n), ts=range(n), types=[e[0] for e in THESIS],
                                    attrs={"v": [int(e[1:]) for e in THESIS]})


def named(matches: list[Match]) -> list[tuple[str, ...]]:
    return [tuple(THESIS[p] for p in m.positions) for m in matches]


def run(text: str, stream: EventStream, policy: str | None = None, **kw) -> list[Match]:
    return find_matches(compile_query(text, policy=policy), stream, **kw).to_matches()


def test_match_thesis_strict_contiguity() -> None:
    got = named(run("PATTERN SEQ(A, B)", thesis_stream(), "strict-contiguity"))
    assert got == [("A1", "B1"), ("A5", "B5")]


def test_match_thesis_skip_till_next() -> None:
    got = named(run("PATTERN SEQ(A, B)", thesis_stream(), "skip-till-next-match"))
    assert got == [("A1", "B1"), ("A2", "B3"), ("A3", "B3"), ("A4", "B4"), ("A5", "B5")]


def test_match_thesis_skip_till_any() -> None:
    got = named(run("PATTERN SEQ(A, B)", thesis_stream(), "skip-till-any-match"))
    assert len(got) == 19
    a = [k for k, e in enumerate(THESIS) if e[0] == "A"]
    b = [k for k, e in enumerate(THESIS) if e[0] == "B"]
    assert got == [(THESIS[x], THESIS[y]) for x in a for y in b if x < y]


def test_match_default_policy_is_skip_till_next() -> None:
    assert run("PATTERN A; B", thesis_stream()) == run("PATTERN A; B", thesis_stream(),
                                                       "skip-till-next-match")


@pytest.mark.parametrize("plan", ["left-deep", "right-deep", "bushy", "inner"])
def test_match_thesis_seq_of_three_every_plan(plan: str) -> None:
    got = named(run("PATTERN A; B; C WHERE C.v > A.v", thesis_stream(), "skip-till-any-match",
                    plan=plan))
    assert ("A1", "B1", "C2") in got and ("A2", "B3", "C3") in got
    assert all(int(c[1:]) > int(a[1:]) for a, _, c in got)


def test_match_kleene_skip_till_next_takes_the_maximal_run() -> None:
    # A B B C: the Kleene closure takes both Bs, the C closes it.
    s = EventStream.from_columns(ids=range(4), ts=range(4), types=list("ABBC"))
    assert run("PATTERN A; B+; C", s) == [Match((0, 1, 2, 3), ("A", "B[1]", "B[2]", "C"))]


def test_match_kleene_skip_till_any_all_subsets() -> None:
    s = EventStream.from_columns(ids=range(5), ts=range(5), types=list("ABBBC"))
    got = run("PATTERN A; B+; C", s, "skip-till-any-match")
    assert len(got) == 7  # every non-empty subset of the three Bs
    assert Match((0, 1, 3, 4), ("A", "B[1]", "B[2]", "C")) in got


def test_match_kleene_exactly_n_and_iteration_predicate() -> None:
    s = EventStream.from_columns(ids=range(5), ts=range(5), types=list("ABBBC"),
                                 attrs={"v": [0, 1, 3, 2, 0]})
    assert len(run("PATTERN A; B{2}; C", s, "skip-till-any-match")) == 3
    rising = run("PATTERN A; B+; C WHERE B[i].v > B[i-1].v", s, "skip-till-any-match")
    assert {m.positions for m in rising} == {(0, 1, 4), (0, 2, 4), (0, 3, 4), (0, 1, 2, 4),
                                              (0, 1, 3, 4)}


def test_match_not_between_and_at_the_end() -> None:
    s = EventStream.from_columns(ids=range(5), ts=range(5), types=list("ADBAB"))
    # A D B A B: the D separates the first A from both Bs.
    got = [m.positions for m in run("PATTERN A; NOT(D); B", s, "skip-till-any-match")]
    assert got == [(3, 4)]
    # Trailing NOT: no A after the B before the window of the first A closes.
    trailing = [m.positions for m in run("PATTERN A; B; NOT(A) WITHIN 3 UNITS", s,
                                         "skip-till-any-match")]
    assert trailing == [(0, 2), (3, 4)]  # the A at ts 3 is outside A@0's window [0, 3)
    longer = [m.positions for m in run("PATTERN A; B; NOT(A) WITHIN 4 UNITS", s,
                                       "skip-till-any-match")]
    assert longer == [(3, 4)]  # now A@3 falls inside A@0's window: (0, 2) is violated


def test_match_window_kinds() -> None:
    s = EventStream.from_columns(ids=range(4), ts=[0, 10, 20, 30], types=list("ABAB"))
    assert [m.positions for m in run("PATTERN A; B WITHIN 15 UNITS", s, "skip-till-any-match")] \
        == [(0, 1), (2, 3)]
    assert [m.positions for m in run("PATTERN A; B WITHIN 2 EVENTS", s, "skip-till-any-match")] \
        == [(0, 1), (2, 3)]
    assert len(run("PATTERN A; B WITHIN 1 MINUTE", s, "skip-till-any-match")) == 3
    assert [m.positions for m in run("PATTERN A; B WINDOW [1, 3]", s, "skip-till-any-match")] \
        == [(2, 3)]


def test_match_arrays_are_columnar_and_ordered() -> None:
    s = EventStream.from_columns(ids=range(5), ts=range(5), types=list("ABBBC"))
    result = find_matches(compile_query("PATTERN A; B+; C", policy="skip-till-any-match"), s)
    assert isinstance(result, MatchArrays) and len(result) == 7
    assert result.offsets[0] == 0 and result.offsets[-1] == len(result.positions)
    assert result.positions.dtype == np.int64 and result.variables.dtype == object
    ms = result.to_matches()
    assert ms == sorted(ms, key=Match.sort_key)
    assert result.starts.tolist() == [m.start for m in ms]
    assert result.ends.tolist() == [m.end for m in ms]


def test_match_compiled_query_api() -> None:
    cq = compile_query("PATTERN A a; NOT(D d); B b DEFINE A AS v > 0 WHERE b.w = 1 AND "
                       "a.v < b.v AND d.v > a.v", columns=["ts", "type", "v", "w"])
    assert sorted(cq.attributes) == ["v", "w"]
    push = {k: [c.text for c in v] for k, v in cq.pushdown.items()}
    assert push == {"a": ["v > 0"], "d": [], "b": ["b.w = 1"]}
    with pytest.raises(PatternError):
        compile_query("PATTERN A; B WHERE A.nope > 1", columns=["ts", "type", "v"])
    with pytest.raises(PolicyConflictError):
        compile_query("PATTERN A; B WHERE strict-contiguity", policy="skip-till-any-match")
    with pytest.raises(UnsupportedPatternError) as caught:
        compile_query("PATTERN A; NOT(B; C); D")
    assert (caught.value.line, caught.value.column) == (1, 12), str(caught.value)
    with pytest.raises(UnsupportedPatternError) as caught:
        compile_query("PATTERN A;\n  (B; C)+")
    # Line, column and the caret under the quantified group, as the language's errors show them.
    assert str(caught.value).splitlines()[0].startswith("CEP-MATCH-002: line 2, column 3: ")
    assert str(caught.value).splitlines()[1:] == ["      (B; C)+", "      ^~~~~~~"]


def test_match_masks_replace_evaluation() -> None:
    s = thesis_stream()
    cq = compile_query("PATTERN A; B", policy="skip-till-any-match")
    only_a5 = np.array([e == "A5" for e in THESIS])
    masked = EventStream(s.ids, s.ts, s.types, s.attrs, {"A": only_a5})
    assert named(find_matches(cq, masked).to_matches()) == [("A5", "B5"), ("A5", "B6")]
    by_class = EventStream(s.ids, s.ts, s.types, s.attrs, {"class:A": only_a5})
    assert len(find_matches(cq, by_class)) == 2


def test_match_missing_attribute_is_a_stream_error() -> None:
    s = EventStream.from_columns(ids=range(2), ts=range(2), types=list("AB"))
    with pytest.raises(StreamError):
        find_matches(compile_query("PATTERN A; B WHERE B.v > A.v"), s)


def test_match_limit_on_kleene_under_skip_till_any() -> None:
    n = 60
    s = EventStream.from_columns(ids=range(n), ts=range(n), types=["a"] + ["b"] * (n - 2) + ["c"])
    cq = compile_query("PATTERN a; b+; c", policy="skip-till-any-match",
                       limits=MatchLimits(max_partial_matches=100_000))
    with pytest.raises(MatchLimitError, match="max_partial_matches=100000"):
        find_matches(cq, s)


def test_match_limit_on_matches_and_iterations() -> None:
    n = 40
    s = EventStream.from_columns(ids=range(n), ts=range(n), types=["a", "b"] * (n // 2))
    with pytest.raises(MatchLimitError, match="max_matches=50"):
        find_matches(compile_query("PATTERN a; b", policy="skip-till-any-match",
                                   limits=MatchLimits(max_matches=50)), s)
    s2 = EventStream.from_columns(ids=range(n), ts=range(n), types=["a"] + ["b"] * (n - 1))
    with pytest.raises(MatchLimitError, match="max_kleene_iterations=10"):
        find_matches(compile_query("PATTERN a; b+", limits=MatchLimits(max_kleene_iterations=10)), s2)


def test_match_explain_names_the_plan() -> None:
    s = thesis_stream()
    cq = compile_query("PATTERN A; B; C; D WHERE D.v > A.v", policy="skip-till-any-match")
    text = explain(cq, s)
    assert "chosen plan:" in text
    assert any(kind in text.split("chosen plan:")[1] for kind in
               ("left-deep", "right-deep", "bushy", "inner"))
    assert "buffer A: 5 events" in text
    assert "skip-till-next-match runs" in explain(compile_query("PATTERN A; B"))


@pytest.mark.parametrize("policy", ["skip-till-any-match", "skip-till-next-match", "strict-contiguity"])
def test_match_empty_and_tiny_streams(policy: str) -> None:
    cq = compile_query("PATTERN A; B+; NOT(C) WITHIN 5 UNITS", policy=policy)
    empty = EventStream.from_columns(ids=[], ts=[], types=[])
    assert len(find_matches(cq, empty)) == 0
    one = EventStream.from_columns(ids=[7], ts=[3], types=["A"])
    assert find_matches(cq, one).offsets.tolist() == [0]
    two = EventStream.from_columns(ids=[7, 8], ts=[3, 3], types=["A", "B"])
    assert find_matches(cq, two).to_matches() == [Match((0, 1), ("A", "B[1]"))]


def test_match_unknown_plan_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown plan"):
        find_matches(compile_query("PATTERN A; B"), thesis_stream(), plan="zigzag")
