"""Parser of the row pattern inside ``PATTERN ( ... )``: text to :mod:`cep.recognize.ast`.

The grammar (SQL:2016 row pattern syntax as Trino documents it; docs/match-recognize.md)::

    pattern      := term ('|' term)*
    term         := factor+                       -- concatenation
    factor       := primary quantifier?
    primary      := name | '(' pattern? ')' | '^' | '$' | '{-' pattern '-}'
                  | PERMUTE '(' pattern (',' pattern)* ')'
    quantifier   := ('*' | '+' | '?' | '{' n '}' | '{' n? ',' m? '}') '?'?

Names are identifiers, upper-cased as SQL folds them, or double-quoted (kept as written, ``""``
for a quote). The text may be a slice of a longer statement: ``start``/``end`` bound it, and
every error points into the statement.

Example:
    >>> from cep.recognize.ast import show
    >>> show(parse_row_pattern("a b{2,}? | PERMUTE(c, d)*"))
    'A B{2,}? | PERMUTE(C, D)*'
    >>> parse_row_pattern("A{2}{3}")
    Traceback (most recent call last):
    ...
    cep.recognize.errors.RowPatternSyntaxError: CEP-MR-106: line 1, column 5: a quantifier cannot follow a quantifier; bracket the term first, e.g. (A{2}){3}
        A{2}{3}
            ^~~
"""

from __future__ import annotations

from dataclasses import dataclass

from cep.recognize.ast import (Alternation, Anchor, Concatenation, Empty, Exclusion, Node,
                               Permute, Quantified, Variable)
from cep.recognize.errors import (E_BAD_BOUNDS, E_BAD_CHARACTER, E_DOUBLE_QUANTIFIER, E_TOO_DEEP,
                                  E_TOO_LONG, E_UNCLOSED, E_UNEXPECTED, E_UNTERMINATED_NAME,
                                  RowPatternLimitError, RowPatternSyntaxError)

__all__ = ["MAX_DEPTH", "MAX_TEXT", "parse_row_pattern"]

MAX_TEXT = 16_384
"""Longest row pattern text accepted (characters)."""
MAX_DEPTH = 64
"""Deepest bracket nesting accepted (the parser recurses once per level)."""
MAX_BOUND = 1_000_000
"""Largest quantifier bound that parses; the compiler's size limit usually refuses far less."""

_SINGLE = set("()|,^$*+?")


@dataclass(frozen=True)
class _Token:
    kind: str  # NAME, NUMBER, OP, END
    text: str
    start: int
    end: int


def _tokens(text: str, start: int, end: int) -> list[_Token]:
    out: list[_Token] = []
    i = start
    while i < end:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch == "-" and text.startswith("--", i):
            nl = text.find("\n", i, end)
            i = end if nl < 0 else nl + 1
        elif ch == "/" and text.startswith("/*", i):
            close = text.find("*/", i + 2, end)
            if close < 0:
                raise RowPatternSyntaxError(E_UNCLOSED, "comment opened but never closed",
                                            text, i, i + 2)
            i = close + 2
        elif ch.isalpha() or ch == "_":
            j = i + 1
            while j < end and (text[j].isalnum() or text[j] == "_"):
                j += 1
            out.append(_Token("NAME", text[i:j].upper(), i, j))
            i = j
        elif ch == '"':
            j = i + 1
            parts = []
            while True:
                k = text.find('"', j, end)
                if k < 0:
                    raise RowPatternSyntaxError(E_UNTERMINATED_NAME, "a double-quoted name "
                                                "is never closed", text, i, end)
                parts.append(text[j:k])
                if k + 1 < end and text[k + 1] == '"':
                    parts.append('"')
                    j = k + 2
                    continue
                break
            name = "".join(parts)
            if not name:
                raise RowPatternSyntaxError(E_UNEXPECTED, "a variable name cannot be empty",
                                            text, i, k + 1)
            out.append(_Token("NAME", name, i, k + 1))
            i = k + 1
        elif ch.isdigit():
            j = i
            while j < end and text[j].isdigit():
                j += 1
            out.append(_Token("NUMBER", text[i:j], i, j))
            i = j
        elif ch == "{":
            pair = text.startswith("{-", i) and i + 2 <= end
            out.append(_Token("OP", "{-" if pair else "{", i, i + 1 + pair))
            i += 1 + pair
        elif ch == "-" and text.startswith("-}", i) and i + 2 <= end:
            out.append(_Token("OP", "-}", i, i + 2))
            i += 2
        elif ch in _SINGLE or ch == "}":
            out.append(_Token("OP", ch, i, i + 1))
            i += 1
        else:
            raise RowPatternSyntaxError(E_BAD_CHARACTER, f"{ch!r} is not part of a row pattern",
                                        text, i, i + 1)
    out.append(_Token("END", "", end, end))
    return out


