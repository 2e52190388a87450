"""The arguments of every SQL function of the project, declared once.

Each function's arguments (name, SQL type, role in the call) live here and nowhere else:
``sql_ext.registry`` writes its signature text from them (what ``cep_functions()`` shows),
every adapter in ``udfs/`` binds a call with :meth:`Signature.bind` (the unknown-argument
error lists them, with a "did you mean"), and each function's argument table in docs/sql.md
is written from them, their ``shown`` defaults and ``doc`` sentences (``make docs-tables``,
which runs ``python -m cep.signature docs/sql.md``; ``tests/sql_ext/test_signatures.py``
checks the file holds exactly that). Adding an argument is one declaration here; the adapter
then reads it from the bound call.

The module is pure (no pyspark): it sits below both ``sql_ext`` and ``udfs``, which may not
import each other (DESIGN.md section 2). A bound value is whatever Spark passed (an
``AnalyzeArgument`` at analysis time); reading it is the adapter's business.

The one call convention (docs/sql.md): positionally ``f(<leading>..., [key_col,] TABLE(t))``,
the table last (Spark's parser rejects a comma right after ``ORDER BY``); every other argument
by name (``name => value``, any order, any case).

Example:
    >>> SIGNATURES["sketch_stats"].text()
    'sketch_stats(sketch TABLE)'
    >>> SIGNATURES["match_seq"].names()[:4]
    ('pattern', 'key_col', 'events', 'policy')
"""

from __future__ import annotations

import difflib
import re
import sys
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any


__all__ = ["Argument", "REQUIRED", "SIGNATURES", "Signature"]

LEADING, KEY, TABLE, NAMED = "leading", "key", "table", "named"


REQUIRED = object()
"""The default of an argument the call must give."""
SAME_ROW = "(the row above)"
"""The ``doc`` of an argument described together with the one declared before it."""


@dataclass(frozen=True)
class Argument:
    """One argument: its name, SQL type and role (``leading``: positional before the table;
    ``key``: ``key_col``, positional just before the table or named; ``table``: the TABLE
    argument, positional last; ``named``: by name only), and how its constant is checked:
    ``default`` (:data:`REQUIRED`, or the value an absent or NULL argument takes; None lets
    the engine choose), ``choices`` (the allowed values) and ``minimum`` (for integers)."""

    name: str
    sql_type: str
    role: str = NAMED
    default: Any = None
    choices: tuple[Any, ...] = ()
    minimum: int | None = None
    typed: bool = True
    """False: the engine checks the value (with its own code); only constness is checked."""
    shown: str = ""
    """How docs/sql.md shows the default (Markdown), e.g. ``none: the whole table is one
    stream``."""
    doc: str = ""
    """What the argument means (Markdown), the cell of its row in docs/sql.md; ``SAME_ROW``:
    described in the row of the argument declared just before it."""

    def read(self, arg: Any, error: type[Exception]) -> Any:
        """The checked value of this argument as Spark passed it (an ``AnalyzeArgument``, or
        None when absent).

        Example:
            >>> class Const:
            ...     isTable, isConstantExpression = False, True
            ...     def __init__(self, value): self.value = value
            >>> Argument("level", "INT", minimum=0, default=0).read(None, ValueError)
            0
            >>> Argument("mode", "STRING", choices=("a", "b")).read(Const("c"), ValueError)
            Traceback (most recent call last):
            ...
            ValueError: argument mode: expected one of 'a', 'b', found 'c'
        """
        if arg is None or (not arg.isTable and arg.isConstantExpression and arg.value is None):
            if self.default is REQUIRED:
                raise error(f"argument {self.name} is required")
            return self.default
        if arg.isTable or not arg.isConstantExpression:
            raise error(f"argument {self.name} must be a constant, found "
                        f"{'a TABLE argument' if arg.isTable else 'an expression'}")
        if not self.typed:
            return arg.value
        value = _typed(self, arg.value, error)
        if self.choices and value not in self.choices:
            raise error(f"argument {self.name}: expected one of "
                        f"{', '.join(map(repr, self.choices))}, found {value!r}")
        return value


