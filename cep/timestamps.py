"""ISO-8601 text to microseconds since the epoch (UTC): the one conversion every module uses.

Naive values are taken as UTC, never as the machine's local time; a bare date is midnight UTC.

Example:
    >>> iso_to_micros("2016-01-01T09:51:15.304+01:00")
    1451638275304000
    >>> iso_to_micros("1970-01-02"), try_iso_to_micros("yesterday")
    (86400000000, None)
"""

from __future__ import annotations

from datetime import date, datetime, timezone

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def iso_to_micros(text: str) -> int:
    """Microseconds since the epoch of an ISO-8601 date or timestamp; ValueError if malformed."""
    text = text.strip()
    if len(text) == 10:
        day = date.fromisoformat(text)
        stamp = datetime(day.year, day.month, day.day, tzinfo=timezone.utc)
    else:
        stamp = datetime.fromisoformat(text)
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=timezone.utc)
    delta = stamp - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def try_iso_to_micros(text: str) -> int | None:
    """Like :func:`iso_to_micros`, but None (SQL NULL) when ``text`` is not a date."""
    try:
        return iso_to_micros(text)
    except ValueError:
        return None
