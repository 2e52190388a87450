"""The matcher: runs a compiled row pattern over one partition's rows, Pike VM style.

Input is one boolean per row and primary variable (``accepts[i, v]``: row ``i`` satisfies
variable ``v``'s DEFINE condition; a variable without DEFINE is always true), computed before
the matcher runs, vectorised. The matcher advances all alive threads together, one row at a
time, in preference order; two threads at the same instruction after the same row have the
same future, so the less preferred one is dropped (the standard's preference makes the first
one win). Work per row is bounded by the program's size: no exponential backtracking, and
``A+ B+`` over 10^5 rows of one value is one pass (trinodb/trino#18036 backtracks).

DEFINE conditions that read the match so far (``B.price > A.price``, ``avg(A.price)``:
:mod:`cep.recognize.condition`) are asked per thread (:class:`Reads`), and then two threads at
one instruction differ unless their histories are equal: they are kept apart by history, and
each start row is tried in turn (the standard's order) instead of all starts at once, since a
later start's threads could no longer merge into an earlier one's. That work is not bounded
by the program's size (each alive history is a thread); CEP-MR-004 bounds it.

Which match is found follows SQL:2016: the earliest starting row that has a match, and for
that row the match first in preference order; after it, ``AFTER MATCH SKIP`` says where the
next search starts. One convention the standard leaves to implementations: an iteration of an
unbounded quantifier that matches no row ends the path (docs/match-recognize.md, "Empty
iterations"); the oracle :mod:`cep.oracles.row_pattern_oracle` follows the same rule.

When no DEFINE reads the match and there is no WITHIN, the Pike VM's steps are remembered as a
lazily built DFA (:mod:`cep.recognize.dfa`, ``engine="auto"``): the same matches at one
dictionary lookup per row. The Pike VM stays the reference (``engine="pike"``).

Example:
    >>> import numpy as np
    >>> from cep.recognize.parser import parse_row_pattern
    >>> from cep.recognize.program import compile_pattern
    >>> prog = compile_pattern(parse_row_pattern("A+ B"))
    >>> accepts = np.array([[1, 0], [1, 0], [1, 1], [0, 1], [1, 0]], dtype=bool)
    >>> [(m.start, m.labels) for m in find_matches(prog, accepts)]
    [(0, (0, 0, 0, 1))]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from cep.recognize.errors import (E_SKIP_LOOPS, E_SKIP_TARGET_EMPTY, E_TOO_MANY_THREADS,
                                  E_TOO_MUCH_OUTPUT, RowPatternLimitError,
                                  RowPatternSemanticError)
from cep.recognize.closure import closure
from cep.recognize.dfa import DfaFull, LazyDfa
from cep.recognize.program import CONSUME, JMP, MATCH, SPLIT, Program

__all__ = ["BULK_ROWS", "ENGINES", "MAX_MATCHES", "MAX_THREADS", "MAX_THREAD_STEPS", "Match", "MatchColumns",
           "Reads", "Skip", "Within", "find_matches", "match_columns", "match_masks", "row_masks"]

ENGINES = ("auto", "pike")
"""``auto``: the determinised matcher (:mod:`cep.recognize.dfa`) when no DEFINE reads the
match and there is no WITHIN, else the Pike VM; ``pike``: always the Pike VM, the reference."""

BULK_ROWS = 4096
"""From this many rows on, SKIP PAST LAST ROW reads the determinised matcher's matches back in
bulk (:meth:`cep.recognize.dfa.LazyDfa.scan_past_last`): over 10^6 rows of v_shape 0.40
against 0.47 us a row, but over partitions of 1,000 rows (price_down) 0.31 against 0.23, the
numpy steps' fixed cost outweighing the walks they replace."""

MAX_MATCHES = 10_000_000
"""Most matches one partition may produce (CEP-MR-005 beyond)."""


