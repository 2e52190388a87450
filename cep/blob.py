"""Versioned, checksummed blobs: how every piece of engine state is written as bytes.

A blob is ``MAGIC (6 bytes) | version (u16) | sha256(payload) | payload``, the payload UTF-8
JSON of numbers, strings, lists and objects only: never a pickle, so reading a blob runs no
code. :func:`unpack` checks the magic, the version, the checksum and that the payload is a JSON
object, and raises the caller's error class (with its own code) for anything else.

Example:
    >>> blob = pack(b"CEPXMP", 1, {"a": [1, 2]})
    >>> unpack(b"CEPXMP", 1, blob, "example", ValueError)
    {'a': [1, 2]}
    >>> unpack(b"CEPXMP", 1, blob[:-1] + b"]", "example", ValueError)
    Traceback (most recent call last):
    ...
    ValueError: example checksum mismatch: the blob is corrupt
"""

from __future__ import annotations

import hashlib
import json
import struct
from typing import Any

HEADER = struct.Struct(">6sH32s")
"""The magic, the format version and the payload's sha256."""


def pack(magic: bytes, version: int, payload: dict[str, Any]) -> bytes:
    """The blob of ``payload`` (keys sorted, no spaces: the same payload is the same bytes)."""
    body = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode("utf-8")
    return HEADER.pack(magic, version, hashlib.sha256(body).digest()) + body


def unpack(magic: bytes, version: int, blob: bytes | bytearray | memoryview, what: str,
           error: type[Exception], family: str = "") -> dict[str, Any]:
    """The payload of a blob written by :func:`pack` with ``magic`` and ``version``.

    Raises:
        error: a bad magic ("not a <family> <what>"), another version, a checksum mismatch, a
            payload that is not a JSON object; the message names ``what``.
    """
    raw = bytes(blob)
    if len(raw) < HEADER.size or raw[:len(magic)] != magic:
        raise error(f"not a {family + ' ' if family else ''}{what} (bad magic)")
    _, found, digest = HEADER.unpack_from(raw)
    if found != version:
        raise error(f"{what} format version {found}, this code reads {version}")
    body = raw[HEADER.size:]
    if hashlib.sha256(body).digest() != digest:
        raise error(f"{what} checksum mismatch: the blob is corrupt")
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        # The checksum only says the bytes are the ones written; a blob written by other code
        # can still carry a body that is not JSON.
        raise error(f"{what} payload is not JSON: {err}") from None
    except RecursionError:  # found by tests/test_fuzz.py: "[[[[...]]]]" a few thousand deep
        raise error(f"{what} payload nests deeper than JSON decoding allows") from None
    if not isinstance(data, dict):
        raise error(f"{what} payload is not an object")
    return data
