"""The timeline of matches: one row per key, one bar per match from its first to its last event.

Made for the output of ``match_seq`` (``<key>, match_id, start_ts,
end_ts, ...``; docs/sql.md) and, with other column names, any table of intervals per key
(``approx_match_seq`` intervals: ``stream``, ``ts_start``, ``ts_end``; ``cet_trends``:
``first_ts``, ``last_ts``).

Example:
    >>> import pandas as pd
    >>> matches = pd.DataFrame({
    ...     "case_id": ["A1", "A1", "B7"],
    ...     "start_ts": pd.to_datetime(["2016-01-01", "2016-01-05", "2016-01-02"], utc=True),
    ...     "end_ts": pd.to_datetime(["2016-01-03", "2016-01-09", "2016-01-02"], utc=True)})
    >>> fig = plot_match_timeline(matches, key_col="case_id")
    >>> bars = fig.axes[0].containers[0]
    >>> len(bars.patches), [t.get_text() for t in fig.axes[0].get_yticklabels()]
    (3, ['A1', 'B7'])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from viz._input import (as_plot_values, check_limit, collect, date_axis, labels, new_figure,
                        no_nulls, time_or_number)


def plot_match_timeline(matches: Any, key_col: str = "key", *, start_col: str = "start_ts",
                        end_col: str = "end_ts", max_keys: int = 30, max_rows: int = 200_000,
                        title: str | None = None, ax: Any = None) -> Any:
    """Draw matches per key over time: each match a horizontal bar from start to end on its key's row.

    Keys are ordered by their first match; the first ``max_keys`` of them are drawn (the title
    says how many there were). A match whose start equals its end (one event, or events at one
    instant) has a bar of width zero, so every start also gets a tick mark.

    Args:
        matches: The matches: a Spark DataFrame (the result of a ``match_seq`` query, for
            example), a pyarrow Table or a pandas DataFrame.
        key_col: The key column (``match_seq`` names it after its ``key_col`` argument).
        start_col, end_col: First and last timestamps of a match (TIMESTAMP or DATE, or both
            numeric for numeric ``ts_col``).
        max_keys: The most keys drawn.
        max_rows: The most matches read (a Spark DataFrame is cut in Spark at one more row);
            more is :class:`~viz.errors.VizTooManyRowsError`.
        title: The title; a default one counts matches and keys.
        ax: Draw into this matplotlib Axes instead of a new figure.

    Returns:
        The matplotlib Figure. Its first axes' first container holds one bar per drawn match.

    Raises:
        VizColumnsError: a column is missing, NULL or of the wrong type (CEP-VIZ-001).
        VizTooManyRowsError: more than ``max_rows`` matches (CEP-VIZ-002).
        VizArgumentError: ``matches`` is not a table or a limit is not positive (CEP-VIZ-003).
    """
    max_keys = check_limit(max_keys, name="max_keys")
    table = collect(matches, [key_col, start_col, end_col], what="matches", max_rows=max_rows)
    as_time = time_or_number(table, [start_col, end_col], what="matches")
    no_nulls(table, [start_col, end_col], what="matches")
    keys = labels(table, [key_col])
    start = as_plot_values(table.column(start_col), as_time)
    end = as_plot_values(table.column(end_col), as_time)

    if ax is None:
        fig, (ax,) = new_figure(10, 1.6 + 0.3 * min(max_keys, max(1, len(np.unique(keys)))))
    else:
        fig = ax.figure
    if not len(keys):
        ax.text(0.5, 0.5, "no matches", ha="center", va="center", transform=ax.transAxes)
        ax.set_title(title or "no matches")
        ax.set_yticks([])
        return fig

    # Rank keys by their first match (ties by key), all at once: no loop over matches.
    uniq, inverse = np.unique(keys, return_inverse=True)
    first = np.full(len(uniq), np.inf)
    np.minimum.at(first, inverse, start)
    order = np.lexsort((uniq, first))
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[order] = np.arange(len(uniq))
    row = rank[inverse]
    shown = row < max_keys
    n_keys = min(len(uniq), max_keys)

    ax.barh(row[shown], (end - start)[shown], left=start[shown], height=0.6, align="center",
            color="C0", alpha=0.55, edgecolor="C0", linewidth=0.8, label="match")
    ax.plot(start[shown], row[shown], linestyle="none", marker="|", markersize=9, color="C3",
            label="start")
    ax.set_yticks(np.arange(n_keys), labels=[str(k) for k in uniq[order[:n_keys]]])
    ax.set_ylim(n_keys - 0.5, -0.5)  # the earliest key on top
    ax.set_ylabel(key_col)
    ax.set_xlabel(f"{start_col} .. {end_col}")
    if as_time:
        date_axis(ax.xaxis)
    ax.grid(axis="x", alpha=0.3)
    cut = f" (first {n_keys} of {len(uniq)} keys by first match)" if len(uniq) > n_keys else ""
    ax.set_title(title or f"{int(shown.sum())} matches of {n_keys} {key_col} values{cut}")
    return fig