@dataclass(frozen=True)
class Skip:
    """Where the search resumes after a match (``AFTER MATCH SKIP``).

    Attributes:
        mode: ``past_last`` (the default), ``next_row``, ``first`` or ``last``.
        targets: for ``first``/``last``: the primary variables' indexes (a SUBSET's union).
        name: the variable or SUBSET name as written, for messages.
        span: where the clause is in the statement, for messages.
    """

    mode: str = "past_last"
    targets: frozenset[int] = frozenset()
    name: str = ""
    span: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class Within:
    """Our WITHIN extension: ``times[last] - times[first] < span`` for every match.

    ``times`` holds one integer per row (microseconds, days or the ORDER BY value), ascending
    within a partition, None for NULL. Threads that started at different rows then have
    different futures, so the matcher keeps one per (instruction, first row), at most
    :data:`MAX_THREADS` at once (CEP-MR-004).
    """

    times: tuple[int | None, ...]
    span: int


@dataclass(frozen=True)
class Reads:
    """DEFINE conditions that read the match so far, bound to one partition.

    Attributes:
        mask: bit ``v`` set when variable ``v``'s condition is asked per thread.
        ask: ``(v, row, history) -> bool``; ``history`` is the thread's chain of nodes
            ``(row, variable, excluded, previous, memo)`` (None: nothing matched yet), and
            ``memo`` a dict the condition may cache running summaries in.
        number: a one-item list the matcher sets to the number the match being tried will
            get, before each try (MATCH_NUMBER() in DEFINE); None when no condition reads it.
    """

    mask: int
    ask: Callable[[int, int, Any], bool]
    number: list[int] | None = None


MAX_THREADS = 1_000_000
"""Most alive threads at one row (CEP-MR-004 beyond)."""

MAX_THREAD_STEPS = 50_000_000
"""Most thread steps in one partition when a DEFINE reads the match (CEP-MR-004 beyond):
about a minute of matching; start rows are then tried one at a time, and a pattern such as
``A+ B+`` whose B reads the match can cost cubic time in the partition's length."""


@dataclass(frozen=True)
class Match:
    """One match: ``start`` row, then one label and exclusion flag per matched row.

    The matched rows are ``start, start + 1, ..., start + len(labels) - 1``; an empty match
    has no labels and starts at the row where it was found.
    """

    number: int
    start: int
    labels: tuple[int, ...]
    excluded: tuple[bool, ...]

    @property
    def end(self) -> int:
        """The row after the last matched row."""
        return self.start + len(self.labels)


def find_matches(program: Program, accepts: Any, skip: Skip = Skip(), *, text: str = "",
                 max_matches: int = MAX_MATCHES, within: Within | None = None,
                 reads: Reads | None = None, engine: str = "auto") -> list[Match]:
    """Every match of ``program`` in one partition, in order, numbered from 1.

    Args:
        program: the compiled pattern.
        accepts: ``n x V`` booleans (numpy or nested sequences): row ``i`` may be variable ``v``.
        skip: ``AFTER MATCH SKIP``.
        text: the statement, for the position of skip errors.
        max_matches: CEP-MR-005 when one partition has more matches.
        within: our WITHIN extension: a match's last row is less than ``span`` after its
            first (``times``, one per row, None for NULL: such a row is in no match).
        reads: the conditions that read the match so far, asked per thread after
            ``accepts`` said yes.
        engine: one of :data:`ENGINES`; the matches are the same.

    Raises:
        RowPatternSemanticError: CEP-MR-203 when the skip would restart at the match's first
            row, CEP-MR-204 when its variable matched no row (the standard's errors).
    """
    return match_masks(program, row_masks(accepts), skip, text=text, max_matches=max_matches,
                       within=within, reads=reads, engine=engine)


