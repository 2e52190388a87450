"""The sketch job's streamed partitions (jobs/state/sketch_chunks.py) == one call per partition.

No Spark: the work rows are built as the job builds them, sorted as Spark sorts them, cut into
batches of every size and appended in chunks of every size; the output must be the output of
``process_bucket`` over the whole partition at once (which tests/jobs/test_sketch_job.py
checks against the core's trees), row for row: node rows once each, open rows with the
accepted count of every chunk, late rows.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from cep.sketch import SketchConfig
from delta_tables.sketch_state import NODES_COLUMNS, OPEN_COLUMNS, _arrow_schema
from jobs.state import sketch as job
from jobs.state.sketch_chunks import StreamedSketch

CFG = SketchConfig(m=64, k=2, C=3, fanout=2, seeds=(5, 9))
WORK = _arrow_schema((("stream", "STRING"), ("kind", "INT"), ("e_type", "STRING"),
                      ("e_ts", "TIMESTAMP"), ("e_id", "BIGINT"), ("e_version", "BIGINT"))
                     + tuple(NODES_COLUMNS[1:]) + tuple((f"o_{n}", k) for n, k in OPEN_COLUMNS[1:]))
TS = pa.timestamp("us", tz="UTC")


def events(seed: int, n: int, shift: int = 0) -> pa.Table:
    """Event work rows of three streams, one null stream row and one exact duplicate."""
    rng = np.random.default_rng(seed)
    streams = sorted(rng.choice(["s0", "s1", "s2"], n).tolist()) + [None, "s1"]
    ts = np.append(1_600_000_000_000_000 + (np.arange(n) + shift) * 1000, [0, 0])
    ids = np.append(np.arange(n) + shift, [0, 0])
    ts[-1], ids[-1] = ts[streams.index("s1")], ids[streams.index("s1")]  # a duplicate
    data = {"stream": pa.array(streams, pa.string()),
            "kind": pa.array(np.full(n + 2, job.EVENT, np.int32)),
            "e_type": pa.array([f"T{t}" for t in rng.integers(0, 5, n + 2)]),
            "e_ts": pa.array(ts.astype(np.int64)).cast(TS), "e_id": pa.array(ids.astype(np.int64)),
            "e_version": pa.array(np.ones(n + 2, np.int64))}
    return pa.table([data.get(f.name, pa.nulls(n + 2, f.type)) for f in WORK], schema=WORK)


def as_work(rows: pa.Table, kind: int) -> pa.Table:
    n = rows.num_rows
    return pa.table([pa.array(np.full(n, kind, np.int32)) if f.name == "kind"
                     else rows.column(f.name).cast(f.type) if f.name in rows.column_names
                     else pa.nulls(n, f.type) for f in WORK], schema=WORK)


def process(table: pa.Table) -> pa.Table:
    return job.process_bucket(table, CFG, job._out_schema())


def state_after(out: pa.Table) -> pa.Table:
    """The state rows a next run reads (as ``jobs.state.sketch._state``): frontier and open."""
    kind = out.column("out").to_numpy(zero_copy_only=False)
    nodes = out.filter(pa.array(kind == job.OUT_NODE))
    tops = nodes.filter(pc.and_(pc.fill_null(nodes.column("is_top"), False),
                                pc.invert(pc.fill_null(nodes.column("is_open"), False))))
    return pa.concat_tables([as_work(tops, job.NODE),
                             as_work(out.filter(pa.array(kind == job.OUT_OPEN)), job.OPEN)])


def chunked(table: pa.Table, batch: int, rows: int) -> pa.Table:
    ordered = table.sort_by([("stream", "ascending"), ("kind", "descending"),
                             ("e_ts", "ascending"), ("e_id", "ascending"),
                             ("e_type", "ascending"), ("e_version", "ascending")])
    nulls_first = pc.is_null(ordered.column("stream"))  # Spark's ascending order
    ordered = pa.concat_tables([ordered.filter(nulls_first),
                                ordered.filter(pc.invert(nulls_first))])
    streamed = StreamedSketch(process, (job.EVENT, job.NODE, job.OPEN),
                              (job.OUT_NODE, job.OUT_OPEN, job.OUT_LATE), rows)
    outs = []
    for piece in ordered.to_batches(max_chunksize=batch):
        outs += list(streamed.add(piece))
    outs += list(streamed.finish())
    return pa.concat_tables(outs)


def rows_of(out: pa.Table) -> list[tuple]:
    return sorted(tuple(str(v) for v in row.values()) for row in out.to_pylist())


FIRST = events(3, 240)
SECOND = pa.concat_tables([state_after(process(FIRST)), events(4, 150, shift=10_000)])


@pytest.mark.parametrize("rows", [1, 2, 3, 7, 40, 10_000])
@pytest.mark.parametrize("batch", [1, 1000])
@pytest.mark.parametrize("work", [FIRST, SECOND], ids=["first run", "incremental run"])
def test_any_chunks_give_the_whole_partitions_rows(work: pa.Table, batch: int, rows: int) -> None:
    whole = process(work)
    assert rows_of(chunked(work, batch, rows)) == rows_of(whole)
    kinds = whole.column("out").to_pylist()
    assert kinds.count(job.OUT_LATE) == 2 and kinds.count(job.OUT_OPEN) == 3  # the cases occur
