"""``python -m jobs`` reports failures short, with the error first and an exit code that says
whose fault it was; stacks only with ``--verbose``; misspelled words get a suggestion
(jobs/cli_errors.py, docs/jobs.md "Exit codes")."""

from __future__ import annotations

import pytest

from jobs.cli import main
from jobs.cli_errors import exit_code, short_message

STACK_MARKERS = ("\tat ", "Traceback", "JVM stacktrace", "py4j")


def _argparse_exit(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2, info.value.code
    return capsys.readouterr().err


def test_a_misspelled_command_or_option_gets_a_suggestion(capsys) -> None:
    err = _argparse_exit(capsys, ["skecth", "--name", "x"])
    assert "invalid choice: 'skecth'" in err and "(did you mean 'sketch'?)" in err, err
    err = _argparse_exit(capsys, ["maintain", "--dry-rnu"])
    assert "unrecognized arguments: --dry-rnu" in err and "(did you mean '--dry-run'?)" in err, err
    err = _argparse_exit(capsys, ["maintain", "--zzzzzz"])
    assert "did you mean" not in err, err


def test_a_refused_statement_is_short_and_exits_2(spark, settings, capsys) -> None:
    code = main(["sql", "SELECT * FROM no_such_table_anywhere"], spark=spark, settings=settings)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("error: AnalysisException: [TABLE_OR_VIEW_NOT_FOUND]"), err
    assert not any(marker in err for marker in STACK_MARKERS), err
    # --verbose prints the same short message and the whole traceback (and lets pyspark's own
    # error log through).
    code = main(["--verbose", "sql", "SELECT * FROM no_such_table_anywhere"], spark=spark,
                settings=settings)
    verbose = capsys.readouterr().err
    assert code == 2 and err.splitlines()[0] in verbose.splitlines()
    assert "Traceback" in verbose, verbose


def test_a_cep_error_inside_spark_comes_first_with_its_caret(spark, settings, capsys) -> None:
    statement = ("SELECT * FROM match_seq('PATTERN A; B WHERE A.v >', "
                 "TABLE(SELECT 1L AS id, 'A' AS type, TIMESTAMP'2024-01-01' AS ts, 1 AS v))")
    code = main(["sql", statement], spark=spark, settings=settings)
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.splitlines()
    assert lines[0].startswith("error: CEP-PAT-") and "line 1, column" in lines[0], err
    assert any(line.strip() == "^" for line in lines[1:]), err
    assert not any(marker in err for marker in STACK_MARKERS), err


def test_a_match_recognize_name_error_points_into_the_statement_written(spark, settings, capsys
                                                                        ) -> None:
    statement = ("SELECT * FROM (SELECT 1L AS id, 'a' AS type, TIMESTAMP'2024-01-01' AS ts) "
                 "MATCH_RECOGNIZE (ORDER BY ts MEASURES FIRST(A.typo) AS t PATTERN (A) "
                 "DEFINE A AS type = 'a')")
    code = main(["sql", statement], spark=spark, settings=settings)
    err = capsys.readouterr().err
    assert code == 2, err
    column = statement.index("typo") + 1
    assert err.splitlines()[0].startswith(
        f"error: CEP-MR-208: line 1, column {column}: no column `typo`"), err
    assert "__mr_" not in err and not any(marker in err for marker in STACK_MARKERS), err


def test_a_class_no_event_carries_is_the_error_not_an_empty_answer(spark, settings, capsys
                                                                    ) -> None:
    statement = ("SELECT * FROM match_seq('PATTERN A_Incomplet; A_Pending', TABLE(SELECT 1L AS id, "
                 "'A_Incomplete' AS type, TIMESTAMP'2024-01-01' AS ts))")
    code = main(["sql", statement], spark=spark, settings=settings)
    err = capsys.readouterr().err
    assert code == 2, err
    first = err.splitlines()[0]
    assert first.startswith("error: CEP-PAT-219: line 1, column 9: no event of the input has "
                            "class 'A_Incomplet' (did you mean 'A_Incomplete'?)"), err
    assert not any(marker in err for marker in STACK_MARKERS), err


def test_other_failures_exit_1_and_point_to_verbose() -> None:
    assert exit_code(RuntimeError("disk full")) == 1
    assert short_message(RuntimeError("disk full\n\tat x")) == "RuntimeError: disk full"
    wrapped = RuntimeError("Python worker failed\n  File \"x\", line 1\n"
                           "CallFailed: CEP-SQL-020: bad mode\n\tat org.Foo")
    assert exit_code(wrapped) == 2 and short_message(wrapped) == "CEP-SQL-020: bad mode"


def test_a_trailing_not_whose_window_is_open_is_not_answered(spark, settings, capsys) -> None:
    # k1's A at 00:00 has its 20 minutes closed by k2's event at 00:30 (the newest of the whole
    # input); its A at 00:25 does not (issue 47, docs/semantics.md "Windows").
    statement = ("SELECT key, start_ts FROM match_seq('PATTERN A; NOT(B) WITHIN 20 MINUTES', "
                 "'key', TABLE(SELECT * FROM VALUES (1L, 'k1', 'A', TIMESTAMP'2024-01-01 00:00:00'),"
                 " (2L, 'k1', 'A', TIMESTAMP'2024-01-01 00:25:00'), "
                 "(3L, 'k2', 'B', TIMESTAMP'2024-01-01 00:30:00') AS t(id, key, type, ts)))")
    code = main(["sql", statement], spark=spark, settings=settings)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "2024-01-01 00:00:00" in out and "00:25:00" not in out, out
