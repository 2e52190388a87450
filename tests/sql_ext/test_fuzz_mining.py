"""``follows``, ``variants`` and ``case_stats`` through ``spark.sql`` against the oracle.

Each case of a random batch (:mod:`tests.sql_fuzz`: NULL keys and types, ties broken by id,
every timestamp type, three session time zones) gets its own call: a function and output,
with or without ``key_col``, the columns under their default names or others, eventually-
follows with or without ``within``. The calls of a batch run as one ``UNION ALL`` statement
(each row as JSON, so the schemas need not agree) and each case is compared with
:mod:`cep.oracles.mining_oracle` on the same rows.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cep.oracles import mining_oracle as oracle
from tests.sql_fuzz import (SQL_FUZZ, ZONE, ZONES, Batch, Event, batches, case_table,
                            create_view, describe, session_conf)

SECONDS_PER_STEP = {"TIMESTAMP": 1, "TIMESTAMP_NTZ": 1, "DATE": 86_400, "BIGINT": 1}
WITHIN_UNIT = {"TIMESTAMP": "SECONDS", "TIMESTAMP_NTZ": "SECONDS", "DATE": "DAYS",
               "BIGINT": "UNITS"}
RENAMED = "CAST(id AS INT) AS eid, key AS case_key, type AS kind, ts AS t"
SHOWN = {
    "graph": "to_json(named_struct('source', source, 'target', target, 'n', n, 'cases', cases, "
             "'key', {key}, 'min', min_duration, 'median', median_duration, 'mean', "
             "mean_duration, 'max', max_duration))",
    "pairs": "to_json(named_struct('key', {key}, 'source', source, 'target', target, "
             "'source_id', source_id, 'target_id', target_id, 'source_ts', "
             "CAST(source_ts AS STRING), 'target_ts', CAST(target_ts AS STRING), "
             "'duration', duration))",
    "variants": "to_json(named_struct('rank', rank, 'variant', variant, 'length', length, "
                "'cases', cases, 'share', share, 'key', {key}, 'min', min_duration, "
                "'median', median_duration, 'mean', mean_duration, 'max', max_duration))",
    "case_stats": "to_json(named_struct('key', {key}, 'start_ts', CAST(start_ts AS STRING), "
                  "'end_ts', CAST(end_ts AS STRING), 'duration', duration, 'n_events', "
                  "n_events, 'first_type', first_type, 'last_type', last_type, 'first_id', "
                  "first_id, 'last_id', last_id))",
}


@st.composite
def calls(draw: st.DrawFn) -> dict[str, Any]:
    """One case's call: function and output, keyed or not, renamed columns or not."""
    kind = draw(st.sampled_from(["graph", "pairs", "eventual", "within", "variants",
                                 "case_stats"]))
    return {"kind": kind, "keyed": draw(st.booleans()), "renamed": draw(st.booleans()),
            "within": draw(st.integers(0, 3))}


def sql_call(view: str, case: int, call: dict[str, Any], unit: str) -> str:
    columns = RENAMED if call["renamed"] else "id, key, type, ts"
    kind = call["kind"]
    function = kind if kind in ("variants", "case_stats") else "follows"
    args = [case_table(view, case, columns)]
    if call["keyed"]:
        args.insert(0, "'case_key'" if call["renamed"] else "'key'")
    if call["renamed"]:
        args += ["ts_col => 't'", "type_col => 'kind'", "id_col => 'eid'"]
    if kind == "pairs":
        args.append("output => 'pairs'")
    if kind in ("eventual", "within"):
        args.append("relation => 'eventual'")
    if kind == "within":
        args.append(f"within => '{call['within']} {unit}'")
    return f"{function}({', '.join(args)})"


def shown(call: dict[str, Any]) -> str:
    output = {"eventual": "graph", "within": "graph"}.get(call["kind"], call["kind"])
    key = ("case_key" if call["renamed"] else "key") if call["keyed"] else "CAST(NULL AS STRING)"
    return SHOWN[output].format(key=key)


def expected(events: list[Event], call: dict[str, Any], step: int) -> Any:
    """What the oracle says for one case, in the JSON rows' shape."""
    rows = [(e.key if call["keyed"] else None, e.type, e.steps * step, e.id) for e in events]
    kind = call["kind"]
    if kind in ("graph", "eventual", "within"):
        bound = call["within"] * step if kind == "within" else None
        graph = oracle.graph(oracle.pairs(rows, eventual=kind != "graph", within=bound))
        return {edge: {k: v for k, v in stats.items()} for edge, stats in graph.items()}
    if kind == "pairs":
        return sorted(((a[0], a[1], b[1], a[3], b[3], float(b[2] - a[2]))
                       for a, b in oracle.pairs(rows)), key=repr)
    if kind == "variants":
        return oracle.variants(rows)
    return oracle.case_stats(rows)


