"""Prediction quality of ``predict_match``: the P-ToPSS experiments (figures 10 and 11, reconstructed).

After every test event and for every subscription the question is *will it match within the
next n events?*; the answer is yes when ``beta(n) >= theta`` in the subscription's current state,
and it is right when a match really ends at one of the next ``n`` events. Precision, recall and
MCC are tabled over lookahead ``n = 1 .. 10`` and threshold ``theta = 0.1 .. 0.9``
(:mod:`cep.predict.evaluate`; events whose next 10 events are not all in the test data are left
out). The paper's text is not available to us; the workloads are our reconstruction
(docs/predict-eval.md):

1. **synthetic** (:mod:`cep.datasets.predict_workload`): 1000 subscriptions of length 10 over a pool of
   50 values with 2 ``;`` links; events uniform, or Gaussian over the pool (sigma 5); train on
   the first half of the stream (pair counts of :func:`cep.predict.many.run_many`), test on the
   second half continuing from the trained states; chains unmerged and merged (pooled counts of
   equivalent states, :mod:`cep.predict.merge`). A uniform pool of 5 values is added because
   the paper's uniform defaults produce no match at all (module docstring of
   :mod:`cep.datasets.predict_workload`).
2. **real** daily maxima of five places (docs/predict-data.md; the cached files of
   ``jobs.loaders.temperatures.fetch_temperature_file`` read with ``cep.datasets.temperatures``, no Spark):
   "five consecutive days above 30 degrees C". Per place, train on the first two thirds of its
   calendar years (rounded up) and test on the rest. The *generated* model is the Markov chain
   of ``PATTERN H, H, H, H, H DEFINE H AS tmax_c > 30`` (6 states; :func:`cep.predict.run.run_leaf`
   and :func:`cep.predict.markov.build_chain`, the core's one-subscription path); the *full*
   model is :mod:`cep.predict.history` (1365 states). Both are scored on the same days against
   the same truth, computed from the maxima directly (a run of at least 5 days above 30).
   Confusion counts are summed over places; per place, states, non-zero transitions and CPU
   time per event are reported.

Run from the project root (about a minute; CPU seconds, the machine is shared)::

    python -m benchmarks.eval_predict [--json PATH] [--events N] [--subscriptions N]

Example:
    >>> r = synthetic_accuracy("gaussian", n_subscriptions=20, n_events=4000, sigma=1.5)
    >>> r["confusion"]["unmerged"].tp.shape, r["test_events"]
    ((10, 9), 2000)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from cep.predict.evaluate import NO_MATCH, Confusion, calibration, confusion, next_distance, state_histogram
from cep.predict.events import Events, signatures
from cep.predict.history import temperature_classes, train_history
from cep.predict.machine import SequenceMachine
from cep.predict.many import alphabet, beta_table, compile_many, run_many, walk
from cep.predict.markov import build_chain
from cep.predict.merge import merge_tables
from cep.predict.run import run_leaf
from cep.predict.subscription import compile_subscription
from cep.datasets.predict_workload import synthetic_workload

SEED = 20261121
N_MAX = 10
THRESHOLDS = tuple(round(0.1 * i, 1) for i in range(1, 10))
HEAT = "PATTERN H, H, H, H, H DEFINE H AS tmax_c > 30"
TRAIN_YEARS = 2 / 3
SYNTHETIC = (("uniform", 50, None), ("gaussian", 50, 5.0), ("uniform", 5, None))


def synthetic_accuracy(distribution: str, *, n_subscriptions: int = 1000, n_events: int = 200_000,
                       pool: int = 50, sigma: float | None = None, seed: int = SEED,
                       n_max: int = N_MAX) -> dict[str, Any]:
    """Train on the first half, score every (event, subscription) of the second half."""
    w = synthetic_workload(n_subscriptions, n_events, pool=pool, distribution=distribution, sigma=sigma,
                           seed=seed)
    c0 = time.process_time()
    work = compile_many(w.subscriptions)
    alph = alphabet(work, w.events)
    half = n_events // 2
    c1 = time.process_time()
    train = run_many(work, alph.symbol[:half], sigs=alph.sigs)
    c2 = time.process_time()
    flat = train.flat
    report = merge_tables(flat)
    betas = {"unmerged": beta_table(flat, train.pairs, train.symbol_count, n_max)[1],
             "merged": beta_table(flat, train.pairs, train.symbol_count, n_max, merged=report)[1]}
    c3 = time.process_time()
    test = alph.symbol[half:]
    n_test = len(test)
    width = flat.n_machines
    # Pass 1: where each subscription matches in the test data (sparse: matches are rare).
    found: list[np.ndarray] = []

    def collect(offset: int, states: np.ndarray) -> None:
        t, j = np.nonzero(flat.accepting[states])
        found.append(j.astype(np.int64) * n_test + offset + t)

    walk(flat.next, test, np.zeros(1, np.int64), train.end_states, count=False, on_chunk=collect)
    keys = np.sort(np.concatenate(found)) if found else np.zeros(0, np.int64)
    keys_ext = np.r_[keys, NO_MATCH]
    # Pass 2: per state, how far the next match was.
    hist = np.zeros((flat.n_states, n_max + 1), dtype=np.int64)
    limit = n_test - n_max
    sub = np.arange(width, dtype=np.int64)

    def score(offset: int, states: np.ndarray) -> None:
        rows = np.arange(offset, offset + len(states))
        keep = rows < limit
        if not keep.any():
            return
        q = sub[None, :] * n_test + rows[keep][:, None]
        nxt = keys_ext[np.searchsorted(keys, q, side="right")]
        dist = np.where(nxt < (sub[None, :] + 1) * n_test, nxt - q, NO_MATCH)
        hist[:] += state_histogram(states[keep], dist, flat.n_states, n_max)

    walk(flat.next, test, np.zeros(1, np.int64), train.end_states, count=False, on_chunk=score)
    c4 = time.process_time()
    return {"distribution": distribution, "pool": pool, "sigma": w.sigma, "subscriptions": n_subscriptions,
            "train_events": half, "test_events": n_test, "scored_pairs": int(hist.sum()),
            "train_matches": int(train.matches.sum()), "test_matches": int(len(keys)),
            "subscriptions_matching_in_test": int(len(np.unique(keys // n_test))) if len(keys) else 0,
            "states_unmerged": report.unmerged, "states_merged": report.merged,
            "commonality": report.commonality,
            "confusion": {k: confusion(hist, b, THRESHOLDS) for k, b in betas.items()},
            "calibration": {k: calibration(hist, b) for k, b in betas.items()},
            "max_beta_difference_merged": float(np.abs(betas["merged"] - betas["unmerged"]).max()),
            "cpu_s": {"compile": c1 - c0, "train": c2 - c1, "chains": c3 - c2, "test_two_passes": c4 - c3}}


def heat_ends(tmax: np.ndarray, days: int = 5, above: float = 30.0) -> np.ndarray:
    """Days that end a run of at least ``days`` days with a maximum above ``above`` (the truth,
    from the maxima directly).

    Example:
        >>> heat_ends(np.array([31, 32, 33, 29, 31, 31, 31, 31, 31, 35.0]), days=3).astype(int).tolist()
        [0, 0, 1, 0, 0, 0, 1, 1, 1, 1]
    """
    hot = np.asarray(tmax) > above
    idx = np.arange(len(hot))
    last_cool = np.maximum.accumulate(np.where(hot, -1, idx))
    return hot & (idx - last_cool >= days)


def temperature_series() -> list[Any]:
    """The five places' daily temperatures from the cached files (no Spark)."""
    from cep.datasets.temperatures import read_daily_temperatures
    from delta_tables.settings import load_settings
    from jobs.loaders.temperatures import fetch_temperature_file, temperature_source

    settings = load_settings()
    out = []
    for pin in temperature_source(settings).cities:
        path = fetch_temperature_file(settings, pin.city, quiet=True)
        out.append(read_daily_temperatures(path.read_bytes(), city=pin.city, name=path.name))
    return out


