"""The determinised matcher: the Pike VM's steps remembered, one dictionary lookup per row.

When no DEFINE condition reads the match so far and there is no WITHIN, two threads at one
instruction have the same future, so the Pike VM's whole state after a row is the ordered
tuple of its threads' instructions (plus whether the search has found a match yet, which stops
new starts). That state and the row's variable mask decide the next state, so a step computed
once can be looked up ever after: the subset construction done lazily, as RE2 and Rust's
``regex`` build their DFAs (Cox, "Regular Expression Matching in the Wild", 2010), but keeping
the VM's preference order, so the match found is the one the standard prefers.

A transition remembers, for each thread it makes, which thread of the previous state it came
from and which variable that thread's row was mapped to (or that it is a new start). The
search keeps one transition per row and reads the winning thread's labels backwards from the
row where it reached ``MATCH``; nothing is built per thread while the rows go by.

The per-row loop is then about five bytecodes of Python against the Pike VM's per-thread
closure; :mod:`cep.recognize.matcher` uses it whenever it applies and keeps the Pike VM as the
reference (``engine="pike"``), and the differential tests run both against the oracle.
States are bounded (:data:`MAX_STATES`): past it a search falls back to the Pike VM and the
remembered steps are dropped.

Example:
    >>> from cep.recognize.parser import parse_row_pattern
    >>> from cep.recognize.program import compile_pattern
    >>> dfa = LazyDfa(compile_pattern(parse_row_pattern("A B+")))
    >>> dfa.search([1, 2, 2, 1], 0)         # rows as variable masks: A=1, B=2
    (0, [0, 1, 1], [False, False, False])
"""

from __future__ import annotations

from typing import Any, Callable

from cep.recognize.closure import closure
from cep.recognize.program import MATCH, Program

__all__ = ["MAX_STATES", "DfaFull", "LazyDfa"]

MAX_STATES = 10_000
"""Most states remembered for one program; a search that needs more uses the Pike VM."""

_Transition = tuple[int, int, int]
"""``(next state or -1 when no thread is left, index of the first thread at MATCH or -1,
the number of its origins)``. The origins (``LazyDfa._origins``) are, per thread of the next
state, ``(previous thread, variable, excluded)``, previous -1 for a thread that starts at the
next row."""

_NEW_START = (-1, 0, False)


class DfaFull(Exception):
    """Raised inside a search when :data:`MAX_STATES` states are remembered.

    Attributes:
        pos: the row the search that needed more states started at.
        found: from :meth:`LazyDfa.scan_past_last`, the arrays of the matches before it.
    """

    pos: int = 0
    found: Any = None


