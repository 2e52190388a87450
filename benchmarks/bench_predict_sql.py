"""``predict_match`` end to end in Spark SQL against the core on the same events.

The SQL function runs in the shell of ``udfs/shell.py`` (``analyze`` plus Arrow batches), so its
floor is what Spark and the Arrow transport cost to hand the same rows to Python. This benchmark
measures, in one run:

* ``sql keys``: ``predict_match(..., key_col => 'key')`` over a Delta table, ``output => 'keys'``
  (one row per key), each key's chain trained on its own events; results to Spark's ``noop`` sink;
* ``sql events``: the same with ``output => 'events'`` (one output row per event);
* ``sql keys+model``: ``output => 'keys'`` with a model blob (one core call per task);
* ``no-op``: an Arrow UDTF that does nothing (``benchmarks.common.NoopTable``) over the columns
  ``predict_match`` selects (``ts`` as microseconds, ``id``, ``type``, ``key``) with its
  partitioning (``PARTITION BY pmod(hash(key), 64)``): the floor; issue 20 asks for the SQL
  calls within 1.5x of it;
* ``core``: :func:`cep.predict.predict` per key on the same events in this process (no Spark),
  which is what the SQL call computes; ``core 1 call``: one call over all keys (one model
  trained on every key: a different answer, the core's best case).

Data: ``N`` events, one key per 1,000 events, types drawn uniformly from A-D, one event per
second per key; subscription ``PATTERN A, B; C`` (three steps), lookahead 5. Best of ``--repeat``
after a warm-up; the number of key rows of the SQL answer must equal the core's.

Run from the project root::

    python -m benchmarks.bench_predict_sql [--sizes 100000 1000000] [--repeat 2]

Example:
    >>> cols = columns(3000, seed=1)
    >>> len(set(cols["key"].tolist())), cols["type"][:3].tolist()
    (3, ['B', 'C', 'D'])
"""

from __future__ import annotations

import argparse
import tempfile
import time
from typing import Any

import numpy as np

from cep.predict import Events, predict

SUBSCRIPTION = "PATTERN A, B; C"
LOOKAHEAD = 5
PER_KEY = 1000
T0_US = 1_704_067_200_000_000  # 2024-01-01 00:00:00 UTC


def columns(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """``id, key, type, ts_us`` of ``n`` events, ``PER_KEY`` per key, in key and time order."""
    rng = np.random.default_rng(seed)
    ids = np.arange(n, dtype=np.int64)
    return {"id": ids, "key": (ids // PER_KEY).astype(np.int64),
            "type": np.array(list("ABCD"), dtype=object)[rng.integers(0, 4, n)],
            "ts_us": T0_US + (ids % PER_KEY) * 1_000_000}


def core_per_key(cols: dict[str, np.ndarray]) -> tuple[int, float]:
    """Key rows of the core answering key by key (as the SQL call does), and its seconds."""
    start = time.perf_counter()
    rows = 0
    for a in range(0, len(cols["id"]), PER_KEY):
        sl = slice(a, a + PER_KEY)
        ev = Events.from_columns(ts=cols["ts_us"][sl], ids=cols["id"][sl], types=cols["type"][sl])
        rows += len(predict(SUBSCRIPTION, ev, lookahead=LOOKAHEAD).rows["state"])
    return rows, time.perf_counter() - start


def core_one_call(cols: dict[str, np.ndarray]) -> tuple[Any, float]:
    """The model trained on every key in one core call, and the call's seconds."""
    start = time.perf_counter()
    ev = Events.from_columns(ts=cols["ts_us"], keys=cols["key"], ids=cols["id"], types=cols["type"])
    model = predict(SUBSCRIPTION, ev, lookahead=LOOKAHEAD).trained
    return model, time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)

    import pyarrow as pa

    from delta_tables.settings import load_settings
    from jobs.session import build_session
    from benchmarks.common import register_noop
    from sql_ext import register_all

    settings = load_settings(overrides={"warehouse": tempfile.mkdtemp(prefix="bench_predict_"),
                                        "show_progress": False, "app_name": "bench-predict-sql"})
    spark = build_session(settings)
    register_all(spark)
    register_noop(spark)
    print(f"{'events':>9} {'what':<17} {'seconds':>8} {'events/s':>10} {'vs core':>8} "
          f"{'vs no-op':>8}")
    for n in args.sizes:
        cols = columns(n)
        table = pa.table({"id": cols["id"], "key": cols["key"], "type": cols["type"].astype(str),
                          "ts": pa.array(cols["ts_us"], type=pa.timestamp("us", tz="UTC"))})
        name = f"bench_predict_{n}"
        location = str(settings.warehouse_dir / name)
        spark.createDataFrame(table).write.format("delta").mode("overwrite").save(location)
        spark.sql(f"CREATE TABLE IF NOT EXISTS {name} USING delta LOCATION '{location}'")
        expected, core_s = min((core_per_key(cols) for _ in range(args.repeat)), key=lambda r: r[1])
        model, one_s = min((core_one_call(cols) for _ in range(args.repeat)), key=lambda r: r[1])
        base = (f"subscription => '{SUBSCRIPTION}', lookahead => {LOOKAHEAD}, key_col => 'key', "
                f"events => TABLE({name})")
        queries = {
            "sql keys": f"SELECT * FROM predict_match({base})",
            "sql events": f"SELECT * FROM predict_match(output => 'events', {base})",
            "sql keys+model": f"SELECT * FROM predict_match(model => X'{model.to_bytes().hex()}', {base})",
        }
        queries["no-op"] = (f"SELECT * FROM noop_arrow(TABLE(SELECT unix_micros(ts) AS ts, id, "
                            f"type, key FROM {name}) PARTITION BY pmod(hash(key), 64))")
        assert spark.sql(f"SELECT count(*) FROM predict_match({base})").first()[0] == expected
        results = {"core": core_s, "core 1 call": one_s}
        for what, sql in queries.items():
            spark.sql(sql).write.format("noop").mode("overwrite").save()  # warm-up
            best = float("inf")
            for _ in range(args.repeat):
                start = time.perf_counter()
                spark.sql(sql).write.format("noop").mode("overwrite").save()
                best = min(best, time.perf_counter() - start)
            results[what] = best
        for what, seconds in results.items():
            print(f"{n:>9} {what:<17} {seconds:>8.2f} {n / seconds:>10,.0f} "
                  f"{seconds / core_s:>7.1f}x {seconds / results.get('no-op', seconds):>7.2f}x")
    spark.stop()


if __name__ == "__main__":
    main()
