"""The DataFrame API: every SQL table function as a Python function of a DataFrame.

``sql_ext.match_seq(events, "PATTERN a; b WITHIN 1 HOURS", key_col="user_id")`` returns the
DataFrame that ``SELECT * FROM match_seq(...)`` returns over ``events``: the call is written
as the same SQL statement, with every value a literal escaped by sqlglot's Spark generator
(:func:`sql_ext.params.literal`; a pattern is a plain Python string, no SQL quoting), and run
with ``spark.sql(text, events=frame)``, which works on classic and Spark Connect sessions
alike. So the answers, the checks and the error codes are the SQL function's own: one
declaration per function (:data:`cep.signature.SIGNATURES`, :data:`sql_ext.registry.FUNCTIONS`),
and the Python functions below are generated from it.

The process-mining functions (``follows``, ``variants``, ``case_stats``) become their plans
here, in Python, so they need no JVM shim from this door; the UDTF functions need
``sql_ext.enable(spark)`` (or ``register_all``) on the session, as their SQL form does.

Example (the statement a call runs, without a session):
    >>> text = statement("follows", ("case_id",), {"output": "pairs"})
    >>> text.startswith("SELECT * FROM (SELECT __pm_k AS `case_id`, __pm_s AS source"), text.count("{events}")
    (True, 1)
    >>> statement("match_seq", ("PATTERN a; b",), {"key_col": "k"})
    "SELECT * FROM match_seq(pattern => 'PATTERN a; b', key_col => 'k', events => TABLE({events}))"
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Callable

from cep.signature import SIGNATURES
from sql_ext.params import literal
from sql_ext.registry import FUNCTIONS, FunctionSpec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["FRAME_FUNCTIONS", "call", "statement"]

_INTERNAL = ("cep_functions", "cep_match_recognize")
"""Functions without a DataFrame form: no table argument, or written by the rewriter only."""
_ROLES = ("leading", "key")


def _spec(function: str) -> FunctionSpec:
    from sql_ext.registry import function as lookup

    return lookup(function)


def statement(function: str, positional: tuple[Any, ...], named: dict[str, Any]) -> str:
    """The SQL statement a call runs, with ``{events}`` where the DataFrame goes (every other
    brace doubled, as ``spark.sql``'s formatter expects).

    Args:
        function: the SQL function's name.
        positional: its leading arguments and then ``key_col``, in the signature's order.
        named: the other arguments by name (a None value is SQL NULL: the default).

    Raises:
        TypeError: more positional arguments than the function's leading ones and key_col.
        CepError: an argument the function refuses (its own code, as in SQL).
    """
    spec = _spec(function)
    signature = SIGNATURES[function]
    slots = [a.name for a in signature.arguments if a.role in _ROLES]
    if len(positional) > len(slots):
        raise TypeError(f"{function}() takes the DataFrame and at most {len(slots)} more "
                        f"positional arguments ({', '.join(slots)}); pass the others by name")
    table = next(a.name for a in signature.arguments if a.role == "table")
    marker = f"__cep_events_{uuid.uuid4().hex[:8]}"
    args = [f"{name} => {literal(value)}"
            for name, value in [*zip(slots, positional), *named.items()]]
    args.append(f"{table} => TABLE({marker})")
    text = f"SELECT * FROM {function}({', '.join(args)})"
    if spec.plan is not None:
        from cep.mining.rewrite import rewrite_statement

        text = rewrite_statement(text)
    escaped = text.replace("{", "{{").replace("}", "}}")
    return escaped.replace(f"SELECT * FROM {marker}", "SELECT * FROM {events}").replace(
        f"TABLE({marker})", "TABLE({events})")


def call(function: str, events: "DataFrame", *positional: Any, **named: Any) -> "DataFrame":
    """``SELECT * FROM function(..., TABLE(events))`` as a DataFrame.

    Example (needs a session)::

        sql_ext.call("variants", spark.table("bpi2012"), "case_id")
    """
    return events.sparkSession.sql(statement(function, positional, named), events=events)


def _frame_function(spec: FunctionSpec) -> Callable[..., "DataFrame"]:
    signature = SIGNATURES[spec.name]
    slots = [a.name for a in signature.arguments if a.role in _ROLES]

    def function(events: "DataFrame", *positional: Any, **named: Any) -> "DataFrame":
        return call(spec.name, events, *positional, **named)

    function.__name__ = function.__qualname__ = spec.name
    named_ones = ", ".join(f"{a.name}=" for a in signature.arguments
                           if a.role not in (*_ROLES, "table"))
    function.__doc__ = (
        f"{spec.description}\n\n"
        f"The DataFrame form of the SQL function ``{spec.name}`` (docs/sql.md): "
        f"``{spec.name}(events{''.join(', ' + s for s in slots)}"
        f"{', ' + named_ones if named_ones else ''})``; the same arguments by the same names, "
        "the same answers and errors.\n\n"
        f"Returns:\n    A DataFrame with the columns of ``{spec.name}``: {spec.returns}.\n")
    return function


FRAME_FUNCTIONS: dict[str, Callable[..., "DataFrame"]] = {
    spec.name: _frame_function(spec) for spec in FUNCTIONS
    if spec.status == "available" and spec.name not in _INTERNAL}
"""Every SQL table function's DataFrame form, by name (``sql_ext.<name>`` is the same)."""