def _typed(argument: Argument, value: Any, error: type[Exception]) -> Any:
    """``value`` as ``argument``'s SQL type says (a DOUBLE as float), or ``error``."""
    kind, name = argument.sql_type, argument.name
    if kind == "STRING":
        if not isinstance(value, str):
            raise error(f"argument {name}: expected a string, found {value!r}")
    elif kind in ("INT", "BIGINT"):
        low = argument.minimum
        if isinstance(value, bool) or not isinstance(value, int) or (low is not None
                                                                      and value < low):
            what = "an integer" if low is None else f"an integer >= {low}"
            raise error(f"argument {name}: expected {what}, found {value!r}")
    elif kind == "BOOLEAN":
        if not isinstance(value, bool):
            raise error(f"argument {name}: expected true or false, found {value!r}")
    elif kind == "DOUBLE":
        if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
            raise error(f"argument {name}: expected a number, found {value!r}")
        return float(value)
    return value


@dataclass(frozen=True)
class Signature:
    """The arguments of one SQL function, in the order the registry and docs list them.

    Args:
        function: the SQL name.
        arguments: leading ones first, then ``key_col`` (if the function has a key), the
            table, then the named ones.
        note: a remark the registry appends to the signature.
    """

    function: str
    arguments: tuple[Argument, ...]
    note: str = ""

    def __post_init__(self) -> None:
        documented = [a.doc != "" for a in self.arguments]
        if any(documented) and not all(documented) or self.arguments[0].doc == SAME_ROW:
            raise ValueError(f"{self.function}: describe every argument (doc=...) or none")

    @property
    def documented(self) -> bool:
        """Whether docs/sql.md has an argument table of this function."""
        return self.arguments[0].doc != ""

    def rows(self) -> list[tuple[tuple[str, ...], str, str]]:
        """The rows of the argument table: ``(names, default as shown, meaning)``."""
        rows: list[tuple[tuple[str, ...], str, str]] = []
        for a in self.arguments:
            if a.doc == SAME_ROW:
                names, shown, doc = rows[-1]
                rows[-1] = ((*names, a.name), shown, doc)
            else:
                rows.append(((a.name,), a.shown, a.doc))
        return rows

    def argument_table(self) -> str:
        """The argument table of docs/sql.md (Markdown, without a trailing newline).

        Example:
            >>> print(SIGNATURES["sketch_stats"].argument_table())
            | argument | default | meaning |
            |---|---|---|
            | `sketch` | required | `TABLE(<name>_nodes)`, or any query over it (`TABLE(SELECT * FROM <name>_nodes VERSION AS OF 3)`) |
        """
        lines = ["| argument | default | meaning |", "|---|---|---|"]
        for names, shown, doc in self.rows():
            lines.append(f"| {', '.join(f'`{n}`' for n in names)} | {shown} | {doc} |")
        return "\n".join(lines)

    def names(self) -> tuple[str, ...]:
        """Every argument name, in order."""
        return tuple(a.name for a in self.arguments)

    def _role(self, role: str) -> tuple[Argument, ...]:
        return tuple(a for a in self.arguments if a.role == role)

    def text(self) -> str:
        """The signature as the registry and ``cep_functions()`` show it.

        Example:
            >>> SIGNATURES["approx_match_seq"].text()
            'approx_match_seq(pattern STRING, sketch TABLE; named: policy STRING, mode STRING, level INT, resume STRING)'
        """
        parts = [f"{a.name} {a.sql_type}" for a in self._role(LEADING)]
        head = ", ".join(parts)
        for a in self._role(KEY):
            head += f"{', ' if head else ''}[{a.name} {a.sql_type},]"
        for a in self._role(TABLE):
            head += f"{' ' if head.endswith(',]') else ', ' if head else ''}{a.name} TABLE"
        named = ", ".join(f"{a.name} {a.sql_type}" for a in self._role(NAMED))
        body = head + (f"; named: {named}" if named else "")
        return f"{self.function}({body})" + (f": {self.note}" if self.note else "")

    def argument(self, name: str) -> Argument:
        """The declaration of argument ``name``."""
        return next(a for a in self.arguments if a.name == name)

    def values(self, bound: dict[str, Any], error: type[Exception]) -> dict[str, Any]:
        """Every constant argument of a bound call (:meth:`bind`), checked and with its
        default; the TABLE argument and BINARY ones stay as Spark passed them."""
        return {a.name: (bound.get(a.name) if a.role == TABLE or a.sql_type == "BINARY"
                         else a.read(bound.get(a.name), error)) for a in self.arguments}

    def usage(self) -> str:
        """The signature as docs/sql.md shows it, named arguments as ``name => TYPE``.

        Example:
            >>> SIGNATURES["approx_match_seq"].usage()
            'approx_match_seq(pattern STRING, sketch TABLE [, policy => STRING, mode => STRING, level => INT, resume => STRING])'
        """
        head = self.text().split(";")[0].split(": ")[0].rstrip(")")
        named = ", ".join(f"{a.name} => {a.sql_type}" for a in self._role(NAMED))
        return head + (f" [, {named}])" if named else ")")

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any],
             error: type[Exception]) -> dict[str, Any]:
        """The call's arguments by name (absent ones missing); ``error`` names the form to
        write for too many positional arguments, and lists the arguments (with the closest
        one) for an unknown name.

        Example:
            >>> sig = Signature("f", (Argument("pattern", "STRING", LEADING),
            ...                       Argument("key_col", "STRING", KEY),
            ...                       Argument("events", "TABLE", TABLE),
            ...                       Argument("policy", "STRING")))
            >>> sorted(sig.bind(("p", "k", "T"), {"POLICY": "x"}, ValueError).items())
            [('events', 'T'), ('key_col', 'k'), ('pattern', 'p'), ('policy', 'x')]
            >>> sorted(sig.bind(("p", "T"), {"key_col": "k"}, ValueError))
            ['events', 'key_col', 'pattern']
            >>> sig.bind(("p", "T"), {"polcy": "x"}, ValueError)
            Traceback (most recent call last):
            ...
            ValueError: f has no argument 'polcy' (did you mean 'policy'?); its arguments: pattern, key_col, events, policy
        """
        leading = tuple(a.name for a in self._role(LEADING))
        key = tuple(a.name for a in self._role(KEY))
        table = self._role(TABLE)[0].name
        positional = list(args)
        if len(positional) <= len(leading):
            names: tuple[str, ...] = leading[:len(positional)]
        elif len(positional) == len(leading) + 1:
            names = (*leading, table)
        elif key and len(positional) == len(leading) + 2:
            names = (*leading, *key, table)
        else:
            form = ", ".join((*leading, *(f"[{k}]" for k in key), "TABLE(...)"))
            raise error(f"{self.function} takes at most ({form}) positionally, found "
                        f"{len(positional)} arguments; pass the others by name (name => value)")
        values = dict(zip(names, positional))
        known = self.names()
        for name, value in kwargs.items():
            lowered = name.lower()
            if lowered not in known:
                close = difflib.get_close_matches(lowered, known, n=1, cutoff=0.6)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise error(f"{self.function} has no argument {name!r}{hint}; its arguments: "
                            f"{', '.join(known)}")
            if lowered in values:
                raise error(f"{self.function}: argument {lowered} is given twice")
            values[lowered] = value
        return values


