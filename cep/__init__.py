"""Pure core of the CEP extension: pattern language, engines and oracles.

This package imports only the standard library, numpy, mmh3 and sqlglot; never pyspark or
delta (tests/cep/test_layering.py enforces this), so it runs without a JVM.
"""

from __future__ import annotations

from cep.errors import CepError, ConfigError, InputDataError

__all__ = ["CepError", "ConfigError", "InputDataError"]
__version__ = "0.1.0"