class _Parser:
    def __init__(self, text: str, tokens: list[_Token]) -> None:
        self.text = text
        self.tokens = tokens
        self.i = 0
        self.depth = 0

    @property
    def tok(self) -> _Token:
        return self.tokens[self.i]

    def fail(self, message: str, tok: _Token | None = None, code: str = E_UNEXPECTED
             ) -> RowPatternSyntaxError:
        tok = tok or self.tok
        return RowPatternSyntaxError(code, message, self.text, tok.start, max(tok.end,
                                                                               tok.start + 1))

    def take(self, op: str) -> _Token:
        if self.tok.kind == "OP" and self.tok.text == op:
            self.i += 1
            return self.tokens[self.i - 1]
        found = "the end of the pattern" if self.tok.kind == "END" else repr(self.tok.text)
        raise self.fail(f"expected {op!r}, found {found}")

    def at(self, op: str) -> bool:
        return self.tok.kind == "OP" and self.tok.text == op

    def pattern(self) -> Node:
        first = self.term()
        items = [first]
        while self.at("|"):
            self.i += 1
            items.append(self.term())
        if len(items) == 1:
            return first
        return Alternation((items[0].span[0], items[-1].span[1]), tuple(items))

    def term(self) -> Node:
        items = []
        while self.tok.kind == "NAME" or (self.tok.kind == "OP"
                                          and self.tok.text in ("(", "^", "$", "{-")):
            items.append(self.factor())
        if not items:
            found = "the end of the pattern" if self.tok.kind == "END" else repr(self.tok.text)
            raise self.fail(f"expected a pattern variable, '(', '^', '$', '{{-' or PERMUTE, "
                            f"found {found}")
        if len(items) == 1:
            return items[0]
        return Concatenation((items[0].span[0], items[-1].span[1]), tuple(items))

    def factor(self) -> Node:
        node = self.primary()
        if not self.quantifier_next():
            return node
        node = self.quantified(node)
        if self.quantifier_next():
            tok = self.tok
            end = self.tok_end_of_quantifier()
            raise RowPatternSyntaxError(E_DOUBLE_QUANTIFIER, "a quantifier cannot follow a "
                                        "quantifier; bracket the term first, e.g. (A{2}){3}",
                                        self.text, tok.start, end)
        return node

    def quantifier_next(self) -> bool:
        return self.tok.kind == "OP" and self.tok.text in ("*", "+", "?", "{")

    def tok_end_of_quantifier(self) -> int:
        j = self.i
        while self.tokens[j].kind != "END" and not (self.tokens[j].kind == "OP"
                                                    and self.tokens[j].text in "}*+?"):
            j += 1
        return self.tokens[j].end

    def quantified(self, node: Node) -> Node:
        tok = self.tok
        self.i += 1
        if tok.text == "*":
            low, high = 0, None
        elif tok.text == "+":
            low, high = 1, None
        elif tok.text == "?":
            low, high = 0, 1
        else:
            low, high = self.bounds(tok)
        greedy = True
        if self.at("?"):
            self.i += 1
            greedy = False
        return Quantified((node.span[0], self.tokens[self.i - 1].end), node, low, high, greedy)

    def bounds(self, open_tok: _Token) -> tuple[int, int | None]:
        low = self.number() if self.tok.kind == "NUMBER" else None
        if self.at("}"):
            close = self.take("}")
            if low is None:
                raise RowPatternSyntaxError(E_BAD_BOUNDS, "a quantifier needs a bound inside "
                                            "'{}', e.g. A{3}, A{2,}, A{,4} or A{2,4}", self.text,
                                            open_tok.start, close.end)
            if low == 0:
                raise RowPatternSyntaxError(E_BAD_BOUNDS, "a quantifier's upper bound must be "
                                            "at least 1 (A{0} matches nothing; leave A out)",
                                            self.text, open_tok.start, close.end)
            return low, low
        if not self.at(","):
            raise self.fail("expected a number, ',' or '}' in a quantifier", code=E_BAD_BOUNDS)
        self.i += 1
        high = self.number() if self.tok.kind == "NUMBER" else None
        if not self.at("}"):
            raise self.fail("expected a number or '}' in a quantifier", code=E_BAD_BOUNDS)
        close = self.take("}")
        low = 0 if low is None else low
        if high is not None and high < low:
            raise RowPatternSyntaxError(E_BAD_BOUNDS, f"the quantifier's lower bound {low} is "
                                        f"above its upper bound {high}", self.text,
                                        open_tok.start, close.end)
        if high == 0:
            raise RowPatternSyntaxError(E_BAD_BOUNDS, "a quantifier's upper bound must be at "
                                        "least 1", self.text, open_tok.start, close.end)
        return low, high

    def number(self) -> int:
        tok = self.tok
        self.i += 1
        value = int(tok.text)
        if value > MAX_BOUND:
            raise RowPatternSyntaxError(E_BAD_BOUNDS, f"a quantifier bound above {MAX_BOUND:,}",
                                        self.text, tok.start, tok.end)
        return value

    def nested(self, open_tok: _Token) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise RowPatternLimitError(E_TOO_DEEP, f"the row pattern is nested more than "
                                       f"{MAX_DEPTH} deep", self.text, open_tok.start,
                                       open_tok.end)

    def closing(self, op: str, open_tok: _Token) -> _Token:
        if self.tok.kind == "END":
            raise RowPatternSyntaxError(E_UNCLOSED, f"{open_tok.text!r} is never closed",
                                        self.text, open_tok.start, open_tok.end)
        tok = self.take(op)
        self.depth -= 1
        return tok

    def primary(self) -> Node:
        tok = self.tok
        if tok.kind == "NAME" and tok.text == "PERMUTE" and self.tokens[self.i + 1].text == "(" \
                and self.tokens[self.i + 1].kind == "OP" and self.text[tok.start] != '"':
            self.i += 1
            open_tok = self.take("(")
            self.nested(open_tok)
            items = [self.pattern()]
            while self.at(","):
                self.i += 1
                items.append(self.pattern())
            close = self.closing(")", open_tok)
            return Permute((tok.start, close.end), tuple(items))
        self.i += 1
        if tok.kind == "NAME":
            return Variable((tok.start, tok.end), tok.text)
        if tok.text in ("^", "$"):
            return Anchor((tok.start, tok.end), tok.text == "^")
        if tok.text == "{-":
            self.nested(tok)
            inner = self.pattern()
            close = self.closing("-}", tok)
            return Exclusion((tok.start, close.end), inner)
        self.nested(tok)
        if self.at(")"):
            close = self.closing(")", tok)
            return Empty((tok.start, close.end))
        inner = self.pattern()
        self.closing(")", tok)
        return inner


def parse_row_pattern(text: str, start: int = 0, end: int | None = None) -> Node:
    """The row pattern in ``text[start:end]`` as a tree; errors point into ``text``.

    Args:
        text: the statement (or just the pattern).
        start, end: the pattern's bounds inside ``text`` (default: all of it).

    Raises:
        RowPatternSyntaxError: the text is not a row pattern.
        RowPatternLimitError: it is longer or deeper than :data:`MAX_TEXT` / :data:`MAX_DEPTH`.
    """
    end = len(text) if end is None else end
    if end - start > MAX_TEXT:
        raise RowPatternLimitError(E_TOO_LONG, f"the row pattern is {end - start:,} characters "
                                   f"long; the maximum is {MAX_TEXT:,}", text, start, start + 1)
    parser = _Parser(text, _tokens(text, start, end))
    node = parser.pattern()
    if parser.tok.kind != "END":
        tok = parser.tok
        if tok.text == ")":
            raise parser.fail("')' without a matching '('")
        raise parser.fail(f"unexpected {tok.text!r} after the pattern")
    return node
