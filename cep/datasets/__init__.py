"""Data sets: readers of the real event files and seeded generators of synthetic ones.

Nothing here is an engine: these modules turn files or seeds into the inputs the engines take
(columns of events, probabilistic streams, subscription workloads), for jobs, tests and
benchmarks. They sit above the engines (a reader may build an engine's input type) and no
engine imports them.

Readers of real files (docs/data.md, docs/prob-data.md, docs/predict-data.md):

- :mod:`cep.datasets.xes`: XES event logs (IEEE 1849) flattened into columns;
- :mod:`cep.datasets.prices`: daily closing prices, wide CSV into long form (trend query Q2);
- :mod:`cep.datasets.sensors`: noisy sensor readings into a probabilistic stream of changes;
- :mod:`cep.datasets.temperatures`: daily minimum and maximum temperatures, and heat waves.

Seeded generators:

- :mod:`cep.datasets.synthetic`: event streams of any size (Zipf types, keys, attributes);
- :mod:`cep.datasets.checks`: check transactions with planted kiting rings (trend query Q1);
- :mod:`cep.datasets.prob_streams`: probabilistic streams of Sugiura et al.'s evaluation;
- :mod:`cep.datasets.predict_workload`: the subscriptions and events of P-ToPSS's evaluation.

Module constants (``CHUNK_SIZE``, ``DOMAIN``, ...) stay in their modules; only the readers,
generators and the types they return or raise are exported here.

Example:
    >>> cols = generate_events(SyntheticSpec(n_events=5, n_keys=1, n_types=3, seed=1))
    >>> len(cols.id)
    5
"""

from __future__ import annotations

from cep.datasets.checks import CheckSpec, CheckSpecError, Checks, generate_checks
from cep.datasets.predict_workload import (SyntheticWorkload, class_name, draw_items, subscription_text,
                                           synthetic_workload)
from cep.datasets.prices import DailyPrices, PriceFileError, read_price_csv
from cep.datasets.prob_streams import long_columns, synthetic_pstream, wide_maps
from cep.datasets.sensors import SensorFileError, SensorSeries, change_pstream, read_sensor_csv
from cep.datasets.synthetic import EventColumns, SyntheticSpec, generate_batches, generate_events
from cep.datasets.temperatures import DailyTemperatures, TemperatureFileError, heat_runs, read_daily_temperatures
from cep.datasets.xes import EventLog, column_name, parse_timestamp, read_xes

__all__ = [
    "CheckSpec", "CheckSpecError", "Checks", "DailyPrices", "DailyTemperatures", "EventColumns", "EventLog",
    "PriceFileError", "SensorFileError", "SensorSeries", "SyntheticSpec", "SyntheticWorkload",
    "TemperatureFileError", "change_pstream", "class_name", "column_name", "draw_items", "generate_batches",
    "generate_checks", "generate_events", "heat_runs", "long_columns", "parse_timestamp", "read_daily_temperatures",
    "read_price_csv", "read_sensor_csv", "read_xes", "subscription_text", "synthetic_pstream", "synthetic_workload",
    "wide_maps",
]
