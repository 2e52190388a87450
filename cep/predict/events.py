"""The events a subscription runs over, their instances and their signatures.

:class:`Events` holds one or more partitions (``keys``) of events as columns, sorted by
``(key, ts)`` with ties kept in input order (DESIGN.md section 4: ``pos`` is the rank in that
order). A subscription with join variables or ``[attr]`` splits every partition further into
*instances* (P-ToPSS table 2: one instance per binding of the variables): :func:`instances`
gives each event the number of its instance and reorders the events so that every instance is
contiguous and in time order; ``,`` then means the next event *of the same instance*.

:func:`signatures` evaluates every primitive subscription once over all events (vectorised,
:mod:`cep.match.compile.expr`: SQL three-valued logic, NULL is not a match) and encodes each event as a
*signature*, the bits of the primitives it satisfies; the distinct signatures are the symbols
the machines read.

Example:
    >>> from cep.predict.subscription import compile_subscription
    >>> sub = compile_subscription("PATTERN F, F ; S DEFINE F AS status = 'denied', S AS status = 'ok'")
    >>> ev = Events.from_columns(ts=[3, 1, 2], keys=["u", "u", "u"],
    ...                          attrs={"status": ["ok", "denied", "denied"]})
    >>> ev.ts.tolist(), ev.attrs["status"].tolist()
    ([1, 2, 3], ['denied', 'denied', 'ok'])
    >>> sym, sigs = signatures(sub, ev)
    >>> sym.tolist(), sigs.tolist()
    ([0, 0, 1], [1, 2])
"""

from __future__ import annotations

import datetime
import decimal
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence as Seq

import numpy as np

from cep.match.compile.expr import column_value, compile_expr
from cep.predict.errors import PredictEventsError, PredictLimitError
from cep.predict.subscription import Subscription

MAX_PRIMITIVES = 63


@dataclass(frozen=True, eq=False)
class Events:
    """Events sorted by ``(key, ts)``; attribute names are lower-cased.

    Attributes:
        ts: timestamps: int64 (microseconds for TIMESTAMP columns, raw units otherwise) or float64.
        keys: the partition key of each event (object array).
        ids: event ids (object array) or None.
        types: the type column (object array) or None.
        attrs: lower-cased attribute name -> column.
        key_starts: positions where a new key starts (the first is 0).
    """

    ts: np.ndarray
    keys: np.ndarray
    ids: np.ndarray | None
    types: np.ndarray | None
    attrs: Mapping[str, np.ndarray]
    key_starts: np.ndarray = field(repr=False)

    def __len__(self) -> int:
        return len(self.ts)

    @classmethod
    def from_columns(cls, *, ts: Any, keys: Any = None, ids: Any = None, types: Any = None,
                     attrs: Mapping[str, Any] | None = None) -> "Events":
        """Build and sort events from columns (lists or arrays of equal length).

        Raises:
            PredictEventsError: unequal lengths or a NULL timestamp (``CEP-PRED-010``).
        """
        t = _timestamps(ts)
        n = len(t)
        key_arr = np.full(n, None, dtype=object) if keys is None else _objects(keys, "keys", n)
        id_arr = None if ids is None else _objects(ids, "ids", n)
        type_arr = None if types is None else _objects(types, "types", n)
        columns: dict[str, np.ndarray] = {}
        for name, values in (attrs or {}).items():
            arr = np.asarray(values) if not isinstance(values, np.ndarray) else values
            if arr.dtype.kind not in "fiubM":
                arr = _objects(values, name, n)
            if len(arr) != n:
                raise PredictEventsError(f"column {name!r} has {len(arr)} rows, expected {n}")
            columns[name.lower()] = arr
        key_codes = factorize(key_arr)
        order = np.lexsort((np.arange(n), t, key_codes)) if n else np.arange(0)
        if n and not np.array_equal(order, np.arange(n)):
            t, key_arr, key_codes = t[order], key_arr[order], key_codes[order]
            id_arr = None if id_arr is None else id_arr[order]
            type_arr = None if type_arr is None else type_arr[order]
            columns = {k: v[order] for k, v in columns.items()}
        starts = np.flatnonzero(np.r_[True, key_codes[1:] != key_codes[:-1]]) if n else np.zeros(0, np.int64)
        return cls(t, key_arr, id_arr, type_arr, columns, starts.astype(np.int64))

    def take(self, order: np.ndarray) -> "Events":
        """The events reordered by ``order`` (key starts recomputed from the keys)."""
        keys = self.keys[order]
        codes = factorize(keys)
        n = len(order)
        starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]]) if n else np.zeros(0, np.int64)
        return Events(self.ts[order], keys, None if self.ids is None else self.ids[order],
                      None if self.types is None else self.types[order],
                      {k: v[order] for k, v in self.attrs.items()}, starts.astype(np.int64))

    def column(self, name: str) -> np.ndarray:
        """Attribute ``name`` (case-insensitive), with the columns that exist in the error."""
        key = name.lower()
        if key in self.attrs:
            return self.attrs[key]
        if key == "ts":
            return self.ts
        if key == "type" and self.types is not None:
            return self.types
        raise PredictEventsError(f"unknown column {name!r}; the events have: "
                                 f"{', '.join(sorted(self.attrs)) or '(none)'}")


