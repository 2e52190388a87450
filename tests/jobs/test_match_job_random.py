"""The standing-pattern job (``python -m jobs match``) through Spark on random sources, under
every selection policy: a source of keys k0, k1 (which may fall quiet before the end) and k2
(one event), 0-25 events with ties in time, cut into 2-4 commits at random places (ties across
a commit boundary, empty commits, now and then an event back in time that the job sets aside
as late), for a pattern of a fixed list that the policy accepts (sequences, a condition across
events, a Kleene closure, NOT, OR, strict ``,`` and conditions in ``WITHIN n EVENTS`` windows).

After every run of the job commit by commit, its tables hold exactly what the commits read so
far give: the watermark (the newest time read), the late events, the rows ``match_seq``
returns over the applied events whose windows that watermark (or, for ``EVENTS``, the key's
events) closed, with the same ``match_id``, and the timeouts of the brute-force oracle
(docs/standing.md's definition read literally, as tests/cep/match/test_standing.py checks it in
the core). One run over all commits leaves the same tables (the key states too) and counts.

Each example writes a new source and two standing patterns' tables (unique names) and costs
10-60 s, so the examples are few (``MATCH_JOB_EXAMPLES`` per policy, 2 by default; 8 is a
15 minute search) and fixed (``derandomize``). Checked to fail when the job steps a key with no
new event one run late (``resolve_at < watermark``), never steps such a key, or the core
resolves a start one unit late.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from cep.lang.policy import POLICIES
from cep.match.columnar.stream import EventStream
from cep.match.compile.standing import compile_standing
from cep.match.errors import UnsupportedPatternError
from cep.oracles.match_oracle import oracle_matches
from delta_tables.catalog import current_version, read_table
from delta_tables.match_state import MatchConf
from delta_tables.settings import TableConf
from jobs.state.match import read_meta, run_match

EPOCH = 1_704_067_200_000_000  # 2024-01-01 in microseconds
MINUTE = 60_000_000
TS = pa.timestamp("us", tz="UTC")
SCHEMA = pa.schema([("id", pa.int64()), ("case_id", pa.string()), ("ts", TS),
                    ("type", pa.string()), ("v", pa.int64())])
DDL = "id BIGINT, case_id STRING, ts TIMESTAMP, type STRING, v BIGINT"

# (pattern, its proper prefixes written out by hand, shortest first, None where a prefix would
# end in NOT): the oracle's own reading of "the first k components" (docs/standing.md).
CASES = [
    ("PATTERN A; B WITHIN 5 MINUTES", ["PATTERN A WITHIN 5 MINUTES"]),
    ("PATTERN A a; B b WHERE b.v >= a.v WITHIN 4 MINUTES", ["PATTERN A a WITHIN 4 MINUTES"]),
    ("PATTERN A a; C+ c[]; B b WITHIN 6 MINUTES",
     ["PATTERN A a WITHIN 6 MINUTES", "PATTERN A a; C+ c[] WITHIN 6 MINUTES"]),
    ("PATTERN A; !C; B WITHIN 5 MINUTES", ["PATTERN A WITHIN 5 MINUTES", None]),
    ("PATTERN A; (B | C) WITHIN 3 MINUTES", ["PATTERN A WITHIN 3 MINUTES"]),
    ("PATTERN A, B, C WITHIN 3 EVENTS", ["PATTERN A WITHIN 3 EVENTS",
                                         "PATTERN A, B WITHIN 3 EVENTS"]),
    ("PATTERN A a; B b WHERE b.v = a.v WITHIN 3 EVENTS", ["PATTERN A a WITHIN 3 EVENTS"]),
]


def _fits(pattern: str, policy: str) -> bool:
    try:
        compile_standing(pattern, policy=policy)
    except UnsupportedPatternError:  # FAEM's grouped policy has no ',' and no NOT
        assert policy == "skip-till-any-match-grouped"
        return False
    return True


EXAMPLES = int(os.environ.get("MATCH_JOB_EXAMPLES", "2"))
"""Examples per policy (see above)."""
FITTING = {policy: [c for c in CASES if _fits(c[0], policy)] for policy in POLICIES}
_names = itertools.count()


@st.composite
def sources(draw: st.DrawFn, by_events: bool) -> dict[str, Any]:
    """Commits of events of keys k0, k1 (which may fall quiet before the end) and k2 (one event,
    or none): minutes with ties, types of ABC, ``v`` in 0..3, cut at random places (an empty
    commit too); each commit no earlier in time than the one before, except for the events
    drawn back in time (late: below the newest time of the commits before). ids are unique;
    under an ``EVENTS`` window they grow from commit to commit (a later event tied in time with
    a smaller id could sort before a start already resolved, and is then late in a run by run
    job only: docs/standing.md)."""
    n = draw(st.integers(0, 25))  # (the first example, the simplest draw: no event at all)
    minutes = np.cumsum(draw(st.lists(st.sampled_from((0, 0, 1, 1, 2, 3)), min_size=n,
                                      max_size=n))).tolist()
    keys = draw(st.lists(st.sampled_from(("k0", "k1")), min_size=n, max_size=n))
    quiet = n - draw(st.integers(0, n))  # k1 has no event from here on: only the watermark
    keys = [k if i < quiet else "k0" for i, k in enumerate(keys)]  # closes its windows
    if n and draw(st.booleans()):
        keys[draw(st.integers(0, n - 1))] = "k2"  # a key with a single event
    n_commits = draw(st.integers(2, 4))  # (one commit: the job's run over all of them)
    cuts = sorted(draw(st.lists(st.integers(0, n), min_size=n_commits - 1,
                                max_size=n_commits - 1)))
    bounds = list(zip([0, *cuts], [*cuts, n]))
    commits: list[list[dict[str, Any]]] = []
    newest = None  # the newest minute of the earlier commits
    for lo, hi in bounds:
        part = [{"case_id": keys[i], "minute": minutes[i], "late": False}
                for i in range(lo, hi)]
        if newest is not None and newest > 0:
            for _ in range(draw(st.integers(0, 1))):  # an event back in time
                part.append({"case_id": draw(st.sampled_from(("k0", "k1"))),
                             "minute": draw(st.integers(0, newest - 1)), "late": True})
        if part:
            newest = max([p["minute"] for p in part] + ([] if newest is None else [newest]))
        commits.append(part)
    total = sum(len(p) for p in commits)
    for part in commits:
        for event in part:
            event["type"] = draw(st.sampled_from("ABC"))
            event["v"] = draw(st.integers(0, 3))
    ids = draw(st.permutations(range(1, total + 1)))
    if by_events:  # growing from commit to commit, in any order within one
        ids = _blockwise(ids, [len(p) for p in commits])
    for event, ident in zip((e for p in commits for e in p), ids):
        event["id"] = 100 + ident
    return {"commits": commits}


def _blockwise(ids: list[int], sizes: list[int]) -> list[int]:
    """``ids`` renumbered so that every block's ids are above the blocks before it, each
    block keeping the order its ids had among themselves."""
    out, at, base = [], 0, 0
    for size in sizes:
        block = ids[at:at + size]
        rank = {x: k for k, x in enumerate(sorted(block))}
        out += [base + 1 + rank[x] for x in block]
        at, base = at + size, base + size
    return out


def _table(part: list[dict[str, Any]]) -> pa.Table:
    return pa.table({"id": [e["id"] for e in part], "case_id": [e["case_id"] for e in part],
                     "ts": pa.array([EPOCH + e["minute"] * MINUTE for e in part],
                                    pa.int64()).cast(TS),
                     "type": [e["type"] for e in part], "v": [e["v"] for e in part]},
                    schema=SCHEMA)


def _write_source(spark, settings, name: str, commits: list[list[dict[str, Any]]]
                  ) -> tuple[TableConf, list[int]]:
    """A Delta source with its change data feed on, one commit per part (an empty part too)."""
    from delta.tables import DeltaTable

    location = settings.location_under_warehouse(name)
    spark_schema = spark.createDataFrame([], DDL).schema
    (DeltaTable.createIfNotExists(spark).location(str(location)).addColumns(spark_schema)
     .property("delta.enableChangeDataFeed", "true").execute())
    table = TableConf(name, location)
    versions = []
    for part in commits:
        frame = (spark.createDataFrame(_table(part).to_pandas(), schema=spark_schema) if part
                 else spark.createDataFrame([], spark_schema))
        frame.write.format("delta").mode("append").save(str(location))
        versions.append(int(current_version(spark, table)))
    return table, versions


def _micros(frame, *names: str):
    """``frame`` with its TIMESTAMP columns ``names`` as microseconds."""
    from pyspark.sql import functions as F

    return frame.select(*(F.unix_micros(c).alias(c) if c in names else F.col(c)
                          for c in frame.columns))


TOTALS = ("max_ts", "watermark", "events_read_total", "late_total", "matches_total",
          "timeouts_total")
"""What the meta row of a run by run job says as one run's does (``keys``: the keys the last
run stepped, differs)."""


def _rows(spark, table: TableConf, *timestamps: str) -> list[tuple]:
    """A job table's rows without ``run_id``, timestamps as microseconds, lists as lists."""
    frame = _micros(read_table(spark, table).drop("run_id"), *timestamps)
    return sorted(tuple(list(x) if isinstance(x, list) else x for x in r)
                  for r in frame.collect())


