"""Algorithm 1 through Spark tasks (udfs.trend_graph_spark) builds exactly build_graph's graph."""

from __future__ import annotations

import numpy as np
import pytest

from cep.trends import TrendInputError, build_graph, count_by_window
from udfs.trend_graph_spark import build_graph_spark


def test_spark_stages_build_the_sequential_graph(spark) -> None:  # noqa: ANN001
    rng = np.random.default_rng(4)
    n = 300
    # Q1-like (strings, equality, NULLs) and Q2-like (floats, a linear function, NaN) in windows.
    cols = {"src": np.array([None if i % 37 == 0 else f"A{v}" for i, v in enumerate(rng.integers(0, 20, n))],
                            dtype=object),
            "dest": np.array([f"A{v}" for v in rng.integers(0, 20, n)], dtype=object),
            "price": np.where(np.arange(n) % 41 == 5, np.nan, 100 * np.exp(np.cumsum(rng.normal(0, 0.02, n)))),
            "qty": np.array([None if i % 17 == 0 else int(v) for i, v in enumerate(rng.integers(0, 9, n))],
                            dtype=object)}
    ts = np.sort(rng.integers(0, 2000, n))
    window = ts // 100
    cases = [("PATTERN c+ WHERE c[i].src = c[i-1].dest", None, 3),
             ("PATTERN s+ WHERE s[i].price > 1.05 * s[i-1].price AND s[i].qty <> s[i-1].qty", window, 2)]
    for query, win, parts in cases:
        expected = build_graph(query, ts, cols, window=win)
        got = build_graph_spark(spark, query, ts, cols, window=win, partitions=parts)
        assert got == expected
        assert count_by_window(got) == count_by_window(expected)  # so the same trends


def test_spark_runner_raises_the_sequential_error(spark) -> None:  # noqa: ANN001
    with pytest.raises(TrendInputError, match="mixes values"):
        build_graph_spark(spark, "PATTERN c+ WHERE c[i].a = c[i-1].a", np.arange(4),
                          {"a": np.array([1, "x", 2, "y"], dtype=object)})
