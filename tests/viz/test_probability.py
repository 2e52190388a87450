"""plot_probability: renders, each line holds its key's probabilities in time order, typed errors;
fed by predict_match."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib import dates as mdates

from tests.viz.render import png
from viz import VizArgumentError, VizColumnsError, plot_probability


def _predictions(seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    days = pd.date_range("2001-06-01", periods=20, freq="D", tz="UTC")
    frames = [pd.DataFrame({"city": city, "ts": days, "probability": rng.random(len(days)),
                            "matched": rng.random(len(days)) > 0.8}) for city in ("tunis", "brussels")]
    # Shuffled rows: the picture must sort by time itself.
    return pd.concat(frames).sample(frac=1.0, random_state=seed).reset_index(drop=True)


def _lines(fig) -> dict[str, object]:
    return {line.get_label(): line for line in fig.axes[0].lines if not line.get_label().startswith("_")}


def test_each_line_is_its_key_in_time_order_with_a_threshold() -> None:
    p = _predictions()
    fig = plot_probability(p, key_col="city", threshold=0.4)
    png(fig)
    lines = _lines(fig)
    assert set(lines) == {"tunis", "brussels", "threshold 0.4", "matched"}
    for city, rows in p.groupby("city"):
        rows = rows.sort_values("ts")
        line = lines[city]
        assert line.get_ydata().tolist() == rows.probability.tolist()
        assert np.allclose(line.get_xdata(), mdates.date2num(rows.ts.dt.tz_convert(None).to_numpy()))
        assert line.get_drawstyle() == "steps-post"
    assert list(lines["threshold 0.4"].get_ydata()) == [0.4, 0.4]
    # One star per matched event, on the line, in the line's colour.
    stars = [ln for ln in fig.axes[0].lines if ln.get_label() == "_matched"]
    assert sum(len(s.get_ydata()) for s in stars) == int(p.matched.sum())


def test_several_key_columns_and_max_lines() -> None:
    p = _predictions()
    both = pd.concat([p.assign(sub="heat"), p.assign(sub="nights", probability=p.probability / 2)])
    fig = plot_probability(both, key_col=("sub", "city"), max_lines=3, matched_col=None)
    png(fig)
    assert sorted(_lines(fig)) == ["heat / brussels", "heat / tunis", "nights / brussels"]
    assert "first 3 of 4" in fig.axes[0].get_title()
    half = both[(both["sub"] == "nights") & (both.city == "brussels")].sort_values("ts")
    assert _lines(fig)["nights / brussels"].get_ydata().tolist() == half.probability.tolist()


def test_numeric_time_and_bad_input() -> None:
    groups = pd.DataFrame({"stream": ["s"] * 3, "t_start": [7, 1, 4], "probability": [0.3, 0.9, 0.5]})
    fig = plot_probability(groups, key_col="stream", ts_col="t_start")
    png(fig)
    assert _lines(fig)["s"].get_xdata().tolist() == [1.0, 4.0, 7.0]
    assert _lines(fig)["s"].get_ydata().tolist() == [0.9, 0.5, 0.3]
    with pytest.raises(VizColumnsError, match=r"expected columns \['key', 'ts', 'probability'\]"):
        plot_probability(groups)
    with pytest.raises(VizColumnsError, match="probability to be numeric"):
        plot_probability(groups.assign(probability="high"), key_col="stream", ts_col="t_start")
    for bad in (1.5, -0.1, "0.5", True):
        with pytest.raises(VizArgumentError, match="CEP-VIZ-003: threshold"):
            plot_probability(groups, key_col="stream", ts_col="t_start", threshold=bad)


@pytest.mark.spark
def test_fed_by_predict_match(spark) -> None:
    # Real predict_match, per event, over a small inline table of two streams.
    df = spark.sql("""
        SELECT key, ts, probability, matched FROM predict_match(
          subscription => 'PATTERN A, B', lookahead => 2, output => 'events', key_col => 'key',
          events => TABLE(SELECT * FROM VALUES
            (1, 'k1', 'A', timestamp'2024-01-01 00:00:00'), (2, 'k1', 'B', timestamp'2024-01-01 01:00:00'),
            (3, 'k1', 'A', timestamp'2024-01-01 02:00:00'), (4, 'k1', 'X', timestamp'2024-01-01 03:00:00'),
            (5, 'k1', 'A', timestamp'2024-01-01 04:00:00'), (6, 'k2', 'X', timestamp'2024-01-01 00:30:00'),
            (7, 'k2', 'A', timestamp'2024-01-01 01:30:00'), (8, 'k2', 'B', timestamp'2024-01-01 02:30:00')
            AS t(id, key, type, ts)))""")
    rows = df.orderBy("key", "ts").collect()
    fig = plot_probability(df, threshold=0.5)  # the Spark DataFrame itself
    png(fig)
    lines = _lines(fig)
    for key in ("k1", "k2"):
        assert lines[key].get_ydata().tolist() == [r.probability for r in rows if r.key == key]
    assert sum(len(ln.get_ydata()) for ln in fig.axes[0].lines
               if ln.get_label() == "_matched") == sum(r.matched for r in rows)
