"""Trained models and instance states as versioned, checksummed blobs (never pickled).

A :class:`Model` is what training produces and what a later query reads: per sequence machine
of one subscription, the transition counts ``(from_mask, sig, to_mask, count)`` and how often
each signature occurred. Counts add up, so training on two batches (the second starting from the
states the first ended in) gives exactly the model of one pass (:meth:`Model.merge`).

An :class:`InstanceState` is where one instance stands: per machine its state mask (and, with time
conditions, its live configurations) and, per ``&`` node, which parts have matched since that
node last matched.

Both serialise to ``MAGIC | version (u16) | sha256(payload) | payload`` where the payload is
UTF-8 JSON of integers and strings only. :meth:`Model.from_bytes` and
:meth:`InstanceState.from_bytes` check the magic, the version, the checksum and the shapes and
raise :class:`ModelFormatError`
(``CEP-PRED-012``) for anything else; a model of another subscription is refused too.

Example:
    >>> import numpy as np
    >>> from cep.predict.run import TransitionCounts
    >>> leaf = LeafModel(TransitionCounts.from_triples([1], [2], [3]), np.array([2]), np.array([1]))
    >>> m = Model("PATTERN A, B", (leaf,))
    >>> Model.from_bytes(m.to_bytes()) == m
    True
    >>> Model.from_bytes(b"junk")
    Traceback (most recent call last):
    ...
    cep.predict.errors.ModelFormatError: CEP-PRED-012: not a predict_match model (bad magic)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cep.blob import pack, unpack
from cep.predict.errors import ModelFormatError
from cep.predict.run import TransitionCounts

MODEL_MAGIC = b"CEPPRM"
STATE_MAGIC = b"CEPPRS"
FORMAT_VERSION = 1


@dataclass(frozen=True, eq=False)
class LeafModel:
    """Training data of one sequence machine."""

    counts: TransitionCounts
    freq_sig: np.ndarray
    freq_count: np.ndarray

    @classmethod
    def empty(cls) -> "LeafModel":
        """Nothing observed."""
        z = np.zeros(0, dtype=np.int64)
        return cls(TransitionCounts.empty(), z, z)

    def merge(self, other: "LeafModel") -> "LeafModel":
        """The model of both trainings together."""
        sig = np.r_[self.freq_sig, other.freq_sig].astype(np.int64)
        cnt = np.r_[self.freq_count, other.freq_count].astype(np.int64)
        uniq, inv = np.unique(sig, return_inverse=True)
        total = np.bincount(inv.ravel(), weights=cnt, minlength=len(uniq)).astype(np.int64)
        return LeafModel(self.counts.merge(other.counts), uniq, total)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, LeafModel) and self.counts == other.counts
                and np.array_equal(self.freq_sig, other.freq_sig)
                and np.array_equal(self.freq_count, other.freq_count))


@dataclass(frozen=True, eq=False)
class Model:
    """A trained model of one subscription (module docstring)."""

    subscription: str
    leaves: tuple[LeafModel, ...]

    def merge(self, other: "Model") -> "Model":
        """The model of both trainings (same subscription)."""
        if other.subscription != self.subscription or len(other.leaves) != len(self.leaves):
            raise ModelFormatError("cannot merge models of different subscriptions")
        return Model(self.subscription, tuple(a.merge(b) for a, b in zip(self.leaves, other.leaves)))

    @property
    def events(self) -> int:
        """Number of training events (of the first machine)."""
        return int(self.leaves[0].freq_count.sum()) if self.leaves else 0

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Model) and self.subscription == other.subscription
                and len(self.leaves) == len(other.leaves)
                and all(a == b for a, b in zip(self.leaves, other.leaves)))

    def to_bytes(self) -> bytes:
        """The versioned, checksummed serialisation."""
        payload = {"subscription": self.subscription,
                   "leaves": [{"from": leaf.counts.from_mask.tolist(), "sig": leaf.counts.sig.tolist(),
                               "to": leaf.counts.to_mask.tolist(), "count": leaf.counts.count.tolist(),
                               "freq_sig": leaf.freq_sig.tolist(), "freq_count": leaf.freq_count.tolist()}
                              for leaf in self.leaves]}
        return pack(MODEL_MAGIC, FORMAT_VERSION, payload)

    @classmethod
    def from_bytes(cls, blob: bytes | bytearray | memoryview,
                   subscription: str | None = None) -> "Model":
        """A model from its blob (:meth:`to_bytes`); with ``subscription``, also check that it
        was trained for that text.

        Raises:
            ModelFormatError: bad magic, version, checksum or shape, or another subscription.
        """
        data = unpack(MODEL_MAGIC, FORMAT_VERSION, blob, "model", ModelFormatError,
                      "predict_match")
        try:
            text = data["subscription"]
            leaves = []
            for leaf in data["leaves"]:
                cols = [np.array(leaf[k], dtype=np.int64) for k in ("from", "sig", "to", "count")]
                fs = np.array(leaf["freq_sig"], dtype=np.int64)
                fc = np.array(leaf["freq_count"], dtype=np.int64)
                if (len({len(c) for c in cols}) != 1 or len(fs) != len(fc)
                        or (cols[3] < 0).any() or (fc < 0).any()):
                    raise ValueError("column lengths differ or counts are negative")
                leaves.append(LeafModel(TransitionCounts(*cols), fs, fc))
            if not isinstance(text, str):
                raise ValueError("subscription is not a string")
        except (KeyError, TypeError, ValueError, OverflowError) as err:
            raise ModelFormatError(f"model payload is malformed: {err}") from None
        if subscription is not None and text != subscription:
            raise ModelFormatError(f"the model was trained for {text!r}, not for {subscription!r}")
        return cls(text, tuple(leaves))


@dataclass(frozen=True)
class InstanceState:
    """Where one instance stands (module docstring).

    Attributes:
        masks: per machine, the state mask.
        configs: per machine, its live configurations ``(position, times)`` (None for machines
            without time conditions).
        flags: per ``&`` node (in tree order), a bit per part that has matched.
        matches: how many times the subscription has matched in this instance so far.
        events: how many events the instance has seen.
        last_ts: the timestamp of its last event, or None.
    """

    masks: tuple[int, ...]
    configs: tuple[tuple[tuple[int, tuple], ...] | None, ...]
    flags: tuple[int, ...]
    matches: int = 0
    events: int = 0
    last_ts: int | float | None = None

    def to_bytes(self) -> bytes:
        """The versioned, checksummed serialisation."""
        payload = {"masks": list(self.masks),
                   "configs": [None if c is None else [[j, list(t)] for j, t in c] for c in self.configs],
                   "flags": list(self.flags), "matches": self.matches, "events": self.events,
                   "last_ts": self.last_ts}
        return pack(STATE_MAGIC, FORMAT_VERSION, payload)

    @classmethod
    def from_bytes(cls, blob: bytes | bytearray | memoryview) -> "InstanceState":
        """An instance state from its blob (:meth:`to_bytes`).

        Raises:
            ModelFormatError: bad magic, version, checksum or shape.
        """
        data = unpack(STATE_MAGIC, FORMAT_VERSION, blob, "instance state", ModelFormatError,
                      "predict_match")
        try:
            masks = tuple(int(m) for m in data["masks"])
            configs = tuple(None if c is None else tuple(
                (int(j), tuple(None if x is None else x for x in t)) for j, t in c)
                for c in data["configs"])
            flags = tuple(int(f) for f in data["flags"])
            if len(configs) != len(masks):
                raise ValueError("masks and configs differ in length")
            return cls(masks, configs, flags, int(data["matches"]), int(data["events"]),
                       data["last_ts"])
        except (KeyError, TypeError, ValueError) as err:
            raise ModelFormatError(f"instance state payload is malformed: {err}") from None
