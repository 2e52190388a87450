"""Spark adapter of ``predict_model``: a ``predict_match`` model trained in one SQL statement.

``predict_match`` trains each stream's chain on that stream's own events unless it is given a
model; this function trains one model over every key of its input, in the format the
prediction job writes (:meth:`cep.predict.Model.to_bytes`), and returns it as one row, so an
analyst can keep models with plain SQL::

    CREATE TABLE models AS
    SELECT 'heat' AS name, * FROM predict_model('PATTERN H, H, H DEFINE H AS tmax_c > 30',
                                                'city', TABLE(daily_temperatures))

    SELECT * FROM predict_match('PATTERN H, H, H DEFINE H AS tmax_c > 30', 'city',
                                TABLE(daily_temperatures), lookahead => 5,
                                model => (SELECT model FROM models WHERE name = 'heat'))

The analysis is ``predict_match``'s (:func:`udfs.predict_match.select_events`): the same
columns, the same checks and codes, the same reading of every timestamp type. Training is
P-ToPSS's (Muthusamy, Liu and Jacobsen, DEBS 2010, section 4: transition counts of each
sequence machine and the frequencies of the event signatures), run by the core's
:func:`cep.predict.predict`; counts add up, so the model of the whole input is the sum of the
models of any split of its keys (:meth:`cep.predict.Model.merge`).

Partitions: the whole input is one task, sorted by Spark by ``(key, ts, id)``. The task streams
it in chunks of about ``CHUNK_ROWS`` rows: the keys that have ended in a chunk are trained in one
core call and merged into the running model, the rows of the key still arriving wait for the
next chunk. Memory is a chunk plus the largest key; time is one core's (docs/predict.md,
"Models from SQL", measured in BENCHMARKS.md). An empty input gives no row (Spark runs no task
for it), so ``model => (SELECT model FROM ...)`` over it is NULL, which ``predict_match``
refuses (``CEP-SQL-050``) rather than training per stream without a word.

Example (the output schema needs no Spark):
    >>> OUTPUT
    'subscription STRING, model BINARY, events BIGINT, keys BIGINT'
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cep.predict import Events, Model, predict
from cep.predict.model import LeafModel
from cep.signature import SIGNATURES
from udfs.chunks import CHUNK_ROWS, ChunkedStream, last_start, release_memory
from udfs.facts import check_classes, read_facts
from udfs.predict_match import (PredictCallPlan, PredictMatchArgumentError, _compiled, _order,
                                _values, check_call, check_timestamps, select_events)
from udfs.shell import (PlannedResult, TableFunction, grouping_key, keyed, planned,
                        table_function, utc_micros)

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.udtf import UserDefinedTableFunction

OUTPUT = "subscription STRING, model BINARY, events BIGINT, keys BIGINT"
"""One row: the subscription text the model is for, the model blob, its training events (of
the first sequence machine, :attr:`cep.predict.Model.events`) and the keys trained."""


@dataclass(frozen=True)
class ModelCallPlan(PredictCallPlan):
    """``predict_match``'s plan with the chunk size of the training stream."""

    chunk_rows: int = CHUNK_ROWS


def analyze_call(*args: Any, **kwargs: Any) -> PlannedResult:
    """The analysis of one call: ``predict_match``'s checks, one partition sorted by key."""
    from pyspark.sql.types import BinaryType, LongType, StringType, StructField, StructType

    err = PredictMatchArgumentError
    signature = SIGNATURES["predict_model"]
    call = signature.bind(args, kwargs, err)
    given = signature.values(call, err)
    events = call.get("events")
    if events is None or not events.isTable:
        raise err("argument events must be a TABLE(...) argument")
    text = check_call(given["subscription"], 1, None, None, None, None)[0]
    chosen = select_events(text, events, given, check_absent=not given["allow_absent"])
    key = chosen.key_field.name if chosen.key_field is not None else None
    plan = ModelCallPlan(text, 1, 0.0, "keys", "independent", 0.0, chosen.ts_kind,
                         chosen.id_field is not None, chosen.needs_type, key, chosen.attributes,
                         classes=chosen.classes, chunk_rows=given["chunk_rows"] or CHUNK_ROWS)
    # One partition, sorted by key so a chunk's ended keys are whole; the task sorts each
    # key's rows by (ts, id) itself (udfs.predict_match._order).
    order = ["__key"] if key is not None else []
    schema = StructType([StructField("subscription", StringType()),
                         StructField("model", BinaryType()), StructField("events", LongType()),
                         StructField("keys", LongType())])
    return keyed(schema, chosen.select, plan, None, 1,
                 order=[_selected(chosen.select, name) for name in order])


