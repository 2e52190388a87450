"""The persisted form of one Bloom filter (the ``bits`` BINARY column of ``<name>_nodes``).

Layout, all integers little-endian (``struct``), never pickle::

    offset  size  field
    0       4     magic b'CSK1'
    4       2     format version (u16): 1 unbound, 2 bound to its row
    6       4     m, bits of the filter (u32)
    10      4     payload length in bytes (u32), m // 8
    14      m/8   payload: the packed bits, little-endian within each byte (bit b is bit b % 8
                  of byte b // 8, docs/sketch.md section 2)
    14+m/8  4     CRC-32 (zlib.crc32) of every byte before it
    18+m/8  4     version 2 only: the row tag (:func:`row_tag`) of the row's :func:`binding`
                  (stream, node id, interval, count, open flag)

Version 1 checks the bytes; version 2 also ties them to the node row they were written for, so
bits copied to another row, or a row whose interval or stream was edited, no longer decode
(docs/sketch.md section 5, "Checksums"). A nodes-table writer always writes version 2; a bare
filter (:meth:`cep.sketch.BloomFilter.to_bytes`) has no row and stays version 1, which is also
what tables written before the tag hold (still read, unbound).

:func:`decode_bits` checks everything and raises :class:`CorruptSketchError` naming what is
wrong: a truncated blob, a bad magic, an unknown version, a length mismatch, a checksum
mismatch, an inconsistent ``m``, another ``m`` than the caller expects, or a row tag that is not
the one of the caller's row. A single changed byte anywhere is always detected (CRC-32 detects
every error burst of up to 32 bits). The tag detects mistakes, not forgery: anyone who may
write the table can write a consistent row.

Example:
    >>> blob = encode_bits(bytes([0b00000101, 0]), 16)
    >>> blob[:4], len(blob)
    (b'CSK1', 20)
    >>> decode_bits(blob, 16).tolist()
    [5, 0]
    >>> decode_bits(blob[:-1] + bytes([blob[-1] ^ 1]), 16)
    Traceback (most recent call last):
    ...
    cep.sketch.errors.CorruptSketchError: CEP-SKETCH-002: checksum mismatch: the blob says 0x2d33e769, its bytes give 0x2c33e769
    >>> row = binding("s0", node_id=3, pos_start=6, pos_end=7, ts_start=60, ts_end=70,
    ...               n_events=2, is_open=False)
    >>> bound = encode_bits(bytes([5, 0]), 16, binding=row)
    >>> decode_bits(bound, 16, binding=row).tolist()
    [5, 0]
    >>> other = binding("s1", node_id=3, pos_start=6, pos_end=7, ts_start=60, ts_end=70,
    ...                 n_events=2, is_open=False)
    >>> decode_bits(bound, 16, binding=other)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cep.sketch.errors.CorruptSketchError: CEP-SKETCH-002: the bits were written for another row: ...
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

import numpy as np

from cep.sketch.config import MAX_M
from cep.sketch.errors import CorruptSketchError, SketchInputError

MAGIC = b"CSK1"
FORMAT_VERSION = 1
"""The version of an unbound blob."""
BOUND_VERSION = 2
"""The version of a blob bound to its node row."""
SUPPORTED_VERSIONS = frozenset({FORMAT_VERSION, BOUND_VERSION})
_HEADER = struct.Struct("<4sHII")
_CRC = struct.Struct("<I")
OVERHEAD = _HEADER.size + _CRC.size
"""Bytes an unbound blob adds to its payload (18)."""
BOUND_OVERHEAD = OVERHEAD + _CRC.size
"""Bytes a bound blob adds to its payload (22)."""
BINDING_FIELDS = ("node_id", "pos_start", "pos_end", "ts_start", "ts_end", "n_events", "is_open")
"""The integer fields of a row's :func:`binding`, in order (each int64 little-endian)."""
_FIELDS = struct.Struct("<" + "q" * len(BINDING_FIELDS))
FIELDS_SIZE = _FIELDS.size
"""Bytes of a binding's integer fields (56); the stream key's bytes follow."""
NULL_TS = -(1 << 63)
"""A NULL timestamp (the open row of a stream without events) in a binding."""
NULL_STREAM = b"\xff"
"""A NULL stream key in a binding (not UTF-8, so no string key encodes to it)."""
MISMATCH = ("the bits were written for another row: their tag binds them to another stream, "
            "node, interval or count (a swapped, copied or edited row); read one version of the "
            "table, or rebuild the sketch")
