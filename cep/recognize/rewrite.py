"""Statement rewriter: every ``<source> MATCH_RECOGNIZE (...)`` becomes a plain Spark SQL subquery.

The generated subquery (docs/match-recognize.md, "How it runs"):

1. reads the source with a tiebreak column ``__mr_tie = xxhash64(*)`` and, over the window
   ``PARTITION BY <partition> ORDER BY <order>, __mr_tie``, one boolean column per DEFINE
   (``__mr_d<i>``), the ``lag``/``lead`` columns MEASURES navigate to (``__mr_nav<k>``) and
   the row's position in its partition (``__mr_rn``);
2. hands those rows to the table function ``cep_match_recognize`` (Arrow batches, the
   matcher of :mod:`cep.recognize.matcher`), which returns the matched rows labelled with
   ``__mr_match``, ``__mr_seq``, ``__mr_label``, ``__mr_kind`` and ``__mr_excluded``;
3. computes MEASURES from those rows in Spark (:mod:`cep.recognize.expressions`): grouped by
   match for ONE ROW PER MATCH, as windows over the match for ALL ROWS PER MATCH.

The statement is otherwise untouched, so the result is usable as a table anywhere: joins,
CTEs, aggregates over it, ``VERSION AS OF`` sources.

Example:
    >>> sql = rewrite_statement(
    ...     "SELECT * FROM t MATCH_RECOGNIZE (PARTITION BY k ORDER BY ts "
    ...     "MEASURES COUNT(*) AS n PATTERN (A B+) DEFINE B AS x > PREV(x)) AS m")
    >>> sql.startswith("SELECT * FROM (SELECT `k`, COUNT(CASE WHEN __mr_kind = 0 THEN 1 END) AS `n`")
    True
    >>> contains_clause(sql)  # the original text travels on only inside a string literal
    False
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from cep.recognize.ast import can_be_empty, has_anchor
from cep.recognize.ast import variables as pattern_variables
from cep.recognize.clause import KEYWORD, Clause, read_clause, tokens_of
from cep.recognize.errors import (E_BAD_SUBSET, E_CLAUSE, E_UNKNOWN_VARIABLE, E_UNMATCHED_EXCLUSION,
                                  E_UNSUPPORTED, RowPatternSemanticError, RowPatternSyntaxError)
from cep.recognize.expressions import WINDOW, Translator, quoted, string_literal
from cep.recognize.fixed import fixed_query, positions, window_filter
from cep.recognize.parser import parse_row_pattern
from cep.recognize.program import CONSUME, compile_pattern

__all__ = ["FUNCTION", "contains_clause", "rewrite_statement"]

FUNCTION = "cep_match_recognize"
"""The table function the rewritten statement calls (sql_ext/registry.py)."""
MAX_CLAUSES = 64


def contains_clause(sql: str) -> bool:
    """Whether ``sql`` has a MATCH_RECOGNIZE keyword outside strings and comments."""
    if KEYWORD.lower() not in sql.lower():
        return False
    return any(_is_keyword(t) for t in tokens_of(sql))


def _is_keyword(tok: Any) -> bool:
    return tok.token_type.name == "VAR" and tok.text.upper() == KEYWORD


def rewrite_statement(sql: str, native: bool = True) -> str:
    """``sql`` with every MATCH_RECOGNIZE clause replaced by its subquery.

    ``native=False`` keeps the matcher's plan for fixed-length patterns too
    (:mod:`cep.recognize.fixed`), for tests that compare the two.

    Every clause is checked against the original text first, so errors point at what the
    analyst wrote; then the clauses are replaced one at a time, the first in the text first
    (a clause inside another's source subquery is replaced before the outer one copies it).

    Raises:
        RowPatternError: CEP-MR-... with line, column and caret in ``sql``.
    """
    tokens = tokens_of(sql)
    if not tokens and sql.strip():
        raise RowPatternSyntaxError(E_CLAUSE, "the statement does not tokenize as Spark SQL",
                                    sql, 0, 1)
    origins = []
    for at, tok in enumerate(tokens):
        if _is_keyword(tok):
            origin = _origin(sql, tok.start)
            _generate(sql, tokens, at, origin, native)  # checks; the result is discarded
            origins.append(origin)
    # Each round replaces the first clause left: the k-th round meets the k-th clause of the
    # original text (a replacement holds the clause only inside a string literal).
    for origin in origins[:MAX_CLAUSES]:
        tokens = tokens_of(sql)
        at = next(k for k, t in enumerate(tokens) if _is_keyword(t))
        start, end, text = _generate(sql, tokens, at, origin, native)
        sql = sql[:start] + text + sql[end:]
    if len(origins) <= MAX_CLAUSES:
        return sql
    raise RowPatternSyntaxError(E_CLAUSE, f"more than {MAX_CLAUSES} MATCH_RECOGNIZE clauses in "
                                "one statement", sql, 0, 1)


def _origin(sql: str, offset: int) -> tuple[int, int]:
    """``(lines before, columns before)`` of ``offset`` in ``sql``: where a clause's own text
    starts, so errors raised later from that text alone still name the statement's line and
    column."""
    before = sql[:offset]
    return before.count("\n"), offset - (before.rfind("\n") + 1)


def _source_start(sql: str, tokens: list[Any], at: int) -> int:
    """The token index where the clause's input starts: a bracketed subquery, a table name
    with an optional ``VERSION AS OF n`` / ``TIMESTAMP AS OF '...'``, a table function call
    (``range(10)``), or inline ``VALUES`` rows; the last two (and a subquery) may carry an
    alias with a column list (``VALUES (1, 2) AS t(id, x)``)."""
    j = at - 1
    if j < 0:
        raise RowPatternSyntaxError(E_CLAUSE, "MATCH_RECOGNIZE needs a table or a bracketed "
                                    "subquery before it", sql, tokens[at].start,
                                    tokens[at].end + 1)
    if tokens[j].text == ")":
        k = _opening(sql, tokens, j, at)
        name = k - 1
        if name >= 0 and (_is_name(tokens[name]) or _is_function(tokens[name])):
            if name >= 1 and tokens[name - 1].text.upper() == "AS" and name >= 2 \
                    and tokens[name - 2].text == ")":
                return _bracketed_start(sql, tokens, name - 2, at)  # (...) AS t(a, b)
            if name >= 1 and tokens[name - 1].text == ")":
                return _bracketed_start(sql, tokens, name - 1, at)  # (...) t(a, b)
            while name >= 2 and tokens[name - 1].text == ".":  # a function: range(10)
                name -= 2
            return name
        return _bracketed_start(sql, tokens, j, at)
    words = [t.text.upper() for t in tokens[max(0, j - 3):j]]
    if len(words) == 3 and words[1:] == ["AS", "OF"] and words[0] in ("VERSION", "TIMESTAMP"):
        j -= 4
    elif j >= 2 and tokens[j - 1].text.upper() == "AS" and tokens[j - 2].text.upper() in (
            "VERSION", "TIMESTAMP"):
        j -= 3
    while j >= 2 and tokens[j - 1].text == ".":
        j -= 2
    if j < 0 or not _is_name(tokens[j]):
        raise RowPatternSyntaxError(E_CLAUSE, "MATCH_RECOGNIZE needs a table name or a "
                                    "bracketed subquery right before it", sql,
                                    tokens[at].start, tokens[at].end + 1)
    return j


def _is_name(tok: Any) -> bool:
    return tok.token_type.name in ("VAR", "IDENTIFIER")


_NOT_FUNCTIONS = frozenset({"FROM", "JOIN", "ON", "USING", "AS", "IN", "EXISTS", "LATERAL",
                            "SELECT", "WHERE", "AND", "OR", "NOT", "WITH", "UNION", "VALUES",
                            "TABLE", "INTERSECT", "EXCEPT", "BY", "HAVING"})


def _is_function(tok: Any) -> bool:
    """A word before ``(`` that names a table function (``range`` is a keyword to sqlglot)."""
    return tok.text.isidentifier() and tok.text.upper() not in _NOT_FUNCTIONS


def _opening(sql: str, tokens: list[Any], j: int, at: int) -> int:
    """The index of the ``(`` that the ``)`` at ``j`` closes."""
    depth = 0
    while j >= 0:
        if tokens[j].text == ")":
            depth += 1
        elif tokens[j].text == "(":
            depth -= 1
            if depth == 0:
                return j
        j -= 1
    raise RowPatternSyntaxError(E_CLAUSE, "unbalanced brackets before MATCH_RECOGNIZE", sql,
                                tokens[at].start, tokens[at].end + 1)


def _bracketed_start(sql: str, tokens: list[Any], j: int, at: int) -> int:
    """Where a bracketed source ending at ``j`` starts: its ``(``, or the ``VALUES`` keyword
    when it is the last of ``VALUES (...), (...)`` rows."""
    k = _opening(sql, tokens, j, at)
    first = k
    while first >= 2 and tokens[first - 1].text == "," and tokens[first - 2].text == ")":
        first = _opening(sql, tokens, first - 2, at)
    if first >= 1 and tokens[first - 1].text.upper() == "VALUES":
        return first - 1
    return k


def _column_name(item: Any, sql: str, role: str) -> str:
    """The column an item names (a plain or quoted identifier); CEP-MR-205 otherwise."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        node = sqlglot.parse_one(item.text, read="spark")
    except SqlglotError:
        node = None
    if not isinstance(node, exp.Column) or node.table:
        raise RowPatternSemanticError(E_UNSUPPORTED, f"{role} must name a column of the "
                                      "input here", sql, *item.span)
    return node.name


@dataclass(frozen=True)
class _Parts:
    """What one clause compiles to, before it is written as SQL."""

    clause: Clause
    source: str
    partition: tuple[str, ...]
    order_columns: tuple[str, ...]
    window: str
    defined: dict[str, str]
    measures: list[tuple[str, str]]
    translator: Translator
    plan: dict[str, Any]
    filtered: bool
    keep: str | None
    positions: tuple[str, ...] | None


def _generate(sql: str, tokens: list[Any], at: int, origin: tuple[int, int], native: bool
              ) -> tuple[int, int, str]:
    """``(start, end, text)``: the span of source + clause + alias and its replacement."""
    clause = read_clause(sql, tokens, at)
    first = _source_start(sql, tokens, at)
    parts = _compile(sql, clause, sql[tokens[first].start:tokens[at].start].strip(), origin,
                     native)
    alias = f" AS {quoted(clause.alias)}" if clause.alias else ""
    text = fixed_query(clause, parts.positions, parts.translator, parts.defined, parts.source,
                       parts.window, sql) if native else None
    if text is None:
        call = (f"{FUNCTION}(plan => {string_literal(json.dumps(parts.plan))}, "
                f"events => TABLE({_events(parts)}))")
        text = _output(parts, call)
    return tokens[first].start, clause.span[1], f"({text}){alias}"


def _compile(sql: str, clause: Clause, source: str, origin: tuple[int, int], native: bool
             ) -> _Parts:
    """Every check on the clause, the DEFINE/MEASURES translation and the matcher's plan."""
    node = parse_row_pattern(sql, *clause.pattern)
    program = compile_pattern(node, sql)
    primaries = tuple(pattern_variables(node))
    subsets = _subsets(clause, primaries, sql)
    _check_names(clause, primaries, subsets, sql)
    partition = tuple(_column_name(p, sql, "PARTITION BY") for p in clause.partition)
    order_sql = ", ".join(
        o.text + (" DESC" if o.descending else " ASC") +
        ("" if o.nulls_first is None else (" NULLS FIRST" if o.nulls_first else " NULLS LAST"))
        for o in clause.order)
    window = (("PARTITION BY " + ", ".join(quoted(p) for p in partition) + " ") if partition
              else "") + "ORDER BY " + (order_sql + ", " if order_sql else "") + "__mr_tie"
    translator = Translator(window, primaries, subsets, tuple(quoted(p) for p in partition))
    defined = {variable: translator.define(variable, item, sql)
               for variable, item in clause.defines}
    measures = [(m.name, translator.measure(m, clause.rows, sql)) for m in clause.measures]
    if clause.unmatched and any(op == CONSUME and excluded
                                for op, excluded in zip(program.ops, program.arg2)):
        raise RowPatternSemanticError(E_UNMATCHED_EXCLUSION, "WITH UNMATCHED ROWS cannot be "
                                      "combined with a pattern exclusion {- ... -}", sql,
                                      *clause.pattern)
    order_columns: tuple[str, ...] = ()
    if clause.rows == "all":
        order_columns = tuple(_column_name(o, sql, "ORDER BY of ALL ROWS PER MATCH")
                              for o in clause.order)
    plan = _plan(sql, clause, origin, list(defined), subsets, partition, order_columns,
                 has_anchor(node), can_be_empty(node), translator.conditions)
    # A row no variable accepts is in no match when matches are runs of rows, none empty, and
    # every variable has a condition Spark computes: Spark may drop it (see _events). With a
    # fixed-length pattern Spark keeps only the rows of possible matches (cep.recognize.fixed).
    order = positions(node)
    keep = window_filter(order, translator, defined, clause) if native else None
    filtered = keep is not None or (
        not plan["nullable"] and not plan["anchored"] and not clause.unmatched
        and set(primaries) <= set(defined) and not translator.conditions)
    return _Parts(clause, source, partition, order_columns, window, defined, measures,
                  translator, plan, filtered, keep, order)


def _plan(sql: str, clause: Clause, origin: tuple[int, int], defined: list[str],
          subsets: dict[str, tuple[str, ...]], partition: tuple[str, ...],
          order_columns: tuple[str, ...], anchored: bool, nullable: bool,
          conditions: dict[str, Any]) -> dict[str, Any]:
    """The JSON plan ``cep_match_recognize`` reads (udfs/match_recognize.py): the clause's
    text with its origin, so errors raised there still point into the statement."""
    base = clause.span[0]
    skip_targets: tuple[str, ...] = ()
    if clause.skip_to is not None:
        skip_targets = subsets.get(clause.skip_to[0], (clause.skip_to[0],))
    return {
        "clause": sql[base:clause.span[1]], "origin": list(origin),
        "pattern": [clause.pattern[0] - base, clause.pattern[1] - base],
        "defines": [[v, f"__mr_d{i}"] for i, v in enumerate(defined)],
        "rows": clause.rows, "empty": clause.empty, "unmatched": clause.unmatched,
        "skip": clause.skip, "skip_to": list(skip_targets),
        "skip_name": clause.skip_to[0] if clause.skip_to else "",
        "skip_span": [clause.skip_to[1][0] - base, clause.skip_to[1][1] - base]
        if clause.skip_to else [0, 0],
        "front": [*partition, *order_columns] if clause.rows == "all" else [],
        "anchored": anchored, "nullable": nullable,
        "within": _within(clause, sql),
        "within_span": [clause.within[2][0] - base, clause.within[2][1] - base]
        if clause.within else [0, 0],
        "conditions": conditions,
    }


def _events(parts: _Parts) -> str:
    """The TABLE argument: the source with the tiebreak, the DEFINE columns, the navigation
    and condition value columns, and each row's position in its partition."""
    clause, translator = parts.clause, parts.translator
    selected = ", ".join(
        [f"{expr} AS __mr_d{i}" for i, expr in enumerate(parts.defined.values())] +
        [f"{expr} AS {column}" for column, expr in translator.navigations] +
        [f"{expr} AS {column}" for expr, column in translator.values.items()] +
        [f"ROW_NUMBER() OVER {WINDOW} AS __mr_rn"] +
        ([f"({clause.order[0].text}) AS __mr_ts"] if clause.within else []) +
        ([f"({parts.keep}) AS __mr_keep"] if parts.keep else []) +
        # Rows may be dropped at a partition's start too (below): a hash of the partition's
        # key tells where partitions change, beside __mr_rn not growing.
        ([f"XXHASH64({', '.join(quoted(p) for p in parts.partition)}) AS __mr_pk"]
         if parts.filtered and parts.partition else []))
    columns = "*"
    if clause.rows == "one":
        # Only what the measures and the output read crosses into Python.
        columns = ", ".join(quoted(c) for c in _read_columns(parts.partition, parts.measures))
    events = (f"SELECT {columns + ', ' if columns else ''}{selected} FROM (SELECT *, "
              f"XXHASH64(*) AS __mr_tie FROM {parts.source}) WINDOW {WINDOW} AS "
              f"({parts.window})")
    if not parts.filtered:
        return events
    # A row no variable accepts (or, fixed-length, in no possible match) is in no match: Spark
    # drops it, and the matcher sees the gap in __mr_rn and lets no match cross it.
    return (f"SELECT * FROM ({events}) WHERE " + ("__mr_keep" if parts.keep else
            " OR ".join(f"__mr_d{i}" for i in range(len(parts.defined)))))


def _output(parts: _Parts, call: str) -> str:
    """The query over the matcher's labelled rows that computes the MEASURES."""
    keys = [quoted(p) for p in parts.partition]
    if parts.clause.rows == "one":
        outputs = keys + [f"{m} AS {quoted(name)}" for name, m in parts.measures]
        return (f"SELECT {', '.join(outputs)} FROM {call} GROUP BY "
                f"{', '.join(keys + ['__mr_match'])}")
    inner = ", ".join(["*"] + [f"CASE WHEN __mr_kind = 2 THEN NULL ELSE ({m}) END AS "
                               f"__mr_m{i}" for i, (_, m) in enumerate(parts.measures)])
    outputs = keys + [quoted(c) for c in parts.order_columns] + [
        f"__mr_m{i} AS {quoted(name)}" for i, (name, _) in enumerate(parts.measures)] + [
        "__mr_rest.*"]
    return (f"SELECT {', '.join(outputs)} FROM (SELECT {inner} FROM {call}) "
            f"WHERE NOT __mr_excluded")


_MICROS = {"MICROSECOND": 1, "MILLISECOND": 1_000, "SECOND": 1_000_000, "MINUTE": 60_000_000,
           "HOUR": 3_600_000_000, "DAY": 86_400_000_000, "WEEK": 604_800_000_000}


def _within(clause: Clause, sql: str) -> list[Any] | None:
    """``[span, kind]`` of our WITHIN extension: microseconds (``time``) or the raw difference
    of the first ORDER BY item (``units``)."""
    if clause.within is None:
        return None
    amount, unit, span = clause.within
    if not clause.order or clause.order[0].descending:
        raise RowPatternSemanticError(E_UNSUPPORTED, "WITHIN measures the first ORDER BY item, "
                                      "which must be there and ascending", sql, *span)
    word = unit[:-1] if unit.endswith("S") else unit
    if word == "UNIT":
        return [amount, "units"]
    if word not in _MICROS:
        raise RowPatternSyntaxError(E_CLAUSE, f"unknown unit {unit!r} after WITHIN; expected "
                                    "MICROSECONDS, MILLISECONDS, SECONDS, MINUTES, HOURS, DAYS, "
                                    "WEEKS or UNITS", sql, *span)
    if amount < 1:
        raise RowPatternSyntaxError(E_CLAUSE, "WITHIN needs a positive span", sql, *span)
    return [amount * _MICROS[word], "time"]


def _read_columns(partition: tuple[str, ...], measures: list[tuple[str, str]]) -> list[str]:
    """The input columns ONE ROW PER MATCH needs: the partition's and those the measures read."""
    import sqlglot
    from sqlglot import exp

    names = {p.lower(): p for p in partition}
    for _, sql in measures:
        for column in sqlglot.parse_one(sql, read="spark").find_all(exp.Column):
            name = column.name
            if name and not name.startswith("__mr_") and name.lower() not in names:
                names[name.lower()] = name
    return list(names.values())


def _subsets(clause: Clause, primaries: tuple[str, ...], sql: str) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for name, members, span in clause.subsets:
        if name in primaries or name in out:
            raise RowPatternSemanticError(E_BAD_SUBSET, f"SUBSET {name} is already a pattern "
                                          "variable or SUBSET", sql, *span)
        for m in members:
            if m not in primaries:
                raise RowPatternSemanticError(E_UNKNOWN_VARIABLE, f"SUBSET {name}: {m} is not "
                                              "a variable of the PATTERN", sql, *span)
        out[name] = members
    return out


def _check_names(clause: Clause, primaries: tuple[str, ...],
                 subsets: dict[str, tuple[str, ...]], sql: str) -> None:
    seen = set()
    for variable, item in clause.defines:
        if variable not in primaries:
            raise RowPatternSemanticError(E_UNKNOWN_VARIABLE, f"DEFINE {variable}: not a "
                                          f"variable of the PATTERN ({', '.join(primaries)})",
                                          sql, *item.span)
        if variable in seen:
            raise RowPatternSemanticError(E_UNKNOWN_VARIABLE, f"{variable} is defined twice",
                                          sql, *item.span)
        seen.add(variable)
    if clause.skip_to is not None:
        name, span = clause.skip_to
        if name not in primaries and name not in subsets:
            raise RowPatternSemanticError(E_UNKNOWN_VARIABLE, f"AFTER MATCH SKIP TO {name}: not "
                                          "a variable of the PATTERN or a SUBSET", sql, *span)
