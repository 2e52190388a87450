"""Which selection policy a query runs under: the pattern's, the call's, or the default.

Every engine that reads a selection policy (the exact matcher, the sketch) resolves it here,
each with its own error types (their codes differ per engine), so the rule is written once:
an unknown name is refused, a pattern and an argument that name different policies are
refused, and without either the policy is skip-till-next-match (docs/semantics.md).

Example:
    >>> resolve_policy(None, None, unknown=ValueError, conflict=ValueError)
    'skip-till-next-match'
    >>> resolve_policy("strict-contiguity", "strict-contiguity", unknown=ValueError,
    ...                conflict=ValueError)
    'strict-contiguity'
    >>> resolve_policy(None, "fastest", unknown=ValueError, conflict=ValueError)
    Traceback (most recent call last):
    ...
    ValueError: unknown policy 'fastest': expected one of strict-contiguity, skip-till-next-match, skip-till-any-match, skip-till-any-match-grouped
"""

from __future__ import annotations

from cep.lang.ast import GROUPED, POLICIES

__all__ = ["ANY_MATCH", "DEFAULT_POLICY", "GROUPED", "NEXT_MATCH", "STRICT", "resolve_policy"]

STRICT, NEXT_MATCH, ANY_MATCH = POLICIES[:3]
DEFAULT_POLICY = NEXT_MATCH
"""The policy of a query that names none, given none."""


def resolve_policy(declared: str | None, given: str | None, *, unknown: type[Exception],
                   conflict: type[Exception]) -> str:
    """The policy a query runs under.

    Args:
        declared: the pattern's own policy (``Query.policy``), None when it names none.
        given: the call's ``policy`` argument, None when absent.
        unknown: raised for a name that is no policy.
        conflict: raised when the pattern and the argument name different policies.
    """
    if given is not None and given not in POLICIES:
        raise unknown(f"unknown policy {given!r}: expected one of {', '.join(POLICIES)}")
    if declared and given and declared != given:
        raise conflict(f"the pattern says {declared} but the policy argument says {given}; "
                       "give one or make them agree")
    return declared or given or DEFAULT_POLICY
