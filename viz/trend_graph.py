"""The trend graph of one window: its events as points in time order, its edges as arrows.

Reads the ABI graph that ``python -m jobs graph --name NAME`` keeps in Delta (docs/trends.md
section 9): ``<name>_event_vertices`` (the window's events in ``(ts, id)`` order),
``<name>_from_edges`` (the attribute vertex holding each event's value, per predicate) and
``<name>_to_edges`` (the range of vertices each event's successors must hold). An event edge
``j -> k`` exists when ``ts(j) < ts(k)`` and, for every predicate, ``k``'s vertex lies in one
of ``j``'s ranges; a window with no predicate rows links every event to every later one. The
edges are computed for the drawn events only, as boolean matrices (no loop over edges).

Events are placed at their time (x) and at their depth (y): the number of edges on the longest
path from a start event to them, so a trend climbs one step per event. Start events (no
predecessor) are green, end events (no successor) red, an event that is both (a trend of one
event) grey, others blue. ``highlight`` draws one trend (its ``event_ids`` from ``cet_trends``)
in orange on top.

Example:
    >>> import pandas as pd
    >>> ev = pd.DataFrame({"key": ["B1"], "window_start": [0], "window_end": [10],
    ...                    "event_id": [[10, 11, 12]], "ts": [[1, 2, 3]]})
    >>> fe = pd.DataFrame({"key": ["B1"], "window_start": [0], "predicate": [0],
    ...                    "event": [[1, 2]], "vertex": [[0, 1]]})
    >>> te = pd.DataFrame({"key": ["B1"], "window_start": [0], "predicate": [0],
    ...                    "event": [[0, 1]], "lo": [[0, 1]], "hi": [[1, 2]]})
    >>> fig = plot_trend_graph(ev, fe, te, timestamps="raw")
    >>> edges = trend_edges(ev, fe, te)
    >>> edges.src.tolist(), edges.dst.tolist(), len(fig.axes[0].collections[1].U)
    ([0, 1], [1, 2], 2)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from viz._input import check_columns, check_limit, collect, columns_of, date_axis, new_figure
from viz.errors import VizArgumentError, VizColumnsError

EVENT_COLUMNS = ("key", "window_start", "window_end", "event_id", "ts")
FROM_COLUMNS = ("key", "window_start", "predicate", "event", "vertex")
TO_COLUMNS = ("key", "window_start", "predicate", "event", "lo", "hi")
_ROLE_COLORS = {"start": "tab:green", "end": "tab:red", "single": "0.55", "inner": "tab:blue"}


@dataclass(frozen=True)
class TrendWindow:
    """The drawn part of one window's event DAG.

    Attributes:
        key, window_start, window_end: The window (bounds in the graph's units).
        event_ids: The ids of the drawn events, in ``(ts, id)`` order.
        ts: Their timestamps (microseconds, or raw units).
        src, dst: The edges, as positions into ``event_ids``.
        total_events: Events of the whole window (``len(event_ids)`` unless capped).
    """

    key: str
    window_start: int
    window_end: int
    event_ids: np.ndarray
    ts: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    total_events: int


def trend_edges(event_vertices: Any, from_edges: Any, to_edges: Any, *, key: str | None = None,
                window_start: int | None = None, max_vertices: int = 150) -> TrendWindow:
    """The events and edges of one window of a stored trend graph (the first ``max_vertices`` events).

    Args:
        event_vertices, from_edges, to_edges: The graph's tables (Spark DataFrames, pyarrow
            Tables or pandas DataFrames), e.g. ``spark.table("checks_graph_event_vertices")``
            or a ``VERSION AS OF`` read of each.
        key, window_start: The window; both may be left out when the input holds one window
            (and ``window_start`` when the key has one). They are applied in Spark.
        max_vertices: The most events kept, the first in time order.

    Returns:
        A :class:`TrendWindow`.

    Raises:
        VizColumnsError: a table lacks a column (CEP-VIZ-001).
        VizArgumentError: no such window, or several windows and no choice (the message lists
            some), or a limit that is not positive (CEP-VIZ-003).
    """
    max_vertices = check_limit(max_vertices, name="max_vertices")
    where: dict[str, list[Any]] = {}
    if key is not None:
        where["key"] = [key]
    if window_start is not None:
        where["window_start"] = [int(window_start)]
    check_columns(columns_of(event_vertices, what="event_vertices"), EVENT_COLUMNS,
                  what="event_vertices")
    # First only the windows' names (cheap), then the one window's arrays.
    index = collect(event_vertices, ["key", "window_start"], what="event_vertices",
                    max_rows=100_000, isin=where)
    if index.num_rows != 1:
        found = sorted(zip(index.column("key").to_pylist(),
                           index.column("window_start").to_pylist()))
        asked = f"key={key!r}, window_start={window_start!r}"
        if not found:
            raise VizArgumentError(f"event_vertices: no window with {asked}")
        shown = ", ".join(f"({k!r}, {w})" for k, w in found[:8])
        raise VizArgumentError(
            f"event_vertices: {len(found)} windows match {asked}; pick one with key= and "
            f"window_start=, e.g. {shown}{' ...' if len(found) > 8 else ''}")
    one = {c: index.column(c).to_pylist() for c in ("key", "window_start")}
    row = collect(event_vertices, EVENT_COLUMNS, what="event_vertices", max_rows=1,
                  isin=one).to_pylist()[0]
    the_key, start = row["key"], int(row["window_start"])
    ids = np.asarray(row["event_id"] or [], dtype=np.int64)
    ts = np.asarray(row["ts"] or [], dtype=np.int64)
    if len(ids) != len(ts):
        raise VizColumnsError(f"event_vertices: window ({the_key!r}, {start}) has "
                              f"{len(ids)} event ids but {len(ts)} timestamps")
    total, n = len(ids), min(len(ids), max_vertices)
    ids, ts = ids[:n], ts[:n]
    froms = collect(from_edges, FROM_COLUMNS, what="from_edges", max_rows=10_000, isin=one)
    tos = collect(to_edges, TO_COLUMNS, what="to_edges", max_rows=10_000, isin=one)

    linked = ts[:, None] < ts[None, :]  # edges only go forward in time, strictly
    predicates = sorted(set(froms.column("predicate").to_pylist())
                        | set(tos.column("predicate").to_pylist()))
    for p in predicates:
        vertex = np.full(n, -1, dtype=np.int64)  # -1: the event's value has no vertex
        for r in froms.filter(pc.equal(froms.column("predicate"), p)).to_pylist():
            event = np.asarray(r["event"] or [], dtype=np.int64)
            keep = event < n
            vertex[event[keep]] = np.asarray(r["vertex"] or [], dtype=np.int64)[keep]
        hits = np.zeros((n, n), dtype=bool)
        for r in tos.filter(pc.equal(tos.column("predicate"), p)).to_pylist():
            event = np.asarray(r["event"] or [], dtype=np.int64)
            lo = np.asarray(r["lo"] or [], dtype=np.int64)
            hi = np.asarray(r["hi"] or [], dtype=np.int64)
            keep = event < n
            event, lo, hi = event[keep], lo[keep], hi[keep]
            # One row per range (two for <>): which drawn events' vertices fall in it.
            inside = ((lo[:, None] <= vertex[None, :]) & (vertex[None, :] < hi[:, None])
                      & (vertex[None, :] >= 0))
            np.logical_or.at(hits, event, inside)
        linked &= hits
    src, dst = np.nonzero(linked)
    return TrendWindow(str(the_key), start, int(row["window_end"]), ids, ts,
                       src.astype(np.int64), dst.astype(np.int64), total)


def _depths(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Longest-path depth of every event (edges go forward in position, so this converges)."""
    depth = np.zeros(n, dtype=np.int64)
    for _ in range(n):  # at most one round per step of the longest path
        new = depth.copy()
        np.maximum.at(new, dst, depth[src] + 1)
        if np.array_equal(new, depth):
            break
        depth = new
    return depth


