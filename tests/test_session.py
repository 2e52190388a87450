"""The one session builder: DESIGN.md section 7 settings, Delta loaded, jars cached offline."""

from __future__ import annotations

import subprocess
import sys

import pytest

from jobs import session as session_module
from jobs.session import REQUIRED_CONF, DeltaJarsUnavailable, ensure_delta_jars
from tests.sockets import listening_addresses


def test_required_settings_are_applied(spark) -> None:
    for key, value in REQUIRED_CONF.items():
        if key == "spark.sql.extensions":  # Delta's first, then the project's JVM shim
            assert spark.conf.get(key).split(",") == [value, "cep.sql.CepExtensions"], key
            continue
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
    # Every session is built in jobs/session/__init__.py; no other module calls SparkSession.builder.
    # The front door (sql_ext/session_conf.py) configures a builder the user passes in and names
    # it in examples, as the MATCH_RECOGNIZE hook's CEP-MR-109 message does; neither builds one.
    from pathlib import Path

    root = Path(session_module.__file__).resolve().parents[2]  # the checkout
    allowed = {"jobs/session/__init__.py", "sql_ext/session_conf.py", "sql_ext/recognize_hook.py"}
    offenders = [str(p.relative_to(root)) for folder in ("cep", "sql_ext", "udfs", "delta_tables", "jobs")
                 for p in (root / folder).rglob("*.py")
                 if "SparkSession.builder" in p.read_text()
                 and p.relative_to(root).as_posix() not in allowed]
    assert offenders == []
    front_door = (root / "sql_ext" / "session_conf.py").read_text()
    assert ".getOrCreate()" not in front_door.replace(">>> spark = builder.getOrCreate()", "")


def test_the_class_archive_is_keyed_by_the_jars_and_used_only_when_recorded(settings,
                                                                              tmp_path) -> None:
    import dataclasses

    from jobs.session import class_archive

    here = dataclasses.replace(settings, data_dir=tmp_path)
    jars = ensure_delta_jars(settings)
    path = class_archive.archive_path(here, jars)
    assert path.parent == here.ivy_dir and path.suffix == ".jsa"
    assert class_archive.archive_path(here, jars[:-1]) != path  # another jar set, another file
    assert class_archive.java_options(here, jars) == ""         # not recorded: nothing to map
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")
    assert class_archive.java_options(here, jars) == \
        f"-XX:SharedArchiveFile={path} {class_archive.QUIET}"


def test_the_session_jvm_maps_the_class_archive_make_jars_recorded(spark, settings) -> None:
    # `make jars` records the archive; the JVM reports what it mapped (base archive + ours).
    import re
    from pathlib import Path

    from jobs.session.class_archive import archive_path

    archive = archive_path(settings, ensure_delta_jars(settings))
    assert archive.is_file(), f"{archive} missing: `make jars` (python -m jobs fetch-jars) " \
                              "records it"
    jvm = spark.sparkContext._jvm
    pid = jvm.java.lang.ProcessHandle.current().pid()
    home = Path(jvm.java.lang.System.getProperty("java.home"))
    info = subprocess.run([str(home / "bin" / "jcmd"), str(pid), "VM.info"], capture_output=True,
                          text=True, timeout=120).stdout
    found = re.search(r"CDS archive\(s\) mapped at: .*?size (\d+)", info)
    assert found, "the JVM reports no CDS archive:\n" + info[:2000]
    assert int(found.group(1)) > archive.stat().st_size, (found.group(0), archive.stat().st_size)


def test_a_local_session_listens_on_loopback_only_and_authenticates(spark) -> None:
    # Issue 21: the driver's RPC and block-manager ports were bound on the machine's address.
    jvm = spark.sparkContext._jvm
    pid = int(jvm.java.lang.ProcessHandle.current().pid())
    listening = listening_addresses(pid)
    assert len(listening) >= 3, listening  # py4j, the driver's RPC, the block manager
    assert all(address.startswith("127.0.0.1:") for address in listening), listening
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.authenticate") == "true"
    assert conf.get("spark.driver.bindAddress") == "127.0.0.1"
    assert session_module.local_only("spark://h:7077") == {}


def test_java_options_of_conf_are_added_after_the_projects_own(settings, tmp_path) -> None:
    import dataclasses

    extra = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
             "spark.executor.extraJavaOptions": "-Dmine=1", "spark.ui.enabled": "false"}
    here = dataclasses.replace(settings, data_dir=tmp_path, warehouse_dir=tmp_path / "w",
                               spark_extra=extra)
    conf = session_module.session_conf(here, [])
    for key, added in extra.items():
        if key == "spark.ui.enabled":
            assert conf[key] == added
            continue
        assert conf[key].startswith("-Duser.timezone=UTC "), conf[key]
        assert conf[key].endswith(f" {added}"), conf[key]

