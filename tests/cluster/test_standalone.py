"""The project on a real Spark standalone cluster: a master and two workers in separate JVMs.

The cluster (tests/cluster/standalone.py) runs on loopback; its executors' Python is
``.venv-exec``, which has the third-party packages but not the project: every answer below
proves the session shipped the code (jobs/code_bundle.py). A driver process on the cluster
(tests/cluster/driver.py) and the test run's local session read the same Delta tables and
must give the same rows: the SQL functions, MATCH_RECOGNIZE, and the sketch job's first and
incremental runs (node rows compared bit for bit).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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


def run_driver(cluster, settings, spec: dict, tmp: Path) -> dict:
    (tmp / "spec.json").write_text(json.dumps(spec))
    done = subprocess.run([sys.executable, "-m", "tests.cluster.driver", str(tmp / "spec.json"),
                           str(tmp / "out.json")], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads((tmp / "out.json").read_text())


def test_functions_and_the_sketch_job_give_the_local_rows(spark, settings, cluster, tables,
                                                          tmp_path) -> None:
    from delta_tables.sketch_conf import sketch_from_mapping
    from jobs.state.sketch import run_sketch

    warehouse = settings.warehouse_dir
    sketch = {**SKETCH, "source": "cl_events"}
    spec = {"master": cluster.url, "warehouse": str(warehouse),
            "executor_python": str(EXEC_PYTHON), "statements": statements(warehouse, "clsk_far"),
            "sketches": [["clsk_far", sketch, tables]]}
    far = run_driver(cluster, settings, spec, tmp_path)
    # The executors ran the venv without the project, and found everything they import.
    assert far["executor_python"] == [str(EXEC_PYTHON)] and far["missing"] == []

    local_conf = sketch_from_mapping(settings, "clsk_near", sketch)
    for version in tables:
        run_sketch(spark, settings, local_conf, until_version=version, quiet=True)
    near = [as_strings(spark.sql(s).collect()) for s in statements(warehouse, "clsk_near")]
    assert len(far["results"]) == len(near)
    for statement, got, want in zip(statements(warehouse, "clsk_near"), far["results"], near):
        assert as_strings(got) == want, statement
    assert sum(len(rows) for rows in near) > 20  # the statements do find rows
    columns = "stream, node_id, level, idx, is_top, is_open, bits"
    nodes = {name: as_strings(spark.sql(f"SELECT {columns} FROM delta.`{warehouse / name}`")
                              .collect()) for name in ("clsk_far_nodes", "clsk_near_nodes")}
    assert nodes["clsk_far_nodes"] == nodes["clsk_near_nodes"] and nodes["clsk_near_nodes"]


LONG = ("SELECT user, count(*) AS matches, sum(n_events) AS events FROM match_seq("
        "pattern => 'PATTERN A; B; C WITHIN 1 HOUR', key_col => 'user', events => TABLE("
        "SELECT id, concat('u', id % 40) AS user, element_at(array('A', 'B', 'C', 'D'), "
        "cast(id % 7 % 4 + 1 AS INT)) AS type, timestamp_seconds(id) AS ts "
        "FROM range(300000))) GROUP BY user")


def test_a_worker_killed_mid_query_gives_the_same_answer(spark, settings, cluster,
                                                         tmp_path) -> None:
    """SIGKILL one worker's whole process group (worker JVM, its executor and Python workers)
    while a query runs: Spark reruns the lost tasks on the other worker; the rows are the
    local session's. Runs last in this module: the cluster keeps one worker afterwards."""
    import os
    import signal
    import time

    marker = tmp_path / "running"
    spec = {"master": cluster.url, "warehouse": str(settings.warehouse_dir),
            "executor_python": str(EXEC_PYTHON), "statements": [], "marker": str(marker),
            "after_marker": [LONG]}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    driver = subprocess.Popen([sys.executable, "-m", "tests.cluster.driver",
                               str(tmp_path / "spec.json"), str(tmp_path / "out.json")],
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
    deadline = time.monotonic() + 300
    while not marker.exists():
        assert driver.poll() is None, driver.stderr.read()[-4000:]  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "the driver never reached the query"
        time.sleep(0.2)
    time.sleep(3.0)  # tasks of the query are running on both executors now
    victim = cluster.workers[0]
    assert driver.poll() is None, "the query ended before the worker could be killed"
    os.killpg(victim.pid, signal.SIGKILL)
    _, err = driver.communicate(timeout=600)
    assert driver.returncode == 0, err[-4000:]
    assert victim.wait(30) == -signal.SIGKILL
    assert "Lost executor" in err  # Spark saw the loss (its scheduler logs it as an ERROR)
    far = json.loads((tmp_path / "out.json").read_text())["results"][0]
    assert as_strings(far) == as_strings(spark.sql(LONG).collect())