def _timestamps(ts: Any) -> np.ndarray:
    arr = np.asarray(ts)
    if arr.dtype.kind == "M":
        if np.isnat(arr).any():
            raise PredictEventsError(f"timestamp is NULL at row {int(np.flatnonzero(np.isnat(arr))[0])}")
        return arr.astype("datetime64[us]").astype(np.int64)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64)
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr)
        if bad.any():
            raise PredictEventsError(f"timestamp is NULL or not finite at row {int(np.flatnonzero(bad)[0])}")
        return arr.astype(np.float64)
    if arr.dtype.kind == "b":
        raise PredictEventsError("timestamps must be numbers or TIMESTAMP values, found booleans")
    values = list(arr.tolist()) if arr.ndim else []
    for i, v in enumerate(values):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            raise PredictEventsError(f"timestamp is NULL at row {i}")
    if values and all(isinstance(v, datetime.datetime) for v in values):
        return _timestamps(np.array(values, dtype="datetime64[us]"))
    if all(isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool) for v in values):
        if all(isinstance(v, int) for v in values):
            return _timestamps(np.array(values, dtype=np.int64))
        return _timestamps(np.array([float(v) for v in values], dtype=np.float64))
    # Mixed or non-temporal values: name the first offender rather than guessing a conversion.
    temporal = isinstance(values[0], datetime.datetime)
    for i, v in enumerate(values):
        number = isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool)
        if not (isinstance(v, datetime.datetime) if temporal else number):
            raise PredictEventsError(
                f"timestamps must be numbers or TIMESTAMP values of one kind, found {type(v).__name__} "
                f"{v!r} at row {i}")
    raise PredictEventsError("timestamps must be numbers or TIMESTAMP values")  # pragma: no cover


def _objects(values: Any, name: str, n: int) -> np.ndarray:
    if isinstance(values, np.ndarray) and values.dtype == object:
        arr = values
    else:
        arr = np.empty(len(values), dtype=object)
        arr[:] = list(values)
    if len(arr) != n:
        raise PredictEventsError(f"column {name!r} has {len(arr)} rows, expected {n}")
    return arr


