"""XES flattening on small hand-written logs (no JVM)."""

from __future__ import annotations

import gzip
import io
from datetime import datetime, timezone

import pytest

from cep.errors import InputDataError
from cep.datasets.xes import column_name, parse_timestamp, read_xes


def xes(body: str, ns: bool = False) -> io.BytesIO:
    head = '<log xmlns="http://www.xes-standard.org/">' if ns else "<log>"
    return io.BytesIO(f'<?xml version="1.0"?>{head}{body}</log>'.encode())


def event(name: str, ts: str, extra: str = "") -> str:
    return (f'<event><string key="concept:name" value="{name}"/>'
            f'<date key="time:timestamp" value="{ts}"/>{extra}</event>')


def trace(case: str, *events: str, attrs: str = "") -> str:
    return f'<trace><string key="concept:name" value="{case}"/>{attrs}{"".join(events)}</trace>'


def test_flattens_events_in_file_order_with_case_attributes() -> None:
    log = read_xes(xes(
        trace("c1", event("A", "2020-01-01T00:00:00Z", '<int key="cost" value="3"/>'),
              event("B", "2020-01-01T00:00:01Z"), attrs='<float key="Amount" value="2.5"/>')
        + trace("c2", event("A", "2020-01-02T00:00:00Z", '<int key="cost" value="4"/>'))))
    assert log.n_events == 3 and log.n_cases == 2
    assert log.columns["id"] == [0, 1, 2]
    assert log.columns["case_id"] == ["c1", "c1", "c2"]
    assert log.columns["type"] == ["A", "B", "A"]
    assert log.columns["cost"] == [3, None, 4]
    assert log.columns["case_amount"] == [2.5, 2.5, None]
    assert log.kinds["cost"] == "int" and log.kinds["case_amount"] == "float"


def test_timestamps_are_converted_to_utc_microseconds() -> None:
    log = read_xes(xes(trace("c", event("A", "2016-01-01T09:51:15.304+01:00"),
                             event("B", "2016-01-01T09:51:15"))))
    expected = datetime(2016, 1, 1, 8, 51, 15, 304000, tzinfo=timezone.utc)
    assert log.columns["ts"][0] == int(expected.timestamp()) * 1_000_000 + 304000
    # A timestamp without an offset is taken as UTC, never as the machine's local time.
    naive = datetime(2016, 1, 1, 9, 51, 15, tzinfo=timezone.utc)
    assert log.columns["ts"][1] == int(naive.timestamp()) * 1_000_000


def test_namespaced_log_and_gzip_file(tmp_path) -> None:
    raw = xes(trace("c", event("A", "2020-01-01T00:00:00Z")), ns=True).getvalue()
    path = tmp_path / "log.xes.gz"
    path.write_bytes(gzip.compress(raw))
    log = read_xes(path)
    assert log.columns["type"] == ["A"] and log.columns["case_id"] == ["c"]


def test_mixed_kinds_promote_to_float_or_string() -> None:
    log = read_xes(xes(trace(
        "c",
        event("A", "2020-01-01T00:00:00Z", '<int key="x" value="1"/><int key="y" value="1"/>'),
        event("B", "2020-01-01T00:00:00Z", '<float key="x" value="1.5"/><string key="y" value="z"/>'),
    )))
    assert log.kinds["x"] == "float" and log.columns["x"] == [1.0, 1.5]
    assert log.kinds["y"] == "string" and log.columns["y"] == ["1", "z"]


def test_nested_lists_are_skipped_and_counted() -> None:
    log = read_xes(xes(trace("c", event("A", "2020-01-01T00:00:00Z",
                                         '<list key="tags"><string key="t" value="a"/></list>'))))
    assert log.skipped == {"tags": 1}
    assert "tags" not in log.columns


def test_boolean_values() -> None:
    log = read_xes(xes(trace("c", event("A", "2020-01-01T00:00:00Z", '<boolean key="ok" value="true"/>'),
                             event("B", "2020-01-01T00:00:00Z", '<boolean key="ok" value="FALSE"/>'))))
    assert log.columns["ok"] == [True, False]


def test_malformed_xml_is_a_typed_error() -> None:
    with pytest.raises(InputDataError, match="malformed XES") as info:
        read_xes(io.BytesIO(b"<log><trace><event></trace></log>"))
    assert info.value.code == "CEP-DATA-001"


def test_bad_timestamp_names_the_event() -> None:
    with pytest.raises(InputDataError, match="event 0: time:timestamp 'yesterday'"):
        read_xes(xes(trace("c", event("A", "yesterday"))))


def test_bad_typed_value_is_a_typed_error() -> None:
    with pytest.raises(InputDataError, match="does not fit its XES type"):
        read_xes(xes(trace("c", event("A", "2020-01-01T00:00:00Z", '<int key="n" value="x"/>'))))


@pytest.mark.parametrize("key, case, expected", [
    ("org:resource", False, "org_resource"),
    ("lifecycle:transition", False, "lifecycle_transition"),
    ("EventOrigin", False, "event_origin"),
    ("EventID", False, "event_id"),
    ("OfferID", False, "offer_id"),
    ("type", False, "attr_type"),
    ("ts", False, "attr_ts"),
    ("1st", False, "attr_1st"),
    ("ApplicationID", True, "case_application_id"),
    ("AMOUNT_REQ", True, "case_amount_req"),
    ("REG_DATE", True, "case_reg_date"),
])
def test_column_names(key: str, case: bool, expected: str) -> None:
    assert column_name(key, case=case) == expected


def test_progress_is_reported() -> None:
    seen: list[int] = []
    body = "".join(trace(f"c{i}", event("A", "2020-01-01T00:00:00Z"), event("B", "2020-01-01T00:00:00Z"))
                   for i in range(10))
    read_xes(xes(body), progress=seen.append, progress_every=5)
    assert seen == [6, 10, 16, 20]  # 20 events, reported at the first trace past each 5


def test_parse_timestamp_rejects_garbage() -> None:
    with pytest.raises(ValueError):
        parse_timestamp("not a date")
