"""Benchmark of ``predict_model`` (a model trained in SQL) against training on the driver.

Before ``predict_model`` a shared ``predict_match`` model was trained the way docs/sql.md
showed: collect the events to the driver and call the core (``cep.predict.predict(...).trained``).
That is the baseline here, timed from the same cached table to the model blob in hand
(collect included). Two shapes: ``long`` (the synthetic stream, 1,000 keys, 50 Zipf types) and
``short`` (``n / 10`` keys of about 10 events, 20 Zipf types); the subscription reads the type
column only (``PATTERN T01 ; T02, T03``). Both sides must give the same blob (checked). Best of
2 runs (the first warms the plan up). The ratio is baseline / ours (above 1: the SQL function is faster).

Run from the project root::

    python -m benchmarks.bench_predict_model [--events 1000000] [--json PATH]

Example:
    >>> SUBSCRIPTION
    'PATTERN T01 ; T02, T03'
"""

from __future__ import annotations

from typing import Any

from benchmarks.common import best_of, cached_events, events_cli, ratio, report

SUBSCRIPTION = "PATTERN T01 ; T02, T03"
OURS = "SELECT model FROM predict_model('{sub}', 'key', TABLE({table}))"


def _driver(spark: Any, table: str) -> bytes:
    """The baseline: every event collected, then one core call on the driver."""
    import numpy as np

    from cep.predict import Events, Model, predict
    from cep.predict.model import LeafModel

    rows = spark.sql(f"SELECT key, unix_micros(ts) AS us, id, type FROM {table}").toArrow()
    keys = rows.column("key").to_numpy(zero_copy_only=False)
    us = rows.column("us").to_numpy()
    ids = rows.column("id").to_numpy()
    order = np.lexsort([ids, us, keys])
    events = Events.from_columns(
        ts=us[order], keys=keys[order], ids=ids[order],
        types=rows.column("type").to_numpy(zero_copy_only=False).astype(object)[order])
    trained = predict(SUBSCRIPTION, events, lookahead=1).trained
    empty = Model(trained.subscription, tuple(LeafModel.empty() for _ in trained.leaves))
    return empty.merge(trained).to_bytes()


def run(n: int) -> dict[str, Any]:
    """Both shapes; returns the rows of the report."""
    from benchmarks.common import bench_session
    from cep.datasets.synthetic import SyntheticSpec
    from jobs.loaders.generate import write_synthetic

    spark, settings = bench_session()
    cached_events(spark, settings, n).createOrReplaceTempView("pmod_long")
    name = f"pm_short_{n}"
    write_synthetic(spark, settings, SyntheticSpec(n_events=n, n_keys=max(1, n // 10),
                                                   n_types=20, seed=2025), name, quiet=True)
    spark.table(name).cache().createOrReplaceTempView("pmod_short")
    rows = []
    for shape in ("long", "short"):
        table = f"pmod_{shape}"
        events = spark.table(table).count()
        sql = OURS.format(sub=SUBSCRIPTION, table=table)
        ours_blob, ours = best_of(lambda: bytes(spark.sql(sql).first()["model"]), 2)
        driver_blob, driver = best_of(lambda: _driver(spark, table), 2)
        assert ours_blob == driver_blob, shape
        rows.append({"shape": shape, "events": events, "ours_s": round(ours, 2),
                     "driver_s": round(driver, 2), "ratio": ratio(driver, ours)})
        print(f"{shape} ({events:,} events): predict_model {ours:.2f}s, driver training "
              f"{driver:.2f}s ({rows[-1]['ratio']})", flush=True)
    spark.stop()
    return report(rows)


def main(argv: list[str] | None = None) -> None:
    events_cli(run, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main()