def _lead(name: str, sql_type: str = "STRING", **checks: Any) -> Argument:
    return Argument(name, sql_type, LEADING, REQUIRED, **checks)


def _opt(name: str, sql_type: str, default: Any = None, **checks: Any) -> Argument:
    return Argument(name, sql_type, NAMED, default, **checks)


def _key(**docs: Any) -> Argument:
    return Argument("key_col", "STRING", KEY, **docs)


def _absent(**docs: Any) -> Argument:
    return _opt("allow_absent", "BOOLEAN", False, **docs)


def _table(name: str, **docs: Any) -> Argument:
    return Argument(name, "TABLE", TABLE, REQUIRED, **docs)


def _case_table() -> Argument:
    """The events of a process-mining function."""
    return _table("events", shown='required',
                  doc=('`TABLE(t)` or `TABLE(SELECT ...)`, the last positional argument; no '
                       '`PARTITION BY`'))


def _case_columns() -> tuple[Argument, ...]:
    """The column arguments of a process-mining function (one row in docs/sql.md)."""
    return (_opt("ts_col", "STRING", 'ts', shown='`ts`, `type`, `id`',
                 doc=('the timestamp (TIMESTAMP, TIMESTAMP_NTZ, DATE, or a number), activity '
                      'and event id (the tiebreak of equal timestamps) columns')),
            _opt("type_col", "STRING", 'type', doc=SAME_ROW),
            _opt("id_col", "STRING", 'id', doc=SAME_ROW))


