"""The project on a real Spark standalone cluster: a master and three workers in separate JVMs.

The cluster (tests/cluster/standalone.py) runs on loopback; its executors' Python is
``.venv-exec``, which has the third-party packages but not the project: every answer below
proves the session shipped the code (jobs/session/code_bundle.py). A driver process on the cluster
(tests/cluster/driver.py) and the test run's local session read the same Delta tables and
must give the same rows: the SQL functions, MATCH_RECOGNIZE, the sketch, graph and prediction
jobs' first and incremental runs (every state table compared row for row with the core's
state, tests/cluster/state_jobs.py; the graph and prediction jobs in the long tier only), a sketch run during which a worker is SIGKILLed (Spark's
retry and the core's state, or a typed error and the state as before), and a worker SIGKILLed
in the middle of a query. The application uses two executors of one core; the third worker is
the spare the master moves a lost executor to. One driver process does all of it: each JVM
start costs seconds.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

from tests.cluster.standalone import EXEC_PYTHON, ROOT, standalone_cluster
from tests.cluster.state_jobs import (GRAPH, PREDICT, check_predict_state, graph_commits,
                                      graph_expected, graph_state, predict_commits,
                                      predict_expected, write_sources)
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
    with standalone_cluster(tmp_path_factory.mktemp("cluster"), workers=3) as running:
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
def job_sources(spark, settings) -> dict[str, list[int]]:
    """The graph and prediction jobs' sources (tests/cluster/state_jobs.py)."""
    return write_sources(spark, settings)


def _wait_for(path: Path, driver: subprocess.Popen, err: Path, what: str,
              seconds: float = 480) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if driver.poll() is not None:
            pytest.fail(f"the driver ended before {what}: {err.read_text()[-4000:]}")
        if time.monotonic() > deadline:
            driver.kill()
            pytest.fail(f"the driver never reached {what}")
        time.sleep(0.05)


def _kill_a_worker(cluster, pid: int | None = None) -> subprocess.Popen:
    """SIGKILL the worker ``pid`` descends from, else the first worker that runs an executor
    now, with everything below it (worker JVM, executor, Python daemon and workers)."""
    victim = None if pid is None else cluster.worker_of(pid)
    if victim is None:
        busy = cluster.with_executor()
        assert busy, "no worker has an executor"
        victim = busy[0]
    cluster.kill(victim)
    return victim


def _gone(pid: int) -> bool:
    """The process has ended (no longer in /proc, or a zombie)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.fixture(scope="module")
def far(cluster, settings, tables, tmp_path_factory, request) -> dict:
    """One driver process on the cluster (a JVM start is the cost): the sketch job's first run
    and its incremental run, during which one worker is SIGKILLed with everything below it;
    the graph and prediction jobs' first and incremental runs when their test is selected (it
    is in the long tier: tests/conftest.py LONG_TESTS); every statement; then a long
    query during which another worker is SIGKILLed (three workers: the master gives the
    application a new executor on the spare one after the first kill)."""
    tmp = tmp_path_factory.mktemp("driver")
    marker, kill_marker, calls = tmp / "running", tmp / "job_running", tmp / "calls.log"
    warehouse = settings.warehouse_dir
    graphs, predictions = [], []
    if any(item.originalname == "test_graph_and_prediction_jobs_give_the_cores_state"
           for item in request.session.items):
        job_sources = request.getfixturevalue("job_sources")
        graph, predict = job_sources["cl_graph"], job_sources["cl_pred"]
        graphs = [["clg_far", GRAPH, [graph[0], graph[-1]]]]
        predictions = [["clp_far", PREDICT, [predict[0], predict[-1]]]]
    spec = {"master": cluster.url, "warehouse": str(warehouse),
            "executor_python": str(EXEC_PYTHON), "statements": statements(warehouse, "clsk_far"),
            "graphs": graphs, "predictions": predictions,
            "kill_job": {"name": "clsk_far", "mapping": {**SKETCH, "source": "cl_events"},
                         "first": tables[0], "target": tables[1], "marker": str(kill_marker),
                         "calls": str(calls), "chunk_rows": 16, "pause": 0.25},
            "marker": str(marker), "after_marker": [LONG]}
    (tmp / "spec.json").write_text(json.dumps(spec))
    err = tmp / "driver.err"
    started = time.monotonic()
    with err.open("w") as sink:
        driver = subprocess.Popen([sys.executable, "-m", "tests.cluster.driver",
                                   str(tmp / "spec.json"), str(tmp / "out.json")],
                                  cwd=ROOT, stdout=subprocess.DEVNULL, stderr=sink)
        try:
            # 1. The sketch run's Python stage has started on an executor: kill that worker.
            _wait_for(kill_marker, driver, err, "the sketch run's Python stage")
            python_pid = int(kill_marker.read_text())
            job_victim = _kill_a_worker(cluster, python_pid)
            job_kill_at = time.time()
            job_phase = time.monotonic() - started
            # 2. The long query: kill another worker (the master replaced the lost executor
            # on the spare worker, and the driver waited for it).
            _wait_for(marker, driver, err, "the long query")
            time.sleep(1.0)  # the long query is being planned or run: its tasks need seconds
            running = driver.poll() is None
            victim = _kill_a_worker(cluster)
            driver.wait(timeout=600)
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.wait(30)
    stderr = err.read_text()
    assert driver.returncode == 0, stderr[-4000:]
    out = json.loads((tmp / "out.json").read_text())
    far = {**out, "stderr": stderr, "running_at_kill": running,
           "victim_status": victim.wait(30), "job_victim_status": job_victim.wait(30),
           "job_kill_at": job_kill_at, "calls": calls.read_text().splitlines(),
           "python_pid": python_pid, "python_gone": _gone(python_pid),
           "seconds": {"to_job_kill": round(job_phase, 1),
                       "driver": round(time.monotonic() - started, 1)},
           "victims": [cluster.workers.index(job_victim), cluster.workers.index(victim)]}
    (tmp / "timings.json").write_text(json.dumps({**far["seconds"], "runs": out["runs"]}))
    return far


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
    # The job's two runs on the cluster (a worker killed during the second:
    # test_a_worker_killed_during_a_state_job_run) wrote the rows the core builds from all
    # the events.
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


def test_graph_and_prediction_jobs_give_the_cores_state(spark, settings, job_sources,
                                                       far) -> None:
    """Each job's first run (source version 1) and incremental run (versions 2 and 3: a late
    row, a row without a key, timestamp ties) on the cluster, the prediction's in Spark
    (``applyInArrow`` on the executors): every state table holds exactly the core's rows."""
    from delta_tables.catalog import read_table
    from delta_tables.graph_state import GraphConf
    from delta_tables.predict_state import PredictionConf

    runs = {(r["name"], r["source_version"]): r for r in far["runs"]}
    for name, source in (("clg_far", "cl_graph"), ("clp_far", "cl_pred")):
        first, last = job_sources[source][0], job_sources[source][-1]
        assert runs[(name, first)]["written"] and runs[(name, first)]["source_from"] == 0
        assert runs[(name, last)]["written"] and runs[(name, last)]["source_from"] == first + 1
    graph = GraphConf.from_mapping(settings, "clg_far", GRAPH)
    expected = graph_expected(graph, pa.concat_tables(graph_commits()))
    assert graph_state(spark, graph) == expected
    assert all(expected.values()) and len(expected["event_vertices"]) > 5
    assert read_table(spark, graph.tables()["late"]).count() == 0  # no lateness: none late
    prediction = PredictionConf.from_mapping(settings, "clp_far", PREDICT)
    check_predict_state(spark, prediction, predict_expected(prediction, predict_commits()))


