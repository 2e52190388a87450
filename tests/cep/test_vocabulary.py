"""One vocabulary for every engine (docs/architecture.md, "One vocabulary"): ``compile`` turns
text into a frozen program, ``run`` evaluates one, state goes out with ``to_bytes`` and comes
back with the class's ``from_bytes``."""

from __future__ import annotations

import ast
import dataclasses
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Each engine, a text its compile accepts, and the function its ``run`` names.
ENGINES = {
    "cep.match": ("PATTERN a; b+ WITHIN 5 EVENTS", "find_matches"),
    "cep.sketch": ("PATTERN A; B; C", "evaluate_sketch"),
    "cep.trends": ("PATTERN A+ a[] WHERE a[i].x > a[i-1].x WITHIN 10 UNITS", "window_trends"),
    "cep.prob": ("PATTERN a, b+, c WITHIN 6 EVENTS", "match_prob"),
    "cep.predict": ("PATTERN A, B; C", "predict"),
    "cep.recognize": ("A B+ C?", "find_matches"),
}


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_every_engine_compiles_text_to_a_frozen_program(engine: str) -> None:
    package = importlib.import_module(engine)
    text, run_name = ENGINES[engine]
    program = package.compile(text)
    assert dataclasses.is_dataclass(program), f"{engine}.compile gave {type(program).__name__}"
    params = getattr(type(program), "__dataclass_params__")
    assert params.frozen, f"{engine}.compile gave a mutable {type(program).__name__}"
    assert package.run is getattr(package, run_name), f"{engine}.run is not {run_name}"
    assert "compile" not in package.__all__ and "run" not in package.__all__, (
        f"{engine}: a star import would shadow the builtin compile")


def _classes_with(method: str) -> list[tuple[str, str, set[str], set[str]]]:
    """``(file, class, its methods, its classmethods)`` of every class under cep/ that
    defines ``method``."""
    found = []
    for path in sorted((ROOT / "cep").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            methods = {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
            classmethods = {f.name for f in node.body if isinstance(f, ast.FunctionDef)
                            and any(isinstance(d, ast.Name) and d.id == "classmethod"
                                    for d in f.decorator_list)}
            if method in methods:
                found.append((str(path.relative_to(ROOT)), node.name, methods, classmethods))
    return found


def test_state_that_goes_out_with_to_bytes_comes_back_with_from_bytes() -> None:
    writers = _classes_with("to_bytes")
    assert len(writers) >= 3, writers  # the Bloom filter, the model, the instance state
    missing = [f"{path}: {name}" for path, name, _, classmethods in writers
               if "from_bytes" not in classmethods]
    assert not missing, f"to_bytes without a from_bytes classmethod: {missing}"


def test_the_state_round_trips_through_bytes() -> None:
    import numpy as np

    from cep.predict import InstanceState, LeafModel, Model, TransitionCounts
    from cep.sketch import BloomFilter

    leaf = LeafModel(TransitionCounts.from_triples([1], [2], [3]), np.array([2]), np.array([1]))
    model = Model("PATTERN A, B", (leaf,))
    assert Model.from_bytes(model.to_bytes()) == model
    state = InstanceState((1, 2), (None, ((0, (5,)),)), (0,), 3, 9, 17)
    assert InstanceState.from_bytes(state.to_bytes()) == state
    bloom = BloomFilter.empty(m=64, seeds=(1, 2, 3)).add(["A", "B"])
    assert BloomFilter.from_bytes(bloom.to_bytes(), seeds=(1, 2, 3)) == bloom
