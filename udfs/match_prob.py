"""Spark adapter of ``match_prob``: matches and match groups of probabilistic streams.

One function (docs/sql.md), in the shell of :mod:`udfs.shell`: ``analyze`` on the driver,
Arrow batches on the executors::

    SELECT * FROM match_prob('PATTERN a, b+, c', TABLE(readings), window => 6)
    SELECT * FROM match_prob('PATTERN a, b+, c', 'sensor', TABLE(readings), window => 6)
    SELECT * FROM match_prob(pattern => 'PATTERN a, b+, c', overlap => 'complete',
                             threshold => 0.01, window => 6, output => 'matches',
                             key_col => 'sensor', pstream => TABLE(readings))
    SELECT * FROM match_prob('PATTERN a, b+, c', TABLE(readings), window => 6,
                             transducer_mode => 'paper')

The table holds one or more probabilistic streams (docs/sql.md, ``match_prob``), one per value
of ``key_col`` (default ``stream``), in one of two layouts, chosen in ``analyze`` from its
columns:

* **wide** when a column ``probs_col`` (default ``probs``) of type ``MAP<STRING, DOUBLE>``
  (or FLOAT / DECIMAL values) exists: one row per ``(key, t)`` with ``{value: p}``;
* **long** otherwise: one row per ``(key, t, value, p)`` (``t_col`` integral, ``value_col``
  STRING, ``p_col`` numeric).

``analyze`` compiles the pattern (:func:`cep.prob.compile_prob`: errors with code, line,
column and caret), checks ``overlap``, ``output``, ``threshold``, ``window`` and
``transducer_mode`` (``'window'``, the default, or ``'paper'``: the paper's transducer without
window, :data:`cep.prob.answer.MODES`) with the core's own checks (``CEP-PROB-011``; a window
missing from both the argument and the pattern is an error before any task runs), checks the columns and the adapter's own arguments
(``CEP-SQL-040``, naming what was expected and the columns found), asks Spark for the rows of
each stream together (``KEY_BUCKETS`` buckets of the key's hash, so the call carries no
``PARTITION BY``) and for just the columns it reads (DECIMAL / FLOAT probabilities cast to
DOUBLE). Each task groups its rows by key with Arrow, builds each stream from whole numpy
columns (:func:`cep.prob.from_long`, which validates it: ``CEP-PROB-010`` naming the stream
and time point; the wide layout is flattened from the map's offsets, keys and items, and a
wide stream that fails is rebuilt with :func:`cep.prob.from_wide` for its exact message) and
answers with :func:`cep.prob.match_prob`.

Output (the first column is the key column, with its own name and type):

* ``'groups'``: ``<key>, t_start BIGINT, t_end BIGINT, probability DOUBLE, n_matches BIGINT,
  core_start BIGINT, core_end BIGINT`` (the core: complete overlap only, NULL for single);
* ``'matches'``: ``<key>, match_id BIGINT, t_start BIGINT, t_end BIGINT, probability DOUBLE,
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
from dataclasses import dataclass, field, replace
from decimal import Decimal
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterator

from cep.errors import CepError
from cep.lang import Query, parse_pattern
from cep.lang.spark_sql import sql_string
from cep.lang.validate import checked_classes
from cep.prob import (GroupRow, MatchRow, ProbPattern, ProbStream, ProbStreamError, compile_prob,
                      from_codes, from_long, from_wide, group_columns, match_prob, resolve_window)
from cep.prob.answer import MODES, OUTPUTS, OVERLAPS, check_choice
from cep.prob.matches import check_threshold
from cep.signature import SIGNATURES
from udfs.facts import FACTS, check_classes, class_questions, facts_sql, read_facts
from udfs.shell import (PlannedResult, TableFunction, grouping_key, keyed, planned,
                        quote as _quote, table_function)

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    from pyspark.sql.types import DataType, StructField
    from pyspark.sql.udtf import UserDefinedTableFunction

DEFAULT_TOLERANCE = 1e-6
COLUMN_DEFAULTS = {"key_col": "stream", "t_col": "t", "value_col": "value", "p_col": "p",
                   "probs_col": "probs"}
# Buckets of the key: each task answers the streams of its buckets in one pass.
KEY_BUCKETS = 16


class MatchProbArgumentError(CepError):
    """An argument of ``match_prob`` that the core does not check: the TABLE argument, a
    column name (missing column, wrong type), the pattern not being a constant string, the
    tolerance."""

    code = "CEP-SQL-040"


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
    key: str = "stream"  # the key column's name (the output column's name)
    transducer_mode: str = "window"  # "window" or "paper" (cep.prob.answer.MODES)
    classes: tuple[str, ...] = ()  # values that must occur in the input (udfs.facts)
    # The pattern parsed once on the driver (a frozen tree): the tasks compile it without
    # parsing the text again.
    query: Query | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.query is None:  # a plan built by hand (tests): parse it here, once
            object.__setattr__(self, "query", parse_pattern(self.pattern))


def _number(value: Any) -> Any:
    """A SQL DECIMAL literal (``0.01``) as a float; anything else unchanged (the core checks)."""
    return float(value) if isinstance(value, Decimal) else value


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


def _columns_found(fields: dict[str, StructField]) -> str:
    return ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in fields.values())


def _layout_hint(names: dict[str, str]) -> str:
    return (f"(long layout: {names['key_col']}, {names['t_col']} BIGINT, "
            f"{names['value_col']} STRING, {names['p_col']} DOUBLE; wide layout: "
            f"{names['key_col']}, {names['t_col']} BIGINT, {names['probs_col']} "
            "MAP<STRING, DOUBLE>)")


def _field(fields: dict[str, StructField], names: dict[str, str], arg: str,
           expected: str) -> StructField:
    found = fields.get(names[arg].lower())
    if found is None:
        raise MatchProbArgumentError(
            f"{arg} {names[arg]!r}: expected a column of type {expected} in the pstream table "
            f"{_layout_hint(names)}; columns found: {_columns_found(fields)}")
    return found


def _wrong_type(field: StructField, arg: str, expected: str,
                fields: dict[str, StructField]) -> MatchProbArgumentError:
    return MatchProbArgumentError(
        f"{arg} {field.name!r} must be {expected}, found {field.dataType.simpleString()}; "
        f"columns found: {_columns_found(fields)}")


def _is_prob_map(data_type: DataType) -> bool:
    from pyspark.sql.types import DecimalType, DoubleType, FloatType, MapType, StringType

    return (isinstance(data_type, MapType) and isinstance(data_type.keyType, StringType)
            and isinstance(data_type.valueType, (DoubleType, FloatType, DecimalType)))


def check_arguments(pattern: Any, overlap: Any = None, threshold: Any = None,
                    window: Any = None, output: Any = None, tolerance: Any = None,
                    transducer_mode: Any = None) -> ProbCallPlan:
    """The plan of a call from its plain argument values (NULL: the default), layout ``long``.

    The pattern is compiled (errors with code, line, column and caret), ``overlap``,
    ``output``, ``threshold``, ``window`` and ``transducer_mode`` are checked by the core
    (``CEP-PROB-011``), the tolerance here (``CEP-SQL-040``). ``match_prob`` calls it in
    ``analyze``.

    Example:
        >>> check_arguments("PATTERN a, b+, c WITHIN 6 EVENTS", "COMPLETE", 0.01)
        ProbCallPlan(pattern='PATTERN a, b+, c WITHIN 6 EVENTS', overlap='complete', threshold=0.01, window=6, output='groups', layout='long', tolerance=1e-06, key='stream', transducer_mode='window', classes=())
        >>> check_arguments("PATTERN a, b+, c", window=6, transducer_mode="Paper").transducer_mode
        'paper'
    """

    if pattern is None:
        raise MatchProbArgumentError("argument pattern is required")
    if not isinstance(pattern, str):
        raise MatchProbArgumentError(f"argument pattern: expected a string, found {pattern!r}")
    query = parse_pattern(pattern)  # once: the plan carries the tree to the tasks
    compiled = _compiled(query)
    overlap = check_choice("overlap", "single" if overlap is None else overlap, OVERLAPS)
    output = check_choice("output", "groups" if output is None else output, OUTPUTS)
    threshold = _number(threshold)
    threshold = check_threshold(0.0 if threshold is None else threshold)
    window = resolve_window(compiled, window)
    mode = check_choice("transducer_mode", "window" if transducer_mode is None else transducer_mode,
                        MODES)
    return ProbCallPlan(pattern, overlap, threshold, window, output, "long",
                        check_tolerance(tolerance), transducer_mode=mode, query=query)




def analyze_call(*args: Any, **kwargs: Any) -> PlannedResult:
    """The analysis of one call (see the module docstring)."""
    from pyspark.sql.types import (ArrayType, DecimalType, DoubleType, IntegralType, LongType,
                                   MapType, NumericType, StringType, StructField, StructType)
    from pyspark.sql.udtf import SelectedColumn

    err = MatchProbArgumentError
    signature = SIGNATURES["match_prob"]
    call = signature.bind(args, kwargs, err)
    given = signature.values(call, err)
    pstream = call.get("pstream")
    if pstream is None or not pstream.isTable:
        raise err("argument pstream must be a TABLE(...) argument")
    plan = check_arguments(*(given[n] for n in ("pattern", "overlap", "threshold", "window",
                                                "output", "tolerance", "transducer_mode")))
    names = column_names(**{n: given[n] for n in ("key_col", "t_col", "value_col", "p_col",
                                                  "probs_col")})
    allowed = given["allow_absent"]
    # Each class without DEFINE must be a value of some row (udfs.facts, issue 47): a
    # misspelt one would answer "no match" without a word.
    classes = () if allowed else tuple(checked_classes(plan.query))
    fields = {f.name.lower(): f for f in pstream.dataType.fields}
    stream_f = _field(fields, names, "key_col", "STRING (or any scalar type)")
    if isinstance(stream_f.dataType, (MapType, ArrayType, StructType)):
        raise _wrong_type(stream_f, "key_col", "a scalar column (STRING, INT, ...)", fields)
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
        asked = {f"need_{i}": f"coalesce(array_contains(map_keys({probs_sql}), "
                              f"{sql_string(cls)}), false)" for i, cls in enumerate(classes)}
    elif given["probs_col"] is not None:  # asked for the wide layout
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
        asked = class_questions(classes, _quote(value_f.name))
    if asked:
        select.append(SelectedColumn(facts_sql(asked), alias=FACTS))

    out = [StructField(stream_f.name, stream_f.dataType)]
    if plan.output == "groups":
        out += [StructField("t_start", LongType()), StructField("t_end", LongType()),
                StructField("probability", DoubleType()), StructField("n_matches", LongType()),
                StructField("core_start", LongType()), StructField("core_end", LongType())]
    else:
        out += [StructField("match_id", LongType()), StructField("t_start", LongType()),
                StructField("t_end", LongType()), StructField("probability", DoubleType()),
                StructField("values", ArrayType(StringType()))]
    return keyed(StructType(out), select, replace(plan, layout=layout, key=stream_f.name,
                                                  classes=classes), stream_f.name, KEY_BUCKETS)


@lru_cache(maxsize=64)
def _compiled(query: Query) -> ProbPattern:
    # Once per Python worker and parsed pattern (the plan carries the tree analyze parsed).
    return compile_prob(query)


def answer_rows(plan: ProbCallPlan, stream: ProbStream) -> list[GroupRow] | list[MatchRow]:
    """:func:`cep.prob.match_prob` of one built stream under ``plan`` (GroupRow or MatchRow)."""

    return match_prob(_compiled(plan.query), stream, overlap=plan.overlap,
                      threshold=plan.threshold, window=plan.window, output=plan.output,
                      transducer_mode=plan.transducer_mode)


class MatchProb(TableFunction):
    """The ``match_prob`` handler: every stream of a bucket of keys."""

    analyze = staticmethod(planned(analyze_call))

    def answer(self, plan: ProbCallPlan, table: pa.Table) -> Iterator[pa.Table]:
        yield answer_table(plan, table)


def _numbers(array: pa.Array, to: pa.DataType) -> np.ndarray:
    """An Arrow column as a numpy array of ``to`` (object with None where it has NULLs, so that
    the stream builder reports them)."""
    import numpy as np
    import pyarrow.compute as pc

    if array.null_count:
        return np.array(array.to_pylist(), dtype=object)
    return pc.cast(array, to).to_numpy(zero_copy_only=False)


def _strings(array: pa.Array) -> np.ndarray:
    """A STRING column as a numpy array: unicode (the stream builder's fast path) without NULLs,
    else objects with None where the NULLs are (so they are reported)."""
    import numpy as np
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(array, null_encoding="encode")
    names = encoded.dictionary.to_pylist()
    kind = object if array.null_count or not names else str
    return np.array(names, dtype=kind)[encoded.indices.to_numpy(zero_copy_only=False)]


def _coded(array: pa.Array) -> tuple[np.ndarray, list[str] | None]:
    """A STRING column as dictionary codes and the dictionary's names (numpy, list), or as
    :func:`_strings` gives it and None when it has NULLs (the stream builder reports them)."""
    import numpy as np
    import pyarrow.compute as pc

    if array.null_count:
        return _strings(array), None
    encoded = pc.dictionary_encode(array)
    return (encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64),
            encoded.dictionary.to_pylist())


def _groups(codes: np.ndarray, n_keys: int) -> tuple[np.ndarray, np.ndarray]:
    """Row order grouping equal codes (stable) and the ``n_keys + 1`` group bounds in it."""
    import numpy as np

    if len(codes) < 2 or (np.diff(codes) >= 0).all():  # one key, or keys already together
        order = np.arange(len(codes))
    else:
        order = np.argsort(codes, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(np.bincount(codes, minlength=n_keys))))
    return order, bounds


def answer_table(plan: ProbCallPlan, table: pa.Table) -> pa.Table:
    """The output table of one partition's selected columns (``__stream``, ``__t`` and
    ``__value``/``__p`` or ``__probs``).

    Raises:
        ProbStreamError: a stream is not a probabilistic stream (``CEP-PROB-010``, naming it).
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    def column(name: str) -> pa.Array:
        array = table.column(name).combine_chunks()
        return array.dictionary_decode() if pa.types.is_dictionary(array.type) else array

    # -0.0 and 0.0, and all NaNs, are one stream as in GROUP BY (issue 47)
    encoded = pc.dictionary_encode(grouping_key(column("__stream")), null_encoding="encode")
    keys = encoded.dictionary
    row_codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    t_rows = _numbers(column("__t"), pa.int64())
    if plan.layout == "long":
        codes, t = row_codes, t_rows
        values = column("__value")
        value, names = _coded(values)
        p = _numbers(column("__p"), pa.float64())
    else:
        probs = column("__probs")
        values = probs.keys
        offsets = probs.offsets.to_numpy()
        lengths = np.diff(offsets)
        entry_row = np.repeat(np.arange(len(probs)), lengths)
        keep = probs.is_valid().to_numpy(zero_copy_only=False)[entry_row]  # NULL maps: no entries
        first, count = int(offsets[0]), int(offsets[-1] - offsets[0])
        value, names = _coded(probs.keys.slice(first, count))
        value = value[keep]
        p = _numbers(probs.items.slice(first, count), pa.float64())[keep]
        entry_row = entry_row[keep]
        codes, t = row_codes[entry_row], t_rows[entry_row]
        row_order, row_bounds = _groups(row_codes, len(keys))
    order, bounds = _groups(codes, len(keys))
    which: list[np.ndarray] = []
    found_rows: list[Any] = []
    found_groups: list[dict[str, np.ndarray]] = []
    for k, key in enumerate(keys.to_pylist()):
        name = "NULL" if key is None else str(key)
        mine = order[bounds[k]:bounds[k + 1]]
        try:
            stream = (from_long(t[mine], value[mine], p[mine], tolerance=plan.tolerance,
                                stream=name) if names is None else
                      from_codes(t[mine], value[mine], names, p[mine], tolerance=plan.tolerance,
                                 stream=name))
            failed = plan.layout == "wide" and len(stream) != row_bounds[k + 1] - row_bounds[k]
        except ProbStreamError:
            if plan.layout == "long":
                raise
            failed = True
        if failed:  # a wide stream: the error (or answer) of from_wide on its own rows
            rows = row_order[row_bounds[k]:row_bounds[k + 1]]
            maps = probs.take(pa.array(rows)).to_pylist()
            stream = from_wide(t_rows[rows], [None if m is None else dict(m) for m in maps],
                               tolerance=plan.tolerance, stream=name)
        if plan.output == "groups":
            found_groups.append(answer_groups(plan, stream))
            count = len(found_groups[-1]["t_start"])
        else:
            found = answer_rows(plan, stream)
            found_rows += found
            count = len(found)
        which.append(np.full(count, k, dtype=np.int64))
    if plan.classes:  # after the streams' own checks: a broken stream is the first error
        check_classes(plan.query, plan.classes, read_facts(table), values)
    keys_out = keys.take(pa.array(np.concatenate(which) if which else np.zeros(0, np.int64)))
    if plan.output == "groups":
        return _group_output(plan, keys_out, found_groups)
    return _output(plan, keys_out, found_rows)


