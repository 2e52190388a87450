"""The settings of a sketch: Bloom filter size and hashes, leaf size, fanout, merge rule (docs/sketch.md 1-3).

A :class:`SketchConfig` is one row of the ``<name>_meta`` table. Every tree and Bloom filter is
built under one config; two of them can be combined only when their configs agree.

Example:
    >>> cfg = SketchConfig(m=1024, k=3, C=64)
    >>> cfg.fanout, cfg.seeds, cfg.config_version, cfg.bytes_per_node, cfg.merge
    (2, (0, 1, 2), 1, 128, 'aligned')
    >>> SketchConfig.from_dict(cfg.to_dict()) == cfg
    True
    >>> SketchConfig(m=1020, k=3, C=64)
    Traceback (most recent call last):
    ...
    cep.sketch.errors.SketchConfigError: CEP-SKETCH-001: m: expected a multiple of 8 in [8, 2147483648], found 1020
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

from cep.sketch.errors import SketchConfigError

MAX_M = 1 << 31
"""Largest filter size in bits (the persisted format stores ``m`` as an unsigned 32-bit int)."""
MAX_K = 64
MAX_C = 1 << 31
MAX_FANOUT = 1 << 16
SEED_LIMIT = 1 << 32
"""Seeds are unsigned 32-bit murmur3 seeds: ``0 <= seed < 2**32``."""
ALIGNED = "aligned"
"""Merge rule: node ``(L, g)`` is made of the ``f`` nodes ``(L-1, g*f) .. (L-1, g*f + f - 1)``."""
NEIGHBOURS = "neighbours"
"""Merge rule of the thesis's Algorithm 2 (Baltus 2021, section 4.1): any two neighbouring
top-level nodes of one level merge when their OR is at most half full (fanout 2)."""
MERGES = (ALIGNED, NEIGHBOURS)


def _as_int(name: str, value: object, lo: int, hi: int, extra: str = "") -> int:
    """``value`` as a Python int in ``[lo, hi]`` (bools refused), or SketchConfigError."""
    if isinstance(value, bool) or not isinstance(value, Integral) or not lo <= int(value) <= hi:
        raise SketchConfigError(
            f"{name}: expected {extra or 'an integer'} in [{lo}, {hi}], found {value!r}")
    return int(value)


@dataclass(frozen=True)
class SketchConfig:
    """How every filter and tree of one sketch is built.

    Attributes:
        m: Bits per Bloom filter, a multiple of 8 (filters are stored as ``m // 8`` bytes).
        k: Number of hash functions.
        C: Leaf size: events per leaf (count-based windows).
        fanout: Children per inner node (``f``).
        seeds: One murmur3 seed per hash function (``k`` distinct integers in ``[0, 2**32)``);
            ``0 .. k-1`` when not given.
        config_version: Version of these settings in the meta table (a rebuild with other
            settings bumps it).
        target_fpq: The false-positive rate the settings were chosen for (informational;
            ``None`` when unknown).
        merge: Which nodes merge: ``"aligned"`` (default: fixed groups of ``f``) or
            ``"neighbours"`` (the thesis's Algorithm 2, ``fanout`` 2 only); docs/sketch.md
            section 3.

    Raises:
        SketchConfigError: a field is out of range; the message names the field and the value.
    """

    m: int
    k: int
    C: int
    fanout: int = 2
    seeds: tuple[int, ...] | None = None
    config_version: int = 1
    target_fpq: float | None = None
    merge: str = ALIGNED

    def __post_init__(self) -> None:
        m = _as_int("m", self.m, 8, MAX_M, "a multiple of 8")
        if m % 8:
            raise SketchConfigError(f"m: expected a multiple of 8 in [8, {MAX_M}], found {self.m!r}")
        k = _as_int("k", self.k, 1, MAX_K)
        values: dict[str, Any] = {
            "m": m,
            "k": k,
            "C": _as_int("C", self.C, 1, MAX_C),
            "fanout": _as_int("fanout", self.fanout, 2, MAX_FANOUT),
            "seeds": self._checked_seeds(k),
            "config_version": _as_int("config_version", self.config_version, 0, (1 << 31) - 1),
            "target_fpq": self._checked_fpq(),
            "merge": self._checked_merge(),
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def _checked_seeds(self, k: int) -> tuple[int, ...]:
        if self.seeds is None:
            return tuple(range(k))
        seeds = self.seeds
        if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
            raise SketchConfigError(f"seeds: expected {k} distinct integers in [0, 2**32), "
                                    f"found {seeds!r}")
        values = tuple(seeds)
        if len(values) != k or not all(
                not isinstance(s, bool) and isinstance(s, Integral) and 0 <= int(s) < SEED_LIMIT
                for s in values) or len(set(int(s) for s in values)) != k:
            raise SketchConfigError(f"seeds: expected {k} distinct integers in [0, 2**32) "
                                    f"(one per hash function), found {list(values)!r}")
        return tuple(int(s) for s in values)

    def _checked_merge(self) -> str:
        if self.merge not in MERGES:
            raise SketchConfigError(f"merge: expected one of {', '.join(MERGES)}, found {self.merge!r}")
        if self.merge == NEIGHBOURS and self.fanout != 2:
            raise SketchConfigError(f"merge: {NEIGHBOURS!r} merges pairs (the thesis's Algorithm "
                                    f"2), so fanout must be 2, found {self.fanout}")
        return str(self.merge)

    def _checked_fpq(self) -> float | None:
        fpq = self.target_fpq
        if fpq is None:
            return None
        if isinstance(fpq, bool) or not isinstance(fpq, Real) or not 0.0 < float(fpq) < 1.0 \
                or math.isnan(float(fpq)):
            raise SketchConfigError(f"target_fpq: expected a number in (0, 1) or None, found {fpq!r}")
        return float(fpq)

    @property
    def leaf_size(self) -> int:
        """``C``, under a longer name."""
        return self.C

    @property
    def bytes_per_node(self) -> int:
        """Bytes of one packed filter: ``m // 8``."""
        return self.m // 8

    def to_dict(self) -> dict[str, Any]:
        """The fields as plain Python values (seeds as a list), e.g. for the meta table."""
        return {"m": self.m, "k": self.k, "C": self.C, "fanout": self.fanout,
                "seeds": list(self.seeds or ()), "config_version": self.config_version,
                "target_fpq": self.target_fpq, "merge": self.merge}

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> SketchConfig:
        """The config of a :meth:`to_dict` mapping (unknown keys are a SketchConfigError)."""
        known = {"m", "k", "C", "fanout", "seeds", "config_version", "target_fpq", "merge"}
        unknown = sorted(set(values) - known)
        if unknown:
            raise SketchConfigError(f"unknown config fields {unknown}; expected some of {sorted(known)}")
        missing = sorted({"m", "k", "C"} - set(values))
        if missing:
            raise SketchConfigError(f"missing config fields {missing}")
        seeds = values.get("seeds")
        return cls(**{**values, "seeds": None if seeds is None else tuple(seeds)})