def _tables(spark, conf: MatchConf) -> dict[str, list[tuple]]:
    t = conf.tables()
    return {"matches": _rows(spark, t["matches"], "start_ts", "end_ts"),
            "timeouts": _rows(spark, t["timeouts"], "start_ts", "closed_at"),
            "late": _rows(spark, t["late"]), "open": _rows(spark, t["open"])}


def _applied_streams(commits: list[list[dict[str, Any]]]) -> dict[str, EventStream]:
    """Each key's applied events (all but those drawn back in time) in ``(ts, id)`` order."""
    by_key: dict[str, list[dict[str, Any]]] = {}
    for event in (e for p in commits for e in p if not e["late"]):
        by_key.setdefault(event["case_id"], []).append(event)
    out = {}
    for key, events in by_key.items():
        events.sort(key=lambda e: (e["minute"], e["id"]))
        out[key] = EventStream.from_columns(
            ids=[e["id"] for e in events],
            ts=[EPOCH + e["minute"] * MINUTE for e in events],
            types=[e["type"] for e in events], attrs={"v": [e["v"] for e in events]})
    return out


def _oracle_timeouts(pattern: str, prefixes: list[str | None], policy: str,
                     whole: EventStream, watermark: int | None) -> list[tuple]:
    """docs/standing.md's timeouts of one key read literally, with the oracle for every match:
    the starts the watermark (time) or the key's events (``EVENTS``) resolved."""
    window = compile_standing(pattern, policy=policy).compiled.window
    width = int(np.ceil(window.width))
    full = {m.positions[0] for m in oracle_matches(pattern, whole, policy=policy)}
    by_prefix = [None if text is None else oracle_matches(text, whole, policy=policy)
                 for text in prefixes]
    out = []
    for p in range(len(whole)):
        if window.by_events:
            if p + width - 1 >= len(whole):
                continue  # the key ends inside the window: not resolved
            closed = int(whole.ts[p + width - 1])
        else:
            closed = int(whole.ts[p]) + width
            if watermark is None or closed > watermark:
                continue
        if p in full:
            continue
        for k in range(len(prefixes), 0, -1):
            first = next((m for m in by_prefix[k - 1] or () if m.positions[0] == p), None)
            if first is not None:
                out.append((int(whole.ts[p]), closed,
                            [int(whole.ids[q]) for q in first.positions],
                            list(first.variables), k))
                break
    return out