def _split(day: np.ndarray) -> int:
    years = day.astype("datetime64[Y]").astype(np.int64)
    uniq = np.unique(years)
    cut_year = uniq[min(len(uniq) - 1, math.ceil(len(uniq) * TRAIN_YEARS))]
    return int(np.searchsorted(years, cut_year))


def temperature_accuracy(series: list[Any], n_max: int = N_MAX) -> dict[str, Any]:
    """Generated (6-state) against full (1365-state) model per place (module docstring)."""
    sub = compile_subscription(HEAT)
    leaf = sub.leaves[0]
    machine = SequenceMachine.from_sequence(leaf)
    places = []
    total: dict[str, Confusion] = {}
    cal: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for s in series:
        n = len(s)
        cut = _split(s.day)
        ends = heat_ends(s.tmax)
        dist = next_distance(ends[cut:])
        keep = np.arange(n - cut) < (n - cut) - n_max
        row: dict[str, Any] = {"city": s.city, "train_days": cut, "test_days": n - cut,
                               "train_from": str(s.day[0]), "test_from": str(s.day[cut]), "test_to": str(s.day[-1]),
                               "test_match_days": int(ends[cut:].sum())}
        # Generated model: the subscription's machine over the core's one-subscription path.
        ev = Events.from_columns(ts=np.arange(n, dtype=np.int64), attrs={"tmax_c": s.tmax})
        symbol, sigs = signatures(sub, ev)
        c0 = time.process_time()
        tr = run_leaf(machine, leaf, symbol[:cut], sigs, ev.ts[:cut], np.zeros(1, np.int64))
        freq = np.bincount(symbol[:cut], minlength=len(sigs))
        chain = build_chain(machine, tr.counts, sigs[freq > 0], freq[freq > 0], tr.end_masks)
        beta_g = chain.first_passage(n_max)[1]
        c1 = time.process_time()
        te = run_leaf(machine, leaf, symbol[cut:], sigs, ev.ts[cut:], np.zeros(1, np.int64), tr.end_masks)
        state_g = chain.index_of(te.masks)
        _ = beta_g[n_max][state_g]
        c2 = time.process_time()
        if not np.array_equal(te.accepted, ends[cut:]):
            raise AssertionError(f"{s.city}: the machine's matches differ from the heat runs")
        # Full model: histories of the last 5 days' classes.
        classes = temperature_classes(s.tmax)
        c3 = time.process_time()
        full = train_history(classes[:cut])
        beta_f = full.first_passage(n_max)[1]
        c4 = time.process_time()
        state_f = full.states(classes)[cut:]
        _ = beta_f[n_max][state_f]
        c5 = time.process_time()
        p_full = full.chain().p
        models = {
            "generated": (state_g, beta_g, chain.n_states, int((chain.p > 0).sum()), c1 - c0, c2 - c1),
            "full": (state_f, beta_f, full.n_states, int((p_full > 0).sum()), c4 - c3, c5 - c4),
        }
        for name, (states, beta, n_states, nonzero, train_s, test_s) in models.items():
            hist = state_histogram(states[keep], dist[keep], n_states, n_max)
            c = confusion(hist, beta, THRESHOLDS)
            total[name] = total[name] + c if name in total else c
            e, o = calibration(hist, beta)
            cal[name] = (cal[name][0] + e, cal[name][1] + o) if name in cal else (e, o)
            row[name] = {"states": n_states, "nonzero_transitions": nonzero, "train_cpu_s": train_s,
                         "test_cpu_us_per_event": 1e6 * test_s / max(n - cut, 1), "confusion": c}
        places.append(row)
    return {"places": places, "confusion": total, "calibration": cal}


