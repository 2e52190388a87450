"""The alias rule: the final alias of every event of a pattern, and the refusal of a duplicate.

An event without an explicit alias gets its class name as alias. When the same class appears
more than once without an explicit alias, those occurrences get the aliases ``<CLASS>1,
<CLASS>2, ...`` in order of appearance. An alias used twice (explicitly or by this rule) is an
error that says how each owner got it. The parser applies the aliases once the whole pattern is
read (:meth:`cep.lang.pattern.PatternParser.finish_pattern`).

Example:
    >>> from cep.lang.ast import Event, Seq
    >>> assign_aliases("", Seq((Event("F", ""), Event("F", ""), Event("S", "")), ("next", "followed")))
    ['F1', 'F2', 'S']
"""

from __future__ import annotations

from cep.lang.ast import PatternNode, events
from cep.lang.errors import E_DUPLICATE_ALIAS, PatternSemanticError


def assign_aliases(text: str, pattern: PatternNode) -> list[str]:
    """Final alias of every event, in order of appearance (see the module docstring)."""
    evs = events(pattern)
    unaliased: dict[str, int] = {}
    for ev in evs:
        if not ev.alias:
            unaliased[ev.cls] = unaliased.get(ev.cls, 0) + 1
    seen_count: dict[str, int] = {}
    result: list[str] = []
    owner: dict[str, str] = {}  # alias -> how its first owner got it
    for ev in evs:
        if ev.alias:
            alias, how = ev.alias, f"the explicit alias of an event of class {ev.cls}"
        elif unaliased[ev.cls] > 1:
            seen_count[ev.cls] = seen_count.get(ev.cls, 0) + 1
            alias = f"{ev.cls}{seen_count[ev.cls]}"
            how = f"the automatic alias of the {_ordinal(seen_count[ev.cls])} unaliased event of class {ev.cls}"
        else:
            alias, how = ev.cls, f"the default alias (class name) of an event of class {ev.cls}"
        if alias in owner:
            where = ev.alias_span or ev.span
            raise PatternSemanticError(
                E_DUPLICATE_ALIAS,
                f"alias '{alias}' is used twice: it is {owner[alias]} and {how}; give one of them another alias",
                text,
                where[0],
                where[1],
            )
        owner[alias] = how
        result.append(alias)
    return result


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
