"""Process mining in Spark's own engine: directly-follows graphs, variants, case statistics.

``follows``, ``variants`` and ``case_stats`` are SQL table functions on the one convention
(``key_col`` the case, ``TABLE(events)`` last, ``ts_col``/``type_col``/``id_col``) that Spark
runs as window and aggregate plans: :mod:`cep.mining.rewrite` replaces each call in a
statement by the query :mod:`cep.mining.plans` writes (docs/process-mining.md).

Example:
    >>> from cep.mining import rewrite_statement
    >>> "lead(struct(" in rewrite_statement("SELECT * FROM follows('c', TABLE(t))")
    True
"""

from cep.mining.calls import FUNCTIONS, Call, find_calls
from cep.mining.errors import MiningError
from cep.mining.plans import OUTPUT_COLUMNS, plan_sql
from cep.mining.rewrite import contains_call, rewrite_statement

__all__ = ["FUNCTIONS", "OUTPUT_COLUMNS", "Call", "MiningError", "contains_call", "find_calls",
           "plan_sql", "rewrite_statement"]
