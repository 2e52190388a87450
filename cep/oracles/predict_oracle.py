"""Brute-force oracle of predictive matching: live positions, matches and first passage, literally.

It implements the definitions of docs/predict.md section 2 by enumeration, for small inputs:

* a *partial match* of the first ``j`` steps of a sequence ``s1 L1 s2 ... sk`` is a tuple of
  event positions ``i1 < ... < ij`` with ``e(i_m)`` satisfying ``s_m``, ``i(m+1) = i_m + 1``
  where ``L_m`` is ``,``, and every time condition among those steps true;
* after event ``t`` position ``j`` is *live* when such a partial match exists with ``i_j = t``
  (``i_j <= t`` when position ``j`` is self-looping: ``j = 0`` or ``L_j`` is ``;``), and no
  ``<`` / ``<=`` time condition of a later step is already impossible (events come in time order,
  so a later step's timestamp is at least ``ts(t)``); position 0 is always live;
* the state is the set of live positions without those below the highest live self-looping
  one; a match ends at ``t`` when position ``k`` is live after ``t``;
* ``X | Y`` matches where a part matches; ``X & Y`` where its last missing part matches since it
  last matched;
* the probability of a match within ``n`` steps of a Markov chain: the sum over all ``S^n``
  state paths of the probability of those that enter an accepting state.

Example:
    >>> from cep.predict.subscription import compile_subscription
    >>> leaf = compile_subscription("PATTERN A, B").leaves[0]
    >>> truth = [[True, False], [False, True], [True, False]]     # events A, B, A
    >>> [bin(m) for m in live_masks(leaf, truth, [0, 1, 2])]
    ['0b11', '0b101', '0b11']
"""

from __future__ import annotations

from itertools import combinations, product
from typing import Sequence as Seq

import numpy as np

from cep.lang.ast import FOLLOWED, NEXT
from cep.predict.subscription import Sequence


def _partials(leaf: Sequence, truth: Seq[Seq[bool]], ts: Seq[float], j: int, upto: int):
    """Every partial match of the first ``j`` steps using events ``0..upto``."""
    for tup in combinations(range(upto + 1), j):
        if not all(truth[tup[m]][leaf.steps[m]] for m in range(j)):
            continue
        if any(leaf.links[m] == NEXT and tup[m + 1] != tup[m] + 1 for m in range(j - 1)):
            continue
        ok = True
        for c in leaf.times:
            if c.later < j and not c.holds(ts[tup[c.later]], ts[tup[c.earlier]]):
                ok = False
        if ok:
            yield tup


def _looping(leaf: Sequence, j: int) -> bool:
    return j == 0 or (j < len(leaf.steps) and leaf.links[j - 1] == FOLLOWED)


def _possible(leaf: Sequence, tup: tuple, ts: Seq[float], now: float) -> bool:
    j = len(tup)
    for c in leaf.times:
        if c.later >= j and c.earlier < j:
            d = now - ts[tup[c.earlier]]
            if (c.op == "<" and d >= c.bound) or (c.op == "<=" and d > c.bound):
                return False
    return True


def live_masks(leaf: Sequence, truth: Seq[Seq[bool]], ts: Seq[float]) -> list[int]:
    """The state mask after every event of one instance (module docstring)."""
    k = len(leaf.steps)
    out = []
    for t in range(len(truth)):
        mask = 1
        for j in range(1, k + 1):
            for tup in _partials(leaf, truth, ts, j, t):
                last_ok = tup[-1] == t or (_looping(leaf, j) and j < k)
                if last_ok and (j == k or _possible(leaf, tup, ts, ts[t])):
                    mask |= 1 << j
                    break
        loops = mask & sum(1 << j for j in range(k) if _looping(leaf, j))
        if loops:
            b = loops.bit_length() - 1
            mask &= ~((1 << b) - 1)
        out.append(mask)
    return out


def match_ends(leaf: Sequence, truth: Seq[Seq[bool]], ts: Seq[float]) -> list[bool]:
    """Whether a match of the sequence ends at each event of one instance."""
    k = len(leaf.steps)
    return [any(tup[-1] == t for tup in _partials(leaf, truth, ts, k, t)) for t in range(len(truth))]


