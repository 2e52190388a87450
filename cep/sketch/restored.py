"""The checks of stored node columns before a sketch tree is restored from them: every
column present and of its type, levels and indexes consistent, the open leaf's summary
(:meth:`cep.sketch.tree.SketchTree.restore`; a damaged table is ``CEP-SKETCH-002``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from cep.sketch.bloom import BloomFilter
from cep.sketch.config import NEIGHBOURS, SketchConfig
from cep.sketch.errors import CorruptSketchError, TwinUnavailableError
from cep.sketch.hashing import Hasher
from cep.sketch.levels import Store, read_only, timestamps
from cep.sketch.names import factorize
from cep.sketch.node_ids import MAX_INDEX, node_ids
from cep.sketch.open_leaf import OpenLeaf


RESTORE_COLUMNS = ("level", "index", "pos_start", "pos_end", "ts_start", "ts_end", "n_events",
                    "is_top", "bits")
"""The node columns :meth:`SketchTree.restore` reads."""


def restored_columns(nodes: Mapping[str, Any], width_bytes: int) -> dict[str, np.ndarray]:
    """The stored node columns as arrays of the tree's dtypes, or CorruptSketchError."""
    missing = [name for name in RESTORE_COLUMNS if name not in nodes]
    if missing:
        raise CorruptSketchError(f"restore: missing node columns {missing}")
    cols: dict[str, np.ndarray] = {}
    for name in RESTORE_COLUMNS[:-2]:
        values = np.asarray(nodes[name])
        if values.ndim != 1 or (len(values) and values.dtype.kind not in "iu"):
            raise CorruptSketchError(f"restore: column {name} must be 1-d integers, found "
                                     f"{values.dtype} of shape {values.shape}")
        cols[name] = values.astype(np.int64, copy=False)
    cols["is_top"] = np.asarray(nodes["is_top"], dtype=np.bool_).reshape(-1)
    bits = nodes["bits"]
    if isinstance(bits, np.ndarray) and bits.ndim == 2:
        array = np.ascontiguousarray(bits, dtype=np.uint8)
    else:
        blobs = list(bits)
        if any(not isinstance(b, (bytes, bytearray, memoryview)) or len(b) != width_bytes
               for b in blobs):
            raise CorruptSketchError(f"restore: every filter must be {width_bytes} bytes (m / 8)")
        array = (np.frombuffer(b"".join(bytes(b) for b in blobs), dtype=np.uint8)
                 .reshape(len(blobs), width_bytes).copy())
    n = len(cols["level"])
    if array.shape != (n, width_bytes):
        raise CorruptSketchError(f"restore: bits must have shape ({n}, {width_bytes}), found "
                                 f"{array.shape}")
    cols["bits"] = array
    lengths = {name: len(values) for name, values in cols.items()}
    if len(set(lengths.values())) > 1:
        raise CorruptSketchError(f"restore: node columns differ in length: {lengths}")
    return cols


