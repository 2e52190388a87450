"""Bloom-filter trees of event streams (``approx_match_seq``; contract: docs/sketch.md).

The core: :class:`SketchConfig` (settings), :func:`bit_positions` (murmur3 bit positions of
names), :class:`BloomFilter` (one filter as a value), :class:`SketchTree` (the tree of one
stream with its exact-set twin, built in one pass or incrementally), and the persisted bit
format (:func:`encode_bits` / :func:`decode_bits`).
"""

from __future__ import annotations

from cep.sketch.bloom import BloomFilter
from cep.sketch.codec import decode_bits, encode_bits
from cep.sketch.config import SketchConfig
from cep.sketch.errors import CorruptSketchError, SketchConfigError, SketchInputError
from cep.sketch.hashing import Hasher, bit_positions
from cep.sketch.names import factorize

__all__ = [
    "BloomFilter",
    "CorruptSketchError",
    "Hasher",
    "SketchConfig",
    "SketchConfigError",
    "SketchInputError",
    "bit_positions",
    "decode_bits",
    "encode_bits",
    "factorize",
]
