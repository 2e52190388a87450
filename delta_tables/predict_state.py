"""The Delta state of a registered prediction set (``conf/predictions.toml``; docs/predict-jobs.md).

A prediction set ``<name>`` runs one or more named subscriptions (P-ToPSS, :mod:`cep.predict`)
over one source table, per key, and keeps in Delta everything a later run or query needs:

* ``<name>_subscriptions`` (:data:`SUBSCRIPTIONS`): one row per subscription: its name
  (``sub``), the pattern text, the compiled tree, its sequence machines (``leaves``), its
  primitive subscriptions and the attributes that split keys into instances. Written by the
  first run; later runs refuse a ``conf`` that no longer agrees with it.
* ``<name>_states`` (:data:`STATES`): every machine state seen so far: ``sub, leaf, mask``
  (the state's live-position mask, :mod:`cep.predict.machine`), its readable ``label``, its
  ``progress`` (primitives matched) and whether it is ``accepting``.
* ``<name>_models`` (:data:`MODELS`): one row per subscription: ``model`` = the checksummed blob
  :meth:`cep.predict.Model.to_bytes` of the transition counts trained on every event processed
  so far, ``events`` its number of training events, ``source_version`` the source version it is
  complete up to. ``SELECT model FROM <name>_models VERSION AS OF v`` is the model of then.
* ``<name>_instances`` (:data:`INSTANCES`): one row per subscription, key and instance: the
  :class:`cep.predict.InstanceState` blob the next run starts from, its readable ``label`` and
  ``progress``, the timestamp of its last event (``last_ts``), and how many events it has seen
  and how often the subscription matched in it.
* ``<name>_late`` (:data:`LATE`): source rows the job did not run (late or incomplete), with
  the run and the source version they arrived in; never dropped silently.
* ``<name>_meta`` (:data:`META`): one row, written LAST by every run: the source version the
  state is complete up to, the run, and the version it left in every other table.

Keys are STRING (the key column cast to string); ``instance`` is the JSON array of the
instance's join-variable values (``[]`` for a subscription without join variables), so the
values round-trip exactly; ``last_ts`` and the late table's ``ts`` are BIGINT: microseconds
since the epoch for a TIMESTAMP or DATE ``ts_col``, the raw value for an integer one.

Example:
    >>> from delta_tables.settings import load_settings
    >>> s = load_settings(overrides={"data_dir": "/tmp/cep-doc"})
    >>> conf = PredictionConf.from_mapping(s, "p", {"source": "daily_temperatures",
    ...     "key_col": "city", "subscriptions": {"hot2": "PATTERN H, H DEFINE H AS tmax_c > 30"}})
    >>> conf.tables()["models"].name, conf.attributes
    ('p_models', ('tmax_c',))
    >>> subscription_rows(conf)[0][:3]
    ('hot2', 'PATTERN H, H DEFINE H AS tmax_c > 30', 'H1, H2')
    >>> instance_text(("10.0.0.1",)), instance_values('["10.0.0.1"]')
    ('["10.0.0.1"]', ('10.0.0.1',))
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from cep.errors import CepError, ConfigError
from delta_tables.settings import Settings, TableConf, check_identifier

if TYPE_CHECKING:
    from cep.predict import Model, Subscription

SUFFIXES = ("subscriptions", "states", "models", "instances", "late", "meta")
"""The state tables of a prediction set: ``<name>_<suffix>``."""
MAX_NAME = 100
MAX_SUBSCRIPTIONS = 64
_KNOWN = {"source", "key_col", "ts_col", "id_col", "type_col", "description", "subscriptions"}

SUBSCRIPTIONS = (("sub", "STRING"), ("pattern", "STRING"), ("tree", "STRING"),
                 ("leaves", "ARRAY<STRING>"), ("primitives", "ARRAY<STRING>"),
                 ("instance_attrs", "ARRAY<STRING>"))
STATES = (("sub", "STRING"), ("leaf", "INT"), ("mask", "BIGINT"), ("label", "STRING"),
          ("progress", "INT"), ("accepting", "BOOLEAN"))
MODELS = (("sub", "STRING"), ("model", "BINARY"), ("events", "BIGINT"),
          ("transitions", "BIGINT"), ("source_version", "BIGINT"))
INSTANCES = (("sub", "STRING"), ("key", "STRING"), ("instance", "STRING"), ("state", "BINARY"),
             ("label", "STRING"), ("progress", "INT"), ("last_ts", "BIGINT"),
             ("events", "BIGINT"), ("matches", "BIGINT"))
LATE = (("run_id", "STRING"), ("source_version", "BIGINT"), ("key", "STRING"),
        ("ts", "BIGINT"), ("id", "BIGINT"), ("reason", "STRING"), ("last_ts", "BIGINT"))
"""``reason``: ``late`` (``ts`` before ``last_ts``, the newest timestamp of the key in an earlier
source commit) or ``incomplete`` (NULL key or timestamp; ``last_ts`` NULL)."""
META = (("prediction", "STRING"), ("source", "STRING"), ("key_col", "STRING"),
        ("ts_col", "STRING"), ("id_col", "STRING"), ("type_col", "STRING"),
        ("source_version", "BIGINT"), ("run_id", "STRING"), ("subscriptions_version", "BIGINT"),
        ("states_version", "BIGINT"), ("models_version", "BIGINT"),
        ("instances_version", "BIGINT"), ("late_version", "BIGINT"), ("events_total", "BIGINT"),
        ("late_total", "BIGINT"))
"""``source_version``: the last source version fully processed; ``*_version``: the version of
each state table that run left (NULL: never written); ``events_total`` / ``late_total``: source
rows run / set aside so far."""
COLUMNS = {"subscriptions": SUBSCRIPTIONS, "states": STATES, "models": MODELS,
           "instances": INSTANCES, "late": LATE, "meta": META}
MERGE_KEYS = {"subscriptions": ["sub"], "states": ["sub", "leaf", "mask"], "models": ["sub"],
              "instances": ["sub", "key", "instance"]}


class PredictStateError(CepError):
    """The stored state of a prediction set is inconsistent (a missing model row, a key or
    instance that cannot be read back)."""

    code = "CEP-PRED-044"


@dataclass(frozen=True)
class PredictionConf:
    """One registered prediction set.

    Attributes:
        name: the set's name (an identifier; tables are ``<name>_<suffix>``).
        source: the source table (append-only, change data feed on).
        key_col: one run of every subscription per value (cast to STRING).
        ts_col: TIMESTAMP, DATE or integer event time.
        id_col: optional integer tie-break among events of a key with equal timestamps.
        type_col: optional event type (for classes without DEFINE).
        subscriptions: ``(sub name, pattern text)`` in registration order.
    """

    name: str
    source: TableConf
    key_col: str
    ts_col: str
    id_col: str | None
    type_col: str | None
    subscriptions: tuple[tuple[str, str], ...]
    settings: Settings
    description: str = ""

    def tables(self) -> dict[str, TableConf]:
        """The state tables by suffix, each directly under the warehouse."""
        return {suffix: TableConf(f"{self.name}_{suffix}",
                                  self.settings.warehouse_dir / f"{self.name}_{suffix}")
                for suffix in SUFFIXES}

    def compiled(self) -> dict[str, "Subscription"]:
        """The compiled subscriptions by name."""
        from cep.predict import compile_subscription

        return {sub: compile_subscription(text) for sub, text in self.subscriptions}

    @property
    def attributes(self) -> tuple[str, ...]:
        """Lower-cased attributes the subscriptions read (predicates and instance attributes),
        in order of first mention; ``ts`` and, with a ``type_col``, ``type`` are not columns."""
        from cep.lang.ast import AttrRef

        seen: dict[str, None] = {}
        for sub in self.compiled().values():
            for prim in sub.primitives:
                for ref in (prim.condition.refs if prim.condition is not None else ()):
                    if isinstance(ref, AttrRef):
                        seen.setdefault(ref.attr.lower())
            for attr in sub.instance_attrs:
                seen.setdefault(attr.lower())
        return tuple(seen)

    @staticmethod
    def from_mapping(settings: Settings, name: str, entry: Mapping[str, Any]) -> "PredictionConf":
        """A set from its ``conf/predictions.toml`` entry; :class:`ConfigError` on anything wrong,
        a pattern error (with code and caret) for a subscription that does not compile."""
        check_identifier(name, what="prediction set name")
        if len(name) > MAX_NAME:
            raise ConfigError(f"prediction set name {name!r} is longer than {MAX_NAME} characters")
        unknown = sorted(set(entry) - _KNOWN)
        if unknown:
            raise ConfigError(f"prediction set {name}: unknown keys {unknown}; known: "
                              f"{sorted(_KNOWN)}")
        for needed in ("source", "key_col"):
            if not isinstance(entry.get(needed), str):
                raise ConfigError(f"prediction set {name}: {needed} must be a string")
        source_name = check_identifier(entry["source"], what="source table")
        source = (settings.tables[source_name] if source_name in settings.tables else
                  TableConf(source_name, settings.warehouse_dir / source_name))
        key_col = check_identifier(entry["key_col"], what="key_col")
        ts_col = check_identifier(entry.get("ts_col", "ts"), what="ts_col")
        optional = {}
        for col in ("id_col", "type_col"):
            value = entry.get(col)
            optional[col] = None if value is None else check_identifier(value, what=col)
        subs = entry.get("subscriptions")
        if not isinstance(subs, Mapping) or not subs:
            raise ConfigError(f"prediction set {name}: subscriptions must be a table of "
                              "name = \"PATTERN ...\" entries (at least one)")
        if len(subs) > MAX_SUBSCRIPTIONS:
            raise ConfigError(f"prediction set {name}: at most {MAX_SUBSCRIPTIONS} "
                              f"subscriptions, found {len(subs)}")
        pairs = []
        for sub, text in subs.items():
            check_identifier(sub, what=f"subscription name in prediction set {name}")
            if not isinstance(text, str):
                raise ConfigError(f"prediction set {name}: subscription {sub} must be a pattern "
                                  f"string, found {type(text).__name__}")
            pairs.append((sub, text))
        description = entry.get("description", "")
        if not isinstance(description, str):
            raise ConfigError(f"prediction set {name}: description must be a string")
        conf = PredictionConf(name, source, key_col, ts_col, optional["id_col"],
                              optional["type_col"], tuple(pairs), settings, description)
        for sub, compiled in conf.compiled().items():  # a bad subscription fails here
            if compiled.composite:
                # A composite run returns no instance states (cep/predict/composite.py), so an
                # incremental run could not go on from the last one: it would start over.
                raise ConfigError(f"prediction set {name}: subscription {sub} has '&' / '|' steps "
                                  "inside a sequence; a prediction set cannot keep its state "
                                  "yet (predict_match takes it: docs/predict.md, section 5.1)")
            untyped = [p.cls for p in compiled.primitives if p.condition is None]
            if untyped and conf.type_col is None:
                raise ConfigError(f"prediction set {name}: subscription {sub} has classes without "
                                  f"DEFINE ({', '.join(untyped)}); they need a type_col")
        for attr in conf.attributes:
            check_identifier(attr, what=f"attribute of prediction set {name}")
        return conf


def load_prediction(settings: Settings, name: str) -> PredictionConf:
    """The prediction set ``name`` of ``<conf_dir>/predictions.toml``."""
    path = settings.conf_dir / "predictions.toml"
    try:
        entries = tomllib.loads(path.read_text(encoding="utf-8")).get("predictions", {})
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    if name not in entries:
        raise ConfigError(f"unknown prediction set {name!r}; registered in {path.name}: "
                          f"{', '.join(sorted(entries)) or '(none)'}")
    return PredictionConf.from_mapping(settings, name, entries[name])


def tree_text(node: Any) -> str:
    """A compiled subscription tree as text: sequences as written, ``&`` / ``|`` parenthesised."""
    from cep.predict import Sequence

    if isinstance(node, Sequence):
        return node.text
    return "(" + f" {node.op} ".join(tree_text(p) for p in node.parts) + ")"


def subscription_rows(conf: PredictionConf) -> list[tuple[Any, ...]]:
    """The ``<name>_subscriptions`` rows (:data:`SUBSCRIPTIONS` order) of the registration."""
    rows = []
    for sub, compiled in conf.compiled().items():
        rows.append((sub, compiled.text, tree_text(compiled.root),
                     [leaf.text for leaf in compiled.leaves],
                     [prim.text for prim in compiled.primitives],
                     list(compiled.instance_attrs)))
    return rows


def state_rows(sub: str, compiled: "Subscription", model: "Model",
               known: set[tuple[int, int]] | frozenset = frozenset()) -> list[tuple[Any, ...]]:
    """``<name>_states`` rows (:data:`STATES` order) of every machine state the model has seen
    (the start state and every ``from``/``to`` mask of its counts), except the ``(leaf, mask)``
    pairs in ``known``; sorted by ``(leaf, mask)``."""
    from cep.predict import SequenceMachine

    rows = []
    for li, (leaf, trained) in enumerate(zip(compiled.leaves, model.leaves)):
        machine = SequenceMachine.from_sequence(leaf)
        counts = trained.counts
        masks = {machine.start, *counts.from_mask.tolist(), *counts.to_mask.tolist()}
        for mask in sorted(int(m) for m in masks):
            if (li, mask) not in known:
                rows.append((sub, li, mask, machine.label(mask), machine.progress(mask),
                             machine.accepting(mask)))
    return rows


def empty_model(compiled: "Subscription") -> "Model":
    """The model of no training events."""
    from cep.predict import LeafModel, Model

    return Model(compiled.text, tuple(LeafModel.empty() for _ in compiled.leaves))


def instance_text(values: tuple[Any, ...]) -> str:
    """The ``instance`` column: the JSON array of the join-variable values (``[]`` for none).

    Raises:
        PredictStateError: a value JSON cannot hold exactly (a date, bytes, ...).
    """
    if not values:
        return "[]"
    plain = []
    for v in values:
        if isinstance(v, float) and math.isnan(v):
            v = None
        if v is not None and not isinstance(v, (str, bool, int, float)):
            raise PredictStateError(f"instance value {v!r} of type {type(v).__name__} cannot be "
                                    "stored; join variables must bind STRING, integer, DOUBLE "
                                    "or BOOLEAN attributes")
        plain.append(v)
    return json.dumps(plain, ensure_ascii=False)


def instance_values(text: str) -> tuple[Any, ...]:
    """The join-variable values of an ``instance`` column value (inverse of :func:`instance_text`).

    Raises:
        PredictStateError: not a JSON array.
    """
    try:
        values = json.loads(text)
    except (TypeError, ValueError):
        values = None
    if not isinstance(values, list):
        raise PredictStateError(f"instance {text!r} is not a JSON array of values")
    return tuple(values)
