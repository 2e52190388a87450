"""Shared inputs of the matcher tests: random small streams and a pool of pattern templates.

Streams have 8-14 events of 3-4 types, timestamps with ties, small integer attributes ``v``
(0..3) and ``w`` (0..1) with some NULLs. The templates cover every operator, quantifier, window
kind and condition shape of docs/semantics.md; every template runs under every policy.
:func:`define_var_patterns` draws random patterns whose DEFINE conditions use join variables.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from cep.lang import parse_pattern
from cep.match import EventStream
from cep.match.compile.compiler import compile_query
from cep.match.compile.normal import normalize
from cep.oracles.check import BindingChecker
from cep.oracles.values import evaluate

POLICIES = ("skip-till-any-match", "skip-till-next-match", "strict-contiguity")
TREES = ("left-deep", "right-deep", "bushy", "inner")
GROUPINGS = ("left", "right", "late")
# Every tree kind with the cost model's grouping of the Kleene closures, then with every
# closure grouped left, grouped right and combined late (cep/match/plan/plans.py; a closure that
# cannot be grouped as forced falls back to left): each grouping meets the oracle.
PLANS = TREES + tuple(f"{tree}:{grouping}" for tree in TREES for grouping in GROUPINGS)

TEMPLATES = (
    # sequences: followed-by (;) and next (,), cross conditions
    "PATTERN A; B",
    "PATTERN A, B",
    "PATTERN A, B; C, D",
    "PATTERN A; B; C WHERE C.v > A.v",
    "PATTERN A; B, C WHERE B.v = C.v",
    "PATTERN A; B; C; D WHERE D.v > B.v AND C.v <> A.v",
    "PATTERN A; B; C; D WHERE D.v >= A.v AND C.v > B.v WITHIN 9 UNITS",
    "PATTERN A; B; C WHERE A.v + B.v * 2 > C.v",
    "PATTERN A; B WHERE B.v IN (1, 2) AND coalesce(A.v, 0) = B.w",
    "PATTERN A; B WHERE A.v IS NULL OR B.v BETWEEN A.v AND 3",
    "PATTERN A; B WHERE A.v / B.v > 1 OR A.v % 2 = 1",
    "PATTERN A; B WHERE lower(A.type) = 'a' AND length(B.type) = 1",
    "PATTERN A; B WHERE t(B) - t(A) < 3 MICROSECONDS",
    "PATTERN A; B; C WHERE t(C) - t(A) >= 2 UNITS",
    # OR of events, OR of sequences, AND
    "PATTERN SEQ(A, OR(B, C), D)",
    "PATTERN A; OR(B, C); D WHERE D.v >= B.v",
    "PATTERN (A; B) | (C; D)",
    "PATTERN AND(A, B)",
    "PATTERN A; (B & C) WITHIN 8 UNITS",
    "PATTERN AND(A, B+) WITHIN 6 UNITS",
    # NOT in the middle and at the end (with a window)
    "PATTERN A; NOT(B); C",
    "PATTERN A; NOT(B); C WHERE B.v > A.v",
    "PATTERN A; NOT(OR(B, D)); C WHERE D.v = C.v",
    "PATTERN A; B; NOT(C) WITHIN 4 UNITS",
    "PATTERN A; NOT(B); C; NOT(D) WITHIN 6 UNITS",
    "PATTERN A; B; NOT(C) WITHIN 5 EVENTS",
    # Kleene + * ? {n} {n,m} {n,}, iteration predicates, aggregates
    "PATTERN A; B+; C",
    "PATTERN A; B*; C",
    "PATTERN A; B?; C",
    "PATTERN A; B{2}; C",
    "PATTERN A; B{1,2}; C",
    "PATTERN A; B{2,}; C WITHIN 6 UNITS",
    "PATTERN A; B+ WITHIN 5 UNITS",
    "PATTERN A; B{2}",
    "PATTERN B+; C",
    "PATTERN B*; C WHERE C.v > 0",
    "PATTERN A, B+, C",
    "PATTERN A, B*, C",
    "PATTERN A; B?, C",
    "PATTERN A; B+, C WHERE B.w = C.w",
    "PATTERN A; B*; C*; D",
    "PATTERN A; B+; C WHERE B[i].v > B[i-1].v",
    "PATTERN A; B+ WHERE B[i].v >= B[i-1].v WITHIN 7 UNITS",
    "PATTERN A; B{1,3}; C WHERE B[i].v <> B[i-1].v",
    "PATTERN A; B+; C WHERE B.v > A.v",
    "PATTERN A; B+; C WHERE avg(B.v) > 1",
    "PATTERN A; B+; C WHERE B[i].v >= avg(B[..i-1].v)",
    "PATTERN A; B+; C WHERE count(B.v) = 2 AND max(B.v) < 3",
    "PATTERN A; B+; C WHERE sum(B.v) > A.v AND min(B[..i].v) >= 1",
    "PATTERN A; B+; C WHERE C.v > max(B.v)",
    "PATTERN B+; C WHERE B[1].v < C.v",
    "PATTERN A; B+; C WHERE B[2].v > A.v",
    "PATTERN A; OR(B, C)+; D",
    "PATTERN A; (B | C)+; D WHERE [w]",
    "PATTERN A; B+; NOT(D); C",
    "PATTERN A; NOT(C); B+; D",
    "PATTERN A; NOT(D); B+ WHERE D.v = B.v",
    "PATTERN A; B*; NOT(D) WITHIN 5 UNITS",
    "PATTERN B*; C; NOT(D); A",
    "PATTERN A; B+; C+ WHERE C.v >= B.v WITHIN 6 UNITS",
    # closures grouped with their right neighbour (grown backwards): leading closures, NOTs on
    # either side, iteration conditions, aggregates, windows, chains of closures
    "PATTERN B+; C; NOT(D) WITHIN 5 UNITS",
    "PATTERN B{2}; C WHERE B[i].v > B[i-1].v",
    "PATTERN B+; NOT(D); C WHERE D.v = B.v",
    "PATTERN A; B{2,3}; C WITHIN 4 EVENTS SLIDE 2 EVENTS",
    "PATTERN B*; C*; D",
    "PATTERN A; B+; C WHERE [w] WITHIN 6 UNITS",
    "PATTERN A; B+; C WHERE B[i].v > B[i-1].v AND min(B[..i].v) >= 1",
    "PATTERN B+, C, D WHERE B[i].v <= B[i-1].v",
    "PATTERN A; (B | C)+; D WHERE B[i].v > B[i-1].v AND C.v >= D.v",
    "PATTERN A; B+; C WHERE B[i].v >= B[i-1].v OR B.w = 1",
    "PATTERN A; B+; C WHERE B.v < C.v AND t(C) - t(B) < 4 UNITS",
    # closures with a specified size combined late (cep/match/plan/late.py): filters, conditions on
    # single iterations, NOTs and conditions next to them, [attr], join variables, windows, two
    # closures, and an OR closure that late combination falls back from
    "PATTERN A; B{2}; C WHERE B.v > 0",
    "PATTERN A; B{1,3}; C WHERE B.v >= A.v AND C.v > A.v",
    "PATTERN A; B[2]; C WHERE B.w = 1 WITHIN 8 UNITS",
    "PATTERN A; B{2}; NOT(D); C WITHIN 7 UNITS",
    "PATTERN A; NOT(D); B{1,2}; C WHERE [w]",
    "PATTERN A; B{2}; NOT(D); C WHERE D.v = B.v",
    "PATTERN A; B{2,3}; C; D{1,2}; A WHERE B.v < D.v WITHIN 10 UNITS",
    "PATTERN A; B{2}; C WHERE A.w = $x AND B.w = $x",
    "PATTERN A; B{1,2}; C WHERE B.v < C.v AND t(C) - t(B) < 5 UNITS",
    "PATTERN A; B{2}; C WITHIN 5 EVENTS SLIDE 3 EVENTS",
    "PATTERN A; (B | D){2}; C",
    # windows: TIME, EVENTS, UNITS, SLIDE, WINDOW [a, b]
    "PATTERN A; B; C WITHIN 4 MICROSECONDS",
    "PATTERN A; B; C WITHIN 5 EVENTS",
    "PATTERN A; B; C WITHIN 2.5 UNITS",
    "PATTERN A; B; C WITHIN 4 UNITS SLIDE 2 UNITS",
    "PATTERN A; B; C WITHIN 3 EVENTS SLIDE 2 EVENTS",
    "PATTERN A; B; C WINDOW [2, 9]",
    "PATTERN A; B; C WITHIN 6 UNITS WINDOW [1, 10]",
    "PATTERN A; B WINDOW ['1970-01-01T00:00:00.000002', '1970-01-01T00:00:00.000009']",
    # [attr], $x, DEFINE
    "PATTERN A; B; C WHERE [w]",
    "PATTERN A; B; C WHERE [v] AND [w]",
    "PATTERN A; B+ WHERE [w] WITHIN 6 UNITS",
    "PATTERN A; B WHERE A.w = $x AND B.w = $x",
    "PATTERN A; B+; C WHERE A.w = $x AND B.w = $x AND C.w = $x",
    "PATTERN A; NOT(D); C WHERE D.w = $x AND A.w = $x",
    "PATTERN X; Y DEFINE X AS v > 1, Y AS v <= 1",
    "PATTERN A; OR(X, Y); B DEFINE X AS v > 0, Y AS v < 2",
    "PATTERN F, F, F @(t(F3) - t(F1) < 5 MICROSECONDS); S DEFINE F AS v = 0, S AS v > 0",
    # single components, OR iterations, several NOTs, constants, more join variables
    "PATTERN A",
    "PATTERN A+ WITHIN 4 UNITS",
    "PATTERN A{2}",
    "PATTERN B+, C",
    "PATTERN A; OR(X, Y)+; B DEFINE X AS v > 0, Y AS v < 2",
    "PATTERN A; NOT(B); NOT(D); C WHERE B.v > A.v AND D.v < C.v",
    "PATTERN (A; B) | (C; D) WHERE B.v > A.v AND D.v > C.v",
    "PATTERN A; NOT(D); B+; C WHERE D.v > B.v",
    "PATTERN A; B WHERE A.w = $x OR B.w = $x",
    "PATTERN A; B; C WHERE A.v = $x AND C.v = $x AND B.w = $y AND C.w = $y",
    "PATTERN A; B @(t(B) - t(A) < 4 UNITS); C",
    "PATTERN A; B+; C WHERE B[3].v >= 0",
    "PATTERN A; B{1,3}; C WHERE avg(B[..i-1].v) <= B[i].v AND B.w = 1",
    "PATTERN A; B*; C WHERE avg(B.v) > 1 OR count(B.v) = 0",
    "PATTERN A, B{2}, C",
    "PATTERN A; B?; NOT(D); C",
    "PATTERN A; B+; C+; D WHERE B[i].v > B[i-1].v AND C[i].v < C[i-1].v",
    "PATTERN AND(A, B, C) WITHIN 6 UNITS",
    "PATTERN A; NOT(D); B WHERE [w]",
    "PATTERN A; B; NOT(D) WHERE [w] WITHIN 5 UNITS",
    "PATTERN A; B+; NOT(C) WITHIN 5 UNITS",
    "PATTERN A; B; C WHERE 1 = 1",
    "PATTERN A; B WHERE 1 = 0",
    "PATTERN A; B WHERE A.v = B.v AND A.ts < B.ts",
    "PATTERN A; B WITHIN 2 UNITS SLIDE 1 UNITS",
    "PATTERN A; B+ WITHIN 3 EVENTS SLIDE 2 EVENTS",
    # $x inside DEFINE: the class binds the variable, every event of the class agrees on it
    "PATTERN A; B DEFINE A AS type = 'A' AND w = $x, B AS type = 'B' AND w = $x",
    "PATTERN A; B+; C DEFINE B AS type = 'B' AND w = $x WHERE A.w = $x",
    "PATTERN A; NOT(D); C DEFINE D AS type = 'D' AND w = $x WHERE A.w = $x",
    "PATTERN F, F; S DEFINE F AS type <> 'C' AND v = $x, S AS type = 'C'",
    "PATTERN A; B DEFINE B AS v = $x WHERE A.v = $x",
    "PATTERN A; B; C DEFINE B AS w = $x OR v = 3 WHERE A.w = $x",
    "PATTERN A; B DEFINE B AS type = 'B' AND v > $m WHERE A.v = $m",
    "PATTERN A; OR(X, Y)+; C DEFINE X AS type = 'B' AND w = $x, Y AS type = 'D' AND v = $x WHERE A.w = $x",
    "PATTERN A; B; C DEFINE B AS type = 'B' AND v = $p AND w = $q WHERE A.v = $p AND C.w = $q",
    "PATTERN A; B{1,3}; C DEFINE B AS type = 'B' AND w = $x WHERE B[i].v >= B[i-1].v AND C.w = $x",
    "PATTERN A; B*; C DEFINE B AS type = 'B' AND v = $x WHERE C.v = $x",
    "PATTERN A; B DEFINE B AS type = 'B' AND ts - $s < 4 WHERE A.ts = $s",
    "PATTERN A; (B | C) DEFINE B AS type = 'B' AND $x = 1, C AS type = 'C' WHERE A.w = $x",
    "PATTERN A; B+; NOT(D) DEFINE B AS type = 'B' AND v = $x, D AS type = 'D' AND v = $x WITHIN 5 UNITS",
)


@st.composite
def streams(draw: Any, min_size: int = 8, max_size: int = 14) -> EventStream:
    """A random partition: 3-4 types, timestamps with ties, small attributes with NULLs."""
    n = draw(st.integers(min_size, max_size))
    letters = draw(st.sampled_from(["ABC", "ABCD"]))
    types = draw(st.lists(st.sampled_from(letters), min_size=n, max_size=n))
    ts = sorted(draw(st.lists(st.integers(0, 12), min_size=n, max_size=n)))
    v = draw(st.lists(st.sampled_from([0, 1, 2, 3, None]), min_size=n, max_size=n))
    w = draw(st.lists(st.sampled_from([0, 1, None]), min_size=n, max_size=n))
    ids = draw(st.permutations(list(range(n))))
    return EventStream.from_columns(ids=ids, ts=ts, types=types, attrs={"v": v, "w": w})


# Pieces of random patterns whose DEFINE conditions use join variables: a DEFINE conjunct
# with $x or $y (each binds or tests the variable), and an optional variable-free class test
# that keeps Kleene classes small enough for the oracle's enumeration.
_DEFINE_VAR_CONJUNCTS = ("w = $x", "v = $x", "v >= $x", "$x = 1", "(w = $x OR v = 3)",
                         "coalesce(w, 0) = $x", "v = $y", "w <> $y")
_QUANTIFIERS = ("", "", "+", "*", "?", "{2}", "{1,2}")


@st.composite
def define_var_patterns(draw: Any) -> str:
    """A random pattern whose DEFINE conditions carry ``$x`` / ``$y`` (docs/semantics.md).

    Two or three components over the classes A-D (a class may repeat: aliases A1, A2), with
    quantifiers, ``;`` or ``,`` links, an optional NOT in the middle or (with WITHIN) at the
    end, a DEFINE with a variable for some of the classes and optionally a WHERE condition
    that binds a variable on one alias.
    """
    n = draw(st.integers(2, 3))
    classes = [draw(st.sampled_from("ABCD")) for _ in range(n)]
    quants = [draw(st.sampled_from(_QUANTIFIERS)) for _ in range(n)]
    if all(q in ("*", "?") for q in quants):
        quants[0] = ""  # a pattern that can match the empty sequence is rejected
    links = [draw(st.sampled_from(("; ", ", "))) for _ in range(n - 1)]
    negated = draw(st.sampled_from(("", "", "middle", "end")))
    parts = [classes[0] + quants[0]]
    for k in range(1, n):
        if negated == "middle" and k == 1:
            parts.append("; NOT(D)")
        parts.append(links[k - 1] + classes[k] + quants[k])
    text = "PATTERN " + "".join(parts)
    within = " WITHIN 6 UNITS" if negated == "end" or draw(st.booleans()) else ""
    if negated == "end":
        text += "; NOT(D)"
    used = sorted(set(classes) | ({"D"} if negated else set()))
    kleene = {c for c, q in zip(classes, quants) if q}
    defines = []
    for cls in used:
        if not draw(st.booleans()) and cls != used[0]:
            continue
        conjunct = draw(st.sampled_from(_DEFINE_VAR_CONJUNCTS))
        if cls in kleene or draw(st.booleans()):
            # Kleene classes always keep a type test: an all-events class makes the oracle's
            # enumeration of iterations exponential in the stream length.
            conjunct = f"type = '{cls}' AND {conjunct}"
        defines.append(f"{cls} AS {conjunct}")
    text += " DEFINE " + ", ".join(defines)
    aliases = parse_pattern(text + within).aliases()
    binder = draw(st.sampled_from(("", "", "w = $x", "v = $x", "v = $y")))
    if binder:
        text += f" WHERE {draw(st.sampled_from(aliases))}.{binder}"
    return text + within


def random_stream(seed: int, n: int | None = None) -> EventStream:
    """A reproducible stream like :func:`streams`, from a seed (for sweeps without hypothesis)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 15)) if n is None else n
    letters = "ABCD" if seed % 2 else "ABC"
    types = [letters[k] for k in rng.integers(0, len(letters), n)]
    ts = np.sort(rng.integers(0, 13, n)).tolist()
    v = [None if x == 4 else int(x) for x in rng.integers(0, 5, n)]
    w = [None if x == 2 else int(x) for x in rng.integers(0, 3, n)]
    return EventStream.from_columns(ids=range(n), ts=ts, types=types, attrs={"v": v, "w": w})


