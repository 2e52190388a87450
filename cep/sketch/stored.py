"""Query trees from the stored rows of a ``<name>_nodes`` table, for many streams at once.

The nodes table holds one row per node plus one ``is_open`` row per stream (docs/sketch.md
section 5). Turning rows back into trees is on the path of every ``approx_match_seq`` call, so
this module does it over whole columns (numpy arrays, as an Arrow batch hands them over):

* :func:`decode_bits_matrix` checks and unpacks every CSK1 blob of a column in one pass (header
  fields compared as arrays, the payload a reshaped view; only the CRC-32s are calls per blob,
  ``zlib.crc32`` in C, ~0.4 us for a 280-byte blob), and with :func:`binding_fields` checks that
  every bound blob sits in the row it was written for;
* :func:`stream_bounds` finds each stream's rows in a column sorted by stream;
* :func:`config_of_rows` reads a stream's :class:`SketchConfig` from its rows (the one rule the
  SQL functions and the Delta layer share);
* :func:`stored_tree` restores one stream's twin-less query tree from its slice of the columns,
  and :func:`check_complete` makes sure no node row under its tops is missing.

Every damaged or inconsistent row is a :class:`CorruptSketchError` naming the stream and the
node, never a silently wrong answer.

Example:
    >>> from cep.sketch import SketchConfig, SketchTree, encode_bits
    >>> tree = SketchTree.build(list("ABACBDE"), range(7), SketchConfig(m=64, k=2, C=2))
    >>> blobs = [encode_bits(tree.bits[r], 64) for r in range(len(tree))]
    >>> data = np.frombuffer(b"".join(blobs), dtype=np.uint8)
    >>> offsets = np.cumsum([0] + [len(b) for b in blobs])
    >>> bits = decode_bits_matrix(data, offsets, 64, stream="s", node_ids=tree.node_id)
    >>> bool((bits == tree.bits).all())
    True
"""

from __future__ import annotations

import zlib
from functools import lru_cache
from typing import Any, Mapping, Sequence

import numpy as np

from cep.sketch.codec import (BINDING_FIELDS, BOUND_OVERHEAD, BOUND_VERSION, FIELDS_SIZE,
                              FORMAT_VERSION, MAGIC, NULL_TS, OVERHEAD, decode_bits)
from cep.sketch.config import ALIGNED, NEIGHBOURS, SketchConfig
from cep.sketch.errors import CorruptSketchError, SketchConfigError
from cep.sketch.tree import SketchTree, split_node_ids

STORED_COLUMNS = ("node_id", "level", "idx", "pos_start", "pos_end", "ts_start", "ts_end",
                  "n_events", "is_top", "is_open")
"""The per-row columns :func:`stored_tree` reads (besides the decoded ``bits``)."""

_MAGIC = np.frombuffer(MAGIC, dtype=np.uint8)


def _node_name(stream: Any, node_id: int) -> str:
    level, index = split_node_ids(int(node_id))
    return f"stream {stream!r}, node_id {int(node_id)} (level {int(level)}, index {int(index)})"


def _le(block: np.ndarray) -> np.ndarray:
    """Little-endian unsigned integers from the byte columns of ``block`` (n, width)."""
    out = np.zeros(len(block), dtype=np.int64)
    for i in range(block.shape[1] - 1, -1, -1):
        out = (out << 8) | block[:, i].astype(np.int64)
    return out


