"""``predict_match`` in the core: run, train, and predict every instance of a subscription.

For each instance (a partition, or a join-variable binding within it) the subscription's
machines run over its events (:mod:`cep.predict.run`); the Markov chain of each machine
(:mod:`cep.predict.markov`) is trained on these events, or read from a persisted
:class:`~cep.predict.model.Model`; the answer is, per instance (``output='keys'``) or per event
(``output='events'``), the current state and ``beta(lookahead)``, the probability that the
subscription matches within the next ``lookahead`` events, where it is at least ``threshold``.

Boolean subscriptions (P-ToPSS's Boolean and master machines, section 4.1) combine their parts:

* ``X | Y`` matches at an event where a part matches;
* ``X & Y`` matches at the event where the last of its parts has matched since the node last
  matched (each part's match is an *in-trigger*; the node's match resets it, the *out-trigger*).

Their probabilities combine the parts' under the assumption that the parts' futures are
**independent** given their current states (``combine='independent'``, the default):
``P(X | Y) = 1 - (1 - P(X)) (1 - P(Y))`` and ``P(X & Y) = P(X) P(Y)`` with a part that already
matched counting as 1. The paper *adds* the parts' probabilities for ``|``; ``combine='sum'``
does that (capped at 1). It is the union bound: it ignores that both parts may match in the same
window, so it overestimates exactly when the parts are likely together; docs/predict.md
section 5 shows the difference on an example.

A *composite* subscription (a master sequence with ``&`` / ``|`` steps, the paper's Fig. 5) is
run, trained and predicted by :mod:`cep.predict.composite` (docs/predict.md section 5.1).

Example:
    >>> ev = Events.from_columns(ts=list(range(8)), keys=["k"] * 8, types=list("ABXABAAB"))
    >>> r = predict("PATTERN A, B", ev, lookahead=1, output="events")
    >>> r.rows["state"][:3], [round(p, 3) for p in r.rows["probability"][:3]]
    (['A', 'A B', '-'], [0.75, 0.0, 0.0])
    >>> r.rows["matched"]
    [False, True, False, False, True, False, False, True]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from cep.predict.errors import PredictArgumentError
from cep.predict.events import Events, instances, signatures
from cep.predict.machine import SequenceMachine
from cep.predict.markov import build_chain
from cep.predict.model import InstanceState, LeafModel, Model
from cep.predict.prediction import InstanceKey, Prediction, instance_keys
from cep.predict.run import LeafResult, run_leaf
from cep.predict.subscription import Boolean, Node, Sequence, Subscription, compile_subscription

MAX_LOOKAHEAD = 100_000
OUTPUTS = ("keys", "events")
COMBINES = ("independent", "sum")
DEFINITIONS = ("first_passage", "paper")
"""``definition``: ``'first_passage'`` (ours, the default: ``beta(n)`` the probability of a match
within ``n`` events, ``alpha(n)`` of the first match at exactly the ``n``-th; rows normalised by
departures) or ``'paper'`` (P-ToPSS lines 387 and 395-397: ``alpha(n) = P^n[i, F]``, ``beta(n)`` its
sum over ``1..n``, rows normalised by arrivals; :meth:`cep.predict.markov.Chain.occupancy`)."""

def check_definition(definition: Any) -> str:
    """Validate ``definition`` (``CEP-PRED-011``); None means ``'first_passage'``."""
    definition = "first_passage" if definition is None else definition
    if definition not in DEFINITIONS:
        raise PredictArgumentError(f"argument definition: expected one of {', '.join(DEFINITIONS)}, "
                                   f"found {definition!r}")
    return str(definition)


def check_arguments(lookahead: Any, threshold: Any, output: Any = "keys",
                    combine: Any = "independent", smoothing: Any = 0.0) -> tuple[int, float, str, str, float]:
    """Validate the arguments (``CEP-PRED-011``, naming what was expected and found)."""
    if isinstance(lookahead, bool) or not isinstance(lookahead, (int, np.integer)) \
            or not 1 <= int(lookahead) <= MAX_LOOKAHEAD:
        raise PredictArgumentError(f"argument lookahead: expected an integer in [1, {MAX_LOOKAHEAD}], "
                                   f"found {lookahead!r}")
    if threshold is None:
        threshold = 0.0
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.floating, np.integer)) \
            or not 0.0 <= float(threshold) <= 1.0 or math.isnan(float(threshold)):
        raise PredictArgumentError(f"argument threshold: expected a number in [0, 1], found {threshold!r}")
    output = "keys" if output is None else output
    if output not in OUTPUTS:
        raise PredictArgumentError(f"argument output: expected one of {', '.join(OUTPUTS)}, found {output!r}")
    combine = "independent" if combine is None else combine
    if combine not in COMBINES:
        raise PredictArgumentError(f"argument combine: expected one of {', '.join(COMBINES)}, "
                                   f"found {combine!r}")
    smoothing = 0.0 if smoothing is None else smoothing
    if isinstance(smoothing, bool) or not isinstance(smoothing, (int, float, np.floating, np.integer)) \
            or not 0.0 <= float(smoothing) < math.inf:
        raise PredictArgumentError(f"argument smoothing: expected a number >= 0, found {smoothing!r}")
    return int(lookahead), float(threshold), output, combine, float(smoothing)


def and_nodes(node: Node) -> list[Boolean]:
    """The ``&`` nodes of a subscription tree in depth-first order."""
    if isinstance(node, Sequence):
        return []
    out = [node] if node.op == "&" else []
    for part in node.parts:
        out.extend(and_nodes(part))
    return out


def predict(subscription: str | Subscription, events: Events, *, lookahead: int,
            threshold: float = 0.0, model: Model | None = None,
            start: Mapping[InstanceKey, InstanceState] | None = None, output: str = "keys",
            combine: str = "independent", smoothing: float = 0.0,
            definition: str = "first_passage") -> Prediction:
    """Run, train and predict (module docstring).

    Args:
        subscription: the pattern text or a compiled subscription.
        events: the events (any number of keys).
        lookahead: ``n``, the number of future events the prediction looks at.
        threshold: ``theta``; rows with a smaller probability are left out.
        model: a persisted model to predict with (default: the model trained on ``events``).
        start: instance states from an earlier batch (default: every instance starts fresh).
        output: ``'keys'`` (one row per instance) or ``'events'`` (one row per event).
        combine: ``'independent'`` or ``'sum'`` (module docstring).
        smoothing: frequency pseudo-count weight (:func:`cep.predict.markov.build_chain`).
        definition: ``'first_passage'`` (ours) or ``'paper'`` (``DEFINITIONS``); with ``'paper'``
            ``probability`` is the paper's ``beta(lookahead)``, which can exceed 1 and is not
            clipped, and ``p_exact`` its ``alpha(lookahead)``. The paper's ``|`` is
            ``combine='sum'``.

    Raises:
        PatternError / UnsupportedSubscriptionError: a bad subscription.
        PredictArgumentError, PredictEventsError, PredictLimitError, ModelFormatError.
    """
    lookahead, threshold, output, combine, smoothing = check_arguments(lookahead, threshold, output,
                                                                       combine, smoothing)
    definition = check_definition(definition)
    sub = compile_subscription(subscription) if isinstance(subscription, str) else subscription
    if model is not None and model.subscription != sub.text:
        from cep.predict.errors import ModelFormatError

        raise ModelFormatError(f"the model was trained for {model.subscription!r}, not for {sub.text!r}")
    if sub.composite:
        return _predict_composite(sub, events, lookahead, threshold, model, start, output,
                                  smoothing, definition)
    ev, starts = instances(sub, events)
    n = len(ev)
    symbol, sigs = signatures(sub, ev)
    inst_keys = instance_keys(sub, ev, starts)
    begin = [None if start is None else start.get(k) for k in inst_keys]
    _check_start(sub, begin, inst_keys, ev, starts)
    machines = [SequenceMachine.from_sequence(leaf) for leaf in sub.leaves]
    ands = and_nodes(sub.root)
    results, trained = _run_leaves(sub, machines, symbol, sigs, ev, starts, begin)
    used = trained if model is None else model
    beta_of, alpha_of = _leaf_predictions(machines, results, used, begin, lookahead, smoothing,
                                          definition)
    # Boolean nodes, per event.
    start_flags = [tuple(0 for _ in ands) if b is None else b.flags for b in begin]
    fired, prob, flags = _combine(sub.root, results, beta_of, ands, starts, n, start_flags, combine,
                                  clip=definition != "paper")
    single = isinstance(sub.root, Sequence)
    rows = _rows(sub, machines, ev, starts, inst_keys, results, prob, alpha_of if single else None,
                 fired, flags, ands, begin, threshold, output)
    states = _end_states(sub, inst_keys, starts, n, results, fired, flags, ev, begin, ands)
    return Prediction(rows, trained, used, states)


def _run_leaves(sub: Subscription, machines: list[SequenceMachine], symbol: np.ndarray,
                sigs: np.ndarray, ev: Events, starts: np.ndarray,
                begin: list[InstanceState | None]) -> tuple[list[LeafResult], Model]:
    """Run every leaf machine over the events, from the start states of ``begin``.

    Args:
        sub: the subscription.
        machines: one machine per leaf of ``sub``.
        symbol, sigs: each event's symbol and each symbol's signature (:func:`signatures`).
        ev, starts: the events and where each instance starts.
        begin: each instance's state from an earlier batch (None: it starts fresh).

    Returns:
        Each leaf's :func:`run_leaf` result, and the model trained on these events.
    """
    results = []
    trained_leaves = []
    freq = np.bincount(symbol, minlength=len(sigs)).astype(np.int64)
    keep = freq > 0
    for li, (machine, leaf) in enumerate(zip(machines, sub.leaves)):
        masks0 = np.array([machine.start if b is None else b.masks[li] for b in begin], dtype=np.int64)
        configs0 = None
        if leaf.times:
            configs0 = [[(0, (None,) * len({c.earlier for c in leaf.times}))] if b is None or b.configs[li] is None
                        else [(j, tuple(t)) for j, t in b.configs[li]] for b in begin]
        res = run_leaf(machine, leaf, symbol, sigs, ev.ts, starts, masks0, configs0)
        results.append(res)
        trained_leaves.append(LeafModel(res.counts, sigs[keep], freq[keep]))
    return results, Model(sub.text, tuple(trained_leaves))


def _leaf_predictions(machines: list[SequenceMachine], results: list[LeafResult], used: Model,
                      begin: list[InstanceState | None], lookahead: int, smoothing: float,
                      definition: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per leaf, ``beta(lookahead)`` and ``alpha(lookahead)`` after every event.

    Args:
        machines: one machine per leaf.
        results: each leaf's :func:`run_leaf` result.
        used: the model whose chains predict.
        begin: each instance's state from an earlier batch (None: it starts fresh).
        lookahead, smoothing, definition: as for :func:`predict`.

    Returns:
        ``(beta_of, alpha_of)``: one array per leaf, one value per event.
    """
    beta_of: list[np.ndarray] = []
    alpha_of: list[np.ndarray] = []
    for li, (machine, res) in enumerate(zip(machines, results)):
        leaf_model = used.leaves[li]
        extra = np.unique(np.r_[res.masks, res.end_masks, [b.masks[li] for b in begin if b is not None]])
        chain = build_chain(machine, leaf_model.counts, leaf_model.freq_sig, leaf_model.freq_count,
                            extra, smoothing=smoothing,
                            normalise="arrivals" if definition == "paper" else "departures")
        alpha, beta = chain.occupancy(lookahead) if definition == "paper" else chain.first_passage(lookahead)
        idx = chain.index_of(res.masks)
        beta_of.append(beta[lookahead][idx])
        alpha_of.append(alpha[lookahead][idx])
    return beta_of, alpha_of