def _predict_inputs(key_doc: str) -> tuple[Argument, ...]:
    """The subscription, key (with its meaning for the function) and events of
    ``predict_match`` and ``predict_model``."""
    return (
        _lead("subscription", typed=False, shown='required',
            doc=('a constant string: classes linked by `,` (the very next event) and `;` (a '
                 'later event), time conditions `@(t(X) - t(Y) < span)`, Boolean `&` / `\\|` '
                 'over sequences, `DEFINE`, join variables `attr = $x` or `WHERE [attr]` '
                 '(predict.md section 1)')),
        _key(shown='none: the whole table is one stream', doc=key_doc),
        _table("events", shown='required',
            doc=('`TABLE(t)` or `TABLE(SELECT ...)`, the last positional argument; no '
                 '`PARTITION BY`')),
    )


def _predict_columns() -> tuple[Argument, ...]:
    """The event columns ``predict_match`` and ``predict_model`` read."""
    return (
        _opt("ts_col", "STRING", typed=False, shown="`'ts'`",
            doc=('TIMESTAMP (TIMESTAMP_NTZ and DATE are read as UTC), or a number: time '
                 'conditions are then in its raw units (`@(t(F3) - t(F1) < 300)`)')),
        _opt("id_col", "STRING", typed=False, shown="`'id'` when the table has it",
            doc=("the event id, any type: it orders ties in `ts` and comes back in `'events'` "
                 'output; without an id column ties keep the order Spark delivers them in')),
        _opt("type_col", "STRING", typed=False, shown="`'type'` when the table has it",
            doc=('the class of an event for classes without `DEFINE` (and what `type` in a '
                 'condition reads); not read otherwise')),
    )


