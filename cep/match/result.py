"""Matches: which positions a match binds and to which variable; the deterministic order.

A variable is the alias for a single event, and ``alias[k]`` (1-based) for the k-th iteration
of a Kleene alias. ``match_id`` is 1-based in the order of (start pos, end pos, positions,
variables), so it is deterministic (DESIGN.md section 4).

Example:
    >>> ms = order_matches([Match((4, 7), ("a", "b")), Match((1, 2), ("a", "b")),
    ...                     Match((1, 2), ("a", "b"))])
    >>> [(m.start, m.end) for m in ms]
    [(1, 2), (4, 7)]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True, order=True)
class Match:
    """One match: bound positions in increasing order and the variable of each."""

    positions: tuple[int, ...]
    variables: tuple[str, ...]

    @property
    def start(self) -> int:
        """Position of the first bound event."""
        return self.positions[0]

    @property
    def end(self) -> int:
        """Position of the last bound event."""
        return self.positions[-1]

    def sort_key(self) -> tuple[int, int, tuple[int, ...], tuple[str, ...]]:
        """The order that assigns ``match_id``."""
        return (self.start, self.end, self.positions, self.variables)


def order_matches(matches: Iterable[Match]) -> list[Match]:
    """Distinct matches in ``match_id`` order (index + 1 is the id)."""
    return sorted(set(matches), key=Match.sort_key)
