"""Seeded check transactions with planted kiting rings, for the trend query Q1 of Mei et al.

Q1 (DESIGN.md section 3) looks for check kiting: uncovered checks where each check is drawn on
the account the previous one paid into, within a week::

    PATTERN check+ c[] WHERE c.type = 'not covered' AND c[i].src = c[i-1].dest
    WITHIN 1 WEEK SLIDE 1 DAY

:func:`generate_checks` draws a table of checks between accounts of several banks and plants
kiting rings in it, so the answer is known: every ring is a chain of at least ``ring_min``
(>= 3) uncovered checks ``a0 -> a1, a1 -> a2, ..., a(L-1) -> a0`` between distinct accounts
of one bank, so per bank (``key_col => 'bank'``) each ring is a complete trend, or a piece
of one, of length ``L >= 3``.

The model (every choice is a documented decision, not a claim about real banking data):

* Accounts are the numbers ``0 .. n_accounts - 1``; account ``a`` is held at bank
  ``a % n_banks``, named ``bank_0``, ``bank_1``, ... (zero-padded to a common width).
  A check's ``bank`` is the bank of its ``src`` account (the bank it is drawn on).
* Ordinary checks: ``src`` uniform over the accounts, ``dest`` uniform over the other accounts,
  ``ts`` uniform over ``[start_us, start_us + span_days)`` in whole seconds, ``amount``
  log-normal (median about 400, cents), ``type`` ``'not covered'`` with probability
  ``not_covered_rate``, else ``'covered'``. Chains of ordinary uncovered checks occur by
  chance, as they would in real data; they are not rings.
* Rings: ``round(n_checks * ring_rate)`` of them. Each has a length ``L`` uniform in
  ``[ring_min, ring_max]``, a bank uniform over the banks, ``L`` distinct accounts of that
  bank, a start uniform in the span, gaps between its checks uniform in 1 to 24 hours (whole
  seconds; so timestamps strictly increase and a ring of at most 7 checks spans at most 6 days:
  one window of ``WITHIN 1 WEEK SLIDE 1 DAY`` holds it whole), amounts that grow by 2 to 10 %
  per check from a log-normal base (median about 3,000), and ``type = 'not covered'``.
* The rows are sorted by ``ts`` (ties keep generation order: ordinary checks, then rings) and
  ``id`` is the position in that order. ``ring`` is the ring number (0-based, in order of
  generation) of a planted check and -1 for an ordinary one: the ground truth.

One ``numpy.random.Generator`` (PCG64, seeded with ``seed``) draws everything in a fixed order,
so the same spec gives the same checks (for a given numpy version, as numpy only guarantees its
streams per version).

Example:
    >>> checks = generate_checks(CheckSpec(n_checks=1000, n_accounts=100, n_banks=2,
    ...                                    ring_rate=0.005, seed=1))
    >>> len(checks), checks.n_rings, checks.bank_names
    (1000, 5, ('bank_0', 'bank_1'))
    >>> ring = checks.ring_ids()[0]
    >>> bool((checks.src[ring[1:]] == checks.dest[ring[:-1]]).all())
    True
    >>> sorted(set(checks.type[ring]))
    ['not covered']
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from numbers import Real

import numpy as np

from cep.errors import InputDataError

__all__ = ["COVERED", "NOT_COVERED", "CheckSpec", "CheckSpecError", "Checks", "generate_checks"]

NOT_COVERED = "not covered"
COVERED = "covered"

_DAY_US = 86_400_000_000
_HOUR_S = 3_600
_INT64_MAX = (1 << 63) - 1
# Ten million checks already take a few GiB as Python string objects in Spark's writer; the
# cap keeps a typo (an extra zero) from exhausting the machine.
_MAX_CHECKS = 100_000_000
_MAX_ACCOUNTS = 1 << 40
_MAX_BANKS = 100_000
# The longest ring whose checks (gaps of at most 24 hours) still fit in one week's window.
_MAX_RING = 7


class CheckSpecError(InputDataError):
    """A parameter of the check generator has the wrong type or is out of range."""

    code = "CEP-DATA-002"


def _check_int(name: str, value: object, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise CheckSpecError(f"{name}: expected an integer in [{lo}, {hi}], found {value!r} "
                             f"({type(value).__name__})")
    if not lo <= int(value) <= hi:
        raise CheckSpecError(f"{name}: expected an integer in [{lo}, {hi}], found {int(value)}")
    return int(value)


def _check_rate(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (Real, np.integer, np.floating)):
        raise CheckSpecError(f"{name}: expected a number in [0, 1], found {value!r} "
                             f"({type(value).__name__})")
    rate = float(value)
    if not (math.isfinite(rate) and 0.0 <= rate <= 1.0):
        raise CheckSpecError(f"{name}: expected a number in [0, 1], found {rate!r}")
    return rate


@dataclass(frozen=True)
class CheckSpec:
    """Parameters of a check table; every field is validated on construction.

    Attributes:
        n_checks: Number of checks in all, planted ones included (1 .. 10**8).
        n_accounts: Accounts ``0 .. n_accounts - 1``; account ``a`` is at bank ``a % n_banks``.
        n_banks: Number of banks; every bank needs at least ``ring_max`` accounts when rings
            are planted (distinct accounts per ring).
        ring_rate: Planted kiting rings per check: ``round(n_checks * ring_rate)`` rings
            (0.001 is one ring per 1,000 checks; 0 plants none).
        ring_min: Fewest checks in a ring (>= 3, so a ring is a trend of length >= 3).
        ring_max: Most checks in a ring (<= 7, so a ring fits in one week's window).
        not_covered_rate: Probability that an ordinary check is not covered.
        span_days: Length of the time span in days; must exceed ``ring_max - 1`` so a ring
            fits in it.
        start_us: Start of the span, microseconds since the epoch (default 2024-01-01 UTC).
        seed: Non-negative seed; the same spec always gives the same checks.

    Raises:
        CheckSpecError: A field has the wrong type or is out of range, or the fields do not
            fit together (more ring checks than checks, too few accounts per bank).

    Example:
        >>> CheckSpec(n_checks=100).n_rings
        0
        >>> try:
        ...     CheckSpec(n_checks=10, ring_min=2)
        ... except CheckSpecError as error:
        ...     print(error)
        CEP-DATA-002: ring_min: expected an integer in [3, 7], found 2
    """

    n_checks: int
    n_accounts: int = 10_000
    n_banks: int = 10
    ring_rate: float = 0.0
    ring_min: int = 3
    ring_max: int = 6
    not_covered_rate: float = 0.05
    span_days: int = 30
    start_us: int = 1_704_067_200_000_000
    seed: int = 0

    def __post_init__(self) -> None:
        checked: dict[str, int | float] = {
            "n_checks": _check_int("n_checks", self.n_checks, 1, _MAX_CHECKS),
            "n_accounts": _check_int("n_accounts", self.n_accounts, 2, _MAX_ACCOUNTS),
            "n_banks": _check_int("n_banks", self.n_banks, 1, _MAX_BANKS),
            "ring_rate": _check_rate("ring_rate", self.ring_rate),
            "ring_min": _check_int("ring_min", self.ring_min, 3, _MAX_RING),
            "ring_max": _check_int("ring_max", self.ring_max, 3, _MAX_RING),
            "not_covered_rate": _check_rate("not_covered_rate", self.not_covered_rate),
            "span_days": _check_int("span_days", self.span_days, 1, 36_500),
            "start_us": _check_int("start_us", self.start_us, 0, _INT64_MAX),
            "seed": _check_int("seed", self.seed, 0, _INT64_MAX),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)
        if self.ring_max < self.ring_min:
            raise CheckSpecError(f"ring_max: expected at least ring_min={self.ring_min}, "
                                 f"found {self.ring_max}")
        if self.n_banks > self.n_accounts:
            raise CheckSpecError(f"n_banks: expected at most n_accounts={self.n_accounts} "
                                 f"(every bank holds an account), found {self.n_banks}")
        if self.start_us + self.span_days * _DAY_US >= _INT64_MAX:
            raise CheckSpecError(f"start_us: the span of {self.span_days} days from "
                                 f"{self.start_us} runs past the int64 microsecond limit")
        if self.n_rings:
            if self.n_rings * self.ring_max > self.n_checks:
                raise CheckSpecError(
                    f"ring_rate: {self.n_rings} rings of up to {self.ring_max} checks need up "
                    f"to {self.n_rings * self.ring_max} checks, but n_checks is "
                    f"{self.n_checks}; lower ring_rate or ring_max")
            if self.n_accounts // self.n_banks < self.ring_max:
                raise CheckSpecError(
                    f"n_accounts: a ring needs {self.ring_max} distinct accounts of one bank, "
                    f"but {self.n_accounts} accounts over {self.n_banks} banks leave "
                    f"{self.n_accounts // self.n_banks} for some bank")
            if self.span_days <= self.ring_max - 1:
                raise CheckSpecError(
                    f"span_days: a ring of {self.ring_max} checks spans up to "
                    f"{self.ring_max - 1} days, so the span must be longer; found "
                    f"{self.span_days}")

    @property
    def n_rings(self) -> int:
        """The number of planted rings, ``round(n_checks * ring_rate)``."""
        return int(round(self.n_checks * self.ring_rate))

    def as_dict(self) -> dict[str, int | float]:
        """The fields by name (for table properties and logs)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, eq=False)
