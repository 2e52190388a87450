"""Project settings read from ``conf/*.toml``: session, Delta jars, table names and locations.

Every layer that needs a path or a table name goes through :func:`load_settings`, so user
strings never choose a location by themselves: names are validated identifiers and every
location resolves under the configured warehouse root.

Example:
    >>> s = load_settings(overrides={"data_dir": "/tmp/cep-doc"})
    >>> str(s.warehouse_dir)
    '/tmp/cep-doc/warehouse'
    >>> s.table("bpi2012").name
    'bpi2012'
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from cep.errors import ConfigError

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PACKAGED_CONF = Path(__file__).resolve().parent / "defaults"
"""The default ``conf/`` a wheel carries (copied there by setup.py when the wheel is built)."""


def running_from_checkout() -> bool:
    """Whether the packages are a source checkout (``make``, an editable install), not a wheel.

    Example:
        >>> isinstance(running_from_checkout(), bool)
        True
    """
    return (PROJECT_ROOT / "pyproject.toml").is_file() and (PROJECT_ROOT / "conf").is_dir()


def default_conf_dir() -> Path:
    """``$CEP_CONF_DIR``, else a checkout's ``conf/``, else the defaults packaged in the wheel."""
    if os.environ.get("CEP_CONF_DIR"):
        return Path(os.environ["CEP_CONF_DIR"])
    return PROJECT_ROOT / "conf" if running_from_checkout() else PACKAGED_CONF


def relative_base() -> Path:
    """What a relative ``data_dir`` resolves against: a checkout's root, else the current folder
    (an installed package never writes into its own folder)."""
    return PROJECT_ROOT if running_from_checkout() else Path.cwd()


IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


@dataclass(frozen=True)
class TableConf:
    """One configured Delta table: its SQL name and its location under the warehouse."""

    name: str
    location: Path
    source: str | None = None
    description: str = ""


@dataclass(frozen=True)
class DatasetConf:
    """One real event log inside the pm4py source distribution."""

    name: str
    member: str
    events: int
    cases: int


@dataclass(frozen=True)
class Settings:
    """Resolved settings; every path is absolute."""

    conf_dir: Path
    data_dir: Path
    warehouse_dir: Path
    app_name: str
    master: str
    shuffle_partitions: int
    driver_memory: str
    show_progress: bool
    delta_package: str
    delta_repository: str
    spark_extra: Mapping[str, str]
    tables: Mapping[str, TableConf]
    sdist_requirement: str
    sdist_file: str
    sdist_sha256: str
    datasets: Mapping[str, DatasetConf] = field(default_factory=dict)

    @property
    def cache_dir(self) -> Path:
        """Downloads (the pm4py sdist) and extracted logs, kept between runs."""
        return self.data_dir / "cache"

    @property
    def ivy_dir(self) -> Path:
        """Ivy cache holding the resolved Delta jars."""
        return self.data_dir / "ivy"

    @property
    def scratch_dir(self) -> Path:
        """Spark's local scratch directory (``spark.local.dir``)."""
        return self.data_dir / "tmp"

    def table(self, name: str) -> TableConf:
        """The configured table called ``name``; a :class:`ConfigError` names the known ones."""
        check_identifier(name, what="table name")
        try:
            return self.tables[name]
        except KeyError:
            known = ", ".join(sorted(self.tables)) or "(none)"
            raise ConfigError(
                f"unknown table {name!r}: expected one of the tables in conf/tables.toml: {known}"
            ) from None

    def location_under_warehouse(self, relative: str) -> Path:
        """Resolve ``relative`` under the warehouse root, refusing anything that escapes it."""
        return resolve_under(self.warehouse_dir, relative)


def check_identifier(name: str, *, what: str = "identifier") -> str:
    """Return ``name`` if it is a plain SQL identifier, else raise :class:`ConfigError`."""
    if not isinstance(name, str) or not IDENTIFIER.match(name):
        raise ConfigError(
            f"invalid {what} {name!r}: expected letters, digits and '_' only, "
            "starting with a letter or '_', at most 128 characters"
        )
    return name