def test_a_worker_killed_during_a_state_job_run(tables, far) -> None:
    """A worker SIGKILLed (and all below it) while the sketch's incremental run is in its
    Python stage: either Spark reruns the lost tasks and the run completes, or the run raises a
    typed error (CEP-...) with every state table at the version it had before and a rerun
    completes. A half-written state fails. Either way the nodes are then the core's
    (test_functions_and_the_sketch_job_give_the_local_rows compares them)."""
    import logging

    kill = far["kill"]
    assert kill["first"]["written"] and kill["executors_before"] == 2
    assert far["job_victim_status"] == -signal.SIGKILL
    # The victim was the worker running the Python worker that wrote the marker, which died.
    assert far["python_gone"], far["python_pid"]
    # The kill landed inside the run: after its Python stage had started (the marker is its
    # first process_bucket call), before it ended, with calls after it, and Spark had tasks
    # to rerun.
    starts = [float(line.split()[1]) for line in far["calls"] if line.startswith("start")]
    assert starts and min(starts) <= far["job_kill_at"] < max(starts)
    assert kill["started"] < far["job_kill_at"] < kill["ended"]
    assert kill["failed_tasks"] + kill["stage_retries"] > 0, kill
    assert "Lost executor" in far["stderr"]
    before, after = kill["before"], kill["after"]
    if kill["outcome"] == "retry":
        done = kill["result"]
        assert done["written"] and not done["resumed"]
        assert (done["source_from"], done["source_version"]) == (tables[1], tables[1])
        # One commit per written table: nodes, open, meta (and late if any event was late).
        assert after == {**before, "nodes": before["nodes"] + 1, "open": before["open"] + 1,
                         "meta": before["meta"] + 1,
                         "late": before["late"] + (1 if done["late"] else 0)}, (before, after)
    else:
        assert str(kill["code"] or "").startswith("CEP-"), kill["error"]
        assert after == before, (before, after)  # no half-written state
        assert kill["rerun"]["written"] and kill["rerun"]["source_version"] == tables[1]
        done = kill["rerun"]
    logging.getLogger(__name__).warning(
        "worker%d killed %.2f s into the sketch run (%.1f s after the driver started): "
        "outcome %s; %d failed task(s), %d stage re-attempt(s); run %.1f s", far["victims"][0],
        far["job_kill_at"] - kill["started"], far["seconds"]["to_job_kill"], kill["outcome"],
        kill["failed_tasks"], kill["stage_retries"], kill["ended"] - kill["started"])


def test_a_worker_killed_mid_query_gives_the_same_answer(spark, far) -> None:
    """SIGKILL of one worker while the long query runs: Spark reports the lost executor,
    reruns its tasks on the other worker, and the rows are the local session's."""
    assert far["running_at_kill"], "the query ended before the worker could be killed"
    assert far["victim_status"] == -signal.SIGKILL
    assert "Lost executor" in far["stderr"]  # Spark saw the loss (its scheduler logs an ERROR)
    assert as_strings(far["results"][-1]) == as_strings(spark.sql(LONG).collect())