class LazyDfa:
    """The remembered steps of one program's Pike VM (no WITHIN, no per-thread conditions).

    Args:
        program: the compiled pattern.
        max_states: the bound past which :meth:`search` raises :class:`DfaFull`.
    """

    def __init__(self, program: Program, max_states: int = MAX_STATES) -> None:
        self.program = program
        self.max_states = max_states
        # ``closure`` tests an anchor as ``at == 0`` / ``at == n``: these (n, at) pairs say
        # "partition start", "partition end", both or neither.
        self._add = {(first, end): (closure(program, n, 0), at)
                     for (first, end), (n, at) in {(True, True): (0, 0), (True, False): (1, 0),
                                                   (False, True): (1, 1),
                                                   (False, False): (2, 1)}.items()}
        self._ids: dict[tuple[tuple[int, ...], bool], int] = {}
        self._states: list[tuple[tuple[int, ...], bool]] = []
        self._tables: list[dict[int, _Transition]] = []  # by state: row mask -> transition
        self._lasts: list[dict[int, _Transition]] = []   # the same for a partition's last row
        self._starts: dict[tuple[bool, bool], int] = {}
        self._origins: list[tuple[tuple[int, int, bool], ...]] = []
        self._origin_ids: dict[tuple[tuple[int, int, bool], ...], int] = {}
        self._arrays: tuple[int, tuple[Any, ...]] | None = None  # (origins counted, arrays)

    def flush(self) -> None:
        """Forget every remembered state and step."""
        self._arrays = None
        self._origins.clear()
        self._origin_ids.clear()
        self._ids.clear()
        self._states.clear()
        self._tables.clear()
        self._lasts.clear()
        self._starts.clear()

    @property
    def size(self) -> int:
        """How many states are remembered."""
        return len(self._states)

    def search(self, rows: list[int], pos: int) -> tuple[int, list[int], list[bool]] | None:
        """The leftmost, then most preferred match starting at or after ``pos``.

        Args:
            rows: one variable mask per row of the partition
                (:func:`cep.recognize.matcher.row_masks`).
            pos: the first row a match may start at.

        Returns:
            ``(start, labels, excluded)`` of the match, or None when no row from ``pos`` on
            starts one.

        Raises:
            DfaFull: more than ``max_states`` states would be needed.
        """
        found: list[tuple[int, list[int], list[bool]]] = []

        def keep(start: int, labels: list[int], excluded: list[bool]) -> int:
            found.append((start, labels, excluded))
            return len(rows)  # no further search

        self.scan(rows, pos, keep)
        return found[0] if found else None

    def scan(self, rows: list[int], pos: int,
             on_match: Callable[[int, list[int], list[bool]], int]) -> None:
        """Every match from ``pos`` on, one search after another.

        Args:
            rows: as :meth:`search`.
            pos: the first row the first search may start at.
            on_match: called with each match's ``(start, labels, excluded)``; returns the
                row the next search starts at (``AFTER MATCH SKIP``), or ``len(rows)`` to stop.

        Raises:
            DfaFull: more than ``max_states`` states would be needed; its ``pos`` is the row
                the failed search started at (the matches before it were passed on).
        """
        n = len(rows)
        try:
            first = self._start(True, n == 0)
            middle = self._start(False, False)
            # One trail for the partition: a search's match is read back before the next
            # search (which may start inside it) rewrites its rows.
            trail = [0] * n
            while pos < n:
                found, thread = self._run(rows, pos, middle if pos else first, trail)
                if found < 0:
                    return
                start, labels, excluded = _walk_back(self._origins, trail, pos, found, thread)
                pos = on_match(start, labels, excluded)
        except DfaFull as full:
            full.pos = pos
            raise

    def scan_past_last(self, rows: list[int], pos: int) -> tuple[Any, ...]:
        """Every match from ``pos`` on under ``AFTER MATCH SKIP PAST LAST ROW``, as arrays
        ``(starts, lengths, labels, excluded)`` (labels and flags of all matches, one after
        the other).

        Matches cannot overlap here, so one trail serves the whole partition (a search never
        rewrites a row of an earlier match), and the winners' labels are read back for all
        matches at once, a step back per numpy operation, instead of one walk per match
        (v_shape: 204,465 matches in 10^6 rows; the walks and their lists cost as much as
        the rows' lookups).

        Raises:
            DfaFull: as :meth:`scan`, with ``pos`` where the failed search started and
                ``found`` the arrays of the matches before it.
        """

        n = len(rows)
        trail = [0] * n  # per row: the origins' number of the step the row's search took
        ends: list[int] = []
        threads: list[int] = []
        froms: list[int] = []
        try:
            first = self._start(True, n == 0)
            middle = self._start(False, False)
            while pos < n:
                found, thread = self._run(rows, pos, middle if pos else first, trail)
                if found < 0:
                    break
                ends.append(found)
                threads.append(thread)
                froms.append(pos)
                pos = found if found > pos else pos + 1
                # An empty match at pos moves on by a row; a match reaching row `found`
                # starting later than pos is fine too: the next search starts at its end.
        except DfaFull as full:
            full.pos = pos
            full.found = self._read_back(trail, froms, ends, threads)
            raise
        return self._read_back(trail, froms, ends, threads)

    def _read_back(self, trail: list[int], froms: list[int], ends: list[int],
                   threads: list[int]) -> tuple[Any, ...]:
        import numpy as np

        if not ends:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty, np.zeros(0, dtype=bool)
        if self._arrays is None or self._arrays[0] != len(self._origins):
            self._arrays = (len(self._origins), _origin_arrays(self._origins))
        # Only the rows up to the last match's end are read back.
        return _read_back(self._origins, self._arrays[1],
                          np.array(trail[:ends[-1]], dtype=np.int64), froms, ends, threads)

    def _run(self, rows: list[int], pos: int, s: int, trail: list[int]) -> tuple[int, int]:
        """One search from ``pos`` in state ``s``: the row where the preferred thread reached
        MATCH and its index in the state there (``(-1, -1)``: no match); each row's step is
        written at the row's index of ``trail`` (the number of its origins)."""
        # Its own method on purpose: the same loop inlined into :meth:`scan` measured 1.8x
        # slower (0.17 s against 0.09 s over 10^6 rows of ``A B C``, CPython 3.11).
        n = len(rows)
        end = n - 1
        tables = self._tables
        found = thread = -1
        i = pos
        while i < end:
            m = rows[i]
            tr = tables[s].get(m)
            if tr is None:
                tr = self._step(s, m, False)
            s, hit, oid = tr
            if hit >= 0:
                found, thread = i, hit
            if s < 0:
                return found, thread
            trail[i] = oid
            i += 1
        if i == end:
            tr = self._lasts[s].get(rows[i])
            if tr is None:
                tr = self._step(s, rows[i], True)
            if tr[1] >= 0:
                found, thread = i, tr[1]
            s = tr[0]
            if s < 0:
                return found, thread
            trail[i] = tr[2]
            i += 1
        if i == n:
            t = self._final(s)
            if t >= 0:
                found, thread = i, t
        return found, thread

    # --- building states and steps -----------------------------------------------------

    def _intern(self, pcs: tuple[int, ...], matched: bool) -> int:
        key = (pcs, matched)
        s = self._ids.get(key)
        if s is None:
            if len(self._states) >= self.max_states:
                raise DfaFull(f"more than {self.max_states:,} states")
            s = self._ids[key] = len(self._states)
            self._states.append(key)
            self._tables.append({})
            self._lasts.append({})
        return s

    def _start(self, first: bool, end: bool) -> int:
        s = self._starts.get((first, end))
        if s is None:
            add, at = self._add[first, end]
            threads: list[Any] = []
            add(threads, set(), 0, None, 0, at)
            s = self._starts[first, end] = self._intern(tuple(t[0] for t in threads), False)
        return s

    def _step(self, s: int, mask: int, last: bool) -> _Transition:
        """One row of the Pike VM (:func:`cep.recognize.matcher._search`, mode 0), from state
        ``s`` on a row whose variables are ``mask``; remembered in the state's table."""
        program = self.program
        ops, arg1, arg2 = program.ops, program.arg1, program.arg2
        pcs, matched = self._states[s]
        add, at = self._add[False, last]
        following: list[Any] = []
        seen: set[Any] = set()
        hit = -1
        for t, pc in enumerate(pcs):
            if ops[pc] == MATCH:
                hit = t
                break  # every later thread is less preferred
            if mask >> arg1[pc] & 1:
                add(following, seen, pc + 1, (t, arg1[pc], bool(arg2[pc])), 0, at)
        matched = matched or hit >= 0
        if not matched and not last:
            add(following, seen, 0, _NEW_START, 0, at)  # a later start: least preferred
        nxt = self._intern(tuple(f[0] for f in following), matched) if following else -1
        origins = tuple(f[1] for f in following)
        oid = self._origin_ids.get(origins)
        if oid is None:
            oid = self._origin_ids[origins] = len(self._origins)
            self._origins.append(origins)
        tr = (nxt, hit, oid)
        (self._lasts if last else self._tables)[s][mask] = tr
        return tr

    def _final(self, s: int) -> int:
        """After the partition's last row: the first thread at MATCH, or -1."""
        ops = self.program.ops
        for t, pc in enumerate(self._states[s][0]):
            if ops[pc] == MATCH:
                return t
        return -1


