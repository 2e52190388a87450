"""Errors of the matching engines (exact engine and oracle alike)."""

from __future__ import annotations

from cep.errors import CepError


class MatchLimitError(CepError):
    """A configured limit (partial matches, matches, Kleene iterations) was exceeded.

    The message names the limit, its value and how to raise it.
    """

    code = "CEP-MATCH-001"


class UnsupportedPatternError(CepError):
    """The pattern parses but uses a construct the engines do not evaluate yet."""

    code = "CEP-MATCH-002"


class PolicyConflictError(CepError):
    """The pattern's WHERE names one selection policy and the function argument another."""

    code = "CEP-MATCH-003"


class StreamError(CepError):
    """Event columns given to an engine have the wrong shape, type or order."""

    code = "CEP-MATCH-004"
