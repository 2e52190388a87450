"""Machines and matchers against the brute-force oracle (cep/oracles/predict_oracle.py)."""

from __future__ import annotations

import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cep.oracles.predict_oracle import boolean_fired, live_masks, match_ends
from cep.predict import Events, SequenceMachine, compile_subscription, predict, run_leaf
from cep.predict.events import instances, primitive_truths, signatures

# Overlapping primitives: A and B can hold for the same event, C is disjoint from A.
DEFS = {"A": "v <= 1", "B": "v >= 1", "C": "v = 3", "P": "v <= 1", "Q": "v >= 1", "R": "v = 3"}


def defines(body: str) -> str:
    names = set(re.findall(r"\b([A-Z])\d*\b", body.removeprefix("PATTERN ")))
    used = [c for c in DEFS if c in names]
    return "DEFINE " + ", ".join(f"{c} AS {DEFS[c]}" for c in used)


@st.composite
def sequences(draw: st.DrawFn, timed: bool = False) -> str:
    k = draw(st.integers(1, 4))
    classes = draw(st.lists(st.sampled_from("ABC"), min_size=k, max_size=k))
    links = draw(st.lists(st.sampled_from([",", ";"]), min_size=k - 1, max_size=k - 1))
    names = []
    counts: dict[str, int] = {}
    for c in classes:
        counts[c] = counts.get(c, 0) + 1
    seen: dict[str, int] = {}
    for c in classes:
        seen[c] = seen.get(c, 0) + 1
        names.append(c if counts[c] == 1 else f"{c}{seen[c]}")
    text = classes[0]
    cond = ""
    if timed and k >= 2:
        later = draw(st.integers(1, k - 1))
        earlier = draw(st.integers(0, later - 1))
        op = draw(st.sampled_from(["<", "<=", ">", ">="]))
        bound = draw(st.integers(0, 4))
        cond = f" @(t({names[later]}) - t({names[earlier]}) {op} {bound})"
        timed_at = later
    else:
        timed_at = -1
    for i in range(1, k):
        text += f" {links[i - 1]} {classes[i]}" if links[i - 1] == ";" else f", {classes[i]}"
        if i == timed_at:
            text += cond
    return f"PATTERN {text}"


streams = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), min_size=0, max_size=8)


def _events(stream: list[tuple[int, int]], keys: list[str] | None = None) -> Events:
    ts = np.cumsum([0] + [d for _, d in stream[1:]]) if stream else np.zeros(0, dtype=np.int64)
    return Events.from_columns(ts=np.asarray(ts, dtype=np.int64),
                               keys=keys or ["k"] * len(stream),
                               attrs={"v": np.array([v for v, _ in stream], dtype=np.int64)})


def _check_against_oracle(text: str, stream: list[tuple[int, int]]) -> None:
    sub = compile_subscription(f"{text} {defines(text)}")
    leaf = sub.leaves[0]
    ev = _events(stream)
    sym, sigs = signatures(sub, ev)
    m = SequenceMachine.from_sequence(leaf)
    r = run_leaf(m, leaf, sym, sigs, ev.ts, ev.key_starts)
    truth = np.stack(primitive_truths(sub, ev), axis=1).tolist() if len(ev) else []
    assert r.accepted.tolist() == match_ends(leaf, truth, ev.ts.tolist())
    assert r.masks.tolist() == live_masks(leaf, truth, ev.ts.tolist())


@settings(max_examples=150, deadline=None)
@given(sequences(), streams)
def test_table_matcher_equals_oracle(text: str, stream: list[tuple[int, int]]) -> None:
    _check_against_oracle(text, stream)


@settings(max_examples=150, deadline=None)
@given(sequences(timed=True), streams)
def test_time_list_matcher_equals_oracle(text: str, stream: list[tuple[int, int]]) -> None:
    _check_against_oracle(text, stream)


@settings(max_examples=60, deadline=None)
@given(sequences(), sequences(), st.sampled_from(["&", "|"]), streams)
def test_boolean_nodes_equal_oracle(a: str, b: str, op: str, stream: list[tuple[int, int]]) -> None:
    left = a.removeprefix("PATTERN ")
    right = b.removeprefix("PATTERN ")
    # Aliases must be unique across the whole pattern: rename the right part's classes.
    right = right.replace("A", "P").replace("B", "Q").replace("C", "R")
    body = f"({left}) {op} ({right})"
    text = f"PATTERN {body} {defines(body)}"
    sub = compile_subscription(text)
    ev = _events(stream)
    r = predict(sub, ev, lookahead=2, output="events")
    truth = np.stack(primitive_truths(sub, ev), axis=1).tolist() if len(ev) else []
    parts = [match_ends(leaf, truth, ev.ts.tolist()) for leaf in sub.leaves]
    assert r.rows["matched"] == boolean_fired(op, parts)


@settings(max_examples=80, deadline=None)
@given(sequences(timed=True), st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.sampled_from("xy")),
                                       max_size=10), st.integers(0, 10))
def test_incremental_equals_one_pass(text: str, stream: list, cut: int) -> None:
    ts = np.cumsum([0] + [d for _, d, _ in stream[1:]]).astype(np.int64) if stream else np.zeros(0, np.int64)
    vals = np.array([v for v, _, _ in stream], dtype=np.int64)
    keys = [k for _, _, k in stream]
    text = f"{text} {defines(text)}"
    whole = Events.from_columns(ts=ts, keys=keys, attrs={"v": vals})
    one = predict(text, whole, lookahead=3)
    cut = min(cut, len(stream))
    first = Events.from_columns(ts=ts[:cut], keys=keys[:cut], attrs={"v": vals[:cut]})
    second = Events.from_columns(ts=ts[cut:], keys=keys[cut:], attrs={"v": vals[cut:]})
    p1 = predict(text, first, lookahead=3)
    p2 = predict(text, second, lookahead=3, start=p1.states)
    assert p1.trained.merge(p2.trained) == one.trained
    merged_states = dict(p1.states)
    merged_states.update(p2.states)
    assert merged_states == one.states


def test_instances_follow_join_variables() -> None:
    sub = compile_subscription("PATTERN F, F ; S DEFINE F AS status = 'bad' AND ip = $x, "
                               "S AS status = 'ok' AND ip = $x")
    ev = Events.from_columns(ts=[1, 2, 3, 4, 5], keys=["u"] * 5,
                             attrs={"status": ["bad", "bad", "bad", "ok", "ok"],
                                    "ip": ["a", "b", "a", "b", "a"]})
    reordered, starts = instances(sub, ev)
    assert reordered.attrs["ip"].tolist() == ["a", "a", "a", "b", "b"]
    assert starts.tolist() == [0, 3]
    r = predict(sub, ev, lookahead=1)
    # Only instance a saw two contiguous failures (of its own events) before a success.
    assert dict(zip([i for i in r.rows["instance"]], r.rows["matches"])) == {"a": 1, "b": 0}