def factorize(values: np.ndarray) -> np.ndarray:
    """Dense int64 codes of ``values`` in order of first appearance; NULL (None/NaN) is one value."""
    arr = np.asarray(values)
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind in "iub":
        _, first, inv = np.unique(arr, return_index=True, return_inverse=True)
        rank = np.argsort(np.argsort(first, kind="stable"), kind="stable")
        return rank[inv].astype(np.int64)
    if arr.dtype == object and (arr == None).all():  # noqa: E711 -- elementwise: no keys at all
        return np.zeros(n, dtype=np.int64)
    # Object keys (strings, mixed, None): a dict pass; keys are per partition, few distinct values.
    codes = np.empty(n, dtype=np.int64)
    seen: dict[Any, int] = {}
    for i, v in enumerate(arr.tolist()):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            v = _NULL
        code = seen.get(v)
        if code is None:
            code = seen[v] = len(seen)
        codes[i] = code
    return codes


class _Null:
    def __repr__(self) -> str:  # pragma: no cover
        return "NULL"


_NULL = _Null()


def instances(sub: Subscription, events: Events) -> tuple[Events, np.ndarray]:
    """Split each partition into the subscription's instances (one per join-variable binding).

    Returns:
        ``(events, starts)``: the events reordered so that every instance is contiguous and in
        time order (instances of a key in order of their first event), and the positions where
        an instance starts. Without join variables the instances are the partitions.
    """
    if not sub.instance_attrs or len(events) == 0:
        return events, events.key_starts
    codes = factorize(events.keys)
    parts = [codes]
    for attr in sub.instance_attrs:
        parts.append(factorize(events.column(attr)))
    combined = np.zeros(len(events), dtype=np.int64)
    for part in parts:
        combined = factorize(combined * (int(part.max()) + 1) + part)
    n = len(events)
    first = np.full(combined.max() + 1, n, dtype=np.int64)
    np.minimum.at(first, combined, np.arange(n))
    order = np.lexsort((np.arange(n), first[combined], codes))
    reordered = events.take(order)
    inst = combined[order]
    starts = np.flatnonzero(np.r_[True, inst[1:] != inst[:-1]]).astype(np.int64)
    return reordered, starts


def signatures(sub: Subscription, events: Events) -> tuple[np.ndarray, np.ndarray]:
    """Each event's symbol and each symbol's signature (bits of the primitives it satisfies).

    Returns:
        ``(symbol, sigs)``: int32 symbol per event, and the int64 signature of each symbol,
        symbols numbered in increasing signature order.

    Raises:
        PredictEventsError: a primitive reads a column that does not exist, or a class without
            DEFINE meets events without a type column (``CEP-PRED-010``).
        PredictLimitError: more than 63 primitives (``CEP-PRED-020``).
    """
    if len(sub.primitives) > MAX_PRIMITIVES:
        raise PredictLimitError(f"a subscription has at most {MAX_PRIMITIVES} primitive subscriptions, "
                                f"found {len(sub.primitives)}")
    n = len(events)
    sig = np.zeros(n, dtype=np.int64)
    for p, truth in enumerate(primitive_truths(sub, events)):
        sig |= truth.astype(np.int64) << p
    sigs, symbol = np.unique(sig, return_inverse=True)
    return symbol.astype(np.int32).reshape(n), sigs.astype(np.int64)


def primitive_truths(sub: Subscription, events: Events) -> list[np.ndarray]:
    """Per primitive, where it is TRUE (one vectorised evaluation per primitive)."""
    n = len(events)
    out: list[np.ndarray] = []
    for prim in sub.primitives:
        if prim.condition is None:
            if events.types is None:
                raise PredictEventsError(f"class {prim.cls!r} has no DEFINE and the events have no "
                                         "type column; add DEFINE or pass type_col")
            out.append(np.asarray(events.types == prim.cls, dtype=bool))
            continue
        env = {}
        for ref in prim.condition.refs:
            env[ref.name] = column_value(events.column(ref.attr))
        out.append(compile_expr(prim.condition.expr).truth(env, n))
    return out


def symbol_counts(symbol: np.ndarray, n_symbols: int) -> np.ndarray:
    """How often each symbol occurs."""
    return np.bincount(symbol, minlength=n_symbols).astype(np.int64)


