"""Tests of the seeded synthetic event-stream generator (cep/datasets/synthetic.py); no JVM, seconds."""

from __future__ import annotations

import math
import tracemalloc
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cep.datasets import synthetic
from cep.errors import InputDataError
from cep.datasets.synthetic import EventColumns, SyntheticSpec, generate_batches, generate_events

_INT64_MAX = (1 << 63) - 1


def _concat(batches: list[EventColumns]) -> EventColumns:
    """The batches glued back together, column by column (independently of the module's code)."""
    first = batches[0]
    return EventColumns(
        id=np.concatenate([b.id for b in batches]),
        key=np.concatenate([b.key for b in batches]),
        type_code=np.concatenate([b.type_code for b in batches]),
        type_names=first.type_names,
        ts_us=np.concatenate([b.ts_us for b in batches]),
        attrs={name: np.concatenate([b.attrs[name] for b in batches]) for name in first.attrs},
    )


def _assert_well_formed(cols: EventColumns, spec: SyntheticSpec) -> None:
    """Every structural promise of the module docstring, for any spec."""
    n = spec.n_events
    assert len(cols) == n
    assert cols.id.dtype == np.int64 and cols.key.dtype == np.int64
    assert cols.type_code.dtype == np.int32 and cols.ts_us.dtype == np.int64
    assert list(cols.attrs) == [f"v{k}" for k in range(spec.n_attrs)]
    assert all(arr.dtype == np.float64 and len(arr) == n for arr in cols.attrs.values())
    assert len(cols.type_names) == spec.n_types
    np.testing.assert_array_equal(cols.id, np.arange(n))
    if n:
        assert cols.key.min() >= 0 and cols.key.max() < spec.n_keys
        assert cols.type_code.min() >= 0 and cols.type_code.max() < spec.n_types
        assert np.all(np.diff(cols.ts_us) >= 0)
        assert cols.ts_us[0] >= spec.start_us
        assert np.all((cols.ts_us - spec.start_us) % spec.ts_resolution_us == 0)


# --- determinism -----------------------------------------------------------------------------


def test_same_spec_gives_identical_arrays() -> None:
    spec = SyntheticSpec(n_events=5000, n_attrs=3, seed=11)
    a, b = generate_events(spec), generate_events(spec)
    assert a.equals(b)
    np.testing.assert_array_equal(a.ts_us, b.ts_us)
    np.testing.assert_array_equal(a.attrs["v2"], b.attrs["v2"])


def test_different_seed_changes_every_random_column() -> None:
    a = generate_events(SyntheticSpec(n_events=5000, seed=1))
    b = generate_events(SyntheticSpec(n_events=5000, seed=2))
    assert not a.equals(b)
    for left, right in [
        (a.key, b.key),
        (a.type_code, b.type_code),
        (a.ts_us, b.ts_us),
        (a.attrs["v0"], b.attrs["v0"]),
        (a.attrs["v1"], b.attrs["v1"]),
    ]:
        assert not np.array_equal(left, right)
    np.testing.assert_array_equal(a.id, b.id)


def test_stream_is_a_prefix_of_a_longer_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    long = generate_events(SyntheticSpec(n_events=5000, seed=3))
    short = generate_events(SyntheticSpec(n_events=1234, seed=3))
    assert _slice(long, 1234).equals(short)
    monkeypatch.setattr(synthetic, "CHUNK_SIZE", 1000)
    long = generate_events(SyntheticSpec(n_events=5500, seed=3))
    short = generate_events(SyntheticSpec(n_events=3001, seed=3))
    assert _slice(long, 3001).equals(short)


def _slice(cols: EventColumns, n: int) -> EventColumns:
    return EventColumns(
        id=cols.id[:n],
        key=cols.key[:n],
        type_code=cols.type_code[:n],
        type_names=cols.type_names,
        ts_us=cols.ts_us[:n],
        attrs={name: arr[:n] for name, arr in cols.attrs.items()},
    )


def test_each_column_has_its_own_generator() -> None:
    base = generate_events(SyntheticSpec(n_events=3000, seed=5))
    more_attrs = generate_events(SyntheticSpec(n_events=3000, seed=5, n_attrs=4))
    other_keys = generate_events(SyntheticSpec(n_events=3000, seed=5, n_keys=7))
    for cols in (more_attrs, other_keys):
        np.testing.assert_array_equal(cols.type_code, base.type_code)
        np.testing.assert_array_equal(cols.ts_us, base.ts_us)
        np.testing.assert_array_equal(cols.attrs["v0"], base.attrs["v0"])
    np.testing.assert_array_equal(more_attrs.key, base.key)
    assert not np.array_equal(other_keys.key, base.key)


