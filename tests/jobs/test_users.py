"""The SQL server's users file (jobs/servers/users.py) and ``python -m jobs users``.

No JVM here: the server's own check of these hashes (the JVM shim's authenticator) is tested
with real clients in tests/server/test_server.py.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import stat
from pathlib import Path

import pytest

from delta_tables.settings import Settings, load_settings
from jobs.cli import main
from jobs.servers.users import (ITERATIONS, USERS_ENV, UsersError, add_user, check_password,
                                list_users, remove_user, users_file)


@pytest.fixture()
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Settings whose data folder is this test's own (so is the users file)."""
    monkeypatch.delenv(USERS_ENV, raising=False)
    return load_settings(overrides={"data_dir": str(tmp_path / "data")})


def test_add_list_check_remove(settings: Settings) -> None:
    add_user(settings, "bob", "s3cret-pass")
    add_user(settings, "alice", "another-one")
    assert list_users(settings) == ["alice", "bob"]
    assert check_password(settings, "bob", "s3cret-pass")
    assert not check_password(settings, "bob", "another-one")
    assert not check_password(settings, "carol", "s3cret-pass")
    add_user(settings, "bob", "a-new-password")  # a second add sets a new password
    assert check_password(settings, "bob", "a-new-password")
    assert not check_password(settings, "bob", "s3cret-pass")
    remove_user(settings, "bob")
    assert list_users(settings) == ["alice"]


def test_the_file_holds_salted_pbkdf2_hashes_for_the_owner_alone(settings: Settings) -> None:
    add_user(settings, "bob", "s3cret-pass")
    add_user(settings, "eve", "s3cret-pass")
    path = users_file(settings)
    assert path == settings.data_dir / "server" / "users"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    lines = dict(line.split(":", 1) for line in path.read_text().splitlines())
    assert "s3cret" not in path.read_text()
    for name, rest in lines.items():
        scheme, rounds, salt, digest = rest.split(":")
        assert (scheme, int(rounds)) == ("pbkdf2-sha256", ITERATIONS)
        # The documented definition, computed here independently.
        expected = hashlib.pbkdf2_hmac("sha256", b"s3cret-pass", base64.b64decode(salt),
                                       int(rounds))
        assert base64.b64decode(digest) == expected, name
    # Same password, different salts: different lines.
    assert lines["bob"] != lines["eve"]


def test_the_environment_names_another_file(settings: Settings, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(USERS_ENV, str(tmp_path / "elsewhere" / "users"))
    add_user(settings, "bob", "s3cret-pass")
    assert (tmp_path / "elsewhere" / "users").is_file()
    assert not (settings.data_dir / "server" / "users").exists()


@pytest.mark.parametrize("name, password, message", [
    ("", "s3cret-pass", "user name ''"),
    ("bob smith", "s3cret-pass", "user name 'bob smith'"),
    ("bob:x", "s3cret-pass", "user name 'bob:x'"),
    ("-bob", "s3cret-pass", "user name '-bob'"),
    ("b" * 65, "s3cret-pass", "expected 1 to 64"),
    ("bob", "short", "shorter than 8 characters"),
    ("bob", "two\nlines-here", "line break or NUL"),
])
def test_bad_names_and_passwords_are_refused(settings: Settings, name: str, password: str,
                                             message: str) -> None:
    with pytest.raises(UsersError, match=message) as caught:
        add_user(settings, name, password)
    assert str(caught.value).startswith("CEP-JOB-063: ")
    assert not users_file(settings).exists()


def test_removing_an_unknown_user_names_the_known_ones(settings: Settings) -> None:
    add_user(settings, "bob", "s3cret-pass")
    with pytest.raises(UsersError, match=r"no user 'carol' in .* \(users: bob\)"):
        remove_user(settings, "carol")


def test_a_damaged_line_is_a_typed_error_with_its_number(settings: Settings) -> None:
    add_user(settings, "bob", "s3cret-pass")
    path = users_file(settings)
    path.write_text(path.read_text() + "mallory:plain:secret\n")
    with pytest.raises(UsersError, match=r"users, line 2: expected name:pbkdf2-sha256"):
        list_users(settings)


def test_the_command_line(settings: Settings, monkeypatch: pytest.MonkeyPatch,
                          capsys: pytest.CaptureFixture[str]) -> None:
    data = ["--data-dir", str(settings.data_dir)]
    # Not a terminal: the password is the first line of standard input, never an argument.
    monkeypatch.setattr("sys.stdin", io.StringIO("s3cret-pass\n"))
    assert main([*data, "users", "add", "bob"]) == 0
    assert "'bob' can connect to the SQL server" in capsys.readouterr().out
    assert check_password(settings, "bob", "s3cret-pass")
    assert main([*data, "users", "list"]) == 0
    assert capsys.readouterr().out == "bob\n"
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    assert main([*data, "users", "add", "eve"]) == 2
    assert "CEP-JOB-063: the password of 'eve' is shorter" in capsys.readouterr().err
    assert main([*data, "users", "remove", "eve"]) == 2
    assert "no user 'eve'" in capsys.readouterr().err
    assert main([*data, "users", "remove", "bob"]) == 0
    assert list_users(settings) == []
    assert main([*data, "users", "add"]) == 2
    assert "needs a user name" in capsys.readouterr().err
    assert os.path.exists(users_file(settings))
