"""The maintenance job (jobs/maintenance.py) on real Spark + Delta.

A temporary conf folder registers one prediction set, ``mt``, and a two-hour time-travel
window; its state tables are written directly at their registered locations (no job run is
needed to test maintenance): ``mt_models`` from three small appends and an empty ``mt_meta``
with retention properties shorter than the window. The other state tables and the run manifest
``cep_runs`` do not exist. An untracked file three hours old stands for what VACUUM should
remove; the files OPTIMIZE replaces are minutes old, inside the window, so every earlier version
must stay readable. VACUUM is Delta's slowest command here, so it runs on three tables in all.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from cep.errors import ConfigError
from delta_tables.catalog import current_version, read_table
from delta_tables.settings import Settings, load_settings
from jobs.maintenance import (CHECK_CONF, LISTING_CONF, WINDOW_IGNORE_CONF,
                              NotMaintainedTableError, RetentionTooShortError, VacuumPlan,
                              maintain, maintained_tables, vacuum_plan)

ROOT = Path(__file__).resolve().parents[2]
WINDOW = 2  # hours: below Delta's 7-day default, so maintain must lift Delta's own check
PREDICTIONS = """
[predictions.mt]
source = "daily_temperatures"
key_col = "city"
ts_col = "ts"

[predictions.mt.subscriptions]
hot = "PATTERN H, H DEFINE H AS tmax_c > 30"
"""
JOBS = f"""
[run_all]
jobs = ["predict/mt"]

