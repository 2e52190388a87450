"""The arguments of every SQL function of the project, declared once.

Each function's arguments (name, SQL type, role in the call) live here and nowhere else:
``sql_ext.registry`` writes its signature text from them (what ``cep_functions()`` shows),
every adapter in ``udfs/`` binds a call with :meth:`Signature.bind` (the unknown-argument
error lists them, with a "did you mean"), and ``tests/sql_ext/test_signatures.py`` checks that
the argument table of each function in docs/sql.md names exactly these. Adding an argument is
one line here; the adapter then reads it from the bound call.

The module is pure (no pyspark): it sits below both ``sql_ext`` and ``udfs``, which may not
import each other (DESIGN.md section 2). A bound value is whatever Spark passed (an
``AnalyzeArgument`` at analysis time); reading it is the adapter's business.

The one call convention (docs/sql.md): positionally ``f(<leading>..., [key_col,] TABLE(t))``,
the table last (Spark's parser rejects a comma right after ``ORDER BY``); every other argument
by name (``name => value``, any order, any case).

Example:
    >>> SIGNATURES["sketch_stats"].text()
    'sketch_stats(sketch TABLE)'
    >>> SIGNATURES["match_seq"].names()[:4]
    ('pattern', 'key_col', 'events', 'policy')
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

__all__ = ["Argument", "REQUIRED", "SIGNATURES", "Signature"]

LEADING, KEY, TABLE, NAMED = "leading", "key", "table", "named"


REQUIRED = object()
"""The default of an argument the call must give."""


@dataclass(frozen=True)
class Argument:
    """One argument: its name, SQL type and role (``leading``: positional before the table;
    ``key``: ``key_col``, positional just before the table or named; ``table``: the TABLE
    argument, positional last; ``named``: by name only), and how its constant is checked:
    ``default`` (:data:`REQUIRED`, or the value an absent or NULL argument takes; None lets
    the engine choose), ``choices`` (the allowed values) and ``minimum`` (for integers)."""

    name: str
    sql_type: str
    role: str = NAMED
    default: Any = None
    choices: tuple[Any, ...] = ()
    minimum: int | None = None
    typed: bool = True
    """False: the engine checks the value (with its own code); only constness is checked."""

    def read(self, arg: Any, error: type[Exception]) -> Any:
        """The checked value of this argument as Spark passed it (an ``AnalyzeArgument``, or
        None when absent).

        Example:
            >>> class Const:
            ...     isTable, isConstantExpression = False, True
            ...     def __init__(self, value): self.value = value
            >>> Argument("level", "INT", minimum=0, default=0).read(None, ValueError)
            0
            >>> Argument("mode", "STRING", choices=("a", "b")).read(Const("c"), ValueError)
            Traceback (most recent call last):
            ...
            ValueError: argument mode: expected one of 'a', 'b', found 'c'
        """
        if arg is None or (not arg.isTable and arg.isConstantExpression and arg.value is None):
            if self.default is REQUIRED:
                raise error(f"argument {self.name} is required")
            return self.default
        if arg.isTable or not arg.isConstantExpression:
            raise error(f"argument {self.name} must be a constant, found "
                        f"{'a TABLE argument' if arg.isTable else 'an expression'}")
        if not self.typed:
            return arg.value
        value = _typed(self, arg.value, error)
        if self.choices and value not in self.choices:
            raise error(f"argument {self.name}: expected one of "
                        f"{', '.join(map(repr, self.choices))}, found {value!r}")
        return value


def _typed(argument: Argument, value: Any, error: type[Exception]) -> Any:
    """``value`` as ``argument``'s SQL type says (a DOUBLE as float), or ``error``."""
    kind, name = argument.sql_type, argument.name
    if kind == "STRING":
        if not isinstance(value, str):
            raise error(f"argument {name}: expected a string, found {value!r}")
    elif kind in ("INT", "BIGINT"):
        low = argument.minimum
        if isinstance(value, bool) or not isinstance(value, int) or (low is not None
                                                                      and value < low):
            what = "an integer" if low is None else f"an integer >= {low}"
            raise error(f"argument {name}: expected {what}, found {value!r}")
    elif kind == "BOOLEAN":
        if not isinstance(value, bool):
            raise error(f"argument {name}: expected true or false, found {value!r}")
    elif kind == "DOUBLE":
        if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
            raise error(f"argument {name}: expected a number, found {value!r}")
        return float(value)
    return value


