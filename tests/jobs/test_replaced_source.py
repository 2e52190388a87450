"""A state job whose source was removed and created again at the same location (issue 46).

Delta's own streaming source records the source table's id and stops when it changes; the
state jobs read the source's versions by number, so they record the id too (the run's record in
every commit, ``jobs/framework/incremental.py``) and refuse a source with another id, writing
nothing, with the job's source-version code and the way to rebuild. The sketch job has the
same test in ``test_sketch_job.py`` (the issue's own probe); here the graph and the prediction
jobs, each over a small source of its own.
"""

from __future__ import annotations

import shutil
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pytest

from delta_tables.graph_state import GraphConf
from delta_tables.predict_state import PredictionConf
from delta_tables.settings import Settings, TableConf
from jobs.framework.errors import SourceReplacedError
from jobs.framework.txn import log_version
from jobs.state.graph import run_graph
from jobs.state.predict import run_predict

TS = pa.timestamp("us", tz="UTC")
EPOCH = 1_704_067_200_000_000
SCHEMA = pa.schema([("id", pa.int64()), ("user", pa.string()), ("ts", TS),
                    ("type", pa.string()), ("amount", pa.float64())])


def commit(seed: int, n: int, first_id: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    minutes = first_id + np.sort(rng.integers(0, 60, n))
    return pa.table({"id": np.arange(first_id, first_id + n, dtype=np.int64),
                     "user": [f"u{k}" for k in rng.integers(0, 2, n)],
                     "ts": pa.array(EPOCH + minutes * 60_000_000, pa.int64()).cast(TS),
                     "type": [str(x) for x in rng.choice(list("AB"), n)],
                     "amount": rng.integers(1, 9, n).astype(np.float64)}, schema=SCHEMA)


def create(spark: Any, location: Any, commits: list[pa.Table]) -> None:
    from delta.tables import DeltaTable

    (DeltaTable.create(spark).location(str(location))
     .addColumns(spark.createDataFrame(SCHEMA.empty_table()).schema)
     .property("delta.enableChangeDataFeed", "true").execute())
    for part in commits:
        spark.createDataFrame(part).write.format("delta").mode("append").save(str(location))


def graph(settings: Settings, name: str, source: str) -> tuple[Any, Callable[..., Any]]:
    conf = GraphConf.from_mapping(settings, name, {
        "source": source, "key_col": "user",
        "pattern": "PATTERN check+ c[] WHERE c[i].amount > c[i-1].amount WITHIN 1 HOUR"})
    return conf, run_graph


def prediction(settings: Settings, name: str, source: str) -> tuple[Any, Callable[..., Any]]:
    conf = PredictionConf.from_mapping(settings, name, {
        "source": source, "key_col": "user", "ts_col": "ts", "id_col": "id",
        "type_col": "type", "subscriptions": {"ab": "PATTERN A, B"}})
    return conf, run_predict


@pytest.mark.parametrize("make, code", [(graph, "CEP-TREND-040"), (prediction, "CEP-PRED-043")])
def test_a_replaced_source_is_refused_and_nothing_is_written(spark, settings, make, code) -> None:
    name = f"replaced_{make.__name__}"
    location = settings.location_under_warehouse(f"{name}_src")
    create(spark, location, [commit(1, 30, 0), commit(2, 30, 100)])
    conf, run = make(settings, name, f"{name}_src")
    assert run(spark, settings, conf, quiet=True).written
    tables: dict[str, TableConf] = dict(conf.tables())
    before = {suffix: log_version(table) for suffix, table in tables.items()}
    shutil.rmtree(location)
    create(spark, location, [commit(3, 20, 200), commit(4, 20, 300), commit(5, 20, 400)])
    with pytest.raises(SourceReplacedError, match=rf"{code}: .* is not the table the state was "
                                                  r"built from .*drop the state tables"):
        run(spark, settings, conf, quiet=True)
    assert {suffix: log_version(table) for suffix, table in tables.items()} == before
