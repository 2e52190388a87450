"""SQL surface: the front door (``configure``, ``enable``) and the one list of CEP SQL functions.

Example (a session the user builds; see docs/install.md):
    >>> import sql_ext
    >>> sorted(n for n in ("configure", "enable", "register_all") if hasattr(sql_ext, n))
    ['configure', 'enable', 'register_all']
"""

from __future__ import annotations

from sql_ext.params import ParameterError, bind_parameters
from sql_ext.register import register_all
from sql_ext.registry import FUNCTIONS, FunctionSpec, UnknownFunctionError, function
from sql_ext.session_conf import Enabled, UnsupportedSpark, configure, enable

__all__ = ["FUNCTIONS", "Enabled", "FunctionSpec", "ParameterError", "UnknownFunctionError",
           "UnsupportedSpark", "bind_parameters", "configure", "enable", "function",
           "register_all"]
