r"""SQL ``LIKE`` patterns as regular expressions, shared by the engine and the oracle.

Example:
    >>> like_regex("O_Sent%").fullmatch("OxSent (online only)") is not None
    True
    >>> like_regex(r"100\%").fullmatch("100%") is not None
    True
"""

from __future__ import annotations

import re


def like_regex(pattern: str, ignore_case: bool = False) -> re.Pattern[str]:
    r"""The regular expression of a SQL LIKE pattern (``%``, ``_``, ``\`` escapes); use fullmatch."""
    out = []
    k = 0
    while k < len(pattern):
        ch = pattern[k]
        if ch == "\\" and k + 1 < len(pattern):
            out.append(re.escape(pattern[k + 1]))
            k += 2
            continue
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        k += 1
    return re.compile("".join(out), re.DOTALL | (re.IGNORECASE if ignore_case else 0))