@dataclass(frozen=True)
class Signature:
    """The arguments of one SQL function, in the order the registry and docs list them.

    Args:
        function: the SQL name.
        arguments: leading ones first, then ``key_col`` (if the function has a key), the
            table, then the named ones.
        note: a remark the registry appends to the signature.
    """

    function: str
    arguments: tuple[Argument, ...]
    note: str = ""

    def names(self) -> tuple[str, ...]:
        """Every argument name, in order."""
        return tuple(a.name for a in self.arguments)

    def _role(self, role: str) -> tuple[Argument, ...]:
        return tuple(a for a in self.arguments if a.role == role)

    def text(self) -> str:
        """The signature as the registry and ``cep_functions()`` show it.

        Example:
            >>> SIGNATURES["approx_match_seq"].text()
            'approx_match_seq(pattern STRING, sketch TABLE; named: policy STRING, mode STRING, level INT, resume STRING)'
        """
        parts = [f"{a.name} {a.sql_type}" for a in self._role(LEADING)]
        head = ", ".join(parts)
        for a in self._role(KEY):
            head += f"{', ' if head else ''}[{a.name} {a.sql_type},]"
        for a in self._role(TABLE):
            head += f"{' ' if head.endswith(',]') else ', ' if head else ''}{a.name} TABLE"
        named = ", ".join(f"{a.name} {a.sql_type}" for a in self._role(NAMED))
        body = head + (f"; named: {named}" if named else "")
        return f"{self.function}({body})" + (f": {self.note}" if self.note else "")

    def argument(self, name: str) -> Argument:
        """The declaration of argument ``name``."""
        return next(a for a in self.arguments if a.name == name)

    def values(self, bound: dict[str, Any], error: type[Exception]) -> dict[str, Any]:
        """Every constant argument of a bound call (:meth:`bind`), checked and with its
        default; the TABLE argument and BINARY ones stay as Spark passed them."""
        return {a.name: (bound.get(a.name) if a.role == TABLE or a.sql_type == "BINARY"
                         else a.read(bound.get(a.name), error)) for a in self.arguments}

    def usage(self) -> str:
        """The signature as docs/sql.md shows it, named arguments as ``name => TYPE``.

        Example:
            >>> SIGNATURES["approx_match_seq"].usage()
            'approx_match_seq(pattern STRING, sketch TABLE [, policy => STRING, mode => STRING, level => INT, resume => STRING])'
        """
        head = self.text().split(";")[0].split(": ")[0].rstrip(")")
        named = ", ".join(f"{a.name} => {a.sql_type}" for a in self._role(NAMED))
        return head + (f" [, {named}])" if named else ")")

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any],
             error: type[Exception]) -> dict[str, Any]:
        """The call's arguments by name (absent ones missing); ``error`` names the form to
        write for too many positional arguments, and lists the arguments (with the closest
        one) for an unknown name.

        Example:
            >>> sig = Signature("f", (Argument("pattern", "STRING", LEADING),
            ...                       Argument("key_col", "STRING", KEY),
            ...                       Argument("events", "TABLE", TABLE),
            ...                       Argument("policy", "STRING")))
            >>> sorted(sig.bind(("p", "k", "T"), {"POLICY": "x"}, ValueError).items())
            [('events', 'T'), ('key_col', 'k'), ('pattern', 'p'), ('policy', 'x')]
            >>> sorted(sig.bind(("p", "T"), {"key_col": "k"}, ValueError))
            ['events', 'key_col', 'pattern']
            >>> sig.bind(("p", "T"), {"polcy": "x"}, ValueError)
            Traceback (most recent call last):
            ...
            ValueError: f has no argument 'polcy' (did you mean 'policy'?); its arguments: pattern, key_col, events, policy
        """
        leading = tuple(a.name for a in self._role(LEADING))
        key = tuple(a.name for a in self._role(KEY))
        table = self._role(TABLE)[0].name
        positional = list(args)
        if len(positional) <= len(leading):
            names: tuple[str, ...] = leading[:len(positional)]
        elif len(positional) == len(leading) + 1:
            names = (*leading, table)
        elif key and len(positional) == len(leading) + 2:
            names = (*leading, *key, table)
        else:
            form = ", ".join((*leading, *(f"[{k}]" for k in key), "TABLE(...)"))
            raise error(f"{self.function} takes at most ({form}) positionally, found "
                        f"{len(positional)} arguments; pass the others by name (name => value)")
        values = dict(zip(names, positional))
        known = self.names()
        for name, value in kwargs.items():
            lowered = name.lower()
            if lowered not in known:
                close = difflib.get_close_matches(lowered, known, n=1, cutoff=0.6)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise error(f"{self.function} has no argument {name!r}{hint}; its arguments: "
                            f"{', '.join(known)}")
            if lowered in values:
                raise error(f"{self.function}: argument {lowered} is given twice")
            values[lowered] = value
        return values


