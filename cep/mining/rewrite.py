"""Statement rewriter: every process-mining call becomes the Spark SQL subquery it stands for.

``SELECT * FROM variants('case_id', TABLE(log)) AS v`` is parsed by Spark as
``SELECT * FROM (<the plan of cep.mining.plans>) AS v``: a window and aggregate plan that
Spark runs alone, with no Python task. The rest of the statement is untouched, so a call is
usable as a table anywhere (joins, CTEs, ``CREATE TABLE ... AS``, ``VERSION AS OF`` inside
the TABLE query). The JVM shim hands every statement that names one of the functions to this
module (the same hook as MATCH_RECOGNIZE, :mod:`sql_ext.recognize_hook`).

Example:
    >>> sql = rewrite_statement("SELECT * FROM case_stats('c', TABLE(log)) s WHERE n_events > 2")
    >>> sql.startswith("SELECT * FROM (SELECT __pm_k AS `c`, __pm_f.__pm_ts AS start_ts")
    True
    >>> sql.endswith(") s WHERE n_events > 2")
    True
"""

from __future__ import annotations

from cep.mining.calls import Call, find_calls, mentions_call, tokens_of
from cep.mining.errors import E_CALL, E_KEY_NAME, E_SETUP, E_WITHIN, MiningError
from cep.mining.plans import OUTPUT_COLUMNS, plan_sql, within_seconds

__all__ = ["MAX_CALLS", "contains_call", "rewrite_statement"]

MAX_CALLS = 64


def contains_call(sql: str) -> bool:
    """Whether ``sql`` calls a process-mining function (outside strings and comments).

    Example:
        >>> contains_call("SELECT * FROM follows(TABLE(t))"), contains_call("SELECT 'follows(TABLE(t))'")
        (True, False)
    """
    if not isinstance(sql, str) or not mentions_call(sql):
        return False
    try:
        return next(find_calls(sql), None) is not None
    except MiningError:
        return True


def rewrite_statement(sql: str) -> str:
    """``sql`` with every process-mining call replaced by its subquery.

    Every call is checked against the original text first, so errors point at what the
    analyst wrote; then the calls are replaced one at a time, the first in the text first (a
    call inside another's TABLE argument is copied into the outer plan, then replaced there).

    Raises:
        MiningError: CEP-PM-... with line, column and caret in ``sql``.
    """
    if not mentions_call(sql):
        return sql
    calls = list(find_calls(sql))
    for call in calls:
        _check(sql, call)
    if len(calls) > MAX_CALLS:
        raise MiningError(E_SETUP, f"more than {MAX_CALLS} process-mining calls in one "
                          "statement", sql, calls[MAX_CALLS].start, calls[MAX_CALLS].end)
    for _ in calls:
        call = next(find_calls(sql, tokens_of(sql)))
        text = plan_sql(call.function, call.source, call.values)
        sql = f"{sql[:call.start]}({text}){sql[call.end:]}"
    return sql


def _check(sql: str, call: Call) -> None:
    """What the plan cannot say itself: ``within`` and the key column's name."""
    values = call.values
    within = values.get("within")
    if within is not None:
        start, end = call.spans["within"]
        if values["relation"] != "eventual":
            raise MiningError(E_WITHIN, "within bounds eventually-follows pairs: add "
                              "relation => 'eventual', or leave within out", sql, start, end)
        try:
            within_seconds(within)
        except ValueError as problem:
            raise MiningError(E_WITHIN, f"within: {problem}", sql, start, end) from None
    key = values.get("key_col")
    if key is not None:
        mode = values.get("output", "") if call.function == "follows" else ""
        own = OUTPUT_COLUMNS[(call.function, mode)]
        if key.lower() in own:
            start, end = call.spans["key_col"]
            raise MiningError(E_KEY_NAME, f"key_col {key!r} is also the name of one of "
                              f"{call.function}'s output columns ({', '.join(own)}): rename "
                              "it in the TABLE query (SELECT *, x AS case_id ...)", sql,
                              start, end)
    if not call.source.strip():
        raise MiningError(E_CALL, "TABLE() is empty", sql, call.start, call.end)
