"""The JVM shim of this project's data folder: ``sql_ext.shim`` with the folder of the settings.

``python -m jobs fetch-jars`` (and so ``make jars``, ``make test``, ``make demo``) compiles a
checkout's Java sources into ``<data_dir>/jvm/cep-sql-<digest>.jar``; an installed wheel brings
its jar along (``sql_ext/shim.py``). Without a jar (no JDK compiler) sessions start without the
shim: every function answers the same, ``match_seq`` is slower and MATCH_RECOGNIZE is refused
with a CEP error.

Example:
    >>> from delta_tables.settings import load_settings
    >>> shim_jar(load_settings(overrides={"data_dir": "/tmp/cep-doc"})).name.startswith("cep-sql")
    True
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sql_ext import shim
from sql_ext.shim import EXTENSION

if TYPE_CHECKING:
    from delta_tables.settings import Settings

__all__ = ["EXTENSION", "build_shim", "shim_jar"]


def shim_jar(settings: Settings) -> Path:
    """Where the jar of the current sources is (or will be)."""
    return shim.shim_jar(settings.data_dir / "jvm")


def build_shim(settings: Settings, *, quiet: bool = False) -> Path | None:
    """Compile the shim's jar unless it exists; None (and a note) when no ``javac`` is found.

    Raises:
        ShimCompileError: ``javac`` rejected the sources (a bug of the project, with its output).
    """
    return shim.build_shim(settings.data_dir / "jvm", quiet=quiet)