def answer_groups(plan: ProbCallPlan, stream: ProbStream) -> dict[str, np.ndarray]:
    """The groups of one built stream under ``plan``, as columns (``group_columns``)."""

    pattern = _compiled(plan.query)
    return group_columns(pattern, stream, check_choice("overlap", plan.overlap, OVERLAPS),
                         plan.threshold, resolve_window(pattern, plan.window),
                         transducer_mode=check_choice("transducer_mode", plan.transducer_mode, MODES))


def _group_output(plan: ProbCallPlan, keys: pa.Array, parts: list[dict[str, np.ndarray]]
                  ) -> pa.Table:
    import numpy as np
    import pyarrow as pa

    def col(name: str, arrow_type: pa.DataType) -> pa.Array:
        values = np.concatenate([part[name] for part in parts]) if parts else []
        if name.startswith("core_") and plan.overlap.lower() != "complete":
            return pa.nulls(len(values), arrow_type)
        return pa.array(values, arrow_type)

    return pa.table({plan.key: keys, "t_start": col("t_start", pa.int64()),
                     "t_end": col("t_end", pa.int64()),
                     "probability": col("probability", pa.float64()),
                     "n_matches": col("n_matches", pa.int64()),
                     "core_start": col("core_start", pa.int64()),
                     "core_end": col("core_end", pa.int64())})


def _output(plan: ProbCallPlan, keys: pa.Array, rows: list[MatchRow]) -> pa.Table:
    import pyarrow as pa

    def col(name: str, arrow_type: pa.DataType) -> pa.Array:
        return pa.array([getattr(r, name) for r in rows], arrow_type)

    return pa.table({plan.key: keys, "match_id": col("match_id", pa.int64()),
                     "t_start": col("t_start", pa.int64()), "t_end": col("t_end", pa.int64()),
                     "probability": col("probability", pa.float64()),
                     "values": pa.array([list(r.values) for r in rows], pa.list_(pa.string()))})


def match_prob_udtf() -> UserDefinedTableFunction:
    """The Spark UDTF object of ``match_prob``."""
    return table_function(MatchProb)
