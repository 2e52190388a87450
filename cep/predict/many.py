"""Many subscriptions over one event stream at once: shared symbols, one flat table, pooled chains.

P-ToPSS (Muthusamy, Liu and Jacobsen, DEBS 2010) serves many subscriptions at once: an event is
tested against the primitive subscriptions once, and every subscription's machine moves on.
:func:`run_many` does that for ``N`` sequence subscriptions without time conditions, Boolean
nodes or join variables (those run one at a time through :func:`cep.predict.answer.predict`):

1. **symbols once** (:func:`compile_many`, :func:`alphabet`): the primitives of all
   subscriptions are deduplicated (by their condition's SQL, or by class for a class without
   DEFINE) and evaluated once per event; the distinct rows of primitive truths are the common
   *symbols*, and each subscription's own signature of a symbol (the bits of *its* primitives,
   as :func:`cep.predict.events.signatures` numbers them) is projected from the symbol's row;
2. **one flat table** (:func:`cep.predict.merge.flat_table`): every machine's transition table
   over the common symbols, stacked, so the states of all subscriptions after an event are one
   vector ``cur`` and an event with symbol ``g`` moves them all with ``cur = T[cur, g]``
   (one ``numpy.take`` from the table's row for ``g``);
3. **training counts** per chunk of events: the ``(state, symbol)`` pairs of the chunk are
   counted with ``np.bincount`` into an ``(S, G)`` matrix, which names every transition (the
   next state is ``T[state, symbol]``); per subscription this is exactly the
   :class:`~cep.predict.run.TransitionCounts` that :func:`cep.predict.run.run_leaf` returns;
4. **prediction** (:func:`beta_table`): the Markov chain of every subscription, with the rule
   of :func:`cep.predict.markov.build_chain` (observed rows from the counts, rows never left
   from the symbol frequencies, ``smoothing`` pseudo-counts), built for all flat states at once,
   and ``alpha(n)``, ``beta(n)`` by the exact first-passage recurrence. ``merged=True`` first
   merges equivalent states across subscriptions (:mod:`cep.predict.merge`) and *pools* their
   counts: one chain row per class, trained on the events of all its states. Pooling changes
   nothing when the rows come from symbol frequencies (i.i.d. events: equivalent states have
   the same first-passage probabilities) and when the pooled states were trained on the same
   events (identical subscriptions); otherwise a class's row is the count-weighted mixture of
   its states' rows, more data for rare states at the price of their differences.

The per-event loop: the recurrence is sequential in time, so the loop runs over events and is
vectorised over subscriptions, one ``numpy.take`` per event. Measured (BENCHMARKS.md
"predict_match core": paper-default uniform workload, 100,000 events, CPU seconds on a shared
2-core machine) it costs about 1.4 us per event plus 3 to 4 ns per subscription: 736 k events/s
at 10 subscriptions, 214 k at 1,000, 27 k at 10,000. A Python loop per subscription
(:func:`cep.predict.run.run_leaf`) costs about 0.07 us per event and subscription, so it is 2x
faster at 10 subscriptions, and the flat table is faster from a few dozen on: for matching 4x at
100, 15x at 1,000, 18x at 10,000 subscriptions (10x and 11x with a prediction for every
subscription after every event). Vectorising over events instead (prefix
composition of the per-event transition functions) would cost ``O(S log n)`` per event, more
than the ``N`` lookups of the loop, since ``S`` (all states) is about ``11 N`` here.

Example:
    >>> from cep.predict.events import Events
    >>> ev = Events.from_columns(ts=list(range(7)), types=list("ABXABAB"))
    >>> r = run_many(["PATTERN A, B", "PATTERN A ; B", "PATTERN B, A"], ev, lookahead=2)
    >>> r.matches.tolist(), r.end_masks.tolist(), r.probability.tolist()
    ([3, 3, 1], [[5, 6, 3]], [[0.5, 0.75, 0.5]])
    >>> from cep.predict.answer import predict      # the same as one subscription at a time
    >>> predict("PATTERN A ; B", ev, lookahead=2).rows["probability"]
    [0.75]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np

from cep.predict.errors import PredictArgumentError, PredictLimitError
from cep.predict.events import MAX_PRIMITIVES, Events, primitive_truths
from cep.predict.machine import SequenceMachine
from cep.predict.markov import Chain
from cep.predict.merge import FlatTable, MergeReport, flat_table, merge_tables
from cep.predict.model import LeafModel, Model
from cep.predict.run import TransitionCounts
from cep.predict.subscription import Primitive, Sequence as SequenceNode, Subscription, compile_subscription

__all__ = ["Alphabet", "MERGE_RULES", "ManyResult", "Workload", "alphabet", "beta_table", "compile_many",
           "chunk_rows", "merge_counts", "pair_chain", "project", "run_many", "walk"]

MERGE_RULES = ("future", "prefix")
"""How :func:`merge_counts` merges states: ``'future'`` (ours, the default:
:func:`cep.predict.merge.merge_tables` on our machines, states with the same future; the merged
classes share one chain row, which is what ``run_many(..., merged=True)`` uses) or ``'prefix'``
(the paper's section 4.3: :func:`cep.predict.paper.merge_prefix` on the paper's BuildStateMachine
graphs, states reached by the same incoming transitions from equivalent states; the classes
cannot share a chain row, since members wait for different next events)."""

CHUNK = 4096
"""The most events per chunk: the states of a chunk are one ``(chunk, M)`` int32 block."""
CELLS = 1 << 22
"""States per chunk block the default chunk size aims at (16 MB of int32)."""
MAX_SUBSCRIPTIONS = 1_000_000


@dataclass(frozen=True, eq=False)
class Workload:
    """Compiled subscriptions that run together.

    Attributes:
        subscriptions: the compiled subscriptions (None when built from machines).
        machines: one :class:`SequenceMachine` per subscription, numbering primitives as its
            subscription does.
        primitives: the distinct primitives of all subscriptions (the *global* primitives).
        local: per subscription, the global primitive of each of its primitives.
    """

    subscriptions: tuple[Subscription, ...] | None
    machines: tuple[SequenceMachine, ...]
    primitives: tuple[Primitive, ...]
    local: tuple[tuple[int, ...], ...]

    def __len__(self) -> int:
        return len(self.machines)


def _primitive_key(prim: Primitive) -> tuple[str, str]:
    if prim.condition is None:
        return ("type", prim.cls)
    return ("sql", prim.condition.sql)


def compile_many(subscriptions: Iterable[str | Subscription]) -> Workload:
    """Compile subscriptions and deduplicate their primitives (module docstring).

    Raises:
        PatternError / UnsupportedSubscriptionError: a subscription does not compile.
        PredictArgumentError: a subscription with ``&`` / ``|``, time conditions or join
            variables (``CEP-PRED-011``; run those with :func:`cep.predict.answer.predict`).
        PredictLimitError: more than ``MAX_SUBSCRIPTIONS`` subscriptions (``CEP-PRED-020``).

    Example:
        >>> w = compile_many(["PATTERN A, B", "PATTERN B ; C DEFINE C AS x > 1"])
        >>> [p.text for p in w.primitives], w.local
        (["type = 'A'", "type = 'B'", 'x > 1'], ((0, 1), (1, 2)))
    """
    subs: list[Subscription] = []
    for i, s in enumerate(subscriptions):
        if len(subs) >= MAX_SUBSCRIPTIONS:
            raise PredictLimitError(f"run_many takes at most {MAX_SUBSCRIPTIONS:,} subscriptions")
        sub = compile_subscription(s) if isinstance(s, str) else s
        if not isinstance(sub.root, SequenceNode) or sub.composite:
            raise PredictArgumentError(f"subscription {i} ({sub.text!r}): run_many runs sequences; "
                                       "'&' and '|' run one subscription at a time with predict()")
        if sub.root.times:
            raise PredictArgumentError(f"subscription {i} ({sub.text!r}): run_many runs sequences "
                                       "without time conditions; use predict()")
        if sub.instance_attrs:
            raise PredictArgumentError(f"subscription {i} ({sub.text!r}): run_many runs sequences "
                                       "without join variables or [attr]; use predict()")
        subs.append(sub)
    index: dict[tuple[str, str], int] = {}
    prims: list[Primitive] = []
    local: list[tuple[int, ...]] = []
    for sub in subs:
        ids = []
        for prim in sub.primitives:
            key = _primitive_key(prim)
            g = index.get(key)
            if g is None:
                g = index[key] = len(prims)
                prims.append(prim)
            ids.append(g)
        local.append(tuple(ids))
    machines = tuple(SequenceMachine.from_sequence(sub.root) for sub in subs)
    return Workload(tuple(subs), machines, tuple(prims), tuple(local))


@dataclass(frozen=True, eq=False)
class Alphabet:
    """The common symbols of a workload over some events.

    Attributes:
        symbol: ``(n,)`` int32 common symbol of each event.
        truth: ``(G, P)`` bool: which global primitives each symbol satisfies.
        sigs: ``(M, G)`` int64: each subscription's own signature of each symbol.
    """

    symbol: np.ndarray
    truth: np.ndarray
    sigs: np.ndarray

    @property
    def n_symbols(self) -> int:
        """Common symbols ``G``."""
        return int(self.truth.shape[0])


def _distinct_rows(truth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of an ``(n, P)`` bool matrix and the row number of each input row."""
    n, p = truth.shape
    if p <= 62:
        code = (truth.astype(np.int64) << np.arange(p, dtype=np.int64)).sum(axis=1) if p else np.zeros(n, np.int64)
        uniq, inv = np.unique(code, return_inverse=True)
        rows = ((uniq[:, None] >> np.arange(p, dtype=np.int64)) & 1).astype(bool)
        return rows, inv.ravel()
    packed = np.packbits(truth, axis=1)
    uniq, inv = np.unique(packed, axis=0, return_inverse=True)
    return np.unpackbits(uniq, axis=1, count=p).astype(bool), inv.ravel()


