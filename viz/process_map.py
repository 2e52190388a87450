"""The directly-follows graph as a process map, and the variants as a bar chart.

:func:`plot_follows` draws the rows of ``follows(...)`` (output ``'graph'``): one box per
activity, one arrow per (source, target) pair, its width growing with the pair's count and its
label giving the count and the median time between the two events. With the rows of
``case_stats(...)`` it also draws where cases start (``▶``) and end (``■``).

The layout is written here, not taken from a graph library (none of the well-kept ones lays out
without a system binary such as Graphviz's ``dot``): a layered drawing, left to right.

1. Only the ``max_edges`` most frequent pairs are drawn (the title says how many were left
   out), and the activities they touch.
2. Layer 0 holds the start activities (with ``case_stats``: the first activities of cases;
   without it: the activities no drawn pair leads to, else the one with the largest surplus
   of outgoing over incoming pairs). Every other activity's layer is its fewest steps from
   layer 0 along drawn pairs (breadth first); one no path reaches starts a layer after the rest.
3. Inside a layer, activities are ordered by the mean position of their predecessors in
   earlier layers, weighted by the pairs' counts (one sweep, left to right), so heavy flows
   run straight.
4. A pair to a later layer is a straight arrow; a pair back to the same or an earlier layer
   (a loop, a rework) is a grey arc.

:func:`plot_variants` draws the ``top`` variants of ``variants(...)`` as horizontal bars of
their cases (with their share), the path written out under each bar's label, and their median
case duration beside.

Example:
    >>> import pandas as pd
    >>> graph = pd.DataFrame({"source": ["A", "B", "A", "C"], "target": ["B", "C", "C", "B"],
    ...                       "n": [10, 6, 4, 1], "median_duration": [60.0, 3600.0, 5.0, 1.0]})
    >>> layout = follows_layout(graph)
    >>> [(a, layout[a].layer) for a in sorted(layout)]
    [('A', 0), ('B', 1), ('C', 1)]
    >>> fig = plot_follows(graph)
    >>> fig.axes[0].get_title()
    'directly-follows graph: 4 pairs of 3 activities'
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from viz._input import check_limit, collect, new_figure
from viz.errors import VizArgumentError

__all__ = ["Placed", "follows_layout", "plot_follows", "plot_variants"]

GRAPH_COLUMNS = ("source", "target", "n")
START, END = "\u25b6 start", "\u25a0 end"


@dataclass(frozen=True)
class Placed:
    """Where an activity is drawn: its layer (x) and its rank inside the layer (y)."""

    layer: int
    rank: int


def _edges(table: pa.Table, max_edges: int) -> list[tuple[Any, Any, int, float | None]]:
    """The drawn pairs, most frequent first (ties by name), with their median durations."""
    n = table.column("n").to_pylist()
    sources, targets = table.column("source").to_pylist(), table.column("target").to_pylist()
    medians = (table.column("median_duration").to_pylist()
               if "median_duration" in table.column_names else [None] * len(n))
    rows = sorted(zip(sources, targets, n, medians),
                  key=lambda r: (-int(r[2] or 0), str(r[0]), str(r[1])))
    return [(s, t, int(c or 0), m) for s, t, c, m in rows[:max_edges]]


def _layers(nodes: list[Any], edges: list[tuple[Any, Any, int, Any]],
            starts: list[Any]) -> dict[Any, int]:
    """Fewest steps from the start activities (step 2 of the module's layout)."""
    nexts: dict[Any, list[Any]] = {v: [] for v in nodes}
    for s, t, _, _ in edges:
        nexts[s].append(t)
    layer: dict[Any, int] = {}
    roots = [v for v in starts if v in nexts]
    if not roots:
        incoming = {t for s, t, _, _ in edges if s != t}
        roots = [v for v in nodes if v not in incoming]
    if not roots:
        surplus = {v: 0 for v in nodes}
        for s, t, c, _ in edges:
            surplus[s] += c
            surplus[t] -= c
        roots = [max(nodes, key=lambda v: (surplus[v], str(v)))]
    while True:
        queue = deque(roots)
        base = max(layer.values(), default=-1) + 1
        for v in roots:
            layer[v] = base
        while queue:
            v = queue.popleft()
            for t in nexts[v]:
                if t not in layer:
                    layer[t] = layer[v] + 1
                    queue.append(t)
        left = [v for v in nodes if v not in layer]
        if not left:
            return layer
        roots = left[:1]


def follows_layout(graph: Any, *, starts: Any = None, max_edges: int = 25,
                   max_rows: int = 100_000) -> dict[Any, Placed]:
    """The layered layout of :func:`plot_follows` (the module's steps 1-3), by activity.

    Args:
        graph: Rows of ``follows(...)`` (``source``, ``target``, ``n``).
        starts: Rows of ``case_stats(...)``; their ``first_type`` values are layer 0.
        max_edges: The most pairs drawn.
        max_rows: The most rows read of each input.
    """
    max_edges = check_limit(max_edges, name="max_edges")
    table = collect(graph, GRAPH_COLUMNS, what="follows graph", max_rows=max_rows,
                    optional=("median_duration",))
    edges = _edges(table, max_edges)
    first = _counts(starts, "first_type", max_rows) if starts is not None else {}
    return _place(edges, sorted(first, key=lambda v: (-first[v], str(v))))


def _place(edges: list[tuple[Any, Any, int, Any]], starts: list[Any]) -> dict[Any, Placed]:
    nodes = list(dict.fromkeys([e[0] for e in edges] + [e[1] for e in edges]))
    layer = _layers(nodes, edges, starts)
    weight = {v: 0 for v in nodes}
    for s, t, c, _ in edges:
        weight[s] += c
        weight[t] += c
    rank: dict[Any, int] = {}
    for depth in range(max(layer.values(), default=-1) + 1):
        members = [v for v in nodes if layer[v] == depth]

        def centre(v: Any) -> tuple[float, int, str]:
            pulls = [(rank[s], c) for s, t, c, _ in edges if t == v and s in rank
                     and layer[s] < depth]
            total = sum(c for _, c in pulls)
            mean = sum(r * c for r, c in pulls) / total if total else float("inf")
            return (mean, -weight[v], str(v))

        for k, v in enumerate(sorted(members, key=centre)):
            rank[v] = k
    return {v: Placed(layer[v], rank[v]) for v in nodes}


def _counts(case_stats: Any, column: str, max_rows: int) -> dict[Any, int]:
    table = collect(case_stats, [column], what="case_stats", max_rows=max_rows)
    return dict(Counter(table.column(column).to_pylist()))


def duration_text(seconds: float | None) -> str:
    """A duration in the unit that reads best.

    Example:
        >>> duration_text(42.0), duration_text(5400.0), duration_text(3 * 86400.0)
        ('42s', '1.5h', '3.0d')
    """
    if seconds is None or seconds != seconds:
        return ""
    for limit, unit, scale in ((90, "s", 1), (5400, "min", 60), (172800, "h", 3600)):
        if abs(seconds) < limit:
            return f"{seconds / scale:.0f}{unit}" if unit == "s" else f"{seconds / scale:.1f}{unit}"
    return f"{seconds / 86400:.1f}d"


def plot_follows(graph: Any, *, case_stats: Any = None, max_edges: int = 25,
                 max_rows: int = 100_000, title: str | None = None, ax: Any = None) -> Any:
    """Draw a directly-follows graph as a process map (layout: the module's docstring).

    Args:
        graph: Rows of ``follows(...)``: ``source``, ``target``, ``n`` and, when present,
            ``median_duration`` (a Spark DataFrame, a pyarrow Table or a pandas DataFrame).
        case_stats: Rows of ``case_stats(...)`` (``first_type``, ``last_type``): draws where
            cases start and end.
        max_edges: The most pairs drawn, the most frequent first.
        max_rows: The most rows read of each input (:class:`~viz.errors.VizTooManyRowsError`).
        title: The title; a default one counts pairs and activities.
        ax: Draw into this matplotlib Axes instead of a new figure.

    Returns:
        The matplotlib Figure; its axes hold one text box per activity (``ax.texts``) and one
        arrow per drawn pair (``ax.patches``).

    Raises:
        VizColumnsError: a column is missing (CEP-VIZ-001).
        VizArgumentError: a limit is not positive (CEP-VIZ-003).
    """
    max_edges = check_limit(max_edges, name="max_edges")
    table = collect(graph, GRAPH_COLUMNS, what="follows graph", max_rows=max_rows,
                    optional=("median_duration",))
    edges = _edges(table, max_edges)
    starts: dict[Any, int] = {}
    ends: dict[Any, int] = {}
    if case_stats is not None:
        starts = _counts(case_stats, "first_type", max_rows)
        ends = _counts(case_stats, "last_type", max_rows)
    placed = _place(edges, sorted(starts, key=lambda v: (-starts[v], str(v))))
    if ax is None:
        depth = max((p.layer for p in placed.values()), default=0) + 1
        height = max((p.rank for p in placed.values()), default=0) + 1
        fig, (ax,) = new_figure(max(6.0, 2.4 * (depth + 2 * bool(starts))), max(3.0, 1.5 * height))
    else:
        fig = ax.figure
    shift = 1 if starts else 0
    xy = {v: (float(p.layer + shift), -float(p.rank)) for v, p in placed.items()}
    top = max((c for _, _, c, _ in edges), default=1)
    for s, t, c, median in edges:
        _arrow(ax, xy[s], xy[t], c, top, f"{c:,}\n{duration_text(median)}".strip(),
               back=placed[t].layer <= placed[s].layer)
    if starts:
        _ends(ax, xy, starts, ends, top)
    for v, (x, y) in xy.items():
        ax.text(x, y, str(v), ha="center", va="center", fontsize=8, zorder=4,
                bbox={"boxstyle": "round,pad=0.35", "facecolor": "#dbe9f6", "edgecolor": "0.35"})
    xs = [x for x, _ in xy.values()] + ([0.0, max(x for x, _ in xy.values()) + 1] if starts and xy else [])
    ys = [y for _, y in xy.values()] or [0.0]
    ax.set_xlim(min(xs, default=0.0) - 0.7, max(xs, default=1.0) + 0.7)
    ax.set_ylim(min(ys) - 0.8, max(ys) + 0.8)
    ax.set_axis_off()
    left_out = table.num_rows - len(edges)
    more = f" (the {len(edges)} most frequent; {left_out} left out)" if left_out > 0 else ""
    ax.set_title(title or f"directly-follows graph: {len(edges)} pairs of {len(placed)} "
                          f"activities{more}")
    return fig


def _arrow(ax: Any, a: tuple[float, float], b: tuple[float, float], count: int, top: int,
           label: str, back: bool, dashed: bool = False) -> None:
    from matplotlib.patches import FancyArrowPatch

    width = 0.6 + 3.4 * count / top
    bend = 0.45 if back else 0.08
    colour = "0.55" if back else "#2b6cb0"
    if a == b:  # a pair of an activity with itself: a small loop above its box
        ax.annotate("", xy=(b[0] + 0.12, b[1] + 0.12), xytext=(a[0] - 0.12, a[1] + 0.12),
                    arrowprops={"arrowstyle": "-|>", "connectionstyle": "arc3,rad=-1.6",
                                "color": colour, "lw": width})
        ax.text(a[0], a[1] + 0.42, label, ha="center", va="bottom", fontsize=6, color="0.25")
        return
    patch = FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=10, lw=width,
                            connectionstyle=f"arc3,rad={bend}", color=colour, alpha=0.75,
                            shrinkA=18, shrinkB=18, zorder=2,
                            linestyle="--" if dashed else "-")
    ax.add_patch(patch)
    mx, my = (a[0] + b[0]) / 2, (a[1] + b[1]) / 2
    ax.text(mx + bend * (b[1] - a[1]) / 2, my - bend * (b[0] - a[0]) / 2, label, ha="center",
            va="center", fontsize=6, color="0.2", zorder=3,
            bbox={"boxstyle": "round,pad=0.1", "facecolor": "white", "edgecolor": "none",
                  "alpha": 0.8})


