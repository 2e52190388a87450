"""A ``match_seq`` call that Spark answers alone: fixed-length runs of consecutive events.

When every match is ``k`` consecutive events of a key, each bound by one alias whose
conditions Spark evaluates (``PATTERN a, b, c`` with pushed-down DEFINEs and WHERE filters),
a match is a row whose next ``k - 1`` rows carry the next aliases' masks: one window over the
key with ``lead`` offsets says it, and the answer needs no Python task. ``analyze`` then
selects, besides what the Python function reads, the fields of the JVM shim's
``NativeCallRule`` (sql_ext/jvm): the condition of a match's first row, each output column
as Spark computes it, and the errors as strings. The rule puts Spark's filter and
projection in place of the call; without it (no shim) the same selection reaches the
Python function, which ignores these fields and answers as before.

The errors the Python function would raise are raised by Spark at the same rows: a NULL id
or timestamp (CEP-SQL-010), two rows with the same (ts, id) (CEP-MATCH-004), a class that no
event carries (CEP-PAT-219, from the facts about the whole input; without a "did you mean",
which needs the type values the Python task holds) and more matches in a key than
``max_matches`` (CEP-MATCH-001, counted over the matches).

Example:
    >>> from cep.match import compile_query
    >>> steps(compile_query("PATTERN a, b WITHIN 5 SECONDS"), {"a": "m_a", "b": "m_b"})
    ('a', 'b')
    >>> steps(compile_query("PATTERN a; b"), {"a": "m_a", "b": "m_b"}) is None
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from cep.lang.ast import GROUPED
from cep.lang.validate import absent_class
from cep.match import CompiledQuery
from cep.match.limits import MatchLimits
from udfs.shell import quote

if TYPE_CHECKING:
    from cep.lang import Query
    from udfs.match_seq_plan import Columns

__all__ = ["MAX_STEPS", "native_fields", "steps"]

MAX_STEPS = 16
"""Longest run planned natively (``2k`` window columns: ids and masks of the next rows)."""
_SQL_STRING = str.maketrans({"\\": "\\\\", "'": "\\'"})


def _literal(text: str) -> str:
    """A Spark SQL string literal of ``text`` (newlines kept)."""
    return "'" + text.translate(_SQL_STRING) + "'"


def steps(compiled: CompiledQuery, masks: dict[str, str]) -> tuple[str, ...] | None:
    """The alias of each event of a match when the call can run natively, else None.

    Natively means: every match is a fixed number of consecutive events (one alternative,
    no Kleene step, no NOT, every link ``,``), one alias per event, every condition a
    single-event one that Spark evaluates (each alias has its mask), no join variable, and a
    ``WITHIN`` of time (or raw units) without ``SLIDE``, or none.
    """
    run = compiled.run_steps
    if run is None or not 1 <= len(run) <= MAX_STEPS or any(len(step) != 1 for step in run):
        return None
    if compiled.policy == GROUPED or set(masks) != set(compiled.alias_classes):
        return None
    if any(p.filter_alias is None for p in compiled.predicates) or compiled.normal.equivalences:
        return None
    alternative = compiled.alternatives[0]
    if alternative.cross or alternative.negations or alternative.variables:
        return None
    if compiled.window.slide is not None or compiled.window.by_events:
        return None
    return tuple(step[0] for step in run)


def _micros_between(first: str, last: str, ts_kind: str) -> str:
    """SQL for the engine's ``ts(last) - ts(first)`` (microseconds; raw for numbers)."""
    if ts_kind in ("timestamp", "timestamp_ntz"):
        return f"timestampdiff(MICROSECOND, {first}, {last})"
    if ts_kind == "date":
        return f"CAST(datediff({last}, {first}) AS BIGINT) * 86400000000"
    return f"try_subtract({last}, {first})"


_ALNUM_MARK = "Zq7NEARq7Z"  # stands for the offered name in the message's template


def _absent_message(query: Query, cls: str, type_sql: str, key_part: str) -> str:
    """SQL of CEP-PAT-219 for ``cls``, its "did you mean" a type value of the key's rows,
    chosen as :func:`udfs.facts.near` does: the first that starts with ``cls``, else the
    closest. Spark has no ``difflib``: the closest is the least Levenshtein distance within
    40 % of the longer name (difflib's ratio cutoff is 0.6), ties by name."""
    other = f"{type_sql} <> {_literal(cls)}"
    prefixed = (f"min(IF(startswith({type_sql}, {_literal(cls)}) AND {other}, {type_sql}, NULL)) "
                f"OVER ({key_part})")
    distance = f"levenshtein({type_sql}, {_literal(cls)})"
    close = (f"min(IF({other} AND {distance} <= 0.4 * greatest(length({type_sql}), "
             f"{len(cls)}), named_struct('d', {distance}, 'v', {type_sql}), NULL)) "
             f"OVER ({key_part}).v")
    plain = _literal(str(absent_class(query, cls)))
    simple = str(absent_class(query, cls, _ALNUM_MARK)).split(_ALNUM_MARK)
    spaced = str(absent_class(query, cls, "\x01")).split("\x01")
    simple_sql = f"concat({_literal(simple[0])}, n, {_literal(simple[1])})"
    spaced_sql = (f"concat({_literal(spaced[0])}, n, {_literal(spaced[1])}, "
                  f"replace(n, '\"', '\"\"'), {_literal(spaced[2])})")
    # The offered name is bound once, as a lambda's argument (SQL has no local names). As in
    # cep.lang.validate, a name that is not all letters, digits and _ is shown quoted too.
    return (f"element_at(transform(array(coalesce({prefixed}, {close})), n -> "
            f"CASE WHEN n IS NULL THEN {plain} "
            f"WHEN n RLIKE '^[\\\\p{{L}}\\\\p{{N}}_]*$' THEN {simple_sql} "
            f"ELSE {spaced_sql} END), 1)")


