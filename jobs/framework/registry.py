"""The registry of state jobs: every sketch, graph, prediction set and standing pattern the
``conf/`` files name.

A state job is a ``(kind, name)`` pair: ``kind`` is ``sketch`` (``conf/sketches.toml``),
``graph`` (``conf/graphs.toml``), ``predict`` (``conf/predictions.toml``) or ``match``
(``conf/matches.toml``, standing patterns: docs/standing.md). The registry is
the one place that knows, for each kind, how to load a job's settings, which Delta tables hold
its state (by suffix, the meta table among them), which source table it reads and which
function runs it. :mod:`jobs.framework.runner` runs jobs through it and the maintenance job reads the
list of registered state tables from it, so a table outside the registry is never touched.

Example:
    >>> from delta_tables.settings import load_settings
    >>> settings = load_settings(overrides={"data_dir": "/tmp/cep-doc"})
    >>> job = load_job(settings, "predict", "heat")
    >>> job.key, job.source.name, sorted(job.tables)[:3]
    ('predict/heat', 'daily_temperatures', ['instances', 'late', 'meta'])
    >>> job.tables["meta"].name
    'heat_meta'
"""

from __future__ import annotations

import importlib
import tomllib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cep.errors import ConfigError
from delta_tables.settings import Settings, TableConf

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["KINDS", "StateJob", "job_from_mapping", "load_job", "registered_jobs", "state_tables",
           "parse_key", "registered_names"]

KINDS = ("sketch", "graph", "predict", "match")
"""The kinds of state job, in the order ``run-all`` runs them by default."""

STATE_PACKAGE = "jobs.state"
"""The package that holds one module per kind, ``run_<kind>`` and ``read_meta`` in each."""

_FILES = {"sketch": ("sketches.toml", "sketches"), "graph": ("graphs.toml", "graphs"),
          "predict": ("predictions.toml", "predictions"), "match": ("matches.toml", "matches")}


@dataclass(frozen=True)
class StateJob:
    """One registered state job.

    Attributes:
        kind: ``sketch``, ``graph``, ``predict`` or ``match``.
        name: Its name in the kind's conf file.
        conf: The kind's own settings object (SketchConf, GraphConf or PredictionConf).
        source: The source Delta table it reads.
        tables: Its state tables by suffix; ``meta`` is written last by every run and records
            the source version the state is complete up to.
    """

    kind: str
    name: str
    conf: Any
    source: TableConf
    tables: dict[str, TableConf]

    @property
    def key(self) -> str:
        """``kind/name``: how the command line and ``conf/jobs.toml`` name the job."""
        return f"{self.kind}/{self.name}"

    def run(self, spark: "SparkSession", settings: Settings, *, until_version: int | None = None,
            quiet: bool = False, crash_after: str | None = None) -> Any:
        """Run the job once (its own module's run function); returns that function's result.

        ``crash_after`` is the crash tests' hook (:mod:`jobs.framework.faults`).
        """
        run = getattr(_module(self.kind), f"run_{self.kind}")
        return run(spark, settings, self.conf, until_version=until_version, quiet=quiet,
                   crash_after=crash_after)

    def read_meta(self, spark: "SparkSession") -> dict[str, Any] | None:
        """The meta row of the last complete run, or None before the first one."""
        return _module(self.kind).read_meta(spark, self.conf)

    def error(self, message: str) -> Exception:
        """A JobError about this job, with its kind's code (``CODES.job`` of its module)."""
        from jobs.framework.errors import JobError

        return _module(self.kind).CODES.error(JobError, f"{self.key}: {message}")


def _module(kind: str) -> Any:
    """The job's module (``jobs.state.sketch``, ``jobs.state.graph``, ``jobs.state.predict``,
    ``jobs.state.match``).

    Named here by its path and imported on use: the registry costs nothing to import, and the
    framework holds no import of the state jobs (tests/cep/test_layering.py), only this lookup
    of the code of a kind it reads from ``conf/``.
    """
    return importlib.import_module(f"{STATE_PACKAGE}.{kind}")