def binding_fields(cols: Mapping[str, Any], ts_valid: np.ndarray | None = None) -> np.ndarray:
    """The integer part of every row's :func:`cep.sketch.codec.binding`, all rows at once.

    Args:
        cols: ``node_id``, ``pos_start``, ``pos_end``, ``ts_start``, ``ts_end`` (int64
            microseconds), ``n_events`` and ``is_open`` columns.
        ts_valid: Rows whose timestamps are not NULL (``None``: all).

    Returns:
        int64 little-endian ``(n, 7)``, C-contiguous: row ``r``'s bytes are the binding's first
        56 bytes.

    Example:
        >>> from cep.sketch.codec import binding
        >>> cols = {"node_id": [3], "pos_start": [6], "pos_end": [7], "ts_start": [60],
        ...         "ts_end": [70], "n_events": [2], "is_open": [False]}
        >>> binding_fields(cols).tobytes() + b"s0" == binding(
        ...     "s0", node_id=3, pos_start=6, pos_end=7, ts_start=60, ts_end=70, n_events=2,
        ...     is_open=False)
        True
    """
    out = np.empty((len(cols["node_id"]), len(BINDING_FIELDS)), dtype="<i8")
    for i, name in enumerate(BINDING_FIELDS):
        out[:, i] = np.asarray(cols[name]).astype(np.int64, copy=False)
    if ts_valid is not None:
        out[~np.asarray(ts_valid, dtype=bool), 3:5] = NULL_TS
    return out


def decode_bits_matrix(data: np.ndarray, offsets: np.ndarray, m: int, *, stream: Any = None,
                       node_ids: np.ndarray | None = None, valid: np.ndarray | None = None,
                       fields: np.ndarray | None = None,
                       streams: bytes | Sequence[bytes] | None = None,
                       stream_rows: np.ndarray | None = None) -> np.ndarray:
    """The packed filters of a column of CSK1 blobs, every blob checked as :func:`decode_bits`.

    Args:
        data: The column's bytes, concatenated (uint8, an Arrow BinaryArray's data buffer).
        offsets: ``n + 1`` offsets into ``data`` (the Arrow offsets buffer, already adjusted for
            the array's offset).
        m: The sketch's bits per filter.
        stream, node_ids: For messages: the stream key and each row's node id.
        valid: Optional bool mask of rows whose blob is not NULL.
        fields: The rows' :func:`binding_fields`; with ``streams``, every bound (version-2)
            blob's row tag is checked against its row. ``None``: bytes only.
        streams: The rows' :func:`cep.sketch.codec.stream_bytes`: one for all rows, one per
            row, or one per stream with ``stream_rows``.
        stream_rows: Each row's index into ``streams`` (``None``: one entry per row).

    Returns:
        uint8 ``(n, m // 8)``.

    Raises:
        CorruptSketchError: the first damaged blob (NULL, truncated, bad magic, version,
            length, ``m``, checksum or row tag), naming the stream and node id; the message
            after the node is exactly :func:`decode_bits`'s.

    Example:
        >>> from cep.sketch import encode_bits
        >>> good = encode_bits(bytes(8), 64)
        >>> bad = good[:-1] + bytes([good[-1] ^ 1])
        >>> data = np.frombuffer(good + bad, dtype=np.uint8)
        >>> decode_bits_matrix(data, np.array([0, 26, 52]), 64, stream="s",
        ...                    node_ids=np.array([0, 1]))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        cep.sketch.errors.CorruptSketchError: CEP-SKETCH-002: stream 's', node_id 1 (level 0, index 1): checksum mismatch: ...
    """
    data = np.asarray(data, dtype=np.uint8)
    offsets = np.asarray(offsets, dtype=np.int64)
    n = len(offsets) - 1
    width = m // 8
    ids = np.zeros(n, dtype=np.int64) if node_ids is None else np.asarray(node_ids, np.int64)
    rows = (None if fields is None else
            memoryview(np.ascontiguousarray(fields, "<i8").reshape(-1).view(np.uint8)))

    def fail(row: int) -> CorruptSketchError:
        return _blob_error(row, data, offsets, m, stream=stream, node_id=int(ids[row]),
                           valid=valid, fields=rows, streams=streams, stream_rows=stream_rows)

    if valid is not None and not bool(np.all(valid)):
        raise fail(int(np.flatnonzero(~np.asarray(valid))[0]))
    lengths = np.diff(offsets)
    bound = lengths == width + BOUND_OVERHEAD
    wrong = np.flatnonzero(~bound & (lengths != width + OVERHEAD))
    if len(wrong):
        raise fail(int(wrong[0]))
    if not n:
        return np.zeros((0, width), dtype=np.uint8)
    starts = offsets[:-1]
    bad = _first_bad_header(data, starts, bound, m)
    if bad is None:
        bad = _first_bad_checksum(data, starts, bound, width, rows, streams, stream_rows)
    if bad is not None:
        raise fail(bad)
    if bool(bound.all()) or not bool(bound.any()):  # one size: the payloads are a strided view
        size = int(lengths[0])
        first = int(starts[0])
        return np.ascontiguousarray(data[first:first + n * size].reshape(n, size)[:, 14:14 + width])
    return data[starts[:, None] + 14 + np.arange(width)]


