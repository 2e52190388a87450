"""Errors of the process-mining functions: a stable code, the line and column in the statement.

Positions are offsets into the whole SQL statement the call came from, so the caret points at
what the analyst wrote (the machinery is :class:`cep.lang.errors.PatternError`)::

    CEP-PM-102: line 1, column 45: follows has no argument 'relaton' (did you mean 'relation'?); ...
        SELECT * FROM follows('case_id', TABLE(t), relaton => 'eventual')
                                                   ^~~~~~~

Error codes (stable; the docs and tests search for them):

=============  ========  =============================================================
code           class     meaning
=============  ========  =============================================================
CEP-PM-101     syntax    the call is malformed: no TABLE argument, an argument that is
                         not a constant, a bracket never closed, ``PARTITION BY`` after
                         the TABLE argument
CEP-PM-102     argument an unknown argument name, an argument given twice, too many
                         positional arguments, or a value of the wrong kind (the message
                         lists what is allowed)
CEP-PM-103     argument ``within`` is not a duration (``'30 MINUTES'``, ``'2 DAYS'``,
                         ``'100 UNITS'``), or given with ``relation => 'direct'``
CEP-PM-104     argument ``key_col`` has the name of one of the output's own columns
CEP-PM-105     setup     a call in a session started without the JVM shim (build the
                         session with ``sql_ext.configure``; docs/install.md), or more
                         calls in one statement than the maximum
CEP-PM-110     data      a row whose timestamp or id is NULL (raised while the query runs,
                         by Spark's ``raise_error``; the message names the key)
=============  ========  =============================================================

Columns the rows do not have, and tables the catalog lacks, are found by Spark once it
resolves the rewritten statement; the JVM shim words them as for MATCH_RECOGNIZE
(``CEP-MR-208``, ``CEP-MR-210``, docs/process-mining.md "Errors").
"""

from __future__ import annotations

from cep.lang.errors import PatternError

__all__ = ["E_ARGUMENT", "E_CALL", "E_KEY_NAME", "E_NULL", "E_SETUP", "E_WITHIN", "MiningError"]

E_CALL = "CEP-PM-101"
E_ARGUMENT = "CEP-PM-102"
E_WITHIN = "CEP-PM-103"
E_KEY_NAME = "CEP-PM-104"
E_SETUP = "CEP-PM-105"
E_NULL = "CEP-PM-110"


class MiningError(PatternError):
    """A process-mining call failed; ``code``, ``line``, ``column`` and ``snippet`` say where.

    Example:
        >>> err = MiningError(E_CALL, "follows needs a TABLE argument", "follows('k')", 0, 7)
        >>> (err.code, err.line, err.column)
        ('CEP-PM-101', 1, 1)
    """

    code = "CEP-PM-000"