def match_masks(program: Program, rows: list[int], skip: Skip = Skip(), *, text: str = "",
                max_matches: int = MAX_MATCHES, within: Within | None = None,
                reads: Reads | None = None, engine: str = "auto") -> list[Match]:
    """:func:`find_matches` over rows given as :func:`row_masks` integers."""
    found = match_columns(program, rows, skip, text=text, max_matches=max_matches,
                          within=within, reads=reads, engine=engine)
    out: list[Match] = []
    at = 0
    for number, (start, length) in enumerate(zip(found.starts, found.lengths), 1):
        out.append(Match(number, start, tuple(found.labels[at:at + length]),
                         tuple(found.excluded[at:at + length])))
        at += length
    return out


@dataclass(frozen=True)
class MatchColumns:
    """Every match of a partition as columns (what the SQL layer turns into rows).

    Attributes:
        starts: the first row of each match.
        lengths: how many rows each match maps (0 for an empty match).
        labels: every match's labels, one after the other.
        excluded: the exclusion flag of each label.
    """

    starts: list[int]
    lengths: list[int]
    labels: list[int]
    excluded: list[bool]


def match_columns(program: Program, rows: list[int], skip: Skip = Skip(), *, text: str = "",
                  max_matches: int = MAX_MATCHES, within: Within | None = None,
                  reads: Reads | None = None, engine: str = "auto") -> MatchColumns:
    """:func:`match_masks` as columns, without one object per match.

    Example:
        >>> from cep.recognize.parser import parse_row_pattern
        >>> from cep.recognize.program import compile_pattern
        >>> program = compile_pattern(parse_row_pattern("A B?"))
        >>> match_columns(program, [1, 2, 3, 1])
        MatchColumns(starts=[0, 2, 3], lengths=[2, 1, 1], labels=[0, 1, 0, 0], \
excluded=[False, False, False, False])
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, not {engine!r}")
    dfa = _dfa(program) if engine == "auto" and within is None and reads is None else None
    n = len(rows)
    out = MatchColumns([], [], [], [])

    def keep(start: int, labels: list[int], excluded: list[bool]) -> int:
        """Records a match; returns where the next search starts."""
        if len(out.starts) >= max_matches:
            raise RowPatternLimitError(E_TOO_MUCH_OUTPUT, f"a partition has more than "
                                       f"{max_matches:,} matches", text, 0, 0)
        out.starts.append(start)
        out.lengths.append(len(labels))
        out.labels.extend(labels)
        out.excluded.extend(excluded)
        return _next_start(start, labels, len(out.starts), skip, text)

    pos = 0
    budget = [MAX_THREAD_STEPS]
    while dfa is not None:
        try:
            if skip.mode == "past_last" and n - pos >= BULK_ROWS:
                _extend(out, dfa.scan_past_last(rows, pos), max_matches, text)
            else:
                dfa.scan(rows, pos, keep)
            return out
        except DfaFull as full:
            if full.found is not None:
                _extend(out, full.found, max_matches, text)
            dfa.flush()  # this search runs in the Pike VM; later ones remember afresh
            found = _labels(_search(program, rows, full.pos, within, text, reads, budget))
            if found is None:
                return out
            pos = keep(*found)
    # Starts are tried one at a time when conditions read the match: a row that no first
    # variable of the pattern accepts (by its mask) starts no match, and is passed over here.
    firsts = _first_variables(program) if reads is not None else None
    entries: dict[tuple[bool, bool], list[int]] | None = {} if reads is not None else None
    while pos < n:
        if firsts is not None:
            while pos < n and not rows[pos] & firsts:
                pos += 1
            if pos == n:
                break
        if reads is not None and reads.number is not None:
            reads.number[0] = len(out.starts) + 1
        found = _labels(_search(program, rows, pos, within, text, reads, budget, entries))
        if found is None:
            if reads is None:
                break  # the search tried every later start too
            pos += 1
            continue
        pos = keep(*found)
    return out


def _extend(out: MatchColumns, found: tuple[Any, ...], max_matches: int, text: str) -> None:
    """Appends the arrays of :meth:`LazyDfa.scan_past_last` to ``out``."""
    starts, lengths, labels, excluded = found
    out.starts.extend(starts.tolist())
    out.lengths.extend(lengths.tolist())
    out.labels.extend(labels.tolist())
    out.excluded.extend(excluded.tolist())
    if len(out.starts) > max_matches:
        raise RowPatternLimitError(E_TOO_MUCH_OUTPUT, f"a partition has more than "
                                   f"{max_matches:,} matches", text, 0, 0)


def _labels(found: tuple[int, int, Any] | None) -> tuple[int, list[int], list[bool]] | None:
    """A Pike VM search's ``(start, end, history)`` as ``(start, labels, excluded)``."""
    if found is None:
        return None
    start, _, history = found
    labels: list[int] = []
    excluded: list[bool] = []
    while history is not None:
        labels.append(history[1])
        excluded.append(history[2])
        history = history[3]
    labels.reverse()
    excluded.reverse()
    return start, labels, excluded


