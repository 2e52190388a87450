"""The MATCH_RECOGNIZE conformance cases against PyFlink's MATCH_RECOGNIZE, where Flink has it.

Every case of ``tests/sql_ext/match_recognize_cases.py`` with expected rows goes, in one JSON
file, to ``tests/flink/flink_cases_runner.py``, run once with ``.venv-flink/bin/python`` (one
Flink for all cases). Each case then *agrees* (Flink returns the expected rows), *differs*
(Flink runs it and returns other rows: listed with the reason in
``tests/flink/flink_outcomes.py``) or is *unsupported* (Flink refuses it: listed there with the
feature, which Flink's error must name). docs/match-recognize-flink.md lists every case that
does not agree; the checks of the lists and of the page need no JVM.

Rows are compared as in ``tests/sql_ext/test_match_recognize.py``: as a multiset, in output
column order; numbers are compared as floats rounded to 9 significant digits (Flink's AVG of an
INT is an INT, ours a DOUBLE, so 4 and 4.0 are the same answer).
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.flink.flink_outcomes import FEATURE_ERRORS, FLINK_DIFFERS, FLINK_UNSUPPORTED
from tests.sql_ext.match_recognize_cases import CASES, Case

ROOT = Path(__file__).resolve().parents[2]
FLINK_PYTHON = ROOT / ".venv-flink" / "bin" / "python"
RUNNER = Path(__file__).resolve().with_name("flink_cases_runner.py")
DOC = ROOT / "docs" / "match-recognize-flink.md"
RUN_TIMEOUT_S = 900
"""Bound of the whole Flink run (it takes ~15 s; each job inside is bounded by the runner)."""

COMPARED = [case for case in CASES if case.expected is not None]

@dataclass(frozen=True)
class FlinkRun:
    """The runner's outcome per case name, and the wall time of the run."""

    outcomes: dict[str, dict[str, Any]]
    seconds: float


def _normal_value(value: Any) -> Any:
    """A value as compared: numbers as floats rounded to 9 significant digits."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float, Decimal)):
        number = float(value)
        return number if not math.isfinite(number) else float(f"{number:.9g}")
    return str(value)


def normal_rows(rows: list[Any]) -> list[str]:
    """Rows as a sorted list of JSON arrays of normalised values (a multiset).

    Args:
        rows: Rows as tuples (the cases) or lists (the runner's JSON).

    Returns:
        One JSON text per row, sorted.
    """
    return sorted(json.dumps([_normal_value(v) for v in row]) for row in rows)


def outcome_of(case: Case, found: dict[str, Any]) -> str:
    """``agrees``, ``differs`` or ``unsupported``: what Flink's answer to the case is.

    Args:
        case: The conformance case.
        found: The runner's entry for it (``status``, ``rows``, ``error``).

    Returns:
        The outcome's name.
    """
    if found["status"] != "ok":
        return "unsupported"
    return "agrees" if normal_rows(found["rows"]) == normal_rows(case.expected) else "differs"


@pytest.fixture(scope="module")
def flink_run(tmp_path_factory: pytest.TempPathFactory) -> FlinkRun:
    """All compared cases through the runner, in one ``.venv-flink`` process."""
    if not FLINK_PYTHON.exists():
        pytest.skip(f"{FLINK_PYTHON.relative_to(ROOT)} does not exist: `make flink-venv` "
                    "installs PyFlink 2.3.0 there")
    folder = tmp_path_factory.mktemp("flink_cases")
    cases_file, out_file = folder / "cases.json", folder / "flink.json"
    cases_file.write_text(json.dumps(
        [{"name": c.name, "rows": [list(r) for r in c.rows], "sql": c.sql} for c in COMPARED]))
    # The project's interpreter settings must not leak into PyFlink's.
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    start = time.perf_counter()
    proc = subprocess.run([str(FLINK_PYTHON), str(RUNNER), str(cases_file), str(out_file)],
                          cwd=folder, env=env, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S)
    seconds = time.perf_counter() - start
    assert proc.returncode == 0, f"the Flink runner failed:\n{proc.stderr[-4000:]}"
    outcomes = {o["name"]: o for o in json.loads(out_file.read_text())}
    print(f"\nFlink run: {len(outcomes)} cases in {seconds:.1f} s", file=sys.stderr)
    return FlinkRun(outcomes, seconds)


@pytest.mark.parametrize("case", COMPARED, ids=[c.name for c in COMPARED])
def test_flink_outcome_is_the_listed_one(flink_run: FlinkRun, case: Case) -> None:
    """Checks that Flink's outcome for the case is the one flink_outcomes.py lists (or agrees)."""
    found = flink_run.outcomes[case.name]
    got = outcome_of(case, found)
    rows = f"expected {normal_rows(case.expected)}, Flink {normal_rows(found['rows'] or [])}"
    if case.name in FLINK_UNSUPPORTED:
        feature = FLINK_UNSUPPORTED[case.name]
        assert got == "unsupported", \
            f"listed as unsupported ({feature}) but Flink ran it: {got}; {rows}"
        assert re.search(FEATURE_ERRORS[feature], found["error"]), \
            f"listed as unsupported ({feature}) but Flink's error is: {found['error']}"
    elif case.name in FLINK_DIFFERS:
        assert got == "differs", f"listed as differing, but Flink's outcome is {got}: " + (
            rows if got == "agrees" else found["error"])
    else:
        assert got == "agrees", (
            f"Flink {got}: " + (rows if got == "differs" else found["error"]) +
            "\n(add the case to FLINK_DIFFERS or FLINK_UNSUPPORTED in "
            "tests/flink/flink_outcomes.py with the reason, and to "
            "docs/match-recognize-flink.md)")


def test_listed_names_are_compared_cases() -> None:
    """Checks that the lists name compared cases, each once, and only known features."""
    compared = {c.name for c in COMPARED}
    assert not set(FLINK_DIFFERS) & set(FLINK_UNSUPPORTED)
    assert set(FLINK_DIFFERS) <= compared, set(FLINK_DIFFERS) - compared
    assert set(FLINK_UNSUPPORTED) <= compared, set(FLINK_UNSUPPORTED) - compared
    assert set(FLINK_UNSUPPORTED.values()) <= set(FEATURE_ERRORS)
    assert all(text.strip().endswith(".") for text in FLINK_DIFFERS.values())


def test_the_doc_lists_every_case_that_does_not_agree() -> None:
    """Keeps docs/match-recognize-flink.md in step: every listed case, feature and count."""
    text = DOC.read_text()
    missing = [name for name in (*FLINK_DIFFERS, *FLINK_UNSUPPORTED) if f"`{name}`" not in text]
    assert not missing, f"{DOC.relative_to(ROOT)} does not name: {missing}"
    differs, unsupported = len(FLINK_DIFFERS), len(FLINK_UNSUPPORTED)
    counts = {"agrees": len(COMPARED) - differs - unsupported, "differs": differs,
              "unsupported": unsupported}
    for outcome, count in counts.items():
        assert re.search(rf"^\| {outcome} \| {count} \|", text, re.M), \
            f"{DOC.relative_to(ROOT)}: the count of `{outcome}` should be {count}"
    for feature in set(FLINK_UNSUPPORTED.values()):
        assert feature in text, f"{DOC.relative_to(ROOT)} does not name the feature {feature!r}"
