"""Settings from conf/: overrides, validation, locations confined to the warehouse (no JVM)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cep.errors import ConfigError
from delta_tables.settings import PROJECT_ROOT, check_identifier, load_settings, resolve_under


def test_defaults_come_from_conf() -> None:
    s = load_settings()
    assert s.master == "local[2]" and s.shuffle_partitions == 2
    assert s.data_dir == (PROJECT_ROOT / "data").resolve()
    assert s.warehouse_dir == s.data_dir / "warehouse"
    assert s.table("bpi2017_offers").location == s.warehouse_dir / "bpi2017_offers"
    assert s.delta_package.startswith("io.delta:delta-spark_4.2_2.13:")


def test_environment_and_overrides(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CEP_SPARK_MASTER", "spark://cluster:7077")
    monkeypatch.setenv("CEP_DATA_DIR", str(tmp_path))
    s = load_settings()
    assert s.master == "spark://cluster:7077" and s.data_dir == tmp_path.resolve()
    s = load_settings(overrides={"master": "local[1]", "warehouse": str(tmp_path / "wh")})
    assert s.master == "local[1]" and s.warehouse_dir == (tmp_path / "wh").resolve()
    assert s.table("bpi2012").location == (tmp_path / "wh" / "bpi2012").resolve()


def test_unknown_override_is_rejected() -> None:
    with pytest.raises(ConfigError, match="unknown settings override 'colour'"):
        load_settings(overrides={"colour": "red"})


def test_unknown_table_lists_known_ones() -> None:
    with pytest.raises(ConfigError, match="unknown table 'nope'.*bpi2012"):
        load_settings().table("nope")


@pytest.mark.parametrize("name", ["", "1abc", "a b", "a;drop", "x`y", "ä", "a" * 129, "t.x"])
def test_identifiers_are_validated(name: str) -> None:
    with pytest.raises(ConfigError, match="invalid"):
        check_identifier(name)


@pytest.mark.parametrize("relative", ["../x", "a/../../x", "/etc/passwd", "", "a\x00b"])
def test_locations_cannot_escape_the_warehouse(tmp_path: Path, relative: str) -> None:
    with pytest.raises(ConfigError):
        resolve_under(tmp_path, relative)


def test_location_inside_is_fine(tmp_path: Path) -> None:
    assert resolve_under(tmp_path, "a/b") == (tmp_path / "a" / "b").resolve()


def _copy_conf(tmp_path: Path) -> Path:
    conf = tmp_path / "conf"
    shutil.copytree(PROJECT_ROOT / "conf", conf)
    return conf


def test_malformed_toml_names_the_file(tmp_path: Path) -> None:
    conf = _copy_conf(tmp_path)
    (conf / "spark.toml").write_text("[session\n")
    with pytest.raises(ConfigError, match="malformed settings file .*spark.toml"):
        load_settings(conf)


def test_escaping_table_location_in_conf_is_rejected(tmp_path: Path) -> None:
    conf = _copy_conf(tmp_path)
    with (conf / "tables.toml").open("a") as handle:
        handle.write('\n[tables.evil]\nlocation = "../../outside"\n')
    with pytest.raises(ConfigError, match="outside the warehouse"):
        load_settings(conf)


def test_wrong_type_in_conf_says_expected_and_found(tmp_path: Path) -> None:
    conf = _copy_conf(tmp_path)
    text = (conf / "spark.toml").read_text().replace("shuffle_partitions = 2",
                                                     'shuffle_partitions = "two"')
    (conf / "spark.toml").write_text(text)
    with pytest.raises(ConfigError, match="expected int, found str 'two'"):
        load_settings(conf)


@pytest.mark.parametrize("location, clash", [
    (".", "is the warehouse root"),                     # VACUUM there would reach every table
    ("bpi2012", "is also table bpi2012's location"),
    ("bpi2012/inner", "is inside table bpi2012's location"),
    ("checks/../bpi2012/x", "is inside table bpi2012's location"),
])
def test_table_locations_that_share_files_are_rejected(tmp_path: Path, location: str,
                                                      clash: str) -> None:
    """Issue 21: a location shared with (or holding) another table let one table's writes and
    VACUUM reach the other's files; refused when the settings load, before anything runs."""
    conf = _copy_conf(tmp_path)
    with (conf / "tables.toml").open("a") as handle:
        handle.write(f'\n[tables.careless]\nlocation = "{location}"\n')
    with pytest.raises(ConfigError, match=f"table careless's location .*{clash}"):
        load_settings(conf)


def test_a_table_around_another_is_rejected(tmp_path: Path) -> None:
    conf = _copy_conf(tmp_path)
    text = (conf / "tables.toml").read_text()
    (conf / "tables.toml").write_text(
        '[tables.inner]\nlocation = "nest/in"\n\n' + text + '\n[tables.outer]\nlocation = "nest"\n')
    with pytest.raises(ConfigError, match="table outer's location .* holds table inner's"):
        load_settings(conf)
