"""Turns what a user holds (a Spark DataFrame, a pyarrow Table, a pandas DataFrame) into one
pyarrow Table of the columns a picture needs, with the checks every picture shares.

A Spark DataFrame is filtered and projected in Spark, capped with ``limit(max_rows + 1)`` and
moved with ``toArrow()``, so a picture never collects more than it may draw; the other inputs are
checked against the same cap.

Example:
    >>> import pandas as pd
    >>> t = collect(pd.DataFrame({"k": ["a", "b"], "v": [1, 2]}), ["k", "v"], what="demo",
    ...             max_rows=10)
    >>> t.column_names, t.num_rows
    (['k', 'v'], 2)
    >>> collect(pd.DataFrame({"k": ["a"]}), ["k", "v"], what="demo", max_rows=10)
    Traceback (most recent call last):
    ...
    viz.errors.VizColumnsError: CEP-VIZ-001: demo: expected columns ['k', 'v'], found ['k']; missing ['v']
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from viz.errors import VizArgumentError, VizColumnsError, VizTooManyRowsError


def is_spark_frame(data: Any) -> bool:
    """Whether ``data`` is a Spark DataFrame (classic or Spark Connect), without importing pyspark."""
    return type(data).__module__.startswith("pyspark.") and hasattr(data, "toArrow")


def columns_of(data: Any, *, what: str) -> list[str]:
    """The column names of a Spark DataFrame, pyarrow Table or RecordBatch, or pandas DataFrame."""
    if is_spark_frame(data):
        return list(data.columns)
    if isinstance(data, (pa.Table, pa.RecordBatch)):
        return list(data.schema.names)
    if type(data).__module__.startswith("pandas.") and hasattr(data, "columns"):
        return [str(c) for c in data.columns]
    raise VizArgumentError(
        f"{what}: expected a Spark DataFrame, a pyarrow Table or a pandas DataFrame, "
        f"found {type(data).__module__}.{type(data).__name__}")


def check_columns(found: Sequence[str], needed: Sequence[str], *, what: str) -> None:
    """Raise :class:`VizColumnsError` naming the expected and the found columns."""
    missing = [c for c in needed if c not in found]
    if missing:
        raise VizColumnsError(f"{what}: expected columns {list(needed)}, found {list(found)}; "
                              f"missing {missing}")


def check_limit(value: int, *, name: str) -> int:
    """``value`` if it is a positive int, else :class:`VizArgumentError`."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise VizArgumentError(f"{name}: expected a positive integer, found {value!r}")
    return int(value)


def collect(data: Any, needed: Sequence[str], *, what: str, max_rows: int,
            optional: Sequence[str] = (), isin: Mapping[str, Iterable[Any]] | None = None
            ) -> pa.Table:
    """The rows of ``data`` as a pyarrow Table of the ``needed`` (and present ``optional``) columns.

    Args:
        data: A Spark DataFrame, a pyarrow Table or RecordBatch, or a pandas DataFrame.
        needed: Columns that must exist (:class:`VizColumnsError` otherwise).
        what: What the input is, for messages (``"matches"``).
        max_rows: The most rows accepted; more is :class:`VizTooManyRowsError`.
        optional: Columns taken along when they exist.
        isin: ``{column: values}``: keep only rows whose column holds one of the values
            (applied in Spark before anything is collected).

    Returns:
        A pyarrow Table with the needed and present optional columns, in that order.
    """
    max_rows = check_limit(max_rows, name="max_rows")
    found = columns_of(data, what=what)
    check_columns(found, needed, what=what)
    wanted = list(dict.fromkeys([*needed, *(c for c in optional if c in found)]))
    filters = {c: list(v) for c, v in (isin or {}).items()}
    check_columns(found, list(filters), what=what)
    if is_spark_frame(data):
        from pyspark.sql import functions as F

        frame = data
        for column, values in filters.items():
            frame = frame.where(F.col(column).isin(values))
        # One row more than allowed tells "too many" apart from "exactly the cap".
        table = frame.select(*wanted).limit(max_rows + 1).toArrow()
    else:
        if isinstance(data, pa.RecordBatch):
            table = pa.Table.from_batches([data])
        elif isinstance(data, pa.Table):
            table = data
        else:
            table = pa.Table.from_pandas(data[wanted], preserve_index=False)
        table = table.select(wanted)
        for column, values in filters.items():
            col = table.column(column)
            table = table.filter(pc.is_in(col, value_set=pa.array(values, type=col.type)))
    if table.num_rows > max_rows:
        raise VizTooManyRowsError(
            f"{what}: more than max_rows={max_rows} rows; filter the input first "
            "(a WHERE on keys or time) or pass a larger max_rows")
    return table


