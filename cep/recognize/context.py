"""Conditions that read the match turned into one-row conditions, by unrolling the program.

A DEFINE such as ``DOWN AS DOWN.v0 < LAST(DOWN.v0, 1)`` reads the match so far, so in
general the matcher asks it per partial match (:mod:`cep.recognize.condition`), which keeps
threads apart by history and costs microseconds per row. Yet in ``START_ROW DOWN+ UP`` the
row ``LAST(DOWN.v0, 1)`` names is, at the second DOWN and later, always the row just before the
current one: where the pattern fixes the labels of the last few rows, a logical navigation is
a physical offset, and the condition is a column Spark's rows already carry.

This module builds that form. The program is multiplied by a *context*: the labels of the
last ``depth`` rows of the match so far and whether those are the whole match (the start:
nothing matched). Each ``CONSUME`` of a variable whose DEFINE reads the match becomes one
*virtual variable* per context it can be reached in, whose condition is the DEFINE with every
navigation resolved against that context (:func:`resolve`):

* to ``["at", offset, column]``: the column at a physical offset from the current row (NULL
  outside the partition), when the labels in the context place the row;
* to a literal, when the navigation names no row of the match (``LAST(DOWN.v0, 1)`` at the
  first DOWN is NULL) or names a row's label (CLASSIFIER);
* to ``["unknown"]``, when the row lies further back than the context reaches.

The vectorised evaluator (:mod:`cep.recognize.vector`) computes each virtual variable's
condition over a whole task; where a row's value depends on an ``unknown`` it is undecided,
and that partition keeps the per-thread matcher. Elsewhere the product program has conditions
of one row only, so the determinised matcher (:mod:`cep.recognize.dfa`) runs it, and its
labels map back to the user's variables (:attr:`Contextual.variable`). The idea is the
classical one of specialising an automaton by a bounded history (a finite-state transducer of
the last ``depth`` labels); the matches are the same because every thread's path through the
product is its path through the program, with the context it had.

Example:
    >>> from cep.recognize.program import compile_row_pattern
    >>> down = ["op", "<", ["col", "v"], ["nav", "LAST", ["DOWN"], 1, "v", 0]]
    >>> shape = contextualise(compile_row_pattern("START_ROW DOWN+"), {"DOWN": down})
    >>> [(shape.program.variables[v], tree) for v, tree in sorted(shape.trees.items())]
    ... # doctest: +NORMALIZE_WHITESPACE
    [('DOWN@1', ['op', '<', ['at', 0, 'v'], ['null']]),
     ('DOWN@2', ['op', '<', ['at', 0, 'v'], ['at', -1, 'v']])]
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from cep.recognize.program import CONSUME, JMP, MATCH, SPLIT, Program

__all__ = ["MAX_DEPTH", "MAX_VIRTUAL", "Contextual", "contextualise", "resolve"]

MAX_DEPTH = 4
"""Most labels a context remembers; a navigation further back stays unknown."""

MAX_VIRTUAL = 60
"""Most virtual variables (a row's mask stays one machine integer) and, times 64, most
instructions of the product; a larger product keeps the per-thread matcher."""

_Context = tuple[tuple[int, ...], bool]  # (labels of the last rows, oldest first; whole match)


@dataclass(frozen=True)
class Contextual:
    """A program multiplied by the context of its last labels.

    Attributes:
        program: the product; its variables are virtual (``NAME@k``).
        variable: per virtual variable, the user's variable (an index into the original
            program's variables).
        trees: per virtual variable whose user variable reads the match, its condition with
            every navigation resolved (the module docstring's forms); the others accept what
            the user's variable accepts.
        before: per virtual variable, how many rows of the match at least precede a row
            mapped to it (its contexts' labels, one more where those are not the whole
            match): a row closer to its partition's start is never tested as it.
    """

    program: Program
    variable: tuple[int, ...]
    trees: dict[int, Any]
    before: tuple[int, ...]


def depth_for(trees: dict[str, Any]) -> int:
    """How many labels a context must keep so that ``LAST(..., k)`` can be placed: the
    largest ``k`` plus one (at least one), at most :data:`MAX_DEPTH`."""
    deepest = 0

    def walk(tree: Any) -> None:
        nonlocal deepest
        if isinstance(tree, list) and tree:
            if tree[0] == "nav":
                deepest = max(deepest, tree[3] + 1)
            for item in tree[1:]:
                walk(item)

    for tree in trees.values():
        walk(tree)
    return min(max(deepest, 1), MAX_DEPTH)


def contextualise(program: Program, trees: dict[str, Any],
                  depth: int | None = None) -> Contextual | None:
    """The product of ``program`` and the contexts of its last ``depth`` labels.

    Args:
        program: the compiled pattern.
        trees: the conditions that read the match, by variable name (the translator's trees).
        depth: labels kept per context; by default :func:`depth_for` of ``trees``.

    Returns:
        None when a condition holds what cannot be resolved to one row (running aggregates,
        MATCH_NUMBER(), a CLASSIFIER at a physical offset) or the product is larger than
        :data:`MAX_VIRTUAL` allows.
    """
    if depth is None:
        # FIRST is placed only while the context holds the whole match: the deepest context
        # whose product stays small, else the shallowest that places LAST.
        least = depth_for(trees)
        for deeper in range(MAX_DEPTH, least, -1) if _reads_first(trees) else ():
            shape = contextualise(program, trees, deeper)
            if shape is not None:
                return shape
        depth = least
    names = program.variables
    reading = {names.index(name): tree for name, tree in trees.items() if name in names}
    ops, arg1, arg2 = program.ops, program.arg1, program.arg2

    nodes: dict[tuple[int, _Context], int] = {}
    order: list[tuple[int, _Context]] = []

    def node(pc: int, context: _Context) -> int:
        key = (pc, context)
        if key not in nodes:
            nodes[key] = len(order)
            order.append(key)
        return nodes[key]

    node(0, ((), True))
    virtual: dict[Any, int] = {}
    variable: list[int] = []
    before: list[int] = []
    labels: list[str] = []
    resolved: dict[int, Any] = {}
    # Each node becomes one instruction, and a JMP after it where the original went on to
    # pc + 1 (the product places the next node elsewhere).
    code: list[tuple[int, Any, Any]] = []
    at: list[int] = []
    k = 0
    while k < len(order):
        pc, context = order[k]
        k += 1
        at.append(len(code))
        op = ops[pc]
        if op == CONSUME:
            v = arg1[pc]
            key: Any = v
            tree = None
            if v in reading:
                tree = resolve(reading[v], names, v, *context)
                if tree is None:
                    return None
                key = (v, json.dumps(tree))
            ahead = len(context[0]) + (0 if context[1] else 1)
            if key not in virtual:
                virtual[key] = len(variable)
                variable.append(v)
                before.append(ahead)
                labels.append(f"{names[v]}@{sum(1 for u in variable if u == v)}")
                if tree is not None:
                    resolved[virtual[key]] = tree
            before[virtual[key]] = min(before[virtual[key]], ahead)
            code.append((CONSUME, virtual[key], arg2[pc]))
            code.append((JMP, ("node", node(pc + 1, _step(context, v, depth))), 0))
        elif op == SPLIT:
            code.append((SPLIT, ("node", node(arg1[pc], context)),
                         ("node", node(arg2[pc], context))))
        elif op == JMP:
            code.append((JMP, ("node", node(arg1[pc], context)), 0))
        elif op == MATCH:
            code.append((MATCH, 0, 0))
        else:  # MARK, CHECK and the anchors go on to the next instruction
            code.append((op, arg1[pc], arg2[pc]))
            code.append((JMP, ("node", node(pc + 1, context)), 0))
        if len(variable) > MAX_VIRTUAL or len(code) > 64 * MAX_VIRTUAL:
            return None

    def target(x: Any) -> int:
        return at[x[1]] if isinstance(x, tuple) else x

    product = Program(tuple(op for op, _, _ in code), tuple(target(a) for _, a, _ in code),
                      tuple(target(b) for _, _, b in code), tuple(labels))
    return Contextual(product, tuple(variable), resolved, tuple(before))


def _reads_first(trees: dict[str, Any]) -> bool:
    return '"FIRST"' in json.dumps(list(trees.values()))


def _step(context: _Context, v: int, depth: int) -> _Context:
    """The context after a row mapped to ``v``."""
    labels, whole = context
    labels = labels + (v,)
    if len(labels) > depth:
        return labels[-depth:], False
    return labels, whole


def resolve(tree: Any, names: tuple[str, ...], current: int, before: tuple[int, ...],
            whole: bool) -> Any:
    """``tree`` (a condition of variable ``current``) with every navigation placed.

    Args:
        tree: the translator's condition tree (:mod:`cep.recognize.condition`).
        names: the primary variables; labels are their indexes.
        current: the variable the row being tested is mapped to.
        before: the labels of the rows just before it in the match, oldest first.
        whole: whether ``before`` is the whole match so far.

    Returns:
        The tree with ``["col", c]`` as ``["at", 0, c]`` and each ``nav`` placed; None when
        it holds something that depends on more than labels and offsets.

    Example:
        >>> nav = ["nav", "LAST", ["A"], 0, "price", -1]   # PREV(LAST(A.price), 1)
        >>> resolve(nav, ("A", "B"), 1, (0, 1), True)
        ['at', -3, 'price']
        >>> resolve(nav, ("A", "B"), 1, (1, 1), False)
        ['unknown']
    """
    kind = tree[0]
    if kind == "col":
        return ["at", 0, tree[1]]
    if kind in ("num", "str", "bool", "null"):
        return tree
    if kind == "op":
        args = [resolve(t, names, current, before, whole) for t in tree[2:]]
        return None if any(a is None for a in args) else ["op", tree[1], *args]
    if kind != "nav":
        return None  # running aggregates, MATCH_NUMBER()
    logical, members, k, column, physical = tree[1:]
    index = {name: i for i, name in enumerate(names)}
    wanted = None if members is None else {index.get(m, -1) for m in members}
    path = before + (current,)
    # Offsets of the rows in `path` that are mapped to one of `members`, as the navigation
    # counts them: LAST from the current row back, FIRST from the match's first row on.
    hits = [o for o in range(0, -len(path), -1) if wanted is None or path[o - 1] in wanted]
    if logical == "FIRST":
        if not whole:
            return ["unknown"]
        hits.reverse()
    if len(hits) <= k:
        return ["null"] if whole else ["unknown"]
    offset = hits[k] + physical
    if column is not None:
        return ["at", offset, column]
    if physical:
        return None  # a label beside the match's rows is the matcher's to know
    return ["str", names[path[offset - 1]]]