def found(rows: list[dict[str, Any]], call: dict[str, Any]) -> Any:
    """The JSON rows in the oracle's shape."""
    kind = call["kind"]
    if kind in ("graph", "eventual", "within"):
        return {(r.get("source"), r.get("target")): {
            "n": r["n"], "cases": r["cases"], "key": r.get("key"), "min": r["min"],
            "median": r["median"], "mean": r["mean"], "max": r["max"]} for r in rows}
    if kind == "pairs":
        return sorted(((r.get("key"), r.get("source"), r.get("target"), r["source_id"],
                        r["target_id"], r["duration"]) for r in rows), key=repr)
    if kind == "variants":
        return sorted(({"rank": r["rank"], "variant": tuple(r["variant"]), "length": r["length"],
                        "cases": r["cases"], "share": r["share"], "key": r.get("key"),
                        "min": r["min"], "median": r["median"], "mean": r["mean"],
                        "max": r["max"]} for r in rows), key=lambda v: v["rank"])
    return {r.get("key"): {"duration": r["duration"], "n_events": r["n_events"],
                           "first_type": r.get("first_type"), "last_type": r.get("last_type"),
                           "first_id": r["first_id"], "last_id": r["last_id"]} for r in rows}


def same(want: Any, got: Any) -> bool:
    """Equal, floats to 1e-9 relative (means and shares are divisions)."""
    if isinstance(want, dict) and isinstance(got, dict):
        return want.keys() == got.keys() and all(same(want[k], got[k]) for k in want)
    if isinstance(want, (list, tuple)) and isinstance(got, (list, tuple)):
        return len(want) == len(got) and all(same(a, b) for a, b in zip(want, got))
    if isinstance(want, float) or isinstance(got, float):
        return got is not None and want is not None and math.isclose(want, got, rel_tol=1e-9,
                                                                     abs_tol=1e-9)
    return want == got


def case_stats_rows(want: dict[Any, Any]) -> dict[Any, Any]:
    return {k: {f: v[f] for f in ("duration", "n_events", "first_type", "last_type",
                                  "first_id", "last_id")} for k, v in want.items()}


@SQL_FUZZ
@given(batch=batches(keys=("k1", "k2", "k3", None)), zone=st.sampled_from(ZONES),
       data=st.data())
def test_mining_functions_through_sql_equal_the_oracle(spark, batch: Batch, zone: str,
                                                       data: st.DataObject) -> None:
    chosen = [data.draw(calls()) for _ in range(batch.cases)]
    create_view(spark, batch, "fuzz_pm")
    unit, step = WITHIN_UNIT[batch.ts_type], SECONDS_PER_STEP[batch.ts_type]
    statement = " UNION ALL ".join(
        f"SELECT {case} AS c, {shown(call)} AS j FROM {sql_call('fuzz_pm', case, call, unit)}"
        for case, call in enumerate(chosen))
    with session_conf(spark, {ZONE: zone}):
        rows = spark.sql(statement).collect()
        ts_text = {r.id: r.t for r in spark.sql("SELECT id, CAST(ts AS STRING) AS t "
                                                "FROM fuzz_pm").collect()}
    got: list[list[dict[str, Any]]] = [[] for _ in range(batch.cases)]
    for r in rows:
        got[r.c].append(json.loads(r.j))
    for case, call in enumerate(chosen):
        events = batch.of_case(case)
        want = expected(events, call, step)
        have = found(got[case], call)
        if call["kind"] == "case_stats":
            want = case_stats_rows(want)
            for r in got[case]:  # the timestamps are the first and last events' own
                assert (r["start_ts"], r["end_ts"]) == (ts_text[r["first_id"]],
                                                        ts_text[r["last_id"]]), (case, call, r)
        if call["kind"] == "pairs":
            for r in got[case]:
                assert (r["source_ts"], r["target_ts"]) == (ts_text[r["source_id"]],
                                                            ts_text[r["target_id"]])
        assert same(want, have), (f"case {case} {call} {batch.ts_type} in {zone} "
                                  f"[{describe(events)}]: expected {want}, found {have}")


@pytest.mark.parametrize("null", ["id", "ts"])
@pytest.mark.parametrize("function", ["follows", "variants", "case_stats"])
def test_a_null_id_or_timestamp_is_the_typed_error(spark, null: str, function: str) -> None:
    rows = ["(1L, 'k', 'A', 1L)", "(2L, 'k', 'B', 2L)"]
    rows.append("(NULL, 'k', 'B', 4L)" if null == "id" else "(4L, 'k', 'B', NULL)")
    table = f"SELECT * FROM VALUES {', '.join(rows)} AS t(id, key, type, ts)"
    with pytest.raises(Exception) as info:
        spark.sql(f"SELECT * FROM {function}('key', TABLE({table}))").collect()
    what = "timestamp" if null == "ts" else "id"
    assert f"CEP-PM-110: a NULL {what} in the case key = k" in str(info.value), \
        str(info.value)[:2000]
