"""Spark adapter of MATCH_RECOGNIZE: the table function a rewritten statement calls.

An analyst never writes ``cep_match_recognize`` (docs/match-recognize.md): the statement
rewriter (:mod:`cep.recognize.rewrite`) generates the call, with the clause as a JSON plan and
a TABLE argument whose rows Spark has already sorted by partition and order (a window), with
one boolean column per DEFINE (``__mr_d<i>``), the one-row values of conditions that read the
match (``__mr_x<j>``, asked per thread: :mod:`cep.recognize.condition`) and each row's
position in its partition (``__mr_rn``). This adapter, in the shell of :mod:`udfs.shell`, runs the matcher over each
partition (rows from one ``__mr_rn = 1`` to the next) and returns the rows of every match,
labelled, for Spark to compute the MEASURES from:

* every input column except the internal ones (``__mr_tie``, ``__mr_d<i>``, ``__mr_x<j>``,
  ``__mr_rn``);
* ``__mr_match`` (MATCH_NUMBER), ``__mr_seq`` (1, 2, ... within the match), ``__mr_label``
  (CLASSIFIER), ``__mr_kind`` (0: a matched row, 1: the row an empty match starts at,
  2: an unmatched row of WITH UNMATCHED ROWS), ``__mr_excluded`` (inside ``{- -}``);
* with ALL ROWS PER MATCH, ``__mr_rest``: the input columns other than the partition and
  order columns, as one struct, so the outer query can list them as ``__mr_rest.*``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterator

from cep.errors import CepError
from cep.recognize.condition import Conditions
from cep.recognize.context import Contextual, contextualise
from cep.recognize.errors import (E_TOO_MUCH_OUTPUT, E_UNSUPPORTED, RowPatternLimitError,
                                  RowPatternSemanticError)
from cep.recognize.matcher import (MAX_MATCHES, MatchColumns, Reads, Skip, Within,
                                   match_columns, row_masks)
from cep.recognize.program import Program, compile_row_pattern
from cep.recognize.unrolled import Unrolled, match_unrolled, unroll
from cep.recognize.vector import Column, Unsupported
from cep.signature import SIGNATURES
from udfs.shell import PlannedResult, TableFunction, table_fields, table_function

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    from pyspark.sql.udtf import UserDefinedTableFunction

INTERNAL = ("__mr_tie", "__mr_rn", "__mr_pk", "__mr_ts", "__mr_keep")
ANNOTATIONS = ("__mr_match", "__mr_seq", "__mr_label", "__mr_kind", "__mr_excluded")


class MatchRecognizeCallError(CepError):
    """``cep_match_recognize`` was called other than by the MATCH_RECOGNIZE rewriter."""

    code = "CEP-MR-108"


def _internal(name: str) -> bool:
    return name in INTERNAL or (name[:6] in ("__mr_d", "__mr_x") and name[6:].isdigit())


def analyze_call(*args: Any, **kwargs: Any) -> PlannedResult:
    """The output schema: the input's columns, the annotations, and ``__mr_rest``."""
    from pyspark.sql.types import (BooleanType, IntegerType, LongType, StringType, StructField,
                                   StructType)

    err = MatchRecognizeCallError
    signature = SIGNATURES["cep_match_recognize"]
    call = signature.bind(args, kwargs, err)
    text = signature.values(call, err)["plan"]
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


def _flatten(matches: MatchColumns, offset: Callable[[np.ndarray], np.ndarray]
             ) -> tuple[np.ndarray, ...]:
    """``(starts, lengths, labels, excluded, empty)`` arrays of ``matches`` (starts mapped
    by ``offset``, a function of the matcher's positions)."""
    import numpy as np

    starts = offset(np.array(matches.starts, dtype=np.int64))
    lengths = np.array(matches.lengths, dtype=np.int64)
    labels = np.array(matches.labels, dtype=np.int64)
    excluded = np.array(matches.excluded, dtype=bool)
    return starts, lengths, labels, excluded, lengths == 0


