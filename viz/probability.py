"""Predicted probability over time: one line per key (or subscription), from ``predict_match``.

Made for ``predict_match(..., output => 'events')`` (``<key_col>, instance, id, ts, state,
progress, probability, p_exact, matched``);
see docs/predict.md and docs/sql.md. The probability after an event holds until the next
event, so lines are drawn as steps.

Example:
    >>> import pandas as pd
    >>> days = pd.to_datetime(["2001-06-20", "2001-06-21", "2001-06-22"], utc=True)
    >>> p = pd.DataFrame({"city": ["tunis"] * 3, "ts": days, "probability": [0.2, 0.5, 0.9],
    ...                   "matched": [False, False, True]})
    >>> fig = plot_probability(p, key_col="city", threshold=0.5)
    >>> [line.get_ydata().tolist() for line in fig.axes[0].lines if line.get_label() == "tunis"]
    [[0.2, 0.5, 0.9]]
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pyarrow.compute as pc

from viz._input import (as_plot_values, check_limit, collect, date_axis, is_number, labels,
                        new_figure, no_nulls, time_or_number)
from viz.errors import VizArgumentError, VizColumnsError


def plot_probability(predictions: Any, key_col: str | Sequence[str] = "key", *,
                     ts_col: str = "ts", prob_col: str = "probability",
                     matched_col: str | None = "matched", threshold: float | None = None,
                     max_lines: int = 12, max_rows: int = 200_000, title: str | None = None,
                     ax: Any = None) -> Any:
    """Draw the predicted probability of a match over time, one step line per key.

    Args:
        predictions: Per-event predictions: a Spark DataFrame (a ``predict_match`` query with
            ``output => 'events'``), a pyarrow Table or a pandas DataFrame.
        key_col: The column (or columns, e.g. ``("sub", "city")`` for several subscriptions
            in one table) whose values make one line each.
        ts_col: The event time (TIMESTAMP or DATE, or a number).
        prob_col: The probability, in [0, 1].
        matched_col: A BOOLEAN column marking the events where the subscription matched; drawn
            as dots on the line when the column exists (None: never).
        threshold: Draw a dashed horizontal line at this probability (in [0, 1]).
        max_lines: The most lines drawn: the first keys in sorted order (the title says so).
        max_rows: The most rows read; more is :class:`~viz.errors.VizTooManyRowsError`.
        title: The title; a default one names the lines.
        ax: Draw into this matplotlib Axes instead of a new figure.

    Returns:
        The matplotlib Figure; each key's line is labelled with the key and holds exactly that
        key's probabilities in time order.

    Raises:
        VizColumnsError: a column is missing or of the wrong type, or NULL (CEP-VIZ-001).
        VizTooManyRowsError: more than ``max_rows`` rows (CEP-VIZ-002).
        VizArgumentError: ``threshold`` outside [0, 1], a limit that is not positive, or an
            input that is not a table (CEP-VIZ-003).
    """
    max_lines = check_limit(max_lines, name="max_lines")
    if threshold is not None and (isinstance(threshold, bool) or
                                  not isinstance(threshold, (int, float)) or
                                  not 0.0 <= float(threshold) <= 1.0):
        raise VizArgumentError(f"threshold: expected a number in [0, 1], found {threshold!r}")
    keys_cols = [key_col] if isinstance(key_col, str) else list(key_col)
    table = collect(predictions, [*keys_cols, ts_col, prob_col], what="predictions",
                    max_rows=max_rows, optional=[matched_col] if matched_col else [])
    as_time = time_or_number(table, [ts_col], what="predictions")
    if not is_number(table.schema.field(prob_col).type):
        raise VizColumnsError(f"predictions: expected {prob_col} to be numeric, found "
                              f"{table.schema.field(prob_col).type}")
    no_nulls(table, [ts_col, prob_col], what="predictions")
    key = labels(table, keys_cols)
    x = as_plot_values(table.column(ts_col), as_time)
    p = np.asarray(pc.cast(table.column(prob_col), "float64").to_numpy(zero_copy_only=False))
    matched = (np.asarray(pc.fill_null(table.column(matched_col), False)
                          .to_numpy(zero_copy_only=False), dtype=bool)
               if matched_col and matched_col in table.column_names else None)

    if ax is None:
        fig, (ax,) = new_figure(10, 4.2)
    else:
        fig = ax.figure
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel(prob_col)
    ax.set_xlabel(ts_col)
    if threshold is not None:
        ax.axhline(float(threshold), color="0.35", linestyle="--", linewidth=1,
                   label=f"threshold {float(threshold):g}")
    if not len(key):
        ax.text(0.5, 0.5, "no predictions", ha="center", va="center", transform=ax.transAxes)
        ax.set_title(title or "no predictions")
        return fig

    # One sort by (key, time) makes every key a contiguous slice; only the drawn lines loop.
    order = np.lexsort((x, key))
    key, x, p = key[order], x[order], p[order]
    uniq, starts = np.unique(key, return_index=True)
    bounds = np.append(starts, len(key))
    n_lines = min(len(uniq), max_lines)
    for i in range(n_lines):
        lo, hi = bounds[i], bounds[i + 1]
        (line,) = ax.plot(x[lo:hi], p[lo:hi], drawstyle="steps-post", linewidth=1.4,
                          marker="o" if hi - lo <= 40 else None, markersize=3,
                          label=str(uniq[i]))
        if matched is not None:
            hit = matched[order][lo:hi]
            if hit.any():
                ax.plot(x[lo:hi][hit], p[lo:hi][hit], linestyle="none", marker="*",
                        markersize=9, color=line.get_color(), label="_matched")
    if matched is not None and matched.any():
        ax.plot([], [], linestyle="none", marker="*", color="0.3", label="matched")
    if as_time:
        date_axis(ax.xaxis)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    cut = f" (first {n_lines} of {len(uniq)})" if len(uniq) > n_lines else ""
    ax.set_title(title or f"{prob_col} by {' / '.join(keys_cols)}{cut}")
    return fig
