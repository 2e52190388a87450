"""A noisy sensor series (timestamped readings) into a probabilistic stream of changes.

The real series (docs/prob-data.md) is the hourly air temperature of Seattle in 2010, as
shipped in the vega_datasets wheel (``seattle-temps.csv``, NOAA data): a CSV with a ``date``
column and one reading column. :func:`read_sensor_csv` parses such a file (standard library and
numpy only); :func:`change_pstream` turns the readings into a
:class:`~cep.prob.stream.ProbStream` for ``match_prob``.

**Measurement-error model.** Reading ``x_i`` is the true value plus independent Gaussian sensor
noise with standard deviation ``sigma``. The true change from reading ``i - 1`` to reading
``i`` is then, given the two readings, normal with mean ``d_i = x_i - x_(i-1)`` and standard
deviation ``sigma * sqrt(2)``. It is put into one of three bins with a dead band ``step``::

    fall    true change <  -step
    steady  -step <= true change <= step
    rise    true change >   step

and the time point ``t = i`` (the index of the later reading, so ``t = 1 .. n - 1``) gets the
three bin probabilities from the normal CDF, written with ``erfc`` for accuracy in the tails
(``Phi(z) = erfc(-z / sqrt(2)) / 2``)::

    P(rise)   = erfc((step - d) / (2 sigma)) / 2
    P(fall)   = erfc((step + d) / (2 sigma)) / 2
    P(steady) = (erfc((|d| - step) / (2 sigma)) - erfc((|d| + step) / (2 sigma))) / 2

(then divided by their sum, which is 1 up to rounding). Caveat: two neighbouring changes share
a reading, so their noise is correlated (correlation -1/2), while the probabilistic stream model
treats time points as independent; we accept that approximation for an example.

Example pattern: ``PATTERN fall, steady+, rise`` -- the temperature falls, levels off for one
or more hours, then rises again (typically the night's minimum before the morning warm-up).
docs/prob-data.md gives what it finds in the real series.

CSV rules (:func:`read_sensor_csv`): a header of exactly two names, one of them ``date``
(any case), the other the reading's name; dates ``YYYY/MM/DD HH:MM`` or ``YYYY-MM-DD HH:MM``
(optionally ``:SS``, ``T`` instead of the space), strictly increasing; every reading a finite
number. The dates are kept as written (local wall-clock time; no time zone is applied), and the
time point of a reading is its position in the file, so a missing hour (for instance the
daylight-saving switch) does not open a gap in the stream. Anything else is a
:class:`SensorFileError` naming the line (the header is line 1).

Example:
    >>> s = read_sensor_csv("date,temp\\n2010/01/01 00:00,39.4\\n2010/01/01 01:00,39.2\\n"
    ...                     "2010/01/01 02:00,41.0\\n")
    >>> s.t.tolist(), s.reading.tolist(), s.column, str(s.ts[2])
    ([0, 1, 2], [39.4, 39.2, 41.0], 'temp', '2010-01-01T02:00:00')
    >>> p = change_pstream(s.reading, sigma=0.25, step=0.5)
    >>> p.values, p.t.tolist()
    (('fall', 'rise', 'steady'), [1, 2])
    >>> [[round(x, 3) for x in row] for row in p.probs.tolist()]
    [[0.198, 0.024, 0.778], [0.0, 1.0, 0.0]]
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass

import numpy as np

from cep.errors import InputDataError
from cep.prob.stream import ProbStream

__all__ = ["CHANGE_VALUES", "SensorFileError", "SensorSeries", "change_pstream",
           "read_sensor_csv"]

CHANGE_VALUES: tuple[str, ...] = ("fall", "rise", "steady")
"""The values of a change stream, sorted (the columns of its ``probs``)."""

# The real file is 0.2 MB; a bound keeps a hostile input from exhausting memory.
MAX_TEXT_BYTES = 64 << 20

_DATE = re.compile(r"^(\d{4})[-/](\d{2})[-/](\d{2})[ T](\d{2}):(\d{2})(?::(\d{2}))?$")
_ERFC = np.frompyfunc(math.erfc, 1, 1)


class SensorFileError(InputDataError):
    """A sensor file cannot be read: not UTF-8, or not the documented CSV layout."""

    code = "CEP-DATA-004"


@dataclass(frozen=True, eq=False)
class SensorSeries:
    """Readings of one sensor in file order.

    Attributes:
        t: int64 ``0 .. n - 1``, the position of each reading in the file.
        ts: ``datetime64[s]``, the date column as written (local wall-clock time).
        reading: float64, finite.
        column: the name of the reading column in the header.
    """

    t: np.ndarray
    ts: np.ndarray
    reading: np.ndarray
    column: str

    def __len__(self) -> int:
        return len(self.t)


def _text(data: bytes | str, name: str) -> str:
    if isinstance(data, str):
        return data
    if len(data) > MAX_TEXT_BYTES:
        raise SensorFileError(f"{name}: more than {MAX_TEXT_BYTES >> 20} MiB of text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SensorFileError(f"{name}: not UTF-8 text: {exc}") from None


def read_sensor_csv(data: bytes | str, *, name: str = "readings") -> SensorSeries:
    """The readings of a two-column ``date``/reading CSV (rules in the module docstring).

    Args:
        data: the file's bytes (UTF-8, a BOM is allowed) or its text.
        name: what to call the file in error messages.

    Returns:
        The :class:`SensorSeries`.

    Raises:
        SensorFileError: the file breaks a rule; the message names the line (1-based, the
            header is line 1).

    Example:
        >>> read_sensor_csv("temp,date\\n47.8,2010/01/01 00:00:00\\n47.4,2010/01/01 00:00:00\\n")
        Traceback (most recent call last):
        ...
        cep.datasets.sensors.SensorFileError: CEP-DATA-004: readings line 3: date 2010-01-01T00:00:00 is not after 2010-01-01T00:00:00
    """
    text = _text(data, name)
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise SensorFileError(f"{name}: malformed CSV: {exc}") from None
    if not rows or not rows[0]:
        raise SensorFileError(f"{name}: empty file, expected a header 'date,<reading>'")
    header = [cell.strip() for cell in rows[0]]
    lower = [cell.lower() for cell in header]
    if len(header) != 2 or lower.count("date") != 1 or not all(header):
        raise SensorFileError(f"{name} line 1: expected a header of two names, 'date' and the "
                              f"reading's, found {','.join(header)[:200]!r}")
    date_col = lower.index("date")
    value_col = 1 - date_col
    body = [(line, row) for line, row in enumerate(rows[1:], start=2) if row]
    if not body:
        raise SensorFileError(f"{name}: a header but no readings")
    stamps: list[str] = []
    readings = np.empty(len(body), dtype=np.float64)
    for i, (line, row) in enumerate(body):
        if len(row) != 2:
            raise SensorFileError(f"{name} line {line}: expected 2 fields, found {len(row)}")
        match = _DATE.match(row[date_col].strip())
        if match is None:
            raise SensorFileError(f"{name} line {line}: expected a date 'YYYY/MM/DD HH:MM[:SS]', "
                                  f"found {row[date_col][:40]!r}")
        y, mo, d, h, mi, s = match.groups()
        stamp = f"{y}-{mo}-{d}T{h}:{mi}:{s or '00'}"
        try:
            np.datetime64(stamp, "s")
        except ValueError:
            raise SensorFileError(f"{name} line {line}: {row[date_col].strip()!r} is not a "
                                  f"calendar date and time") from None
        if not (0 <= int(h) <= 23 and 0 <= int(mi) <= 59 and 0 <= int(s or 0) <= 59):
            raise SensorFileError(f"{name} line {line}: {row[date_col].strip()!r} is not a "
                                  f"calendar date and time")
        stamps.append(stamp)
        cell = row[value_col].strip()
        try:
            value = float(cell)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise SensorFileError(f"{name} line {line}: {header[value_col]} must be a finite "
                                  f"number, found {cell[:40]!r}")
        readings[i] = value
    ts = np.array(stamps, dtype="datetime64[s]")
    back = np.flatnonzero(np.diff(ts) <= np.timedelta64(0, "s"))
    if len(back):
        i = int(back[0]) + 1
        raise SensorFileError(f"{name} line {body[i][0]}: date {ts[i]} is not after {ts[i - 1]}")
    return SensorSeries(t=np.arange(len(body), dtype=np.int64), ts=ts, reading=readings,
                        column=header[value_col])


def _check_scale(name: str, value: object, *, positive: bool) -> float:
    ok = (not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))
          and math.isfinite(value) and (value > 0 if positive else value >= 0))
    if not ok:
        rule = "> 0" if positive else ">= 0"
        raise InputDataError(f"{name} must be a finite number {rule}, found {value!r}")
    return float(value)  # type: ignore[arg-type]


def _erfc(x: np.ndarray) -> np.ndarray:
    return _ERFC(x).astype(np.float64) if len(x) else np.zeros(0)


def change_pstream(reading: np.ndarray, *, sigma: float, step: float,
                   stream: str = "") -> ProbStream:
    """The probabilistic stream of changes between consecutive readings (module docstring).

    Args:
        reading: the readings in time order (finite numbers), at least 0 of them.
        sigma: the standard deviation of one reading's noise, in the reading's unit (> 0).
        step: half the width of the ``steady`` band, in the reading's unit (>= 0).
        stream: the stream's key.

    Returns:
        A :class:`~cep.prob.stream.ProbStream` with values ``('fall', 'rise', 'steady')`` and
        time points ``1 .. len(reading) - 1`` (empty for fewer than two readings).

    Raises:
        InputDataError: ``sigma`` or ``step`` out of range, or a reading not finite
            (``CEP-DATA-001``).

    Example:
        >>> s = change_pstream(np.array([10.0, 10.0, 12.0, 8.0]), sigma=0.5, step=1.0)
        >>> s.t.tolist(), [s.values[j] for j in s.probs.argmax(axis=1)]
        ([1, 2, 3], ['steady', 'rise', 'fall'])
        >>> round(float(s.probs[0, 2]), 4), round(float(s.probs[1, 1]), 4)
        (0.8427, 0.9214)
    """
    sigma = _check_scale("sigma", sigma, positive=True)
    step = _check_scale("step", step, positive=False)
    x = np.asarray(reading, dtype=np.float64)
    if x.ndim != 1:
        raise InputDataError(f"reading must be one-dimensional, found shape {x.shape}")
    bad = np.flatnonzero(~np.isfinite(x))
    if len(bad):
        raise InputDataError(f"reading {int(bad[0])} is not a finite number: "
                             f"{float(x[bad[0]])!r}")
    d = np.diff(x) if len(x) > 1 else np.zeros(0)
    scale = 2.0 * sigma
    a = np.abs(d)
    probs = np.empty((len(d), 3), dtype=np.float64)
    probs[:, 0] = 0.5 * _erfc((step + d) / scale)                          # fall
    probs[:, 1] = 0.5 * _erfc((step - d) / scale)                          # rise
    probs[:, 2] = 0.5 * (_erfc((a - step) / scale) - _erfc((a + step) / scale))  # steady
    np.maximum(probs, 0.0, out=probs)
    probs /= probs.sum(axis=1, keepdims=True)
    return ProbStream(np.arange(1, len(d) + 1, dtype=np.int64), CHANGE_VALUES, probs, stream)
