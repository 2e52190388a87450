"""Spark adapter of MATCH_RECOGNIZE: the table function a rewritten statement calls.

An analyst never writes ``cep_match_recognize`` (docs/match-recognize.md): the statement
rewriter (:mod:`cep.recognize.rewrite`) generates the call, with the clause as a JSON plan and
a TABLE argument whose rows Spark has already sorted by partition and order (a window), with
one boolean column per DEFINE (``__mr_d<i>``) and each row's position in its partition
(``__mr_rn``). This adapter, in the shell of :mod:`udfs.shell`, runs the matcher over each
partition (rows from one ``__mr_rn = 1`` to the next) and returns the rows of every match,
labelled, for Spark to compute the MEASURES from:

* every input column except the internal ones (``__mr_tie``, ``__mr_d<i>``, ``__mr_rn``);
* ``__mr_match`` (MATCH_NUMBER), ``__mr_seq`` (1, 2, ... within the match), ``__mr_label``
  (CLASSIFIER), ``__mr_kind`` (0: a matched row, 1: the row an empty match starts at,
  2: an unmatched row of WITH UNMATCHED ROWS), ``__mr_excluded`` (inside ``{- -}``);
* with ALL ROWS PER MATCH, ``__mr_rest``: the input columns other than the partition and
  order columns, as one struct, so the outer query can list them as ``__mr_rest.*``.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Iterator

from cep.errors import CepError
from udfs.shell import PlannedResult, TableFunction, bind_call, string_arg, table_fields, \
    table_function

INTERNAL = ("__mr_tie", "__mr_rn")
ANNOTATIONS = ("__mr_match", "__mr_seq", "__mr_label", "__mr_kind", "__mr_excluded")


class MatchRecognizeCallError(CepError):
    """``cep_match_recognize`` was called other than by the MATCH_RECOGNIZE rewriter."""

    code = "CEP-MR-108"


def _internal(name: str) -> bool:
    return name in INTERNAL or (name.startswith("__mr_d") and name[6:].isdigit())


def analyze_call(*args: Any, **kwargs: Any) -> PlannedResult:
    """The output schema: the input's columns, the annotations, and ``__mr_rest``."""
    from pyspark.sql.types import (BooleanType, IntegerType, LongType, StringType, StructField,
                                   StructType)

    err = MatchRecognizeCallError
    call = bind_call("cep_match_recognize", args, kwargs, leading=("plan",), table="events",
                     keyed=False, options=(), error=err)
    text = string_arg(call.get("plan"), "plan", err)
    table_fields(call.get("events"), "events", err)
    try:
        plan = json.loads(text or "")
    except ValueError:
        raise err("plan: not the JSON the MATCH_RECOGNIZE rewriter writes; write the "
                  "MATCH_RECOGNIZE clause instead of calling this function") from None
    fields = call["events"].dataType.fields
    passed = [f for f in fields if not _internal(f.name)]
    for f in passed:
        if f.name in ANNOTATIONS or f.name == "__mr_rest":
            raise err(f"the input has a column {f.name!r}; names starting with __mr_ are "
                      "reserved for MATCH_RECOGNIZE")
    # Every column nullable (the input's NOT NULL flags dropped): Arrow checks the flag.
    passed = [StructField(f.name, f.dataType, True) for f in passed]
    out = list(passed) + [StructField("__mr_match", LongType()),
                          StructField("__mr_seq", IntegerType()),
                          StructField("__mr_label", StringType()),
                          StructField("__mr_kind", IntegerType()),
                          StructField("__mr_excluded", BooleanType())]
    if plan["rows"] == "all":
        names = {f.name.lower() for f in passed}
        for column in plan["front"]:
            if column.lower() not in names:
                raise err(f"{column!r} is not a column of the input")
        front = {c.lower() for c in plan["front"]}
        rest = [f for f in passed if f.name.lower() not in front
                and not f.name.startswith("__mr_nav")]
        out.append(StructField("__mr_rest", StructType(rest)))
    return PlannedResult(schema=StructType(out), plan=text)


@lru_cache(maxsize=64)
def _compiled(statement: str, start: int, end: int) -> Any:
    from cep.recognize.parser import parse_row_pattern
    from cep.recognize.program import compile_pattern

    return compile_pattern(parse_row_pattern(statement, start, end), statement)


class MatchRecognize(TableFunction):
    """The handler: one task's rows, partitions in order."""

    analyze = staticmethod(analyze_call)

    def answer(self, plan: Any, table: Any) -> Iterator[Any]:
        yield answer_table(json.loads(plan), table)