def resolve_under(root: Path, relative: str) -> Path:
    """``root / relative`` made absolute, or :class:`ConfigError` if it leaves ``root``."""
    if not isinstance(relative, str) or not relative or "\x00" in relative:
        raise ConfigError(f"invalid location {relative!r}: expected a non-empty relative path")
    if Path(relative).is_absolute():
        raise ConfigError(f"invalid location {relative!r}: expected a path relative to {root}")
    base = root.resolve()
    path = (base / relative).resolve()
    if path != base and base not in path.parents:
        raise ConfigError(f"location {relative!r} resolves to {path}, outside the warehouse {base}")
    return path


def check_locations(warehouse: Path, tables: Iterable[TableConf], *,
                    where: str = "tables.toml") -> None:
    """Refuse locations that would let one table's writes or VACUUM touch another's files.

    Each table needs a folder of its own: not the warehouse root itself, not the folder of
    another table, not inside another table's folder (or around it).

    Args:
        warehouse: The warehouse root.
        tables: The tables to compare, each with the others.
        where: Where the tables come from, for the message.

    Raises:
        ConfigError: the first clash, naming both tables and their folders.

    Example:
        >>> root = Path("/w")
        >>> check_locations(root, [TableConf("a", root / "a"), TableConf("b", root / "a" / "b")])
        Traceback (most recent call last):
        ...
        cep.errors.ConfigError: CEP-CONF-001: tables.toml: table b's location /w/a/b is inside table a's location /w/a; every table needs a folder of its own
    """
    seen: list[TableConf] = []
    for table in tables:
        if table.location == warehouse:
            raise ConfigError(f"{where}: table {table.name}'s location is the warehouse "
                              f"root {warehouse} itself; give it a folder under it")
        for other in seen:
            if table.location == other.location:
                clash = f"is also table {other.name}'s location"
            elif other.location in table.location.parents:
                clash = f"is inside table {other.name}'s location {other.location}"
            elif table.location in other.location.parents:
                clash = f"holds table {other.name}'s location {other.location}"
            else:
                continue
            raise ConfigError(f"{where}: table {table.name}'s location {table.location} "
                              f"{clash}; every table needs a folder of its own")
        seen.append(table)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"missing settings file {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"malformed settings file {path}: {exc}") from None


