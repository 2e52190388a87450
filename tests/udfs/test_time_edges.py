"""Windows at the edges of time, through ``spark.sql`` (issue 46).

Every function with a ``WITHIN`` window gets the same two events, ``A`` then ``B`` one hour
later, near year 1, across 1970 and near 9999-12-31, under a window that holds them (2 hours),
one that does not (30 minutes) and one far beyond the timestamp range (106,000,000 days, which
wrapped around int64 near 9999 and lost the match before the lengths saturated,
``cep.lang.ast.MAX_SPAN``).
"""

from __future__ import annotations

import pytest

STARTS = {"year 1": "0001-01-01 00:30:00", "1970": "1969-12-31 23:30:00",
          "year 9999": "9999-12-31 22:00:00"}
WINDOWS = {"2 HOURS": True, "30 MINUTES": False, "106000000 DAYS": True}


def events(start: str, ts_type: str) -> str:
    return (f"SELECT * FROM VALUES (1L, 'k', CAST(TIMESTAMP'{start}' AS {ts_type}), 'A', 1.0D), "
            f"(2L, 'k', CAST(TIMESTAMP'{start}' AS {ts_type}) + INTERVAL 1 HOUR, 'B', 2.0D) "
            "AS t(id, key, ts, type, x)")


@pytest.mark.parametrize("ts_type", ["TIMESTAMP", "TIMESTAMP_NTZ"])
@pytest.mark.parametrize("at", list(STARTS))
def test_match_seq_windows_at_the_edges_of_time(spark, at: str, ts_type: str) -> None:
    for window, holds in WINDOWS.items():
        table = events(STARTS[at], ts_type)
        rows = spark.sql(f"SELECT event_ids FROM match_seq(pattern => 'PATTERN A; B WITHIN "
                         f"{window}', key_col => 'key', events => TABLE({table}))").collect()
        assert [list(r.event_ids) for r in rows] == ([[1, 2]] if holds else []), (at, window)


@pytest.mark.parametrize("at", list(STARTS))
def test_cet_trends_windows_at_the_edges_of_time(spark, at: str) -> None:
    # Both events in one class: the trend is A then B when the window holds both. Without
    # SLIDE the windows tumble from the epoch, so the 1970 case starts at 22:10 (both events in
    # the window from 22:00, before the epoch) rather than across midnight.
    start = "1969-12-31 22:10:00" if at == "1970" else STARTS[at]
    table = events(start, "TIMESTAMP").replace("'A'", "'s'").replace("'B'", "'s'")
    for window, holds in WINDOWS.items():
        rows = spark.sql("SELECT event_ids FROM cet_trends(pattern => 'PATTERN s+ w[] WHERE "
                         f"w[i].x > w[i-1].x WITHIN {window}', key_col => 'key', "
                         f"events => TABLE({table}))").collect()
        found = sorted(list(r.event_ids) for r in rows)
        assert ([1, 2] in found) == holds, (at, window, found)


@pytest.mark.parametrize("at", list(STARTS))
def test_match_recognize_windows_at_the_edges_of_time(spark, at: str) -> None:
    for window, holds in WINDOWS.items():
        rows = spark.sql(f"SELECT * FROM ({events(STARTS[at], 'TIMESTAMP')}) MATCH_RECOGNIZE ("
                         "PARTITION BY key ORDER BY ts MEASURES FIRST(A.id) AS a, LAST(B.id) AS b "
                         f"PATTERN (A B) WITHIN {window} DEFINE A AS type = 'A', B AS type = 'B')"
                         ).collect()
        assert [(r.a, r.b) for r in rows] == ([(1, 2)] if holds else []), (at, window)
