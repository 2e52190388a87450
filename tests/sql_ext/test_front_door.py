"""The front door's two calls on the test run's session (issue 48; the wheel outside the
checkout: tests/install/test_wheel.py)."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

import sql_ext
from sql_ext.recognize_hook import refuse_without_shim
from sql_ext.registry import FUNCTIONS
from sql_ext.session_conf import REQUIRED_CONF, UnsupportedSpark, configure, default_delta_package

MR = ("SELECT * FROM VALUES (1, 'a'), (2, 'b') AS t(id, type) MATCH_RECOGNIZE (ORDER BY id "
      "MEASURES LAST(B.id) AS b PATTERN (A B) DEFINE A AS type = 'a', B AS type = 'b')")


def test_enable_is_idempotent_and_gives_every_function(spark) -> None:
    first, again = sql_ext.enable(spark), sql_ext.enable(spark)
    assert first == again
    assert first.functions == tuple(f.name for f in FUNCTIONS if f.status == "available" and f.adapter)
    assert first.match_recognize is True
    assert [r.b for r in spark.sql(MR).collect()] == [2]
    for key in ("spark.sql.execution.pythonUDTF.arrow.enabled",
                "spark.sql.execution.pyspark.udf.hideTraceback.enabled"):
        assert spark.conf.get(key) == REQUIRED_CONF[key]


def test_configure_extends_what_the_builder_has(tmp_path) -> None:
    jar = tmp_path / "cep-sql.jar"
    jar.write_bytes(b"PK")
    builder = (SparkSession.builder.config("spark.jars", "/opt/mine.jar")
               .config("spark.sql.extensions", "my.Extension")
               .config("spark.jars.packages", "org.example:thing:1.0"))
    configured = configure(configure(builder, shim_jar=jar), shim_jar=jar)  # twice: same result
    options = configured._options
    assert options["spark.jars"] == f"/opt/mine.jar,{jar}"
    assert options["spark.sql.extensions"] == \
        "my.Extension,io.delta.sql.DeltaSparkSessionExtension,cep.sql.CepExtensions"
    assert options["spark.jars.packages"] == \
        "org.example:thing:1.0,io.delta:delta-spark_4.2_2.13:4.4.0"
    assert options["spark.sql.catalog.spark_catalog"].endswith("DeltaCatalog")
    assert "spark.sql.session.timeZone" not in options  # the user's zone stays the user's
    local = configure(SparkSession.builder, delta_jars=["/j/delta.jar"],
                      shim_jar=tmp_path / "absent.jar")._options
    assert local["spark.jars"] == "/j/delta.jar" and "spark.jars.packages" not in local
    assert local["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"


def test_an_untested_spark_is_refused_with_a_code() -> None:
    with pytest.raises(UnsupportedSpark, match="CEP-SETUP-003: pyspark 4.0.1 is not a version"):
        default_delta_package("4.0.1")


def test_without_the_shim_match_recognize_names_the_call_to_add(spark) -> None:
    other = spark.newSession()  # a real session whose sql method is wrapped as enable does
    refuse_without_shim(other)
    refuse_without_shim(other)  # once only
    with pytest.raises(Exception) as info:
        other.sql(MR)
    message = str(info.value)
    assert message.startswith("CEP-MR-109: line 1, column 56: MATCH_RECOGNIZE needs the JVM shim")
    assert "sql_ext.configure(SparkSession.builder)" in message
    assert other.sql("SELECT 'MATCH_RECOGNIZE' AS w").collect()[0].w == "MATCH_RECOGNIZE"
