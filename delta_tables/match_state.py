"""The Delta state of a standing pattern (``conf/matches.toml``): its matches, timeouts, and
what each key carries between runs (docs/standing.md).

A standing pattern ``<name>`` keeps five tables under the warehouse:

* ``<name>_matches``: the rows ``match_seq`` returns for the pattern over the source, the key
  under its own column name (and type), ``match_id``, ``start_ts``, ``end_ts``, ``event_ids``,
  ``variables``, ``n_events``, plus ``run_id``, the run that found the match; a match is
  appended once, by the run whose watermark closes its start's window;
* ``<name>_timeouts``: the key, ``start_ts``, ``closed_at`` (when the window closed),
  ``event_ids`` and ``variables`` of the longest prefix that matched, ``components`` (how many
  components of the pattern it holds), ``run_id``;
* ``<name>_open``: one row per key: the key, ``resolve_at`` (the watermark at which its next
  open start resolves; NULL: only a new event can) and ``state``, the carried events, frontier and
  match count as a versioned, checksummed blob (:class:`cep.match.run.carried.Carried`);
* ``<name>_late``: the source events not applied (``late``: older than the watermark, or
  sorting at or before a start of its key already resolved; ``incomplete``: a NULL key,
  timestamp, id or type), with the run and commit they came in;
* ``<name>_meta``: one row, written last (as every state job's: docs/jobs.md).

Example:
    >>> from delta_tables.settings import load_settings
    >>> s = load_settings(overrides={"data_dir": "/tmp/cep-doc"})
    >>> conf = MatchConf.from_mapping(s, "unanswered", {"source": "offers", "key_col": "case",
    ...     "pattern": "PATTERN O_Sent s; O_Accepted a WITHIN 20 DAYS"})
    >>> conf.tables()["timeouts"].name, conf.lateness
    ('unanswered_timeouts', None)
    >>> MatchConf.from_mapping(s, "x", {"source": "offers", "key_col": "case",
    ...     "pattern": "PATTERN A; B"})
    Traceback (most recent call last):
    ...
    cep.errors.ConfigError: CEP-CONF-001: standing pattern x: CEP-MATCH-005: line 1, column 1: a standing pattern needs a WITHIN window: without one a partial match never times out and every key's events would be kept forever
        PATTERN A; B
        ^~~~~~~~~~~~
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cep.errors import CepError, ConfigError
from cep.lang.ast import Span
from cep.lang.policy import POLICIES
from cep.match.compile.standing import StandingProgram, compile_standing
from delta_tables.graph_state import parse_lateness
from delta_tables.settings import Settings, TableConf, check_identifier

SUFFIXES = ("matches", "timeouts", "open", "late", "meta")
"""The state tables of a standing pattern, ``<name>_<suffix>``; ``meta`` is written last."""
_KNOWN = {"source", "pattern", "key_col", "ts_col", "type_col", "id_col", "policy", "lateness",
          "description"}

LATE = (("run_id", "STRING"), ("source_version", "BIGINT"), ("key", "STRING"), ("ts", "BIGINT"),
        ("id", "BIGINT"), ("reason", "STRING"), ("watermark", "BIGINT"))
"""``<name>_late``: as every job's (docs/watermarks.md); ``watermark`` is the bound the event
missed (for an event behind its key's resolved starts, the time of the last of them)."""
META = (("standing", "STRING"), ("source", "STRING"), ("pattern", "STRING"),
        ("policy", "STRING"), ("key_col", "STRING"), ("source_version", "BIGINT"),
        ("updated_at", "TIMESTAMP"), ("source_from", "BIGINT"), ("run_id", "STRING"),
        *((f"{suffix}_version", "BIGINT") for suffix in SUFFIXES[:-1]),
        ("lateness", "STRING"), ("max_ts", "BIGINT"), ("watermark", "BIGINT"),
        ("events_read_total", "BIGINT"), ("late_total", "BIGINT"), ("matches_total", "BIGINT"),
        ("timeouts_total", "BIGINT"), ("keys", "BIGINT"))
"""``<name>_meta``, one row: the source version the state is complete up to, the run, the
version of every other table, the lateness, the newest timestamp read (``max_ts``) and the
watermark (``max_ts - lateness``) in the state's units, running counts."""


@dataclass(frozen=True)
class MatchConf:
    """One standing pattern (``[matches.<name>]`` of ``conf/matches.toml``).

    Attributes:
        name: a SQL identifier; its tables are ``<name>_<suffix>``.
        source: the source Delta table (of conf/tables.toml, or directly under the warehouse).
        pattern: the pattern text (the language of ``match_seq``), compiled at load time.
        policy: the selection policy (None: the pattern's, else skip-till-next-match).
        key_col, ts_col, type_col, id_col: as ``match_seq``'s arguments.
        lateness: how far behind the newest earlier event an event may arrive and still be
            matched (a span, ``"2 HOURS"``; None: 0, an event older than any earlier commit's
            newest is late).
        settings: the settings the tables resolve under.
    """

    name: str
    source: TableConf
    pattern: str
    policy: str | None
    key_col: str
    ts_col: str
    type_col: str
    id_col: str
    settings: Settings
    lateness: Span | None = None

    @property
    def program(self) -> StandingProgram:
        """The compiled standing pattern."""
        return compile_standing(self.pattern, policy=self.policy)

    def tables(self) -> dict[str, TableConf]:
        """The state tables by suffix, each under the warehouse, ``meta`` last."""
        return {suffix: TableConf(f"{self.name}_{suffix}",
                                  self.settings.warehouse_dir / f"{self.name}_{suffix}")
                for suffix in SUFFIXES}

    def lateness_amount(self, numeric_ts: bool) -> int:
        """The lateness in the state's units (microseconds, or raw units): 0 without one.

        Raises:
            ConfigError: a time lateness for a numeric ``ts_col``, or UNITS for a TIMESTAMP.
        """
        if self.lateness is None:
            return 0
        if numeric_ts != (self.lateness.kind == "UNITS"):
            raise ConfigError(f"standing pattern {self.name}: lateness {self.lateness} does not "
                              f"fit the {'numeric' if numeric_ts else 'TIMESTAMP'} column "
                              f"{self.ts_col}")
        return int(self.lateness.value if numeric_ts else self.lateness.microseconds() or 0)

    @staticmethod
    def from_mapping(settings: Settings, name: str, entry: Mapping[str, Any]) -> MatchConf:
        """A standing pattern from its ``conf/matches.toml`` entry; :class:`ConfigError` on
        anything wrong, the pattern's own error (code, line, column, caret) included."""
        check_identifier(name, what="standing pattern name")
        if len(name) > 100:
            raise ConfigError(f"standing pattern name {name!r} is longer than 100 characters")
        unknown = sorted(set(entry) - _KNOWN)
        if unknown:
            raise ConfigError(f"standing pattern {name}: unknown keys {unknown}; known: "
                              f"{sorted(_KNOWN)}")
        for needed in ("source", "pattern", "key_col"):
            if not isinstance(entry.get(needed), str):
                raise ConfigError(f"standing pattern {name}: {needed} must be a string")
        source_name = check_identifier(entry["source"], what="source table")
        source = (settings.tables[source_name] if source_name in settings.tables else
                  TableConf(source_name, settings.warehouse_dir / source_name))
        cols = {c: check_identifier(entry.get(c, default), what=c) for c, default in
                (("key_col", None), ("ts_col", "ts"), ("type_col", "type"), ("id_col", "id"))}
        policy = entry.get("policy")
        if policy is not None and policy not in POLICIES:
            raise ConfigError(f"standing pattern {name}: policy {policy!r}: expected one of "
                              f"{', '.join(POLICIES)}")
        try:
            lateness = parse_lateness(entry["lateness"]) if "lateness" in entry else None
            conf = MatchConf(name, source, entry["pattern"], policy, cols["key_col"],
                             cols["ts_col"], cols["type_col"], cols["id_col"], settings,
                             lateness)
            conf.program  # compiled now: a bad pattern fails before anything runs
        except CepError as err:
            raise ConfigError(f"standing pattern {name}: {err}") from None
        return conf


def load_match(settings: Settings, name: str) -> MatchConf:
    """The standing pattern ``name`` of ``conf/matches.toml``; ConfigError when it is not
    registered there."""
    import tomllib

    path = settings.conf_dir / "matches.toml"
    try:
        entries = tomllib.loads(path.read_text(encoding="utf-8")).get("matches", {})
    except FileNotFoundError:
        entries = {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    if name not in entries:
        known = ", ".join(sorted(entries)) or "none"
        raise ConfigError(f"no standing pattern {name!r} in {path} (registered: {known})")
    return MatchConf.from_mapping(settings, name, entries[name])
