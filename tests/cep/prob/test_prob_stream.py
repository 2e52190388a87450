"""Validation of probabilistic streams (``cep.prob.stream``): each bad input is a CEP-PROB-010
error that names the stream, the time point and what was expected."""

from __future__ import annotations

import re

import numpy as np
import pytest

from cep.prob import ProbStreamError, from_long, from_wide


@pytest.mark.parametrize("t, value, p, message", [
    ([1, 2], ["a", "a"], [1.0, 1.5], "time point 2: probability 1.5 is outside [0, 1]"),
    ([1, 2], ["a", "a"], [1.0, -0.0001], "time point 2: probability -0.0001 is outside [0, 1]"),
    ([1, 2], ["a", "a"], [1.0, float("nan")], "time point 2: probability nan is outside [0, 1]"),
    ([1, 1, 2], ["a", "b", "a"], [0.5, 0.4, 1.0], "time point 1: probabilities sum to 0.9, expected 1"),
    ([1, 1, 2], ["a", "a", "a"], [0.5, 0.5, 1.0], "time point 1 lists value 'a' twice"),
    ([1, 3], ["a", "a"], [1.0, 1.0], "time points jump from 1 to 3"),
    ([1, None], ["a", "a"], [1.0, 1.0], "row 1: time point None is not an integer"),
    ([1, 2.5], ["a", "a"], [1.0, 1.0], "row 1: time point 2.5 is not an integer"),
    ([1, 2], ["a", None], [1.0, 1.0], "time point 2: value None is not a string"),
    ([1, 2], ["a", "a"], [1.0, None], "time point 2: probability None is not a number"),
    ([1, 2], ["a"], [1.0, 1.0], "t, value and p have 2, 1 and 2 entries"),
])
def test_bad_long_rows_are_typed_errors(t, value, p, message) -> None:  # noqa: ANN001
    with pytest.raises(ProbStreamError) as err:
        from_long(t, value, p, stream="s7")
    assert str(err.value).startswith("CEP-PROB-010: stream 's7': ")
    assert message in str(err.value)


@pytest.mark.parametrize("t, maps, message", [
    ([1, 1], [{"a": 1.0}, {"a": 1.0}], "time point 1 appears in 2 rows"),
    ([1, 2], [{"a": 1.0}, None], "time point 2: the probability map is NULL"),
    ([1, 2], [{"a": 1.0}, {}], "time point 2: the probability map is empty"),
    ([1, 2], [{"a": 1.0}, {"a": 0.2, "b": 0.2}], "time point 2: probabilities sum to 0.4"),
])
def test_bad_wide_rows_are_typed_errors(t, maps, message) -> None:  # noqa: ANN001
    with pytest.raises(ProbStreamError, match="CEP-PROB-010") as err:
        from_wide(t, maps)
    assert message in str(err.value)


def test_tolerance_and_layouts_agree() -> None:
    t = np.array([5, 5, 6], dtype=np.int64)
    p = np.array([0.3, 0.7 + 5e-7, 1.0])
    as_objects = from_long(t, np.array(["x", "y", "y"], dtype=object), p)
    as_strings = from_long(t, np.array(["x", "y", "y"]), p)  # numpy unicode: the adapters' fast path
    assert as_objects == as_strings == from_wide([5, 6], [{"x": 0.3, "y": 0.7 + 5e-7}, {"y": 1.0}])
    with pytest.raises(ProbStreamError, match="tolerance 1e-07"):
        from_long(t, ["x", "y", "y"], p, tolerance=1e-7)
    assert len(from_long([], [], [])) == 0


@pytest.mark.parametrize("seed", range(6))
def test_coded_values_build_the_stream_long_rows_build(seed: int) -> None:
    from cep.prob.stream import from_codes

    rng = np.random.default_rng(seed)
    names = np.array(["nothing", "b", "zz", "a", "unused"])
    n = int(rng.integers(1, 40))
    t, codes, p = [], [], []
    for ti in range(10, 10 + n):
        chosen = rng.choice(4, size=int(rng.integers(1, 5)), replace=False)
        weights = rng.random(len(chosen))
        t += [ti] * len(chosen)
        codes += chosen.tolist()
        p += (weights / weights.sum()).tolist()
    order = rng.permutation(len(t)) if seed % 2 else np.arange(len(t))  # sorted and not
    t_a, codes_a, p_a = np.array(t)[order], np.array(codes)[order], np.array(p)[order]
    want = from_long(t_a, names[codes_a], p_a)
    got = from_codes(t_a, codes_a, names.tolist(), p_a)
    assert got.values == want.values and got.t.tolist() == want.t.tolist()
    assert np.array_equal(got.probs, want.probs)


@pytest.mark.parametrize("t, codes, p, message", [
    ([1, 1, 2], [0, 0, 0], [0.5, 0.5, 1.0], "time point 1 lists value 'a' twice"),
    ([1, 1, 2], [0, 1, 0], [0.5, 0.4, 1.0], "time point 1: probabilities sum to 0.9"),
    ([2, 1], [0, 0], [1.0, 1.5], "time point 1: probability 1.5 is outside [0, 1]"),
    ([1, 3], [0, 0], [1.0, 1.0], "time points jump from 1 to 3"),
])
def test_bad_coded_rows_are_the_same_errors(t, codes, p, message) -> None:  # noqa: ANN001
    from cep.prob.stream import from_codes

    with pytest.raises(ProbStreamError, match="CEP-PROB-010: stream 's7': .*" + re.escape(message)):
        from_codes(np.array(t), np.array(codes), ["a", "b"], np.array(p), stream="s7")