_DFAS: dict[Program, LazyDfa] = {}


def _dfa(program: Program) -> LazyDfa:
    """The determinised matcher of ``program``, kept while the process runs (a few recent
    programs: a UDTF worker sees one statement's program for every partition)."""
    dfa = _DFAS.get(program)
    if dfa is None:
        if len(_DFAS) >= 16:
            _DFAS.pop(next(iter(_DFAS)))
        dfa = _DFAS[program] = LazyDfa(program)
    return dfa


def _first_variables(program: Program) -> int | None:
    """The mask of the variables a match's first row can be mapped to; None when the pattern
    can match no row (every row then starts an empty match at least)."""
    ops, arg1, arg2 = program.ops, program.arg1, program.arg2
    mask = 0
    seen: set[int] = set()
    stack = [0]
    while stack:
        pc = stack.pop()
        if pc in seen:
            continue
        seen.add(pc)
        op = ops[pc]
        if op == CONSUME:
            mask |= 1 << arg1[pc]
        elif op == MATCH:
            return None
        elif op == JMP:
            stack.append(arg1[pc])
        elif op == SPLIT:
            stack.extend((arg1[pc], arg2[pc]))
        else:  # MARK, CHECK, anchors: followed as if they let every path through
            stack.append(pc + 1)
    return mask


def row_masks(accepts: Any) -> list[int]:
    """One integer per row whose bit ``v`` says whether the row may be variable ``v``.

    Example:
        >>> row_masks([[True, False], [True, True]])
        [1, 3]
    """
    import numpy as np

    matrix = np.asarray(accepts, dtype=bool)
    if matrix.ndim != 2:
        matrix = matrix.reshape(len(matrix), -1)
    if matrix.shape[1] <= 62:
        weights = np.left_shift(np.int64(1), np.arange(matrix.shape[1], dtype=np.int64))
        return (matrix.astype(np.int64) @ weights).tolist()
    return [sum(1 << v for v in np.flatnonzero(row).tolist()) for row in matrix]


def _next_start(start: int, labels: list[int], number: int, skip: Skip, text: str) -> int:
    """Where the search resumes after match ``number`` (``labels`` from row ``start``)."""
    if not labels:  # an empty match: the search moves on by one row
        return start + 1
    if skip.mode == "past_last":
        return start + len(labels)
    if skip.mode == "next_row":
        return start + 1
    hits = [start + i for i, v in enumerate(labels) if v in skip.targets]
    if not hits:
        raise RowPatternSemanticError(
            E_SKIP_TARGET_EMPTY, f"AFTER MATCH SKIP TO {skip.name}: match {number} maps "
            f"no row to {skip.name}", text, *skip.span)
    target = hits[0] if skip.mode == "first" else hits[-1]
    if target == start:
        raise RowPatternSemanticError(
            E_SKIP_LOOPS, f"AFTER MATCH SKIP TO {skip.name} would start the next match at the "
            f"first row of match {number} again (an endless loop)", text, *skip.span)
    return target


