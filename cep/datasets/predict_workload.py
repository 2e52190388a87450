"""The synthetic workload of P-ToPSS's evaluation, as we reconstruct it (seeded, vectorised).

Muthusamy, Liu and Jacobsen (DEBS 2010) evaluate predictive matching on ``N_cs = 1000``
composite subscriptions of length 10 over an *event pool* of 50 event values, each subscription
with 2 non-contiguous operators ``;`` (the other links are the contiguous ``,``), and event
streams drawn from the pool uniformly or from a Gaussian. The paper's text is not available to
us; what follows is our reading of those parameters (docs/predict-eval.md says the same):

* a primitive subscription is ``item = v`` for a pool value ``v`` in ``0 .. pool - 1``; the class
  of value ``v`` is ``V<v>`` with ``v`` zero-padded (``V07``), so the parser's automatic aliases
  of a repeated class (``V071``, ``V072``) can never collide with another class name;
* each subscription draws its ``length`` values independently (with replacement) from the same
  distribution as the events, and the positions of its ``followed`` ``;`` links uniformly without
  replacement among its ``length - 1`` links;
* events have ``ts = 0, 1, ...``, one partition (key ``None``) and one attribute ``item``;
  *uniform* draws ``item`` uniformly from the pool, *gaussian* from a normal distribution with
  mean ``(pool - 1) / 2`` and standard deviation ``sigma`` (default ``pool / 10``, our choice),
  rounded to the nearest integer and clipped to the pool.

How rare matches are follows from these choices: 10 primitives split by 2 ``;`` into 3
contiguous terms, one of which has at least 4 primitives, so under uniform draws a subscription
matches at most about once per ``50^4 = 6.25`` million events. The Gaussian concentrates both
the subscriptions and the events on the centre of the pool, and matches become frequent enough
to measure prediction quality (BENCHMARKS.md "predict_match accuracy").

Determinism: one ``numpy.random.default_rng(seed)`` draws, in this order, the subscription values
``(n_subscriptions, length)``, the link keys ``random((n_subscriptions, length - 1))`` (the
``followed`` smallest keys of a row are its ``;`` links) and the event items; the same arguments
always give the same workload (for the pinned numpy version).

Example:
    >>> w = synthetic_workload(3, 8, length=4, pool=5, followed=1, seed=7)
    >>> w.subscriptions[0]
    'PATTERN V4 ; V3, V3, V4 DEFINE V4 AS item = 4, V3 AS item = 3'
    >>> w.items.tolist(), len(w.events)
    ([2, 2, 2, 4, 4, 3, 3, 3], 8)
    >>> synthetic_workload(3, 8, length=4, pool=5, followed=1, seed=7).subscriptions == w.subscriptions
    True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cep.predict.errors import PredictArgumentError
from cep.predict.events import Events

__all__ = ["DISTRIBUTIONS", "SyntheticWorkload", "class_name", "draw_items", "subscription_text",
           "synthetic_workload"]

N_SUBSCRIPTIONS = 1000
"""The paper's number of composite subscriptions ``N_cs``."""
LENGTH = 10
"""The paper's subscription length (primitives per subscription)."""
POOL = 50
"""The paper's event pool (distinct event values)."""
FOLLOWED = 2
"""The paper's number of non-contiguous ``;`` operators per subscription."""
DISTRIBUTIONS = ("uniform", "gaussian")

_MAX_CELLS = 1 << 31


@dataclass(frozen=True, eq=False)
class SyntheticWorkload:
    """Subscriptions and one event stream (module docstring).

    Attributes:
        subscriptions: the subscription texts.
        values: ``(n_subscriptions, length)`` pool value of each step.
        followed: ``(n_subscriptions, length - 1)``, True where the link is ``;``.
        items: the ``item`` of each event.
        events: the events (``ts = 0, 1, ...``, one partition, attribute ``item``).
        distribution: ``'uniform'`` or ``'gaussian'``.
        sigma: the Gaussian's standard deviation (None for uniform).
    """

    subscriptions: tuple[str, ...]
    values: np.ndarray
    followed: np.ndarray
    items: np.ndarray
    events: Events
    distribution: str
    sigma: float | None


def class_name(value: int, pool: int) -> str:
    """The class of pool value ``value``: ``V`` and the value zero-padded to the pool's width.

    Example:
        >>> class_name(7, 50), class_name(7, 5), class_name(12, 1000)
        ('V07', 'V7', 'V012')
    """
    return f"V{value:0{len(str(pool - 1))}d}"


