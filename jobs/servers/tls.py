"""TLS for both servers: where the key and certificate live, and a self-signed set to start.

``python -m jobs serve --tls`` (or ``tls = true`` in ``conf/server.toml``) makes HiveServer2's
binary Thrift listener speak TLS, with the PKCS#12 keystore ``<data_dir>/server/tls/server.p12``
whose password is the first line of ``server.p12.password`` next to it. ``python -m jobs tls
init --name HOST`` makes a self-signed set there (``openssl``, which Debian ships, and the JDK's
``keytool``); an operator with a certificate from their own authority puts their keystore and
password file under the same names instead (docs/bi.md, "TLS").

The folder is mode 0700; the key, the keystore and its password file 0600: another local user
cannot read them. ``python -m jobs connect-server --tls`` uses the same set, in PEM (``cert.pem``,
``key.pem``), for the TLS front of :mod:`jobs.servers.tls_proxy`. Clients need the certificate
only: ``cert.pem`` (PEM, for Python and ODBC
clients) and ``truststore.p12`` (PKCS#12 without a key, for beeline and JDBC; its password,
:data:`TRUSTSTORE_PASSWORD`, protects nothing secret and is printed with the URL).

Example:
    >>> import tempfile
    >>> from delta_tables.settings import load_settings
    >>> files = tls_files(load_settings(overrides={"data_dir": "/srv/cep"}))
    >>> str(files.keystore), str(files.truststore)
    ('/srv/cep/server/tls/server.p12', '/srv/cep/server/tls/truststore.p12')
    >>> try:
    ...     keystore_password(files)
    ... except TlsError as exc:
    ...     print(exc)  # doctest: +ELLIPSIS
    CEP-JOB-065: TLS is on and the keystore /srv/cep/server/tls/server.p12 is missing: ...
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cep.errors import ConfigError

if TYPE_CHECKING:
    from delta_tables.settings import Settings

__all__ = ["DAYS", "TRUSTSTORE_PASSWORD", "TlsError", "TlsFiles", "create_self_signed",
           "keystore_password", "pem_pair", "thrift_tls_settings", "tls_files"]

DAYS = 825
"""Validity of a self-signed certificate: the longest that common clients accept."""
TRUSTSTORE_PASSWORD = "cep-public"
"""The truststore's password: it holds a certificate, which is public, and no key."""
TOOL_SECONDS = 120
"""A bound for ``openssl``/``keytool`` that hang, not a timing."""


class TlsError(ConfigError):
    """TLS was asked for and its files are missing or unusable, or making them failed."""

    code = "CEP-JOB-065"


@dataclass(frozen=True)
class TlsFiles:
    """The SQL server's TLS files, all in one folder.

    Attributes:
        folder: ``<data_dir>/server/tls``.
    """

    folder: Path

    @property
    def keystore(self) -> Path:
        """PKCS#12 with the private key and the certificate chain (the server's)."""
        return self.folder / "server.p12"

    @property
    def password_file(self) -> Path:
        """The keystore's password, on the first line."""
        return self.folder / "server.p12.password"

    @property
    def key(self) -> Path:
        """The private key in PEM (written by ``tls init``; the server reads the keystore)."""
        return self.folder / "key.pem"

    @property
    def cert(self) -> Path:
        """The certificate in PEM, for clients."""
        return self.folder / "cert.pem"

    @property
    def truststore(self) -> Path:
        """The certificate as a PKCS#12 truststore, for beeline and JDBC clients."""
        return self.folder / "truststore.p12"


def tls_files(settings: "Settings") -> TlsFiles:
    """Where the SQL server's TLS files are: ``<data_dir>/server/tls``."""
    return TlsFiles(settings.data_dir / "server" / "tls")


def _check_secret(path: Path, what: str) -> None:
    """``path`` exists and no other user may read it."""
    if not path.is_file():
        raise TlsError(f"TLS is on and the {what} {path} is missing: make a self-signed one "
                       "with `python -m jobs tls init --name HOST`, or see docs/bi.md")
    if path.stat().st_mode & 0o077:
        raise TlsError(f"the {what} {path} may be read by other users (mode "
                       f"{path.stat().st_mode & 0o777:o}); chmod 600 it")


def keystore_password(files: TlsFiles) -> str:
    """The keystore's password, after checking that the keystore and its password are there.

    Raises:
        TlsError: a missing or empty file, or one that other users may read.
    """
    _check_secret(files.keystore, "keystore")
    _check_secret(files.password_file, "keystore password")
    lines = files.password_file.read_text(encoding="utf-8").splitlines()
    if not lines or not lines[0]:
        raise TlsError(f"the keystore password file {files.password_file} is empty")
    return lines[0]


