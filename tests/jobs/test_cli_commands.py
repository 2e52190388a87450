"""The command line is a table: every sub-command the parser offers has one entry in
``jobs.cli.COMMANDS`` and no entry lacks a sub-command (no JVM)."""

from __future__ import annotations

import argparse

from jobs.cli import COMMANDS, _parser


def test_every_parser_command_has_one_table_entry_and_back() -> None:
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == set(COMMANDS), (f"parser only: {set(sub.choices) - set(COMMANDS)}"
                                               f"; table only: {set(COMMANDS) - set(sub.choices)}")


def test_commands_that_start_no_session_of_ours_are_marked() -> None:
    # The servers start their own session and `users`, `tls`, `submit-args` need none: a
    # session built for them would cost a JVM start and, for the servers, hold a second one.
    without = {name for name, command in COMMANDS.items() if not command.session}
    assert {"serve", "connect-server", "users", "tls", "submit-args", "fetch-jars",
            "fetch-data"} <= without
