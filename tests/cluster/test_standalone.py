"""The project on a real Spark standalone cluster: a master and two workers in separate JVMs.

The cluster (tests/cluster/standalone.py) runs on loopback; its executors' Python is
``.venv-exec``, which has the third-party packages but not the project: every answer below
proves the session shipped the code (jobs/code_bundle.py). A driver process on the cluster
(tests/cluster/driver.py) and the test run's local session read the same Delta tables and
must give the same rows: the SQL functions, MATCH_RECOGNIZE, and the sketch job's first and
incremental runs (node rows compared bit for bit with the core's), and a worker SIGKILLed in
the middle of a query. One driver process does all of it: each JVM start costs seconds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from tests.cluster.standalone import EXEC_PYTHON, ROOT, standalone_cluster
from tests.udfs.test_cet_trends import checks
from tests.udfs.test_match_prob import FIG1, long_rows
from tests.udfs.test_predict_match import SCHEMA, random_events

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SKETCH = {"stream_col": "user", "type_col": "type", "ts_col": "ts", "id_col": "id", "m": 64,
          "k": 2, "C": 3, "seeds": [3, 4]}


def statements(warehouse: Path, sketch: str) -> list[str]:
    views = [f"CREATE OR REPLACE TEMPORARY VIEW {name} AS SELECT * FROM delta.`{warehouse / name}`"
             for name in ("cl_events", "cl_checks", "cl_prob", f"{sketch}_nodes")]
    return views + [
        "SELECT user, event_ids, variables FROM match_seq(pattern => 'PATTERN A; B; C WITHIN 10 "
        "MINUTES', key_col => 'user', events => TABLE(cl_events))",
        "SELECT * FROM cl_events MATCH_RECOGNIZE (PARTITION BY user ORDER BY ts, id MEASURES "
        "FIRST(A.id) AS a_id, LAST(B.id) AS b_id, count(*) AS n ONE ROW PER MATCH AFTER MATCH "
        "SKIP PAST LAST ROW PATTERN (A B+ C) DEFINE A AS type = 'A', B AS type = 'B', "
        "C AS type = 'C')",
        "SELECT user, instance, state, probability, matched FROM predict_match(subscription => "
        "'PATTERN A, B; C', key_col => 'user', lookahead => 3, events => TABLE(cl_events))",
        "SELECT bank, unix_micros(window_start), event_ids FROM cet_trends(pattern => "
        "'PATTERN check+ c[] WHERE c[i].amount > 1.05 * c[i-1].amount WITHIN 2 HOURS', "
        "key_col => 'bank', events => TABLE(cl_checks))",
        "SELECT * FROM match_prob('PATTERN a, b+, c', TABLE(cl_prob), window => 6, "
        "key_col => 'sid')",
        f"SELECT stream, pos_start, pos_end, node_ids FROM approx_match_seq(pattern => "
        f"'PATTERN A; B', mode => 'intervals', sketch => TABLE({sketch}_nodes))",
    ]


def as_strings(rows: list) -> list[list[str | None]]:
    return sorted([[None if v is None else str(v) for v in row] for row in rows],
                  key=lambda r: [("" if v is None else v) for v in r])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if not EXEC_PYTHON.exists():
        pytest.fail(f"{EXEC_PYTHON} is missing: `make exec-venv` (make test builds it)")
    with standalone_cluster(tmp_path_factory.mktemp("cluster")) as running:
        yield running


@pytest.fixture(scope="module")
def tables(spark, settings) -> list[int]:
    """The source tables, written by the local session; returns the events' two versions."""
    warehouse = settings.warehouse_dir
    events = spark.createDataFrame(random_events(11, n_users=5, per_user=60), SCHEMA)
    location = str(warehouse / "cl_events")
    events.limit(0).write.format("delta").option("delta.enableChangeDataFeed", "true") \
        .save(location)
    ordered = events.orderBy("id")
    ordered.where("id < 150").write.format("delta").mode("append").save(location)
    ordered.where("id >= 150").write.format("delta").mode("append").save(location)
    spark.createDataFrame(checks(7), "id BIGINT, bank STRING, ts TIMESTAMP, src STRING, "
                          "dest STRING, amount DOUBLE, type STRING") \
        .write.format("delta").save(str(warehouse / "cl_checks"))
    spark.createDataFrame(long_rows({7: (1, FIG1), 8: (1, FIG1[::-1])}),
                          "sid INT, t BIGINT, value STRING, p DOUBLE") \
        .write.format("delta").save(str(warehouse / "cl_prob"))
    return [1, 2]


