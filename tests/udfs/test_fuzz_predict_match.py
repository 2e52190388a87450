"""``predict_match`` through ``spark.sql`` against the brute-force predict oracle, on random batches
(issue 47).

Each case of a batch calls ``predict_match`` with its own subscription (sequences with ``,`` and
``;``, a repeated class, overlapping DEFINEs over a value with NULLs, time conditions ``<``,
``<=``, ``>=`` in ``@(...)`` and in WHERE, join variables ``v = $x`` and ``[v]``, Boolean ``|`` and
``&`` over sequences, composite subscriptions with ``&`` / ``|`` steps) and its own arguments:
with or without ``key_col`` (the key as STRING or INT), each output, ``lookahead`` 1-4, every
``threshold``, ``combine``, ``smoothing`` and ``definition`` value, no model, ``model => NULL``
or a model trained on the case's events passed as a BINARY literal, the timestamp, type and id
columns under other names (``ts_col``, ``type_col``, ``id_col``), ids as BIGINT, INT or STRING
(ties in ``ts`` are ordered by the id, so by its string order for STRING ids), and the
timestamp as TIMESTAMP, TIMESTAMP_NTZ, DATE, BIGINT, INT, DOUBLE or DECIMAL; each batch in
its own session time zone (UTC, New York, Kolkata). The harness is :mod:`tests.sql_fuzz`.

The oracle is docs/predict.md sections 2, 4 and 5, computed literally from the rows: every
stream (a key, or the table) in ``(ts, id)`` order is split into instances by the join
variable; :func:`~cep.oracles.predict_oracle.live_masks`, ``match_ends`` and ``boolean_fired``
give each machine's state and matches; the chain is counted from those states (departures, or
arrivals for ``definition => 'paper'``, with the symbol-frequency row for states never left
and for ``smoothing``), and the probabilities are
:func:`~cep.oracles.predict_oracle.hit_probability` (every path of the chain) and path sums for
the paper's occupancy. Composite subscriptions have no probability oracle (their convolution
is checked against enumeration in tests/cep/predict/test_composite.py): their matches come from
``composite_match_ends`` and their state and probabilities from the core on the same ordered
stream.

What is refused by design (a composite subscription with ``smoothing`` or ``definition =>
'paper'``) is drawn out of the fuzz and tested on its own below.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cep.lang import parse_pattern
from cep.lang.ast import FOLLOWED
from cep.lang.validate import checked_classes
from cep.oracles.predict_oracle import (boolean_fired, composite_match_ends, hit_probability,
                                        live_masks, match_ends)
from cep.predict import Events, Model, compile_subscription, predict
from cep.predict.subscription import Sequence, Subscription
from sql_ext.quoting import sql_string
from tests.sql_fuzz import (SQL_FUZZ, UNIT, Batch, Event, batches, by_key, case_table,
                            create_view, describe, rows_by_case, session_conf, union_sql)

pytestmark = pytest.mark.spark

Truth = Callable[[Event], bool]


def is_type(cls: str) -> Truth:
    """A class without DEFINE: the events whose type is the class (a NULL type is none)."""
    return lambda e: e.type == cls


def v_cmp(op: Callable[[int], bool]) -> Truth:
    """A DEFINE over ``v``: SQL's three-valued logic, so a NULL ``v`` is not a match."""
    return lambda e: e.v is not None and op(e.v)


@dataclass(frozen=True)
class Pattern:
    """A subscription (``UNITS``: the batch's time unit) and, per class, which events satisfy
    it, written out again here rather than read from the compiler."""

    text: str
    classes: dict[str, Truth]


