"""The one session builder: Spark with Delta Lake and every setting DESIGN.md section 7 lists.

The Delta jars are resolved from Maven Central once (Spark's own Ivy, run by ``spark-submit``
in a subprocess so a failure is reported clearly) and recorded in a manifest; later starts put
the cached jars on ``spark.jars`` and never touch the network.

Example:
    >>> from jobs.session import build_session
    >>> spark = build_session()                       # doctest: +SKIP
    >>> spark.sql("SELECT count(*) FROM bpi2012").show()  # doctest: +SKIP
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Collection, Mapping

from cep.errors import CepError
from delta_tables.settings import Settings, load_settings
from jobs.session import class_archive
from jobs.session.shim import shim_jar
from sql_ext.session_conf import REQUIRED_CONF as CEP_REQUIRED_CONF, configure, enable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Settings that DESIGN.md section 7 requires; conf/spark.toml [spark] cannot override them.
REQUIRED_CONF: dict[str, str] = dict(CEP_REQUIRED_CONF)


class DeltaJarsUnavailable(CepError):
    """The Delta Lake jars could not be resolved or loaded."""

    code = "CEP-SETUP-001"


def _jar_manifest(settings: Settings) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", settings.delta_package)
    return settings.ivy_dir / f"{safe}.jars"


def _read_manifest(manifest: Path) -> list[Path] | None:
    if not manifest.exists():
        return None
    jars = [Path(line) for line in manifest.read_text().splitlines() if line.strip()]
    if not jars or not all(j.is_file() for j in jars):
        return None
    return jars


def ensure_delta_jars(settings: Settings, *, quiet: bool = False) -> list[Path]:
    """Return the local Delta jar files, resolving them from Maven Central on first use.

    Raises:
        DeltaJarsUnavailable: resolution failed; the message says what and how to fix it.
    """
    manifest = _jar_manifest(settings)
    jars = _read_manifest(manifest)
    if jars is not None:
        return jars
    import pyspark

    spark_submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    settings.ivy_dir.mkdir(parents=True, exist_ok=True)
    if not quiet:
        print(f"Resolving {settings.delta_package} from Maven Central into {settings.ivy_dir} "
              "(first run only) ...", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        noop = Path(tmp) / "noop.py"
        noop.write_text("pass\n")
        cmd = [str(spark_submit), "--master", "local[1]",
               "--conf", f"spark.jars.ivy={settings.ivy_dir}",
               "--packages", settings.delta_package]
        if settings.delta_repository:
            cmd += ["--repositories", settings.delta_repository]
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
        try:
            proc = subprocess.run(cmd + [str(noop)], capture_output=True, text=True, env=env,
                                  timeout=900, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise DeltaJarsUnavailable(_jars_help(settings, f"spark-submit failed to run: {exc}"))
    if proc.returncode != 0:
        detail = [ln.strip() for ln in proc.stderr.splitlines()
                  if "unresolved" in ln.lower() or "not found" in ln.lower()
                  or "JAVA_HOME" in ln or "java" in ln.lower() and "no such" in ln.lower()]
        raise DeltaJarsUnavailable(_jars_help(
            settings, "; ".join(dict.fromkeys(detail[-4:])) or proc.stderr.strip()[-800:]))
    jars = sorted((settings.ivy_dir / "jars").glob("*.jar"))
    if not any("delta-spark" in j.name for j in jars):
        raise DeltaJarsUnavailable(_jars_help(settings, "resolution reported success but no "
                                              f"delta-spark jar is in {settings.ivy_dir / 'jars'}"))
    manifest.write_text("".join(f"{j}\n" for j in jars))
    return jars


def _jars_help(settings: Settings, detail: str) -> str:
    return (
        f"Delta Lake jars {settings.delta_package} could not be resolved ({detail}). "
        "They are fetched once from Maven Central (https://repo1.maven.org/maven2) into "
        f"{settings.ivy_dir}; check that Maven Central is reachable and that Java 17 is on "
        "PATH, then rerun `make jars`. A mirror can be set in conf/spark.toml [delta] repository."
    )


JAVA_OPTION_KEYS = ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions")
"""Settings whose value in conf/spark.toml [spark] is added after the project's own options."""


