"""Where the JVM shim's jar is: packaged in the wheel, or compiled from a checkout's sources.

Spark's optimizer and parser take extensions from JVM code only (``spark.sql.extensions``), so
the shim (``sql_ext/jvm/src``: the row filter, the MATCH_RECOGNIZE parser hook, the servers'
lockdown) is Java. An installed wheel carries the jar compiled when the wheel was built
(``sql_ext/jvm/cep-sql.jar``, written by ``setup.py``); a checkout has the sources and compiles
them once per source version with the JDK's ``javac`` against the jars inside the pyspark wheel
into ``<cache>/cep-sql-<digest>.jar``, so a changed source is compiled again and a stale jar is
never loaded.

Example:
    >>> jar = shim_jar("/tmp/cep-doc/jvm")
    >>> jar.name.startswith("cep-sql") and jar.suffix == ".jar"
    True
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

__all__ = ["EXTENSION", "PACKAGED_JAR", "SOURCES", "ShimCompileError", "build_shim",
           "compile_shim", "shim_jar"]

SOURCES = Path(__file__).resolve().parent / "jvm" / "src"
PACKAGED_JAR = Path(__file__).resolve().parent / "jvm" / "cep-sql.jar"
"""The jar a wheel carries (absent in a checkout, where the sources are compiled instead)."""
EXTENSION = "cep.sql.CepExtensions"
"""The class named in ``spark.sql.extensions``."""


class ShimCompileError(RuntimeError):
    """``javac`` rejected the shim's sources: a bug of the project, with javac's output."""


def _sources() -> list[Path]:
    return sorted(SOURCES.rglob("*.java")) if SOURCES.is_dir() else []


def shim_jar(cache_dir: str | Path) -> Path:
    """The jar to load: the checkout's compiled sources under ``cache_dir``, else the packaged one.

    Args:
        cache_dir: where a checkout's compiled jar is kept (``<data_dir>/jvm``).
    """
    sources = _sources()
    if not sources:
        return PACKAGED_JAR
    digest = hashlib.sha256()
    for path in sources:
        digest.update(path.relative_to(SOURCES).as_posix().encode())
        digest.update(path.read_bytes())
    return Path(cache_dir) / f"cep-sql-{digest.hexdigest()[:16]}.jar"


def compile_shim(target: Path, *, javac: str | None = None) -> Path:
    """Compile the sources into ``target`` (whole or not at all: written aside, then renamed).

    Args:
        target: the jar to write.
        javac: the compiler; default ``javac`` on ``$JAVA_HOME/bin`` or PATH.

    Raises:
        FileNotFoundError: no ``javac`` was found.
        ShimCompileError: ``javac`` rejected the sources.
    """
    javac = javac or shutil.which("javac", path=_java_path())
    if javac is None:
        raise FileNotFoundError("javac (a JDK 17) is needed to compile the JVM shim")
    import pyspark

    classpath = os.path.join(os.path.dirname(pyspark.__file__), "jars", "*")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        classes = Path(tmp) / "classes"
        proc = subprocess.run([javac, "-nowarn", "-encoding", "UTF-8", "-cp", classpath,
                               "-d", str(classes), *map(str, _sources())],
                              capture_output=True, text=True, timeout=600, check=False)
        if proc.returncode != 0:
            raise ShimCompileError(f"javac failed on {SOURCES}:\n{proc.stdout}{proc.stderr}")
        partial = Path(tmp) / target.name
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as out:
            for path in sorted(classes.rglob("*.class")):
                # A fixed time stamp: the same sources give the same jar bytes.
                info = zipfile.ZipInfo(path.relative_to(classes).as_posix(), (2020, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                out.writestr(info, path.read_bytes())
        partial.replace(target)
    return target


def build_shim(cache_dir: str | Path, *, quiet: bool = False) -> Path | None:
    """The jar to load, compiling a checkout's sources first when their jar is missing.

    Returns None (and a note on standard error) when no jar exists and no ``javac`` is found:
    sessions then start without the shim (every function works; MATCH_RECOGNIZE and the servers'
    lockdown need it).

    Raises:
        ShimCompileError: ``javac`` rejected the sources.
    """
    jar = shim_jar(cache_dir)
    if jar.is_file():
        return jar
    if not _sources():
        return None  # an installed package built without its jar
    try:
        compile_shim(jar)
    except FileNotFoundError:
        if not quiet:
            print("javac not found: sessions start without the JVM shim (same answers, slower "
                  "match_seq, no MATCH_RECOGNIZE); install a JDK 17 and rerun `make jars`",
                  file=sys.stderr)
        return None
    for old in jar.parent.glob("cep-sql-*.jar"):  # jars of earlier sources
        if old != jar:
            old.unlink(missing_ok=True)
    if not quiet:
        print(f"JVM shim compiled: {jar}", file=sys.stderr)
    return jar


def _java_path() -> str:
    """PATH, with ``$JAVA_HOME/bin`` first when JAVA_HOME is set."""
    home = os.environ.get("JAVA_HOME")
    path = os.environ.get("PATH", "")
    return f"{home}/bin{os.pathsep}{path}" if home else path
