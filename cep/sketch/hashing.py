"""Bit positions of names in a Bloom filter: ``h_i(x) = murmur3_32(utf8(x), seed_i) mod m``.

:func:`bit_positions` is the hash of docs/sketch.md section 2 (mmh3, unsigned). It hashes every
distinct name once. Trees and filters take any callable with its signature (a
:data:`Hasher`), so tests can place bits by hand with a toy hash.

Example:
    >>> bit_positions(["A", "B", "A"], 1024, (0, 1, 2)).tolist()
    [[974, 310, 481], [650, 527, 437], [974, 310, 481]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import mmh3
import numpy as np

from cep.sketch.errors import SketchConfigError, SketchInputError
from cep.sketch.names import factorize

Hasher = Callable[[Sequence[str], int, Sequence[int]], np.ndarray]
"""``hasher(names, m, seeds) -> int array (len(names), len(seeds))`` of positions in ``[0, m)``."""


def bit_positions(names: Sequence[str] | np.ndarray, m: int, seeds: Sequence[int]) -> np.ndarray:
    """The ``k = len(seeds)`` bit positions of every name.

    Args:
        names: The names (any sequence of ``str`` or a numpy string array).
        m: Bits of the filter (positions are taken modulo ``m``).
        seeds: One unsigned 32-bit murmur3 seed per hash function.

    Returns:
        An int64 array of shape ``(len(names), len(seeds))``: row ``i`` holds
        ``mmh3.hash(names[i].encode('utf-8'), seed, signed=False) % m`` for every seed.

    Raises:
        SketchInputError: a name is not a ``str`` or cannot be encoded as UTF-8.

    Example:
        >>> bit_positions([], 64, (7,)).shape
        (0, 1)
    """
    codes, vocabulary = factorize(names)
    table = np.empty((len(vocabulary), len(seeds)), dtype=np.int64)
    for row, name in enumerate(vocabulary):
        try:
            data = name.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise SketchInputError(f"names: {name!r} cannot be encoded as UTF-8 ({exc.reason})") from None
        table[row] = [mmh3.hash(data, seed, signed=False) for seed in seeds]
    table %= m
    return table[codes]


def positions_of(hasher: Hasher | None, names: Sequence[str], m: int,
                 seeds: Sequence[int]) -> np.ndarray:
    """``hasher(names, m, seeds)`` (:func:`bit_positions` when ``None``), checked for shape and range.

    Raises:
        SketchConfigError: the hasher returned a wrong shape or positions outside ``[0, m)``.

    Example:
        >>> positions_of(lambda names, m, seeds: np.array([[m] for _ in names]), ["A"], 8, (0,))
        Traceback (most recent call last):
        ...
        cep.sketch.errors.SketchConfigError: CEP-SKETCH-001: hasher: expected positions in [0, 8), found values in [8, 8]
    """
    out = (hasher or bit_positions)(names, m, seeds)
    out = np.asarray(out)
    expected = (len(names), len(seeds))
    if out.shape != expected or (out.size and out.dtype.kind not in "iu"):
        raise SketchConfigError(f"hasher: expected an integer array of shape {expected}, "
                                f"found shape {out.shape} and dtype {out.dtype}")
    if out.size and (out.min() < 0 or out.max() >= m):
        raise SketchConfigError(f"hasher: expected positions in [0, {m}), found values in "
                                f"[{out.min()}, {out.max()}]")
    return out.astype(np.int64, copy=False)
