"""Writes ``pm4py_pins.json.gz``: pm4py's own answers on the three BPI logs, computed once.

The test ``tests/mining/test_bpi_pm4py.py`` compares ``follows``, ``variants`` and
``case_stats`` with these values. pm4py is not a dependency of the project, so the values are
computed in a separate environment and pinned with the versions that made them (kept in the
file)::

    python3 -m venv /tmp/pm4py-env
    /tmp/pm4py-env/bin/pip install pm4py==2.5.3 pandas==1.5.3 numpy==1.26.4
    /tmp/pm4py-env/bin/python tests/mining/make_pm4py_pins.py data/cache/logs \\
        tests/mining/pm4py_pins.json.gz

The logs are the files ``conf/datasets.toml`` extracts from the pm4py sdist (``make data``).
For each: ``pm4py.read_xes``, then ``discover_dfg`` (directly-follows counts, start and end
activities), ``discover_performance_dfg`` (min, median, mean, max seconds per pair),
``get_variants`` (cases per variant) and the case durations of
``case_statistics.get_cases_description`` (per case, seconds). This file imports pm4py only.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

LOGS = {"bpi2017_offers": "05_bpic2017.xes.gz",
        "bpi2017_applications": "18_bpic2017_application_1t_per_variant.xes.gz",
        "bpi2012": "bpic2012.xes.gz"}


def pins(path: Path) -> dict:
    """pm4py's answers on one log."""
    import pm4py
    from pm4py.statistics.traces.generic.pandas import case_statistics

    df = pm4py.read_xes(str(path))
    dfg, starts, ends = pm4py.discover_dfg(df)
    performance, _, _ = pm4py.discover_performance_dfg(df)
    variants = pm4py.get_variants(df)
    cases = case_statistics.get_cases_description(df)
    return {
        "events": int(len(df)),
        "dfg": sorted([a, b, int(n)] for (a, b), n in dfg.items()),
        "start_activities": {a: int(n) for a, n in starts.items()},
        "end_activities": {a: int(n) for a, n in ends.items()},
        "performance": sorted([a, b, {k: float(v[k]) for k in ("min", "median", "mean", "max")}]
                              for (a, b), v in performance.items()),
        "variants": sorted([list(v), int(n) if not isinstance(n, list) else len(n)]
                           for v, n in variants.items()),
        "case_durations": {str(c): float(d["caseDuration"]) for c, d in cases.items()},
    }


def main(logs: Path, target: Path) -> None:
    import numpy
    import pandas
    import pm4py

    out = {"versions": {"pm4py": pm4py.__version__, "pandas": pandas.__version__,
                        "numpy": numpy.__version__},
           "logs": {name: pins(logs / file) for name, file in LOGS.items()}}
    with gzip.open(target, "wt", encoding="utf-8") as f:
        json.dump(out, f, sort_keys=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
