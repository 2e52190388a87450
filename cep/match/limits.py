"""Resource limits of the exact matcher: how much work one partition may cause.

Skip-till-any-match over Kleene closures has exponentially many matches, so every join checks
its output size before it materialises it (the sizes are known from the ``searchsorted``
ranges) and raises :class:`MatchLimitError` naming the limit and its value.

Example:
    >>> lim = MatchLimits(max_matches=10)
    >>> check_matches(lim, 5)
    >>> check_matches(lim, 11)
    Traceback (most recent call last):
    ...
    cep.match.errors.MatchLimitError: CEP-MATCH-001: the partition has 11 matches, more than max_matches=10; narrow the pattern (a window, conditions, skip-till-next-match) or raise MatchLimits.max_matches
"""

from __future__ import annotations

from dataclasses import dataclass

from cep.match.errors import MatchLimitError


@dataclass(frozen=True)
class MatchLimits:
    """Per-partition bounds on the matcher's work.

    Attributes:
        max_partial_matches: intermediate join rows (partial matches) alive after one join.
        max_matches: matches of one partition.
        max_kleene_iterations: iterations of one Kleene component in one match.
        max_bound_events: events bound by the skip-till-next-match runs of one partition (per
            alternative of the pattern), summed over the runs
            (those that become matches and those that fail later): under
            skip-till-next-match, ``A+; B`` over n ``A`` events binds n^2/2 events. Under
            strict contiguity and skip-till-any-match, the events bound by the rows a Kleene
            closure keeps while it grows (``A+, B`` over n ``A`` events: n^2/2 as well).
    """

    max_partial_matches: int = 10_000_000
    max_matches: int = 5_000_000
    max_kleene_iterations: int = 10_000
    max_bound_events: int = 5_000_000


_ADVICE = ("narrow the pattern (a window, conditions, skip-till-next-match) or raise "
           "MatchLimits.{name}")


def _check(limits: MatchLimits, name: str, count: int, found: str) -> None:
    """Raise MatchLimitError when ``count`` exceeds the limit ``name``; ``found`` says what
    was counted (the message goes on with the limit and the advice)."""
    limit = getattr(limits, name)
    if count > limit:
        raise MatchLimitError(f"{found}, more than {name}={limit}; "
                              + _ADVICE.format(name=name))


def check_partial(limits: MatchLimits, count: int, where: str = "") -> None:
    """Raise when a join would create more than ``max_partial_matches`` rows."""
    at = f" {where}" if where else ""
    _check(limits, "max_partial_matches", count,
           f"a join{at} would create {count} partial matches")


def check_matches(limits: MatchLimits, count: int) -> None:
    """Raise when a partition has more than ``max_matches`` matches."""
    _check(limits, "max_matches", count, f"the partition has {count} matches")


def check_iterations(limits: MatchLimits, count: int) -> None:
    """Raise when one Kleene component would bind more than ``max_kleene_iterations`` events."""
    _check(limits, "max_kleene_iterations", count,
           f"a Kleene component would bind {count} iterations")


def check_cells(limits: MatchLimits, count: int, where: str) -> None:
    """Raise when the rows a Kleene closure keeps bind more than ``max_bound_events`` events."""
    _check(limits, "max_bound_events", count, f"{where}, the rows would bind {count} events")


def check_bound(limits: MatchLimits, count: int) -> None:
    """Raise when the runs of a partition have bound more than ``max_bound_events`` events."""
    _check(limits, "max_bound_events", count, f"the partition's runs have bound {count} events")