def _expected(spark, policy: str, case: tuple[str, list[str | None]], table: TableConf,
              commits: list[list[dict[str, Any]]], version: int, view: str) -> dict[str, Any]:
    """What the job's tables hold once it has read ``commits`` (the source up to ``version``):
    the watermark (the newest time read), the events drawn back in time as late, the rows
    ``match_seq`` returns over the applied events whose windows the watermark (time) or the
    key's events (``EVENTS``) closed, and the oracle's timeouts."""
    pattern, prefixes = case
    window = compile_standing(pattern, policy=policy).compiled.window
    minutes = [e["minute"] for p in commits for e in p]
    watermark = EPOCH + max(minutes) * MINUTE if minutes else None
    late_ids = sorted(e["id"] for p in commits for e in p if e["late"])
    streams = _applied_streams(commits)
    position = {int(s.ids[p]): p for s in streams.values() for p in range(len(s))}
    frame = spark.read.format("delta").option("versionAsOf", version).load(str(table.location))
    if late_ids:
        frame = frame.where(~frame["id"].isin(late_ids))
    frame.createOrReplaceTempView(view)
    quoted = pattern.replace("'", "''")
    sql = (f"SELECT * FROM match_seq('{quoted}', 'case_id', TABLE({view}), "
           f"policy => '{policy}', allow_absent => true)")
    matches = []
    try:
        for r in _micros(spark.sql(sql), "start_ts", "end_ts").collect():
            if window.by_events:
                closed = (position[r.event_ids[0]] + int(window.width) - 1
                          < len(streams[r.case_id]))
            else:
                closed = watermark is not None and r.start_ts + int(window.width) <= watermark
            if closed:
                matches.append((r.case_id, r.match_id, r.start_ts, r.end_ts,
                                list(r.event_ids), list(r.variables), r.n_events))
    finally:
        spark.catalog.dropTempView(view)
    timeouts = [(key, *t) for key, s in streams.items()
                for t in _oracle_timeouts(pattern, prefixes, policy, s, watermark)]
    return {"watermark": watermark, "late_ids": late_ids, "matches": sorted(matches),
            "timeouts": sorted(timeouts), "events": len(minutes)}


