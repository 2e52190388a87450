"""Facts about a call's whole input: which pattern classes occur, the newest event time.

A task sees only its own keys, yet two answers depend on the whole TABLE argument: a class
that no event carries (a misspelt name answers "no match" without a word, issue 47) and the
close of a trailing NOT's time window (the newest event time over every key). ``analyze``
asks for them by selecting one column, :data:`FACTS`:
``named_struct('done', false, name, IF(false, expr, NULL), ...)``. The JVM shim's
``FactsRule`` (sql_ext/jvm) replaces it, right after analysis, by a scalar subquery over the
same input that Spark runs once before the tasks: ``named_struct('done', true, name,
max(expr), ...)``, of the asked struct's type. Without the rule Spark folds every field to
NULL, ``done`` stays false, and the task knows that it has no facts.

Fields named ``need_...`` are requirements (booleans some row must make true; when one is not,
the shim lets every row through its row filter so that the tasks see rows and report it);
``newest`` is the maximum timestamp. A failed requirement's "did you mean" comes from the type
values of the reporting task's own rows (a type value that starts with the class name, as
``O_Create Offer`` for ``O_Create``, else the closest by ``difflib``): the facts stay one
single-stage aggregate of booleans, where a distance to every class for every row cost 0.7 s
per 10^6 rows (BENCHMARKS.md, "Facts about the whole input").

Example:
    >>> print(facts_sql({"newest": "`ts`", "need_0": "`type` = 'a'"}))
    named_struct('done', false, 'newest', IF(false, `ts`, NULL), 'need_0', IF(false, `type` = 'a', NULL))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cep.lang.query import Query
from cep.lang.validate import absent_class
from cep.lang.spark_sql import sql_string

if TYPE_CHECKING:
    import pyarrow as pa

FACTS = "__cep_facts"
"""The selected column the JVM shim's rule answers (``FactsRule.FIELD``)."""


def facts_sql(asked: Mapping[str, str]) -> str:
    """The SQL of the :data:`FACTS` column for ``{field name: SQL expression}``."""
    fields = "".join(f", {sql_string(name)}, IF(false, {sql}, NULL)" for name, sql in asked.items())
    return f"named_struct('done', false{fields})"


def class_questions(classes: Sequence[str], type_sql: str) -> dict[str, str]:
    """The ``need_i`` field of each class a pattern reads from the type column.

    Example:
        >>> class_questions(["a"], "`type`")["need_0"]
        "coalesce(`type` = 'a', false)"
    """
    return {f"need_{i}": f"coalesce({type_sql} = {sql_string(cls)}, false)"
            for i, cls in enumerate(classes)}


def read_facts(table: pa.Table | pa.RecordBatch) -> dict[str, Any] | None:
    """The answered facts of a task's rows (a ``pyarrow.Table`` with :data:`FACTS`), or None
    when the rule did not run (or the task has no rows)."""
    if FACTS not in table.column_names or table.num_rows == 0:
        return None
    value = table.column(FACTS)[0].as_py()
    return value if value and value.get("done") else None


def newest_of(table: pa.Table | pa.RecordBatch) -> pa.Array | None:
    """The ``newest`` field of the task's rows as a one-element Arrow array (None: no facts)."""
    if read_facts(table) is None:
        return None
    column = table.column(FACTS)
    if hasattr(column, "combine_chunks"):  # a Table's column; a RecordBatch's is one array
        column = column.combine_chunks()
    return column.field("newest").slice(0, 1)


def check_classes(query: Query, classes: Sequence[str], facts: Mapping[str, Any] | None,
                  types: pa.Array | pa.ChunkedArray | None = None) -> None:
    """Raise CEP-PAT-219 for the first class of ``classes`` that no event of the input carries.

    Args:
        query: the parsed pattern.
        classes: the classes with ``need_i`` fields, in order.
        facts: from :func:`read_facts` (None: no facts, nothing checked).
        types: the task's type values (an Arrow array), for "did you mean".

    Raises:
        PatternSemanticError: a class is absent.

    Example:
        >>> import pyarrow as pa
        >>> from cep.lang import parse_pattern
        >>> q = parse_pattern("PATTERN A_Incomplet; A_Pending")
        >>> check_classes(q, ["A_Incomplet", "A_Pending"], {"done": True, "need_0": False,
        ...               "need_1": True}, pa.array(["A_Pending", "A_Incomplete"]))
        Traceback (most recent call last):
        ...
        cep.lang.errors.PatternSemanticError: CEP-PAT-219: line 1, column 9: no event of the input has class 'A_Incomplet' (did you mean 'A_Incomplete'?)
            PATTERN A_Incomplet; A_Pending
                    ^~~~~~~~~~~
    """
    if facts is None:
        return
    for i, cls in enumerate(classes):
        if not facts.get(f"need_{i}"):
            raise absent_class(query, cls, near(cls, types))


def near(cls: str, types: pa.Array | pa.ChunkedArray | None) -> str | None:
    """A type value to offer for ``cls``: one that starts with it, else the closest.

    Example:
        >>> import pyarrow as pa
        >>> near("O_Create", pa.array(["O_Sent", "O_Create Offer", None]))
        'O_Create Offer'
    """
    import difflib

    import pyarrow.compute as pc

    if types is None:
        return None
    values = sorted(str(v) for v in pc.unique(types.drop_null()).to_pylist() if v != cls)
    prefixed = [v for v in values if v.startswith(cls)]
    if prefixed:
        return prefixed[0]
    close = difflib.get_close_matches(cls, values, n=1)
    return close[0] if close else None