ABCD = {c: is_type(c) for c in "ABCD"}
PATTERNS = [
    Pattern("PATTERN A, B", ABCD),
    Pattern("PATTERN A ; B", ABCD),
    Pattern("PATTERN A, B ; C", ABCD),
    Pattern("PATTERN A ; B, A", ABCD),
    Pattern("PATTERN X, Y ; X DEFINE X AS v <= 1, Y AS v >= 1",
            {"X": v_cmp(lambda v: v <= 1), "Y": v_cmp(lambda v: v >= 1)}),
    Pattern("PATTERN A ; B @(t(B) - t(A) < 2 UNITS)", ABCD),
    Pattern("PATTERN A, B ; C @(t(C) - t(A) <= 3 UNITS)", ABCD),
    Pattern("PATTERN A ; B WHERE B.ts - A.ts >= 1 UNITS", ABCD),
    Pattern("PATTERN A, B WHERE [v]", ABCD),
    # ``type`` in a condition reads the type column, also when type_col renames it
    Pattern("PATTERN A ; B DEFINE A AS type = 'A' AND v = $x, B AS type = 'B' AND v = $x", ABCD),
    Pattern("PATTERN (A, B) | (C ; D)", ABCD),
    Pattern("PATTERN (A ; B) & (C, D)", ABCD),
    Pattern("PATTERN (A, B) & (C ; D) | (H, H) DEFINE H AS v > 2",
            {**ABCD, "H": v_cmp(lambda v: v > 2)}),
    Pattern("PATTERN (A ; B @(t(B) - t(A) < 3 UNITS)) | (C, D)", ABCD),
    Pattern("PATTERN A ; ((B, C) & D)", ABCD),
    Pattern("PATTERN A, (B | C) ; D", ABCD),
]
COMPOSITE = {p.text for p in PATTERNS
             if compile_subscription(p.text.replace("UNITS", "SECONDS")).composite}
MICROS = {"SECONDS": 1_000_000, "DAYS": 86_400_000_000, "UNITS": 1}
TS_CASTS = {"BIGINT": [None, "INT", "DOUBLE", "DECIMAL(12,2)"]}
"""Casts of a numeric clock in the TABLE query: INT stays an integer timestamp, DOUBLE and
DECIMAL are the float path (output ``ts`` DOUBLE)."""
TOL = dict(rel_tol=1e-9, abs_tol=1e-12)
ZONE = "spark.sql.session.timeZone"
ZONES = ["UTC", "UTC", "America/New_York", "Asia/Kolkata"]
"""The session time zone, drawn per batch: TIMESTAMP_NTZ and DATE are read as UTC whatever it
is (docs/sql.md), and a TIMESTAMP is an instant."""


def compiled(pattern: Pattern, unit: str) -> Subscription:
    return compile_subscription(pattern.text.replace("UNITS", unit))


@st.composite
def calls(draw: st.DrawFn, ts_type: str) -> dict[str, Any]:
    """One case's call. A composite subscription refuses ``smoothing`` and ``definition =>
    'paper'`` (CEP-PRED-011, tested below), so it never draws them."""
    pattern = draw(st.sampled_from(PATTERNS))
    composite = pattern.text in COMPOSITE
    return {"pattern": pattern, "keyed": draw(st.booleans()),
            "key_int": draw(st.booleans()),
            "lookahead": draw(st.integers(1, 4)),
            "threshold": draw(st.sampled_from([None, 0.0, 0.25, 0.5, 1.0])),
            "output": draw(st.sampled_from([None, "keys", "events"])),
            "combine": draw(st.sampled_from([None, "independent", "sum"])),
            "smoothing": None if composite else draw(st.sampled_from([None, 0.0, 0.5, 2.0])),
            "definition": draw(st.sampled_from(
                [None, "first_passage"] + ([] if composite else ["paper"]))),
            "model": draw(st.sampled_from([None, None, "null", "trained"])),
            "ts_col": draw(st.booleans()), "type_col": draw(st.booleans()),
            "id_col": draw(st.booleans()),
            "id_cast": draw(st.sampled_from(["BIGINT", "INT", "STRING"])),
            "ts_cast": draw(st.sampled_from(TS_CASTS.get(ts_type, [None])))}


# -- the oracle ----------------------------------------------------------------------------------

def clock(e: Event, call: dict[str, Any], unit: str) -> int | float:
    """The event's time as the function reads it: UTC microseconds for TIMESTAMP, TIMESTAMP_NTZ
    and DATE, the raw number otherwise (a float for DOUBLE and DECIMAL)."""
    if unit != "UNITS":
        return e.steps * MICROS[unit]
    return float(e.steps) if call["ts_cast"] in ("DOUBLE", "DECIMAL(12,2)") else e.steps