class Checks:
    """A generated check table as numpy columns, one entry per check, sorted by ``ts_us``.

    Attributes:
        id: int64 ``0 .. n - 1``, the position in timestamp order.
        ts_us: int64 microseconds since the epoch (whole seconds), non-decreasing.
        bank: object array of bank names (the bank of ``src``).
        src: int64 account the check is drawn on.
        dest: int64 account the check pays into (never ``src``).
        amount: float64, in cents (two decimals).
        type: object array, ``'not covered'`` or ``'covered'``.
        ring: int64 planted ring number, -1 for an ordinary check.
        bank_names: every bank's name, in bank number order.
    """

    id: np.ndarray
    ts_us: np.ndarray
    bank: np.ndarray
    src: np.ndarray
    dest: np.ndarray
    amount: np.ndarray
    type: np.ndarray
    ring: np.ndarray
    bank_names: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.id)

    @property
    def n_rings(self) -> int:
        """The number of planted rings."""
        return int(self.ring.max()) + 1 if len(self.ring) and self.ring.max() >= 0 else 0

    def ring_ids(self) -> list[np.ndarray]:
        """The ids of every planted ring's checks, in ring number order, each in ts order.

        Example:
            >>> c = generate_checks(CheckSpec(n_checks=50, n_accounts=20, n_banks=1,
            ...                               ring_rate=0.02, seed=3))
            >>> [len(r) >= 3 for r in c.ring_ids()]
            [True]
        """
        planted = np.flatnonzero(self.ring >= 0)
        order = planted[np.lexsort((self.id[planted], self.ring[planted]))]
        cuts = np.flatnonzero(np.diff(self.ring[order])) + 1
        return [self.id[part] for part in np.split(order, cuts)] if len(order) else []

    def columns(self) -> dict[str, np.ndarray]:
        """The attribute columns by name, as :func:`cep.trends.window_trends` takes them."""
        return {"bank": self.bank, "src": self.src, "dest": self.dest, "amount": self.amount,
                "type": self.type, "ring": self.ring}


