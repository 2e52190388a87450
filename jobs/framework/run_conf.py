"""How state jobs run, read from ``conf/jobs.toml``: run-all list, retries, manifest, maintenance.

Every key has a default, so a missing file or section means the defaults; an unknown key, a
wrong type or a bad value is a :class:`cep.errors.ConfigError` that names the file, the key,
what was expected and what was found.

Example:
    >>> from delta_tables.settings import load_settings
    >>> conf = load_run_conf(load_settings(overrides={"data_dir": "/tmp/cep-doc"}))
    >>> conf.jobs[0], conf.max_attempts, conf.manifest.name, conf.time_travel_hours
    ('sketch/app_sketch', 3, 'cep_runs', 168)
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from typing import Any, Mapping

from cep.errors import ConfigError
from delta_tables.settings import Settings, TableConf
from jobs.framework.registry import parse_key

__all__ = ["RunConf", "load_run_conf"]

_SECTIONS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "run_all": {"jobs": list},
    "retries": {"max_attempts": int, "backoff_seconds": (int, float)},
    "manifest": {"table": str},
    "maintenance": {"time_travel_hours": int, "optimize": bool},
}


@dataclass(frozen=True)
class RunConf:
    """The rules of ``conf/jobs.toml``.

    Attributes:
        jobs: ``KIND/NAME`` of the jobs ``run-all`` runs, in order.
        max_attempts: Attempts of one run when Delta reports a concurrency conflict (>= 1).
        backoff_seconds: Wait before the second attempt, doubled before each further one.
        manifest: The run manifest table (a table of ``conf/tables.toml``).
        time_travel_hours: VACUUM never uses a shorter retention than this.
        optimize: Whether ``maintain`` runs OPTIMIZE on the state tables.
    """

    jobs: tuple[str, ...]
    max_attempts: int
    backoff_seconds: float
    manifest: TableConf
    time_travel_hours: int
    optimize: bool


def _checked(path: str, data: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    unknown = sorted(set(data) - set(_SECTIONS))
    if unknown:
        raise ConfigError(f"{path}: unknown section [{unknown[0]}]; expected one of "
                          f"{', '.join(f'[{s}]' for s in _SECTIONS)}")
    out: dict[str, dict[str, Any]] = {}
    for section, keys in _SECTIONS.items():
        entries = data.get(section, {})
        if not isinstance(entries, dict):
            raise ConfigError(f"{path}: [{section}] must be a table")
        for key, value in entries.items():
            if key not in keys:
                raise ConfigError(f"{path}: unknown key {section}.{key}; expected one of "
                                  f"{', '.join(keys)}")
            wanted = keys[key]
            if isinstance(value, bool) and wanted is not bool or not isinstance(value, wanted):
                names = " or ".join(t.__name__ for t in (wanted if isinstance(wanted, tuple)
                                                          else (wanted,)))
                raise ConfigError(f"{path}: {section}.{key}: expected {names}, found "
                                  f"{type(value).__name__} {value!r}")
        out[section] = dict(entries)
    return out


def load_run_conf(settings: Settings) -> RunConf:
    """``<conf_dir>/jobs.toml`` with defaults for everything it leaves out."""
    path = settings.conf_dir / "jobs.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    conf = _checked(path.name, data)
    jobs = conf["run_all"].get("jobs", [])
    for key in jobs:
        if not isinstance(key, str):
            raise ConfigError(f"{path.name}: run_all.jobs: expected KIND/NAME strings, found "
                              f"{key!r}")
        parse_key(key)
    if len(set(jobs)) != len(jobs):
        raise ConfigError(f"{path.name}: run_all.jobs names a job twice")
    attempts = conf["retries"].get("max_attempts", 3)
    backoff = float(conf["retries"].get("backoff_seconds", 2.0))
    hours = conf["maintenance"].get("time_travel_hours", 168)
    if not 1 <= attempts <= 20:
        raise ConfigError(f"{path.name}: retries.max_attempts: expected 1 to 20, found {attempts}")
    if not 0 <= backoff <= 600:
        raise ConfigError(f"{path.name}: retries.backoff_seconds: expected 0 to 600, found "
                          f"{backoff}")
    if hours < 1:
        raise ConfigError(f"{path.name}: maintenance.time_travel_hours: expected at least 1, "
                          f"found {hours}")
    return RunConf(tuple(jobs), attempts, backoff,
                   settings.table(conf["manifest"].get("table", "cep_runs")), hours,
                   conf["maintenance"].get("optimize", True))
