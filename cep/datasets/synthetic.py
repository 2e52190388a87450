"""Seeded synthetic event streams, so tests and benchmarks of any size share one reproducible input.

The stream is defined chunk by chunk: chunk ``j`` holds events ``j * CHUNK_SIZE`` up to
``(j + 1) * CHUNK_SIZE - 1`` and draws every column from its own PCG64 generators, seeded by
``SeedSequence(entropy=seed, spawn_key=(j, column))``. Only the arrival clock is carried from one
chunk to the next. Because of this:

* ``generate_events(spec)`` equals the concatenation of ``generate_batches(spec, b)`` for every
  batch size ``b`` (batches are cut from the chunk stream; they never change it);
* a stream of ``n`` events is the first ``n`` events of the same spec with more events;
* each column has its own generator, so changing ``n_keys`` changes only ``key``, changing
  ``n_attrs`` adds or removes attribute columns without touching the others, and so on;
* streaming ``10**7`` events needs memory proportional to one chunk plus one batch, not to the
  stream.

The stream depends on ``CHUNK_SIZE`` (tests patch it to something small) and, as numpy's random
streams are only guaranteed per numpy version, on the pinned numpy version.

Columns:

* ``id``: the global position, ``0 .. n_events - 1``.
* ``key``: partition key, uniform over ``[0, n_keys)``.
* ``type_code``: event type, Zipf over ranks: ``P(r) ∝ 1 / (r + 1) ** zipf_s``, drawn by inverse
  CDF (``searchsorted``, sped up by a lookup table with identical results); ``type_names[r]``
  is ``"T" + r`` zero-padded to the width of ``n_types - 1``.
* ``ts_us``: a Poisson process with ``rate_per_s`` arrivals per second starting at ``start_us``
  (exponential gaps, accumulated in continuous microseconds), then floored to a multiple of
  ``ts_resolution_us`` after ``start_us``, so equal timestamps (ties) occur at coarse
  resolutions.
* ``attrs``: ``v0`` ~ Normal(100, 15) rounded to 2 decimals (a price-like value), ``v1`` uniform
  integers ``0 .. 999`` stored as float64 (a count-like value), ``v2``, ``v3``, ... uniform on the
  grid ``{0, 0.0001, ..., 0.9999}``, i.e. Uniform[0, 1) truncated to 4 decimals (kept below 1).
  Every attribute is independent of the key and of earlier events: a per-key random walk would
  need state per key across chunks, and independence keeps chunks independent.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from numbers import Real

import numpy as np

from cep.errors import InputDataError

__all__ = [
    "CHUNK_SIZE",
    "EventColumns",
    "SyntheticSpec",
    "generate_batches",
    "generate_events",
]

CHUNK_SIZE: int = 1 << 20
"""Events per internal chunk; part of the stream's definition (tests patch it to a small value)."""

_INT64_MAX = (1 << 63) - 1
_INT64_MIN = -(1 << 63)
_MAX_EVENTS = 1 << 62
_MAX_KEYS = 1 << 62
# type_names and the Zipf CDF are materialised, so the number of types is kept to what fits easily.
_MAX_TYPES = 1_000_000
# Every attribute costs one float64 per event; a thousand columns is already far beyond any test.
_MAX_ATTRS = 1000
_MAX_RESOLUTION_US = 1 << 62

# Column slots in the spawn key (entropy=seed, spawn_key=(chunk, slot)); attribute k uses
# _SLOT_ATTR0 + k, so adding attributes never changes the draws of existing columns.
_SLOT_GAP = 0
_SLOT_KEY = 1
_SLOT_TYPE = 2
_SLOT_ATTR0 = 3


