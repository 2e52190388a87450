"""The epsilon closure of a row-pattern program: the threads one step adds.

Both matchers step their threads through it: the Pike VM of :mod:`cep.recognize.matcher`
and the determinised one of :mod:`cep.recognize.dfa`, so the preference order and the rule
against empty iterations (docs/match-recognize.md, "Empty iterations") are written once.

Example:
    >>> from cep.recognize.parser import parse_row_pattern
    >>> from cep.recognize.program import compile_pattern
    >>> add = closure(compile_pattern(parse_row_pattern("A? B")), n=2)
    >>> threads = []
    >>> add(threads, set(), 0, None, 0, 0)
    >>> [pc for pc, _, _ in threads]   # CONSUME A is preferred to skipping it for CONSUME B
    [1, 2]
"""

from __future__ import annotations

from typing import Any, Callable

from cep.recognize.program import (ANCHOR_END, ANCHOR_START, CHECK, CONSUME, JMP, MARK, MATCH,
                                   SPLIT, Program)

__all__ = ["closure"]


def closure(program: Program, n: int, mode: int = 0
            ) -> Callable[[list, set, int, Any, int, int], None]:
    """The epsilon closure of one step, as a function bound to ``program`` and ``n`` rows.

    ``add(threads, seen, pc, history, start, at)`` appends to ``threads`` a thread
    ``(pc, history, start)`` for every ``CONSUME`` or ``MATCH`` reachable from ``pc`` without
    consuming a row, depth first in preference order, skipping what ``seen`` (one set per
    step) already holds; ``at`` is the row the next ``CONSUME`` would read (anchors test it
    against 0 and ``n``). ``mode`` says how threads are told apart: 0 by instruction, 1 and
    first row, 2 and history. The Pike VM (:func:`cep.recognize.matcher.match_masks`) and the determinised
    matcher (:mod:`cep.recognize.dfa`) share it.
    """
    ops, arg1, arg2 = program.ops, program.arg1, program.arg2

    def add(threads: list, seen: set, pc: int, history: Any, start: int, at: int) -> None:
        # The epsilon closure, depth first in preference order; `seen` spans the whole step.
        # A control instruction is visited once per set of loops whose current iteration has
        # consumed nothing (MARK sets a loop's bit, CHECK kills a path with it set); a CONSUME
        # or MATCH once (after a row is consumed those bits no longer matter).
        stack = [(pc, 0)]
        while stack:
            pc, empty = stack.pop()
            op = ops[pc]
            if op == CONSUME or op == MATCH:
                key = pc if mode == 0 else (pc, start if mode == 1 else id(history))
            else:
                key = (pc, empty) if mode == 0 else (pc, empty,
                                                     start if mode == 1 else id(history))
            if key in seen:
                continue
            seen.add(key)
            if op == JMP:
                stack.append((arg1[pc], empty))
            elif op == SPLIT:
                stack.append((arg2[pc], empty))
                stack.append((arg1[pc], empty))
            elif op == MARK:
                stack.append((pc + 1, empty | 1 << arg1[pc]))
            elif op == CHECK:
                if not empty >> arg1[pc] & 1:
                    stack.append((pc + 1, empty))
            elif op == ANCHOR_START:
                if at == 0:
                    stack.append((pc + 1, empty))
            elif op == ANCHOR_END:
                if at == n:
                    stack.append((pc + 1, empty))
            else:
                threads.append((pc, history, start))

    return add