def native_fields(compiled: CompiledQuery, query: Query, cols: Columns,
                  masks: dict[str, str], shifted: Callable[[int], dict[str, str]],
                  checked: tuple[str, ...], max_matches: int | None,
                  extra: tuple[str, ...]) -> dict[str, str] | None:
    """The ``NativeCallRule`` fields of a call (name -> SQL), or None when it must run in
    Python.

    Args:
        compiled, query: the call's compiled and parsed pattern.
        cols: the TABLE argument's columns.
        masks: alias -> SQL mask (``udfs.match_seq_plan.pushed_masks``).
        shifted: ``j`` -> the masks of the row ``j`` rows ahead, each column read through
            ``lead``: the window then sorts no mask column of its own, only the table's
            columns, as the analyst's ``lead()`` query does.
        checked: the classes whose absence is an error, in the facts' ``need_i`` order.
        max_matches: the call's limit (None: the engine's default).
        extra: the columns of ``columns =>``.
    """
    aliases = steps(compiled, masks)
    if aliases is None:
        return None
    k = len(aliases)
    w = cols.window()

    def ahead(sql: str, j: int) -> str:
        return sql if j == 0 else f"lead({sql}, {j}) {w}"

    ts, ident = cols.ts_sql, cols.id_sql
    start = [f"({masks[aliases[0]]})"]
    start += [f"({shifted(j)[a]})" for j, a in enumerate(aliases) if j]
    width = compiled.window.width
    if width is not None:  # also says that the run's last row exists
        span = _micros_between(ts, ahead(ts, k - 1), cols.ts_kind)
        start.append(f"coalesce({span} < {int(width) if float(width).is_integer() else width}, false)")
    elif k > 1:  # a mask such as `x IS NULL` holds past the key's last row
        start.append(f"{ahead(ts, k - 1)} IS NOT NULL")
    fields = {"__cep_native": " AND ".join(start)}

    # Rows the Python function refuses: Spark raises the same error at the same rows.
    null_row = (f"concat('CEP-SQL-010: event with id ', coalesce(CAST({ident} AS STRING), 'NULL'), "
                "' has a NULL id or timestamp; filter such rows out of the TABLE argument')")
    tie = (f"concat('CEP-MATCH-004: events must be sorted by (ts, id) with unique ids; the event "
           f"with id ', CAST({ident} AS STRING), ' has the (ts, id) of the event after it')")
    fields["__cep_native_error"] = (
        f"CASE WHEN {ts} IS NULL OR {ident} IS NULL THEN {null_row} "
        f"WHEN coalesce({ahead(ts, 1)} = {ts} AND {ahead(ident, 1)} = {ident}, false) "
        f"THEN {tie} END")
    key_part = f"PARTITION BY {quote(cols.key.name)} " if cols.key is not None else ""
    for i, cls in enumerate(checked):
        fields[f"__cep_absent_{i}"] = _absent_message(query, cls, cols.type_sql, key_part)

    limit = MatchLimits().max_matches if max_matches is None else max_matches
    count = f"count(1) OVER ({key_part}ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)"
    fields["__cep_native_late_error"] = (
        f"CASE WHEN row_number() {w} > {limit} THEN concat('CEP-MATCH-001: the partition has ', "
        f"CAST({count} AS STRING), ' matches, more than max_matches={limit}; narrow the pattern "
        "(a window, conditions, skip-till-next-match) or raise the limit with the argument "
        "max_matches => N') END")

    out: list[tuple[str, str]] = []
    if cols.key is not None:
        key = quote(cols.key.name)
        if cols.key.dataType.typeName() in ("float", "double"):
            # The key as GROUP BY reports it (-0.0 is 0.0; udfs.shell.grouping_key).
            key = f"IF({key} = 0, CAST(0 AS {cols.key.dataType.simpleString()}), {key})"
        out.append(("o", key))
    ids = ", ".join(ahead(ident, j) for j in range(k))
    variables = ", ".join(_literal(a) for a in aliases)
    out += [("n", f"CAST(row_number() {w} AS BIGINT)"), ("o", ts), ("o", ahead(ts, k - 1)),
            ("o", f"array({ids})"), ("o", f"array({variables})"), ("o", f"{k}")]
    for name in extra:
        out.append(("o", f"array({', '.join(ahead(quote(name), j) for j in range(k))})"))
    for i, (kind, sql) in enumerate(out):
        fields[f"__{kind}{i}"] = sql
    return fields