def oracle_masks(text: str, stream: EventStream, policy: str) -> dict[str, np.ndarray]:
    """Masks as Spark would compute them from ``CompiledQuery.pushdown``, but evaluated with the
    oracle's scalar interpreter (the type test when the class has no DEFINE, AND every
    pushed-down condition, which starts with the class's DEFINE, or with its variable-free
    conjuncts when the DEFINE uses a join variable)."""
    cq = compile_query(text, policy=policy)
    checker = BindingChecker(normalize(parse_pattern(text), policy), stream)
    masks = {}
    for alias, conds in cq.pushdown.items():
        cls = cq.alias_classes[alias]
        values = []
        for pos in range(len(stream)):
            ok = cls in cq.defines or checker.member(pos, cls, {})
            for cond in conds:
                assert not cond.variables, f"{cond.text!r} uses a join variable: never pushed down"

                def lookup(name: str, cond: Any = cond, pos: int = pos) -> Any:
                    ref = cond.ref(name)
                    attr = getattr(ref, "attr", None)
                    return checker.attr(pos, "ts" if attr is None else attr)

                ok = ok and evaluate(cond.expr, lookup) is True
            values.append(ok)
        masks[alias] = np.array(values, dtype=bool)
    return masks


def with_masks(stream: EventStream, masks: dict[str, np.ndarray]) -> EventStream:
    """The same stream carrying precomputed masks."""
    return EventStream(stream.ids, stream.ts, stream.types, stream.attrs, masks)
