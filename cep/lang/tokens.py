"""Tokenizer for pattern text: turns the whole query, conditions included, into tokens.

One tokenizer serves the pattern grammar and the SQL conditions, so positions are always
offsets into the original text. Conditions are later rebuilt from these tokens (never from raw
text slices), which is what keeps user strings from smuggling SQL past the allow-list.

Lexical rules:

- whitespace separates tokens; ``-- ...`` (to end of line) and ``/* ... */`` are comments;
- ``IDENT``: a letter or ``_`` followed by letters, digits or ``_`` (Unicode letters allowed);
  keywords are identifiers compared case-insensitively by the parser;
- ``QIDENT``: a backtick-quoted name; a doubled backtick stands for one backtick;
- ``DQ``: a double-quoted text, ``""`` doubles a quote inside. In the pattern it is a class name
  (``"O_Sent (mail and online)"``); inside a condition it is a string literal, as in Spark SQL,
  unless it is followed by ``.`` (then it names an alias);
- ``STRING``: a single-quoted literal with backslash escapes and ``''`` for a quote; its
  value is what Spark SQL makes of it (:func:`cep.lang.strings.string_value`);
- ``NUMBER``: ``12``, ``1.05``, ``.5``, ``3e-2``;
- ``VAR``: a join variable ``$name``;
- ``OP``: one of ``<=> .. <= >= <> != == ( ) [ ] { } , ; | & ! @ * + ? . - / % = < >``.

Example:
    >>> [t.text for t in tokenize("PATTERN a; b+ WHERE a.x <= 'it''s'")]
    ['PATTERN', 'a', ';', 'b', '+', 'WHERE', 'a', '.', 'x', '<=', "'it''s'", '']
"""

from __future__ import annotations

from dataclasses import dataclass

from cep.lang.errors import (
    E_BAD_CHARACTER,
    E_BAD_ESCAPE,
    E_BAD_REFERENCE,
    E_UNTERMINATED_COMMENT,
    E_UNTERMINATED_QUOTED_NAME,
    E_UNTERMINATED_STRING,
    PatternSyntaxError,
)
from cep.lang.strings import EscapeError, string_value

IDENT = "IDENT"
QIDENT = "QIDENT"
DQ = "DQ"
STRING = "STRING"
NUMBER = "NUMBER"
VAR = "VAR"
OP = "OP"
EOF = "EOF"

# Longest first, so '<=>' wins over '<=' and '<'.
_OPERATORS = ("<=>", "..", "<=", ">=", "<>", "!=", "==") + tuple("()[]{},;|&!@*+?.-/%=<>")

# Opening bracket -> closing bracket, shared by the depth scan and the parser.
BRACKETS = {"(": ")", "[": "]", "{": "}"}


@dataclass(frozen=True)
class Token:
    """One token: its kind, raw text, decoded value and half-open offsets ``[start, end)``."""

    kind: str
    text: str
    value: str
    start: int
    end: int

    def is_kw(self, *words: str) -> bool:
        """Tell whether this is an unquoted identifier equal to one of ``words``, ignoring case."""
        return self.kind == IDENT and self.text.upper() in words

    def is_op(self, *ops: str) -> bool:
        """Tell whether this is one of the operator tokens ``ops``."""
        return self.kind == OP and self.text in ops

    def describe(self) -> str:
        """Name the token for an error message, e.g. ``"')'"`` or ``'end of input'``."""
        if self.kind == EOF:
            return "end of input"
        if self.kind == IDENT:
            return f"'{self.text}'"
        if self.kind == NUMBER:
            return f"number {self.text}"
        if self.kind == STRING:
            return f"string {self.text}"
        return f"'{self.text}'"


def _ident_start(ch: str) -> bool:
    return ch == "_" or ch.isalpha()


def _ident_part(ch: str) -> bool:
    return ch == "_" or ch.isalnum()


def _after_operand(text: str, i: int) -> bool:
    # '.5' is a number, but in 'a.5' or 'b[1].5' the dot belongs to a reference.
    return i > 0 and (_ident_part(text[i - 1]) or text[i - 1] in ")]`\"")


def _scan_quoted(text: str, start: int, quote: str, backslash: bool) -> tuple[int, str] | None:
    """Scan a quoted token opening at ``start``; return (end offset, value) or None.

    The value has a doubled quote as one; backslash pairs stay as written (``backslash``).
    """
    i = start + 1
    out: list[str] = []
    n = len(text)
    while i < n:
        ch = text[i]
        if backslash and ch == "\\" and i + 1 < n:
            out.append(text[i:i + 2])  # decoded by string_value: the pair may start \u0041
            i += 2
            continue
        if ch == quote:
            if i + 1 < n and text[i + 1] == quote:
                out.append(quote)
                i += 2
                continue
            return i + 1, "".join(out)
        out.append(ch)
        i += 1
    return None


