"""Event names as integer codes: the vocabulary of a stream, factorised without a per-event loop.

A tree hashes each *distinct* name once and works on codes into a sorted vocabulary, so the
names of a stream are factorised first. A numpy unicode array (what ``EventColumns.types()``
returns) takes a vectorised path: every fixed-width string is read as its code points, reduced
to a 64-bit key (exact when a name has at most two characters, otherwise a hash whose classes are
then checked character by character, falling back to ``np.unique`` on a collision), and the keys
are mapped to codes through a small perfect-hash table. Python sequences and object arrays take
a ``dict`` path, which also checks that every distinct value is a ``str``.

Example:
    >>> codes, vocabulary = factorize(np.array(["b", "a", "b", "c"]))
    >>> codes.tolist(), vocabulary
    ([1, 0, 1, 2], ('a', 'b', 'c'))
    >>> factorize(["x", 3])
    Traceback (most recent call last):
    ...
    cep.sketch.errors.SketchInputError: CEP-SKETCH-003: names: expected strings, found 3 (int)
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from cep.sketch.errors import SketchInputError

_SMALL = 4096
"""Below this many names, ``np.unique`` is as fast as anything else."""
_VERIFY_CHUNK = 1 << 19
_SAMPLE = 1 << 16
_PASSES = 4
_MIX = np.uint64(0x9E3779B97F4A7C15)
_MULTIPLIERS = tuple(np.uint64(c) for c in (
    0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
    0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53, 0x94D049BB133111EB, 0xBF58476D1CE4E5B9))


def factorize(names: Iterable[str] | np.ndarray) -> tuple[np.ndarray, tuple[str, ...]]:
    """Codes of ``names`` into their sorted distinct values.

    Args:
        names: A numpy unicode or object array, or any sequence of ``str``.

    Returns:
        ``(codes, vocabulary)``: ``codes`` an int32 array with ``vocabulary[codes[i]] ==
        names[i]``, ``vocabulary`` the distinct names in sorted (code point) order.

    Raises:
        SketchInputError: ``names`` is not one-dimensional or holds something else than strings.

    Example:
        >>> factorize(np.array([], dtype=str))
        (array([], dtype=int32), ())
        >>> factorize(["dépôt", "A_Submitted", "dépôt"])[1]
        ('A_Submitted', 'dépôt')
    """
    if isinstance(names, np.ndarray):
        if names.ndim != 1:
            raise SketchInputError(f"names: expected a 1-d array, found {names.ndim}-d")
        if names.dtype.kind == "U":
            return _factorize_unicode(names)
        if names.dtype.kind != "O":
            raise SketchInputError(f"names: expected strings, found a {names.dtype} array")
    elif isinstance(names, (str, bytes)):
        raise SketchInputError(f"names: expected a sequence of strings, found {type(names).__name__}")
    return _factorize_objects(names)


def _factorize_objects(names: Iterable[str]) -> tuple[np.ndarray, tuple[str, ...]]:
    """The dict path: distinct values in one C-level pass, codes by one ``map``."""
    values = names if isinstance(names, (list, tuple, np.ndarray)) else list(names)
    try:
        distinct = dict.fromkeys(values)
    except TypeError as exc:
        raise SketchInputError(f"names: expected strings, found an unhashable value ({exc})") from None
    for value in distinct:
        if not isinstance(value, str):
            raise SketchInputError(f"names: expected strings, found {value!r} ({type(value).__name__})")
    vocabulary = tuple(sorted(str(value) for value in distinct))
    lookup = {name: code for code, name in enumerate(vocabulary)}
    codes = np.fromiter(map(lookup.__getitem__, values), dtype=np.int32, count=len(values))
    return codes, vocabulary


def _factorize_unicode(names: np.ndarray) -> tuple[np.ndarray, tuple[str, ...]]:
    """The vectorised path for fixed-width unicode arrays (see the module docstring)."""
    n = len(names)
    width = names.dtype.itemsize // 4
    if n <= _SMALL or width == 0:
        uniq, inverse = np.unique(names, return_inverse=True)
        return inverse.reshape(-1).astype(np.int32), tuple(uniq.tolist())
    points = np.ascontiguousarray(names).view(np.uint32).reshape(n, width)
    exact = width <= 2
    if exact:
        key = points[:, 0].astype(np.uint64)
        if width == 2:
            key |= points[:, 1].astype(np.uint64) << np.uint64(32)
    else:
        key = np.zeros(n, dtype=np.uint64)
        for j in range(width):
            key ^= points[:, j]
            key *= _MIX
    uniq, codes = _codes_of(key)
    rep = np.empty(len(uniq), dtype=np.int64)
    rep[codes] = np.arange(n, dtype=np.int64)
    if not exact:
        rep_points = points[rep]
        for lo in range(0, n, _VERIFY_CHUNK):
            hi = min(n, lo + _VERIFY_CHUNK)
            if not np.array_equal(points[lo:hi], rep_points[codes[lo:hi]]):
                uniq_names, inverse = np.unique(names, return_inverse=True)
                return inverse.reshape(-1).astype(np.int32), tuple(uniq_names.tolist())
    found = names[rep].tolist()
    order = sorted(range(len(found)), key=found.__getitem__)
    remap = np.empty(len(found), dtype=np.int32)
    remap[order] = np.arange(len(found), dtype=np.int32)
    return remap[codes], tuple(found[i] for i in order)


def _codes_of(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct keys and the index of every key among them, usually without a sort.

    The distinct keys of a prefix are placed in a small table by a multiply-shift perfect hash
    (one of fixed multipliers); every key is looked up, keys that miss are added, and the
    lookup is repeated. A vocabulary of more than ``2**16`` names, or one no multiplier
    separates, is sorted instead (``np.unique`` + ``searchsorted``).
    """
    known = np.unique(key[:_SAMPLE])
    for _ in range(_PASSES):
        if len(known) > 1 << 16:
            break
        placed = _perfect_table(known)
        if placed is None:
            break
        table_keys, mult, shift = placed
        slots = (key * mult) >> shift
        missing = table_keys[slots] != key
        if not missing.any():
            codes = np.empty(len(table_keys), dtype=np.int32)
            codes[(known * mult) >> shift] = np.arange(len(known), dtype=np.int32)
            return known, codes[slots]
        known = np.union1d(known, np.unique(key[missing]))
    uniq = np.unique(key)
    return uniq, np.searchsorted(uniq, key).astype(np.int32)


