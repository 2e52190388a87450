"""``match_seq`` through ``spark.sql`` against the brute-force oracle, on random batches (issue 47).

Every policy, NOT, Kleene, WITHIN in time and in events, WINDOW, conditions across events and
join variables; each case of a batch with or without ``key_col``, with the columns under their
default names or others (``ts_col``, ``type_col``, ``id_col``, an INT id) and with its own
``chunk_rows`` (none, 0: whole partitions, 1-7: tiny chunks), each batch with the JVM shim's
row filter on or off, its own timestamp type and its own session time zone; with or without
``columns => 'v, type'``, whose arrays must be the values of ``event_ids``' rows in order.
The harness is :mod:`tests.sql_fuzz`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import re

from cep.errors import CepError
from cep.lang import parse_pattern
from cep.lang.validate import checked_classes
from cep.match import compile_query
from cep.match.columnar.stream import EventStream
from cep.match.run.closing import ends_in_not
from cep.oracles import oracle_matches
from sql_ext.quoting import sql_string
from tests.cep.oracles.test_oracle_properties import PATTERNS, WINDOWED, WINDOWS
from tests.sql_fuzz import (SHIM, SQL_FUZZ, UNIT, ZONE, ZONES, Batch, Event, batches, by_key,
                            case_table, create_view, describe, rows_by_case, session_conf,
                            union_sql)

POLICIES = ["skip-till-any-match", "skip-till-next-match", "strict-contiguity",
            "skip-till-any-match-grouped"]
MORE = ["PATTERN A, B", "PATTERN SEQ(A, B) WHERE strict-contiguity", "PATTERN A, B, C",
        "PATTERN A; B WITHIN 2 EVENTS", "PATTERN X; Y DEFINE X AS v < 2, Y AS type = 'B'",
        "PATTERN A+, B", "PATTERN A; C WHERE A.v < C.v WITHIN 3 UNITS",
        "PATTERN A; B WINDOW [1, 4]", "PATTERN A; B DEFINE A AS v = $x, B AS v = $x"]
QUERIES = ([p + w for p in PATTERNS + MORE for w in WINDOWS]
           + [p + w for p in WINDOWED for w in WINDOWS[1:]])
NULL_TYPE = "\u2205"  # a NULL type is a class no pattern names: it binds nothing


def compiles(query: str, policy: str) -> bool:
    try:
        compile_query(query, policy=policy)
    except CepError:  # e.g. NOT under FAEM's grouped policy: a typed error, tested elsewhere
        return False
    return True


PAIRS = [(q, p) for q in QUERIES for p in POLICIES if compiles(q, p)]


@st.composite
def calls(draw: st.DrawFn) -> dict[str, Any]:
    """One case's call: its query and policy, whether keyed, and chunk_rows."""
    query, policy = draw(st.sampled_from(PAIRS))
    return {"query": query, "policy": policy, "keyed": draw(st.booleans()),
            "chunk_rows": draw(st.sampled_from([None, None, 0, 1, 2, 3, 5, 7])),
            "renamed": draw(st.booleans()), "columns": draw(st.booleans())}


RENAMED = "CAST(id AS INT) AS eid, key, type AS kind, ts AS t, v"
"""The columns under other names, the id as an INT: ``ts_col``, ``type_col``, ``id_col``."""


def absent(events: list[Event], query: str) -> bool:
    """Some class the query reads occurs in no event of a non-empty case (CEP-PAT-219)."""
    present = {e.type for e in events}
    return bool(events) and any(c not in present for c in checked_classes(parse_pattern(query)))


def sql_call(view: str, case: int, call: dict[str, Any], unit: str,
             events: list[Event]) -> str:
    columns = RENAMED if call["renamed"] else "id, key, type, ts, v"
    args = [f"pattern => {sql_string(call['query'].replace('UNITS', unit))}",
            f"policy => {sql_string(call['policy'])}",
            f"events => {case_table(view, case, columns)}"]
    if call["renamed"]:
        args += ["ts_col => 't'", "type_col => 'kind'", "id_col => 'eid'"]
    if call["keyed"]:
        args.append("key_col => 'key'")
    if call["chunk_rows"] is not None:
        args.append(f"chunk_rows => {call['chunk_rows']}")
    if call["columns"]:  # the matched events' values, as arrays in event_ids order (issue 52)
        args.append("columns => 'v, kind'" if call["renamed"] else "columns => 'v, `type`'")
    if absent(events, call["query"]):  # the error itself: tests/udfs/test_match_seq_facts.py
        args.append("allow_absent => true")
    return f"match_seq({', '.join(args)})"


def window_closed(query: str, stream: EventStream, first: int, newest: int | None) -> bool:
    """A match starting at position ``first`` of its key's stream may be reported: its pattern does not end in NOT,
    or the key holds ``n`` events from the first one on (``WITHIN n EVENTS``), or the newest
    step of the whole case is at least ``w`` after the first event (``WITHIN w UNITS``)."""
    if not ends_in_not(parse_pattern(query).pattern):
        return True
    width, unit = re.search(r"WITHIN (\d+) (UNITS|EVENTS)", query).groups()
    if unit == "EVENTS":
        return len(stream.ids) - first >= int(width)
    return newest is not None and newest - int(stream.ts[first]) >= int(width)


