"""Spark adapter of ``match_prob``: matches and match groups of probabilistic streams.

A row UDTF with ``analyze`` (DESIGN.md section 5: the output schema depends on ``output`` and
on the stream column's type, and the pattern is checked before any task runs)::

    SELECT * FROM match_prob('PATTERN a, b+, c', TABLE(readings), window => 6)
    SELECT * FROM match_prob(pattern => 'PATTERN a, b+, c', overlap => 'complete',
                             threshold => 0.01, window => 6, output => 'matches',
                             pstream => TABLE(readings))

The table holds one or more probabilistic streams (docs/sql.md, ``match_prob``) in one of two
layouts, chosen in ``analyze`` from its columns:

* **wide** when a column ``probs_col`` (default ``probs``) of type ``MAP<STRING, DOUBLE>``
  (or FLOAT / DECIMAL values) exists: one row per ``(stream, t)`` with ``{value: p}``;
* **long** otherwise: one row per ``(stream, t, value, p)`` (``t_col`` integral, ``value_col``
  STRING, ``p_col`` numeric).

``analyze`` compiles the pattern (:func:`cep.prob.compile_prob`: errors with code, line,
column and caret), checks ``overlap``, ``output``, ``threshold`` and ``window`` with the core's
own checks (``CEP-PROB-011``; a window missing from both the argument and the pattern is an
error before any task runs), checks the columns and the adapter's own arguments
(``CEP-SQL-040``, naming what was expected and the columns found), asks Spark for one
partition per stream ordered by ``t`` (so the call carries no ``PARTITION BY``) and for just
the columns it reads (DECIMAL / FLOAT probabilities cast to DOUBLE). ``eval`` collects the
rows per stream value (a task normally sees one stream; several are kept apart), ``terminate``
builds each stream (:func:`cep.prob.from_long` / :func:`cep.prob.from_wide`, which validate it:
``CEP-PROB-010`` naming the stream and time point) and answers with :func:`cep.prob.match_prob`.

``match_prob_arrow`` (:mod:`udfs.match_prob_arrow`) is the Arrow UDTF variant: it checks its
arguments with :func:`check_arguments` and answers each stream with :func:`answer_rows`.

Output (the first column is called ``stream`` whatever the stream column's name, with its type):

* ``'groups'``: ``stream, t_start BIGINT, t_end BIGINT, probability DOUBLE, n_matches BIGINT,
  core_start BIGINT, core_end BIGINT`` (the core: complete overlap only, NULL for single);
* ``'matches'``: ``stream, match_id BIGINT, t_start BIGINT, t_end BIGINT, probability DOUBLE,
  values ARRAY<STRING>``.

Example (no Spark needed: the argument checks are plain functions):
    >>> check_tolerance(None), check_tolerance(1e-9)
    (1e-06, 1e-09)
    >>> check_tolerance(-1)
    Traceback (most recent call last):
    ...
    udfs.match_prob.MatchProbArgumentError: CEP-SQL-040: argument tolerance: expected a number in [0, 1), found -1
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from decimal import Decimal
from functools import lru_cache
from typing import Any, Iterator

from pyspark.sql.udtf import AnalyzeResult

from cep.errors import CepError

DEFAULT_TOLERANCE = 1e-6
COLUMN_DEFAULTS = {"stream_col": "stream", "t_col": "t", "value_col": "value", "p_col": "p",
                   "probs_col": "probs"}


class MatchProbArgumentError(CepError):
    """An argument of ``match_prob`` that the core does not check: the TABLE argument, a
    column name (missing column, wrong type), the pattern not being a constant string, the
    tolerance."""

    code = "CEP-SQL-040"


class MatchProbFailed(Exception):
    """What the SQL caller sees: the message of the CepError (code, position, snippet)."""


@dataclass(frozen=True)
class ProbCallPlan:
    """What ``analyze`` decided, shipped to every task."""

    pattern: str
    overlap: str
    threshold: float
    window: int
    output: str
    layout: str  # "long" or "wide"
    tolerance: float


@dataclass
class MatchProbAnalyzeResult(AnalyzeResult):
    """``AnalyzeResult`` carrying the :class:`ProbCallPlan` to ``__init__`` on the executors."""

    plan: ProbCallPlan | None = None


def _constant(arg: Any, name: str) -> Any:
    if arg is None:
        return None
    if arg.isTable or not arg.isConstantExpression:
        raise MatchProbArgumentError(f"argument {name} must be a constant, found an expression "
                                     "or a table")
    return arg.value


def _number(value: Any) -> Any:
    """A SQL DECIMAL literal (``0.01``) as a float; anything else unchanged (the core checks)."""
    return float(value) if isinstance(value, Decimal) else value


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def check_tolerance(value: Any) -> float:
    """``tolerance`` (default 1e-6): how far a time point's probabilities may sum from 1."""
    value = _number(value)
    if value is None:
        return DEFAULT_TOLERANCE
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or not 0 <= value < 1:
        raise MatchProbArgumentError(f"argument tolerance: expected a number in [0, 1), "
                                     f"found {value!r}")
    return float(value)