def tie(e: Event, call: dict[str, Any]) -> Any:
    """What orders ties in ``ts``: the id, in its column's type's order."""
    return str(e.id) if call["id_cast"] == "STRING" else e.id


@dataclass
class Stream:
    """One stream's events (a key, or the table) in ``(ts, id)`` order, split into instances
    (``None``: no join variable; else the value as the ``instance`` column shows it)."""

    key: str | None
    instances: list[tuple[str | None, list[Event]]]


def streams(events: list[Event], call: dict[str, Any], sub: Subscription,
            unit: str) -> list[Stream]:
    out = []
    for key, mine in by_key(events, call["keyed"]).items():
        mine = sorted(mine, key=lambda e: (clock(e, call, unit), tie(e, call)))
        split: dict[Any, list[Event]] = {}
        for e in mine:  # one instance per value of the join variable (NULL is a value)
            split.setdefault(e.v if sub.instance_attrs else (), []).append(e)
        out.append(Stream(key, [(None if not sub.instance_attrs else
                                 "NULL" if v is None else str(v), es) for v, es in split.items()]))
    return out


def truths(pattern: Pattern, sub: Subscription, events: list[Event]) -> list[list[bool]]:
    return [[pattern.classes[p.cls](e) for p in sub.primitives] for e in events]


def looping(leaf: Sequence, j: int) -> bool:
    return j == 0 or (j < len(leaf.steps) and leaf.links[j - 1] == FOLLOWED)


def step(leaf: Sequence, mask: int, truth: tuple[bool, ...]) -> int:
    """The state after one more event, from section 2 without time conditions: position 0 and
    the live self-looping positions stay, a live position moves on where the event satisfies
    its next step; positions below the highest live self-looping one are dropped."""
    k = len(leaf.steps)
    live = {0}
    for j in range(k):
        if mask >> j & 1:
            if looping(leaf, j):
                live.add(j)
            if truth[leaf.steps[j]]:
                live.add(j + 1)
    top = max(j for j in live if j < k and looping(leaf, j))
    return sum(1 << j for j in live if j >= top)


class Chain:
    """A leaf's chain, trained as docs/predict.md section 4 says, rows built when needed."""

    def __init__(self, leaf: Sequence, runs: list[tuple[list[tuple], list[int]]],
                 smoothing: float, paper: bool) -> None:
        self.leaf, self.smoothing, self.paper = leaf, smoothing, paper
        self.counts: dict[int, dict[int, int]] = {}
        self.arrived: dict[int, int] = {}
        freq: dict[tuple, int] = {}
        for truth, masks in runs:  # each instance starts in the start state, mask 1
            for sig, (a, b) in zip(truth, zip([1] + masks, masks)):
                row = self.counts.setdefault(a, {})
                row[b] = row.get(b, 0) + 1
                self.arrived[b] = self.arrived.get(b, 0) + 1
                freq[tuple(sig)] = freq.get(tuple(sig), 0) + 1
        total = sum(freq.values())
        self.freq = {s: c / total for s, c in freq.items()}
        self.rows: dict[int, dict[int, float]] = {}
        self.memo: dict[tuple[int, int], tuple[float, float]] = {}

    def row(self, mask: int) -> dict[int, float]:
        if mask in self.rows:
            return self.rows[mask]
        row: dict[int, float] = {}
        seen = self.counts.get(mask)
        w = self.smoothing
        if seen:
            total = sum(seen.values())
            if self.paper:  # divided by the arrivals (an instance's start counts as one)
                total = max(total, self.arrived.get(mask, 0))
            for t, c in seen.items():
                row[t] = row.get(t, 0.0) + (total / (total + w) if w else 1.0) * c / total
        if not seen or w:
            share = 1.0 if not seen else w / (total + w)
            for sig, f in self.freq.items():
                t = step(self.leaf, mask, sig)
                row[t] = row.get(t, 0.0) + share * f
        if not row:  # no training events at all: the state stays
            row[mask] = 1.0
        self.rows[mask] = row
        return row

    def probability(self, mask: int, n: int) -> tuple[float, float]:
        """``(beta(n), alpha(n))`` from ``mask``: first passage by enumeration of every path
        (clipped to [0, 1]), or the paper's occupancy ``P^m[i, F]`` summed over m = 1..n."""
        if (mask, n) in self.memo:
            return self.memo[(mask, n)]
        states, i = [mask], 0
        while i < len(states):
            states += [t for t in self.row(states[i]) if t not in states]
            i += 1
        index = {s: i for i, s in enumerate(states)}
        P = np.zeros((len(states), len(states)))
        for s in states:
            for t, p in self.row(s).items():
                P[index[s], index[t]] += p
        accepting = [bool(s >> len(self.leaf.steps) & 1) for s in states]
        if self.paper:
            occupancy = [float(np.linalg.matrix_power(P, m)[0][accepting].sum())
                         for m in range(1, n + 1)]
            out = (sum(occupancy), occupancy[-1])
        else:
            beta = [min(1.0, max(0.0, hit_probability(P, accepting, 0, m))) for m in (n - 1, n)]
            out = (beta[1], beta[1] - (beta[0] if n > 1 else 0.0))
        self.memo[(mask, n)] = out
        return out


