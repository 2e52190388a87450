"""``predict`` for composite subscriptions: match with child machines, train segments, convolve.

A composite subscription (a master sequence with ``&`` / ``|`` steps, Muthusamy et al. section
4.2, Fig. 5) runs per instance through :class:`cep.predict.nested.CompositeMatcher`. Prediction
follows section 5.2.3 (:mod:`cep.predict.convolve`): the tree is cut into *segments* (every child
sequence without child steps, and every maximal run of primitive steps of a sequence that has
child steps), each segment's chain is trained on the instance's events as a standalone machine,
and a run's completion-time distribution is the convolution (sequence), maximum (``&``) and
minimum (``|``) of its pieces'. Of several live partial matches of one sequence we follow the
one most likely to complete (a lower bound of the run's probability: they share events, so
neither independence nor a sum would be right). Time conditions constrain matching, not the
prediction.

Example:
    >>> from cep.predict.events import Events
    >>> ev = Events.from_columns(ts=list(range(6)), keys=["k"] * 6, types=list("ACBDAB"))
    >>> r = predict_composite(compile_subscription("PATTERN A ; (B & C) ; D"), ev, lookahead=2)
    >>> r.rows["state"], r.rows["matches"]
    (['A ; (B & C)'], [1])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cep.lang.ast import FOLLOWED, NEXT
from cep.predict.convolve import SegmentModel, both, either, start_next, then
from cep.predict.errors import PredictArgumentError
from cep.predict.events import Events, instances, signatures
from cep.predict.machine import SequenceMachine
from cep.predict.model import LeafModel, Model
from cep.predict.nested import CompositeMatcher
from cep.predict.prediction import Prediction, instance_keys
from cep.predict.run import run_leaf
from cep.predict.subscription import Node, Sequence, Subscription, compile_subscription


class Segments:
    """The segments of a composite subscription (module docstring), in depth-first order.

    Attributes:
        leaves: the segments' flat sequences (no time conditions: they constrain matching only).
        machines: their machines.
        plan: per sequence (by ``id``), its pieces: ``("flat", segment, first step, end step)``
            or ``("child", step)``.
    """

    def __init__(self, root: Sequence) -> None:
        self.leaves: list[Sequence] = []
        self.machines: list[SequenceMachine] = []
        self.plan: dict[int, list[tuple]] = {}
        self._cut(root)

    def _cut(self, node: Node) -> None:
        if not isinstance(node, Sequence):
            for part in node.parts:
                self._cut(part)
            return
        pieces: list[tuple] = []
        children = node.children or (None,) * len(node.steps)
        j = 0
        while j < len(node.steps):
            if children[j] is not None:
                self._cut(children[j])
                pieces.append(("child", j))
                j += 1
                continue
            e = j
            while e < len(node.steps) and children[e] is None:
                e += 1
            flat = Sequence(node.steps[j:e], node.aliases[j:e], node.links[j:e - 1], (),
                            _text(node, j, e))
            pieces.append(("flat", len(self.leaves), j, e))
            self.leaves.append(flat)
            self.machines.append(SequenceMachine.from_sequence(flat))
            j = e
        self.plan[id(node)] = pieces


def _text(seq: Sequence, a: int, e: int) -> str:
    return " ".join(seq.aliases[a] if i == a else ("," if seq.links[i - 1] == NEXT else ";") + " "
                    + seq.aliases[i] for i in range(a, e)).replace(" ,", ",")


class Forecast:
    """Completion-time distributions of runs (``F[m]``, ``m = 0..n``), memoised per run value."""

    def __init__(self, segs: Segments, models: list[SegmentModel], n: int) -> None:
        self.segs = segs
        self.models = models
        self.n = n
        self.memo: dict[tuple, np.ndarray] = {}
        self.ones = np.ones(n + 1)

    def fresh(self, node: Node, link: str) -> np.ndarray:
        """A node activated now with ``link``."""
        key = ("fresh", id(node), link)
        if key not in self.memo:
            self.memo[key] = self._fresh(node, link)
        return self.memo[key]

    def _fresh(self, node: Node, link: str) -> np.ndarray:
        if isinstance(node, Sequence):
            return self.rest(node, 0, link, None)
        if node.op == "|":
            out = np.zeros(self.n + 1)
            for part in node.parts:
                out = either(out, self.fresh(part, link))
            return out
        fol = [self.fresh(p, FOLLOWED) for p in node.parts]
        if link == NEXT:
            return start_next(fol, [self.fresh(p, NEXT) for p in node.parts])
        return np.prod(fol, axis=0)

    def rest(self, seq: Sequence, j: int, link: str, sub_run: Any) -> np.ndarray:
        """A configuration of ``seq`` waiting at step ``j`` (its child's run ``sub_run``)."""
        out = None
        for piece in self.segs.plan[id(seq)]:
            if piece[0] == "flat":
                _, s, a, e = piece
                if e <= j:
                    continue
                first = a if a > j else j
                piece_link = link if first == 0 else seq.links[first - 1]
                f = self.models[s].completion(1 << (first - a), piece_link, self.n)
            else:
                step = piece[1]
                if step < j:
                    continue
                step_link = link if step == 0 else seq.links[step - 1]
                child = seq.children[step]
                f = self.run(child, sub_run) if step == j and sub_run is not None \
                    else self.fresh(child, step_link)
            out = f if out is None else then(out, f)
        return self.ones if out is None else out

    def run(self, node: Node, run: Any) -> np.ndarray:
        """A run in progress (:mod:`cep.predict.nested`)."""
        key = ("run", id(node), run)
        if key not in self.memo:
            self.memo[key] = self._run(node, run)
        return self.memo[key]

    def _run(self, node: Node, run: Any) -> np.ndarray:
        kind = run[0]
        if kind == "seq":
            return self.best(node, run)[1]
        if kind == "or":
            parts = node.parts if node.op == "|" else (node,) * len(run[1])
            out = np.zeros(self.n + 1)
            for part, r in zip(parts, run[1]):
                if r is not None:
                    out = either(out, self.run(part, r))
            return out
        out = self.ones
        for part, r, done in zip(node.parts, run[1], run[2]):
            if done:
                continue
            out = both(out, self.run(part, r) if r is not None else np.zeros(self.n + 1))
        return out

    def best(self, seq: Sequence, run: Any) -> tuple[tuple, np.ndarray]:
        """The configuration of a sequence run most likely to complete within ``n``, and its F."""
        _, link, configs = run
        found = None
        for cfg in sorted(configs, key=lambda c: (-c[0], repr(c))):
            f = self.rest(seq, cfg[0], link, cfg[1])
            if found is None or f[-1] > found[1][-1]:
                found = (cfg, f)
        return found


def label(seq: Sequence, run: Any, forecast: Forecast) -> tuple[str, int]:
    """A readable state of a sequence run (its most promising configuration) and its step."""
    cfg, _ = forecast.best(seq, run)
    j, sub_run, _ = cfg
    parts = []
    for i in range(j):
        parts.append(seq.aliases[i] if i == 0 else ("," if seq.links[i - 1] == NEXT else ";") + " "
                     + seq.aliases[i])
    text = " ".join(parts).replace(" ,", ",")
    if sub_run is not None:
        inner = _child_label(seq.children[j], sub_run, forecast)
        text = (text + " ; " if text else "") + f"[{inner}]"
    return text or "-", j


def _child_label(node: Node, run: Any, forecast: Forecast) -> str:
    if run[0] == "seq":
        return label(node, run, forecast)[0]
    if run[0] == "or":
        parts = node.parts if node.op == "|" else (node,) * len(run[1])
        inner = [_child_label(p, r, forecast) for p, r in zip(parts, run[1]) if r is not None]
        return inner[0] if len(inner) == 1 and node.op == "&" else "(" + " | ".join(inner) + ")"
    inner = ["matched" if d else (_child_label(p, r, forecast) if r is not None else "-")
             for p, r, d in zip(node.parts, run[1], run[2])]
    return "(" + " & ".join(inner) + ")"


def predict_composite(subscription: str | Subscription, events: Events, *, lookahead: int,
                      threshold: float = 0.0, model: Model | None = None, output: str = "keys",
                      smoothing: float = 0.0) -> Any:
    """Run, train and predict a composite subscription (module docstring).

    Returns a :class:`cep.predict.prediction.Prediction` with the columns of :func:`predict` and no
    instance states (a composite run cannot be persisted yet).
    """
    sub = compile_subscription(subscription) if isinstance(subscription, str) else subscription
    if smoothing:
        raise PredictArgumentError("argument smoothing: not supported for a composite subscription "
                                   "(a master sequence with '&' / '|' steps); use 0")
    ev, starts = instances(sub, events)
    n = len(ev)
    symbol, sigs = signatures(sub, ev)
    segs = Segments(sub.root)
    freq = np.bincount(symbol, minlength=len(sigs)).astype(np.int64)
    keep = freq > 0
    trained_leaves = []
    for machine, leaf in zip(segs.machines, segs.leaves):
        res = run_leaf(machine, leaf, symbol, sigs, ev.ts, starts)
        trained_leaves.append(LeafModel(res.counts, sigs[keep], freq[keep]))
    trained = Model(sub.text, tuple(trained_leaves))
    used = trained if model is None else model
    if len(used.leaves) != len(segs.leaves):
        from cep.predict.errors import ModelFormatError

        raise ModelFormatError(f"the model has {len(used.leaves)} machines, {sub.text!r} has "
                               f"{len(segs.leaves)} segments")
    models = [SegmentModel.train(m, lm.counts, lm.freq_sig, lm.freq_count)
              for m, lm in zip(segs.machines, used.leaves)]
    forecast = Forecast(segs, models, lookahead)
    matcher = CompositeMatcher(sub)
    sig_of = [int(s) for s in sigs]
    sym = symbol.tolist()
    ts = ev.ts.tolist()
    matched = np.zeros(n, dtype=bool)
    prob = np.zeros(n)
    p_exact = np.zeros(n)
    labels: list[str] = [""] * n
    progress = np.zeros(n, dtype=np.int64)
    bounds = [int(s) for s in starts] + [n]
    want_all = output == "events"
    for g in range(len(bounds) - 1):
        a, b = bounds[g], bounds[g + 1]
        run = matcher.start()
        for i in range(a, b):
            run, matched[i] = matcher.step(run, i, sig_of[sym[i]], ts[i])
            if want_all or i == b - 1:
                f = forecast.run(sub.root, run)
                prob[i], p_exact[i] = f[-1], f[-1] - f[-2]
                labels[i], progress[i] = label(sub.root, run, forecast)
    rows = _rows(sub, ev, starts, bounds, matched, prob, p_exact, labels, progress, threshold, output)
    return Prediction(rows, trained, used, {})


def _rows(sub: Subscription, ev: Events, starts: np.ndarray, bounds: list[int], matched: np.ndarray,
          prob: np.ndarray, p_exact: np.ndarray, labels: list[str], progress: np.ndarray,
          threshold: float, output: str) -> dict[str, list[Any]]:
    inst_keys = instance_keys(sub, ev, starts)
    inst_text = [None if not k[1] else ", ".join("NULL" if v is None else str(v) for v in k[1])
                 for k in inst_keys]
    if output == "events":
        pick = np.flatnonzero(prob >= threshold)
        group = np.searchsorted(np.asarray(bounds[:-1]), pick, side="right") - 1
        return {
            "key": [inst_keys[g][0] for g in group.tolist()],
            "instance": [inst_text[g] for g in group.tolist()],
            "id": ev.ids[pick].tolist() if ev.ids is not None else [None] * len(pick),
            "ts": ev.ts[pick].tolist(),
            "state": [labels[i] for i in pick.tolist()],
            "progress": progress[pick].tolist(),
            "probability": prob[pick].tolist(),
            "p_exact": p_exact[pick].tolist(),
            "matched": matched[pick].tolist(),
        }
    rows: dict[str, list[Any]] = {k: [] for k in ("key", "instance", "state", "progress", "probability",
                                                  "p_exact", "matched", "matches", "events", "last_ts")}
    for g in range(len(bounds) - 1):
        a, b = bounds[g], bounds[g + 1]
        if b <= a or prob[b - 1] < threshold:
            continue
        i = b - 1
        rows["key"].append(inst_keys[g][0])
        rows["instance"].append(inst_text[g])
        rows["state"].append(labels[i])
        rows["progress"].append(int(progress[i]))
        rows["probability"].append(float(prob[i]))
        rows["p_exact"].append(float(p_exact[i]))
        rows["matched"].append(bool(matched[i]))
        rows["matches"].append(int(matched[a:b].sum()))
        rows["events"].append(b - a)
        rows["last_ts"].append(ev.ts[i].item())
    return rows
