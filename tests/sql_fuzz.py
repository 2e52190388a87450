"""The differential fuzz through ``spark.sql``, written once (issue 47).

Each fuzz test draws a batch of small random event tables (one per *case*, in one DataFrame
with a case column ``c``), runs one statement that is the ``UNION ALL`` of one call per case
(so a batch costs one Spark job set, not one per case) and compares every case's rows with a
brute-force oracle of the documented definition, computed in Python on the same rows.

The tables are built to reach the paths that exist only in the SQL layer: one key and many
(NULL keys too: one group, as ``GROUP BY`` treats them), empty cases, keys of one event, ties
in ``ts`` (broken by id), NULL types and attribute values, every timestamp type. The session
toggles (:data:`SHIM`) and argument choices (``chunk_rows``) are drawn per batch.

``CEP_SQL_FUZZ_EXAMPLES`` sets the batches per test (default :data:`DEFAULT_EXAMPLES`, the
suite's budget); ``make fuzz`` runs 10,000.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from typing import Any, Callable, Sequence

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

DEFAULT_EXAMPLES = 12
EXAMPLES = int(os.environ.get("CEP_SQL_FUZZ_EXAMPLES", str(DEFAULT_EXAMPLES)))
SQL_FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    derandomize="CEP_SQL_FUZZ_EXAMPLES" not in os.environ,
                    phases=[Phase.explicit, Phase.generate],
                    suppress_health_check=list(HealthCheck))
"""Derandomised in CI (the same batches every run); random when a budget is given. No
shrinking: every step would be a Spark statement (minutes); a failure names its case's rows
instead (:func:`describe`), and the smallest input goes into a fixed regression test."""

SHIM = "spark.cep.keepRows.enabled"
"""The JVM shim's row filter (``KeepRowsRule``): off, a task sees every row and filters itself,
as in a session built without the project's builder."""

ZONE = "spark.sql.session.timeZone"
ZONES = ("UTC", "America/New_York", "Asia/Kolkata")
"""Session time zones a batch runs in: TIMESTAMP_NTZ and DATE are read as UTC in each, and
New York's clock changes within the drawn clocks' reach would show a 23-hour day."""

TS_TYPES = ("TIMESTAMP", "TIMESTAMP_NTZ", "DATE", "BIGINT")
UNIT = {"TIMESTAMP": "SECONDS", "TIMESTAMP_NTZ": "SECONDS", "DATE": "DAYS", "BIGINT": "UNITS"}
"""The unit of one step of the drawn clocks, per timestamp type."""
EPOCH_STEPS = {"TIMESTAMP": 1_704_067_200, "TIMESTAMP_NTZ": 1_704_067_200, "DATE": 19_723,
               "BIGINT": 1_000}
"""Where the clocks start, in steps since the epoch (2024-01-01 for the real types)."""


@dataclass(frozen=True)
class Event:
    """One drawn row: its case, id, key, type, clock (steps since the epoch) and value."""

    case: int
    id: int | None
    key: str | None
    type: str | None
    steps: int | None
    v: int | None


@dataclass(frozen=True)
class Batch:
    """A drawn batch: its events, the timestamp type and the number of cases."""

    events: tuple[Event, ...]
    ts_type: str
    cases: int

    def of_case(self, case: int) -> list[Event]:
        return [e for e in self.events if e.case == case]


def ts_value(steps: int, ts_type: str) -> Any:
    """The Python value Spark reads for ``steps`` steps since the epoch."""
    if ts_type == "TIMESTAMP":
        return datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=steps)
    if ts_type == "TIMESTAMP_NTZ":
        return datetime(1970, 1, 1) + timedelta(seconds=steps)
    if ts_type == "DATE":
        return date(1970, 1, 1) + timedelta(days=steps)
    return steps


