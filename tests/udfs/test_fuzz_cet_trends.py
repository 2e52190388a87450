"""``cet_trends`` through ``spark.sql`` against the brute-force trend oracle, on random batches
(issue 47).

Kleene trends over one class with conditions between neighbours, an equivalence, a DEFINE, no
window, tumbling and sliding windows; each case with or without ``key_col``, with or without
``type_col`` (without it every row is an event of the class), and with its
output (the trends, and their count per window); every timestamp type, in several session time
zones. Each window's trends
(as event-id sequences) and count must be the oracle's. The harness is :mod:`tests.sql_fuzz`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from cep.oracles.trend_oracle import oracle_trend_windows
from sql_ext.quoting import sql_string
from tests.sql_fuzz import (SQL_FUZZ, UNIT, ZONE, ZONES, Batch, Event, batches, by_key,
                            case_table, create_view, describe, rows_by_case, session_conf,
                            union_sql)

PATTERNS = ["PATTERN A+ a[] WHERE a[i].v > a[i-1].v",
            "PATTERN A+ a[] WHERE a[i].v >= a[i-1].v WITHIN 3 UNITS",
            "PATTERN A+ a[] WHERE a[i].v <> a[i-1].v WITHIN 4 UNITS SLIDE 2 UNITS",
            "PATTERN A+ a[] WHERE [v] WITHIN 3 UNITS",
            "PATTERN A+ a[] WITHIN 2 UNITS",
            "PATTERN A+ a[] DEFINE A AS v IS NOT NULL WHERE a[i].v > a[i-1].v"]
MICROS = {"SECONDS": 1_000_000, "DAYS": 86_400_000_000, "UNITS": 1}
NULL_TYPE = "\u2205"


@st.composite
def calls(draw: st.DrawFn) -> dict[str, Any]:
    return {"pattern": draw(st.sampled_from(PATTERNS)), "keyed": draw(st.booleans()),
            "typed": draw(st.booleans()), "output": draw(st.sampled_from(["trends", "count"]))}


def sql_call(case: int, call: dict[str, Any], unit: str, events: list[Event] | None = None
             ) -> tuple[str, str]:
    args = [f"pattern => {sql_string(call['pattern'].replace('UNITS', unit))}",
            f"output => '{call['output']}'", f"events => {case_table('fuzz_ct', case)}"]
    if call["keyed"]:
        args.append("key_col => 'key'")
    if call["typed"]:
        args.append("type_col => 'type'")
        # A class no event carries is an error (tests/udfs/test_cet_trends_facts.py); a case
        # without an event of class A asks for the answer instead.
        if "DEFINE" not in call["pattern"] and not any(e.type == "A" for e in events or ()):
            args.append("allow_absent => true")
    start = "window_start" if unit == "UNITS" else "unix_micros(window_start)"
    key = "key" if call["keyed"] else "CAST(NULL AS STRING) AS key"
    listing = ("trend_id, event_ids, CAST(NULL AS BIGINT) AS n" if call["output"] == "trends"
               else "CAST(NULL AS BIGINT) AS trend_id, CAST(NULL AS ARRAY<BIGINT>) AS event_ids, "
                    "CAST(n_trends AS BIGINT) AS n")
    return f"cet_trends({', '.join(args)})", f"{key}, {start} AS ws, {listing}"


def oracle(events: list[Event], call: dict[str, Any], unit: str) -> dict[tuple, Any]:
    """(key, window start) -> (count, sorted trends as id tuples)."""
    pattern = call["pattern"].replace("UNITS", unit)
    out = {}
    for key, mine in by_key(events, call["keyed"]).items():
        ts = np.array([e.steps * MICROS[unit] for e in mine], dtype=np.int64)
        windows = oracle_trend_windows(
            pattern, ts, {"v": np.array([e.v for e in mine], dtype=object)},
            # without type_col every row is an event of the class (docs/trends.md)
            types=np.array(["A" if not call["typed"] else NULL_TYPE if e.type is None
                            else e.type for e in mine], object),
            tiebreak=np.array([e.id for e in mine]))
        for start, w in windows.items():
            out[(key, int(start) if "WITHIN" in pattern else None)] = (
                w.count, sorted(tuple(mine[e].id for e in t) for t in w.trends))
    return out


@SQL_FUZZ
@given(batch=batches(types="AB", max_rows=8), zone=st.sampled_from(ZONES), data=st.data())
def test_cet_trends_through_sql_equals_the_oracle(spark, batch: Batch, zone: str,
                                                  data: st.DataObject) -> None:
    chosen = [data.draw(calls()) for _ in range(batch.cases)]
    unit = UNIT[batch.ts_type]
    create_view(spark, batch, "fuzz_ct")
    with session_conf(spark, {ZONE: zone}):
        rows = spark.sql(union_sql([sql_call(case, call, unit, batch.of_case(case))
                                    for case, call in enumerate(chosen)])).collect()
    got = rows_by_case(rows, batch.cases, lambda r: r)
    for case, call in enumerate(chosen):
        want = oracle(batch.of_case(case), call, unit)
        where = (f"case {case} {call} {batch.ts_type} in {zone} "
                 f"[{describe(batch.of_case(case))}]")
        if call["output"] == "count":
            found = {(r.key, r.ws): r.n for r in got[case]}
            assert found == {k: v[0] for k, v in want.items()}, where
            continue
        windows: dict[tuple, list] = {}
        for r in got[case]:
            windows.setdefault((r.key, r.ws), []).append((r.trend_id, tuple(r.event_ids)))
        assert set(windows) == set(want), f"{where}: windows {sorted(windows, key=str)}"
        for key, trends in windows.items():
            assert sorted(i for i, _ in trends) == list(range(1, len(trends) + 1)), where
            assert sorted(t for _, t in trends) == want[key][1], f"{where}: window {key}"
