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

__all__ = ["Rewriter", "install_rewriter"]


class Rewriter:
    """The py4j callback object (implements ``cep.sql.StatementRewriter``)."""

    def rewrite(self, sql: str) -> str:
        """The statement to parse, or NUL + the error message for the SQL caller."""
        from cep.recognize.rewrite import contains_clause, rewrite_statement

        try:
            if not contains_clause(sql):
                return sql
            return rewrite_statement(sql)
        except CepError as err:
            return "\x00" + str(err)
        except Exception as err:  # noqa: BLE001 - anything else must still reach the caller
            return f"\x00CEP-MR-000: the MATCH_RECOGNIZE rewriter failed: {err!r}"

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
    return True
