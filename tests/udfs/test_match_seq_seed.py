"""match_seq from Spark SQL on the seed-query golden fixtures: the hand-derived matches.

Each fixture of ``tests/cep/match/seed_queries`` becomes a temporary view (one partition,
key ``k``; the event id column is ``event_id`` so that an attribute may be called ``id``, as
the stock query's ``[id]`` needs) and is matched under every policy it has an answer for.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone
from typing import Any

import pytest

from sql_ext.quoting import sql_string
from tests.cep.match.seed_queries import IdMatch, SeedFixture, cases, load_fixtures

pytestmark = pytest.mark.spark


def view_name(fixture: SeedFixture) -> str:
    """The temporary view of ``fixture`` (names are identifiers: letters, digits, '_')."""
    return f"seed_{fixture.name}"


def spark_type(values: list[Any]) -> str:
    """The Spark SQL type of one attribute column, from its non-NULL values."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return "BOOLEAN"
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return "BIGINT"
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return "DOUBLE"
    return "STRING"


def table_of(fixture: SeedFixture) -> tuple[list[tuple[Any, ...]], str]:
    """Rows and DDL schema of ``fixture``'s events: event_id, k, ts, type, then the attributes."""
    names = fixture.attr_names
    kinds = {n: spark_type([e.attrs.get(n) for e in fixture.events]) for n in names}
    ts_type = "TIMESTAMP" if fixture.timestamped else "BIGINT"
    schema = ", ".join([f"event_id BIGINT, k STRING, ts {ts_type}, type STRING",
                        *(f"`{n}` {kinds[n]}" for n in names)])
    rows = []
    for e in fixture.events:
        ts: Any = (datetime.fromisoformat(e.ts).astimezone(timezone.utc)
                   if isinstance(e.ts, str) else e.ts)
        attrs = [e.attrs.get(n) for n in names]
        attrs = [float(v) if kinds[n] == "DOUBLE" and v is not None else v
                 for n, v in zip(names, attrs)]
        rows.append((e.id, "k1", ts, e.type, *attrs))
    return rows, schema


@pytest.fixture(scope="module")
def seed_views(spark: Any) -> dict[str, SeedFixture]:
    """Every fixture registered as a temporary view, by view name."""
    views = {}
    for fixture in load_fixtures():
        rows, schema = table_of(fixture)
        spark.createDataFrame(rows, schema).createOrReplaceTempView(view_name(fixture))
        views[view_name(fixture)] = fixture
    return views


def run_match_seq(spark: Any, fixture: SeedFixture, policy: str) -> list[Any]:
    """Rows of match_seq over ``fixture``'s view under ``policy`` (start/end as numbers)."""
    to_number = "unix_micros({})" if fixture.timestamped else "{}"
    return spark.sql(
        f"SELECT k, event_ids, variables, n_events, {to_number.format('start_ts')} AS start_us, "
        f"{to_number.format('end_ts')} AS end_us FROM match_seq("
        f"pattern => {sql_string(fixture.pattern)}, policy => {sql_string(policy)}, "
        f"id_col => 'event_id', key_col => 'k', events => TABLE({view_name(fixture)}))"
    ).collect()


@pytest.mark.parametrize(("fixture", "policy"), cases(),
                         ids=lambda v: v.name if isinstance(v, SeedFixture) else str(v))
def test_match_seq_gives_the_hand_answer(spark: Any, seed_views: dict[str, SeedFixture],
                                         fixture: SeedFixture, policy: str) -> None:
    """match_seq returns exactly the hand-derived matches, with the right start and end."""
    rows = run_match_seq(spark, fixture, policy)
    got: list[IdMatch] = [tuple(zip((int(i) for i in r.event_ids), r.variables)) for r in rows]
    duplicates = [m for m, n in Counter(got).items() if n > 1]
    assert not duplicates, f"duplicate matches {duplicates}"
    expected = set(fixture.expected[policy])
    assert not expected - set(got) and not set(got) - expected, (
        f"{fixture.name} [{policy}]\nmissing {sorted(expected - set(got))}\n"
        f"extra {sorted(set(got) - expected)}")
    ts_of = {e.id: fixture.ts_value(e) for e in fixture.events}
    for r in rows:
        assert r.k == "k1" and r.n_events == len(r.event_ids)
        assert (r.start_us, r.end_us) == (ts_of[r.event_ids[0]], ts_of[r.event_ids[-1]])


@pytest.mark.parametrize("fixture", [f for f in load_fixtures() if f.conflicting_policies],
                         ids=lambda f: f.name)
def test_match_seq_rejects_a_policy_that_contradicts_where(
        spark: Any, seed_views: dict[str, SeedFixture], fixture: SeedFixture) -> None:
    """A policy argument that contradicts the pattern's WHERE keyword fails with its code."""
    with pytest.raises(Exception, match="CEP-MATCH-003"):
        run_match_seq(spark, fixture, fixture.conflicting_policies[0])
