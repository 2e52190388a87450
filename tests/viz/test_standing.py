"""plot_standing: matches and timeouts counted in the same bins, typed errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.viz.render import png
from viz import VizColumnsError, plot_standing


def _instants(seed: int, n: int) -> pd.Series:
    rng = np.random.default_rng(seed)
    return pd.Timestamp("2016-01-01", tz="UTC") + pd.to_timedelta(rng.integers(0, 60, n), "D")


def test_each_series_counts_its_rows_in_the_common_bins() -> None:
    matches = pd.DataFrame({"end_ts": _instants(1, 40)})
    timeouts = pd.DataFrame({"closed_at": _instants(2, 25)})
    fig = plot_standing(matches, timeouts, bins=6)
    png(fig)
    ours, theirs = fig.axes[0].containers[0], fig.axes[0].containers[1]
    assert len(ours.patches) == len(theirs.patches) == 6
    assert sum(b.get_height() for b in ours) == 40 and sum(b.get_height() for b in theirs) == 25
    # Independently: the same six equal bins over both tables' span, in days.
    days = lambda s: (s - pd.Timestamp("2016-01-01", tz="UTC")).dt.days.to_numpy()  # noqa: E731
    both = np.concatenate([days(matches.end_ts), days(timeouts.closed_at)])
    edges = np.linspace(both.min(), both.max(), 7)
    assert [int(b.get_height()) for b in ours] == np.histogram(days(matches.end_ts), edges)[0].tolist()
    assert "40 matches and 25 timeouts" == fig.axes[0].get_title()


def test_empty_tables_and_a_missing_column() -> None:
    empty = pd.DataFrame({"end_ts": pd.to_datetime([], utc=True)})
    fig = plot_standing(empty, pd.DataFrame({"closed_at": pd.to_datetime([], utc=True)}))
    assert fig.axes[0].get_title() == "no matches and no timeouts"
    with pytest.raises(VizColumnsError, match="CEP-VIZ-001"):
        plot_standing(pd.DataFrame({"start_ts": _instants(1, 2)}), empty.rename(
            columns={"end_ts": "closed_at"}))