def _cell(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.2f}"


def grid(c: Confusion, cal: tuple[np.ndarray, np.ndarray] | None = None) -> list[str]:
    """Markdown: one row per lookahead, one column per threshold, cells precision / recall / MCC;
    with ``cal``, the observed and expected (sum of beta) events with a match within n."""
    p, r, m = c.precision(), c.recall(), c.mcc()
    head = "| n | " + " | ".join(f"theta {t:.1f}" for t in c.thresholds) + " |"
    extra = " observed / expected positives |" if cal is not None else ""
    lines = [head + extra, "|---:|" + "---|" * len(c.thresholds) + ("---:|" if cal is not None else "")]
    for n in range(c.tp.shape[0]):
        cells = " | ".join(f"{_cell(p[n, i])} / {_cell(r[n, i])} / {_cell(m[n, i])}" for i in range(len(c.thresholds)))
        tail = f" {int(cal[1][n]):,} / {cal[0][n]:,.0f} |" if cal is not None else ""
        lines.append(f"| {n + 1} | {cells} |{tail}")
    return lines


def markdown(result: dict[str, Any]) -> str:
    lines: list[str] = []
    for r in result["synthetic"]:
        name = f"{r['distribution']}" + (f" (sigma {r['sigma']:g})" if r["sigma"] else "") + f", pool {r['pool']}"
        lines += ["", f"**Synthetic, {name}**: {r['subscriptions']:,} subscriptions, train {r['train_events']:,} / "
                  f"test {r['test_events']:,} events, {r['scored_pairs']:,} scored (event, subscription) pairs; "
                  f"matches in training {r['train_matches']:,}, in test {r['test_matches']:,} "
                  f"({r['subscriptions_matching_in_test']} subscriptions); states {r['states_unmerged']:,} "
                  f"unmerged, {r['states_merged']:,} merged (commonality {r['commonality']:.3f}); largest "
                  f"|beta merged - beta unmerged| {r['max_beta_difference_merged']:.3f}; CPU s: "
                  + ", ".join(f"{k} {v:.2f}" for k, v in r["cpu_s"].items()), ""]
        for model in ("unmerged", "merged"):
            c = r["confusion"][model]
            if model == "merged" and all(np.array_equal(np.round(f(c), 2), np.round(f(r["confusion"]["unmerged"]), 2),
                                                        equal_nan=True) for f in (Confusion.precision, Confusion.recall,
                                                                                  Confusion.mcc)):
                lines += ["Merged (pooled) chains: the same table to two decimals.", ""]
                continue
            lines += [f"{model} chains, precision / recall / MCC:", "", *grid(c, r["calibration"][model]), ""]
    t = result["temperatures"]
    if not t["places"]:
        return "\n".join(lines)
    lines += ["", "**Real daily maxima, five consecutive days above 30 °C** (per place: train on the first two "
              "thirds of its years, test on the rest):", "",
              "| place | train days | test days (from) | test days ending 5+ hot days | model | states | non-zero "
              "transitions | train CPU s | test CPU us/day | MCC n=5 theta=0.5 |",
              "|---|---:|---|---:|---|---:|---:|---:|---:|---:|"]
    for p in t["places"]:
        for model in ("generated", "full"):
            m = p[model]
            mcc = m["confusion"].mcc()[4, THRESHOLDS.index(0.5)]
            lines.append(f"| {p['city']} | {p['train_days']:,} | {p['test_days']:,} ({p['test_from']}) | "
                         f"{p['test_match_days']:,} | {model} | {m['states']:,} | {m['nonzero_transitions']:,} | "
                         f"{m['train_cpu_s']:.4f} | {m['test_cpu_us_per_event']:.2f} | {_cell(mcc)} |")
    for model in ("generated", "full"):
        lines += ["", f"All places, {model} model, precision / recall / MCC:", "",
                  *grid(t["confusion"][model], t["calibration"][model])]
    return "\n".join(lines)