def _selected(select: list[Any], alias: str) -> str:
    """The SQL expression selected under ``alias``."""
    return next(col.name for col in select if col.alias == alias)


class Training(ChunkedStream):
    """One task's sorted rows trained chunk by chunk into one model (module docstring)."""

    def __init__(self, plan: ModelCallPlan) -> None:
        super().__init__(plan.chunk_rows)
        self.plan = plan
        self.model: Model | None = None
        self.keys = 0
        self.checked = False

    def _flush(self, final: bool) -> Iterator[pa.Table]:
        import numpy as np
        import pyarrow as pa

        if self.batches:
            table = pa.concat_tables([b if isinstance(b, pa.Table) else pa.Table.from_batches([b])
                                      for b in self.batches])
            cut = table.num_rows
            if not final and self.plan.key is not None:
                cut = last_start(table.column("__key"))
            elif not final:
                cut = 0  # one stream: it ends with the partition
            if cut:
                self._train(table.slice(0, cut))
            rest = table.slice(cut)
            # a copy: a slice would keep the whole chunk's memory alive
            self.batches = ([rest.take(pa.array(np.arange(rest.num_rows, dtype=np.int64)))]
                            if rest.num_rows else [])
            # Only new rows count towards the next flush: a key longer than a chunk is copied
            # once per chunk_rows new rows, not once per batch.
            self.rows = 0
            release_memory()
        if final:
            yield self._row()

    def _train(self, table: pa.Table) -> None:
        """Train the whole keys of ``table`` and add their counts to the model."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        plan = self.plan

        def column(name: str) -> pa.Array:
            array = table.column(name).combine_chunks()
            return array.dictionary_decode() if pa.types.is_dictionary(array.type) else array

        if plan.classes and not self.checked:
            check_classes(plan.query, plan.classes, read_facts(table), column("__type"))
        self.checked = True
        ts_col = utc_micros(column("__ts"))
        ids = _values(column("__id")) if plan.has_id else None
        codes = None
        if plan.key is not None:
            # -0.0 and 0.0, and all NaNs, are one key as in GROUP BY (issue 47)
            encoded = pc.dictionary_encode(grouping_key(column("__key")), null_encoding="encode")
            codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            self.keys += len(encoded.dictionary)
        else:
            self.keys = 1
        if ts_col.null_count:
            check_timestamps(ts_col.to_pylist(), None if ids is None else ids.tolist(),
                             None if codes is None else
                             encoded.dictionary.take(pa.array(codes)).to_pylist())
        ts = ts_col.to_numpy(zero_copy_only=False)
        ts = ts.astype(np.float64 if plan.ts_kind == "float" else np.int64)
        order = _order(ts, ids, codes)
        types = _values(column("__type"), strings=True)[order] if plan.has_type else None
        attrs = {attr: _values(column(f"__a{i}"))[order] for i, attr in enumerate(plan.attributes)}
        events = Events.from_columns(ts=ts[order], keys=None if codes is None else codes[order],
                                     ids=None if ids is None else ids[order], types=types,
                                     attrs=attrs)
        self.model = _merged(self.model, predict(_compiled(plan.query), events,
                                                 lookahead=1).trained)

    def _row(self) -> pa.Table:
        import numpy as np
        import pyarrow as pa

        if self.model is None:  # no rows: the model that has seen nothing
            none = np.zeros(0, dtype=np.int64)
            self.model = _merged(None, predict(_compiled(self.plan.query), Events.from_columns(
                ts=none, keys=none, types=np.zeros(0, dtype=object),
                attrs={a: np.zeros(0, dtype=object) for a in self.plan.attributes}),
                lookahead=1).trained)

        return pa.table({"subscription": pa.array([self.model.subscription], pa.string()),
                         "model": pa.array([self.model.to_bytes()], pa.binary()),
                         "events": pa.array([self.model.events], pa.int64()),
                         "keys": pa.array([self.keys], pa.int64())})


def _merged(model: Model | None, trained: Model) -> Model:
    """``trained`` added to ``model``; the first is merged into an empty model, so the blob is
    the canonical one (sorted, unique counts) the prediction job writes."""
    if model is None:
        model = Model(trained.subscription, tuple(LeafModel.empty() for _ in trained.leaves))
    return model.merge(trained)


class PredictModel(TableFunction):
    """The ``predict_model`` handler: the one task that trains the whole input."""

    analyze = staticmethod(planned(analyze_call))

    def streamed(self) -> Training:
        return Training(self.plan)


def predict_model_udtf() -> UserDefinedTableFunction:
    """The Spark UDTF object of ``predict_model``."""
    return table_function(PredictModel)


__all__ = ["OUTPUT", "PredictModel", "Training", "analyze_call", "predict_model_udtf"]