def _found(value: object) -> str:
    """Describe a rejected value for a message, with its type when the type is the problem."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return f"{value!r} ({type(value).__name__})"
    return repr(value.item() if isinstance(value, np.generic) else value)


def _bound(value: int) -> str:
    """A range bound as a reader would write it (2**62 rather than 4611686018427387904)."""
    named = {1 << 62: "2**62", _INT64_MAX: "2**63-1", _INT64_MIN: "-2**63"}
    return named.get(value, str(value))


def _check_int(name: str, value: object, lo: int, hi: int) -> int:
    """Return ``value`` as a Python int, or raise InputDataError naming ``name`` and the range."""
    full_range = f"an integer in [{_bound(lo)}, {_bound(hi)}]"
    # An upper bound of 2**62 or more is a technical limit, so the usual message names only lo.
    lower_only = f"an integer >= {lo}" if hi >= (1 << 62) and lo != _INT64_MIN else full_range
    # bool is an int subclass, but True as a count is always a mistake.
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputDataError(f"{name}: expected {lower_only}, found {_found(value)}")
    as_int = int(value)
    if as_int < lo:
        raise InputDataError(f"{name}: expected {lower_only}, found {as_int}")
    if as_int > hi:
        raise InputDataError(f"{name}: expected {full_range}, found {as_int}")
    return as_int


def _check_float(name: str, value: object, lo: float, lo_inclusive: bool) -> float:
    """Return ``value`` as a finite Python float above ``lo``, or raise InputDataError naming it."""
    expected = f"a finite number {'>=' if lo_inclusive else '>'} {lo:g}"
    if isinstance(value, bool) or not isinstance(value, (Real, np.integer, np.floating)):
        raise InputDataError(f"{name}: expected {expected}, found {_found(value)}")
    as_float = float(value)
    if not math.isfinite(as_float) or as_float < lo or (as_float == lo and not lo_inclusive):
        raise InputDataError(f"{name}: expected {expected}, found {as_float!r}")
    return as_float


@dataclass(frozen=True)
class SyntheticSpec:
    """Parameters of a synthetic event stream; every field is validated on construction.

    Attributes:
        n_events: Number of events, ``>= 0``.
        n_keys: Partition keys, drawn uniformly from ``[0, n_keys)``.
        n_types: Event types ``"T00" .. "T49"`` (zero-padded to the width of ``n_types - 1``).
        zipf_s: Zipf exponent over type ranks, ``P(r) ∝ 1 / (r + 1) ** s``; type 0 is the most
            frequent, ``s = 0`` is uniform.
        rate_per_s: Mean events per second over the whole stream (Poisson arrivals).
        ts_resolution_us: Timestamps are floored to this many microseconds after ``start_us``.
        start_us: Start of the arrival process, microseconds since the epoch (default
            2024-01-01T00:00:00Z).
        n_attrs: Number of numeric attributes ``v0, v1, ...``.
        seed: Non-negative seed; the same spec always gives the same stream.

    Raises:
        InputDataError: A field has the wrong type or is out of range, or the stream would run
            past the int64 microsecond limit.

    Example:
        >>> spec = SyntheticSpec(n_events=1000, n_types=3, seed=7)
        >>> spec.n_keys, spec.zipf_s
        (1000, 1.1)
        >>> try:
        ...     SyntheticSpec(n_events=10, n_types=0)
        ... except InputDataError as error:
        ...     print(error)
        CEP-DATA-001: n_types: expected an integer in [1, 1000000], found 0
    """

    n_events: int
    n_keys: int = 1000
    n_types: int = 50
    zipf_s: float = 1.1
    rate_per_s: float = 1000.0
    ts_resolution_us: int = 1000
    start_us: int = 1_704_067_200_000_000
    n_attrs: int = 2
    seed: int = 0

    def __post_init__(self) -> None:
        # Numpy scalars are normalised to Python numbers so equal specs compare and hash equal.
        checked: dict[str, int | float] = {
            "n_events": _check_int("n_events", self.n_events, 0, _MAX_EVENTS),
            "n_keys": _check_int("n_keys", self.n_keys, 1, _MAX_KEYS),
            "n_types": _check_int("n_types", self.n_types, 1, _MAX_TYPES),
            "zipf_s": _check_float("zipf_s", self.zipf_s, 0.0, lo_inclusive=True),
            "rate_per_s": _check_float("rate_per_s", self.rate_per_s, 0.0, lo_inclusive=False),
            "ts_resolution_us": _check_int(
                "ts_resolution_us", self.ts_resolution_us, 1, _MAX_RESOLUTION_US
            ),
            "start_us": _check_int("start_us", self.start_us, _INT64_MIN, _INT64_MAX),
            "n_attrs": _check_int("n_attrs", self.n_attrs, 0, _MAX_ATTRS),
            "seed": _check_int("seed", self.seed, 0, _INT64_MAX),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)
        # The exact end is random; twice the expected span catches impossible specs up front, and
        # _make_chunk still guards each chunk against the rare stream that runs longer.
        expected_span_us = self.n_events * 1e6 / self.rate_per_s
        if self.start_us + 2.0 * expected_span_us + self.ts_resolution_us >= _INT64_MAX:
            raise InputDataError(
                "rate_per_s: expected a rate at which n_events events starting at start_us end "
                f"before the int64 microsecond limit ({_INT64_MAX}), found rate_per_s="
                f"{self.rate_per_s!r} with n_events={self.n_events}, start_us={self.start_us} "
                f"(expected end ~{self.start_us + expected_span_us:.6g})"
            )


@dataclass(frozen=True, eq=False)
class EventColumns:
    """A batch of events as numpy columns, so engines and benchmarks can work on whole arrays.

    ``type_code`` is checked only for dtype, not for range: callers building columns by hand must
    keep it within ``[0, len(type_names))``.

    Attributes:
        id: int64 global position in the stream.
        key: int64 partition key.
        type_code: int32 index into ``type_names``.
        type_names: Name of each type code.
        ts_us: int64 microseconds since the epoch, non-decreasing for generated streams.
        attrs: float64 attribute columns, in order ``v0, v1, ...``.

    Example:
        >>> cols = generate_events(SyntheticSpec(n_events=4, n_types=3, seed=1))
        >>> len(cols), cols.id.tolist(), list(cols.attrs)
        (4, [0, 1, 2, 3], ['v0', 'v1'])
        >>> cols.type_names
        ('T0', 'T1', 'T2')
    """

    id: np.ndarray
    key: np.ndarray
    type_code: np.ndarray
    type_names: tuple[str, ...]
    ts_us: np.ndarray
    attrs: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.type_names, tuple) or not all(
            isinstance(name, str) for name in self.type_names
        ):
            raise InputDataError(
                f"type_names: expected a tuple of str, found {type(self.type_names).__name__}"
            )
        columns: list[tuple[str, object, np.dtype]] = [
            ("id", self.id, np.dtype(np.int64)),
            ("key", self.key, np.dtype(np.int64)),
            ("type_code", self.type_code, np.dtype(np.int32)),
            ("ts_us", self.ts_us, np.dtype(np.int64)),
        ]
        if not isinstance(self.attrs, dict):
            raise InputDataError(
                f"attrs: expected a dict of str to arrays, found {_found(self.attrs)}"
            )
        columns += [
            (f"attrs[{name!r}]", arr, np.dtype(np.float64)) for name, arr in self.attrs.items()
        ]
        n = len(self.id) if isinstance(self.id, np.ndarray) and self.id.ndim == 1 else None
        for name, arr, dtype in columns:
            if not isinstance(arr, np.ndarray) or arr.ndim != 1 or arr.dtype != dtype:
                if isinstance(arr, np.ndarray):
                    found = f"{arr.ndim}-d {arr.dtype} array"
                else:
                    found = _found(arr)
                raise InputDataError(f"{name}: expected a 1-d {dtype} array, found {found}")
            if len(arr) != n:
                raise InputDataError(
                    f"{name}: expected {n} values (as many as id), found {len(arr)}"
                )

    def __len__(self) -> int:
        """Number of events."""
        return len(self.id)

    def types(self) -> np.ndarray:
        """Type name of every event, for consumers that want the type column as strings.

        Returns:
            A numpy unicode array, ``type_names[type_code]`` (one fancy-indexing step, no loop).

        Example:
            >>> cols = generate_events(SyntheticSpec(n_events=3, n_types=1))
            >>> cols.types().tolist()
            ['T0', 'T0', 'T0']
        """
        names = np.array(self.type_names, dtype=np.str_)
        return names[self.type_code]

    def equals(self, other: EventColumns) -> bool:
        """Whether two batches hold exactly the same events (every column, dtype and order).

        Args:
            other: The batch to compare with.

        Returns:
            True when every column, the attribute names (in order) and ``type_names`` are equal.

        Example:
            >>> spec = SyntheticSpec(n_events=50, seed=3)
            >>> generate_events(spec).equals(generate_events(spec))
            True
            >>> generate_events(spec).equals(generate_events(SyntheticSpec(n_events=50, seed=4)))
            False
        """
        if not isinstance(other, EventColumns):
            return False
        if self.type_names != other.type_names or list(self.attrs) != list(other.attrs):
            return False
        pairs = [
            (self.id, other.id),
            (self.key, other.key),
            (self.type_code, other.type_code),
            (self.ts_us, other.ts_us),
        ]
        pairs += [(self.attrs[name], other.attrs[name]) for name in self.attrs]
        return all(a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True) for a, b in pairs)


def _type_names(n_types: int) -> tuple[str, ...]:
    """Type names ``T0..`` zero-padded so that they sort in rank order."""
    width = len(str(n_types - 1))
    return tuple(f"T{rank:0{width}d}" for rank in range(n_types))


def _zipf_cdf(n_types: int, s: float) -> np.ndarray:
    """Cumulative Zipf probabilities over ranks, with the last entry exactly 1.0."""
    weights = np.exp(-s * np.log1p(np.arange(n_types, dtype=np.float64)))
    cdf = np.cumsum(weights / weights.sum())
    # Rounding can leave the tail a hair above or below 1; searchsorted needs it sorted and a
    # uniform draw in [0, 1) must always land on a valid rank.
    np.minimum(cdf, 1.0, out=cdf)
    cdf[-1] = 1.0
    return cdf


@dataclass(frozen=True, eq=False)
class _TypeSampler:
    """Inverse-CDF draw of Zipf ranks: ``searchsorted(cdf, u, side="right")``, made faster.

    A plain ``searchsorted`` costs a binary search per event (the largest single cost of a
    chunk, measured ~5x slower than this). Splitting [0, 1) into ``buckets`` equal cells, most
    cells lie between two CDF steps and so map to a single rank, which a table lookup returns;
    only draws in the few cells that contain a step are resolved with ``searchsorted``. The
    result is identical to the plain inverse CDF for every draw.
    """

    cdf: np.ndarray
    buckets: int
    table: np.ndarray  # rank of every cell, or -1 where a CDF step falls inside the cell

    @classmethod
    def build(cls, cdf: np.ndarray) -> _TypeSampler:
        """Table for ``cdf``: ~64 cells per type (a power of two, so ``u * buckets`` is exact)."""
        buckets = 1 << max(10, min(20, (64 * len(cdf) - 1).bit_length()))
        edges = np.arange(buckets + 1, dtype=np.float64) / buckets
        # For u in [edges[b], edges[b + 1]): #{cdf <= edges[b]} <= rank(u) <= #{cdf < edges[b + 1]}.
        lowest = np.searchsorted(cdf, edges[:-1], side="right")
        highest = np.searchsorted(cdf, edges[1:], side="left")
        table = np.where(lowest == highest, lowest, -1).astype(np.int32)
        return cls(cdf=cdf, buckets=buckets, table=table)

    def ranks(self, uniform: np.ndarray) -> np.ndarray:
        """``searchsorted(cdf, uniform, side="right")`` as int32, for draws in [0, 1)."""
        rank = self.table[(uniform * self.buckets).astype(np.intp)]
        ambiguous = np.flatnonzero(rank < 0)
        rank[ambiguous] = np.searchsorted(self.cdf, uniform[ambiguous], side="right")
        # cdf[-1] == 1.0 > any draw, so this clip never changes a value; it is cheap insurance.
        np.minimum(rank, len(self.cdf) - 1, out=rank)
        return rank


def _rng(seed: int, chunk: int, slot: int) -> np.random.Generator:
    """Generator for one column of one chunk, independent of every other (chunk, column) pair."""
    sequence = np.random.SeedSequence(entropy=seed, spawn_key=(chunk, slot))
    return np.random.Generator(np.random.PCG64(sequence))


def _attr(rng: np.random.Generator, index: int, m: int) -> np.ndarray:
    """Values of attribute ``v<index>`` for ``m`` events (see the module docstring for the laws)."""
    if index == 0:
        values = rng.standard_normal(m)
        values *= 15.0
        values += 100.0
        return np.round(values, 2, out=values)
    if index == 1:
        return rng.integers(0, 1000, size=m, dtype=np.int64).astype(np.float64)
    # Floor (not round) keeps the values in [0, 1); k / 1e4 is the double nearest to k/10000.
    values = rng.random(m)
    values *= 1e4
    np.floor(values, out=values)
    values /= 1e4
    return values


def _make_chunk(
    spec: SyntheticSpec,
    chunk: int,
    first_id: int,
    m: int,
    carry_us: float,
    sampler: _TypeSampler,
    type_names: tuple[str, ...],
) -> tuple[EventColumns, float]:
    """Events ``first_id .. first_id + m - 1`` of chunk ``chunk``, and the clock to carry on.

    ``carry_us`` is the continuous (unquantised) elapsed time of the previous chunk's last
    event; carrying it rather than a quantised timestamp keeps the Poisson process exact across
    chunk borders.
    """
    elapsed = _rng(spec.seed, chunk, _SLOT_GAP).standard_exponential(m)
    elapsed *= 1e6 / spec.rate_per_s
    # cumsum of non-negative gaps is non-decreasing, and adding the carry (rounded, monotone)
    # keeps it so; the first value is >= carry, so ts never decreases across chunks either.
    np.cumsum(elapsed, out=elapsed)
    elapsed += carry_us
    last_us = float(elapsed[-1])
    # Backstop for the rare stream that runs far past its expected end (a margin covers the
    # float rounding of values near 2**63).
    if last_us + spec.ts_resolution_us + 4096.0 >= float(_INT64_MAX - spec.start_us):
        raise InputDataError(
            "rate_per_s: expected timestamps within int64 microseconds, found event "
            f"{first_id + m - 1} at ~{spec.start_us + last_us:.6g} us "
            f"(rate_per_s={spec.rate_per_s!r}, start_us={spec.start_us})"
        )
    # In place: at 2**20 events each float64 temporary would cost 8 MiB.
    elapsed /= spec.ts_resolution_us
    np.floor(elapsed, out=elapsed)
    ticks = elapsed.astype(np.int64)
    del elapsed
    ticks *= spec.ts_resolution_us
    ticks += spec.start_us

    key = _rng(spec.seed, chunk, _SLOT_KEY).integers(0, spec.n_keys, size=m, dtype=np.int64)
    rank = sampler.ranks(_rng(spec.seed, chunk, _SLOT_TYPE).random(m))
    attrs = {
        f"v{index}": _attr(_rng(spec.seed, chunk, _SLOT_ATTR0 + index), index, m)
        for index in range(spec.n_attrs)
    }
    columns = EventColumns(
        id=np.arange(first_id, first_id + m, dtype=np.int64),
        key=key,
        type_code=rank,
        type_names=type_names,
        ts_us=ticks,
        attrs=attrs,
    )
    return columns, last_us


def _empty(spec: SyntheticSpec, type_names: tuple[str, ...]) -> EventColumns:
    """A zero-event batch with the same columns and dtypes as a generated one."""
    return EventColumns(
        id=np.empty(0, dtype=np.int64),
        key=np.empty(0, dtype=np.int64),
        type_code=np.empty(0, dtype=np.int32),
        type_names=type_names,
        ts_us=np.empty(0, dtype=np.int64),
        attrs={f"v{index}": np.empty(0, dtype=np.float64) for index in range(spec.n_attrs)},
    )


def _check_spec(spec: object) -> SyntheticSpec:
    """Reject anything but a SyntheticSpec with a clear message (its fields are already valid)."""
    if not isinstance(spec, SyntheticSpec):
        raise InputDataError(f"spec: expected a SyntheticSpec, found {_found(spec)}")
    return spec


def _iter_chunks(spec: SyntheticSpec) -> Iterator[EventColumns]:
    """The stream's internal chunks in order; the only place the stream is defined."""
    chunk_size = CHUNK_SIZE  # read once, so a patched value applies to a whole stream
    type_names = _type_names(spec.n_types)
    sampler = _TypeSampler.build(_zipf_cdf(spec.n_types, spec.zipf_s))
    carry_us = 0.0
    for chunk, first_id in enumerate(range(0, spec.n_events, chunk_size)):
        m = min(chunk_size, spec.n_events - first_id)
        columns, carry_us = _make_chunk(spec, chunk, first_id, m, carry_us, sampler, type_names)
        yield columns
        # Drop our reference before making the next chunk, so two chunks are never alive here.
        del columns


