"""Spark adapter of ``approx_match_seq``: sketch queries over the rows of a ``<name>_nodes`` table.

A row UDTF with ``analyze`` (DESIGN.md section 5: ``analyze`` is needed for the validation
before any task and for an output schema that depends on ``mode``):

    SELECT * FROM approx_match_seq('PATTERN A; B', TABLE(ev_sketch_nodes) PARTITION BY stream)
    SELECT * FROM approx_match_seq(pattern => 'PATTERN A; !C; B WITHIN 1 HOUR',
                                   mode => 'intervals', level => 1, policy => 'skip-till-any-match',
                                   sketch => TABLE(SELECT * FROM ev_sketch_nodes VERSION AS OF 3)
                                             PARTITION BY stream)

``analyze`` (on the driver, once per query) compiles the pattern with
:func:`cep.sketch.compile_sketch_query` (a construct a sketch cannot answer is a
``CEP-SKETCH-020..029`` error with line, column and caret), checks ``policy``, ``mode`` and
``level`` (``CEP-SQL-020``) and the columns of the table (``CEP-SQL-021``), and asks Spark for
just the columns the evaluation reads (timestamps as microseconds). Each task groups its rows
by stream (so ``PARTITION BY stream`` or ``PARTITION BY`` any function of it both work),
rebuilds each stream's tree from its rows (:func:`query_tree`: decodes and checks every
``bits`` blob, ``CEP-SKETCH-002`` when one is damaged) and answers with
:func:`cep.sketch.evaluate_sketch` over the Bloom filters. Every :class:`CepError` reaches the
SQL caller as ``ApproxMatchSeqFailed`` whose message is the error's (code, position, snippet).

Output (``docs/sql.md``):

- ``mode => 'exists'`` (default): ``stream STRING, matched BOOLEAN``, one row per stream;
- ``mode => 'intervals'``: ``stream STRING, match_id BIGINT, pos_start BIGINT, pos_end BIGINT,
  ts_start TIMESTAMP, ts_end TIMESTAMP, node_ids ARRAY<BIGINT>, level INT``, one row per match
  (docs/sketch.md section 4), ``match_id`` 1-based per stream in the order of the records,
  ``level`` the accuracy level of the answer.

**Rows -> tree.** The rows of one stream are its nodes (``is_open`` false) and at most one
open leaf (``is_open`` true). :func:`query_tree` hands their columns to
:meth:`cep.sketch.SketchTree.restore`, which rebuilds the twin-less query tree (Bloom filters,
intervals, the open leaf as a summary) and checks that the rows are the nodes of one tree.
The settings come from the rows (:func:`stored_config`: ``m``, ``k``, ``seeds``,
``config_version`` are columns that must agree, ``C`` and the fanout follow from the node
sizes). This module may not import ``delta_tables`` (DESIGN.md section 2), so it reads Python
rows itself instead of ``delta_tables.sketch_state.tree_from_arrow``; both end in
``SketchTree.restore``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import Any, Iterator, Sequence

from pyspark.sql.udtf import AnalyzeResult

from cep.errors import CepError

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
MODES = ("exists", "intervals")
DEFAULT_MODE = "exists"
POLICIES = ("strict-contiguity", "skip-till-next-match", "skip-till-any-match")
EXISTS_SCHEMA = "stream STRING, matched BOOLEAN"
INTERVALS_SCHEMA = ("stream STRING, match_id BIGINT, pos_start BIGINT, pos_end BIGINT, "
                    "ts_start TIMESTAMP, ts_end TIMESTAMP, node_ids ARRAY<BIGINT>, level INT")

# The columns of <name>_nodes the evaluation reads, in the order the handler receives them,
# with the kind of Spark type each must have and the SQL that selects it.
NODE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("stream", "any"), ("node_id", "integer"), ("level", "integer"), ("idx", "integer"),
    ("pos_start", "integer"), ("pos_end", "integer"), ("ts_start", "timestamp"),
    ("ts_end", "timestamp"), ("n_events", "integer"), ("is_top", "boolean"),
    ("is_open", "boolean"), ("m", "integer"), ("k", "integer"), ("seeds", "integer array"),
    ("config_version", "integer"), ("bits", "binary"))
_FIELD = {name: i for i, (name, _) in enumerate(NODE_COLUMNS)}


class ApproxMatchSeqArgumentError(CepError):
    """An argument of ``approx_match_seq`` (not the pattern) is missing, not a constant, of the
    wrong type or out of range (unknown mode or policy, negative level)."""

    code = "CEP-SQL-020"


class SketchTableError(CepError):
    """The TABLE argument is not a ``<name>_nodes`` table: a column is missing or has the
    wrong type. The message lists the columns the table has."""

    code = "CEP-SQL-021"


class SketchRowsError(CepError):
    """The rows of one stream do not form one sketch tree (mixed configurations, repeated node
    ids, several open leaves, NULL fields, inconsistent sizes). The message names the stream."""

    code = "CEP-SQL-022"


class ApproxMatchSeqFailed(Exception):
    """What the SQL caller sees: the message of the CepError (code, position, snippet)."""


@dataclass(frozen=True)
class SketchCallPlan:
    """What ``analyze`` decided, shipped to every task.

    Attributes:
        pattern: the query text.
        policy: the ``policy`` argument (None: the pattern's, else skip-till-next-match).
        mode: ``"exists"`` or ``"intervals"``.
        level: the accuracy level.
    """

    pattern: str
    policy: str | None
    mode: str
    level: int


@dataclass
class ApproxMatchSeqAnalyzeResult(AnalyzeResult):
    """``AnalyzeResult`` carrying the :class:`SketchCallPlan` to ``__init__`` on the executors."""

    plan: SketchCallPlan | None = None


# ---- argument checks (driver) ------------------------------------------------------------------

def _constant(arg: Any, name: str, *, required: bool = False) -> Any:
    """The value of a constant scalar argument, None when absent or NULL."""
    if arg is None:
        if required:
            raise ApproxMatchSeqArgumentError(f"argument {name} is required")
        return None
    if arg.isTable or not arg.isConstantExpression:
        raise ApproxMatchSeqArgumentError(f"argument {name} must be a constant, found an expression "
                                          "or a table")
    return arg.value


def check_arguments(pattern: Any, policy: Any, mode: Any, level: Any) -> SketchCallPlan:
    """Check the scalar arguments (Python values) and compile the pattern once.

    Args:
        pattern: the query text.
        policy: a policy name or None.
        mode: ``"exists"``, ``"intervals"`` or None (``"exists"``).
        level: an integer ``>= 0`` or None (0).

    Returns:
        The plan of the call.

    Raises:
        ApproxMatchSeqArgumentError: a bad argument (CEP-SQL-020).
        PatternError: the pattern does not parse or uses a construct a sketch cannot answer.

    Example:
        >>> check_arguments("PATTERN A; B", None, None, None)
        SketchCallPlan(pattern='PATTERN A; B', policy=None, mode='exists', level=0)
        >>> check_arguments("PATTERN A; B", None, "all", None)
        Traceback (most recent call last):
        ...
        udfs.approx_match_seq.ApproxMatchSeqArgumentError: CEP-SQL-020: argument mode: expected one of 'exists', 'intervals', found 'all'
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
    compiled_query(pattern, policy)  # raises the pattern's error with code and caret
    return SketchCallPlan(pattern, policy, mode, level)


def _kind_ok(data_type: Any, kind: str) -> bool:
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


def node_selection(table_type: Any, function: str = "approx_match_seq") -> list[Any]:
    """The ``SelectedColumn`` list for :data:`NODE_COLUMNS`, after checking the table's columns.

    Raises:
        SketchTableError: a column is missing or has the wrong type (CEP-SQL-021).
    """
    from pyspark.sql.udtf import SelectedColumn

    fields = {f.name.lower(): f for f in table_type.fields}
    have = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in table_type.fields)
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
        quoted = _quote(found.name)
        if kind == "timestamp":
            expr = f"unix_micros(CAST({quoted} AS TIMESTAMP))"
        elif kind == "any":
            expr = f"CAST({quoted} AS STRING)"
        else:
            expr = quoted
        select.append(SelectedColumn(expr, alias=f"__{name}"))
    return select


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def analyze_call(pattern: Any, sketch: Any, policy: Any = None, mode: Any = None,
                 level: Any = None) -> ApproxMatchSeqAnalyzeResult:
    """The ``AnalyzeResult`` of one call (see the module docstring)."""
    plan = check_arguments(_constant(pattern, "pattern", required=True),
                           _constant(policy, "policy"), _constant(mode, "mode"),
                           _constant(level, "level"))
    if sketch is None or not sketch.isTable:
        raise ApproxMatchSeqArgumentError(
            "argument sketch must be a TABLE(...) argument over a <name>_nodes table, with "
            "PARTITION BY stream")
    select = node_selection(sketch.dataType)
    return ApproxMatchSeqAnalyzeResult(schema=output_schema(plan.mode), select=select, plan=plan)


