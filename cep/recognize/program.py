"""Compiler of a row pattern into a flat, immutable automaton program (Pike VM style).

The program is a list of instructions in the manner of Thompson's construction, with the
preference order of SQL:2016 kept in the order of each ``SPLIT``'s targets (the first target is
preferred): alternation prefers its left branch, a greedy quantifier one more iteration, a
reluctant one fewer, ``PERMUTE`` the lexicographically first order of its items
(docs/match-recognize.md, "Preference"). :mod:`cep.recognize.matcher` runs it.

An unbounded loop's body is framed by ``MARK k`` (its iteration has consumed no row yet) and
``CHECK k`` (a path that reaches the end of an iteration without consuming a row dies): this
is the standard's rule against empty iterations looping (docs/match-recognize.md, "Empty
iterations"), and unlike a check on instructions alone it keeps the preference order of
nested loops such as ``(C*?)*``.

Bounded repetition is unrolled (``A{2,4}`` is ``A A (A (A)?)?``); ``PERMUTE`` of k items
compiles to a graph over the 2^k subsets of items already matched, so ``PERMUTE`` of 8
variables costs 1,024 item copies rather than 40,320 orders. A program larger than
:data:`MAX_INSTRUCTIONS` is refused before it is built, with CEP-MR-003 at the term that makes
it large.

Example:
    >>> from cep.recognize.parser import parse_row_pattern
    >>> prog = compile_pattern(parse_row_pattern("A B*?"))
    >>> print(prog.listing())
    0 CONSUME A
    1 SPLIT 6 2
    2 MARK 0
    3 CONSUME B
    4 CHECK 0
    5 JMP 1
    6 MATCH
"""

from __future__ import annotations

from dataclasses import dataclass

from cep.recognize.ast import (Alternation, Anchor, Concatenation, Empty, Exclusion, Node,
                               Permute, Quantified, Variable, variables)
from cep.recognize.errors import E_PROGRAM_TOO_LARGE, RowPatternLimitError
from cep.recognize.parser import parse_row_pattern

__all__ = ["ANCHOR_END", "ANCHOR_START", "CHECK", "CONSUME", "JMP", "MARK", "MATCH",
           "MAX_INSTRUCTIONS", "Program", "SPLIT", "compile_pattern"]

CONSUME, SPLIT, JMP, ANCHOR_START, ANCHOR_END, MATCH, MARK, CHECK = range(8)
_NAMES = ("CONSUME", "SPLIT", "JMP", "ANCHOR_START", "ANCHOR_END", "MATCH", "MARK", "CHECK")

MAX_INSTRUCTIONS = 100_000
"""Largest program compiled; the matcher's work per row is bounded by its size."""


@dataclass(frozen=True)
class Program:
    """A compiled row pattern.

    Attributes:
        ops: opcode per instruction.
        arg1: ``CONSUME``: the variable's index; ``SPLIT``/``JMP``: the (preferred) target;
            ``MARK``/``CHECK``: the unbounded loop's index (see below).
        arg2: ``SPLIT``: the other target; ``CONSUME``: 1 when the row is excluded from
            ALL ROWS PER MATCH output (inside ``{- -}``), else 0.
        variables: the primary variables, indexed by ``CONSUME``'s ``arg1``.
    """

    ops: tuple[int, ...]
    arg1: tuple[int, ...]
    arg2: tuple[int, ...]
    variables: tuple[str, ...]

    def listing(self) -> str:
        """The program as text, one instruction per line (for tests and ``explain``)."""
        lines = []
        for pc, (op, a, b) in enumerate(zip(self.ops, self.arg1, self.arg2)):
            if op == CONSUME:
                lines.append(f"{pc} CONSUME {self.variables[a]}" + (" (excluded)" if b else ""))
            elif op == SPLIT:
                lines.append(f"{pc} SPLIT {a} {b}")
            elif op == JMP:
                lines.append(f"{pc} JMP {a}")
            elif op in (MARK, CHECK):
                lines.append(f"{pc} {_NAMES[op]} {a}")
            else:
                lines.append(f"{pc} {_NAMES[op]}")
        return "\n".join(lines)


def size_of(node: Node) -> int:
    """An upper bound of the instructions ``node`` compiles to, computed without building it."""
    if isinstance(node, (Variable, Anchor)):
        return 1
    if isinstance(node, Empty):
        return 0
    if isinstance(node, Concatenation):
        return sum(size_of(i) for i in node.items)
    if isinstance(node, Alternation):
        return sum(size_of(i) + 2 for i in node.items)
    if isinstance(node, Exclusion):
        return size_of(node.item)
    if isinstance(node, Permute):
        k = len(node.items)
        if k > 24:
            return MAX_INSTRUCTIONS + 1
        return sum(size_of(i) + 2 for i in node.items) * (1 << max(0, k - 1)) + (1 << k)
    assert isinstance(node, Quantified)
    body = size_of(node.item)
    copies = node.low + (1 if node.high is None else node.high - node.low)
    return copies * (body + 4)


