"""The matcher over the unrolled program: a task's rows as the product's variable masks.

:mod:`cep.recognize.context` multiplies a program by the labels of its last rows, so that a
DEFINE reading the match becomes one condition of one row per copy of its variable;
:mod:`cep.recognize.vector` computes those over the task. This module puts the two together:
:func:`unroll` gives every row its mask of virtual variables and flags the undecided rows, and
:func:`match_unrolled` runs the determinised matcher over one partition of it and maps the
labels back to the user's variables, or says None when a row of the partition is undecided
(the caller then asks the conditions per thread, :mod:`cep.recognize.condition`).

Example:
    >>> import numpy as np
    >>> from cep.recognize.context import contextualise
    >>> from cep.recognize.program import compile_row_pattern
    >>> from cep.recognize.vector import Column
    >>> before = ["nav", "LAST", ["A"], 1, "v", 0]            # A AS LAST(A.v, 1) IS NULL
    >>> falling = ["op", "or", ["op", "isnull", before],       #   OR v < LAST(A.v, 1)
    ...            ["op", "<", ["col", "v"], before]]
    >>> shape = contextualise(compile_row_pattern("A+"), {"A": falling})
    >>> v = Column(np.array([3, 2, 1, 5, 4]), np.zeros(5, dtype=bool), "number")
    >>> rows = unroll(shape, np.ones((5, 1), dtype=bool), {"v": v}, np.zeros(5, dtype=int),
    ...               Skip())
    >>> found = match_unrolled(rows, 0, 5)
    >>> found.starts, found.lengths, found.labels
    ([0, 3], [3, 2], [0, 0, 0, 0, 0])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cep.recognize.context import Contextual
from cep.recognize.matcher import MatchColumns, Skip, Within, match_columns, row_masks
from cep.recognize.vector import Column, evaluate

__all__ = ["Unrolled", "match_unrolled", "unroll"]


@dataclass(frozen=True)
class Unrolled:
    """A task's rows over a contextual product.

    Attributes:
        shape: the product (:func:`cep.recognize.context.contextualise`).
        masks: per row, bit ``v'`` set when virtual variable ``v'`` accepts it.
        undecided: per row, whether a condition's value there depends on a row further back
            than the context placed, while the user's variable accepts the row.
        skip: ``AFTER MATCH SKIP`` over virtual variables.
    """

    shape: Contextual
    masks: list[int]
    undecided: np.ndarray
    skip: Skip


def unroll(shape: Contextual, accepts: np.ndarray, columns: dict[str, Column],
           partition: np.ndarray, skip: Skip) -> Unrolled:
    """Every row of a task as the product's masks.

    Args:
        shape: the contextual product.
        accepts: ``n x V`` booleans over the user's variables (Spark's one-row DEFINE columns).
        columns: the task's columns the resolved conditions name.
        partition: per row, its partition's number.
        skip: ``AFTER MATCH SKIP`` over the user's variables.

    Raises:
        cep.recognize.vector.Unsupported: a condition is not vectorised.
    """
    n = len(partition)
    virtual = np.zeros((n, len(shape.variable)), dtype=bool)
    undecided = np.zeros(n, dtype=bool)
    starts = np.flatnonzero(np.r_[True, partition[1:] != partition[:-1]]) if n else partition
    # Each row's position in its partition: a row with fewer rows before it than a virtual
    # variable's contexts hold is never tested as it (its conditions' offsets there would
    # leave the partition and read NULL, not the match's rows).
    position = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n])) if n else partition
    for v, user in enumerate(shape.variable):
        allowed = accepts[:, user] & (position >= shape.before[v])
        if v in shape.trees:
            true, unknown = evaluate(shape.trees[v], columns, partition)
            virtual[:, v] = allowed & true
            undecided |= allowed & unknown
        else:
            virtual[:, v] = allowed
    # A target variable of SKIP TO stands for all its copies.
    targets = frozenset(v for v, user in enumerate(shape.variable) if user in skip.targets)
    return Unrolled(shape, row_masks(virtual), undecided,
                    Skip(skip.mode, targets, skip.name, skip.span))


def match_unrolled(rows: Unrolled, lo: int, hi: int, text: str = "",
                   within: Within | None = None) -> MatchColumns | None:
    """The matches of the partition of rows ``lo`` to ``hi`` (positions from ``lo``), labels
    of the user's variables; None when a row of it is undecided."""
    if rows.undecided[lo:hi].any():
        return None
    found = match_columns(rows.shape.program, rows.masks[lo:hi], rows.skip, text=text,
                          within=within)
    variable = rows.shape.variable
    found.labels[:] = [variable[v] for v in found.labels]
    return found
