"""Merging equivalent states against a brute-force pair-marking oracle and hand-computed workloads."""

from __future__ import annotations

from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cep.predict import PredictArgumentError, SequenceMachine, compile_subscription
from cep.predict.many import alphabet, compile_many
from cep.predict import merge
from cep.predict.merge import flat_table, merge_states, partition
from cep.predict.events import Events


def distinguishable(next_: list[list[int]], accepting: list[bool]) -> list[list[bool]]:
    """Table filling: p, q differ when one is matched and the other not, or some symbol leads
    them to states that differ (iterated to a fixed point, pair by pair)."""
    n = len(accepting)
    dist = [[accepting[p] != accepting[q] for q in range(n)] for p in range(n)]
    changed = True
    while changed:
        changed = False
        for p in range(n):
            for q in range(n):
                if not dist[p][q] and any(dist[a][b] for a, b in zip(next_[p], next_[q])):
                    dist[p][q] = True
                    changed = True
    return dist


@st.composite
def tables(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    n = draw(st.integers(1, 9))
    g = draw(st.integers(1, 3))
    nxt = draw(st.lists(st.lists(st.integers(0, n - 1), min_size=g, max_size=g), min_size=n, max_size=n))
    acc = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return np.array(nxt), np.array(acc)


@settings(max_examples=200, deadline=None)
@given(tables(), st.sampled_from(["hashed", "rows", "collisions"]))
def test_partition_equals_pair_marking(table: tuple[np.ndarray, np.ndarray], how: str) -> None:
    nxt, acc = table
    if how == "collisions":
        # every row hashes alike: each round must notice and group the rows themselves
        with patch.object(merge, "_WEIGHTS", np.zeros(8, dtype=np.int64)):
            classes, rounds = partition(nxt, acc)
    else:
        classes, rounds = partition(nxt, acc, hashed=how == "hashed")
    dist = distinguishable(nxt.tolist(), acc.tolist())
    n = len(acc)
    for p in range(n):
        for q in range(n):
            assert (classes[p] == classes[q]) == (not dist[p][q])
    assert classes[0] == 0 and rounds <= n + 1
    # numbered in order of first state
    firsts = [int(np.flatnonzero(classes == c)[0]) for c in range(int(classes.max()) + 1)]
    assert firsts == sorted(firsts)


DEFS = {"A": "v <= 1", "B": "v >= 1", "C": "v = 3"}


@st.composite
def sequences(draw: st.DrawFn) -> str:
    k = draw(st.integers(1, 4))
    classes = draw(st.lists(st.sampled_from("ABC"), min_size=k, max_size=k))
    links = draw(st.lists(st.sampled_from([", ", " ; "]), min_size=k - 1, max_size=k - 1))
    body = classes[0] + "".join(link + c for link, c in zip(links, classes[1:]))
    return f"PATTERN {body} DEFINE " + ", ".join(f"{c} AS {DEFS[c]}" for c in DEFS if c in classes)


@settings(max_examples=80, deadline=None)
@given(st.lists(sequences(), min_size=1, max_size=4))
def test_merged_states_of_real_machines_equal_pair_marking(texts: list[str]) -> None:
    work = compile_many(texts)
    ev = Events.from_columns(ts=np.arange(4), attrs={"v": np.arange(4)})   # every symbol once
    alph = alphabet(work, ev)
    r = merge_states(work.machines, alph.sigs)
    dist = distinguishable(r.flat.next.tolist(), r.flat.accepting.tolist())
    same = r.classes[:, None] == r.classes[None, :]
    assert (same == ~np.array(dist)).all()
    assert r.unmerged == r.flat.n_states == sum(t.n_states for t in r.flat.tables)
    assert r.merged == int(r.classes.max()) + 1
    assert r.commonality == pytest.approx(1 - r.merged / r.unmerged)
    # The merged table is the flat table read through the classes.
    assert (r.next[r.classes] == r.classes[r.flat.next]).all()
    assert (r.accepting[r.classes] == r.flat.accepting).all()


def _report(texts: list[str]):
    work = compile_many(texts)
    ev = Events.from_columns(ts=np.arange(4), types=list("XYAB"))
    return merge_states(work.machines, alphabet(work, ev).sigs)


def test_common_future_after_a_followed_link_merges() -> None:
    r = _report(["PATTERN X ; A, B", "PATTERN Y ; A, B", "PATTERN A, B"])
    # 4 + 4 + 3 states; after X (or Y) the machine waits for A, B like the start of "A, B"
    assert (r.unmerged, r.merged) == (11, 5)
    assert r.classes.tolist() == [0, 1, 2, 3, 4, 1, 2, 3, 1, 2, 3]


def test_common_prefix_is_not_equivalence() -> None:
    r = _report(["PATTERN X, A, B", "PATTERN X, A, Y"])
    assert (r.unmerged, r.merged, r.commonality) == (8, 8, 0.0)


def test_identical_subscriptions_merge_completely() -> None:
    r = _report(["PATTERN X, A ; B"] * 4)
    assert r.unmerged == 4 * r.merged and r.commonality == 0.75


def test_flat_table_layout_and_errors() -> None:
    m = SequenceMachine.from_sequence(compile_subscription("PATTERN A, B").leaves[0])
    flat = flat_table([m, m], np.array([0, 1, 2]))
    assert flat.offsets.tolist() == [0, 3, 6] and flat.owner.tolist() == [0, 0, 0, 1, 1, 1]
    assert flat.next[:3].tolist() == [[0, 1, 0], [0, 1, 2], [0, 1, 0]]
    assert flat.next[3:].tolist() == [[3, 4, 3], [3, 4, 5], [3, 4, 3]]
    assert flat.state_ids(np.array([[5, 1]])).tolist() == [[2, 3]]
    with pytest.raises(PredictArgumentError, match="shape"):
        flat_table([m, m], np.zeros((3, 3), dtype=np.int64))
    empty = merge_states([], np.array([0]))
    assert (empty.unmerged, empty.merged, empty.commonality) == (0, 0, 0.0)