def leaf_runs(sub: Subscription, leaf: Sequence, pattern: Pattern, stream: Stream, call: dict,
              unit: str) -> list[tuple[list[list[bool]], list[int], list[bool]]]:
    """Per instance: the events' truths, the machine's state after each event and its matches."""
    out = []
    for _, events in stream.instances:
        truth = truths(pattern, sub, events)
        ts = [clock(e, call, unit) for e in events]
        out.append((truth, live_masks(leaf, truth, ts), match_ends(leaf, truth, ts)))
    return out


def label(sub: Subscription, masks: list[int], flags: dict[int, int]) -> str:
    """The state column: a sequence's aliases matched so far (the furthest live position),
    ``-`` for none; under ``&`` / ``|`` each part in brackets, ``matched`` for a part of an ``&``
    that matched since the node last did (docs/sql.md)."""
    leaves = iter(range(len(sub.leaves)))

    def walk(node: Any, done: bool) -> str:
        if isinstance(node, Sequence):
            li = next(leaves)
            j = masks[li].bit_length() - 1
            text = "matched" if done else " ".join(node.aliases[:j]) if j else "-"
            return text if node is sub.root else f"[{text}]"
        if node.op == "&":
            return "(" + " & ".join(walk(p, done or bool(flags[id(node)] >> b & 1))
                                    for b, p in enumerate(node.parts)) + ")"
        return "(" + " | ".join(walk(p, done) for p in node.parts) + ")"

    out = walk(sub.root, False)
    return out if isinstance(sub.root, Sequence) else out[1:-1]


def plain_rows(events: list[Event], call: dict[str, Any], sub: Subscription, unit: str,
               training: list[Stream] | None) -> list[dict[str, Any]]:
    """Every output row (before the threshold) of a subscription without Boolean steps."""
    pattern = call["pattern"]
    smoothing = call["smoothing"] or 0.0
    paper = call["definition"] == "paper"
    clip = not paper
    rows = []
    for stream in streams(events, call, sub, unit):
        runs = [leaf_runs(sub, leaf, pattern, stream, call, unit) for leaf in sub.leaves]
        trained_on = [stream] if training is None else training  # a model: the case, one stream
        chains = [Chain(leaf, [(t, m) for s in trained_on
                               for t, m, _ in leaf_runs(sub, leaf, pattern, s, call, unit)],
                        smoothing, paper)
                  for leaf in sub.leaves]
        for g, (instance, inst_events) in enumerate(stream.instances):
            per_leaf = [runs[li][g] for li in range(len(sub.leaves))]
            n = len(inst_events)
            leaf_counter = iter(range(len(sub.leaves)))
            flags: dict[int, list[int]] = {}

            def walk(node: Any) -> tuple[list[bool], list[float]]:
                """Matches and probability per event (docs/predict.md section 5)."""
                if isinstance(node, Sequence):
                    li = next(leaf_counter)
                    _, masks, ends = per_leaf[li]
                    return ends, [chains[li].probability(m, call["lookahead"])[0] for m in masks]
                parts = [walk(p) for p in node.parts]
                fired = boolean_fired(node.op, [f for f, _ in parts])
                if node.op == "|":
                    if call["combine"] == "sum":
                        p = [sum(q[t] for _, q in parts) for t in range(n)]
                        return fired, [min(1.0, x) for x in p] if clip else p
                    return fired, [1 - math.prod(1 - q[t] for _, q in parts) for t in range(n)]
                seen, node_flags = 0, []  # which parts matched since the node last matched
                for t in range(n):
                    seen |= sum(1 << b for b, (f, _) in enumerate(parts) if f[t])
                    seen = 0 if fired[t] else seen
                    node_flags.append(seen)
                flags[id(node)] = node_flags
                return fired, [math.prod(1.0 if node_flags[t] >> b & 1 else q[t]
                                         for b, (_, q) in enumerate(parts)) for t in range(n)]

            fired, prob = walk(sub.root)
            prob = [min(1.0, max(0.0, p)) for p in prob] if clip else prob
            for t, e in enumerate(inst_events):
                masks = [per_leaf[li][1][t] for li in range(len(sub.leaves))]
                rows.append({
                    "key": stream.key, "instance": instance, "id": e.id,
                    "ts": clock(e, call, unit),
                    "state": label(sub, masks, {k: v[t] for k, v in flags.items()}),
                    "progress": max(m.bit_length() - 1 for m in masks),
                    "probability": prob[t],
                    "p_exact": (chains[0].probability(masks[0], call["lookahead"])[1]
                                if isinstance(sub.root, Sequence) else None),
                    "matched": fired[t], "matches": sum(fired[:t + 1]), "events": t + 1})
    return rows


