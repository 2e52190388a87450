"""P-ToPSS's evaluation (section 6, Figs. 9 and 10) on the paper's own synthetic workload.

Muthusamy, Liu and Jacobsen (DEBS 2010) measure, on the workload of section 6
(:mod:`cep.datasets.predict_paper_workload`: subscriptions of length 10 over a pool of 50 values
with 2 ``;``, an event stream with 20 planted partial and 20 full matches per subscription among
runs of ``U[1, 100]`` irrelevant events):

* **Fig. 9(a)** states vs the number of subscriptions (pool 50 and 100, *uniform_cs* and
  *gaussian_cs*); **9(b)** matching time per event vs subscriptions; **9(c)** matching time per
  event vs non-contiguous operators; **9(d)** commonality (``1 - merged / unmerged``) vs
  subscription length; **9(e)** states vs pool size; **9(f)** transitions vs pool size. Each for
  both merging rules: the paper's (by prefix, :func:`cep.predict.paper.merge_prefix` on the
  paper's BuildStateMachine graphs) and ours (by future, :func:`cep.predict.merge.merge_tables`
  on our machines). Matching time is one table walk per event over all machines
  (:func:`cep.predict.many.walk`, no counting) on our machines and on the paper's
  (:func:`cep.predict.paper.paper_tables`), in CPU microseconds per event; *transitions* are
  state changes (a machine moving to a different state) per event.
* **Merging head to head** (docs/predict.md "Paper vs ours"): states, build CPU time (tables
  and merging), training CPU time (walk with counts) and prediction CPU time (chains and
  ``beta(5)`` for all states): ours pools counts over merged classes and computes one ``beta``
  per class; prefix classes cannot share ``beta`` (after ``a ; b`` the futures of ``a ; b ; c``
  and ``a ; b ; d`` differ), so the paper's chain is per machine.
* **Fig. 10** precision (true positives / predictions) vs lookahead ``n`` and threshold: (a)
  trained on the default stream, tested on streams with 20, 40 and 80 partial matches per
  subscription (train/test diverging); (b) trained and tested on *gaussian_pub* streams (other
  seeds); (c) trained on *gaussian_pub*, tested on *uniform_pub*. A *prediction* is a
  (subscription, event) where the subscription is partially matched (neither in its start
  state nor matched) and its predicted value is at least the threshold; it is *true* if the
  subscription matches within the next ``n`` events. Three models: ours (first passage on our
  machines), the paper's (``beta(n) = sum alpha(k)``, trained by arrivals, on the paper's
  single-instance machines) and the paper's definition on our machines (which of the two
  differences costs the precision).

Sizes are reduced (``--scale``): the paper runs 1000 subscriptions (2.3 million events with its
plants); by default Fig. 9 runs up to 1000 subscriptions over the first 20,000 events, Fig. 10
uses 100 subscriptions. CPU seconds of one process (``time.process_time``).

Run from the project root::

    python -m benchmarks.bench_predict_paper [--json PATH] [--md PATH] [--quick]

Example:
    >>> row = merging_row(20, events=2_000)
    >>> row["paper"]["unmerged"], row["paper"]["merged"] < 220, row["ours"]["merged"] <= row["ours"]["unmerged"]
    (220, True, True)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from cep.datasets.predict_paper_workload import paper_workload
from cep.predict.events import Events
from cep.predict.many import alphabet, beta_table, compile_many, walk
from cep.predict.merge import flat_table, merge_tables
from cep.predict.paper import build_state_machine, merge_prefix, paper_chain, paper_tables

SEED = 20261125
LOOKAHEAD = 5


def _cpu() -> float:
    return time.process_time()


def _setup(n_subs: int, *, events: int, length: int = 10, pool: int = 50, followed: int = 2,
           subs: str = "uniform_cs", pubs: str = "uniform_pub", n_partial: int = 20, n_full: int = 20,
           seed: int = SEED) -> dict[str, Any]:
    """Workload, compiled both ways, over the first ``events`` events."""
    w = paper_workload(n_subs, length=length, pool=pool, followed=followed, sub_distribution=subs,
                       pub_distribution=pubs, n_partial=n_partial, n_full=n_full, seed=seed)
    items = w.items[:events]
    ev = Events.from_columns(ts=np.arange(len(items)), keys=np.zeros(len(items), dtype=np.int64),
                             attrs={"item": items})
    return {"w": w, "ev": ev}


def _ours(w: Any, ev: Events) -> dict[str, Any]:
    c0 = _cpu()
    work = compile_many(list(w.subscriptions))
    alph = alphabet(work, ev)
    c1 = _cpu()
    flat = flat_table(work.machines, alph.sigs)
    report = merge_tables(flat)
    c2 = _cpu()
    return {"work": work, "alph": alph, "flat": flat, "report": report, "compile_s": c1 - c0,
            "build_s": c2 - c1}


def _paper(work: Any, alph: Any) -> dict[str, Any]:
    c0 = _cpu()
    machines = [build_state_machine(sub.root, tuple(ids[i] for i in sub.root.steps))
                for sub, ids in zip(work.subscriptions, work.local)]
    nxt, acc, off = paper_tables(machines, alph.truth)
    report = merge_prefix(machines)
    c1 = _cpu()
    return {"machines": machines, "next": nxt, "accepting": acc, "offsets": off, "report": report,
            "build_s": c1 - c0}


def _walk_rate(next_: np.ndarray, starts: np.ndarray, symbol: np.ndarray) -> tuple[float, float]:
    """CPU microseconds per event and state changes per event of one walk without counting."""
    changes = [0]

    def on_chunk(offset: int, states: np.ndarray) -> None:
        prev = np.vstack([last[0][None, :], states[:-1]]) if len(states) else states
        changes[0] += int((states != prev).sum())
        last[0] = states[-1].copy()

    last = [np.asarray(starts, dtype=np.int32)]
    c0 = _cpu()
    walk(next_, symbol, np.array([0]), np.asarray(starts)[None, :], count=False, on_chunk=on_chunk)
    dt = _cpu() - c0
    n = max(len(symbol), 1)
    return dt / n * 1e6, changes[0] / n


def merging_row(n_subs: int, *, events: int = 20_000, pool: int = 50, subs: str = "uniform_cs",
                length: int = 10, followed: int = 2, timing: bool = True) -> dict[str, Any]:
    """States, build, train and predict CPU time of both merging rules on one workload."""
    s = _setup(n_subs, events=events, pool=pool, subs=subs, length=length, followed=followed)
    ours = _ours(s["w"], s["ev"])
    paper = _paper(ours["work"], ours["alph"])
    row: dict[str, Any] = {"subscriptions": n_subs, "events": len(s["ev"]), "pool": pool, "subs": subs,
                           "length": length, "followed": followed}
    rep, prep = ours["report"], paper["report"]
    row["ours"] = {"unmerged": rep.unmerged, "merged": rep.merged, "commonality": rep.commonality,
                   "build_s": ours["build_s"]}
    row["paper"] = {"unmerged": prep.unmerged, "merged": prep.merged, "commonality": prep.commonality,
                    "build_s": paper["build_s"]}
    if not timing:
        return row
    symbol = ours["alph"].symbol
    flat = ours["flat"]
    for name, nxt, starts in (("ours", flat.next, flat.starts), ("paper", paper["next"], paper["offsets"][:-1])):
        us, changes = _walk_rate(nxt, starts, symbol)
        row[name]["match_us_per_event"] = us
        row[name]["transitions_per_event"] = changes
    # train (walk with counts) and predict (chains + beta(LOOKAHEAD) for every state)
    freq = np.bincount(symbol, minlength=flat.n_symbols)
    c0 = _cpu()
    _, pairs = walk(flat.next, symbol, np.array([0]), flat.starts[None, :])
    c1 = _cpu()
    beta_table(flat, pairs, freq, LOOKAHEAD, merged=rep)
    c2 = _cpu()
    row["ours"].update(train_s=c1 - c0, predict_s=c2 - c1)
    c0 = _cpu()
    _, ppairs = walk(paper["next"], symbol, np.array([0]), paper["offsets"][:-1][None, :])
    c1 = _cpu()
    paper_chain(paper["next"], paper["accepting"], ppairs, freq).occupancy(LOOKAHEAD)
    c2 = _cpu()
    row["paper"].update(train_s=c1 - c0, predict_s=c2 - c1)
    return row


# ------------------------------------------------------------------------------ Fig. 10


def _states_after(next_: np.ndarray, starts: np.ndarray, symbol: np.ndarray) -> np.ndarray:
    out = np.empty((len(symbol), len(starts)), dtype=np.int32)

    def keep(offset: int, states: np.ndarray) -> None:
        out[offset:offset + len(states)] = states

    walk(next_, symbol, np.array([0]), np.asarray(starts)[None, :], count=False, on_chunk=keep)
    return out


def precision_grid(train_items: np.ndarray, test_items: np.ndarray, w: Any, lookaheads: tuple[int, ...],
                   thresholds: tuple[float, ...]) -> dict[str, Any]:
    """Precision per (lookahead, threshold), ours and the paper's, trained on one stream and
    tested on another (module docstring)."""
    items = np.r_[train_items, test_items]
    ev = Events.from_columns(ts=np.arange(len(items)), keys=np.zeros(len(items), dtype=np.int64),
                             attrs={"item": items})
    work = compile_many(list(w.subscriptions))
    alph = alphabet(work, ev)
    sym_train, sym_test = alph.symbol[:len(train_items)], alph.symbol[len(train_items):]
    flat = flat_table(work.machines, alph.sigs)
    machines = [build_state_machine(sub.root, tuple(ids[i] for i in sub.root.steps))
                for sub, ids in zip(work.subscriptions, work.local)]
    pnext, pacc, poff = paper_tables(machines, alph.truth)
    freq = np.bincount(sym_train, minlength=flat.n_symbols)
    out: dict[str, Any] = {}
    L = max(lookaheads)
    for name in ("ours", "paper", "ours_machines_paper_definition"):
        if name == "paper":
            nxt, acc, starts = pnext, pacc, poff[:-1]
        else:
            nxt, acc, starts = flat.next, flat.accepting, flat.starts
        _, pairs = walk(nxt, sym_train, np.array([0]), np.asarray(starts)[None, :])
        if name == "ours":
            _, beta = beta_table(flat, pairs, freq, L)
        else:
            _, beta = paper_chain(nxt, acc, pairs, freq).occupancy(L)
        states = _states_after(nxt, starts, sym_test)
        matched = acc[states]
        partial = (states != np.asarray(starts)[None, :]) & ~matched
        csum = np.vstack([np.zeros((1, states.shape[1]), dtype=np.int64), np.cumsum(matched, axis=0)])
        n = len(sym_test)
        grid = {}
        for la in lookaheads:
            t = np.arange(n)
            future = (csum[np.minimum(t + 1 + la, n)] - csum[t + 1]) > 0
            valid = (t + la < n)[:, None]
            b = beta[la][states]
            for th in thresholds:
                pred = partial & valid & (b >= th)
                k = int(pred.sum())
                grid[f"{la}/{th}"] = {"predictions": k, "true": int((pred & future).sum()),
                                      "precision": (pred & future).sum() / k if k else None}
        out[name] = grid
    return out


def fig10(n_subs: int, lookaheads: tuple[int, ...], thresholds: tuple[float, ...]) -> dict[str, Any]:
    """Fig. 10 (a), (b), (c) (module docstring)."""
    res: dict[str, Any] = {}
    base = paper_workload(n_subs, seed=SEED)
    res["a"] = {}
    for pm in (20, 40, 80):
        test = _restream(base, pm, 20, "uniform_pub", SEED + pm)   # the same subscriptions
        res["a"][f"pm={pm}"] = precision_grid(base.items, test, base, lookaheads, thresholds)
    gauss = _restream(base, 20, 20, "gaussian_pub", SEED + 1)
    res["b"] = precision_grid(gauss, _restream(base, 20, 20, "gaussian_pub", SEED + 2), base, lookaheads, thresholds)
    res["c"] = precision_grid(gauss, _restream(base, 20, 20, "uniform_pub", SEED + 3), base, lookaheads, thresholds)
    return res


def _restream(w: Any, n_partial: int, n_full: int, pubs: str, seed: int) -> np.ndarray:
    """A new planted stream for the *same* subscriptions as ``w``: the generator's stream part
    with another seed and quotas (the subscriptions are copied in)."""
    from cep.datasets import predict_paper_workload as ppw

    other = ppw.paper_workload(len(w.subscriptions), length=w.values.shape[1], n_partial=n_partial,
                               n_full=n_full, pub_distribution=pubs, seed=seed)
    # re-plant: map each plant of `other` onto w's subscription values, irrelevant events as drawn
    items = other.items.copy()
    for pos, s, n, _ in other.plants.tolist():
        items[pos:pos + n] = w.values[s, :n]
    return items


# ------------------------------------------------------------------------------ driver


def run(quick: bool = False) -> dict[str, Any]:
    """Every figure, reduced sizes (module docstring)."""
    ev_n = 5_000 if quick else 20_000
    sizes = (50, 100) if quick else (100, 250, 500, 1000)
    res: dict[str, Any] = {"machine": {"platform": platform.platform(), "python": platform.python_version(),
                                       "numpy": np.__version__, "cpus": os.cpu_count(),
                                       "load": os.getloadavg()}}
    res["fig9a_b"] = [merging_row(n, events=ev_n, pool=pool, subs=subs)
                      for subs, pool in (("uniform_cs", 50), ("uniform_cs", 100), ("gaussian_cs", 50))
                      for n in sizes]
    n_mid = sizes[-1] if quick else 500
    res["fig9c"] = [merging_row(n_mid, events=ev_n, followed=f) for f in (0, 1, 2, 4, 6, 9)]
    res["fig9d"] = [merging_row(n_mid, events=ev_n, length=k, followed=min(2, k - 1), timing=False)
                    for k in (2, 3, 4, 6, 8, 10)]
    res["fig9ef"] = [merging_row(n_mid, events=ev_n, pool=p, subs=subs)
                     for subs in ("uniform_cs", "gaussian_cs") for p in (10, 25, 50, 100, 200)]
    las = (1, 2, 5, 10, 20)
    ths = (0.1, 0.3, 0.5, 0.7, 0.9)
    res["fig10"] = fig10(20 if quick else 100, las, ths)
    return res


def _f(x: Any, nd: int = 2) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def markdown(res: dict[str, Any]) -> str:
    """Tables of :func:`run`'s result."""
    lines = []
    m = res["machine"]
    lines.append(f"Measured on {m['platform']}, Python {m['python']}, numpy {m['numpy']}, {m['cpus']} shared "
                 f"CPUs (load {m['load'][0]:.2f}); CPU seconds of one process.\n")

    def merge_table(rows: list[dict[str, Any]], key: str, timing: bool = True) -> None:
        head = f"| {key} | subs | pool | unmerged (paper / ours) | merged (paper / ours) | commonality (paper / ours)"
        if timing:
            head += " | match µs/event (paper / ours) | transitions/event (paper / ours) | build ms | train s | predict ms"
        lines.append(head + " |")
        lines.append("|" + "---|" * (head.count("|") - 1))
        for r in rows:
            p, o = r["paper"], r["ours"]
            cells = [str(r[key]), str(r["subscriptions"]), str(r["pool"]) + (" g" if r["subs"] == "gaussian_cs" else ""),
                     f"{p['unmerged']} / {o['unmerged']}", f"{p['merged']} / {o['merged']}",
                     f"{p['commonality']:.3f} / {o['commonality']:.3f}"]
            if timing:
                cells += [f"{p['match_us_per_event']:.1f} / {o['match_us_per_event']:.1f}",
                          f"{p['transitions_per_event']:.2f} / {o['transitions_per_event']:.2f}",
                          f"{p['build_s'] * 1e3:.0f} / {o['build_s'] * 1e3:.0f}",
                          f"{p['train_s']:.2f} / {o['train_s']:.2f}",
                          f"{p['predict_s'] * 1e3:.0f} / {o['predict_s'] * 1e3:.0f}"]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")

    lines.append("Fig. 9(a, b): states and matching time vs subscriptions (`g`: gaussian_cs)\n")
    merge_table(res["fig9a_b"], "subscriptions")
    lines.append("Fig. 9(c): matching time vs non-contiguous operators\n")
    merge_table(res["fig9c"], "followed")
    lines.append("Fig. 9(d): commonality vs subscription length\n")
    merge_table(res["fig9d"], "length", timing=False)
    lines.append("Fig. 9(e, f): states and transitions vs pool size\n")
    merge_table(res["fig9ef"], "pool")
    f10 = res["fig10"]

    def grid(title: str, g: dict[str, Any]) -> None:
        keys = list(g["ours"].keys())
        las = sorted({int(k.split("/")[0]) for k in keys})
        ths = sorted({float(k.split("/")[1]) for k in keys})
        lines.append(f"{title} — precision: paper (paper's machines and definition) / paper's definition "
                     f"on our machines / ours; predictions in brackets\n")
        lines.append("| n \\ threshold | " + " | ".join(str(t) for t in ths) + " |")
        lines.append("|---|" + "---|" * len(ths))
        for la in las:
            cells = []
            for t in ths:
                p, h, o = (g[k][f"{la}/{t}"] for k in ("paper", "ours_machines_paper_definition", "ours"))
                cells.append(" / ".join(f"{_f(x['precision'])} ({x['predictions']})" for x in (p, h, o)))
            lines.append(f"| {la} | " + " | ".join(cells) + " |")
        lines.append("")

    for k, g in f10["a"].items():
        grid(f"Fig. 10(a): trained on N_pm = 20, tested on {k}", g)
    grid("Fig. 10(b): trained and tested on gaussian_pub", f10["b"])
    grid("Fig. 10(c): trained on gaussian_pub, tested on uniform_pub", f10["c"])
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path, metavar="PATH")
    parser.add_argument("--md", type=Path, metavar="PATH")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run)")
    args = parser.parse_args(argv)
    c0 = time.time()
    res = run(args.quick)
    res["wall_s"] = time.time() - c0
    text = markdown(res)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(res, indent=2, default=float))
    if args.md:
        args.md.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
