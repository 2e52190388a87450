"""A standing pattern over time: how many matches completed and how many starts timed out.

Made for the tables of the match job (docs/standing.md): ``<name>_matches`` (counted by
``end_ts``, when the match completed) and ``<name>_timeouts`` (counted by ``closed_at``, when
the window closed without a match). Both are counted in the same time bins, drawn as two bar
series side by side, so a week where answers dry up shows as timeouts rising while matches fall.

Example:
    >>> import pandas as pd
    >>> days = lambda *d: pd.to_datetime(list(d), utc=True)
    >>> matches = pd.DataFrame({"end_ts": days("2016-01-02", "2016-01-03", "2016-01-09")})
    >>> timeouts = pd.DataFrame({"closed_at": days("2016-01-05", "2016-01-09")})
    >>> fig = plot_standing(matches, timeouts, bins=2)
    >>> [int(b.get_height()) for b in fig.axes[0].containers[0]], \\
    ...     [int(b.get_height()) for b in fig.axes[0].containers[1]]
    ([2, 1], [1, 1])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from viz._input import as_plot_values, check_limit, collect, date_axis, new_figure, no_nulls, \
    time_or_number


def plot_standing(matches: Any, timeouts: Any, *, match_col: str = "end_ts",
                  timeout_col: str = "closed_at", bins: int = 30, max_rows: int = 1_000_000,
                  title: str | None = None, ax: Any = None) -> Any:
    """Draw the matches and the timeouts of a standing pattern per time bin.

    Args:
        matches: ``<name>_matches`` (a Spark DataFrame, a pyarrow Table or a pandas DataFrame).
        timeouts: ``<name>_timeouts``, likewise.
        match_col, timeout_col: The instant each row is counted at.
        bins: How many equal time bins span the first to the last instant of either table.
        max_rows: The most rows read of each table (:class:`~viz.errors.VizTooManyRowsError`).
        title: The title; a default one gives the totals.
        ax: Draw into this matplotlib Axes instead of a new figure.

    Returns:
        The matplotlib Figure; its first axes' containers hold the matches' bars, then the
        timeouts'.

    Raises:
        VizColumnsError: a column is missing, NULL or of the wrong type (CEP-VIZ-001).
        VizTooManyRowsError: more than ``max_rows`` rows in a table (CEP-VIZ-002).
        VizArgumentError: an input is not a table or a limit is not positive (CEP-VIZ-003).
    """
    bins = check_limit(bins, name="bins")
    series = []
    as_time = True
    for data, column, what in ((matches, match_col, "matches"),
                               (timeouts, timeout_col, "timeouts")):
        table = collect(data, [column], what=what, max_rows=max_rows)
        as_time = time_or_number(table, [column], what=what)
        no_nulls(table, [column], what=what)
        series.append(as_plot_values(table.column(column), as_time))
    if ax is None:
        fig, (ax,) = new_figure(10, 3.2)
    else:
        fig = ax.figure
    everything = np.concatenate(series)
    if not len(everything):
        ax.text(0.5, 0.5, "no matches and no timeouts", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_title(title or "no matches and no timeouts")
        return fig
    low, high = float(everything.min()), float(everything.max())
    edges = np.linspace(low, high if high > low else low + 1.0, bins + 1)
    width = (edges[1] - edges[0]) / 2.4
    for k, (values, label, color) in enumerate(zip(series, ("matches", "timeouts"),
                                                   ("C0", "C3"))):
        counts, _ = np.histogram(values, edges)
        ax.bar(edges[:-1] + (k + 0.5) * width, counts, width=width, align="center",
               color=color, alpha=0.75, label=f"{label} ({len(values):,})")
    ax.set_ylabel("per bin")
    ax.set_xlabel(f"{match_col} / {timeout_col}")
    if as_time:
        date_axis(ax.xaxis)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper right")
    ax.set_title(title or f"{len(series[0]):,} matches and {len(series[1]):,} timeouts")
    return fig
