"""BENCHMARKS.md's headline block is what ``make bench-summary`` writes from the recorded runs
in ``benchmarks/results`` (no JVM): a run recorded without regenerating the block, or a block
edited by hand, fails here."""

from __future__ import annotations

import json

import pytest

from benchmarks.summary import BENCHMARKS_MD, END, START, block, read_runs, rewrite


def test_the_headline_block_is_written_from_the_recorded_runs() -> None:
    text = BENCHMARKS_MD.read_text()
    assert text.count(START) == 1 and text.count(END) == 1, "BENCHMARKS.md needs one headline"
    found = text[text.index(START):text.index(END) + len(END)]
    assert found == block(read_runs()), "run `make bench-summary` after recording a benchmark"


def test_every_recorded_run_names_its_date_commit_machine_and_command() -> None:
    runs = read_runs()
    assert runs, "no benchmark has recorded a run in benchmarks/results"
    for run in runs:
        assert all(run.get(k) for k in ("benchmark", "date", "commit", "machine", "command"))
        for entry in run["headline"]:
            assert entry["ours_s"] > 0 and entry["baseline_s"] > 0, entry


def test_rewrite_replaces_only_the_block(tmp_path) -> None:
    run = {"benchmark": "b", "date": "2026-01-01", "commit": "c0ffee1", "machine": "m",
           "command": "python -m benchmarks.b", "rows": [],
           "headline": [{"function": "f", "question": "q", "shape": "s", "ours_s": 1.0,
                         "baseline": "base", "baseline_s": 3.0}]}
    (tmp_path / "b.json").write_text(json.dumps(run))
    text = f"# Title\n\n{START}\nold\n{END}\n\n## Section\nkept\n"
    out = rewrite(text, read_runs(tmp_path))
    assert out.startswith("# Title\n\n") and out.endswith("\n\n## Section\nkept\n")
    assert "| f | q | s | 1.00 s | base: 3.00 s | 3.00x | 2026-01-01, c0ffee1, `b` |" in out
    with pytest.raises(ValueError, match="no headline markers"):
        rewrite("# no markers\n", [run])
