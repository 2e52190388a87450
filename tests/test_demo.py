"""The README demo (`make demo` = `python -m jobs demo`) runs end to end against the test warehouse."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_demo_runs_and_shows_time_travel(settings, loaded_logs) -> None:
    env = dict(os.environ, CEP_WAREHOUSE=str(settings.warehouse_dir), PYTHONUNBUFFERED="1")
    proc = subprocess.run([sys.executable, "-m", "jobs", "demo"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "VERSION AS OF" in out and "demo finished" in out
    # The logs were loaded by the fixture, so the demo must find them up to date.
    assert out.count("up to date") == 3
    for needle in ("193849", "771148", "262200", "O_Accepted", "cep_functions"):
        assert needle in out, needle
    # Q1 finds all 20 planted kiting rings; Q2 lists rises on the real prices.
    assert "|rings_planted|rings_found|" in out and "|20           |20         |" in out
    assert "rise_pct" in out and "|AMD  |5     |2021-07-27" in out
    # predict_match with the heat model as of the job's first run, and days of a Tunis heat wave.
    assert "p_heatwave_within_5_days" in out and "|cordoba  |H1 H2 H3 H4 H5|5" in out
    assert "|tunis|2001-06-25|H1 H2 H3 H4 H5|0.937" in out
    # The run manifest records the heat job's run (docs/jobs.md).
    assert "manifest run predict/heat/g1/v" in out and "|predict/heat/g1/v" in out