def project(truth: np.ndarray, local: Sequence[Sequence[int]]) -> np.ndarray:
    """Each subscription's own signature of each symbol: ``(M, G)`` from ``truth`` ``(G, P)``.

    Example:
        >>> project(np.array([[True, False, True]]), [(2, 0), (1,)]).tolist()
        [[3], [0]]
    """
    width = max((len(ids) for ids in local), default=0)
    if width > MAX_PRIMITIVES:
        raise PredictLimitError(f"a subscription has at most {MAX_PRIMITIVES} primitive subscriptions, "
                                f"found {width}")
    n_sym, n_prim = truth.shape
    idx = np.full((len(local), width), n_prim, dtype=np.int64)
    for j, ids in enumerate(local):
        idx[j, :len(ids)] = ids
    padded = np.zeros((n_sym, n_prim + 1), dtype=np.int64)
    padded[:, :n_prim] = truth
    weights = np.left_shift(1, np.arange(width, dtype=np.int64))
    # (G, M, width) bits, weighted and summed: G * M * width cells, a few MB at 10^4 subscriptions.
    return (padded[:, idx] * weights).sum(axis=2).T.copy()


def alphabet(workload: Workload, events: Events) -> Alphabet:
    """The common symbols of ``events`` (module docstring, step 1).

    Raises:
        PredictEventsError: a primitive reads a missing column (``CEP-PRED-010``).
    """
    # primitive_truths reads only the primitives: one evaluation per global primitive.
    proxy = Subscription("", workload.subscriptions[0].root, workload.primitives, (), ()) \
        if workload.subscriptions else None
    if proxy is None:
        raise PredictArgumentError("alphabet needs compiled subscriptions, not bare machines")
    truths = primitive_truths(proxy, events) if workload.primitives else []
    matrix = np.stack(truths, axis=1) if truths else np.zeros((len(events), 0), dtype=bool)
    rows, inv = _distinct_rows(matrix)
    if len(events) == 0:
        rows = np.zeros((0, len(workload.primitives)), dtype=bool)
    return Alphabet(inv.astype(np.int32), rows, project(rows, workload.local))


