"""A driver process on the standalone cluster: runs SQL statements, writes their rows as JSON.

``python -m tests.cluster.driver SPEC OUT``: SPEC is a JSON file with ``master``,
``warehouse``, ``executor_python``, ``statements`` (a list of SQL texts) and optionally
``sketches`` (``[name, sketches.toml mapping, [source versions to run up to]]``: the sketch
job's first run and its incremental ones), ``marker`` (a file written before the statements of
``after_marker`` run, so a test can kill a worker during them); OUT receives ``{"executor_python": [...],
"results": [[row, ...], ...], "missing": [...]}`` with rows as lists of strings. The session is
the project's own (:func:`jobs.session.build_session`): it ships the code.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path


def main(spec_path: str, out_path: str) -> int:
    from delta_tables.settings import load_settings
    from jobs.code_bundle import missing_on_executors
    from jobs.session import build_session
    from sql_ext import register_all

    spec = json.loads(Path(spec_path).read_text())
    settings = load_settings(overrides={"master": spec["master"], "warehouse": spec["warehouse"],
                                        "show_progress": False, "driver_memory": "1g",
                                        "app_name": "spark-cep-cluster-test"})
    settings = replace(settings, spark_extra={
        **settings.spark_extra, "spark.pyspark.python": spec["executor_python"],
        "spark.executor.memory": "1g", "spark.executor.cores": "1", "spark.cores.max": "2",
        "spark.task.maxFailures": "4", **spec.get("conf", {})})
    spark = build_session(settings)
    register_all(spark)
    probe = spark.sparkContext.parallelize(range(4), 4).map(
        lambda _: __import__("sys").executable).distinct().collect()
    from delta_tables.sketch_conf import sketch_from_mapping
    from jobs.state.sketch import run_sketch

    for name, mapping, versions in spec.get("sketches", []):
        conf = sketch_from_mapping(settings, name, mapping)
        for version in versions:
            run_sketch(spark, settings, conf, until_version=version, quiet=True)
    results = []
    for statement in spec["statements"]:
        rows = spark.sql(statement).collect()
        results.append([[None if v is None else str(v) for v in row] for row in rows])
    missing = missing_on_executors(spark)
    if spec.get("marker"):
        # The test kills a worker once this file exists: the statements after it run while
        # the cluster loses an executor.
        Path(spec["marker"]).write_text("running")
    for statement in spec.get("after_marker", []):
        rows = spark.sql(statement).collect()
        results.append([[None if v is None else str(v) for v in row] for row in rows])
    Path(out_path).write_text(json.dumps({"executor_python": sorted(probe), "results": results,
                                          "missing": missing}))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
