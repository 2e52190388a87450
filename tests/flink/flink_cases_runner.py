"""Runs MATCH_RECOGNIZE conformance cases through PyFlink and writes Flink's answer to each as JSON.

Executed by ``tests/flink/test_flink_conformance.py`` with the interpreter of ``.venv-flink``
(PyFlink pins numpy/pyarrow versions that clash with the project's), so it imports nothing
from the project: only the standard library and pyflink.

Input: a JSON file holding a list of cases ``{"name", "rows", "sql"}``, each row
``[p, ts, v, x]``. Output (stdout, or the path given as the second argument): a JSON list with
one entry per case, in input order::

    {"name": ..., "status": "ok" | "error", "rows": [[...], ...] | null, "error": str | null}

How a case runs:

* One ``TableEnvironment`` (one local Flink) for all cases, in **batch** mode. Flink plans
  ``MATCH_RECOGNIZE`` in batch mode (``BatchExecMatch``, FLINK-24865), and its CEP operator
  keeps every row until the end-of-input watermark, then replays each partition in rowtime
  order, so the order of the rows in the source file does not matter (checked with rows
  written out of order: the same matches). Streaming mode over a
  bounded source was the alternative, and it is worse here: a row whose time is behind the
  watermark (any row read after a later one, e.g. another case's) is dropped as late, so every
  case would need a source of its own, read in time order.
* All rows of all cases go to one JSON-lines file, read as table ``mr_rows`` with the case's
  index ``c``, the columns ``p STRING, ts INT, v STRING, x INT`` (JSON keeps NULLs) and the
  rowtime attribute ``rt AS TO_TIMESTAMP_LTZ(ts, 0)`` with ``WATERMARK FOR rt AS rt``.
* For each case a temporary view ``input`` selects that case's rows; ``sql_query`` resolves
  the view while it converts the statement, so the view can be redefined for the next case.
  The statement is changed in one way only: Flink wants the first ORDER BY item of
  ``MATCH_RECOGNIZE`` to be an ascending time attribute, so a clause's ``ORDER BY ts``
  (ascending) becomes ``ORDER BY rt``. Anything else is left as is, and Flink's own error is
  recorded.
* Each planned case is compiled to an execution plan alone (``explain_sql`` with
  ``JSON_EXECUTION_PLAN`` builds the CEP pattern, which is where Flink rejects e.g. a greedy
  quantifier at the end of a pattern), so a refusal is charged to its case.
* The cases that compile run together, as one ``UNION ALL`` job whose rows are
  ``(case index, JSON_ARRAY(columns))``: one job instead of one per case (a job costs about a
  second and a half). A job that fails or runs past :data:`JOB_TIMEOUT_S` (it is then
  cancelled) is split in halves until the failing case runs alone, so one case that fails or
  hangs at run time costs a few jobs and never the run.

Values: numbers, booleans and strings come back as JSON values (a DECIMAL as a number);
timestamps as ISO strings (session time zone UTC); any other type as Flink's string of it.

Example:
    .venv-flink/bin/python tests/flink/flink_cases_runner.py cases.json flink_out.json
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

JOB_TIMEOUT_S = 60.0
"""Longest a job may run before it is cancelled (the whole union takes ~5 s)."""

ORDER_BY_TS = re.compile(
    r"(\bMATCH_RECOGNIZE\s*\(\s*(?:PARTITION\s+BY\s+[^()]*?\s+)?ORDER\s+BY\s+)ts\b"
    r"(?!\s+DESC\b)", re.IGNORECASE)
"""The first ORDER BY item of a ``MATCH_RECOGNIZE`` when it is ``ts`` and not DESC."""

EXCEPTION_LINE = re.compile(
    r"^(?::\s*|Caused by:\s*)?((?:[A-Za-z_$][\w$]*\.)+([A-Z][\w$]*(?:Exception|Error)))"
    r"(?::\s*(.*))?$")
"""A Java exception's header line: its class and the first line of its message."""


@dataclass
class Planned:
    """A case Flink accepted: its index and the ``SELECT`` that turns its rows into JSON."""

    index: int
    sql: str
    time_columns: list[int]


class JobFailed(Exception):
    """A job that failed or was cancelled for running too long (the message says which)."""


def flink_statement(sql: str) -> str:
    """The case's statement as Flink gets it: a clause's ``ORDER BY ts`` becomes ``ORDER BY rt``.

    Args:
        sql: The conformance case's statement.

    Returns:
        The statement with the first ORDER BY item of each ``MATCH_RECOGNIZE`` replaced by the
        rowtime attribute ``rt`` when it is ``ts`` in ascending order.
    """
    return ORDER_BY_TS.sub(r"\1rt", sql)


