"""Spark adapter of ``approx_match_seq``: sketch queries over the rows of a ``<name>_nodes`` table.

One function (docs/sql.md), in the shell of :mod:`udfs.shell`: ``analyze`` on the driver,
Arrow batches on the executors.

    SELECT * FROM approx_match_seq('PATTERN A; B', TABLE(ev_sketch_nodes))
    SELECT * FROM approx_match_seq(pattern => 'PATTERN A; !C; B WITHIN 1 HOUR',
                                   mode => 'intervals', level => 1, policy => 'skip-till-any-match',
                                   sketch => TABLE(SELECT * FROM ev_sketch_nodes VERSION AS OF 3))
    SELECT * FROM approx_match_seq('PATTERN A; B', TABLE(ev_sketch_nodes), mode => 'intervals',
                                   resume => 'after-match')

``analyze`` (once per query) compiles the pattern with :func:`cep.sketch.compile_sketch_query`
(a construct a sketch cannot answer is a ``CEP-SKETCH-020..029`` error with line, column and
caret) once, and the plan carries the compiled query to the tasks; it checks ``policy``, ``mode``, ``level`` and ``resume`` (``CEP-SQL-020``) and the columns of the
table (``CEP-SQL-021``), asks Spark for just the columns the evaluation reads and for the rows
of each stream together (``STREAM_BUCKETS`` buckets of the stream's hash; the call carries no
``PARTITION BY``). Each task sorts its rows by stream and answers all its streams in one pass
(:mod:`cep.sketch.forest`: every ``bits`` blob checked and unpacked at once, the rows of every
stream checked, cut and evaluated together). Rows of several configurations, or rows that fail
a check, are answered one stream at a time (:mod:`cep.sketch.stored`), whose errors name the
stream and node: ``CEP-SKETCH-002`` for a damaged blob or a missing node, ``CEP-SQL-022`` when
the rows are not one tree.

Output (``docs/sql.md``); ``stream`` has the nodes table's own type:

- ``mode => 'exists'`` (default): ``stream, matched BOOLEAN``, one row per stream;
- ``mode => 'intervals'``: ``stream, match_id BIGINT, pos_start BIGINT, pos_end BIGINT,
  ts_start TIMESTAMP, ts_end TIMESTAMP, node_ids ARRAY<BIGINT>, level INT``, one row per match
  (docs/sketch.md section 4), ``match_id`` 1-based per stream in the order of the records,
  ``level`` the accuracy level of the answer. ``resume => 'after-match'`` keeps only the
  matches the thesis's search finds when it resumes at the unit holding the last event of the
  match before (Baltus 2021, sections 4.3.1, 4.3.2; :func:`cep.sketch.evaluate.evaluate_streams`);
  the default ``'every-start'`` keeps every start's matches, which may overlap.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Iterator

from cep.errors import CepError
from cep.signature import SIGNATURES
from cep.sketch import (CorruptSketchError, SketchQuery, SketchTree, compile_sketch_query,
                        evaluate_sketch)
from cep.sketch.codec import stream_bytes
from cep.sketch.evaluate import SketchMatches, StreamMatches, evaluate_streams
from cep.sketch.forest import Forest, cut_forest, restore_forest
from cep.sketch.stored import (binding_fields, config_of_rows, decode_bits_matrix, stored_tree,
                               stream_bounds)
from udfs.shell import (PlannedResult, TableFunction, planned, quote,
                        table_fields, table_function)

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    from pyspark.sql.types import DataType, StructField, StructType
    from pyspark.sql.udtf import PartitioningColumn, SelectedColumn, UserDefinedTableFunction

MODES = ("exists", "intervals")
DEFAULT_MODE = "exists"
POLICIES = ("strict-contiguity", "skip-till-next-match", "skip-till-any-match")
RESUMES = ("every-start", "after-match")
DEFAULT_RESUME = "every-start"
# Buckets of the stream: a sketch has few streams with many node rows each.
STREAM_BUCKETS = 16

# The columns of <name>_nodes the evaluation reads, with the kind of Spark type each must have.
NODE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("stream", "any"), ("node_id", "integer"), ("level", "integer"), ("idx", "integer"),
    ("pos_start", "integer"), ("pos_end", "integer"), ("ts_start", "timestamp"),
    ("ts_end", "timestamp"), ("n_events", "integer"), ("is_top", "boolean"),
    ("is_open", "boolean"), ("m", "integer"), ("k", "integer"), ("seeds", "integer array"),
    ("config_version", "integer"), ("bits", "binary"))


class ApproxMatchSeqArgumentError(CepError):
    """An argument of ``approx_match_seq`` (not the pattern) is missing, not a constant, of the
    wrong type or out of range (unknown mode, policy or resume, negative level)."""

    code = "CEP-SQL-020"


class SketchTableError(CepError):
    """The TABLE argument is not a ``<name>_nodes`` table: a column is missing or has the
    wrong type. The message lists the columns the table has."""

    code = "CEP-SQL-021"


class SketchRowsError(CepError):
    """The rows of one stream do not form one sketch tree (mixed configurations, repeated node
    ids, several open leaves, NULL fields, inconsistent sizes). The message names the stream."""

    code = "CEP-SQL-022"


@dataclass(frozen=True)
class SketchCallPlan:
    """What ``analyze`` decided, shipped to every task.

    Attributes:
        pattern: the query text.
        policy: the ``policy`` argument (None: the pattern's, else skip-till-next-match).
        mode: ``"exists"`` or ``"intervals"``.
        level: the accuracy level.
        stream: the name of the nodes table's stream column (the output column's name).
        resume: ``"every-start"`` or ``"after-match"`` (where the next match may start).
        query: the pattern compiled once on the driver (a frozen :class:`cep.sketch.SketchQuery`
            of a few hundred bytes), which the tasks evaluate without parsing the text again.
    """

    pattern: str
    policy: str | None
    mode: str
    level: int
    stream: str = "stream"
    resume: str = DEFAULT_RESUME
    query: SketchQuery | None = field(default=None, repr=False, compare=False)


# ---- argument checks (driver) ------------------------------------------------------------------

def check_arguments(pattern: Any, policy: Any, mode: Any, level: Any,
                    resume: Any = None) -> SketchCallPlan:
    """Check the scalar arguments (Python values) and compile the pattern once.

    Raises:
        ApproxMatchSeqArgumentError: a bad argument (CEP-SQL-020).
        PatternError: the pattern does not parse or uses a construct a sketch cannot answer.

    Example:
        >>> check_arguments("PATTERN A; B", None, None, None)
        SketchCallPlan(pattern='PATTERN A; B', policy=None, mode='exists', level=0, stream='stream', resume='every-start')
        >>> check_arguments("PATTERN A; B", None, "all", None)
        Traceback (most recent call last):
        ...
        udfs.approx_match_seq.ApproxMatchSeqArgumentError: CEP-SQL-020: argument mode: expected one of 'exists', 'intervals', found 'all'
        >>> check_arguments("PATTERN A; B", None, "intervals", None, "after")
        Traceback (most recent call last):
        ...
        udfs.approx_match_seq.ApproxMatchSeqArgumentError: CEP-SQL-020: argument resume: expected one of 'every-start', 'after-match' or NULL, found 'after'
    """
    if not isinstance(pattern, str):
        raise ApproxMatchSeqArgumentError(f"argument pattern: expected a string, found {pattern!r}")
    if policy is not None and policy not in POLICIES:
        raise ApproxMatchSeqArgumentError(
            f"argument policy: expected one of {', '.join(map(repr, POLICIES))} or NULL, "
            f"found {policy!r}")
    mode = DEFAULT_MODE if mode is None else mode
    if mode not in MODES:
        raise ApproxMatchSeqArgumentError(
            f"argument mode: expected one of {', '.join(map(repr, MODES))}, found {mode!r}")
    level = 0 if level is None else level
    if isinstance(level, bool) or not isinstance(level, int) or level < 0:
        raise ApproxMatchSeqArgumentError(
            f"argument level: expected an integer >= 0 (0: answer at the leaves), found {level!r}")
    resume = DEFAULT_RESUME if resume is None else resume
    if resume not in RESUMES:
        raise ApproxMatchSeqArgumentError(
            f"argument resume: expected one of {', '.join(map(repr, RESUMES))} or NULL, "
            f"found {resume!r}")
    query = compile_sketch_query(pattern, policy)  # the pattern's error with code and caret
    return SketchCallPlan(pattern, policy, mode, level, resume=resume, query=query)


def _kind_ok(data_type: DataType, kind: str) -> bool:
    from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, IntegralType,
                                   TimestampNTZType, TimestampType)

    if kind == "any":
        return True
    if kind == "integer":
        return isinstance(data_type, IntegralType)
    if kind == "timestamp":
        return isinstance(data_type, (TimestampType, TimestampNTZType))
    if kind == "boolean":
        return isinstance(data_type, BooleanType)
    if kind == "binary":
        return isinstance(data_type, BinaryType)
    return isinstance(data_type, ArrayType) and isinstance(data_type.elementType, IntegralType)


def node_selection(fields: dict[str, StructField], function: str = "approx_match_seq"
                   ) -> list[SelectedColumn]:
    """The ``SelectedColumn`` list for :data:`NODE_COLUMNS` (``__<name>``), after checking them.

    Raises:
        SketchTableError: a column is missing or has the wrong type (CEP-SQL-021).
    """
    from pyspark.sql.udtf import SelectedColumn

    have = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in fields.values())
    select = []
    for name, kind in NODE_COLUMNS:
        found = fields.get(name)
        if found is None:
            raise SketchTableError(f"{function} needs a sketch nodes table (<name>_nodes); column "
                                   f"{name!r} is missing; the table has: {have}")
        if not _kind_ok(found.dataType, kind):
            raise SketchTableError(f"column {found.name!r} of the sketch table must be "
                                   f"{kind.replace('integer array', 'an ARRAY of integers')}, "
                                   f"found {found.dataType.simpleString()}")
        expr = quote(found.name)
        if kind == "timestamp":
            expr = f"unix_micros(CAST({expr} AS TIMESTAMP))"
        elif kind == "integer":
            expr = f"CAST({expr} AS BIGINT)"
        select.append(SelectedColumn(expr, alias=f"__{name}"))
    return select


def stream_partitioning(fields: dict[str, StructField]) -> list[PartitioningColumn]:
    """Every row of a stream in one partition: ``STREAM_BUCKETS`` buckets of its hash."""
    from pyspark.sql.udtf import PartitioningColumn

    return [PartitioningColumn(f"pmod(hash({quote(fields['stream'].name)}), {STREAM_BUCKETS})")]


def analyze_call(*args: Any, **kwargs: Any) -> PlannedResult:
    """The analysis of one call (see the module docstring)."""
    err = ApproxMatchSeqArgumentError
    signature = SIGNATURES["approx_match_seq"]
    call = signature.bind(args, kwargs, err)
    given = signature.values(call, err)
    plan = check_arguments(*(given[n] for n in ("pattern", "policy", "mode", "level", "resume")))
    fields = table_fields(call.get("sketch"), "sketch", err)
    select = node_selection(fields)
    stream = fields["stream"]
    plan = replace(plan, stream=stream.name)
    return PlannedResult(schema=output_schema(plan.mode, stream), select=select, plan=plan,
                         partitionBy=stream_partitioning(fields))


def output_schema(mode: str, stream: StructField) -> StructType:
    """The output ``StructType`` of ``mode``; ``stream`` is the nodes table's stream field."""
    from pyspark.sql.types import (ArrayType, BooleanType, IntegerType, LongType, StructField,
                                   StructType, TimestampType)

    key = StructField(stream.name, stream.dataType)
    if mode == "exists":
        return StructType([key, StructField("matched", BooleanType())])
    return StructType([key, StructField("match_id", LongType()),
                       StructField("pos_start", LongType()), StructField("pos_end", LongType()),
                       StructField("ts_start", TimestampType()), StructField("ts_end", TimestampType()),
                       StructField("node_ids", ArrayType(LongType())),
                       StructField("level", IntegerType())])


