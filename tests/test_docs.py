"""Every example in README.md and docs/*.md is executed (rules in docs/decisions.md, "Executable docs")."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", re.S | re.M)
NOT_RUN = ("make ", "-m pytest", "# (needs a cluster)")


def blocks(kind: str) -> list[tuple[str, str]]:
    found = []
    for path in DOC_FILES:
        for i, match in enumerate(FENCE.finditer(path.read_text())):
            if match.group(1) == kind:
                found.append((f"{path.relative_to(ROOT)}#{i}", match.group(2)))
    return found


def shell_commands() -> list[tuple[str, str]]:
    commands = []
    for where, body in blocks("bash"):
        for line in body.splitlines():
            line = line.strip()
            if not line or line.startswith("#") or any(marker in line for marker in NOT_RUN):
                continue
            commands.append((where, line.split("  #")[0].strip()))
    return commands


def test_the_docs_have_examples() -> None:
    # Guards the parametrised tests below against a fence regex that silently finds nothing.
    assert len(blocks("sql")) >= 6 and len(blocks("python")) >= 1 and len(shell_commands()) >= 4


@pytest.mark.parametrize("where, sql", blocks("sql"), ids=[w for w, _ in blocks("sql")])
def test_sql_example_runs(spark, loaded_logs, request, where: str, sql: str) -> None:
    if "_sketch_" in sql:  # the sketch tables exist once the sketch job has run
        request.getfixturevalue("sketched_logs")
    if "checks" in sql:  # the generated check table of the trend examples (Q1)
        request.getfixturevalue("generated_checks")
    if "stock_prices" in sql:  # the real daily prices (Q2)
        request.getfixturevalue("loaded_stocks")
    if "FROM heat_" in sql:  # the state of the prediction set heat (docs/predict-jobs.md)
        request.getfixturevalue("predicted_heat")
    if "unanswered_offers_" in sql:  # the standing pattern's tables (docs/standing.md)
        request.getfixturevalue("standing_offers")
    if "demo_models" in sql:  # the predict_match models, made by a python block of docs/sql.md
        request.getfixturevalue("demo_models")
    rows = spark.sql(sql).collect()
    assert rows, f"{where} returned no rows"


@pytest.fixture(scope="module")
def demo_models(spark, settings, loaded_logs) -> None:
    """``demo_models`` exactly as the python block of docs/sql.md that writes it makes it."""
    where, code = next((w, c) for w, c in blocks("python") if "demo_models" in c)
    exec(compile(code, where, "exec"), {"spark": spark, "settings": settings})


@pytest.mark.parametrize("where, code", blocks("python"), ids=[w for w, _ in blocks("python")])
def test_python_example_runs(spark, settings, request, where: str, code: str) -> None:
    if "bpi2017_" in code:  # a block that reads the real logs
        request.getfixturevalue("loaded_logs")
    if "predict/heat" in code:  # a block that reads the heat set's runs (docs/jobs.md)
        request.getfixturevalue("predicted_heat")
    if "unanswered_offers" in code:  # the standing pattern over the offer feed
        request.getfixturevalue("standing_offers")
    exec(compile(code, where, "exec"), {"spark": spark, "settings": settings})


def subprocess_commands() -> set[str]:
    """The command lines also run as a process: one per distinct path through ``python -m
    jobs`` (argument parsing only, and a session built by the command itself)."""
    commands = [c for _, c in shell_commands()]
    return {next(c for c in commands if "--help" in c),
            next(c for c in commands if shlex.split(c)[3] == "sql")}


@pytest.mark.parametrize("where, command", shell_commands(), ids=[c for _, c in shell_commands()])
def test_shell_example_runs(spark, settings, loaded_logs, request, capsys, where: str,
                            command: str) -> None:
    """Each line runs through the command line's ``main`` in the test session (a JVM start per
    line cost ~30 s); :func:`test_shell_example_runs_as_a_process` runs one line per path as
    a process."""
    if "heat" in command:  # the heat prediction set and its source (docs/jobs.md)
        request.getfixturevalue("predicted_heat")
    if "unanswered_offers" in command:  # the offer feed the standing pattern reads
        request.getfixturevalue("standing_offers")
    argv = shlex.split(command)
    assert argv[0] == ".venv/bin/python" and argv[1:3] == ["-m", "jobs"], \
        f"{where}: only `.venv/bin/python -m jobs ...` commands are expected in docs, found {command!r}"
    from jobs.cli import main

    try:
        code = main(argv[3:], spark=spark, settings=settings)
    except SystemExit as exit_:  # --help: argparse prints and exits
        code = exit_.code
    out, err = capsys.readouterr()
    assert code == 0, f"{where}: {command}\n{out[-2000:]}\n{err[-3000:]}"
    assert (out + err).strip(), f"{where}: {command} printed nothing"


@pytest.mark.parametrize("command", sorted(subprocess_commands()))
def test_shell_example_runs_as_a_process(settings, loaded_logs, command: str) -> None:
    argv = shlex.split(command)
    env = dict(os.environ, CEP_WAREHOUSE=str(settings.warehouse_dir), PYTHONUNBUFFERED="1")
    proc = subprocess.run([sys.executable, *argv[1:]], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, f"{command}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    assert (proc.stdout + proc.stderr).strip(), f"{command} printed nothing"