def composite_rows(events: list[Event], call: dict[str, Any], sub: Subscription, unit: str,
                   model: Any) -> list[dict[str, Any]]:
    """A composite subscription's rows: matches from the oracle; state, progress and the
    convolution's probabilities from the core on the same ordered stream."""
    rows = []
    for stream in streams(events, call, sub, unit):
        ((instance, mine),) = stream.instances  # no join variables in the composites drawn
        ts = [clock(e, call, unit) for e in mine]
        fired = composite_match_ends(sub, truths(call["pattern"], sub, mine), ts)
        core = predict(sub, Events.from_columns(ts=ts, types=[e.type for e in mine]),
                       lookahead=call["lookahead"], output="events", model=model).rows
        for t, e in enumerate(mine):
            rows.append({"key": stream.key, "instance": instance, "id": e.id, "ts": ts[t],
                         "state": core["state"][t], "progress": core["progress"][t],
                         "probability": core["probability"][t], "p_exact": core["p_exact"][t],
                         "matched": fired[t], "matches": sum(fired[:t + 1]), "events": t + 1})
    return rows


def training_events(events: list[Event], call: dict[str, Any], unit: str) -> Events:
    """The core's events of a case as one stream in ``(ts, id)`` order: what the model is
    trained on (the model blob is input; the oracle retrains from the same events)."""
    mine = sorted(events, key=lambda e: (clock(e, call, unit), tie(e, call)))
    return Events.from_columns(ts=[clock(e, call, unit) for e in mine],
                               types=[e.type for e in mine],
                               attrs={"v": np.array([e.v for e in mine], dtype=object)})


def oracle(events: list[Event], call: dict[str, Any], unit: str,
           blob: bytes | None) -> tuple[dict[tuple, dict], dict[tuple, dict]]:
    """``(required, allowed)`` rows by identity: those at least ``threshold`` (beyond the
    tolerance) must come back, those within the tolerance of it may."""
    sub = compiled(call["pattern"], unit)
    if sub.composite:
        rows = composite_rows(events, call, sub, unit,
                              None if blob is None else Model.from_bytes(blob, sub.text))
    else:
        training = None
        if blob is not None:
            one = {**call, "keyed": False}
            training = streams(events, one, sub, unit)
        rows = plain_rows(events, call, sub, unit, training)
    if call["output"] != "events":  # one row per instance: after its last event
        last: dict[tuple, dict] = {}
        for r in rows:
            last[(r["key"], r["instance"])] = {**r, "id": None}
        rows = list(last.values())
    else:
        rows = [{**r, "matches": None, "events": None} for r in rows]
    theta = call["threshold"] or 0.0
    required, allowed = {}, {}
    for r in rows:
        who = (r["key"], r["instance"], r["id"])
        if r["probability"] >= theta or math.isclose(r["probability"], theta, **TOL):
            allowed[who] = r
            if not math.isclose(r["probability"], theta, **TOL):
                required[who] = r
    return required, allowed