# --- batches == one call ---------------------------------------------------------------------


@pytest.mark.parametrize("batch_size", [1, 7, 999, 1000, 1001, 2500, 4321, 10_000])
def test_batches_equal_one_call_with_small_chunks(
    monkeypatch: pytest.MonkeyPatch, batch_size: int
) -> None:
    monkeypatch.setattr(synthetic, "CHUNK_SIZE", 1000)
    spec = SyntheticSpec(n_events=4321, n_attrs=3, seed=9)
    whole = generate_events(spec)
    batches = list(generate_batches(spec, batch_size))
    assert [len(b) for b in batches[:-1]] == [batch_size] * (len(batches) - 1)
    assert 1 <= len(batches[-1]) <= batch_size
    assert _concat(batches).equals(whole)
    _assert_well_formed(whole, spec)


@pytest.mark.parametrize("batch_size", [(1 << 20) - 1, (1 << 20) + 1, 300_007])
def test_batches_equal_one_call_across_the_real_chunk_boundary(batch_size: int) -> None:
    assert synthetic.CHUNK_SIZE == 1 << 20
    spec = SyntheticSpec(n_events=(1 << 20) + 12_345, n_attrs=1, seed=4)
    whole = generate_events(spec)
    assert _concat(list(generate_batches(spec, batch_size))).equals(whole)
    _assert_well_formed(whole, spec)
    # The clock carries over the boundary: the gap there is an ordinary one, not a restart.
    boundary_gap = whole.ts_us[1 << 20] - whole.ts_us[(1 << 20) - 1]
    assert 0 <= boundary_gap < 50 * 1000