def _line_end(text: str, start: int) -> int:
    end = start
    while end < len(text) and text[end] not in "\r\n":
        end += 1
    return end


def _scan_number(text: str, i: int) -> int:
    n = len(text)
    j = i
    while j < n and text[j].isdigit() and text[j].isascii():
        j += 1
    if j < n and text[j] == "." and j + 1 < n and text[j + 1].isdigit() and text[j + 1].isascii():
        j += 1
        while j < n and text[j].isdigit() and text[j].isascii():
            j += 1
    if j < n and text[j] in "eE":
        k = j + 1
        if k < n and text[k] in "+-":
            k += 1
        if k < n and text[k].isdigit() and text[k].isascii():
            j = k
            while j < n and text[j].isdigit() and text[j].isascii():
                j += 1
    return j


def skip_comment(text: str, i: int) -> int | None:
    """Return the offset after a comment starting at ``i``, ``i`` if none, None if unterminated."""
    if text.startswith("--", i):
        return _line_end(text, i)
    if text.startswith("/*", i):
        close = text.find("*/", i + 2)
        return None if close < 0 else close + 2
    return i


def _token(text: str, i: int, ch: str) -> Token:
    """The token that starts with ``ch`` at ``text[i]`` (not a space or a comment)."""
    n = len(text)
    if ch in "'\"`":
        return _quoted(text, i, ch)
    if (ch.isdigit() and ch.isascii()) or (
        ch == "." and i + 1 < n and text[i + 1].isdigit() and text[i + 1].isascii() and not _after_operand(text, i)
    ):
        end = _scan_number(text, i + 1 if ch == "." else i)
        return Token(NUMBER, text[i:end], text[i:end], i, end)
    if _ident_start(ch):
        end = i + 1
        while end < n and _ident_part(text[end]):
            end += 1
        return Token(IDENT, text[i:end], text[i:end], i, end)
    if ch == "$":
        return _variable(text, i)
    for op in _OPERATORS:
        if text.startswith(op, i):
            return Token(OP, op, op, i, i + len(op))
    raise PatternSyntaxError(
        E_BAD_CHARACTER,
        f"character {ch!r} is not part of the pattern language",
        text,
        i,
        i + 1,
    )


def _quoted(text: str, i: int, ch: str) -> Token:
    """A string literal (``'``), a double-quoted text or a backtick-quoted name opening at ``i``."""
    scanned = _scan_quoted(text, i, ch, backslash=ch == "'")
    if scanned is None:
        if ch == "`":
            raise PatternSyntaxError(
                E_UNTERMINATED_QUOTED_NAME, "backtick-quoted name is never closed", text, i, _line_end(text, i)
            )
        what = "string literal" if ch == "'" else "double-quoted name or string"
        raise PatternSyntaxError(
            E_UNTERMINATED_STRING, f"{what} is never closed with {ch}", text, i, _line_end(text, i)
        )
    end, value = scanned
    if ch == "'":
        try:
            value = string_value(value)
        except EscapeError as exc:
            raise PatternSyntaxError(E_BAD_ESCAPE, str(exc), text, i, end) from None
    kind = {"'": STRING, '"': DQ, "`": QIDENT}[ch]
    return Token(kind, text[i:end], value, i, end)


def _variable(text: str, i: int) -> Token:
    """A join variable ``$name`` at ``i``."""
    n = len(text)
    if i + 1 < n and _ident_start(text[i + 1]):
        end = i + 2
        while end < n and _ident_part(text[end]):
            end += 1
        return Token(VAR, text[i:end], text[i + 1 : end], i, end)
    raise PatternSyntaxError(
        E_BAD_REFERENCE,
        "'$' must be followed by a variable name, e.g. $x",
        text,
        i,
        i + 1,
    )


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into tokens, ending with an ``EOF`` token at ``len(text)``.

    Args:
        text: the whole pattern text.

    Returns:
        The tokens in order; comments and whitespace are dropped.

    Raises:
        PatternSyntaxError: unterminated quote or comment, or a character outside the language.

    Example:
        >>> [(t.kind, t.value) for t in tokenize('"O_Sent (mail)" $x 1.5')][:3]
        [('DQ', 'O_Sent (mail)'), ('VAR', 'x'), ('NUMBER', '1.5')]
    """
    tokens: list[Token] = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        after = skip_comment(text, i)
        if after is None:
            raise PatternSyntaxError(E_UNTERMINATED_COMMENT, "comment '/*' is never closed with '*/'", text, i, i + 2)
        if after != i:
            i = after
            continue
        tok = _token(text, i, ch)
        tokens.append(tok)
        i = tok.end
    tokens.append(Token(EOF, "", "", n, n))
    return tokens