def plot_trend_graph(event_vertices: Any, from_edges: Any, to_edges: Any, *,
                     key: str | None = None, window_start: int | None = None,
                     max_vertices: int = 150, highlight: Sequence[int] | None = None,
                     timestamps: str = "micros", title: str | None = None, ax: Any = None) -> Any:
    """Draw one window of a stored trend graph: events as points in time order, edges as arrows.

    Args:
        event_vertices, from_edges, to_edges: The graph's tables, see :func:`trend_edges`.
        key, window_start: The window (see :func:`trend_edges`).
        max_vertices: The most events drawn, the first in time order (the title says so);
            edges, depths and roles are those among the drawn events.
        highlight: Event ids of one trend (``cet_trends``' ``event_ids``) to draw on top.
        timestamps: ``"micros"`` (the graph of a TIMESTAMP column: microseconds, drawn as
            dates) or ``"raw"`` (a numeric ``ts_col``, drawn as numbers).
        title: The title; a default one names the window and counts events and edges.
        ax: Draw into this matplotlib Axes instead of a new figure.

    Returns:
        The matplotlib Figure. Its axes hold one scatter of the events (first collection) and
        one quiver of the edges (second collection; ``len(quiver.U)`` is the number of edges),
        then, with ``highlight``, the trend's points and edges.

    Raises:
        VizColumnsError: a table lacks a column (CEP-VIZ-001).
        VizArgumentError: no such window, several windows and no choice, a bad
            ``timestamps`` or ``max_vertices``, or ``highlight`` ids not in the drawn events
            (CEP-VIZ-003).
    """
    if timestamps not in ("micros", "raw"):
        raise VizArgumentError(f"timestamps: expected 'micros' or 'raw', found {timestamps!r}")
    w = trend_edges(event_vertices, from_edges, to_edges, key=key, window_start=window_start,
                    max_vertices=max_vertices)
    n = len(w.event_ids)
    if timestamps == "micros":
        from matplotlib import dates as mdates

        x = mdates.date2num(w.ts.astype("datetime64[us]"))
    else:
        x = w.ts.astype(np.float64)
    y = _depths(n, w.src, w.dst).astype(np.float64)
    has_in = np.bincount(w.dst, minlength=n) > 0
    has_out = np.bincount(w.src, minlength=n) > 0
    role = np.where(~has_in & ~has_out, "single",
                    np.where(~has_in, "start", np.where(~has_out, "end", "inner")))

    if ax is None:
        fig, (ax,) = new_figure(11, 4.8)
    else:
        fig = ax.figure
    ax.scatter(x, y, s=28, c=[_ROLE_COLORS[r] for r in role], zorder=3, edgecolors="none")
    ax.quiver(x[w.src], y[w.src], x[w.dst] - x[w.src], y[w.dst] - y[w.src], angles="xy",
              scale_units="xy", scale=1, width=0.0018, headwidth=5, headlength=6,
              color="0.45", alpha=0.6, zorder=2)
    if highlight is not None:
        wanted = np.asarray(list(highlight), dtype=np.int64)
        where = {int(e): i for i, e in enumerate(w.event_ids.tolist())}
        missing = [int(e) for e in wanted if int(e) not in where]
        if missing:
            raise VizArgumentError(f"highlight: event ids {missing[:10]} are not among the "
                                   f"{n} drawn events of window ({w.key!r}, {w.window_start})")
        pos = np.asarray([where[int(e)] for e in wanted], dtype=np.int64)
        ax.scatter(x[pos], y[pos], s=70, facecolors="none", edgecolors="tab:orange",
                   linewidths=2, zorder=4)
        a, b = pos[:-1], pos[1:]
        ax.quiver(x[a], y[a], x[b] - x[a], y[b] - y[a], angles="xy", scale_units="xy", scale=1,
                  width=0.004, color="tab:orange", zorder=4)
    if n <= 40:  # ids stay legible only for small windows
        for xi, yi, e in zip(x, y, w.event_ids.tolist()):
            ax.annotate(str(e), (xi, yi), textcoords="offset points", xytext=(3, 4),
                        fontsize=7, color="0.3")
    from matplotlib.lines import Line2D

    ax.legend(handles=[Line2D([], [], linestyle="none", marker="o", color=c, label=r)
                       for r, c in _ROLE_COLORS.items()], fontsize="small", frameon=False,
              loc="upper left")
    if timestamps == "micros":
        date_axis(ax.xaxis)
    ax.set_xlabel("event time")
    ax.set_ylabel("depth (longest path from a start event)")
    ax.set_ylim(-0.5, max(1.0, float(y.max()) if n else 1.0) + 0.5)
    ax.grid(alpha=0.3)
    cut = f", first {n} of {w.total_events} events" if w.total_events > n else ""
    start = (str(np.datetime64(w.window_start, "us").astype("datetime64[s]")).replace("T", " ")
             if timestamps == "micros" else str(w.window_start))
    ax.set_title(title or f"{w.key}, window from {start}: {n} events, {len(w.src)} edges{cut}")
    return fig
