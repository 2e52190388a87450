"""Seeded synthetic probabilistic streams (Sugiura et al., DASFAA 2015, section 6).

The paper (section 6) generates a certain stream of 10,000 values from ``V = {a, b, c, d}``
and, at every time point, "randomly choose[s] the occurrence probabilities" of the values
other than the true one "from the range [0, 0.1]"; the true value gets 1 minus their sum.
Two noise models (argument ``noise``):

- ``'paper'`` (the default, the paper's): every time point ``t = 0 .. n - 1``
  has one *true* value drawn uniformly from the domain; every *other* value gets its own
  probability ``~ Uniform[0, max_noise]``, independently; the true value gets one minus
  their sum (so in ``[1 - (k - 1) max_noise, 1]``: ``[0.7, 1]`` for four values and 0.1);
- ``'split'`` (our pre-paper reading, kept for the benchmark tables measured on it): every time point has one noise level ``eps_t ~ Uniform[0, max_noise]``; the true value
  gets ``1 - eps_t`` and ``eps_t`` is split over the other values in proportion to independent
  weights ``~ Uniform(0, 1]``, so the true value is in ``[1 - max_noise, 1]``.

Time points are independent, as the paper's model requires. Rows sum to 1 up to rounding
(a few ulp). With ``max_noise = 0`` the stream is deterministic (one value with probability 1
per time point).

Determinism: one ``numpy.random.default_rng(seed)`` draws, in this order, all true values
(``integers``), then for ``'paper'`` all noise probabilities (``uniform``, shape
``(n, len(domain))``, the true value's column discarded), for ``'split'`` all noise levels
(``uniform``) and all weights (``random``, shape ``(n, len(domain))``). The same
``(n, seed, domain, max_noise, noise)`` always gives the same stream (for the pinned numpy version); the domain is sorted first, so its order does not matter. The
work is vectorised over all time points (``10**7`` time points take a few seconds and about
``8 * n * len(domain)`` bytes).

:func:`long_columns` and :func:`wide_maps` turn a :class:`~cep.prob.stream.ProbStream` into
the two table layouts of :mod:`cep.prob.stream` (long ``(t, value, p)`` and wide
``(t, {value: p})``).

Example:
    >>> s = synthetic_pstream(5, seed=1)
    >>> s.values, s.t.tolist()
    (('a', 'b', 'c', 'd'), [0, 1, 2, 3, 4])
    >>> bool(np.allclose(s.probs.sum(axis=1), 1.0)), bool((s.probs.max(axis=1) >= 0.7).all())
    (True, True)
    >>> synthetic_pstream(5, seed=1) == s
    True
    >>> p = synthetic_pstream(1000, seed=1, noise="paper")
    >>> bool((p.probs.max(axis=1) >= 0.7).all()), bool((np.sort(p.probs, axis=1)[:, :3] <= 0.1).all())
    (True, True)
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from cep.errors import InputDataError
from cep.prob.stream import ProbStream

__all__ = ["DOMAIN", "MAX_NOISE", "NOISE_MODELS", "long_columns", "synthetic_pstream", "wide_maps"]

DOMAIN: tuple[str, ...] = ("a", "b", "c", "d")
"""The paper's domain."""

MAX_NOISE = 0.1
"""The paper's upper bound of each non-true value's probability ('paper') or of the noise level ('split')."""

NOISE_MODELS = ("paper", "split")
"""The noise models of :func:`synthetic_pstream` (module docstring)."""

# The probability matrix is materialised: bound it well below anything that could fit a test.
_MAX_CELLS = 1 << 34
_MAX_DOMAIN = 10_000


def _check_int(name: str, value: object, *, low: int = 0) -> int:
    if isinstance(value, bool):
        raise InputDataError(f"{name} must be an integer >= {low}, found {value!r} (bool)")
    try:
        number = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise InputDataError(f"{name} must be an integer >= {low}, found {value!r} "
                             f"({type(value).__name__})") from None
    if number < low:
        raise InputDataError(f"{name} must be an integer >= {low}, found {number}")
    return number


def _check_domain(domain: object) -> tuple[str, ...]:
    if isinstance(domain, (str, bytes)) or not isinstance(domain, Sequence):
        raise InputDataError(f"domain must be a tuple of at least 2 distinct non-empty strings, "
                             f"found {domain!r}")
    values = tuple(domain)
    bad = [v for v in values if not isinstance(v, str) or not v]
    if bad:
        raise InputDataError(f"domain values must be non-empty strings, found {bad[0]!r}")
    if len(set(values)) != len(values):
        twice = next(v for v in values if values.count(v) > 1)
        raise InputDataError(f"domain values must be distinct, found {twice!r} twice")
    if len(values) < 2:
        raise InputDataError(f"domain must have at least 2 values (one true value and at least "
                             f"one that noise can go to), found {values!r}")
    if len(values) > _MAX_DOMAIN:
        raise InputDataError(f"domain must have at most {_MAX_DOMAIN:,} values, found "
                             f"{len(values):,}")
    return tuple(sorted(values))