SIGNATURES: dict[str, Signature] = {s.function: s for s in (
    Signature("match_seq", (
        _lead("pattern", shown='required',
            doc='a constant string: `PATTERN ... [DEFINE ...] [WHERE ...] [WITHIN ...]`'),
        _key(shown='none: the whole table is one stream',
            doc=('the key column (a user, a case, a machine): each key is matched on its own, '
                 'and every output row carries the key')),
        _table("events", shown='required',
            doc=('`TABLE(t)` or `TABLE(SELECT ...)`, the last positional argument; no '
                 '`PARTITION BY` (the function partitions the table itself)')),
        _opt("policy", "STRING", shown="the pattern's, else `skip-till-next-match`",
            doc=('`strict-contiguity`, `skip-till-next-match`, `skip-till-any-match`, '
                 "`skip-till-any-match-grouped` (FAEM's grouped Kleene closures: one match per "
                 'set of single events, each closure holding every event that fits; '
                 '[semantics.md](semantics.md))')),
        _opt("ts_col", "STRING", 'ts', shown='`ts`, `type`, `id`',
            doc=('the timestamp (TIMESTAMP, TIMESTAMP_NTZ, DATE, or a number for `UNITS` '
                 'windows), event type and event id (an integer) columns')),
        _opt("type_col", "STRING", 'type', doc=SAME_ROW),
        _opt("id_col", "STRING", 'id', doc=SAME_ROW),
        _opt("max_matches", "BIGINT", minimum=1, shown='5,000,000',
            doc=('per key; more raises `CEP-MATCH-001` naming the limit and this argument '
                 '(`raise the limit with the argument max_matches => N`)')),
        _opt("chunk_rows", "BIGINT", minimum=0, shown='1,048,576',
            doc=('new rows a task takes before it matches them (below, "Big keys"); `0` '
                 'collects each partition whole, the way before streaming')),
        _absent(shown='`false`',
            doc=('`true` answers a pattern one of whose classes no event of the input carries '
                 '(below, "Facts about the whole input"); by default that is `CEP-PAT-219`')),
        _opt("columns", "STRING", shown='none',
            doc=("columns of the events, comma-separated (`'type, amount'`): each becomes an "
                 'output column of its own name holding, per match, the ARRAY of its values '
                 'in the order of `event_ids`')),
    )),
    Signature("approx_match_seq", (
        _lead("pattern", typed=False, shown='required',
            doc=('a constant string: `PATTERN ...` with the constructs above; anything else '
                 '(conditions, `DEFINE`, Kleene closures, `,`, `[attr]`, `$x`, `SLIDE`) is a '
                 '`CEP-SKETCH-020..029` error pointing at the construct')),
        _table("sketch", shown='required',
            doc=('`TABLE(<name>_nodes)`, or any query over it, e.g. `TABLE(SELECT * FROM '
                 '<name>_nodes VERSION AS OF 3)`; no `PARTITION BY` (the function brings each '
                 "stream's rows together itself, in 16 buckets of the stream's hash)")),
        _opt("policy", "STRING", typed=False, shown="the pattern's, else `skip-till-next-match`",
            doc=('`strict-contiguity` (neighbouring units), `skip-till-next-match`, '
                 '`skip-till-any-match`')),
        _opt("mode", "STRING", typed=False, shown="`'exists'`",
            doc=("`'exists'`: one row per stream, matched or not; `'intervals'`: one row per "
                 'match')),
        _opt("level", "INT", typed=False, shown='0',
            doc=('the accuracy level: 0 walks down to the leaves; at level `L` nodes above `L` '
                 'are replaced by their children, so a unit is a node of at most `L` levels '
                 '(faster, coarser)')),
        _opt("resume", "STRING", typed=False, shown="`'every-start'`",
            doc=("where the next match of a stream may start. `'every-start'`: every unit that "
                 "starts a match gives its matches, so matches may overlap (the thesis's "
                 'section 2.3 example: `SEQ(A, B)` under skip-till-next gives both `(A2, B3)` '
                 "and `(A3, B3)`). `'after-match'`: the thesis's search (Baltus 2021, sections "
                 '4.3.1, 4.3.2): a match is saved and the search "continues starting from the '
                 'leaf that contains the last event"; of the sorted matches of a stream the '
                 'first is kept, and each next kept match is the first whose first unit is at '
                 "or after the last unit of the match kept before it (and after that match's "
                 "first unit). It only changes `mode => 'intervals'`: a stream with a match "
                 'keeps its first one')),
    )),
    Signature("sketch_stats", (
        _table("sketch", shown='required',
            doc=('`TABLE(<name>_nodes)`, or any query over it (`TABLE(SELECT * FROM '
                 '<name>_nodes VERSION AS OF 3)`)')),
    )),
    Signature("cet_trends", (
        _lead("pattern", shown='required',
            doc=('`PATTERN cls+ x[] WHERE ...` with single-event filters, `x[i].A op '
                 'f(x[i-1].B)` (`=, <>, <, <=, >, >=`, `f` linear), `[attr]`, `WITHIN w [SLIDE '
                 's]`; anything else is a `CEP-TREND-0NN` error with line, column and caret')),
        _key(shown='none: the whole table is one stream',
            doc='the key column; it comes back first in the output with its own name and type'),
        _table("events", shown='required',
            doc=('`TABLE(t)` or `TABLE(SELECT ...)`, the last positional argument; no '
                 "`PARTITION BY` (the function brings each key's rows together itself, in 16 "
                 "buckets of the key's hash)")),
        _opt("output", "STRING", typed=False, shown="`'trends'`",
            doc=("`'trends'`: one row per trend; `'count'`: one row per window with the number "
                 'of trends')),
        _opt("max_trends", "BIGINT", typed=False, shown='1,000,000',
            doc=('the most trends one key may have; more is `CEP-TREND-020` before any trend is '
                 "listed (ask for `'count'`)")),
        _opt("ts_col", "STRING", 'ts', shown="`'ts'`, `'id'`",
            doc=('timestamp (TIMESTAMP, TIMESTAMP_NTZ or DATE with time units, or a number with '
                 '`UNITS`; TIMESTAMP_NTZ and DATE are read as UTC whatever the session time '
                 'zone, so a day is always 24 hours and `window_start` is their wall clock as a '
                 'UTC TIMESTAMP) and integer event id')),
        _opt("id_col", "STRING", 'id', doc=SAME_ROW),
        _opt("type_col", "STRING", shown='none',
            doc=('without it every row is an event of the class and `x.type` is an ordinary '
                 'column; with it rows whose type differs from the class are not events and '
                 '`x.type` is that column')),
        _opt("window_col", "STRING", shown='none',
            doc=("a `STRUCT<start, end>` column made by Spark's `window(ts, w, s)` in the TABLE "
                 'query: the windows are then spread over Spark partitions too, each (key, '
                 "window) is one window, and the pattern's `WITHIN`/`SLIDE` are not used to cut "
                 '(see the example below)')),
        _opt("completeness", "STRING", typed=False, shown="`'ends'`",
            doc=("which trends are complete: `'ends'`, extendable at neither "
                 'end (Mei et al., section 3, Definition 1: the default); '
                 "`'maximal'`, not a sub-sequence of any other trend (the "
                 'paper\'s line 43; docs/trends.md, "Paper vs ours")')),
        _absent(shown='`false`',
            doc=('with `type_col` and a class without `DEFINE`, a class that no event of the '
                 'input carries is `CEP-PAT-219` with "did you mean" (as `match_seq`, "Facts '
                 'about the whole input"); `true` answers (no trend) instead')),
        _opt("columns", "STRING", shown='none',
            doc=("with `output => 'trends'`: columns of the events, comma-separated (`'type, "
                 "amount'`): each becomes an output column of its own name holding, per trend, "
                 'the ARRAY of its values in the order of `event_ids`')),
    )),
    Signature("match_prob", (
        _lead("pattern", typed=False, shown='required',
            doc=('a constant string: classes linked by `,` with quantifiers `+ * ? {n} {n,} '
                 '{n,m}`, optional `DEFINE x AS value IN (...)`, optional `WITHIN n EVENTS`')),
        _key(shown="`'stream'`",
            doc='the stream key column (any scalar type): one probabilistic stream per value'),
        _table("pstream", shown='required',
            doc=('`TABLE(t)` holding one or more streams, the last positional argument; write '
                 "no `PARTITION BY`: the function brings each stream's rows together itself (16 "
                 "buckets of the key's hash; Spark rejects an explicit `PARTITION BY` or `WITH "
                 'SINGLE PARTITION`)')),
        _opt("overlap", "STRING", typed=False, shown="`'single'`",
            doc=("how matches form groups: `'single'` (chains of overlapping matches) or "
                 "`'complete'` (matches that all overlap each other)")),
        _opt("threshold", "DOUBLE", typed=False, shown='`0.0`',
            doc=('matches below it are not reported and form no group, but their worlds still '
                 "count in a group's probability")),
        _opt("window", "INT", typed=False, shown="the pattern's `WITHIN n EVENTS`",
            doc=('the longest match in time points; one of the two is required, and two '
                 'different values are an error')),
        _opt("output", "STRING", typed=False, shown="`'groups'`",
            doc="`'groups'` or `'matches'`"),
        _opt("t_col", "STRING", typed=False, shown="`'t'`",
            doc='the time point (an integer type; consecutive, no gaps)'),
        _opt("value_col", "STRING", typed=False, shown="`'value'`, `'p'`",
            doc=('long layout: the value (STRING) and its probability (DOUBLE, or any number: '
                 'DECIMAL and FLOAT are read as DOUBLE)')),
        _opt("p_col", "STRING", typed=False, doc=SAME_ROW),
        _opt("probs_col", "STRING", typed=False, shown="`'probs'`",
            doc=('wide layout: the `MAP<STRING, DOUBLE>` (or FLOAT / DECIMAL values) of value '
                 'to probability')),
        _opt("tolerance", "DOUBLE", typed=False, shown='`1e-6`',
            doc="how far a time point's probabilities may sum from 1"),
        _opt("transducer_mode", "STRING", typed=False, shown="`'window'`",
            doc=("`'window'`: our window-aware transducer, which counts only matches of at most "
                 "`window` time points; `'paper'`: Sugiura et al.'s transducer exactly (`|p| + "
                 '1` states, no window; docs/prob.md, "Paper vs ours")')),
        _absent(shown='`false`',
            doc=('a class without `DEFINE` that is no value of any row (long layout) or key of '
                 'any map (wide layout) is `CEP-PAT-219` with "did you mean" (as `match_seq`, '
                 '"Facts about the whole input"); `true` answers instead')),
    )),
    Signature("predict_match", (
        *_predict_inputs(
            'the key column: the function partitions the table itself (into 64 buckets of '
            "the key's hash; each key is still answered, and without a model trained, on "
            'its own) and every output row carries the key with its own name and type'),
        _opt("lookahead", "INT", typed=False, shown='required',
            doc='`n`: how many future events the prediction looks at, an integer in [1, 100000]'),
        _opt("threshold", "DOUBLE", typed=False, shown='`0.0`',
            doc='only rows whose probability is at least this are returned'),
        _opt("model", "BINARY", typed=False, shown='none',
            doc=('a BINARY blob of `cep.predict.Model.to_bytes()`, usually a scalar subquery '
                 'over a Delta table of models: `model => (SELECT model FROM models VERSION AS '
                 "OF 3 WHERE name = 'heat')`. Without it each stream's chain is trained on that "
                 "stream's own events")),
        _opt("output", "STRING", typed=False, shown="`'keys'`",
            doc=("`'keys'`: one row per key and instance, its state after its last event; "
                 "`'events'`: one row per event, the state after it")),
        _opt("combine", "STRING", typed=False, shown="`'independent'`",
            doc=("how `&` / `\\|` combine their parts' probabilities: `'independent'` (`1 - (1 - "
                 "p)(1 - q)` for `\\|`) or `'sum'` (the paper's `min(1, p + q)`); `&` is the "
                 'product either way (predict.md section 5)')),
        _opt("smoothing", "DOUBLE", typed=False, shown='`0.0`',
            doc=("pseudo-count weight that mixes the training events' symbol frequencies into "
                 'every row of the chain')),
        *_predict_columns(),
        _opt("definition", "STRING", typed=False, shown="`'first_passage'`",
            doc=("`'first_passage'`: the probability that the subscription first matches within "
                 "`lookahead` events (ours, exact); `'paper'`: P-ToPSS's α(n)/β(n) (n-step "
                 'occupancy and its sum, training normalised by arrivals; docs/predict.md, '
                 '"Paper vs ours")')),
        _absent(shown='`false`',
            doc=('without `model`, a class without `DEFINE` that no event of the input carries '
                 'is `CEP-PAT-219` with "did you mean" (as `match_seq`, "Facts about the whole '
                 'input": trained on this input, every probability would be 0 without a word); '
                 '`true` answers instead. With a `model` nothing is checked: the model may know '
                 'classes this input has not seen yet')),
    )),
    Signature("predict_model", (
        *_predict_inputs(
            'the key column: each key is a stream of its own (its events in the order of '
            '`ts_col`, then `id_col`), and one model is trained over all of them together, '
            'as the prediction job trains one over all its keys'),
        *_predict_columns(),
        _opt("chunk_rows", "BIGINT", minimum=1, shown='1,048,576',
            doc=('rows the task gathers before it trains the keys that have ended in them '
                 '(memory: a chunk plus the largest key)')),
        _absent(shown='`false`',
            doc=('a class without `DEFINE` that no event of the input carries is `CEP-PAT-219` '
                 'with "did you mean" (a model that never saw its class predicts 0 for every '
                 'stream); `true` trains anyway')),
    )),
    Signature("follows", (
        _key(shown='none: the whole table is one case',
            doc='the case column: pairs are taken inside each case, in the order of `ts_col`, then `id_col`'),
        _case_table(),
        _opt("relation", "STRING", 'direct', choices=("direct", "eventual"), shown='`direct`',
            doc=('`direct`: each event and the next one of its case (the directly-follows '
                 'relation); `eventual`: each event and every later one of its case')),
        _opt("within", "STRING", shown='none',
            doc=("with `relation => 'eventual'`: only pairs at most this far apart "
                 "(`'30 MINUTES'`, `'2 DAYS'`; `'n UNITS'` for a numeric `ts_col`)")),
        _opt("output", "STRING", 'graph', choices=("graph", "pairs"), shown='`graph`',
            doc=('`graph`: one row per (source, target) with counts and durations; `pairs`: '
                 'one row per pair of events, with their ids')),
        *_case_columns(),
    )),
    Signature("variants", (
        _key(shown='none: the whole table is one case',
            doc='the case column: each case is one sequence of activities'),
        _case_table(),
        *_case_columns(),
    )),
    Signature("case_stats", (
        _key(shown='none: the whole table is one case',
            doc='the case column: one output row per case'),
        _case_table(),
        *_case_columns(),
    )),
    Signature("cep_match_recognize", (
        _lead("plan"),
        _table("events"),
    ), note="written by the MATCH_RECOGNIZE rewriter, not by hand"),
)}
"""Every table function's arguments, by SQL name (``cep_functions()`` takes none). An
argument with ``typed=False`` is checked by its engine (with the engine's error code)."""

