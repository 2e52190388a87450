"""The state jobs' sources and expected state for the cluster test (test_standalone.py).

Two sources, each written by the test run's local session in three commits (version 0 is the
empty table with the change data feed on):

- ``cl_graph``: the check-like events of tests/jobs/test_graph_job.py (an out-of-order event
  and a timestamp tie in the second commit); the graph job's expected rows are the core's
  (:func:`cep.trends.assign_windows`, then per window the job's own per-window function, which
  is :func:`cep.trends.build_graph` and :func:`delta_tables.graph_state.window_rows`).
- ``cl_pred``: the events of tests/jobs/test_predict_job.py (late rows, a row without a key,
  a timestamp tie across commits); the expected state is that module's ``core`` (the core's
  :func:`cep.predict.predict`, commit by commit).

(The sketch job's source is the test's ``cl_events``; its expected nodes are built there.)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from tests.jobs import test_graph_job as graph_case
from tests.jobs import test_predict_job as predict_case

GRAPH = {"source": "cl_graph", "pattern": graph_case.PATTERN, "key_col": "bank"}
PREDICT = {"source": "cl_pred", "key_col": "user", "ts_col": "ts", "id_col": "id",
           "type_col": "type", "subscriptions": predict_case.SUBS}
GRAPH_SUFFIXES = ("event_vertices", "attribute_vertices", "from_edges", "to_edges")


def _empty_source(spark: Any, location: Any, schema: pa.Schema) -> None:
    from delta.tables import DeltaTable

    (DeltaTable.createIfNotExists(spark).location(str(location))
     .addColumns(spark.createDataFrame(schema.empty_table()).schema)
     .property("delta.enableChangeDataFeed", "true").execute())


def _append(spark: Any, location: Any, part: pa.Table) -> None:
    spark.createDataFrame(part).write.format("delta").mode("append").save(str(location))


def graph_commits() -> list[pa.Table]:
    """The three commits of the graph source (as tests/jobs/test_graph_job.py builds them)."""
    first = graph_case.events(1, 40, 0, 0)
    late = graph_case.events(2, 25, 100, 120)
    late = pa.concat_tables([late, pa.table({
        "id": [500, 501], "bank": ["b0", "b0"], "ts": pa.array(
            [graph_case.EPOCH + 5 * 60_000_000, first.column("ts")[3].value],
            pa.int64()).cast(graph_case.TS),
        "src": ["x", "y"], "dest": ["y", "z"], "amount": [2.0, 3.0]}, schema=graph_case.SCHEMA)])
    return [first, late, graph_case.events(3, 30, 200, 240)]


def predict_commits() -> list[pa.Table]:
    """The three commits of the prediction source (as tests/jobs/test_predict_job.py)."""
    import pyarrow.compute as pc

    rows, events, hour, epoch = (predict_case.rows, predict_case.events, predict_case.HOUR,
                                 predict_case.EPOCH)
    first = events(1, 160, 0, 0)
    odd = rows(id=[900, 901, 902], user=["u0", "u1", None], ts=[1, 2, 70],
               type=["A", "E", "A"], temp=[35.0, 35.0, 35.0])
    second = pa.concat_tables([events(2, 160, 1000, 60), odd])
    newest = pc.max(pc.filter(second.column("ts"), pc.equal(second.column("user"), "u2"))).value
    third = pa.concat_tables([events(3, 160, 2000, 120),
                              rows(id=[903, 904], user=["u2", "u3"],
                                   ts=[(newest - epoch) // hour, 3], type=["B", "C"],
                                   temp=[31.0, 31.0])])
    return [first, second, third]


def write_sources(spark: Any, settings: Any) -> dict[str, list[int]]:
    """Write ``cl_graph`` and ``cl_pred``; return each one's commit versions."""
    from delta_tables.settings import TableConf
    from jobs.framework.txn import log_version

    versions: dict[str, list[int]] = {}
    for name, commits, schema in (("cl_graph", graph_commits(), graph_case.SCHEMA),
                                  ("cl_pred", predict_commits(), predict_case.SCHEMA)):
        location = settings.location_under_warehouse(name)
        _empty_source(spark, location, schema)
        versions[name] = []
        for part in commits:
            _append(spark, location, part)
            versions[name].append(int(log_version(TableConf(name, location))))
    return versions


# ---- normalised rows ---------------------------------------------------------------------------

