"""Loader of the golden fixtures for the seed papers' example queries (one JSON file per query).

Each ``*.json`` file next to this module holds a pattern, a small hand-made stream and, per
selection policy, the matches derived by hand from docs/semantics.md, with the reasoning in
``why``. Fields:

- ``name``, ``source`` (paper and place, or "DESIGN.md section 3"), ``pattern``;
- ``stream``: events ``{"id", "ts", "type", "attrs"}``; ``ts`` is an integer (raw units) or an
  ISO-8601 string (a TIMESTAMP, microseconds in the engine); the list order is arbitrary, the
  stream order is ``(ts, id)``;
- ``expected``: policy -> list of matches, each a list of ``[event id, variable]`` pairs in
  stream order; only the policies that apply to the pattern are present;
- ``conflicting_policies`` (optional): policies the pattern's WHERE clause rules out;
- ``why``: ``general`` plus one text per policy of ``expected``.

Example:
    >>> fixtures = load_fixtures()
    >>> len(fixtures) >= 7 and all(f.expected for f in fixtures)
    True
    >>> f = fixture_by_name("design_q6_contiguous_a_bplus_c")
    >>> f.expected["strict-contiguity"][0]
    ((1, 'a'), (2, 'b[1]'), (3, 'b[2]'), (4, 'c'))
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from cep.match import EventStream, Match
from cep.timestamps import iso_to_micros

FIXTURE_DIR = Path(__file__).resolve().parent
POLICIES = ("skip-till-any-match", "skip-till-next-match", "strict-contiguity")

IdMatch = tuple[tuple[int, str], ...]


@dataclass(frozen=True)
class SeedEvent:
    """One event of a fixture stream, as written in the file."""

    id: int
    ts: int | str
    type: str
    attrs: Mapping[str, Any]


@dataclass(frozen=True)
class SeedFixture:
    """One golden fixture: a seed query, its stream and the hand-derived matches per policy."""

    path: Path
    name: str
    source: str
    pattern: str
    events: tuple[SeedEvent, ...]
    expected: Mapping[str, tuple[IdMatch, ...]]
    why: Mapping[str, str]
    conflicting_policies: tuple[str, ...] = ()

    @property
    def timestamped(self) -> bool:
        """True when ``ts`` values are ISO timestamps (a TIMESTAMP column), False for numbers."""
        return isinstance(self.events[0].ts, str)

    @property
    def attr_names(self) -> list[str]:
        """Every attribute name used by some event, in order of first appearance."""
        names: dict[str, None] = {}
        for event in self.events:
            names.update(dict.fromkeys(event.attrs))
        return list(names)

    def ts_value(self, event: SeedEvent) -> int:
        """The engine's timestamp of ``event``: microseconds for ISO text, else the number."""
        return iso_to_micros(event.ts) if isinstance(event.ts, str) else int(event.ts)

    def event_stream(self) -> EventStream:
        """The fixture's events as one partition for the oracle and the engine."""
        attrs = {}
        for name in self.attr_names:
            values = [e.attrs.get(name) for e in self.events]
            attrs[name] = (np.array(values, dtype=object) if any(v is None or isinstance(v, str)
                                                                 for v in values)
                           else np.array(values))
        return EventStream.from_columns(ids=[e.id for e in self.events],
                                        ts=[self.ts_value(e) for e in self.events],
                                        types=[e.type for e in self.events], attrs=attrs)


def id_matches(matches: Iterable[Match], stream: EventStream) -> list[IdMatch]:
    """Matches (positions, variables) rewritten as ``((event id, variable), ...)``."""
    return [tuple((int(stream.ids[p]), v) for p, v in zip(m.positions, m.variables))
            for m in matches]


def _match(raw: Sequence[Sequence[Any]], where: str) -> IdMatch:
    pairs = []
    for pair in raw:
        if len(pair) != 2 or not isinstance(pair[0], int) or not isinstance(pair[1], str):
            raise ValueError(f"{where}: a match is a list of [event id, variable], found {pair!r}")
        pairs.append((pair[0], pair[1]))
    if not pairs:
        raise ValueError(f"{where}: empty match")
    return tuple(pairs)


def load_fixture(path: Path) -> SeedFixture:
    """Read and check one fixture file; ValueError names the file and what is wrong."""
    data = json.loads(path.read_text(encoding="utf-8"))
    where = path.name
    missing = {"name", "source", "pattern", "stream", "expected", "why"} - set(data)
    if missing:
        raise ValueError(f"{where}: missing fields {sorted(missing)}")
    events = tuple(SeedEvent(int(e["id"]), e["ts"], str(e["type"]), dict(e.get("attrs", {})))
                   for e in data["stream"])
    expected: dict[str, tuple[IdMatch, ...]] = {}
    for policy, matches in data["expected"].items():
        if policy not in POLICIES:
            raise ValueError(f"{where}: unknown policy {policy!r}")
        expected[policy] = tuple(_match(m, f"{where} [{policy}]") for m in matches)
    why = dict(data["why"])
    lacking = ({"general"} | set(expected)) - set(why)
    if lacking:
        raise ValueError(f"{where}: 'why' has no text for {sorted(lacking)}")
    conflicting = tuple(data.get("conflicting_policies", ()))
    if set(conflicting) & set(expected) or not set(conflicting) <= set(POLICIES):
        raise ValueError(f"{where}: bad conflicting_policies {conflicting!r}")
    return SeedFixture(path, str(data["name"]), str(data["source"]), str(data["pattern"]),
                       events, expected, why, conflicting)


def load_fixtures(directory: Path = FIXTURE_DIR) -> list[SeedFixture]:
    """Every fixture of ``directory``, sorted by file name."""
    return [load_fixture(p) for p in sorted(directory.glob("*.json"))]


def fixture_by_name(name: str) -> SeedFixture:
    """The fixture whose ``name`` field is ``name`` (KeyError if none)."""
    for fixture in load_fixtures():
        if fixture.name == name:
            return fixture
    raise KeyError(name)


def cases() -> list[tuple[SeedFixture, str]]:
    """Every (fixture, policy) pair with an expected answer, for parametrised tests."""
    return [(f, policy) for f in load_fixtures() for policy in POLICIES if policy in f.expected]