def subscription_text(values: np.ndarray | list[int], followed: np.ndarray | list[bool], pool: int) -> str:
    """The pattern text of one subscription: classes linked by ``,`` / ``;``, one DEFINE per value.

    Example:
        >>> subscription_text([3, 1, 3], [True, False], 5)
        'PATTERN V3 ; V1, V3 DEFINE V3 AS item = 3, V1 AS item = 1'
    """
    vals = [int(v) for v in values]
    body = class_name(vals[0], pool)
    for v, f in zip(vals[1:], followed):
        body += (" ; " if f else ", ") + class_name(v, pool)
    defines = ", ".join(f"{class_name(v, pool)} AS item = {v}" for v in dict.fromkeys(vals))
    return f"PATTERN {body} DEFINE {defines}"


def draw_items(rng: np.random.Generator, shape: int | tuple[int, ...], pool: int, distribution: str,
               sigma: float | None) -> np.ndarray:
    """Pool values drawn uniformly or from the clipped, rounded Gaussian (module docstring)."""
    if distribution == "uniform":
        return rng.integers(0, pool, size=shape, dtype=np.int64)
    x = rng.normal((pool - 1) / 2.0, sigma, size=shape)
    return np.clip(np.rint(x), 0, pool - 1).astype(np.int64)


def _check(n_subscriptions: int, n_events: int, length: int, pool: int, followed: int,
           distribution: str, sigma: float | None) -> float | None:
    for name, value, low in (("n_subscriptions", n_subscriptions, 0), ("n_events", n_events, 0),
                             ("length", length, 1), ("pool", pool, 1), ("followed", followed, 0)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise PredictArgumentError(f"argument {name}: expected an integer >= {low}, found {value!r}")
    if followed > length - 1:
        raise PredictArgumentError(f"argument followed: a subscription of length {length} has "
                                   f"{length - 1} links, found followed={followed}")
    if distribution not in DISTRIBUTIONS:
        raise PredictArgumentError(f"argument distribution: expected one of {', '.join(DISTRIBUTIONS)}, "
                                   f"found {distribution!r}")
    if n_subscriptions * length > _MAX_CELLS or n_events > _MAX_CELLS:
        raise PredictArgumentError(f"argument n_events / n_subscriptions: at most {_MAX_CELLS:,} "
                                   "values are drawn")
    if distribution == "uniform":
        return None
    sigma = pool / 10.0 if sigma is None else sigma
    if isinstance(sigma, bool) or not isinstance(sigma, (int, float, np.integer, np.floating)) \
            or not 0.0 < float(sigma) < float("inf"):
        raise PredictArgumentError(f"argument sigma: expected a positive number, found {sigma!r}")
    return float(sigma)


def synthetic_workload(n_subscriptions: int = N_SUBSCRIPTIONS, n_events: int = 100_000, *,
                       length: int = LENGTH, pool: int = POOL, followed: int = FOLLOWED,
                       distribution: str = "uniform", sigma: float | None = None,
                       seed: int = 0) -> SyntheticWorkload:
    """The paper's synthetic workload as we reconstruct it (module docstring).

    Args:
        n_subscriptions: ``N_cs``.
        n_events: events in the stream.
        length: primitives per subscription.
        pool: distinct event values.
        followed: ``;`` links per subscription (the others are ``,``).
        distribution: ``'uniform'`` or ``'gaussian'`` (subscription values and events alike).
        sigma: the Gaussian's standard deviation in pool indices (default ``pool / 10``).
        seed: seed of the one generator.

    Raises:
        PredictArgumentError: a parameter out of range (``CEP-PRED-011``).
    """
    sigma = _check(n_subscriptions, n_events, length, pool, followed, distribution, sigma)
    rng = np.random.default_rng(seed)
    values = draw_items(rng, (n_subscriptions, length), pool, distribution, sigma)
    keys = rng.random((n_subscriptions, length - 1))
    links = np.zeros((n_subscriptions, length - 1), dtype=bool)
    if followed:
        pick = np.argsort(keys, axis=1, kind="stable")[:, :followed]
        np.put_along_axis(links, pick, True, axis=1)
    items = draw_items(rng, n_events, pool, distribution, sigma)
    texts = tuple(subscription_text(v, f, pool) for v, f in zip(values.tolist(), links.tolist()))
    events = Events.from_columns(ts=np.arange(n_events, dtype=np.int64),
                                 keys=np.zeros(n_events, dtype=np.int64), attrs={"item": items})
    return SyntheticWorkload(texts, values, links, items, events, distribution, sigma)
