"""The one shell every CEP table function runs in: ``analyze`` plus Arrow batches, typed errors.

Spark 4.2 offers two kinds of Python UDTF: row UDTFs, which may have a static ``analyze`` (a
schema that depends on the arguments, checks before any task, a ``select`` of pushed-down
expressions, a required partitioning) but move one Python object per input row, and Arrow
UDTFs (``arrow_udtf``), which move whole record batches but whose decorator refuses
``analyze`` (SPARK-53286). The refusal is a check of the decorator only: the JVM plans an
Arrow UDTF with ``analyze`` like a row one, and the Python worker hands the ``AnalyzeResult``
to ``__init__`` for every kind (``pyspark/worker.py``, ``read_udtf``). :func:`table_function`
therefore builds the UDTF object itself with the Arrow evaluation type and the handler's
``analyze``: one function per capability that has both (docs/decisions.md, "One SQL
surface"); measured in BENCHMARKS.md.

A function of this project is a :class:`TableFunction` subclass with

* ``analyze(...)`` (static): checks the arguments and the TABLE argument's columns and returns
  :class:`PlannedResult` carrying a frozen call plan, shipped to every task;
* ``answer(plan, table)``: one partition's rows (a ``pyarrow.Table`` of the selected
  columns) to output tables.

The shell collects a partition's batches and calls ``answer`` once in ``terminate`` (or, for a
handler whose ``streamed`` returns a consumer, hands it each batch as it arrives), and turns
every :class:`~cep.errors.CepError` (at plan time or run time) into :class:`CallFailed`, whose
message is the error's own ``CEP-...: line L, column C: ...`` text with its caret snippet and
no chained traceback.

Example (the helpers that need no Spark):
    >>> quote("weird`name")
    '`weird``name`'

The arguments of a call are bound and their constants checked by the function's declaration,
:data:`cep.signature.SIGNATURES`; the helpers here read the TABLE argument's columns.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

from pyspark.sql.udtf import AnalyzeResult

from cep.errors import CepError

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    from pyspark.sql.types import StructField, StructType
    from pyspark.sql.udtf import AnalyzeArgument, SelectedColumn, UserDefinedTableFunction


class CallFailed(Exception):
    """What a SQL caller sees when a CEP function fails: the CepError's message, nothing else."""


@dataclass
class PlannedResult(AnalyzeResult):
    """``AnalyzeResult`` that carries the function's frozen call plan to every task."""

    plan: Any = None


def keyed(schema: StructType, select: list[SelectedColumn], plan: Any, key: str | None,
          buckets: int, *, order: list[str] | None = None) -> PlannedResult:
    """The analysis result of a function whose rows go together by key: ``buckets`` buckets of
    the key's hash, or the whole table as one partition (one stream) without a key; ``order``:
    SQL expressions Spark sorts each partition by (it sorts externally, spilling to disk, so a
    task can then stream its rows)."""
    from pyspark.sql.udtf import OrderingColumn, PartitioningColumn

    order_by = [OrderingColumn(expr) for expr in order or ()]
    if key is None:
        return PlannedResult(schema=schema, withSinglePartition=True, select=select, plan=plan,
                             orderBy=order_by)
    return PlannedResult(schema=schema, select=select, plan=plan, orderBy=order_by,
                         partitionBy=[PartitioningColumn(f"pmod(hash({quote(key)}), {buckets})")])


def quote(name: str) -> str:
    """``name`` as a Spark SQL identifier (backquoted, inner backquotes doubled)."""
    return "`" + name.replace("`", "``") + "`"


def table_fields(arg: AnalyzeArgument | None, name: str,
                 error: type[CepError]) -> dict[str, StructField]:
    """The fields of a TABLE argument by lower-case name; ``error`` if ``arg`` is no table."""
    if arg is None or not arg.isTable:
        raise error(f"argument {name} must be a TABLE(...) argument")
    return {f.name.lower(): f for f in arg.dataType.fields}


def field(fields: dict[str, StructField], wanted: str, role: str, error: type[CepError],
          table: str = "events") -> StructField:
    """The field called ``wanted`` (any case); ``error`` names the role and lists the columns."""
    found = fields.get(wanted.lower())
    if found is None:
        names = ", ".join(f.name for f in fields.values())
        raise error(f"{role} {wanted!r} is not a column of the {table} table; columns: {names}")
    return found