def _lead(name: str, sql_type: str = "STRING", **checks: Any) -> Argument:
    return Argument(name, sql_type, LEADING, REQUIRED, **checks)


def _opt(name: str, sql_type: str, default: Any = None, **checks: Any) -> Argument:
    return Argument(name, sql_type, NAMED, default, **checks)


_KEY = Argument("key_col", "STRING", KEY)
_ABSENT = _opt("allow_absent", "BOOLEAN", False)


def _table(name: str) -> Argument:
    return Argument(name, "TABLE", TABLE)


SIGNATURES: dict[str, Signature] = {s.function: s for s in (
    Signature("match_seq", (
        _lead("pattern"), _KEY, _table("events"), _opt("policy", "STRING"),
        _opt("ts_col", "STRING", "ts"), _opt("type_col", "STRING", "type"),
        _opt("id_col", "STRING", "id"), _opt("max_matches", "BIGINT", minimum=1),
        _opt("chunk_rows", "BIGINT", minimum=0), _ABSENT)),
    Signature("approx_match_seq", (
        _lead("pattern", typed=False), _table("sketch"), _opt("policy", "STRING", typed=False),
        _opt("mode", "STRING", typed=False), _opt("level", "INT", typed=False),
        _opt("resume", "STRING", typed=False))),
    Signature("sketch_stats", (_table("sketch"),)),
    Signature("cet_trends", (
        _lead("pattern"), _KEY, _table("events"), _opt("output", "STRING", typed=False),
        _opt("max_trends", "BIGINT", typed=False), _opt("ts_col", "STRING", "ts"),
        _opt("id_col", "STRING", "id"), _opt("type_col", "STRING"),
        _opt("window_col", "STRING"), _opt("completeness", "STRING", typed=False), _ABSENT)),
    Signature("match_prob", (
        _lead("pattern", typed=False), _KEY, _table("pstream"),
        *(_opt(name, kind, typed=False) for name, kind in (
            ("overlap", "STRING"), ("threshold", "DOUBLE"), ("window", "INT"),
            ("output", "STRING"), ("t_col", "STRING"), ("value_col", "STRING"),
            ("p_col", "STRING"), ("probs_col", "STRING"), ("tolerance", "DOUBLE"),
            ("transducer_mode", "STRING"))), _ABSENT)),
    Signature("predict_match", (
        _lead("subscription", typed=False), _KEY, _table("events"),
        *(_opt(name, kind, typed=False) for name, kind in (
            ("lookahead", "INT"), ("threshold", "DOUBLE"), ("model", "BINARY"),
            ("output", "STRING"), ("combine", "STRING"), ("smoothing", "DOUBLE"),
            ("ts_col", "STRING"), ("id_col", "STRING"), ("type_col", "STRING"),
            ("definition", "STRING"))), _ABSENT)),
    Signature("cep_match_recognize", (_lead("plan"), _table("events")),
              note="written by the MATCH_RECOGNIZE rewriter, not by hand"),
)}
"""Every table function's arguments, by SQL name (``cep_functions()`` takes none). An
argument with ``typed=False`` is checked by its engine (with the engine's error code)."""
