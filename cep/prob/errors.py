"""Typed errors of the probabilistic-stream core (``match_prob``): stable ``CEP-PROB-0NN`` codes.

=============  ====================================  ==============================================
code           class                                 meaning
=============  ====================================  ==============================================
CEP-PROB-001   :class:`UnsupportedProbPatternError`  the pattern is not a contiguous sequence of
                                                     classes (``;``, SEQ, AND, OR, NOT, ``@``)
CEP-PROB-002   :class:`UnsupportedProbPatternError`  a clause the probabilistic matcher cannot use
                                                     (WHERE conditions, policies, WINDOW, SLIDE,
                                                     a time span in WITHIN)
CEP-PROB-003   :class:`UnsupportedProbPatternError`  a DEFINE that is not ``value = '..'`` or
                                                     ``value IN ('..', ...)``
CEP-PROB-010   :class:`ProbStreamError`              a probabilistic stream that is not one: a
                                                     probability outside [0, 1], a time point whose
                                                     probabilities do not sum to 1, a duplicate
                                                     time point or value, a gap, a NULL
CEP-PROB-011   :class:`ProbArgumentError`            a bad argument (overlap, output, threshold,
                                                     window, transducer_mode)
CEP-PROB-020   :class:`ProbLimitError`               more partial runs or matches than the limit
=============  ====================================  ==============================================

Example:
    >>> str(ProbStreamError("time point 3: probabilities sum to 0.9, expected 1 (tolerance 1e-06)"))
    'CEP-PROB-010: time point 3: probabilities sum to 0.9, expected 1 (tolerance 1e-06)'
"""

from __future__ import annotations

from cep.errors import CepError
from cep.lang.errors import PatternSemanticError

E_SHAPE = "CEP-PROB-001"
E_CLAUSE = "CEP-PROB-002"
E_DEFINE = "CEP-PROB-003"
E_STREAM = "CEP-PROB-010"
E_ARGUMENT = "CEP-PROB-011"
E_LIMIT = "CEP-PROB-020"


class UnsupportedProbPatternError(PatternSemanticError):
    """The pattern parses but is not one ``match_prob`` can run (codes ``CEP-PROB-001`` .. ``003``).

    Carries ``code``, ``line``, ``column`` and a caret ``snippet`` like every ``PatternError``.
    """


class _PlainProbError(CepError):
    """A probabilistic-stream error without a position; pickles by its bare message."""

    def __reduce__(self) -> tuple[type[CepError], tuple[str]]:
        return (type(self), (self.message,))


class ProbStreamError(_PlainProbError):
    """The input is not a probabilistic stream; the message names the stream, the time point
    and what was expected and found."""

    code = E_STREAM


class ProbArgumentError(_PlainProbError):
    """An argument of ``match_prob`` (overlap, output, threshold, window, transducer_mode) is not valid."""

    code = E_ARGUMENT


class ProbLimitError(_PlainProbError):
    """More partial runs or matches than the configured limit; the message names the limit."""

    code = E_LIMIT
