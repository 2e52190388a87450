"""No import cycles inside the pure core: every module of ``cep/`` is a stage that imports only
the stages below it (DESIGN.md section 2; docs/architecture.md, "The exact matcher's stages").

The checker reads the source with :mod:`ast` (nothing is imported), so an import inside a
function counts as much as one at the top of a module: a lazy import hides a cycle from Python,
not from a reader. Rules of the graph:

- ``import a.b.c`` is an edge to the module ``a.b.c``;
- ``from a.b import c`` is an edge to the module ``a.b.c`` when that is a module, else to
  ``a.b`` when ``a.b`` is a module (``c`` is then a name defined in it);
- relative imports (``from . import x``, ``from ..y import z``) are resolved against the
  importing module's package first;
- a package's ``__init__`` is never a target: importing ``cep.lang`` to get ``Query`` is not an
  edge to ``cep.lang.query`` (the package is a facade over its modules), while
  ``from cep.lang import query`` is.

Strongly connected components are found with Tarjan's algorithm, iteratively (no recursion
limit to raise), and every component of more than one module, or a module importing itself, is
reported with one concrete cycle through it.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def module_files(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file of ``package`` under ``root``."""
    out: dict[str, Path] = {}
    for path in sorted((root / package.replace(".", "/")).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _package_of(module: str, path: Path) -> str:
    """The package a relative import in ``module`` starts from."""
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _resolve(node: ast.ImportFrom, module: str, path: Path) -> str:
    """The absolute dotted name ``from <this> import ...`` refers to."""
    if not node.level:
        return node.module or ""
    parts = _package_of(module, path).split(".")
    # level 1 is the package itself; each further level goes one package up.
    base = parts[: len(parts) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imported_names(tree: ast.AST, module: str, path: Path) -> Iterator[tuple[str, str | None]]:
    """``(base, name)`` of every import anywhere in ``tree`` (functions and classes included):
    ``import a.b`` gives ``("a.b", None)``, ``from a import b`` gives ``("a", "b")``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(node, module, path)
            for alias in node.names:
                yield base, alias.name


def import_graph(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules it imports, by the rules of the module docstring."""
    packages = {name for name, path in modules.items() if path.name == "__init__.py"}

    def target(name: str) -> str | None:
        return name if name in modules and name not in packages else None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for base, member in imported_names(tree, name, path):
            found = target(f"{base}.{member}") if member not in (None, "*") else None
            found = found or target(base)
            if found is not None and found != name:
                graph[name].add(found)
            elif found == name:
                graph[name].add(name)  # a module importing itself is a cycle of one
    return graph


def strongly_connected(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively; each component sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        # Each frame: a vertex and the iterator over its successors still to visit.
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, successors = work[-1]
            advanced = False
            for w in successors:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                components.append(sorted(component))
    return components


def one_cycle(graph: Mapping[str, set[str]], component: list[str]) -> list[str]:
    """A shortest cycle through the first module of ``component`` (breadth-first, inside it)."""
    start, inside = component[0], set(component)
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in sorted(graph[v] & inside):
            if w == start:
                back = [v]  # v, its predecessor, ..., start
                while back[-1] != start:
                    back.append(previous[back[-1]])
                return back[::-1] + [start]
            if w not in previous:
                previous[w] = v
                queue.append(w)
    raise AssertionError(f"no cycle through {start} in {component}")


def cycles(graph: Mapping[str, set[str]]) -> list[str]:
    """One line per cycle: the component and a concrete path through it."""
    out = []
    for component in strongly_connected(graph):
        if len(component) > 1 or component[0] in graph[component[0]]:
            path = " -> ".join(one_cycle(graph, component))
            out.append(f"{' <-> '.join(component)} (e.g. {path})")
    return out


# ---------------------------------------------------------------------------------------------
# The pure core
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cep_graph() -> dict[str, set[str]]:
    return import_graph(module_files(ROOT, "cep"))


def test_cep_has_no_import_cycles(cep_graph: dict[str, set[str]]) -> None:
    found = cycles(cep_graph)
    assert not found, "import cycles inside cep/:\n" + "\n".join(found)


def test_the_checker_sees_the_imports_of_cep(cep_graph: dict[str, set[str]]) -> None:
    # Guards the test above against a checker that silently finds nothing to check.
    edges = sum(len(targets) for targets in cep_graph.values())
    assert len(cep_graph) > 100 and edges > 300, (len(cep_graph), edges)
    assert "cep.match.compile.program" in cep_graph["cep.match.compile.compiler"]  # from cep.match.compile.program import ...
    assert "cep.lang.printer" in cep_graph["cep.lang.query"]  # from cep.lang import printer
    assert "cep.lang" not in cep_graph["cep.match.compile.compiler"]  # from cep.lang import Query: a package


# ---------------------------------------------------------------------------------------------
# The checker on small planted packages
# ---------------------------------------------------------------------------------------------


def _package(root: Path, files: Mapping[str, str]) -> dict[str, Path]:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return module_files(root, "pkg")


def test_a_lazy_relative_cycle_is_found(tmp_path: Path) -> None:
    modules = _package(tmp_path, {
        "pkg/__init__.py": "from pkg.a import f\n",
        "pkg/a.py": "from .b import g\n\ndef f():\n    return g()\n",
        "pkg/b.py": "def g():\n    from pkg.sub import c\n    return c\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/c.py": "from .. import a  # from pkg import a: the module pkg.a\n",
        "pkg/d.py": "import pkg.a\n",
    })
    graph = import_graph(modules)
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg.b"] == {"pkg.sub.c"}
    assert graph["pkg.sub.c"] == {"pkg.a"} and graph["pkg.d"] == {"pkg.a"}
    (line,) = cycles(graph)
    assert line == "pkg.a <-> pkg.b <-> pkg.sub.c (e.g. pkg.a -> pkg.b -> pkg.sub.c -> pkg.a)"


def test_importing_a_package_is_no_edge_to_its_modules(tmp_path: Path) -> None:
    modules = _package(tmp_path, {
        "pkg/__init__.py": "from pkg.a import A\nfrom pkg.b import B\n",
        "pkg/a.py": "class A: ...\n",
        "pkg/b.py": "import pkg\nfrom pkg import A\n\nclass B(A): ...\n",
    })
    graph = import_graph(modules)
    assert graph["pkg.b"] == set() and graph["pkg"] == {"pkg.a", "pkg.b"}
    assert cycles(graph) == []


def test_a_self_import_and_two_separate_cycles_are_all_listed(tmp_path: Path) -> None:
    modules = _package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from pkg.b import x\n",
        "pkg/b.py": "from pkg import a\nx = 1\n",
        "pkg/c.py": "import pkg.c\n",
        "pkg/d.py": "from pkg.e import *\n",
        "pkg/e.py": "def f():\n    import pkg.d\n",
    })
    assert cycles(import_graph(modules)) == [
        "pkg.a <-> pkg.b (e.g. pkg.a -> pkg.b -> pkg.a)",
        "pkg.c (e.g. pkg.c -> pkg.c)",
        "pkg.d <-> pkg.e (e.g. pkg.d -> pkg.e -> pkg.d)",
    ]


def test_tarjan_on_a_long_chain_needs_no_recursion() -> None:
    # 5000 modules in one ring: a recursive Tarjan would exceed Python's default limit.
    n = 5000
    graph = {f"m{k}": {f"m{(k + 1) % n}"} for k in range(n)}
    (component,) = strongly_connected(graph)
    assert len(component) == n