def output_schema(mode: str) -> Any:
    """The output ``StructType`` of ``mode`` (:data:`EXISTS_SCHEMA` / :data:`INTERVALS_SCHEMA`).

    Built field by field: ``StructType.fromDDL`` needs a Spark session, which the Python
    process running ``analyze`` does not have.
    """
    from pyspark.sql.types import (ArrayType, BooleanType, IntegerType, LongType, StringType,
                                   StructField, StructType, TimestampType)

    if mode == "exists":
        return StructType([StructField("stream", StringType()),
                           StructField("matched", BooleanType())])
    return StructType([StructField("stream", StringType()), StructField("match_id", LongType()),
                       StructField("pos_start", LongType()), StructField("pos_end", LongType()),
                       StructField("ts_start", TimestampType()), StructField("ts_end", TimestampType()),
                       StructField("node_ids", ArrayType(LongType())),
                       StructField("level", IntegerType())])


@lru_cache(maxsize=64)
def compiled_query(pattern: str, policy: str | None) -> Any:
    """:func:`cep.sketch.compile_sketch_query`, once per Python worker and (pattern, policy)."""
    from cep.sketch import compile_sketch_query

    return compile_sketch_query(pattern, policy)


# ---- rows -> tree ------------------------------------------------------------------------------

def stored_config(stream: str, rows: Sequence[Sequence[Any]]) -> Any:
    """The :class:`cep.sketch.SketchConfig` the rows of one stream were built with.

    ``m``, ``k``, ``seeds`` and ``config_version`` are columns and must agree on every row;
    ``C`` is the ``n_events`` of a full leaf (without one: one more than the open leaf's, any
    larger ``C`` gives the same units) and ``fanout`` the ratio of a level-1 node's
    ``n_events`` to ``C`` (2 without a level-1 node, where it is never used):
    :func:`cep.sketch.stored.config_of_rows`, over Python rows.

    Raises:
        SketchRowsError: NULL fields or rows of different configurations (CEP-SQL-022).
    """
    return _config_of(stream, _columns(stream, rows))


