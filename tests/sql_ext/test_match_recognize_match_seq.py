"""MATCH_RECOGNIZE against ``match_seq`` on the fragment both express.

A sequence of single rows, each variable a type test: ``PATTERN (A B C)`` with AFTER MATCH SKIP
TO NEXT ROW finds, at every row, the one run of consecutive rows with those types, which is
what ``match_seq``'s ``PATTERN a, b, c`` under strict contiguity finds (every match of a
fixed-length strict pattern is such a run, one per first row). Seeded random streams over many
keys, seeded random patterns; the event ids of every match must be equal.

With Kleene plus, hypothesis draws the patterns: ``PATTERN (A B+ C)`` and ``a, b+, c`` agree
when each ``+`` element is followed by an element of another type (then the run of ``b`` rows
is the only way on, whatever the quantifier's preference) and the pattern does not end in
``+`` (``match_seq`` reports every extension of a final run, MATCH_RECOGNIZE the longest).
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SEED = 1125
KEYS = 40
PATTERNS = 6
TYPES = "abc"


def _patterns() -> list[list[str]]:
    rng = random.Random(SEED)
    return [[rng.choice(TYPES) for _ in range(rng.randint(1, 4))] for _ in range(PATTERNS)]


@pytest.fixture(scope="module")
def streams(spark):
    rng = random.Random(SEED + 1)
    start = datetime(2024, 1, 1)
    rows = []
    next_id = 0
    for k in range(KEYS):
        for i in range(rng.randint(0, 25)):
            rows.append((next_id, f"k{k}", start + timedelta(minutes=i), rng.choice(TYPES)))
            next_id += 1
    spark.createDataFrame(rows, "id BIGINT, key STRING, ts TIMESTAMP, type STRING") \
        .createOrReplaceTempView("mr_vs_seq")
    return "mr_vs_seq"


@pytest.mark.parametrize("types", _patterns(), ids=lambda t: "".join(t))
def test_fixed_length_strict_patterns_agree(spark, streams, types: list[str]) -> None:
    names = [f"V{i}" for i in range(len(types))]
    defines = ", ".join(f"{v} AS type = '{t}'" for v, t in zip(names, types))
    ids = "array(" + ", ".join(f"FIRST({v}.id)" for v in names) + ")"
    recognize = spark.sql(
        f"SELECT key, ids FROM mr_vs_seq MATCH_RECOGNIZE (PARTITION BY key ORDER BY ts, id "
        f"MEASURES {ids} AS ids AFTER MATCH SKIP TO NEXT ROW PATTERN ({' '.join(names)}) "
        f"DEFINE {defines})").collect()
    aliases = [f"e{i}" for i in range(len(types))]
    pattern = ("PATTERN " + ", ".join(aliases) + " DEFINE " +
               ", ".join(f"{a} AS type = ''{t}''" for a, t in zip(aliases, types)))
    seq = spark.sql(
        f"SELECT key, event_ids FROM match_seq(pattern => '{pattern}', key_col => 'key', "
        "policy => 'strict-contiguity', events => TABLE(mr_vs_seq))").collect()
    got = sorted((r.key, tuple(r.ids)) for r in recognize)
    expected = sorted((r.key, tuple(r.event_ids)) for r in seq)
    assert got == expected and expected, (types, got[:5], expected[:5])


@st.composite
def kleene_patterns(draw) -> list[tuple[str, bool]]:
    """``(type, plus)`` elements: a ``+`` element is never last and its successor's type differs."""
    size = draw(st.integers(2, 4))
    types = [draw(st.sampled_from(TYPES)) for _ in range(size)]
    plus = [draw(st.booleans()) and k + 1 < size and types[k + 1] != types[k]
            for k in range(size)]
    if not any(plus):  # at least one Kleene element where one fits
        for k in range(size - 1):
            if types[k + 1] != types[k]:
                plus[k] = True
                break
    return list(zip(types, plus))


@settings(max_examples=10, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(elements=kleene_patterns())
def test_kleene_strict_patterns_agree(spark, streams, elements: list[tuple[str, bool]]) -> None:
    names = [f"V{i}" for i in range(len(elements))]
    defines = ", ".join(f"{v} AS type = '{t}'" for v, (t, _) in zip(names, elements))
    body = " ".join(v + ("+" if plus else "") for v, (_, plus) in zip(names, elements))
    rows = spark.sql(
        f"SELECT * FROM mr_vs_seq MATCH_RECOGNIZE (PARTITION BY key ORDER BY ts, id "
        f"MEASURES MATCH_NUMBER() AS m ALL ROWS PER MATCH AFTER MATCH SKIP TO NEXT ROW "
        f"PATTERN ({body}) DEFINE {defines})").collect()
    found: dict[tuple[str, int], list[int]] = {}
    for r in rows:
        found.setdefault((r.key, r.m), []).append(r.id)
    got = sorted((key, tuple(sorted(found[key, m]))) for key, m in found)
    aliases = [f"e{i}" for i in range(len(elements))]
    pattern = ("PATTERN " + ", ".join(a + ("+" if plus else "")
                                      for a, (_, plus) in zip(aliases, elements)) +
               " DEFINE " + ", ".join(f"{a} AS type = ''{t}''"
                                      for a, (t, _) in zip(aliases, elements)))
    seq = spark.sql(
        f"SELECT key, event_ids FROM match_seq(pattern => '{pattern}', key_col => 'key', "
        "policy => 'strict-contiguity', events => TABLE(mr_vs_seq))").collect()
    expected = sorted((r.key, tuple(sorted(r.event_ids))) for r in seq)
    assert got == expected and expected, (elements, got[:5], expected[:5])
