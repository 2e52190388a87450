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

Fields named ``need_...`` are requirements (booleans some row must make true); ``near_...`` a
type value close to a class (Spark's ``levenshtein`` within 3 edits, or a value that starts
with the class name: ``O_Create`` for ``"O_Create Offer"``); ``newest`` the maximum timestamp.

Example:
    >>> print(facts_sql({"newest": "`ts`", "need_0": "`type` = 'a'"}))
    named_struct('done', false, 'newest', IF(false, `ts`, NULL), 'need_0', IF(false, `type` = 'a', NULL))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cep.lang.query import Query
from cep.lang.validate import absent_class
from cep.lang.spark_sql import sql_string

FACTS = "__cep_facts"
"""The selected column the JVM shim's rule answers (``FactsRule.FIELD``)."""
NEAR_EDITS = 3
"""How many edits apart a type value may be from a class to be offered as "did you mean"."""


def facts_sql(asked: Mapping[str, str]) -> str:
    """The SQL of the :data:`FACTS` column for ``{field name: SQL expression}``."""
    fields = "".join(f", {sql_string(name)}, IF(false, {sql}, NULL)" for name, sql in asked.items())
    return f"named_struct('done', false{fields})"


def class_questions(classes: Sequence[str], type_sql: str) -> dict[str, str]:
    """The ``need_i`` / ``near_i`` fields for each class a pattern reads from the type column.

    Example:
        >>> class_questions(["a"], "`type`")["need_0"]
        "coalesce(`type` = 'a', false)"
    """
    asked = {}
    for i, cls in enumerate(classes):
        lit = sql_string(cls)
        asked[f"need_{i}"] = f"coalesce({type_sql} = {lit}, false)"
        asked[f"near_{i}"] = (f"CASE WHEN {type_sql} <> {lit} AND (levenshtein({type_sql}, {lit}, "
                              f"{NEAR_EDITS}) >= 0 OR startswith({type_sql}, {lit})) "
                              f"THEN {type_sql} END")
    return asked


def read_facts(table: Any) -> dict[str, Any] | None:
    """The answered facts of a task's rows (a ``pyarrow.Table`` with :data:`FACTS`), or None
    when the rule did not run (or the task has no rows)."""
    if FACTS not in table.column_names or table.num_rows == 0:
        return None
    value = table.column(FACTS)[0].as_py()
    return value if value and value.get("done") else None


def newest_of(table: Any) -> Any:
    """The ``newest`` field of the task's rows as a one-element Arrow array (None: no facts)."""
    if read_facts(table) is None:
        return None
    column = table.column(FACTS)
    if hasattr(column, "combine_chunks"):  # a Table's column; a RecordBatch's is one array
        column = column.combine_chunks()
    return column.field("newest").slice(0, 1)


def check_classes(query: Query, classes: Sequence[str], facts: Mapping[str, Any] | None) -> None:
    """Raise CEP-PAT-219 for the first class of ``classes`` that no event of the input carries.

    Raises:
        PatternSemanticError: a class is absent (with a near type value as "did you mean").
    """
    if facts is None:
        return
    for i, cls in enumerate(classes):
        if not facts.get(f"need_{i}"):
            raise absent_class(query, cls, facts.get(f"near_{i}"))
