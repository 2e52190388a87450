"""The loader on the real BPI logs: counts, nothing lost or duplicated, UTC, idempotent reruns.

Expected numbers come from the files themselves (independent byte scans and the log's own
metadata), not from our parser.
"""

from __future__ import annotations

import gzip
import re
from collections import Counter
from datetime import datetime, timezone

import pytest

from delta_tables.catalog import current_version, read_table
from jobs.loaders.datasets import extract_log
from jobs.loaders.load_logs import PROP_LOADER, PROP_SHA, load_log

EXPECTED = {"bpi2017_offers": 193_849, "bpi2017_applications": 771_148, "bpi2012": 262_200}


def raw_bytes(settings, name: str) -> bytes:
    return gzip.decompress(extract_log(settings, name, quiet=True).read_bytes())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_row_counts_match_the_files(spark, settings, loaded_logs, name: str) -> None:
    raw = raw_bytes(settings, name)
    events_in_file = len(re.findall(rb"<event[ >]", raw))
    assert events_in_file == EXPECTED[name]
    frame = read_table(spark, settings.table(name))
    row = frame.selectExpr("count(*)", "count(DISTINCT id)", "min(id)", "max(id)",
                           "count(ts)", "count(type)", "count(case_id)").first()
    n = EXPECTED[name]
    # Every event once, ids dense, no event without timestamp, type or case.
    assert tuple(row) == (n, n, 0, n - 1, n, n, n)
    assert loaded_logs[name].events == n


def test_events_per_activity_match_the_logs_own_metadata(spark, settings, loaded_logs) -> None:
    raw = raw_bytes(settings, "bpi2017_offers")
    header = raw[: raw.index(b"<trace")].decode()
    block = re.search(r'key="meta_concept:named_events_total" value="(\d+)">(.*?)</int></int>',
                      header, re.S)
    assert block is not None
    expected = {m.group(1): int(m.group(2))
                for m in re.finditer(r'<int key="([^"]+)" value="(\d+)"', block.group(2))}
    assert sum(expected.values()) == int(block.group(1)) == 193_849
    got = {r["type"]: r["n"] for r in read_table(spark, settings.table("bpi2017_offers"))
           .groupBy("type").count().withColumnRenamed("count", "n").collect()}
    assert got == expected


def test_cases_and_events_per_case_match_a_byte_scan(spark, settings, loaded_logs) -> None:
    raw = raw_bytes(settings, "bpi2012")
    per_case: Counter[str] = Counter()
    for trace in re.finditer(rb"<trace>(.*?)</trace>", raw, re.S):
        body = trace.group(1)
        first_event = body.find(b"<event")
        name = re.search(rb'<string key="concept:name" value="([^"]*)"', body[:first_event])
        per_case[name.group(1).decode()] += body.count(b"<event")
    got = {r["case_id"]: r["n"] for r in read_table(spark, settings.table("bpi2012"))
           .groupBy("case_id").count().withColumnRenamed("count", "n").collect()}
    assert len(got) == 13_087 and got == dict(per_case)


def test_timestamps_are_utc(spark, settings, loaded_logs) -> None:
    raw = raw_bytes(settings, "bpi2012")
    first_trace = raw[raw.index(b"<trace"):]
    text = re.search(rb'<date key="time:timestamp" value="([^"]+)"', first_trace).group(1).decode()
    assert "+02:00" in text  # the log records local Dutch time with an offset
    expected = datetime.fromisoformat(text).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")
    got = spark.sql("SELECT date_format(ts, \"yyyy-MM-dd'T'HH:mm:ss.SSSSSS\") FROM bpi2012 "
                    "WHERE id = 0").first()[0]
    assert got == expected
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"


def test_rerun_writes_nothing_and_force_replaces(spark, settings, loaded_logs) -> None:
    table = settings.table("bpi2012")
    before = current_version(spark, table)
    again = load_log(spark, settings, "bpi2012", quiet=True)
    assert not again.written and again.version == before == current_version(spark, table)
    forced = load_log(spark, settings, "bpi2012", force=True, quiet=True)
    assert forced.written and forced.version == before + 1
    assert read_table(spark, table).count() == 262_200  # replaced, not appended
    assert read_table(spark, table, version=before).count() == 262_200


def test_table_properties_record_source_and_cdf(spark, settings, loaded_logs) -> None:
    props = dict(spark.sql("SHOW TBLPROPERTIES bpi2017_offers").collect())
    assert props["delta.enableChangeDataFeed"] == "true"
    assert len(props[PROP_SHA]) == 64 and props[PROP_LOADER] == "1"


def test_schema_has_the_required_columns(spark, loaded_logs) -> None:
    for name in EXPECTED:
        types = dict(spark.table(name).dtypes)
        assert (types["id"], types["case_id"], types["type"], types["ts"]) == \
            ("bigint", "string", "string", "timestamp"), name
    offers = dict(spark.table("bpi2017_offers").dtypes)
    assert offers["case_offered_amount"] == "double" and offers["case_accepted"] == "boolean"
