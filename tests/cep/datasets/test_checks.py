"""The check generator (cep/datasets/checks.py): determinism, shapes, planted rings found as trends."""

from __future__ import annotations

import numpy as np
import pytest

from cep.datasets.checks import (COVERED, NOT_COVERED, CheckSpec, CheckSpecError, Checks,
                        generate_checks)
from cep.errors import InputDataError
from cep.oracles import oracle_trend_windows
from cep.trends import window_counts, window_trends

Q1 = ("PATTERN check+ c[] WHERE c.type = 'not covered' AND c[i].src = c[i-1].dest "
      "WITHIN 1 WEEK SLIDE 1 DAY")
# Every row is a check (as in SQL without type_col); c.type reads the type column.
Q1_ALL_ROWS = Q1.replace(" WHERE ", " DEFINE check AS TRUE WHERE ", 1)
DAY_US = 86_400_000_000

SMALL = CheckSpec(n_checks=400, n_accounts=60, n_banks=3, ring_rate=0.01,
                  not_covered_rate=0.2, span_days=10, seed=5)


def arrays(c: Checks) -> dict[str, np.ndarray]:
    return {"id": c.id, "ts_us": c.ts_us, "ring": c.ring, **c.columns()}


def per_bank(c: Checks) -> dict[str, np.ndarray]:
    return {b: np.flatnonzero(c.bank == b) for b in c.bank_names}


def contains(trend: tuple[int, ...], ring: list[int]) -> bool:
    """True when ``ring`` occurs in ``trend`` as consecutive events."""
    return any(list(trend[i:i + len(ring)]) == ring for i in range(len(trend) - len(ring) + 1))


@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_same_spec_same_checks_and_seeds_differ(seed: int) -> None:
    spec = CheckSpec(n_checks=3000, n_accounts=500, n_banks=4, ring_rate=0.002, seed=seed)
    a, b = generate_checks(spec), generate_checks(spec)
    for name, column in arrays(a).items():
        assert np.array_equal(column, arrays(b)[name]), name
    assert a.bank_names == b.bank_names
    other = generate_checks(CheckSpec(n_checks=3000, n_accounts=500, n_banks=4,
                                      ring_rate=0.002, seed=seed + 1))
    assert not np.array_equal(a.src, other.src)


def test_columns_shapes_types_and_ranges() -> None:
    spec = CheckSpec(n_checks=5000, n_accounts=1000, n_banks=12, ring_rate=0.004, seed=3)
    c = generate_checks(spec)
    assert len(c) == 5000 and c.bank_names[0] == "bank_00" and len(c.bank_names) == 12
    assert np.array_equal(c.id, np.arange(5000))
    for name in ("id", "ts_us", "src", "dest", "ring"):
        assert getattr(c, name).dtype == np.int64 and getattr(c, name).shape == (5000,), name
    assert c.amount.dtype == np.float64
    assert c.bank.dtype == object and c.type.dtype == object
    assert (np.diff(c.ts_us) >= 0).all() and (c.ts_us % 1_000_000 == 0).all()
    assert c.ts_us.min() >= spec.start_us and c.ts_us.max() < spec.start_us + 30 * DAY_US
    assert ((0 <= c.src) & (c.src < 1000) & (0 <= c.dest) & (c.dest < 1000)).all()
    assert (c.src != c.dest).all()
    assert (c.bank == np.array(c.bank_names, dtype=object)[c.src % 12]).all()
    assert set(c.type) == {COVERED, NOT_COVERED}
    assert (c.amount > 0).all() and np.allclose(c.amount, np.round(c.amount, 2))
    plain = c.ring < 0
    assert 0.03 < np.mean(c.type[plain] == NOT_COVERED) < 0.07  # not_covered_rate 0.05
    assert set(np.unique(c.ring[~plain])) == set(range(20)) and c.n_rings == spec.n_rings == 20


def test_planted_rings_are_kiting_chains() -> None:
    spec = CheckSpec(n_checks=20_000, n_accounts=2000, n_banks=5, ring_rate=0.001, ring_min=3,
                     ring_max=7, seed=8)
    c = generate_checks(spec)
    rings = c.ring_ids()
    assert len(rings) == 20
    for ids in rings:
        assert 3 <= len(ids) <= 7
        assert (c.type[ids] == NOT_COVERED).all()
        assert len(set(c.bank[ids])) == 1
        assert len(set(c.src[ids])) == len(ids)  # distinct accounts
        assert (c.src[ids[1:]] == c.dest[ids[:-1]]).all() and c.dest[ids[-1]] == c.src[ids[0]]
        assert (np.diff(c.ts_us[ids]) >= 3_600_000_000).all()  # strictly increasing, >= 1 h
        assert c.ts_us[ids[-1]] - c.ts_us[ids[0]] <= (len(ids) - 1) * DAY_US
        assert (np.diff(c.amount[ids]) > 0).all()