def named_columns(events: AnalyzeArgument | None, text: str | None, taken: set[str],
                  function: str, outputs: str, error: type[CepError]) -> tuple[StructField, ...]:
    """The fields a ``columns => 'a, b'`` argument names, in its order (none without it).

    Args:
        events: the TABLE argument.
        text: the argument's value.
        taken: lower-cased names of the function's output columns (the key included).
        function, outputs: the function's name and its output columns, for the message.
        error: the function's argument error.

    Raises:
        error: a name the table lacks, named twice, or that is also an output column.
    """
    if text is None:
        return ()
    fields = table_fields(events, "events", error)
    names = [n.strip().strip("`") for n in text.split(",")]
    if not all(names):
        raise error(f"columns: expected column names separated by commas, found {text!r}")
    taken = set(taken)
    found: list[StructField] = []
    for name in names:
        f = field(fields, name, "columns", error)
        if any(f.name.lower() == g.name.lower() for g in found):
            raise error(f"columns: {f.name!r} is named twice")
        if f.name.lower() in taken:
            raise error(f"columns: {f.name!r} is also the name of an output column of {function} "
                        f"({outputs}); rename it in the TABLE query (SELECT *, x AS x_value ...)")
        taken.add(f.name.lower())
        found.append(f)
    return tuple(found)


def positions_lists(column: pa.ChunkedArray | pa.Array, positions: list[np.ndarray]) -> pa.Array:
    """A list column: per output row, ``column``'s values at that row's ``positions`` (the rows
    of one match or trend, in order), of the column's own type.

    Example:
        >>> import numpy as np, pyarrow as pa
        >>> positions_lists(pa.array(["a", "b", None]), [np.array([2, 0]), np.array([1])]).to_pylist()
        [[None, 'a'], ['b']]
    """
    import numpy as np
    import pyarrow as pa

    values = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    lengths = np.fromiter((len(p) for p in positions), dtype=np.int64, count=len(positions))
    offsets = np.zeros(len(positions) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.concatenate(positions).astype(np.int64) if positions else np.zeros(0, np.int64)
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values.take(pa.array(flat)))


def grouping_key(keys: pa.Array) -> pa.Array:
    """A key column (Arrow) with the values SQL's ``GROUP BY`` takes as one made one.

    Spark groups a floating-point key's -0.0 with 0.0 and every NaN with every other NaN (and
    the hash that brings a key's rows to one task does too); Arrow compares NaN unequal to
    itself and its dictionaries tell -0.0 from 0.0, so a task that cuts its rows into keys
    must first make them one value each (issue 47).

    Example:
        >>> import pyarrow as pa
        >>> grouping_key(pa.array([-0.0, float("nan"), None, 1.5])).to_pylist()
        [0.0, nan, None, 1.5]
    """
    import math

    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_floating(keys.type):
        return keys
    keys = pc.if_else(pc.equal(keys, 0), pa.scalar(0.0, keys.type), keys)
    return pc.if_else(pc.is_nan(keys), pa.scalar(math.nan, keys.type), keys)


def utc_micros(array: pa.Array) -> pa.Array:
    """A TIMESTAMP_NTZ (Arrow ``timestamp``) or DATE (``date32``) column as int64 microseconds of
    its wall clock read as UTC, whatever the session time zone; any other column unchanged.

    Example:
        >>> import pyarrow as pa
        >>> utc_micros(pa.array([1, None], pa.date32())).to_pylist()
        [86400000000, None]
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_timestamp(array.type):
        return array.cast(pa.timestamp("us", tz=array.type.tz)).cast(pa.int64())
    if pa.types.is_date32(array.type):
        return pc.multiply(array.cast(pa.int32()).cast(pa.int64()), 86_400_000_000)
    return array


def key_runs(keys: pa.Array) -> np.ndarray:
    """Where each run of equal keys starts in a column sorted by key (numpy int64 offsets);
    NULL is one key, NaN is one key (:func:`grouping_key`).

    Example:
        >>> import pyarrow as pa
        >>> key_runs(pa.array([float("nan"), float("nan"), None, None, 0.0, -0.0])).tolist()
        [0, 2, 4]
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if pa.types.is_floating(keys.type):  # NaN is unequal to itself: compare dictionary codes
        codes = pc.dictionary_encode(grouping_key(keys), null_encoding="encode").indices
        codes = codes.to_numpy(zero_copy_only=False)
        changed = codes[1:] != codes[:-1]
    else:  # neighbours compared, no hash of every key on the hot path
        nulls = keys.is_null().to_numpy(zero_copy_only=False)
        changed = pc.fill_null(pc.not_equal(keys.slice(1), keys.slice(0, n - 1)), False)
        changed = changed.to_numpy(zero_copy_only=False) | (nulls[1:] != nulls[:-1])
    return np.concatenate(([0], np.flatnonzero(changed) + 1)).astype(np.int64)


