"""Real daily stock prices into Delta (``python -m jobs load-stocks``), for trend query Q2.

The prices ship inside the **skfolio 1.12.2 wheel** on PyPI (``conf/datasets.toml`` [stocks]:
requirement, file name, SHA-256 of the wheel and of the member). skfolio is never installed
or imported: ``pip download --no-deps --only-binary=:all:`` puts the wheel into
``<data_dir>/cache`` once, its SHA-256 is checked, and the one member (a gzip-compressed CSV,
one column per ticker) is read out of the zip with the standard library into
``<data_dir>/cache/stocks``, where its own SHA-256 is checked too. Later runs use the cached
file and never touch the network.

:func:`load_stocks` parses the member with :func:`cep.datasets.prices.read_price_csv` (long form: one
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

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cep.errors import InputDataError
from cep.datasets.prices import DailyPrices, PriceFileError, read_price_csv
from delta_tables.settings import Settings, check_identifier
from jobs.loaders.datasets import fetch_pinned_member, fetch_pinned_wheel, read_pin_section, sha256_of
from jobs.loaders.datasets import read_wheel_member as read_pinned_member
from jobs.loaders.staging import replace_table, version_if_holding
from jobs.loaders.load_logs import PROP_LOADER, PROP_SHA, PROP_SOURCE, LoadResult

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
    return StockSource(**read_pin_section(settings, "stocks", (("days", int), ("stocks", int))))


def fetch_wheel(settings: Settings, source: StockSource, *, quiet: bool = False) -> Path:
    """Path of the verified wheel in the cache, downloading it with pip on the first call."""
    return fetch_pinned_wheel(settings, source, purpose="its stock prices", quiet=quiet)


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
    return read_pinned_member(wheel, member, max_bytes=max_bytes, error=PriceFileError)


def fetch_prices(settings: Settings, *, quiet: bool = False) -> Path:
    """Path of the verified price file in ``<data_dir>/cache/stocks`` (taken out of the wheel,
    which is downloaded on the first call)."""
    return fetch_pinned_member(settings, stock_source(settings), subdir="stocks", purpose="its stock prices",
                               max_bytes=MAX_MEMBER_BYTES, error=PriceFileError, quiet=quiet)


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
        A :class:`jobs.loaders.load_logs.LoadResult` (``events`` is the number of price rows);
        ``written`` is False when the table was already up to date.
    """
    started = time.monotonic()
    table = settings.table(check_identifier(TABLE, what="table name"))
    source = stock_source(settings)
    path = fetch_prices(settings, quiet=quiet)
    wanted = {PROP_SHA: sha256_of(path), PROP_LOADER: LOADER_VERSION}
    version = None if force else version_if_holding(spark, table, wanted)
    if version is not None:
        count = spark.read.format("delta").load(str(table.location)).count()
        if not quiet:
            print(f"{TABLE}: already holds {path.name} at version {version} ({count:,} rows); "
                  "nothing written", file=sys.stderr, flush=True)
        return LoadResult(TABLE, version, count, False, time.monotonic() - started)
    prices = read_price_csv(path.read_bytes(), name=path.name)
    if prices.n_days != source.days or len(prices.tickers) != source.stocks:
        raise InputDataError(f"{path.name}: expected {source.days:,} days of {source.stocks} "
                             f"stocks, found {prices.n_days:,} days of {len(prices.tickers)}")
    version = replace_table(spark, settings, table, prices_to_arrow(prices),
                            {**wanted, PROP_SOURCE: f"{source.file}!{source.member}"})
    seconds = time.monotonic() - started
    if not quiet:
        print(f"{TABLE}: wrote {len(prices):,} prices of {len(prices.tickers)} stocks over "
              f"{prices.n_days:,} days as version {version} in {seconds:.1f}s",
              file=sys.stderr, flush=True)
    return LoadResult(TABLE, version, len(prices), True, seconds)