def error_text(error: BaseException) -> str:
    """The first line of Flink's error message, with its root cause when that says more.

    Args:
        error: What PyFlink raised (a Py4J error carrying a Java stack trace, or a Python one).

    Returns:
        ``"ExceptionClass: first line of the message"``, followed by ``" (root cause:
        RootClass: ...)"`` when the deepest cause's first line is not already in it.
    """
    heads = []
    for line in str(error).splitlines():
        match = EXCEPTION_LINE.match(line.strip())
        if match:
            heads.append(f"{match.group(2)}: {match.group(3) or ''}".strip().rstrip(":"))
    if not heads:
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        return lines[0] if lines else type(error).__name__
    first, root = heads[0], heads[-1]
    root_message = root.split(": ", 1)[-1]
    return first if root_message in first else f"{first} (root cause: {root})"


def write_rows(cases: list[dict[str, Any]], path: Path) -> None:
    """Writes every case's rows to one JSON-lines file, each row tagged with its case's index.

    Args:
        cases: The cases, in input order.
        path: The file to write.
    """
    with path.open("w", encoding="utf-8") as out:
        for index, case in enumerate(cases):
            for p, ts, v, x in case["rows"]:
                out.write(json.dumps({"c": index, "p": p, "ts": ts, "v": v, "x": x}) + "\n")


def create_environment(rows_file: Path) -> Any:
    """One batch ``TableEnvironment`` with the rows of all cases registered as ``mr_rows``.

    Args:
        rows_file: The JSON-lines file of :func:`write_rows`.

    Returns:
        The table environment.
    """
    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    config = env.get_config()
    config.set("parallelism.default", "1")
    config.set("table.local-time-zone", "UTC")
    path = str(rows_file).replace("'", "''")
    env.execute_sql(
        "CREATE TEMPORARY TABLE mr_rows (c INT, p STRING, ts INT, v STRING, x INT, "
        "rt AS TO_TIMESTAMP_LTZ(ts, 0), WATERMARK FOR rt AS rt) WITH ("
        f"'connector' = 'filesystem', 'path' = '{path}', 'format' = 'json')")
    return env


def json_select(index: int, view: str, types: list[tuple[str, Any]]) -> tuple[str, list[int]]:
    """The ``SELECT`` that writes each row of a case's result as ``(index, JSON array)``.

    Args:
        index: The case's index.
        view: The temporary view holding the case's result.
        types: The result's column names and data types, in order.

    Returns:
        The statement and the positions of the timestamp columns (cast to strings there).
    """
    from pyflink.table import types as flink_types

    native = (flink_types.TinyIntType, flink_types.SmallIntType, flink_types.IntType,
              flink_types.BigIntType, flink_types.FloatType, flink_types.DoubleType,
              flink_types.DecimalType, flink_types.BooleanType, flink_types.CharType,
              flink_types.VarCharType)
    stamps = (flink_types.TimestampType, flink_types.LocalZonedTimestampType,
              flink_types.ZonedTimestampType)
    items, time_columns = [], []
    for position, (name, data_type) in enumerate(types):
        column = "`" + name.replace("`", "``") + "`"
        if isinstance(data_type, native):
            items.append(column)
        else:
            items.append(f"CAST({column} AS STRING)")
            if isinstance(data_type, stamps):
                time_columns.append(position)
    sql = f"SELECT {index} AS c, JSON_ARRAY({', '.join(items)} NULL ON NULL) AS r FROM {view}"
    return sql, time_columns


def plan_case(env: Any, index: int, case: dict[str, Any]) -> Planned:
    """Plans one case (``input`` = its rows) and compiles it to an execution plan alone.

    Args:
        env: The table environment.
        index: The case's index in ``mr_rows``.
        case: The case.

    Returns:
        The planned case.

    Raises:
        Exception: Whatever Flink raises when it refuses the statement.
    """
    from pyflink.table.explain_detail import ExplainDetail

    env.execute_sql("CREATE TEMPORARY VIEW input AS "
                    f"SELECT p, ts, v, x, rt FROM mr_rows WHERE c = {index}")
    try:
        table = env.sql_query(flink_statement(case["sql"]))
    finally:
        env.drop_temporary_view("input")
    schema = table.get_resolved_schema()
    view = f"mr_case_{index}"
    env.create_temporary_view(view, table)
    sql, time_columns = json_select(
        index, view, list(zip(schema.get_column_names(), schema.get_column_data_types())))
    env.explain_sql(sql, ExplainDetail.JSON_EXECUTION_PLAN)
    return Planned(index, sql, time_columns)


