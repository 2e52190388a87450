"""P-ToPSS's synthetic workload as section 6 of the paper describes it (seeded, deterministic).

Muthusamy, Liu and Jacobsen (DEBS 2010), section 6. Unlike :mod:`cep.datasets.predict_workload`
(our earlier reconstruction, whose uniform events almost never complete a subscription), the
event stream *plants* partial and full matches:

* **Subscriptions**: ``N_cs`` subscriptions of ``Length_cs`` primitives, each primitive matching
  exactly one value of an event pool of ``N_ep`` values (``item = v``); ``N_non_contiguous_op``
  of the ``Length_cs - 1`` operators, chosen uniformly, are ``;``, the rest ``,``. *uniform_cs*
  draws the values uniformly from the pool, *gaussian_cs* from a Gaussian (mean the pool's
  centre, standard deviation ``pool / 10``: the paper gives no sigma, this is our choice),
  rounded and clipped to the pool. Defaults: ``N_cs = 1000``, ``Length_cs = 10``, ``N_ep = 50``,
  2 non-contiguous operators.
* **Events**: repeat until every subscription has its ``N_pm`` partial and ``N_fm`` full matches:
  with probability 1/2 append ``Length_irr ~ U[1, 100]`` *irrelevant* events (values
  ``N_ep .. 2 N_ep - 1``, which no primitive matches); otherwise pick a subscription whose quota
  is not met uniformly, then one of its unmet kinds (partial or full) uniformly, and append its
  first ``Length_pm`` values (partial) or all its values (full). *uniform_pub* draws ``Length_pm``
  uniformly from ``[1, Length_cs - 1]``, *gaussian_pub* from a Gaussian over the same range
  (mean its centre, standard deviation a quarter of its width: our choice), rounded and
  clipped. Defaults ``N_pm = N_fm = 20``. A planted sequence is contiguous, so it matches ``,``
  and ``;`` alike; planted events may also advance other subscriptions (the paper says so).

Every plant is recorded (:attr:`PaperWorkload.plants`), so tests can check it is in the stream.

Determinism: one ``numpy.random.default_rng(seed)`` draws the subscription values, the operator
keys, then the stream decisions in order; the same arguments give the same workload.

Example:
    >>> w = paper_workload(3, length=4, pool=5, followed=1, n_partial=1, n_full=1, seed=1)
    >>> len(w.subscriptions), len(w.plants), w.subscriptions[0]
    (3, 6, 'PATTERN V2, V2 ; V3, V4 DEFINE V2 AS item = 2, V3 AS item = 3, V4 AS item = 4')
    >>> w.plants[:2].tolist()          # (position, subscription, length, full)
    [[127, 0, 4, 1], [131, 0, 1, 0]]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cep.datasets.predict_workload import draw_items, subscription_text
from cep.predict.errors import PredictArgumentError
from cep.predict.events import Events

__all__ = ["PUB_DISTRIBUTIONS", "SUB_DISTRIBUTIONS", "PaperWorkload", "paper_workload"]

SUB_DISTRIBUTIONS = ("uniform_cs", "gaussian_cs")
PUB_DISTRIBUTIONS = ("uniform_pub", "gaussian_pub")
IRRELEVANT_MAX = 100


@dataclass(frozen=True, eq=False)
class PaperWorkload:
    """Subscriptions and the planted event stream (module docstring).

    Attributes:
        subscriptions: the subscription texts.
        values: ``(N_cs, Length_cs)`` pool value of each step.
        followed: ``(N_cs, Length_cs - 1)`` True where the operator is ``;``.
        items: the ``item`` of each event (``>= pool``: irrelevant).
        events: ``ts = 0, 1, ...``, one partition, attribute ``item``.
        plants: ``(n_plants, 4)`` int64 rows ``(position, subscription, length, full)``: the
            events ``position .. position + length - 1`` are the subscription's first ``length``
            values; ``full`` is 1 for a full match.
    """

    subscriptions: tuple[str, ...]
    values: np.ndarray
    followed: np.ndarray
    items: np.ndarray
    events: Events
    plants: np.ndarray


def _positive(name: str, value: object, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise PredictArgumentError(f"argument {name}: expected an integer >= {low}, found {value!r}")
    return int(value)


def paper_workload(n_subscriptions: int = 1000, *, length: int = 10, pool: int = 50, followed: int = 2,
                   sub_distribution: str = "uniform_cs", pub_distribution: str = "uniform_pub",
                   n_partial: int = 20, n_full: int = 20, seed: int = 0) -> PaperWorkload:
    """The section-6 workload (module docstring).

    Args:
        n_subscriptions: ``N_cs``.
        length: ``Length_cs`` (at least 2: a partial match has 1 .. length - 1 events).
        pool: ``N_ep``.
        followed: ``N_non_contiguous_op``.
        sub_distribution: ``'uniform_cs'`` or ``'gaussian_cs'``.
        pub_distribution: ``'uniform_pub'`` or ``'gaussian_pub'`` (partial-match lengths).
        n_partial, n_full: ``N_pm`` and ``N_fm`` per subscription.
        seed: seed of the one generator.

    Raises:
        PredictArgumentError: a parameter out of range (``CEP-PRED-011``).
    """
    n_subscriptions = _positive("n_subscriptions", n_subscriptions, 1)
    length = _positive("length", length, 2)
    pool = _positive("pool", pool, 1)
    followed = _positive("followed", followed, 0)
    n_partial = _positive("n_partial", n_partial, 0)
    n_full = _positive("n_full", n_full, 0)
    if followed > length - 1:
        raise PredictArgumentError(f"argument followed: at most {length - 1} for length {length}, "
                                   f"found {followed}")
    if sub_distribution not in SUB_DISTRIBUTIONS:
        raise PredictArgumentError(f"argument sub_distribution: expected one of "
                                   f"{', '.join(SUB_DISTRIBUTIONS)}, found {sub_distribution!r}")
    if pub_distribution not in PUB_DISTRIBUTIONS:
        raise PredictArgumentError(f"argument pub_distribution: expected one of "
                                   f"{', '.join(PUB_DISTRIBUTIONS)}, found {pub_distribution!r}")
    rng = np.random.default_rng(seed)
    values = draw_items(rng, (n_subscriptions, length), pool,
                        "uniform" if sub_distribution == "uniform_cs" else "gaussian", pool / 10.0)
    keys = rng.random((n_subscriptions, length - 1))
    links = np.zeros((n_subscriptions, length - 1), dtype=bool)
    if followed:
        np.put_along_axis(links, np.argsort(keys, axis=1, kind="stable")[:, :followed], True, axis=1)
    left = np.zeros((n_subscriptions, 2), dtype=np.int64)
    left[:, 0], left[:, 1] = n_partial, n_full
    open_subs = list(range(n_subscriptions)) if n_partial + n_full else []
    where = {s: s for s in open_subs}                    # subscription -> index in open_subs
    chunks: list[np.ndarray] = []
    plants: list[tuple[int, int, int, int]] = []
    pos = 0
    lo, hi = 1, length - 1
    while open_subs:
        if rng.random() < 0.5:
            run = int(rng.integers(1, IRRELEVANT_MAX + 1))
            chunks.append(rng.integers(pool, 2 * pool, size=run, dtype=np.int64))
            pos += run
            continue
        s = open_subs[int(rng.integers(0, len(open_subs)))]
        kinds = [k for k in (0, 1) if left[s, k] > 0]
        kind = kinds[int(rng.integers(0, len(kinds)))]
        if kind == 1:
            n = length
        elif pub_distribution == "uniform_pub":
            n = int(rng.integers(lo, hi + 1))
        else:
            n = int(np.clip(np.rint(rng.normal((lo + hi) / 2.0, max((hi - lo) / 4.0, 1e-9))), lo, hi))
        chunks.append(values[s, :n].copy())
        plants.append((pos, s, n, kind))
        pos += n
        left[s, kind] -= 1
        if left[s].sum() == 0:                           # swap-remove s from the open list
            i, last = where.pop(s), open_subs[-1]
            open_subs[i] = last
            open_subs.pop()
            if last != s:
                where[last] = i
    items = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64)
    texts = tuple(subscription_text(v, f, pool) for v, f in zip(values.tolist(), links.tolist()))
    events = Events.from_columns(ts=np.arange(len(items), dtype=np.int64),
                                 keys=np.zeros(len(items), dtype=np.int64), attrs={"item": items})
    return PaperWorkload(texts, values, links, items, events,
                         np.array(plants, dtype=np.int64).reshape(-1, 4))
