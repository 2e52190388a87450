"""The driver's half of ``match_seq``: binding a call and planning what Spark selects.

``analyze`` (once per query) binds the arguments by :data:`cep.signature.SIGNATURES`, parses
the pattern once and validates it against the table's columns, so a bad pattern fails the
statement with its code, line, column and caret before any task runs. It asks Spark for just
what the engine reads: the id, the timestamp, the type, the attributes of cross-event
conditions, and one boolean column ``__m<k>`` per alias whose single-event conditions Spark
evaluates itself (pushed down). The plan it returns (:class:`CallPlan`) carries the parsed
pattern to every task. The tasks' half is :mod:`udfs.match_seq`.

Example (the planning helpers that need no Spark):
    >>> from cep.match import compile_query
    >>> horizon_of(compile_query("PATTERN a; b WITHIN 3 EVENTS"))
    Horizon(by_events=True, width=3)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from cep.errors import CepError
from cep.lang import Query, parse_pattern
from cep.lang.ast import events as pattern_events
from cep.lang.spark_sql import NotRenderable, class_test, render_condition
from cep.lang.validate import checked_classes
from cep.match import CompiledQuery, compile_query
from cep.match.run.closing import needs_newest
from cep.signature import SIGNATURES
from udfs.chunks import Horizon
from udfs.facts import FACTS, class_questions, facts_sql
from udfs.match_seq_native import native_fields
from udfs.shell import PlannedResult, field, keyed, named_columns, quote, table_fields

if TYPE_CHECKING:
    from pyspark.sql.types import DataType, StructField, StructType
    from pyspark.sql.udtf import AnalyzeArgument, SelectedColumn

KEEP = "__cep_keep"
"""The selected column the JVM shim's rule filters on (sql_ext/jvm, ``KeepRowsRule.FIELD``)."""
POS = "__pos"
"""The selected column with each row's position in its key (strict contiguity, filtered)."""
RUN_STEPS_MAX = 6
# Buckets of the key: enough for the parallelism of a small cluster, few enough that each
# holds many keys of a log of short cases (measured against 16 and 256: BENCHMARKS.md).
KEY_BUCKETS = 64
MICROS_PER_DAY = 86_400_000_000


class MatchSeqArgumentError(CepError):
    """A ``match_seq`` argument (not the pattern) is missing, of the wrong type or unknown."""

    code = "CEP-SQL-010"


@dataclass(frozen=True)
class CallPlan:
    """What ``analyze`` decided, shipped to every task.

    Attributes:
        query, policy, max_matches: the compiled query's inputs; ``query`` is the pattern
            parsed once on the driver (a frozen tree), which each worker compiles without
            parsing the text again.
        ts_kind: ``timestamp``, ``timestamp_ntz``, ``date`` or ``number``: how ``__ts``
            arrives and how ``start_ts``/``end_ts`` go back.
        key: the key column's name when ``key_col`` is given (``__key`` is then selected, and
            the output column has this name; Spark matches output columns by name).
        attributes: engine attribute names, in select order (``__a0``, ``__a1``, ...).
        mask_aliases: the alias of ``__m0``, ``__m1``, ...
        filtered: ``__cep_keep`` is selected: only rows where it is true matter.
        positioned: ``__pos`` is selected: a key is cut into runs where rows were dropped.
        renames: ``(internal name, selected name)`` of the columns selected under their own
            names (see :class:`Selection`).
        horizon: the reach of a match when Spark delivers each partition sorted and the task
            matches it chunk by chunk (:mod:`udfs.chunks`); None when it collects the whole
            partition first.
        chunk_rows: new rows per chunk (``chunk_rows =>``; None: ``udfs.chunks.CHUNK_ROWS``;
            0: no streaming).
        classes: the classes whose absence from the whole input is an error (CEP-PAT-219;
            none with ``allow_absent => true``); their facts are ``need_i``.
        newest: the pattern ends in NOT with a time window, so a match is reported only
            once the input's newest event time has closed its window (:mod:`udfs.facts`).
        columns: the output names of ``columns =>`` (selected as ``__c0``, ``__c1``, ...):
            each an array of the matched events' values.
    """

    query: Query
    policy: str | None
    ts_kind: str
    key: str | None
    attributes: tuple[str, ...]
    mask_aliases: tuple[str, ...]
    max_matches: int | None = None
    filtered: bool = False
    positioned: bool = False
    renames: tuple[tuple[str, str], ...] = ()
    horizon: Horizon | None = None
    chunk_rows: int | None = None
    classes: tuple[str, ...] = ()
    newest: bool = False
    columns: tuple[str, ...] = ()

