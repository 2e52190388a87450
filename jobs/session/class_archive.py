"""A class-data-sharing archive of the Spark driver's classes: every later JVM starts faster.

A fresh Spark JVM spends its first seconds loading and verifying ~20,000 classes of Spark,
Delta and their dependencies before it runs anything. Java 17 can record the classes one run
loaded into an archive (``-XX:ArchiveClassesAtExit``, "dynamic AppCDS") and map them at the next
start (``-XX:SharedArchiveFile``). :func:`build_archive` records one by running a short, typical
session (Delta writes, a MERGE, time travel, a Python UDTF) in a child process
(:mod:`jobs.session.class_archive_record`, apart so that this module, which the session imports, does
not import the session); ``make jars``
does it once per data folder. :func:`java_options` then gives the options that use it, and
:func:`jobs.session.session_conf` adds them to the driver: a cold ``python -m jobs`` process
reaches its first Delta read about 5 s sooner on the project machine (docs/setup.md).

The archive is keyed by what the JVM's class path depends on (the pyspark version, the Delta
jar files and the ``java`` found), so a changed pin or JDK gets a new file and an old one is
never used. The JVM checks the archive itself as well: one that does not match its build or
class path is ignored (``-Xshare:auto``), never an error, and the session only starts slower.

Example:
    >>> from delta_tables.settings import load_settings
    >>> settings = load_settings(overrides={"data_dir": "/nonexistent"})
    >>> archive_path(settings, []).name.startswith("spark-classes-")
    True
    >>> java_options(settings, [])      # nothing recorded there: the JVM starts as usual
    ''
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from delta_tables.settings import Settings

__all__ = ["archive_path", "java_options", "build_archive"]

RECORD_ENV = "CEP_CLASS_ARCHIVE_OUT"
"""Set by :func:`build_archive` for its child only: the file the child's JVM records into."""
SILENT = "-Xlog:cds=off -Xlog:cds+dynamic=off"
"""No class-data-sharing log lines on the console, when recording or mapping."""
QUIET = f"-Xshare:auto {SILENT}"
"""Use the archive when it matches and say nothing when it does not (a mismatch only costs the
time the archive would have saved)."""


def archive_path(settings: Settings, jars: list[Path]) -> Path:
    """Where the archive for this pyspark, these jars and this ``java`` lives (``data/ivy``)."""
    import pyspark

    java = shutil.which("java", path=_java_path()) or "java"
    key = "\n".join([pyspark.__version__, os.path.realpath(java), *map(str, jars)])
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return settings.ivy_dir / f"spark-classes-{digest}.jsa"


def java_options(settings: Settings, jars: list[Path]) -> str:
    """The driver's JVM options that map the archive, or ``""`` when none was built.

    In the recording child of :func:`build_archive` (``CEP_CLASS_ARCHIVE_OUT`` set), the
    option that records the archive at the JVM's exit instead.
    """
    record = os.environ.get(RECORD_ENV)
    if record:
        return f"-XX:ArchiveClassesAtExit={record} {SILENT}"
    path = archive_path(settings, jars)
    return f"-XX:SharedArchiveFile={path} {QUIET}" if path.is_file() else ""


def build_archive(settings: Settings, jars: list[Path], *, quiet: bool = False) -> Path | None:
    """Record the archive once (about a minute), unless it exists; ``None`` if the JVM failed.

    A failure is not an error: sessions then start without an archive, as they did before.
    The file appears whole or not at all (written aside, then renamed).
    """
    path = archive_path(settings, jars)
    if path.is_file():
        return path
    if not quiet:
        print(f"Recording the Spark classes a session loads into {path} (first run only) ...",
              file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(dir=settings.ivy_dir) as tmp:
        partial = Path(tmp) / path.name
        env = {**os.environ, RECORD_ENV: str(partial)}
        proc = subprocess.run([sys.executable, "-m", "jobs.session.class_archive_record", tmp], env=env,
                              capture_output=True, text=True, timeout=900, check=False)
        if proc.returncode != 0 or not partial.is_file():
            if not quiet:
                tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
                print(f"No class archive (sessions start without one): {tail}",
                      file=sys.stderr, flush=True)
            return None
        os.replace(partial, path)
    return path


def _java_path() -> str:
    home = os.environ.get("JAVA_HOME")
    path = os.environ.get("PATH", "")
    return f"{home}/bin{os.pathsep}{path}" if home else path
