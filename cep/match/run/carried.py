"""What one key of a standing pattern carries from one step to the next, and its bytes.

Between steps (:func:`cep.match.run.standing.advance`) a key keeps the events its open starts
still need, where its resolved starts end (``frontier``: the ``(ts, id)`` of the last one) and
how many matches it has reported (its next ``match_id`` follows them). The job stores it as one
blob per key (:mod:`cep.blob`: versioned, checksummed JSON, never a pickle).

Example:
    >>> from cep.match.columnar.stream import EventStream
    >>> from cep.match.compile.standing import compile_standing
    >>> from cep.match.run.standing import advance
    >>> program = compile_standing("PATTERN A; B WITHIN 10 UNITS")
    >>> state = Carried.empty(())
    >>> new = EventStream.from_columns(ids=[1, 2, 3], ts=[0, 4, 7], types=list("ABA"))
    >>> stream, open_from = state.stream_with(new)
    >>> step = advance(program, stream, open_from=open_from, emitted=state.emitted, watermark=14)
    >>> state = state.after(stream, step)
    >>> state.frontier, state.emitted, state.ids.tolist()
    ((4, 2), 1, [1, 2, 3])
    >>> Carried.from_bytes(state.to_bytes()) == state
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cep.blob import pack, unpack
from cep.match.columnar.stream import EventStream
from cep.match.errors import StreamError
from cep.match.run.standing import StandingStep

MAGIC = b"CEPSTD"
FORMAT_VERSION = 1


class CarriedStateError(StreamError):
    """A key's carried state of a standing pattern cannot be read (damaged or foreign)."""


@dataclass(frozen=True, eq=False)
class Carried:
    """One key's state between steps (module docstring).

    Attributes:
        ids, ts, types: the carried events, sorted by ``(ts, id)``.
        attrs: the carried events' attributes the pattern reads, by name.
        frontier: ``(ts, id)`` of the last resolved start, or None before the first.
        emitted: the key's matches reported so far.
    """

    ids: np.ndarray
    ts: np.ndarray
    types: np.ndarray
    attrs: dict[str, np.ndarray]
    frontier: tuple[int, int] | None
    emitted: int

    @classmethod
    def empty(cls, attributes: tuple[str, ...]) -> Carried:
        """The state of a key not seen yet."""
        none = np.zeros(0, dtype=np.int64)
        return cls(none, none, np.zeros(0, dtype=object),
                   {a: np.zeros(0, dtype=object) for a in attributes}, None, 0)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Carried) and self.frontier == other.frontier
                and self.emitted == other.emitted and np.array_equal(self.ids, other.ids)
                and np.array_equal(self.ts, other.ts)
                and self.types.tolist() == other.types.tolist()
                and self.attrs.keys() == other.attrs.keys()
                and all(self.attrs[k].tolist() == other.attrs[k].tolist() for k in self.attrs))

    def stream_with(self, new: EventStream) -> tuple[EventStream, int]:
        """The carried events and ``new`` as one stream in ``(ts, id)`` order, and the first
        position whose start is open (after the frontier)."""
        ids = np.concatenate([self.ids, new.ids]).astype(np.int64)
        ts = np.concatenate([self.ts, new.ts]).astype(np.int64)
        order = np.lexsort((ids, ts))
        types = np.concatenate([self.types, new.types.astype(object)])[order]
        attrs = {name: _joined(values, np.asarray(new.attrs[name]))[order]
                 for name, values in self.attrs.items()}
        stream = EventStream(ids[order], ts[order], types, attrs, {})
        if self.frontier is None:
            return stream, 0
        f_ts, f_id = self.frontier
        after = (stream.ts > f_ts) | ((stream.ts == f_ts) & (stream.ids > f_id))
        return stream, int(np.argmax(after)) if after.any() else len(stream)

    def after(self, stream: EventStream, step: StandingStep) -> Carried:
        """The state once ``step`` (over ``stream``) is done."""
        frontier = self.frontier
        if step.resolved > 0:
            last = step.resolved - 1
            candidate = (int(stream.ts[last]), int(stream.ids[last]))
            frontier = candidate if frontier is None else max(frontier, candidate)
        keep = slice(step.keep_from, None)
        return Carried(stream.ids[keep].copy(), stream.ts[keep].copy(), stream.types[keep].copy(),
                       {name: np.asarray(values)[keep].copy()
                        for name, values in stream.attrs.items()},
                       frontier, self.emitted + len(step.matches))

    def to_bytes(self) -> bytes:
        """The versioned, checksummed serialisation."""
        return pack(MAGIC, FORMAT_VERSION, {
            "ids": self.ids.tolist(), "ts": self.ts.tolist(), "types": self.types.tolist(),
            "attrs": {name: values.tolist() for name, values in self.attrs.items()},
            "frontier": None if self.frontier is None else list(self.frontier),
            "emitted": self.emitted})

    @classmethod
    def from_bytes(cls, blob: bytes | bytearray | memoryview) -> Carried:
        """A key's state from its blob.

        Raises:
            CarriedStateError: a bad magic, version, checksum or shape.
        """
        data = unpack(MAGIC, FORMAT_VERSION, blob, "carried state", CarriedStateError,
                      "standing pattern's")
        try:
            ids = np.array(data["ids"], dtype=np.int64)
            ts = np.array(data["ts"], dtype=np.int64)
            types = np.array(data["types"], dtype=object)
            attrs = {str(k): _column(v) for k, v in data["attrs"].items()}
            if len({len(ids), len(ts), len(types), *map(len, attrs.values())}) > 1:
                raise ValueError("the event columns differ in length")
            frontier: Any = data["frontier"]
            if frontier is not None:
                frontier = (int(frontier[0]), int(frontier[1]))
            emitted = int(data["emitted"])
            if emitted < 0:
                raise ValueError("a negative count of matches")
        except (KeyError, TypeError, ValueError, IndexError, OverflowError) as err:
            raise CarriedStateError(f"carried state payload is malformed: {err}") from None
        return cls(ids, ts, types, attrs, frontier, emitted)


def _column(values: list[Any]) -> np.ndarray:
    """Stored attribute values as the engine reads them (as ``match_seq`` hands them over):
    numbers as numbers, strings (and anything mixed) as objects."""
    array = np.array(values) if values else np.zeros(0, dtype=object)
    return array.astype(object) if array.dtype.kind in "USO" else array


def _joined(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Carried and new values of one attribute in one array, keeping a numeric type when both
    are numeric (an empty side takes the other's type)."""
    parts = [part for part in (old, new) if len(part)]
    if not parts:
        return np.zeros(0, dtype=object)
    joined = np.concatenate(parts)
    return joined.astype(object) if joined.dtype.kind in "US" else joined