def _times(plan: dict[str, Any], table: pa.Table, text: str, shift: int) -> list[int | None]:
    """The first ORDER BY item per row as WITHIN measures it: microseconds for TIMESTAMP and
    DATE (``time`` spans), the value itself for integers (``UNITS``); None for NULL."""
    import pyarrow as pa

    column = table.column("__mr_ts")
    kind = column.type
    span = tuple(shift + k for k in plan["within_span"])
    if plan["within"][1] == "units":
        if not pa.types.is_integer(kind):
            raise RowPatternSemanticError(E_UNSUPPORTED, f"WITHIN ... UNITS needs an integer "
                                          f"first ORDER BY item, found {kind}", text, *span)
        return column.to_pylist()
    if pa.types.is_timestamp(kind):
        micros = column.cast(pa.timestamp("us", tz=getattr(kind, "tz", None))).cast(pa.int64())
        return micros.to_pylist()
    if pa.types.is_date32(kind):
        return [None if d is None else d * 86_400_000_000
                for d in column.cast(pa.int32()).to_pylist()]
    raise RowPatternSemanticError(E_UNSUPPORTED, f"WITHIN with a time unit needs a TIMESTAMP or "
                                  f"DATE first ORDER BY item, found {kind} (write UNITS for "
                                  "numbers)", text, *span)


def _one_pass(program: Program, masks: list[int], breaks: np.ndarray, skip: Skip, text: str,
              times: list[int | None] | None = None, within: list[Any] | None = None
              ) -> tuple[np.ndarray, ...]:
    """Every partition of the task in one matcher call: a row that accepts nothing is put
    before each partition start and gap, so no match crosses one (used when the pattern has
    no anchor and cannot match empty, so such a row never starts or ends a match)."""
    import numpy as np

    before = np.cumsum(breaks) - 1  # sentinels placed before each row (none before row 0)
    before[0] = 0
    position = np.arange(len(masks)) + np.maximum(before, 0)
    spread = np.zeros(len(masks) + int(max(before[-1], 0)) if len(masks) else 0, dtype=object)
    spread[position] = masks  # object: a mask of more than 63 variables is a Python int
    extended = spread.tolist()
    window = None
    if times is not None:
        at_times: list[int | None] = [None] * len(extended)
        for t, at in zip(times, position.tolist()):
            at_times[at] = t
        window = Within(tuple(at_times), within[0])
    matches = match_columns(program, extended, skip, text=text, max_matches=1 << 62,
                          within=window)
    return _flatten(matches, lambda ext: np.searchsorted(position, ext))


def _per_partition(program: Program, masks: list[int] | Callable[[], list[int]],
                   firsts: np.ndarray, n: int, skip: Skip, text: str,
                   times: list[int | None] | None = None, within: list[Any] | None = None,
                   conditions: Conditions | None = None,
                   values: Callable[[], dict[str, list[Any]]] | None = None,
                   unrolled: Unrolled | None = None) -> tuple[np.ndarray, ...]:
    """One matcher call per partition (anchors, empty matches and conditions that read the
    match need the real bounds) over the task's ``n`` rows; ``masks`` (or the function that
    computes them, called only if a partition needs them), ``values`` the task's values the
    conditions read, and ``unrolled`` the product that replaces them where no row is
    undecided."""
    import numpy as np

    parts = []
    bounds = firsts.tolist() + [n]
    known: dict[str, list[Any]] | None = None
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        window = None if times is None else Within(tuple(times[lo:hi]), within[0])
        found = None if unrolled is None else match_unrolled(unrolled, lo, hi, text, window)
        if found is not None:
            parts.append(_flatten(found, lambda starts, lo=lo: starts + lo))
            continue
        reads = None
        if conditions is not None:
            if known is None:
                known = values() if values is not None else {}
            part = {name: column[lo:hi] for name, column in known.items()}
            ask = conditions.bind(part, hi - lo)
            reads = Reads(conditions.mask, ask, ask.number)
        if callable(masks):
            masks = masks()
        parts.append(_flatten(match_columns(program, masks[lo:hi], skip, text=text,
                                            within=window, reads=reads),
                              lambda starts, lo=lo: starts + lo))
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, np.zeros(0, dtype=bool), np.zeros(0, dtype=bool)
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(5))


@lru_cache(maxsize=64)
def _compiled(statement: str, start: int, end: int) -> Program:
    return compile_row_pattern(statement, start, end)


UNROLL = True
"""Whether conditions that read the match are first tried as one-row conditions of the
unrolled program (:mod:`cep.recognize.context`); False keeps the per-thread matcher for every
partition (set in one process to compare the two, as BENCHMARKS.md's measurement did)."""


@lru_cache(maxsize=64)
def _contextual(statement: str, start: int, end: int, conditions: str) -> Contextual | None:
    return contextualise(_compiled(statement, start, end), json.loads(conditions))


def _read(shape: Contextual) -> set[str]:
    """The columns the resolved conditions read."""
    names: set[str] = set()

    def walk(tree: Any) -> None:
        if isinstance(tree, list) and tree:
            if tree[0] == "at":
                names.add(tree[2])
            for item in tree[1:]:
                walk(item)

    for tree in shape.trees.values():
        walk(tree)
    return names