def is_time(t: pa.DataType) -> bool:
    """Whether a column of type ``t`` holds instants (TIMESTAMP or DATE)."""
    return pa.types.is_timestamp(t) or pa.types.is_date(t)


def is_number(t: pa.DataType) -> bool:
    """Whether a column of type ``t`` holds plain numbers (integers, floats, decimals)."""
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def time_or_number(table: pa.Table, columns: Sequence[str], *, what: str) -> bool:
    """Check that ``columns`` are all instants or all numbers; True for instants."""
    types = {c: table.schema.field(c).type for c in columns}
    if all(is_time(t) for t in types.values()):
        return True
    if all(is_number(t) for t in types.values()):
        return False
    found = ", ".join(f"{c} {t}" for c, t in types.items())
    raise VizColumnsError(f"{what}: expected {list(columns)} to be all TIMESTAMP/DATE or all "
                          f"numeric, found {found}")


def no_nulls(table: pa.Table, columns: Sequence[str], *, what: str) -> None:
    """Raise :class:`VizColumnsError` when one of ``columns`` holds NULLs."""
    for c in columns:
        nulls = table.column(c).null_count
        if nulls:
            raise VizColumnsError(f"{what}: column {c} has {nulls} NULL value(s); "
                                  "filter them out first")


def as_plot_values(column: pa.ChunkedArray | pa.Array, as_time: bool) -> np.ndarray:
    """A column as float64 x values: matplotlib date numbers for instants, else the numbers."""
    if as_time:
        from matplotlib import dates as mdates

        micros = pc.cast(column, pa.timestamp("us", tz=getattr(column.type, "tz", None)))
        naive = pc.cast(micros, pa.timestamp("us")) if micros.type.tz else micros
        return np.asarray(mdates.date2num(naive.to_numpy(zero_copy_only=False)), dtype=np.float64)
    return np.asarray(pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False),
                      dtype=np.float64)


def labels(table: pa.Table, columns: Sequence[str]) -> np.ndarray:
    """One string label per row: the values of ``columns`` joined by ``" / "`` (NULL as ``-``)."""
    parts = []
    for c in columns:
        col = table.column(c)
        try:
            text = pc.cast(col, pa.string())
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
            text = pa.array([None if v is None else str(v) for v in col.to_pylist()], pa.string())
        parts.append(pc.fill_null(text, "-"))
    if len(parts) == 1:
        return np.asarray(parts[0].to_numpy(zero_copy_only=False), dtype=object)
    return np.asarray(pc.binary_join_element_wise(*parts, " / ").to_numpy(zero_copy_only=False),
                      dtype=object)


def date_axis(axis: Any) -> None:
    """Format a matplotlib axis that holds date numbers as dates (concise, automatic ticks)."""
    from matplotlib import dates as mdates

    locator = mdates.AutoDateLocator()
    axis.set_major_locator(locator)
    axis.set_major_formatter(mdates.ConciseDateFormatter(locator))


def new_figure(width: float, height: float, ncols: int = 1) -> tuple[Any, list[Any]]:
    """A Figure (object API, no pyplot: safe under any backend and in threads) and its axes."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, list(axes)
