"""Typed errors of the plotting functions: the ``CEP-VIZ-0NN`` family.

| code | error | when |
|---|---|---|
| ``CEP-VIZ-001`` | :class:`VizColumnsError` | the input lacks a column the picture needs, or a column has the wrong type |
| ``CEP-VIZ-002`` | :class:`VizTooManyRowsError` | the input has more rows than ``max_rows`` (filter first, or raise the cap) |
| ``CEP-VIZ-003`` | :class:`VizArgumentError` | an argument is out of range, the input is not a table, or a key or window asked for is not in it |

Example:
    >>> str(VizColumnsError("matches: expected columns ['start_ts'], found ['ts']"))
    "CEP-VIZ-001: matches: expected columns ['start_ts'], found ['ts']"
"""

from __future__ import annotations

from cep.errors import CepError


class VizError(CepError):
    """Base of the plotting errors; never raised itself."""

    code = "CEP-VIZ-000"


class VizColumnsError(VizError):
    """The input table lacks a needed column, or a column has a type the picture cannot use."""

    code = "CEP-VIZ-001"


class VizTooManyRowsError(VizError):
    """The input holds more rows than the picture's ``max_rows``: filter it first, or raise the cap."""

    code = "CEP-VIZ-002"


class VizArgumentError(VizError):
    """A bad argument: not a table, a value out of range, or a key or window the input lacks."""

    code = "CEP-VIZ-003"
