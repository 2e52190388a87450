"""Typed errors of the trend core (``cet_trends``): every one carries a stable ``CEP-TREND-0NN`` code.

=============  ==================================  =================================================
code           class                               meaning
=============  ==================================  =================================================
CEP-TREND-001  :class:`UnsupportedTrendPatternError`  the pattern is not one Kleene+ class (SEQ, AND,
                                                   OR, NOT, several classes, a group)
CEP-TREND-002  :class:`UnsupportedTrendPatternError`  a quantifier other than ``+``
CEP-TREND-003  :class:`UnsupportedTrendPatternError`  a reference a trend cannot use (aggregate,
                                                   ``$x``, ``c[1]``, ``c[i-2]``, ...)
CEP-TREND-004  :class:`UnsupportedTrendPatternError`  a condition between neighbours that is not
                                                   ``c[i].A op f(c[i-1].B)`` with a linear ``f``
CEP-TREND-005  :class:`UnsupportedTrendPatternError`  an ``@(...)`` condition
CEP-TREND-006  :class:`UnsupportedTrendPatternError`  a string attribute compared with something other
                                                   than ``=`` / ``<>`` of the same kind of value
CEP-TREND-007  :class:`UnsupportedTrendPatternError`  a clause or policy trends do not support
                                                   (``WINDOW``, ``EVENTS`` spans, skip-till-next,
                                                   strict contiguity)
CEP-TREND-008  :class:`UnsupportedTrendPatternError`  a ``DEFINE`` with a join variable
CEP-TREND-010  :class:`TrendInputError`             event columns of the wrong shape or type
CEP-TREND-011  :class:`TrendOptionError`            an option (``completeness``, ``to_edges``) with
                                                   a value the core does not know
CEP-TREND-020  :class:`TrendLimitError`             more complete trends than ``max_trends``
CEP-TREND-030  :class:`CorruptTrendGraphError`      stored graph arrays that do not form a graph
=============  ==================================  =================================================

Pattern errors subclass :class:`cep.lang.PatternSemanticError`, so they carry the line, column
and caret snippet of the offending text like every pattern error; the others are plain
:class:`cep.errors.CepError` values.

Example:
    >>> err = TrendLimitError("a window holds 12 complete trends, more than max_trends=10")
    >>> str(err)
    'CEP-TREND-020: a window holds 12 complete trends, more than max_trends=10'
    >>> isinstance(err, CepError)
    True
"""

from __future__ import annotations

from cep.errors import CepError
from cep.lang.errors import PatternSemanticError

E_SHAPE = "CEP-TREND-001"
E_QUANTIFIER = "CEP-TREND-002"
E_REFERENCE = "CEP-TREND-003"
E_NEIGHBOUR = "CEP-TREND-004"
E_TIMED = "CEP-TREND-005"
E_STRING = "CEP-TREND-006"
E_CLAUSE = "CEP-TREND-007"
E_DEFINE = "CEP-TREND-008"
E_INPUT = "CEP-TREND-010"
E_OPTION = "CEP-TREND-011"
E_LIMIT = "CEP-TREND-020"
E_CORRUPT = "CEP-TREND-030"


class UnsupportedTrendPatternError(PatternSemanticError):
    """The pattern is valid but is not a trend query (codes ``CEP-TREND-001`` .. ``008``).

    Carries ``code``, ``line``, ``column`` and ``snippet`` like every ``PatternError``; the
    message says what a trend query expects and what the pattern has instead.
    """


class _PlainTrendError(CepError):
    """A trend error without a position; pickles by its bare message (Spark ships errors)."""

    def __reduce__(self) -> tuple[type[CepError], tuple[str]]:
        return (type(self), (self.message,))


class TrendInputError(_PlainTrendError):
    """Event columns given to the trend core are missing, of different lengths, or of a type
    the predicates cannot compare (e.g. a column mixing strings and numbers)."""

    code = E_INPUT


class TrendOptionError(_PlainTrendError):
    """A named option of the trend core has a value it does not know; the message lists the
    values it accepts (``completeness``: ``'ends'`` / ``'maximal'``, ``to_edges``: ``'range'`` /
    ``'basic'``)."""

    code = E_OPTION


class TrendLimitError(_PlainTrendError):
    """Extracting trends would produce more than ``max_trends`` of them.

    Raised before any trend is enumerated (the number is known from the path count); the
    message names the limit, its value, the number found, and suggests ``output => 'count'``.
    """

    code = E_LIMIT


class CorruptTrendGraphError(_PlainTrendError):
    """Arrays given to :meth:`cep.trends.TrendGraph.from_arrays` do not describe a graph
    (missing key, unknown format version, lengths or indices out of range)."""

    code = E_CORRUPT
