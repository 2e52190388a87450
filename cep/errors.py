"""Typed errors shared by every layer: each carries a stable code an analyst can search for."""

from __future__ import annotations


class CepError(Exception):
    """Base of every error this project raises on purpose.

    Each subclass has a stable ``code`` (``CEP-<AREA>-<NNN>``) that appears first in the
    message, so a SQL caller who only sees a string still sees the code.

    Example:
        >>> str(CepError("something went wrong"))
        'CEP-000: something went wrong'
    """

    code: str = "CEP-000"

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(f"{self.code}: {message}")


class ConfigError(CepError):
    """A setting in ``conf/`` (or an override of it) is missing, malformed or unsafe."""

    code = "CEP-CONF-001"


class InputDataError(CepError):
    """An input (event log, generator parameter) does not have the expected shape."""

    code = "CEP-DATA-001"