def _search(program: Program, rows: list[int], pos: int, within: Within | None = None,
            text: str = "", reads: Reads | None = None, budget: list[int] | None = None,
            entries: dict[tuple[bool, bool], list[int]] | None = None
            ) -> tuple[int, int, Any] | None:
    """The leftmost, then most preferred match starting at or after ``pos``.

    A thread is ``(pc, history, start)``; ``history`` is a linked list
    ``(row, variable, excluded, previous)`` shared between threads, so advancing costs O(1).
    Two threads at one instruction after one row have the same future, so the first (the
    preferred) one is kept; under WITHIN only if they also started at the same row, and with
    conditions that read the match only if their histories are equal too (histories made at
    one row are shared by content, so equal histories are one object). With such conditions
    only ``pos`` is tried as the start; the caller tries the next row if nothing matched.
    """
    # One function on purpose: this is the matcher's per-row loop, and its state lives in fast
    # locals. Moving the per-row thread loop into a helper (one call per row) measured 6-13 %
    # slower (2.5-4.3 us a row over 10^5 rows of A+ B, A, A+ B+).
    ops, arg1, arg2 = program.ops, program.arg1, program.arg2
    n = len(rows)
    times = within.times if within is not None else None
    # How threads are told apart: 0 by instruction, 1 and first row, 2 and history.
    mode = 2 if reads is not None else (1 if times is not None else 0)
    asked = reads.mask if reads is not None else 0

    add = closure(program, n, mode)

    threads: list = []
    if entries is None:
        add(threads, set(), 0, None, pos, pos)
    else:
        # Every start's first threads are the same instructions (nothing matched yet); only
        # the anchors tell the partition's first row and its end apart.
        where = (pos == 0, pos == n)
        if where not in entries:
            add(threads, set(), 0, None, pos, pos)
            entries[where] = [pc for pc, _, _ in threads]
        threads = [(pc, None, pos) for pc in entries[where]]
    matched = None
    i = pos
    while threads:
        following: list = []
        seen: set = set()
        if mode == 2:
            made: dict = {}  # histories made at this row, by content (keeps their ids unique)
            verdicts: dict = {}
        row = rows[i] if i < n else None
        if row is not None and times is not None:
            now = times[i]
        for pc, history, start in threads:
            if ops[pc] == MATCH:
                matched = (start, i, history)
                break  # every thread after this one is less preferred
            if row is not None and row >> arg1[pc] & 1:
                if times is not None and (now is None or times[start] is None
                                          or now - times[start] >= within.span):
                    continue
                var = arg1[pc]
                if mode == 2:
                    if asked >> var & 1:
                        verdict = verdicts.get((var, id(history)))
                        if verdict is None:
                            verdict = verdicts[var, id(history)] = reads.ask(var, i, history)
                        if not verdict:
                            continue
                    shape = (var, arg2[pc], id(history))
                    node = made.get(shape)
                    if node is None:
                        node = made[shape] = (i, var, bool(arg2[pc]), history, {})
                    add(following, seen, pc + 1, node, start, i + 1)
                    continue
                add(following, seen, pc + 1, (i, var, bool(arg2[pc]), history), start,
                    i + 1)
        if matched is None and i + 1 < n and mode != 2:
            add(following, seen, 0, None, i + 1, i + 1)  # a later start: least preferred
        if row is None:
            break
        if mode == 2 and budget is not None:
            budget[0] -= len(following)
            if budget[0] < 0:
                raise RowPatternLimitError(
                    E_TOO_MANY_THREADS, f"more than {MAX_THREAD_STEPS:,} thread steps in one "
                    "partition: a DEFINE that reads the match keeps partial matches apart by "
                    "their history; narrow WITHIN, the pattern or the partition", text, 0, 0)
        if len(following) > MAX_THREADS:
            raise RowPatternLimitError(E_TOO_MANY_THREADS, f"more than {MAX_THREADS:,} partial "
                                       "matches are alive at one row; narrow WITHIN or the "
                                       "pattern", text, 0, 0)
        threads = following
        i += 1
    return matched