# ---- rows -> trees (executors) -----------------------------------------------------------------

def node_columns(table: pa.Table) -> dict[str, Any]:
    """The selected ``__<name>`` columns as numpy, sorted by stream, NULLs refused where a tree
    needs a value; ``stream`` stays an Arrow column (the output keeps its type), ``keys`` are
    its values and ``bounds`` their runs (:func:`cep.sketch.stored.stream_bounds`), ``binding``,
    ``stream_bytes`` (one per stream) and ``stream_rows`` what each row's blob tag covers."""
    import numpy as np
    import pyarrow.compute as pc

    table = table.take(pc.sort_indices(table, [("__stream", "ascending", "at_end")]))
    col = {name: table.column(f"__{name}").combine_chunks() for name, _ in NODE_COLUMNS}
    for c in ("stream", "node_id", "level", "idx", "pos_start", "pos_end", "n_events",
              "is_open", "m", "k", "config_version", "seeds"):
        if col[c].null_count:
            at = pc.index(col[c].is_null(), True).as_py()
            raise SketchRowsError(f"stream {col['stream'][at].as_py()!r}: node "
                                  f"{col['node_id'][at].as_py()} has a NULL {c}")
    out: dict[str, Any] = {}
    for c in ("node_id", "level", "idx", "pos_start", "pos_end", "n_events", "m", "k",
              "config_version"):
        out[c] = col[c].to_numpy().astype(np.int64, copy=False)
    for c in ("is_top", "is_open"):
        out[c] = pc.fill_null(col[c], False).to_numpy(zero_copy_only=False)
    valid = None
    for c in ("ts_start", "ts_end"):
        mask = col[c].is_valid().to_numpy(zero_copy_only=False)
        valid = mask if valid is None else valid & mask
        out[c] = pc.fill_null(col[c], 0).to_numpy().astype(np.int64, copy=False)
    out["ts_valid"] = valid
    seeds = col["seeds"]
    lengths = pc.list_value_length(seeds).to_numpy(zero_copy_only=False)
    width = int(lengths[0]) if len(lengths) else 0
    out["seeds"] = seeds.flatten().to_numpy(zero_copy_only=False).astype(np.int64)
    out["seed_lengths"] = lengths
    out["seed_width"] = width
    bits = col["bits"]
    buffers = bits.buffers()
    out["bits_offsets"] = (np.frombuffer(buffers[1], dtype=np.int32,
                                         count=len(bits) + 1, offset=bits.offset * 4)
                           if len(bits) else np.zeros(1, dtype=np.int32))
    out["bits_data"] = (np.frombuffer(buffers[2], dtype=np.uint8) if len(bits) and buffers[2]
                        is not None else np.zeros(0, dtype=np.uint8))
    out["bits_valid"] = bits.is_valid().to_numpy(zero_copy_only=False)
    out["stream"] = col["stream"]
    keys = np.asarray(col["stream"].to_pylist(), dtype=object)
    out["keys"] = keys
    # What every bound blob's row tag covers (cep.sketch.codec.binding): the integer fields of
    # each row, and its stream's bytes, encoded once per stream.
    out["binding"] = binding_fields(out, valid)
    bounds = stream_bounds(keys)
    out["bounds"] = bounds
    out["stream_bytes"] = [stream_bytes(key) for key in keys[bounds[:-1]]]
    out["stream_rows"] = np.repeat(np.arange(len(bounds) - 1), np.diff(bounds))
    return out


