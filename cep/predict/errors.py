"""Typed errors of the prediction core (``predict_match``): stable ``CEP-PRED-0NN`` codes.

=============  =========================================  =========================================
code           class                                      meaning
=============  =========================================  =========================================
CEP-PRED-001   :class:`UnsupportedSubscriptionError`      a construct a subscription cannot use
                                                          (Kleene, NOT, iteration aliases, a
                                                          sequence with an ``&``/``|`` step inside
                                                          an ``&``/``|``)
CEP-PRED-002   :class:`UnsupportedSubscriptionError`      a clause a subscription cannot use (WHERE
                                                          conditions other than time conditions,
                                                          policies, WITHIN, SLIDE, WINDOW)
CEP-PRED-003   :class:`UnsupportedSubscriptionError`      a time condition that is not
                                                          ``t(X) - t(Y) <op> span`` with ``Y``
                                                          before ``X`` in one sequence, or a join
                                                          variable used other than ``attr = $x``
CEP-PRED-010   :class:`PredictEventsError`                events that cannot be run: a NULL or
                                                          unordered timestamp, columns of unequal
                                                          length, a missing column
CEP-PRED-011   :class:`PredictArgumentError`              a bad argument (lookahead, threshold,
                                                          combine, output)
CEP-PRED-012   :class:`ModelFormatError`                  a persisted model or state blob that is
                                                          corrupt, of another format version, or
                                                          of another subscription
CEP-PRED-020   :class:`PredictLimitError`                 more automaton states, time-list entries
                                                          or subscriptions than the limit
=============  =========================================  =========================================

Example:
    >>> str(PredictArgumentError("argument lookahead: expected an integer in [1, 10000], found 0"))
    'CEP-PRED-011: argument lookahead: expected an integer in [1, 10000], found 0'
"""

from __future__ import annotations

from cep.errors import CepError
from cep.lang.errors import PatternSemanticError

E_SHAPE = "CEP-PRED-001"
E_CLAUSE = "CEP-PRED-002"
E_TIME = "CEP-PRED-003"
E_EVENTS = "CEP-PRED-010"
E_ARGUMENT = "CEP-PRED-011"
E_MODEL = "CEP-PRED-012"
E_LIMIT = "CEP-PRED-020"


class UnsupportedSubscriptionError(PatternSemanticError):
    """The pattern parses but is not a subscription (codes ``CEP-PRED-001`` .. ``003``).

    Carries ``code``, ``line``, ``column`` and a caret ``snippet`` like every ``PatternError``.
    """


class _PlainPredictError(CepError):
    """A prediction error without a position; pickles by its bare message (Spark ships it)."""

    def __reduce__(self) -> tuple[type[CepError], tuple[str]]:
        return (type(self), (self.message,))


class PredictEventsError(_PlainPredictError):
    """The events cannot be run; the message names the key, the row and what was found."""

    code = E_EVENTS


class PredictArgumentError(_PlainPredictError):
    """An argument (lookahead, threshold, combine, output) is not valid."""

    code = E_ARGUMENT


class ModelFormatError(_PlainPredictError):
    """A model or instance-state blob is corrupt, of another version or of another subscription."""

    code = E_MODEL


class PredictLimitError(_PlainPredictError):
    """More states, time-list entries or subscriptions than the configured limit."""

    code = E_LIMIT