def pem_pair(files: TlsFiles) -> tuple[Path, Path]:
    """``(cert, key)`` in PEM for the Connect server's TLS front, after checking them.

    Raises:
        TlsError: a missing file, or a key that other users may read.
    """
    _check_secret(files.key, "private key")
    if not files.cert.is_file():
        raise TlsError(f"TLS is on and the certificate {files.cert} is missing: make a "
                       "self-signed set with `python -m jobs tls init --name HOST`")
    return files.cert, files.key


def thrift_tls_settings(files: TlsFiles) -> dict[str, str]:
    """HiveServer2's settings for a TLS binary listener with ``files``' keystore.

    Raises:
        TlsError: see :func:`keystore_password`.
    """
    return {"hive.server2.use.SSL": "true",
            "hive.server2.keystore.path": str(files.keystore),
            "hive.server2.keystore.password": keystore_password(files),
            # Hive's default list leaves TLS 1.0 and 1.1 out already; SSLv2Hello/v3 too.
            "hive.ssl.protocol.blacklist": "SSLv2,SSLv2Hello,SSLv3,TLSv1,TLSv1.1"}


def _names(names: Sequence[str]) -> str:
    """The subjectAltName of ``names``: IP addresses as ``IP:``, the rest as ``DNS:``."""
    out = []
    for name in names:
        try:
            out.append(f"IP:{ipaddress.ip_address(name)}")
        except ValueError:
            out.append(f"DNS:{name}")
    return ",".join(out)


def _run(args: list[str]) -> None:
    """Run a tool with an argument list (no shell); its error becomes a :class:`TlsError`."""
    if shutil.which(args[0]) is None:
        raise TlsError(f"`{args[0]}` is not on PATH; it makes the self-signed set (Debian: "
                       f"{'openssl' if args[0] == 'openssl' else 'a JDK'})")
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=TOOL_SECONDS,
                              check=False)
    except subprocess.TimeoutExpired:
        raise TlsError(f"`{args[0]}` did not finish in {TOOL_SECONDS} s") from None
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise TlsError(f"`{args[0]} {args[1]}` failed (exit {done.returncode}): {last}")


def create_self_signed(settings: "Settings", names: Sequence[str], *, days: int = DAYS,
                       replace: bool = False) -> TlsFiles:
    """Make a self-signed key and certificate for ``names`` in :func:`tls_files`' folder.

    An ECDSA P-256 key, a certificate valid ``days`` days whose subject alternative names are
    ``names`` (host names and IP addresses clients connect to), the server's keystore with a
    random password, and the clients' ``cert.pem`` and ``truststore.p12``. Everything is
    written in a temporary folder beside the target, then moved in, so a failure leaves the
    old set whole.

    Args:
        settings: Project settings (the data directory).
        names: The names clients use to reach the server (at least one).
        days: Validity, 1 to :data:`DAYS`.
        replace: Replace an existing set (otherwise an existing keystore is an error).

    Raises:
        TlsError: no name, a bad name or ``days``, an existing set without ``replace``, or a
            tool that failed.
    """
    if not names:
        raise TlsError("tls init: give at least one --name (the host name or address clients "
                       "connect to)")
    for name in names:
        if not name or any(c in name for c in ",/=\\\n\r\t ") or len(name) > 253:
            raise TlsError(f"tls init: {name!r} is not a host name or an IP address")
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= DAYS:
        raise TlsError(f"tls init: --days must be 1 to {DAYS}, found {days!r}")
    files = tls_files(settings)
    if files.keystore.exists() and not replace:
        raise TlsError(f"{files.keystore} exists; pass --replace to make a new set (clients "
                       "then need the new certificate)")
    files.folder.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(files.folder.parent, 0o700)
    password = secrets.token_urlsafe(24)
    work = Path(tempfile.mkdtemp(prefix=".tls-", dir=files.folder.parent))
    try:
        made = TlsFiles(work)
        secret = made.password_file
        fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(password + "\n")
        _run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
              "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(made.key),
              "-out", str(made.cert), "-days", str(days), "-subj", f"/CN={names[0]}",
              "-addext", f"subjectAltName={_names(names)}"])
        _run(["openssl", "pkcs12", "-export", "-in", str(made.cert), "-inkey", str(made.key),
              "-name", "cep-server", "-out", str(made.keystore), "-passout", f"file:{secret}"])
        _run(["keytool", "-importcert", "-noprompt", "-alias", "cep-server", "-file",
              str(made.cert), "-keystore", str(made.truststore), "-storetype", "PKCS12",
              "-storepass", TRUSTSTORE_PASSWORD])
        for path in (made.key, made.keystore, secret):
            os.chmod(path, 0o600)
        for path in (made.cert, made.truststore):
            os.chmod(path, 0o644)
        os.chmod(work, 0o700)
        if files.folder.exists():
            shutil.rmtree(files.folder)
        os.replace(work, files.folder)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return files
