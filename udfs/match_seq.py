"""Spark adapter of ``match_seq``: exact pattern matches of a table, per key.

One function (docs/sql.md), in the shell of :mod:`udfs.shell`: ``analyze`` on the driver and
Arrow batches on the executors.

    SELECT * FROM match_seq('PATTERN a; b WITHIN 1 HOUR', 'user_id', TABLE(events))
    SELECT * FROM match_seq(pattern => 'PATTERN a; b', key_col => 'user_id',
                            policy => 'skip-till-any-match', events => TABLE(events))
    SELECT * FROM match_seq('PATTERN a; b', TABLE(one_stream))     -- the table is one stream

``analyze`` (once per query) parses and validates the pattern against the table's columns, so
a bad pattern fails the statement with its code, line, column and caret before any task runs.
It asks Spark for just what the engine reads: the id, the timestamp, the type, the attributes
of cross-event conditions, and one boolean column ``__m<k>`` per alias whose single-event
conditions Spark evaluates itself (pushed down). With ``key_col`` it asks for the rows
partitioned by ``KEY_BUCKETS`` buckets of the key's hash: a task matches all keys of a bucket
in one engine call, as segments of one stream (``cep.match.run.segments``), and ``match_id``
still counts per key; without it the table is one stream (one partition). Every output row
carries the key column with its own name and type.

Rows no alias can bind are dropped by Spark when they cannot matter (:func:`keep_condition`).
Under strict contiguity that takes window functions over the key; the call then asks for no
partitioning of its own (the window's shuffle groups each key in one task), the engine cuts
each key into runs of consecutive rows (``__pos``), and ``match_id`` and ``max_matches`` are
counted per key across its runs (:func:`key_match_ids`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterator

from cep.errors import CepError
from cep.lang import parse_pattern
from cep.lang.ast import events as pattern_events
from cep.lang.spark_sql import NotRenderable, class_test, render_condition
from cep.lang.validate import checked_classes
from cep.match import MatchLimits, compile_query
from cep.match.columnar.arrays import MatchArrays
from cep.match.columnar.stream import EventStream
from cep.match.errors import MatchLimitError
from cep.match.limits import check_matches
from cep.match.run.closing import closed_only, needs_newest, open_windows
from cep.match.run.segments import iter_segment_matches
from cep.signature import SIGNATURES
from udfs.chunks import ChunkBuffer, Horizon, committed
from udfs.facts import FACTS, check_classes, class_questions, facts_sql, newest_of, read_facts
from udfs.shell import (PlannedResult, TableFunction, field, grouping_key,
                        key_runs, keyed, planned, quote, table_fields,
                        table_function)

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
        pattern, policy, max_matches: the compiled query's inputs.
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
    """

    pattern: str
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


def _ts_kind(data_type: Any, name: str) -> tuple[str, str]:
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
        self.columns: list[Any] = []
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



