"""Recursive-descent parser for pattern queries (DESIGN.md section 3).

Grammar (keywords are case-insensitive; class names and aliases are case-sensitive)::

    query  := PATTERN pattern [DEFINE defs] [WHERE conds] [WITHIN span [SLIDE span]] [WINDOW '[' a ',' b ']']
    pattern:= orseq
    orseq  := andseq ('|' andseq)*
    andseq := sseq ('&' sseq)*
    sseq   := cseq (';' cseq)*               -- followed-by: the selection policy applies
    cseq   := item (',' item)*               -- next event (strict contiguity); not inside f(...)
    item   := prim quant? [alias ['[' ']']] ('@' '(' cond ')')*
    prim   := SEQ '(' args ')' | AND '(' args ')' | OR '(' args ')' | NOT '(' arg ')' | '!' prim
            | '(' pattern ')' | CLASS [alias] ['[' ']']
    args   := arg (',' arg)*                 -- an arg is an orseq without a top-level ','
    quant  := '*' | '+' | '?' | '{' n '}' | '{' n ',' [m] '}' | '[' n ']'
    defs   := CLASS AS cond (',' CLASS AS cond)*
    conds  := cond (AND cond)*               -- a cond may be a policy keyword or [attr]
    span   := number unit                    -- MICROSECOND(S) .. WEEK(S), EVENT(S), UNIT(S)

The grammar is read by one class made of three parts over one token
:class:`~cep.lang.cursor.Cursor`: :mod:`cep.lang.pattern` reads the pattern,
:mod:`cep.lang.clauses` reads each clause, and this module reads the query around them (the
``PATTERN`` keyword and the order of the clauses).

Decisions where the grammar leaves room:

- **Class names.** An identifier, a backtick-quoted name or a double-quoted name
  (``"O_Sent (mail and online)"``). ``SEQ``, ``AND``, ``OR`` and ``NOT`` are operators only when
  ``(`` follows; otherwise they are class names (``PATTERN Seq; Or`` has classes Seq and Or).
  ``PATTERN DEFINE WHERE WITHIN SLIDE WINDOW AS`` are reserved: quote them to use them as names.
- **Aliases.** An alias may follow the class directly (``Stock s+``) or follow the quantifier
  (``check+ c[]``); not both. ``c[]`` marks an iteration alias (documentation of intent: an alias
  under any repeating quantifier may be indexed ``c[i]``; ``[]`` on an event that is not
  repeated is an error). ``check[]+`` marks the implicit alias ``check``. An alias cannot follow
  a group: ``(A; B)+ x`` is an error.
- **``[``.** After a class or alias, ``[]`` is the iteration marker and ``[n]`` the quantifier
  "exactly n": ``Microsoft[3]`` is three Microsoft events; ``c[]`` is an alias marker.
- **Juxtaposition.** ``A x`` is the class A with alias x; two events are always separated by
  ``,`` ``;`` ``&`` or ``|``, so ``A x B`` is an error that says so.
- **Alias rule.** An event without an explicit alias gets its class name as alias. When the same
  class appears more than once without an explicit alias, those occurrences get the aliases
  ``<CLASS>1, <CLASS>2, ...`` in order of appearance, so ``PATTERN F, F, F @(t(F3) - t(F1) < 5
  MINUTES) ; S`` has aliases F1, F2, F3, S. An alias used twice (explicitly or by this rule,
  e.g. ``F, F, G F1``) is an error.
- **``@(...)``** binds to the element just before it (tighter than ``,``): in ``F, F, F @(c)``
  the condition is attached to the third F. It may mention any alias of the pattern.
- **Quantifiers.** One per element (``A+*`` is an error; write ``(A+)*``). ``!A+`` is a
  quantified NOT and is rejected by validation; ``!!A`` is rejected here.
- **Flattening.** Nested sequences are flattened keeping each link (``(A, B); C`` becomes
  ``Seq([A, B, C], [next, followed])``); nested ``&`` / ``|`` of the same operator are
  flattened; ``SEQ(X)``, ``AND(X)``, ``OR(X)`` and ``(X)`` are just ``X``. ``NOT`` takes exactly
  one argument.
- **Clauses** come in the order DEFINE, WHERE, WITHIN, SLIDE, WINDOW, each at most once.
  WHERE and DEFINE conditions end at a top-level clause keyword (outside brackets and not after
  ``.``); a column named like a clause keyword must be written in backticks.
- **Comments** ``-- ...`` and ``/* ... */`` are allowed anywhere whitespace is.

Example:
    >>> q = parse_syntax("PATTERN F, F, F @(t(F3) - t(F1) < 5 MINUTES) ; S")
    >>> q.aliases()
    ['F1', 'F2', 'F3', 'S']
    >>> q.pattern.links
    ('next', 'next', 'followed')
"""

from __future__ import annotations

from dataclasses import replace

