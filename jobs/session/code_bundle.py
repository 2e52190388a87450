"""The project's Python code as one zip for the executors of a cluster (docs/cluster.md).

On a cluster the executors' Python runs our UDTFs (`udfs`), the engines they call (`cep`) and
the state jobs' partition functions (`jobs`, `delta_tables`), but it has only third-party
packages installed. :func:`build_bundle` writes those packages' ``.py`` files into one zip,
named after the hash of their contents, so a code version is zipped once and a changed file
gives a new name (Spark refuses to add a second file of the same name with other contents).
The zip is byte-for-byte reproducible: entries sorted, fixed timestamps and permissions.

:func:`missing_on_executors` asks every executor which of the packages the code needs it
cannot import, so a session on a cluster fails at its start with a list, not in the middle of
the first query with a traceback from a worker.

Example:
    >>> import tempfile, zipfile
    >>> path = build_bundle(Path(tempfile.mkdtemp()))
    >>> path.name.startswith("spark_cep-") and path.suffix == ".zip"
    True
    >>> "cep/match/__init__.py" in zipfile.ZipFile(path).namelist()
    True
    >>> build_bundle(path.parent) == path  # same code, same file: nothing is written twice
    True
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cep.errors import CepError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ROOT = Path(__file__).resolve().parents[2]
"""The directory that holds the project's packages."""
PACKAGES = ("cep", "udfs", "sql_ext", "delta_tables", "jobs")
"""What executors import: the UDTFs, the engines, and the state jobs' partition functions."""
THIRD_PARTY = ("numpy", "pyarrow", "pandas", "mmh3", "sqlglot")
"""Third-party modules the executors' Python must have (the driver's versions)."""
_STAMP = (2020, 1, 1, 0, 0, 0)


class ExecutorPackagesMissing(CepError):
    """The executors' Python cannot import a package the project's code needs there."""

    code = "CEP-SETUP-002"


def source_files(root: Path = ROOT, packages: Sequence[str] = PACKAGES) -> list[Path]:
    """The ``.py`` files of ``packages`` under ``root``, sorted (caches and tests left out).

    Example:
        >>> any(p.name == "code_bundle.py" for p in source_files())
        True
    """
    found = []
    for package in packages:
        for path in (root / package).rglob("*.py"):
            if "__pycache__" not in path.parts:
                found.append(path)
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def bundle_digest(files: Iterable[Path], root: Path = ROOT) -> str:
    """SHA-256 over every file's relative path and bytes: the code version's name."""
    digest = hashlib.sha256()
    for path in files:
        name = path.relative_to(root).as_posix().encode()
        data = path.read_bytes()
        digest.update(len(name).to_bytes(4, "big") + name + len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


def build_bundle(directory: Path, root: Path = ROOT,
                 packages: Sequence[str] = PACKAGES) -> Path:
    """The zip of ``packages`` for this code version in ``directory`` (written if missing).

    Args:
        directory: Where bundles are kept (the session's scratch directory).
        root: The directory holding the packages.
        packages: Top-level packages to include.

    Returns:
        ``directory / "spark_cep-<first 16 hex digits of the digest>.zip"``.
    """
    files = source_files(root, packages)
    path = Path(directory) / f"spark_cep-{bundle_digest(files, root)[:16]}.zip"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written beside, then renamed: a reader never sees half a zip.
    partial = path.with_name(f".{path.name}.{os.getpid()}.part")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for file in files:
            info = zipfile.ZipInfo(file.relative_to(root).as_posix(), date_time=_STAMP)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, file.read_bytes())
    os.replace(partial, path)
    return path


def executor_requirements() -> list[str]:
    """``name==version`` of each of :data:`THIRD_PARTY` as installed in this (the driver's) Python.

    What a cluster's executors' Python must install: the driver's own versions, so both sides
    run the same code (``make exec-venv`` builds such a Python for the standalone cluster of
    the tests; with constraints.txt, the pinned versions).

    Example:
        >>> sorted(r.split("==")[0] for r in executor_requirements())
        ['mmh3', 'numpy', 'pandas', 'pyarrow', 'sqlglot']
    """
    from importlib.metadata import version

    return [f"{name}=={version(name)}" for name in THIRD_PARTY]


def _probe(modules: Sequence[str]) -> list[tuple[str, str, str]]:
    """On an executor: ``(host, module, error)`` for each module that does not import."""
    import importlib
    import socket
    import sys

    missing = []
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as exc:  # any failure to import is the answer, not a crash
            missing.append((socket.gethostname(), module,
                            f"{type(exc).__name__}: {exc} (python {sys.executable})"))
    return missing


def missing_on_executors(spark: "SparkSession", modules: Sequence[str] | None = None,
                         tasks: int | None = None) -> list[tuple[str, str, str]]:
    """Which of ``modules`` the executors cannot import, as ``(host, module, error)``.

    One small job of ``tasks`` tasks (default: the default parallelism, so every executor is
    likely asked) imports each module. The project's own packages are checked too: they come
    from the bundle added with ``addPyFile``.
    """
    wanted = list(modules if modules is not None else (*THIRD_PARTY, *PACKAGES))
    n = tasks or max(2, spark.sparkContext.defaultParallelism)
    rows = (spark.sparkContext.parallelize(range(n), n)
            .mapPartitions(lambda _: iter(_probe(wanted))).collect())
    return sorted(set(rows))


def check_executors(spark: "SparkSession", modules: Sequence[str] | None = None) -> None:
    """Raise :class:`ExecutorPackagesMissing` naming every module an executor lacks.

    Raises:
        ExecutorPackagesMissing: the message lists module, host and import error per line,
            and says how to install them.
    """
    missing = missing_on_executors(spark, modules)
    if missing:
        lines = "; ".join(f"{module} on {host}: {error}" for host, module, error in missing)
        raise ExecutorPackagesMissing(
            f"the executors' Python cannot import {sorted({m for _, m, _ in missing})}: "
            f"{lines}. Install the driver's versions of them (`python -m jobs.session.code_bundle` lists "
            "them) in the executors' Python (the project's own packages are shipped by the session).")


if __name__ == "__main__":  # `python -m jobs.session.code_bundle`: the executors' requirements
    print("\n".join(executor_requirements()))
