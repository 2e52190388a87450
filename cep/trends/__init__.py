"""Complete event trends (``cet_trends``): the ABI graph of Mei et al., ICPP 2021 (docs/trends.md).

A trend query is one Kleene+ class linked by predicates between neighbours::

    PATTERN stock+ s[] WHERE [id] AND s[i].price > 1.05 * s[i-1].price WITHIN 60 MINUTES SLIDE 10 MINUTES

Compile once (:func:`compile_trend`), then per partition: keep the class members that pass the
filters (:func:`event_mask`), cut the windows (:func:`assign_windows`), build the
attribute-based indexing graph (:func:`build_graph`, vectorised; :func:`build_graph_dynamic`,
streaming), then count the complete trends without enumerating them (:func:`count_trends`,
:func:`count_by_window`) or extract them (:func:`extract_trends`, bounded by ``max_trends``).
:func:`window_counts` and :func:`window_trends` do all of it on numpy columns.

Example:
    >>> import numpy as np
    >>> q = compile_trend("PATTERN s+ WHERE s[i].price > s[i-1].price")
    >>> g = build_graph(q, np.arange(5), {"price": np.array([3.0, 1.0, 2.0, 5.0, 4.0])})
    >>> count_trends(g), [t.tolist() for t in extract_trends(g)]
    (6, [[0, 3], [0, 4], [1, 2, 3], [1, 2, 4], [1, 3], [1, 4]])
"""

from __future__ import annotations

from cep.trends.anchors import AnchoredResult, anchor_events, anchored_trends
from cep.trends.answer import window_counts, window_graph, window_trends
from cep.trends.count import count_by_window, count_trends, path_counts
from cep.trends.dynamic import DynamicGraph, build_graph_dynamic
from cep.trends.edges import enumerate_edges
from cep.trends.errors import (
    CorruptTrendGraphError,
    TrendInputError,
    TrendLimitError,
    TrendOptionError,
    UnsupportedTrendPatternError,
)
from cep.trends.extract import DEFAULT_MAX_TRENDS, extract_trends
from cep.trends.filters import event_mask
from cep.trends.graph import AttributeIndex, TrendGraph, build_graph
from cep.trends.maximal import COMPLETENESS, DEFAULT_COMPLETENESS, maximal_path_counts, reduced_edges
from cep.trends.prefilter import end_events, endpoints, start_events
from cep.trends.query import NeighbourPredicate, TrendQuery, compile_trend
from cep.trends.windows import assign_windows

__all__ = [
    "COMPLETENESS",
    "DEFAULT_COMPLETENESS",
    "DEFAULT_MAX_TRENDS",
    "AnchoredResult",
    "AttributeIndex",
    "CorruptTrendGraphError",
    "DynamicGraph",
    "NeighbourPredicate",
    "TrendGraph",
    "TrendInputError",
    "TrendLimitError",
    "TrendOptionError",
    "TrendQuery",
    "UnsupportedTrendPatternError",
    "anchor_events",
    "anchored_trends",
    "assign_windows",
    "build_graph",
    "build_graph_dynamic",
    "compile_trend",
    "count_by_window",
    "count_trends",
    "end_events",
    "endpoints",
    "enumerate_edges",
    "event_mask",
    "extract_trends",
    "maximal_path_counts",
    "path_counts",
    "reduced_edges",
    "start_events",
    "window_counts",
    "window_graph",
    "window_trends",
]

# One vocabulary for every engine (docs/architecture.md, "One vocabulary"): ``compile`` turns
# pattern text into the engine's frozen program, ``run`` evaluates a program over its input.
# Not in __all__: a star import would shadow the builtin ``compile``.
compile = compile_trend
run = window_trends