# -- the SQL -------------------------------------------------------------------------------------

def table_columns(call: dict[str, Any]) -> str:
    """The TABLE query's columns: the id, key, type and ts cast and renamed as drawn."""
    ids = "id" if call["id_cast"] == "BIGINT" else f"CAST(id AS {call['id_cast']})"
    key = "CAST(substr(key, 2) AS INT)" if call["key_int"] else "key"
    ts = "ts" if call["ts_cast"] is None else f"CAST(ts AS {call['ts_cast']})"
    return (f"{ids} AS {'eid' if call['id_col'] else 'id'}, {key} AS key, "
            f"type AS {'kind' if call['type_col'] else 'type'}, "
            f"{ts} AS {'t' if call['ts_col'] else 'ts'}, v")


def sql_call(view: str, case: int, call: dict[str, Any], unit: str,
             blob: bytes | None, events: tuple[Event, ...] | list[Event] = ()
             ) -> tuple[str, str]:
    text = call["pattern"].text.replace("UNITS", unit)
    args = [f"subscription => {sql_string(text)}", f"lookahead => {call['lookahead']}"]
    # Trained on the case itself, a class no event carries is an error
    # (tests/udfs/test_facts_of_other_functions.py); such a case asks for the answer.
    if call["model"] != "trained" and not set(checked_classes(parse_pattern(text))) <= {
            e.type for e in events}:
        args.append("allow_absent => true")
    for name in ("threshold", "smoothing"):
        if call[name] is not None:
            args.append(f"{name} => {call[name]}")
    for name in ("output", "combine", "definition"):
        if call[name] is not None:
            args.append(f"{name} => '{call[name]}'")
    if call["model"] == "null":
        args.append("model => NULL")
    elif call["model"] == "trained":
        args.append(f"model => X'{blob.hex()}'")
    for name, renamed in (("ts_col", "t"), ("type_col", "kind"), ("id_col", "eid")):
        if call[name]:
            args.append(f"{name} => '{renamed}'")
    if call["keyed"]:
        args.append("key_col => 'key'")
    args.append(f"events => {case_table(view, case, table_columns(call))}")
    events = call["output"] == "events"
    ts = "ts" if events else "last_ts"
    # One column set for the UNION ALL: the key as STRING, the clock as DOUBLE (UTC microseconds
    # of a TIMESTAMP; exact below 2^53) next to its SQL type.
    number = f"unix_micros({ts})" if unit != "UNITS" else ts
    columns = [("CAST(key AS STRING)" if call["keyed"] else "CAST(NULL AS STRING)") + " AS key",
               "instance", ("CAST(id AS STRING)" if events else "CAST(NULL AS STRING)") + " AS id",
               f"CAST({number} AS DOUBLE) AS t", f"typeof({ts}) AS t_type", "state", "progress",
               "probability", "p_exact", "matched",
               "matches" if not events else "CAST(NULL AS BIGINT) AS matches",
               "events" if not events else "CAST(NULL AS BIGINT) AS events"]
    return f"predict_match({', '.join(args)})", ", ".join(columns)


def ts_type_of(call: dict[str, Any], unit: str) -> str:
    """The documented type of the output's ``ts`` / ``last_ts``."""
    if unit != "UNITS":
        return "timestamp"
    return "double" if call["ts_cast"] in ("DOUBLE", "DECIMAL(12,2)") else "bigint"


def model_blob(events: list[Event], call: dict[str, Any], unit: str) -> bytes | None:
    if call["model"] != "trained":
        return None
    text = call["pattern"].text.replace("UNITS", unit)
    return predict(text, training_events(events, call, unit), lookahead=1).trained.to_bytes()


def shown_key(call: dict[str, Any], key: str | None) -> str | None:
    """A key as the output shows it cast to STRING: ``'k1'``, or ``'1'`` for an INT key."""
    return key[1:] if call["key_int"] and key is not None else key


