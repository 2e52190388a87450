"""Daily minimum and maximum air temperatures of a place, and the heat waves in them.

The real series (docs/predict-data.md) are the weather files that ship with the crop model
AquaCrop-OSPy in the aquacrop wheel, one file per place (``aquacrop/data/tunis_climate.txt``
and others): whitespace-separated columns, a header line, one line per day, temperatures in
degrees Celsius::

    Day	Month	Year	Tmin(C)	Tmax(C)	Prcp(mm)	Et0(mm)
    1	1	1979	15.0	20.0	0.0	1.5

:func:`read_daily_temperatures` parses such a file (standard library and numpy only) into a
:class:`DailyTemperatures`; :func:`heat_runs` finds the heat waves of a series of daily
maxima: the maximal runs of at least ``length`` consecutive days whose maximum is above
``threshold`` (by default five days above 30 °C, the prediction experiment's event).

File rules (:func:`read_daily_temperatures`): the first non-blank line is the header, fields
separated by tabs or spaces; its first three names are ``Day``, ``Month``, ``Year`` (any
case), one later name is the daily maximum (``Tmax(C)``, ``MaxTemp`` or ``Tmax``) and at most
one the daily minimum (``Tmin(C)``, ``MinTemp`` or ``Tmin``; without it the minima are NaN);
other columns (precipitation, reference evapotranspiration) must be present on every line
but are not read. Every later non-blank line has as many fields as the header; its day,
month and year form a calendar date exactly one day after the previous line's (no gaps, no
repeats, so position ``i`` is day ``i`` of the series); each temperature is a finite number
of degrees Celsius in ``[-90, 60]`` (the range of air temperatures ever measured, so a
Fahrenheit file is refused instead of read as a heat wave), and the minimum is not above the
maximum. Anything else is a :class:`TemperatureFileError` naming the line (1-based; the
header is line 1 when the file starts with it).

Example:
    >>> t = read_daily_temperatures("Day Month Year Tmin(C) Tmax(C)\\n30 6 2001 21.0 31.5\\n"
    ...                             "1 7 2001 22.5 33.0\\n", city="tunis")
    >>> t.city, [str(d) for d in t.day], t.tmax.tolist(), t.tmin.tolist()
    ('tunis', ['2001-06-30', '2001-07-01'], [31.5, 33.0], [21.0, 22.5])
    >>> heat_runs([29.0, 31.0, 32.5, 30.5, 31.2, 33.0, 30.0, 35.0])
    [(1, 5)]
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cep.errors import InputDataError

__all__ = ["DailyTemperatures", "TemperatureFileError", "heat_runs", "read_daily_temperatures"]

TMAX_NAMES: tuple[str, ...] = ("tmax(c)", "maxtemp", "tmax")
"""Header names (lower case) of the daily maximum column."""
TMIN_NAMES: tuple[str, ...] = ("tmin(c)", "mintemp", "tmin")
"""Header names (lower case) of the daily minimum column."""
LOWEST_C = -90.0
HIGHEST_C = 60.0

# The largest real file is 1.2 MB; a bound keeps a hostile input from exhausting memory.
MAX_TEXT_BYTES = 64 << 20

_DAY_OR_MONTH = re.compile(r"^\d{1,2}$")
_YEAR = re.compile(r"^\d{4}$")
_ONE_DAY = dt.timedelta(days=1)


class TemperatureFileError(InputDataError):
    """A daily temperature file cannot be read: not UTF-8, or not the documented layout."""

    code = "CEP-DATA-005"


@dataclass(frozen=True, eq=False)
class DailyTemperatures:
    """The daily temperatures of one place, one entry per consecutive day.

    Attributes:
        city: the place's key (given by the caller; the files do not name it).
        day: ``datetime64[D]``, consecutive days (``day[i] == day[0] + i``).
        tmax: float64, the day's maximum in degrees Celsius.
        tmin: float64, the day's minimum in degrees Celsius (NaN when the file has none).
    """

    city: str
    day: np.ndarray
    tmax: np.ndarray
    tmin: np.ndarray

    def __len__(self) -> int:
        return len(self.day)


def _text(data: bytes | str, name: str) -> str:
    if isinstance(data, str):
        return data
    if len(data) > MAX_TEXT_BYTES:
        raise TemperatureFileError(f"{name}: more than {MAX_TEXT_BYTES >> 20} MiB of text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TemperatureFileError(f"{name}: not UTF-8 text: {exc}") from None


def _column(lower: list[str], names: tuple[str, ...], name: str, line: int,
            header: list[str]) -> int | None:
    found = [i for i, cell in enumerate(lower) if i >= 3 and cell in names]
    if len(found) > 1:
        raise TemperatureFileError(f"{name} line {line}: expected at most one of "
                                   f"{', '.join(names)}, found {' '.join(header)[:200]!r}")
    return found[0] if found else None


def _celsius(cell: str, column: str, name: str, line: int) -> float:
    try:
        value = float(cell)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and LOWEST_C <= value <= HIGHEST_C):
        raise TemperatureFileError(f"{name} line {line}: expected {column} in degrees Celsius "
                                   f"between {LOWEST_C:g} and {HIGHEST_C:g}, found {cell[:40]!r}")
    return value


def read_daily_temperatures(data: bytes | str, *, city: str,
                            name: str = "temperatures") -> DailyTemperatures:
    """The daily temperatures of a ``Day Month Year ... Tmin ... Tmax ...`` file (module docstring).

    Args:
        data: the file's bytes (UTF-8, a BOM is allowed) or its text.
        city: the place's key, kept in the result.
        name: what to call the file in error messages.

    Returns:
        The :class:`DailyTemperatures`, in file order.

    Raises:
        TemperatureFileError: the file breaks a rule; the message names the line and says what
            was expected and what was found.

    Example:
        >>> read_daily_temperatures("Day Month Year Tmin(C) Tmax(C)\\n28 2 2001 8.0 17.5\\n"
        ...                         "1 3 2001 9.1 18.0\\n3 3 2001 7.5 16.0\\n", city="tunis")
        Traceback (most recent call last):
        ...
        cep.datasets.temperatures.TemperatureFileError: CEP-DATA-005: temperatures line 4: expected 2001-03-02 (the day after 2001-03-01), found 2001-03-03
    """
    text = _text(data, name)
    lines = [(number, line.split()) for number, line in enumerate(text.splitlines(), start=1)]
    lines = [(number, fields) for number, fields in lines if fields]
    if not lines:
        raise TemperatureFileError(f"{name}: empty file, expected a header 'Day Month Year ... "
                                   f"Tmax(C) ...'")
    head_line, header = lines[0]
    lower = [cell.lower() for cell in header]
    tmax_col = _column(lower, TMAX_NAMES, name, head_line, header)
    tmin_col = _column(lower, TMIN_NAMES, name, head_line, header)
    if lower[:3] != ["day", "month", "year"] or tmax_col is None:
        raise TemperatureFileError(f"{name} line {head_line}: expected a header 'Day Month Year' "
                                   f"then columns including one of {', '.join(TMAX_NAMES)} (any "
                                   f"case), found {' '.join(header)[:200]!r}")
    tmax_name = header[tmax_col]
    tmin_name = header[tmin_col] if tmin_col is not None else ""
    body = lines[1:]
    if not body:
        raise TemperatureFileError(f"{name}: a header but no days")
    width = len(header)
    days: list[dt.date] = []
    tmax = np.empty(len(body), dtype=np.float64)
    tmin = np.full(len(body), np.nan, dtype=np.float64)
    for i, (line, row) in enumerate(body):
        if len(row) != width:
            raise TemperatureFileError(f"{name} line {line}: expected {width} fields, found "
                                       f"{len(row)}")
        d, m, y = row[:3]
        if not (_DAY_OR_MONTH.match(d) and _DAY_OR_MONTH.match(m) and _YEAR.match(y)):
            raise TemperatureFileError(f"{name} line {line}: expected a day, month and a "
                                       f"four-digit year, found {' '.join(row[:3])[:40]!r}")
        try:
            day = dt.date(int(y), int(m), int(d))
        except ValueError:
            raise TemperatureFileError(f"{name} line {line}: day {d}, month {m}, year {y} is "
                                       f"not a calendar date") from None
        if days and day != days[-1] + _ONE_DAY:
            raise TemperatureFileError(f"{name} line {line}: expected {days[-1] + _ONE_DAY} "
                                       f"(the day after {days[-1]}), found {day}")
        days.append(day)
        tmax[i] = _celsius(row[tmax_col], tmax_name, name, line)
        if tmin_col is not None:
            tmin[i] = _celsius(row[tmin_col], tmin_name, name, line)
            if tmin[i] > tmax[i]:
                raise TemperatureFileError(f"{name} line {line}: expected {tmin_name} <= "
                                           f"{tmax_name}, found {tmin[i]:g} > {tmax[i]:g}")
    return DailyTemperatures(city=city, day=np.array(days, dtype="datetime64[D]"), tmax=tmax,
                             tmin=tmin)


def heat_runs(tmax: Sequence[float] | np.ndarray, threshold: float = 30.0,
              length: int = 5) -> list[tuple[int, int]]:
    """The heat waves of a series of consecutive daily maxima.

    A heat wave is a maximal run of at least ``length`` consecutive days each with a maximum
    strictly above ``threshold``; a longer run is one heat wave, not several. A NaN maximum
    (an unknown day) ends a run.

    Args:
        tmax: the daily maxima in day order, one-dimensional.
        threshold: the temperature a day's maximum must exceed (a finite number).
        length: the least number of consecutive such days (an integer >= 1).

    Returns:
        ``(first, last)`` positions of each heat wave, both included, in order; ``len`` of it
        is the number of heat waves.

    Raises:
        InputDataError: ``threshold``, ``length`` or the shape of ``tmax`` out of range
            (``CEP-DATA-001``).

    Example:
        >>> heat_runs([31, 31, 31, 31, 31, 30, 31, 31, 31, 31, 31, 31])
        [(0, 4), (6, 11)]
        >>> heat_runs([31, 31, 31, 31, 30, 31, 31, 31, 31]), heat_runs([31, 31], 30.5, 2)
        ([], [(0, 1)])
    """
    ok = (not isinstance(threshold, bool) and isinstance(threshold, (int, float, np.integer, np.floating))
          and math.isfinite(threshold))
    if not ok:
        raise InputDataError(f"threshold must be a finite number, found {threshold!r}")
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 1:
        raise InputDataError(f"length must be an integer >= 1, found {length!r}")
    x = np.asarray(tmax, dtype=np.float64)
    if x.ndim != 1:
        raise InputDataError(f"tmax must be one-dimensional, found shape {x.shape}")
    hot = np.concatenate(([False], x > threshold, [False]))  # NaN > threshold is False
    edges = np.flatnonzero(hot[1:] != hot[:-1])
    starts, stops = edges[0::2], edges[1::2]  # a run is starts[k] .. stops[k] - 1
    keep = stops - starts >= length
    return [(int(a), int(b) - 1) for a, b in zip(starts[keep], stops[keep])]
