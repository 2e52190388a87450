"""The state jobs: one module per kind, each keeping Delta state current with its source.

- :mod:`~jobs.state.sketch`: a sketch's Bloom-filter tree (``python -m jobs sketch``).
- :mod:`~jobs.state.graph`: a trend query's ABI graph per key and window (``... graph``).
- :mod:`~jobs.state.predict`: a prediction set's instances and Markov counts (``... predict``).

Each implements only its own part of :class:`jobs.framework.incremental.IncrementalJob` (its
tables, its settings check, its step); the framework drives the protocol. They import the
framework and the layers below, never the loaders or the servers.
"""

from __future__ import annotations

from jobs.state.graph import GraphJob, GraphRunResult, run_graph
from jobs.state.predict import PredictJob, PredictRunResult, run_predict
from jobs.state.sketch import SketchJob, SketchRunResult, run_sketch

__all__ = ["SketchJob", "SketchRunResult", "run_sketch", "GraphJob", "GraphRunResult",
           "run_graph", "PredictJob", "PredictRunResult", "run_predict"]
