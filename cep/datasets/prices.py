"""Daily closing prices from a wide CSV (one column per stock) into long form, for trend query Q2.

Q2 (DESIGN.md section 3) looks for prices that keep rising by more than 5 % from one event of
a trend to the next::

    PATTERN stock+ s[] WHERE [id] AND s[i].price > 1.05 * s[i-1].price WITHIN ...

The real prices come as a table with a ``Date`` column and one column per ticker (the layout
of skfolio's ``sp500_dataset.csv.gz``, see docs/data.md). :func:`read_price_csv` turns it into
one row per (day, stock), standard library and numpy only:

* ``id``: 0-based position in the long form, which is ordered by day, then by the ticker's
  column in the file (dense and unique, stable across reloads of the same file);
* ``stock``: the ticker (the column name); ``ts_us``: the day at 00:00 UTC in microseconds;
  ``price``: the value as float64.

Rules: the first header cell must be ``Date``; tickers must be distinct and non-empty; dates
are ``YYYY-MM-DD`` and strictly increasing; an empty cell is a missing price (no row); any
other cell must be a finite number greater than 0. The input may be gzip-compressed (detected
by its magic bytes). Anything else is a :class:`PriceFileError` naming the line.

Example:
    >>> p = read_price_csv(b"Date,AAA,BBB\\n2020-01-02,10.5,3\\n2020-01-03,,3.25\\n")
    >>> p.id.tolist(), p.stock.tolist(), p.price.tolist()
    ([0, 1, 2], ['AAA', 'BBB', 'BBB'], [10.5, 3.0, 3.25])
    >>> int(p.ts_us[2] - p.ts_us[0]) // 86_400_000_000, p.tickers, p.n_days
    (1, ('AAA', 'BBB'), 2)
"""

from __future__ import annotations

import csv
import gzip
import io
import re
import zlib
from dataclasses import dataclass

import numpy as np

from cep.errors import InputDataError

__all__ = ["DailyPrices", "PriceFileError", "read_price_csv"]

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DAY_US = 86_400_000_000
# The real file is 2.7 MB uncompressed; a bound keeps a hostile archive from exhausting memory.
MAX_TEXT_BYTES = 256 << 20


class PriceFileError(InputDataError):
    """A price file cannot be read: not gzip or UTF-8, or not the documented CSV layout."""

    code = "CEP-DATA-003"


@dataclass(frozen=True, eq=False)
class DailyPrices:
    """Daily prices in long form, one entry per (day, stock) with a price.

    Attributes:
        id: int64 ``0 .. n - 1``, ordered by day, then by the ticker's column.
        stock: object array of tickers.
        ts_us: int64 microseconds since the epoch: the day at 00:00 UTC.
        price: float64, finite and greater than 0.
        tickers: the tickers in column order.
        n_days: the number of dates in the file.
    """

    id: np.ndarray
    stock: np.ndarray
    ts_us: np.ndarray
    price: np.ndarray
    tickers: tuple[str, ...]
    n_days: int

    def __len__(self) -> int:
        return len(self.id)