def _predict_composite(sub: Subscription, events: Events, lookahead: int, threshold: float,
                       model: Model | None, start: Mapping[InstanceKey, InstanceState] | None,
                       output: str, smoothing: float, definition: str) -> Prediction:
    """A master sequence with ``&`` / ``|`` steps (:mod:`cep.predict.composite`)."""
    from cep.predict.composite import predict_composite

    if start:
        raise PredictArgumentError("argument start: a composite subscription (a master sequence with "
                                   "'&' / '|' steps) cannot resume from a persisted state yet")
    if definition != "first_passage":
        raise PredictArgumentError("argument definition: a composite subscription is predicted by "
                                   "the convolution of completion times ('first_passage' only)")
    return predict_composite(sub, events, lookahead=lookahead, threshold=threshold, model=model,
                             output=output, smoothing=smoothing)


def _check_start(sub: Subscription, begin: list[InstanceState | None], inst_keys: list[InstanceKey],
                 ev: Events, starts: np.ndarray) -> None:
    """A start state must fit the subscription, and the events must not go back in time."""
    from cep.predict.errors import ModelFormatError, PredictEventsError

    n_ands = len(and_nodes(sub.root))
    for g, b in enumerate(begin):
        if b is None:
            continue
        timed = [bool(leaf.times) for leaf in sub.leaves]
        fits = (len(b.masks) == len(sub.leaves) and len(b.configs) == len(sub.leaves)
                and len(b.flags) == n_ands
                and all((c is not None) == t for c, t in zip(b.configs, timed)))
        if not fits:
            raise ModelFormatError(f"the instance state of {inst_keys[g]!r} does not fit {sub.text!r} "
                                   f"({len(b.masks)} machines and {len(b.flags)} '&' nodes, expected "
                                   f"{len(sub.leaves)} and {n_ands})")
        first = ev.ts[int(starts[g])].item()
        if b.last_ts is not None and first < b.last_ts:
            raise PredictEventsError(f"instance {inst_keys[g]!r}: an event at {first} is older than the "
                                     f"instance's last event at {b.last_ts}; late events must be set "
                                     "aside before they reach the machine (docs/predict-jobs.md)")


