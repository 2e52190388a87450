"""Errors of the matching engines (exact engine and oracle alike)."""

from __future__ import annotations

from cep.errors import CepError
from cep.lang.errors import Location


class MatchLimitError(CepError):
    """A configured limit (partial matches, matches, Kleene iterations) was exceeded.

    The message names the limit, its value and how to raise it.
    """

    code = "CEP-MATCH-001"


class UnsupportedPatternError(CepError):
    """The pattern parses but uses a construct the engines do not evaluate yet."""

    code = "CEP-MATCH-002"
    line: int | None = None
    column: int | None = None

    @classmethod
    def at(cls, text: str, span: tuple[int, int], message: str) -> UnsupportedPatternError:
        """The error at ``span`` of the pattern ``text``: line, column and a caret snippet, as
        a :class:`cep.lang.PatternError` shows them.

        Example:
            >>> print(UnsupportedPatternError.at("PATTERN (A; B)+", (8, 15), "not here"))
            CEP-MATCH-002: line 1, column 9: not here
                PATTERN (A; B)+
                        ^~~~~~~
        """
        where = Location.of(text, span[0], span[1])
        snippet = "\n".join("    " + part for part in where.snippet.split("\n"))
        error = cls(f"line {where.line}, column {where.column}: {message}\n{snippet}")
        error.line, error.column = where.line, where.column
        return error


class PolicyConflictError(CepError):
    """The pattern's WHERE names one selection policy and the function argument another."""

    code = "CEP-MATCH-003"


class StreamError(CepError):
    """Event columns given to an engine have the wrong shape, type or order."""

    code = "CEP-MATCH-004"


class StandingPatternError(UnsupportedPatternError):
    """A pattern that cannot stand (docs/standing.md): no ``WITHIN`` (every key would be held
    forever) or positional ``WINDOW`` bounds (they number events from the start of a key's
    whole history, which a standing pattern never holds)."""

    code = "CEP-MATCH-005"