def _assert_as_expected(spark, conf: MatchConf, want: dict[str, Any]) -> dict[str, Any]:
    """The job's tables and meta row are ``want``'s; its tables (without ``run_id``)."""
    got, meta = _tables(spark, conf), read_meta(spark, conf)
    assert meta["watermark"] == want["watermark"]
    assert sorted(r[3] for r in got["late"]) == want["late_ids"]  # the late rows' ids
    assert {r[4] for r in got["late"]} <= {"late"}  # and reasons
    assert got["matches"] == want["matches"]
    assert got["timeouts"] == want["timeouts"]
    assert (meta["matches_total"], meta["timeouts_total"], meta["events_read_total"],
            meta["late_total"]) == (len(want["matches"]), len(want["timeouts"]),
                                    want["events"], len(want["late_ids"]))
    return {"tables": got, "meta": {n: meta[n] for n in TOTALS}}


def _check(spark, settings, policy: str, case: tuple[str, list[str | None]],
           source: dict[str, Any]) -> None:
    """Run by run, each run's tables are as expected from the commits it has read; one run
    over all leaves the same tables (the key states too) as the last of them."""
    commits = source["commits"]
    k = next(_names)
    src_name = f"rnd_src_{k}"
    table, versions = _write_source(spark, settings, src_name, commits)

    def conf(name: str) -> MatchConf:
        return MatchConf.from_mapping(settings, name, {
            "source": src_name, "pattern": case[0], "key_col": "case_id", "policy": policy})

    inc = conf(f"rnd_inc_{k}")
    for n, version in enumerate(versions, 1):
        run_match(spark, settings, inc, until_version=version, quiet=True)
        want = _expected(spark, policy, case, table, commits[:n], version, f"rnd_v_{k}")
        by_runs = _assert_as_expected(spark, inc, want)
    one = conf(f"rnd_one_{k}")
    run_match(spark, settings, one, quiet=True)
    at_once = _assert_as_expected(spark, one, want)
    for name, rows in at_once["tables"].items():
        assert by_runs["tables"][name] == rows, name
    assert by_runs["meta"] == at_once["meta"]


@pytest.mark.parametrize("policy", POLICIES)
@hsettings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
           phases=(Phase.explicit, Phase.generate),  # no shrinking: an example costs seconds
           suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_any_commits_give_one_runs_tables_and_match_seqs_closed_matches(
        spark, settings, policy: str, data: st.DataObject) -> None:
    case = data.draw(st.sampled_from(FITTING[policy]), label="pattern")
    by_events = compile_standing(case[0], policy=policy).compiled.window.by_events
    _check(spark, settings, policy, case, data.draw(sources(by_events), label="source"))


def test_a_quiet_key_is_stepped_by_the_run_whose_watermark_closes_its_window(
        spark, settings) -> None:
    # k1's events all come in the first commit; the second brings only k0's C at minute 5,
    # exactly when k1's match A(0) B(1) closes (a 5 minute window): that run must step k1
    # without a new event of it (its resolve_at is the watermark; were it stepped one run
    # later, the match would come late and the key states differ from one run's).
    def event(ident: int, key: str, minute: int, kind: str) -> dict[str, Any]:
        return {"id": ident, "case_id": key, "minute": minute, "type": kind, "v": 0,
                "late": False}

    commits = [[event(101, "k1", 0, "A"), event(102, "k1", 1, "B"), event(103, "k1", 1, "A"),
                event(104, "k0", 2, "B")],
               [event(105, "k0", 5, "C")]]
    _check(spark, settings, "skip-till-next-match", CASES[0], {"commits": commits})