def selected_columns(nodes: pa.Table) -> pa.Table:
    """The rows of a ``<name>_nodes`` Arrow table as :func:`node_selection` hands them to a task
    (``__<name>`` columns, integers as BIGINT, timestamps as microseconds), one chunk per
    column: what :func:`answer_table` reads, for tests and benchmarks without Spark."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out = {}
    for name, kind in NODE_COLUMNS:
        column = nodes.column(name)
        if kind == "timestamp":
            column = pc.cast(pc.cast(column, pa.timestamp("us", tz="UTC")), pa.int64())
        elif kind == "integer":
            column = pc.cast(column, pa.int64())
        out[f"__{name}"] = column
    return pa.table(out).combine_chunks()


_PER_ROW = ("node_id", "level", "idx", "pos_start", "pos_end", "ts_start", "ts_end", "n_events",
            "is_top", "is_open")


def stream_trees(cols: dict[str, Any]) -> Iterator[tuple[int, int, Any, SketchTree]]:
    """``(lo, hi, key, query tree)`` of every stream of :func:`node_columns` (its rows are
    ``lo:hi``)."""
    import numpy as np

    keys, bounds = cols["keys"], cols["bounds"]
    seed_starts = np.concatenate(([0], np.cumsum(cols["seed_lengths"]))).astype(np.int64)
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        key = keys[lo]
        lengths = cols["seed_lengths"][lo:hi]
        if (lengths != lengths[0]).any():
            raise SketchRowsError(f"stream {key!r}: rows of different sketch configurations "
                                  "(seed lists of different lengths); read one version of the table")
        n_open = int(cols["is_open"][lo:hi].sum())
        if n_open > 1:
            raise SketchRowsError(f"stream {key!r} has {n_open} open-leaf rows, at most one is "
                                  "allowed; read one version of the table")
        seeds = cols["seeds"][seed_starts[lo]:seed_starts[hi]].reshape(hi - lo, int(lengths[0]))
        try:
            config = config_of_rows(key, m=cols["m"][lo:hi], k=cols["k"][lo:hi], seeds=seeds,
                                    config_version=cols["config_version"][lo:hi],
                                    level=cols["level"][lo:hi], n_events=cols["n_events"][lo:hi],
                                    is_open=cols["is_open"][lo:hi], idx=cols["idx"][lo:hi],
                                    pos_start=cols["pos_start"][lo:hi])
        except CorruptSketchError as err:
            raise SketchRowsError(err.message) from None
        bits = decode_bits_matrix(cols["bits_data"], cols["bits_offsets"][lo:hi + 1], config.m,
                                  stream=key, node_ids=cols["node_id"][lo:hi],
                                  valid=cols["bits_valid"][lo:hi],
                                  fields=cols["binding"][lo:hi],
                                  streams=cols["stream_bytes"][cols["stream_rows"][lo]])
        tree = stored_tree(key, config, {c: cols[c][lo:hi] for c in _PER_ROW}, bits,
                           ts_valid=cols["ts_valid"][lo:hi])
        yield lo, hi, key, tree


# ---- the handler -------------------------------------------------------------------------------

class ApproxMatchSeq(TableFunction):
    """The ``approx_match_seq`` handler: one bucket of streams."""

    analyze = staticmethod(planned(analyze_call))

    def answer(self, plan: SketchCallPlan, table: pa.Table) -> Iterator[pa.Table]:
        yield answer_table(plan, table)


def answer_table(plan: SketchCallPlan, table: pa.Table) -> pa.Table:
    """The output table of one partition's selected node columns.

    Every stream of the partition is answered in one pass (:mod:`cep.sketch.forest`) when
    their rows share one configuration and pass the checks; otherwise (mixed configurations,
    damaged rows) one stream at a time, which names the stream and the node at fault.

    Raises:
        SketchRowsError: NULLs where a tree needs a value, mixed configurations.
        CorruptSketchError: a damaged blob or rows that are not one tree (naming the stream).
    """
    cols = node_columns(table)
    query = plan.query
    bounds = cols["bounds"]
    found = forest_answer(plan, query, cols, bounds)
    if found is None:
        found = stream_answers(plan, query, cols)
    return output_table(plan, cols, bounds, found)


def forest_answer(plan: SketchCallPlan, query: SketchQuery, cols: dict[str, Any],
                  bounds: np.ndarray) -> np.ndarray | StreamMatches | None:
    """The answer of every stream at once, or None when the rows need the per-stream path.

    Returns:
        ``exists``: a bool array, one entry per stream; ``intervals``: the
        :class:`cep.sketch.evaluate.StreamMatches`.
    """

    forest = partition_forest(cols, bounds)
    if forest is None:
        return None
    units, unit_bounds = cut_forest(forest, query.names, plan.level)
    return evaluate_streams(query, units, unit_bounds, mode=plan.mode, resume=plan.resume)


def partition_forest(cols: dict[str, Any], bounds: np.ndarray) -> Forest | None:
    """The :class:`cep.sketch.forest.Forest` of a task's :func:`node_columns` (streams at
    ``bounds``), or None when the rows need the per-stream path (mixed settings, a damaged
    blob or row: that path's error names the stream and node)."""
    import numpy as np

    n = len(cols["node_id"])
    lengths = cols["seed_lengths"]
    if not n or not bool(np.all(lengths == lengths[0])) or not bool(np.all(cols["m"] == cols["m"][0])):
        return None
    try:
        bits = decode_bits_matrix(cols["bits_data"], cols["bits_offsets"], int(cols["m"][0]),
                                  valid=cols["bits_valid"], fields=cols["binding"],
                                  streams=cols["stream_bytes"], stream_rows=cols["stream_rows"])
    except CorruptSketchError:
        return None
    rows = {c: cols[c] for c in (*_PER_ROW, "m", "k", "config_version", "ts_valid")}
    rows["seeds"] = cols["seeds"].reshape(n, int(lengths[0]))
    return restore_forest(rows, bits, bounds)


def stream_answers(plan: SketchCallPlan, query: SketchQuery, cols: dict[str, Any]
                   ) -> np.ndarray | StreamMatches:
    """:func:`forest_answer`'s result, one stream at a time (any rows; errors name the stream)."""
    import numpy as np

    answers = []
    for _, _, _, tree in stream_trees(cols):
        answers.append(evaluate_sketch(query, tree, level=plan.level, mode=plan.mode,
                                       membership="bloom", resume=plan.resume))
    if plan.mode == "exists":
        return np.array(answers, dtype=bool)
    stream = np.repeat(np.arange(len(answers), dtype=np.int64), [len(a) for a in answers])

    def cat(name: str) -> np.ndarray:
        return np.concatenate([getattr(a, name) for a in answers]).astype(np.int64) if answers \
            else np.zeros(0, dtype=np.int64)

    ids = (np.concatenate([a.node_ids for a in answers]) if answers
           else np.zeros((0, query.slots), dtype=np.int64))
    return StreamMatches(stream, SketchMatches(cat("pos_start"), cat("pos_end"), cat("ts_start"),
                                               cat("ts_end"), ids.astype(np.int64)))


def output_table(plan: SketchCallPlan, cols: dict[str, Any], bounds: np.ndarray,
                 found: np.ndarray | StreamMatches) -> pa.Table:
    """The Arrow output of the answers ``found`` (stream ``s`` is the key of row ``bounds[s]``)."""
    import numpy as np
    import pyarrow as pa

    if plan.mode == "exists":
        stream = cols["stream"].take(pa.array(bounds[:-1], pa.int64()))
        return pa.table({plan.stream: stream, "matched": pa.array(np.asarray(found, dtype=bool))})
    matches, which = found.matches, found.stream
    n = len(which)
    stream = cols["stream"].take(pa.array(bounds[which] if n else np.zeros(0, np.int64), pa.int64()))
    # match_id: 1-based within the stream, in the order of the sorted records.
    match_id = np.arange(n, dtype=np.int64) - np.searchsorted(which, which, side="left") + 1
    slots = matches.node_ids.shape[1] if matches.node_ids.ndim == 2 else 0
    ts_type = pa.timestamp("us", tz="UTC")
    return pa.table({
        plan.stream: stream,
        "match_id": pa.array(match_id),
        "pos_start": pa.array(matches.pos_start.astype(np.int64)),
        "pos_end": pa.array(matches.pos_end.astype(np.int64)),
        "ts_start": pa.array(matches.ts_start.astype(np.int64)).cast(ts_type),
        "ts_end": pa.array(matches.ts_end.astype(np.int64)).cast(ts_type),
        "node_ids": pa.ListArray.from_arrays(
            pa.array((np.arange(n + 1) * slots).astype(np.int32)),
            pa.array(matches.node_ids.reshape(-1).astype(np.int64), pa.int64())),
        "level": pa.array(np.full(n, plan.level, dtype=np.int32))})


def approx_match_seq_udtf() -> UserDefinedTableFunction:
    """The Spark UDTF object of ``approx_match_seq``."""
    return table_function(ApproxMatchSeq)
