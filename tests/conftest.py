"""Shared fixtures: ONE Spark session per test run (local[2], 2 shuffle partitions).

The session owns all configuration (jobs.session.build_session); tests only add a fresh
warehouse folder, so they share the cached Delta jars and downloads with the demo but never
touch the demo's tables. If the Delta jars cannot be loaded the fixture raises
DeltaJarsUnavailable and every Spark test errors, so the run fails.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from delta_tables.settings import Settings, load_settings

TESTS_DIR = Path(__file__).resolve().parent
ROOT = TESTS_DIR.parent

PROCESS_MODULES = (
    "tests/jobs/test_crash_safety.py",   # a `python -m jobs` child (and its JVM) per kill
    "tests/jobs/test_scheduling.py",     # the cron lines and Luigi's command line as processes
    "tests/server/",                     # the Thrift JDBC/ODBC server and its clients
    "tests/connect/",                    # the Spark Connect server
    "tests/test_notebooks.py",           # a Jupyter kernel with its own JVM
    "tests/flink/",                      # PyFlink's JVM, for the conformance cases
    "tests/install/",                    # the wheel in a new environment: a user's JVMs
)
"""Tests that start processes of their own (JVMs, servers, kernels): ``spark`` and ``slow``."""

SLOW_FIXTURES = ("loaded_logs", "sketched_logs", "predicted_heat")
"""Fixtures that load the full real event logs or build state from them: ``slow``."""

LONG_TESTS: dict[str, str] = {
    # node id prefix -> why CI's budget leaves it to `make test-long` (docs/testing.md, "Long tier")
    "tests/cluster/test_standalone.py::test_graph_and_prediction_jobs_give_the_cores_state":
        "the graph and prediction jobs on the cluster; their code ships as the sketch job's "
        "does, and both jobs run locally in tests/jobs",
    "tests/jobs/test_crash_safety.py::test_stopped_before_each_commit_in_turn_then_rerun_"
    "equals_a_from_scratch_build[graph-":
        "the graph's chain of stops goes through the same Run.merge, Run.append and meta "
        "write as the sketch's and the prediction set's chains",
    "tests/jobs/test_crash_safety.py::test_killed_before_a_commit_then_rerun_equals_a_from_"
    "scratch_build[predict-manifest":
        "the second real kill; the sketch's kill stays, and a rerun that writes only the "
        "missing manifest row is tested in process (tests/jobs/test_runner.py)",
    "tests/jobs/test_match_job.py::test_run_by_run_with_crashes_equals_one_run[next]":
        "the job's commits and crash points do not depend on the policy: the strict case "
        "stays, and tests/jobs/test_match_job_random.py runs every policy commit by commit",
    "tests/jobs/test_match_job.py::test_run_by_run_with_crashes_equals_one_run[any]":
        "as the [next] case",
    "tests/jobs/test_match_stream.py::test_start_append_stop_restart_loses_and_repeats_nothing":
        "a clean stop and restart; the killed process's restart and the healed micro-batch "
        "crash stay",
}
"""Tests that ``make test`` (CI) leaves to ``make test-long``: each repeats a path another test
of the budget covers, at a minute or more of JVM starts and Delta commits each."""

TEST_SESSION_SQL_CONF: dict[str, str] = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}
"""The in-process test session evaluates plans without generated code (docs/decisions.md,
"Code generation in the tests"): its thousands of small plans each cost a Janino compile
and JIT work; every process the tests start (demo children, the wheel, servers, kernels,
crash children) keeps Spark's defaults."""

JOB_MODULES = ("tests/jobs/",)
"""The state jobs and loaders end to end on real Delta: a run of a job over 50 rows is about
50 Spark jobs and 6 s (docs/testing.md), and these tests run many: ``slow``."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test ``spark`` (needs the JVM) and ``slow`` (end to end) from what it uses.

    ``spark``: the test asks for the ``spark`` fixture, directly or through another fixture,
    or starts JVMs itself (:data:`PROCESS_MODULES`). ``slow``: the test starts processes,
    needs the full real logs (:data:`SLOW_FIXTURES`) or runs the jobs (:data:`JOB_MODULES`).
    ``long``: the test is one of :data:`LONG_TESTS`, which ``make test`` leaves out. So ``pytest -m "not slow"`` is the
    inner loop and ``pytest -m "not spark"`` needs no JVM at all (docs/testing.md).
    """
    for item in items:
        where = Path(str(item.fspath)).resolve().relative_to(ROOT).as_posix() \
            if str(item.fspath).startswith(str(ROOT)) else ""
        uses = set(getattr(item, "fixturenames", ()))
        processes = where.startswith(PROCESS_MODULES)
        if processes or "spark" in uses:
            item.add_marker(pytest.mark.spark)
        if processes or uses & set(SLOW_FIXTURES) or where.startswith(JOB_MODULES):
            item.add_marker(pytest.mark.slow)
        if item.nodeid.startswith(tuple(LONG_TESTS)):
            item.add_marker(pytest.mark.long)