"""The message of a row tag that does not match (after the stream and node)."""


def stream_bytes(stream: Any) -> bytes:
    """The bytes of a stream key in a :func:`binding`: UTF-8 of its text, NULL a fixed byte.

    Example:
        >>> stream_bytes("é"), stream_bytes(None)
        (b'\\xc3\\xa9', b'\\xff')
    """
    return NULL_STREAM if stream is None else str(stream).encode("utf-8", "surrogatepass")


def row_tag(binding: bytes, crc: int) -> int:
    """The row tag of a bound blob whose bytes have the CRC-32 ``crc``.

    The CRC-32 continued from ``crc`` over the binding's integer fields, XOR the CRC-32 of its
    stream key. The XOR keeps the stream's part one value per stream, so a reader of many rows
    (:func:`cep.sketch.stored.decode_bits_matrix`) computes it once per stream, not per row.

    Example:
        >>> row = binding("s", node_id=0, pos_start=0, pos_end=0, ts_start=0, ts_end=0,
        ...               n_events=1, is_open=False)
        >>> row_tag(row, 0) == zlib.crc32(row[:FIELDS_SIZE]) ^ zlib.crc32(b"s")
        True
    """
    return zlib.crc32(binding[:FIELDS_SIZE], crc) ^ zlib.crc32(binding[FIELDS_SIZE:])


def binding(stream: Any, *, node_id: int, pos_start: int, pos_end: int, ts_start: int | None,
            ts_end: int | None, n_events: int, is_open: bool) -> bytes:
    """The bytes a bound blob's row tag covers: the row's fields, then its stream key.

    Timestamps are int64 microseconds (``None`` for NULL); the level and index are the node
    id's (the readers check a row's ``level``/``idx`` columns against it).
    """
    def ts(value: int | None) -> int:
        return NULL_TS if value is None else int(value)

    return _FIELDS.pack(int(node_id), int(pos_start), int(pos_end), ts(ts_start), ts(ts_end),
                        int(n_events), int(bool(is_open))) + stream_bytes(stream)


def _packed(bits: bytes | bytearray | memoryview | np.ndarray, m: int) -> bytes:
    """``bits`` as ``m // 8`` packed bytes (a bool array of ``m`` entries is packed first)."""
    if isinstance(bits, np.ndarray):
        if bits.ndim != 1:
            raise SketchInputError(f"bits: expected a 1-d array, found {bits.ndim}-d")
        if bits.dtype == np.bool_:
            if len(bits) != m:
                raise SketchInputError(f"bits: expected {m} booleans (m), found {len(bits)}")
            return np.packbits(bits, bitorder="little").tobytes()
        if bits.dtype != np.uint8:
            raise SketchInputError(f"bits: expected a uint8 or bool array, found {bits.dtype}")
        data = bits.tobytes()
    elif isinstance(bits, (bytes, bytearray, memoryview)):
        data = bytes(bits)
    else:
        raise SketchInputError(f"bits: expected bytes or a numpy array, found {type(bits).__name__}")
    if len(data) != m // 8:
        raise SketchInputError(f"bits: expected {m // 8} bytes (m / 8), found {len(data)}")
    return data


