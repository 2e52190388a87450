"""``follows``, ``variants`` and ``case_stats`` on the three real BPI logs equal pm4py's answers.

pm4py's values are pinned in ``pm4py_pins.json.gz`` with the versions that computed them
(``make_pm4py_pins.py`` says how); the project's answers come through ``spark.sql`` on the
Delta tables the demo loads from the same XES files.
"""

from __future__ import annotations

import gzip
import json
import math
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

PINS = Path(__file__).with_name("pm4py_pins.json.gz")
LOGS = ("bpi2017_offers", "bpi2017_applications", "bpi2012")


@lru_cache(maxsize=1)
def pins() -> dict[str, Any]:
    with gzip.open(PINS, "rt", encoding="utf-8") as f:
        return json.load(f)


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)


def test_the_pins_name_the_versions_that_made_them() -> None:
    assert pins()["versions"]["pm4py"] == "2.5.3"


@pytest.mark.parametrize("log", LOGS)
def test_follows_is_pm4py_directly_follows_graph(spark, loaded_logs, log: str) -> None:
    want = pins()["logs"][log]
    rows = spark.sql(f"SELECT * FROM follows('case_id', TABLE({log}))").collect()
    assert sorted([r.source, r.target, r.n] for r in rows) == want["dfg"]
    performance = {(a, b): stats for a, b, stats in want["performance"]}
    wrong = [(r.source, r.target, (r.min_duration, r.median_duration, r.mean_duration,
                                   r.max_duration), performance[(r.source, r.target)])
             for r in rows
             if not all(close(getattr(r, f"{k}_duration"), performance[(r.source, r.target)][k])
                        for k in ("min", "median", "mean", "max"))]
    assert not wrong, wrong[:5]


@pytest.mark.parametrize("log", LOGS)
def test_variants_are_pm4py_variants(spark, loaded_logs, log: str) -> None:
    want = pins()["logs"][log]
    rows = spark.sql(f"SELECT variant, cases, rank, share FROM variants('case_id', "
                     f"TABLE({log}))").collect()
    assert sorted([list(r.variant), r.cases] for r in rows) == want["variants"]
    total = sum(n for _, n in want["variants"])
    ranked = sorted(rows, key=lambda r: r.rank)
    assert [r.rank for r in ranked] == list(range(1, len(rows) + 1))
    assert all(a.cases >= b.cases for a, b in zip(ranked, ranked[1:]))
    assert all(close(r.share, r.cases / total) for r in rows)


@pytest.mark.parametrize("log", LOGS)
def test_case_stats_are_pm4py_case_durations_and_end_activities(spark, loaded_logs,
                                                               log: str) -> None:
    want = pins()["logs"][log]
    rows = spark.sql(f"SELECT case_id, duration, first_type, last_type, n_events "
                     f"FROM case_stats('case_id', TABLE({log}))").collect()
    durations = want["case_durations"]
    assert len(rows) == len(durations)
    wrong = [(r.case_id, r.duration, durations[r.case_id]) for r in rows
             if not close(r.duration, durations[r.case_id])]
    assert not wrong, wrong[:5]
    assert dict(Counter(r.first_type for r in rows)) == want["start_activities"]
    assert dict(Counter(r.last_type for r in rows)) == want["end_activities"]
    assert sum(r.n_events for r in rows) == want["events"]