def _column_list(cols: EventColumns) -> list[np.ndarray]:
    """All arrays of a batch in a fixed order, so slicing and concatenation treat them alike."""
    return [cols.id, cols.key, cols.type_code, cols.ts_us, *cols.attrs.values()]


def _from_column_list(
    arrays: list[np.ndarray], type_names: tuple[str, ...], attr_names: list[str]
) -> EventColumns:
    """Inverse of _column_list."""
    return EventColumns(
        id=arrays[0],
        key=arrays[1],
        type_code=arrays[2],
        type_names=type_names,
        ts_us=arrays[3],
        attrs=dict(zip(attr_names, arrays[4:], strict=True)),
    )


def generate_events(spec: SyntheticSpec) -> EventColumns:
    """Generate a whole synthetic stream in memory, for tests and benchmarks that need it at once.

    Peak memory is the stream plus one internal chunk; use :func:`generate_batches` when the
    stream itself does not fit.

    Args:
        spec: The stream's parameters.

    Returns:
        All ``spec.n_events`` events; empty arrays of the documented dtypes when ``n_events == 0``.

    Raises:
        InputDataError: ``spec`` is not a SyntheticSpec, or timestamps would overflow int64.

    Example:
        >>> cols = generate_events(SyntheticSpec(n_events=10_000, n_types=5, seed=42))
        >>> len(cols), cols.type_code.dtype.name, cols.types()[:1].dtype.kind
        (10000, 'int32', 'U')
        >>> bool((cols.id == range(10_000)).all()), bool((cols.ts_us[1:] >= cols.ts_us[:-1]).all())
        (True, True)
    """
    spec = _check_spec(spec)
    type_names = _type_names(spec.n_types)
    if spec.n_events == 0:
        return _empty(spec, type_names)
    chunks = _iter_chunks(spec)
    if spec.n_events <= CHUNK_SIZE:
        return next(chunks)
    # Preallocating and filling avoids holding every chunk and their concatenation at once.
    attr_names = [f"v{index}" for index in range(spec.n_attrs)]
    template = _column_list(_empty(spec, type_names))
    out = [np.empty(spec.n_events, dtype=arr.dtype) for arr in template]
    for chunk in chunks:
        start = int(chunk.id[0])
        for target, source in zip(out, _column_list(chunk), strict=True):
            target[start : start + len(source)] = source
        del chunk  # let the chunk go before the next one is generated
    return _from_column_list(out, type_names, attr_names)