from cep.lang.clauses import ClauseParser
from cep.lang.cursor import CLAUSE_KEYWORDS, CLAUSE_ORDER
from cep.lang.errors import (
    E_CLAUSE_ORDER,
    E_MISSING_PATTERN,
    E_NOT_A_STRING,
    E_TOO_DEEP,
    E_UNEXPECTED_TOKEN,
    PatternLimitError,
    PatternSyntaxError,
)
from cep.lang.limits import DEFAULT_LIMITS, Limits, check_components, check_text
from cep.lang.pattern import PatternParser
from cep.lang.query import Query
from cep.lang.tokens import EOF, IDENT, Token, tokenize


def parse_syntax(text: str, *, limits: Limits = DEFAULT_LIMITS) -> Query:
    """Parse a pattern query: limits, tokens, grammar, the alias rule and the conditions.

    The checks of meaning (:func:`cep.lang.validate.check_structure`) are the next stage;
    :func:`cep.lang.pipeline.parse_pattern` runs both and is what callers want.

    Args:
        text: the query, e.g. ``"PATTERN a; b+ WHERE a.x < b.x WITHIN 5 MINUTES"``.
        limits: size and complexity bounds, checked before parsing.

    Returns:
        The query AST, not yet checked for meaning.

    Raises:
        PatternSyntaxError: the text does not follow the grammar.
        PatternSemanticError: a meaningless shape the grammar itself rules out (NOT of a NOT, an
            alias used twice, ...).
        PatternLimitError: it exceeds a limit.

    Example:
        >>> q = parse_syntax("PATTERN check+ c[] WHERE c[i].src = c[i-1].dest WITHIN 1 WEEK SLIDE 1 DAY")
        >>> q.pattern
        Kleene(part=Event(cls='check', alias='c', iter_alias=True, span=(8, 18)), min=1, max=None, span=(8, 18))
        >>> [c.sql for c in q.conditions], str(q.within), str(q.slide)
        (['`c[i].src` = `c[i-1].dest`'], '1 WEEK', '1 DAY')
    """
    if not isinstance(text, str):
        raise PatternSyntaxError(E_NOT_A_STRING, f"a pattern must be a string, not {type(text).__name__}", "", 0)
    check_text(text, limits)
    tokens = tokenize(text)
    check_components(text, tokens, limits)
    try:
        query = _Parser(text, tokens, limits).parse_query()
    except RecursionError:
        # The limits above keep the parser well inside Python's stack (about 450 frames at
        # worst); this only fires when the caller itself is already nearly out of stack.
        raise PatternLimitError(E_TOO_DEEP, "pattern is too deeply nested to parse here", text, 0, 1) from None
    return query


class _Parser(PatternParser, ClauseParser):
    """One parse of one text: the query loop over the pattern and clause readers."""

    # -- query --------------------------------------------------------------------------------
    def parse_query(self) -> Query:
        first = self.peek()
        if not first.is_kw("PATTERN"):
            if first.kind == EOF:
                raise self.error(
                    E_MISSING_PATTERN,
                    "empty pattern; a pattern starts with PATTERN, e.g. PATTERN A; B",
                    first,
                )
            raise self.error(
                E_MISSING_PATTERN,
                f"a pattern starts with the keyword PATTERN, found {first.describe()}",
                first,
            )
        self.advance()
        start = self.peek()
        if start.kind == EOF or start.is_kw(*CLAUSE_KEYWORDS):
            raise self.error(E_UNEXPECTED_TOKEN, f"expected a pattern after PATTERN, found {start.describe()}", start)
        pattern = self.finish_pattern(self.orseq(in_args=False))
        query = Query(pattern, text=self.text, span=(0, len(self.text)))
        seen: list[str] = []
        while self.peek().kind != EOF:
            tok = self.peek()
            word = self.clause_word(tok, seen)
            self.advance()
            seen.append(word)
            if word == "DEFINE":
                query = replace(query, defines=self.defines())
            elif word == "WHERE":
                conditions, policy, equivalences = self.where(tok)
                query = replace(query, conditions=conditions, policy=policy, equivalences=equivalences)
            elif word == "WITHIN":
                query = replace(query, within=self.span())
            elif word == "SLIDE":
                query = replace(query, slide=self.span())
            else:
                query = replace(query, window=self.window())
        return query

    def clause_word(self, tok: Token, seen: list[str]) -> str:
        """The clause keyword ``tok`` starts, checked against the clauses already ``seen``."""
        word = tok.text.upper() if tok.kind == IDENT else ""
        last = CLAUSE_ORDER.index(seen[-1]) if seen else -1
        if word not in CLAUSE_ORDER:
            if seen and not tok.is_kw("PATTERN"):
                raise self.error(
                    E_UNEXPECTED_TOKEN,
                    f"unexpected {tok.describe()} after {seen[-1]}; expected "
                    + ", ".join([*CLAUSE_ORDER[last + 1 :], "the end of the pattern"]),
                    tok,
                )
            raise self.unexpected_after_pattern(tok)
        if word in seen:
            raise self.error(E_CLAUSE_ORDER, f"{word} appears twice", tok)
        if CLAUSE_ORDER.index(word) < last:
            raise self.error(
                E_CLAUSE_ORDER,
                f"{word} must come before {seen[-1]} (order: {', '.join(CLAUSE_ORDER)})",
                tok,
            )
        return word