def collect(env: Any, sql: str, timeout: float) -> list[tuple[int, str]]:
    """Runs one job and returns its rows, cancelling it when it runs past ``timeout``.

    Args:
        env: The table environment.
        sql: The statement (rows of ``(case index, JSON array)``).
        timeout: Seconds the job may run.

    Returns:
        The job's rows.

    Raises:
        JobFailed: The job failed or was cancelled.
    """
    try:
        result = env.execute_sql(sql)
    except Exception as error:  # refused while planning the union
        raise JobFailed(error_text(error)) from error
    box: dict[str, Any] = {}

    def drain() -> None:
        try:
            with result.collect() as rows:
                box["rows"] = [(int(row[0]), str(row[1])) for row in rows]
        except Exception as error:  # the job failed, or was cancelled below
            box["error"] = error

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        try:
            result.get_job_client().cancel().result()
        except Exception:  # the job ended meanwhile (its local mini cluster is already gone)
            pass
        thread.join(10.0)
        if thread.is_alive() or "rows" not in box:
            raise JobFailed(f"timeout: the job ran longer than {timeout:g} s and was cancelled")
    if "error" in box:
        raise JobFailed(error_text(box["error"]))
    return box["rows"]


def decode(text: str, time_columns: list[int]) -> list[Any]:
    """One output row: the JSON array Flink wrote, with timestamps as ISO strings.

    Args:
        text: The ``JSON_ARRAY`` of the row.
        time_columns: Positions of the timestamp columns (Flink's ``yyyy-MM-dd HH:mm:ss.SSS``).

    Returns:
        The row's values.
    """
    values = json.loads(text)
    for position in time_columns:
        if values[position] is not None:
            values[position] = datetime.fromisoformat(values[position]).isoformat()
    return values


def run_planned(env: Any, planned: list[Planned], timeout: float,
                outcomes: dict[int, dict[str, Any]]) -> None:
    """Runs planned cases as one job; on failure, each half again, down to single cases.

    Args:
        env: The table environment.
        planned: The cases to run.
        timeout: Seconds each job may run.
        outcomes: Filled with each case's outcome, by case index.
    """
    try:
        rows = collect(env, " UNION ALL ".join(p.sql for p in planned), timeout)
    except JobFailed as failure:
        if len(planned) == 1:
            outcomes[planned[0].index] = {"status": "error", "rows": None,
                                          "error": str(failure)}
            return
        half = len(planned) // 2
        run_planned(env, planned[:half], timeout, outcomes)
        run_planned(env, planned[half:], timeout, outcomes)
        return
    by_index = {p.index: p for p in planned}
    found: dict[int, list[list[Any]]] = {p.index: [] for p in planned}
    for index, text in rows:
        found[index].append(decode(text, by_index[index].time_columns))
    for index, case_rows in found.items():
        outcomes[index] = {"status": "ok", "rows": case_rows, "error": None}


def run_cases(cases: list[dict[str, Any]], timeout: float = JOB_TIMEOUT_S
              ) -> list[dict[str, Any]]:
    """Flink's outcome for each case, in input order.

    Args:
        cases: The cases (``name``, ``rows``, ``sql``).
        timeout: Seconds each job may run.

    Returns:
        One ``{"name", "status", "rows", "error"}`` per case.
    """
    outcomes: dict[int, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="flink_cases_") as folder:
        rows_file = Path(folder) / "rows.json"
        write_rows(cases, rows_file)
        start = time.perf_counter()
        env = create_environment(rows_file)
        started = time.perf_counter()
        planned = []
        for index, case in enumerate(cases):
            try:
                planned.append(plan_case(env, index, case))
            except Exception as error:  # Flink refused the statement
                outcomes[index] = {"status": "error", "rows": None, "error": error_text(error)}
        compiled = time.perf_counter()
        if planned:
            run_planned(env, planned, timeout, outcomes)
        print(f"flink: started in {started - start:.1f} s, {len(cases)} cases planned and "
              f"compiled in {compiled - started:.1f} s, {len(planned)} run in "
              f"{time.perf_counter() - compiled:.1f} s", file=sys.stderr)
    return [{"name": case["name"], **outcomes[index]} for index, case in enumerate(cases)]


def main(argv: list[str]) -> int:
    """Reads the cases, runs them, writes the outcomes (stdout or ``argv[2]``).

    Args:
        argv: ``[script, cases.json]`` or ``[script, cases.json, out.json]``.

    Returns:
        The exit status.
    """
    if len(argv) not in (2, 3):
        print(__doc__.split("\n\n")[0], "\nusage: flink_cases_runner.py CASES.json [OUT.json]",
              file=sys.stderr)
        return 2
    cases = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    start = time.perf_counter()
    outcomes = run_cases(cases)
    text = json.dumps(outcomes, indent=1)
    if len(argv) == 3:
        Path(argv[2]).write_text(text + "\n", encoding="utf-8")
    else:
        print(text)
    failed = sum(o["status"] == "error" for o in outcomes)
    print(f"flink: {len(outcomes)} cases, {failed} refused or failed, "
          f"{time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
