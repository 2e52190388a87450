"""The README demo (`make demo` = `python -m jobs demo`) runs end to end against the test warehouse.

It runs through the command line's ``main`` in the test session: a process of its own would
cost a JVM start and the registration of every table; the process path of ``python -m jobs``
is run by tests/test_docs.py (``test_shell_example_runs_as_a_process``)."""

from __future__ import annotations

import re


def test_demo_runs_and_shows_time_travel(spark, settings, loaded_logs, capsys) -> None:
    from jobs.cli import main

    # tests/conftest.py's standing_offers (docs/standing.md) runs the same standing pattern on
    # this warehouse; when a module that uses it ran first (`pytest tests/test_docs.py
    # tests/test_demo.py`), the demo's runs find nothing new, as a user's second demo would.
    ran_before = spark.catalog.tableExists("unanswered_offers_timeouts")
    code = main(["demo"], spark=spark, settings=settings)
    out, err = capsys.readouterr()
    assert code == 0, out[-3000:] + err[-3000:]
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
    # The standing pattern over the offer feed's two commits: one run each, then its alerts.
    if ran_before:
        assert out.count("unanswered_offers: nothing new up to source version 1") == 2
    else:
        assert ("unanswered_offers: source versions 0..0: 84,184 events read; 9,480 offers "
                "answered within 20 days, 6,717 unanswered (timeouts)") in out
    assert "|unanswered_offers:1-1|14167  |" in out and "|window_closed|unanswered_offers|" in out
    # Issue 52: the offers' variants and directly-follows graph, then the two pictures.
    assert re.search(r"\|1 +\|O_Create Offer > O_Created > O_Sent \(mail and online\) > "
                     r"O_Cancelled *\|16365 *\|", out)
    assert re.search(r"\|O_Create Offer *\|O_Created *\|42995 *\|42995 *\|", out)
    assert "offers_process_map.png" in out and "offers_variants.png" in out