def test_chunk_size_is_part_of_the_definition(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = SyntheticSpec(n_events=3000, seed=1)
    default_chunks = generate_events(spec)
    monkeypatch.setattr(synthetic, "CHUNK_SIZE", 1000)
    small_chunks = generate_events(spec)
    np.testing.assert_array_equal(default_chunks.key[:1000], small_chunks.key[:1000])
    assert not np.array_equal(default_chunks.key[1000:], small_chunks.key[1000:])
    # Each chunk has its own generators: no chunk repeats another's draws.
    for column in (small_chunks.key, np.diff(small_chunks.ts_us), small_chunks.attrs["v0"]):
        assert not np.array_equal(column[:999], column[1000:1999])
        assert not np.array_equal(column[1000:1999], column[2000:2999])


specs = st.builds(
    SyntheticSpec,
    n_events=st.integers(0, 3000),
    n_keys=st.integers(1, 50),
    n_types=st.integers(1, 30),
    zipf_s=st.floats(0.0, 3.0),
    rate_per_s=st.floats(0.5, 1e5),
    ts_resolution_us=st.integers(1, 10**6),
    n_attrs=st.integers(0, 4),
    seed=st.integers(0, 2**40),
)


@settings(max_examples=60, deadline=None)
@given(spec=specs, chunk_size=st.integers(1, 700), batch_size=st.integers(1, 3500))
def test_property_batches_concatenated_equal_one_call(
    spec: SyntheticSpec, chunk_size: int, batch_size: int
) -> None:
    with mock.patch.object(synthetic, "CHUNK_SIZE", chunk_size):
        whole = generate_events(spec)
        batches = list(generate_batches(spec, batch_size))
    _assert_well_formed(whole, spec)
    if spec.n_events == 0:
        assert batches == []
    else:
        assert _concat(batches).equals(whole)
        assert np.all(np.diff(np.array([b.id[0] for b in batches])) == batch_size)


def test_batches_own_their_memory_and_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(synthetic, "CHUNK_SIZE", 10_000)
    spec = SyntheticSpec(n_events=300_000, seed=2)
    stream_bytes = 300_000 * (8 + 8 + 4 + 8 + 8 + 8)
    tracemalloc.start()
    try:
        seen = 0
        for batch in generate_batches(spec, 1000):
            # A batch that owns its arrays cannot keep the chunk it was cut from alive.
            assert all(
                arr.base is None for arr in [batch.id, batch.key, batch.ts_us, batch.type_code]
            )
            seen += len(batch)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert seen == spec.n_events
    assert peak < stream_bytes / 4, (peak, stream_bytes)


def test_zero_events_gives_empty_typed_columns_and_no_batches() -> None:
    spec = SyntheticSpec(n_events=0, n_attrs=3)
    cols = generate_events(spec)
    _assert_well_formed(cols, spec)
    assert len(cols) == 0 and cols.types().shape == (0,)
    assert list(generate_batches(spec, 5)) == []


# --- distributions ---------------------------------------------------------------------------


def _zipf_probabilities(n_types: int, s: float) -> np.ndarray:
    weights = 1.0 / (np.arange(1, n_types + 1, dtype=np.float64) ** s)
    return weights / weights.sum()


def test_zipf_type_frequencies() -> None:
    cols = generate_events(SyntheticSpec(n_events=200_000, n_types=50, zipf_s=1.1, seed=6))
    share = np.bincount(cols.type_code, minlength=50) / len(cols)
    assert np.all(np.diff(share[:5]) < 0)
    theory = _zipf_probabilities(50, 1.1)
    assert abs(share[0] - theory[0]) / theory[0] < 0.10
    # Beyond the first rank: the whole distribution is close, not just its head.
    assert np.abs(share - theory).sum() < 0.02


def test_zipf_zero_is_uniform() -> None:
    cols = generate_events(SyntheticSpec(n_events=200_000, n_types=20, zipf_s=0.0, seed=6))
    share = np.bincount(cols.type_code, minlength=20) / len(cols)
    assert np.all(np.abs(share - 1 / 20) / (1 / 20) < 0.05)


def test_keys_are_uniform() -> None:
    cols = generate_events(SyntheticSpec(n_events=200_000, n_keys=10, seed=8))
    share = np.bincount(cols.key, minlength=10) / len(cols)
    assert np.all(np.abs(share - 0.1) / 0.1 < 0.05)


@pytest.mark.parametrize(("rate", "resolution"), [(1000.0, 1000), (250.0, 1), (1e5, 1)])
def test_mean_inter_arrival_matches_rate(rate: float, resolution: int) -> None:
    spec = SyntheticSpec(n_events=200_000, rate_per_s=rate, ts_resolution_us=resolution, seed=7)
    ts = generate_events(spec).ts_us
    mean_gap = (ts[-1] - ts[0]) / (len(ts) - 1)
    assert abs(mean_gap - 1e6 / rate) / (1e6 / rate) < 0.05


def test_gaps_are_exponential_at_fine_resolution() -> None:
    spec = SyntheticSpec(n_events=200_000, rate_per_s=100.0, ts_resolution_us=1, seed=7)
    gaps = np.diff(generate_events(spec).ts_us).astype(np.float64)
    # An exponential law has standard deviation equal to its mean and median mean * ln 2.
    assert abs(gaps.std() / gaps.mean() - 1) < 0.05
    assert abs(np.median(gaps) / (gaps.mean() * math.log(2)) - 1) < 0.05


def test_ties_occur_at_coarse_resolution_only() -> None:
    coarse = generate_events(SyntheticSpec(n_events=20_000, seed=1)).ts_us
    tie_share = np.mean(np.diff(coarse) == 0)
    # P(no arrival in the rest of a 1 ms tick) is high at 1000 events/s; ties must be common.
    assert tie_share > 0.3
    fine = generate_events(
        SyntheticSpec(n_events=20_000, rate_per_s=1.0, ts_resolution_us=1, seed=1)
    ).ts_us
    assert np.mean(np.diff(fine) == 0) < 0.001


def test_timestamps_are_floored_to_the_resolution() -> None:
    spec = SyntheticSpec(n_events=10_000, ts_resolution_us=60_000_000, rate_per_s=1.0, seed=3)
    ts = generate_events(spec).ts_us
    assert np.all((ts - spec.start_us) % 60_000_000 == 0)
    assert len(np.unique(ts)) < len(ts) / 30


def test_attribute_laws() -> None:
    cols = generate_events(SyntheticSpec(n_events=100_000, n_attrs=4, seed=12))
    v0, v1, v2, v3 = (cols.attrs[f"v{k}"] for k in range(4))
    assert abs(v0.mean() - 100) < 0.5 and abs(v0.std() - 15) < 0.5
    np.testing.assert_allclose(v0 * 100, np.round(v0 * 100), atol=1e-6)
    np.testing.assert_array_equal(v1, np.floor(v1))
    assert v1.min() == 0 and v1.max() == 999
    for v in (v2, v3):
        assert v.min() >= 0 and v.max() < 1 and abs(v.mean() - 0.5) < 0.01
        np.testing.assert_allclose(v * 1e4, np.round(v * 1e4), atol=1e-6)
    assert not np.array_equal(v2, v3)


# --- the type sampler and type names ---------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    n_types=st.integers(1, 3000),
    s=st.floats(0.0, 4.0),
    extra=st.lists(st.floats(0.0, 1.0, exclude_max=True), max_size=50),
    seed=st.integers(0, 1000),
)
def test_type_sampler_equals_plain_inverse_cdf(
    n_types: int, s: float, extra: list[float], seed: int
) -> None:
    cdf = synthetic._zipf_cdf(n_types, s)
    sampler = synthetic._TypeSampler.build(cdf)
    # Draws exactly on the CDF steps and on cell edges are where a lookup table would slip.
    uniform = np.concatenate(
        [
            np.random.default_rng(seed).random(2000),
            np.asarray(extra, dtype=np.float64),
            cdf[cdf < 1.0],
            np.nextafter(cdf[cdf < 1.0], 0.0),
            np.arange(sampler.buckets, dtype=np.float64) / sampler.buckets,
            [0.0, np.nextafter(1.0, 0.0)],
        ]
    )
    np.testing.assert_array_equal(
        sampler.ranks(uniform), np.searchsorted(cdf, uniform, side="right")
    )