def _ts_kind(data_type: DataType, name: str) -> tuple[str, str]:
    """The plan's ``ts_kind`` and the SQL that selects the column for it."""
    from pyspark.sql.types import DateType, NumericType, TimestampNTZType, TimestampType

    if isinstance(data_type, TimestampType):
        return "timestamp", quote(name)
    if isinstance(data_type, TimestampNTZType):
        return "timestamp_ntz", quote(name)
    if isinstance(data_type, DateType):
        return "date", quote(name)
    if isinstance(data_type, NumericType):
        return "number", f"CAST({quote(name)} AS BIGINT)"
    raise MatchSeqArgumentError(f"ts_col {name!r} must be a TIMESTAMP, TIMESTAMP_NTZ, DATE or a "
                                f"number, found {data_type.simpleString()}")




class Selection:
    """The columns ``analyze`` asks Spark for, each under the name the task reads it by.

    With ``raw`` (a call whose selection holds window functions), a plain column of the table
    is selected under its own name and renamed in the task (:attr:`renames`): Spark computes
    a selection's aliases below the window's shuffle, next to the columns the window itself
    needs, so ``id AS __id`` would cross the shuffle beside ``id`` (measured in BENCHMARKS.md,
    "Strict contiguity"). Names that start with ``__`` are always aliased, so a table column
    never takes an internal name.

    Example:
        >>> s = Selection(raw=True)
        >>> s.add("__id", "`id`", "id"); s.add("__a0", "`id`", "id"); s.add("__m0", "x > 1")
        >>> [(c.name, c.alias) for c in s.columns], s.renames
        ([('`id`', ''), ('x > 1', '__m0')], (('__id', 'id'), ('__a0', 'id')))
    """

    def __init__(self, raw: bool) -> None:
        self.raw = raw
        self.columns: list[SelectedColumn] = []
        self.renames: tuple[tuple[str, str], ...] = ()
        self._raw_names: set[str] = set()

    def add(self, internal: str, sql: str, column: str | None = None) -> None:
        """Select ``sql`` for the task's column ``internal`` (``column``: the table column
        ``sql`` names, when it is a plain column)."""
        from pyspark.sql.udtf import SelectedColumn

        if (self.raw and column is not None and sql == quote(column)
                and not column.startswith("__")):
            if column.lower() not in self._raw_names:
                self._raw_names.add(column.lower())
                self.columns.append(SelectedColumn(sql))
            self.renames += ((internal, column),)
            return
        self.columns.append(SelectedColumn(sql, alias=internal))



@dataclass(frozen=True)
class Columns:
    """The TABLE argument's columns a call reads, as ``analyze`` resolved them.

    Attributes:
        ts, type, id, key: the fields of ``ts_col``, ``type_col``, ``id_col`` and ``key_col``
            (None without a key).
        ts_kind, ts_sql: see :class:`CallPlan`; the SQL that selects the timestamp.
        id_sql, type_sql: the SQL that selects the id as BIGINT and the type as STRING.
        data: the other columns' names, in table order.
    """

    ts: StructField
    type: StructField
    id: StructField
    key: StructField | None
    ts_kind: str
    ts_sql: str
    id_sql: str
    type_sql: str
    data: tuple[str, ...]

    @property
    def known(self) -> list[str]:
        """Every column name a pattern may read, as ``compile_query`` validates them."""
        return [self.ts.name, self.type.name, self.id.name, *self.data]

    @property
    def by_name(self) -> dict[str, str]:
        """Column names as conditions resolve them, by lower-case name: ``a.ts`` / ``a.type``
        always mean the timestamp and type columns (docs/semantics.md, decision 9), even when
        a data column is called ts or type."""
        names = {name.lower(): name for name in self.data}
        names.update({self.type.name.lower(): self.type.name, self.id.name.lower(): self.id.name,
                      "ts": self.ts.name, "type": self.type.name})
        return names

    def window(self) -> str:
        """The window clause of each key's rows in the engine's order."""
        order = f"ORDER BY {self.ts_sql}, {self.id_sql}"
        return f"OVER (PARTITION BY {quote(self.key.name)} {order})" if self.key else f"OVER ({order})"