def _combine(root: Node, results: list, beta_of: list[np.ndarray], ands: list[Boolean],
             starts: np.ndarray, n: int, start_flags: list[tuple[int, ...]], combine: str,
             clip: bool = True) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Per event: whether the subscription matched, its probability, and each ``&`` node's flags."""
    flag_arrays = [np.zeros(n, dtype=np.int64) for _ in ands]
    leaf_counter = iter(range(len(results)))

    def walk(node: Node) -> tuple[np.ndarray, np.ndarray]:
        if isinstance(node, Sequence):
            li = next(leaf_counter)
            return results[li].accepted, beta_of[li]
        parts = [walk(p) for p in node.parts]
        if node.op == "|":
            fired = np.logical_or.reduce([f for f, _ in parts])
            if combine == "sum":
                p = np.sum([q for _, q in parts], axis=0)
                p = np.minimum(1.0, p) if clip else p
            else:
                p = 1.0 - np.prod([1.0 - q for _, q in parts], axis=0)
            return fired, p
        k = ands.index(node)
        fired, flags = _and_flags([f for f, _ in parts], starts, n, [s[k] for s in start_flags])
        flag_arrays[k] = flags
        full = (1 << len(parts)) - 1
        p = np.ones(n)
        for bit, (_, q) in enumerate(parts):
            done = (flags >> bit) & 1
            p = p * np.where(done == 1, 1.0, q)
        del full
        return fired, p

    fired, prob = walk(root)
    prob = np.asarray(prob, dtype=np.float64)
    return np.asarray(fired, dtype=bool), np.clip(prob, 0.0, 1.0) if clip else prob, flag_arrays


