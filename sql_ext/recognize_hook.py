"""The Python end of the parser hook: the JVM shim asks it to rewrite MATCH_RECOGNIZE.

Spark's parser has no Python extension point, so the shim's parser (``sql_ext/jvm``,
``LockdownParser`` and ``StatementRewrites``) passes every statement that mentions
MATCH_RECOGNIZE to the object installed here, through py4j's callback server, and parses
what comes back (:func:`cep.recognize.rewrite.rewrite_statement`). The same hook serves every
entry point whose SQL reaches this driver's JVM: ``spark.sql`` in pyspark and notebooks,
``python -m jobs sql``, the Thrift server of ``python -m jobs serve`` and the Spark Connect
server of ``python -m jobs connect-server``. The one session builder installs it
(``jobs.session.build_session``).

Example (without a JVM: the callback's own behaviour):
    >>> Rewriter().rewrite("SELECT 1")
    'SELECT 1'
    >>> Rewriter().rewrite("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A{}) )")[:31]
    '\\x00CEP-MR-105: line 1, column 44:'
"""

from __future__ import annotations

from typing import Any

from cep.errors import CepError

__all__ = ["Rewriter", "install_rewriter", "refuse_without_shim", "shim_missing_error"]


class Rewriter:
    """The py4j callback object (implements ``cep.sql.StatementRewriter``)."""

    def rewrite(self, sql: str) -> str:
        """The statement to parse, or NUL + the error message for the SQL caller.

        Process-mining calls are replaced first (a call's TABLE query may hold a
        MATCH_RECOGNIZE clause, which is then rewritten inside the call's plan).
        """
        from cep.mining.rewrite import rewrite_statement as rewrite_calls
        from cep.recognize.rewrite import contains_clause, rewrite_statement

        try:
            sql = rewrite_calls(sql)
            if not contains_clause(sql):
                return sql
            return rewrite_statement(sql)
        except CepError as err:
            return "\x00" + str(err)
        except Exception as err:  # noqa: BLE001 - anything else must still reach the caller
            return f"\x00CEP-MR-000: the statement rewriter failed: {err!r}"

    class Java:
        implements = ["cep.sql.StatementRewriter"]


def install_rewriter(spark: Any) -> bool:
    """Install the rewriter in ``spark``'s JVM; False when the JVM has no shim to call it."""
    from pyspark.java_gateway import ensure_callback_server_started

    context = spark.sparkContext
    holder = context._jvm.cep.sql.StatementRewrites
    if type(holder).__name__ != "JavaClass":  # a JavaPackage: the shim's jar is not loaded
        return False
    ensure_callback_server_started(context._gateway)
    holder.install(Rewriter())
    from sql_ext.registry import FUNCTIONS

    # The parser refuses TABLE(t) PARTITION BY in these functions' calls (CEP-SQL-003).
    holder.setFunctions(",".join(spec.name for spec in FUNCTIONS if spec.adapter))
    holder.setRewritten(",".join(spec.name for spec in FUNCTIONS if spec.plan))
    return True


def shim_missing_error(sql: str) -> CepError | None:
    """CEP-MR-109 at the first MATCH_RECOGNIZE of ``sql`` (CEP-PM-105 at its first
    process-mining call, which also needs the shim); None when the statement has neither.

    Example:
        >>> print(shim_missing_error("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A))"))
        CEP-MR-109: line 1, column 17: MATCH_RECOGNIZE needs the JVM shim, and this session started without it: build the session with sql_ext.configure(SparkSession.builder) before getOrCreate(), then call sql_ext.enable(spark) (docs/install.md)
            SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A))
                            ^~~~~~~~~~~~~~~
        >>> shim_missing_error("SELECT 'MATCH_RECOGNIZE'") is None
        True
        >>> err = shim_missing_error("SELECT * FROM variants('c', TABLE(t))")
        >>> err.code, err.column, shim_missing_error("SELECT variants FROM t") is None
        ('CEP-PM-105', 15, True)
    """
    from cep.recognize.errors import E_NO_SHIM, RowPatternSemanticError
    from cep.recognize.clause import KEYWORD, tokens_of
    from cep.recognize.rewrite import contains_clause

    if not isinstance(sql, str):
        return None
    calls = _mining_calls(sql)
    if calls:
        from cep.mining.errors import E_SETUP, MiningError

        first = calls[0]
        return MiningError(E_SETUP, f"{first.function} runs as a plan the JVM shim writes, and "
                           "this session started without it: build the session with "
                           "sql_ext.configure(SparkSession.builder) before getOrCreate(), then "
                           "call sql_ext.enable(spark) (docs/install.md); or call "
                           f"sql_ext.{first.function}(df, ...) from Python "
                           "(docs/process-mining.md)", sql, first.start,
                           first.start + len(first.function))
    if not contains_clause(sql):
        return None
    token = next(t for t in tokens_of(sql) if t.token_type.name == "VAR"
                 and t.text.upper() == KEYWORD)
    return RowPatternSemanticError(
        E_NO_SHIM, "MATCH_RECOGNIZE needs the JVM shim, and this session started without it: "
        "build the session with sql_ext.configure(SparkSession.builder) before getOrCreate(), "
        "then call sql_ext.enable(spark) (docs/install.md)", sql, token.start, token.end + 1)


def _mining_calls(sql: str) -> list[Any]:
    """The process-mining calls of ``sql``; none when one is malformed (the statement then
    fails with Spark's own error, as any call of an unknown function would)."""
    from cep.mining.calls import mentions_call, find_calls
    from cep.mining.errors import MiningError

    if not mentions_call(sql):
        return []
    try:
        return list(find_calls(sql))
    except MiningError:
        return []


def refuse_without_shim(spark: Any) -> None:
    """Make ``spark.sql`` raise CEP-MR-109 for MATCH_RECOGNIZE instead of Spark's syntax error.

    For a classic session whose JVM has no shim (started without ``sql_ext.configure``): the
    parser cannot be extended once the session runs, so the session's own ``sql`` method is
    wrapped; every other statement goes to Spark unchanged. Wrapping twice is avoided.
    """
    original = spark.sql
    if getattr(original, "_cep_refuses_match_recognize", False):
        return

    def sql(sqlQuery: str, *args: Any, **kwargs: Any) -> Any:  # noqa: N803 - pyspark's name
        error = shim_missing_error(sqlQuery)
        if error is not None:
            raise error
        return original(sqlQuery, *args, **kwargs)

    sql._cep_refuses_match_recognize = True  # type: ignore[attr-defined]
    sql.__doc__ = original.__doc__
    spark.sql = sql
