"""SQL surface: the one list of CEP SQL functions and ``register_all(spark)``."""

from __future__ import annotations

from sql_ext.params import ParameterError, bind_parameters
from sql_ext.register import register_all
from sql_ext.registry import FUNCTIONS, FunctionSpec, UnknownFunctionError, function

__all__ = ["FUNCTIONS", "FunctionSpec", "ParameterError", "UnknownFunctionError",
           "bind_parameters", "function", "register_all"]
