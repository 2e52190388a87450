"""Reader of one ``MATCH_RECOGNIZE ( ... )`` clause: the statement's tokens to a :class:`Clause`.

sqlglot parses MATCH_RECOGNIZE for some dialects but not Spark's, and not every part of the
standard (``SUBSET``, ``WITH UNMATCHED ROWS``); so the clause is read here from the tokens of
sqlglot's Spark tokenizer, whose offsets point into the statement. Expressions (PARTITION BY,
ORDER BY, MEASURES, DEFINE) are kept as spans of the statement's text, for
:mod:`cep.recognize.expressions` to parse; the PATTERN goes to :mod:`cep.recognize.parser`.

The clause, in the standard's order (docs/match-recognize.md)::

    MATCH_RECOGNIZE (
      [PARTITION BY col, ...] [ORDER BY expr [ASC|DESC] [NULLS FIRST|LAST], ...]
      [MEASURES expr AS name, ...]
      [ONE ROW PER MATCH | ALL ROWS PER MATCH [SHOW EMPTY MATCHES | OMIT EMPTY MATCHES
                                                | WITH UNMATCHED ROWS]]
      [AFTER MATCH SKIP {PAST LAST ROW | TO NEXT ROW | TO [FIRST | LAST] var}]
      PATTERN ( row pattern ) [WITHIN n unit]
      [SUBSET name = (var, ...), ...]
      [DEFINE var AS condition, ...]
    ) [[AS] alias]

Example:
    >>> sql = "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts PATTERN (A B+) DEFINE B AS x > 0) m"
    >>> clause = read_clause(sql, tokens_of(sql), 4)
    >>> clause.order[0].text, sql[slice(*clause.pattern)], clause.defines[0][0], clause.alias
    ('ts', 'A B+', 'B', 'm')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cep.lang.spark_sql import tokens_of
from cep.recognize.errors import (E_CLAUSE, E_UNCLOSED, RowPatternSyntaxError)

__all__ = ["Clause", "Item", "read_clause", "tokens_of"]

KEYWORD = "MATCH_RECOGNIZE"


@dataclass(frozen=True)
class Item:
    """An expression of the clause: its text, its span in the statement, and a name."""

    text: str
    span: tuple[int, int]
    name: str = ""
    descending: bool = False
    nulls_first: bool | None = None


@dataclass(frozen=True)
class Clause:
    """One MATCH_RECOGNIZE clause as written.

    Attributes:
        span: from the keyword to the closing bracket (or the alias), in the statement.
        partition, order, measures: the lists; a measure's ``name`` is its alias.
        rows: ``one`` or ``all``; ``empty``: ``show`` or ``omit``; ``unmatched``: WITH
            UNMATCHED ROWS.
        skip: ``past_last``, ``next_row``, ``first`` or ``last``; ``skip_to``: the variable
            name and its span (for ``first``/``last``).
        pattern: the span of the row pattern text inside ``PATTERN ( ... )``.
        within: ``(amount, unit, span)`` of our WITHIN extension, or None.
        subsets: ``(name, members, span)`` per SUBSET item.
        defines: ``(variable, condition)`` per DEFINE item.
        alias: the correlation name after the clause ("" when none).
    """

    span: tuple[int, int]
    partition: tuple[Item, ...]
    order: tuple[Item, ...]
    measures: tuple[Item, ...]
    rows: str
    empty: str
    unmatched: bool
    skip: str
    skip_to: tuple[str, tuple[int, int]] | None
    pattern: tuple[int, int]
    within: tuple[int, str, tuple[int, int]] | None
    subsets: tuple[tuple[str, tuple[str, ...], tuple[int, int]], ...]
    defines: tuple[tuple[str, Item], ...]
    alias: str


def _word(tok: Any) -> str:
    from sqlglot.tokens import TokenType

    if tok.token_type in (TokenType.STRING, TokenType.IDENTIFIER):
        return ""
    return tok.text.upper()


def _name(tok: Any) -> str:
    """A variable or column name as SQL folds it: quoted names as written, others upper-cased."""
    from sqlglot.tokens import TokenType

    if tok.token_type in (TokenType.IDENTIFIER, TokenType.STRING):
        return tok.text  # "name" (the standard's quoting; a string to Spark) or `name`
    return tok.text.upper()


class _Reader:
    def __init__(self, sql: str, tokens: list[Any], at: int) -> None:
        self.sql = sql
        self.toks = tokens
        self.i = at

    def fail(self, message: str, tok: Any = None, code: str = E_CLAUSE) -> RowPatternSyntaxError:
        tok = tok if tok is not None else self.tok
        if tok is None:
            return RowPatternSyntaxError(code, message, self.sql, len(self.sql), len(self.sql))
        return RowPatternSyntaxError(code, message, self.sql, tok.start, tok.end + 1)

    @property
    def tok(self) -> Any:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def word(self, offset: int = 0) -> str:
        j = self.i + offset
        return _word(self.toks[j]) if j < len(self.toks) else ""

    def words(self, *expected: str) -> bool:
        """Whether the next tokens are ``expected`` (multi-word tokens such as 'ORDER BY' count
        as their words); consumes them if so."""
        j = self.i
        want = list(expected)
        while want:
            if j >= len(self.toks):
                return False
            parts = _word(self.toks[j]).split()
            if not parts or parts != want[:len(parts)]:
                return False
            want = want[len(parts):]
            j += 1
        self.i = j
        return True

    def need(self, *expected: str) -> None:
        if not self.words(*expected):
            found = "the end of the statement" if self.tok is None else repr(self.tok.text)
            raise self.fail(f"expected {' '.join(expected)}, found {found}")

    def close_of(self, open_index: int) -> int:
        """The index of the bracket that closes the one at ``open_index``."""
        depth = 0
        for j in range(open_index, len(self.toks)):
            text = self.toks[j].text
            if _word(self.toks[j]) == "" and self.toks[j].token_type.name == "STRING":
                continue
            if text in ("(", "[", "{"):
                depth += 1
            elif text in (")", "]", "}"):
                depth -= 1
                if depth == 0:
                    return j
        raise RowPatternSyntaxError(E_UNCLOSED, "this bracket is never closed", self.sql,
                                    self.toks[open_index].start, self.toks[open_index].end + 1)

    def scan(self, end: int, stop: Any) -> int:
        """The first index from ``self.i`` (before ``end``) at bracket depth 0 where
        ``stop(index)`` holds, or ``end``."""
        depth = 0
        j = self.i
        while j < end:
            text = self.toks[j].text
            if text in ("(", "[", "{"):
                depth += 1
            elif text in (")", "]", "}"):
                depth -= 1
            elif depth == 0 and stop(j):
                return j
            j += 1
        return end

    def stops_at(self, j: int, stops: tuple[str, ...]) -> bool:
        """Whether ``tokens[j]`` starts the next part of the clause: a word of ``stops``, and
        for the words that can also name a measure (AFTER, ONE, ALL) the word after it too."""
        words = _word(self.toks[j]).split()
        if not words or words[0] not in stops:
            return False
        follow = {"AFTER": "MATCH", "ONE": "ROW", "ALL": "ROWS"}.get(words[0])
        if follow is None:
            return True
        nxt = words[1:2] or (_word(self.toks[j + 1]).split()[:1] if j + 1 < len(self.toks)
                             else [])
        return nxt == [follow]

    def items(self, end: int, stops: tuple[str, ...], named: bool = False,
              ordered: bool = False) -> list[Item]:
        """Comma-separated expressions up to a word of ``stops`` (at bracket depth 0)."""
        out = []
        while True:
            first = self.i
            j = self.scan(end, lambda k: self.toks[k].text == "," or self.stops_at(k, stops))
            last = j - 1
            name, descending, nulls_first = "", False, None
            if named:
                if last - first < 2 or _word(self.toks[last - 1]) != "AS":
                    raise self.fail("a measure needs a name: write <expression> AS <name>",
                                    self.toks[min(last, len(self.toks) - 1)])
                name = self.toks[last].text
                last -= 2
            if ordered:
                if last >= first and _word(self.toks[last]) in ("FIRST", "LAST") and \
                        last - 1 > first and _word(self.toks[last - 1]) == "NULLS":
                    nulls_first = _word(self.toks[last]) == "FIRST"
                    last -= 2
                if last >= first and _word(self.toks[last]) in ("ASC", "DESC"):
                    descending = _word(self.toks[last]) == "DESC"
                    last -= 1
            if last < first:
                raise self.fail("expected an expression", self.toks[min(first, end)])
            span = (self.toks[first].start, self.toks[last].end + 1)
            out.append(Item(self.sql[span[0]:span[1]], span, name, descending, nulls_first))
            self.i = j
            if j < end and self.toks[j].text == ",":
                self.i += 1
                continue
            return out


_AFTER_MEASURES = ("ONE", "ALL", "AFTER", "PATTERN", "SUBSET", "DEFINE")


def read_clause(sql: str, tokens: list[Any], at: int) -> Clause:
    """The clause whose MATCH_RECOGNIZE keyword is ``tokens[at]``.

    Raises:
        RowPatternSyntaxError: CEP-MR-107 (clause structure) or CEP-MR-104 (unclosed bracket),
            pointing into ``sql``.
    """
    r = _Reader(sql, tokens, at + 1)
    if r.tok is None or r.tok.text != "(":
        raise r.fail("expected '(' after MATCH_RECOGNIZE")
    close = r.close_of(r.i)
    r.i += 1
    partition: list[Item] = []
    order: list[Item] = []
    measures: list[Item] = []
    if r.words("PARTITION", "BY"):
        partition = r.items(close, ("ORDER", "MEASURES", *_AFTER_MEASURES))
    if r.words("ORDER", "BY"):
        order = r.items(close, ("MEASURES", *_AFTER_MEASURES), ordered=True)
    if r.words("MEASURES"):
        measures = r.items(close, _AFTER_MEASURES, named=True)
    rows, empty, unmatched = _read_rows_per_match(r)
    skip, skip_to = _read_skip(r, close)
    pattern, within = _read_pattern(r, close)
    subsets = _read_subsets(r, close)
    defines = _read_defines(r, close)
    if r.i != close:
        raise r.fail(f"unexpected {r.tok.text!r}: DEFINE is the last part of the clause")
    end, alias = _read_alias(tokens, close)
    return Clause((tokens[at].start, end), tuple(partition), tuple(order), tuple(measures),
                  rows, empty, unmatched, skip, skip_to, pattern, within, tuple(subsets),
                  tuple(defines), alias)


def _read_rows_per_match(r: _Reader) -> tuple[str, str, bool]:
    """``ONE ROW PER MATCH`` or ``ALL ROWS PER MATCH`` and its option, if written.

    Returns:
        ``(rows, empty, unmatched)``: ``one``/``all``, ``show``/``omit``, WITH UNMATCHED ROWS.
    """
    rows, empty, unmatched = "one", "show", False
    if r.words("ONE", "ROW", "PER", "MATCH"):
        rows = "one"
    elif r.words("ALL", "ROWS", "PER", "MATCH"):
        rows = "all"
        if r.words("SHOW", "EMPTY", "MATCHES"):
            empty = "show"
        elif r.words("OMIT", "EMPTY", "MATCHES"):
            empty = "omit"
        elif r.words("WITH", "UNMATCHED", "ROWS"):
            unmatched = True
    return rows, empty, unmatched


def _read_skip(r: _Reader, close: int) -> tuple[str, tuple[str, tuple[int, int]] | None]:
    """``AFTER MATCH SKIP ...``, if written.

    Returns:
        The mode (``past_last`` when not written) and, for ``first``/``last``, the variable's
        name and span.
    """
    skip, skip_to = "past_last", None
    if not r.words("AFTER", "MATCH", "SKIP"):
        return skip, skip_to
    if r.words("PAST", "LAST", "ROW"):
        skip = "past_last"
    elif r.words("TO", "NEXT", "ROW"):
        skip = "next_row"
    else:
        r.need("TO")
        skip = "last"
        if r.word() in ("FIRST", "LAST") and r.i + 1 < close:
            skip = r.word().lower()
            r.i += 1
        if r.i >= close:
            raise r.fail("expected a pattern variable after AFTER MATCH SKIP TO")
        tok = r.tok
        skip_to = (_name(tok), (tok.start, tok.end + 1))
        r.i += 1
    return skip, skip_to


def _read_pattern(r: _Reader, close: int
                  ) -> tuple[tuple[int, int], tuple[int, str, tuple[int, int]] | None]:
    """``PATTERN ( ... )`` and our ``WITHIN n unit`` after it.

    Returns:
        The span of the row pattern's text and ``(amount, unit, span)`` of WITHIN, or None.
    """
    if not r.words("PATTERN"):
        found = "')'" if r.i >= close else repr(r.tok.text)
        raise r.fail(f"expected PATTERN (the clauses go in the standard's order: PARTITION BY, "
                     f"ORDER BY, MEASURES, ROWS PER MATCH, AFTER MATCH SKIP, PATTERN, SUBSET, "
                     f"DEFINE), found {found}")
    if r.tok is None or r.tok.text != "(":
        raise r.fail("expected '(' after PATTERN")
    p_close = r.close_of(r.i)
    pattern = (r.tok.end + 1, r.toks[p_close].start)
    r.i = p_close + 1
    within = None
    if r.words("WITHIN"):
        first_tok = r.tok
        r.words("INTERVAL")  # Flink writes WITHIN INTERVAL '10' MINUTE
        amount, unit = r.tok, r.toks[r.i + 1] if r.i + 1 < close else None
        if amount is None or not amount.text.strip().isdigit() or unit is None:
            raise r.fail("expected WITHIN <whole number> <unit>, e.g. WITHIN 30 MINUTES")
        within = (int(amount.text), unit.text.upper(), (first_tok.start, unit.end + 1))
        r.i += 2
    return pattern, within


def _read_subsets(r: _Reader, close: int
                  ) -> list[tuple[str, tuple[str, ...], tuple[int, int]]]:
    """``SUBSET name = (var, ...), ...``, if written: ``(name, members, span)`` per item."""
    subsets: list[tuple[str, tuple[str, ...], tuple[int, int]]] = []
    if not r.words("SUBSET"):
        return subsets
    while True:
        name_tok = r.tok
        r.i += 1
        if r.tok is None or r.tok.text != "=":
            raise r.fail("expected '=' in SUBSET name = (var, ...)")
        r.i += 1
        if r.tok is None or r.tok.text != "(":
            raise r.fail("expected '(' in SUBSET name = (var, ...)")
        s_close = r.close_of(r.i)
        members = tuple(_name(t) for t in r.toks[r.i + 1:s_close] if t.text != ",")
        subsets.append((_name(name_tok), members, (name_tok.start, r.toks[s_close].end + 1)))
        r.i = s_close + 1
        if r.i < close and r.toks[r.i].text == ",":
            r.i += 1
            continue
        return subsets


def _read_defines(r: _Reader, close: int) -> list[tuple[str, Item]]:
    """``DEFINE var AS condition, ...``, if written: ``(variable, condition)`` per item."""
    defines: list[tuple[str, Item]] = []
    if not r.words("DEFINE"):
        return defines
    while True:
        var_tok = r.tok
        r.i += 1
        r.need("AS")
        cond = _one_item(r, close)
        defines.append((_name(var_tok), cond))
        if r.i < close and r.toks[r.i].text == ",":
            r.i += 1
            continue
        return defines


def _read_alias(tokens: list[Any], close: int) -> tuple[int, str]:
    """The correlation name after the closing bracket ``tokens[close]``, ``[AS] alias``.

    Returns:
        Where the clause ends in the statement (after the alias, if any) and the alias ("" when
        none).
    """
    end = tokens[close].end + 1
    alias = ""
    j = close + 1
    if j < len(tokens) and _word(tokens[j]) == "AS":
        j += 1
    if j < len(tokens) and (tokens[j].token_type.name in ("VAR", "IDENTIFIER")):
        alias = tokens[j].text
        end = tokens[j].end + 1
    return end, alias


def _one_item(r: _Reader, end: int) -> Item:
    """One DEFINE condition: up to the comma that starts the next ``var AS``, or the end."""
    first = r.i
    j = r.scan(end, lambda k: r.toks[k].text == "," and k + 2 <= end
               and _word(r.toks[k + 2]) == "AS")
    if j == first:
        raise r.fail("expected a condition after AS")
    span = (r.toks[first].start, r.toks[j - 1].end + 1)
    r.i = j
    return Item(r.sql[span[0]:span[1]], span)