def _blob_error(row: int, data: np.ndarray, offsets: np.ndarray, m: int, *, stream: Any,
                node_id: int, valid: np.ndarray | None, fields: memoryview | None,
                streams: bytes | Sequence[bytes] | None, stream_rows: np.ndarray | None
                ) -> CorruptSketchError:
    """The error of row ``row``'s damaged blob, naming the stream and the node.

    The message after the node is :func:`decode_bits`'s on the blob alone: the column checks
    of :func:`decode_bits_matrix` only find the row, this says what is wrong with it.

    Args:
        row: The damaged row.
        data, offsets, m: As for :func:`decode_bits_matrix`.
        stream, node_id: For the message.
        valid: Rows whose blob is not NULL (None: all).
        fields: The rows' :func:`binding_fields` as bytes (None: the blob is checked alone).
        streams, stream_rows: As for :func:`decode_bits_matrix`.
    """
    if valid is not None and not valid[row]:
        message = "the bits are NULL"
    else:
        binding = None
        if fields is not None:
            key = streams if isinstance(streams, bytes) else streams[  # type: ignore[index]
                row if stream_rows is None else int(stream_rows[row])]
            binding = bytes(fields[row * FIELDS_SIZE:(row + 1) * FIELDS_SIZE]) + key
        try:
            decode_bits(data[offsets[row]:offsets[row + 1]].tobytes(), m, binding=binding)
            message = "the blob does not decode"  # unreachable: the column checks agree
        except CorruptSketchError as exc:
            message = exc.message
    return CorruptSketchError(f"{_node_name(stream, node_id)}: {message}")


