"""The SQL server's users: names and salted password hashes in one owner-only file.

``python -m jobs serve`` authenticates every JDBC/ODBC connection (HiveServer2's ``CUSTOM``
mode) against ``<data_dir>/server/users``, through the JVM shim's
``cep.sql.PasswordFileAuthenticator`` (``$CEP_SERVER_USERS`` names another file), which reads
the file at every connection: users added or
removed here count from the next connection on, without a restart. The operator manages it
with ``python -m jobs users add|remove|list`` (docs/bi.md).

One line per user, ``name:pbkdf2-sha256:iterations:salt:hash`` (salt and hash in base64): PBKDF2
with HMAC-SHA-256 over the UTF-8 password, 16 random salt bytes, 32 hash bytes. The folder is
mode 0700 and the file 0600: another local user can neither read the hashes nor add a line.
The file is replaced whole (written aside, then renamed), so the server never reads half of it.

Example:
    >>> import tempfile
    >>> from delta_tables.settings import load_settings
    >>> settings = load_settings(overrides={"data_dir": tempfile.mkdtemp()})
    >>> add_user(settings, "analyst", "correct horse")
    >>> list_users(settings), check_password(settings, "analyst", "correct horse")
    (['analyst'], True)
    >>> remove_user(settings, "analyst")
    >>> list_users(settings)
    []
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

from cep.errors import ConfigError

if TYPE_CHECKING:
    from delta_tables.settings import Settings

__all__ = ["ITERATIONS", "MIN_PASSWORD", "UsersError", "add_user", "check_password",
           "list_users", "remove_user", "users_file"]

SCHEME = "pbkdf2-sha256"
ITERATIONS = 200_000
"""PBKDF2 rounds: about 0.1 s of one core per connection, a guess costs the same."""
MIN_PASSWORD = 8
"""The shortest password ``add`` accepts (characters)."""
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}")
"""User names: what JDBC URLs, beeline's ``-n`` and ODBC DSNs carry without quoting."""


class UsersError(ConfigError):
    """A bad user name or password, an unknown user, or a users file that cannot be used."""

    code = "CEP-JOB-063"


USERS_ENV = "CEP_SERVER_USERS"
"""An environment variable naming another users file (a test's, a second server's)."""


def users_file(settings: "Settings") -> Path:
    """The users file: ``$CEP_SERVER_USERS`` when set, else ``<data_dir>/server/users``."""
    other = os.environ.get(USERS_ENV)
    return Path(other).resolve() if other else settings.data_dir / "server" / "users"


def _hash(password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac("sha256", password.encode("utf-8"), salt, iterations)


def _read(path: Path) -> dict[str, str]:
    """The file's lines by user name (a missing file: no users)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise UsersError(f"the users file {path} cannot be read: {exc.strerror}") from None
    lines: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.strip().split(":")
        if len(fields) != 5 or fields[1] != SCHEME or not NAME.fullmatch(fields[0]):
            raise UsersError(f"{path}, line {number}: expected name:{SCHEME}:iterations:salt:hash; "
                             "fix or remove the line (python -m jobs users remove NAME)")
        lines[fields[0]] = line.strip()
    return lines


def _write(path: Path, lines: dict[str, str]) -> None:
    """Replace the file by ``lines``, owner-only, in one rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    aside = path.with_name(f".users.{os.getpid()}")
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.writelines(f"{line}\n" for _, line in sorted(lines.items()))
    os.replace(aside, path)


def check_name(name: str) -> str:
    """``name`` if it is a valid user name, else :class:`UsersError`."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise UsersError(f"user name {name!r}: expected 1 to 64 letters, digits or `_.@-`, "
                         "starting with a letter, digit or `_`")
    return name


def add_user(settings: "Settings", name: str, password: str) -> None:
    """Add ``name`` with ``password``, or set a new password for an existing ``name``.

    Raises:
        UsersError: a bad name, a password shorter than :data:`MIN_PASSWORD` characters or
            holding a line break, or an unreadable file.
    """
    check_name(name)
    if len(password) < MIN_PASSWORD:
        raise UsersError(f"the password of {name!r} is shorter than {MIN_PASSWORD} characters")
    if "\n" in password or "\r" in password or "\x00" in password:
        raise UsersError(f"the password of {name!r} holds a line break or NUL")
    path = users_file(settings)
    lines = _read(path)
    salt = secrets.token_bytes(16)
    digest = _hash(password, salt, ITERATIONS)
    lines[name] = ":".join([name, SCHEME, str(ITERATIONS), base64.b64encode(salt).decode(),
                            base64.b64encode(digest).decode()])
    _write(path, lines)


def remove_user(settings: "Settings", name: str) -> None:
    """Remove ``name``; :class:`UsersError` when there is no such user."""
    check_name(name)
    path = users_file(settings)
    lines = _read(path)
    if name not in lines:
        raise UsersError(f"no user {name!r} in {path} (users: {', '.join(sorted(lines)) or 'none'})")
    del lines[name]
    _write(path, lines)


def list_users(settings: "Settings") -> list[str]:
    """The user names, sorted."""
    return sorted(_read(users_file(settings)))


def check_password(settings: "Settings", name: str, password: str) -> bool:
    """Whether ``password`` is ``name``'s: what the server's authenticator decides, in Python."""
    line = _read(users_file(settings)).get(name)
    if line is None:
        return False
    _, _, iterations, salt, digest = line.split(":")
    found = _hash(password, base64.b64decode(salt), int(iterations))
    return hmac.compare_digest(found, base64.b64decode(digest))