def batch_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> pa.RecordBatch:
    """The record batch among a call's arguments (the TABLE argument's rows)."""
    import pyarrow as pa

    for value in (*args, *kwargs.values()):
        if isinstance(value, pa.RecordBatch):
            return value
    raise CallFailed("CEP-SQL-000: the call has no TABLE argument")


class TableFunction:
    """Base of every CEP table function's handler (see the module docstring).

    Subclasses define ``analyze`` (a static method returning :class:`PlannedResult`) and
    ``answer``. ``eval`` only collects: the engines need a whole partition (a key, a bucket of
    keys, a stream) before they can answer.
    """

    def __init__(self, analyze_result: PlannedResult) -> None:
        self.plan = analyze_result.plan
        self.batches: list[pa.RecordBatch] = []
        self.consumer: Any = None

    def streamed(self) -> Any:
        """A consumer of this partition's batches in arrival order (``add(batch)`` and
        ``finish()``, each an iterator of output tables), or None to collect the partition
        and call :meth:`answer` once (override)."""
        return None

    def eval(self, *args: Any, **kwargs: Any) -> Iterator[pa.Table]:
        batch = batch_of(args, kwargs)
        if self.consumer is None:
            self.consumer = self.streamed() or False
        if self.consumer:
            return guarded(self.consumer.add(batch))
        if batch.num_rows:
            self.batches.append(batch)
        return iter(())

    def terminate(self) -> Iterator[pa.Table]:
        # Not a generator itself: the iterator returned is the only frame a failure shows.
        if self.consumer:
            return guarded(self.consumer.finish())
        return guarded(self._collected())

    def _collected(self) -> Iterator[pa.Table]:
        if not self.batches:
            return
        import pyarrow as pa

        table = pa.Table.from_batches(self.batches)
        self.batches = []
        yield from self.answer(self.plan, table)

    def answer(self, plan: Any, table: pa.Table) -> Iterator[pa.Table]:
        """The output tables of one partition (override)."""
        raise NotImplementedError


def guarded(outputs: Iterator[pa.Table]) -> Iterator[pa.Table]:
    """``outputs`` with a CepError turned into :class:`CallFailed`, raised from this one frame
    (what a SQL or JDBC caller sees: the message and one Python frame, the shell's)."""
    try:
        yield from outputs
    except CepError as err:
        raise CallFailed(str(err)) from None


def planned(analyze: Callable[..., PlannedResult]) -> Callable[..., PlannedResult]:
    """``analyze`` wrapped so a CepError reaches the SQL caller as :class:`CallFailed`."""

    @functools.wraps(analyze)  # Spark binds the call's arguments to the wrapped signature
    def run(*args: Any, **kwargs: Any) -> PlannedResult:
        try:
            return analyze(*args, **kwargs)
        except CepError as err:
            # One short frame instead of the compiler's stack: the SQL caller reads the message.
            raise CallFailed(str(err)) from None

    return run


def table_function(handler: type[TableFunction]) -> UserDefinedTableFunction:
    """The Spark UDTF object of ``handler``: Arrow batches in and out, with its ``analyze``.

    Built from pyspark's own ``UserDefinedTableFunction`` with the Arrow evaluation type, past
    the ``arrow_udtf`` decorator's refusal of ``analyze`` (see the module docstring);
    ``sql_ext.register.for_session`` rebuilds it for a Spark Connect session the same way.
    """
    from pyspark.sql.udtf import UserDefinedTableFunction
    from pyspark.util import PythonEvalType

    return UserDefinedTableFunction(handler, None, evalType=PythonEvalType.SQL_ARROW_UDTF,
                                    deterministic=True)

