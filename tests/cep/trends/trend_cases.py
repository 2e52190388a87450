"""Random small trend queries and partitions for the property tests (hypothesis strategies).

A case is one partition: timestamps with ties, numeric attributes ``a`` and ``b`` (small ints
with duplicates and NULLs), ``x`` (floats with NaN), strings ``s`` and ``t`` (with NULLs), a
type column with a few non-members, and a query made of 0 to 3 neighbour predicates over
every comparator (linear functions with negative scales, divisions and offsets, ``[attr]``),
sometimes a filter, and sometimes windows.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=int(os.environ.get("TREND_EXAMPLES", "120")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

OPS = ["=", "<>", "<", "<=", ">", ">="]
FUNCTIONS = ["{x}", "{x}", "-{x}", "2 * {x}", "{x} * -2", "{x} + 1", "{x} - 1", "0.5 * {x} + 1",
             "{x} / 2", "-{x} / 3 - 1", "1 - {x}"]


@dataclass(frozen=True)
class Case:
    """One random partition and query."""

    query: str
    ts: np.ndarray
    columns: dict[str, np.ndarray]
    types: np.ndarray
    tiebreak: np.ndarray

    def __repr__(self) -> str:  # readable hypothesis failures
        cols = {k: v.tolist() for k, v in self.columns.items()}
        return (f"Case(query={self.query!r}, ts={self.ts.tolist()}, columns={cols}, "
                f"types={self.types.tolist()}, tiebreak={self.tiebreak.tolist()})")


@st.composite
def numeric_predicate(draw: st.DrawFn) -> str:
    attr = draw(st.sampled_from(["a", "b", "x", "ts"]))
    prev = draw(st.sampled_from(["a", "b", "x", "ts"]))
    op = draw(st.sampled_from(OPS))
    f = draw(st.sampled_from(FUNCTIONS)).format(x=f"e[i-1].{prev}")
    if draw(st.booleans()):
        return f"e[i].{attr} {op} {f}"
    flipped = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}[op]
    return f"{f} {flipped} e[i].{attr}"


@st.composite
def predicate(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["numeric", "numeric", "numeric", "string", "equivalence"]))
    if kind == "numeric":
        return draw(numeric_predicate())
    if kind == "string":
        op = draw(st.sampled_from(["=", "<>"]))
        return f"e[i].{draw(st.sampled_from(['s', 't']))} {op} e[i-1].{draw(st.sampled_from(['s', 't']))}"
    return f"[{draw(st.sampled_from(['a', 's', 'b']))}]"


@st.composite
def queries(draw: st.DrawFn, max_predicates: int = 3, windows: bool = True) -> str:
    preds = draw(st.lists(predicate(), min_size=0, max_size=max_predicates))
    if draw(st.integers(0, 3)) == 0:
        preds.append(draw(st.sampled_from(["e.a >= -2", "e.x IS NOT NULL", "e[i].s <> 'z'"])))
    text = "PATTERN e+"
    if preds:
        text += " WHERE " + " AND ".join(preds)
    if windows and draw(st.booleans()):
        w = draw(st.integers(1, 6))
        text += f" WITHIN {w} UNITS"
        if draw(st.booleans()):
            text += f" SLIDE {draw(st.integers(1, w))} UNITS"
    return text


def _ints(draw: st.DrawFn, n: int, nulls: bool) -> np.ndarray:
    values = draw(st.lists(st.one_of(st.integers(-3, 3), st.none()) if nulls else st.integers(-3, 3),
                           min_size=n, max_size=n))
    if any(v is None for v in values):
        return np.array(values, dtype=object)
    return np.array(values, dtype=np.int64)


@st.composite
def cases(draw: st.DrawFn, max_events: int = 8, max_predicates: int = 3, windows: bool = True) -> Case:
    n = draw(st.integers(0, max_events))
    ts = np.array(draw(st.lists(st.integers(0, 6), min_size=n, max_size=n)), dtype=np.int64)
    floats = draw(st.lists(st.sampled_from([-1.5, 0.0, 0.5, 1.0, 2.0, float("nan")]), min_size=n, max_size=n))
    strings = [draw(st.lists(st.sampled_from(["x", "y", "z", None]), min_size=n, max_size=n)) for _ in range(2)]
    columns = {
        "a": _ints(draw, n, nulls=draw(st.booleans())),
        "b": _ints(draw, n, nulls=False),
        "x": np.array(floats, dtype=np.float64),
        "s": np.array(strings[0], dtype=object),
        "t": np.array(strings[1], dtype=object),
    }
    types = np.array(draw(st.lists(st.sampled_from(["e", "e", "e", "f"]), min_size=n, max_size=n)), dtype=object)
    tiebreak = np.array(draw(st.permutations(list(range(n)))), dtype=np.int64)
    return Case(draw(queries(max_predicates, windows)), ts, columns, types, tiebreak)