def test_planted_rings_are_found_by_the_trend_core() -> None:
    c = generate_checks(CheckSpec(n_checks=20_000, n_accounts=2000, n_banks=5, ring_rate=0.001,
                                  seed=42))
    found: list[tuple[int, ...]] = []
    for rows in per_bank(c).values():
        cols = {k: v[rows] for k, v in c.columns().items()}
        for _, trend in window_trends(Q1_ALL_ROWS, c.ts_us[rows], cols, types=cols["type"],
                                      tiebreak=c.id[rows]):
            if len(trend) >= 3:
                found.append(tuple(c.id[rows][trend].tolist()))
    for ids in c.ring_ids():
        assert any(contains(t, ids.tolist()) for t in found), ids
    # Every trend of length >= 3 holds a planted check: chance chains that long are rare at
    # these sizes (the docs' Q1 example relies on it).
    assert all((c.ring[list(t)] >= 0).any() for t in found)


def test_core_equals_oracle_on_a_small_instance() -> None:
    c = generate_checks(SMALL)
    assert c.n_rings == 4
    found: list[tuple[int, ...]] = []
    for bank, rows in per_bank(c).items():
        cols = {k: v[rows] for k, v in c.columns().items()}
        ts, ids = c.ts_us[rows], c.id[rows]
        oracle = oracle_trend_windows(Q1_ALL_ROWS, ts, cols, types=cols["type"], tiebreak=ids)
        core = window_trends(Q1_ALL_ROWS, ts, cols, types=cols["type"], tiebreak=ids)
        assert sorted((s, tuple(t.tolist())) for s, t in core) == \
            sorted((s, t) for s, w in oracle.items() for t in w.trends), bank
        assert window_counts(Q1_ALL_ROWS, ts, cols, types=cols["type"], tiebreak=ids) == \
            {s: w.count for s, w in oracle.items()}
        found += [tuple(ids[list(t)].tolist()) for w in oracle.values() for t in w.trends]
    for ring in c.ring_ids():
        assert any(contains(t, ring.tolist()) for t in found), ring


def test_no_rings() -> None:
    c = generate_checks(CheckSpec(n_checks=100, n_accounts=20, n_banks=2))
    assert c.n_rings == 0 and c.ring_ids() == [] and (c.ring == -1).all()


@pytest.mark.parametrize("kwargs, message", [
    ({"n_checks": 0}, "n_checks: expected an integer in [1, 100000000], found 0"),
    ({"n_checks": 10.0}, "n_checks: expected an integer"),
    ({"n_checks": True}, "n_checks: expected an integer"),
    ({"n_checks": 10, "n_accounts": 1}, "n_accounts: expected an integer in [2, "),
    ({"n_checks": 10, "n_banks": 0}, "n_banks: expected an integer in [1, 100000]"),
    ({"n_checks": 10, "n_accounts": 5, "n_banks": 6}, "n_banks: expected at most n_accounts=5"),
    ({"n_checks": 10, "ring_rate": -0.1}, "ring_rate: expected a number in [0, 1], found -0.1"),
    ({"n_checks": 10, "ring_rate": float("nan")}, "ring_rate: expected a number in [0, 1]"),
    ({"n_checks": 10, "ring_rate": "0.1"}, "ring_rate: expected a number in [0, 1], found '0.1'"),
    ({"n_checks": 10, "not_covered_rate": 1.5}, "not_covered_rate: expected a number in [0, 1]"),
    ({"n_checks": 10, "ring_min": 2}, "ring_min: expected an integer in [3, 7], found 2"),
    ({"n_checks": 10, "ring_max": 8}, "ring_max: expected an integer in [3, 7], found 8"),
    ({"n_checks": 10, "ring_min": 5, "ring_max": 4}, "ring_max: expected at least ring_min=5"),
    ({"n_checks": 10, "span_days": 0}, "span_days: expected an integer in [1, 36500]"),
    ({"n_checks": 10, "seed": -1}, "seed: expected an integer in [0, "),
    ({"n_checks": 10, "ring_rate": 0.5}, "ring_rate: 5 rings of up to 6 checks need up to 30"),
    ({"n_checks": 100, "n_accounts": 50, "n_banks": 10, "ring_rate": 0.01},
     "n_accounts: a ring needs 6 distinct accounts of one bank"),
    ({"n_checks": 100, "ring_rate": 0.01, "span_days": 5}, "span_days: a ring of 6 checks"),
    ({"n_checks": 10, "start_us": (1 << 63) - 1}, "start_us: the span of 30 days"),
])
def test_bad_parameters_are_typed_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(CheckSpecError) as info:
        CheckSpec(**kwargs)
    assert isinstance(info.value, InputDataError)
    assert str(info.value).startswith("CEP-DATA-002: ") and message in str(info.value)
