"""``match_prob`` in the core: matches or groups of one probabilistic stream, with probabilities.

This is what the SQL function runs per partition (DESIGN.md section 5, docs/sql.md):

- ``output='matches'``: every match with probability >= ``threshold`` (Def. 5), as
  ``(match_id, t_start, t_end, probability, values)``;
- ``output='groups'``: the matches grouped by ``overlap`` (``'single'`` or ``'complete'``,
  :mod:`cep.prob.groups`), each with the probability of the union of its matches' possible
  worlds (Def. 9), computed by the transducer (:mod:`cep.prob.transducer`), as
  ``(t_start, t_end, probability, n_matches, core_start, core_end)`` (the core only for
  complete overlap: the time points every member covers). Pruned matches (below the threshold) do not
  form groups but their worlds are in a group's probability, so the threshold never changes
  the probability of a group that exists with and without it.

Example (the paper's figure 1 as printed; docs/prob.md section 6):
    >>> from cep.prob.stream import from_wide
    >>> s = from_wide([1, 2, 3, 4, 5, 6], [{"a": 1.0}, {"a": 0.3, "b": 0.7}, {"a": 0.1, "b": 0.8, "c": 0.1},
    ...                                  {"a": 0.1, "b": 0.7, "c": 0.2}, {"b": 0.9, "c": 0.1}, {"c": 1.0}])
    >>> g = match_prob("PATTERN a, b+, c", s, overlap="single", window=6)
    >>> [(r.t_start, r.t_end, round(r.probability, 10), r.n_matches) for r in g]
    [(1, 6, 0.9437, 10)]
    >>> g = match_prob("PATTERN a, b+, c", s, overlap="single", window=6, threshold=0.1, transducer_mode="paper")
    >>> [(r.t_start, r.t_end, round(r.probability, 10), r.n_matches) for r in g]
    [(1, 6, 0.9437, 3)]
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from cep.prob.errors import ProbArgumentError
from cep.prob.groups import Groups, complete_groups, single_groups
from cep.prob.matches import Matches, check_threshold, check_window, find_matches
from cep.prob.pattern import ProbPattern, compile_prob
from cep.prob.stream import ProbStream
from cep.prob.transducer import Transducer, build_transducer, group_probabilities

OVERLAPS = ("single", "complete")
OUTPUTS = ("groups", "matches")
MODES = ("window", "paper")
"""``transducer_mode``: ``'window'`` (default) counts the matches of at most ``w`` time points
that cover the group's core ``[L, R]``; ``'paper'`` is the paper's transducer as published
(section 5: ``|p| + 1`` states, no window, so every match inside the span counts however long;
complete overlap uses ``T^A`` before the group's first match time ``t_f = R``, ``T`` at ``t_f`` and
``T^B`` after it, i.e. the matches that contain ``t_f``). docs/prob.md, "Paper vs ours"."""


@dataclass(frozen=True)
class GroupRow:
    """One group: its span (time points), probability and number of member matches.

    ``core_start`` and ``core_end`` (complete overlap only, else None) are the time points every
    member covers; two complete-overlap groups may share a span and differ in their core.
    """

    t_start: int
    t_end: int
    probability: float
    n_matches: int
    core_start: int | None = None
    core_end: int | None = None


@dataclass(frozen=True)
class MatchRow:
    """One match: 1-based id in (t_start, t_end, values) order, span, probability, values."""

    match_id: int
    t_start: int
    t_end: int
    probability: float
    values: tuple[str, ...]


def resolve_window(pattern: ProbPattern, window: object | None) -> int:
    """The window from the argument or from ``WITHIN n EVENTS``; both given must agree.

    Raises:
        ProbArgumentError: neither given, a bad value, or two different values (``CEP-PROB-011``).
    """
    if window is None:
        if pattern.window is None:
            raise ProbArgumentError("match_prob needs a window: the longest match in time points, "
                                    "e.g. window => 10 or WITHIN 10 EVENTS in the pattern")
        return pattern.window
    w = check_window(window)
    if pattern.window is not None and pattern.window != w:
        raise ProbArgumentError(f"window => {w} disagrees with WITHIN {pattern.window} EVENTS in the pattern; "
                                "give one of them")
    return w


def check_choice(name: str, value: object, allowed: tuple[str, ...]) -> str:
    """``value`` lower-cased if it is one of ``allowed``, else a ``CEP-PROB-011`` error."""
    if not isinstance(value, str) or value.lower() not in allowed:
        raise ProbArgumentError(f"{name} must be one of {', '.join(repr(a) for a in allowed)}; found {value!r}")
    return value.lower()


@lru_cache(maxsize=64)
def cached_transducer(pattern: ProbPattern, window: int | None) -> Transducer:
    """:func:`build_transducer`, built once per (pattern, window) in a process (None: the paper's)."""
    return build_transducer(pattern, window)


def group_matches(matches: Matches, overlap: str, window: int) -> Groups:
    """Groups of ``matches`` (positions) under ``overlap``."""
    if overlap == "single":
        return single_groups(matches.start, matches.end)
    return complete_groups(matches.start, matches.end, window)


def match_prob(pattern: ProbPattern | str, stream: ProbStream, *, overlap: str = "single",
               threshold: float = 0.0, window: int | None = None, output: str = "groups",
               transducer: Transducer | None = None,
               transducer_mode: str = "window") -> list[GroupRow] | list[MatchRow]:
    """Matches or groups of one stream with their probabilities (module docstring).

    Args:
        pattern: a contiguous pattern (text or compiled), e.g. ``"PATTERN a, b+, c"``.
        stream: the probabilistic stream.
        overlap: ``'single'`` or ``'complete'`` (groups only).
        threshold: the match threshold in [0, 1].
        window: the longest match in time points (or ``WITHIN n EVENTS`` in the pattern).
        output: ``'groups'`` or ``'matches'``.
        transducer: a prebuilt transducer for this pattern and window; by default one is
            built (and cached) for the window bounded by the longest group span.
        transducer_mode: how group probabilities are computed (groups only): ``'window'``
            (default, matches of at most ``window`` time points covering the group's core) or
            ``'paper'`` (the paper's ``|p| + 1``-state transducer without window; ``MODES``).

    Raises:
        PatternError: a bad pattern (``CEP-PAT-...``, ``CEP-PROB-001..003``).
        ProbArgumentError: a bad argument (``CEP-PROB-011``).
        ProbLimitError: too many runs or states (``CEP-PROB-020``).
    """
    p = compile_prob(pattern) if isinstance(pattern, str) else pattern
    overlap = check_choice("overlap", overlap, OVERLAPS)
    output = check_choice("output", output, OUTPUTS)
    transducer_mode = check_choice("transducer_mode", transducer_mode, MODES)
    threshold = check_threshold(threshold)
    w = resolve_window(p, window)
    if output == "matches":
        matches = find_matches(p, stream, window=w, threshold=threshold, values=True)
        return [MatchRow(i + 1, int(matches.t_start[i]), int(matches.t_end[i]), float(matches.probability[i]),
                         matches.values_of(i)) for i in range(len(matches))]
    columns = group_columns(p, stream, overlap, threshold, w, transducer, transducer_mode)
    cores = (columns["core_start"].tolist(), columns["core_end"].tolist()) if overlap == "complete" \
        else ([None] * len(columns["t_start"]),) * 2
    return [GroupRow(*row) for row in zip(columns["t_start"].tolist(), columns["t_end"].tolist(),
                                          columns["probability"].tolist(),
                                          columns["n_matches"].tolist(), *cores)]


def group_columns(pattern: ProbPattern, stream: ProbStream, overlap: str, threshold: float,
                  window: int, transducer: Transducer | None = None,
                  transducer_mode: str = "window") -> dict[str, np.ndarray]:
    """The groups of one stream as columns (the fields of :class:`GroupRow`, int64/float64);
    the arguments already checked (:func:`match_prob` checks them).

    ``core_start``/``core_end`` are time points under complete overlap and meaningless under
    single overlap (the row form makes them None). The Arrow adapter reads these columns
    directly instead of one object per group. ``transducer_mode='paper'`` computes the
    probabilities with the paper's transducer (``MODES``); the groups are the same.

    Example:
        >>> from cep.prob.stream import from_long
        >>> s = from_long([0, 1, 1], ["a", "b", "a"], [1.0, 0.5, 0.5])
        >>> cols = group_columns(compile_prob("PATTERN a, b"), s, "single", 0.0, 2)
        >>> cols["t_start"].tolist(), cols["probability"].tolist()
        ([0], [0.5])
    """
    # Groups need the matches' intervals only, not their values (memory linear in matches).
    matches = find_matches(pattern, stream, window=window, threshold=threshold, values=False)
    groups = group_matches(matches, overlap, window)
    # A run inside a span is never longer than the span, so the longest group bounds the
    # transducer's window: fewer states, the same probabilities (docs/prob.md, "Speed").
    core_start = groups.core_start
    if transducer_mode == "paper":
        tr = transducer if transducer is not None else cached_transducer(pattern, None)
        if overlap == "complete":  # T^A before t_f, T at t_f, T^B after (section 5.2); t_f = R
            core_start = groups.core_end
    else:
        longest = int((groups.t_end - groups.t_start).max()) + 1 if len(groups) else 1
        tr = transducer if transducer is not None else cached_transducer(pattern, min(window, longest))
    prob = group_probabilities(tr, stream, groups.t_start, groups.t_end, core_start, groups.core_end)
    t0 = int(stream.t[0]) if len(stream) else 0
    shifted = {name: np.asarray(values, dtype=np.int64) + t0 for name, values in (
        ("t_start", groups.t_start), ("t_end", groups.t_end), ("core_start", groups.core_start),
        ("core_end", groups.core_end))}
    return {**shifted, "probability": np.asarray(prob, dtype=np.float64),
            "n_matches": np.asarray(groups.n_matches, dtype=np.int64)}
