"""Every refusal of a DEFINE or MEASURES expression is ours: a CEP code, a position, a caret.

Each case is the smallest statement that takes one refusal path of the translator
(:mod:`cep.recognize.expressions`); the last test reads the translator's source and requires
that every ``raise RowPattern...Error`` in it was reached by some case here, so a new refusal
without a case fails (issue 49: "a test feeds every refusal path").
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import cep.recognize.calls as calls
import cep.recognize.expressions as expressions
from cep.recognize.errors import RowPatternError
from cep.recognize.rewrite import rewrite_statement

# (MEASURES item, rows per match, DEFINE of B, expected code)
REFUSALS = [
    ("x +", "ONE", "x > 0", "CEP-MR-207"),
    ("COUNT(DISTINCT x)", "ONE", "x > 0", "CEP-MR-205"),
    ("first_value(x) IGNORE NULLS", "ONE", "x > 0", "CEP-MR-205"),
    ("RUNNING upper(v)", "ONE", "x > 0", "CEP-MR-207"),
    ("grouping_id(x)", "ONE", "x > 0", "CEP-MR-207"),
    ("COUNT(*)", "ONE", "x > FINAL LAST(A.x)", "CEP-MR-207"),
    ("COUNT(*)", "ONE", "approx_count_distinct(A.x) > 1", "CEP-MR-205"),
    ("COUNT(*)", "ONE", "cbrt(A.x) > 1", "CEP-MR-205"),
    ("COUNT(*)", "ONE", "floor(A.x, 1) > 1", "CEP-MR-205"),
    ("COUNT(*)", "ONE", "percentile(A.x) > 1", "CEP-MR-207"),
    ("COUNT(*)", "ONE", "percentile(A.x, x) > 1", "CEP-MR-207"),
    ("COUNT(*)", "ONE", "count_if(A.x > 1, 2) > 0", "CEP-MR-207"),
    ("sum(*)", "ONE", "x > 0", "CEP-MR-207"),
    ("SUM(PREV(x))", "ONE", "x > 0", "CEP-MR-207"),
    ("max_by(A.x, B.x)", "ONE", "x > 0", "CEP-MR-207"),
    ("median(x)", "ALL", "x > 0", "CEP-MR-205"),
    ("percentile_cont(0.5) WITHIN GROUP (ORDER BY x)", "ALL", "x > 0", "CEP-MR-205"),
    ("PREV(CLASSIFIER() || v)", "ONE", "x > 0", "CEP-MR-205"),
    ("COUNT(*)", "ONE", "LAST(CLASSIFIER() || 'x') = 'Ax'", "CEP-MR-205"),
    ("LAST(SUM(x))", "ONE", "x > 0", "CEP-MR-207"),
    ("LAST(A.x + B.x)", "ONE", "x > 0", "CEP-MR-207"),
    ("LAST(Z.x)", "ONE", "x > 0", "CEP-MR-201"),
    ("CLASSIFIER(Z)", "ONE", "x > 0", "CEP-MR-201"),
    ("CLASSIFIER(1)", "ONE", "x > 0", "CEP-MR-207"),
    ("LAST(x, -1)", "ONE", "x > 0", "CEP-MR-207"),
    ("FIRST()", "ONE", "x > 0", "CEP-MR-207"),
    ("PREV(FIRST())", "ONE", "x > 0", "CEP-MR-207"),
    ("COUNT(*)", "ONE", "PREV() > 0", "CEP-MR-207"),
    ("COUNT(*)", "ONE", "x > PREV(LAST())", "CEP-MR-207"),
]


def _statement(measure: str, rows: str, define: str) -> str:
    return ("SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY p ORDER BY ts\n"
            f"  MEASURES {measure} AS m {rows} ROW{'S' if rows == 'ALL' else ''} PER MATCH\n"
            f"  PATTERN (A B+) DEFINE A AS v = 'a', B AS {define})")


def _refusal(measure: str, rows: str, define: str) -> RowPatternError:
    with pytest.raises(RowPatternError) as caught:
        rewrite_statement(_statement(measure, rows, define))
    return caught.value


@pytest.mark.parametrize("measure, rows, define, code", REFUSALS,
                         ids=[f"{m}|{d}" for m, _, d, _ in REFUSALS])
def test_each_refusal_has_our_code_and_points_at_the_expression(measure: str, rows: str,
                                                                 define: str, code: str) -> None:
    error = _refusal(measure, rows, define)
    assert error.code == code, str(error)
    line = 2 if define == "x > 0" else 3
    found = re.search(r"line (\d+), column (\d+): ", str(error))
    assert found and int(found.group(1)) == line, str(error)
    assert "^" in str(error) and "__mr_" not in str(error).split("\n")[0], str(error)


def _raise_sites() -> list[tuple[int, str]]:
    """``(line, the longest constant part of its message)`` of each RowPattern error raised
    by the translator (:mod:`cep.recognize.expressions` and the call finder it uses,
    :mod:`cep.recognize.calls`)."""
    sites = []
    for node in (n for module in (expressions, calls)
                 for n in ast.walk(ast.parse(Path(module.__file__).read_text()))):
        if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)
                and ast.unparse(node.exc.func).startswith("RowPattern")):
            continue
        message = node.exc.args[1]
        parts = [c.value for c in ast.walk(message)
                 if isinstance(c, ast.Constant) and isinstance(c.value, str)]
        sites.append((node.lineno, max(parts, key=len)))
    return sites


def test_every_refusal_path_of_the_translator_is_fed() -> None:
    messages = [str(_refusal(*case[:3])) for case in REFUSALS]
    missing = [(line, text) for line, text in _raise_sites()
               if not any(text in message for message in messages)]
    assert not missing, f"refusals without a case in REFUSALS: {missing}"