def frozen(value: Any) -> Any:
    """A row value as a hashable, comparable one (lists become tuples)."""
    if isinstance(value, (list, tuple)):
        return tuple(frozen(v) for v in value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return value


def sorted_rows(rows: list[dict[str, Any]], names: list[str]) -> list[tuple]:
    """The rows as tuples of ``names``, sorted (NULLs first within a column)."""
    out = [tuple(frozen(r[n]) for n in names) for r in rows]
    return sorted(out, key=lambda row: tuple((v is not None, v) for v in row))


def table_rows(spark: Any, table: Any, names: list[str]) -> list[tuple]:
    """A Delta table's rows (its current version) as :func:`sorted_rows`."""
    from delta_tables.catalog import read_table

    return sorted_rows([r.asDict() for r in read_table(spark, table).select(*names).collect()],
                       names)


# ---- the core's state ------------------------------------------------------------------------

def graph_expected(conf: Any, events: pa.Table) -> dict[str, list[tuple]]:
    """The four graph tables' rows for ``events``: every (bank, window) of the core's window
    assignment through the job's per-window function (which builds the core's graph)."""
    from cep.trends import assign_windows
    from delta_tables.graph_state import COLUMNS, KIND
    from jobs.state.graph import make_window_function

    query = conf.query
    attributes = tuple(a for a in query.attributes if a.lower() != "ts")
    per_window = make_window_function(conf, attributes)
    parts = []
    ts_all = events.column("ts").cast(pa.int64()).to_numpy()
    banks = np.array(events.column("bank").to_pylist(), dtype=object)
    w, s = int(query.within), int(query.effective_slide)
    for bank in sorted(set(banks)):
        mine = np.flatnonzero(banks == bank)
        starts, rows = assign_windows(ts_all[mine], w, s)
        for start in np.unique(starts):
            members = mine[rows[starts == start]]
            table = pa.table({
                "key": [bank] * len(members), "ts_us": pa.array(ts_all[members], pa.int64()),
                "id": events.column("id").take(members),
                **{f"a_{i}": events.column(a).take(members) for i, a in enumerate(attributes)},
                "window_start": pa.array([int(start)] * len(members), pa.int64()),
                "window_end": pa.array([int(start) + w] * len(members), pa.int64())})
            parts.append(per_window(table))
    out = pa.concat_tables(parts).to_pylist()
    return {suffix: sorted_rows([r for r in out if r["kind"] == KIND[suffix]],
                                [n for n, _ in COLUMNS[suffix]]) for suffix in GRAPH_SUFFIXES}


def graph_state(spark: Any, conf: Any) -> dict[str, list[tuple]]:
    """The four graph tables' rows as the cluster's runs left them."""
    from delta_tables.graph_state import COLUMNS

    return {suffix: table_rows(spark, conf.tables()[suffix], [n for n, _ in COLUMNS[suffix]])
            for suffix in GRAPH_SUFFIXES}


def predict_expected(conf: Any, commits: list[pa.Table]) -> dict[str, Any]:
    """The core's state of the prediction set (tests/jobs/test_predict_job.py ``core``) and
    the ``<name>_subscriptions`` / ``<name>_states`` rows it implies."""
    from delta_tables.predict_state import COLUMNS, state_rows, subscription_rows

    core = predict_case.core(commits)
    compiled = conf.compiled()
    names = {suffix: [n for n, _ in COLUMNS[suffix]] for suffix in ("subscriptions", "states")}
    subs = [dict(zip(names["subscriptions"], row)) for row in subscription_rows(conf)]
    states = [dict(zip(names["states"], row)) for sub in compiled
              for row in state_rows(sub, compiled[sub], core["models"][sub])]
    return {"core": core, "subscriptions": sorted_rows(subs, names["subscriptions"]),
            "states": sorted_rows(states, names["states"])}


def check_predict_state(spark: Any, conf: Any, expected: dict[str, Any]) -> None:
    """The set's tables hold the core's models, instances, late rows, subscriptions and states
    (AssertionError otherwise)."""
    from delta_tables.predict_state import COLUMNS

    predict_case.assert_state_is_core(spark, conf, expected["core"])
    for suffix in ("subscriptions", "states"):
        got = table_rows(spark, conf.tables()[suffix], [n for n, _ in COLUMNS[suffix]])
        assert got == expected[suffix], suffix