class _Emitter:
    def __init__(self, names: list[str]) -> None:
        self.index = {n: i for i, n in enumerate(names)}
        self.loops = 0
        self.ops: list[int] = []
        self.arg1: list[int] = []
        self.arg2: list[int] = []

    def emit(self, op: int, a: int = 0, b: int = 0) -> int:
        self.ops.append(op)
        self.arg1.append(a)
        self.arg2.append(b)
        return len(self.ops) - 1

    def patch(self, pc: int, a: int | None = None, b: int | None = None) -> None:
        if a is not None:
            self.arg1[pc] = a
        if b is not None:
            self.arg2[pc] = b

    def node(self, n: Node, excluded: bool) -> None:
        if isinstance(n, Variable):
            self.emit(CONSUME, self.index[n.name], int(excluded))
        elif isinstance(n, Anchor):
            self.emit(ANCHOR_START if n.start else ANCHOR_END)
        elif isinstance(n, Empty):
            pass
        elif isinstance(n, Concatenation):
            for item in n.items:
                self.node(item, excluded)
        elif isinstance(n, Exclusion):
            self.node(n.item, True)
        elif isinstance(n, Alternation):
            self.alternation(list(n.items), excluded)
        elif isinstance(n, Permute):
            self.permute(n, excluded)
        else:
            assert isinstance(n, Quantified)
            self.quantified(n, excluded)

    def alternation(self, items: list[Node], excluded: bool) -> None:
        jumps = []
        for k, item in enumerate(items):
            if k == len(items) - 1:
                self.node(item, excluded)
                break
            split = self.emit(SPLIT)
            self.patch(split, a=split + 1)
            self.node(item, excluded)
            jumps.append(self.emit(JMP))
            self.patch(split, b=len(self.ops))
        for j in jumps:
            self.patch(j, a=len(self.ops))

    def quantified(self, n: Quantified, excluded: bool) -> None:
        for _ in range(n.low):
            self.node(n.item, excluded)
        if n.high is None:
            loop = self.emit(SPLIT)
            k = self.loops
            self.loops += 1
            self.emit(MARK, k)
            self.node(n.item, excluded)
            self.emit(CHECK, k)
            self.emit(JMP, loop)
            body, done = loop + 1, len(self.ops)
            self.patch(loop, *((body, done) if n.greedy else (done, body)))
            return
        splits = []
        for _ in range(n.high - n.low):
            splits.append(self.emit(SPLIT))
            self.node(n.item, excluded)
        done = len(self.ops)
        for s in splits:
            self.patch(s, *((s + 1, done) if n.greedy else (done, s + 1)))

    def permute(self, n: Permute, excluded: bool) -> None:
        # One block per subset of items already matched, reached in order of size; a block
        # tries each remaining item in list order, then jumps to the block of the larger set.
        k = len(n.items)
        full = (1 << k) - 1
        blocks: dict[int, int] = {}
        pending: list[tuple[int, int]] = []  # (JMP pc, subset it goes to)
        for subset in sorted(range(full + 1), key=lambda s: (bin(s).count("1"), s)):
            blocks[subset] = len(self.ops)
            if subset == full:
                break
            rest = [i for i in range(k) if not subset >> i & 1]
            for j, item in enumerate(rest):
                split = self.emit(SPLIT) if j < len(rest) - 1 else None
                if split is not None:
                    self.patch(split, a=split + 1)
                self.node(n.items[item], excluded)
                pending.append((self.emit(JMP), subset | 1 << item))
                if split is not None:
                    self.patch(split, b=len(self.ops))
        for jmp, subset in pending:
            self.patch(jmp, a=blocks[subset])


def compile_pattern(node: Node, text: str = "") -> Program:
    """The program of a parsed row pattern.

    Args:
        node: the pattern, from :func:`cep.recognize.parser.parse_row_pattern`.
        text: the statement ``node``'s spans point into (for the error's caret).

    Raises:
        RowPatternLimitError: CEP-MR-003, the program would exceed :data:`MAX_INSTRUCTIONS`.
    """
    _check_size(node, text)
    names = variables(node)
    emitter = _Emitter(names)
    emitter.node(node, False)
    emitter.emit(MATCH)
    return Program(tuple(emitter.ops), tuple(emitter.arg1), tuple(emitter.arg2), tuple(names))


def _check_size(node: Node, text: str) -> None:
    if size_of(node) <= MAX_INSTRUCTIONS:
        return
    # Point at the smallest term that is too large by itself.
    culprit = node
    while True:
        children = getattr(culprit, "items", None) or (
            (culprit.item,) if isinstance(culprit, (Quantified, Exclusion)) else ())
        big = [c for c in children if size_of(c) > MAX_INSTRUCTIONS]
        if not big:
            break
        culprit = big[0]
    raise RowPatternLimitError(
        E_PROGRAM_TOO_LARGE, f"this term would compile to more than {MAX_INSTRUCTIONS:,} "
        "automaton instructions; use smaller bounds or fewer PERMUTE items", text,
        culprit.span[0], culprit.span[1])


def compile_row_pattern(text: str, start: int = 0, end: int | None = None) -> Program:
    """The program of the row pattern in ``text[start:end]`` (errors point into ``text``).

    Example:
        >>> compile_row_pattern("A B+").variables
        ('A', 'B')
    """
    return compile_pattern(parse_row_pattern(text, start, end), text)
