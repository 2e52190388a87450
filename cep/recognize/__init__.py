"""MATCH_RECOGNIZE (SQL:2016 row pattern recognition): one stage per module.

``clause`` (the clause's tokens) -> ``parser`` (the row pattern, ``ast``) -> ``program`` (the
compiled automaton) -> ``matcher`` (Pike VM over one partition); ``expressions`` translates
DEFINE and MEASURES to Spark SQL and ``rewrite`` turns a statement into plain Spark SQL around
``cep_match_recognize`` (docs/match-recognize.md). The compiler never imports the matcher.

Example:
    >>> import numpy as np
    >>> program = compile_pattern(parse_row_pattern("A B+"))
    >>> [m.labels for m in find_matches(program, np.array([[1, 0], [0, 1], [0, 1]], bool))]
    [(0, 1, 1)]
"""

from __future__ import annotations

from cep.recognize.errors import (RowPatternError, RowPatternLimitError, RowPatternSemanticError,
                                  RowPatternSyntaxError)
from cep.recognize.matcher import Match, Skip, find_matches
from cep.recognize.parser import parse_row_pattern
from cep.recognize.program import Program, compile_pattern, compile_row_pattern
from cep.recognize.rewrite import contains_clause, rewrite_statement

__all__ = ["Match", "Program", "RowPatternError", "RowPatternLimitError",
           "RowPatternSemanticError", "RowPatternSyntaxError", "Skip", "compile_pattern",
           "compile_row_pattern", "contains_clause", "find_matches", "parse_row_pattern",
           "rewrite_statement"]

# One vocabulary for every engine (docs/architecture.md, "One vocabulary"): ``compile`` turns
# pattern text into the engine's frozen program, ``run`` evaluates a program over its input.
# Not in __all__: a star import would shadow the builtin ``compile``.
compile = compile_row_pattern
run = find_matches