def _column(array: pa.ChunkedArray) -> Column:
    """A column for the vectorised evaluator: NULLs filled and flagged, times as ticks."""
    import numpy as np
    import pyarrow as pa

    kind = array.type
    null = array.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_signed_integer(kind) or pa.types.is_floating(kind):
        return Column(array.fill_null(0).to_numpy(zero_copy_only=False), null, "number")
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return Column(np.asarray(array.fill_null("").to_numpy(zero_copy_only=False),
                                 dtype=object), null, "string")
    if pa.types.is_boolean(kind):
        return Column(array.fill_null(False).to_numpy(zero_copy_only=False), null, "boolean")
    if pa.types.is_timestamp(kind):
        ticks = array.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        return Column(ticks, null, f"timestamp {kind.unit} {kind.tz}")
    if pa.types.is_date32(kind):
        return Column(array.cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False),
                      null, "date")
    raise Unsupported(f"a column of type {kind}")


class MatchRecognize(TableFunction):
    """The handler: one task's rows, partitions in order."""

    analyze = staticmethod(analyze_call)

    def answer(self, plan: str, table: pa.Table) -> Iterator[pa.Table]:
        yield answer_table(json.loads(plan), table)


def answer_table(plan: dict[str, Any], table: pa.Table) -> pa.Table:
    """The labelled rows of every match in ``table`` (whole partitions, sorted)."""
    import numpy as np

    # The clause's text placed where it stood in the statement, so errors name its line/column.
    lines, columns = plan["origin"]
    shift = lines + columns
    statement = "\n" * lines + " " * columns + plan["clause"]
    program = _compiled(statement, *(shift + k for k in plan["pattern"]))
    new_partition, gap = _bounds(table)
    found = _matches(plan, table, program, statement, shift, new_partition, gap)
    take, kind, seq, match_no, label_index, flags = _labelled(
        plan, found, np.cumsum(new_partition) - 1, statement, len(program.variables))
    names = np.array(list(program.variables) + [None], dtype=object)
    return _result(plan, table, take, kind, seq, match_no, names[label_index], flags)


