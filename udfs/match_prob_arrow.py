"""Spark adapter of ``match_prob_arrow``: ``match_prob`` with the stream rows moved as Arrow batches.

The same answers as ``match_prob`` (same argument checks, same stream builders, same
:func:`cep.prob.match_prob`), for large tables: the row UDTF pays for one Python row per
``(t, value, p)`` (BENCHMARKS.md), this one receives Arrow record batches and hands whole numpy
columns to :func:`cep.prob.from_long`. Arrow UDTFs cannot have ``analyze`` in Spark 4.2
(SPARK-53286), hence:

* positional arguments, the table last: ``match_prob_arrow(pattern, overlap, threshold, window,
  output, pstream)``; ``overlap``, ``threshold``, ``window`` and ``output`` may be NULL (the
  defaults of ``match_prob``: ``'single'``, 0, the pattern's ``WITHIN n EVENTS``,
  ``'groups'``);
* the caller partitions the table: ``TABLE(t) PARTITION BY stream ORDER BY t`` (every row of a
  stream in one partition; a bucket such as ``PARTITION BY pmod(hash(stream), 8)`` also works,
  the rows are grouped by stream here; the order is not needed, the stream builder sorts);
* fixed column names: ``stream, t, value, p`` (long layout) or ``stream, t, probs`` with
  ``probs MAP<STRING, DOUBLE>`` (wide layout, chosen when such a column exists); other columns
  are ignored; DECIMAL / FLOAT probabilities are read as DOUBLE;
* the arguments are checked when the first partition runs (same codes as ``match_prob``:
  ``CEP-PAT-...`` / ``CEP-PROB-001..003`` with caret, ``CEP-PROB-011``), a table without the
  needed columns is ``CEP-SQL-041``, a stream that is not a probabilistic stream
  ``CEP-PROB-010`` naming it;
* one output schema for both outputs, :data:`RETURN_TYPE` (``stream`` as STRING): with
  ``'groups'`` ``match_id`` and ``values`` are NULL, with ``'matches'`` ``n_matches``,
  ``core_start`` and ``core_end`` are NULL.

    SELECT * FROM match_prob_arrow('PATTERN a, b+, c', 'single', 0.01, 10, 'groups',
                                   TABLE(readings) PARTITION BY stream ORDER BY t)

The wide layout is flattened to long arrays with Arrow (the map's offsets, keys and items), not
one Python dict per row; should a wide stream fail (or lose a time point: a NULL or empty map),
it is rebuilt with :func:`cep.prob.from_wide` so that the error is the one ``match_prob`` gives.

Example (no Spark needed: the column check is a plain function):
    >>> import pyarrow as pa
    >>> layout_of(pa.schema([("Stream", pa.string()), ("t", pa.int32()),
    ...                      ("probs", pa.map_(pa.string(), pa.float64()))]))
    'wide'
    >>> layout_of(pa.schema([("stream", pa.string()), ("t", pa.int64()), ("value", pa.string())]))
    Traceback (most recent call last):
    ...
    udfs.match_prob_arrow.ProbTableError: CEP-SQL-041: match_prob_arrow needs the columns stream, t, value, p (long layout: ...); missing: p; the table has: stream string, t int64, value string
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Iterator

from cep.errors import CepError
from udfs.match_prob import ProbCallPlan, answer_rows, check_arguments
from udfs.shell import key_strings as _key_strings, scalar as _scalar

RETURN_TYPE = ("stream STRING, match_id BIGINT, t_start BIGINT, t_end BIGINT, "
               "probability DOUBLE, n_matches BIGINT, core_start BIGINT, core_end BIGINT, "
               "values ARRAY<STRING>")
_LAYOUTS = ("match_prob_arrow needs the columns stream, t, value, p (long layout: t an integer, "
            "value STRING, p DOUBLE) or stream, t, probs (wide layout: probs MAP<STRING, DOUBLE>)")


class MatchProbArrowFailed(Exception):
    """What the SQL caller sees: the message of the CepError (code, position, snippet)."""


class ProbTableError(CepError):
    """The TABLE argument of ``match_prob_arrow`` lacks a needed column or has one of the
    wrong type (the message names the expected columns and the ones found)."""

    code = "CEP-SQL-041"


class MatchProbArrowTable:
    """Arrow UDTF handler: checks the call on the first batch, answers in ``terminate``."""

    def __init__(self) -> None:
        self.batches: list[Any] = []
        self.plan: ProbCallPlan | None = None

    def eval(self, pattern: Any, overlap: Any, threshold: Any, window: Any, output: Any,
             pstream: Any) -> Iterator[Any]:
        if self.plan is None:
            with _reported():
                plan = check_arguments(_scalar(pattern), _scalar(overlap), _scalar(threshold),
                                       _scalar(window), _scalar(output))
                self.plan = replace(plan, layout=layout_of(pstream.schema))
        self.batches.append(pstream)
        return iter(())

    def terminate(self) -> Iterator[Any]:
        if self.plan is None:  # no rows in this partition
            return
        with _reported():
            answer = answer_batches(self.batches, self.plan)
        yield answer


@contextmanager
def _reported() -> Iterator[None]:
    """A CepError reaches the SQL caller as its message (code, position, caret), one frame."""
    try:
        yield
    except CepError as err:
        raise MatchProbArrowFailed(str(err)) from None


def _found(schema: Any) -> str:
    return ", ".join(f"{f.name} {f.type}" for f in schema)


def layout_of(schema: Any) -> str:
    """``'wide'`` or ``'long'`` from the Arrow schema of the table, or :class:`ProbTableError`."""
    import pyarrow as pa

    fields = {f.name.lower(): f for f in schema}
    probs = fields.get("probs")
    wide = (probs is not None and pa.types.is_map(probs.type)
            and (pa.types.is_string(probs.type.key_type)
                 or pa.types.is_large_string(probs.type.key_type))
            and _is_number(probs.type.item_type))
    needed = ("stream", "t", "probs") if wide else ("stream", "t", "value", "p")
    missing = [c for c in needed if c not in fields]
    if missing:
        raise ProbTableError(f"{_LAYOUTS}; missing: {', '.join(missing)}; the table has: "
                             f"{_found(schema)}")
    checks = [("stream", _is_scalar, "a scalar type (STRING, INT, ...)"),
              ("t", _is_integer, "an integer type (consecutive time points)")]
    if not wide:
        checks += [("value", lambda t: pa.types.is_string(t) or pa.types.is_large_string(t),
                    "STRING"), ("p", _is_number, "DOUBLE (or another number)")]
    for name, ok, expected in checks:
        if not ok(fields[name].type):
            raise ProbTableError(f"{_LAYOUTS}; column {fields[name].name!r} must be {expected}, "
                                 f"found {fields[name].type}; the table has: {_found(schema)}")
    return "wide" if wide else "long"


def _is_number(data_type: Any) -> bool:
    import pyarrow as pa

    return (pa.types.is_integer(data_type) or pa.types.is_floating(data_type)
            or pa.types.is_decimal(data_type))


def _is_integer(data_type: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_integer(data_type) or (pa.types.is_decimal(data_type)
                                              and data_type.scale == 0)


def _is_scalar(data_type: Any) -> bool:
    import pyarrow as pa

    return not pa.types.is_nested(data_type)


def _numbers(array: Any, to: Any) -> Any:
    """An Arrow column as a numpy array of ``to`` (object with None where it has NULLs, so that
    the stream builder reports them as ``match_prob`` does)."""
    import numpy as np
    import pyarrow.compute as pc

    if array.null_count:
        return np.array(array.to_pylist(), dtype=object)
    return pc.cast(array, to).to_numpy(zero_copy_only=False)


def _strings(array: Any) -> Any:
    """A STRING column as a numpy array: unicode (the stream builder's fast path) without NULLs,
    else objects with None where the NULLs are (so they are reported as ``match_prob`` does)."""
    import numpy as np
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(array, null_encoding="encode")
    names = encoded.dictionary.to_pylist()
    kind = object if array.null_count or not names else str
    return np.array(names, dtype=kind)[encoded.indices.to_numpy(zero_copy_only=False)]


def _groups(codes: Any, n_keys: int) -> tuple[Any, Any]:
    """Row order grouping equal codes (stable) and the ``n_keys + 1`` group bounds in it."""
    import numpy as np

    order = np.argsort(codes, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(np.bincount(codes, minlength=n_keys))))
    return order, bounds


def answer_batches(batches: list[Any], plan: ProbCallPlan) -> Any:
    """The output table (:data:`RETURN_TYPE`) of one partition's record batches.

    Raises:
        ProbTableError: a needed column is missing or has the wrong type.
        ProbStreamError: a stream is not a probabilistic stream (``CEP-PROB-010``, naming it).
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from cep.prob import ProbStreamError, from_long, from_wide

    table = pa.Table.from_batches(batches)
    names = {n.lower(): n for n in table.column_names}
    layout = layout_of(table.schema)

    def column(name: str) -> Any:
        array = table.column(names[name]).combine_chunks()
        return array.dictionary_decode() if pa.types.is_dictionary(array.type) else array

    encoded = pc.dictionary_encode(_key_strings(column("stream")), null_encoding="encode")
    keys = encoded.dictionary
    row_codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    t_rows = _numbers(column("t"), pa.int64())
    if layout == "long":
        codes, t = row_codes, t_rows
        value = _strings(column("value"))
        p = _numbers(column("p"), pa.float64())
    else:
        probs = column("probs")
        offsets = probs.offsets.to_numpy()
        lengths = np.diff(offsets)
        entry_row = np.repeat(np.arange(len(probs)), lengths)
        keep = probs.is_valid().to_numpy(zero_copy_only=False)[entry_row]  # NULL maps: no entries
        first, count = int(offsets[0]), int(offsets[-1] - offsets[0])
        value = _strings(probs.keys.slice(first, count))[keep]
        p = _numbers(probs.items.slice(first, count), pa.float64())[keep]
        entry_row = entry_row[keep]
        codes, t = row_codes[entry_row], t_rows[entry_row]
        row_order, row_bounds = _groups(row_codes, len(keys))
    order, bounds = _groups(codes, len(keys))
    out: dict[str, list[Any]] = {"stream": [], "rows": []}
    for k, key in enumerate(keys.to_pylist()):
        name = "NULL" if key is None else key
        mine = order[bounds[k]:bounds[k + 1]]
        try:
            stream = from_long(t[mine], value[mine], p[mine], tolerance=plan.tolerance,
                               stream=name)
            failed = layout == "wide" and len(stream) != row_bounds[k + 1] - row_bounds[k]
        except ProbStreamError:
            if layout == "long":
                raise
            failed = True
        if failed:  # a wide stream: the error (or answer) of from_wide on its rows, as match_prob
            rows = row_order[row_bounds[k]:row_bounds[k + 1]]
            maps = probs.take(pa.array(rows)).to_pylist()
            stream = from_wide(t_rows[rows], [None if m is None else dict(m) for m in maps],
                               tolerance=plan.tolerance, stream=name)
        found = answer_rows(plan, stream)
        out["stream"].append(np.full(len(found), k, dtype=np.int64))
        out["rows"] += found
    return _output(plan, keys, out)


def _output(plan: ProbCallPlan, keys: Any, out: dict[str, list[Any]]) -> Any:
    import numpy as np
    import pyarrow as pa

    rows = out["rows"]
    n = len(rows)
    stream = keys.take(pa.array(np.concatenate(out["stream"]) if out["stream"]
                                else np.zeros(0, np.int64)))

    def col(name: str, arrow_type: Any) -> Any:
        return pa.array([getattr(r, name) for r in rows], arrow_type)

    common = {"t_start": col("t_start", pa.int64()), "t_end": col("t_end", pa.int64()),
              "probability": col("probability", pa.float64())}
    nulls = pa.nulls(n, pa.int64())
    if plan.output == "groups":
        extra = {"match_id": nulls, "n_matches": col("n_matches", pa.int64()),
                 "core_start": col("core_start", pa.int64()),
                 "core_end": col("core_end", pa.int64()),
                 "values": pa.nulls(n, pa.list_(pa.string()))}
    else:
        extra = {"match_id": col("match_id", pa.int64()), "n_matches": nulls,
                 "core_start": nulls, "core_end": nulls,
                 "values": pa.array([list(r.values) for r in rows], pa.list_(pa.string()))}
    cols = {"stream": stream, **common, **extra}
    return pa.table({name: cols[name] for name in (
        "stream", "match_id", "t_start", "t_end", "probability", "n_matches", "core_start",
        "core_end", "values")})


def match_prob_arrow_udtf() -> Any:
    """The Spark Arrow UDTF object for ``match_prob_arrow``."""
    from pyspark.sql.functions import arrow_udtf

    return arrow_udtf(MatchProbArrowTable, returnType=RETURN_TYPE)