def boolean_fired(op: str, parts: Seq[Seq[bool]]) -> list[bool]:
    """Where ``|`` or ``&`` over parts' match indicators matches (one instance, fresh start)."""
    n = len(parts[0]) if parts else 0
    if op == "|":
        return [any(p[t] for p in parts) for t in range(n)]
    seen = [False] * len(parts)
    out = []
    for t in range(n):
        for b, p in enumerate(parts):
            seen[b] = seen[b] or bool(p[t])
        if all(seen):
            out.append(True)
            seen = [False] * len(parts)
        else:
            out.append(False)
    return out


def hit_probability(P: np.ndarray, accepting: Seq[bool], start: int, n: int) -> float:
    """Probability of entering an accepting state within ``n`` steps, by enumerating paths."""
    S = len(P)
    total = 0.0
    for path in product(range(S), repeat=n):
        p = 1.0
        prev = start
        for s in path:
            p *= P[prev, s]
            prev = s
        if p > 0.0 and any(accepting[s] for s in path):
            total += p
    return total


# -- composite subscriptions (Boolean nodes inside a sequence, docs/predict.md section 5.1) -------

def composite_conditions(sub) -> list:
    """Every time condition of a composite subscription as ``(later alias, earlier alias, holds)``."""
    out = [(c.later, c.earlier, c.holds) for c in sub.cross_times]

    def walk(node) -> None:
        if isinstance(node, Sequence):
            out.extend((node.aliases[c.later], node.aliases[c.earlier], c.holds) for c in node.times)
            for child in node.children:
                if child is not None:
                    walk(child)
        else:
            for part in node.parts:
                walk(part)

    walk(sub.root)
    return out


def node_matches(node, truth: Seq[Seq[bool]], p: int, link: str, memo: dict | None = None) -> set:
    """Every match of ``node`` activated at event ``p`` (``-1``: before the stream), literally.

    A match is ``(first, last, bindings)``: the first and the completing event positions and the
    ``(alias, position)`` pairs it binds. A primitive step matches one event after ``p`` (the very
    next one when ``link`` is ``,``); a sequence chains its steps, step ``m + 1`` activated at the
    completing event of step ``m`` with the link between them; ``|`` is any part's match; ``&``
    one match of every part, all activated at ``p`` with ``;``, completing at the latest part's
    completion, its first event the earliest part's (so ``,`` before an ``&`` asks that *some*
    part starts at the very next event). Time conditions are not checked here.
    """
    memo = {} if memo is None else memo
    key = (id(node), p, link)
    if key in memo:
        return memo[key]
    n = len(truth)
    out: set = set()
    if isinstance(node, Sequence):
        partial = {(None, p, frozenset())}
        for m in range(len(node.steps)):
            step_link = link if m == 0 else node.links[m - 1]
            nxt = set()
            for first, last, binds in partial:
                child = node.children[m] if node.children else None
                if child is None:
                    cand = [last + 1] if step_link == NEXT else range(last + 1, n)
                    found = {(i, i, frozenset({(node.aliases[m], i)}))
                             for i in cand if i < n and truth[i][node.steps[m]]}
                else:
                    found = node_matches(child, truth, last, step_link, memo)
                for f, c, b in found:
                    nxt.add((f if first is None else first, c, binds | b))
            partial = nxt
        out = partial
    elif node.op == "|":
        for part in node.parts:
            out |= node_matches(part, truth, p, link, memo)
    else:
        per_part = [node_matches(part, truth, p, FOLLOWED, memo) for part in node.parts]
        for combo in product(*per_part):
            first = min(f for f, _, _ in combo)
            if link == NEXT and first != p + 1:
                continue
            out.add((first, max(c for _, c, _ in combo), frozenset().union(*(b for _, _, b in combo))))
    memo[key] = out
    return out


def composite_match_ends(sub, truth: Seq[Seq[bool]], ts: Seq[float]) -> list[bool]:
    """Whether a match of a composite subscription ends at each event of one instance.

    A match of the master activated before the stream whose bindings satisfy every time condition
    whose two aliases it binds (docs/predict.md section 5.1).
    """
    conds = composite_conditions(sub)
    ends = [False] * len(truth)
    for _, last, binds in node_matches(sub.root, truth, -1, FOLLOWED):
        bound = dict(binds)
        if all(holds(ts[bound[a]], ts[bound[b]]) for a, b, holds in conds if a in bound and b in bound):
            ends[last] = True
    return ends
