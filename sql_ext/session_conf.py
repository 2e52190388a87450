"""The front door: what any Spark 4 session needs for the CEP functions, in two calls.

Named after Delta's ``configure_spark_with_delta_pip``: :func:`configure` takes a user's
``SparkSession.builder`` before the session starts and adds what only a starting session can
take (the Delta and shim jars, ``spark.sql.extensions``, Delta's catalog, the settings
DESIGN.md section 7 lists as traps); :func:`enable` takes the running session (classic or Spark
Connect) and registers every function and the MATCH_RECOGNIZE parser hook. Both are idempotent.
The project's own session builder (``jobs.session.build_session``) is a user of both.

Example (a session the user builds; needs Java and, once, Maven Central):
    >>> default_delta_package("4.2.0")  # the Delta jars configure asks Spark for
    'io.delta:delta-spark_4.2_2.13:4.4.0'
    >>> from pyspark.sql import SparkSession                       # doctest: +SKIP
    >>> import sql_ext                                              # doctest: +SKIP
    >>> builder = sql_ext.configure(SparkSession.builder.master("local[2]"))  # doctest: +SKIP
    >>> spark = builder.getOrCreate()                               # doctest: +SKIP
    >>> sql_ext.enable(spark).match_recognize                       # doctest: +SKIP
    True
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from cep.errors import CepError

__all__ = ["DELTA_EXTENSION", "DELTA_PACKAGES", "Enabled", "REQUIRED_CONF", "RUNTIME_CONF",
           "UnsupportedSpark", "configure", "default_delta_package", "enable", "merged",
           "submit_args"]

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"

RUNTIME_CONF: dict[str, str] = {
    # A Python UDF over a Parquet/Delta scan hangs forever with columnar input on 4.2.0.
    "spark.sql.execution.arrow.pythonUDF.columnarInput.enabled": "false",
    # The Arrow path of row UDTFs is measured slower than the plain one.
    "spark.sql.execution.pythonUDTF.arrow.enabled": "false",
    # A CEP function's error reaches the caller with its code on the first line (docs/sql.md).
    "spark.sql.execution.pyspark.udf.hideTraceback.enabled": "true",
}
"""Settings DESIGN.md section 7 requires that a running session still accepts."""

REQUIRED_CONF: dict[str, str] = {
    "spark.sql.extensions": DELTA_EXTENSION,
    "spark.sql.catalog.spark_catalog": DELTA_CATALOG,
    **RUNTIME_CONF,
    # The project's own sessions (jobs, servers, demo) read and write in UTC; a user's session
    # keeps its zone (every function is tested under other zones too).
    "spark.sql.session.timeZone": "UTC",
}
"""Every setting the project's own sessions need; the first two only take effect at start."""

DELTA_PACKAGES: dict[str, str] = {
    # delta-spark 4.4.1's jars are not on Maven Central; 4.4.0's Python code is the same
    # apart from its version string (docs/setup.md).
    "4.2": "io.delta:delta-spark_4.2_2.13:4.4.0",
}
"""The Delta Lake jars (Maven coordinates) for each pyspark minor version the tests cover."""


class UnsupportedSpark(CepError):
    """The installed pyspark is a version no Delta jar of :data:`DELTA_PACKAGES` is known for."""

    code = "CEP-SETUP-003"


def default_delta_package(spark_version: str | None = None) -> str:
    """The Delta Lake Maven coordinate for ``spark_version`` (default: the installed pyspark).

    Example:
        >>> default_delta_package("4.2.0")
        'io.delta:delta-spark_4.2_2.13:4.4.0'

    Raises:
        UnsupportedSpark: no tested Delta release is known for that minor version.
    """
    if spark_version is None:
        import pyspark

        spark_version = pyspark.__version__
    minor = ".".join(spark_version.split(".")[:2])
    try:
        return DELTA_PACKAGES[minor]
    except KeyError:
        raise UnsupportedSpark(
            f"pyspark {spark_version} is not a version spark-cep is tested with (tested: "
            f"{', '.join(sorted(DELTA_PACKAGES))}); pass delta_package='io.delta:...' to "
            "sql_ext.configure to choose the Delta jars yourself") from None


def merged(existing: str | None, *values: str) -> str:
    """A comma-separated Spark list with ``values`` appended once each, order kept.

    Example:
        >>> merged("a,b", "b", "c")
        'a,b,c'
        >>> merged(None, "x")
        'x'
    """
    items = [v.strip() for v in (existing or "").split(",") if v.strip()]
    for value in values:
        if value not in items:
            items.append(value)
    return ",".join(items)