@pytest.mark.parametrize(
    ("n_types", "first", "last"),
    [
        (1, "T0", "T0"),
        (10, "T0", "T9"),
        (11, "T00", "T10"),
        (50, "T00", "T49"),
        (101, "T000", "T100"),
    ],
)
def test_type_names_are_zero_padded(n_types: int, first: str, last: str) -> None:
    cols = generate_events(SyntheticSpec(n_events=100, n_types=n_types))
    assert cols.type_names[0] == first and cols.type_names[-1] == last
    assert len(cols.type_names) == n_types and len(set(cols.type_names)) == n_types


def test_types_maps_codes_to_names() -> None:
    cols = generate_events(SyntheticSpec(n_events=2000, n_types=12, zipf_s=0.5, seed=2))
    expected = [cols.type_names[code] for code in cols.type_code.tolist()]
    assert cols.types().tolist() == expected


# --- EventColumns ----------------------------------------------------------------------------


def test_equals_detects_any_difference() -> None:
    cols = generate_events(SyntheticSpec(n_events=100, seed=1))
    assert cols.equals(cols) and not cols.equals("not columns")  # type: ignore[arg-type]
    ts = cols.ts_us.copy()
    ts[50] += 1
    changed = EventColumns(cols.id, cols.key, cols.type_code, cols.type_names, ts, cols.attrs)
    assert not cols.equals(changed)
    reversed_attrs = dict(reversed(cols.attrs.items()))
    reordered = EventColumns(
        cols.id, cols.key, cols.type_code, cols.type_names, cols.ts_us, reversed_attrs
    )
    assert not cols.equals(reordered)
    renamed = EventColumns(
        cols.id, cols.key, cols.type_code, ("X",) * len(cols.type_names), cols.ts_us, cols.attrs
    )
    assert not cols.equals(renamed)


@pytest.mark.parametrize(
    ("change", "name"),
    [
        ({"id": np.arange(3, dtype=np.int32)}, "id"),
        ({"key": np.zeros(4, dtype=np.int64)}, "key"),
        ({"type_code": np.zeros(3, dtype=np.int64)}, "type_code"),
        ({"ts_us": np.zeros((3, 1), dtype=np.int64)}, "ts_us"),
        ({"attrs": {"v0": np.zeros(2)}}, "attrs['v0']"),
        ({"attrs": [np.zeros(3)]}, "attrs"),
        ({"type_names": ["T0"]}, "type_names"),
    ],
)
def test_event_columns_rejects_malformed_columns(change: dict[str, object], name: str) -> None:
    fields: dict[str, object] = {
        "id": np.arange(3, dtype=np.int64),
        "key": np.zeros(3, dtype=np.int64),
        "type_code": np.zeros(3, dtype=np.int32),
        "type_names": ("T0",),
        "ts_us": np.zeros(3, dtype=np.int64),
        "attrs": {"v0": np.zeros(3)},
    }
    EventColumns(**fields)  # type: ignore[arg-type]
    fields.update(change)
    with pytest.raises(InputDataError, match=r"^CEP-DATA-001: " + name.replace("[", r"\[")):
        EventColumns(**fields)  # type: ignore[arg-type]