def _text(data: bytes | str, name: str) -> str:
    if isinstance(data, str):
        return data
    if data[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as handle:
                data = handle.read(MAX_TEXT_BYTES + 1)
        except (OSError, EOFError, zlib.error) as exc:
            raise PriceFileError(f"{name}: not a readable gzip file: {exc}") from None
    if len(data) > MAX_TEXT_BYTES:
        raise PriceFileError(f"{name}: more than {MAX_TEXT_BYTES >> 20} MiB of text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PriceFileError(f"{name}: not UTF-8 text: {exc}") from None


def read_price_csv(data: bytes | str, *, name: str = "prices") -> DailyPrices:
    """The prices of a wide daily CSV (``Date`` then one column per ticker), in long form.

    Args:
        data: the file's bytes (plain or gzip-compressed) or its text.
        name: what to call the file in error messages.

    Returns:
        The :class:`DailyPrices`.

    Raises:
        PriceFileError: the bytes are not gzip/UTF-8 or the table breaks a rule of the module
            docstring; the message names the line (1-based, the header is line 1).

    Example:
        >>> read_price_csv("Date,AAA\\n2020-01-03,1\\n2020-01-02,1\\n")
        Traceback (most recent call last):
        ...
        cep.datasets.prices.PriceFileError: CEP-DATA-003: prices line 3: date 2020-01-02 is not after 2020-01-03
    """
    text = _text(data, name)
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise PriceFileError(f"{name}: malformed CSV: {exc}") from None
    tickers = _tickers(rows, name)
    body = [(line, row) for line, row in enumerate(rows[1:], start=2) if row]
    if not body:
        raise PriceFileError(f"{name}: a header but no rows of prices")
    days = _days(body, len(tickers) + 1, name)
    present, values = _prices(body, tickers, name)
    day_of, col_of = np.nonzero(present)  # row-major: by day, then by column
    ts = days.astype("datetime64[us]").astype(np.int64)
    return DailyPrices(
        id=np.arange(len(day_of), dtype=np.int64),
        stock=np.array(tickers, dtype=object)[col_of],
        ts_us=ts[day_of],
        price=values[day_of, col_of],
        tickers=tuple(tickers),
        n_days=len(body),
    )


def _tickers(rows: list[list[str]], name: str) -> list[str]:
    """The tickers of the header row ``Date,<ticker>,...``: distinct and non-empty.

    Raises:
        PriceFileError: no header, a first cell other than ``Date``, no ticker, or an empty or
            repeated ticker.
    """
    if not rows or not rows[0]:
        raise PriceFileError(f"{name}: empty file, expected a header 'Date,<ticker>,...'")
    header = [cell.strip() for cell in rows[0]]
    if header[0].lower() != "date" or len(header) < 2:
        raise PriceFileError(f"{name} line 1: expected a header 'Date,<ticker>,...', found "
                             f"{','.join(header)[:200]!r}")
    tickers = header[1:]
    if any(not t for t in tickers) or len(set(tickers)) != len(tickers):
        raise PriceFileError(f"{name} line 1: tickers must be distinct and non-empty, found "
                             f"{tickers!r}")
    return tickers


def _days(body: list[tuple[int, list[str]]], width: int, name: str) -> np.ndarray:
    """The dates of the rows ``(line, cells)`` as ``datetime64[D]``, strictly increasing.

    Raises:
        PriceFileError: a row without ``width`` fields, a date not ``YYYY-MM-DD`` or not a
            calendar day, or a date not after the one before.
    """
    for line, row in body:
        if len(row) != width:
            raise PriceFileError(f"{name} line {line}: expected {width} fields, found {len(row)}")
        if not _DATE.match(row[0]):
            raise PriceFileError(f"{name} line {line}: expected a date YYYY-MM-DD, found "
                                 f"{row[0][:40]!r}")
    try:
        days = np.array([row[0] for _, row in body], dtype="datetime64[D]")
    except ValueError as exc:
        raise PriceFileError(f"{name}: a date is not a calendar day: {exc}") from None
    if len(days) > 1:
        back = np.flatnonzero(np.diff(days) <= np.timedelta64(0, "D"))
        if len(back):
            i = int(back[0]) + 1
            raise PriceFileError(f"{name} line {body[i][0]}: date {days[i]} is not after "
                                 f"{days[i - 1]}")
    return days


def _prices(body: list[tuple[int, list[str]]], tickers: list[str], name: str
            ) -> tuple[np.ndarray, np.ndarray]:
    """The price cells of the rows ``(line, cells)``, one column per ticker.

    Returns:
        ``(present, values)``: ``(days, tickers)`` whether a cell holds a price, and the prices
        as float64 (NaN where empty).

    Raises:
        PriceFileError: a cell that is not a number, or not a finite number greater than 0.
    """
    cells = np.array([row[1:] for _, row in body], dtype=object).reshape(len(body), len(tickers))
    stripped = np.char.strip(cells.astype(str))
    present = stripped != ""
    values = np.full(stripped.shape, np.nan)
    try:
        values[present] = stripped[present].astype(np.float64)
    except ValueError:
        bad = next((line, t, cell) for (line, _), cells_row in zip(body, stripped)
                   for t, cell in zip(tickers, cells_row) if cell and not _is_number(cell))
        raise PriceFileError(f"{name} line {bad[0]}: price of {bad[1]} is not a number: "
                             f"{str(bad[2])[:40]!r}") from None
    invalid = present & ~(np.isfinite(values) & (values > 0))
    if invalid.any():
        r, k = (int(x[0]) for x in np.nonzero(invalid))
        raise PriceFileError(f"{name} line {body[r][0]}: price of {tickers[k]} must be a "
                             f"finite number > 0, found {str(stripped[r, k])!r}")
    return present, values


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True
