"""match_seq with ``$x`` inside DEFINE: Spark == engine == oracle, and only ``$x``-free parts pushed."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from cep.match.columnar.stream import EventStream
from sql_ext.quoting import sql_string
from tests.udfs.test_match_seq import expected  # one matcher-and-oracle reference for both files

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
SCHEMA = "id BIGINT, key STRING, type STRING, ts TIMESTAMP, symbol STRING, price BIGINT"
PATTERNS = [
    # The P-ToPSS subscription: a quote, then a trade of the same symbol.
    "PATTERN a; b DEFINE a AS type = 'quote' AND symbol = $s, b AS type = 'trade' AND symbol = $s "
    "WITHIN 20 SECONDS",
    # Every Kleene iteration and the negated class agree with the quote's symbol.
    "PATTERN a; b+; NOT(x); c DEFINE a AS type = 'quote' AND symbol = $s, "
    "b AS type = 'trade' AND symbol = $s AND price <= $p, x AS type = 'halt' AND symbol = $s, "
    "c AS type = 'quote' WHERE a.price = $p WITHIN 15 SECONDS",
]
POLICIES = ["skip-till-next-match", "skip-till-any-match", "strict-contiguity"]


def random_events(seed: int, n_keys: int = 3, per_key: int = 12) -> list[tuple]:
    rng = random.Random(seed)
    rows, next_id = [], 0
    for k in range(n_keys):
        t = 0
        for _ in range(per_key):
            t += rng.choice([0, 1, 2])  # zero gaps: ties in timestamps
            rows.append((next_id, f"k{k}", rng.choice(["quote", "trade", "trade", "halt"]),
                         T0 + timedelta(seconds=t), rng.choice(["IBM", "MSFT"]), rng.randint(1, 4)))
            next_id += 1
    rng.shuffle(rows)  # arrival order must not matter
    return rows


def streams_by_key(rows: list[tuple]) -> dict[str, EventStream]:
    out = {}
    for key in sorted({r[1] for r in rows}):
        mine = [r for r in rows if r[1] == key]
        out[key] = EventStream.from_columns(
            ids=[r[0] for r in mine],
            ts=[int((r[3] - datetime(1970, 1, 1, tzinfo=timezone.utc)) / timedelta(microseconds=1))
                for r in mine],
            types=[r[2] for r in mine],
            attrs={"symbol": np.array([r[4] for r in mine], dtype=object),
                   "price": np.array([r[5] for r in mine])})
    return out


@pytest.fixture(scope="module")
def market_view(spark):
    rows = random_events(4)  # a seed whose data gives every pattern and policy some matches
    spark.createDataFrame(rows, SCHEMA).createOrReplaceTempView("ms_market")
    return rows


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("pattern", PATTERNS)
def test_define_variables_spark_equals_engine_equals_oracle(spark, market_view, pattern: str,
                                                            policy: str) -> None:
    got = spark.sql(
        "SELECT key, event_ids, variables FROM match_seq("
        f"pattern => {sql_string(pattern)}, policy => {sql_string(policy)}, key_col => 'key', "
        "events => TABLE(ms_market))").collect()
    spark_set = {(r.key, tuple(r.event_ids), tuple(r.variables)) for r in got}
    streams = streams_by_key(market_view)
    engine_set = expected(pattern, policy, streams, use_oracle=False)
    assert engine_set == expected(pattern, policy, streams, use_oracle=True)
    assert spark_set == engine_set
    assert spark_set, "the data should give every pattern some matches"


def test_only_variable_free_conjuncts_become_spark_masks(spark, market_view) -> None:
    from pyspark.sql.udtf import AnalyzeArgument

    from udfs.match_seq_plan import analyze_call

    table = spark.table("ms_market").schema
    pattern = AnalyzeArgument(dataType=None, value=PATTERNS[1], isTable=False,  # type: ignore[arg-type]
                              isConstantExpression=True)
    events = AnalyzeArgument(dataType=table, value=None, isTable=True, isConstantExpression=False)
    result = analyze_call(pattern, events)
    masks = {col.alias: col.name for col in result.select if col.alias.startswith("__m")}
    by_alias = dict(zip(result.plan.mask_aliases, masks.values()))
    assert set(by_alias) == {"a", "b", "x", "c"}
    assert all("$" not in sql and "symbol" not in sql for sql in by_alias.values()), by_alias
    assert "`type` = 'quote'" in by_alias["a"] and "`type` = 'halt'" in by_alias["x"]
