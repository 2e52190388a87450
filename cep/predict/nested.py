"""Matching composite subscriptions: a master sequence whose steps may be Boolean child machines.

Muthusamy, Liu and Jacobsen (DEBS 2010), section 4.2 and Fig. 5: ``s1 ; ((s2, s3) & (s4, s5)) ;
s6 ; (s7 | s8)`` is a master state machine whose second and fourth steps are Boolean machines
over child state machines. When the master reaches the state before a child step it sends an
*in-trigger* that activates the child; the child's match is an *out-trigger*, a derived event
that moves the master on. The definitions (docs/predict.md section 5.1) are enumerated by
:func:`cep.oracles.predict_oracle.composite_match_ends`; this module computes the same matches
event by event.

A child's state depends on when it was activated (it examines only the events after its
in-trigger), so there is no single table state per machine. A *run* of a node is an immutable
value that holds everything one activation needs:

* a sequence run is ``("seq", link, configs)``: ``configs`` a frozenset of ``(step, child run or
  None, bindings)``: the next step to match, the run of the child at that step, and the
  timestamps bound to the aliases that time conditions read (the paper's time lists, here
  global across machines so that Table 3's cases 2-5 can be evaluated, section 5.1.2);
* an ``|`` run is ``("or", runs)``; an ``&`` run ``("and", runs, done)`` where ``done[i]`` holds
  the bindings of part ``i``'s matches so far: the node matches when a part matches and every
  other part has matched at or before that event (the later of the parts' completions).

Runs that can no longer match are dropped (None). A new child activation at a ``;`` step is
skipped when a configuration with the same bindings already waits at that step: the older
activation sees every event the newer one does (its own restarts included), so it completes
whenever the newer one would. Bindings that can no longer meet a ``<`` / ``<=`` bound to an alias
that every completion still has to bind after now are pruned (Algorithm Prune).

Example:
    >>> from cep.predict.subscription import compile_subscription
    >>> sub = compile_subscription("PATTERN A ; (B & C) ; D")
    >>> m = CompositeMatcher(sub)
    >>> truth = [[p == q for p in range(4)] for q in (0, 2, 1, 3)]     # A, C, B, D
    >>> run = m.start()
    >>> out = []
    >>> for i, row in enumerate(truth):
    ...     run, done = m.step(run, i, m.signature(row), float(i))
    ...     out.append(done)
    >>> out
    [False, False, False, True]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

from cep.lang.ast import FOLLOWED, NEXT
from cep.predict.errors import PredictLimitError
from cep.predict.subscription import Boolean, Node, Sequence, Subscription

MAX_CONFIGS = 10_000

Bindings = tuple  # one timestamp (or None) per slot
Run = Any         # ("seq", link, frozenset) | ("or", tuple) | ("and", tuple, tuple)


@dataclass(frozen=True)
class _Cond:
    later: int
    earlier: int
    holds: Callable[[Any, Any], bool]
    op: str
    bound: Any
    expires: bool          # a pending '<' / '<=' bound that time's passing can break


class CompositeMatcher:
    """The event-by-event matcher of one composite subscription (module docstring).

    Args:
        sub: a compiled subscription whose root is a sequence (with or without child steps).
        max_configs: the most configurations a run may hold (``CEP-PRED-020`` above it).
    """

    def __init__(self, sub: Subscription, max_configs: int = MAX_CONFIGS) -> None:
        if not isinstance(sub.root, Sequence):
            raise ValueError("a composite subscription's root is a sequence")
        self.sub = sub
        self.max_configs = max_configs
        raw: list[tuple[str, str, Callable, str, Any, bool]] = []
        self._collect(sub.root, raw)
        for c in sub.cross_times:
            raw.append((c.later, c.earlier, c.holds, c.op, c.bound, c.ordered and not c.absolute))
        slots: dict[str, int] = {}
        for later, earlier, *_ in raw:
            slots.setdefault(earlier, len(slots))
            slots.setdefault(later, len(slots))
        self.slots = slots
        self.names = tuple(sorted(slots, key=slots.get))    # slot -> alias
        self.conds = tuple(_Cond(slots[a], slots[b], h, op, bound, ordered and op in ("<", "<="))
                           for a, b, h, op, bound, ordered in raw)
        self.empty: Bindings = (None,) * len(slots)
        # after[id(node)]: aliases every completion still binds after ``node`` completes.
        self.after: dict[int, frozenset[str]] = {}
        self._after(sub.root, frozenset())

    # -- static structure --------------------------------------------------------------------
    def _collect(self, node: Node, raw: list) -> None:
        if isinstance(node, Sequence):
            for c in node.times:
                raw.append((node.aliases[c.later], node.aliases[c.earlier], c.holds, c.op, c.bound, True))
            for child in node.children:
                if child is not None:
                    self._collect(child, raw)
        else:
            for part in node.parts:
                self._collect(part, raw)

    def _after(self, node: Node, later: frozenset[str]) -> None:
        self.after[id(node)] = later
        if isinstance(node, Sequence):
            for j, child in enumerate(node.children):
                if child is not None:
                    rest = later | frozenset().union(*(self._mandatory(node, m)
                                                       for m in range(j + 1, len(node.steps))))
                    self._after(child, rest)
        else:
            for part in node.parts:
                self._after(part, later)

    def _mandatory(self, seq: Sequence, j: int) -> frozenset[str]:
        """Aliases that every match of step ``j`` of ``seq`` binds."""
        child = seq.children[j] if seq.children else None
        return frozenset({seq.aliases[j]}) if child is None else _mandatory(child)

    def future(self, seq: Sequence, j: int) -> frozenset[str]:
        """Aliases a configuration waiting at step ``j`` of ``seq`` must still bind after now."""
        own = frozenset().union(*(self._mandatory(seq, m) for m in range(j, len(seq.steps))))
        if seq.children and seq.children[j] is not None:
            own -= _mandatory(seq.children[j])       # the child may have bound them already
        return own | self.after[id(seq)]

    def signature(self, truth_row: Iterable[bool]) -> int:
        """An event's signature (one bit per primitive) from its truth values."""
        return sum(1 << i for i, v in enumerate(truth_row) if v)

    # -- runs ----------------------------------------------------------------------------------
    def start(self) -> Run:
        """The master's run before the stream (activated with ``;``: any event may start it)."""
        return self.init(self.sub.root, FOLLOWED, self.empty)

    def init(self, node: Node, link: str, b: Bindings) -> Run:
        """A run of ``node`` activated now with ``link`` and the bindings made so far."""
        if isinstance(node, Sequence):
            return ("seq", link, frozenset({self._enter(node, 0, link, b)}))
        if node.op == "|":
            return ("or", tuple(self.init(p, link, b) for p in node.parts))
        if link == NEXT:
            # ',' before an '&': its first event (the earliest part's) is the very next event,
            # so some part starts there: a '|' over "part i with ',' and the others with ';'".
            return ("or", tuple(("and", tuple(self.init(p, NEXT if i == k else FOLLOWED, b)
                                              for i, p in enumerate(node.parts)),
                                 tuple(frozenset() for _ in node.parts))
                                for k in range(len(node.parts))))
        return ("and", tuple(self.init(p, FOLLOWED, b) for p in node.parts),
                tuple(frozenset() for _ in node.parts))

    def _enter(self, seq: Sequence, j: int, link: str, b: Bindings) -> tuple:
        child = seq.children[j] if seq.children else None
        return (j, None if child is None else self.init(child, link, b), b)

    def step(self, run: Run, i: int, sig: int, ts: Any) -> tuple[Run, bool]:
        """The master's run after event ``i`` and whether a match of the subscription ends there."""
        new, done = self._step(self.sub.root, run, sig, ts)
        return (self.start() if new is None else new), bool(done)

    def _step(self, node: Node, run: Run, sig: int, ts: Any) -> tuple[Run | None, frozenset]:
        kind = run[0]
        if kind == "seq":
            return self._step_seq(node, run, sig, ts)
        if kind == "or":
            # An '|' run holds its parts' runs; an '&' after ',' is an "or" of runs of itself.
            parts = node.parts if node.op == "|" else (node,) * len(run[1])
            runs, done = [], set()
            for part, r in zip(parts, run[1]):
                if r is None:
                    runs.append(None)
                    continue
                r2, d = self._step(part, r, sig, ts)
                runs.append(r2)
                done |= d
            alive = any(r is not None for r in runs)
            return (("or", tuple(runs)) if alive else None), frozenset(done)
        return self._step_and(node, run, sig, ts)

    def _step_and(self, node: Boolean, run: Run, sig: int, ts: Any) -> tuple[Run | None, frozenset]:
        _, runs, done = run
        new_runs, now = [], []
        for part, r in zip(node.parts, runs):
            if r is None:
                new_runs.append(None)
                now.append(frozenset())
                continue
            r2, d = self._step(part, r, sig, ts)
            new_runs.append(r2)
            now.append(d)
        out: set = set()
        # The node completes now when some part completes now and all others have (at or before).
        for k, fresh in enumerate(now):
            if not fresh:
                continue
            pools = [fresh if m == k else (done[m] | now[m] if m > k else done[m])
                     for m in range(len(now))]
            # m < k uses only earlier completions so that each combination is counted once.
            for combo in _product(pools):
                merged = self._join(combo)
                if merged is not None:
                    out.add(merged)
        horizon = self.after[id(node)]
        new_done = tuple(self._prune(d | n, horizon, ts) for d, n in zip(done, now))
        can = all(bool(d) or r is not None for d, r in zip(new_done, new_runs)) \
            and any(r is not None for r in new_runs)
        return (("and", tuple(new_runs), new_done) if can else None), frozenset(out)

    def _step_seq(self, seq: Sequence, run: Run, sig: int, ts: Any) -> tuple[Run | None, frozenset]:
        _, link, configs = run
        k = len(seq.steps)
        kept: dict[tuple, None] = {}
        waiting: set[tuple[int, Bindings]] = set()
        done: set = set()

        def keep(cfg: tuple) -> None:
            kept[cfg] = None
            if cfg[1] is not None:
                waiting.add((cfg[0], cfg[2]))

        entered: list[tuple[int, Bindings]] = []
        for j, sub_run, b in configs:
            child = seq.children[j] if seq.children else None
            step_link = link if j == 0 else seq.links[j - 1]
            if child is None:
                if step_link == FOLLOWED:
                    keep((j, None, b))
                if (sig >> seq.steps[j]) & 1:
                    b2 = self._bind(b, seq.aliases[j], ts)
                    if b2 is not None:
                        entered.append((j + 1, b2))
            else:
                r2, completed = self._step(child, sub_run, sig, ts)
                if r2 is not None:
                    keep((j, r2, b))
                entered.extend((j + 1, b2) for b2 in completed)
        for j, b in entered:
            if j == k:
                done.add(b)
                continue
            child = seq.children[j] if seq.children else None
            if child is not None and seq.links[j - 1] == FOLLOWED and (j, b) in waiting:
                continue        # an older activation with these bindings completes whenever this would
            cfg = self._enter(seq, j, seq.links[j - 1], b)
            keep(cfg)
        live = [c for c in kept if not self._expired(c[2], self.future(seq, c[0]), ts)]
        if len(live) > self.max_configs:
            raise PredictLimitError(f"a run of {seq.text!r} holds more than {self.max_configs} live "
                                    "partial matches; tighten the time conditions")
        return (("seq", link, frozenset(live)) if live else None), frozenset(done)

    # -- bindings ------------------------------------------------------------------------------
    def _bind(self, b: Bindings, alias: str, ts: Any) -> Bindings | None:
        s = self.slots.get(alias)
        if s is None:
            return b
        b2 = b[:s] + (ts,) + b[s + 1:]
        return b2 if self._ok(b2) else None

    def _join(self, combo: tuple[Bindings, ...]) -> Bindings | None:
        merged = list(combo[0])
        for other in combo[1:]:
            for s, v in enumerate(other):
                if v is not None:
                    merged[s] = v
        out = tuple(merged)
        return out if self._ok(out) else None

    def _ok(self, b: Bindings) -> bool:
        return all(c.holds(b[c.later], b[c.earlier]) for c in self.conds
                   if b[c.later] is not None and b[c.earlier] is not None)

    def _expired(self, b: Bindings, future: frozenset[str], now: Any) -> bool:
        for c in self.conds:
            if not c.expires or b[c.earlier] is None or b[c.later] is not None:
                continue
            if self.names[c.later] not in future:
                continue
            d = now - b[c.earlier]
            if (c.op == "<" and d >= c.bound) or (c.op == "<=" and d > c.bound):
                return True
        return False

    def _prune(self, done: frozenset, horizon: frozenset[str], now: Any) -> frozenset:
        if not self.conds or not done:
            return done
        return frozenset(b for b in done if not self._expired(b, horizon, now))



def _mandatory(node: Node) -> frozenset[str]:
    """Aliases every match of ``node`` binds (an ``|`` binds only those all its parts bind)."""
    if isinstance(node, Sequence):
        out: set[str] = set()
        for j, a in enumerate(node.aliases):
            child = node.children[j] if node.children else None
            out |= {a} if child is None else _mandatory(child)
        return frozenset(out)
    sets = [_mandatory(p) for p in node.parts]
    return frozenset.union(*sets) if node.op == "&" else frozenset.intersection(*sets)


def _product(pools: list) -> Iterable[tuple]:
    if not pools:
        yield ()
        return
    for head in pools[0]:
        for rest in _product(pools[1:]):
            yield (head,) + rest


def match_composite(sub: Subscription, truth: list[list[bool]], ts: list[Any]) -> list[bool]:
    """Whether a match ends at each event of one instance (the oracle's interface).

    Args:
        sub: the compiled subscription.
        truth: per event, whether it satisfies each primitive.
        ts: per event, its timestamp (time order).
    """
    m = CompositeMatcher(sub)
    run = m.start()
    out = []
    for i, row in enumerate(truth):
        run, done = m.step(run, i, m.signature(row), ts[i])
        out.append(done)
    return out