def column_names(**given: Any) -> dict[str, str]:
    """The column-name arguments with their defaults (``CEP-SQL-040`` if one is not a string).

    Example:
        >>> column_names(t_col="time")["t_col"], column_names()["probs_col"]
        ('time', 'probs')
    """
    names = {}
    for arg, default in COLUMN_DEFAULTS.items():
        value = given.get(arg)
        if value is None:
            names[arg] = default
        elif not isinstance(value, str) or not value:
            raise MatchProbArgumentError(f"argument {arg}: expected a column name, found {value!r}")
        else:
            names[arg] = value
    return names


def _columns_found(fields: dict[str, Any]) -> str:
    return ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in fields.values())


def _layout_hint(names: dict[str, str]) -> str:
    return (f"(long layout: {names['stream_col']}, {names['t_col']} BIGINT, "
            f"{names['value_col']} STRING, {names['p_col']} DOUBLE; wide layout: "
            f"{names['stream_col']}, {names['t_col']} BIGINT, {names['probs_col']} "
            "MAP<STRING, DOUBLE>)")


def _field(fields: dict[str, Any], names: dict[str, str], arg: str, expected: str) -> Any:
    found = fields.get(names[arg].lower())
    if found is None:
        raise MatchProbArgumentError(
            f"{arg} {names[arg]!r}: expected a column of type {expected} in the pstream table "
            f"{_layout_hint(names)}; columns found: {_columns_found(fields)}")
    return found


def _wrong_type(field: Any, arg: str, expected: str, fields: dict[str, Any]) -> MatchProbArgumentError:
    return MatchProbArgumentError(
        f"{arg} {field.name!r} must be {expected}, found {field.dataType.simpleString()}; "
        f"columns found: {_columns_found(fields)}")


def _is_prob_map(data_type: Any) -> bool:
    from pyspark.sql.types import DecimalType, DoubleType, FloatType, MapType, StringType

    return (isinstance(data_type, MapType) and isinstance(data_type.keyType, StringType)
            and isinstance(data_type.valueType, (DoubleType, FloatType, DecimalType)))


def check_arguments(pattern: Any, overlap: Any = None, threshold: Any = None,
                    window: Any = None, output: Any = None, tolerance: Any = None) -> ProbCallPlan:
    """The plan of a call from its plain argument values (NULL: the default), layout ``long``.

    The pattern is compiled (errors with code, line, column and caret), ``overlap``,
    ``output``, ``threshold`` and ``window`` are checked by the core (``CEP-PROB-011``), the
    tolerance here (``CEP-SQL-040``). ``match_prob`` calls it in ``analyze``,
    ``match_prob_arrow`` when its first partition runs.

    Example:
        >>> check_arguments("PATTERN a, b+, c WITHIN 6 EVENTS", "COMPLETE", 0.01)
        ProbCallPlan(pattern='PATTERN a, b+, c WITHIN 6 EVENTS', overlap='complete', threshold=0.01, window=6, output='groups', layout='long', tolerance=1e-06)
    """
    from cep.prob import resolve_window
    from cep.prob.answer import OUTPUTS, OVERLAPS, check_choice
    from cep.prob.matches import check_threshold

    if pattern is None:
        raise MatchProbArgumentError("argument pattern is required")
    if not isinstance(pattern, str):
        raise MatchProbArgumentError(f"argument pattern: expected a string, found {pattern!r}")
    compiled = _compiled(pattern)
    overlap = check_choice("overlap", "single" if overlap is None else overlap, OVERLAPS)
    output = check_choice("output", "groups" if output is None else output, OUTPUTS)
    threshold = _number(threshold)
    threshold = check_threshold(0.0 if threshold is None else threshold)
    window = resolve_window(compiled, window)
    return ProbCallPlan(pattern, overlap, threshold, window, output, "long",
                        check_tolerance(tolerance))