@st.composite
def batches(draw: st.DrawFn, types: str = "ABCD", cases: int = 4, max_rows: int = 9,
            keys: Sequence[str | None] = ("k1", "k2", "k3", None)) -> Batch:
    """A batch of ``cases`` small tables: few keys (NULL too), few types (NULL too), clocks with
    ties, a value column with NULLs. Ids are unique in a batch; rows arrive shuffled."""
    ts_type = draw(st.sampled_from(TS_TYPES))
    events: list[Event] = []
    next_id = 1
    for case in range(cases):
        # Small cases and few types are common: a task whose rows all drop out, a key of one
        # event and "no match at all" are the shapes the fixed examples never reached.
        n = draw(st.sampled_from([0, 1, 2, 3, 4, 4, 5, 6, max_rows]))
        key_pool = draw(st.lists(st.sampled_from(list(keys)), min_size=1, max_size=3))
        type_pool = draw(st.lists(st.sampled_from(list(types)), min_size=1, max_size=len(types),
                                  unique=True))
        clocks: dict[str | None, int] = {}
        for _ in range(n):
            key = draw(st.sampled_from(key_pool))
            clocks[key] = clocks.get(key, EPOCH_STEPS[ts_type]) + draw(
                st.sampled_from([0, 0, 1, 1, 2, 3]))
            kind = draw(st.sampled_from(type_pool + [None]) if draw(st.integers(0, 15)) == 0
                        else st.sampled_from(type_pool))
            value = draw(st.one_of(st.integers(0, 3), st.none()))
            events.append(Event(case, next_id, key, kind, clocks[key], value))
            next_id += 1
    order = draw(st.permutations(range(len(events))))
    return Batch(tuple(events[i] for i in order), ts_type, cases)


def create_view(spark: Any, batch: Batch, name: str) -> None:
    """The batch as the temporary view ``name`` (c, id, key, type, ts, v)."""
    rows = [(e.case, e.id, e.key, e.type,
             None if e.steps is None else ts_value(e.steps, batch.ts_type), e.v)
            for e in batch.events]
    spark.createDataFrame(rows, f"c INT, id BIGINT, key STRING, type STRING, "
                                f"ts {batch.ts_type}, v BIGINT").createOrReplaceTempView(name)


def union_sql(calls: Sequence[tuple[str, str]]) -> str:
    """One statement: ``SELECT <case> AS c, <columns> FROM <call>`` for each ``(call,
    columns)``, UNION ALL."""
    return " UNION ALL ".join(f"SELECT {case} AS c, {columns} FROM {call}"
                              for case, (call, columns) in enumerate(calls))


def case_table(view: str, case: int, columns: str = "id, key, type, ts, v") -> str:
    """The TABLE argument of one case."""
    return f"TABLE(SELECT {columns} FROM {view} WHERE c = {case})"


def session_conf(spark: Any, values: dict[str, str | None]) -> Any:
    """Set Spark session options for a block (``None``: leave that one as is), then restore
    them (:func:`jobs.session.session_confs`)."""
    from jobs.session import session_confs

    return session_confs(spark, {k: v for k, v in values.items() if v is not None})


def by_key(events: Sequence[Event], keyed: bool) -> dict[str | None, list[Event]]:
    """The events of each key (one group of every event when not ``keyed``)."""
    groups: dict[str | None, list[Event]] = {}
    for e in events:
        groups.setdefault(e.key if keyed else None, []).append(e)
    return groups


def describe(events: Sequence[Event]) -> str:
    """A case's rows, short enough for an assertion message: ``id:key:type@steps=v``."""
    return " ".join(f"{e.id}:{e.key}:{e.type}@{e.steps}={e.v}"
                    for e in sorted(events, key=lambda e: (str(e.key), e.steps or 0, e.id or 0)))


def rows_by_case(rows: Sequence[Any], cases: int, project: Callable[[Any], Any]) -> list[list]:
    """The collected rows split by case, each projected."""
    out: list[list] = [[] for _ in range(cases)]
    for r in rows:
        out[r.c].append(project(r))
    return out
