"""The prediction job's chunked stream (jobs/state/predict_chunks.py) without Spark.

The oracle is the driver's path: one :func:`~jobs.state.predict_bucket.process_bucket` call over the
whole batch, which finds late rows itself (:func:`~jobs.state.predict_bucket._late_mask`). The stream
gets the same rows sorted as Spark sorts them (key, kind descending, time), each event marked
with its lateness bound by a brute-force loop over the documented rule, and cuts them into
chunks of 1 to 7 rows and batches of 1 to 5: the instance rows, the summed models, the late rows
and the counts must be the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from cep.predict import Model
from jobs.state.predict import make_partition_function
from jobs.state.predict_bucket import (EVENT, OUT_INSTANCE, OUT_LATE, OUT_MODEL, OUT_STATS, STATE,
                                       process_bucket)
from jobs.state.predict_chunks import STAT_COLUMNS

SUBS = [
    ("hot3", "PATTERN H, H, H DEFINE H AS temp > 30"),
    ("login", "PATTERN F, F @(t(F2) - t(F1) < 20) ; S DEFINE F AS status = 'denied' AND "
              "ip = $x, S AS status = 'ok' AND ip = $x"),
    ("either", "PATTERN (A, B) & (C ; D) | E"),
]
SPEC = {"name": "t", "subscriptions": SUBS, "attributes": ["temp", "status", "ip"],
        "has_type": True}


class Conf:
    """The two things make_partition_function reads of a prediction set."""

    name = "t"
    subscriptions = SUBS
    type_col = "type"


def batch(seed: int, n: int, commits: tuple[int, ...], start: int) -> dict[str, list]:
    """Event work rows: keys k0..k2 (k0 holds most rows), ties, late rows, a NULL key and ts."""
    rng = np.random.default_rng(seed)
    commit = np.sort(rng.choice(commits, n))
    ts = start + np.sort(rng.integers(0, 40, n)) + 3 * (commit - commits[0])
    back = rng.random(n) < 0.08  # some rows go back in time: late when an earlier commit saw more
    ts = np.where(back, ts - rng.integers(5, 30, n), ts)
    key = [f"k{k}" for k in rng.choice(3, n, p=[0.7, 0.2, 0.1])]
    key[n // 2] = None
    ts_list: list = ts.tolist()
    ts_list[n // 3] = None
    return {"key": key, "kind": [EVENT] * n, "e_ts": ts_list,
            "e_id": (np.arange(n) + start * 100).tolist(), "e_commit": commit.tolist(),
            "e_type": [str(x) for x in rng.choice(list("ABCDEX"), n)],
            "a_0": np.round(rng.normal(30, 3, n), 1).tolist(),
            "a_1": [str(x) for x in rng.choice(["denied", "ok", "other"], n, p=[.5, .3, .2])],
            "a_2": [str(x) for x in rng.choice(["i1", "i2"], n)],
            "i_sub": [None] * n, "i_instance": [None] * n, "i_state": [None] * n,
            "i_last_ts": [None] * n}


SCHEMA = pa.schema([("key", pa.string()), ("kind", pa.int32()), ("e_ts", pa.int64()),
                    ("e_id", pa.int64()), ("e_commit", pa.int64()), ("e_type", pa.string()),
                    ("a_0", pa.float64()), ("a_1", pa.string()), ("a_2", pa.string()),
                    ("i_sub", pa.string()), ("i_instance", pa.string()), ("i_state", pa.binary()),
                    ("i_last_ts", pa.int64())])


def states_of(out: pa.Table) -> dict[str, list]:
    """The instance rows of an earlier run as state work rows."""
    inst = out.filter(pc.equal(out.column("out"), OUT_INSTANCE))
    n = inst.num_rows
    return {"key": inst.column("key").to_pylist(), "kind": [STATE] * n, "e_ts": [None] * n,
            "e_id": [None] * n, "e_commit": [None] * n, "e_type": [None] * n, "a_0": [None] * n,
            "a_1": [None] * n, "a_2": [None] * n, "i_sub": inst.column("sub").to_pylist(),
            "i_instance": inst.column("instance").to_pylist(),
            "i_state": inst.column("state").to_pylist(),
            "i_last_ts": inst.column("last_ts").to_pylist()}


def with_bounds(work: pa.Table) -> pa.Table:
    """``e_bound`` by the documented rule, row by row: the newest timestamp of the row's key in
    an earlier commit of this batch or in a persisted state (NULL when there is none)."""
    rows = work.to_pylist()
    bounds = []
    for r in rows:
        if r["kind"] != EVENT or r["key"] is None or r["e_ts"] is None:
            bounds.append(None)
            continue
        seen = [s["e_ts"] for s in rows if s["key"] == r["key"] and s["kind"] == EVENT
                and s["e_ts"] is not None and s["e_commit"] < r["e_commit"]]
        seen += [s["i_last_ts"] for s in rows if s["key"] == r["key"] and s["kind"] == STATE
                 and s["i_last_ts"] is not None]
        bounds.append(max(seen) if seen else None)
    return work.append_column("e_bound", pa.array(bounds, pa.int64()))


def spark_order(work: pa.Table) -> pa.Table:
    """Sorted as the job asks Spark to: key, kind descending, ts (NULLs last)."""
    return work.take(pc.sort_indices(work, sort_keys=[
        ("key", "ascending", "at_end"), ("kind", "descending", "at_end"),
        ("e_ts", "ascending", "at_end")]))


def summary(out: pa.Table) -> dict[str, Any]:
    """What the job keeps of an output: instance rows, summed models, late rows, counts."""
    kind = out.column("out").to_numpy(zero_copy_only=False)
    inst = out.filter(pa.array(kind == OUT_INSTANCE)).select(
        ["sub", "key", "instance", "state", "label", "progress", "last_ts", "events", "matches"])
    models: dict[str, Any] = {}
    for row in out.filter(pa.array(kind == OUT_MODEL)).to_pylist():
        model = Model.from_bytes(row["model"])
        models[row["sub"]] = model if row["sub"] not in models else models[row["sub"]].merge(model)
    late = out.filter(pa.array(kind == OUT_LATE)).select(
        ["key", "l_ts", "l_id", "l_version", "l_reason", "l_last_ts"]).to_pylist()
    stats = out.filter(pa.array(kind == OUT_STATS))
    return {"instances": sorted(inst.to_pylist(), key=lambda r: (r["sub"], r["key"],
                                                                  r["instance"])),
            "models": {sub: m.to_bytes() for sub, m in models.items()},
            "late": sorted(late, key=lambda r: (str(r["key"]), r["l_id"])),
            "stats": {c: sum(stats.column(c).to_pylist()) for c in STAT_COLUMNS}}


@pytest.fixture(scope="module")
def second_run() -> dict[str, Any]:
    """A first batch run whole (its instance rows are the persisted states), and the work rows
    of a second batch with those states; the oracle is the driver's call on them."""
    first = pa.table(batch(1, 90, (1, 2), 0), schema=SCHEMA)
    persisted = states_of(process_bucket(first, SPEC))
    events = pa.table(batch(2, 120, (3, 4, 5), 30), schema=SCHEMA)
    # A tie with k1's bound in commit 6 (not late) and a row just below it (late).
    bound = with_bounds(pa.concat_tables([events, pa.table(persisted, schema=SCHEMA)]))
    last = pc.max(pc.filter(bound.column("e_ts"), pc.equal(bound.column("key"), "k1"))).as_py()
    ties = batch(3, 2, (6,), 0)
    ties.update(key=["k1", "k1"], e_ts=[last, last - 1], e_id=[9001, 9002])
    second = pa.concat_tables([events, pa.table(ties, schema=SCHEMA),
                               pa.table(persisted, schema=SCHEMA)])
    # Spark's order within one timestamp is arbitrary: start from a shuffled table.
    second = second.take(pa.array(np.random.default_rng(7).permutation(second.num_rows)))
    expected = summary(process_bucket(second, SPEC))
    assert expected["stats"]["n_late"] > 3 and expected["stats"]["n_incomplete"] == 2
    assert [r["l_id"] for r in expected["late"] if r["l_id"] in (9001, 9002)] == [9002]
    assert expected["instances"] and len(expected["models"]) == len(SUBS)
    return {"work": spark_order(with_bounds(second)), "expected": expected}