def oracle(events: list[Event], call: dict[str, Any]) -> set[tuple]:
    """(key, event ids, variables) of every match the definition gives."""
    found = set()
    newest = max((e.steps for e in events), default=None)
    for key, mine in by_key(events, call["keyed"]).items():
        stream = EventStream.from_columns(
            ids=[e.id for e in mine], ts=[e.steps for e in mine],
            types=[NULL_TYPE if e.type is None else e.type for e in mine],
            attrs={"v": np.array([e.v for e in mine], dtype=object)})
        for m in oracle_matches(call["query"], stream, policy=call["policy"]):
            if window_closed(call["query"], stream, m.positions[0], newest):
                found.add((key, tuple(int(stream.ids[p]) for p in m.positions), m.variables))
    return found


@SQL_FUZZ
@given(batch=batches(keys=("k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9", None)),
       shim=st.booleans(), zone=st.sampled_from(ZONES), data=st.data())
def test_match_seq_through_sql_equals_the_oracle(spark, batch: Batch, shim: bool, zone: str,
                                                 data: st.DataObject) -> None:
    chosen = [data.draw(calls()) for _ in range(batch.cases)]
    create_view(spark, batch, "fuzz_ms")
    unit = UNIT[batch.ts_type]
    statement = union_sql([(sql_call("fuzz_ms", case, call, unit, batch.of_case(case)),
                            ("key" if call["keyed"] else "CAST(NULL AS STRING) AS key")
                            + ", match_id, start_ts, end_ts, event_ids, variables, n_events, "
                            + (f"v AS vs, {'kind' if call['renamed'] else 'type'} AS types"
                               if call["columns"] else
                               "CAST(NULL AS ARRAY<BIGINT>) AS vs, "
                               "CAST(NULL AS ARRAY<STRING>) AS types"))
                           for case, call in enumerate(chosen)])
    with session_conf(spark, {SHIM: "true" if shim else "false", ZONE: zone}):
        rows = spark.sql(statement).collect()
        row_of = {r.id: r for r in spark.table("fuzz_ms").collect()}
    got = rows_by_case(rows, batch.cases, lambda r: r)
    for case, call in enumerate(chosen):
        check_rows(got[case], batch.of_case(case), call, row_of,
                   f"case {case} {call} shim={shim} {batch.ts_type} in {zone}")


def check_rows(rows: list[Any], events: list[Event], call: dict[str, Any],
               row_of: dict[int, Any], context: str) -> None:
    """One case's output rows against the oracle: the same matches, ``n_events``, the first
    and last events' timestamps, the ``columns =>`` arrays, and ``match_id`` 1, 2, ... per key."""
    want = oracle(events, call)
    found = {(r.key, tuple(r.event_ids), tuple(r.variables)) for r in rows}
    assert found == want, (f"{context} [{describe(events)}]: "
                           f"missing {sorted(want - found, key=str)}, "
                           f"extra {sorted(found - want, key=str)}")
    per_key: dict[Any, list[int]] = {}
    for r in rows:
        per_key.setdefault(r.key, []).append(r.match_id)
        assert r.n_events == len(r.event_ids), (context, r)
        assert (r.start_ts, r.end_ts) == (row_of[r.event_ids[0]].ts,
                                          row_of[r.event_ids[-1]].ts), (context, r)
        if call["columns"]:
            assert (r.vs, r.types) == ([row_of[i].v for i in r.event_ids],
                                       [row_of[i].type for i in r.event_ids]), (context, r)
    for key, ids in per_key.items():
        assert sorted(ids) == list(range(1, len(ids) + 1)), (context, key, sorted(ids))


@pytest.mark.parametrize("null", ["id", "ts"])
@pytest.mark.parametrize("policy", ["skip-till-next-match", "strict-contiguity"])
@pytest.mark.parametrize("chunk_rows", [None, 0, 1])
def test_a_null_id_or_timestamp_is_the_typed_error_on_every_path(spark, null: str, policy: str,
                                                                  chunk_rows: int | None) -> None:
    # Issue 47: the documented error (docs/sql.md), never a crash or a silent answer, whether
    # the shim filters the rows or the task does, with and without key_col.
    rows = ["(1L, 'k', 'A', 1L)", "(2L, 'k', 'B', 2L)", "(3L, 'k', 'A', 3L)"]
    rows.append("(NULL, 'k', 'B', 4L)" if null == "id" else "(4L, 'k', 'B', NULL)")
    table = f"SELECT * FROM VALUES {', '.join(rows)} AS t(id, key, type, ts)"
    chunk = "" if chunk_rows is None else f", chunk_rows => {chunk_rows}"
    for shim in ("true", "false"):
        for key in ("", ", key_col => 'key'"):
            with session_conf(spark, {SHIM: shim}), pytest.raises(Exception) as info:
                spark.sql(f"SELECT * FROM match_seq(pattern => 'PATTERN A, B', events => "
                          f"TABLE({table}), policy => '{policy}'{key}{chunk})").collect()
            assert "CEP-SQL-010" in str(info.value) and "NULL id or timestamp" in str(info.value), \
                (shim, key, str(info.value)[:2000])