def check_restored(cols: dict[str, np.ndarray], c: int, f: int, open_index: int,
                    merge: str) -> None:
    """Checks that rows in post-order are nodes of one tree whose tops cover the full leaves."""
    level, index = cols["level"], cols["index"]
    if isinstance(open_index, bool) or not isinstance(open_index, (int, np.integer)) \
            or not 0 <= int(open_index) <= MAX_INDEX:
        raise CorruptSketchError(f"restore: open_index must be in [0, {MAX_INDEX}], found "
                                 f"{open_index!r}")
    n = len(level)
    if not n:
        if open_index:
            raise CorruptSketchError(f"restore: no node rows, but the open leaf is leaf "
                                     f"{int(open_index)} (full leaves must be covered)")
        return
    if level.min() < 0 or level.max() > 62 or index.min() < 0 or index.max() > MAX_INDEX:
        raise CorruptSketchError("restore: a node has a level outside [0, 62] or an index "
                                 f"outside [0, {MAX_INDEX}]")
    widths = [c * f ** lv for lv in range(int(level.max()) + 1)]
    # int64 arithmetic when no product can overflow, exact Python ints otherwise.
    kind = np.int64 if max(widths) * (int(index.max()) + 2) < (1 << 62) else object
    width = np.array(widths, dtype=kind)[level]
    # Under the neighbours rule a node's index is its first leaf (config.merge).
    start = index.astype(kind) * (c if merge == NEIGHBOURS else width)
    bad = np.flatnonzero((cols["pos_start"].astype(kind) != start)
                         | (cols["pos_end"].astype(kind) != start + width - 1)
                         | (cols["n_events"].astype(kind) != width)
                         | (cols["ts_start"] > cols["ts_end"]))
    if len(bad):
        i = int(bad[0])
        raise CorruptSketchError(
            f"restore: node (level {int(level[i])}, index {int(index[i])}) has positions "
            f"{int(cols['pos_start'][i])}..{int(cols['pos_end'][i])}, {int(cols['n_events'][i])} "
            f"events and ts {int(cols['ts_start'][i])}..{int(cols['ts_end'][i])}; its level and "
            f"index say {start[i]}..{start[i] + width[i] - 1} and {width[i]} events")
    same = np.flatnonzero((cols["pos_end"][1:] == cols["pos_end"][:-1])
                          & (level[1:] == level[:-1]))
    if len(same):
        i = int(same[0])
        raise CorruptSketchError(f"restore: node (level {int(level[i])}, index {int(index[i])}) "
                                 "appears twice")
    tops = np.flatnonzero(cols["is_top"])
    ends = cols["pos_end"][tops]
    starts = cols["pos_start"][tops]
    expected_end = int(open_index) * c - 1
    if (not len(tops) or starts[0] != 0 or ends[-1] != expected_end
            or np.any(starts[1:] != ends[:-1] + 1)):
        raise CorruptSketchError(
            "restore: the top-level nodes must cover positions 0.."
            f"{expected_end} (the full leaves before open leaf {int(open_index)}) in order "
            "without gaps or overlap")


