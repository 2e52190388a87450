"""P-ToPSS's real-data comparison (section 6, Fig. 11): the generated model against the hand-crafted one.

Muthusamy, Liu and Jacobsen (DEBS 2010), section 6, "Realistic workload", as the text states it:

* data: "real average daily temperature data for 157 U.S and 167 international cities" (the
  Global Summary of the Day, via the University of Dayton). We have five places' daily maxima
  and minima (docs/predict-data.md); the paper's *average* is approximated by
  ``(tmax + tmin) / 2`` (:func:`cep.predict.temperature.daily_mean`, ``--measure mean``, the
  default); ``--measure tmax`` (or ``both``) also runs the daily maximum, where heat waves are
  frequent;
* the subscription ``s = (T > 30)``, ``cs = s, s, s, s, s``: ``PATTERN H, H, H, H, H DEFINE H AS
  temp_c > 30``;
* the *generated* model: the subscription's machine and its trained chain ("only 5 states",
  the text says; ``N_0 .. N_5`` are 6);
* the *full* model: "4 categories separated by 30, 20, 10 degrees", "all temperature
  combinations from 1 day to 5 days", "1365 states" (``4 + 16 + 64 + 256 + 1024 = 1364``
  histories of 1 to 5 days; the 1365th is the empty history before the first day);
* the metric of Fig. 11: true positives, false positives and precision ("the ratio between
  true positives and all predictions", section 6.2) over lookahead and threshold. The figure's
  values are not in the text (the plots are images), nor its lookaheads and thresholds, nor the
  train/test split.

Five models, each trained per place on the first two thirds of its calendar years (rounded up)
and scored on the rest, continuing from the state the training ended in:

1. ``gen ours``: our engine, :func:`cep.predict.predict` with ``definition='first_passage'``
   (our machine, 6 states; ``beta(n)`` = P(a match within n days));
2. ``gen ours/paper-def``: the same engine with ``definition='paper'`` (trained by arrivals,
   ``beta(n) = sum_(k <= n) P^k[i, F]``);
3. ``gen paper``: the paper's machine (:func:`cep.predict.paper.paper_tables`: after a match it
   restarts, so a long heat wave matches on days 5, 10, 15, ...), trained by arrivals, the
   paper's ``beta``;
4. ``full paper``: the 1365-state history model trained as the paper trains (line 387) with the
   paper's ``beta`` (:func:`cep.predict.temperature.paper_full_chain`);
5. ``full ours``: the same states, our back-off training and first passage
   (:mod:`cep.predict.history` with the paper's classes).

After every scored test day (one whose next 10 days are in the test data) a model predicts
"a match within the next n days" when its value is at least the threshold; the truth is a day
that ends five or more consecutive days above 30 among the next n (every such day, so a heat
wave of 7 days has 3 match days; the same truth for all five models). Confusion counts are
summed over the five places. A second scoring keeps only the days inside a partial match (1 to
4 hot days in a row): the days on which the two kinds of model can differ most.

Run from the project root (a few seconds; no Spark; the wheel is downloaded and verified once
by :func:`jobs.loaders.temperatures.fetch_temperature_file`)::

    python -m benchmarks.bench_predict_temperature [--measure mean|tmax|both] [--json PATH] [--md PATH]
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
from typing import Any, Callable

import numpy as np

from benchmarks.eval_predict import temperature_series
from cep.predict import Events, predict
from cep.predict.evaluate import Confusion, next_distance
from cep.predict.history import history_states, train_history
from cep.predict.machine import SequenceMachine
from cep.predict.markov import build_chain
from cep.predict.paper import build_state_machine, paper_chain, paper_tables
from cep.predict.run import run_leaf
from cep.predict.subscription import compile_subscription
from cep.predict.temperature import daily_mean, paper_classes, paper_full_chain

HEAT = "PATTERN H, H, H, H, H DEFINE H AS temp_c > 30"
N_MAX = 10
THRESHOLDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
SHOW_N = (1, 2, 5, 10)
SHOW_THETA = (0.1, 0.3, 0.5, 0.7, 0.9, 0.95)
TRAIN_YEARS = 2 / 3
MODELS = ("gen ours", "gen ours/paper-def", "gen paper", "full paper", "full ours")


def split_day(day: np.ndarray, share: float = TRAIN_YEARS) -> int:
    """The first test day: the start of the calendar year after the first ``ceil(share * years)``
    years (the split of benchmarks/eval_predict.py).

    Example:
        >>> split_day(np.arange("2000-01-01", "2003-01-01", dtype="datetime64[D]"))
        731
    """
    years = day.astype("datetime64[Y]").astype(np.int64)
    uniq = np.unique(years)
    cut_year = uniq[min(len(uniq) - 1, math.ceil(len(uniq) * share))]
    return int(np.searchsorted(years, cut_year))


def match_days(temps: np.ndarray, days: int = 5, above: float = 30.0) -> np.ndarray:
    """Days that end ``days`` or more consecutive days above ``above`` (the truth).

    Example:
        >>> match_days(np.array([31, 32, 33, 29, 31, 31, 31, 35.0]), days=3).astype(int).tolist()
        [0, 0, 1, 0, 0, 0, 1, 1]
    """
    return hot_run(temps, above) >= days


def hot_run(temps: np.ndarray, above: float = 30.0) -> np.ndarray:
    """Per day, how many days in a row up to it were above ``above`` (0 on a day not above).

    Example:
        >>> hot_run(np.array([31, 32, 20, 31.0])).tolist()
        [1, 2, 0, 1]
    """
    hot = np.asarray(temps) > above
    idx = np.arange(len(hot))
    last_cool = np.maximum.accumulate(np.where(hot, -1, idx))
    return np.where(hot, idx - last_cool, 0)


def score(values: np.ndarray, dist: np.ndarray, keep: np.ndarray) -> Confusion:
    """Confusion counts of ``values[n] >= theta`` against "a match within n days".

    Args:
        values: ``(N_MAX + 1, days)``: each model's value for lookahead ``n`` after each test day.
        dist: per test day, the days until the next match day (``NO_MATCH`` for none).
        keep: the scored days.
    """
    th = np.asarray(THRESHOLDS)
    tp, fp, fn, tn = (np.zeros((N_MAX, len(th)), dtype=np.int64) for _ in range(4))
    d = dist[keep]
    for n in range(1, N_MAX + 1):
        truth = d <= n
        pred = values[n][keep][:, None] >= th[None, :]
        tp[n - 1] = (pred & truth[:, None]).sum(axis=0)
        fp[n - 1] = (pred & ~truth[:, None]).sum(axis=0)
        fn[n - 1] = truth.sum() - tp[n - 1]
        tn[n - 1] = (~truth).sum() - fp[n - 1]
    return Confusion(THRESHOLDS, tp, fp, fn, tn)


def _cpu() -> float:
    return time.process_time()


def engine_values(temps: np.ndarray, cut: int, city: str, definition: str) -> tuple[np.ndarray, np.ndarray, float]:
    """Our engine: train :func:`cep.predict.predict` on the training days, then predict every
    test day for ``n = 1 .. N_MAX`` with that model, starting from the training's end state.

    Returns:
        ``(values, matched, cpu_seconds)``: ``(N_MAX + 1, test days)`` probabilities (row 0
        zero), the engine's match flags on the test days, and the CPU time of all the calls.
    """
    n = len(temps)
    ev = Events.from_columns(ts=np.arange(n, dtype=np.int64), keys=[city] * n, attrs={"temp_c": temps})
    train, test = ev.take(np.arange(cut)), ev.take(np.arange(cut, n))
    c0 = _cpu()
    trained = predict(HEAT, train, lookahead=1, definition=definition)
    values = np.zeros((N_MAX + 1, n - cut))
    matched = np.zeros(n - cut, dtype=bool)
    for la in range(1, N_MAX + 1):
        r = predict(HEAT, test, lookahead=la, model=trained.trained, start=trained.states, output="events",
                    definition=definition)
        values[la] = r.rows["probability"]
        matched = np.asarray(r.rows["matched"], dtype=bool)
    return values, matched, _cpu() - c0


def generated_core(temps: np.ndarray, cut: int) -> tuple[np.ndarray, int, int, float]:
    """Our generated model through the core pieces :func:`predict` runs (machine, run, chain,
    first passage): the values on the test days (to check the engine's), the chain's states and
    non-zero transitions, and the CPU time to train it and compute ``beta(1 .. N_MAX)``."""
    sub = compile_subscription(HEAT)
    machine = SequenceMachine.from_sequence(sub.leaves[0])
    hot = (temps > 30).astype(np.int64)
    sigs = np.array([0, 1], dtype=np.int64)
    ts = np.arange(len(temps), dtype=np.int64)
    c0 = _cpu()
    tr = run_leaf(machine, sub.leaves[0], hot[:cut], sigs, ts[:cut], np.zeros(1, np.int64))
    freq = np.bincount(hot[:cut], minlength=2)
    te = run_leaf(machine, sub.leaves[0], hot[cut:], sigs, ts[cut:], np.zeros(1, np.int64), tr.end_masks)
    chain = build_chain(machine, tr.counts, sigs[freq > 0], freq[freq > 0], np.r_[tr.end_masks, te.masks])
    beta = chain.first_passage(N_MAX)[1]
    cpu = _cpu() - c0
    return beta[:, chain.index_of(te.masks)], chain.n_states, int((chain.p > 0).sum()), cpu


def paper_generated(temps: np.ndarray, cut: int) -> tuple[np.ndarray, np.ndarray, int, int, float]:
    """The paper's machine for ``s, s, s, s, s`` (one instance; restarts after a match), trained
    by arrivals, the paper's ``beta``.

    Returns:
        ``(values, matched, states, non-zero transitions, cpu_seconds)``.
    """
    sub = compile_subscription(HEAT)
    seq = sub.leaves[0]
    machine = build_state_machine(seq, tuple(0 for _ in seq.steps))
    nxt, accepting, _ = paper_tables([machine], np.array([[False], [True]]))
    sym = (temps > 30).astype(np.int64)
    c0 = _cpu()
    state = np.empty(len(sym), dtype=np.int64)
    s = 0
    table = nxt.tolist()
    for i, g in enumerate(sym.tolist()):
        s = table[s][g]
        state[i] = s
    before = np.r_[0, state[:-1]]
    pairs = np.zeros(nxt.shape, dtype=np.int64)
    np.add.at(pairs, (before[:cut], sym[:cut]), 1)
    chain = paper_chain(nxt, accepting, pairs, np.bincount(sym[:cut], minlength=2))
    beta = chain.occupancy(N_MAX)[1]
    values = beta[:, state[cut:]]
    return values, accepting[state[cut:]], chain.n_states, int((chain.p > 0).sum()), _cpu() - c0


def full_models(temps: np.ndarray, cut: int) -> dict[str, tuple[np.ndarray, int, int, float]]:
    """The 1365-state history model, the paper's way and ours: ``name -> (values, states,
    non-zero transitions, cpu_seconds)``."""
    classes = paper_classes(temps)
    states = history_states(classes, 4, 5)[cut:]
    out = {}
    c0 = _cpu()
    chain = paper_full_chain(classes[:cut])
    beta = chain.occupancy(N_MAX)[1]
    out["full paper"] = (beta[:, states], chain.n_states, int((chain.p > 0).sum()), _cpu() - c0)
    c0 = _cpu()
    model = train_history(classes[:cut])
    fchain = model.chain()
    beta = fchain.first_passage(N_MAX)[1]
    out["full ours"] = (beta[:, states], fchain.n_states, int((fchain.p > 0).sum()), _cpu() - c0)
    return out


MEASURES: dict[str, Callable[[Any], np.ndarray]] = {
    "mean": lambda s: daily_mean(s.tmax, s.tmin),
    "tmax": lambda s: np.asarray(s.tmax, dtype=np.float64),
}


def run_measure(series: list[Any], measure: str) -> dict[str, Any]:
    """All five models on every place for one daily measure (module docstring)."""
    places = []
    total: dict[str, Confusion] = {}
    partial: dict[str, Confusion] = {}
    for s in series:
        temps = MEASURES[measure](s)
        n = len(temps)
        cut = split_day(s.day)
        truth = match_days(temps)
        dist = next_distance(truth[cut:])
        keep = np.arange(n - cut) < (n - cut) - N_MAX
        run = hot_run(temps)[cut:]
        in_partial = keep & (run >= 1) & (run <= 4)
        row: dict[str, Any] = {"city": s.city, "train_days": cut, "test_days": n - cut, "test_from": str(s.day[cut]),
                               "hot_days": int((temps > 30).sum()), "train_match_days": int(truth[:cut].sum()),
                               "test_match_days": int(truth[cut:].sum()), "scored_days": int(keep.sum()),
                               "scored_partial_days": int(in_partial.sum()),
                               "positive_days_n5": int((dist[keep] <= 5).sum()), "models": {}}
        vals: dict[str, np.ndarray] = {}
        info: dict[str, dict[str, Any]] = {}
        v, matched, cpu = engine_values(temps, cut, s.city, "first_passage")
        if not np.array_equal(matched, truth[cut:]):
            raise AssertionError(f"{s.city}: the engine's matches differ from the runs of 5 hot days")
        core, n_states, nonzero, cpu_core = generated_core(temps, cut)
        if not np.allclose(core, v, rtol=0, atol=1e-12):
            raise AssertionError(f"{s.city}: the engine's probabilities differ from the core chain's")
        vals["gen ours"] = v
        info["gen ours"] = {"states": n_states, "nonzero_transitions": nonzero, "train_beta_cpu_s": cpu_core,
                            "engine_cpu_s": cpu}
        v, _, cpu = engine_values(temps, cut, s.city, "paper")
        vals["gen ours/paper-def"] = v
        info["gen ours/paper-def"] = {"states": n_states, "nonzero_transitions": nonzero, "engine_cpu_s": cpu}
        v, pmatched, n_states, nonzero, cpu = paper_generated(temps, cut)
        vals["gen paper"] = v
        info["gen paper"] = {"states": n_states, "nonzero_transitions": nonzero, "train_beta_cpu_s": cpu,
                             "own_matches_in_test": int(pmatched.sum())}
        for name, (v, n_states, nonzero, cpu) in full_models(temps, cut).items():
            vals[name] = v
            info[name] = {"states": n_states, "nonzero_transitions": nonzero, "train_beta_cpu_s": cpu}
        for name in MODELS:
            c = score(vals[name], dist, keep)
            cp = score(vals[name], dist, in_partial)
            total[name] = total[name] + c if name in total else c
            partial[name] = partial[name] + cp if name in partial else cp
            info[name]["max_value_n10"] = float(vals[name][N_MAX].max())
        row["models"] = info
        places.append(row)
    return {"measure": measure, "places": places, "all_days": total, "partial_days": partial}


def claims(res: dict[str, Any]) -> dict[str, Any]:
    """The paper's statements about Fig. 11, measured (module docstring)."""
    out: dict[str, Any] = {}
    c = res["all_days"]
    ti = THRESHOLDS.index(0.5)
    for name in MODELS:
        tp, fp = c[name].tp, c[name].fp
        zero = [t for j, t in enumerate(THRESHOLDS) if tp[N_MAX - 1, j] + fp[N_MAX - 1, j] == 0]
        out[name] = {"predictions_all_cells": int((tp + fp).sum()), "tp_all_cells": int(tp.sum()),
                     "fp_all_cells": int(fp.sum()),
                     "first_theta_without_predictions_n10": zero[0] if zero else None,
                     "tp_at_0.95": [int(x) for x in tp[:, -1]],
                     "precision_n1_theta05": _num(c[name].precision()[0, ti]),
                     "precision_n10_theta05": _num(c[name].precision()[N_MAX - 1, ti])}
    return out