def _perfect_table(known: np.ndarray) -> tuple[np.ndarray, np.uint64, np.uint64] | None:
    """A table of ``4 * len(known)`` or more slots holding each known key at its slot.

    Empty slots hold ``known[0]``: a key that is not known can never equal it, so a lookup
    ``table[slot(x)] == x`` is true exactly for the known keys.
    """
    bits = max(1, (len(known) - 1).bit_length() + 2)
    shift = np.uint64(64 - bits)
    for mult in _MULTIPLIERS:
        slots = (known * mult) >> shift
        if len(np.unique(slots)) == len(known):
            table = np.full(1 << bits, known[0], dtype=np.uint64)
            table[slots] = known
            return table, mult, shift
    return None


def merge_vocabularies(old: tuple[str, ...], new: Iterable[str]) -> tuple[tuple[str, ...], np.ndarray]:
    """The sorted union of a sorted vocabulary and more names, and where each old code goes.

    Returns:
        ``(vocabulary, remap)`` with ``vocabulary[remap[c]] == old[c]``; codes keep their order.

    Example:
        >>> merge_vocabularies(("b", "d"), ["a", "d", "c"])
        (('a', 'b', 'c', 'd'), array([1, 3], dtype=int32))
    """
    merged = tuple(sorted(set(old).union(new)))
    if merged == old:
        return old, np.arange(len(old), dtype=np.int32)
    lookup = {name: code for code, name in enumerate(merged)}
    return merged, np.array([lookup[name] for name in old], dtype=np.int32)