def answer_table(plan: dict[str, Any], table: Any) -> Any:
    """The labelled rows of every match in ``table`` (whole partitions, sorted)."""
    import numpy as np
    import pyarrow as pa

    from cep.recognize.matcher import Skip, find_matches

    # The clause's text placed where it stood in the statement, so errors name its line/column.
    lines, columns = plan["origin"]
    shift = lines + columns
    statement = "\n" * lines + " " * columns + plan["clause"]
    program = _compiled(statement, *(shift + k for k in plan["pattern"]))
    n = table.num_rows
    defined = dict(plan["defines"])
    accepts = np.ones((n, len(program.variables)), dtype=bool)
    for v, name in enumerate(program.variables):
        if name in defined:
            column = table.column(defined[name])
            accepts[:, v] = column.fill_null(False).to_numpy(zero_copy_only=False)
    index = {name: i for i, name in enumerate(program.variables)}
    skip = Skip(plan["skip"], frozenset(index[t] for t in plan["skip_to"] if t in index),
                plan["skip_name"], tuple(shift + k for k in plan["skip_span"]))
    rn = table.column("__mr_rn").to_numpy()
    starts = np.flatnonzero(rn == 1).tolist() + [n]
    rows: list[np.ndarray] = []
    numbers: list[np.ndarray] = []
    seqs: list[np.ndarray] = []
    labels: list[np.ndarray] = []
    kinds: list[np.ndarray] = []
    excluded: list[np.ndarray] = []
    names = np.array(program.variables, dtype=object)
    show_empty = plan["rows"] == "one" or plan["empty"] == "show" or plan["unmatched"]
    for lo, hi in zip(starts[:-1], starts[1:]):
        covered = np.zeros(hi - lo, dtype=bool) if plan["unmatched"] else None
        for m in find_matches(program, accepts[lo:hi], skip, text=statement):
            if m.labels:
                k = len(m.labels)
                rows.append(np.arange(lo + m.start, lo + m.end))
                numbers.append(np.full(k, m.number))
                seqs.append(np.arange(1, k + 1))
                labels.append(names[list(m.labels)])
                kinds.append(np.zeros(k, dtype=np.int32))
                excluded.append(np.array(m.excluded, dtype=bool))
                if covered is not None:
                    covered[m.start:m.end] = True
            elif show_empty:
                rows.append(np.array([lo + m.start]))
                numbers.append(np.array([m.number]))
                seqs.append(np.array([-1]))
                labels.append(np.array([None], dtype=object))
                kinds.append(np.array([1], dtype=np.int32))
                excluded.append(np.array([False]))
                if covered is not None:
                    covered[m.start] = True
        if covered is not None and not covered.all():
            free = np.flatnonzero(~covered)
            rows.append(lo + free)
            numbers.append(np.full(len(free), -1))
            seqs.append(np.full(len(free), -1))
            labels.append(np.full(len(free), None, dtype=object))
            kinds.append(np.full(len(free), 2, dtype=np.int32))
            excluded.append(np.zeros(len(free), dtype=bool))
    take = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    kind = np.concatenate(kinds) if kinds else np.zeros(0, dtype=np.int32)
    number = np.concatenate(numbers) if numbers else np.zeros(0, dtype=np.int64)
    seq = np.concatenate(seqs) if seqs else np.zeros(0, dtype=np.int64)
    passed = [c for c in table.column_names if not _internal(c)]
    out = table.select(passed).take(pa.array(take, type=pa.int64()))
    columns = {c: out.column(c) for c in passed}
    columns["__mr_match"] = pa.array(number, type=pa.int64(), mask=kind == 2)
    columns["__mr_seq"] = pa.array(seq, type=pa.int32(), mask=kind != 0)
    columns["__mr_label"] = pa.array(np.concatenate(labels) if labels else [], type=pa.string())
    columns["__mr_kind"] = pa.array(kind, type=pa.int32())
    columns["__mr_excluded"] = pa.array(np.concatenate(excluded) if excluded else [],
                                        type=pa.bool_())
    if plan["rows"] == "all":
        front = {c.lower() for c in plan["front"]}
        rest = [c for c in passed if c.lower() not in front and not c.startswith("__mr_nav")]
        columns["__mr_rest"] = pa.StructArray.from_arrays(
            [out.column(c).combine_chunks() for c in rest], names=rest) if rest else \
            pa.array([{}] * len(take), type=pa.struct([]))
    result = pa.table(columns)
    # analyze declares every output column (and every field of __mr_rest) nullable; Arrow
    # refuses to write a batch whose schema differs from the declared one in that flag.
    return result.cast(pa.schema([_nullable(f) for f in result.schema]))


def _nullable(field: Any) -> Any:
    import pyarrow as pa

    kind = field.type
    if field.name == "__mr_rest":
        kind = pa.struct([kind.field(i).with_nullable(True) for i in range(kind.num_fields)])
    return pa.field(field.name, kind, nullable=True)


def match_recognize_udtf() -> Any:
    """The Spark UDTF object behind MATCH_RECOGNIZE."""
    return table_function(MatchRecognize)