def generate_batches(spec: SyntheticSpec, batch_size: int) -> Iterator[EventColumns]:
    """Stream a synthetic event stream in batches, for streams too large to hold in memory.

    The batches concatenated equal ``generate_events(spec)`` for every ``batch_size``; ids
    continue across batches. Every batch has ``batch_size`` events except possibly the last; a
    stream of zero events yields no batch. Each batch owns its arrays (no view into a chunk
    outlives the batch), and memory is O(batch_size + CHUNK_SIZE), whatever ``n_events``.

    Args:
        spec: The stream's parameters.
        batch_size: Events per batch, ``>= 1``.

    Returns:
        An iterator of batches; the arguments are validated when this is called, not lazily.

    Raises:
        InputDataError: ``spec`` is not a SyntheticSpec or ``batch_size`` is not an integer >= 1.

    Example:
        >>> spec = SyntheticSpec(n_events=10, seed=5)
        >>> batches = list(generate_batches(spec, 4))
        >>> [len(b) for b in batches], batches[1].id.tolist()
        ([4, 4, 2], [4, 5, 6, 7])
        >>> bool(batches[2].ts_us[0] >= batches[1].ts_us[-1])
        True
    """
    spec = _check_spec(spec)
    batch_size = _check_int("batch_size", batch_size, 1, _MAX_EVENTS)
    return _iter_batches(spec, batch_size)


