"""plot_match_timeline: renders, one bar per match at its interval, typed errors; fed by match_seq."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from matplotlib import dates as mdates

from tests.viz.render import png
from viz import VizArgumentError, VizColumnsError, VizTooManyRowsError, plot_match_timeline


def _matches(n_keys: int = 5, per_key: int = 3, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    keys = np.repeat([f"case_{i}" for i in range(n_keys)], per_key)
    start = pd.Timestamp("2016-01-01", tz="UTC") + pd.to_timedelta(
        rng.integers(0, 30 * 24, len(keys)), unit="h")
    end = start + pd.to_timedelta(rng.integers(0, 10 * 24, len(keys)), unit="h")
    return pd.DataFrame({"case_id": keys, "match_id": np.arange(len(keys)), "start_ts": start,
                         "end_ts": end})


def _bars(fig) -> list:
    return list(fig.axes[0].containers[0].patches)


def test_one_bar_per_match_at_its_interval_on_its_key_row() -> None:
    m = _matches()
    fig = plot_match_timeline(m, key_col="case_id")
    png(fig)
    bars = _bars(fig)
    assert len(bars) == len(m)
    rows = {t.get_text(): i for i, t in enumerate(fig.axes[0].get_yticklabels())}
    # Independently: keys ordered by their first match.
    first = m.groupby("case_id")["start_ts"].min().sort_values()
    assert list(rows) == list(first.index)
    got = sorted((round(b.get_x(), 9), round(b.get_width(), 9), round(b.get_y() + b.get_height() / 2))
                 for b in bars)
    start = mdates.date2num(m.start_ts.dt.tz_convert(None).to_numpy())
    end = mdates.date2num(m.end_ts.dt.tz_convert(None).to_numpy())
    want = sorted((round(s, 9), round(e - s, 9), rows[k]) for s, e, k in zip(start, end, m.case_id))
    assert got == want


def test_arrow_input_and_max_keys_keeps_the_first_keys() -> None:
    m = _matches(n_keys=12, per_key=2)
    fig = plot_match_timeline(pa.Table.from_pandas(m), key_col="case_id", max_keys=4)
    png(fig)
    first = m.groupby("case_id")["start_ts"].min().sort_values()
    kept = set(first.index[:4])
    assert len(_bars(fig)) == int(m.case_id.isin(kept).sum())
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == list(first.index[:4])
    assert "first 4 of 12 keys" in fig.axes[0].get_title()


def test_numeric_intervals_and_empty_input() -> None:
    m = pd.DataFrame({"stream": ["s", "s", "t"], "t_start": [1, 2, 4], "t_end": [3, 6, 4]})
    fig = plot_match_timeline(m, key_col="stream", start_col="t_start", end_col="t_end")
    png(fig)
    assert sorted((b.get_x(), b.get_width()) for b in _bars(fig)) == [(1, 2), (2, 4), (4, 0)]
    empty = plot_match_timeline(m.iloc[:0], key_col="stream", start_col="t_start", end_col="t_end")
    png(empty)
    assert empty.axes[0].get_title() == "no matches"


def test_bad_input_is_a_typed_error() -> None:
    m = _matches()
    with pytest.raises(VizColumnsError, match=r"CEP-VIZ-001: matches: expected columns \['key', "
                                              r"'start_ts', 'end_ts'\], found \['case_id', "):
        plot_match_timeline(m)
    with pytest.raises(VizColumnsError, match="all TIMESTAMP/DATE or all numeric"):
        plot_match_timeline(m.assign(end_ts=1), key_col="case_id")
    with pytest.raises(VizColumnsError, match="NULL"):
        plot_match_timeline(m.assign(end_ts=pd.NaT), key_col="case_id")
    with pytest.raises(VizTooManyRowsError, match="CEP-VIZ-002: matches: more than max_rows=10"):
        plot_match_timeline(m, key_col="case_id", max_rows=10)
    with pytest.raises(VizArgumentError, match="CEP-VIZ-003: matches: expected a Spark DataFrame"):
        plot_match_timeline([1, 2, 3], key_col="case_id")
    with pytest.raises(VizArgumentError, match="max_keys"):
        plot_match_timeline(m, key_col="case_id", max_keys=0)


@pytest.mark.spark
def test_fed_by_match_seq(spark) -> None:
    # Real match_seq over a small inline table: two customers, A then B within 10 minutes.
    df = spark.sql("""
        SELECT * FROM match_seq(
          pattern => 'PATTERN A; B WITHIN 10 MINUTES', key_col => 'cust',
          events => TABLE(SELECT * FROM VALUES
            (1, 'c1', 'A', timestamp'2024-01-01 10:00:00'), (2, 'c1', 'B', timestamp'2024-01-01 10:04:00'),
            (3, 'c1', 'A', timestamp'2024-01-01 11:00:00'), (4, 'c1', 'B', timestamp'2024-01-01 11:09:00'),
            (5, 'c2', 'A', timestamp'2024-01-01 10:30:00'), (6, 'c2', 'B', timestamp'2024-01-01 10:31:00'),
            (7, 'c2', 'B', timestamp'2024-01-01 12:00:00') AS t(id, cust, type, ts)))""")
    rows = df.collect()
    assert len(rows) == 3
    fig = plot_match_timeline(df, key_col="cust")  # the Spark DataFrame itself
    png(fig)
    bars = _bars(fig)
    assert len(bars) == len(rows)
    assert sorted(round(b.get_width() * 24 * 60, 6) for b in bars) == sorted(
        round((r.end_ts - r.start_ts).total_seconds() / 60, 6) for r in rows)  # 4, 9 and 1 minutes
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["c1", "c2"]
    with pytest.raises(VizTooManyRowsError):
        plot_match_timeline(df, key_col="cust", max_rows=2)
