"""The ``cep_functions()`` table function: the registry of CEP SQL functions as rows.

Usage (needs a Spark session, so not a doctest)::

    spark.sql("SELECT name FROM cep_functions() WHERE status = 'available'")
"""

from __future__ import annotations

from typing import Any, Iterator


class FunctionsTable:
    """Row UDTF handler yielding one row per registry entry (no input rows)."""

    def eval(self) -> Iterator[tuple[str, str, str, str, str]]:
        from sql_ext.registry import FUNCTIONS

        for spec in FUNCTIONS:
            yield spec.name, spec.signature, spec.returns, spec.status, spec.description


def functions_udtf() -> Any:
    """The Spark UDTF object for ``cep_functions`` (built lazily: needs pyspark)."""
    from pyspark.sql.functions import udtf

    return udtf(FunctionsTable,
                returnType="name STRING, signature STRING, returns STRING, status STRING, "
                           "description STRING")
