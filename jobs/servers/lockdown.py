"""What the servers' sessions may not do, and the check that they really may not.

Both servers (``serve`` and ``connect-server``) start their session with the JVM shim's lockdown
on (``cep.sql.LockdownRule``, ``cep.sql.LockdownParser``): no path outside the warehouse (file
relations, ``LOCATION``, ``path`` options, ``delta.`/path```, ``VACUUM '/path'``...), no
``reflect``/``java_method``, no ``TRANSFORM ... USING``, no ``ADD JAR``/``FILE``/``ARCHIVE``, no
``CREATE FUNCTION ... AS 'class'``, no ``INSERT OVERWRITE DIRECTORY``, ``LOAD DATA`` or ``SET
LOCATION``, no data source but the warehouse's file formats (``USING jdbc`` and a reader's
``format("jdbc")`` above all: Spark's embedded Derby declares Java procedures), no catalog class
of the client's choice, each refused with ``CEP-SQL-090`` before it runs; and no JDBC dialect of
the JVM opens a connection. The switch is a Spark setting of the
JVM (``spark.cep.lockdown``), which a client's ``SET`` cannot change. ``spark.sql.runSQLOnFiles``
is off as well, so ``text.`/etc/passwd``` is not even resolved.

A server refuses to start when the lockdown does not take (no shim jar, or an old one):
:func:`verify` runs one refused statement first.

Example:
    >>> from delta_tables.settings import load_settings
    >>> conf = lockdown_conf(load_settings(overrides={"warehouse": "/w", "data_dir": "/d"}),
    ...                      require_jar=False)
    >>> conf["spark.cep.lockdown"], conf["spark.cep.lockdown.paths"], conf["spark.sql.runSQLOnFiles"]
    ('true', '/w', 'false')
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cep.errors import CepError
from jobs.session.shim import shim_jar

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from delta_tables.settings import Settings

__all__ = ["CODE", "LockdownUnavailable", "lockdown_conf", "verify"]

CODE = "CEP-SQL-090"
"""The code of every statement the lockdown refuses (the JVM shim's message)."""
ENABLED = "spark.cep.lockdown"
PATHS = "spark.cep.lockdown.paths"
PROBE = "SELECT reflect('java.lang.System', 'getProperty', 'user.name')"
"""A statement the lockdown must refuse: the server's start-up check."""


class LockdownUnavailable(CepError):
    """A server cannot restrict its sessions: the JVM shim is missing or does not refuse."""

    code = "CEP-JOB-064"


def lockdown_conf(settings: "Settings", *, require_jar: bool = True) -> dict[str, str]:
    """The Spark settings that put a server's session under the lockdown.

    Args:
        settings: Project settings; the warehouse is the one allowed root.
        require_jar: Raise when the shim's jar of the current sources is missing (the rules
            live there).

    Raises:
        LockdownUnavailable: no shim jar (``make jars`` builds it; it needs a JDK's ``javac``).
    """
    if require_jar and not shim_jar(settings).is_file():
        raise LockdownUnavailable(
            f"the servers need the JVM shim to restrict their sessions and {shim_jar(settings)} "
            "is missing: run `make jars` (python -m jobs fetch-jars) with a JDK 17 installed")
    return {ENABLED: "true", PATHS: str(settings.warehouse_dir),
            "spark.sql.runSQLOnFiles": "false"}


def verify(spark: "SparkSession") -> None:
    """Raise :class:`LockdownUnavailable` unless ``spark`` refuses :data:`PROBE`.

    The statement is only analysed (``spark.sql`` of a query runs nothing until its rows are
    asked for): the lockdown refuses it then, a session without the lockdown returns a frame.
    """
    if spark.sparkContext.getConf().get(ENABLED) != "true":
        raise LockdownUnavailable(
            "a Spark session without the lockdown already runs in this process; start the "
            "server in a process of its own")
    try:
        spark.sql(PROBE).schema  # noqa: B018 - analysis is the point
    except Exception as exc:  # py4j's error carrying the shim's SecurityException
        if CODE in str(exc):
            return
        raise LockdownUnavailable(f"the lockdown check failed unexpectedly: {exc}") from None
    raise LockdownUnavailable(
        f"the session ran `{PROBE}` instead of refusing it: the JVM shim's jar is older than the "
        "lockdown; run `make jars` again")
