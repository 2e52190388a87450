"""Build step of the wheel: the default ``conf/`` and the compiled JVM shim go inside it.

Everything else is declared in pyproject.toml. A wheel must not read from a checkout at run
time (docs/install.md), so ``build_py`` copies ``conf/*.toml`` into the package
``delta_tables/defaults/`` and compiles ``sql_ext/jvm/src`` with the JDK's ``javac`` against the
jars of the pyspark in the build environment (pyproject.toml ``[build-system]``) into
``sql_ext/jvm/cep-sql.jar``. An editable install (``pip install -e .``, the README's commands)
reads the checkout's own files instead, so nothing is built for it.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildWithDefaultsAndShim(build_py):
    """``build_py`` plus the packaged defaults and the shim's jar."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        build = Path(self.build_lib)
        defaults = build / "delta_tables" / "defaults"
        defaults.mkdir(parents=True, exist_ok=True)
        for toml in sorted((ROOT / "conf").glob("*.toml")):
            shutil.copyfile(toml, defaults / toml.name)
        # The module is loaded by path: the package's __init__ imports what a build
        # environment does not have.
        spec = importlib.util.spec_from_file_location("_cep_shim", ROOT / "sql_ext" / "shim.py")
        shim = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(shim)
        target = build / "sql_ext" / "jvm" / "cep-sql.jar"
        try:
            shim.compile_shim(target)
        except FileNotFoundError as exc:
            raise SystemExit(f"building the spark-cep wheel needs a JDK 17: {exc}") from None


setup(cmdclass={"build_py": BuildWithDefaultsAndShim})
