"""The open leaf of a sketch tree: the last ``< C`` events of a stream, not yet a node,
queried like a leaf (:class:`OpenLeaf`).
"""

from __future__ import annotations


from dataclasses import dataclass


import numpy as np

from cep.sketch.bloom import BloomFilter

from cep.sketch.errors import TwinUnavailableError


@dataclass(frozen=True, eq=False)
class OpenLeaf:
    """The last ``< C`` events of a stream, not yet a full leaf; queried like a leaf.

    Attributes:
        index: The leaf number it will have when full (``n_full_leaves``); its unit id is
            ``node_id = (0 << 48) | index``.
        pos_start: Position of its first event (``index * C``).
        names: Name of each event, in order; ``None`` for a twin-less summary (a leaf restored
            from the ``is_open`` row of the nodes table, which keeps its filter, not its events).
        ts: Timestamp of each event (read-only int64 array; empty for a summary).
        filter: Its Bloom filter.
        summary: ``(n_events, ts_start, ts_end)`` of a summary leaf (``names is None``);
            ``None`` otherwise.
    """

    index: int
    pos_start: int
    names: tuple[str, ...] | None
    ts: np.ndarray
    filter: BloomFilter
    summary: tuple[int, int | None, int | None] | None = None

    @property
    def node_id(self) -> int:
        """``(0 << 48) | index``: the id of the leaf it becomes when full."""
        return self.index

    @property
    def has_twin(self) -> bool:
        """True when the leaf knows its events' names (not a summary)."""
        return self.names is not None

    @property
    def n_events(self) -> int:
        """Events in the open leaf (0 .. C-1)."""
        if self.names is None:
            return int(self.summary[0]) if self.summary else 0
        return len(self.names)

    @property
    def pos_end(self) -> int:
        """Position of its last event (``pos_start - 1`` when empty)."""
        return self.pos_start + self.n_events - 1

    @property
    def ts_start(self) -> int | None:
        """Timestamp of its first event (``None`` when empty)."""
        if self.names is None:
            return self.summary[1] if self.summary else None
        return int(self.ts[0]) if len(self.ts) else None

    @property
    def ts_end(self) -> int | None:
        """Timestamp of its last event (``None`` when empty)."""
        if self.names is None:
            return self.summary[2] if self.summary else None
        return int(self.ts[-1]) if len(self.ts) else None

    @property
    def bits(self) -> np.ndarray:
        """The packed filter (``m // 8`` uint8)."""
        return self.filter.packed()

    def member(self, name: str) -> bool:
        """Bloom membership: ``name`` is possibly present."""
        return self.filter.contains(name)

    def twin_member(self, name: str) -> bool:
        """Exact membership.

        Raises:
            TwinUnavailableError: the leaf is a summary (its names are not known).
        """
        if self.names is None:
            raise TwinUnavailableError(
                f"the open leaf {self.index} was restored from its stored filter and has no "
                "exact set; use member() (Bloom membership)")
        return name in self.names

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, OpenLeaf) and self.index == other.index
                and self.pos_start == other.pos_start
                and self.names == other.names and np.array_equal(self.ts, other.ts)
                and self.filter == other.filter and self.summary == other.summary)

    __hash__ = None  # type: ignore[assignment]
