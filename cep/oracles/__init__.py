"""Brute-force oracles: the definitions of docs/semantics.md, enumerated on small inputs.

Every engine in ``cep/match/`` is tested against these (same set of matches on every input).

Example:
    >>> from cep.match.columnar.stream import EventStream
    >>> s = EventStream.from_columns(ids=range(4), ts=range(4), types=list("ABAB"))
    >>> [m.positions for m in oracle_matches("PATTERN A, B", s)]
    [(0, 1), (2, 3)]
"""

from __future__ import annotations

from cep.oracles.check import BindingChecker
from cep.oracles.match_oracle import DEFAULT_MAX_CANDIDATES, oracle_matches
from cep.oracles.trend_oracle import OracleWindow, oracle_trend_counts, oracle_trend_windows  # noqa: F401
from cep.oracles.values import evaluate

__all__ = ["DEFAULT_MAX_CANDIDATES", "BindingChecker", "evaluate", "oracle_matches"]