def _and_flags(parts: list[np.ndarray], starts: np.ndarray, n: int, start: list[int]
               ) -> tuple[np.ndarray, np.ndarray]:
    # Sequential (a node's match resets its flags); only events where a part fires change them.
    full = (1 << len(parts)) - 1
    bits = np.zeros(n, dtype=np.int64)
    for b, f in enumerate(parts):
        bits |= np.asarray(f, dtype=np.int64) << b
    fired = np.zeros(n, dtype=bool)
    flags = np.zeros(n, dtype=np.int64)
    bounds = [int(s) for s in starts] + [n]
    for g in range(len(bounds) - 1):
        a, b = bounds[g], bounds[g + 1]
        state = start[g]
        hits = np.flatnonzero(bits[a:b]) + a
        last = a
        for i in hits.tolist():
            flags[last:i] = state
            state |= int(bits[i])
            if state == full:
                fired[i] = True
                state = 0
            flags[i] = state
            last = i + 1
        flags[last:b] = state
    return fired, flags


def _label(sub: Subscription, machines: list[SequenceMachine], masks: list[int], flags: list[int],
           ands: list[Boolean]) -> str:
    leaf_counter = iter(range(len(machines)))

    def walk(node: Node, done: bool) -> str:
        if isinstance(node, Sequence):
            li = next(leaf_counter)
            text = "matched" if done else machines[li].label(masks[li])
            return text if isinstance(sub.root, Sequence) else f"[{text}]"
        if node.op == "&":
            k = ands.index(node)
            inner = [walk(p, done or bool((flags[k] >> b) & 1)) for b, p in enumerate(node.parts)]
            return "(" + " & ".join(inner) + ")"
        return "(" + " | ".join(walk(p, done) for p in node.parts) + ")"

    out = walk(sub.root, False)
    return out[1:-1] if out.startswith("(") and out.endswith(")") and not isinstance(sub.root, Sequence) else out