def parse_key(key: str) -> tuple[str, str]:
    """``"sketch/app_sketch"`` -> ``("sketch", "app_sketch")``, with a ConfigError otherwise."""
    kind, sep, name = key.partition("/")
    if not sep or kind not in KINDS or not name:
        raise ConfigError(f"job {key!r}: expected KIND/NAME with KIND one of {', '.join(KINDS)}")
    return kind, name


def load_job(settings: Settings, kind: str, name: str) -> StateJob:
    """The registered job ``kind/name``; ConfigError if the kind or the name is unknown."""
    if kind not in KINDS:
        raise ConfigError(f"unknown job kind {kind!r}; expected one of {', '.join(KINDS)}")
    if kind == "sketch":
        from delta_tables.sketch_conf import load_sketch
        conf = load_sketch(settings, name)
        return StateJob(kind, name, conf, conf.source, dict(conf.state_tables()))
    if kind == "graph":
        from delta_tables.graph_state import load_graph
        conf = load_graph(settings, name)
    elif kind == "match":
        from delta_tables.match_state import load_match
        conf = load_match(settings, name)
    else:
        from delta_tables.predict_state import load_prediction
        conf = load_prediction(settings, name)
    return StateJob(kind, name, conf, conf.source, dict(conf.tables()))


def job_from_mapping(settings: Settings, kind: str, name: str, entry: dict[str, Any]) -> StateJob:
    """The job ``kind/name`` registered with ``entry`` (what its conf file section would hold),
    without a conf file: from-scratch builds in tests and benchmarks under names of their own.

    Example:
        >>> from delta_tables.settings import load_settings
        >>> job = job_from_mapping(load_settings(), "sketch", "s1", {
        ...     "source": "events", "stream_col": "k", "type_col": "t", "ts_col": "ts",
        ...     "id_col": "id", "m": 64, "k": 2, "C": 3})
        >>> job.key, sorted(job.tables)
        ('sketch/s1', ['late', 'meta', 'nodes', 'open'])
    """
    if kind not in KINDS:
        raise ConfigError(f"unknown job kind {kind!r}; expected one of {', '.join(KINDS)}")
    if kind == "sketch":
        from delta_tables.sketch_conf import sketch_from_mapping
        conf = sketch_from_mapping(settings, name, entry)
        return StateJob(kind, name, conf, conf.source, dict(conf.state_tables()))
    if kind == "graph":
        from delta_tables.graph_state import GraphConf
        conf = GraphConf.from_mapping(settings, name, entry)
    elif kind == "match":
        from delta_tables.match_state import MatchConf
        conf = MatchConf.from_mapping(settings, name, entry)
    else:
        from delta_tables.predict_state import PredictionConf
        conf = PredictionConf.from_mapping(settings, name, entry)
    return StateJob(kind, name, conf, conf.source, dict(conf.tables()))


def registered_names(settings: Settings, kind: str) -> list[str]:
    """The names of the ``kind`` jobs of its conf file, in file order."""
    filename, section = _FILES[kind]
    path = settings.conf_dir / filename
    if not path.exists():
        return []
    try:
        entries = tomllib.loads(path.read_text(encoding="utf-8")).get(section, {})
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    if not isinstance(entries, dict):
        raise ConfigError(f"{path}: [{section}] must be a table of named entries")
    return list(entries)


def registered_jobs(settings: Settings) -> list[StateJob]:
    """Every job of the three conf files, in :data:`KINDS` order then file order."""
    return [load_job(settings, kind, name) for kind in KINDS
            for name in registered_names(settings, kind)]


def state_tables(settings: Settings) -> dict[str, TableConf]:
    """Every registered state table by its SQL name (the only tables maintenance may touch)."""
    return {table.name: table for job in registered_jobs(settings)
            for table in job.tables.values()}
