"""The aggregate functions MATCH_RECOGNIZE's MEASURES and DEFINE may call, by name.

The names are those Spark 4.2's built-in function registry files under the group
``agg_funcs`` (``FunctionRegistry.builtin``; ``tests/sql_ext/test_match_recognize_aggregates.py``
compares this list with the running Spark, so a new pin that adds or drops one fails there
first). The translator (:mod:`cep.recognize.expressions`) recognises a call by its name at the
token level, before sqlglot parses the expression, because sqlglot knows only some of them as
aggregates and turns others into differently named nodes.

Trino's rule for row pattern aggregates (docs/match-recognize.md, "Aggregates") decides the
rows: every argument refers to one pattern variable, one SUBSET or to no variable (then the
whole match). In MEASURES any of these runs in Spark over the rows the matcher labelled, as
``agg(...) FILTER (WHERE <the variable's rows>)``, grouped per match or windowed up to the
current row (RUNNING) or over the match (FINAL). In DEFINE the matcher evaluates them itself
per thread, so only :data:`DEFINE_AGGREGATES` are allowed there.

Example:
    >>> "max_by" in AGGREGATES and "upper" not in AGGREGATES
    True
    >>> DEFINE_AGGREGATES["stddev"], "approx_count_distinct" in DEFINE_AGGREGATES
    ('stddev_samp', False)
"""

from __future__ import annotations

__all__ = ["AGGREGATES", "COLUMNS", "DEFINE_AGGREGATES", "FRAMELESS", "PARAMETERS", "REFUSED"]

AGGREGATES: frozenset[str] = frozenset("""
any any_value approx_count_distinct approx_percentile approx_top_k approx_top_k_accumulate
approx_top_k_combine array_agg avg bit_and bit_or bit_xor bitmap_and_agg bitmap_construct_agg
bitmap_or_agg bool_and bool_or collect_list collect_set corr count count_if count_min_sketch
covar_pop covar_samp every first first_value grouping grouping_id histogram_numeric
hll_sketch_agg hll_union_agg kll_merge_agg_bigint kll_merge_agg_double kll_merge_agg_float
kll_sketch_agg_bigint kll_sketch_agg_double kll_sketch_agg_float kurtosis last last_value listagg
max max_by mean measure median min min_by mode percentile percentile_approx percentile_cont
percentile_disc regr_avgx regr_avgy regr_count regr_intercept regr_r2 regr_slope regr_sxx
regr_sxy regr_syy skewness some std stddev stddev_pop stddev_samp string_agg sum
theta_intersection_agg theta_sketch_agg theta_union_agg try_avg try_sum
tuple_intersection_agg_double tuple_intersection_agg_integer tuple_sketch_agg_double
tuple_sketch_agg_integer tuple_union_agg_double tuple_union_agg_integer var_pop var_samp variance
""".split())
"""Spark 4.2.0's built-in aggregate functions (``first`` and ``last`` are row pattern
navigation inside MATCH_RECOGNIZE, as the standard has them; the rest keep Spark's meaning)."""

REFUSED: frozenset[str] = frozenset({"grouping", "grouping_id", "measure"})
"""Aggregates with no meaning over a match (they read GROUP BY sets or a metric view)."""

FRAMELESS: frozenset[str] = frozenset({"median", "percentile_cont", "percentile_disc"})
"""Aggregates Spark computes over a window without a frame only
(``INVALID_WINDOW_SPEC_FOR_AGGREGATION_FUNC``): FINAL in ALL ROWS PER MATCH, never RUNNING.
Any aggregate written with ``WITHIN GROUP (ORDER BY ...)`` is treated the same way."""

DEFINE_AGGREGATES: dict[str, str] = {
    **{name: name for name in (
        "count", "sum", "avg", "min", "max", "count_if", "bool_and", "bool_or", "stddev_samp",
        "stddev_pop", "var_samp", "var_pop", "skewness", "kurtosis", "corr", "covar_pop",
        "covar_samp", "regr_count", "regr_avgx", "regr_avgy", "regr_sxx", "regr_syy",
        "regr_sxy", "regr_slope", "regr_intercept", "regr_r2", "median", "percentile", "mode",
        "collect_list", "collect_set", "listagg", "max_by", "min_by", "first_value",
        "last_value", "bit_and", "bit_or", "bit_xor")},
    "mean": "avg", "every": "bool_and", "some": "bool_or", "any": "bool_or",
    "stddev": "stddev_samp", "std": "stddev_samp", "variance": "var_samp",
    "any_value": "first_value", "array_agg": "collect_list", "string_agg": "listagg",
    # try_sum/try_avg differ from sum/avg only on overflow, which Python's numbers never do.
    "try_sum": "sum", "try_avg": "avg",
}
"""The aggregates a DEFINE condition may read the match with, by name, and the running
summary the matcher keeps for each (:data:`cep.recognize.summaries.SUMMARIES`; Spark's
synonyms share one). Not here, so CEP-MR-205 in DEFINE (they work in MEASURES): the
approximate and sketch aggregates (``approx_*``, ``percentile_approx``, ``histogram_numeric``,
``count_min_sketch``, ``hll_*``, ``kll_*``, ``theta_*``, ``tuple_*``, ``bitmap_*``), and
``percentile_cont``/``percentile_disc`` (their WITHIN GROUP form)."""

PARAMETERS: dict[str, tuple[int, int]] = {
    "percentile": (1, 1), "listagg": (0, 1), "mode": (0, 1)}
"""Summaries that take literal parameters after their columns: (fewest, most)."""

COLUMNS: dict[str, int] = {
    **{name: 2 for name in DEFINE_AGGREGATES if name.startswith("regr_")},
    "corr": 2, "covar_pop": 2, "covar_samp": 2, "max_by": 2, "min_by": 2}
"""Summaries over two columns (the rest read one; ``count`` also none, as ``count(*)``)."""