def encode_bits(bits: bytes | bytearray | memoryview | np.ndarray, m: int, *,
                binding: bytes | None = None) -> bytes:
    """The versioned, checksummed blob of one filter.

    Args:
        bits: The packed filter (``m // 8`` bytes, or a uint8 array of that length), or its
            ``m`` bits as a bool array.
        m: Bits of the filter, a positive multiple of 8.
        binding: The :func:`binding` of the node row the blob is written for: a version-2
            blob tagged with it. ``None``: an unbound version-1 blob.

    Raises:
        SketchInputError: ``m`` is not a positive multiple of 8 or ``bits`` has the wrong size.

    Example:
        >>> decode_bits(encode_bits(np.array([True] + [False] * 7), 8)).tolist()
        [1]
    """
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or not 8 <= m <= MAX_M or m % 8:
        raise SketchInputError(f"m: expected a multiple of 8 in [8, {MAX_M}], found {m!r}")
    m = int(m)
    payload = _packed(bits, m)
    version = FORMAT_VERSION if binding is None else BOUND_VERSION
    head = _HEADER.pack(MAGIC, version, m, len(payload)) + payload
    crc = zlib.crc32(head)
    if binding is None:
        return head + _CRC.pack(crc)
    return head + _CRC.pack(crc) + _CRC.pack(row_tag(binding, crc))


def decode_bits(blob: bytes | bytearray | memoryview, expected_m: int | None = None, *,
                binding: bytes | None = None) -> np.ndarray:
    """The packed bits of a blob written by :func:`encode_bits`, after checking it.

    Args:
        blob: The stored bytes.
        expected_m: The ``m`` of the sketch the blob belongs to (``None``: any).
        binding: The :func:`binding` of the row the blob was read from: a version-2 blob's
            tag must match it. ``None``, or a version-1 blob: the bytes alone are checked.

    Returns:
        A new uint8 array of ``m // 8`` bytes.

    Raises:
        CorruptSketchError: the blob is truncated, has a bad magic, an unknown version, a length
            or checksum mismatch, an inconsistent ``m``, ``m != expected_m``, or a row tag
            that does not match ``binding``.

    Example:
        >>> decode_bits(b"CSK2" + encode_bits(b"\\x00", 8)[4:])
        Traceback (most recent call last):
        ...
        cep.sketch.errors.CorruptSketchError: CEP-SKETCH-002: bad magic b'CSK2', expected b'CSK1'
        >>> decode_bits(encode_bits(b"\\x00", 8), 16)
        Traceback (most recent call last):
        ...
        cep.sketch.errors.CorruptSketchError: CEP-SKETCH-002: m mismatch: the blob holds a filter of m=8 bits, the sketch has m=16
    """
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise CorruptSketchError(f"expected the bytes of a sketch blob, found {type(blob).__name__}")
    data = bytes(blob)
    if len(data) < OVERHEAD:
        raise CorruptSketchError(f"truncated blob: {len(data)} bytes, shorter than the "
                                 f"{OVERHEAD} bytes of header and checksum")
    magic, version, m, length = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise CorruptSketchError(f"bad magic {magic!r}, expected {MAGIC!r}")
    if version not in SUPPORTED_VERSIONS:
        raise CorruptSketchError(f"unknown format version {version}; this build reads versions "
                                 f"{sorted(SUPPORTED_VERSIONS)}")
    overhead = OVERHEAD if version == FORMAT_VERSION else BOUND_OVERHEAD
    if len(data) != length + overhead:
        raise CorruptSketchError(f"length mismatch: the header announces a {length}-byte payload "
                                 f"({length + overhead} bytes in all), the blob has {len(data)} bytes")
    end = _HEADER.size + length
    (stored,) = _CRC.unpack_from(data, end)
    actual = zlib.crc32(memoryview(data)[:end])
    if stored != actual:
        raise CorruptSketchError(f"checksum mismatch: the blob says {stored:#010x}, its bytes "
                                 f"give {actual:#010x}")
    if m % 8 or m == 0 or length != m // 8:
        raise CorruptSketchError(f"inconsistent header: m={m} bits needs a payload of m / 8 "
                                 f"bytes, found {length}")
    if expected_m is not None and m != expected_m:
        raise CorruptSketchError(f"m mismatch: the blob holds a filter of m={m} bits, the sketch "
                                 f"has m={expected_m}")
    if version == BOUND_VERSION and binding is not None:
        (tag,) = _CRC.unpack_from(data, end + _CRC.size)
        if tag != row_tag(binding, actual):
            raise CorruptSketchError(MISMATCH)
    return np.frombuffer(data, dtype=np.uint8, count=length, offset=_HEADER.size).copy()
