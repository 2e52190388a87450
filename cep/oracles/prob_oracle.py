"""Naive possible-worlds oracle for ``match_prob`` (Sugiura et al., DASFAA 2015, Defs. 5 and 9).

Everything is computed the literal way, for small streams: enumerate every possible world
(one value per time point, probability = product), find in each world every interval whose
values spell a word of the pattern (Python's ``re`` over the world, not our automata), and add
the world's probability to what it satisfies:

- a match ``(start, end, values)`` has the total probability of the worlds containing it;
- groups are built from the matches at or above the threshold by the definitions themselves:
  single overlap = connected components of "shares a time point" (union-find over all pairs);
  complete overlap = the maximal sets of pairwise-overlapping matches, found as the distinct
  sets ``{m : m contains p}`` over every time point ``p`` that no other such set strictly
  contains (for intervals every pairwise-overlapping set shares a point, Helly);
- a group's probability is the total probability of the worlds in which *some* match of any
  probability (pruned or not) lies in the span, starts no later than the core start and ends
  no earlier than the core end (docs/prob.md; for single overlap that is every match in the span).

This is exponential in the number of time points (the product of the support sizes); it is
the baseline the transducer is tested and benchmarked against (DESIGN.md section 9).

Example:
    >>> from cep.prob.stream import from_wide
    >>> s = from_wide([1, 2, 3], [{"a": 0.5, "d": 0.5}, {"b": 1.0}, {"c": 0.8, "d": 0.2}])
    >>> oracle_matches("PATTERN a, b+, c", s, window=3)
    {(0, 2, ('a', 'b', 'c')): 0.4}
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

import numpy as np

from cep.lang import parse_pattern
from cep.lang.ast import Event, Kleene, Seq
from cep.prob.pattern import compile_prob
from cep.prob.stream import ProbStream

Match = tuple[int, int, tuple[str, ...]]
Group = tuple[int, int, int, int, frozenset[Match]]  # span start, span end, core start, core end, members


def pattern_regex(text: str) -> tuple[re.Pattern[str], dict[str, str]]:
    """A Python regex over one character per value, from the pattern's AST, and the value->char map."""
    query = parse_pattern(text)
    classes = {s.cls: s.values for s in compile_prob(text).slots}
    values = sorted(set().union(*classes.values()))
    char = {v: chr(0x4E00 + i) for i, v in enumerate(values)}
    node = query.pattern
    parts = node.parts if isinstance(node, Seq) else (node,)
    out = []
    for part in parts:
        lo, hi, ev = (part.min, part.max, part.part) if isinstance(part, Kleene) else (1, 1, part)
        assert isinstance(ev, Event)
        cls = "[" + "".join(char[v] for v in sorted(classes[ev.cls])) + "]"
        out.append(f"(?:{cls}){{{lo},{'' if hi is None else hi}}}")
    return re.compile("".join(out)), char


def worlds(stream: ProbStream) -> Iterator[tuple[tuple[str, ...], float]]:
    """Every possible world with positive probability, and its probability."""
    supports = [[(stream.values[j], float(row[j])) for j in np.flatnonzero(row > 0)] for row in stream.probs]
    for combo in itertools.product(*supports):
        p = 1.0
        for _, pj in combo:
            p *= pj
        yield tuple(v for v, _ in combo), p


def _world_matches(world: tuple[str, ...], regex: re.Pattern[str], char: dict[str, str],
                   window: int) -> list[Match]:
    text = "".join(char.get(v, "\u0001") for v in world)
    found = []
    for s in range(len(world)):
        for e in range(s, min(len(world), s + window)):
            if regex.fullmatch(text, s, e + 1):
                found.append((s, e, world[s:e + 1]))
    return found


def oracle_matches(text: str, stream: ProbStream, *, window: int, threshold: float = 0.0) -> dict[Match, float]:
    """``{(start, end, values): probability}`` (positions) of every match >= threshold and > 0."""
    regex, char = pattern_regex(text)
    total: dict[Match, float] = {}
    for world, p in worlds(stream):
        for m in _world_matches(world, regex, char, window):
            total[m] = total.get(m, 0.0) + p
    return {m: p for m, p in total.items() if p > 0 and p >= threshold}


def oracle_groups(matches: dict[Match, float], overlap: str) -> list[Group]:
    """Groups of the given matches by the definitions (module docstring), sorted by (span, core)."""
    ms = sorted(matches)
    if overlap == "single":
        parent = list(range(len(ms)))

        def find(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i
        for i, j in itertools.combinations(range(len(ms)), 2):
            if ms[i][0] <= ms[j][1] and ms[j][0] <= ms[i][1]:
                parent[find(i)] = find(j)
        comps: dict[int, list[Match]] = {}
        for i, m in enumerate(ms):
            comps.setdefault(find(i), []).append(m)
        out = []
        for members in comps.values():
            s, e = min(m[0] for m in members), max(m[1] for m in members)
            out.append((s, e, e, s, frozenset(members)))
        return sorted(out, key=lambda g: g[:4])
    points = sorted({p for m in ms for p in range(m[0], m[1] + 1)})
    sets = {frozenset(m for m in ms if m[0] <= p <= m[1]) for p in points}
    maximal = [c for c in sets if not any(c < d for d in sets)]
    out = []
    for members in maximal:
        out.append((min(m[0] for m in members), max(m[1] for m in members),
                    max(m[0] for m in members), min(m[1] for m in members), members))
    return sorted(out, key=lambda g: g[:4])


def oracle_group_probability(text: str, stream: ProbStream, *, window: int, start: int, end: int,
                             core_start: int, core_end: int) -> float:
    """P(some match, any probability, inside [start, end] with start' <= core_start and end' >= core_end)."""
    regex, char = pattern_regex(text)
    total = 0.0
    for world, p in worlds(stream):
        if any(start <= s <= core_start and core_end <= e <= end
               for s, e, _ in _world_matches(world, regex, char, window)):
            total += p
    return total


def oracle_prefix_probabilities(text: str, stream: ProbStream, *, window: int, start: int, end: int) -> list[float]:
    """For every ``t`` in the span: P(some match lies inside [start, t]) (the MATCHED entry of Fig. 9)."""
    return [oracle_group_probability(text, stream, window=window, start=start, end=t, core_start=t, core_end=start)
            for t in range(start, end + 1)]
