"""The JVM shim (``sql_ext/jvm``): compiled once per source version, loaded by the session builder.

Spark's optimizer takes rules from JVM code only (``spark.sql.extensions``). The shim holds no
semantics (DESIGN.md section 5): its one rule, ``cep.sql.KeepRowsRule``, turns a boolean
``__cep_keep`` column that a table function's ``analyze`` selects into a filter, which Spark's
own optimizer then pushes below the shuffle, so rows the Python compiler said cannot matter
never cross into Python (``udfs.match_seq.keep_condition``).

``python -m jobs fetch-jars`` (and so ``make jars``, ``make test``, ``make demo``) compiles the
Java sources with the JDK's ``javac`` against the jars inside the pyspark wheel (no Maven) into
``<data_dir>/jvm/cep-sql-<digest>.jar``, the digest of the sources, so a changed source is
compiled again and a stale jar is never loaded. Without the jar (no JDK compiler, or a data
folder set up before the shim) sessions start without the rule: every answer is the same, the
calls are slower.

Example:
    >>> from delta_tables.settings import load_settings
    >>> shim_jar(load_settings(overrides={"data_dir": "/tmp/cep-doc"})).name.startswith("cep-sql-")
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
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from delta_tables.settings import Settings

SOURCES = Path(__file__).resolve().parents[1] / "sql_ext" / "jvm" / "src"
EXTENSION = "cep.sql.CepExtensions"
"""The class named in ``spark.sql.extensions``."""


def _sources() -> list[Path]:
    return sorted(SOURCES.rglob("*.java"))


def shim_jar(settings: Settings) -> Path:
    """Where the jar of the current sources is (or will be)."""
    digest = hashlib.sha256()
    for path in _sources():
        digest.update(path.relative_to(SOURCES).as_posix().encode())
        digest.update(path.read_bytes())
    return settings.data_dir / "jvm" / f"cep-sql-{digest.hexdigest()[:16]}.jar"


def build_shim(settings: Settings, *, quiet: bool = False) -> Path | None:
    """Compile the shim's jar unless it exists; None (and a note) when no ``javac`` is found.

    The jar appears whole or not at all (written aside, then renamed).

    Raises:
        RuntimeError: ``javac`` rejected the sources (a bug of the project, with its output).
    """
    jar = shim_jar(settings)
    if jar.is_file():
        return jar
    javac = shutil.which("javac", path=_java_path())
    if javac is None:
        if not quiet:
            print("javac not found: sessions start without the JVM shim (same answers, slower "
                  "match_seq); install a JDK 17 and rerun `make jars`", file=sys.stderr)
        return None
    import pyspark

    classpath = os.path.join(os.path.dirname(pyspark.__file__), "jars", "*")
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=jar.parent) as tmp:
        classes = Path(tmp) / "classes"
        proc = subprocess.run([javac, "-nowarn", "-encoding", "UTF-8", "-cp", classpath,
                               "-d", str(classes), *map(str, _sources())],
                              capture_output=True, text=True, timeout=600, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"javac failed on {SOURCES}:\n{proc.stdout}{proc.stderr}")
        partial = Path(tmp) / jar.name
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as out:
            for path in sorted(classes.rglob("*.class")):
                out.write(path, path.relative_to(classes).as_posix())
        partial.replace(jar)
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


def shim_conf(settings: Settings, conf: dict[str, str]) -> dict[str, str]:
    """``conf`` with the shim's jar on ``spark.jars`` and its extension after Delta's, when the
    jar of the current sources exists; unchanged otherwise.

    Example:
        >>> from delta_tables.settings import load_settings
        >>> shim_conf(load_settings(overrides={"data_dir": "/nonexistent"}), {"a": "b"})
        {'a': 'b'}
    """
    jar = shim_jar(settings)
    if not jar.is_file():
        return conf
    out = dict(conf)
    jars = [j for j in out.get("spark.jars", "").split(",") if j]
    out["spark.jars"] = ",".join([*jars, str(jar)])
    extensions = [e for e in out.get("spark.sql.extensions", "").split(",") if e]
    out["spark.sql.extensions"] = ",".join([*extensions, EXTENSION])
    return out
