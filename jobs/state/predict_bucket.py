"""One bucket of a prediction run: work rows of any number of keys in, output rows out.

:func:`process_bucket` is the prediction job's step 3 (:mod:`jobs.state.predict`): on the
driver for a small run, in Spark's Python workers for a large one (``mapInArrow``, through
:mod:`jobs.state.predict_chunks`). Its input rows are the job's work rows: ``kind``
:data:`EVENT` (a new source row: ``key, e_ts, e_id, e_commit, e_type, a_0..``, in Spark also
its lateness bound ``e_bound``) and ``kind`` :data:`STATE` (a persisted instance row: ``key,
i_sub, i_instance, i_state, i_last_ts``). Its output rows are :data:`OUT_COLUMNS`: instance
rows, one trained model per subscription, late and incomplete source rows, and one counts row.
It reads nothing but its rows and the set's plain-valued spec, so Spark can ship it to workers.

Example:
    >>> counts_table({"n_read": 0, "n_run": 0, "n_keys": 0, "n_instances": 0, "n_late": 0,
    ...               "n_incomplete": 0}).column("out").to_pylist()
    [3]
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_tables.predict_state import PredictStateError, instance_text, instance_values

__all__ = ["process_bucket", "counts_table", "OUT_COLUMNS", "OUT_SCHEMA", "EVENT", "STATE",
           "OUT_INSTANCE", "OUT_MODEL", "OUT_LATE", "OUT_STATS"]

EVENT, STATE = 0, 1
OUT_INSTANCE, OUT_MODEL, OUT_LATE, OUT_STATS = 0, 1, 2, 3
LOOKAHEAD = 1
"""The job stores states and counts, not probabilities; the label comes with a 1-step answer."""

OUT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("out", "INT"), ("sub", "STRING"), ("key", "STRING"), ("instance", "STRING"),
    ("state", "BINARY"), ("label", "STRING"), ("progress", "INT"), ("last_ts", "BIGINT"),
    ("events", "BIGINT"), ("matches", "BIGINT"), ("model", "BINARY"), ("l_ts", "BIGINT"),
    ("l_id", "BIGINT"), ("l_version", "BIGINT"), ("l_reason", "STRING"), ("l_last_ts", "BIGINT"),
    ("n_read", "BIGINT"), ("n_run", "BIGINT"), ("n_keys", "BIGINT"), ("n_instances", "BIGINT"),
    ("n_late", "BIGINT"), ("n_incomplete", "BIGINT"))
"""Rows the per-bucket function emits: ``out`` 0 = an instance row, 1 = a bucket's trained model
of one subscription, 2 = a late or incomplete source row, 3 = the bucket's counts (source rows
read, run, keys run, instance rows, late and incomplete rows)."""
_ARROW = {"STRING": pa.string(), "BIGINT": pa.int64(), "INT": pa.int32(), "BINARY": pa.binary()}
OUT_SCHEMA = pa.schema([pa.field(name, _ARROW[kind]) for name, kind in OUT_COLUMNS])


def _padded(kind: int, n: int, columns: dict[str, Any]) -> pa.Table:
    """``n`` output rows of kind ``kind``: the given columns, NULL in every other one."""
    arrays = []
    for fld in OUT_SCHEMA:
        if fld.name == "out":
            arrays.append(pa.array(np.full(n, kind, dtype=np.int32), pa.int32()))
        elif fld.name in columns:
            arrays.append(pa.array(columns[fld.name], fld.type))
        else:
            arrays.append(pa.nulls(n, fld.type))
    return pa.Table.from_arrays(arrays, schema=OUT_SCHEMA)


def counts_table(counts: dict[str, int]) -> pa.Table:
    """The one ``out = OUT_STATS`` row that carries a call's (or a key's) counts.

    Args:
        counts: ``n_read, n_run, n_keys, n_instances, n_late, n_incomplete``.
    """
    return _padded(OUT_STATS, 1, {name: [value] for name, value in counts.items()})


@functools.lru_cache(maxsize=256)
def _compiled(text: str) -> Any:
    """A subscription compiled once per process (a worker runs many buckets of one set)."""
    from cep.predict import compile_subscription

    return compile_subscription(text)


def _numpy(column: pa.ChunkedArray) -> np.ndarray:
    """An attribute column for :class:`cep.predict.Events`: integers and booleans with NULLs
    as objects (so instance values stay integers), dates as timestamps, the rest as numpy."""
    kind = column.type
    if pa.types.is_date(kind):
        column = column.cast(pa.timestamp("us"))
    if (pa.types.is_integer(kind) or pa.types.is_boolean(kind)) and column.null_count:
        out = np.empty(len(column), dtype=object)
        out[:] = column.to_pylist()
        return out
    values = column.to_numpy(zero_copy_only=False)
    return values.astype(object) if values.dtype.kind in "USO" else values


def _late_mask(key: np.ndarray, commit: np.ndarray, ts: np.ndarray,
               known: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """Rows sorted by ``(key, commit, ts)``: which are late, and each row's bound.

    The bound of a row is the newest timestamp of its key in earlier commits (this batch's, and
    ``known`` from earlier runs); a row is late when its timestamp is before it. A late row is
    not after the bound, so counting it in the running maximum changes nothing.
    """
    n = len(ts)
    if n == 0:
        return np.zeros(0, dtype=bool), np.zeros(0, dtype=np.int64)
    new_key = np.r_[True, key[1:] != key[:-1]]
    new_seg = new_key | np.r_[True, commit[1:] != commit[:-1]]
    seg = np.cumsum(new_seg) - 1
    seg_last = np.r_[np.flatnonzero(new_seg)[1:] - 1, n - 1]
    seg_key = (np.cumsum(new_key) - 1)[new_seg]
    seg_max = ts[seg_last]
    uniq, rank = np.unique(seg_max, return_inverse=True)
    base = seg_key.astype(np.int64) * (len(uniq) + 1)
    running = np.maximum.accumulate(base + rank.reshape(-1) + 1)
    before = np.r_[0, running[:-1]]
    has = before > base
    bound = np.where(has, uniq[np.clip(before - base - 1, 0, len(uniq) - 1)], 0).astype(np.int64)
    first = np.flatnonzero(new_seg)
    for s in range(len(first)):  # the bound from earlier runs (keys with persisted instances)
        prior = known.get(key[first[s]])
        if prior is not None and (not has[s] or prior > bound[s]):
            bound[s], has[s] = prior, True
    late = has[seg] & (ts < bound[seg])
    return late, np.where(has[seg], bound[seg], -1)


def process_bucket(table: pa.Table, spec: dict[str, Any]) -> pa.Table:
    """Run every subscription over the new events of the bucket's keys (module docstring).

    ``table`` holds ``kind`` 0 event rows (``key, e_ts, e_id, e_commit, e_type, a_i``) and
    ``kind`` 1 persisted instance rows (``key, i_sub, i_instance, i_state``) of any number of
    keys; ``spec`` names the subscriptions, attributes and optional columns. With an
    ``e_bound`` column (the Spark path: :func:`jobs.state.predict._with_bounds`) a row is late
    when its timestamp is below its bound; without it the rule is applied here over the table's
    own commits (:func:`_late_mask`, the driver's path). Returns :data:`OUT_SCHEMA` rows: the
    incomplete rows, the late rows, per subscription its instance rows and its trained model,
    then the counts row.

    Raises:
        ModelFormatError: a persisted instance state blob is corrupt (``CEP-PRED-012``, naming
            the subscription, key and instance).
        PredictStateError: an ``instance`` value that is not a JSON array.
    """
    if not table.num_rows:
        return OUT_SCHEMA.empty_table()
    kind = table.column("kind")
    events = table.filter(pc.equal(kind, EVENT))
    starts, known = _stored_states(table.filter(pc.equal(kind, STATE)), spec["name"])
    parts: list[pa.Table] = []

    valid = pc.and_(pc.is_valid(events.column("key")), pc.is_valid(events.column("e_ts")))
    incomplete = events.filter(pc.invert(valid))
    if incomplete.num_rows:
        parts.append(_set_aside(incomplete, "incomplete"))
    complete, late, bound = _lateness(events.filter(valid), known)
    if late.any():
        parts.append(_set_aside(complete.filter(pa.array(late)), "late", bound[late]))
        complete = complete.filter(pa.array(~late))

    run, n_keys, n_instances = _run_events(complete, spec, starts)
    parts += run
    parts.append(counts_table({
        "n_read": events.num_rows, "n_run": complete.num_rows, "n_keys": n_keys,
        "n_instances": n_instances, "n_late": int(late.sum()),
        "n_incomplete": incomplete.num_rows}))
    return pa.concat_tables(parts)


def _stored_states(stored: pa.Table, name: str) -> tuple[dict[str, dict[tuple, Any]],
                                                         dict[str, int]]:
    """The persisted states a run starts from, and each key's bound from earlier runs.

    Args:
        stored: The bucket's ``kind`` :data:`STATE` rows.
        name: The prediction set's name, for the message of a corrupt state.

    Returns:
        ``{sub: {(key, instance values): InstanceState}}`` (``start`` of
        :func:`cep.predict.predict`) and ``{key: newest timestamp of its states}``.
    """
    from cep.predict import InstanceState, ModelFormatError

    starts: dict[str, dict[tuple, Any]] = {}
    known: dict[str, int] = {}
    for sub, key, inst, blob in zip(*(stored.column(c).to_pylist()
                                      for c in ("i_sub", "key", "i_instance", "i_state"))):
        try:
            state = InstanceState.from_bytes(blob)
        except ModelFormatError as err:
            raise ModelFormatError(f"prediction set {name}, subscription {sub}, key "
                                   f"{key!r}, instance {inst}: {err.message}") from None
        starts.setdefault(sub, {})[(key, instance_values(inst))] = state
        if state.last_ts is not None and (key not in known or state.last_ts > known[key]):
            known[key] = int(state.last_ts)
    return starts, known


def _lateness(events: pa.Table, known: dict[str, int]
              ) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """Which complete events are late (the rule of the job's module docstring), and their bounds.

    Args:
        events: Event rows with a key and a timestamp.
        known: Each key's newest timestamp from earlier runs (:func:`_stored_states`).

    Returns:
        The events (sorted by key, commit and time when the rule is applied here), and for
        each of them, in that order, whether it is late and its bound (-1: none).
    """
    if "e_bound" in events.column_names:
        # Spark marked every row with its bound (_with_bounds): the rule needs no other row
        # here, so a key's events may arrive in chunks (jobs/state/predict_chunks.py).
        has = pc.is_valid(events.column("e_bound")).to_numpy(zero_copy_only=False)
        bound = pc.fill_null(events.column("e_bound"), -1).to_numpy(zero_copy_only=False)
        return events, has & (events.column("e_ts").to_numpy() < bound), bound
    events = events.take(pc.sort_indices(events, sort_keys=[
        ("key", "ascending"), ("e_commit", "ascending"), ("e_ts", "ascending")]))
    key = events.column("key").to_numpy(zero_copy_only=False).astype(object)
    late, bound = _late_mask(key, events.column("e_commit").to_numpy(),
                             events.column("e_ts").to_numpy(), known)
    return events, late, bound


def _set_aside(rows: pa.Table, reason: str, last_ts: np.ndarray | None = None) -> pa.Table:
    """Event rows that are not run, as ``<name>_late`` output rows.

    Args:
        rows: The event rows.
        reason: ``incomplete`` (no key or timestamp) or ``late``.
        last_ts: A late row's bound: the newest timestamp of its key before it.
    """
    columns = {"key": rows.column("key"), "l_ts": rows.column("e_ts"),
               "l_id": rows.column("e_id"), "l_version": rows.column("e_commit"),
               "l_reason": [reason] * rows.num_rows}
    if last_ts is not None:
        columns["l_last_ts"] = last_ts
    return _padded(OUT_LATE, rows.num_rows, columns)


def _run_events(events: pa.Table, spec: dict[str, Any], starts: dict[str, dict[tuple, Any]]
                ) -> tuple[list[pa.Table], int, int]:
    """Every subscription run over the events that are neither late nor incomplete.

    Args:
        events: The event rows to run.
        spec: The set's spec (:func:`jobs.state.predict._spec`).
        starts: The persisted states per subscription (:func:`_stored_states`).

    Returns:
        Per subscription its instance rows and its trained model; the number of keys run and
        of instance rows.
    """
    from cep.predict import Events, predict

    # Per key in (ts, commit, id, attributes) order: the order the machines run a key's events.
    attrs = spec["attributes"]
    order = [("key", "ascending"), ("e_ts", "ascending"), ("e_commit", "ascending"),
             ("e_id", "ascending"), ("e_type", "ascending")]
    order += [(f"a_{i}", "ascending") for i in range(len(attrs))]
    events = events.take(pc.sort_indices(events, sort_keys=[(k, d, "at_end") for k, d in order]))
    if not events.num_rows:
        return [], 0, 0
    keys = events.column("key").to_numpy(zero_copy_only=False).astype(object)
    ev = Events.from_columns(
        ts=events.column("e_ts").to_numpy(), keys=keys,
        types=events.column("e_type").to_numpy(zero_copy_only=False).astype(object)
        if spec["has_type"] else None,
        attrs={a: _numpy(events.column(f"a_{i}")) for i, a in enumerate(attrs)})
    parts: list[pa.Table] = []
    n_instances = 0
    for sub, text in spec["subscriptions"]:
        result = predict(_compiled(text), ev, lookahead=LOOKAHEAD, start=starts.get(sub))
        parts.append(_instance_rows(sub, result))
        n_instances += parts[-1].num_rows
        parts.append(_padded(OUT_MODEL, 1, {"sub": [sub],
                                            "model": [result.trained.to_bytes()]}))
    return parts, int(len(np.unique(keys))), n_instances


def _instance_rows(sub: str, result: Any) -> pa.Table:
    """The instance rows of one subscription's :class:`~cep.predict.Prediction`.

    ``result.rows`` (``output='keys'``, threshold 0) has one row per instance in the order the
    states were built; the key and instance of each row are checked against the state's.
    """
    rows = result.rows
    states = list(result.states.items())
    if len(states) != len(rows["key"]):
        raise PredictStateError(f"subscription {sub}: {len(states)} instance states but "
                                f"{len(rows['key'])} instance rows")
    out: dict[str, list] = {name: [] for name in (
        "sub", "key", "instance", "state", "label", "progress", "last_ts", "events", "matches")}
    for i, ((key, values), state) in enumerate(states):
        readable = (None if not values
                    else ", ".join("NULL" if v is None else str(v) for v in values))
        if rows["key"][i] != key or rows["instance"][i] != readable:
            raise PredictStateError(f"subscription {sub}: instance rows and states are not in the "
                                    f"same order at {key!r} / {rows['key'][i]!r}")
        out["sub"].append(sub)
        out["key"].append(str(key))
        out["instance"].append(instance_text(values))
        out["state"].append(state.to_bytes())
        out["label"].append(rows["state"][i])
        out["progress"].append(int(rows["progress"][i]))
        out["last_ts"].append(None if state.last_ts is None else int(state.last_ts))
        out["events"].append(int(state.events))
        out["matches"].append(int(state.matches))
    return _padded(OUT_INSTANCE, len(states), out)