[maintenance]
time_travel_hours = {WINDOW}
optimize = true
"""


@pytest.fixture(scope="module")
def world(spark, tmp_path_factory) -> dict[str, Any]:
    from delta.tables import DeltaTable

    conf = tmp_path_factory.mktemp("maint_conf")
    for name in ("spark.toml", "tables.toml", "datasets.toml"):
        shutil.copy(ROOT / "conf" / name, conf / name)
    (conf / "predictions.toml").write_text(PREDICTIONS)
    (conf / "jobs.toml").write_text(JOBS)
    settings = load_settings(conf, overrides={
        "warehouse": str(tmp_path_factory.mktemp("maint_wh")), "show_progress": False})
    tables = maintained_tables(settings)
    models, meta = tables["mt_models"], tables["mt_meta"]
    for i in range(3):  # three commits of two small files each
        (spark.range(10 * i, 10 * i + 10, numPartitions=2).write.format("delta").mode("append")
         .save(str(models.location)))
    (DeltaTable.createIfNotExists(spark).location(str(meta.location)).addColumn("id", "BIGINT")
     .property("delta.deletedFileRetentionDuration", "interval 1 hours")
     .property("delta.logRetentionDuration", "interval 1 hours").execute())
    return {"settings": settings, "tables": tables, "models": models, "meta": meta,
            "versions": current_version(spark, models)}


def orphan(table) -> Path:
    """An untracked file three hours old in ``table``'s folder: VACUUM with a two-hour retention
    deletes it."""
    path = table.location / "part-00000-orphan.snappy.parquet"
    path.write_bytes(b"not a table file")
    old = time.time() - 3 * 3600
    os.utime(path, (old, old))
    return path


def versions(spark, world) -> dict[str, int | None]:
    return {name: current_version(spark, t) for name, t in world["tables"].items()}


def test_a_retention_below_the_window_is_refused_before_anything_is_touched(spark, world) -> None:
    stray = orphan(world["models"])
    before = versions(spark, world)
    with pytest.raises(RetentionTooShortError,
                       match=r"CEP-JOB-050: VACUUM retention of 1 hours .* window of 2 hours"):
        maintain(spark, world["settings"], retention_hours=1, quiet=True)
    with pytest.raises(RetentionTooShortError, match="retention of 0 hours"):
        maintain(spark, world["settings"], tables=["mt_models"], retention_hours=0, quiet=True)
    assert versions(spark, world) == before and stray.exists()


def test_only_registered_state_tables_and_the_manifest_are_maintained(spark, world) -> None:
    assert {"mt_models", "mt_meta", "mt_states", "cep_runs"} <= set(world["tables"])
    before = versions(spark, world)
    with pytest.raises(NotMaintainedTableError) as raised:
        maintain(spark, world["settings"], tables=["mt_models", "daily_temperatures"], quiet=True)
    message = str(raised.value)
    assert message.startswith("CEP-JOB-051: table 'daily_temperatures' is not a registered")
    assert "mt_models" in message and "cep_runs" in message  # the list of maintained tables
    assert versions(spark, world) == before  # mt_models, named first, was not touched


def test_a_state_table_sharing_a_folder_is_refused_before_anything_is_touched(
        spark, world, tmp_path) -> None:
    # tables.toml gives a source table the folder of the state table mt_models (issue 21):
    # VACUUM deletes by folder, so maintain refuses to start, naming both tables.
    models = world["models"]
    conf = tmp_path / "conf"
    shutil.copytree(world["settings"].conf_dir, conf)
    relative = models.location.relative_to(world["settings"].warehouse_dir)
    with (conf / "tables.toml").open("a", encoding="utf-8") as handle:
        handle.write(f'\n[tables.clash]\nlocation = "{relative}"\n')
    clashing = load_settings(conf, overrides={"warehouse": str(world["settings"].warehouse_dir),
                                              "show_progress": False})
    stray = orphan(models)
    before = versions(spark, world)
    with pytest.raises(ConfigError, match=r"CEP-CONF-001: maintain \(.*\): table clash's "
                                          r"location .* is also table mt_models's location"):
        maintain(spark, clashing, quiet=True)
    assert versions(spark, world) == before and stray.exists()
    stray.unlink()


def test_a_dry_run_reports_and_changes_nothing(spark, world) -> None:
    stray = orphan(world["models"])
    before = versions(spark, world)
    files = {t: sorted(world[t].location.iterdir()) for t in ("models", "meta")}
    result = maintain(spark, world["settings"], tables=["mt_models", "mt_states"], dry_run=True,
                      quiet=True)
    assert result.dry_run and versions(spark, world) == before and stray.exists()
    assert {t: sorted(world[t].location.iterdir()) for t in files} == files
    for conf in (CHECK_CONF, WINDOW_IGNORE_CONF, LISTING_CONF):  # set for VACUUM only
        assert spark.conf.get(conf, None) is None
    models = result.table("mt_models")
    assert models.existed and not models.optimized and models.files_deleted >= 1
    assert models.files_after == models.files_before >= 1
    assert models.vacuum_retention_hours == WINDOW and not models.warnings
    assert not result.table("mt_states").existed
    assert "would delete" in str(result) and "mt_states: does not exist yet; skipped" in str(result)


def test_optimize_compacts_and_vacuum_keeps_time_travel_within_the_window(spark, world) -> None:
    models = world["models"]
    history = {v: sorted(r[0] for r in read_table(spark, models, version=v).collect())
               for v in range(world["versions"] + 1)}
    stray = orphan(models)
    spark.conf.set(CHECK_CONF, "true")  # a value the caller set is put back afterwards
    try:
        result = maintain(spark, world["settings"], quiet=True)
        assert spark.conf.get(CHECK_CONF) == "true"
    finally:
        spark.conf.unset(CHECK_CONF)
    assert spark.conf.get(WINDOW_IGNORE_CONF, None) is None

    done = result.table("mt_models")
    assert done.existed and done.optimized and done.files_before >= 6
    assert done.files_after < done.files_before and done.files_compacted >= 6
    assert done.vacuum_retention_hours == WINDOW and done.files_deleted >= 1 and not done.warnings
    assert not stray.exists()  # older than the window: deleted
    for version, rows in history.items():  # the replaced small files are inside the window
        assert sorted(r[0] for r in read_table(spark, models, version=version).collect()) == rows
        sql = f"SELECT count(*) FROM delta.`{models.location}` VERSION AS OF {version}"
        assert spark.sql(sql).first()[0] == len(rows)

    # Missing tables (the manifest among them) are skipped and reported.
    assert [t.name for t in result.tables if t.existed] == ["mt_models", "mt_meta"]
    assert not result.table("cep_runs").existed and result.table("cep_runs").files_deleted is None
    meta = result.table("mt_meta")  # its 1-hour settings are shorter than the window
    assert meta.vacuum_retention_hours == WINDOW and meta.files_after == 0
    assert any("delta.logRetentionDuration is 1 hours" in w for w in meta.warnings)
    assert any("refuses time travel" in w for w in meta.warnings)
    text = str(result)
    assert "cep_runs: does not exist yet; skipped" in text
    assert "warning: delta.logRetentionDuration" in text


def test_the_vacuum_plan_follows_the_window_and_the_table_properties() -> None:
    # Defaults (deleted files 7 days, log 30 days) with a 2-hour window: Delta's check is lifted.
    assert vacuum_plan({}, WINDOW, WINDOW) == VacuumPlan(WINDOW, True, ())
    assert vacuum_plan({}, 200, WINDOW) == VacuumPlan(200, False, ())
    # A table that keeps deleted files 10 days keeps them: no check to lift, a note.
    kept = vacuum_plan({"delta.deletedFileRetentionDuration": "interval 10 days"}, 24, 24)
    assert kept.hours == 240 and not kept.lift_check and len(kept.warnings) == 1
    # A 40-day window is longer than both defaults: two warnings, the retention is ours.
    long = vacuum_plan({}, 960, 960)
    assert long.hours == 960 and not long.lift_check
    assert [w.split(" is ")[0] for w in long.warnings] == ["delta.logRetentionDuration",
                                                          "delta.deletedFileRetentionDuration"]
    odd = vacuum_plan({"delta.logRetentionDuration": "forever"}, 24, 24)
    assert odd.warnings == (
        "cannot read delta.logRetentionDuration = 'forever'; assumed 720 hours",)


def test_the_maintained_tables_are_the_state_tables_and_the_manifest(world) -> None:
    settings: Settings = world["settings"]
    assert set(maintained_tables(settings)) == {f"mt_{s}" for s in (
        "subscriptions", "states", "models", "instances", "late", "meta")} | {"cep_runs"}
