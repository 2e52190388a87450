"""Flattening of XES event logs (IEEE 1849) into columns, with the standard library only.

An XES log nests events inside traces; analysts want one row per event. :func:`read_xes`
streams the XML (``iterparse``, constant memory per trace) and returns an :class:`EventLog`:
one list per column, one entry per event, in file order.

Column rules (documented for analysts in ``docs/data.md``):

* ``id``: 0-based ordinal of the event in the file (stable across reloads of the same file).
* ``case_id``: the trace's ``concept:name``; ``type``: the event's ``concept:name``;
  ``ts``: the event's ``time:timestamp`` as microseconds since the epoch, in UTC.
* Other event attributes: their key in snake case (``org:resource`` -> ``org_resource``,
  ``EventOrigin`` -> ``event_origin``); trace attributes get the prefix ``case_``.
* Types follow the XES element: ``int`` -> int, ``float`` -> float, ``boolean`` -> bool,
  ``date`` -> microseconds (UTC), ``string``/``id`` -> str. A key seen with both ``int`` and
  ``float`` becomes float; any other mix becomes string. Nested ``list``/``container``
  attributes are not flattened; their keys are counted in ``EventLog.skipped``.

Example:
    >>> import io
    >>> xml = (b'<log><trace><string key="concept:name" value="c1"/>'
    ...        b'<event><string key="concept:name" value="A"/>'
    ...        b'<date key="time:timestamp" value="2020-01-01T01:00:00+01:00"/></event>'
    ...        b'</trace></log>')
    >>> log = read_xes(io.BytesIO(xml))
    >>> log.columns["case_id"], log.columns["type"], log.columns["ts"]
    (['c1'], ['A'], [1577836800000000])
"""

from __future__ import annotations

import gzip
import re
from functools import lru_cache
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable
from xml.etree.ElementTree import iterparse, ParseError

from cep.errors import InputDataError
from cep.timestamps import iso_to_micros

RESERVED = ("id", "case_id", "type", "ts")
_SCALAR_TAGS = {"string", "id", "int", "float", "boolean", "date"}
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NON_WORD = re.compile(r"[^0-9a-zA-Z]+")


@dataclass
class EventLog:
    """A flattened event log: equal-length column lists plus the XES kind of each column."""

    columns: dict[str, list[Any]]
    kinds: dict[str, str]
    n_events: int = 0
    n_cases: int = 0
    skipped: dict[str, int] = field(default_factory=dict)


@lru_cache(maxsize=4096)
def column_name(key: str, *, case: bool = False) -> str:
    """The column name for XES attribute ``key`` (snake case; ``case_`` prefix for traces).

    Example:
        >>> column_name("org:resource"), column_name("EventOrigin"), column_name("id")
        ('org_resource', 'event_origin', 'attr_id')
        >>> column_name("ApplicationID", case=True)
        'case_application_id'
    """
    snake = _NON_WORD.sub("_", _CAMEL.sub("_", key)).strip("_").lower()
    snake = re.sub(r"(?<=[a-z])(?=id$)", "_", snake) if snake.endswith("id") else snake
    snake = re.sub(r"_+", "_", snake) or "attr"
    if snake[0].isdigit():
        snake = "attr_" + snake
    if case:
        return "case_" + snake
    return "attr_" + snake if snake in RESERVED else snake


def parse_timestamp(text: str) -> int:
    """Microseconds since the epoch (UTC) of an XES ``date`` value; naive values are UTC.

    Example:
        >>> parse_timestamp("2016-01-01T09:51:15.304+01:00")
        1451638275304000
    """
    return iso_to_micros(text)