_TABLE = re.compile(r"^\| argument \| default \| meaning \|\n\|---\|---\|---\|\n(?:\|.*\n?)*",
                    re.M)


def write_tables(markdown: str) -> str:
    r"""``markdown`` (docs/sql.md) with each documented function's argument table written
    from its declaration: the first table after the function's ``## `name``` heading.

    Example:
        >>> doc = "## `sketch_stats`: x\n\n| argument | default | meaning |\n|---|---|---|\n| old |\n"
        >>> write_tables(doc).splitlines()[-1].startswith("| `sketch` | required |")
        True
    """
    for name, sig in SIGNATURES.items():
        if not sig.documented:
            continue
        heading = re.search(rf"^## `{re.escape(name)}`.*$", markdown, re.M)
        if heading is None:
            continue
        table = _TABLE.search(markdown, heading.end())
        if table is None:
            raise ValueError(f"section ## `{name}` has no argument table")
        ending = "\n" if table.group(0).endswith("\n") else ""
        markdown = (markdown[:table.start()] + sig.argument_table() + ending
                    + markdown[table.end():])
    return markdown


if __name__ == "__main__":  # python -m cep.signature docs/sql.md (make docs-tables)
    for target in map(Path, sys.argv[1:]):
        target.write_text(write_tables(target.read_text()))