def _plain(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, tuple):
        return [_plain(v) for v in x]
    if isinstance(x, Confusion):
        return {"thresholds": list(x.thresholds), "tp": x.tp.tolist(), "fp": x.fp.tolist(), "fn": x.fn.tolist(),
                "tn": x.tn.tolist(), "precision": x.precision().tolist(), "recall": x.recall().tolist(),
                "mcc": x.mcc().tolist()}
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_plain(v) for v in x]
    return x


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers here")
    parser.add_argument("--events", type=int, default=200_000, help="synthetic stream length (half is training)")
    parser.add_argument("--subscriptions", type=int, default=1000, help="synthetic N_cs")
    parser.add_argument("--no-real", action="store_true", help="skip the real temperatures")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    synthetic = [synthetic_accuracy(d, n_subscriptions=args.subscriptions, n_events=args.events, pool=pool,
                                    sigma=sigma) for d, pool, sigma in SYNTHETIC]
    temps = temperature_accuracy(temperature_series()) if not args.no_real else {"places": [], "confusion": {}}
    result = {"machine": {"platform": platform.platform(), "python": platform.python_version(),
                          "numpy": np.__version__, "cpus": os.cpu_count(), "load": os.getloadavg()},
              "synthetic": synthetic, "temperatures": temps}
    m = result["machine"]
    print(f"{m['platform']}, Python {m['python']}, numpy {m['numpy']}, {m['cpus']} CPUs; load {m['load'][0]:.2f}; "
          f"{time.perf_counter() - start:.0f} s")
    print(markdown(result))
    if args.json:
        args.json.write_text(json.dumps(_plain(result), indent=2, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