def _columns(stream: str, rows: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """The rows transposed (one tuple per :data:`NODE_COLUMNS` field), NULLs refused where a
    tree needs a value."""
    cols = list(zip(*rows))
    for name in ("node_id", "level", "idx", "pos_start", "pos_end", "n_events", "is_open", "m",
                 "k", "seeds", "config_version"):
        if None in cols[_FIELD[name]]:
            at = cols[_FIELD[name]].index(None)
            raise SketchRowsError(f"stream {stream!r}: node {cols[_FIELD['node_id']][at]} has a "
                                  f"NULL {name}")
    return cols


def _config_of(stream: str, cols: list[tuple[Any, ...]]) -> Any:
    import numpy as np

    from cep.sketch import CorruptSketchError
    from cep.sketch.stored import config_of_rows

    f = _FIELD
    seeds = [tuple(x) for x in cols[f["seeds"]]]
    if len({len(x) for x in seeds}) > 1:
        raise SketchRowsError(f"stream {stream!r}: rows of different sketch configurations "
                              "(seed lists of different lengths); read one version of the table")
    try:
        return config_of_rows(
            stream, m=np.array(cols[f["m"]], dtype=np.int64), k=np.array(cols[f["k"]], dtype=np.int64),
            seeds=np.array(seeds, dtype=np.int64).reshape(len(seeds), -1),
            config_version=np.array(cols[f["config_version"]], dtype=np.int64),
            level=np.array(cols[f["level"]], dtype=np.int64),
            n_events=np.array(cols[f["n_events"]], dtype=np.int64),
            is_open=np.array(cols[f["is_open"]], dtype=np.bool_))
    except CorruptSketchError as err:
        raise SketchRowsError(err.message) from None


def _blob(stream: str, node: Any, blob: Any, m: int) -> Any:
    """The decoded filter of one row; CorruptSketchError naming the stream and the node."""
    from cep.sketch import CorruptSketchError, decode_bits, split_node_ids

    try:
        if blob is None:
            raise CorruptSketchError("the bits are NULL")
        return decode_bits(blob, m)
    except CorruptSketchError as err:
        level, index = split_node_ids(int(node))
        raise CorruptSketchError(f"stream {stream!r}, node_id {node} (level {int(level)}, index "
                                 f"{int(index)}): {err.message}") from None


def query_tree(stream: str, rows: Sequence[Sequence[Any]]) -> Any:
    """The twin-less query tree of one stream (:meth:`cep.sketch.SketchTree.restore`).

    Args:
        stream: the stream key (for messages).
        rows: every row of the stream (tuples in :data:`NODE_COLUMNS` order, timestamps as int64
            microseconds): its nodes and at most one ``is_open`` row.

    Returns:
        A :class:`cep.sketch.SketchTree` without exact sets, for
        :func:`cep.sketch.evaluate_sketch` with Bloom membership.

    Raises:
        CorruptSketchError: a ``bits`` blob is damaged, or the rows are not the nodes of one tree
            (CEP-SKETCH-002; the message names the stream).
        SketchRowsError: several open rows, NULL fields or mixed configurations (CEP-SQL-022).

    Example:
        >>> from cep.sketch import SketchConfig, SketchTree, encode_bits
        >>> tree = SketchTree.build(list("ABACBDE"), range(7), SketchConfig(m=64, k=2, C=2))
        >>> rows = [("s", int(tree.node_id[r]), int(tree.level[r]), int(tree.index[r]),
        ...          int(tree.pos_start[r]), int(tree.pos_end[r]), int(tree.ts_start[r]),
        ...          int(tree.ts_end[r]), int(tree.n_events[r]), bool(tree.is_top[r]), False,
        ...          64, 2, [0, 1], 1, encode_bits(tree.bits[r], 64)) for r in range(len(tree))]
        >>> back = query_tree("s", rows)
        >>> back.node_id.tolist() == tree.node_id.tolist(), back.has_twin, back.open_leaf.n_events
        (True, False, 0)
    """
    import numpy as np

    from cep.sketch import CorruptSketchError, SketchTree

    f = _FIELD
    cols = _columns(stream, rows)
    config = _config_of(stream, cols)
    is_open = np.array(cols[f["is_open"]], dtype=np.bool_)
    n_open = int(is_open.sum())
    if n_open > 1:
        raise SketchRowsError(f"stream {stream!r} has {n_open} open-leaf rows, at most one is "
                              "allowed; read one version of the table")
    full = np.flatnonzero(~is_open)
    ids_all = np.array(cols[f["node_id"]], dtype=np.int64)
    blobs = cols[f["bits"]]
    bits = np.empty((len(full), config.m // 8), dtype=np.uint8)
    for i, r in enumerate(full.tolist()):
        bits[i] = _blob(stream, ids_all[r], blobs[r], config.m)
    nodes: dict[str, Any] = {"bits": bits}
    for name, key in (("level", "level"), ("index", "idx"), ("pos_start", "pos_start"),
                      ("pos_end", "pos_end"), ("ts_start", "ts_start"), ("ts_end", "ts_end"),
                      ("n_events", "n_events")):
        values = cols[f[key]]
        if key.startswith("ts_") and None in [values[r] for r in full.tolist()]:
            raise SketchRowsError(f"stream {stream!r}: a node has a NULL {key}")
        nodes[name] = np.array([values[r] for r in full.tolist()], dtype=np.int64)
    nodes["is_top"] = np.array([bool(cols[f["is_top"]][r]) for r in full.tolist()], dtype=np.bool_)
    ids = ids_all[full]
    bad = np.flatnonzero(ids != ((nodes["level"] << 48) | nodes["index"]))
    if len(bad):
        i = int(bad[0])
        raise SketchRowsError(f"stream {stream!r}: node_id {int(ids[i])} is not (level << 48) | idx "
                              f"for level {int(nodes['level'][i])}, idx {int(nodes['index'][i])}")
    if n_open:
        o = int(np.flatnonzero(is_open)[0])
        open_index = int(cols[f["idx"]][o])
        summary = (int(cols[f["n_events"]][o]), cols[f["ts_start"]][o], cols[f["ts_end"]][o],
                   _blob(stream, ids_all[o], blobs[o], config.m))
    else:
        open_index = (int(nodes["pos_end"].max()) + 1) // config.C if len(full) else 0
        summary = (0, None, None, np.zeros(config.m // 8, dtype=np.uint8))
    try:
        return SketchTree.restore(config, nodes, open_index=open_index, open_summary=summary)
    except CorruptSketchError as err:
        raise CorruptSketchError(f"stream {stream!r}: {err.message}") from None


# ---- the handler -------------------------------------------------------------------------------

def group_streams(rows: Sequence[Sequence[Any]]) -> dict[str, list[Sequence[Any]]]:
    """Rows grouped by stream (first column), streams in sorted order."""
    groups: dict[str, list[Sequence[Any]]] = {}
    for r in rows:
        if r[0] is None:
            raise SketchRowsError(f"node {r[_FIELD['node_id']]} has a NULL stream")
        groups.setdefault(r[0], []).append(r)
    return {s: groups[s] for s in sorted(groups)}


def answer_stream(plan: SketchCallPlan, stream: str, tree: Any) -> Iterator[tuple[Any, ...]]:
    """The output rows of one stream (:data:`EXISTS_SCHEMA` or :data:`INTERVALS_SCHEMA`)."""
    from cep.sketch import evaluate_sketch

    query = compiled_query(plan.pattern, plan.policy)
    result = evaluate_sketch(query, tree, level=plan.level, mode=plan.mode, membership="bloom")
    if plan.mode == "exists":
        yield stream, bool(result)
        return
    starts, ends = result.pos_start.tolist(), result.pos_end.tolist()
    ts_starts, ts_ends = result.ts_start.tolist(), result.ts_end.tolist()
    ids = result.node_ids.tolist()
    for i in range(len(starts)):
        yield (stream, i + 1, starts[i], ends[i], _to_datetime(ts_starts[i]),
               _to_datetime(ts_ends[i]), ids[i], plan.level)


def _to_datetime(us: int) -> datetime:
    return _EPOCH + timedelta(microseconds=us)


class ApproxMatchSeqTable:
    """Row UDTF handler: buffers a partition's node rows, answers per stream in ``terminate``."""

    @staticmethod
    def analyze(pattern: Any, sketch: Any = None, policy: Any = None, mode: Any = None,
                level: Any = None) -> Any:
        try:
            return analyze_call(pattern, sketch, policy, mode, level)
        except CepError as err:
            # One short frame instead of the compiler's stack: the SQL caller reads the message.
            raise ApproxMatchSeqFailed(str(err)) from None

    def __init__(self, analyze_result: Any) -> None:
        self.plan: SketchCallPlan = analyze_result.plan
        self.rows: list[Any] = []

    def eval(self, pattern: Any, sketch: Any, policy: Any = None, mode: Any = None,
             level: Any = None) -> Iterator[Any]:
        self.rows.append(sketch)
        return iter(())

    def terminate(self) -> Iterator[tuple[Any, ...]]:
        if not self.rows:
            return
        try:
            for stream, rows in group_streams(self.rows).items():
                yield from answer_stream(self.plan, stream, query_tree(stream, rows))
        except CepError as err:
            raise ApproxMatchSeqFailed(str(err)) from None


def approx_match_seq_udtf() -> Any:
    """The Spark UDTF object for ``approx_match_seq`` (row UDTF: it needs ``analyze``)."""
    from pyspark.sql.functions import udtf

    return udtf(ApproxMatchSeqTable, useArrow=False)
