"""The check table in Delta equals the generator's arrays; reruns write nothing; Q1 finds the rings."""

from __future__ import annotations

import numpy as np
import pytest

from cep.datasets.checks import CheckSpec, generate_checks
from cep.errors import ConfigError
from delta_tables.catalog import current_version
from jobs.loaders.checks import DEMO_SPEC, checks_table, write_checks
from sql_ext.quoting import sql_string

Q1 = ("PATTERN check+ c[] WHERE c.type = 'not covered' AND c[i].src = c[i-1].dest "
      "WITHIN 1 WEEK SLIDE 1 DAY")


def test_delta_table_equals_generated_checks(spark, settings) -> None:
    spec = CheckSpec(n_checks=3000, n_accounts=300, n_banks=3, ring_rate=0.002, seed=4)
    result = write_checks(spark, settings, spec, "chk_a", quiet=True)
    assert result.written and result.events == 3000
    expected = generate_checks(spec)
    rows = spark.sql("SELECT id, CAST(unix_micros(ts) AS BIGINT) AS us, bank, src, dest, amount, "
                     "type, ring FROM chk_a ORDER BY id").toPandas()
    assert np.array_equal(rows["id"].to_numpy(), expected.id)
    assert np.array_equal(rows["us"].to_numpy(), expected.ts_us)
    for name in ("bank", "src", "dest", "amount", "type"):
        assert rows[name].tolist() == getattr(expected, name).tolist(), name
    ring = rows["ring"].to_numpy(dtype=float)
    assert np.array_equal(np.isnan(ring), expected.ring < 0)
    assert np.array_equal(ring[~np.isnan(ring)], expected.ring[expected.ring >= 0])
    assert [f.dataType.simpleString() for f in spark.table("chk_a").schema.fields] == \
        ["bigint", "timestamp", "string", "bigint", "bigint", "double", "string", "bigint"]


def test_same_spec_writes_nothing_force_and_new_spec_rewrite(spark, settings) -> None:
    spec = CheckSpec(n_checks=200, n_accounts=40, n_banks=2, seed=1)
    first = write_checks(spark, settings, spec, "chk_b", quiet=True)
    again = write_checks(spark, settings, spec, "chk_b", quiet=True)
    assert first.written and not again.written and again.version == first.version
    forced = write_checks(spark, settings, spec, "chk_b", force=True, quiet=True)
    assert forced.written and forced.version == first.version + 1
    other = write_checks(spark, settings, CheckSpec(n_checks=150, n_accounts=40, n_banks=2,
                                                    seed=2), "chk_b", quiet=True)
    assert other.written and other.version == forced.version + 1
    assert spark.table("chk_b").count() == 150
    assert current_version(spark, checks_table(settings, "chk_b")) == other.version
    assert spark.sql(f"SELECT count(*) FROM chk_b VERSION AS OF {first.version}").first()[0] == 200


def test_bad_table_names_are_typed_errors(spark, settings) -> None:
    for name in ("x; DROP TABLE y", "../outside", "a b", ""):
        with pytest.raises(ConfigError, match="invalid table name"):
            write_checks(spark, settings, CheckSpec(n_checks=10), name, quiet=True)


def test_q1_in_sql_finds_every_planted_ring(spark, generated_checks) -> None:
    assert generated_checks.events == DEMO_SPEC.n_checks
    rings = {r.ring: list(r.ids) for r in spark.sql(
        "SELECT ring, array_sort(collect_list(id)) AS ids FROM checks WHERE ring IS NOT NULL "
        "GROUP BY ring").collect()}
    assert len(rings) == DEMO_SPEC.n_rings == 20
    trends = [list(r.event_ids) for r in spark.sql(
        f"SELECT event_ids FROM cet_trends(pattern => {sql_string(Q1)}, key_col => 'bank', "
        "events => TABLE(checks)) WHERE length >= 3").collect()]
    for ring, ids in rings.items():
        assert any(any(t[i:i + len(ids)] == ids for i in range(len(t))) for t in trends), ring
