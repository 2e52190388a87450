r"""SQL ``LIKE`` patterns as regular expressions, shared by the engine and the oracle.

The rules are Spark's (``LIKE`` without ``ESCAPE``): ``%`` is any text, ``_`` any one
character, and the backslash escapes exactly ``%``, ``_`` and itself. A backslash before any
other character, or at the end, makes Spark reject the pattern, and so does this module
(:class:`LikePatternError`), rather than read it some other way. The pattern is the string's
value: ``'a\%c'`` in a condition is the value ``a\%c`` (:mod:`cep.lang.strings`).

Example:
    >>> like_regex("O_Sent%").fullmatch("OxSent (online only)") is not None
    True
    >>> like_regex(r"100\%").fullmatch("100%") is not None
    True
    >>> like_problem(r"a\b")
    "the escape character is not allowed before 'b' (escape only %, _ or \\)"
"""

from __future__ import annotations

import re

from cep.errors import CepError


class LikePatternError(CepError):
    r"""A LIKE pattern Spark rejects: an escape before a character other than ``%``, ``_``,
    ``\``, or at the end."""

    code = "CEP-PAT-127"


def like_problem(pattern: str) -> str | None:
    """Why Spark rejects ``pattern`` as a LIKE pattern, or None when it accepts it."""
    k = 0
    while k < len(pattern):
        if pattern[k] == "\\":
            if k + 1 == len(pattern):
                return "a LIKE pattern cannot end with the escape character \\"
            if pattern[k + 1] not in "%_\\":
                return (f"the escape character is not allowed before {pattern[k + 1]!r} "
                        "(escape only %, _ or \\)")
            k += 2
            continue
        k += 1
    return None


def like_regex(pattern: str, ignore_case: bool = False) -> re.Pattern[str]:
    r"""The regular expression of a SQL LIKE pattern; use ``fullmatch``.

    Raises:
        LikePatternError: Spark rejects the pattern (see :func:`like_problem`).
    """
    problem = like_problem(pattern)
    if problem is not None:
        raise LikePatternError(f"{problem}: LIKE {pattern!r}")
    out = []
    k = 0
    while k < len(pattern):
        ch = pattern[k]
        if ch == "\\":
            out.append(re.escape(pattern[k + 1]))
            k += 2
            continue
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        k += 1
    return re.compile("".join(out), re.DOTALL | (re.IGNORECASE if ignore_case else 0))