LONG = ("SELECT user, count(*) AS matches, sum(n_events) AS events FROM match_seq("
        "pattern => 'PATTERN A; B; C WITHIN 1 HOUR', key_col => 'user', events => TABLE("
        "SELECT id, concat('u', id % 40) AS user, element_at(array('A', 'B', 'C', 'D'), "
        "cast(id % 7 % 4 + 1 AS INT)) AS type, timestamp_seconds(id) AS ts "
        "FROM range(600000))) GROUP BY user")


@pytest.fixture(scope="module")
def far(cluster, settings, tables, tmp_path_factory) -> dict:
    """One driver process on the cluster (a JVM start is the cost): the sketch job's first and
    incremental runs, every statement, then a long query during which one worker's whole
    process group (worker JVM, its executor, their Python workers) is SIGKILLed."""
    import os
    import signal
    import time

    tmp = tmp_path_factory.mktemp("driver")
    marker = tmp / "running"
    warehouse = settings.warehouse_dir
    spec = {"master": cluster.url, "warehouse": str(warehouse),
            "executor_python": str(EXEC_PYTHON), "statements": statements(warehouse, "clsk_far"),
            "sketches": [["clsk_far", {**SKETCH, "source": "cl_events"}, tables]],
            "marker": str(marker), "after_marker": [LONG]}
    (tmp / "spec.json").write_text(json.dumps(spec))
    driver = subprocess.Popen([sys.executable, "-m", "tests.cluster.driver",
                               str(tmp / "spec.json"), str(tmp / "out.json")],
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
    deadline = time.monotonic() + 480
    while not marker.exists():
        if driver.poll() is not None:
            pytest.fail(f"the driver failed: {driver.stderr.read()[-4000:]}")  # type: ignore[union-attr]
        if time.monotonic() > deadline:
            driver.kill()
            pytest.fail("the driver never reached the long query")
        time.sleep(0.2)
    time.sleep(1.0)  # the long query is being planned or run: its tasks need several seconds
    victim = cluster.workers[0]
    running = driver.poll() is None
    os.killpg(victim.pid, signal.SIGKILL)
    _, err = driver.communicate(timeout=600)
    assert driver.returncode == 0, err[-4000:]
    out = json.loads((tmp / "out.json").read_text())
    return {**out, "stderr": err, "running_at_kill": running,
            "victim_status": victim.wait(30)}


def test_functions_and_the_sketch_job_give_the_local_rows(spark, settings, far) -> None:
    from delta_tables.sketch_conf import sketch_from_mapping
    from delta_tables.sketch_state import tree_to_arrow
    from cep.sketch import SketchTree

    # The executors ran the venv without the project, and found everything they import.
    assert far["executor_python"] == [str(EXEC_PYTHON)] and far["missing"] == []
    warehouse = settings.warehouse_dir
    # The same statements in the local session, over the same tables (the sketch the
    # cluster's job wrote included): the same rows.
    near = [as_strings(spark.sql(s).collect()) for s in statements(warehouse, "clsk_far")]
    assert len(far["results"]) == len(near) + 1  # + the long query of the other test
    for statement, got, want in zip(statements(warehouse, "clsk_far"), far["results"], near):
        assert as_strings(got) == want, statement
    assert sum(len(rows) for rows in near) > 20  # the statements do find rows
    # The job's two runs on the cluster wrote the rows the core builds from all the events.
    config = sketch_from_mapping(settings, "clsk_far", {**SKETCH, "source": "cl_events"}).config
    events = spark.read.format("delta").load(str(warehouse / "cl_events")) \
        .orderBy("ts", "id").toArrow()
    users = events.column("user").to_pylist()
    types = events.column("type").to_pylist()
    micros = events.column("ts").cast(pa.int64()).to_pylist()
    expected = []
    for user in sorted(set(users)):
        mine = [i for i, u in enumerate(users) if u == user]
        tree = SketchTree.build([types[i] for i in mine], [micros[i] for i in mine], config)
        expected += [(user, r["node_id"], r["level"], r["idx"], r["is_top"], r["is_open"],
                      r["bits"]) for r in tree_to_arrow(user, tree).to_pylist()]
    columns = "stream, node_id, level, idx, is_top, is_open, bits"
    got = spark.sql(f"SELECT {columns} FROM delta.`{warehouse / 'clsk_far_nodes'}`").collect()
    assert sorted(tuple(r) for r in got) == sorted(expected) and expected


def test_a_worker_killed_mid_query_gives_the_same_answer(spark, far) -> None:
    """SIGKILL of one worker while the long query runs: Spark reports the lost executor,
    reruns its tasks on the other worker, and the rows are the local session's."""
    import signal

    assert far["running_at_kill"], "the query ended before the worker could be killed"
    assert far["victim_status"] == -signal.SIGKILL
    assert "Lost executor" in far["stderr"]  # Spark saw the loss (its scheduler logs an ERROR)
    assert as_strings(far["results"][-1]) == as_strings(spark.sql(LONG).collect())
