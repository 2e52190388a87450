"""The persisted form of one Bloom filter (the ``bits`` BINARY column of ``<name>_nodes``).

Layout, all integers little-endian (``struct``), never pickle::

    offset  size  field
    0       4     magic b'CSK1'
    4       2     format version (u16), currently 1
    6       4     m, bits of the filter (u32)
    10      4     payload length in bytes (u32), m // 8
    14      m/8   payload: the packed bits, little-endian within each byte (bit b is bit b % 8
                  of byte b // 8, docs/sketch.md section 2)
    14+m/8  4     CRC-32 (zlib.crc32) of every byte before it

:func:`decode_bits` checks everything and raises :class:`CorruptSketchError` naming what is
wrong: a truncated blob, a bad magic, an unknown version, a length mismatch, a checksum
mismatch, an inconsistent ``m`` or another ``m`` than the caller expects. A single changed byte
anywhere is always detected (CRC-32 detects every error burst of up to 32 bits).

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
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

from cep.sketch.config import MAX_M
from cep.sketch.errors import CorruptSketchError, SketchInputError

MAGIC = b"CSK1"
FORMAT_VERSION = 1
SUPPORTED_VERSIONS = frozenset({1})
_HEADER = struct.Struct("<4sHII")
_CRC = struct.Struct("<I")
OVERHEAD = _HEADER.size + _CRC.size
"""Bytes a blob adds to its payload (18)."""


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


def encode_bits(bits: bytes | bytearray | memoryview | np.ndarray, m: int) -> bytes:
    """The versioned, checksummed blob of one filter.

    Args:
        bits: The packed filter (``m // 8`` bytes, or a uint8 array of that length), or its
            ``m`` bits as a bool array.
        m: Bits of the filter, a positive multiple of 8.

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
    head = _HEADER.pack(MAGIC, FORMAT_VERSION, m, len(payload)) + payload
    return head + _CRC.pack(zlib.crc32(head))


def decode_bits(blob: bytes | bytearray | memoryview, expected_m: int | None = None) -> np.ndarray:
    """The packed bits of a blob written by :func:`encode_bits`, after checking it.

    Args:
        blob: The stored bytes.
        expected_m: The ``m`` of the sketch the blob belongs to (``None``: any).

    Returns:
        A new uint8 array of ``m // 8`` bytes.

    Raises:
        CorruptSketchError: the blob is truncated, has a bad magic, an unknown version, a length
            or checksum mismatch, an inconsistent ``m``, or ``m != expected_m``.

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
    if len(data) != length + OVERHEAD:
        raise CorruptSketchError(f"length mismatch: the header announces a {length}-byte payload "
                                 f"({length + OVERHEAD} bytes in all), the blob has {len(data)} bytes")
    (stored,) = _CRC.unpack_from(data, len(data) - _CRC.size)
    actual = zlib.crc32(data[:-_CRC.size])
    if stored != actual:
        raise CorruptSketchError(f"checksum mismatch: the blob says {stored:#010x}, its bytes "
                                 f"give {actual:#010x}")
    if m % 8 or m == 0 or length != m // 8:
        raise CorruptSketchError(f"inconsistent header: m={m} bits needs a payload of m / 8 "
                                 f"bytes, found {length}")
    if expected_m is not None and m != expected_m:
        raise CorruptSketchError(f"m mismatch: the blob holds a filter of m={m} bits, the sketch "
                                 f"has m={expected_m}")
    return np.frombuffer(data, dtype=np.uint8, count=length, offset=_HEADER.size).copy()