def analyze_call(*args: Any, **kwargs: Any) -> PlannedResult:
    """The analysis of one call (see the module docstring)."""
    from pyspark.sql.types import (ArrayType, IntegerType, IntegralType, LongType, StringType,
                                   StructField, StructType)

    err = MatchSeqArgumentError
    signature = SIGNATURES["match_seq"]
    call = signature.bind(args, kwargs, err)
    given = signature.values(call, err)
    text, chosen_policy = given["pattern"], given["policy"]
    limit, chunk, allowed = given["max_matches"], given["chunk_rows"], given["allow_absent"]
    events = call.get("events")
    fields = table_fields(events, "events", err)
    ts_f = field(fields, given["ts_col"], "ts_col", err)
    type_f = field(fields, given["type_col"], "type_col", err)
    id_f = field(fields, given["id_col"], "id_col", err)
    key_name = given["key_col"]
    key_f = field(fields, key_name, "key_col", err) if key_name else None
    if not isinstance(id_f.dataType, IntegralType):
        raise err(f"id_col {id_f.name!r} must be an integer column, found "
                  f"{id_f.dataType.simpleString()}")
    ts_kind, ts_sql = _ts_kind(ts_f.dataType, ts_f.name)
    reserved = {ts_f.name.lower(), type_f.name.lower(), id_f.name.lower()}
    data_columns = [f.name for f in events.dataType.fields if f.name.lower() not in reserved]
    compiled = compile_query(text, policy=chosen_policy,
                             columns=[ts_f.name, type_f.name, id_f.name, *data_columns])
    # Column names as conditions resolve them: `a.ts` / `a.type` always mean the timestamp and
    # type columns (docs/semantics.md, decision 9), even when a data column is called ts/type.
    schema_names = {name.lower(): name for name in data_columns}
    schema_names.update({type_f.name.lower(): type_f.name, id_f.name.lower(): id_f.name,
                         "ts": ts_f.name, "type": type_f.name})
    attributes = tuple(a for a in compiled.attributes
                       if a.lower() not in {ts_f.name.lower(), id_f.name.lower()})

    classes = {e.alias: e.cls for e in pattern_events(parse_pattern(text).pattern)}
    # Class tests as the engine reads them: a DEFINE with a join variable ($x) contributes only
    # its variable-free conjuncts; the conjuncts with $x are checked by the engine on matches.
    defines = {cls: pred.condition for cls, pred in compiled.defines.items()}
    masks: dict[str, str] = {}
    for alias, conditions in compiled.pushdown.items():
        try:
            cls = classes[alias]
            parts = [render_condition(defines[cls], schema_names, ts_col=ts_f.name)
                     if cls in defines else class_test(type_f.name, cls)]
            parts += [render_condition(c, schema_names, ts_col=ts_f.name) for c in conditions]
        except (NotRenderable, KeyError):
            continue  # the engine evaluates this alias itself
        expr = " AND ".join(f"({p})" for p in parts)
        masks[alias] = f"coalesce({expr}, false)"
    id_sql = (quote(id_f.name) if isinstance(id_f.dataType, LongType)
              else f"CAST({quote(id_f.name)} AS BIGINT)")
    order = f"ORDER BY {ts_sql}, {id_sql}"
    window = f"OVER (PARTITION BY {quote(key_f.name)} {order})" if key_f else f"OVER ({order})"
    keep, positioned = keep_condition(compiled, masks, window)
    if positioned and keep is not None:
        # Two rows with the same (ts, id) have no order, so which one `lead`/`lag` sees is up to
        # Spark's sort: keep both, and the engine refuses them (CEP-MATCH-004) in every
        # physical order instead of answering from whichever order Spark chose (issue 46).
        same = " OR ".join(
            f"coalesce({fn}({ts_sql}, 1) {window} = {ts_sql} AND {fn}({id_sql}, 1) {window} "
            f"= {id_sql}, false)" for fn in ("lag", "lead"))
        keep = f"({keep}) OR {same}"

    if keep is not None:
        # A row with a NULL id or timestamp reaches the task, which refuses it (CEP-SQL-010)
        # whatever its type: a filter must not decide whether the input is an error (issue 47:
        # `lag` over a NULL timestamp dropped such a row and the call answered without it).
        keep = f"({keep}) OR {ts_sql} IS NULL OR {id_sql} IS NULL"

    selection = Selection(raw=positioned)
    selection.add("__id", id_sql, id_f.name)
    selection.add("__ts", ts_sql, ts_f.name)
    type_sql = (quote(type_f.name) if isinstance(type_f.dataType, StringType)
                else f"CAST({quote(type_f.name)} AS STRING)")
    selection.add("__type", type_sql, type_f.name)
    # Facts about the whole input (udfs.facts): every class the pattern reads must occur, and
    # a trailing NOT's time window closes by the newest event time of every key.
    checked = () if allowed else tuple(checked_classes(compiled.query))
    asked = class_questions(checked, type_sql)
    newest = needs_newest(compiled)
    if newest:
        asked["newest"] = ts_sql
    if asked:
        selection.add(FACTS, facts_sql(asked))
    for i, attr in enumerate(attributes):
        name = schema_names[attr.lower()]
        selection.add(f"__a{i}", quote(name), name)
    mask_aliases: list[str] = []
    for alias, mask in masks.items():
        # Under a window a mask is read as `lead(mask, 0)`: the window's own input then, so
        # Spark does not carry it through the shuffle a second time (BENCHMARKS.md).
        selection.add(f"__m{len(mask_aliases)}", f"lead({mask}, 0) {window}" if positioned
                      else mask)
        mask_aliases.append(alias)
    if keep is not None:
        selection.add(KEEP, keep)
    if positioned:
        selection.add(POS, f"row_number() {window}")
    if key_f is not None:
        selection.add("__key", quote(key_f.name), key_f.name)
    select = selection.columns

    out = [StructField(key_f.name, key_f.dataType)] if key_f is not None else []
    ts_type = LongType() if ts_kind == "number" else ts_f.dataType
    out += [StructField("match_id", LongType()), StructField("start_ts", ts_type),
            StructField("end_ts", ts_type), StructField("event_ids", ArrayType(LongType())),
            StructField("variables", ArrayType(StringType())),
            StructField("n_events", IntegerType())]
    key = key_f.name if key_f is not None else None
    # chunk_rows => 0: each partition collected whole, unsorted by Spark (the pre-streaming way)
    horizon = None if positioned or chunk == 0 else horizon_of(compiled)
    plan = CallPlan(text, chosen_policy, ts_kind, key, attributes, tuple(mask_aliases), limit,
                    keep is not None, positioned, selection.renames, horizon, chunk, checked,
                    newest)
    if positioned and key is not None:
        # The window already brings each key's rows into one task, sorted: asking Spark for a
        # partitioning too would shuffle every row twice (Spark cannot see that the two agree)
        # and a partition per key costs a Python call per key (measured: BENCHMARKS.md).
        return PlannedResult(schema=StructType(out), select=select, plan=plan)
    order = None
    if horizon is not None:  # rows sorted as the engine reads them: a task streams its keys
        order = ([quote(key_f.name)] if key_f is not None else []) + [ts_sql, id_sql]
    return keyed(StructType(out), select, plan, key, KEY_BUCKETS, order=order)