def read_columns(events: AnalyzeArgument | None, given: dict[str, Any]) -> Columns:
    """The columns of the TABLE argument ``events`` that the bound arguments ``given`` name.

    Raises:
        MatchSeqArgumentError: a named column is missing or of the wrong type.
    """
    from pyspark.sql.types import IntegralType, LongType, StringType

    err = MatchSeqArgumentError
    fields = table_fields(events, "events", err)
    ts_f = field(fields, given["ts_col"], "ts_col", err)
    type_f = field(fields, given["type_col"], "type_col", err)
    id_f = field(fields, given["id_col"], "id_col", err)
    key_f = field(fields, given["key_col"], "key_col", err) if given["key_col"] else None
    if not isinstance(id_f.dataType, IntegralType):
        raise err(f"id_col {id_f.name!r} must be an integer column, found "
                  f"{id_f.dataType.simpleString()}")
    ts_kind, ts_sql = _ts_kind(ts_f.dataType, ts_f.name)
    reserved = {ts_f.name.lower(), type_f.name.lower(), id_f.name.lower()}
    id_sql = (quote(id_f.name) if isinstance(id_f.dataType, LongType)
              else f"CAST({quote(id_f.name)} AS BIGINT)")
    type_sql = (quote(type_f.name) if isinstance(type_f.dataType, StringType)
                else f"CAST({quote(type_f.name)} AS STRING)")
    data = tuple(f.name for f in events.dataType.fields if f.name.lower() not in reserved)
    return Columns(ts_f, type_f, id_f, key_f, ts_kind, ts_sql, id_sql, type_sql, data)


def pushed_masks(compiled: CompiledQuery, query: Query, cols: Columns,
                 column_sql: Callable[[str], str] | None = None) -> dict[str, str]:
    """The SQL mask of each alias whose single-event conditions Spark can evaluate
    (``column_sql``: SQL in place of each quoted column, as in ``render_condition``)."""
    classes = {e.alias: e.cls for e in pattern_events(query.pattern)}
    names = cols.by_name
    # Class tests as the engine reads them: a DEFINE with a join variable ($x) contributes only
    # its variable-free conjuncts; the conjuncts with $x are checked by the engine on matches.
    defines = {cls: pred.condition for cls, pred in compiled.defines.items()}
    masks: dict[str, str] = {}
    for alias, conditions in compiled.pushdown.items():
        try:
            cls = classes[alias]
            parts = [render_condition(defines[cls], names, ts_col=cols.ts.name,
                                      column_sql=column_sql)
                     if cls in defines else class_test(cols.type.name, cls, column_sql)]
            parts += [render_condition(c, names, ts_col=cols.ts.name, column_sql=column_sql)
                      for c in conditions]
        except (NotRenderable, KeyError):
            continue  # the engine evaluates this alias itself
        expr = " AND ".join(f"({p})" for p in parts)
        masks[alias] = f"coalesce({expr}, false)"
    return masks


def kept_rows(compiled: CompiledQuery, masks: dict[str, str], cols: Columns
              ) -> tuple[str | None, bool]:
    """:func:`keep_condition` made safe for the task's own checks of the input."""
    window = cols.window()
    keep, positioned = keep_condition(compiled, masks, window)
    if positioned and keep is not None:
        # Two rows with the same (ts, id) have no order, so which one `lead`/`lag` sees is up to
        # Spark's sort: keep both, and the engine refuses them (CEP-MATCH-004) in every
        # physical order instead of answering from whichever order Spark chose (issue 46).
        same = " OR ".join(
            f"coalesce({fn}({cols.ts_sql}, 1) {window} = {cols.ts_sql} AND {fn}({cols.id_sql}, 1)"
            f" {window} = {cols.id_sql}, false)" for fn in ("lag", "lead"))
        keep = f"({keep}) OR {same}"
    if keep is not None:
        # A row with a NULL id or timestamp reaches the task, which refuses it (CEP-SQL-010)
        # whatever its type: a filter must not decide whether the input is an error (issue 47:
        # `lag` over a NULL timestamp dropped such a row and the call answered without it).
        keep = f"({keep}) OR {cols.ts_sql} IS NULL OR {cols.id_sql} IS NULL"
    return keep, positioned


MATCH_COLUMNS = ("match_id", "start_ts", "end_ts", "event_ids", "variables", "n_events")
"""The output's own columns, after the key."""