def _require(section: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in section:
        raise ConfigError(f"{where}: missing key {key!r}")
    value = section[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ConfigError(
            f"{where}: key {key!r} expected {kind.__name__}, found {type(value).__name__} {value!r}"
        )
    return value


def load_settings(
    conf_dir: str | Path | None = None, overrides: Mapping[str, Any] | None = None
) -> Settings:
    """Read ``conf/`` and apply environment variables, then explicit ``overrides``.

    Args:
        conf_dir: folder holding ``spark.toml``, ``tables.toml`` and ``datasets.toml``;
            default :func:`default_conf_dir` (``$CEP_CONF_DIR``, a checkout's ``conf/``, or
            the defaults packaged in the wheel).
        overrides: session keys (``data_dir``, ``warehouse``, ``master``, ``app_name``,
            ``show_progress``, ``shuffle_partitions``, ``driver_memory``) that win over the
            files and the environment.

    Returns:
        The resolved, immutable :class:`Settings`.
    """
    conf_path = Path(conf_dir or default_conf_dir()).resolve()
    spark_toml = _read_toml(conf_path / "spark.toml")
    tables_toml = _read_toml(conf_path / "tables.toml")
    data_toml = _read_toml(conf_path / "datasets.toml")

    session = _session_values(spark_toml, overrides)
    where = f"{conf_path / 'spark.toml'} [session]"
    data_dir = Path(_require(session, "data_dir", str, where))
    if not data_dir.is_absolute():
        data_dir = relative_base() / data_dir
    delta = spark_toml.get("delta", {})
    extra = _spark_extra(spark_toml)
    warehouse = _warehouse(session, data_dir)
    tables = _table_confs(tables_toml, warehouse)
    sdist = data_toml.get("sdist", {})
    datasets = _dataset_confs(data_toml)
    return Settings(
        conf_dir=conf_path,
        data_dir=data_dir.resolve(),
        warehouse_dir=warehouse,
        app_name=_require(session, "app_name", str, where),
        master=_require(session, "master", str, where),
        shuffle_partitions=_require(session, "shuffle_partitions", int, where),
        driver_memory=_require(session, "driver_memory", str, where),
        show_progress=_require(session, "show_progress", bool, where),
        delta_package=_require(delta, "package", str, "spark.toml [delta]"),
        delta_repository=delta.get("repository", ""),
        spark_extra=extra,
        tables=tables,
        sdist_requirement=_require(sdist, "requirement", str, "datasets.toml [sdist]"),
        sdist_file=_require(sdist, "file", str, "datasets.toml [sdist]"),
        sdist_sha256=_require(sdist, "sha256", str, "datasets.toml [sdist]"),
        datasets=datasets,
    )


def _session_values(spark_toml: Mapping[str, Any],
                    overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """``spark.toml [session]``, the environment's values over it, then ``overrides``.

    Raises:
        ConfigError: an override of a key that is not a session key.
    """
    session = dict(spark_toml.get("session", {}))
    for key, variable in (("master", "CEP_SPARK_MASTER"), ("data_dir", "CEP_DATA_DIR"),
                          ("warehouse", "CEP_WAREHOUSE")):
        if os.environ.get(variable):
            session[key] = os.environ[variable]
    for key, value in (overrides or {}).items():
        if key not in {"data_dir", "warehouse", "master", "app_name", "show_progress",
                       "shuffle_partitions", "driver_memory"}:
            raise ConfigError(f"unknown settings override {key!r}")
        session[key] = str(value) if key in ("data_dir", "warehouse") else value
    return session


def _spark_extra(spark_toml: Mapping[str, Any]) -> dict[str, str]:
    """``spark.toml [spark]``: extra Spark settings, each value a string (Spark's own form)."""
    extra = spark_toml.get("spark", {})
    for key, value in extra.items():
        if not isinstance(value, str):
            raise ConfigError(f"[spark] {key!r}: expected a string value, found {value!r}")
    return dict(extra)


def _warehouse(session: Mapping[str, Any], data_dir: Path) -> Path:
    """The root of every Delta table: the session's ``warehouse``, relative to ``data_dir``.

    It defaults to ``<data_dir>/warehouse``; tests point it at a fresh folder while sharing the
    jar and download caches of ``data_dir``.
    """
    warehouse = Path(session.get("warehouse") or "warehouse")
    return (warehouse if warehouse.is_absolute() else data_dir / warehouse).resolve()


def _table_confs(tables_toml: Mapping[str, Any], warehouse: Path) -> dict[str, TableConf]:
    """``tables.toml [tables.*]``, each table in a folder of its own under ``warehouse``."""
    tables: dict[str, TableConf] = {}
    for name, spec in tables_toml.get("tables", {}).items():
        check_identifier(name, what="table name in tables.toml")
        tw = f"tables.toml [tables.{name}]"
        location = resolve_under(warehouse, _require(spec, "location", str, tw))
        tables[name] = TableConf(name, location, spec.get("source"), spec.get("description", ""))
    check_locations(warehouse, tables.values())
    return tables


def _dataset_confs(data_toml: Mapping[str, Any]) -> dict[str, DatasetConf]:
    """``datasets.toml [*]``: the real event logs, each with its member, events and cases."""
    return {
        name: DatasetConf(
            name,
            _require(spec, "member", str, f"datasets.toml [{name}]"),
            _require(spec, "events", int, f"datasets.toml [{name}]"),
            _require(spec, "cases", int, f"datasets.toml [{name}]"),
        )
        for name, spec in data_toml.get("datasets", {}).items()
    }
