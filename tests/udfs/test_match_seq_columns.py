"""``match_seq(..., columns => 'a, b')``: the matched events' own columns as arrays (issue 52).

The values against the events table (every path: keyed or not, tiny chunks, strict contiguity,
the shim's row filter on and off, is in tests/udfs/test_fuzz_match_seq.py); here the types, the
DataFrame form and the refusals.
"""

from __future__ import annotations

import pytest

import sql_ext

EVENTS = ("SELECT * FROM VALUES ('c1', 'A', TIMESTAMP'2024-01-01 00:00:00', 1L, 10.5BD, "
          "DATE'2024-01-01'), ('c1', 'B', TIMESTAMP'2024-01-01 00:01:00', 2L, 11.0BD, NULL), "
          "('c1', 'C', TIMESTAMP'2024-01-01 00:03:00', 3L, NULL, DATE'2024-01-03') "
          "AS t(case_id, type, ts, id, amount, day)")


def test_the_arrays_keep_each_columns_type_and_the_order_of_event_ids(spark) -> None:
    frame = spark.sql(f"SELECT * FROM match_seq('PATTERN A; C', 'case_id', TABLE({EVENTS}), "
                      "columns => ' amount , `day`, ts')")
    assert frame.columns[-3:] == ["amount", "day", "ts"]
    types = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
    assert (types["amount"], types["day"], types["ts"]) == (
        "array<decimal(3,1)>", "array<date>", "array<timestamp>")
    (row,) = frame.collect()
    assert row.event_ids == [1, 3] and [str(a) if a is not None else None
                                        for a in row.amount] == ["10.5", None]
    assert [d.isoformat() for d in row.day] == ["2024-01-01", "2024-01-03"]


def test_the_dataframe_form_passes_columns_too(spark) -> None:
    (row,) = sql_ext.match_seq(spark.sql(EVENTS), "PATTERN A; B; C", key_col="case_id",
                               columns="type").collect()
    assert row.type == ["A", "B", "C"]


@pytest.mark.parametrize("columns, message", [
    ("nope", "columns 'nope' is not a column of the events table"),
    ("match_id", "'match_id' is also the name of an output column"),
    ("case_id", "'case_id' is also the name of an output column"),
    ("type, TYPE", "'type' is named twice"),
    ("type,", "expected column names separated by commas"),
])
def test_a_bad_list_is_refused_with_its_code(spark, columns: str, message: str) -> None:
    with pytest.raises(Exception) as info:
        spark.sql(f"SELECT * FROM match_seq('PATTERN A; C', 'case_id', "
                  f"TABLE(SELECT *, 1L AS match_id FROM ({EVENTS})), "
                  f"columns => '{columns}')").collect()
    assert "CEP-SQL-010" in str(info.value) and message in str(info.value), str(info.value)[:800]