def _iter_batches(spec: SyntheticSpec, batch_size: int) -> Iterator[EventColumns]:
    """Re-cut the chunk stream into batches of ``batch_size`` events."""
    type_names = _type_names(spec.n_types)
    attr_names = [f"v{index}" for index in range(spec.n_attrs)]
    pending: list[list[np.ndarray]] = []
    pending_n = 0
    for chunk in _iter_chunks(spec):
        arrays = _column_list(chunk)
        n = len(chunk)
        if pending_n == 0 and n == batch_size:
            # A batch that is exactly one chunk can take the chunk's own arrays without a copy.
            yield chunk
            continue
        start = 0
        while start < n:
            take = min(batch_size - pending_n, n - start)
            pending.append([arr[start : start + take] for arr in arrays])
            pending_n += take
            start += take
            if pending_n == batch_size:
                yield _join(pending, type_names, attr_names)
                pending, pending_n = [], 0
        if pending_n:
            # The chunk's tail waits for the next chunk; a copy of it lets the chunk itself go.
            pending[-1] = [arr.copy() for arr in pending[-1]]
        del chunk, arrays
    if pending_n:
        yield _join(pending, type_names, attr_names)


def _join(
    pieces: list[list[np.ndarray]], type_names: tuple[str, ...], attr_names: list[str]
) -> EventColumns:
    """One batch from slices of chunks; always copies, so the batch does not pin a whole chunk."""
    if len(pieces) == 1:
        arrays = [arr.copy() for arr in pieces[0]]
    else:
        arrays = [np.concatenate(parts) for parts in zip(*pieces, strict=True)]
    return _from_column_list(arrays, type_names, attr_names)
