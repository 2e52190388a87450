"""The paper's synthetic stream (Sugiura et al., DASFAA 2015, section 6, line 266 of the seed text):
``synthetic_pstream(..., noise='paper')``; no JVM.

"Consider the case of alpha_1 = a_1. We randomly choose the occurrence probabilities of b_1,
c_1, and d_1 from the range [0, 0.1]. Then the probability of a_1 is given as
P(a_1) = 1 - sum P(alpha_1)."
"""

from __future__ import annotations

import numpy as np
import pytest

from cep.datasets.prob_streams import DOMAIN, synthetic_pstream, wide_maps
from cep.errors import InputDataError
from cep.prob import from_wide


def test_each_other_value_is_uniform_on_0_to_0_1_independently() -> None:
    s = synthetic_pstream(40_000, seed=5, noise="paper")
    assert s.values == DOMAIN
    np.testing.assert_allclose(s.probs.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    truth = s.probs.argmax(axis=1)
    others = np.sort(s.probs, axis=1)[:, :3]  # the three values that are not the true one
    assert others.min() >= 0.0 and others.max() <= 0.1
    # Each non-true probability is U[0, 0.1]: mean 0.05, variance 0.01 / 12.
    flat = np.array([np.delete(row, t) for row, t in zip(s.probs, truth)])
    assert abs(flat.mean() - 0.05) < 0.001
    assert abs(flat.var() - 0.01 / 12) < 0.00005
    # Independently of each other (the old model split one eps, making them dependent).
    corr = np.corrcoef(flat.T)
    assert np.all(np.abs(corr[np.triu_indices(3, 1)]) < 0.03)
    # So the true value is in [0.7, 1] with mean 0.85 (line 266: 1 minus their sum).
    top = s.probs[np.arange(len(s)), truth]
    assert top.min() >= 0.7 and top.max() <= 1.0 and abs(top.mean() - 0.85) < 0.002
    assert top.min() < 0.75  # values well below the old model's 0.9 do occur
    # The true value is uniform over the domain.
    assert np.all(np.abs(np.bincount(truth, minlength=4) / len(s) - 0.25) < 0.01)


def test_paper_noise_is_seeded_and_a_valid_stream() -> None:
    a = synthetic_pstream(500, seed=9, noise="paper")
    assert a == synthetic_pstream(500, seed=9, noise="paper")
    assert a == synthetic_pstream(500, seed=9)  # the paper's model is the default
    assert not a == synthetic_pstream(500, seed=9, noise="split")  # the other model
    assert from_wide(a.t, wide_maps(a)).values == a.values
    assert synthetic_pstream(3, seed=1, noise="paper", max_noise=0.0).probs.max(axis=1).tolist() == [1.0] * 3


@pytest.mark.parametrize("args, message", [
    ({"noise": "gauss"}, "noise must be one of 'paper', 'split', found 'gauss'"),
    ({"noise": "paper", "max_noise": 0.5},
     "noise 'paper' needs (len(domain) - 1) * max_noise <= 1 (the true value gets one minus the others), "
     "found 3 * 0.5"),
])
def test_bad_arguments_are_typed_errors(args: dict[str, object], message: str) -> None:
    with pytest.raises(InputDataError) as info:
        synthetic_pstream(10, seed=0, **args)  # type: ignore[arg-type]
    assert str(info.value) == f"CEP-DATA-001: {message}"