def _num(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def _cell(c: Confusion, n: int, theta: float) -> str:
    j = THRESHOLDS.index(theta)
    tp, fp = int(c.tp[n - 1, j]), int(c.fp[n - 1, j])
    p = c.precision()[n - 1, j]
    return f"{'-' if math.isnan(p) else f'{p:.2f}'} ({tp}/{fp})"


def grid(conf: dict[str, Confusion]) -> list[str]:
    """Markdown: per lookahead and model, precision (TP/FP) per threshold."""
    lines = ["| n | model | " + " | ".join(f"theta {t:g}" for t in SHOW_THETA) + " |",
             "|---:|---|" + "---|" * len(SHOW_THETA)]
    for n in SHOW_N:
        for name in MODELS:
            lines.append(f"| {n} | {name} | " + " | ".join(_cell(conf[name], n, t) for t in SHOW_THETA) + " |")
    return lines


def claims_table(cl: dict[str, Any]) -> list[str]:
    """Markdown of :func:`claims`."""
    lines = ["| model | predictions (TP / FP) | first theta without predictions at n = 10 | TP at theta 0.95, "
             "n = 1..10 | precision at theta 0.5, n = 1 / n = 10 |", "|---|---|---|---|---|"]
    for name in MODELS:
        c = cl[name]
        first = c["first_theta_without_predictions_n10"]
        p1, p10 = (("-" if x is None else f"{x:.2f}") for x in (c["precision_n1_theta05"], c["precision_n10_theta05"]))
        lines.append(f"| {name} | {c['predictions_all_cells']:,} ({c['tp_all_cells']:,} / {c['fp_all_cells']:,}) | "
                     f"{'none up to 0.95' if first is None else first} | {', '.join(map(str, c['tp_at_0.95']))} | "
                     f"{p1} / {p10} |")
    return lines


def markdown(result: dict[str, Any]) -> str:
    """Tables of :func:`main`'s result."""
    m = result["machine"]
    lines = [f"{m['platform']}, Python {m['python']}, numpy {m['numpy']}, {m['cpus']} CPUs, load "
             f"{m['load'][0]:.2f}; {result['wall_s']:.1f} s wall clock", ""]
    for res in result["measures"]:
        lines += [f"### daily {res['measure']}", "",
                  "| place | train days | test days (from) | days > 30 | match days train / test | scored "
                  "(in a partial match) | gen ours states / transitions | gen paper | full paper | full ours |",
                  "|---|---:|---|---:|---|---|---|---|---|---|"]
        for p in res["places"]:
            mm = p["models"]
            lines.append(f"| {p['city']} | {p['train_days']:,} | {p['test_days']:,} ({p['test_from']}) | "
                         f"{p['hot_days']:,} | {p['train_match_days']} / {p['test_match_days']} | "
                         f"{p['scored_days']:,} ({p['scored_partial_days']:,}) | "
                         + " | ".join(f"{mm[k]['states']:,} / {mm[k]['nonzero_transitions']:,}"
                                      for k in ("gen ours", "gen paper", "full paper", "full ours")) + " |")
        cpu = {k: sum(p["models"][k].get("train_beta_cpu_s", 0.0) for p in res["places"])
               for k in ("gen ours", "gen paper", "full paper", "full ours")}
        lines += ["", "CPU s to train and compute beta(1..10), all places (the generated models' also include the walk "
                  "over the test days): " + ", ".join(f"{k} {v:.3f}" for k, v in cpu.items()),
                  "", "All scored test days, precision (TP/FP):", "", *grid(res["all_days"]), "",
                  "Days inside a partial match (1-4 hot days in a row), precision (TP/FP):", "",
                  *grid(res["partial_days"]), "", "The paper's statements, measured (all scored days; cells summed "
                  "over n = 1..10 and the 10 thresholds):", "", *claims_table(res["claims"]), ""]
    return "\n".join(lines)


def _plain(x: Any) -> Any:
    if isinstance(x, Confusion):
        return {"thresholds": list(x.thresholds), "tp": x.tp.tolist(), "fp": x.fp.tolist(), "fn": x.fn.tolist(),
                "tn": x.tn.tolist()}
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, np.generic):
        return x.item()
    return x


def main(argv: list[str] | None = None) -> int:
    """Command line (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--measure", choices=("mean", "tmax", "both"), default="both")
    parser.add_argument("--json", type=Path, metavar="PATH")
    parser.add_argument("--md", type=Path, metavar="PATH")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    series = temperature_series()
    measures = ("mean", "tmax") if args.measure == "both" else (args.measure,)
    results = []
    for measure in measures:
        res = run_measure(series, measure)
        res["claims"] = claims(res)
        results.append(res)
    result = {"machine": {"platform": platform.platform(), "python": platform.python_version(),
                          "numpy": np.__version__, "cpus": os.cpu_count(), "load": os.getloadavg()},
              "measures": results, "wall_s": time.perf_counter() - start}
    text = markdown(result)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(_plain(result), indent=1, default=float))
    if args.md:
        args.md.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
