"""Golden-file helper for the pattern-language tests: compare, or rewrite with UPDATE_GOLDEN=1."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden"


def updating() -> bool:
    """True when the run should rewrite golden files instead of comparing them."""
    return os.environ.get("UPDATE_GOLDEN") == "1"


def check_golden(path: Path, actual: str) -> None:
    """Assert ``path`` holds ``actual`` (a trailing newline is added); rewrite it when updating."""
    actual = actual if actual.endswith("\n") else actual + "\n"
    if updating():
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(actual)
        return
    if not path.exists():
        pytest.fail(f"missing golden file {path}; run the tests with UPDATE_GOLDEN=1 to create it")
    with open(path, encoding="utf-8", newline="") as fh:
        expected = fh.read()
    if actual != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True), actual.splitlines(keepends=True), "golden", "actual"
            )
        )
        pytest.fail(f"{path.name} differs from the golden file (UPDATE_GOLDEN=1 rewrites it):\n{diff}")


def stale_files(folder: Path, expected_names: set[str]) -> list[str]:
    """Golden files in ``folder`` that no test case produces any more."""
    if not folder.exists():
        return []
    return sorted(p.name for p in folder.glob("*.txt") if p.name not in expected_names)
