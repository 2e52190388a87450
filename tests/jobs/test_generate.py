"""The synthetic stream in Delta equals the generator's arrays; reruns write nothing."""

from __future__ import annotations

import numpy as np
import pytest

from cep.errors import ConfigError, InputDataError
from cep.datasets.synthetic import SyntheticSpec, generate_events
from delta_tables.catalog import current_version
from jobs.loaders.generate import synthetic_table, write_synthetic


def test_delta_table_equals_generated_stream(spark, settings) -> None:
    spec = SyntheticSpec(n_events=5000, n_keys=20, n_types=7, seed=11)
    result = write_synthetic(spark, settings, spec, "syn_a", batch_size=1234, quiet=True)
    assert result.written and result.events == 5000
    expected = generate_events(spec)
    rows = spark.sql("SELECT id, key, type, CAST(unix_micros(ts) AS BIGINT) AS us, v0, v1 "
                     "FROM syn_a ORDER BY id").toPandas()
    assert np.array_equal(rows["id"].to_numpy(), expected.id)
    assert np.array_equal(rows["key"].to_numpy(), expected.key)
    assert np.array_equal(rows["type"].to_numpy(dtype=str), expected.types())
    assert np.array_equal(rows["us"].to_numpy(), expected.ts_us)
    assert np.array_equal(rows["v0"].to_numpy(), expected.attrs["v0"])
    assert np.array_equal(rows["v1"].to_numpy(), expected.attrs["v1"])


def test_same_spec_writes_nothing_and_new_spec_replaces(spark, settings) -> None:
    spec = SyntheticSpec(n_events=300, n_keys=3, n_types=3, seed=1)
    first = write_synthetic(spark, settings, spec, "syn_b", quiet=True)
    again = write_synthetic(spark, settings, spec, "syn_b", quiet=True)
    assert first.written and not again.written and again.version == first.version
    other = write_synthetic(spark, settings, SyntheticSpec(n_events=200, n_keys=3, n_types=3, seed=2),
                            "syn_b", quiet=True)
    assert other.written and other.version == first.version + 1
    assert spark.table("syn_b").count() == 200
    assert current_version(spark, synthetic_table(settings, "syn_b")) == other.version


def test_bad_table_name_and_empty_stream_are_typed_errors(spark, settings) -> None:
    with pytest.raises(ConfigError, match="invalid table name"):
        write_synthetic(spark, settings, SyntheticSpec(n_events=10), "x; DROP TABLE y", quiet=True)
    with pytest.raises(InputDataError, match="n_events"):
        write_synthetic(spark, settings, SyntheticSpec(n_events=0), "syn_c", quiet=True)