def _walk_back(origins: list[tuple[tuple[int, int, bool], ...]], trail: list[int], pos: int,
               row: int, thread: int) -> tuple[int, list[int], list[bool]]:
    """The start, labels and exclusions of ``thread``, at MATCH before ``row``, read
    backwards through the transitions of a search that started at ``pos``."""
    labels: list[int] = []
    excluded: list[bool] = []
    start = pos
    j = row - 1
    while j >= pos:
        parent, var, excl = origins[trail[j]][thread]
        if parent < 0:
            start = j + 1
            break
        labels.append(var)
        excluded.append(excl)
        thread = parent
        j -= 1
    labels.reverse()
    excluded.reverse()
    return start, labels, excluded


_ONE_BY_ONE = 16
"""Below this many matches still being read back, each is walked alone (a long match would
otherwise cost a numpy operation per row)."""


def _origin_arrays(origins: list[tuple[tuple[int, int, bool], ...]]) -> tuple[Any, ...]:
    """``origins`` as three ``number x thread`` arrays: previous thread (-1: none), variable,
    excluded."""
    import numpy as np

    width = max((len(o) for o in origins), default=0) or 1
    parent = np.full((max(len(origins), 1), width), -1, dtype=np.int64)
    variable = np.zeros_like(parent)
    excluded = np.zeros(parent.shape, dtype=bool)
    for k, row in enumerate(origins):
        for t, (p, v, x) in enumerate(row):
            parent[k, t], variable[k, t], excluded[k, t] = p, v, x
    return parent, variable, excluded