def synthetic_pstream(n: int, *, seed: int, domain: tuple[str, ...] = DOMAIN,
                      max_noise: float = MAX_NOISE, noise: str = "paper") -> ProbStream:
    """A seeded synthetic probabilistic stream of ``n`` time points (module docstring).

    Args:
        n: the number of time points (``t = 0 .. n - 1``), at least 0.
        seed: seed of ``numpy.random.default_rng`` (an integer >= 0).
        domain: the values (at least 2 distinct non-empty strings; sorted in the result).
        max_noise: upper bound, in ``[0, 1]``, of each other value's probability
            (``'paper'``; then ``(len(domain) - 1) * max_noise <= 1``) or of the per-time-point
            noise level (``'split'``).
        noise: ``'paper'`` (default: section 6 of the paper) or ``'split'`` (module docstring).

    Returns:
        The :class:`~cep.prob.stream.ProbStream` (``stream`` is ``""``).

    Raises:
        InputDataError: an argument breaks the rules above (``CEP-DATA-001``).

    Example:
        >>> s = synthetic_pstream(3, seed=7, domain=("y", "x"), max_noise=0.0)
        >>> s.values, s.probs.sum(axis=1).tolist(), sorted(set(s.probs.ravel().tolist()))
        (('x', 'y'), [1.0, 1.0, 1.0], [0.0, 1.0])
        >>> synthetic_pstream(3, seed=7, max_noise=1.5)
        Traceback (most recent call last):
        ...
        cep.errors.InputDataError: CEP-DATA-001: max_noise must be a number in [0, 1], found 1.5
    """
    n = _check_int("n", n)
    seed = _check_int("seed", seed)
    values = _check_domain(domain)
    numeric = (int, float, np.integer, np.floating)
    if (isinstance(max_noise, bool) or not isinstance(max_noise, numeric)
            or not math.isfinite(max_noise) or not 0.0 <= max_noise <= 1.0):
        raise InputDataError(f"max_noise must be a number in [0, 1], found {max_noise!r}")
    if noise not in NOISE_MODELS:
        raise InputDataError(f"noise must be one of {', '.join(map(repr, NOISE_MODELS))}, found {noise!r}")
    k = len(values)
    if noise == "paper" and (k - 1) * float(max_noise) > 1.0:
        raise InputDataError(f"noise 'paper' needs (len(domain) - 1) * max_noise <= 1 (the true value "
                             f"gets one minus the others), found {k - 1} * {max_noise}")
    if n * k > _MAX_CELLS:
        raise InputDataError(f"n * len(domain) must be at most {_MAX_CELLS:,} (the probability "
                             f"matrix is held in memory), found {n:,} * {k}")
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, k, size=n)
    rows = np.arange(n)
    if noise == "paper":
        # Section 6: each other value's probability ~ U[0, max_noise], independently; the true
        # value gets one minus their sum.
        probs = rng.uniform(0.0, float(max_noise), size=(n, k))
        probs[rows, truth] = 0.0
        probs[rows, truth] = 1.0 - probs.sum(axis=1)
        return ProbStream(np.arange(n, dtype=np.int64), values, probs)
    eps = rng.uniform(0.0, float(max_noise), size=n)
    # Weights in (0, 1] (never all zero), built in place in the result matrix: the true value's
    # column is zeroed, the rest scaled to sum to eps_t, then the true value gets 1 - eps_t.
    probs = rng.random((n, k))
    np.subtract(1.0, probs, out=probs)
    probs[rows, truth] = 0.0
    probs *= (eps / probs.sum(axis=1))[:, None]
    probs[rows, truth] = 1.0 - eps
    return ProbStream(np.arange(n, dtype=np.int64), values, probs)


def long_columns(stream: ProbStream, *, drop_zero: bool = True) -> dict[str, np.ndarray]:
    """The stream in long form: columns ``t`` (int64), ``value`` (object, str), ``p`` (float64).

    Rows are ordered by ``(t, value)``; with ``drop_zero`` a value whose probability is 0 at a
    time point has no row there (the long layout reads a missing row as probability 0), so
    :func:`cep.prob.stream.from_long` gives the stream back (its ``values`` are then the values
    with a non-zero probability somewhere).

    Example:
        >>> from cep.prob.stream import from_long
        >>> s = from_long([0, 0, 1], ["a", "b", "b"], [0.25, 0.75, 1.0])
        >>> cols = long_columns(s)
        >>> cols["t"].tolist(), cols["value"].tolist(), cols["p"].tolist()
        ([0, 0, 1], ['a', 'b', 'b'], [0.25, 0.75, 1.0])
        >>> len(long_columns(s, drop_zero=False)["p"])
        4
    """
    n, k = len(stream.t), len(stream.values)
    t = np.repeat(np.asarray(stream.t, dtype=np.int64), k)
    value = np.array(stream.values, dtype=object)[np.tile(np.arange(k), n)]
    p = np.ascontiguousarray(stream.probs, dtype=np.float64).reshape(n * k)
    if drop_zero:
        keep = p != 0.0
        t, value, p = t[keep], value[keep], p[keep]
    return {"t": t, "value": value, "p": p}


def wide_maps(stream: ProbStream) -> list[dict[str, float]]:
    """The stream in wide form: one ``{value: p}`` dict per time point, zero entries omitted.

    Example:
        >>> from cep.prob.stream import from_wide
        >>> s = from_wide([3, 4], [{"a": 0.5, "b": 0.5}, {"b": 1.0}])
        >>> wide_maps(s)
        [{'a': 0.5, 'b': 0.5}, {'b': 1.0}]
        >>> from_wide(s.t, wide_maps(s)) == s
        True
    """
    values = stream.values
    return [{v: p for v, p in zip(values, row) if p != 0.0} for row in stream.probs.tolist()]