def _bank_names(n_banks: int) -> tuple[str, ...]:
    width = len(str(n_banks - 1))
    return tuple(f"bank_{b:0{width}d}" for b in range(n_banks))


def generate_checks(spec: CheckSpec) -> Checks:
    """The checks of ``spec``: ordinary ones plus the planted rings (module docstring).

    Vectorised with numpy except for one short loop per ring (drawing its distinct accounts),
    so 10**6 checks take well under a second.

    Args:
        spec: the validated parameters.

    Returns:
        The :class:`Checks`, sorted by timestamp.

    Example:
        >>> a = generate_checks(CheckSpec(n_checks=200, n_accounts=50, seed=9))
        >>> b = generate_checks(CheckSpec(n_checks=200, n_accounts=50, seed=9))
        >>> bool((a.src == b.src).all() and (a.ts_us == b.ts_us).all())
        True
    """
    rng = np.random.default_rng(spec.seed)
    span_s = spec.span_days * 86_400
    n_rings = spec.n_rings
    lengths = rng.integers(spec.ring_min, spec.ring_max + 1, size=n_rings)
    n_ring_checks = int(lengths.sum())
    n_plain = spec.n_checks - n_ring_checks

    # Ordinary checks.
    src = rng.integers(0, spec.n_accounts, size=n_plain)
    # dest uniform over the other accounts: shift by 1 .. n_accounts - 1 around the circle.
    dest = (src + rng.integers(1, spec.n_accounts, size=n_plain)) % spec.n_accounts
    seconds = rng.integers(0, span_s, size=n_plain)
    amount = np.round(np.exp(rng.normal(6.0, 1.0, size=n_plain)), 2)
    uncovered = rng.random(n_plain) < spec.not_covered_rate

    # Rings: bank, start, per-check gaps, accounts, amounts.
    ring_of = np.repeat(np.arange(n_rings), lengths)
    first = (np.cumsum(lengths) - lengths).astype(np.int64)  # each ring's first index
    step = np.arange(n_ring_checks) - np.repeat(first, lengths)  # 0-based index in its ring
    ring_bank = rng.integers(0, spec.n_banks, size=n_rings)
    longest = (lengths - 1) * 24 * _HOUR_S  # the most a ring's gaps can add up to
    ring_start = (rng.random(n_rings) * (span_s - longest)).astype(np.int64)
    gaps = rng.integers(_HOUR_S, 24 * _HOUR_S + 1, size=n_ring_checks)
    gaps[first] = 0
    ring_seconds = np.repeat(ring_start, lengths) + _cumsum_by_group(gaps, first, lengths)
    members = np.empty(n_ring_checks, dtype=np.int64)
    for r in range(n_rings):  # one short draw per ring: distinct accounts of its bank
        per_bank = (spec.n_accounts - 1 - ring_bank[r]) // spec.n_banks + 1
        picks = rng.choice(per_bank, size=int(lengths[r]), replace=False)
        members[first[r]:first[r] + lengths[r]] = picks * spec.n_banks + ring_bank[r]
    # Check j of a ring pays from its j-th account into the next one, the last back to the first.
    nxt = np.where(step + 1 == np.repeat(lengths, lengths), np.repeat(first, lengths),
                   np.arange(n_ring_checks) + 1)
    ring_dest = members[nxt]
    growth = 1.0 + rng.uniform(0.02, 0.10, size=n_ring_checks)
    growth[first] = 1.0
    base = np.exp(rng.normal(8.0, 0.5, size=n_rings))
    ring_amount = np.round(np.repeat(base, lengths) * _cumprod_by_group(growth, first, lengths), 2)

    all_seconds = np.concatenate((seconds, ring_seconds))
    order = np.argsort(all_seconds, kind="stable")
    names = np.array(_bank_names(spec.n_banks), dtype=object)
    kinds = np.array([COVERED, NOT_COVERED], dtype=object)
    all_src = np.concatenate((src, members))[order]
    return Checks(
        id=np.arange(spec.n_checks, dtype=np.int64),
        ts_us=spec.start_us + all_seconds[order].astype(np.int64) * 1_000_000,
        bank=names[all_src % spec.n_banks],
        src=all_src.astype(np.int64),
        dest=np.concatenate((dest, ring_dest))[order].astype(np.int64),
        amount=np.concatenate((amount, ring_amount))[order],
        type=kinds[np.concatenate((uncovered, np.ones(n_ring_checks, dtype=bool)))[order]
                   .astype(np.int64)],
        ring=np.concatenate((np.full(n_plain, -1, dtype=np.int64), ring_of))[order]
        .astype(np.int64),
        bank_names=tuple(names.tolist()),
    )


def _cumsum_by_group(values: np.ndarray, first: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Running sums restarting at every group (groups are consecutive, starting at ``first``)."""
    total = np.cumsum(values)
    return total - np.repeat(total[first] - values[first], lengths)


def _cumprod_by_group(values: np.ndarray, first: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Running products restarting at every group, through sums of logarithms."""
    return np.exp(_cumsum_by_group(np.log(values), first, lengths))