def configure(builder: Any, *, delta_package: str | None = None,
              delta_jars: Iterable[str | Path] | None = None,
              shim_jar: str | Path | None = None) -> Any:
    """Add to a session builder everything the CEP functions need; returns the builder.

    Call it before ``getOrCreate()``: jars, extensions and the catalog only take effect in a
    session that starts with them. Settings the builder already has are kept and extended
    (lists) or left alone, except the traps of :data:`REQUIRED_CONF`, which win.

    Args:
        builder: ``SparkSession.builder`` (classic), with whatever the user set on it.
        delta_package: Maven coordinate of the Delta jars, resolved by Spark at start (and
            cached in its Ivy folder); default :func:`default_delta_package` of the installed pyspark.
        delta_jars: local Delta jar files to put on ``spark.jars`` instead of resolving a package.
        shim_jar: the shim's jar; default the packaged one, or a checkout's compiled one
            (``$CEP_DATA_DIR/jvm`` or ``./data/jvm``). Without a jar the session starts without
            the shim: every function works, MATCH_RECOGNIZE is refused with a CEP error.

    Raises:
        UnsupportedSpark: no Delta jars are known for the installed pyspark and none were given.
    """
    options: dict[str, str] = dict(getattr(builder, "_options", {}) or {})
    jar = Path(shim_jar) if shim_jar is not None else _default_shim()
    extensions = [DELTA_EXTENSION]
    jars = [str(j) for j in (delta_jars or ())]
    if jar is not None and jar.is_file():
        jars.append(str(jar))
        from sql_ext.shim import EXTENSION

        extensions.append(EXTENSION)
    if not delta_jars:
        package = delta_package or default_delta_package()
        builder = builder.config("spark.jars.packages",
                                 merged(options.get("spark.jars.packages"), package))
    if jars:
        builder = builder.config("spark.jars", merged(options.get("spark.jars"), *jars))
    builder = builder.config("spark.sql.extensions",
                             merged(options.get("spark.sql.extensions"), *extensions))
    builder = builder.config("spark.sql.catalog.spark_catalog", DELTA_CATALOG)
    for key, value in RUNTIME_CONF.items():
        builder = builder.config(key, value)
    return builder


def submit_args(*, delta_package: str | None = None, shim_jar: str | Path | None = None
                ) -> list[str]:
    """The ``spark-submit`` options that do what :func:`configure` does, for a submitted script.

    ``spark-submit`` starts the JVM before the script runs, so jars a builder names come too
    late for the driver; they go on the command line instead
    (``spark-submit $(spark-cep submit-args) my_script.py``, docs/install.md).

    Example:
        >>> args = submit_args(delta_package="io.delta:x:1", shim_jar="/nonexistent.jar")
        >>> args[:2], args[3]
        (['--packages', 'io.delta:x:1'], 'spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension')
    """
    jar = Path(shim_jar) if shim_jar is not None else _default_shim()
    extensions = [DELTA_EXTENSION]
    args = ["--packages", delta_package or default_delta_package()]
    if jar is not None and jar.is_file():
        from sql_ext.shim import EXTENSION

        extensions.append(EXTENSION)
        args = [*args, "--jars", str(jar)]
    confs = {"spark.sql.extensions": ",".join(extensions),
             "spark.sql.catalog.spark_catalog": DELTA_CATALOG, **RUNTIME_CONF}
    for key, value in confs.items():
        args += ["--conf", f"{key}={value}"]
    return args


def _default_shim() -> Path | None:
    from sql_ext.shim import build_shim

    data = Path(os.environ.get("CEP_DATA_DIR") or Path.cwd() / "data")
    return build_shim(data / "jvm", quiet=True)


@dataclass(frozen=True)
class Enabled:
    """What :func:`enable` made available in a session."""

    functions: tuple[str, ...]
    """The SQL functions registered."""
    match_recognize: bool | None
    """Whether MATCH_RECOGNIZE statements are rewritten by this session's JVM: None on a Spark
    Connect client, where the server's JVM decides (``python -m jobs connect-server`` has it)."""


def enable(spark: Any) -> Enabled:
    """Register every CEP function and the MATCH_RECOGNIZE hook in a running session.

    Works on a classic session and on a Spark Connect client session; calling it again is
    harmless. A classic session started without the shim (no :func:`configure`) still gets
    every function; its ``spark.sql`` then refuses a MATCH_RECOGNIZE statement with
    CEP-MR-109, which names the call to add, instead of Spark's syntax error.
    """
    from sql_ext.recognize_hook import install_rewriter, refuse_without_shim
    from sql_ext.register import is_connect_session, register_all

    for key, value in RUNTIME_CONF.items():
        spark.conf.set(key, value)
    names = tuple(register_all(spark))
    if is_connect_session(spark):
        return Enabled(names, None)
    installed = install_rewriter(spark)
    if not installed:
        refuse_without_shim(spark)
    return Enabled(names, installed)
