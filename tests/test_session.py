"""The one session builder: DESIGN.md section 7 settings, Delta loaded, jars cached offline."""

from __future__ import annotations

import subprocess
import sys

import pytest

from jobs import session as session_module
from jobs.session import REQUIRED_CONF, DeltaJarsUnavailable, ensure_delta_jars


def test_required_settings_are_applied(spark) -> None:
    for key, value in REQUIRED_CONF.items():
        assert spark.conf.get(key) == value, key
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"
    assert spark.sparkContext.master == "local[2]"


def test_warehouse_and_scratch_live_in_the_data_dir(spark, settings) -> None:
    assert spark.conf.get("spark.sql.warehouse.dir").endswith(str(settings.warehouse_dir))
    assert spark.sparkContext.getConf().get("spark.local.dir") == str(settings.scratch_dir)


def test_python_workers_run_this_interpreter_with_pyarrow(spark) -> None:
    from pyspark.sql.functions import udf

    @udf("string")
    def worker_python(_):  # no hints: pyspark would try to infer a pandas UDF type
        import sys as worker_sys

        import pyarrow

        return f"{worker_sys.executable}|{pyarrow.__version__}"

    value = spark.range(1).select(worker_python("id")).first()[0]
    executable, _, arrow_version = value.partition("|")
    assert executable == sys.executable and arrow_version


def test_delta_sql_works(spark, tmp_path) -> None:
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    assert spark.read.format("delta").load(path).count() == 3


def test_cached_jars_need_no_network(settings, monkeypatch) -> None:
    # The fixture resolved the jars already; a second call must not start any subprocess.
    def refuse(*args, **kwargs):
        raise AssertionError("ensure_delta_jars tried to resolve again")

    monkeypatch.setattr(subprocess, "run", refuse)
    jars = ensure_delta_jars(settings)
    assert any("delta-spark" in j.name for j in jars)


def test_missing_jars_fail_with_a_clear_message(settings, tmp_path) -> None:
    import dataclasses

    broken = dataclasses.replace(settings, data_dir=tmp_path,
                                 delta_package="io.delta:delta-spark_4.2_2.13:0.0.0-missing")
    with pytest.raises(DeltaJarsUnavailable) as info:
        ensure_delta_jars(broken, quiet=True)
    message = str(info.value)
    assert message.startswith("CEP-SETUP-001")
    assert "io.delta:delta-spark_4.2_2.13:0.0.0-missing" in message
    assert "Maven Central" in message and "make jars" in message


def test_session_module_has_one_builder() -> None:
    # Every session is built in jobs/session.py; no other module calls SparkSession.builder.
    from pathlib import Path

    root = Path(session_module.__file__).resolve().parents[1]
    offenders = [str(p.relative_to(root)) for folder in ("cep", "sql_ext", "udfs", "delta_tables", "jobs")
                 for p in (root / folder).rglob("*.py")
                 if "SparkSession.builder" in p.read_text() and p.name != "session.py"]
    assert offenders == []