def _read_back(origins: list[tuple[tuple[int, int, bool], ...]], arrays: tuple[Any, ...],
               trail: Any, froms: list[int], ends: list[int], threads: list[int]
               ) -> tuple[Any, ...]:
    """``(starts, lengths, labels, excluded)`` of matches that end before ``ends`` at
    ``threads``, their searches started at ``froms``, read back through ``trail``
    (``arrays``: :func:`_origin_arrays` of ``origins``)."""
    import numpy as np

    parent, variable, excluded = arrays
    n = len(trail)
    lows = np.array(froms, dtype=np.int64)
    starts = lows.copy()
    thread = np.array(threads, dtype=np.int64)
    j = np.array(ends, dtype=np.int64) - 1
    label_of = np.zeros(n, dtype=np.int64)
    excluded_of = np.zeros(n, dtype=bool)
    live = np.flatnonzero(j >= starts)
    while len(live) >= _ONE_BY_ONE:
        rows = j[live]
        at, t = trail[rows], thread[live]
        up = parent[at, t]
        begun = up < 0
        starts[live[begun]] = rows[begun] + 1
        go = ~begun
        label_of[rows[go]] = variable[at[go], t[go]]
        excluded_of[rows[go]] = excluded[at[go], t[go]]
        live = live[go]
        thread[live] = up[go]
        j[live] -= 1
        live = live[j[live] >= lows[live]]
    for m in live.tolist():  # the few long ones
        row, t, low = int(j[m]), int(thread[m]), froms[m]
        while row >= low:
            p, v, x = origins[trail[row]][t]
            if p < 0:
                starts[m] = row + 1
                break
            label_of[row], excluded_of[row] = v, x
            t = p
            row -= 1
    lengths = np.array(ends, dtype=np.int64) - starts
    covered = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(
        int(lengths.sum()))
    return starts, lengths, label_of[covered], excluded_of[covered]