def session_conf(settings: Settings, jars: list[Path]) -> dict[str, str]:
    """The settings of this project's sessions that come from ``conf/``, in order.

    :func:`build_session` applies them, then :func:`sql_ext.configure` adds the jars,
    extensions and trap settings every CEP session needs (those win).
    """
    for d in (settings.warehouse_dir, settings.scratch_dir):
        d.mkdir(parents=True, exist_ok=True)
    java_opts = (f"-Duser.timezone=UTC -Dderby.system.home={settings.data_dir / 'derby'} "
                 f"-Djava.io.tmpdir={settings.scratch_dir}")
    # Only the driver maps the class archive: it is a file of this machine (jobs/session/class_archive.py).
    driver_opts = f"{java_opts} {class_archive.java_options(settings, jars)}".strip()
    conf: dict[str, str] = {
        "spark.sql.warehouse.dir": str(settings.warehouse_dir),
        "spark.local.dir": str(settings.scratch_dir),
        "spark.driver.memory": settings.driver_memory,
        "spark.driver.extraJavaOptions": driver_opts,
        "spark.executor.extraJavaOptions": java_opts,
        "spark.sql.shuffle.partitions": str(settings.shuffle_partitions),
        # Progress bars redraw one line with carriage returns: useful in a terminal, noise in a
        # cron log or a scheduler's captured output.
        "spark.ui.showConsoleProgress": "true" if settings.show_progress and _interactive()
                                        else "false",
        "spark.executorEnv.PYSPARK_PYTHON": executor_python(settings),
    }
    conf.update(local_only(settings.master))
    extra = dict(settings.spark_extra)
    # The project's JVM options carry the UTC clock every timestamp rule relies on: options a
    # user adds in conf/spark.toml [spark] come after them (the JVM takes the last of a flag)
    # instead of replacing them.
    for key in JAVA_OPTION_KEYS:
        if key in extra:
            conf[key] = f"{conf[key]} {extra.pop(key)}".strip()
    conf.update(extra)
    return conf


def executor_python(settings: Settings) -> str:
    """The Python the executors run: this interpreter for a local master; on a cluster the
    ``spark.pyspark.python`` of conf/spark.toml ``[spark]`` when given (the executors' own
    path), else this interpreter's path (executors on the same image).

    Example:
        >>> from dataclasses import replace
        >>> s = load_settings(overrides={"master": "spark://h:7077"})
        >>> executor_python(replace(s, spark_extra={"spark.pyspark.python": "/opt/py/bin/python"}))
        '/opt/py/bin/python'
        >>> executor_python(replace(s, master="local[2]", spark_extra={})) == sys.executable
        True
    """
    if settings.master.startswith("local"):
        return sys.executable
    return settings.spark_extra.get("spark.pyspark.python", sys.executable)


def local_only(master: str) -> dict[str, str]:
    """Settings that keep an embedded (``local``) Spark off the network.

    Spark's driver binds its RPC and block-manager ports on the machine's own address, where
    any host that reaches it could connect; a local session needs neither beyond this machine,
    so both bind to loopback, and ``spark.authenticate`` makes Spark's RPC require the secret
    it generates for a local session. A cluster master gets nothing here: its addresses and
    shared secret are the operator's (conf/spark.toml ``[spark]`` overrides either way).

    Example:
        >>> local_only("local[2]")["spark.driver.bindAddress"], local_only("spark://h:7077")
        ('127.0.0.1', {})
    """
    if not master.startswith("local"):
        return {}
    return {"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1",
            "spark.authenticate": "true"}