def same(got: Any, want: dict[str, Any], call: dict[str, Any], unit: str) -> list[str]:
    """The columns of one row that differ from the oracle's, named."""
    bad = []
    exact = {"key": (got.key, shown_key(call, want["key"])), "instance": (got.instance, want["instance"]),
             "t": (got.t, float(want["ts"])), "t_type": (got.t_type, ts_type_of(call, unit)),
             "state": (got.state, want["state"]), "progress": (got.progress, want["progress"]),
             "matched": (got.matched, want["matched"]), "matches": (got.matches, want["matches"]),
             "events": (got.events, want["events"])}
    bad += [f"{k} {g!r} != {w!r}" for k, (g, w) in exact.items() if g != w]
    for k in ("probability", "p_exact"):
        g, w = getattr(got, k), want[k]
        if (g is None) != (w is None) or (g is not None and not math.isclose(g, w, **TOL)):
            bad.append(f"{k} {g!r} != {w!r}")
    return bad


def check_case(case: int, call: dict[str, Any], batch: Batch, rows: list, unit: str,
               blob: bytes | None, zone: str = "UTC") -> None:
    events = batch.of_case(case)
    shown = {k: getattr(v, "text", v) for k, v in call.items()}
    where = f"case {case} {shown} {batch.ts_type} {zone} [{describe(events)}]"
    required, allowed = oracle(events, call, unit, blob)
    by_who = {(shown_key(call, k), i, None if d is None else str(d)): r
              for (k, i, d), r in allowed.items()}
    found = set()
    for r in rows:
        who = (r.key, r.instance, r.id)
        assert who not in found, f"{where}: row {who} twice"
        found.add(who)
        assert who in by_who, f"{where}: extra row {r}"
        bad = same(r, by_who[who], call, unit)
        assert not bad, f"{where}: row {who}: {'; '.join(bad)}"
    missing = {(shown_key(call, k), i, None if d is None else str(d))
               for k, i, d in required} - found
    assert not missing, f"{where}: missing rows {sorted(missing, key=str)}"


@SQL_FUZZ
@given(batch=batches(), zone=st.sampled_from(ZONES), data=st.data())
def test_predict_match_through_sql_equals_the_oracle(spark, batch: Batch, zone: str,
                                                     data: st.DataObject) -> None:
    chosen = [data.draw(calls(batch.ts_type)) for _ in range(batch.cases)]
    unit = UNIT[batch.ts_type]
    blobs = [model_blob(batch.of_case(case), call, unit) for case, call in enumerate(chosen)]
    create_view(spark, batch, "fuzz_pm")
    statement = union_sql([sql_call("fuzz_pm", case, call, unit, blobs[case],
                                    batch.of_case(case)) for case, call in enumerate(chosen)])
    with session_conf(spark, {ZONE: zone}):
        rows = spark.sql(statement).collect()
    got = rows_by_case(rows, batch.cases, lambda r: r)
    for case, call in enumerate(chosen):
        check_case(case, call, batch, got[case], unit, blobs[case], zone)


def test_a_composite_refuses_smoothing_and_paper_with_a_typed_error(spark) -> None:
    # Drawn out of the fuzz: CEP-PRED-011 at analysis, before any task runs, so also on an empty
    # table and whatever the key (docs/sql.md, docs/predict.md section 7). Each refusal on each
    # composite, on a table of one event (one stream) and on an empty one (key_col).
    one = "TABLE(SELECT * FROM VALUES (1, 2, 'A', 'k') AS t(id, ts, type, key))"
    empty = one[:-1] + " WHERE ts > 2)"
    smoothing = ("smoothing => 0.5", "CEP-PRED-011: argument smoothing")
    paper = ("definition => 'paper'", "CEP-PRED-011: argument definition")
    first, second = sorted(COMPOSITE)
    for pattern, (argument, needle), table in [(first, smoothing, one), (first, paper, empty),
                                               (second, smoothing, empty), (second, paper, one)]:
        key = ", key_col => 'key'" if table == empty else ""
        with pytest.raises(Exception) as info:
            spark.sql(f"SELECT * FROM predict_match(subscription => {sql_string(pattern)}, "
                      f"lookahead => 2, {argument}{key}, events => {table})").collect()
        assert needle in str(info.value), (pattern, argument, table, str(info.value))