def _ends(ax: Any, xy: dict[Any, tuple[float, float]], starts: dict[Any, int],
          ends: dict[Any, int], top: int) -> None:
    """The start and end markers and their dashed arrows (activities drawn only)."""
    last = max(x for x, _ in xy.values()) + 1
    mid = sum(y for _, y in xy.values()) / len(xy)
    xy_start, xy_end = (0.0, mid), (last, mid)
    for counts, here, outgoing in ((starts, xy_start, True), (ends, xy_end, False)):
        for v, c in counts.items():
            if v in xy:
                a, b = (here, xy[v]) if outgoing else (xy[v], here)
                _arrow(ax, a, b, c, max(top, c), f"{c:,}", back=False, dashed=True)
    for text, (x, y) in ((START, xy_start), (END, xy_end)):
        ax.text(x, y, text, ha="center", va="center", fontsize=8, zorder=4,
                bbox={"boxstyle": "round,pad=0.35", "facecolor": "#e8f5e9", "edgecolor": "0.35"})


def plot_variants(variants: Any, *, top: int = 10, max_rows: int = 100_000,
                  title: str | None = None) -> Any:
    """Draw the ``top`` variants: cases (and share) per variant, and median case duration.

    Args:
        variants: Rows of ``variants(...)``: ``rank``, ``variant``, ``cases``, ``share`` and
            ``median_duration``.
        top: How many variants, by rank.
        max_rows: The most rows read.
        title: The title; a default one says how many cases the drawn variants cover.

    Returns:
        The matplotlib Figure: the first axes' container holds one bar per variant (cases),
        the second's their median durations in days.

    Raises:
        VizColumnsError: a column is missing (CEP-VIZ-001).
        VizArgumentError: ``top`` is not positive, or a rank is missing (CEP-VIZ-003).
    """
    top = check_limit(top, name="top")
    columns = ("rank", "variant", "cases", "share", "median_duration")
    frame = variants
    if hasattr(frame, "where") and hasattr(frame, "sparkSession"):
        from pyspark.sql import functions as F

        frame = frame.where(F.col("rank") <= top)
    table = collect(frame, columns, what="variants", max_rows=max_rows)
    rows = sorted((r for r in table.to_pylist() if r["rank"] is not None and r["rank"] <= top),
                  key=lambda r: r["rank"])
    if not rows and table.num_rows:
        raise VizArgumentError("variants: no row with rank 1..top")
    fig, (ax, ax_d) = new_figure(11, max(2.5, 0.55 * len(rows) + 1), ncols=2)
    y = np.arange(len(rows))[::-1].astype(float)
    labels = [f"#{r['rank']}: " + _path(r["variant"]) for r in rows]
    ax.barh(y, [r["cases"] for r in rows], color="#2b6cb0", alpha=0.8)
    for yi, r in zip(y, rows):
        ax.text(r["cases"], yi, f" {r['cases']:,} ({100 * r['share']:.1f}%)", va="center",
                fontsize=7)
    ax.set_yticks(y, labels, fontsize=7)
    ax.set_xlabel("cases")
    ax_d.barh(y, [(r["median_duration"] or 0.0) / 86400 for r in rows], color="0.5")
    ax_d.set_yticks(y, [""] * len(rows))
    ax_d.set_xlabel("median case duration (days)")
    for a in (ax, ax_d):
        a.grid(axis="x", alpha=0.3)
    covered = sum(r["share"] for r in rows)
    fig.suptitle(title or f"top {len(rows)} variants: {100 * covered:.1f}% of the cases")
    return fig


def _path(variant: Any, limit: int = 6) -> str:
    steps = [str(v) for v in (variant or [])]
    if len(steps) > limit:
        steps = steps[:limit - 1] + [f"... ({len(steps) - limit + 1} more)"]
    return " > ".join(steps)