def _rows(sub: Subscription, machines: list[SequenceMachine], ev: Events, starts: np.ndarray,
          inst_keys: list[InstanceKey], results: list, prob: np.ndarray, alpha: list[np.ndarray] | None,
          fired: np.ndarray, flags: list[np.ndarray], ands: list[Boolean], begin: list,
          threshold: float, output: str) -> dict[str, list[Any]]:
    n = len(ev)
    bounds = [int(s) for s in starts] + [n]
    inst_text = [None if not k[1] else ", ".join("NULL" if v is None else str(v) for v in k[1])
                 for k in inst_keys]
    progress_all = np.zeros(n, dtype=np.int64)
    for m, r in zip(machines, results):
        progress_all = np.maximum(progress_all, _progress(r.masks))
    if output == "events":
        pick = np.flatnonzero(prob >= threshold)
        group = np.searchsorted(np.asarray(bounds[:-1]), pick, side="right") - 1
        rows: dict[str, list[Any]] = {
            "key": [inst_keys[g][0] for g in group.tolist()],
            "instance": [inst_text[g] for g in group.tolist()],
            "id": [None if ev.ids is None else v for v in (ev.ids[pick].tolist() if ev.ids is not None else [None] * len(pick))],
            "ts": ev.ts[pick].tolist(),
            "state": [_label(sub, machines, [int(r.masks[i]) for r in results], [int(f[i]) for f in flags], ands)
                      for i in pick.tolist()],
            "progress": progress_all[pick].tolist(),
            "probability": prob[pick].tolist(),
            "p_exact": alpha[0][pick].tolist() if alpha is not None else [None] * len(pick),
            "matched": fired[pick].tolist(),
        }
        return rows
    rows = {k: [] for k in ("key", "instance", "state", "progress", "probability", "p_exact",
                            "matched", "matches", "events", "last_ts")}
    for g in range(len(bounds) - 1):
        a, b = bounds[g], bounds[g + 1]
        if b <= a:
            continue
        i = b - 1
        if prob[i] < threshold:
            continue
        prior = begin[g]
        rows["key"].append(inst_keys[g][0])
        rows["instance"].append(inst_text[g])
        rows["state"].append(_label(sub, machines, [int(r.masks[i]) for r in results],
                                    [int(f[i]) for f in flags], ands))
        rows["progress"].append(int(progress_all[i]))
        rows["probability"].append(float(prob[i]))
        rows["p_exact"].append(None if alpha is None else float(alpha[0][i]))
        rows["matched"].append(bool(fired[i]))
        rows["matches"].append(int(fired[a:b].sum()) + (0 if prior is None else prior.matches))
        rows["events"].append(b - a + (0 if prior is None else prior.events))
        rows["last_ts"].append(ev.ts[i].item())
    return rows


def _progress(masks: np.ndarray) -> np.ndarray:
    out = np.zeros(len(masks), dtype=np.int64)
    m = masks.copy()
    while (m > 0).any():
        live = m > 0
        out[live] += 1
        m >>= 1
    return np.maximum(out - 1, 0)


def _end_states(sub: Subscription, inst_keys: list[InstanceKey], starts: np.ndarray, n: int,
                results: list, fired: np.ndarray, flags: list[np.ndarray], ev: Events, begin: list,
                ands: list[Boolean]) -> dict[InstanceKey, InstanceState]:
    bounds = [int(s) for s in starts] + [n]
    out: dict[InstanceKey, InstanceState] = {}
    for g, key in enumerate(inst_keys):
        a, b = bounds[g], bounds[g + 1]
        prior = begin[g]
        configs = tuple(None if r.end_configs is None else tuple(r.end_configs[g]) for r in results)
        out[key] = InstanceState(
            tuple(int(r.end_masks[g]) for r in results), configs,
            tuple(int(f[b - 1]) for f in flags) if b > a else tuple(0 for _ in ands),
            int(fired[a:b].sum()) + (0 if prior is None else prior.matches),
            b - a + (0 if prior is None else prior.events),
            ev.ts[b - 1].item() if b > a else None)
    return out