def horizon_of(compiled: Any) -> Horizon | None:
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


def keep_condition(compiled: Any, masks: dict[str, str], window: str
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


class MatchSeq(TableFunction):
    """The ``match_seq`` handler: one partition (a bucket of keys, a task's keys, or the whole
    stream)."""

    analyze = staticmethod(planned(analyze_call))
    _last_task: int | None = None

    def __init__(self, analyze_result: Any) -> None:
        super().__init__(analyze_result)
        self.second = False
        if self.plan.positioned and self.plan.key is not None:
            # Such a call asks Spark for no partitioning (its window groups the keys), so
            # Spark accepts a PARTITION BY clause, which would cut a task's keys apart: it shows
            # as a second handler in one task, as Spark makes one per partition.
            from pyspark import TaskContext

            task = TaskContext.get()
            attempt = task.taskAttemptId() if task is not None else None
            self.second = attempt is not None and attempt == MatchSeq._last_task
            MatchSeq._last_task = attempt

    def streamed(self) -> StreamedPartition | None:
        """Chunk by chunk when Spark sorts the partition (``plan.horizon``), else whole."""
        return None if self.plan.horizon is None else StreamedPartition(self.plan)

    def answer(self, plan: CallPlan, table: Any) -> Iterator[Any]:
        if self.second:
            raise MatchSeqArgumentError("write no PARTITION BY in the call: match_seq brings the "
                                        "rows of each key_col value together itself")
        return answer_table(plan, table)


class StreamedPartition:
    """One task's sorted partition matched chunk by chunk (:mod:`udfs.chunks`).

    The carried state between chunks is the open key's uncommitted rows and how many of its
    matches were already reported, so its ``match_id`` goes on counting.
    """

    def __init__(self, plan: CallPlan) -> None:
        self.plan = plan
        self.buffer = ChunkBuffer() if plan.chunk_rows is None else ChunkBuffer(plan.chunk_rows)
        self.reported = 0  # matches of the open key already emitted
        self.newest: int | None = None  # from the first rows (input_facts)
        self.checked = False

    def add(self, batch: Any) -> Iterator[Any]:
        """Take one record batch; the output tables of each chunk it completes."""
        if not self.checked and batch.num_rows:
            self.newest, self.checked = input_facts(self.plan, batch), True
        if self.plan.filtered:  # drop unbindable rows before they are held (no JVM shim)
            batch = batch.filter(batch.column(KEEP))
        size = self.buffer.rows
        for at in range(0, batch.num_rows, size):
            if self.buffer.add(batch.slice(at, size)):
                yield from self._flush(final=False)

    def finish(self) -> Iterator[Any]:
        """The output tables of what is left at the end of the partition."""
        return self._flush(final=True)

    def _flush(self, final: bool) -> Iterator[Any]:
        import numpy as np

        continues = self.buffer.tail is not None
        table = self.buffer.take()
        if table is None:
            return
        stream, keys, _ = event_stream(self.plan, table, presorted=True)
        starts = stream.segment_starts
        last = 0 if starts is None else len(starts) - 1
        first = 0 if starts is None else int(starts[-1])
        cut = len(stream) if final else committed(self.plan.horizon, stream.ts, first)
        offset = self.reported if continues else 0
        emitted = 0
        for _, segments, table_out in answer_stream(self.plan, stream, keys, cut=cut,
                                                    offset=offset, newest=self.newest):
            emitted += int(np.count_nonzero(segments == last))
            yield table_out
        self.reported = emitted + (offset if last == 0 else 0)
        if not final:
            self.buffer.carry(table, cut)


def input_facts(plan: CallPlan, table: Any) -> int | None:
    """Check the facts of the whole input on a task's first rows; the newest event time in
    the stream's unit when a trailing NOT needs it (else None).

    Raises:
        PatternSemanticError: CEP-PAT-219, a class of the pattern no event carries.
        MatchSeqArgumentError: a trailing NOT's time window and no facts (no JVM shim).
    """
    facts = read_facts(table)
    check_classes(_compiled(plan.pattern, plan.policy, plan.max_matches).query, plan.classes,
                  facts, table.column(dict(plan.renames).get("__type", "__type")))
    if not plan.newest:
        return None
    if facts is None:
        raise MatchSeqArgumentError(
            "a pattern that ends in NOT with a time window reports a match only once the "
            "newest event time of the whole input has closed its window, and this session "
            "cannot compute that time: start it with the CEP extension "
            "(spark.sql.extensions=cep.sql.CepExtensions, docs/setup.md) or end the pattern "
            "with a bound event")
    return int(micros(newest_of(table), plan.ts_kind)[0])


def closed(compiled: Any, chunk: Any, stream: Any, newest: int | None) -> Any:
    """``chunk`` without the matches whose trailing NOT's window is still open."""
    from dataclasses import replace

    still = open_windows(compiled, chunk.matches, stream, chunk.segments, newest)
    if not still.any():
        return chunk
    return replace(chunk, matches=closed_only(chunk.matches, ~still),
                   segments=chunk.segments[~still])


def answer_table(plan: CallPlan, table: Any) -> Iterator[Any]:
    """The output tables of one partition's selected columns (one per chunk of segments)."""

    newest = input_facts(plan, table) if table.num_rows else None
    stream, keys, groups = event_stream(plan, table)
    compiled = _compiled(plan.pattern, plan.policy, plan.max_matches)
    carry = (-1, 0)
    try:
        for chunk in iter_segment_matches(compiled, stream):
            chunk = closed(compiled, chunk, stream, newest)
            ids = chunk.match_ids()
            if groups is not None:  # segments are runs: number and limit matches per key
                ids, carry = key_match_ids(groups[chunk.segments], carry)
                if len(ids):
                    check_matches(compiled.limits, int(ids.max()))
            yield _output(plan, stream, keys, chunk, ids)
    except MatchLimitError as err:
        raise MatchLimitError(sql_advice(err.message)) from None


def answer_stream(plan: CallPlan, stream: Any, keys: Any, *, cut: int, offset: int,
                  newest: int | None = None) -> Iterator[tuple[Any, Any, Any]]:
    """The matches of a streamed chunk whose first event lies before ``cut``.

    Args:
        plan, stream, keys: as from :func:`event_stream` over the chunk.
        cut: the first uncommitted position (:func:`udfs.chunks.committed`).
        offset: matches of segment 0's key reported by earlier chunks: its ``match_id`` and
            its ``max_matches`` count go on from there.
        newest: from :func:`input_facts`.

    Yields:
        ``(match_id, segment, output table)`` per piece of segments.
    """
    import numpy as np

    compiled = _compiled(plan.pattern, plan.policy, plan.max_matches)
    try:
        for chunk in iter_segment_matches(compiled, stream):
            # match_id order is start order, so the committed matches are a prefix
            k = int(np.searchsorted(chunk.matches.starts, cut, side="left"))
            truncated = k < len(chunk.matches)
            if truncated:
                chunk = _head(chunk, k)
            chunk = closed(compiled, chunk, stream, newest)
            ids = chunk.match_ids()
            if offset:
                first_key = chunk.segments == 0
                ids[first_key] += offset
                if first_key.any():
                    check_matches(compiled.limits, int(ids[first_key].max()))
            if len(ids):
                yield ids, chunk.segments, _output(plan, stream, keys, chunk, ids)
            if truncated:  # the next pieces hold later segments: nothing committed there
                break
    except MatchLimitError as err:
        raise MatchLimitError(sql_advice(err.message)) from None


def _head(chunk: Any, k: int) -> Any:
    """The first ``k`` matches of a ``SegmentMatches``."""
    from dataclasses import replace

    m = chunk.matches
    offsets = m.offsets[:k + 1]
    end = int(offsets[-1])
    head = MatchArrays(m.starts[:k], m.ends[:k], offsets, m.positions[:end], m.variables[:end])
    return replace(chunk, matches=head, segments=chunk.segments[:k])


SQL_ADVICE = {
    "raise MatchLimits.max_matches": "raise the limit with the argument max_matches => N",
    "raise MatchLimits.max_partial_matches": "split the input (a narrower TABLE argument)",
    "raise MatchLimits.max_kleene_iterations": "split the input (a narrower TABLE argument)",
    "raise MatchLimits.max_bound_events": "split the input (a narrower TABLE argument)",
}
"""The core's advice names its Python settings; a SQL caller can only change the call."""


def sql_advice(message: str) -> str:
    """A limit error's message with the core's advice in the words of the SQL function.

    Example:
        >>> sql_advice("2 matches, more than max_matches=1; narrow the pattern or "
        ...            "raise MatchLimits.max_matches")
        '2 matches, more than max_matches=1; narrow the pattern or raise the limit with the argument max_matches => N'
    """
    for python, sql in SQL_ADVICE.items():
        message = message.replace(python, sql)
    return message


def micros(column: Any, ts_kind: str) -> Any:
    """A timestamp column as int64 microseconds (raw values for numbers), numpy."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if ts_kind == "date":
        days = pc.cast(column, pa.int32()).to_numpy(zero_copy_only=False)
        return days.astype(np.int64) * MICROS_PER_DAY
    if ts_kind in ("timestamp", "timestamp_ntz"):
        column = pc.cast(column, pa.timestamp("us", tz=column.type.tz))
    return pc.cast(column, pa.int64()).to_numpy(zero_copy_only=False).astype(np.int64)


def from_micros(values: Any, ts_kind: str) -> Any:
    """int64 microseconds (numpy) back to an Arrow column of the plan's timestamp type."""
    import numpy as np
    import pyarrow as pa

    if ts_kind == "date":
        return pa.array((values // MICROS_PER_DAY).astype(np.int32), pa.int32()).cast(pa.date32())
    if ts_kind == "timestamp":
        return pa.array(values, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    if ts_kind == "timestamp_ntz":
        return pa.array(values, pa.int64()).cast(pa.timestamp("us"))
    return pa.array(values, pa.int64())


def event_stream(plan: CallPlan, table: Any, *, presorted: bool = False
                 ) -> tuple[Any, Any, Any]:
    """One partition as a (segmented, with a key) EventStream, each segment's key, and when
    a segment is a run of a key (``plan.positioned``) the key's index for each segment.

    ``presorted``: Spark delivered the rows in the engine's order (the call's ``orderBy``) and
    :class:`StreamedPartition` has already dropped the unbindable rows, so stream positions are
    the table's rows."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if plan.renames:
        columns = {name: table.column(name) for name in table.column_names}
        columns.update((internal, table.column(name)) for internal, name in plan.renames)
        table = pa.table(columns)
    if plan.filtered and not presorted:  # rows no alias can bind (the JVM shim has dropped
        # them already, if loaded; a streamed partition drops them as each batch arrives)
        table = table.filter(table.column(KEEP))
    if table.column("__id").null_count or table.column("__ts").null_count:
        bad = pc.or_(pc.is_null(table.column("__id")), pc.is_null(table.column("__ts")))
        at = pc.index(bad, True).as_py()
        raise MatchSeqArgumentError(f"event with id {table.column('__id')[at].as_py()} has a NULL "
                                    "id or timestamp; filter such rows out of the TABLE argument")
    table = table.append_column("__us", pa.array(micros(table.column("__ts"), plan.ts_kind)))
    order = [("__us", "ascending", "at_end"), ("__id", "ascending", "at_end")]
    if plan.positioned:  # Spark's order, ties of (ts, id) included
        order = [(POS, "ascending", "at_end")]
    if plan.key is not None:
        order.insert(0, ("__key", "ascending", "at_end"))
    if not presorted:
        table = table.take(pc.sort_indices(table, sort_keys=order))
    n = table.num_rows
    starts, keys = None, None
    if plan.key is not None:
        key = table.column("__key").combine_chunks()
        if pa.types.is_dictionary(key.type):
            key = key.cast(key.type.value_type)
        key = grouping_key(key)  # -0.0 and 0.0, and all NaNs, are one key as in GROUP BY
        keys = key.slice(0, 0)  # a task whose rows all dropped out still has the key's type
    if plan.key is not None and n:
        starts = key_runs(key)
    groups = None
    if plan.positioned and n:  # every run of consecutive positions is a segment of its own
        key_starts = starts if starts is not None else np.zeros(1, dtype=np.int64)
        pos = table.column(POS).to_numpy(zero_copy_only=False).astype(np.int64)
        cuts = np.flatnonzero(np.diff(pos) != 1) + 1
        starts = np.union1d(key_starts, cuts).astype(np.int64)
        groups = np.searchsorted(key_starts, starts, side="right") - 1
    if plan.key is not None and n:
        keys = key.take(pa.array(starts))
    types = table.column("__type")
    attrs = {}
    for i, attr in enumerate(plan.attributes):
        array = table.column(f"__a{i}").to_numpy(zero_copy_only=False)
        attrs[attr] = array.astype(object) if array.dtype.kind in "US" else array
    masks = {alias: table.column(f"__m{j}").to_numpy(zero_copy_only=False).astype(bool)
             for j, alias in enumerate(plan.mask_aliases)}
    stream = EventStream(table.column("__id").to_numpy(zero_copy_only=False).astype(np.int64),
                         table.column("__us").to_numpy(zero_copy_only=False),
                         np.asarray(types.to_numpy(zero_copy_only=False), dtype=object),
                         attrs, masks, starts)
    return stream, keys, groups


def key_match_ids(groups: Any, carry: tuple[int, int]) -> tuple[Any, tuple[int, int]]:
    """``match_id`` of each match when a key's runs are separate segments: 1, 2, ... per key.

    Args:
        groups: the key (an index, non-decreasing) of each match of a chunk, numpy.
        carry: the key and last ``match_id`` of the chunk before (``(-1, 0)`` at first).

    Returns:
        The ids and the carry for the next chunk.

    Example:
        >>> import numpy as np
        >>> ids, carry = key_match_ids(np.array([0, 0, 1]), (-1, 0))
        >>> ids.tolist(), carry
        ([1, 2, 1], (1, 1))
        >>> key_match_ids(np.array([1, 2]), carry)[0].tolist()
        [2, 1]
    """
    import numpy as np

    first = np.searchsorted(groups, groups, side="left")
    ids = np.arange(1, len(groups) + 1, dtype=np.int64) - first
    ids[groups == carry[0]] += carry[1]
    return ids, ((int(groups[-1]), int(ids[-1])) if len(groups) else carry)


def _output(plan: CallPlan, stream: Any, keys: Any, chunk: Any, ids: Any) -> Any:
    """One chunk's matches as an Arrow table of the output schema."""
    import numpy as np
    import pyarrow as pa

    result = chunk.matches
    offsets = pa.array(result.offsets - result.offsets[0], pa.int32())
    columns = {}
    if plan.key is not None:
        columns[plan.key] = keys.take(pa.array(chunk.segments, pa.int64()))
    columns.update({
        "match_id": pa.array(ids, pa.int64()),
        "start_ts": from_micros(stream.ts[result.starts], plan.ts_kind),
        "end_ts": from_micros(stream.ts[result.ends], plan.ts_kind),
        "event_ids": pa.ListArray.from_arrays(offsets, pa.array(stream.ids[result.positions],
                                                                pa.int64())),
        "variables": pa.ListArray.from_arrays(offsets, pa.array(result.variables, pa.string())),
        "n_events": pa.array(np.diff(result.offsets).astype(np.int32)),
    })
    return pa.table(columns)


@lru_cache(maxsize=64)
def _compiled(pattern: str, policy: str | None, max_matches: int | None) -> Any:
    # Compiled once per Python worker (validated against the columns in analyze already):
    # parsing and compiling measured ~1.5 ms, more than matching a small partition.

    limits = MatchLimits() if max_matches is None else MatchLimits(max_matches=max_matches)
    return compile_query(pattern, policy=policy, limits=limits)


def match_seq_udtf() -> Any:
    """The Spark UDTF object of ``match_seq``."""
    return table_function(MatchSeq)
