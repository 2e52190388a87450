"""One Bloom filter as an immutable value (docs/sketch.md section 2).

``m`` bits, ``k = len(seeds)`` hash functions; a name is possibly present when all its ``k``
bits are set, so a filter never misses a name that was added (no false negatives). The bits are
packed little-endian: bit ``b`` is bit ``b % 8`` of byte ``b // 8``. The vocabulary is
datasketch's (``add``, ``contains`` / ``in``, ``merge``, ``density``), but every operation
returns a new filter instead of changing this one.

Example:
    >>> bf = BloomFilter.empty(m=64, seeds=(0, 1, 2)).add(["A_Submitted", "O_Sent"])
    >>> "A_Submitted" in bf, bf.contains("O_Sent"), bf.might_contain("W_Call")
    (True, True, False)
    >>> bf.density
    0.09375
    >>> BloomFilter.from_bytes(bf.to_bytes(), seeds=(0, 1, 2)) == bf
    True
    >>> bf.merge(BloomFilter.empty(m=128, seeds=(0, 1, 2)))
    Traceback (most recent call last):
    ...
    cep.sketch.errors.SketchConfigError: CEP-SKETCH-001: merge: the filters differ in m (64 vs 128); only filters built with the same m and seeds can be merged
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from cep.sketch.codec import decode_bits, encode_bits
from cep.sketch.config import SketchConfig
from cep.sketch.errors import SketchConfigError, SketchInputError
from cep.sketch.hashing import Hasher, positions_of


def pack_positions(positions: np.ndarray, m: int) -> np.ndarray:
    """The packed filter (``m // 8`` uint8) with exactly the given bit positions set.

    Example:
        >>> pack_positions(np.array([[0, 9], [9, 15]]), 16).tolist()
        [1, 130]
    """
    dense = np.zeros(m, dtype=np.bool_)
    dense[np.asarray(positions, dtype=np.int64).reshape(-1)] = True
    return np.packbits(dense, bitorder="little")


def has_positions(packed: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Whether every one of ``positions`` is set, for each packed filter along the last axis.

    Args:
        packed: uint8 array ``(..., m // 8)``: one filter or one per row.
        positions: The ``k`` bit positions of one name.

    Returns:
        A bool (array) with the leading shape of ``packed``.

    Example:
        >>> has_positions(np.array([[1, 130], [1, 0]], dtype=np.uint8), np.array([0, 9])).tolist()
        [True, False]
    """
    positions = np.asarray(positions, dtype=np.int64)
    picked = packed[..., positions >> 3] >> (positions & 7).astype(np.uint8)
    return np.all(picked & 1, axis=-1)


@dataclass(frozen=True)
class BloomFilter:
    """An ``m``-bit Bloom filter with one murmur3 hash per seed.

    Attributes:
        m: Bits (a positive multiple of 8).
        seeds: One seed per hash function.
        bits: The ``m // 8`` packed bytes.
        hasher: The position function (``None``: murmur3, :func:`cep.sketch.hashing.bit_positions`);
            not part of equality.
    """

    m: int
    seeds: tuple[int, ...]
    bits: bytes = field(repr=False)
    hasher: Hasher | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        # The config checks m and the seeds and names the field on error.
        SketchConfig(m=self.m, k=max(1, len(tuple(self.seeds))), C=1, seeds=tuple(self.seeds))
        object.__setattr__(self, "seeds", tuple(int(s) for s in self.seeds))
        if not isinstance(self.bits, bytes) or len(self.bits) != self.m // 8:
            found = len(self.bits) if isinstance(self.bits, bytes) else type(self.bits).__name__
            raise SketchInputError(f"bits: expected {self.m // 8} bytes (m / 8), found {found}")

    @classmethod
    def empty(cls, m: int, seeds: Iterable[int], hasher: Hasher | None = None) -> BloomFilter:
        """A filter with no bit set."""
        return cls(m=m, seeds=tuple(seeds), bits=bytes(m // 8) if isinstance(m, int) and m > 0 else b"",
                   hasher=hasher)

    @classmethod
    def from_config(cls, config: SketchConfig, hasher: Hasher | None = None) -> BloomFilter:
        """An empty filter with the ``m`` and seeds of a sketch config."""
        return cls.empty(config.m, config.seeds or (), hasher)

    @classmethod
    def from_packed(cls, packed: np.ndarray | bytes, m: int, seeds: Iterable[int],
                    hasher: Hasher | None = None) -> BloomFilter:
        """A filter over given packed bits (e.g. one row of a tree's ``bits``)."""
        data = packed.tobytes() if isinstance(packed, np.ndarray) else bytes(packed)
        return cls(m=m, seeds=tuple(seeds), bits=data, hasher=hasher)

    @classmethod
    def from_bytes(cls, blob: bytes, seeds: Iterable[int], m: int | None = None,
                   hasher: Hasher | None = None) -> BloomFilter:
        """The filter of a :meth:`to_bytes` blob (checked; ``m`` from the blob unless given).

        Raises:
            CorruptSketchError: the blob is damaged or holds another ``m`` than ``m``.
        """
        packed = decode_bits(blob, m)
        return cls(m=len(packed) * 8, seeds=tuple(seeds), bits=packed.tobytes(), hasher=hasher)

    @property
    def k(self) -> int:
        """Number of hash functions."""
        return len(self.seeds)

    def packed(self) -> np.ndarray:
        """The bits as a read-only uint8 array of ``m // 8`` bytes."""
        return np.frombuffer(self.bits, dtype=np.uint8)

    def positions(self, names: Iterable[str]) -> np.ndarray:
        """The ``(len(names), k)`` bit positions of ``names`` under this filter's hash."""
        names = list(names)
        return positions_of(self.hasher, names, self.m, self.seeds)

    def add(self, names: str | Iterable[str]) -> BloomFilter:
        """This filter with one name (a ``str``) or every name of an iterable added."""
        names = [names] if isinstance(names, str) else list(names)
        if not names:
            return self
        added = pack_positions(self.positions(names), self.m)
        return self._with(self.packed() | added)

    def contains(self, name: str) -> bool:
        """Whether ``name`` is possibly present (all its ``k`` bits set); never false for an
        added name."""
        return bool(has_positions(self.packed(), self.positions([name])[0]))

    might_contain = contains

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.contains(name)

    def merge(self, other: BloomFilter) -> BloomFilter:
        """The filter of the union of both name sets: the bitwise OR.

        Raises:
            SketchConfigError: the filters differ in ``m`` or seeds.
        """
        if not isinstance(other, BloomFilter):
            raise SketchConfigError(f"merge: expected a BloomFilter, found {type(other).__name__}")
        for name, mine, theirs in (("m", self.m, other.m), ("seeds", self.seeds, other.seeds)):
            if mine != theirs:
                raise SketchConfigError(f"merge: the filters differ in {name} ({mine} vs {theirs}); "
                                        "only filters built with the same m and seeds can be merged")
        return self._with(self.packed() | other.packed())

    __or__ = merge

    @property
    def n_set(self) -> int:
        """Number of set bits."""
        return int(np.bitwise_count(self.packed()).sum())

    @property
    def density(self) -> float:
        """Set bits / ``m``."""
        return self.n_set / self.m

    def to_bytes(self) -> bytes:
        """The persisted blob (:func:`cep.sketch.codec.encode_bits`)."""
        return encode_bits(self.bits, self.m)

    def _with(self, packed: np.ndarray) -> BloomFilter:
        return BloomFilter(m=self.m, seeds=self.seeds, bits=packed.tobytes(), hasher=self.hasher)
