"""What a prediction returns, shared by the plain path (``answer``) and the composite one.

Example:
    >>> Prediction.__dataclass_fields__.keys() >= {"rows", "trained", "model", "states"}
    True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from cep.predict.events import Events
from cep.predict.model import InstanceState, Model
from cep.predict.subscription import Subscription

InstanceKey = tuple[Any, tuple[Any, ...]]


@dataclass(frozen=True, eq=False)
class Prediction:
    """What :func:`predict` returns.

    Attributes:
        rows: output columns (lists of equal length): ``key, instance, state, progress,
            probability, p_exact, matched`` (events: also ``id, ts``; keys: ``matches, events,
            last_ts``), only rows whose probability is at least the threshold.
        trained: the model trained on these events (counts add up across batches).
        model: the model the probabilities come from (``trained`` unless one was given).
        states: the state of every instance after these events, by ``(key, instance values)``.
    """

    rows: dict[str, list[Any]]
    trained: Model
    model: Model
    states: dict[InstanceKey, InstanceState]


def instance_keys(sub: Subscription, ev: Events, starts: np.ndarray) -> list[InstanceKey]:
    """``(key, instance values)`` of each instance starting at ``starts`` (NaN read as None)."""
    keys = ev.keys[starts].tolist() if len(starts) else []
    if not sub.instance_attrs:
        return [(k, ()) for k in keys]
    cols = [ev.column(a)[starts].tolist() for a in sub.instance_attrs]
    return [(k, tuple(_plain(c[i]) for c in cols)) for i, k in enumerate(keys)]


def _plain(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return None
    return v