def output_schema(cols: Columns, extra: tuple[StructField, ...] = ()) -> StructType:
    """The call's output columns: the key under its own name, then the match's, then an
    array per column of ``columns =>``."""
    from pyspark.sql.types import (ArrayType, IntegerType, LongType, StringType, StructField,
                                   StructType)

    out = [StructField(cols.key.name, cols.key.dataType)] if cols.key is not None else []
    ts_type = LongType() if cols.ts_kind == "number" else cols.ts.dataType
    out += [StructField("match_id", LongType()), StructField("start_ts", ts_type),
            StructField("end_ts", ts_type), StructField("event_ids", ArrayType(LongType())),
            StructField("variables", ArrayType(StringType())),
            StructField("n_events", IntegerType())]
    out += [StructField(f.name, ArrayType(f.dataType)) for f in extra]
    return StructType(out)


def carried_columns(events: AnalyzeArgument | None, text: str | None,
                    cols: Columns) -> tuple[StructField, ...]:
    """The fields ``columns => 'a, b'`` names, in its order.

    Raises:
        MatchSeqArgumentError: a name the table lacks, named twice, or that is also an
            output column.
    """
    taken = {c.lower() for c in MATCH_COLUMNS} | ({cols.key.name.lower()} if cols.key else set())
    return named_columns(events, text, taken, "match_seq",
                         f"{', '.join(MATCH_COLUMNS)}, the key", MatchSeqArgumentError)


def analyze_call(*args: Any, **kwargs: Any) -> PlannedResult:
    """The analysis of one call (see the module docstring)."""
    err = MatchSeqArgumentError
    signature = SIGNATURES["match_seq"]
    call = signature.bind(args, kwargs, err)
    given = signature.values(call, err)
    cols = read_columns(call.get("events"), given)
    query = parse_pattern(given["pattern"])  # once: the plan carries the tree to the tasks
    compiled = compile_query(query, policy=given["policy"], columns=cols.known)
    names = cols.by_name
    attributes = tuple(a for a in compiled.attributes
                       if a.lower() not in {cols.ts.name.lower(), cols.id.name.lower()})
    masks = pushed_masks(compiled, query, cols)
    keep, positioned = kept_rows(compiled, masks, cols)

    selection = Selection(raw=positioned)
    selection.add("__id", cols.id_sql, cols.id.name)
    selection.add("__ts", cols.ts_sql, cols.ts.name)
    selection.add("__type", cols.type_sql, cols.type.name)
    # Facts about the whole input (udfs.facts): every class the pattern reads must occur, and
    # a trailing NOT's time window closes by the newest event time of every key.
    checked = () if given["allow_absent"] else tuple(checked_classes(compiled.query))
    asked = class_questions(checked, cols.type_sql)
    newest = needs_newest(compiled)
    if newest:
        asked["newest"] = cols.ts_sql
    if asked:
        selection.add(FACTS, facts_sql(asked))
    for i, attr in enumerate(attributes):
        selection.add(f"__a{i}", quote(names[attr.lower()]), names[attr.lower()])
    for j, mask in enumerate(masks.values()):
        # Under a window a mask is read as `lead(mask, 0)`: the window's own input then, so
        # Spark does not carry it through the shuffle a second time (BENCHMARKS.md).
        selection.add(f"__m{j}", f"lead({mask}, 0) {cols.window()}" if positioned else mask)
    if keep is not None:
        selection.add(KEEP, keep)
    if positioned:
        selection.add(POS, f"row_number() {cols.window()}")
    if cols.key is not None:
        selection.add("__key", quote(cols.key.name), cols.key.name)
    extra = carried_columns(call.get("events"), given["columns"], cols)
    for i, f in enumerate(extra):
        selection.add(f"__c{i}", quote(f.name), f.name)
    native = None
    if positioned:
        def shifted(j: int) -> dict[str, str]:
            return pushed_masks(compiled, query, cols,
                                lambda column: f"lead({column}, {j}) {cols.window()}")
        native = native_fields(compiled, query, cols, masks, shifted, checked,
                               given["max_matches"], tuple(f.name for f in extra))
    for name, sql in (native or {}).items():
        selection.add(name, sql)

    key = cols.key.name if cols.key is not None else None
    # chunk_rows => 0: each partition collected whole, unsorted by Spark (the pre-streaming way)
    chunk = given["chunk_rows"]
    horizon = None if positioned or chunk == 0 else horizon_of(compiled)
    plan = CallPlan(query, given["policy"], cols.ts_kind, key, attributes, tuple(masks),
                    given["max_matches"], keep is not None, positioned, selection.renames,
                    horizon, chunk, checked, newest, tuple(f.name for f in extra))
    if positioned and key is not None:
        # The window already brings each key's rows into one task, sorted: asking Spark for a
        # partitioning too would shuffle every row twice (Spark cannot see that the two agree)
        # and a partition per key costs a Python call per key (measured: BENCHMARKS.md).
        return PlannedResult(schema=output_schema(cols, extra), select=selection.columns,
                             plan=plan)
    order = None
    if horizon is not None:  # rows sorted as the engine reads them: a task streams its keys
        order = ([quote(key)] if key is not None else []) + [cols.ts_sql, cols.id_sql]
    return keyed(output_schema(cols, extra), selection.columns, plan, key, KEY_BUCKETS,
                 order=order)