def analyze_call(pattern: Any, pstream: Any, overlap: Any = None, threshold: Any = None,
                 window: Any = None, output: Any = None, stream_col: Any = None,
                 t_col: Any = None, value_col: Any = None, p_col: Any = None,
                 probs_col: Any = None, tolerance: Any = None) -> MatchProbAnalyzeResult:
    """The ``AnalyzeResult`` of one call (see the module docstring)."""
    from pyspark.sql.types import (ArrayType, DecimalType, DoubleType, IntegralType, LongType,
                                   MapType, NumericType, StringType, StructField, StructType)
    from pyspark.sql.udtf import OrderingColumn, PartitioningColumn, SelectedColumn

    if pstream is None or not pstream.isTable:
        raise MatchProbArgumentError("argument pstream must be a TABLE(...) argument")
    plan = check_arguments(_constant(pattern, "pattern"), _constant(overlap, "overlap"),
                           _constant(threshold, "threshold"), _constant(window, "window"),
                           _constant(output, "output"), _constant(tolerance, "tolerance"))
    names = column_names(stream_col=_constant(stream_col, "stream_col"),
                         t_col=_constant(t_col, "t_col"),
                         value_col=_constant(value_col, "value_col"),
                         p_col=_constant(p_col, "p_col"),
                         probs_col=_constant(probs_col, "probs_col"))

    fields = {f.name.lower(): f for f in pstream.dataType.fields}
    stream_f = _field(fields, names, "stream_col", "STRING (or any scalar type)")
    if isinstance(stream_f.dataType, (MapType, ArrayType, StructType)):
        raise _wrong_type(stream_f, "stream_col", "a scalar column (STRING, INT, ...)", fields)
    t_f = _field(fields, names, "t_col", "BIGINT (or another integer type)")
    if isinstance(t_f.dataType, DecimalType) and t_f.dataType.scale == 0:
        t_sql = f"CAST({_quote(t_f.name)} AS BIGINT)"
    elif isinstance(t_f.dataType, IntegralType):
        t_sql = f"CAST({_quote(t_f.name)} AS BIGINT)"
    else:
        raise _wrong_type(t_f, "t_col", "an integer column (consecutive time points)", fields)
    select = [SelectedColumn(_quote(stream_f.name), alias="__stream"),
              SelectedColumn(t_sql, alias="__t")]
    probs_f = fields.get(names["probs_col"].lower())
    if probs_f is not None and _is_prob_map(probs_f.dataType):
        layout = "wide"
        probs_sql = (_quote(probs_f.name) if isinstance(probs_f.dataType.valueType, DoubleType)
                     else f"CAST({_quote(probs_f.name)} AS MAP<STRING, DOUBLE>)")
        select.append(SelectedColumn(probs_sql, alias="__probs"))
    elif _constant(probs_col, "probs_col") is not None:  # asked for the wide layout
        probs_f = _field(fields, names, "probs_col", "MAP<STRING, DOUBLE>")
        raise _wrong_type(probs_f, "probs_col", "MAP<STRING, DOUBLE>", fields)
    else:
        layout = "long"
        value_f = _field(fields, names, "value_col", "STRING")
        p_f = _field(fields, names, "p_col", "DOUBLE")
        if not isinstance(value_f.dataType, StringType):
            raise _wrong_type(value_f, "value_col", "a STRING column", fields)
        if not isinstance(p_f.dataType, NumericType):
            raise _wrong_type(p_f, "p_col", "a DOUBLE (or other numeric) column", fields)
        p_sql = (_quote(p_f.name) if isinstance(p_f.dataType, DoubleType)
                 else f"CAST({_quote(p_f.name)} AS DOUBLE)")
        select += [SelectedColumn(_quote(value_f.name), alias="__value"),
                   SelectedColumn(p_sql, alias="__p")]

    out = [StructField("stream", stream_f.dataType)]
    if plan.output == "groups":
        out += [StructField("t_start", LongType()), StructField("t_end", LongType()),
                StructField("probability", DoubleType()), StructField("n_matches", LongType()),
                StructField("core_start", LongType()), StructField("core_end", LongType())]
    else:
        out += [StructField("match_id", LongType()), StructField("t_start", LongType()),
                StructField("t_end", LongType()), StructField("probability", DoubleType()),
                StructField("values", ArrayType(StringType()))]
    return MatchProbAnalyzeResult(
        schema=StructType(out), partitionBy=[PartitioningColumn(_quote(stream_f.name))],
        orderBy=[OrderingColumn(_quote(t_f.name))], select=select,
        plan=replace(plan, layout=layout))


