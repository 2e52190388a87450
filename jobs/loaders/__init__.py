"""The loaders: real and generated source data into Delta tables, each idempotent.

- :mod:`~jobs.loaders.load_logs`: the BPI event logs (``python -m jobs load-bpi``).
- :mod:`~jobs.loaders.datasets`: fetching and checking the pinned downloads.
- :mod:`~jobs.loaders.stocks`, :mod:`~jobs.loaders.sensors`,
  :mod:`~jobs.loaders.temperatures`: the price, sensor and temperature files.
- :mod:`~jobs.loaders.checks`, :mod:`~jobs.loaders.generate`: generated checks and
  synthetic events.
- :mod:`~jobs.loaders.staging`: the one-commit table replacement they write through.

They import the layers below ``jobs`` (and the session), never the state jobs or the servers.
"""

from __future__ import annotations

from jobs.loaders.checks import write_checks
from jobs.loaders.datasets import extract_log
from jobs.loaders.generate import write_synthetic
from jobs.loaders.load_logs import LoadResult, load_log
from jobs.loaders.sensors import load_sensors
from jobs.loaders.staging import replace_table
from jobs.loaders.stocks import load_stocks
from jobs.loaders.temperatures import load_temperatures

__all__ = ["LoadResult", "load_log", "extract_log", "load_stocks", "load_sensors",
           "load_temperatures", "write_checks", "write_synthetic", "replace_table"]
