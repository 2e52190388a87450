"""The patterns table: standing patterns an analyst registers with plain SQL (docs/standing.md).

``cep_patterns`` is a Delta table under the warehouse with one row per standing pattern, the
same fields as a ``[matches.NAME]`` entry of ``conf/matches.toml`` plus ``enabled``::

    INSERT INTO cep_patterns (name, source, pattern, key_col, enabled)
    VALUES ('slow_offers', 'offer_feed', 'PATTERN sent; answer ... WITHIN 20 DAYS', 'case_id', true)

``run-all`` reads it at the start of each run (:mod:`jobs.framework.patterns`). A row is checked
as a TOML entry is (:meth:`delta_tables.match_state.MatchConf.from_mapping`): the name, the
source under the warehouse, the pattern compiled. Every change of what a pattern finds
(``source``, ``pattern``, the columns, ``policy``, ``lateness``) starts a new *generation* of
its outputs, tables of their own: generation 1 of ``slow_offers`` writes
``slow_offers_matches``, generation 2 ``slow_offers_g2_matches``. The generations table
``cep_patterns_generations`` records which fingerprint each generation ran.

Example:
    >>> row = {"name": "slow", "source": "offers", "pattern": "PATTERN A; B WITHIN 3 EVENTS",
    ...        "key_col": "case", "enabled": True}
    >>> entry(row)["key_col"], "enabled" in entry(row)
    ('case', False)
    >>> fingerprint(entry(row)) == fingerprint({**entry(row), "description": "other words"})
    True
    >>> job_name("slow", 1), job_name("slow", 3)
    ('slow', 'slow_g3')
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from delta_tables.settings import Settings, TableConf

__all__ = ["PATTERNS", "GENERATIONS", "OUTPUT_FIELDS", "patterns_table", "generations_table",
           "entry", "fingerprint", "job_name", "GENERATION_SUFFIX"]

PATTERNS = (("name", "STRING"), ("source", "STRING"), ("pattern", "STRING"),
            ("key_col", "STRING"), ("ts_col", "STRING"), ("type_col", "STRING"),
            ("id_col", "STRING"), ("policy", "STRING"), ("lateness", "STRING"),
            ("enabled", "BOOLEAN"), ("description", "STRING"))
"""``cep_patterns``: one row per standing pattern; NULL optional fields take their defaults
(``ts``, ``type``, ``id``, the pattern's policy, lateness 0); a NULL ``enabled`` is enabled."""

GENERATIONS = (("name", "STRING"), ("generation", "INT"), ("job", "STRING"),
               ("fingerprint", "STRING"), ("source", "STRING"), ("pattern", "STRING"),
               ("policy", "STRING"), ("patterns_version", "BIGINT"),
               ("registered_at", "TIMESTAMP"))
"""``cep_patterns_generations``: appended when a pattern's fingerprint is new; ``job`` names its
tables (``<job>_matches``, ...), ``patterns_version`` is the version of ``cep_patterns`` that
first held it."""

OUTPUT_FIELDS = ("source", "pattern", "key_col", "ts_col", "type_col", "id_col", "policy",
                 "lateness")
"""The fields whose change starts a new generation: everything that decides what is found."""

GENERATION_SUFFIX = re.compile(r"_g\d+$")
"""How a later generation's job name ends; a pattern's own name may not end so."""


def patterns_table(settings: Settings) -> TableConf:
    """``cep_patterns`` under the warehouse."""
    return TableConf("cep_patterns", settings.warehouse_dir / "cep_patterns")


def generations_table(settings: Settings) -> TableConf:
    """``cep_patterns_generations`` under the warehouse."""
    return TableConf("cep_patterns_generations",
                     settings.warehouse_dir / "cep_patterns_generations")


def entry(row: Mapping[str, Any]) -> dict[str, Any]:
    """The ``conf/matches.toml`` entry a patterns-table row stands for: its set fields but
    ``name`` and ``enabled`` (NULLs take the TOML defaults)."""
    return {k: v for k, v in row.items()
            if k not in ("name", "enabled") and v is not None and k in dict(PATTERNS)}


def fingerprint(fields: Mapping[str, Any]) -> str:
    """A digest of the fields that decide what a pattern finds (:data:`OUTPUT_FIELDS`); the
    description and ``enabled`` do not count. The pattern text counts as written: a change of
    its spacing is a new generation too."""
    kept = {k: fields.get(k) for k in OUTPUT_FIELDS}
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()[:16]


def job_name(name: str, generation: int) -> str:
    """The job (and table prefix) of ``generation`` of pattern ``name``: the name itself for
    the first, ``<name>_g<n>`` after."""
    return name if generation == 1 else f"{name}_g{generation}"
