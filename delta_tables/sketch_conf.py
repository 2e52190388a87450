"""Registered sketches read from ``conf/sketches.toml`` (in the style of :mod:`delta_tables.settings`).

A sketch ``<name>`` summarises the event names of a source table, one tree per stream, in four
Delta tables ``<name>_nodes``, ``<name>_meta``, ``<name>_open`` and ``<name>_late`` located
under the warehouse. Every name (sketch, source, columns) is a validated SQL identifier and every
location resolves under the warehouse root, so no user string reaches a path or SQL text
unchecked. The settings are explicit (``m``, ``k``, ``C``, ``fanout``, ``seeds``) or solver
inputs (``fpq``, ``memory_bytes``, ``expected_events``, ``C``, ``query_length``) that
:func:`cep.sketch.solve` (or, with ``rule = "thesis"``, the thesis's equations 4.1-4.18)
resolves on the first run; ``merge`` picks the tree's merge rule (``"aligned"`` or the
thesis's ``"neighbours"``). The meta table then freezes them.

Example:
    >>> from delta_tables.settings import load_settings
    >>> s = load_settings(overrides={"data_dir": "/tmp/cep-doc"})
    >>> conf = load_sketch(s, "word_sketch")
    >>> conf.source.name, conf.stream_col, conf.config.m, conf.nodes.name
    ('synthetic_events', 'key', 256, 'word_sketch_nodes')
    >>> str(conf.nodes.location)
    '/tmp/cep-doc/warehouse/word_sketch_nodes'
    >>> load_sketch(s, "app_sketch").initial_config().k
    2
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, replace
from numbers import Integral, Real
from pathlib import Path
from typing import Any, Mapping

from cep.errors import ConfigError
from cep.sketch.config import MERGES, NEIGHBOURS, SketchConfig
from cep.sketch.errors import SketchConfigError
from delta_tables.settings import Settings, TableConf, check_identifier

SUFFIXES = ("nodes", "meta", "open", "late")
"""The state tables of a sketch: ``<name>_<suffix>``."""
MAX_NAME = 128 - len("_nodes")
SEED_MAX = (1 << 31) - 1
"""Seeds are stored in INT columns."""
_COLUMNS = ("stream_col", "type_col", "ts_col", "id_col")
_EXPLICIT = ("m", "k", "fanout", "seeds")
_SOLVER = ("fpq", "memory_bytes", "expected_events", "query_length", "rule")
_KNOWN = {"source", "description", "C", "merge", *_COLUMNS, *_EXPLICIT, *_SOLVER}
RULES = ("ours", "thesis")
"""Configuration rules: ``ours`` (:func:`cep.sketch.solve`) or ``thesis`` (equations 4.1-4.18
of Baltus 2021, :func:`cep.sketch.thesis_solver.thesis_solve`)."""


@dataclass(frozen=True)
class SolverInputs:
    """Inputs of :func:`cep.sketch.solve` for a sketch whose ``m`` and ``k`` are not given.

    Attributes:
        fpq: Target false-positive rate of a query at a leaf.
        memory_bytes: Memory budget of one stream's tree.
        expected_events: Expected events of one stream.
        window: The leaf size ``C``.
        query_length: Names per query.
        fanout: Children per node.
        seeds: Murmur3 seeds (``None``: ``0 .. k-1``).
        rule: ``"ours"`` or ``"thesis"`` (:data:`RULES`; the thesis's rule assumes fanout 2).
        merge: The tree's merge rule (:class:`~cep.sketch.SketchConfig`).
    """

    fpq: float
    memory_bytes: int
    expected_events: int
    window: int
    query_length: int = 2
    fanout: int = 2
    seeds: tuple[int, ...] | None = None
    rule: str = "ours"
    merge: str = "aligned"

    def solve(self) -> SketchConfig:
        """The configuration the solver chooses (deterministic)."""
        if self.rule == "thesis":
            from cep.sketch.thesis_solver import thesis_solve

            found = thesis_solve(self.fpq, 8.0 * self.memory_bytes, self.expected_events,
                                 self.window, max(2, self.query_length))
            # Filters are stored whole bytes: m rounds up to a multiple of 8.
            return SketchConfig(m=-(-found.m // 8) * 8, k=found.k, C=self.window,
                                fanout=self.fanout, seeds=self.seeds, target_fpq=self.fpq,
                                merge=self.merge)
        from cep.sketch.solver import solve

        result = solve(fpq=self.fpq, memory_bytes=self.memory_bytes,
                       n_events=self.expected_events, window=self.window,
                       query_length=self.query_length, fanout=self.fanout)
        return replace(result.to_config(seeds=self.seeds), merge=self.merge)


@dataclass(frozen=True)
class SketchConf:
    """One registered sketch.

    Attributes:
        name: The sketch's name (an identifier).
        source: The source Delta table.
        stream_col, type_col, ts_col, id_col: Source columns (identifiers).
        config: Explicit settings, or ``None`` when ``solver`` gives them.
        solver: Solver inputs, or ``None`` when ``config`` is explicit.
        nodes, meta, open, late: The state tables.
    """

    name: str
    source: TableConf
    stream_col: str
    type_col: str
    ts_col: str
    id_col: str
    config: SketchConfig | None
    solver: SolverInputs | None
    nodes: TableConf
    meta: TableConf
    open: TableConf
    late: TableConf
    description: str = ""

    def initial_config(self) -> SketchConfig:
        """The settings of a first run: the explicit ones or the solver's."""
        if self.config is not None:
            return self.config
        assert self.solver is not None
        return self.solver.solve()

    def state_tables(self) -> dict[str, TableConf]:
        """``{"nodes": ..., "meta": ..., "open": ..., "late": ...}``."""
        return {"nodes": self.nodes, "meta": self.meta, "open": self.open, "late": self.late}


def _int(spec: Mapping[str, Any], key: str, where: str, lo: int, hi: int | None = None) -> int:
    value = spec[key]
    if isinstance(value, bool) or not isinstance(value, Integral) or value < lo or \
            (hi is not None and value > hi):
        bound = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise ConfigError(f"{where}: key {key!r} expected an integer {bound}, found {value!r}")
    return int(value)


def _seeds(spec: Mapping[str, Any], where: str) -> tuple[int, ...] | None:
    if "seeds" not in spec:
        return None
    seeds = spec["seeds"]
    if not isinstance(seeds, list) or not all(
            isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= SEED_MAX for s in seeds):
        raise ConfigError(f"{where}: key 'seeds' expected a list of integers in [0, 2**31), "
                          f"found {seeds!r}")
    return tuple(seeds)


def source_table(settings: Settings, name: str) -> TableConf:
    """The configured table ``name``, or the Delta table of that name under the warehouse."""
    check_identifier(name, what="sketch source table")
    if name in settings.tables:
        return settings.tables[name]
    return TableConf(name, settings.location_under_warehouse(name), None, "sketch source")


def sketch_from_mapping(settings: Settings, name: str, spec: Mapping[str, Any],
                        where: str | None = None) -> SketchConf:
    """Validate one ``[sketches.<name>]`` section.

    Raises:
        ConfigError: a bad name, a missing or unknown key, a value of the wrong type, explicit
            settings mixed with solver inputs, or settings :class:`SketchConfig` rejects.
    """
    where = where or f"sketches.toml [sketches.{name}]"
    check_identifier(name, what="sketch name")
    if len(name) > MAX_NAME:
        raise ConfigError(f"invalid sketch name {name!r}: at most {MAX_NAME} characters (the "
                          "state tables append '_nodes')")
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{where}: expected a table of keys")
    unknown = sorted(set(spec) - _KNOWN)
    if unknown:
        raise ConfigError(f"{where}: unknown keys {unknown}; expected some of {sorted(_KNOWN)}")
    for key in ("source", *_COLUMNS, "C"):
        if key not in spec:
            raise ConfigError(f"{where}: missing key {key!r}")
    for key in ("source", *_COLUMNS):
        if not isinstance(spec[key], str):
            raise ConfigError(f"{where}: key {key!r} expected a string, found {spec[key]!r}")
        check_identifier(spec[key], what=f"{where} {key}")
    if len({spec[key] for key in _COLUMNS}) != len(_COLUMNS):
        raise ConfigError(f"{where}: stream_col, type_col, ts_col and id_col must differ")
    c = _int(spec, "C", where, 1, (1 << 31) - 1)
    fanout = _int(spec, "fanout", where, 2, 1 << 16) if "fanout" in spec else 2
    seeds = _seeds(spec, where)
    merge = spec.get("merge", "aligned")
    if merge not in MERGES:
        raise ConfigError(f"{where}: key 'merge' expected one of {', '.join(MERGES)}, found "
                          f"{merge!r}")
    explicit = [key for key in ("m", "k") if key in spec]
    solver_keys = [key for key in _SOLVER if key in spec]
    config: SketchConfig | None = None
    solver: SolverInputs | None = None
    try:
        if explicit:
            if solver_keys:
                raise ConfigError(f"{where}: give explicit settings (m, k) or solver inputs "
                                  f"({', '.join(_SOLVER)}), not both; found {solver_keys}")
            if len(explicit) != 2:
                raise ConfigError(f"{where}: explicit settings need both 'm' and 'k'")
            config = SketchConfig(m=_int(spec, "m", where, 8), k=_int(spec, "k", where, 1),
                                  C=c, fanout=fanout, seeds=seeds, merge=merge)
        else:
            missing = [key for key in ("fpq", "memory_bytes", "expected_events") if key not in spec]
            if missing:
                raise ConfigError(f"{where}: missing keys {missing}: give explicit settings "
                                  "(m, k) or the solver inputs fpq, memory_bytes, expected_events")
            fpq = spec["fpq"]
            if isinstance(fpq, bool) or not isinstance(fpq, Real) or not 0 < float(fpq) < 1:
                raise ConfigError(f"{where}: key 'fpq' expected a number in (0, 1), found {fpq!r}")
            rule = spec.get("rule", "ours")
            if rule not in RULES:
                raise ConfigError(f"{where}: key 'rule' expected one of {', '.join(RULES)}, "
                                  f"found {rule!r}")
            solver = SolverInputs(
                float(fpq), _int(spec, "memory_bytes", where, 1),
                _int(spec, "expected_events", where, 1), c,
                _int(spec, "query_length", where, 1, 64) if "query_length" in spec else 2,
                fanout, seeds, rule, merge)
            if merge == NEIGHBOURS and fanout != 2:
                raise ConfigError(f"{where}: merge = {merge!r} merges pairs, so fanout must be "
                                  f"2, found {fanout}")
    except SketchConfigError as exc:
        raise ConfigError(f"{where}: {exc.message}") from None
    tables = {suffix: TableConf(f"{name}_{suffix}",
                                settings.location_under_warehouse(f"{name}_{suffix}"), None,
                                f"sketch {name}: {suffix}") for suffix in SUFFIXES}
    description = spec.get("description", "")
    return SketchConf(name, source_table(settings, spec["source"]), spec["stream_col"],
                      spec["type_col"], spec["ts_col"], spec["id_col"], config, solver,
                      description=str(description), **tables)


def load_sketches(settings: Settings, path: str | Path | None = None) -> dict[str, SketchConf]:
    """Every sketch of ``sketches.toml`` (default: the settings' conf dir), validated."""
    path = Path(path) if path is not None else settings.conf_dir / "sketches.toml"
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"missing settings file {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"malformed settings file {path}: {exc}") from None
    sections = data.get("sketches", {})
    if not isinstance(sections, dict):
        raise ConfigError(f"{path}: [sketches] must be a table of sketches")
    return {name: sketch_from_mapping(settings, name, spec) for name, spec in sections.items()}


def load_sketch(settings: Settings, name: str, path: str | Path | None = None) -> SketchConf:
    """The registered sketch ``name``; a :class:`ConfigError` names the known ones."""
    check_identifier(name, what="sketch name")
    sketches = load_sketches(settings, path)
    if name not in sketches:
        known = ", ".join(sorted(sketches)) or "(none)"
        raise ConfigError(f"unknown sketch {name!r}: expected one of the sketches in "
                          f"sketches.toml: {known}")
    return sketches[name]
