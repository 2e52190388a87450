r"""The value of a single-quoted string literal, decoded the way Spark SQL decodes it.

A condition is handed to Spark (and to :mod:`cep.match.compile.expr`) as SQL text, so a string in the
pattern must mean what the same string means in Spark SQL: with Spark's default
``spark.sql.parser.escapedStringLiterals=false`` a backslash starts an escape.

- ``\0 \b \n \r \t \Z``: NUL, backspace, newline, carriage return, tab, Ctrl-Z (``\x1a``);
- ``\uXXXX`` (four hex digits) and ``\UXXXXXXXX`` (eight): the character with that code; a
  ``\u`` high surrogate directly followed by a ``\u`` low one is the one character they encode;
- ``\ooo``: three octal digits, the first 0 or 1;
- ``\%`` and ``\_`` keep their backslash, so that ``LIKE 'a\%c'`` matches a literal ``%``
  (Spark, like MySQL, leaves them for LIKE);
- a backslash before any other character stands for that character (``\'`` is a quote,
  ``\\`` a backslash); ``''`` inside the quotes is one quote.

Text that would give no character (a lone surrogate, a code above U+10FFFF) is refused: Spark
would carry a broken string on.

Example:
    >>> string_value(r"a\%c"), string_value(r"tab\there"), string_value(r"\u00e9t\101")
    ('a\\%c', 'tab\there', 'étA')
"""

from __future__ import annotations

_SIMPLE = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a",
           "%": "\\%", "_": "\\_"}
_HEX = frozenset("0123456789abcdefABCDEF")


class EscapeError(ValueError):
    """An escape that gives no character; ``offset`` is where it starts in the decoded body."""

    def __init__(self, message: str, offset: int, length: int) -> None:
        super().__init__(message)
        self.offset, self.length = offset, length


def _hex_at(body: str, start: int, count: int) -> int | None:
    digits = body[start:start + count]
    return int(digits, 16) if len(digits) == count and set(digits) <= _HEX else None


def _octal_at(body: str, start: int) -> int | None:
    digits = body[start:start + 3]
    if len(digits) == 3 and digits[0] in "01" and all(d in "01234567" for d in digits[1:]):
        return int(digits, 8)
    return None


def string_value(body: str) -> str:
    r"""The value Spark SQL gives the literal ``'<body>'`` (``body`` as written, quotes off).

    Args:
        body: the text between the quotes, ``''`` already read as one quote.

    Returns:
        The decoded value.

    Raises:
        EscapeError: a ``\u``/``\U`` escape that is no character.
    """
    if "\\" not in body:
        return body
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        ch = body[i]
        if ch != "\\" or i + 1 == n:
            out.append(ch)
            i += 1
            continue
        kind = body[i + 1]
        code = _hex_at(body, i + 2, 4) if kind == "u" else \
            _hex_at(body, i + 2, 8) if kind == "U" else None
        if code is not None:
            width = 6 if kind == "u" else 10
            if kind == "u" and 0xD800 <= code < 0xDC00 and body[i + 6:i + 8] == "\\u":
                low = _hex_at(body, i + 8, 4)
                if low is not None and 0xDC00 <= low < 0xE000:
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    width = 12
            if 0xD800 <= code < 0xE000 or code > 0x10FFFF:
                raise EscapeError(f"the escape {body[i:i + width]} is not a character "
                                  "(a lone surrogate or above U+10FFFF)", i, width)
            out.append(chr(code))
            i += width
            continue
        octal = _octal_at(body, i + 1)
        if octal is not None:
            out.append(chr(octal))
            i += 4
            continue
        out.append(_SIMPLE.get(kind, kind))
        i += 2
    return "".join(out)