@lru_cache(maxsize=64)
def _compiled(pattern: str) -> Any:
    from cep.prob import compile_prob

    return compile_prob(pattern)


def answer_rows(plan: ProbCallPlan, stream: Any) -> list[Any]:
    """:func:`cep.prob.match_prob` of one built stream under ``plan`` (GroupRow or MatchRow)."""
    from cep.prob import match_prob

    return match_prob(_compiled(plan.pattern), stream, overlap=plan.overlap,
                      threshold=plan.threshold, window=plan.window, output=plan.output)


def answer_stream(plan: ProbCallPlan, key: Any, rows: list[tuple[Any, ...]]
                  ) -> Iterator[tuple[Any, ...]]:
    """The output rows of one stream (``rows``: the selected columns after ``__stream``)."""
    from cep.prob import from_long, from_wide

    name = "NULL" if key is None else str(key)
    cols = list(zip(*rows))
    if plan.layout == "long":
        stream = from_long(cols[0], cols[1], cols[2], tolerance=plan.tolerance, stream=name)
    else:
        stream = from_wide(cols[0], cols[1], tolerance=plan.tolerance, stream=name)
    found = answer_rows(plan, stream)
    if plan.output == "groups":
        for g in found:
            yield key, g.t_start, g.t_end, g.probability, g.n_matches, g.core_start, g.core_end
    else:
        for m in found:
            yield key, m.match_id, m.t_start, m.t_end, m.probability, list(m.values)


class MatchProbTable:
    """Row UDTF handler: collects a partition's rows per stream, answers in ``terminate``."""

    @staticmethod
    def analyze(pattern: Any, pstream: Any = None, overlap: Any = None, threshold: Any = None,
                window: Any = None, output: Any = None, stream_col: Any = None,
                t_col: Any = None, value_col: Any = None, p_col: Any = None,
                probs_col: Any = None, tolerance: Any = None) -> Any:
        try:
            return analyze_call(pattern, pstream, overlap, threshold, window, output, stream_col,
                                t_col, value_col, p_col, probs_col, tolerance)
        except CepError as err:
            # One short frame instead of the compiler's stack: the SQL caller reads the message.
            raise MatchProbFailed(str(err)) from None

    def __init__(self, analyze_result: Any) -> None:
        self.plan: ProbCallPlan = analyze_result.plan
        self.streams: dict[Any, list[tuple[Any, ...]]] = {}

    def eval(self, pattern: Any, pstream: Any, overlap: Any = None, threshold: Any = None,
             window: Any = None, output: Any = None, stream_col: Any = None, t_col: Any = None,
             value_col: Any = None, p_col: Any = None, probs_col: Any = None,
             tolerance: Any = None) -> Iterator[Any]:
        row = tuple(pstream)
        self.streams.setdefault(row[0], []).append(row[1:])
        return iter(())

    def terminate(self) -> Iterator[tuple[Any, ...]]:
        try:
            for key, rows in self.streams.items():
                yield from answer_stream(self.plan, key, rows)
        except CepError as err:
            raise MatchProbFailed(str(err)) from None


def match_prob_udtf() -> Any:
    """The Spark UDTF object for ``match_prob`` (row UDTF: it needs ``analyze``)."""
    from pyspark.sql.functions import udtf

    return udtf(MatchProbTable, useArrow=False)
