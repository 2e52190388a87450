"""Sliding and tumbling windows of a trend query (``WITHIN w SLIDE s``), vectorised.

A window is the half-open interval ``[start, start + w)`` of timestamps with ``start`` a
multiple of ``s`` (aligned to the epoch, as Spark's ``window(ts, w, s)``); the trends of every
non-empty window are computed separately (Mei et al., ICPP 2021, section 2: queries over
sliding windows). No SLIDE means tumbling windows (``s = w``); no WITHIN means one window, the
whole partition. An event at ``t`` belongs to the windows whose ``start`` is a multiple of
``s`` with ``start <= t < start + w``: ``ceil(w / s)`` or ``floor(w / s)`` of them.

Timestamps are in the unit of the spans: microseconds for TIMESTAMP columns and time units,
raw values for numeric columns with ``UNITS``. Integer timestamps and spans are computed in
integers; otherwise in float64, and every membership is checked with the literal condition
``start <= t < start + w``.

Example:
    >>> import numpy as np
    >>> starts, rows = assign_windows(np.array([0, 5, 12]), within=10, slide=5)
    >>> list(zip(starts.tolist(), rows.tolist()))
    [(-5, 0), (0, 0), (0, 1), (5, 1), (5, 2), (10, 2)]
"""

from __future__ import annotations

import numpy as np

from cep.trends.errors import TrendInputError

Number = int | float


def timestamps(ts: np.ndarray) -> np.ndarray:
    """Timestamps as numbers: datetimes become int64 microseconds; ints stay int64.

    Raises:
        TrendInputError: a NULL (NaT, NaN) or non-numeric timestamp.
    """
    ts = np.asarray(ts)
    if ts.ndim != 1:
        raise TrendInputError(f"timestamps must be one-dimensional, found shape {ts.shape}")
    kind = ts.dtype.kind
    if kind == "M":
        if np.isnat(ts).any():
            raise TrendInputError("a timestamp is NULL; every event needs a timestamp")
        return ts.astype("datetime64[us]").astype(np.int64)
    if kind in "iub":
        return ts.astype(np.int64, copy=False)
    if kind == "f":
        if np.isnan(ts).any():
            raise TrendInputError("a timestamp is NULL (NaN); every event needs a timestamp")
        return ts
    raise TrendInputError(f"timestamps have dtype {ts.dtype}; expected numbers or datetimes")


def assign_windows(ts: np.ndarray, within: Number | None, slide: Number | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The window memberships of every event: one row per (window, event).

    Args:
        ts: timestamps (numbers in the unit of the spans, or datetimes).
        within: window length ``w``, or None for one window holding every event.
        slide: window slide ``s`` (``0 < s <= w``), or None for tumbling windows.

    Returns:
        ``(window_start, event)``: two arrays of equal length, sorted by window start and then
        event index; ``event`` indexes ``ts``. With ``within`` None every event is in the one
        window, whose start is reported as 0.

    Raises:
        TrendInputError: a non-positive span, a slide larger than the window, a NULL timestamp.

    Example:
        >>> starts, rows = assign_windows(np.array([3, 14, 27]), within=10)
        >>> starts.tolist(), rows.tolist()
        ([0, 10, 20], [0, 1, 2])
    """
    t = timestamps(ts)
    n = len(t)
    if within is None:
        return np.zeros(n, dtype=np.int64), np.arange(n, dtype=np.int64)
    w = within
    s = w if slide is None else slide
    if not (w > 0 and s > 0):
        raise TrendInputError(f"window length and slide must be positive, found WITHIN {w} SLIDE {s}")
    if s > w:
        raise TrendInputError(f"the slide ({s}) must not exceed the window length ({w})")
    integral = t.dtype.kind == "i" and isinstance(w, (int, np.integer)) and isinstance(s, (int, np.integer))
    if integral:
        w, s = int(w), int(s)
        k_hi = t // s
        k_lo = (t - w) // s + 1
    else:
        tf = t.astype(np.float64)
        k_hi = np.floor(tf / s).astype(np.int64) + 1
        k_lo = np.floor((tf - w) / s).astype(np.int64)
    counts = k_hi - k_lo + 1
    rows = np.repeat(np.arange(n, dtype=np.int64), counts)
    first = np.repeat(np.cumsum(counts) - counts, counts)
    k = np.repeat(k_lo, counts) + (np.arange(len(rows), dtype=np.int64) - first)
    if integral:
        starts = k * s
        keep = (starts <= t[rows]) & (t[rows] < starts + w)
    else:
        starts = k.astype(np.float64) * s
        tr = t[rows].astype(np.float64)
        keep = (starts <= tr) & (tr < starts + w)
    starts, rows = starts[keep], rows[keep]
    order = np.lexsort((rows, starts))
    return starts[order], rows[order]
