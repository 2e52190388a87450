"""SQL surface: the front door (``configure``, ``enable``), the one list of CEP SQL functions
and their DataFrame forms (``sql_ext.match_seq(df, ...)``, generated from that list:
:mod:`sql_ext.frames`, docs/python.md).

Example (a session the user builds; see docs/install.md):
    >>> import sql_ext
    >>> sorted(n for n in ("configure", "enable", "register_all") if hasattr(sql_ext, n))
    ['configure', 'enable', 'register_all']
    >>> sql_ext.variants.__name__, "follows" in sql_ext.__all__
    ('variants', True)
"""

from __future__ import annotations

from sql_ext.frames import FRAME_FUNCTIONS, call
from sql_ext.params import ParameterError, bind_parameters
from sql_ext.register import register_all
from sql_ext.registry import FUNCTIONS, FunctionSpec, UnknownFunctionError, function
from sql_ext.session_conf import Enabled, UnsupportedSpark, configure, enable

globals().update(FRAME_FUNCTIONS)  # sql_ext.match_seq, sql_ext.follows, ...

__all__ = ["FUNCTIONS", "Enabled", "FunctionSpec", "ParameterError", "UnknownFunctionError",
           "UnsupportedSpark", "bind_parameters", "call", "configure", "enable", "function",
           "register_all", *FRAME_FUNCTIONS]