def build_session(
    settings: Settings | None = None, *, overrides: Mapping[str, Any] | None = None,
    register: bool | Collection[str] = True,
) -> "SparkSession":
    """Start (or return the running) Spark session with Delta Lake enabled.

    Args:
        settings: resolved settings; default :func:`load_settings` with ``overrides``.
        overrides: session overrides passed to :func:`load_settings` (``data_dir``, ``master``...).
        register: which tables the catalog learns: every configured or discovered table that
            exists on disk (``True``, the default), none (``False``: the jobs register the
            tables they read and write themselves), or only the given names.

    Returns:
        A SparkSession whose catalog knows the configured tables that exist on disk (all of
        them unless ``register`` says otherwise).

    Raises:
        DeltaJarsUnavailable: the Delta jars cannot be resolved or loaded.
    """
    settings = settings or load_settings(overrides=overrides)
    # Workers must run this interpreter, or they start without pyarrow and numpy; a cluster's
    # executors run the Python its operator names (spark.pyspark.python, docs/cluster.md).
    os.environ["PYSPARK_PYTHON"] = executor_python(settings)
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("TZ", "UTC")
    jars = ensure_delta_jars(settings)

    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(settings.master).appName(settings.app_name)
    for key, value in session_conf(settings, jars).items():
        builder = builder.config(key, value)
    builder = configure(builder, delta_jars=jars, shim_jar=shim_jar(settings))
    zone = "spark.sql.session.timeZone"  # the project's own sessions read and write in UTC
    builder = builder.config(zone, REQUIRED_CONF[zone])
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    _check_delta_loaded(spark, settings)
    if not settings.master.startswith("local"):
        ship_code(spark, settings)

    # Every function, and MATCH_RECOGNIZE in every statement this JVM parses.
    enable(spark)

    from delta_tables.catalog import register_tables

    if register is True:
        register_tables(spark, settings)
    elif register:
        register_tables(spark, settings, names=register)
    return spark


def ship_code(spark: "SparkSession", settings: Settings) -> Path:
    """Give a cluster's executors the project's code, then check they can run it.

    The executors' Python needs only the third-party packages: the project's own are zipped
    once per code version (:func:`jobs.session.code_bundle.build_bundle`, in the scratch directory)
    and added with ``addPyFile``; then one small job imports every needed module on the
    executors (:func:`jobs.session.code_bundle.check_executors`).

    Raises:
        ExecutorPackagesMissing: a module does not import on an executor (CEP-SETUP-002).
    """
    from jobs.session.code_bundle import build_bundle, check_executors

    bundle = build_bundle(settings.scratch_dir / "pyfiles")
    context = spark.sparkContext
    if not any(Path(added).name == bundle.name for added in context.listFiles):
        context.addPyFile(str(bundle))
    check_executors(spark)
    return bundle


def _check_delta_loaded(spark: "SparkSession", settings: Settings) -> None:
    from delta.tables import DeltaTable

    try:
        DeltaTable.isDeltaTable(spark, str(settings.scratch_dir / "no-such-table"))
    except Exception as exc:  # the JVM class is missing: py4j raises a generic error
        raise DeltaJarsUnavailable(_jars_help(
            settings, f"the jars are listed but Delta classes do not load: {exc}"[:600])) from None


def _interactive() -> bool:
    """Whether stderr is a terminal (where Spark's progress bar belongs)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


@contextmanager
def session_confs(spark: "SparkSession", values: Mapping[str, str]) -> Iterator[None]:
    """Set session confs for the block, then put back what was there (unset if nothing was).

    Example:
        >>> with session_confs(spark, {"spark.sql.shuffle.partitions": "8"}):  # doctest: +SKIP
        ...     spark.range(10).repartition("id").count()
        10
    """
    previous = {key: spark.conf.get(key, None) for key in values}
    try:
        for key, value in values.items():
            spark.conf.set(key, value)
        yield
    finally:
        for key, old in previous.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)
