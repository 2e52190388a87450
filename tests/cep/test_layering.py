"""The layer rules of DESIGN.md section 2, checked on the source and by importing cep without pyspark;
and the rules between the sub-packages of ``jobs``."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Which top-level modules each layer may import (besides the standard library and itself).
ALLOWED: dict[str, set[str]] = {
    "cep": {"numpy", "mmh3", "sqlglot"},
    "sql_ext": {"cep", "sqlglot", "pyspark"},
    "udfs": {"cep", "pyspark", "numpy", "pyarrow", "pandas"},
    "delta_tables": {"cep", "pyspark", "delta", "numpy", "pyarrow"},
    # jobs may draw with viz (the demo saves its process-map pictures); viz never imports jobs.
    "jobs": {"cep", "sql_ext", "udfs", "delta_tables", "pyspark", "delta", "numpy", "pyarrow",
             "pandas", "viz"},
    # Pictures of what the functions return: beside jobs, on top of the core; never imported
    # by the layers below.
    "viz": {"cep", "pyspark", "numpy", "pyarrow", "pandas", "matplotlib", "IPython"},
}


def imported_top_modules(path: Path) -> set[tuple[str, int]]:
    """Top-level module names imported anywhere in ``path`` (also inside functions)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[tuple[str, int]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {(alias.name.split(".")[0], node.lineno) for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add((node.module.split(".")[0], node.lineno))
    return found


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layer_imports_only_what_design_allows(layer: str) -> None:
    violations = []
    for path in sorted((ROOT / layer).rglob("*.py")):
        for module, line in imported_top_modules(path):
            if module in sys.stdlib_module_names or module == "__future__" or module == layer:
                continue
            if module not in ALLOWED[layer]:
                violations.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not violations, f"layer {layer} may import {sorted(ALLOWED[layer])}; found: {violations}"


# Which sub-packages of jobs each part of jobs may NOT import (anywhere, also inside functions).
# One-way, from the bottom up: the framework knows no job, loader or server; the state jobs and
# the loaders know only the framework; nothing under jobs imports the CLI or the demo (the top).
JOBS_FORBIDDEN: dict[str, set[str]] = {
    # The session plumbing (builder, JVM shim, class archive, code bundle) is the floor: every
    # other part of jobs builds its sessions with it, and it knows none of them.
    "jobs.session": {"jobs.framework", "jobs.state", "jobs.loaders", "jobs.servers", "jobs.cli",
                     "jobs.demo"},
    "jobs.framework": {"jobs.state", "jobs.loaders", "jobs.servers", "jobs.cli", "jobs.demo"},
    "jobs.state": {"jobs.loaders", "jobs.servers", "jobs.cli", "jobs.demo"},
    "jobs.loaders": {"jobs.state", "jobs.servers", "jobs.cli", "jobs.demo"},
    "jobs.servers": {"jobs.state", "jobs.loaders", "jobs.cli", "jobs.demo"},
    "jobs": {"jobs.cli", "jobs.demo"},
}
TOP = ("jobs/__main__.py", "jobs/cli.py", "jobs/demo.py")
"""The entry points on top: ``python -m jobs`` runs the CLI, the CLI runs the demo."""


def imported_modules(path: Path) -> set[tuple[str, int]]:
    """Full names of the modules ``path`` imports (also inside functions); ``from a import b``
    counts as ``a`` and ``a.b`` (``b`` may be a sub-module)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[tuple[str, int]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {(alias.name, node.lineno) for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add((node.module, node.lineno))
            found |= {(f"{node.module}.{alias.name}", node.lineno) for alias in node.names}
    return found


def part_of(path: Path) -> str:
    """The part of jobs a file belongs to: ``jobs.<sub-package>``, or ``jobs`` for the top."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    name = ".".join(parts)
    return next((part for part in sorted(JOBS_FORBIDDEN, key=len, reverse=True)
                 if part != "jobs" and (name == part or name.startswith(part + "."))), "jobs")


def inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_sub_packages_of_jobs_exist() -> None:
    # Guards the rules below against a renamed folder, which would make them vacuous.
    for part in JOBS_FORBIDDEN:
        assert (ROOT / Path(*part.split(".")) / "__init__.py").is_file(), part
    assert all((ROOT / top).is_file() for top in TOP)


@pytest.mark.parametrize("part", sorted(JOBS_FORBIDDEN))
def test_jobs_sub_packages_import_one_way(part: str) -> None:
    violations = []
    for path in sorted((ROOT / "jobs").rglob("*.py")):
        if part_of(path) != part or path.relative_to(ROOT).as_posix() in TOP:
            continue
        for module, line in imported_modules(path):
            bad = [f for f in JOBS_FORBIDDEN[part] if inside(module, f)]
            if bad:
                violations.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not violations, (f"{part} may not import {sorted(JOBS_FORBIDDEN[part])}; found: "
                            f"{violations}")


def test_cep_imports_with_pyspark_unimportable() -> None:
    # A meta-path finder that refuses pyspark, delta and pyarrow, then every cep module is imported.
    script = r"""
import importlib, pkgutil, sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('pyspark', 'delta', 'pyarrow', 'pandas', 'py4j'):
            raise ImportError('blocked for the layering test: ' + name)
        return None
sys.meta_path.insert(0, Block())
import cep
names = [m.name for m in pkgutil.walk_packages(cep.__path__, 'cep.')]
for name in names:
    importlib.import_module(name)
leaked = [m for m in sys.modules if m.split('.')[0] in ('pyspark', 'delta', 'pyarrow', 'pandas')]
assert not leaked, leaked
print(len(names))
"""
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout.strip()) >= 2  # cep.errors, cep.datasets.xes, ... were really imported


def test_the_blocker_really_blocks() -> None:
    # Guards the test above against a finder that silently lets pyspark through.
    script = r"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] == 'pyspark':
            raise ImportError('blocked')
sys.meta_path.insert(0, Block())
try:
    import pyspark
except ImportError:
    print('blocked')
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.stdout.strip() == "blocked"


# The rooms of each engine that has them, in the order they may import: a room imports only
# rooms before it (besides the engine's shared top-level modules). Compile never imports plan
# or run; plan never imports run (issue 50).
ENGINE_ROOMS: dict[str, tuple[str, ...]] = {
    "cep.match": ("compile", "columnar", "plan", "run"),
}


@pytest.mark.parametrize("engine", sorted(ENGINE_ROOMS))
def test_engine_rooms_import_one_way(engine: str) -> None:
    rooms = ENGINE_ROOMS[engine]
    folder = ROOT / Path(*engine.split("."))
    assert all((folder / room / "__init__.py").is_file() for room in rooms), rooms
    violations = []
    for k, room in enumerate(rooms):
        later = {f"{engine}.{r}" for r in rooms[k + 1:]}
        for path in sorted((folder / room).rglob("*.py")):
            for module, line in imported_modules(path):
                if any(inside(module, f) for f in later):
                    violations.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not violations, f"{engine}: rooms {rooms} import one way only; found {violations}"


# The engines whose modules sit side by side, each module in one stage: ``compile`` (the
# pattern text to a frozen program), ``plan`` (how to run it over given input), ``run`` (the
# matching itself, with its mutable state passed in), or ``shared`` (errors, values and
# stored state that every stage reads). Compile never imports plan or run; plan never imports
# run (issue 50). A new module must be placed here: the test fails on an unplaced one.
ENGINE_STAGES: dict[str, dict[str, tuple[str, ...]]] = {
    "cep.sketch": {
        "compile": ("query",),
        "plan": ("units", "config", "solver", "thesis_solver"),
        "run": ("evaluate", "search"),
        "shared": ("errors", "names", "hashing", "bloom", "codec", "levels", "node_ids",
                   "open_leaf", "restored", "tree", "stored", "forest"),
    },
    "cep.trends": {
        "compile": ("query", "operands", "filters", "windows"),
        "plan": (),
        "run": ("graph", "dynamic", "edges", "links", "count", "extract", "maximal",
                "prefilter", "anchors", "answer", "parallel", "stealing"),
        "shared": ("errors",),
    },
    "cep.prob": {
        "compile": ("pattern",),
        "plan": ("transducer",),
        "run": ("matches", "groups", "answer"),
        "shared": ("errors", "stream"),
    },
    "cep.predict": {
        "compile": ("subscription", "machine", "nested"),
        "plan": (),
        "run": ("run", "many", "convolve", "markov", "answer", "composite", "merge", "prediction",
                "evaluate"),
        "shared": ("errors", "events", "model", "history", "paper", "temperature"),
    },
    "cep.mining": {
        "compile": ("calls",),
        "plan": ("plans", "rewrite"),
        "run": (),
        "shared": ("errors",),
    },
    "cep.recognize": {
        "compile": ("parser", "ast", "clause", "calls", "expressions", "scalar_tree",
                    "aggregates", "rewrite", "fixed", "program", "context"),
        "plan": (),
        "run": ("matcher", "dfa", "closure", "condition", "functions", "summaries", "vector",
                "unrolled"),
        "shared": ("errors",),
    },
}
STAGE_ORDER = ("compile", "plan", "run")


@pytest.mark.parametrize("engine", sorted(ENGINE_STAGES))
def test_engine_stages_import_one_way(engine: str) -> None:
    stages = ENGINE_STAGES[engine]
    folder = ROOT / Path(*engine.split("."))
    modules = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    placed = [m for names in stages.values() for m in names]
    assert sorted(placed) == sorted(modules), (
        f"{engine}: every module in one stage; unplaced {sorted(modules - set(placed))}, "
        f"placed twice or gone {sorted(m for m in placed if placed.count(m) > 1 or m not in modules)}")
    violations = []
    for k, stage in enumerate(STAGE_ORDER):
        later = {f"{engine}.{m}" for s in STAGE_ORDER[k + 1:] for m in stages[s]}
        for name in stages[stage]:
            path = folder / f"{name}.py"
            for module, line in imported_modules(path):
                if any(inside(module, f) for f in later) or module == engine:
                    violations.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not violations, f"{engine}: compile, plan, run import one way only; found {violations}"