def _first_bad_header(data: np.ndarray, starts: np.ndarray, bound: np.ndarray, m: int
                      ) -> int | None:
    """The first row whose 14-byte header is wrong (magic, version, ``m``, payload length).

    Args:
        data: The column's bytes.
        starts: Where each row's blob starts in ``data``.
        bound: Rows whose blob has the bound (version-2) length.
        m: The sketch's bits per filter.

    Returns:
        The row, or None when every header is right; all are compared as arrays at once.
    """
    header = data[starts[:, None] + np.arange(14)]
    header_ok = ((header[:, :4] == _MAGIC).all(axis=1)
                 & (_le(header[:, 4:6]) == np.where(bound, BOUND_VERSION, FORMAT_VERSION))
                 & (_le(header[:, 6:10]) == m) & (_le(header[:, 10:14]) == m // 8))
    bad = np.flatnonzero(~header_ok)
    return int(bad[0]) if len(bad) else None


def _first_bad_checksum(data: np.ndarray, starts: np.ndarray, bound: np.ndarray, width: int,
                        fields: memoryview | None, streams: bytes | Sequence[bytes] | None,
                        stream_rows: np.ndarray | None) -> int | None:
    """The first row whose CRC-32, or (a bound blob with ``fields``) row tag, is wrong.

    Args:
        data: The column's bytes.
        starts: Where each row's blob starts in ``data``.
        bound: Rows whose blob has the bound (version-2) length.
        width: The payload's bytes (``m // 8``).
        fields: The rows' :func:`binding_fields` as bytes (None: row tags are not checked).
        streams, stream_rows: As for :func:`decode_bits_matrix`.

    Returns:
        The row, or None when every blob is intact.
    """
    n = len(starts)
    step = FIELDS_SIZE
    ends = starts + 14 + width
    stored = _le(data[ends[:, None] + np.arange(4)])
    # One C call per blob, two for a bound one: CRC-32 has no vectorised numpy form; 0.4 us
    # per 280-byte blob. The stream's part of a row tag is one value per stream (row_tag).
    body, crc32 = memoryview(data), zlib.crc32
    check = fields is not None and bool(bound.any())
    fields_crc: list[int] = []
    keep = fields_crc.append
    for row, (start, end, expected, at) in enumerate(zip(
            starts.tolist(), ends.tolist(), stored.tolist(), range(0, n * step, step))):
        crc = crc32(body[start:end])
        if crc != expected:
            return row
        if check:  # an unbound row's value is never compared
            keep(crc32(fields[at:at + step], crc))  # type: ignore[index]
    if check:
        tags = _le(data[(ends + np.where(bound, 4, 0))[:, None] + np.arange(4)])  # unbound: unused
        keys = _stream_crcs(streams, stream_rows)
        wrong = np.flatnonzero(bound & ((np.array(fields_crc, dtype=np.int64) ^ keys) != tags))
        if len(wrong):
            return int(wrong[0])
    return None


def _stream_crcs(streams: bytes | Sequence[bytes] | None, stream_rows: np.ndarray | None
                 ) -> np.ndarray | int:
    """CRC-32 of each row's stream key bytes, one call per distinct key (one value when all
    rows share one key)."""
    if isinstance(streams, bytes):
        return zlib.crc32(streams)
    crcs = np.array([zlib.crc32(k) for k in streams], dtype=np.int64)  # type: ignore[union-attr]
    return crcs if stream_rows is None else crcs[stream_rows]


def stream_bounds(keys: np.ndarray) -> np.ndarray:
    """Row boundaries of the runs of equal keys in a column sorted by key (``len + 1`` ends).

    Example:
        >>> stream_bounds(np.array(["a", "a", "b", "c", "c"], dtype=object)).tolist()
        [0, 2, 3, 5]
    """
    n = len(keys)
    if not n:
        return np.zeros(1, dtype=np.int64)
    changed = np.flatnonzero(keys[1:] != keys[:-1]) + 1
    return np.concatenate(([0], changed, [n])).astype(np.int64)


def config_of_rows(stream: Any, *, m: np.ndarray, k: np.ndarray, seeds: np.ndarray,
                   config_version: np.ndarray, level: np.ndarray, n_events: np.ndarray,
                   is_open: np.ndarray, idx: np.ndarray | None = None,
                   pos_start: np.ndarray | None = None) -> SketchConfig:
    """The :class:`SketchConfig` one stream's rows were built with.

    ``m``, ``k``, ``seeds`` (2-d, one row per node) and ``config_version`` must agree on every
    row; ``C`` is the ``n_events`` of a full leaf (without one: one more than the open leaf's,
    any larger ``C`` gives the same units) and ``fanout`` the ratio of a level-1 node's
    ``n_events`` to ``C`` (2 without a level-1 node, where it is never used). ``merge`` is read
    from ``idx`` and ``pos_start`` when given (:func:`merge_of_rows`).

    Raises:
        CorruptSketchError: rows of different configurations, or settings no sketch can have.

    Example:
        >>> config_of_rows("s", m=np.array([64, 64]), k=np.array([2, 2]),
        ...                seeds=np.array([[0, 1], [0, 1]]), config_version=np.array([1, 1]),
        ...                level=np.array([0, 1]), n_events=np.array([4, 8]),
        ...                is_open=np.array([False, False])).C
        4
    """
    seeds = np.asarray(seeds, dtype=np.int64).reshape(len(m), -1)
    if len(m) and not (np.all(m == m[0]) and np.all(k == k[0]) and np.all(seeds == seeds[0])
                       and np.all(config_version == config_version[0])):
        found = sorted({(int(a), int(b), tuple(s.tolist()), int(v))
                        for a, b, s, v in zip(m, k, seeds, config_version)})
        raise CorruptSketchError(
            f"stream {stream!r}: rows of different sketch configurations ("
            + "; ".join(f"m={a} k={b} seeds={list(s)} config_version={v}" for a, b, s, v in found)
            + "); read one version of the table")
    if not len(m):
        raise CorruptSketchError(f"stream {stream!r}: no rows")
    full = ~np.asarray(is_open, dtype=np.bool_)
    leaves = n_events[full & (level == 0)]
    opened = n_events[~full]
    c = int(leaves[0]) if len(leaves) else int(opened.max(initial=0)) + 1
    ones = n_events[full & (level == 1)]
    fanout = int(ones[0]) // c if len(ones) and c else 2
    merge = (ALIGNED if idx is None or pos_start is None else
             merge_of_rows(level[full], np.asarray(idx)[full], np.asarray(pos_start)[full], c,
                           fanout))
    try:
        return cached_config(int(m[0]), int(k[0]), tuple(int(s) for s in seeds[0]), c, fanout,
                             int(config_version[0]), merge)
    except SketchConfigError as exc:
        raise CorruptSketchError(f"stream {stream!r}: the rows give no valid sketch "
                                 f"configuration: {exc.message}") from None


def merge_of_rows(level: np.ndarray, idx: np.ndarray, pos_start: np.ndarray, c: int,
                  fanout: int) -> str:
    """The merge rule full node rows were built with: ``"neighbours"`` when an inner node does
    not start where an aligned node of its ``(level, idx)`` would (``idx * C * f**level``).

    The two rules give the same ids, intervals and children to every node whose index is 0
    at levels 0 and 1, and a neighbours tree with anything more has an inner node with another
    index, so reading the rule from the rows is exact.

    Example:
        >>> merge_of_rows(np.array([0, 0, 0, 1]), np.array([0, 1, 2, 1]), np.array([0, 4, 8, 4]), 4, 2)
        'neighbours'
        >>> merge_of_rows(np.array([0, 0, 1]), np.array([0, 1, 0]), np.array([0, 4, 0]), 4, 2)
        'aligned'
    """
    level = np.asarray(level, dtype=np.int64)
    inner = level >= 1
    if fanout != 2 or not inner.any():
        return ALIGNED
    # Compared as first leaves, which cannot overflow: idx * f**level would for high levels.
    first = np.asarray(pos_start, dtype=np.int64)[inner] // c
    idx = np.asarray(idx, dtype=np.int64)[inner]
    shift = np.minimum(level[inner], 62)
    aligned = ((idx >> (62 - shift)) == 0) & (first == (idx << shift))
    return ALIGNED if bool(aligned.all()) else NEIGHBOURS


@lru_cache(maxsize=256)
def cached_config(m: int, k: int, seeds: tuple[int, ...], c: int, fanout: int, version: int,
                  merge: str = ALIGNED) -> SketchConfig:
    """The :class:`SketchConfig` of these settings, made (and checked) once per worker.

    Example:
        >>> cached_config(64, 2, (0, 1), 4, 2, 1) is cached_config(64, 2, (0, 1), 4, 2, 1)
        True
    """
    return SketchConfig(m=m, k=k, C=c, fanout=fanout, seeds=seeds, config_version=version,
                        merge=merge)


def stored_tree(stream: Any, config: SketchConfig, cols: Mapping[str, np.ndarray],
                bits: np.ndarray, ts_valid: np.ndarray | None = None) -> SketchTree:
    """The twin-less query tree of one stream from its rows' columns.

    Args:
        stream: The stream key (for messages).
        config: Its settings (:func:`config_of_rows`).
        cols: The :data:`STORED_COLUMNS` of the stream's rows (integers; timestamps as int64
            microseconds), in any row order, with at most one ``is_open`` row.
        bits: The rows' decoded filters (:func:`decode_bits_matrix`), same order.
        ts_valid: Optional mask of rows whose timestamps are not NULL (only an empty open leaf
            may have NULL timestamps).

    Raises:
        CorruptSketchError: several open rows, ``node_id`` not matching ``level``/``idx``, NULL
            timestamps on a node, rows that are not one tree, or a missing node row
            (:func:`check_complete`); the message names the stream.

    Example:
        >>> from cep.sketch import SketchConfig, SketchTree
        >>> cfg = SketchConfig(m=64, k=2, C=2)
        >>> tree = SketchTree.build(list("ABACBDE"), range(7), cfg)
        >>> cols = {"node_id": tree.node_id, "level": tree.level, "idx": tree.index,
        ...         "pos_start": tree.pos_start, "pos_end": tree.pos_end,
        ...         "ts_start": tree.ts_start, "ts_end": tree.ts_end, "n_events": tree.n_events,
        ...         "is_top": tree.is_top, "is_open": np.zeros(len(tree), dtype=bool)}
        >>> back = stored_tree("s", cfg, cols, tree.bits)
        >>> back.node_id.tolist() == tree.node_id.tolist(), back.has_twin
        (True, False)
    """
    is_open = np.asarray(cols["is_open"], dtype=np.bool_)
    opened = np.flatnonzero(is_open)
    if len(opened) > 1:
        raise CorruptSketchError(f"stream {stream!r} has {len(opened)} open-leaf rows, at most "
                                 "one is allowed; read one version of the table")
    full = np.flatnonzero(~is_open)
    ids = np.asarray(cols["node_id"], dtype=np.int64)
    level = np.asarray(cols["level"], dtype=np.int64)
    index = np.asarray(cols["idx"], dtype=np.int64)
    bad = np.flatnonzero(ids != ((level << 48) | index))
    if len(bad):
        i = int(bad[0])
        raise CorruptSketchError(f"stream {stream!r}: node_id {int(ids[i])} is not (level << 48) "
                                 f"| idx for level {int(level[i])}, idx {int(index[i])}")
    if ts_valid is not None and not bool(np.all(ts_valid[full])):
        i = int(full[np.flatnonzero(~ts_valid[full])[0]])
        raise CorruptSketchError(f"{_node_name(stream, ids[i])}: NULL ts_start or ts_end")
    nodes = {"level": level[full], "index": index[full], "bits": bits[full],
             "is_top": np.asarray(cols["is_top"], dtype=np.bool_)[full]}
    for name in ("pos_start", "pos_end", "ts_start", "ts_end", "n_events"):
        nodes[name] = np.asarray(cols[name], dtype=np.int64)[full]
    if len(opened):
        o = int(opened[0])
        known = ts_valid is None or bool(ts_valid[o])
        summary = (int(cols["n_events"][o]), int(cols["ts_start"][o]) if known else None,
                   int(cols["ts_end"][o]) if known else None, bits[o])
        open_index = int(index[o])
    else:
        open_index = (int(nodes["pos_end"].max()) + 1) // config.C if len(full) else 0
        summary = (0, None, None, np.zeros(config.m // 8, dtype=np.uint8))
    try:
        tree = SketchTree.restore(config, nodes, open_index=open_index, open_summary=summary)
    except CorruptSketchError as exc:
        raise CorruptSketchError(f"stream {stream!r}: {exc.message}") from None
    check_complete(stream, tree)
    return tree


def check_complete(stream: Any, tree: SketchTree) -> None:
    """Raise when a node below the top-level nodes of ``tree`` is missing.

    :meth:`SketchTree.restore` accepts any set of whole nodes whose tops cover the full leaves
    (the job restores only the tops to append). A query tree must hold every node under them:
    a deleted row would otherwise shrink ``sketch_stats``'s counts without a word, and make a
    query fail deep in its cut. Rows are in post-order (sorted by ``pos_end``, then level), so
    the rows under the top ``(L, I)`` are a contiguous run that must hold ``1 + f + ... + f^L``
    nodes, none above level ``L`` (``restore`` already refused duplicates and misplaced nodes).

    Raises:
        CorruptSketchError: naming the stream, the first missing node and its top.

    Example:
        >>> from cep.sketch import SketchConfig
        >>> full = SketchTree.build(list("ABCDE"), range(5), SketchConfig(m=64, k=2, C=2))
        >>> check_complete("s", full)
        >>> front = full.frontier()
        >>> check_complete("s", front)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        cep.sketch.errors.CorruptSketchError: CEP-SKETCH-002: stream 's': node (level 0, index 0) is missing ...
    """
    tops = np.asarray(tree.top_rows(), dtype=np.int64)
    if not len(tops):
        return
    level = np.asarray(tree.level, dtype=np.int64)
    index = np.asarray(tree.index, dtype=np.int64)
    pos_end = np.asarray(tree.pos_end, dtype=np.int64)
    fanout = int(tree.fanout)
    lo = np.searchsorted(pos_end, np.asarray(tree.pos_start, dtype=np.int64)[tops], side="left")
    hi = tops + 1  # a top is the last row of its subtree in post-order
    top_level = level[tops]
    # One comparison over all tops (the common case: nothing missing), the message's search
    # only when one fails.
    highest = np.maximum.reduceat(level, lo)  # the highest level from each top's first row on
    bad = np.flatnonzero((hi - lo != subtree_sizes(fanout)[top_level]) | (highest > top_level))
    if len(bad):
        t = int(bad[0])
        a, b, top_index = int(lo[t]), int(hi[t]), int(index[tops[t]])
        lost = _missing(level[a:b], index[a:b], int(top_level[t]), top_index, tree.config)
        expected = sum(fanout ** i for i in range(int(top_level[t]) + 1))
        raise CorruptSketchError(
            f"stream {stream!r}: {lost} under the top-level node (level {int(top_level[t])}, "
            f"index {top_index}): its subtree has {b - a} of {expected} rows (a deleted or "
            "foreign row); read one version of the table, or rebuild the sketch")
    if int(hi[-1]) != len(level):
        extra = int(hi[-1])
        raise CorruptSketchError(
            f"stream {stream!r}: node (level {int(level[extra])}, index {int(index[extra])}) lies "
            "after the top-level nodes (a foreign row); read one version of the table, or "
            "rebuild the sketch")


@lru_cache(maxsize=64)
def subtree_sizes(fanout: int) -> np.ndarray:
    """Rows of a complete subtree under a node of each level 0..62 (``1 + f + ... + f^L``),
    capped at 2^62: no stored tree holds that many rows, so a capped size never matches."""
    sizes, total, width = [], 0, 1
    for _ in range(63):
        total = min(total + width, 1 << 62)
        width = min(width * fanout, 1 << 62)
        sizes.append(total)
    return np.array(sizes, dtype=np.int64)


def _missing(level: np.ndarray, index: np.ndarray, top_level: int, top_index: int,
             config: SketchConfig) -> str:
    """``node (level l, index j) is missing``: the first absent node of a top's subtree."""
    fanout = config.fanout
    for lv in range(top_level, -1, -1):
        width = fanout ** (top_level - lv)
        if config.merge == NEIGHBOURS:  # indices are first leaves, 2**lv apart
            want = top_index + np.arange(width, dtype=np.int64) * (1 << lv)
        else:
            want = np.arange(top_index * width, (top_index + 1) * width, dtype=np.int64)
        absent = np.setdiff1d(want, index[level == lv], assume_unique=False)
        if len(absent):
            return f"node (level {lv}, index {int(absent[0])}) is missing"
    return "a node of another subtree is"
