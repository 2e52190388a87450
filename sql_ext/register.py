"""Registration of every available CEP SQL function in a Spark session (idempotent).

Usage (needs a Spark session, so not a doctest)::

    from jobs.session import build_session
    spark = build_session()
    register_all(spark)
    # -> ['cep_functions', 'match_seq', 'match_seq_arrow', 'approx_match_seq', 'approx_match_seq_arrow', 'sketch_stats',
    #     'cet_trends', 'match_prob']
    spark.sql("SELECT name, status FROM cep_functions()").show()
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
    """
    names = []
    for spec in FUNCTIONS:
        if spec.status != "available":
            continue
        spark.udtf.register(spec.name, load_adapter(spec))
        names.append(spec.name)
    return names