def streamed(work: pa.Table, chunk_rows: int, batch_rows: int) -> pa.Table:
    function = make_partition_function(Conf(), ("temp", "status", "ip"), chunk_rows)
    batches = [b for at in range(0, work.num_rows, batch_rows)
               for b in work.slice(at, batch_rows).to_batches()]
    return pa.Table.from_batches(list(function(iter(batches))))


@pytest.mark.parametrize("chunk_rows", [1, 2, 3, 5, 7, 40, 10_000])
@pytest.mark.parametrize("batch_rows", [1, 4])
def test_chunks_equal_one_call(second_run, chunk_rows: int, batch_rows: int) -> None:
    got = summary(streamed(second_run["work"], chunk_rows, batch_rows))
    want = second_run["expected"]
    for part in ("stats", "late", "models", "instances"):
        assert got[part] == want[part], f"{part}: chunks of {chunk_rows}"


def test_bounds_need_no_other_row(second_run) -> None:
    """With ``e_bound`` one call finds the same late rows as with the rule over the batch."""
    work = second_run["work"]
    assert summary(process_bucket(work, SPEC)) == second_run["expected"]


def test_one_key_is_run_in_several_calls(second_run, monkeypatch) -> None:
    """The open key is cut: with chunks of 5 rows the key with most rows is run many times."""
    calls: list[set] = []
    real = process_bucket

    def counting(table: pa.Table, spec: dict) -> pa.Table:
        calls.append(set(table.column("key").to_pylist()))
        return real(table, spec)

    monkeypatch.setattr("jobs.state.predict.process_bucket", counting)
    streamed(second_run["work"], 5, 4)
    assert sum(1 for keys in calls if keys == {"k0"}) > 10