def _bounds(table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """Per row: whether a partition starts there, and whether rows Spark dropped (no variable
    accepts them) leave a gap before it, which no match may cross."""
    import numpy as np

    n = table.num_rows
    rn = table.column("__mr_rn").to_numpy()
    # A partition starts where the position does not grow, or where the key's hash changes
    # (its first rows may have been dropped).
    new_partition = np.ones(n, dtype=bool)
    new_partition[1:] = rn[1:] <= rn[:-1]
    if "__mr_pk" in table.column_names:
        key = table.column("__mr_pk").to_numpy()
        new_partition[1:] |= key[1:] != key[:-1]
    gap = np.zeros(n, dtype=bool)
    gap[1:] = ~new_partition[1:] & (rn[1:] != rn[:-1] + 1)
    return new_partition, gap


def _matches(plan: dict[str, Any], table: pa.Table, program: Program, statement: str, shift: int,
             new_partition: np.ndarray, gap: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(starts, lengths, labels, excluded, empty)`` of every match of the task's rows."""
    import numpy as np

    defined = dict(plan["defines"])
    accepts = np.ones((table.num_rows, len(program.variables)), dtype=bool)
    for v, name in enumerate(program.variables):
        if name in defined:
            column = table.column(defined[name])
            accepts[:, v] = column.fill_null(False).to_numpy(zero_copy_only=False)
    index = {name: i for i, name in enumerate(program.variables)}
    skip = Skip(plan["skip"], frozenset(index[t] for t in plan["skip_to"] if t in index),
                plan["skip_name"], tuple(shift + k for k in plan["skip_span"]))
    times = _times(plan, table, statement, shift) if plan["within"] else None
    firsts = np.flatnonzero(new_partition)
    if plan["conditions"]:
        conditions = Conditions(plan["conditions"], program.variables)

        def values() -> dict[str, list[Any]]:
            return {c: table.column(c).to_pylist() for c in table.column_names
                    if c.startswith("__mr_x")}

        unrolled = None
        shape = _contextual(statement, *(shift + k for k in plan["pattern"]),
                            json.dumps(plan["conditions"])) if UNROLL else None
        if shape is not None:
            try:
                columns = {c: _column(table.column(c)) for c in _read(shape)}
                unrolled = unroll(shape, accepts, columns, np.cumsum(new_partition) - 1, skip)
            except Unsupported:
                pass  # every partition asks the conditions per thread
        # The user's variables' masks only for partitions the unrolled program leaves.
        return _per_partition(program, lambda: row_masks(accepts), firsts, table.num_rows,
                              skip, statement, times, plan["within"], conditions, values,
                              unrolled)
    masks = row_masks(accepts)
    if plan["anchored"] or plan["nullable"]:
        return _per_partition(program, masks, firsts, table.num_rows, skip, statement, times,
                              plan["within"])
    return _one_pass(program, masks, new_partition | gap, skip, statement, times,
                     plan["within"])


def _labelled(plan: dict[str, Any], found: tuple[np.ndarray, ...], partition: np.ndarray,
              statement: str, n_variables: int) -> tuple[np.ndarray, ...]:
    """Per output row: the input row it shows, its kind (0 matched, 1 empty match, 2
    unmatched), position in the match, match number, label index and exclusion flag."""
    import numpy as np

    starts, lengths, labels, excluded, empty = found
    # MATCH_NUMBER counts within a partition, empty matches included.
    owner = partition[starts]
    if len(owner) > MAX_MATCHES and np.bincount(owner).max() > MAX_MATCHES:
        raise RowPatternLimitError(E_TOO_MUCH_OUTPUT, f"a partition has more than "
                                   f"{MAX_MATCHES:,} matches", statement, 0, 0)
    first_of = np.searchsorted(owner, owner, side="left")
    number = np.arange(len(starts)) - first_of + 1
    keep = (~empty) | (plan["rows"] == "one") | (plan["empty"] == "show") | plan["unmatched"]
    starts, lengths, number, empty = starts[keep], lengths[keep], number[keep], empty[keep]
    span = np.where(empty, 1, lengths)
    total = int(span.sum())
    offsets = np.repeat(np.cumsum(span) - span, span)
    take = np.repeat(starts, span) + (np.arange(total) - offsets)
    kind = np.repeat(np.where(empty, 1, 0).astype(np.int32), span)
    seq = (np.arange(total) - offsets + 1).astype(np.int32)
    match_no = np.repeat(number, span)
    label_index = np.full(total, n_variables, dtype=np.int64)
    # Only empty matches are ever left out, and they label no row: the flat labels all stay.
    label_index[kind == 0] = labels
    flags = np.zeros(total, dtype=bool)
    flags[kind == 0] = excluded
    if plan["unmatched"]:
        covered = np.zeros(len(partition), dtype=bool)
        covered[take] = True
        free = np.flatnonzero(~covered)
        take = np.concatenate([take, free])
        kind = np.concatenate([kind, np.full(len(free), 2, dtype=np.int32)])
        seq = np.concatenate([seq, np.zeros(len(free), dtype=np.int32)])
        match_no = np.concatenate([match_no, np.zeros(len(free), dtype=np.int64)])
        label_index = np.concatenate([label_index, np.full(len(free), n_variables)])
        flags = np.concatenate([flags, np.zeros(len(free), dtype=bool)])
    return take, kind, seq, match_no, label_index, flags


def _result(plan: dict[str, Any], table: pa.Table, take: np.ndarray, kind: np.ndarray,
            seq: np.ndarray, match_no: np.ndarray, labels: np.ndarray, flags: np.ndarray
            ) -> pa.Table:
    """The output batch: the shown rows' input columns, the annotations, ``__mr_rest``."""
    import pyarrow as pa

    passed = [c for c in table.column_names if not _internal(c)]
    out = table.select(passed).take(pa.array(take, type=pa.int64()))
    columns = {c: out.column(c) for c in passed}
    columns["__mr_match"] = pa.array(match_no, type=pa.int64(), mask=kind == 2)
    columns["__mr_seq"] = pa.array(seq, type=pa.int32(), mask=kind != 0)
    columns["__mr_label"] = pa.array(labels, type=pa.string())
    columns["__mr_kind"] = pa.array(kind, type=pa.int32())
    columns["__mr_excluded"] = pa.array(flags, type=pa.bool_())
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


def _nullable(field: pa.Field) -> pa.Field:
    import pyarrow as pa

    kind = field.type
    if field.name == "__mr_rest":
        kind = pa.struct([kind.field(i).with_nullable(True) for i in range(kind.num_fields)])
    return pa.field(field.name, kind, nullable=True)


def match_recognize_udtf() -> UserDefinedTableFunction:
    """The Spark UDTF object behind MATCH_RECOGNIZE."""
    return table_function(MatchRecognize)
