"""``match_prob``: pattern matching and match groups over probabilistic streams.

Sugiura, Ishikawa and Sasaki, DASFAA 2015, *Grouping Methods for Pattern Matching in
Probabilistic Data Streams*. One stage per module:

- :mod:`cep.prob.stream`: the stream (per time point a distribution over values), validated;
- :mod:`cep.prob.pattern`: contiguous patterns (``PATTERN a, b+, c``) compiled to NFA and DFA;
- :mod:`cep.prob.matches`: runs and matches (NFA/stack method, threshold pruning, window);
- :mod:`cep.prob.groups`: single- and complete-overlap groups;
- :mod:`cep.prob.transducer`: group probabilities (transducer, vectorised over groups);
- :mod:`cep.prob.answer`: :func:`match_prob`, what the SQL function runs per stream.

Example:
    >>> s = from_wide([1, 2, 3], [{"a": 0.9, "d": 0.1}, {"b": 1.0}, {"c": 0.5, "d": 0.5}])
    >>> [(m.t_start, m.t_end, round(m.probability, 6), m.values) for m in match_prob("PATTERN a, b+, c", s, window=3, output="matches")]
    [(1, 3, 0.45, ('a', 'b', 'c'))]
"""

from __future__ import annotations

from cep.prob.answer import GroupRow, MatchRow, group_columns, match_prob, resolve_window
from cep.prob.errors import ProbArgumentError, ProbLimitError, ProbStreamError, UnsupportedProbPatternError
from cep.prob.groups import Groups, complete_groups, single_groups
from cep.prob.matches import Matches, find_matches
from cep.prob.pattern import ProbPattern, compile_prob
from cep.prob.stream import ProbStream, from_codes, from_long, from_wide
from cep.prob.transducer import Transducer, build_transducer, group_probabilities, state_vectors

__all__ = [
    "GroupRow", "Groups", "MatchRow", "Matches", "ProbArgumentError", "ProbLimitError", "ProbPattern",
    "ProbStream", "ProbStreamError", "Transducer", "UnsupportedProbPatternError", "build_transducer",
    "compile_prob", "complete_groups", "find_matches", "from_codes", "from_long", "from_wide",
    "group_columns", "group_probabilities", "match_prob", "resolve_window", "single_groups", "state_vectors",
]

# One vocabulary for every engine (docs/architecture.md, "One vocabulary"): ``compile`` turns
# pattern text into the engine's frozen program, ``run`` evaluates a program over its input.
# Not in __all__: a star import would shadow the builtin ``compile``.
compile = compile_prob
run = match_prob