@pytest.fixture(scope="session")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """Project settings with a fresh, per-run warehouse."""
    warehouse = tmp_path_factory.mktemp("warehouse")
    return load_settings(overrides={"warehouse": str(warehouse), "show_progress": False,
                                    "app_name": "spark-cep-tests", "driver_memory": "3g"})


@pytest.fixture(scope="session")
def spark(settings: Settings) -> Iterator["object"]:
    """The one SparkSession of the run, with Delta Lake and the CEP functions registered."""
    from jobs.session import build_session
    from sql_ext import register_all

    session = build_session(settings)
    for key, value in TEST_SESSION_SQL_CONF.items():
        session.conf.set(key, value)
    register_all(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def loaded_logs(spark: "object", settings: Settings) -> dict[str, object]:
    """The three real BPI logs loaded into the test warehouse once per run."""
    from jobs.loaders.load_logs import load_log

    return {name: load_log(spark, settings, name, quiet=True)
            for name in ("bpi2017_offers", "bpi2017_applications", "bpi2012")}


@pytest.fixture(scope="session")
def generated_checks(spark: "object", settings: Settings) -> object:
    """The check table ``checks`` of the demo and the docs (``jobs.loaders.checks.DEMO_SPEC``: 20,000
    seeded checks with 20 planted kiting rings), written once per run."""
    from jobs.loaders.checks import write_checks

    return write_checks(spark, settings, quiet=True)


@pytest.fixture(scope="session")
def loaded_stocks(spark: "object", settings: Settings) -> object:
    """The real daily stock prices in ``stock_prices``, loaded once per run (the skfolio wheel
    is downloaded once into the shared data cache)."""
    from jobs.loaders.stocks import load_stocks

    return load_stocks(spark, settings, quiet=True)


@pytest.fixture(scope="session")
def loaded_sensors(spark: "object", settings: Settings) -> object:
    """The real hourly temperatures as a probabilistic stream in ``sensor_pstream``, loaded
    once per run (the vega_datasets wheel is downloaded once into the shared data cache)."""
    from jobs.loaders.sensors import load_sensors

    return load_sensors(spark, settings, quiet=True)


@pytest.fixture(scope="session")
def loaded_temperatures(spark: "object", settings: Settings) -> object:
    """The real daily temperatures of five cities in ``daily_temperatures``, loaded once per
    run (the aquacrop wheel is downloaded once into the shared data cache)."""
    from jobs.loaders.temperatures import load_temperatures

    return load_temperatures(spark, settings, quiet=True)


@pytest.fixture(scope="session")
def forced_temperatures(spark: "object", settings: Settings, loaded_temperatures: object
                        ) -> tuple[object, object]:
    """``daily_temperatures`` loaded again (a no-op) and then forced (a rewrite), once per run.

    The rewrite happens before any state is built from the table: a rewrite is not an append,
    so state built before it could not be brought up to date (CEP-PRED-041). Every fixture that
    builds state from ``daily_temperatures`` depends on this one, whatever the test order."""
    from jobs.loaders.temperatures import load_temperatures

    again = load_temperatures(spark, settings, quiet=True)
    return again, load_temperatures(spark, settings, force=True, quiet=True)


@pytest.fixture(scope="session")
def predicted_heat(spark: "object", settings: Settings, forced_temperatures: object) -> object:
    """The prediction set ``heat`` of ``conf/predictions.toml`` over ``daily_temperatures``,
    brought up to date once per run by the predict job through the job framework, so the run
    manifest ``cep_runs`` records it (docs/predict-jobs.md and docs/jobs.md query both)."""
    from jobs.framework.runner import run_job

    return run_job(spark, settings, "predict/heat", quiet=True)


@pytest.fixture(scope="session")
def sketched_logs(spark: "object", settings: Settings, loaded_logs: dict[str, object]
                  ) -> dict[str, object]:
    """The sketches the docs query (``app_sketch`` of ``conf/sketches.toml``, over the BPI 2017
    application log), built once per run by the sketch job into the test warehouse."""
    from jobs.state.sketch import run_sketch

    return {name: run_sketch(spark, settings, name, quiet=True) for name in ("app_sketch",)}


@pytest.fixture(scope="session")
def standing_offers(spark: "object", settings: Settings, loaded_logs: dict[str, object]
                    ) -> list[object]:
    """The standing pattern ``unanswered_offers`` of ``conf/matches.toml`` run over the demo's
    offer feed, one run per commit, as the README demo runs it (docs/standing.md queries its
    tables)."""
    from jobs.demo import write_offer_feed
    from jobs.framework.runner import run_job

    before, _ = write_offer_feed(spark, settings)
    return [run_job(spark, settings, "match/unanswered_offers", until_version=until, quiet=True)
            for until in (before, None)]
