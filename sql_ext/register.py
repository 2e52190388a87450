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
    for spec in FUNCTIONS:
        if spec.status != "available":
            continue
        spark.udtf.register(spec.name, for_session(load_adapter(spec), remote=remote))
        names.append(spec.name)
    return names


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
