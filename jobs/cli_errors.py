"""How ``python -m jobs`` reports a failure: the error first and short, an exit code that says
whose fault it was, the stacks only when asked, and a suggestion for a misspelled word.

Exit codes (docs/jobs.md, "Exit codes"):

- **2**, a user error: a typed :class:`~cep.errors.CepError` (bad argument, configuration,
  pattern, damaged input), a CEP error raised inside a Spark task (its code is found in
  Spark's message), a SQL statement Spark refuses (``AnalysisException``,
  ``ParseException``), or a command line argparse refuses;
- **1**, anything else (a bug, Spark or the machine failing): the first line of the error and
  a hint to rerun with ``--verbose``.

Without ``--verbose`` no Python traceback and no Java stack is printed; with it, the whole
traceback follows the short message.

Example:
    >>> short_message(RuntimeError("An exception was thrown from the Python worker.\\n"
    ...                            "  File x.py, line 3\\n"
    ...                            "udfs.shell.CallFailed: CEP-PAT-001: line 1, column 9: bad\\n"
    ...                            "  PATTERN A;;\\n"
    ...                            "          ^\\n"
    ...                            "\\tat org.apache.spark.Foo(Foo.java:1)"))
    'CEP-PAT-001: line 1, column 9: bad\\n  PATTERN A;;\\n          ^'
    >>> suggestion("skecth", ["sketch", "graph", "predict"])
    " (did you mean 'sketch'?)"
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import logging
import re
import sys
import traceback
from collections.abc import Iterable, Iterator
from typing import NoReturn, TextIO

from cep.errors import CepError

__all__ = ["Parser", "short_message", "exit_code", "report", "suggestion", "spark_error_logs"]

_CODE = re.compile(r"CEP-[A-Z]+-\d{3}: ")
_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+(; line \d+ pos \d+)?\s*$")
_STACK_LINE = re.compile(r"^(\tat |\s+at |JVM stacktrace|Traceback |  File |Caused by|\.\.\. \d+ more)")
_SPARK_ERROR_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")
"""pyspark's loggers that print every failed statement's error, Java stack included, as a JSON
line on stderr when the exception is made (pyspark/errors/exceptions/base.py)."""
_USER_SPARK_ERRORS = ("AnalysisException", "ParseException")
"""Spark's classes for a statement it refuses (unknown table or column, bad syntax)."""


def suggestion(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices`` to ``word``, or ""."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors suggest the command or option the user meant.

    Python 3.11's argparse names a bad choice or an unknown option without a suggestion.
    """

    argv: list[str] = []

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[no-untyped-def]
        self.argv = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        found = re.search(r"invalid choice: '([^']*)'", message)
        if found is not None:
            message += suggestion(found.group(1), self._command_names())
        found = re.search(r"unrecognized arguments: (\S+)", message)
        if found is not None and found.group(1).startswith("--"):
            message += suggestion(found.group(1).split("=")[0], self._option_names())
        super().error(message)

    def _command_parsers(self) -> list[argparse.ArgumentParser]:
        return [p for action in self._actions if isinstance(action, argparse._SubParsersAction)
                for p in action.choices.values()]

    def _command_names(self) -> list[str]:
        return [name for action in self._actions
                if isinstance(action, argparse._SubParsersAction) for name in action.choices]

    def _option_names(self) -> list[str]:
        """Every option string of this parser and, when one command was named on the command
        line, of that command's parser (argparse reports its unknown options here)."""
        options = [o for action in self._actions for o in action.option_strings]
        named = [p for p in self._command_parsers() if p.prog.split()[-1] in self.argv]
        for sub in named[:1]:
            options += [o for action in sub._actions for o in action.option_strings]
        return options


@contextlib.contextmanager
def spark_error_logs(shown: bool) -> Iterator[None]:
    """Silence pyspark's error loggers for the block unless ``shown`` (``--verbose``): the
    command reports the error itself, short."""
    # pyspark's own class: a plain logging.Logger made first under the name would make
    # pyspark's call with its extra fields fail.
    from pyspark.logger import PySparkLogger

    loggers: list[logging.Logger] = [PySparkLogger.getLogger(name) for name in _SPARK_ERROR_LOGGERS]
    before = [logger.disabled for logger in loggers]
    for logger in loggers:
        logger.disabled = logger.disabled or not shown
    try:
        yield
    finally:
        for logger, was in zip(loggers, before):
            logger.disabled = was


def short_message(exc: BaseException) -> str:
    """What to print first: a CEP error's own text (with its caret snippet) wherever Spark
    wrapped it, else the exception's first line."""
    text = str(exc)
    found = _CODE.search(text)
    if found is None:
        first = text.strip().splitlines()[0] if text.strip() else ""
        return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    lines = text[found.start():].splitlines()
    kept = [lines[0]]
    for line in lines[1:]:
        if not line.strip() or _STACK_LINE.match(line):
            break
        kept.append(line)
    # Spark appends the SQL state and the call's position to the last line of its message.
    return _SQLSTATE.sub("", "\n".join(kept))


def exit_code(exc: BaseException) -> int:
    """2 for a user error (see the module docstring), 1 otherwise."""
    if isinstance(exc, CepError) or _CODE.search(str(exc)):
        return 2
    names = {cls.__name__ for cls in type(exc).__mro__}
    return 2 if names & set(_USER_SPARK_ERRORS) else 1


def report(exc: BaseException, *, verbose: bool, out: TextIO | None = None) -> int:
    """Print ``exc`` for a person at a terminal; returns the exit code."""
    out = out or sys.stderr
    code = exit_code(exc)
    message = str(exc) if isinstance(exc, CepError) else short_message(exc)
    print(f"error: {message}", file=out)
    if verbose:
        traceback.print_exception(exc, file=out)
    elif code == 1:
        print("(rerun with --verbose for the whole traceback and the Java stack)", file=out)
    return code