def chunk_rows(n_machines: int) -> int:
    """Default events per chunk: about ``CELLS`` states per block, between 64 and ``CHUNK``.

    Example:
        >>> chunk_rows(10), chunk_rows(1000), chunk_rows(10_000)
        (4096, 4096, 419)
    """
    return int(min(CHUNK, max(64, CELLS // max(n_machines, 1))))


def walk(next_: np.ndarray, symbol: np.ndarray, starts: np.ndarray, init: np.ndarray, *,
         chunk: int | None = None, count: bool = True,
         on_chunk: Callable[[int, np.ndarray], None] | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """Run all machines of a flat table over the events (module docstring, steps 2 and 3).

    Args:
        next_: ``(S, G)`` flat transition table.
        symbol: ``(n,)`` symbol of each event.
        starts: where instances start (instance ``i`` holds events ``starts[i]`` .. the next start).
        init: ``(n_instances, M)`` flat state of each machine before each instance's first event.
        chunk: events per chunk (default :func:`chunk_rows`).
        count: whether to count ``(state, symbol)`` pairs.
        on_chunk: called with ``(position of the chunk's first event, (B, M) states after each
            event of the chunk)``; the block is reused, copy what you keep.

    Returns:
        ``(end, pairs)``: ``(n_instances, M)`` flat states after each instance's last event, and
        the ``(S, G)`` int64 pair counts (None without ``count``).

    Example:
        >>> nxt = np.array([[0, 1], [0, 1]])          # state 1: "the last symbol was 1"
        >>> end, pairs = walk(nxt, np.array([1, 1, 0, 1]), np.array([0]), np.array([[0]]))
        >>> end.tolist(), pairs.tolist()
        ([[1]], [[0, 2], [1, 1]])
    """
    n_states, n_sym = next_.shape
    # Row g of the transposed table maps every state to its successor under symbol g.
    rows = list(np.ascontiguousarray(np.asarray(next_).T, dtype=np.int32))
    n = len(symbol)
    bounds = [int(s) for s in starts] + [n]
    end = np.array(init, dtype=np.int32, copy=True).reshape(len(bounds) - 1, -1)
    width = end.shape[1]
    chunk = max(1, min(chunk_rows(width) if chunk is None else int(chunk), n))
    # Pairs are counted as g * S + s: one event's pairs fall into one block of S counters.
    pairs = np.zeros(n_states * n_sym, dtype=np.int64) if count else None
    buf = np.empty((chunk + 1, width), dtype=np.int32)
    views = list(buf)
    sym_all = np.asarray(symbol, dtype=np.intp)
    for inst in range(len(bounds) - 1):
        a, b = bounds[inst], bounds[inst + 1]
        views[0][:] = end[inst]
        for c0 in range(a, b, chunk):
            c1 = min(b, c0 + chunk)
            sym = sym_all[c0:c1]
            # One take per event over all machines (mode='clip': no bounds check, no buffered
            # output; states are valid by construction). Measured in the module docstring.
            for i, g in enumerate(sym.tolist()):
                np.take(rows[g], views[i], out=views[i + 1], mode="clip")
            m = c1 - c0
            if pairs is not None:
                idx = np.empty((m, width), dtype=np.intp)
                np.add(buf[:m], (sym * n_states)[:, None], out=idx, casting="unsafe")
                pairs += np.bincount(idx.ravel(), minlength=n_states * n_sym)
            if on_chunk is not None:
                on_chunk(c0, buf[1:m + 1])
            views[0][:] = views[m]
        end[inst] = views[0]
    return end, None if pairs is None else pairs.reshape(n_sym, n_states).T.copy()


def pair_chain(next_: np.ndarray, accepting: np.ndarray, pairs: np.ndarray, freq: np.ndarray,
               smoothing: float = 0.0) -> Chain:
    """The Markov chain of a table from ``(state, symbol)`` counts, rows as in
    :func:`cep.predict.markov.build_chain`, all states at once (``masks`` are the state numbers).

    Args:
        next_: ``(S, G)`` table.
        accepting: ``(S,)`` matched states.
        pairs: ``(S, G)`` how often each state read each symbol.
        freq: ``(G,)`` how often each symbol occurred in training.
        smoothing: weight of the frequency row mixed into observed rows.

    Example:
        >>> c = pair_chain(np.array([[0, 1], [0, 1]]), np.array([False, True]),
        ...                np.array([[3, 1], [0, 0]]), np.array([3, 1]))
        >>> c.matrix().tolist()
        [[0.75, 0.25], [0.75, 0.25]]
    """
    n_states, n_sym = next_.shape
    pairs = np.asarray(pairs, dtype=np.float64)
    freq = np.asarray(freq, dtype=np.float64)
    fsum = freq.sum()
    fr = freq / fsum if fsum > 0 else np.zeros(n_sym)
    total = pairs.sum(axis=1)
    seen = total > 0
    weight = np.zeros((n_states, n_sym))
    if smoothing > 0:
        denom = total[seen] + smoothing
        weight[seen] = pairs[seen] / denom[:, None] + (smoothing / denom)[:, None] * fr
    else:
        weight[seen] = pairs[seen] / total[seen, None]
    weight[~seen] = fr
    src = np.repeat(np.arange(n_states, dtype=np.int64), n_sym)
    dst = np.asarray(next_, dtype=np.int64).ravel()
    p = weight.ravel()
    keep = p > 0
    key, inv = np.unique(src[keep] * max(n_states, 1) + dst[keep], return_inverse=True)
    prob = np.bincount(inv.ravel(), weights=p[keep], minlength=len(key))
    src_k, dst_k = np.divmod(key, max(n_states, 1))
    stuck = np.flatnonzero(~seen & (fsum <= 0))
    if len(stuck):
        src_k = np.r_[src_k, stuck]
        dst_k = np.r_[dst_k, stuck]
        prob = np.r_[prob, np.ones(len(stuck))]
    return Chain(np.arange(n_states, dtype=np.int64), src_k.astype(np.int64), dst_k.astype(np.int64),
                 prob, np.asarray(accepting, dtype=bool))


def beta_table(flat: FlatTable, pairs: np.ndarray, freq: np.ndarray, lookahead: int, *,
               merged: bool | MergeReport = False, smoothing: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """``(alpha, beta)`` of every flat state, shape ``(lookahead + 1, S)`` (module docstring, step 4).

    Args:
        flat: the flat table.
        pairs: ``(S, G)`` training counts of the flat states.
        freq: ``(G,)`` training symbol counts.
        lookahead: the largest ``n``.
        merged: pool the counts of equivalent states (True, or a :class:`MergeReport` of ``flat``).
        smoothing: as :func:`pair_chain`.
    """
    if merged is False:
        chain = pair_chain(flat.next, flat.accepting, pairs, freq, smoothing)
        return chain.first_passage(lookahead)
    report = merge_tables(flat) if merged is True else merged
    pooled = np.zeros((report.merged, flat.n_symbols), dtype=np.int64)
    np.add.at(pooled, report.classes, np.asarray(pairs, dtype=np.int64))
    chain = pair_chain(report.next, report.accepting, pooled, freq, smoothing)
    alpha, beta = chain.first_passage(lookahead)
    return alpha[:, report.classes], beta[:, report.classes]


@dataclass(frozen=True, eq=False)
class ManyResult:
    """What :func:`run_many` returns.

    Attributes:
        workload: the subscriptions.
        flat: the flat table over the common symbols.
        symbol_count: ``(G,)`` events per symbol (the training symbol frequencies).
        pairs: ``(S, G)`` how often each flat state read each symbol (None without counting).
        end_states: ``(n_instances, M)`` flat state of each machine after each instance.
        matches: ``(M,)`` matches of each subscription, all instances.
        probability: ``(n_instances, M)`` ``beta(lookahead)`` in the end states (None without
            ``lookahead``).
        beta: ``(lookahead + 1, S)`` ``beta(n)`` of every flat state (None without ``lookahead``).
    """

    workload: Workload
    flat: FlatTable
    symbol_count: np.ndarray
    pairs: np.ndarray | None
    end_states: np.ndarray
    matches: np.ndarray
    probability: np.ndarray | None
    beta: np.ndarray | None

    @property
    def end_masks(self) -> np.ndarray:
        """``(n_instances, M)`` state mask of each machine after each instance."""
        return self.flat.masks[self.end_states]

    def transition_counts(self) -> tuple[TransitionCounts, ...]:
        """Per subscription, its transitions in the form of :func:`cep.predict.run.run_leaf`
        (masks, the subscription's own signatures; sorted, unique)."""
        if self.pairs is None:
            raise PredictArgumentError("transition counts need run_many(count=True)")
        flat = self.flat
        n_sym = flat.n_symbols
        nz = np.flatnonzero(self.pairs)
        s, g = np.divmod(nz, n_sym)
        owner = flat.owner[s].astype(np.int64)
        loc = flat.local[owner, g].astype(np.int64)
        width = int(flat.local.max()) + 1 if flat.local.size else 1
        key, inv = np.unique(s * width + loc, return_inverse=True)
        count = np.bincount(inv.ravel(), weights=self.pairs.ravel()[nz], minlength=len(key)).astype(np.int64)
        fs, fl = np.divmod(key, width)
        first = np.zeros(len(key), dtype=np.int64)
        first[inv.ravel()] = g  # any symbol of the group: the next state is the same
        own = flat.owner[fs].astype(np.int64)
        padded = np.zeros((flat.n_machines, width), dtype=np.int64)
        for j, sigs in enumerate(flat.local_sigs):
            padded[j, :len(sigs)] = sigs
        sig = padded[own, fl]
        frm = flat.masks[fs]
        to = flat.masks[flat.next[fs, first]]
        order = np.lexsort((to, sig, frm, own))
        own, frm, sig, to, count = own[order], frm[order], sig[order], to[order], count[order]
        cuts = np.searchsorted(own, np.arange(flat.n_machines + 1))
        return tuple(TransitionCounts(frm[a:b].copy(), sig[a:b].copy(), to[a:b].copy(), count[a:b].copy())
                     for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()))

    def leaf_models(self) -> tuple[LeafModel, ...]:
        """Per subscription, its training data as :class:`~cep.predict.model.LeafModel`."""
        counts = self.transition_counts()
        out = []
        for j, c in enumerate(counts):
            freq = np.bincount(self.flat.local[j], weights=self.symbol_count,
                               minlength=len(self.flat.local_sigs[j])).astype(np.int64)
            keep = freq > 0
            out.append(LeafModel(c, self.flat.local_sigs[j][keep], freq[keep]))
        return tuple(out)

    def models(self) -> tuple[Model, ...]:
        """Per subscription, a :class:`~cep.predict.model.Model` as :func:`cep.predict.answer.predict`
        would train it on the same events (needs subscriptions, not bare machines)."""
        if self.workload.subscriptions is None:
            raise PredictArgumentError("models need subscriptions; run_many was given machines")
        return tuple(Model(sub.text, (leaf,)) for sub, leaf in zip(self.workload.subscriptions,
                                                                    self.leaf_models()))


def _workload(subscriptions: Workload | Sequence[str | Subscription] | Sequence[SequenceMachine]) -> Workload:
    if isinstance(subscriptions, Workload):
        return subscriptions
    items = list(subscriptions)
    if items and all(isinstance(m, SequenceMachine) for m in items):
        return Workload(None, tuple(items), (), tuple(tuple(range(len(m.prims))) for m in items))
    return compile_many(items)


def run_many(subscriptions: Workload | Sequence[str | Subscription] | Sequence[SequenceMachine],
             events: Events | np.ndarray, *, sigs: np.ndarray | None = None,
             starts: np.ndarray | None = None, start_masks: np.ndarray | None = None,
             lookahead: int | None = None, merged: bool = False, smoothing: float = 0.0,
             count: bool = True, chunk: int | None = None,
             on_chunk: Callable[[int, np.ndarray], None] | None = None) -> ManyResult:
    """Run ``N`` subscriptions over one event stream at once (module docstring).

    Args:
        subscriptions: texts or compiled subscriptions, a :class:`Workload`, or bare machines.
        events: :class:`~cep.predict.events.Events` (one instance per partition key), or the
            common symbol of each event (then ``sigs`` is required).
        sigs: with symbols: each symbol's signature, ``(G,)`` or ``(M, G)`` per machine.
        starts: with symbols: where instances start (default one instance).
        start_masks: ``(n_instances, M)`` state masks to start from (default the start states).
        lookahead: if given, ``beta(lookahead)`` per flat state and in the end states, from the
            chains trained on these events.
        merged: pool the counts of equivalent states across subscriptions for the chains.
        smoothing: frequency pseudo-count weight of the chains.
        count: count transitions (needed for training and for ``lookahead``).
        chunk: events per chunk.
        on_chunk: see :func:`walk`.

    Raises:
        PredictArgumentError: a subscription :func:`compile_many` refuses, or bad arguments.
        PredictEventsError, PredictLimitError.
    """
    work = _workload(subscriptions)
    n_machines = len(work)
    symbol, per_sigs, inst = _symbols_of(work, events, sigs, starts)
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1):
        raise PredictArgumentError(f"argument chunk: expected a positive integer, found {chunk!r}")
    if lookahead is not None and not count:
        raise PredictArgumentError("argument lookahead: prediction trains on the counts; pass count=True")
    n_inst = len(inst)
    if start_masks is not None:
        start_masks = np.asarray(start_masks, dtype=np.int64).reshape(n_inst, n_machines)
    flat = flat_table(work.machines, per_sigs, start_masks)
    init = np.broadcast_to(flat.starts, (n_inst, n_machines)) if start_masks is None \
        else flat.state_ids(start_masks)
    end, pairs, matches = _walk_counting(flat, symbol, inst, init, chunk=chunk, count=count,
                                         on_chunk=on_chunk)
    freq = np.bincount(symbol, minlength=flat.n_symbols).astype(np.int64)
    probability = beta = None
    if lookahead is not None:
        if isinstance(lookahead, bool) or not isinstance(lookahead, (int, np.integer)) or lookahead < 1:
            raise PredictArgumentError(f"argument lookahead: expected a positive integer, found {lookahead!r}")
        _, beta = beta_table(flat, pairs, freq, int(lookahead), merged=merged, smoothing=smoothing)
        probability = beta[int(lookahead)][end]
    return ManyResult(work, flat, freq, pairs, end.astype(np.int64), matches, probability, beta)


def _symbols_of(work: Workload, events: Events | np.ndarray, sigs: np.ndarray | None,
                starts: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The common symbol of each event, the signatures of the symbols, and where instances start.

    Args:
        work: the subscriptions.
        events, sigs, starts: as for :func:`run_many`.

    Returns:
        ``(symbol, sigs, starts)``: from :func:`alphabet` and the partition keys for
        :class:`~cep.predict.events.Events`, else the arguments as int64 arrays.

    Raises:
        PredictArgumentError: a missing or superfluous argument, or a symbol out of range.
    """
    if isinstance(events, Events):
        if work.subscriptions is None:
            raise PredictArgumentError("argument events: bare machines read symbols; pass the symbol "
                                       "of each event and sigs")
        alph = alphabet(work, events)
        inst = events.key_starts if len(events) else np.zeros(1, dtype=np.int64)
        if starts is not None:
            raise PredictArgumentError("argument starts: instances of Events are their partition keys")
        return alph.symbol, alph.sigs, inst
    if sigs is None:
        raise PredictArgumentError("argument sigs: required when events are given as symbols")
    symbol = np.asarray(events, dtype=np.int64)
    per_sigs = np.asarray(sigs, dtype=np.int64)
    inst = np.zeros(1, dtype=np.int64) if starts is None else np.asarray(starts, dtype=np.int64)
    width = per_sigs.shape[-1]
    if len(symbol) and (symbol.min() < 0 or symbol.max() >= width):
        raise PredictArgumentError(f"argument events: symbols must be in [0, {width}), found "
                                   f"{int(symbol.min())} .. {int(symbol.max())}")
    return symbol, per_sigs, inst


def _walk_counting(flat: FlatTable, symbol: np.ndarray, starts: np.ndarray, init: np.ndarray, *,
                   chunk: int | None, count: bool,
                   on_chunk: Callable[[int, np.ndarray], None] | None
                   ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """:func:`walk` over the flat table, with the matches of each subscription.

    Returns:
        ``(end, pairs, matches)``: :func:`walk`'s two results and ``(M,)`` matches per machine.
    """
    n_machines = flat.n_machines
    hits = np.zeros(n_machines, dtype=np.int64)
    callback = on_chunk
    if not count:
        # Without pair counts the matches are counted from the states themselves.
        def callback(offset: int, states: np.ndarray) -> None:
            hits[:] += flat.accepting[states].sum(axis=0)
            if on_chunk is not None:
                on_chunk(offset, states)

    end, pairs = walk(flat.next, symbol, starts, init, chunk=chunk, count=count, on_chunk=callback)
    if pairs is None:
        return end, pairs, hits
    # A match is a transition into a matched state: read off the pair counts, no per-event work.
    per_state = (pairs * flat.accepting[flat.next]).sum(axis=1)
    matches = np.bincount(flat.owner, weights=per_state, minlength=n_machines).astype(np.int64)
    return end, pairs, matches


def merge_counts(subscriptions: Workload | Sequence[str | Subscription], events: Events, *,
                 rule: str = "future") -> tuple[int, int, float]:
    """States without and with merging, and the commonality, by either rule (``MERGE_RULES``).

    Args:
        subscriptions: texts, compiled subscriptions or a :class:`Workload`.
        events: the events (our machines' tables are built over the symbols that occur; the
            paper's graphs do not depend on events).
        rule: ``'future'`` (ours, the default) or ``'prefix'`` (the paper's).

    Returns:
        ``(unmerged, merged, commonality)``.

    Raises:
        PredictArgumentError: an unknown rule (``CEP-PRED-011``) or a subscription
            :func:`compile_many` refuses.

    Example:
        >>> ev = Events.from_columns(ts=list(range(6)), types=list("abcdab"))
        >>> subs = ["PATTERN a ; b ; c", "PATTERN a ; b ; d", "PATTERN a"]
        >>> merge_counts(subs, ev), merge_counts(subs, ev, rule="prefix")      # Fig. 6
        ((10, 10, 0.0), (10, 6, 0.4))
    """
    if rule not in MERGE_RULES:
        raise PredictArgumentError(f"argument rule: expected one of {', '.join(MERGE_RULES)}, found {rule!r}")
    work = _workload(subscriptions)
    if rule == "prefix":
        from cep.predict.paper import build_state_machine, merge_prefix

        if work.subscriptions is None:
            raise PredictArgumentError("merge_counts needs compiled subscriptions, not bare machines")
        graphs = [build_state_machine(sub.root, tuple(ids[i] for i in sub.root.steps))
                  for sub, ids in zip(work.subscriptions, work.local)]
        r = merge_prefix(graphs)
        return r.unmerged, r.merged, r.commonality
    report = merge_tables(flat_table(work.machines, alphabet(work, events).sigs))
    return report.unmerged, report.merged, report.commonality
