"""The seeded synthetic probabilistic stream (cep/datasets/prob_streams.py), both layouts; no JVM."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cep.errors import InputDataError
from cep.prob.stream import ProbStream, from_long, from_wide
from cep.datasets.prob_streams import DOMAIN, MAX_NOISE, long_columns, synthetic_pstream, wide_maps

# numpy string arrays drop trailing NULs, so values with NUL are not round-trippable (and not data).
names = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                min_size=1, max_size=3)
domains = st.lists(names, min_size=2, max_size=6, unique=True).map(tuple)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 60), seed=st.integers(0, 2**32), domain=domains,
       max_noise=st.floats(0.0, 1.0))
def test_every_generated_stream_is_a_valid_probabilistic_stream(n: int, seed: int,
                                                                domain: tuple[str, ...],
                                                                max_noise: float) -> None:
    s = synthetic_pstream(n, seed=seed, domain=domain, max_noise=max_noise, noise="split")
    k = len(domain)
    assert s.values == tuple(sorted(domain))
    assert s.t.dtype == np.int64 and s.t.tolist() == list(range(n))
    assert s.probs.dtype == np.float64 and s.probs.shape == (n, k)
    assert np.all(s.probs >= 0.0) and np.all(s.probs <= 1.0)
    np.testing.assert_allclose(s.probs.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    # One value per time point holds at least 1 - max_noise; the others share the rest.
    if n:
        assert np.all(s.probs.max(axis=1) >= 1.0 - max_noise - 1e-12)
    # Both layouts pass the validation of cep.prob.stream and give the stream back.
    cols = long_columns(s, drop_zero=False)
    back = from_long(cols["t"], cols["value"], cols["p"])
    if n:
        assert back == s
    dropped = long_columns(s)
    assert (dropped["p"] > 0).all()
    if n:
        again = from_long(dropped["t"], dropped["value"], dropped["p"])
        assert np.array_equal(again.t, s.t)
        for v in s.values:
            assert np.array_equal(again.column(v), s.column(v))
        assert from_wide(s.t, wide_maps(s)) == again


def test_the_true_value_gets_one_minus_the_noise_and_the_rest_is_spread() -> None:
    s = synthetic_pstream(20_000, seed=3, noise="split")
    top = s.probs.max(axis=1)
    eps = 1.0 - top
    assert s.values == DOMAIN and MAX_NOISE == 0.1
    assert eps.min() >= 0.0 and eps.max() <= 0.1
    assert abs(eps.mean() - 0.05) < 0.002  # Uniform[0, 0.1]
    # The true value is uniform over the domain.
    counts = np.bincount(s.probs.argmax(axis=1), minlength=4) / len(s)
    assert np.all(np.abs(counts - 0.25) < 0.02)
    # Every other value gets a share of the noise, never more than all of it.
    others = np.sort(s.probs, axis=1)[:, :-1]
    assert (others > 0).all() and np.allclose(others.sum(axis=1), eps)


def test_same_seed_same_stream_other_seed_other_stream() -> None:
    a = synthetic_pstream(1000, seed=11)
    assert a == synthetic_pstream(1000, seed=11)
    assert not a == synthetic_pstream(1000, seed=12)
    # The order the domain is given in does not matter.
    shuffled = synthetic_pstream(50, seed=1, domain=("d", "c", "b", "a"))
    assert shuffled == synthetic_pstream(50, seed=1)
    # A golden value pins the draws (numpy's PCG64 streams are stable within the pinned version).
    s = synthetic_pstream(3, seed=0)
    assert [s.values[j] for j in s.probs.argmax(axis=1)] == \
        [s.values[j] for j in np.random.default_rng(0).integers(0, 4, size=3)]


def test_no_noise_is_a_deterministic_stream() -> None:
    s = synthetic_pstream(100, seed=5, max_noise=0.0)
    assert set(np.unique(s.probs).tolist()) == {0.0, 1.0}
    assert (s.probs.sum(axis=1) == 1.0).all()
    cols = long_columns(s)
    assert len(cols["t"]) == 100 and (cols["p"] == 1.0).all()
    assert all(len(m) == 1 for m in wide_maps(s))


def test_empty_stream() -> None:
    s = synthetic_pstream(0, seed=0)
    assert len(s) == 0 and s.values == DOMAIN and s.probs.shape == (0, 4)
    cols = long_columns(s)
    assert [len(c) for c in cols.values()] == [0, 0, 0]
    assert wide_maps(s) == []


def test_long_columns_are_ordered_by_t_then_value_with_types() -> None:
    s = ProbStream(np.array([7, 8], dtype=np.int64), ("x", "y", "z"),
                   np.array([[0.5, 0.0, 0.5], [0.0, 1.0, 0.0]]))
    cols = long_columns(s)
    assert cols["t"].dtype == np.int64 and cols["value"].dtype == object
    assert cols["p"].dtype == np.float64
    assert list(zip(cols["t"].tolist(), cols["value"].tolist(), cols["p"].tolist())) == \
        [(7, "x", 0.5), (7, "z", 0.5), (8, "y", 1.0)]
    full = long_columns(s, drop_zero=False)
    assert full["t"].tolist() == [7, 7, 7, 8, 8, 8]
    assert full["value"].tolist() == ["x", "y", "z"] * 2
    assert wide_maps(s) == [{"x": 0.5, "z": 0.5}, {"y": 1.0}]


@pytest.mark.parametrize("kwargs, message", [
    ({"n": -1}, "n must be an integer >= 0, found -1"),
    ({"n": 2.5}, "n must be an integer >= 0, found 2.5 (float)"),
    ({"n": True}, "n must be an integer >= 0, found True (bool)"),
    ({"seed": -3}, "seed must be an integer >= 0, found -3"),
    ({"seed": "7"}, "seed must be an integer >= 0, found '7' (str)"),
    ({"domain": ("a",)}, "domain must have at least 2 values"),
    ({"domain": ()}, "domain must have at least 2 values"),
    ({"domain": ("a", "a")}, "domain values must be distinct, found 'a' twice"),
    ({"domain": ("a", "")}, "domain values must be non-empty strings, found ''"),
    ({"domain": ("a", 1)}, "domain values must be non-empty strings, found 1"),
    ({"domain": "abcd"}, "domain must be a tuple of at least 2 distinct non-empty strings"),
    ({"domain": None}, "domain must be a tuple of at least 2 distinct non-empty strings"),
    ({"max_noise": -0.1}, "max_noise must be a number in [0, 1], found -0.1"),
    ({"max_noise": 1.01}, "max_noise must be a number in [0, 1], found 1.01"),
    ({"max_noise": float("nan")}, "max_noise must be a number in [0, 1], found nan"),
    ({"max_noise": "0.1"}, "max_noise must be a number in [0, 1], found '0.1'"),
    ({"max_noise": False}, "max_noise must be a number in [0, 1], found False"),
])
def test_bad_arguments_are_typed_errors(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"n": 10, "seed": 0, **kwargs}
    with pytest.raises(InputDataError) as info:
        synthetic_pstream(**args)  # type: ignore[arg-type]
    assert str(info.value) == f"CEP-DATA-001: {message}" or \
        str(info.value).startswith(f"CEP-DATA-001: {message}")


def test_numpy_integers_are_accepted() -> None:
    assert synthetic_pstream(np.int64(4), seed=np.uint32(2)) == synthetic_pstream(4, seed=2)