# --- parameter validation --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("n_events", -1),
        ("n_events", 2.0),
        ("n_events", True),
        ("n_events", "10"),
        ("n_events", 2**70),
        ("n_keys", 0),
        ("n_keys", None),
        ("n_types", 0),
        ("n_types", 1_000_001),
        ("n_types", 3.5),
        ("zipf_s", -0.1),
        ("zipf_s", float("nan")),
        ("zipf_s", float("inf")),
        ("zipf_s", "1.1"),
        ("rate_per_s", 0.0),
        ("rate_per_s", -5.0),
        ("rate_per_s", float("inf")),
        ("rate_per_s", False),
        ("ts_resolution_us", 0),
        ("ts_resolution_us", 1.5),
        ("start_us", 2**63),
        ("start_us", -(2**63) - 1),
        ("start_us", 1.7e15),
        ("n_attrs", -1),
        ("n_attrs", 1001),
        ("seed", -1),
        ("seed", 0.5),
    ],
)
def test_invalid_parameter_raises_naming_it(name: str, value: object) -> None:
    kwargs: dict[str, object] = {"n_events": 10, name: value}
    with pytest.raises(InputDataError) as info:
        SyntheticSpec(**kwargs)  # type: ignore[arg-type]
    message = str(info.value)
    assert message.startswith(f"CEP-DATA-001: {name}: expected ")
    assert "found" in message


def test_valid_numpy_scalars_are_accepted_and_normalised() -> None:
    spec = SyntheticSpec(n_events=np.int64(5), zipf_s=np.float32(0.5), rate_per_s=np.int32(10))
    assert spec == SyntheticSpec(n_events=5, zipf_s=0.5, rate_per_s=10.0)
    assert type(spec.n_events) is int and type(spec.rate_per_s) is float


def test_stream_that_cannot_fit_in_int64_is_rejected_up_front() -> None:
    with pytest.raises(InputDataError, match="rate_per_s: expected"):
        SyntheticSpec(n_events=10**12, rate_per_s=1e-6)
    with pytest.raises(InputDataError, match="rate_per_s: expected"):
        SyntheticSpec(n_events=10, start_us=_INT64_MAX - 100)


def test_stream_that_overruns_int64_at_run_time_raises() -> None:
    # Expected end at 40% of the remaining range: the up-front check passes, and a single
    # exponential gap exceeds 2.5 times its mean for about 8% of seeds.
    start = 0
    rate = 1e6 / ((_INT64_MAX - start) * 0.4)
    outcomes = []
    for seed in range(60):
        try:
            spec = SyntheticSpec(n_events=1, rate_per_s=rate, seed=seed, start_us=start)
            cols = generate_events(spec)
            outcomes.append(int(cols.ts_us[0]))
        except InputDataError as error:
            assert "rate_per_s: expected timestamps within int64" in str(error)
            outcomes.append(None)
    assert None in outcomes
    assert any(ts is not None and ts > 0 for ts in outcomes)


@pytest.mark.parametrize("batch_size", [0, -3, 1.5, True, None])
def test_invalid_batch_size_raises_before_iterating(batch_size: object) -> None:
    expected = r"^CEP-DATA-001: batch_size: expected an integer >= 1"
    with pytest.raises(InputDataError, match=expected):
        generate_batches(SyntheticSpec(n_events=10), batch_size)  # type: ignore[arg-type]


@pytest.mark.parametrize("function", [generate_events, lambda spec: generate_batches(spec, 3)])
def test_non_spec_argument_is_rejected(function: object) -> None:
    with pytest.raises(InputDataError, match=r"^CEP-DATA-001: spec: expected a SyntheticSpec"):
        function({"n_events": 10})  # type: ignore[operator]
