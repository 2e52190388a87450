"""Registration of every available CEP SQL function in a Spark session (idempotent).

Usage (needs a Spark session, so not a doctest)::

    from jobs.session import build_session
    spark = build_session()
    register_all(spark)
    # -> ['cep_functions', 'match_seq', 'approx_match_seq', 'sketch_stats',
    #     'cet_trends', 'match_prob']
    spark.sql("SELECT name, status FROM cep_functions()").show()

The same call works on a Spark Connect client session (one made with ``.remote(url)`` on
the session builder, docs/connect.md): the UDTF objects are sent to the server, whose Python
workers import the same ``udfs`` modules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from sql_ext.registry import FUNCTIONS, FunctionSpec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def load_adapter(spec: FunctionSpec) -> Any:
    """The UDTF object of ``spec``, imported lazily from its dotted ``module:attribute``."""
    if spec.adapter is None:
        raise ValueError(f"{spec.name} has no adapter yet ({spec.status})")
    module_name, _, attribute = spec.adapter.partition(":")
    factory = getattr(importlib.import_module(module_name), attribute)
    return factory()


def register_all(spark: "SparkSession") -> list[str]:
    """Register every available function under its registry name; returns the names.

    Registering again replaces the same definitions, so calling this twice is harmless.
    ``spark`` is a classic session or a Spark Connect client session (functions are
    registered per session, so each Connect client calls this for its own).
    """
    names = []
    remote = is_connect_session(spark)
    put_errors_first(spark)
    for spec in FUNCTIONS:
        if spec.status != "available" or spec.adapter is None:
            continue  # planned, or a rewritten plan (nothing to register)
        spark.udtf.register(spec.name, for_session(load_adapter(spec), remote=remote))
        names.append(spec.name)
    return names


HIDE_TRACEBACK = "spark.sql.execution.pyspark.udf.hideTraceback.enabled"
"""Spark's setting that sends a Python worker's exception without its traceback."""
QUERY_CONTEXT_LOGGER = "SQLQueryContextLogger"
"""pyspark's logger that writes every SQL error the caller is about to receive to standard
error again, as a JSON line with the JVM's stack (about 100 frames)."""


def put_errors_first(spark: Any) -> None:
    """Make a CEP error the first thing a ``spark.sql`` caller reads (issue 47).

    Spark wraps a function's error in its own condition (``TABLE_VALUED_FUNCTION_FAILED_TO_
    ANALYZE_IN_PYTHON``, ``PYTHON_EXCEPTION``); with :data:`HIDE_TRACEBACK` the text after it
    is ``udfs.shell.CallFailed: CEP-...`` instead of a Python traceback, so the code is on the
    first line. pyspark's :data:`QUERY_CONTEXT_LOGGER` repeats the error the caller gets on
    standard error; it is silenced unless the user gave it a level. What remains at log level
    ERROR is Spark's own (docs/sql.md, "Errors").
    """
    import logging

    logger = logging.getLogger(QUERY_CONTEXT_LOGGER)
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.CRITICAL)
    spark.conf.set(HIDE_TRACEBACK, "true")


def is_connect_session(spark: object) -> bool:
    """Whether ``spark`` is a Spark Connect client session rather than a classic one.

    Decided by the session's class, so a classic process never imports the Connect client
    (which needs grpcio).
    """
    return type(spark).__module__.startswith("pyspark.sql.connect.")


def for_session(udtf: Any, *, remote: bool) -> Any:
    """``udtf`` as the UDTF kind a Connect (``remote``) or classic session registers.

    pyspark's ``udtf``/``arrow_udtf`` build a Connect UDTF only once the process is in Connect
    mode (``SPARK_CONNECT_MODE_ENABLED``, set by the session builder's ``remote(...)``), and a
    classic one otherwise; each session kind refuses the other's. A process can hold both
    kinds, or a Connect session made by the builder of
    ``pyspark.sql.connect.session.SparkSession`` (which leaves the mode unset), so the object is rebuilt from the same handler class,
    return type, evaluation type and determinism when its kind is not the session's.
    An object of the right kind (always the case in a classic-only process) is returned as is.
    """
    from pyspark.sql.udtf import UserDefinedTableFunction as ClassicUDTF

    if not remote:
        if isinstance(udtf, ClassicUDTF):
            return udtf
        # A Connect UDTF keeps a DDL return type unparsed; the classic one parses it itself.
        return_type = getattr(udtf.returnType, "data_type_string", udtf.returnType)
        return ClassicUDTF(udtf.func, return_type, evalType=udtf.evalType,
                           deterministic=udtf.deterministic)
    from pyspark.sql.connect.udtf import UserDefinedTableFunction as ConnectUDTF

    if isinstance(udtf, ConnectUDTF):
        return udtf
    # The classic ``returnType`` property parses the DDL string in a JVM, which a client
    # process may not have: the string (or StructType, or None with analyze) as given is taken.
    return ConnectUDTF(udtf.func, udtf._returnType, evalType=udtf.evalType,
                       deterministic=udtf.deterministic)