def horizon_of(compiled: CompiledQuery) -> Horizon | None:
    """How far a match of ``compiled`` reaches, when its partitions can be streamed.

    None when they cannot: a positional ``WINDOW [a, b]`` numbers the events from the start
    of the partition, which a chunk does not see.

    Example:
        >>> from cep.match import compile_query
        >>> horizon_of(compile_query("PATTERN a; b WITHIN 3 EVENTS"))
        Horizon(by_events=True, width=3)
        >>> horizon_of(compile_query("PATTERN a; b"))
        Horizon(by_events=False, width=None)
    """
    bounds = compiled.query.window
    if bounds is not None and bounds.kind != "TIMESTAMP":
        return None
    return Horizon(compiled.window.by_events, compiled.window.width)


def keep_condition(compiled: CompiledQuery, masks: dict[str, str], window: str
                   ) -> tuple[str | None, bool]:
    """The SQL condition of the rows the engine needs (None: every row), and whether the
    engine must also know each row's position in its key (``__pos``).

    Every alias's class test must be a pushed-down mask. When the matches depend on class
    events only (``CompiledQuery.class_events_suffice``), a row no mask accepts can never
    bind. When every match is a run of consecutive events (``CompiledQuery.runs_suffice``:
    strict contiguity), the same holds, and the engine matches each run of consecutive rows
    on its own (``__pos`` tells where rows were dropped); for runs of a fixed length k (``run_steps``) a row is needed only when some run
    of k rows around it has every step's mask true, which ``lead``/``lag`` over ``window``
    tell (k(k-1) window columns, so only up to ``RUN_STEPS_MAX`` steps). The condition goes as
    ``__cep_keep`` to Spark, where the JVM shim (``sql_ext/jvm``) filters on it before the rows
    reach Python, and :func:`event_stream` drops such rows again when no shim did.

    Example:
        >>> from cep.match import compile_query
        >>> masks = {"A": "a_test", "B": "b_test"}
        >>> keep_condition(compile_query("PATTERN A; B"), masks, "OVER w")
        ('(a_test) OR (b_test)', False)
        >>> keep_condition(compile_query("PATTERN A, B"), masks, "OVER w")[0]
        '(a_test AND coalesce(lead(b_test, 1) OVER w, false)) OR (coalesce(lag(a_test, 1) OVER w, false) AND b_test)'
        >>> keep_condition(compile_query("PATTERN A; B WITHIN 3 EVENTS"), masks, "OVER w")
        (None, False)
    """
    if set(masks) != set(compiled.alias_classes):
        return None, False
    any_alias = " OR ".join(f"({masks[alias]})" for alias in sorted(masks))
    if compiled.class_events_suffice:
        return any_alias, False
    if not compiled.runs_suffice:
        return None, False
    steps = compiled.run_steps
    if steps is None or len(steps) > RUN_STEPS_MAX:
        return any_alias, True
    step_masks = [" OR ".join(masks[alias] for alias in step) for step in steps]
    step_masks = [m if len(step) == 1 else f"({m})" for m, step in zip(step_masks, steps)]
    terms = []
    for at in range(len(steps)):  # the row is the run's event number `at`
        parts = []
        for i, mask in enumerate(step_masks):
            shift = i - at
            if shift:
                fn = "lead" if shift > 0 else "lag"
                mask = f"coalesce({fn}({mask}, {abs(shift)}) {window}, false)"
            parts.append(mask)
        terms.append(" AND ".join(parts))
    return " OR ".join(f"({t})" for t in terms), True