def summary_leaf(config: SketchConfig, open_index: int,
                  summary: tuple[int, int | None, int | None, Any],
                  hasher: Hasher | None) -> OpenLeaf:
    """The twin-less open leaf of an ``is_open`` row: count, first and last ts, packed bits."""
    try:
        n_events, ts_start, ts_end, bits = summary
    except (TypeError, ValueError):
        raise CorruptSketchError("restore: open_summary must be (n_events, ts_start, ts_end, "
                                 "bits)") from None
    if isinstance(n_events, bool) or not isinstance(n_events, (int, np.integer)) \
            or not 0 <= int(n_events) < config.C:
        raise CorruptSketchError(f"restore: the open leaf holds {n_events!r} events; expected "
                                 f"0 .. C-1 = {config.C - 1}")
    packed = np.frombuffer(bytes(bits), dtype=np.uint8) if not isinstance(bits, np.ndarray) \
        else np.asarray(bits, dtype=np.uint8)
    if packed.shape != (config.m // 8,):
        raise CorruptSketchError(f"restore: the open leaf's filter must be {config.m // 8} "
                                 f"bytes, found {packed.size}")
    if int(n_events) and (ts_start is None or ts_end is None or int(ts_start) > int(ts_end)):
        raise CorruptSketchError(f"restore: the open leaf's ts interval {ts_start}..{ts_end} "
                                 "is missing or reversed")
    filt = BloomFilter.from_packed(packed.copy(), config.m, config.seeds or (), hasher)
    bounds = (int(ts_start), int(ts_end)) if int(n_events) else (None, None)
    return OpenLeaf(int(open_index), int(open_index) * config.C, None,
                    read_only(np.zeros(0, dtype=np.int64)), filt,
                    summary=(int(n_events), *bounds))


def restored_open_leaf(config: SketchConfig, open_index: int,
                        open_names: Sequence[str] | np.ndarray | None,
                        open_ts: Sequence[int] | np.ndarray | None,
                        open_summary: tuple[int, int | None, int | None, Any] | None,
                        hasher: Hasher | None
                        ) -> tuple[OpenLeaf | None, np.ndarray, tuple[str, ...], np.ndarray]:
    """The open leaf of a restored tree, from its events or from its stored summary.

    Args:
        config, open_index, open_names, open_ts, open_summary, hasher: As for
            :meth:`cep.sketch.tree.SketchTree.restore`.

    Returns:
        ``(summary, codes, vocabulary, ts)``: the summary leaf (None when the events were
        given) and the events' name codes, distinct names and timestamps (empty with a summary).

    Raises:
        TwinUnavailableError: both forms, or half of the events' form, were given.
        CorruptSketchError: the events fill a leaf (it would not be open).
    """
    if open_summary is not None:
        if open_names is not None or open_ts is not None:
            raise TwinUnavailableError("restore: give the open leaf's events (open_names, "
                                       "open_ts) or its summary (open_summary), not both")
        summary = summary_leaf(config, open_index, open_summary, hasher)
        return summary, np.zeros(0, dtype=np.int32), (), np.zeros(0, dtype=np.int64)
    if (open_names is None) != (open_ts is None):
        raise TwinUnavailableError("restore: open_names and open_ts go together")
    codes, vocabulary = factorize(open_names if open_names is not None else [])
    ts = timestamps(open_ts if open_ts is not None else [], len(codes))
    if len(codes) >= config.C:
        raise CorruptSketchError(f"restore: the open leaf holds {len(codes)} events, "
                                 f"a leaf is full at C={config.C}")
    return None, codes, vocabulary, ts


def restored_last_ts(ts_end: np.ndarray, summary: OpenLeaf | None, ts: np.ndarray,
                      last_ts: int | None) -> int | None:
    """The stream's last timestamp, checked against what is stored.

    Args:
        ts_end: The node rows' ``ts_end``, in post-order (the last row ends last).
        summary: The open leaf's summary (None: its events are ``ts``).
        ts: The open leaf's event timestamps.
        last_ts: As for :meth:`cep.sketch.tree.SketchTree.restore` (None: the latest stored).

    Raises:
        CorruptSketchError: the open leaf starts before the last node ends, or ``last_ts`` is
            before a stored event.
    """
    n = len(ts_end)
    first_open_ts = summary.ts_start if summary is not None else (
        int(ts[0]) if len(ts) else None)
    if n and first_open_ts is not None and first_open_ts < int(ts_end[-1]):
        raise CorruptSketchError(
            f"restore: the open leaf starts at ts {first_open_ts}, before the last node "
            f"ends (ts {int(ts_end[-1])})")
    known = [t for t in (summary.ts_end if summary is not None else None,
                         int(ts[-1]) if len(ts) else None,
                         int(ts_end[-1]) if n else None) if t is not None]
    if last_ts is None:
        last_ts = max(known) if known else None
    elif known and int(last_ts) < max(known):
        raise CorruptSketchError(f"restore: last_ts {int(last_ts)} is before the stream's "
                                 f"last stored event (ts {max(known)})")
    return None if last_ts is None else int(last_ts)


def restored_store(cols: Mapping[str, np.ndarray]) -> Store | None:
    """The node store of checked rows in post-order (None without rows): the stored columns,
    the level as int8, and the node ids made from level and index."""
    n = len(cols["level"])
    if not n:
        return None
    columns = {name: cols[name] for name in ("index", "pos_start", "pos_end", "ts_start",
                                            "ts_end", "n_events", "bits")}
    columns["level"] = cols["level"].astype(np.int8)
    columns["node_id"] = node_ids(cols["level"], cols["index"])
    return Store(columns, n)