def _parse_bool(text: str) -> bool:
    low = text.strip().lower()
    if low in ("true", "1"):
        return True
    if low in ("false", "0"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


_CONVERT: dict[str, Callable[[str], Any]] = {
    "string": str, "id": str, "int": int, "float": float, "boolean": _parse_bool,
    "date": parse_timestamp,
}


class _Columns:
    """Growing columns with None padding; remembers the XES kind of each column."""

    def __init__(self) -> None:
        # Reserved columns are filled by the caller; ``raw`` holds the other attributes as
        # text until the end, when each column's final kind is known.
        self.fixed: dict[str, list[Any]] = {name: [] for name in RESERVED}
        self.kinds: dict[str, str] = {"id": "int", "case_id": "string", "type": "string",
                                      "ts": "date"}
        self.raw: dict[str, list[str | None]] = {}
        self.rows = 0

    def add_row(self, values: dict[str, tuple[str, str]]) -> None:
        for name, (kind, text) in values.items():
            column = self.raw.get(name)
            if column is None:
                column = self.raw[name] = [None] * self.rows
                self.kinds[name] = kind
            else:
                self._merge_kind(name, kind)
            column.append(text)
        if len(values) != len(self.raw):
            for name, column in self.raw.items():
                if name not in values:
                    column.append(None)
        self.rows += 1

    def _merge_kind(self, name: str, kind: str) -> None:
        old = self.kinds[name]
        if old == kind or old == "string":
            return
        self.kinds[name] = "float" if {old, kind} == {"int", "float"} else "string"

    def finish(self) -> tuple[dict[str, list[Any]], dict[str, str]]:
        data = dict(self.fixed)
        for name, texts in self.raw.items():
            convert = _CONVERT[self.kinds[name]]
            data[name] = [None if t is None else convert(t) for t in texts]
        return data, self.kinds


@lru_cache(maxsize=256)
def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def read_xes(source: str | Path | IO[bytes], *, progress: Callable[[int], None] | None = None,
             progress_every: int = 100_000) -> EventLog:
    """Flatten an XES log (plain or ``.gz``) into an :class:`EventLog`.

    Args:
        source: a path (``.xes`` or ``.xes.gz``) or a binary file object.
        progress: called with the number of events read so far, every ``progress_every``.

    Raises:
        InputDataError: the XML is malformed or an attribute value does not fit its type;
            the message gives the event number and the attribute key.
    """
    handle: IO[bytes]
    if isinstance(source, (str, Path)):
        path = Path(source)
        handle = gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb")
    else:
        handle = source
    cols = _Columns()
    n_cases = 0
    skipped: dict[str, int] = {}
    next_report = progress_every
    try:
        for _, elem in iterparse(handle, events=("end",)):
            if _local(elem.tag) != "trace":
                continue
            n_cases += 1
            _flatten_trace(elem, cols, skipped)
            elem.clear()
            if progress is not None and cols.rows >= next_report:
                progress(cols.rows)
                next_report = (cols.rows // progress_every + 1) * progress_every
    except ParseError as exc:
        raise InputDataError(f"malformed XES after {cols.rows} events: {exc}") from None
    finally:
        if isinstance(source, (str, Path)):
            handle.close()
    try:
        data, kinds = cols.finish()
    except ValueError as exc:
        raise InputDataError(f"attribute value does not fit its XES type: {exc}") from None
    return EventLog(data, kinds, cols.rows, n_cases, skipped)


def _flatten_trace(trace: Any, cols: _Columns, skipped: dict[str, int]) -> None:
    case_values: dict[str, tuple[str, str]] = {}
    events = []
    for child in trace:
        tag = _local(child.tag)
        if tag == "event":
            events.append(child)
        elif tag in _SCALAR_TAGS:
            key = child.get("key", "")
            name = "case_id" if key == "concept:name" else column_name(key, case=True)
            case_values[name] = (tag, child.get("value", ""))
        else:
            skipped[child.get("key", tag)] = skipped.get(child.get("key", tag), 0) + 1
    case_id = case_values.pop("case_id", ("string", ""))[1]
    for ev in events:
        values: dict[str, tuple[str, str]] = {}
        for attr in ev:
            tag = _local(attr.tag)
            key = attr.get("key", "")
            if tag not in _SCALAR_TAGS:
                skipped[key or tag] = skipped.get(key or tag, 0) + 1
                continue
            text = attr.get("value", "")
            if key == "concept:name":
                cols.fixed["type"].append(text)
            elif key == "time:timestamp":
                try:
                    cols.fixed["ts"].append(parse_timestamp(text))
                except ValueError:
                    raise InputDataError(
                        f"event {cols.rows}: time:timestamp {text!r} is not an ISO-8601 date"
                    ) from None
            else:
                values[column_name(key)] = (tag, text)
        # Reserved columns are appended directly; pad the ones this event lacks.
        n = cols.rows
        if len(cols.fixed["type"]) == n:
            cols.fixed["type"].append(None)
        if len(cols.fixed["ts"]) == n:
            cols.fixed["ts"].append(None)
        cols.fixed["id"].append(n)
        cols.fixed["case_id"].append(case_id)
        values.update(case_values)
        cols.add_row(values)
